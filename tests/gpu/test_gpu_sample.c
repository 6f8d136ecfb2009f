/* The CUDA sampler (nib_cuda_sample) against the CPU sampler's chain.
 *
 * Two references over the same sorted candidates (the logits sorted by
 * (logit desc, id asc) on the host, NaN left out):
 *  - the CPU chain: sampler.c's arithmetic step by step with glibc's expf. It
 *    is checked to pick exactly what nib_sampler_sample_u picks with the
 *    same u (a few u per case: each is a pass over the whole vocabulary).
 *  - the device model: the same chain with exp = (float)exp((double)x), what
 *    sample.cu computes.
 * For every draw the GPU's pick must be allowed by both, with a tolerance on
 * where r = u * sum falls:
 *  - against the device model, 1e-12 of the sum. The device adds the same
 *    doubles (at most 1024 non-negative terms) in another order (a block
 *    scan instead of a loop): each partial sum is off by at most 2^-53 of
 *    itself per addition, so a cumulative boundary, and r through the sum,
 *    move by at most 2 * 1024 * 2^-53 = 2.3e-13 of the sum; 1e-12 leaves 4x.
 *    top-p's cumulative (<= 1) gets the same 1e-12, absolute.
 *  - against the CPU chain, 2^-22 of the sum. glibc's expf (0.502 ulp) and a
 *    correctly rounded exp differ by 1 ulp for about 1 input in 1600
 *    (measured over [-60, 0]), so each weight may be off by 2^-23 of itself
 *    and each boundary by 2^-23 of the sum, plus the order term above. The
 *    brief's 1e-9 would be broken by those ulps; the device model check is
 *    the tight one.
 * A pick may differ only when r lies within the tolerance of a boundary
 * between the two picks; a top-p or min-p decision within its tolerance of
 * flipping (counted, printed; rare on random data) allows any of the top-k.
 *
 * Cases: vocabularies 1000, 32000, 151936, 262144; top_k 1, 2, 40, 1024;
 * top_p 1, 0.95, 0.5; min_p 0, 0.05; temps 0.3, 0.8, 1.5; logits N(0,1),
 * N(0,16), "peaked" (N(0,4) with 8 tokens near 12, so top-p cuts early),
 * halves of N(0,9) (exact ties everywhere, the id order decides) and N(0,4)
 * with 2% -inf and 1% NaN (NaN only at ids >= 1024: the CPU's qsort
 * comparator is not a total order with NaN in the first k). 200 u per case
 * (0, the largest double below 1, random), each launch writing its own
 * poisoned output slot; top_k_max alternates between 1024 and top_k (both
 * launch grids). The scratch is poisoned with NaN per logit set. Then: a
 * captured CUDA graph replayed with new params and u in device memory,
 * greedy (temp 0), top_k clamping, NaN-heavy logits (fewer than k valid),
 * the argument checks, and a timing print (vocabulary 151936, top-k 40).
 *
 * Without a usable GPU the run is one skip with the reason. */
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "cuda/cuda.h"
#include "cuda/cuda_ops.h"
#include "cuda/cuda_sample.h"
#include "nib.h"
#include "sampler/sampler.h"
#include "test.h"
#include "gpu_test.h"

_Static_assert(NIB_SAMPLE_MAX_K == NIB_CUDA_SAMPLE_MAX_K, "the CPU sampler's device rule and the kernel agree on k");

#define N_MAX 262144
#define N_U 200
#define N_U_CPU 3 /* draws also run through nib_sampler_sample_u */
#define KEEP NIB_CUDA_SAMPLE_MAX_K
#define POISON_ID (-7777)
#define TOL_MODEL 1e-12
#define TOL_CPU (1.0 / 4194304.0) /* 2^-22 */

typedef struct cand {
    float logit;
    int32_t id;
} cand;

static float h_logits[N_MAX];
static cand cands[N_MAX]; /* the non-NaN logits, sorted */
static int n_cands;

static float *d_logits;
static nib_cuda_sample_params *d_params;
static double *d_u;
static int32_t *d_out;
static void *d_scratch;
static size_t scratch_bytes;

