/* AVX2 + F16C + FMA attention over a GQA group (see attention.c). fp16 K/V
 * rows are widened 8 at a time with vcvtph2ps; each K row is loaded once and
 * dotted with every query of the group, each V row once and accumulated into
 * every output of the group; the softmax takes a vector expf. Compiled with -mavx2 -mfma -mf16c only; called
 * only after the CPU said it has them. */
#include <immintrin.h>
#include <math.h>

#include "ops/exp_avx2.h"
#include "ops/ops.h"

#define MAX_GROUP_REGS 16  /* query heads per KV head handled with the row in registers */

static inline __m256 load8(const void *base, int kv_f16, int64_t i) {
    if (kv_f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)base + i)));
    return _mm256_loadu_ps((const float *)base + i);
}

/* nib_softmax_rows with the vector expf (exp_avx2.h): the same steps (max,
 * exp of the differences summed in double, one multiply by the inverse),
 * exp within a few ulp of libm's; differences below -87 count as exp(-87). */
static void softmax_rows_avx2(float *s, int g, int64_t n) {
    for (int h = 0; h < g; h++) {
        float *r = s + (int64_t)h * n, mx = -INFINITY;
        for (int64_t j = 0; j < n; j++) mx = r[j] > mx ? r[j] : mx;
        const __m256 vmx = _mm256_set1_ps(mx), lo = _mm256_set1_ps(-87.0f);
        __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) {
            const __m256 e = exp_avx2(_mm256_max_ps(_mm256_sub_ps(_mm256_loadu_ps(r + j), vmx), lo));
            _mm256_storeu_ps(r + j, e);
            s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
            s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
        }
        double part[4], sum = 0.0;
        _mm256_storeu_pd(part, _mm256_add_pd(s0, s1));
        for (int k = 0; k < 4; k++) sum += part[k];
        for (; j < n; j++) sum += (r[j] = expf(r[j] - mx));
        const float inv = (float)(1.0 / sum);
        const __m256 vinv = _mm256_set1_ps(inv);
        for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(r + j, _mm256_mul_ps(_mm256_loadu_ps(r + j), vinv));
        for (; j < n; j++) r[j] *= inv;
    }
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
    if (a->softcap > 0.0f) nib_softcap_scores(a->scores, (int64_t)g * n, a->softcap);
    if (a->sinks) nib_softmax_rows_sinks(a->scores, g, n, a->sinks);
    else softmax_rows_avx2(a->scores, g, n);
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

/* nq tokens of one group (ops.h nib_attention_tokens): the nq * group query
 * vectors against each K row in passes of MAX_GROUP_REGS (a vector's score
 * for a key outside its token's range is formed and dropped), then each
 * token's group against each V row of its range, 16 columns at a time. Every
 * score and every output column is formed with the same operations in the
 * same order as nib_attention_group_avx2 forms it for the token alone. */
#define PV_REGS 8

void nib_attention_tokens_avx2(const nib_attn_args *a, int nq, int64_t q_stride, int64_t out_stride, int32_t window) {
    const int g = a->group, nv = nq * g;
    if (nq > NIB_ATTN_MAX_TOKENS || g > PV_REGS) { /* one token at a time */
        for (int i = 0; i < nq; i++) {
            nib_attn_args t = *a;
            const int64_t p = a->j1 - 1 + i;
            t.q = a->q + i * q_stride, t.out = a->out + i * out_stride, t.j1 = p + 1;
            t.j0 = i == 0 ? a->j0 : (window > 0 && p + 1 > window ? p + 1 - window : 0);
            nib_attention_group_avx2(&t);
        }
        return;
    }
    int64_t lo[NIB_ATTN_MAX_TOKENS] = {0}, hi[NIB_ATTN_MAX_TOKENS] = {0};
    const float *qv[NIB_ATTN_MAX_TOKENS * PV_REGS];
    int64_t vlo[NIB_ATTN_MAX_TOKENS * PV_REGS], vhi[NIB_ATTN_MAX_TOKENS * PV_REGS]; /* each vector's token's range */
    for (int i = 0; i < nq; i++) {
        const int64_t p = a->j1 - 1 + i;
        lo[i] = i == 0 ? a->j0 : (window > 0 && p + 1 > window ? p + 1 - window : 0), hi[i] = p + 1;
        for (int h = 0; h < g; h++)
            qv[i * g + h] = a->q + i * q_stride + (int64_t)h * a->hd_k, vlo[i * g + h] = lo[i], vhi[i * g + h] = hi[i];
    }
    const int64_t lo_min = lo[0], hi_max = hi[nq - 1], span = hi_max - lo_min;
    /* scores: vector v = i * g + h at v * span, key j at j - lo_min */
    for (int64_t j = lo_min; j < hi_max; j++) {
        const int64_t row = j * a->k_stride;
        for (int v0 = 0; v0 < nv; v0 += MAX_GROUP_REGS) {
            const int vn = nv - v0 < MAX_GROUP_REGS ? nv - v0 : MAX_GROUP_REGS;
            __m256 acc[MAX_GROUP_REGS];
            for (int r = 0; r < vn; r++) acc[r] = _mm256_setzero_ps();
            for (int32_t d = 0; d < a->hd_k; d += 8) {
                const __m256 kv = load8(a->k, a->kv_f16, row + d);
                for (int r = 0; r < vn; r++) acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(qv[v0 + r] + d), kv, acc[r]);
            }
            for (int r = 0; r < vn; r++)
                if (j >= vlo[v0 + r] && j < vhi[v0 + r]) a->scores[(int64_t)(v0 + r) * span + (j - lo_min)] = hsum(acc[r]) * a->scale;
        }
    }
    for (int i = 0; i < nq; i++) {
        float *ps = a->scores + (int64_t)i * g * span;
        for (int h = 0; h < g; h++) {
            float *row = ps + (int64_t)h * span + (lo[i] - lo_min);
            if (a->softcap > 0.0f) nib_softcap_scores(row, hi[i] - lo[i], a->softcap);
            if (a->sinks) nib_softmax_rows_sinks(row, 1, hi[i] - lo[i], a->sinks + h);
            else softmax_rows_avx2(row, 1, hi[i] - lo[i]);
        }
        /* this token's group against each V row of its range, 16 columns at a time (hd_v % 16 == 8: the last 8 apart) */
        for (int32_t d0 = 0; d0 < a->hd_v; d0 += 16) {
            const int two = d0 + 16 <= a->hd_v;
            __m256 acc[2 * PV_REGS];
            for (int r = 0; r < 2 * PV_REGS; r++) acc[r] = _mm256_setzero_ps();
            for (int64_t j = lo[i]; j < hi[i]; j++) {
                const int64_t vr = j * a->v_stride + d0;
                const __m256 v0 = load8(a->v, a->kv_f16, vr), v1 = two ? load8(a->v, a->kv_f16, vr + 8) : v0;
                const float *pj = ps + (j - lo_min);
                for (int r = 0; r < PV_REGS; r++)
                    if (r < g) {
                        const __m256 pr = _mm256_set1_ps(pj[(int64_t)r * span]);
                        acc[2 * r] = _mm256_fmadd_ps(pr, v0, acc[2 * r]);
                        acc[2 * r + 1] = _mm256_fmadd_ps(pr, v1, acc[2 * r + 1]);
                    }
            }
            for (int r = 0; r < g; r++) {
                float *o = a->out + i * out_stride + (int64_t)r * a->hd_v + d0;
                _mm256_storeu_ps(o, acc[2 * r]);
                if (two) _mm256_storeu_ps(o + 8, acc[2 * r + 1]);
            }
        }
    }
}
