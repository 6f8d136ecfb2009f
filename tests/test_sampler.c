/* The CPU sampler (src/sampler/sampler.c) against a reference written here:
 * the whole vocabulary sorted by (logit desc, id asc) with qsort, then the
 * chain as sampler.h states it, and the xorshift64* stream rebuilt from the
 * seed. Checks that nib_sampler_sample, and nib_sampler_sample_u with the
 * uniform nib_sampler_next_uniform returns, both pick what the reference
 * picks over many random draws, that greedy sampling leaves the RNG where it
 * was, the picks at hand-computed boundaries of u, and the rule of
 * nib_sampler_device_ok.
 *
 * The logits are random (N(0, s^2) for several s, and a third of the draws
 * rounded to halves so that many ties meet the id order), never zeros or
 * constants, so a wrong order, cut or draw shows as a different id. Both
 * sides compute the same float and double operations in the same order
 * (with top-k off, top-p's normalising sum in id order, as sampler.c's
 * sorted prefix does), so the ids must be equal, with no tolerance. The
 * cases with top-k off take sampler.c's growing sorted prefix (64, 256, ...
 * candidates), which must cut where the full sort does. */
#include <stdlib.h>

#include "sampler/sampler.h"
#include "test.h"

#define N_VOCAB 3000

typedef struct rcand {
    float logit;
    int32_t id;
} rcand;

static int rcmp(const void *a, const void *b) {
    const rcand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return x->id - y->id;
}

/* sampler.c's seeding and xorshift64*, written again */
static uint64_t ref_rng_init(uint64_t seed) { return seed ^ 0x853c49e6748fea9bull; }
static double ref_rng(uint64_t *st) {
    uint64_t x = *st ? *st : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *st = x;
    return (double)((x * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0);
}

/* The chain of sampler.h without a repetition penalty, over a full sort. */
static int32_t ref_sample(const float *logits, int n, const nib_sampler_params *p, double u) {
    static rcand c[N_VOCAB];
    static float pr[N_VOCAB];
    for (int i = 0; i < n; i++) c[i] = (rcand){logits[i], i};
    qsort(c, (size_t)n, sizeof *c, rcmp);
    if (p->temp <= 0.0f) return c[0].id;
    int m = p->top_k > 0 && p->top_k < n ? p->top_k : n;
    double sum = 0.0;
    for (int i = 0; i < m; i++) sum += (pr[i] = expf(c[i].logit - c[0].logit));
    if (m == n && p->top_p < 1.0f) { /* top-k off: top-p's sum runs in id order (sampler.c, sorted_prefix) */
        sum = 0.0;
        for (int i = 0; i < n; i++) sum += expf(logits[i] - c[0].logit);
    }
    if (p->top_p < 1.0f) {
        double cum = 0.0;
        for (int i = 0; i < m; i++)
            if ((cum += pr[i] / sum) >= p->top_p) {
                m = i + 1;
                break;
            }
    }
    if (p->min_p > 0.0f) {
        int keep = 1;
        while (keep < m && pr[keep] >= p->min_p * pr[0]) keep++;
        m = keep;
    }
    sum = 0.0;
    for (int i = 0; i < m; i++) sum += (pr[i] = expf((c[i].logit - c[0].logit) / p->temp));
    const double r = u * sum;
    double acc = 0.0;
    for (int i = 0; i < m; i++)
        if (r < (acc += pr[i])) return c[i].id;
    return c[m - 1].id;
}

static void random_logits(float *x, int n, int draw) {
    static const double scale[] = {0.5, 2.0, 8.0};
    const double s = scale[draw % 3];
    for (int i = 0; i < n; i++) {
        double v = s * rng_normal();
        if (draw % 3 == 1) v = floor(v * 2.0) / 2.0; /* ties */
        x[i] = (float)v;
    }
}

static nib_sampler_params params(float temp, int32_t top_k, float top_p, float min_p, uint64_t seed) {
    nib_sampler_params p = nib_sampler_default_params();
    p.temp = temp, p.top_k = top_k, p.top_p = top_p, p.min_p = min_p, p.seed = seed;
    return p;
}

/* nib_sampler_sample, nib_sampler_sample_u(next_uniform) and the reference
 * with its own stream agree on every draw. */
static void test_sample_u_matches_sample(void) {
    rng_seed(11);
    const nib_sampler_params cases[] = {
        params(0.8f, 40, 0.95f, 0.05f, 1), params(1.5f, 0, 1.0f, 0.0f, 2),   params(0.3f, 1024, 0.5f, 0.0f, 3),
        params(1.0f, 2, 1.0f, 0.05f, 4),  params(0.8f, 1, 0.9f, 0.1f, 5),   params(2.0f, 200, 0.99f, 0.0f, 0),
        params(0.7f, 5000, 1.0f, 0.2f, 6), params(0.9f, 0, 0.9f, 0.0f, 7),   params(1.2f, 0, 0.6f, 0.05f, 8),
        params(0.5f, 0, 0.999f, 0.0f, 9),
    };
    static float logits[N_VOCAB];
    nib_error err = {0};
    int n_differ_draws = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const nib_sampler_params *p = &cases[c];
        nib_sampler *s1 = nib_sampler_new(p, N_VOCAB, &err), *s2 = nib_sampler_new(p, N_VOCAB, &err);
        CHECK(s1 && s2, "nib_sampler_new: %s", err.msg);
        if (!s1 || !s2) return;
        uint64_t st = ref_rng_init(p->seed);
        int32_t prev = -1;
        for (int d = 0; d < 300; d++) {
            random_logits(logits, N_VOCAB, d);
            const int32_t a = nib_sampler_sample(s1, logits);
            const double u = nib_sampler_next_uniform(s2), ur = ref_rng(&st);
            const int32_t b = nib_sampler_sample_u(s2, logits, u), r = ref_sample(logits, N_VOCAB, p, ur);
            CHECK(u == ur, "case %zu draw %d: next_uniform %.17g, reference stream %.17g", c, d, u, ur);
            CHECK(a == r && b == r, "case %zu draw %d: sample %d, sample_u %d, reference %d", c, d, a, b, r);
            n_differ_draws += a != prev;
            prev = a;
        }
        /* both RNGs moved by the same 300 draws */
        CHECK(nib_sampler_next_uniform(s1) == nib_sampler_next_uniform(s2), "case %zu: RNG streams diverged", c);
        nib_sampler_free(s1), nib_sampler_free(s2);
    }
    /* the draws are not all the same token (a sampler stuck on id 0 would agree with a broken reference) */
    CHECK(n_differ_draws > 1000, "only %d changes of token over the draws", n_differ_draws);
}

