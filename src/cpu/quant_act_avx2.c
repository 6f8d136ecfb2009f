/* AVX2 activation quantizers: Q8_0, Q8_1 and Q8_K, bit-identical to the
 * reference quantizers in quant/q_legacy.c and quant/q_k.c.
 *
 * "Bit-identical" decides the details:
 *  - every fp32 operation of the reference is done once, in the same order
 *    (amax / 127, 1 / d, x * id): a vector multiply rounds like a scalar one;
 *  - the maximum of |x| does not depend on order, so it is a vector max;
 *  - Q8_0/Q8_1 round with roundf (halves away from zero), which no AVX
 *    rounding mode does; it is built from truncation (see round_half_away);
 *  - Q8_K rounds with nearest_int (ties to even), which is cvtps_epi32 under
 *    the default MXCSR mode, and keeps the first element of largest magnitude
 *    as the signed maximum, found by a compare and movemask;
 *  - the fp16 scales go through the same nib_f32_to_fp16 (once per block).
 * tests/test_cpu.c compares the bytes with the references.
 */
#include "core/fp16.h"
#include "cpu/cpu_internal.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"

static inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

/* roundf for |v| < 2^31: truncate, then step one away from zero when the
 * dropped fraction is at least one half. v - trunc(v) is exact in fp32 (both
 * share the binade of v, or trunc is 0), so the comparison sees the true
 * fraction and ties go away from zero as roundf does. */
static inline __m256 round_half_away(__m256 v) {
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = abs_ps(_mm256_sub_ps(v, t));
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
    const __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), one);
    return _mm256_add_ps(t, step);
}

/* Four vectors of 8 int32 (values in -127..127) to 32 int8 in element order.
 * The packs work within 128-bit lanes, leaving the groups of four in the
 * order 0 2 4 6 1 3 5 7; one cross-lane permute restores it. */
static inline __m256i pack_i32x32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* One 32-element Q8 block as the legacy reference does it; returns the fp32
 * d (Q8_1 needs it unrounded) and the int32 sum of the quants. */
static inline float quantize_q8_block(const float *x, int8_t *qs, int32_t *sum) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        amax = _mm256_max_ps(abs_ps(v[k]), amax);  /* a NaN lane leaves amax, as `a > amax` does */
    }
    const float d = simd_hmax_f32x8(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; k++) q[k] = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v[k], vid)));
    _mm256_storeu_si256((__m256i *)qs, pack_i32x32_to_i8(q[0], q[1], q[2], q[3]));
    if (sum) {
        const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        *sum = simd_hsum_i32x8(s);
    }
    return d;
}

void cpu_quantize_q8_0_avx2(const float *x, void *dst, int64_t n) {
    block_q8_0 *b = (block_q8_0 *)dst;
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        b[i].d = nib_f32_to_fp16(quantize_q8_block(x, b[i].qs, NULL));
    }
}

void cpu_quantize_q8_1_avx2(const float *x, void *dst, int64_t n) {
    block_q8_1 *b = (block_q8_1 *)dst;
    for (int64_t i = 0; i < n / QK8_1; i++, x += QK8_1) {
        int32_t sum;
        const float d = quantize_q8_block(x, b[i].qs, &sum);
        b[i].d = nib_f32_to_fp16(d);
        b[i].s = nib_f32_to_fp16((float)sum * d);
    }
}

void cpu_quantize_q8_K_avx2(const float *x, void *dst, int64_t n) {
    block_q8_K *y = (block_q8_K *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, y++, x += QK_K) {
        __m256 amax8 = _mm256_setzero_ps();
        for (int k = 0; k < QK_K; k += 8) amax8 = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + k)), amax8);
        const float amax = simd_hmax_f32x8(amax8);
        if (amax == 0.0f) {
            memset(y, 0, sizeof *y);
            continue;
        }
        /* the reference keeps the first element reaching amax, with its sign */
        const __m256 target = _mm256_set1_ps(amax);
        float max = 0.0f;
        for (int k = 0; k < QK_K; k += 8) {
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + k)), target, _CMP_EQ_OQ));
            if (hit) {
                max = x[k + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vis = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127);
        const __m256i ones8 = _mm256_set1_epi8(1);
        for (int k = 0; k < QK_K; k += 32) {
            __m256i q[4];
            for (int j = 0; j < 4; j++) {
                /* cvtps rounds to nearest even, as nearest_int does for |f| < 2^22 */
                q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vis, _mm256_loadu_ps(x + k + 8 * j))), top);
            }
            const __m256i q8 = pack_i32x32_to_i8(q[0], q[1], q[2], q[3]);
            _mm256_storeu_si256((__m256i *)(y->qs + k), q8);
            /* bsums of the two 16-element groups: pairs, then fours, then the
             * four int32 of each 128-bit lane (one lane per group) */
            __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q8), _mm256_set1_epi16(1));
            s = _mm256_hadd_epi32(s, s);
            s = _mm256_hadd_epi32(s, s);
            y->bsums[k / 16] = (int16_t)_mm256_extract_epi32(s, 0);
            y->bsums[k / 16 + 1] = (int16_t)_mm256_extract_epi32(s, 4);
        }
        y->d = 1.0f / iscale;
    }
}