static long n_draws, n_same_cpu, n_within_tol, n_edge_cases;

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return x->id - y->id;
}

static void sort_cands(int n) {
    n_cands = 0;
    for (int i = 0; i < n; i++)
        if (h_logits[i] == h_logits[i]) cands[n_cands++] = (cand){h_logits[i], i};
    qsort(cands, (size_t)n_cands, sizeof *cands, cand_cmp);
}

enum { DIST_N1, DIST_N4, DIST_PEAKED, DIST_TIES, DIST_INF_NAN, DIST_COUNT };
static const char *dist_name[DIST_COUNT] = {"N(0,1)", "N(0,16)", "peaked", "ties", "-inf/NaN"};

static void make_logits(int n, int dist) {
    for (int i = 0; i < n; i++) {
        const double g = rng_normal();
        switch (dist) {
        case DIST_N1: h_logits[i] = (float)g; break;
        case DIST_N4: h_logits[i] = (float)(4.0 * g); break;
        case DIST_PEAKED: h_logits[i] = (float)(2.0 * g); break;
        case DIST_TIES: h_logits[i] = (float)(floor(6.0 * g) / 2.0); break;
        default: {
            const uint64_t r = rng_u64() % 100;
            h_logits[i] = r < 2 ? -INFINITY : (r < 3 && i >= KEEP) ? NAN : (float)(2.0 * g);
        }
        }
    }
    if (dist == DIST_PEAKED)
        for (int j = 0; j < 8; j++) h_logits[rng_u64() % (uint64_t)n] = (float)(12.0 + rng_normal());
}

/* ---- the references ----------------------------------------------------------- */
typedef struct chain {
    int m;            /* candidates kept after top-k, top-p and min-p */
    int m_alt;        /* with edge: the top-k count, any of which may be picked */
    bool edge;        /* a top-p or min-p decision within tolerance of flipping */
    double acc[KEEP]; /* acc[i] = w_0 + .. + w_i, in order, in double */
} chain;

static float exp_cpu(float x) { return expf(x); }
static float exp_dev(float x) { return (float)exp((double)x); }

/* sampler.c's chain over cands[0..) with the given exp; tol: how close to
 * top_p a cumulative, and (relative) to min_p * p_0 a probability, counts as
 * an edge. */
static void chain_run(chain *ch, int k, const nib_cuda_sample_params *p, float (*ex)(float), double tol) {
    static float pr[KEEP];
    int m = k < n_cands ? k : n_cands;
    const float l0 = cands[0].logit;
    double sum = 0.0;
    for (int i = 0; i < m; i++) sum += (pr[i] = ex(cands[i].logit - l0));
    ch->edge = false;
    ch->m_alt = m;
    if (p->top_p < 1.0f) {
        double cum = 0.0, prev = 0.0;
        int cut = -1;
        for (int i = 0; i < m; i++) {
            prev = cum;
            if ((cum += pr[i] / sum) >= p->top_p) {
                cut = i;
                break;
            }
        }
        if (cut >= 0 ? (cum - p->top_p <= tol || (cut > 0 && p->top_p - prev <= tol)) : p->top_p - cum <= tol)
            ch->edge = true;
        if (cut >= 0) m = cut + 1;
    }
    if (p->min_p > 0.0f) {
        const float thr = p->min_p * pr[0];
        int keep = 1;
        while (keep < m && pr[keep] >= thr) keep++;
        for (int i = 1; i < m; i++)
            if (fabs((double)pr[i] - (double)thr) <= tol * (double)thr) ch->edge = true;
        m = keep;
    }
    double acc = 0.0;
    for (int i = 0; i < m; i++) ch->acc[i] = (acc += ex((cands[i].logit - l0) / p->temp));
    ch->m = m;
}

/* The chain's pick for u, exactly as the CPU draws it. */
static int32_t chain_pick(const chain *ch, double u) {
    const double r = u * ch->acc[ch->m - 1];
    for (int i = 0; i < ch->m; i++)
        if (r < ch->acc[i]) return cands[i].id;
    return cands[ch->m - 1].id;
}

