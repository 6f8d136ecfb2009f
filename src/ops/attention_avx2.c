/* AVX2 + F16C + FMA attention over a GQA group (see attention.c). fp16 K/V
 * rows are widened 8 at a time with vcvtph2ps; each K row is loaded once and
 * dotted with every query of the group, each V row once and accumulated into
 * every output of the group. Compiled with -mavx2 -mfma -mf16c only; called
 * only after the CPU said it has them. */
#include <immintrin.h>

#include "ops/ops.h"

#define MAX_GROUP_REGS 16  /* query heads per KV head handled with the row in registers */

static inline __m256 load8(const void *base, int kv_f16, int64_t i) {
    if (kv_f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)base + i)));
    return _mm256_loadu_ps((const float *)base + i);
}

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

void nib_attention_group_avx2(const nib_attn_args *a) {
    int64_t n = a->j1 - a->j0;
    int g = a->group;
    /* scores: one K row at a time against the whole group */
    for (int64_t j = 0; j < n; j++) {
        int64_t row = (a->j0 + j) * a->k_stride;
        for (int h0 = 0; h0 < g; h0 += MAX_GROUP_REGS) {
            int hn = g - h0 < MAX_GROUP_REGS ? g - h0 : MAX_GROUP_REGS;
            __m256 acc[MAX_GROUP_REGS];
            for (int h = 0; h < hn; h++) acc[h] = _mm256_setzero_ps();
            for (int32_t d = 0; d < a->hd_k; d += 8) {
                __m256 kv = load8(a->k, a->kv_f16, row + d);
                for (int h = 0; h < hn; h++)
                    acc[h] = _mm256_fmadd_ps(_mm256_loadu_ps(a->q + (int64_t)(h0 + h) * a->hd_k + d), kv, acc[h]);
            }
            for (int h = 0; h < hn; h++) a->scores[(int64_t)(h0 + h) * n + j] = hsum(acc[h]) * a->scale;
        }
    }
    nib_softmax_rows(a->scores, g, n);
    /* output: one V row at a time into every output of the group */
    for (int h = 0; h < g; h++)
        for (int32_t d = 0; d < a->hd_v; d++) a->out[(int64_t)h * a->hd_v + d] = 0.0f;
    for (int32_t d0 = 0; d0 < a->hd_v; d0 += 64) {
        /* 64 output columns (8 registers) per group member stay in registers over all j */
        int32_t dn = a->hd_v - d0 < 64 ? a->hd_v - d0 : 64;
        for (int h = 0; h < g; h++) {
            __m256 acc[8];
            for (int r = 0; r < dn / 8; r++) acc[r] = _mm256_setzero_ps();
            const float *p = a->scores + (int64_t)h * n;
            for (int64_t j = 0; j < n; j++) {
                __m256 pj = _mm256_set1_ps(p[j]);
                int64_t row = (a->j0 + j) * a->v_stride + d0;
                for (int r = 0; r < dn / 8; r++) acc[r] = _mm256_fmadd_ps(pj, load8(a->v, a->kv_f16, row + 8 * r), acc[r]);
            }
            for (int r = 0; r < dn / 8; r++) _mm256_storeu_ps(a->out + (int64_t)h * a->hd_v + d0 + 8 * r, acc[r]);
        }
    }
}