/* Greedy draws no uniform: the stream after greedy picks is the fresh one. */
static void test_greedy_keeps_rng(void) {
    rng_seed(12);
    static float logits[N_VOCAB];
    nib_error err = {0};
    nib_sampler_params p = params(0.0f, 40, 0.95f, 0.05f, 77);
    nib_sampler *s = nib_sampler_new(&p, N_VOCAB, &err);
    CHECK(s != NULL, "nib_sampler_new: %s", err.msg);
    if (!s) return;
    for (int d = 0; d < 20; d++) {
        random_logits(logits, N_VOCAB, d);
        const int32_t a = nib_sampler_sample(s, logits);
        CHECK(a == nib_argmax(logits, N_VOCAB), "greedy pick %d is not the first maximum", a);
        CHECK(nib_sampler_sample_u(s, logits, 0.999) == a, "greedy sample_u depends on u");
    }
    uint64_t st = ref_rng_init(77);
    const double first = ref_rng(&st), second = ref_rng(&st);
    CHECK(nib_sampler_next_uniform(s) == first, "greedy sampling moved the RNG");
    CHECK(nib_sampler_next_uniform(s) == second, "next_uniform does not follow the stream");
    nib_sampler_free(s);
}

/* Picks just below and above the boundaries of u, computed by hand. */
static void test_sample_u_boundaries(void) {
    nib_error err = {0};
    nib_sampler_params p = params(1.0f, 0, 1.0f, 0.0f, 0);
    nib_sampler *s = nib_sampler_new(&p, 3, &err);
    CHECK(s != NULL, "nib_sampler_new: %s", err.msg);
    if (!s) return;
    /* ids 0, 1, 2 hold logits 0, 2, 1: sorted 1 (w 1), 2 (w e^-1), 0 (w e^-2) */
    const float lg[3] = {0.0f, 2.0f, 1.0f};
    const double w1 = expf(-1.0f), w2 = expf(-2.0f), sum = 1.0 + w1 + w2;
    const double b0 = 1.0 / sum, b1 = (1.0 + w1) / sum;
    CHECK(nib_sampler_sample_u(s, lg, 0.0) == 1, "u 0");
    CHECK(nib_sampler_sample_u(s, lg, b0 * (1 - 1e-9)) == 1, "u just below the first boundary");
    CHECK(nib_sampler_sample_u(s, lg, b0 * (1 + 1e-9)) == 2, "u just above the first boundary");
    CHECK(nib_sampler_sample_u(s, lg, b1 * (1 - 1e-9)) == 2, "u just below the second boundary");
    CHECK(nib_sampler_sample_u(s, lg, b1 * (1 + 1e-9)) == 0, "u just above the second boundary");
    CHECK(nib_sampler_sample_u(s, lg, 0.999999) == 0, "u near 1");
    nib_sampler_free(s);

    /* equal logits: the lower id comes first */
    s = nib_sampler_new(&p, 2, &err);
    const float tie[2] = {1.5f, 1.5f};
    CHECK(s && nib_sampler_sample_u(s, tie, 0.4999) == 0 && nib_sampler_sample_u(s, tie, 0.5001) == 1, "tie order");
    nib_sampler_free(s);

    /* top-p 0.5: p = 1, e^-1, e^-2 over 1.503: the first alone is 0.665 >= 0.5 */
    p = params(1.0f, 0, 0.5f, 0.0f, 0);
    s = nib_sampler_new(&p, 3, &err);
    CHECK(s && nib_sampler_sample_u(s, lg, 0.999) == 1, "top-p 0.5 keeps one");
    nib_sampler_free(s);
    /* top-p 0.9: 0.665, 0.910: keeps two */
    p = params(1.0f, 0, 0.9f, 0.0f, 0);
    s = nib_sampler_new(&p, 3, &err);
    CHECK(s && nib_sampler_sample_u(s, lg, 0.999) == 2, "top-p 0.9 keeps two");
    nib_sampler_free(s);
    /* min-p 0.3: e^-1 = 0.368 stays, e^-2 = 0.135 goes */
    p = params(1.0f, 0, 1.0f, 0.3f, 0);
    s = nib_sampler_new(&p, 3, &err);
    CHECK(s && nib_sampler_sample_u(s, lg, 0.999) == 2, "min-p 0.3 keeps two");
    nib_sampler_free(s);
    /* temperature 0.5 sharpens: w = 1, e^-2, e^-4; u = 0.9 lands on the first */
    p = params(0.5f, 0, 1.0f, 0.0f, 0);
    s = nib_sampler_new(&p, 3, &err);
    CHECK(s && nib_sampler_sample_u(s, lg, 0.85) == 1 && nib_sampler_sample_u(s, lg, 0.89) == 2, "temperature 0.5");
    nib_sampler_free(s);
}

