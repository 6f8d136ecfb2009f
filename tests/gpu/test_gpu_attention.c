/* The CUDA decode attention (nib_cuda_attention) against float64 softmax
 * attention computed on the host from the same f16 K/V.
 *
 * Inputs are random and never zero: q ~ 2 N(0,1) (scores of a few units after
 * the 1/sqrt(hd) scale, so the softmax is neither flat nor one-hot), K and V
 * ~ N(0,1) rounded to f16 (the reference widens the same f16 bits, so the
 * only difference left is the GPU's fp32 arithmetic), sinks ~ 3 N(0,1).
 * Cache rows past the last position a case uses hold f16 NaN: a kernel that
 * reads a future row, or a row past max_len, turns its output into NaN. The
 * output is poisoned with NaN before every launch, so a row the kernels never
 * write fails too.
 *
 * Tolerance. Per case, over all tokens, heads and dims, the relative L2 error
 * ||gpu - ref|| / ||ref|| must stay under 1e-5 (its square, the NMSE, under
 * 1e-10). Why that holds: a score is an fp32 dot of hd_k <= 512 terms with
 * partial sums of a few units, accumulated in chains of <= 16 FMAs and a
 * <= 5-level shuffle tree, so its absolute error is ~1e-7 to 1e-6; with the
 * pre-scaled q, the log2(e) multiply and exp2 (2 ulp) each adding ~1e-7
 * relative, every softmax weight is off by ~1e-6 relative at most, and the
 * output (a weighted mean of V rows with independent errors) by about that,
 * averaged down. The fp32 sums of exp terms and of p * v (at most 64 rows per
 * lane, then a 2..32-way tree and the merge) add ~1e-7. So ~1e-6 is the
 * expected scale; 1e-5 leaves 10x margin, while a wrong row range (one row
 * too many or too few out of 4097), a dropped sink or a missed softcap moves
 * the output by 1e-4 or far more.
 *
 * Cases: context lengths p + 1 of 1, 7, 64, 255, 1023, 4097 (one chunk up
 * to 32 rows, then the chunk grows with max_len: 32 to 256 rows) by head dims
 * 64, 128, 256, 512 by GQA groups 1 and 4; then windows (128 and 300, windows
 * ending mid-chunk), softcap 30, sinks, all three at once (gpt-oss-like: G =
 * 8, hd 64), GQA groups 6, 7, 8 and 12 (padded head slices and several
 * slices per KV head), unequal and odd head dims (192/128, 320/64, 96, 32);
 * max_len far above the length (splits past the length must be harmless);
 * causal batches of 5 tokens across a chunk boundary; one allocation replayed
 * at six positions with only the device int changed (the CUDA graph shape,
 * and the merge counters must be back at 0 after each call); the two shapes
 * measured in a real decode step (Llama-3-8B 32/8 hd 128, Qwen2.5-0.5B 14/2
 * hd 64) at positions 0, 1, 69, 255, 511 in buckets of 256, 512 and 1024 and
 * at 4097 and 16384; one scratch shared by buckets and batch sizes in turn;
 * more (token, head slice) pairs than merge counters; a position past
 * max_len, which must give NaN (one split, merge in place, attn_merge); and
 * the argument checks. The three ways a call combines its chunks are all
 * covered: one active chunk writes out, up to 32 merge in the last CTA, more
 * (or too many counters) go through attn_merge; on sm_90, 2 to 8 splits
 * of one token merge through a thread block cluster, and the cases that take it run a
 * second time with NIB_CUDA_ATTN_CLUSTER=0 (the last-CTA merge).
 * Every case also asks for the output quantized (act_out): in all three
 * ways it must equal nib_cuda_act_quantize of the output bit for bit (the
 * same rule on the same floats), with NaN scales for tokens past max_len
 * and the deferred-norm trailer zeroed over its NaN poison. (The kernels
 * quantize in their epilogue where a CTA writes <= 512 dims, e.g. hd 128 x
 * 4 heads; the wider cases, hd 256 or 512 x 4 heads, take the quantize
 * kernel after them: both ways are covered.)
 *
 * The chain as the decode step launches it: qkv_rope then the attention,
 * four layers back to back on one stream with no sync (the attention is a
 * programmatic dependent launch of qkv_rope, so it starts while qkv_rope
 * writes the query and this step's K/V row it reads), sharing one rotated-q
 * buffer and one scratch as the engine's layers do. Each layer's output
 * must equal bit for bit the same kernels run with a sync after each (same
 * inputs, same arithmetic: any difference is a read that raced a write),
 * and the synced output must match the float64 reference on the q and
 * cache read back. What it guards: a load of qkv_rope's output moved ahead
 * of pdl_wait, or a trigger or merge that lets a layer see another's data.
 * What it did not reproduce: the one wrong read seen in a whole model
 * (queries read through .nc under PDL, bench/gpu-decode-notes.md v23); a
 * build with .nc loads passes it too, so nib verify stays the check there.
 *
 * Without a usable GPU the run is one skip with the reason.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdbool.h>
#include <stdlib.h>

#include "core/fp16.h"
#include "cuda/cuda.h"
#include "cuda/cuda_attention.h"
#include "cuda/cuda_ops.h"
#include "nib.h"
#include "test.h"
#include "gpu_test.h"

#define REL_BOUND 1e-5
#define NAN_F16 0x7E00u
#define POOL 65536

static double worst_rel;

/* A pool of N(0,1) samples rounded to f16 (and their exact floats), drawn
 * from by random index: filling ~50M cache elements with Box-Muller would
 * take most of the test's time budget. */
