/* AVX2 dots of the legacy 32-element formats with their Q8 activations.
 *
 * One block is one 256-bit register of 32 int8 products. The integer sum of
 * a block is exact (as in the reference); it becomes fp32 once per block and
 * is scaled by d_w * d_a with an FMA into an 8-lane accumulator, so the fp32
 * rounding differs from the reference's single running sum only by
 * reassociation (the tolerance in tests/test_cpu.c is derived from that).
 *
 * How each format's quants become int8 lanes (legacy_codes):
 *   Q4_0  nibble - 8, signed.
 *   Q4_1  nibble as u8; the offset m times the activation sum comes from the
 *         Q8_1 block's precomputed s, one product per block (see simd_half2).
 *   Q5_0  nibble | 0xF0 where the fifth bit is clear: as int8 that is
 *         nibble - 16, and a set bit leaves nibble = (nibble + 16) - 16. So the
 *         signed value q - 16 needs no subtraction.
 *   Q5_1  nibble | 0x10 where the fifth bit is set, as u8.
 *   Q8_0  int8 as is, signed.
 * Signed codes go through the sign trick of simd_dot_s8_s8, split so that
 * |q| is computed once per weight block however many tokens use it.
 *
 * Every format has two entry points built from one body (legacy_dot): the
 * single-token vec_dot and an x4 version that decodes each weight block once
 * for four activation rows (prompt processing; ~1.3x faster per token on Zen 1
 * than four single calls, measured in bench/cpu_matmul.c's lab). Because both
 * run the very same per-token operations in the same order, a token's result
 * does not depend on how many tokens were in the batch. Two blocks per
 * iteration into two accumulators per token hide the FMA latency.
 */
#include <stdbool.h>

#include "cpu/cpu_internal.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NT_MAX 4

/* The formats this file knows; every switch below is on a compile-time
 * constant (each entry point passes its own), so it folds away. */
typedef enum { LEG_Q4_0, LEG_Q4_1, LEG_Q5_0, LEG_Q5_1, LEG_Q8_0 } legacy_fmt;

/* The "_1" formats carry an offset m and dot with Q8_1; the rest are signed
 * codes dotted with Q8_0. */
static ALWAYS_INLINE bool legacy_has_min(legacy_fmt f) { return f == LEG_Q4_1 || f == LEG_Q5_1; }

static ALWAYS_INLINE size_t legacy_block_bytes(legacy_fmt f) {
    switch (f) {
    case LEG_Q4_0: return sizeof(block_q4_0);
    case LEG_Q4_1: return sizeof(block_q4_1);
    case LEG_Q5_0: return sizeof(block_q5_0);
    case LEG_Q5_1: return sizeof(block_q5_1);
    default: return sizeof(block_q8_0);
    }
}

static ALWAYS_INLINE __m256i legacy_codes(legacy_fmt f, const void *blk) {
    switch (f) {
    case LEG_Q4_0:
        return _mm256_sub_epi8(simd_legacy_nibbles(((const block_q4_0 *)blk)->qs), _mm256_set1_epi8(8));
    case LEG_Q4_1:
        return simd_legacy_nibbles(((const block_q4_1 *)blk)->qs);
    case LEG_Q5_0: {
        const block_q5_0 *b = blk;
        const __m256i clear = _mm256_andnot_si256(simd_bits_to_bytes(b->qh), _mm256_set1_epi8((char)0xF0));
        return _mm256_or_si256(simd_legacy_nibbles(b->qs), clear);
    }
    case LEG_Q5_1: {
        const block_q5_1 *b = blk;
        const __m256i high = _mm256_and_si256(simd_bits_to_bytes(b->qh), _mm256_set1_epi8(0x10));
        return _mm256_or_si256(simd_legacy_nibbles(b->qs), high);
    }
    default:
        return _mm256_loadu_si256((const __m256i *)((const block_q8_0 *)blk)->qs);
    }
}


/* Block i of the weight row against block i of nt activation rows. mins[t]
 * collects m * s in lane 1 (the "_1" formats only). */