static void test_device_ok(void) {
    nib_error err = {0};
    struct {
        nib_sampler_params p;
        bool ok;
    } cases[] = {
        {params(0.8f, 40, 0.95f, 0.05f, 1), true},  {params(0.0f, 40, 0.95f, 0.05f, 1), false},
        {params(0.8f, 0, 0.95f, 0.05f, 1), false},  {params(0.8f, 1, 1.0f, 0.0f, 1), true},
        {params(0.8f, NIB_SAMPLE_MAX_K, 1.0f, 0.0f, 1), true},
        {params(0.8f, NIB_SAMPLE_MAX_K + 1, 1.0f, 0.0f, 1), false},
        {params(0.8f, 40, 0.95f, 0.05f, 1), false}, /* with a penalty, set below */
        {params(0.8f, 40, 0.95f, 0.05f, 1), false}, /* presence */
        {params(0.8f, 40, 0.95f, 0.05f, 1), false}, /* frequency */
    };
    cases[6].p.repeat_penalty = 1.1f;
    cases[7].p.presence_penalty = 0.5f;
    cases[8].p.frequency_penalty = -0.25f;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nib_sampler *s = nib_sampler_new(&cases[i].p, 100, &err);
        CHECK(s != NULL, "nib_sampler_new: %s", err.msg);
        if (!s) continue;
        nib_sampler_params out;
        memset(&out, 0xA5, sizeof out);
        const bool ok = nib_sampler_device_ok(s, &out);
        CHECK(ok == cases[i].ok, "case %zu: device_ok %d, expected %d", i, ok, cases[i].ok);
        CHECK(out.temp == cases[i].p.temp && out.top_k == cases[i].p.top_k && out.top_p == cases[i].p.top_p &&
                  out.min_p == cases[i].p.min_p && out.repeat_penalty == cases[i].p.repeat_penalty &&
                  out.seed == cases[i].p.seed,
              "case %zu: params not copied out", i);
        nib_sampler_free(s);
    }
}