static uint16_t pool_h[POOL];
static float pool_f[POOL];

static void pool_init(void) {
    for (int i = 0; i < POOL; i++) {
        pool_h[i] = nib_f32_to_fp16((float)rng_normal());
        pool_f[i] = nib_fp16_to_f32(pool_h[i]);
    }
}

typedef struct acase {
    int n_tok, n_head, n_head_kv, hd_k, hd_v;
    int window;
    float softcap;
    bool sinks;
    int max_len;
} acase;

/* float64 softmax attention for token t of a batch at position pos. */
static void attn_ref(const acase *c, const float *q, const float *kf, const float *vf, const float *sinks, int pos,
                     int t, double *out, double *sc) {
    const int p = pos + t, j0 = c->window > 0 ? (p - c->window + 1 > 0 ? p - c->window + 1 : 0) : 0;
    const int G = c->n_head / c->n_head_kv;
    const double scale = 1.0 / sqrt((double)c->hd_k);
    for (int h = 0; h < c->n_head; h++) {
        const int kvh = h / G;
        const float *qh = q + ((size_t)t * c->n_head + h) * c->hd_k;
        double M = -INFINITY;
        for (int j = j0; j <= p; j++) {
            const float *kj = kf + ((size_t)j * c->n_head_kv + kvh) * c->hd_k;
            double s = 0.0;
            for (int d = 0; d < c->hd_k; d++) s += (double)qh[d] * (double)kj[d];
            s *= scale;
            if (c->softcap > 0.0f) s = c->softcap * tanh(s / c->softcap);
            sc[j] = s;
            if (s > M) M = s;
        }
        if (sinks && sinks[h] > M) M = sinks[h];
        double den = sinks ? exp((double)sinks[h] - M) : 0.0;
        double *o = out + (size_t)h * c->hd_v;
        for (int d = 0; d < c->hd_v; d++) o[d] = 0.0;
        for (int j = j0; j <= p; j++) {
            const double w = exp(sc[j] - M);
            const float *vj = vf + ((size_t)j * c->n_head_kv + kvh) * c->hd_v;
            den += w;
            for (int d = 0; d < c->hd_v; d++) o[d] += w * (double)vj[d];
        }
        for (int d = 0; d < c->hd_v; d++) o[d] /= den;
    }
}

static const char *case_name(const acase *c, char *buf, size_t n) {
    snprintf(buf, n, "n_tok %d heads %d/%d hd %d/%d max_len %d%s%s%s", c->n_tok, c->n_head, c->n_head_kv, c->hd_k,
             c->hd_v, c->max_len, c->window ? " window" : "", c->softcap > 0 ? " softcap" : "", c->sinks ? " sinks" : "");
    return buf;
}

/* Zero a fresh scratch once, as cuda_attention.h asks (its merge counters
 * start at 0 and the kernels leave them at 0). */
static bool scratch_zero(void *scratch, size_t sb, nib_error *err) {
    return !scratch || (nib_cuda_fill_f32((float *)scratch, 0.0f, sb / sizeof(float), err) == NIB_OK &&
                        nib_cuda_sync(err) == NIB_OK);
}

/* One configuration, launched once per entry of pos_list on the same
 * allocation and the same nib_cuda_attn: only the device int *pos changes.
 * Tokens whose p is >= max_len (a broken host bound) must come back NaN.
 * `shared` is a scratch to use instead of one of the case's own (NULL: own,
 * sized and zeroed here). */