static ALWAYS_INLINE void legacy_block(legacy_fmt f, int nt, const uint8_t *wblk, const uint8_t *a, size_t a_stride,
                                       int64_t i, __m256 *acc, __m128 *mins) {
    const bool has_min = legacy_has_min(f);
    const __m256i q = legacy_codes(f, wblk);
    const __m256i u = has_min ? q : _mm256_sign_epi8(q, q);  /* the u8 operand of maddubs */
    const __m128 wd = simd_half2(wblk);
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        const uint8_t *ab = a + (size_t)t * a_stride;
        __m256i s;
        __m128 dd;
        if (has_min) {
            const block_q8_1 *y = (const block_q8_1 *)ab + i;
            s = simd_dot_u8_s8(u, _mm256_loadu_si256((const __m256i *)y->qs));
            dd = _mm_mul_ps(wd, simd_half2(y));  /* [d_w d_a, m s] */
            mins[t] = _mm_add_ps(mins[t], dd);
        } else {
            const block_q8_0 *y = (const block_q8_0 *)ab + i;
            s = simd_dot_u8_s8(u, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)y->qs), q));
            dd = _mm_mul_ss(wd, simd_half2(y));
        }
        acc[t] = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), _mm256_cvtepi32_ps(s), acc[t]);
    }
}

static ALWAYS_INLINE void legacy_dot(legacy_fmt f, int nt, int64_t n, const void *w, const void *a, size_t a_stride,
                                     float *out) {
    const uint8_t *wb = (const uint8_t *)w;
    const size_t bb = legacy_block_bytes(f);
    const int64_t nb = n / 32;
    __m256 acc0[NT_MAX], acc1[NT_MAX];
    __m128 mins0[NT_MAX], mins1[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        acc0[t] = acc1[t] = _mm256_setzero_ps();
        mins0[t] = mins1[t] = _mm_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        legacy_block(f, nt, wb + (size_t)i * bb, (const uint8_t *)a, a_stride, i, acc0, mins0);
        legacy_block(f, nt, wb + (size_t)(i + 1) * bb, (const uint8_t *)a, a_stride, i + 1, acc1, mins1);
    }
    if (i < nb) legacy_block(f, nt, wb + (size_t)i * bb, (const uint8_t *)a, a_stride, i, acc0, mins0);
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        float sum = simd_hsum_f32x8(_mm256_add_ps(acc0[t], acc1[t]));
        if (legacy_has_min(f)) sum += _mm_cvtss_f32(_mm_movehdup_ps(_mm_add_ps(mins0[t], mins1[t])));
        out[t] = sum;
    }
}

/* ---- entry points ------------------------------------------------------------------ */

float cpu_dot_q4_0_q8_0_avx2(int64_t n, const void *w, const void *a) {
    float r;
    legacy_dot(LEG_Q4_0, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q4_0_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    legacy_dot(LEG_Q4_0, 4, n, w, a, a_stride, out);
}

float cpu_dot_q4_1_q8_1_avx2(int64_t n, const void *w, const void *a) {
    float r;
    legacy_dot(LEG_Q4_1, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q4_1_q8_1_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    legacy_dot(LEG_Q4_1, 4, n, w, a, a_stride, out);
}

float cpu_dot_q5_0_q8_0_avx2(int64_t n, const void *w, const void *a) {
    float r;
    legacy_dot(LEG_Q5_0, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q5_0_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    legacy_dot(LEG_Q5_0, 4, n, w, a, a_stride, out);
}

float cpu_dot_q5_1_q8_1_avx2(int64_t n, const void *w, const void *a) {
    float r;
    legacy_dot(LEG_Q5_1, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q5_1_q8_1_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    legacy_dot(LEG_Q5_1, 4, n, w, a, a_stride, out);
}

float cpu_dot_q8_0_q8_0_avx2(int64_t n, const void *w, const void *a) {
    float r;
    legacy_dot(LEG_Q8_0, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q8_0_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    legacy_dot(LEG_Q8_0, 4, n, w, a, a_stride, out);
}