/* Is id a pick the chain allows for u when r may move by tol_rel of the sum? */
static bool chain_allows(const chain *ch, double u, int32_t id, double tol_rel) {
    if (ch->edge) {
        for (int i = 0; i < ch->m_alt; i++)
            if (cands[i].id == id) return true;
        return false;
    }
    const double sum = ch->acc[ch->m - 1], r = u * sum, tol = tol_rel * sum;
    int lo = ch->m - 1, hi = ch->m - 1;
    for (int i = 0; i < ch->m; i++)
        if (r - tol < ch->acc[i]) {
            lo = i;
            break;
        }
    for (int i = lo; i < ch->m; i++)
        if (r + tol < ch->acc[i]) {
            hi = i;
            break;
        }
    for (int i = lo; i <= hi; i++)
        if (cands[i].id == id) return true;
    return false;
}

/* ---- running the GPU ------------------------------------------------------------ */

/* One launch per u (u[j] and the output slot j in device memory), every slot
 * poisoned first; ids gets the picks. */
static bool gpu_draws(int n, const nib_cuda_sample_params *p, int top_k_max, const double *u, int n_u, int32_t *ids) {
    nib_error err = {0};
    int32_t poison[N_U];
    for (int j = 0; j < n_u; j++) poison[j] = POISON_ID;
    if (nib_cuda_copy_to_device(d_params, p, sizeof *p, &err) != NIB_OK ||
        nib_cuda_copy_to_device(d_u, u, sizeof *u * (size_t)n_u, &err) != NIB_OK ||
        nib_cuda_copy_to_device(d_out, poison, sizeof poison[0] * (size_t)n_u, &err) != NIB_OK) {
        CHECK(0, "upload: %s", err.msg);
        return false;
    }
    /* everything on the legacy default stream: ordered with the copies */
    for (int j = 0; j < n_u; j++) {
        if (nib_cuda_sample(d_logits, n, d_params, d_u + j, d_scratch, top_k_max, d_out + j, NULL, &err) != NIB_OK) {
            CHECK(0, "nib_cuda_sample: %s", err.msg);
            return false;
        }
    }
    if (nib_cuda_copy_to_host(ids, d_out, sizeof ids[0] * (size_t)n_u, &err) != NIB_OK) {
        CHECK(0, "download: %s", err.msg);
        return false;
    }
    return true;
}

static bool upload_logits(int n) {
    nib_error err = {0};
    bool ok = nib_cuda_copy_to_device(d_logits, h_logits, sizeof(float) * (size_t)n, &err) == NIB_OK &&
              nib_cuda_fill_f32((float *)d_scratch, NAN, scratch_bytes / sizeof(float), &err) == NIB_OK &&
              nib_cuda_sync(&err) == NIB_OK;
    CHECK(ok, "upload logits: %s", err.msg);
    return ok;
}

static void random_us(double *u, int n_u) {
    u[0] = 0.0;
    u[1] = 1.0 - 1.0 / 9007199254740992.0;
    for (int j = 2; j < n_u; j++) u[j] = rng_uniform();
}