static void run_case_with(const acase *c, const int *pos_list, int n_pos, void *shared) {
    nib_error err = {0};
    char name[160];
    case_name(c, name, sizeof name);
    const int n_ctx = c->max_len + 8;  /* 8 rows past max_len, NaN: must never be read */
    int p_last = 0;
    for (int i = 0; i < n_pos; i++)
        if (pos_list[i] + c->n_tok - 1 > p_last) p_last = pos_list[i] + c->n_tok - 1;
    if (p_last > c->max_len - 1) p_last = c->max_len - 1;

    const size_t nq = (size_t)c->n_tok * c->n_head * c->hd_k, no = (size_t)c->n_tok * c->n_head * c->hd_v;
    const size_t nk = (size_t)n_ctx * c->n_head_kv * c->hd_k, nv = (size_t)n_ctx * c->n_head_kv * c->hd_v;
    float *q = malloc(sizeof(float) * nq), *out = malloc(sizeof(float) * no), *sinks = malloc(sizeof(float) * (size_t)c->n_head);
    uint16_t *kh = malloc(2 * nk), *vh = malloc(2 * nv);
    float *kf = malloc(sizeof(float) * nk), *vf = malloc(sizeof(float) * nv);
    double *ref = malloc(sizeof(double) * (size_t)c->n_head * c->hd_v), *sc = malloc(sizeof(double) * (size_t)n_ctx);
    for (size_t i = 0; i < nq; i++) q[i] = (float)(2.0 * rng_normal());
    for (int h = 0; h < c->n_head; h++) sinks[h] = (float)(3.0 * rng_normal());
    const size_t k_live = (size_t)(p_last + 1) * c->n_head_kv * c->hd_k, v_live = (size_t)(p_last + 1) * c->n_head_kv * c->hd_v;
    for (size_t i = 0; i < nk; i++) {
        const int r = (int)(rng_u64() % POOL);
        kh[i] = i < k_live ? pool_h[r] : (uint16_t)NAN_F16;
        kf[i] = i < k_live ? pool_f[r] : NAN;
    }
    for (size_t i = 0; i < nv; i++) {
        const int r = (int)(rng_u64() % POOL);
        vh[i] = i < v_live ? pool_h[r] : (uint16_t)NAN_F16;
        vf[i] = i < v_live ? pool_f[r] : NAN;
    }

    float *dq = nib_cuda_alloc(sizeof(float) * nq, &err), *dout = nib_cuda_alloc(sizeof(float) * no, &err);
    uint16_t *dk = nib_cuda_alloc(2 * nk, &err), *dv = nib_cuda_alloc(2 * nv, &err);
    int32_t *dpos = nib_cuda_alloc(sizeof(int32_t), &err);
    float *dsinks = c->sinks ? nib_cuda_alloc(sizeof(float) * (size_t)c->n_head, &err) : NULL;
    const size_t sb = shared ? 0 : nib_cuda_attention_scratch_bytes(c->n_tok, c->n_head, c->hd_v, c->max_len);
    void *own = sb ? nib_cuda_alloc(sb, &err) : NULL, *scratch = shared ? shared : own;
    /* the quantized output (act_out), and nib_cuda_act_quantize's of out to compare it with */
    const int64_t n_row = (int64_t)c->n_head * c->hd_v;
    const size_t ab = nib_cuda_act_bytes(n_row, c->n_tok), qstride = (size_t)(n_row + 255) / 256 * 256;
    uint8_t *dact = nib_cuda_alloc(ab, &err), *dref = nib_cuda_alloc(ab, &err);
    uint8_t *act_h = malloc(ab), *ref_h = malloc(ab);
    bool ok = dq && dout && dk && dv && dpos && (!c->sinks || dsinks) && (!sb || own) && dact && dref &&
              scratch_zero(own, sb, &err);
    CHECK(ok, "%s: alloc: %s", name, err.msg);
    nib_status s = ok ? NIB_OK : NIB_ERR_NOMEM;
    if (s == NIB_OK) s = nib_cuda_copy_to_device(dq, q, sizeof(float) * nq, &err);
    if (s == NIB_OK) s = nib_cuda_copy_to_device(dk, kh, 2 * nk, &err);
    if (s == NIB_OK) s = nib_cuda_copy_to_device(dv, vh, 2 * nv, &err);
    if (s == NIB_OK && dsinks) s = nib_cuda_copy_to_device(dsinks, sinks, sizeof(float) * (size_t)c->n_head, &err);
    CHECK(!ok || s == NIB_OK, "%s: upload: %s", name, err.msg);

    const nib_cuda_attn a = {dq, dk, dv, dout, dpos, c->n_tok, c->n_head, c->n_head_kv, c->hd_k, c->hd_v, n_ctx,
                             c->window, (float)(1.0 / sqrt((double)c->hd_k)), c->softcap, dsinks, c->max_len, scratch,
                             dact};
    for (int ip = 0; ok && s == NIB_OK && ip < n_pos; ip++) {
        const int32_t pos = pos_list[ip];
        s = nib_cuda_copy_to_device(dpos, &pos, sizeof pos, &err);
        if (s == NIB_OK) s = nib_cuda_fill_f32(dout, NAN, no, &err);  /* poison */
        if (s == NIB_OK) s = nib_cuda_fill_f32((float *)dact, NAN, ab / 4, &err);  /* quants -1, scales NaN */
        if (s == NIB_OK) s = nib_cuda_fill_f32((float *)dref, NAN, ab / 4, &err);
        if (s == NIB_OK) s = nib_cuda_attention(&a, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_act_quantize(dout, n_row, c->n_tok, dref, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_sync(&err);
        if (s == NIB_OK) s = nib_cuda_copy_to_host(out, dout, sizeof(float) * no, &err);
        if (s == NIB_OK) s = nib_cuda_copy_to_host(act_h, dact, ab, &err);
        if (s == NIB_OK) s = nib_cuda_copy_to_host(ref_h, dref, ab, &err);
        CHECK(s == NIB_OK, "%s pos %d: %s", name, pos, err.msg);
        if (s != NIB_OK) break;
        /* act_out: bit for bit nib_cuda_act_quantize(out) for the tokens in bounds, NaN scales past
         * them, and the deferred-norm trailer (the last 256 bytes) all zero */
        int64_t q_bad = 0;
        for (int t = 0; t < c->n_tok; t++) {
            const size_t qo = (size_t)t * qstride;
            const size_t dso = qstride * (size_t)c->n_tok + (size_t)t * (size_t)(n_row / 32) * 8;
            if (pos + t >= c->max_len) {
                for (int64_t b = 0; b < n_row / 32; b++) {
                    float d;
                    memcpy(&d, act_h + dso + (size_t)b * 8, 4);
                    q_bad += !isnan(d);
                }
                continue;
            }
            q_bad += memcmp(act_h + qo, ref_h + qo, (size_t)n_row) != 0;
            q_bad += memcmp(act_h + dso, ref_h + dso, (size_t)(n_row / 32) * 8) != 0;
        }
        double trailer[32];
        memcpy(trailer, act_h + ab - sizeof trailer, sizeof trailer);
        for (int i = 0; i < 32 && pos < c->max_len; i++) q_bad += trailer[i] != 0.0;
        CHECK(q_bad == 0, "%s pos %d: the quantized output differs from nib_cuda_act_quantize's (%lld places)", name,
              pos, (long long)q_bad);

        double e2 = 0.0, r2 = 0.0;
        int not_nan = 0, non_finite = 0;
        for (int t = 0; t < c->n_tok; t++) {
            const float *o = out + (size_t)t * c->n_head * c->hd_v;
            const int nt = c->n_head * c->hd_v;
            if (pos + t >= c->max_len) {  /* broken bound: NaN, loudly */
                for (int i = 0; i < nt; i++) not_nan += !isnan(o[i]);
                continue;
            }
            attn_ref(c, q, kf, vf, c->sinks ? sinks : NULL, pos, t, ref, sc);
            for (int i = 0; i < nt; i++) {
                if (!isfinite(o[i])) non_finite++;
                e2 += ((double)o[i] - ref[i]) * ((double)o[i] - ref[i]);
                r2 += ref[i] * ref[i];
            }
        }
        const double rel = r2 > 0 ? sqrt(e2 / r2) : 0.0;
        CHECK(non_finite == 0, "%s pos %d: %d outputs not finite", name, pos, non_finite);
        CHECK(not_nan == 0, "%s pos %d: %d outputs of tokens past max_len are not NaN", name, pos, not_nan);
        CHECK(rel <= REL_BOUND, "%s pos %d: ||gpu-ref||/||ref|| = %.3g > %.0e", name, pos, rel, REL_BOUND);
        if (rel > worst_rel && non_finite == 0) worst_rel = rel;
        printf("      %-60s pos %5d  rel %.2e\n", name, pos, rel);
    }
    nib_cuda_free(dq), nib_cuda_free(dout), nib_cuda_free(dk), nib_cuda_free(dv), nib_cuda_free(dpos);
    nib_cuda_free(dsinks), nib_cuda_free(own), nib_cuda_free(dact), nib_cuda_free(dref);
    free(q), free(out), free(sinks), free(kh), free(vh), free(kf), free(vf), free(ref), free(sc), free(act_h), free(ref_h);
}

static void run_case(const acase *c, const int *pos_list, int n_pos) { run_case_with(c, pos_list, n_pos, NULL); }

/* A decode step (n_tok 1) at context length ctx with a tight bucket (max_len = ctx). */
static void run_decode(acase c, int ctx) {
    c.n_tok = 1;
    if (c.max_len == 0) c.max_len = ctx;
    const int pos = ctx - 1;
    run_case(&c, &pos, 1);
}

static const int ctxs[] = {1, 7, 64, 255, 1023, 4097};
static const int hds[] = {64, 128, 256, 512};

static void test_sweep_group1(void) {
    for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++)
        for (size_t i = 0; i < sizeof ctxs / sizeof ctxs[0]; i++)
            run_decode((acase){1, 4, 4, hds[h], hds[h], 0, 0.0f, false, 0}, ctxs[i]);
}

static void test_sweep_group4(void) {
    for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++)
        for (size_t i = 0; i < sizeof ctxs / sizeof ctxs[0]; i++)
            run_decode((acase){1, 8, 2, hds[h], hds[h], 0, 0.0f, false, 0}, ctxs[i]);
    /* one token runs a query head a CTA while the grid (heads x splits) stays
     * within 1,024 CTAs; 64 heads over 17 splits are past that, so the GQA
     * groups of 8 run 4 heads a CTA in two slices, with and without a window */
    run_decode((acase){1, 64, 8, 128, 128, 0, 0.0f, false, 0}, 4097);
    run_decode((acase){1, 64, 8, 128, 128, 1000, 0.0f, false, 0}, 4097);
}

