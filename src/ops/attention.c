/* Attention of a group of query heads that share one KV head (GQA), over a
 * range of cached positions: the K and V rows are read once for the whole
 * group, which is what makes decode attention cheap on memory.
 *
 *   out[g] = softmax_j(scale * q[g] . K[j]) . V[j]     for j in [j0, j1)
 *
 * This file is the scalar reference and the dispatcher; attention_avx2.c is
 * the F16C/FMA version, tested against this one (tests/test_ops.c). */
#include <math.h>

#include "cpu/cpu.h"
#include "ops/ops.h"

static inline float kv_at(const void *base, int kv_f16, int64_t i) {
    return kv_f16 ? nib_fp16_to_f32(((const nib_fp16 *)base)[i]) : ((const float *)base)[i];
}

/* Softmax of each of g rows of n scores in place; the rows' sums are 1. */
void nib_softmax_rows(float *s, int g, int64_t n) {
    for (int h = 0; h < g; h++) {
        float *r = s + (int64_t)h * n, mx = -INFINITY;
        for (int64_t j = 0; j < n; j++) mx = r[j] > mx ? r[j] : mx;
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++) sum += (r[j] = expf(r[j] - mx));
        float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < n; j++) r[j] *= inv;
    }
}

void nib_softmax_rows_sinks(float *s, int g, int64_t n, const float *sinks) {
    for (int h = 0; h < g; h++) {
        float *r = s + (int64_t)h * n, mx = sinks[h];
        for (int64_t j = 0; j < n; j++) mx = r[j] > mx ? r[j] : mx;
        double sum = (double)expf(sinks[h] - mx);
        for (int64_t j = 0; j < n; j++) sum += (r[j] = expf(r[j] - mx));
        float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < n; j++) r[j] *= inv;
    }
}

void nib_softcap_scores(float *s, int64_t n, float cap) {
    for (int64_t i = 0; i < n; i++) s[i] = cap * tanhf(s[i] / cap);
}

void nib_attention_group_ref(const nib_attn_args *a) {
    int64_t n = a->j1 - a->j0;
    for (int64_t j = 0; j < n; j++) {
        for (int h = 0; h < a->group; h++) {
            const float *q = a->q + (int64_t)h * a->hd_k;
            float s = 0.0f;
            for (int32_t d = 0; d < a->hd_k; d++) s += q[d] * kv_at(a->k, a->kv_f16, (a->j0 + j) * a->k_stride + d);
            a->scores[(int64_t)h * n + j] = s * a->scale;
        }
    }
    if (a->softcap > 0.0f) nib_softcap_scores(a->scores, (int64_t)a->group * n, a->softcap);
    if (a->sinks) nib_softmax_rows_sinks(a->scores, a->group, n, a->sinks);
    else nib_softmax_rows(a->scores, a->group, n);
    for (int h = 0; h < a->group; h++)
        for (int32_t d = 0; d < a->hd_v; d++) a->out[(int64_t)h * a->hd_v + d] = 0.0f;
    for (int64_t j = 0; j < n; j++)
        for (int h = 0; h < a->group; h++) {
            float p = a->scores[(int64_t)h * n + j];
            float *o = a->out + (int64_t)h * a->hd_v;
            for (int32_t d = 0; d < a->hd_v; d++) o[d] += p * kv_at(a->v, a->kv_f16, (a->j0 + j) * a->v_stride + d);
        }
}

void nib_attention_group(const nib_attn_args *a) {
    /* the SIMD version needs whole vectors of 8 per head (every model nib runs has head sizes of 64..512) */
    if (nib_cpu_simd_level() >= NIB_SIMD_AVX2 && a->hd_k % 8 == 0 && a->hd_v % 8 == 0) {
        nib_attention_group_avx2(a);
        return;
    }
    nib_attention_group_ref(a);
}

/* token i's range of keys (nib_attention_tokens) */
static void token_range(const nib_attn_args *a, int i, int32_t window, int64_t *j0, int64_t *j1) {
    const int64_t p = a->j1 - 1 + i;
    *j1 = p + 1;
    *j0 = i == 0 ? a->j0 : (window > 0 && p + 1 > window ? p + 1 - window : 0);
}

void nib_attention_tokens(const nib_attn_args *a, int nq, int64_t q_stride, int64_t out_stride, int32_t window) {
    if (nq > 1 && nib_cpu_simd_level() >= NIB_SIMD_AVX2 && a->hd_k % 8 == 0 && a->hd_v % 8 == 0) {
        nib_attention_tokens_avx2(a, nq, q_stride, out_stride, window);
        return;
    }
    for (int i = 0; i < nq; i++) { /* the reference: one token at a time */
        nib_attn_args t = *a;
        t.q = a->q + i * q_stride, t.out = a->out + i * out_stride;
        token_range(a, i, window, &t.j0, &t.j1);
        nib_attention_group(&t);
    }
}