/* One logit set against every parameter combination. */
static void sweep(int n, int dist) {
    static const int32_t top_ks[] = {1, 2, 40, 1024};
    static const float top_ps[] = {1.0f, 0.95f, 0.5f}, min_ps[] = {0.0f, 0.05f}, temps[] = {0.3f, 0.8f, 1.5f};
    static chain model, cpu;
    make_logits(n, dist);
    sort_cands(n);
    if (!upload_logits(n)) return;
    nib_error err = {0};
    int bad_printed = 0;
    for (size_t ki = 0; ki < 4; ki++)
        for (size_t pi = 0; pi < 3; pi++)
            for (size_t mi = 0; mi < 2; mi++)
                for (size_t ti = 0; ti < 3; ti++) {
                    const nib_cuda_sample_params p = {temps[ti], top_ks[ki], top_ps[pi], min_ps[mi]};
                    const int top_k_max = ti == 1 ? top_ks[ki] : NIB_CUDA_SAMPLE_MAX_K;
                    const int k = p.top_k < n ? p.top_k : n;
                    chain_run(&model, k, &p, exp_dev, TOL_MODEL);
                    chain_run(&cpu, k, &p, exp_cpu, TOL_CPU);
                    n_edge_cases += model.edge || cpu.edge;
                    double u[N_U];
                    int32_t ids[N_U];
                    random_us(u, N_U);
                    if (!gpu_draws(n, &p, top_k_max, u, N_U, ids)) return;
                    /* the CPU chain written here is sampler.c's: same picks as nib_sampler_sample_u */
                    nib_sampler_params sp = nib_sampler_default_params();
                    sp.temp = p.temp, sp.top_k = p.top_k, sp.top_p = p.top_p, sp.min_p = p.min_p;
                    nib_sampler *s = nib_sampler_new(&sp, n, &err);
                    CHECK(s != NULL, "nib_sampler_new: %s", err.msg);
                    for (int j = 0; s && j < N_U_CPU; j++) {
                        const double uj = u[j == 0 ? 0 : 2 + (int)(rng_u64() % (N_U - 2))];
                        const int32_t a = nib_sampler_sample_u(s, h_logits, uj), b = chain_pick(&cpu, uj);
                        CHECK(a == b, "n %d %s: the test's CPU chain picks %d, nib_sampler_sample_u %d", n,
                              dist_name[dist], b, a);
                    }
                    nib_sampler_free(s);
                    for (int j = 0; j < N_U; j++) {
                        n_draws++;
                        const int32_t want = chain_pick(&cpu, u[j]);
                        n_same_cpu += ids[j] == want;
                        const bool ok_model = chain_allows(&model, u[j], ids[j], TOL_MODEL);
                        const bool ok_cpu = chain_allows(&cpu, u[j], ids[j], TOL_CPU);
                        n_within_tol += ids[j] != want && ok_cpu;
                        if ((!ok_model || !ok_cpu) && bad_printed++ < 5)
                            fprintf(stderr,
                                    "  n %d %s temp %g top_k %d (max %d) top_p %g min_p %g u %.17g: GPU %d, CPU %d, "
                                    "device model %d (kept %d)\n",
                                    n, dist_name[dist], (double)p.temp, p.top_k, top_k_max, (double)p.top_p,
                                    (double)p.min_p, u[j], ids[j], want, chain_pick(&model, u[j]), model.m);
                        CHECK(ok_model && ok_cpu, "pick outside the tolerance");
                    }
                }
}

static void sweep_vocab(int n) {
    for (int d = 0; d < DIST_COUNT; d++) sweep(n, d);
}
static void test_vocab_1000(void) { sweep_vocab(1000); }
static void test_vocab_32000(void) { sweep_vocab(32000); }
static void test_vocab_151936(void) { sweep_vocab(151936); }
static void test_vocab_262144(void) { sweep_vocab(262144); }