static void test_window_softcap_sinks(void) {
    run_decode((acase){1, 8, 2, 128, 128, 128, 0.0f, false, 0}, 1023);
    run_decode((acase){1, 8, 2, 128, 128, 128, 0.0f, false, 0}, 4097);
    run_decode((acase){1, 8, 2, 64, 64, 300, 0.0f, false, 0}, 1023);   /* window starts mid-chunk */
    run_decode((acase){1, 8, 2, 256, 256, 128, 0.0f, false, 0}, 100);  /* window longer than the context */
    run_decode((acase){1, 8, 2, 256, 256, 0, 30.0f, false, 0}, 1023);
    run_decode((acase){1, 4, 4, 128, 128, 0, 30.0f, false, 0}, 4097);
    run_decode((acase){1, 8, 2, 512, 512, 0, 30.0f, false, 0}, 255);
    run_decode((acase){1, 8, 2, 128, 128, 0, 0.0f, true, 0}, 1);
    run_decode((acase){1, 8, 2, 128, 128, 0, 0.0f, true, 0}, 64);
    run_decode((acase){1, 8, 2, 512, 512, 0, 0.0f, true, 0}, 1023);
    run_decode((acase){1, 16, 2, 64, 64, 128, 0.0f, true, 0}, 4097);   /* gpt-oss-like */
    run_decode((acase){1, 16, 2, 64, 64, 128, 0.0f, true, 0}, 100);
    run_decode((acase){1, 8, 2, 256, 256, 128, 30.0f, true, 0}, 4097); /* all three */
}

