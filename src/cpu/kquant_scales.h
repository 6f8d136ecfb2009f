/* Scale unpacking shared by the K-quant SIMD kernels (dot_kquant_avx2.c,
 * dot_avx512.c). Include only from files compiled with at least -mavx2. */
#ifndef NIB_CPU_KQUANT_SCALES_H
#define NIB_CPU_KQUANT_SCALES_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"

/* Super-block i of activation row t (rows a_stride bytes apart). */
static inline const block_q8_K *kq_act_block(const void *a, size_t a_stride, int t, int64_t i) {
    return (const block_q8_K *)((const uint8_t *)a + (size_t)t * a_stride) + i;
}

/* Q4_K / Q5_K: the 12 packed bytes hold eight 6-bit scales and eight 6-bit
 * minimums (layout in quant/q_k.c). Read as three 32-bit words they unpack
 * with masks and shifts, four at a time: out[0..1] = the eight scales as
 * bytes, out[2..3] = the eight minimums. */
static inline void kq_unpack_scales_mins(const uint8_t *packed, uint32_t out[4]) {
    const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
    uint32_t s[3];
    memcpy(s, packed, 12);
    out[0] = s[0] & low6;                                         /* sc 0..3: bytes 0..3, bits 0-5 */
    out[1] = (s[2] & low4) | (((s[0] >> 6) & low2) << 4);        /* sc 4..7: bytes 8..11 low, 0..3 top */
    out[2] = s[1] & low6;                                         /* m 0..3: bytes 4..7, bits 0-5 */
    out[3] = ((s[2] >> 4) & low4) | (((s[1] >> 6) & low2) << 4); /* m 4..7: bytes 8..11 high, 4..7 top */
}

/* The eight minimums as int16, and a Q8_K block's eight 32-element sums
 * (bsums[2j] + bsums[2j+1]) as int16. */
static inline __m128i kq_mins16(const uint32_t sm[4]) {
    return _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sm[3], (int)sm[2]));
}
static inline __m128i kq_bsums32(const block_q8_K *y) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
    return _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
}

/* The minimum term of one Q4_K/Q5_K super-block before scaling:
 * sum_j m_j * (bsums[2j] + bsums[2j+1]), as 4 int32 partial sums. */
static inline __m128i kq_min_sum(const uint32_t sm[4], const block_q8_K *y) {
    return _mm_madd_epi16(kq_mins16(sm), kq_bsums32(y));
}

/* The eight Q4_K/Q5_K scales as int16 in one 128-bit register. */
static inline __m128i kq_scales16(const uint32_t sm[4]) {
    return _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sm[1], (int)sm[0]));
}

/* sum_j sc_j * bsums_j over a super-block's 16 signed sub-block scales, as 8
 * int32 partial sums: the offset term of Q6_K (-32 on every quant) and of
 * Q3_K (-4 where the high bit is clear). */
static inline __m256i kq_scale_bsums(const __m128i scales8, const block_q8_K *y) {
    return _mm256_madd_epi16(_mm256_cvtepi8_epi16(scales8), _mm256_loadu_si256((const __m256i *)y->bsums));
}

/* Q3_K's 16 scales, unbiased, as int8: the low 4 bits of scale j are nibble
 * j/8 of byte j%8, the top 2 bits bits 2(j/4)..2(j/4)+1 of byte 8 + j%4.
 * So the low bits are bytes 0..7's low nibbles then their high nibbles, and
 * the top bits of scales 4q..4q+3 are bytes 8..11 shifted right by 2q. */
static inline __m128i kq_q3_scales8(const uint8_t *s) {
    uint64_t lo8;
    uint32_t hi4;
    memcpy(&lo8, s, 8), memcpy(&hi4, s + 8, 4);
    const __m128i m4 = _mm_set1_epi8(0x0F), m3 = _mm_set1_epi8(3);
    const __m128i v = _mm_cvtsi64_si128((long long)lo8);
    const __m128i lo = _mm_and_si128(_mm_unpacklo_epi64(v, _mm_srli_epi16(v, 4)), m4);
    const __m128i hi = _mm_and_si128(_mm_set_epi32((int)(hi4 >> 6), (int)(hi4 >> 4), (int)(hi4 >> 2), (int)hi4), m3);
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

/* The formats of the 2-bit layout (dot_kquant_avx2.c, dot_avx512.c). */
typedef enum { LOW2_Q2_K, LOW2_Q3_K, LOW2_TQ2_0 } low2_fmt;
static inline size_t low2_block_bytes(low2_fmt f) {
    return f == LOW2_Q3_K ? sizeof(block_q3_K) : f == LOW2_TQ2_0 ? sizeof(block_tq2_0) : sizeof(block_q2_K);
}

/* What a 2-bit-layout super-block gives its dot besides the quants: the 16
 * sub-block scales as int8 (Q2_K's 4-bit scales, Q3_K's signed 6-bit ones,
 * TQ2_0's implied 1s), Q2_K's 16 minimums as int16 and its dmin, Q3_K's
 * hmask, and d. The fields a format lacks are zero. */
typedef struct {
    const uint8_t *qs;
    __m128i scales8;
    __m256i mins16, hm;
    float d, dmin;
} low2_head;

static inline low2_head low2_head_of(low2_fmt f, const uint8_t *blk) {
    low2_head o;
    o.mins16 = o.hm = _mm256_setzero_si256();
    o.dmin = 0.0f;
    if (f == LOW2_Q3_K) {
        const block_q3_K *x = (const block_q3_K *)blk;
        o.qs = x->qs, o.d = _cvtsh_ss(x->d);
        o.scales8 = kq_q3_scales8(x->scales);
        o.hm = _mm256_loadu_si256((const __m256i *)x->hmask);
    } else if (f == LOW2_TQ2_0) {
        const block_tq2_0 *x = (const block_tq2_0 *)blk;
        o.qs = x->qs, o.d = _cvtsh_ss(x->d);
        o.scales8 = _mm_set1_epi8(1);
    } else {
        const block_q2_K *x = (const block_q2_K *)blk;
        const __m128i m4 = _mm_set1_epi8(0x0F), packed = _mm_loadu_si128((const __m128i *)x->scales);
        o.qs = x->qs, o.d = _cvtsh_ss(x->d), o.dmin = _cvtsh_ss(x->dmin);
        o.scales8 = _mm_and_si128(packed, m4);
        o.mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
    }
    return o;
}

static inline float kq_hsum_f32x4(__m128 v) {
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_movehdup_ps(v));
    return _mm_cvtss_f32(v);
}

#endif