/* Captured once, replayed with new params and u written to device memory. */
static void test_graph_replay(void) {
    const int n = 151936;
    nib_error err = {0};
    make_logits(n, DIST_N4);
    sort_cands(n);
    if (!upload_logits(n)) return;
    void *stream = nib_cuda_stream_new(&err), *graph = NULL;
    CHECK(stream != NULL, "stream: %s", err.msg);
    if (!stream) return;
    nib_cuda_sample_params p = {0.8f, 40, 0.95f, 0.05f};
    double u = 0.5;
    int32_t poison = POISON_ID;
    bool ok = nib_cuda_copy_to_device(d_params, &p, sizeof p, &err) == NIB_OK &&
              nib_cuda_copy_to_device(d_u, &u, sizeof u, &err) == NIB_OK && nib_cuda_sync(&err) == NIB_OK &&
              nib_cuda_graph_begin(stream, &err) == NIB_OK;
    if (ok) {
        ok = nib_cuda_sample(d_logits, n, d_params, d_u, d_scratch, NIB_CUDA_SAMPLE_MAX_K, d_out, stream, &err) ==
             NIB_OK;
        ok = nib_cuda_graph_end(stream, &graph, &err) == NIB_OK && ok;
    }
    CHECK(ok, "capture: %s", err.msg);
    static const nib_cuda_sample_params ps[] = {
        {0.8f, 40, 0.95f, 0.05f}, {1.5f, 1024, 1.0f, 0.0f}, {0.3f, 2, 0.5f, 0.0f}, {1.0f, 1, 1.0f, 0.0f},
        {0.8f, 300, 0.9f, 0.01f}, {0.0f, 40, 1.0f, 0.0f},
    };
    static chain model;
    for (int it = 0; ok && it < 36; it++) {
        p = ps[it % 6];
        u = rng_uniform();
        int32_t id = POISON_ID;
        ok = nib_cuda_copy_to_device(d_params, &p, sizeof p, &err) == NIB_OK &&
             nib_cuda_copy_to_device(d_u, &u, sizeof u, &err) == NIB_OK &&
             nib_cuda_copy_to_device(d_out, &poison, sizeof poison, &err) == NIB_OK &&
             nib_cuda_sync(&err) == NIB_OK && nib_cuda_graph_launch(graph, stream, &err) == NIB_OK &&
             nib_cuda_stream_sync(stream, &err) == NIB_OK &&
             nib_cuda_copy_to_host(&id, d_out, sizeof id, &err) == NIB_OK;
        CHECK(ok, "replay %d: %s", it, err.msg);
        if (!ok) break;
        if (p.temp <= 0.0f) {
            CHECK(id == nib_argmax(h_logits, n), "replay %d greedy: %d, argmax %d", it, id, nib_argmax(h_logits, n));
            continue;
        }
        chain_run(&model, p.top_k, &p, exp_dev, TOL_MODEL);
        CHECK(chain_allows(&model, u, id, TOL_MODEL), "replay %d (top_k %d, u %.17g): GPU %d, device model %d", it,
              p.top_k, u, id, chain_pick(&model, u));
    }
    nib_cuda_graph_free(graph);
    nib_cuda_stream_free(stream);
}

/* temp 0 is the first maximum (ties: the lowest id); top_k < 1 or above
 * top_k_max is top_k_max. */
static void test_greedy_and_clamp(void) {
    const int n = 32000;
    static chain model;
    for (int dist = 0; dist < DIST_COUNT; dist++) {
        make_logits(n, dist);
        sort_cands(n);
        if (!upload_logits(n)) return;
        double u[N_U];
        int32_t ids[N_U];
        random_us(u, 8);
        const nib_cuda_sample_params greedy = {0.0f, 40, 0.95f, 0.05f};
        if (!gpu_draws(n, &greedy, NIB_CUDA_SAMPLE_MAX_K, u, 8, ids)) return;
        for (int j = 0; j < 8; j++) CHECK(ids[j] == cands[0].id, "%s greedy: %d, not %d", dist_name[dist], ids[j], cands[0].id);
        const struct {
            int32_t top_k;
            int max, k;
        } clamp[] = {{0, 40, 40}, {-3, 7, 7}, {500, 40, 40}, {2000, 1024, 1024}};
        for (size_t c = 0; c < sizeof clamp / sizeof clamp[0]; c++) {
            const nib_cuda_sample_params p = {1.2f, clamp[c].top_k, 1.0f, 0.0f};
            random_us(u, N_U);
            if (!gpu_draws(n, &p, clamp[c].max, u, N_U, ids)) return;
            chain_run(&model, clamp[c].k, &p, exp_dev, TOL_MODEL);
            for (int j = 0; j < N_U; j++)
                CHECK(chain_allows(&model, u[j], ids[j], TOL_MODEL), "%s top_k %d max %d u %.17g: GPU %d, model %d",
                      dist_name[dist], clamp[c].top_k, clamp[c].max, u[j], ids[j], chain_pick(&model, u[j]));
        }
    }
}