static void test_gqa_and_dims(void) {
    run_decode((acase){1, 12, 2, 256, 256, 0, 0.0f, false, 0}, 300);   /* G 6: 8-head slice, 2 padded */
    run_decode((acase){1, 14, 2, 128, 128, 0, 0.0f, false, 0}, 1023);  /* G 7 */
    run_decode((acase){1, 16, 2, 128, 128, 0, 0.0f, false, 0}, 1023);  /* G 8 */
    run_decode((acase){1, 16, 2, 64, 64, 0, 0.0f, false, 0}, 64);
    run_decode((acase){1, 16, 2, 256, 256, 0, 0.0f, false, 0}, 4097);
    run_decode((acase){1, 12, 1, 512, 512, 0, 0.0f, false, 0}, 1023);  /* G 12 at hd 512: 3 slices of 4 */
    run_decode((acase){1, 24, 1, 128, 128, 0, 0.0f, true, 0}, 255);   /* G 24: 3 slices of 8 */
    run_decode((acase){1, 8, 2, 192, 128, 0, 0.0f, false, 0}, 1023);   /* unequal, not powers of two */
    run_decode((acase){1, 8, 2, 320, 64, 0, 0.0f, false, 0}, 1023);
    run_decode((acase){1, 8, 2, 128, 512, 0, 0.0f, false, 0}, 300);
    run_decode((acase){1, 6, 3, 96, 96, 0, 0.0f, false, 0}, 1023);
    run_decode((acase){1, 8, 2, 32, 32, 0, 0.0f, false, 0}, 1023);
}

/* A big bucket at a short length: the splits past p find nothing and leave. */
static void test_max_len_far_above(void) {
    run_decode((acase){1, 8, 2, 128, 128, 0, 0.0f, false, 8192}, 64);
    run_decode((acase){1, 8, 2, 128, 128, 0, 0.0f, false, 8192}, 1);
    run_decode((acase){1, 8, 2, 64, 64, 128, 0.0f, true, 8192}, 300);
    run_decode((acase){1, 4, 4, 512, 512, 0, 0.0f, false, 256}, 7);  /* one active chunk of 8 */
}

/* Prompt processing: token t sees rows up to pos + t only. */
static void test_causal_batch(void) {
    const int at_254 = 254, at_0 = 0, at_1020 = 1020;
    run_case(&(acase){5, 8, 2, 128, 128, 0, 0.0f, false, 512}, &at_254, 1);  /* p 254..258 cross a chunk */
    run_case(&(acase){5, 8, 2, 64, 64, 128, 0.0f, true, 512}, &at_254, 1);
    run_case(&(acase){5, 8, 2, 256, 256, 0, 30.0f, false, 5}, &at_0, 1);    /* single split */
    run_case(&(acase){5, 4, 4, 512, 512, 0, 0.0f, false, 4096}, &at_1020, 1);
}

/* The graph-replay shape: one allocation, one nib_cuda_attn, four positions
 * (up and down, and the last one the bucket allows). Every call after the
 * first also checks that the merge counters came back to 0: one left
 * non-zero makes no CTA the last, and the poisoned output stays NaN. */
static void test_replay_positions(void) {
    const int pos[] = {100, 3000, 10, 4095, 4095, 300};
    run_case(&(acase){1, 8, 2, 128, 128, 0, 0.0f, false, 4096}, pos, 6);
    const int pos_b[] = {0, 200, 3};
    run_case(&(acase){4, 16, 2, 64, 64, 128, 0.0f, true, 256}, pos_b, 3);  /* batch of 4, window, sinks */
}

/* The shapes measured in a real decode step (ncu, H200), at short contexts
 * in the engine's buckets (256 << b): Llama-3-8B (32 heads, 8 KV heads, hd
 * 128) and Qwen2.5-0.5B (14/2, hd 64, group 7: two head slices, one padded).
 * Position 0 and 1 (one active chunk: written out directly), 69 (the measured
 * context: several chunks, merged by the last CTA), the bucket's last row. */
static const acase llama8b = {1, 32, 8, 128, 128, 0, 0.0f, false, 0};
static const acase qwen05b = {1, 14, 2, 64, 64, 0, 0.0f, false, 0};

static void test_decode_real_short(void) {
    const int pos[] = {0, 1, 69, 255, 511};
    const int buckets[] = {256, 512, 1024};
    const acase *shapes[] = {&llama8b, &qwen05b};
    for (size_t si = 0; si < 2; si++)
        for (size_t b = 0; b < 3; b++) {
            acase c = *shapes[si];
            c.max_len = buckets[b];
            int list[5], n = 0;
            for (int i = 0; i < 5; i++)
                if (pos[i] < c.max_len) list[n++] = pos[i];
            run_case(&c, list, n);
        }
}

/* Long contexts at the real shapes: 4097 (17 chunks of 256, merged in place),
 * 16384 (64 chunks: attn_merge), a short context in the 16k bucket (one or
 * two active chunks under attn_merge) and 4097 in the 8k bucket. */
static void test_decode_real_long(void) {
    const acase *shapes[] = {&llama8b, &qwen05b};
    for (size_t si = 0; si < 2; si++) {
        run_decode(*shapes[si], 4097);
        run_decode(*shapes[si], 16384);
        acase c = *shapes[si];
        c.max_len = 16384;
        const int pos[] = {69, 300, 16383};
        run_case(&c, pos, 3);
        c.max_len = 8192;
        const int at = 4096;
        run_case(&c, &at, 1);
    }
}

/* One scratch for everything, as the engine does: sized once for its largest
 * batch and bucket, zeroed once, then decode steps in three buckets and
 * batches of 4 and 2 in turn, each reusing the counters the previous call
 * must have left at 0. */