/* The penalties on a history where token 3 came 3 times, token 5 once and
 * token 7 not at all: greedy picks over logits whose order each penalty's
 * exact amount decides (3: 5.0, 5: 4.6, 7: 4.5), on both sides of each edge. */
static void test_penalties(void) {
    float lg[10];
    for (int i = 0; i < 10; i++) lg[i] = -1.0f - 0.1f * (float)i;
    lg[3] = 5.0f, lg[5] = 4.6f, lg[7] = 4.5f;
    static const int32_t hist[] = {3, 1, 3, 5, 3, 2};
    struct {
        float rep, pres, freq;
        int32_t want;
    } cases[] = {
        {1.0f, 0.0f, 0.0f, 3},   /* none: 3 at 5.0 */
        {1.0f, 0.0f, 0.19f, 7},  /* 3: 5 - 3 * 0.19 = 4.43, 5: 4.41, 7: 4.5 */
        {1.0f, 0.0f, 0.13f, 3},  /* 3: 4.61, 5: 4.47 */
        {1.0f, 0.45f, 0.0f, 3},  /* 3: 4.55, 5: 4.15 */
        {1.0f, 0.55f, 0.0f, 7},  /* 3: 4.45, 5: 4.05 */
        {1.12f, 0.0f, 0.0f, 7},  /* 3: 5 / 1.12 = 4.46, 5: 4.11 */
        {1.08f, 0.0f, 0.0f, 3},  /* 3: 4.63 */
        {1.0f, -0.3f, 0.0f, 3},  /* a negative presence favours what was seen: 5.3 */
        {1.05f, 0.1f, 0.05f, 3}, /* all three, in llama.cpp's order: 3: 5 / 1.05 - 0.15 - 0.1 = 4.51 */
    };
    nib_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nib_sampler_params p = params(0.0f, 40, 1.0f, 0.0f, 1);
        p.repeat_penalty = cases[i].rep, p.presence_penalty = cases[i].pres, p.frequency_penalty = cases[i].freq;
        nib_sampler *s = nib_sampler_new(&p, 10, &err);
        CHECK(s != NULL, "nib_sampler_new: %s", err.msg);
        if (!s) continue;
        for (size_t h = 0; h < sizeof hist / sizeof hist[0]; h++) nib_sampler_accept(s, hist[h]);
        int32_t got = nib_sampler_sample(s, lg), again = nib_sampler_sample(s, lg);
        CHECK(got == cases[i].want && again == got, "case %zu (repeat %g, presence %g, frequency %g): picked %d then %d, want %d",
              i, (double)cases[i].rep, (double)cases[i].pres, (double)cases[i].freq, got, again, cases[i].want);
        nib_sampler_free(s);
    }
    nib_sampler_params bad = params(0.8f, 40, 1.0f, 0.0f, 1);
    bad.presence_penalty = NAN;
    CHECK(nib_sampler_new(&bad, 10, &err) == NULL && strstr(err.msg, "presence penalty"), "NaN presence penalty: %s", err.msg);
}

int main(void) {
    RUN(test_penalties);
    RUN(test_sample_u_matches_sample);
    RUN(test_greedy_keeps_rng);
    RUN(test_sample_u_boundaries);
    RUN(test_device_ok);
    return test_summary();
}