/* Fewer valid logits than k: NaN candidates are dropped; all NaN picks id 0. */
static void test_mostly_nan(void) {
    const int n = 5000;
    static chain model;
    for (int i = 0; i < n; i++) h_logits[i] = NAN;
    for (int j = 0; j < 10; j++) h_logits[rng_u64() % (uint64_t)n] = (float)(2.0 * rng_normal());
    sort_cands(n);
    if (!upload_logits(n)) return;
    const nib_cuda_sample_params p = {1.0f, 40, 1.0f, 0.0f};
    double u[N_U];
    int32_t ids[N_U];
    random_us(u, N_U);
    if (!gpu_draws(n, &p, NIB_CUDA_SAMPLE_MAX_K, u, N_U, ids)) return;
    chain_run(&model, 40, &p, exp_dev, TOL_MODEL);
    CHECK(model.m == n_cands && n_cands <= 10, "reference kept %d of %d", model.m, n_cands);
    for (int j = 0; j < N_U; j++)
        CHECK(chain_allows(&model, u[j], ids[j], TOL_MODEL), "u %.17g: GPU %d, model %d", u[j], ids[j],
              chain_pick(&model, u[j]));
    for (int i = 0; i < n; i++) h_logits[i] = NAN;
    if (!upload_logits(n) || !gpu_draws(n, &p, 40, u, 4, ids)) return;
    for (int j = 0; j < 4; j++) CHECK(ids[j] == 0, "all NaN: picked %d, not 0", ids[j]);
}