static void test_shared_scratch(void) {
    nib_error err = {0};
    const acase *shapes[] = {&llama8b, &qwen05b};
    for (size_t si = 0; si < 2; si++) {
        const acase base = *shapes[si];
        const size_t sb = nib_cuda_attention_scratch_bytes(4, base.n_head, base.hd_v, 1024);
        void *scratch = nib_cuda_alloc(sb, &err);
        CHECK(scratch && scratch_zero(scratch, sb, &err), "shared scratch: %s", err.msg);
        if (!scratch) continue;
        const struct {
            int n_tok, max_len, pos;
        } seq[] = {{1, 256, 69}, {1, 512, 300}, {4, 1024, 600}, {1, 256, 70}, {1, 1024, 1023},
                   {2, 512, 254}, {1, 512, 69}, {4, 256, 100}, {1, 256, 255}, {1, 1024, 69}};
        for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
            acase c = base;
            c.n_tok = seq[i].n_tok, c.max_len = seq[i].max_len;
            run_case_with(&c, &seq[i].pos, 1, scratch);
        }
        nib_cuda_free(scratch);
    }
}

/* More (token, KV-head slice) pairs than merge counters (17 x 64 > 1024):
 * attn_merge takes over, with a batch across a chunk boundary. */
static void test_many_counters(void) {
    const int at = 300;
    run_case(&(acase){17, 64, 64, 64, 64, 0, 0.0f, false, 512}, &at, 1);
}

/* *pos + n_tok > max_len breaks the host bound: those tokens come back NaN
 * (the ones inside it stay correct), with one split, with the merge in the
 * last CTA, and with attn_merge. */
static void test_bound_broken(void) {
    const int past = 4094, past_single = 30, past_fused = 254, past_long = 16383;
    run_case(&(acase){3, 8, 2, 128, 128, 0, 0.0f, false, 4096}, &past, 1);
    run_case(&(acase){3, 8, 2, 128, 128, 0, 0.0f, false, 32}, &past_single, 1);
    run_case(&(acase){3, 8, 2, 128, 128, 0, 0.0f, false, 256}, &past_fused, 1);
    run_case(&(acase){2, 32, 8, 128, 128, 0, 0.0f, false, 16384}, &past_long, 1);
}

/* One shape of the chain test (see the top): n_layer layers at each of the
 * positions, chained, then synced, then checked. */
static void run_chain(const acase *c, const int *pos_list, int n_pos) {
    enum { n_layer = 4 };
    nib_error err = {0};
    char name[160];
    case_name(c, name, sizeof name);
    const int n_ctx = c->max_len, hd = c->hd_k;
    const size_t nq = (size_t)c->n_head * hd, nkv = (size_t)c->n_head_kv * hd, ncache = (size_t)n_ctx * nkv;
    float *q_in[n_layer] = {0}, *k_in[n_layer] = {0}, *v_in[n_layer] = {0}, *outs[n_layer] = {0};
    uint16_t *kc[n_layer] = {0}, *vc[n_layer] = {0};
    float *dq = nib_cuda_alloc(sizeof(float) * nq, &err);
    int32_t *dpos = nib_cuda_alloc(sizeof(int32_t), &err);
    const size_t sb = nib_cuda_attention_scratch_bytes(1, c->n_head, hd, c->max_len);
    void *scratch = sb ? nib_cuda_alloc(sb, &err) : NULL, *st = nib_cuda_stream_new(&err);
    float *h_in = malloc(sizeof(float) * nq), *chained = malloc(sizeof(float) * nq * n_layer);
    float *synced = malloc(sizeof(float) * nq), *qr = malloc(sizeof(float) * nq);
    uint16_t *h_cache = malloc(2 * ncache), *kh = malloc(2 * ncache), *vh = malloc(2 * ncache);
    float *kf = malloc(sizeof(float) * ncache), *vf = malloc(sizeof(float) * ncache);
    double *ref = malloc(sizeof(double) * nq), *sc = malloc(sizeof(double) * (size_t)n_ctx);
    bool ok = dq && dpos && (!sb || scratch) && st && h_in && chained && synced && qr && h_cache && kh && vh && kf &&
              vf && ref && sc && scratch_zero(scratch, sb, &err);
    for (int l = 0; ok && l < n_layer; l++) {
        q_in[l] = nib_cuda_alloc(sizeof(float) * nq, &err), k_in[l] = nib_cuda_alloc(sizeof(float) * nkv, &err);
        v_in[l] = nib_cuda_alloc(sizeof(float) * nkv, &err), outs[l] = nib_cuda_alloc(sizeof(float) * nq, &err);
        kc[l] = nib_cuda_alloc(2 * ncache, &err), vc[l] = nib_cuda_alloc(2 * ncache, &err);
        ok = q_in[l] && k_in[l] && v_in[l] && outs[l] && kc[l] && vc[l];
        /* inputs: N(0,1) (q 2 N(0,1)); caches: f16 N(0,1) rows, NaN past the last position */
        for (size_t i = 0; ok && i < nq; i++) h_in[i] = (float)(2.0 * rng_normal());
        ok = ok && nib_cuda_copy_to_device(q_in[l], h_in, sizeof(float) * nq, &err) == NIB_OK;
        for (size_t i = 0; ok && i < nkv; i++) h_in[i] = (float)rng_normal();
        ok = ok && nib_cuda_copy_to_device(k_in[l], h_in, sizeof(float) * nkv, &err) == NIB_OK;
        for (size_t i = 0; ok && i < nkv; i++) h_in[i] = (float)rng_normal();
        ok = ok && nib_cuda_copy_to_device(v_in[l], h_in, sizeof(float) * nkv, &err) == NIB_OK;
        for (int w = 0; ok && w < 2; w++) {
            int p_max = 0;
            for (int i = 0; i < n_pos; i++) p_max = pos_list[i] > p_max ? pos_list[i] : p_max;
            for (size_t i = 0; i < ncache; i++)
                h_cache[i] = i < (size_t)(p_max + 1) * nkv ? pool_h[rng_u64() % POOL] : (uint16_t)NAN_F16;
            ok = nib_cuda_copy_to_device(w ? vc[l] : kc[l], h_cache, 2 * ncache, &err) == NIB_OK;
        }
    }
    CHECK(ok, "chain %s: setup: %s", name, err.msg);
    const float scale = (float)(1.0 / sqrt((double)hd));
    for (int ip = 0; ok && ip < n_pos; ip++) {
        const int32_t pos = pos_list[ip];
        nib_status s = nib_cuda_copy_to_device(dpos, &pos, sizeof pos, &err);
        for (int pass = 0; s == NIB_OK && pass < 2; pass++) { /* 0: chained, 1: synced */
            for (int l = 0; s == NIB_OK && l < n_layer; l++) s = nib_cuda_fill_f32(outs[l], NAN, nq, &err); /* poison */
            if (s == NIB_OK) s = nib_cuda_sync(&err);
            for (int l = 0; s == NIB_OK && l < n_layer; l++) {
                const nib_cuda_qkv_args qa = {
                    .q = q_in[l], .k = k_in[l], .v = v_in[l], .q_out = dq, .k_cache = kc[l], .v_cache = vc[l],
                    .pos = dpos, .n_tok = 1, .n_head = c->n_head, .n_head_kv = c->n_head_kv, .hd_k = hd, .hd_v = hd,
                    .n_rot = hd, .rope_base = 10000.0f, .rope_scale = 1.0f, .eps = 1e-6f};
                const nib_cuda_attn aa = {dq, kc[l], vc[l], outs[l], dpos, 1, c->n_head, c->n_head_kv, hd, hd, n_ctx,
                                          0, scale, 0.0f, NULL, c->max_len, scratch, NULL};
                s = nib_cuda_qkv_rope(&qa, st, &err);
                if (s == NIB_OK && pass) s = nib_cuda_stream_sync(st, &err);
                if (s == NIB_OK && pass) s = nib_cuda_copy_to_host(qr, dq, sizeof(float) * nq, &err);
                if (s == NIB_OK) s = nib_cuda_attention(&aa, st, &err);
                if (s == NIB_OK && pass) s = nib_cuda_stream_sync(st, &err);
                if (s != NIB_OK || !pass) continue;
                /* synced: bit for bit the chained output, and near the reference */
                s = nib_cuda_copy_to_host(synced, outs[l], sizeof(float) * nq, &err);
                if (s == NIB_OK) s = nib_cuda_copy_to_host(kh, kc[l], 2 * ncache, &err);
                if (s == NIB_OK) s = nib_cuda_copy_to_host(vh, vc[l], 2 * ncache, &err);
                if (s != NIB_OK) break;
                int differ = 0;
                for (size_t i = 0; i < nq; i++) differ += memcmp(&synced[i], &chained[l * nq + i], sizeof(float)) != 0;
                CHECK(differ == 0, "chain %s pos %d layer %d: %d of %zu outputs differ from the synced run", name,
                      pos, l, differ, nq);
                for (size_t i = 0; i < (size_t)(pos + 1) * nkv; i++)
                    kf[i] = nib_fp16_to_f32(kh[i]), vf[i] = nib_fp16_to_f32(vh[i]);
                attn_ref(&(acase){1, c->n_head, c->n_head_kv, hd, hd, 0, 0.0f, false, c->max_len}, qr, kf, vf, NULL,
                         pos, 0, ref, sc);
                double e2 = 0.0, r2 = 0.0;
                for (size_t i = 0; i < nq; i++)
                    e2 += ((double)synced[i] - ref[i]) * ((double)synced[i] - ref[i]), r2 += ref[i] * ref[i];
                const double rel = r2 > 0 ? sqrt(e2 / r2) : INFINITY; /* NaN (a poisoned output) fails too */
                CHECK(rel <= REL_BOUND, "chain %s pos %d layer %d: ||gpu-ref||/||ref|| = %.3g > %.0e", name, pos, l,
                      rel, REL_BOUND);
                printf("      chain %-54s pos %5d layer %d  rel %.2e, %d differ\n", name, pos, l, rel, differ);
            }
            if (s == NIB_OK && !pass) {
                s = nib_cuda_stream_sync(st, &err);
                for (int l = 0; s == NIB_OK && l < n_layer; l++)
                    s = nib_cuda_copy_to_host(chained + l * nq, outs[l], sizeof(float) * nq, &err);
            }
        }
        CHECK(s == NIB_OK, "chain %s pos %d: %s", name, pos, err.msg);
        if (s != NIB_OK) break;
    }
    for (int l = 0; l < n_layer; l++)
        nib_cuda_free(q_in[l]), nib_cuda_free(k_in[l]), nib_cuda_free(v_in[l]), nib_cuda_free(outs[l]),
            nib_cuda_free(kc[l]), nib_cuda_free(vc[l]);
    nib_cuda_free(dq), nib_cuda_free(dpos), nib_cuda_free(scratch), nib_cuda_stream_free(st);
    free(h_in), free(chained), free(synced), free(qr), free(h_cache), free(kh), free(vh), free(kf), free(vf);
    free(ref), free(sc);
}