static void test_errors(void) {
    nib_error err = {0};
    CHECK(nib_cuda_sample_scratch_bytes(0, 40) == 0 && nib_cuda_sample_scratch_bytes(1000, 0) == 0 &&
              nib_cuda_sample_scratch_bytes(1000, NIB_CUDA_SAMPLE_MAX_K + 1) == 0,
          "scratch bytes for bad arguments");
    CHECK(nib_cuda_sample_scratch_bytes(1000, 1) > 0, "scratch bytes");
    const struct {
        const float *logits;
        int n, kmax;
        void *scratch;
        int32_t *out;
    } bad[] = {
        {NULL, 1000, 40, d_scratch, d_out},
        {d_logits, 0, 40, d_scratch, d_out},
        {d_logits, 1000, 0, d_scratch, d_out},
        {d_logits, 1000, NIB_CUDA_SAMPLE_MAX_K + 1, d_scratch, d_out},
        {d_logits, 1000, 40, NULL, d_out},
        {d_logits, 1000, 40, (char *)d_scratch + 4, d_out},
        {d_logits, 1000, 40, d_scratch, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.status = NIB_OK;
        const nib_status s =
            nib_cuda_sample(bad[i].logits, bad[i].n, d_params, d_u, bad[i].scratch, bad[i].kmax, bad[i].out, NULL, &err);
        CHECK(s == NIB_ERR_ARG, "bad call %zu: status %d", i, (int)s);
    }
    CHECK(nib_cuda_sample(d_logits, 1000, NULL, d_u, d_scratch, 40, d_out, NULL, &err) == NIB_ERR_ARG, "NULL params");
    CHECK(nib_cuda_sample(d_logits, 1000, d_params, NULL, d_scratch, 40, d_out, NULL, &err) == NIB_ERR_ARG, "NULL u");
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Not a bound: a print. Plain launches (CPU launch cost included), then a
 * graph of 20 calls replayed (closer to what a decode step pays). */
static void test_timing(void) {
    const int n = 151936, reps = 1000, per_graph = 20;
    nib_error err = {0};
    make_logits(n, DIST_N4);
    sort_cands(n);
    if (!upload_logits(n)) return;
    const nib_cuda_sample_params p = {0.8f, 40, 0.95f, 0.05f};
    const double u = 0.37;
    void *stream = nib_cuda_stream_new(&err);
    CHECK(stream != NULL, "stream: %s", err.msg);
    if (!stream) return;
    bool ok = nib_cuda_copy_to_device(d_params, &p, sizeof p, &err) == NIB_OK &&
              nib_cuda_copy_to_device(d_u, &u, sizeof u, &err) == NIB_OK && nib_cuda_sync(&err) == NIB_OK;
    static const int kmaxes[] = {NIB_CUDA_SAMPLE_MAX_K, 40};
    for (int v = 0; ok && v < 2; v++) {
        const int kmax = kmaxes[v];
        for (int i = 0; ok && i < 50; i++) /* warm-up */
            ok = nib_cuda_sample(d_logits, n, d_params, d_u, d_scratch, kmax, d_out, stream, &err) == NIB_OK;
        ok = ok && nib_cuda_stream_sync(stream, &err) == NIB_OK;
        double t0 = now_s();
        for (int i = 0; ok && i < reps; i++)
            ok = nib_cuda_sample(d_logits, n, d_params, d_u, d_scratch, kmax, d_out, stream, &err) == NIB_OK;
        ok = ok && nib_cuda_stream_sync(stream, &err) == NIB_OK;
        const double plain_us = (now_s() - t0) * 1e6 / reps;
        void *graph = NULL;
        ok = ok && nib_cuda_graph_begin(stream, &err) == NIB_OK;
        for (int i = 0; ok && i < per_graph; i++)
            ok = nib_cuda_sample(d_logits, n, d_params, d_u, d_scratch, kmax, d_out, stream, &err) == NIB_OK;
        ok = nib_cuda_graph_end(stream, &graph, &err) == NIB_OK && ok;
        ok = ok && nib_cuda_graph_launch(graph, stream, &err) == NIB_OK && nib_cuda_stream_sync(stream, &err) == NIB_OK;
        t0 = now_s();
        for (int i = 0; ok && i < reps / per_graph; i++) ok = nib_cuda_graph_launch(graph, stream, &err) == NIB_OK;
        ok = ok && nib_cuda_stream_sync(stream, &err) == NIB_OK;
        const double graph_us = (now_s() - t0) * 1e6 / reps;
        nib_cuda_graph_free(graph);
        int32_t id = POISON_ID;
        ok = ok && nib_cuda_copy_to_host(&id, d_out, sizeof id, &err) == NIB_OK;
        static chain model;
        chain_run(&model, 40, &p, exp_dev, TOL_MODEL);
        CHECK(ok && chain_allows(&model, u, id, TOL_MODEL), "timed pick %d, model %d", id, chain_pick(&model, u));
        if (ok)
            printf("  timing: n_vocab %d, top_k 40, top_k_max %d: %.2f us per call (plain launches), %.2f us per call "
                   "(graph of %d)\n", n, kmax, plain_us, graph_us, per_graph);
    }
    CHECK(ok, "timing run: %s", err.msg);
    nib_cuda_stream_free(stream);
}

int main(void) {
    if (!gpu_test_start("cuda sampling")) return test_summary();
    rng_seed(31337);
    size_t most = 0;
    static const int vocabs[] = {1000, 5000, 32000, 151936, 262144}, kmaxes[] = {1, 2, 7, 40, 1024};
    for (size_t v = 0; v < 5; v++)
        for (size_t k = 0; k < 5; k++) {
            const size_t b = nib_cuda_sample_scratch_bytes(vocabs[v], kmaxes[k]);
            most = b > most ? b : most;
        }
    scratch_bytes = most;
    d_logits = gpu_alloc(sizeof(float) * N_MAX);
    d_params = gpu_alloc(sizeof *d_params);
    d_u = gpu_alloc(sizeof(double) * N_U);
    d_out = gpu_alloc(sizeof(int32_t) * N_U);
    d_scratch = gpu_alloc(scratch_bytes);
    if (!d_logits || !d_params || !d_u || !d_out || !d_scratch) {
        printf("FAIL  device allocation\n");
        test_failed++;
        return test_summary();
    }
    RUN(test_errors);
    RUN(test_vocab_1000);
    RUN(test_vocab_32000);
    RUN(test_vocab_151936);
    RUN(test_vocab_262144);
    RUN(test_graph_replay);
    RUN(test_greedy_and_clamp);
    RUN(test_mostly_nan);
    RUN(test_timing);
    printf("draws %ld: GPU pick = CPU pick %ld, differing within the tolerance %ld; cases with a top-p/min-p decision "
           "at the edge %ld\n", n_draws, n_same_cpu, n_within_tol, n_edge_cases);
    nib_cuda_free(d_logits), nib_cuda_free(d_params), nib_cuda_free(d_u), nib_cuda_free(d_out);
    nib_cuda_free(d_scratch);
    return test_summary();
}