static void test_chain_after_qkv_rope(void) {
    const int pos_short[] = {0, 69, 200}, pos_long[] = {4097};
    acase c = llama8b;
    c.max_len = 256;
    run_chain(&c, pos_short, 3);
    c.max_len = 8192;
    run_chain(&c, pos_long, 1);
    c = qwen05b;
    c.max_len = 256;
    run_chain(&c, pos_short, 3);
}

static void test_errors(void) {
    nib_error err = {0};
    float *q = nib_cuda_alloc(sizeof(float) * 8 * 128, &err), *out = nib_cuda_alloc(sizeof(float) * 8 * 128, &err);
    uint16_t *kv = nib_cuda_alloc(2 * 1024 * 2 * 128, &err);
    int32_t *pos = nib_cuda_alloc(sizeof(int32_t), &err);
    CHECK(q && out && kv && pos, "alloc: %s", err.msg);
    if (!q || !out || !kv || !pos) goto done;
    const nib_cuda_attn good = {q, kv, kv, out, pos, 1, 8, 2, 128, 128, 1024, 0, 0.088f, 0.0f, NULL, 256, NULL, NULL};
    struct {
        const char *what, *says;
        nib_cuda_attn a;
    } bad[] = {
        {"NULL q", "NULL q", good},        {"NULL pos", "NULL pos", good},    {"heads 6/4", "multiple", good},
        {"hd_k 48", "hd_k 48", good},      {"hd_v 544", "hd_v 544", good},    {"max_len > n_ctx", "max_len", good},
        {"n_tok 0", "n_tok 0", good},      {"no scratch", "scratch", good},   {"q misaligned", "aligned", good},
        {"softcap -1", "softcap", good},   {"window -1", "window", good},     {"n_head_kv 0", "n_head_kv 0", good},
        {"act_out misaligned", "act_out", good},
    };
    bad[0].a.q = NULL, bad[1].a.pos = NULL, bad[2].a.n_head = 6, bad[2].a.n_head_kv = 4, bad[3].a.hd_k = 48;
    bad[4].a.hd_v = 544, bad[5].a.max_len = 1025, bad[6].a.n_tok = 0, bad[7].a.max_len = 1024, bad[8].a.q = q + 1;
    bad[9].a.softcap = -1.0f, bad[10].a.window = -1, bad[11].a.n_head_kv = 0, bad[12].a.act_out = (uint8_t *)out + 4;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        const nib_status s = nib_cuda_attention(&bad[i].a, NULL, &err);
        CHECK(s == NIB_ERR_ARG && strstr(err.msg, bad[i].says), "%s: status %d, '%s' (want '%s')", bad[i].what, (int)s,
              err.msg, bad[i].says);
    }
    printf("      e.g. %s\n", err.msg);
    CHECK(nib_cuda_attention_scratch_bytes(1, 8, 128, 32) == 0, "one split needs no scratch");
    CHECK(nib_cuda_attention_scratch_bytes(1, 8, 128, 33) >= 4096 + 8 * 2 * (128 * 4 + 8),
          "two splits: too little scratch");
    CHECK(nib_cuda_attention_scratch_bytes(65535, 65535, 512, 1 << 30) == SIZE_MAX, "overflow not reported");
    /* one allocation serves every smaller batch and bucket */
    const int toks[] = {1, 2, 5, 33, 512}, lens[] = {33, 256, 1000, 1025, 4096, 8193, 32768};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++)
            for (int i2 = 0; i2 <= i; i2++)
                for (int j2 = 0; j2 <= j; j2++)
                    CHECK(nib_cuda_attention_scratch_bytes(toks[i2], 32, 128, lens[j2]) <=
                              nib_cuda_attention_scratch_bytes(toks[i], 32, 128, lens[j]),
                          "scratch for (%d, %d) exceeds that for (%d, %d)", toks[i2], lens[j2], toks[i], lens[j]);
done:
    nib_cuda_free(q), nib_cuda_free(out), nib_cuda_free(kv), nib_cuda_free(pos);
}

int main(void) {
    if (!gpu_test_start("cuda attention")) return test_summary();
    rng_seed(4242);
    pool_init();
    RUN(test_sweep_group1);
    RUN(test_sweep_group4);
    RUN(test_window_softcap_sinks);
    RUN(test_gqa_and_dims);
    RUN(test_max_len_far_above);
    RUN(test_causal_batch);
    RUN(test_replay_positions);
    RUN(test_decode_real_short);
    RUN(test_decode_real_long);
    RUN(test_shared_scratch);
    RUN(test_many_counters);
    RUN(test_bound_broken);
    RUN(test_chain_after_qkv_rope);
    RUN(test_errors);
    /* On sm_90 a one-token call of 2..8 splits merges them through a thread
     * block cluster; the cases that take such calls run again with the
     * last-CTA merge the other devices (longer contexts, batches) use. */
    setenv("NIB_CUDA_ATTN_CLUSTER", "0", 1);
    RUN(test_sweep_group1);
    RUN(test_sweep_group4);
    RUN(test_window_softcap_sinks);
    RUN(test_gqa_and_dims);
    RUN(test_causal_batch);
    RUN(test_replay_positions);
    RUN(test_decode_real_short);
    RUN(test_chain_after_qkv_rope);
    unsetenv("NIB_CUDA_ATTN_CLUSTER");
    printf("worst ||gpu-ref||/||ref|| %.2e (bound %.0e)\n", worst_rel, REL_BOUND);
    return test_summary();
}
