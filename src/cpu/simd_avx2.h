/* Small AVX2 building blocks shared by the *_avx2.c (and *_avx512.c) kernels.
 * Include only from files compiled with -mavx2 -mfma -mf16c. */
#ifndef NIB_CPU_SIMD_AVX2_H
#define NIB_CPU_SIMD_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* fp16 -> fp32 with F16C: exact, like nib_fp16_to_f32 (one instruction instead
 * of a dozen branches per block). */
static inline float simd_fp16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

/* Two fp16 at p as floats in lanes 0 and 1 (lanes 2-3 zero), one load and
 * one vcvtph2ps. Every legacy block starts with d, and the "_1" formats follow
 * with m; Q8_0 starts with d, Q8_1 with d and s. So the pair products
 * [d_w, m] * [d_a, s] = [d_w d_a, m s] are one multiply. Where the second
 * half is not a scale (the "_0" formats, Q8_0) lane 1 is ignored. */
static inline __m128 simd_half2(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(v));
}

static inline float simd_hsum_f32x8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int32_t simd_hsum_i32x8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

static inline float simd_hmax_f32x8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* The 32 nibbles of a legacy Q4/Q5 block as bytes 0..15 in element order:
 * byte j of qs holds element j (low nibble) and j + 16 (high nibble), so the
 * low nibbles are the low 128-bit lane and the high nibbles the high lane. */
static inline __m256i simd_legacy_nibbles(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128((const __m128i *)qs);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

/* Bit j of a 32-bit little-endian word (Q5's qh) as byte j: 0xFF if set, else
 * 0. Byte j first gets a copy of byte j/8 of the word; or-ing every bit but
 * bit j%8 makes the byte all ones exactly when that bit was set. */
static inline __m256i simd_bits_to_bytes(const uint8_t *qh) {
    uint32_t w;
    memcpy(&w, qh, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32((int)w),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
    const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
    return _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi8(-1));
}

/* Sum of u8 x s8 products, four neighbours per int32 lane. maddubs adds two
 * u8*s8 products into an int16 with saturation: every caller keeps
 * |u| * 127 * 2 < 32768 (|u| <= 128), so it never saturates. */
static inline __m256i simd_dot_u8_s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* Signed x signed through the unsigned instruction: |x| * (y with x's sign).
 * Needs y != -128 (negating it overflows); the activation quantizers never
 * write -128. x = -128 is fine: |x| reads as u8 128. */
static inline __m256i simd_dot_s8_s8(__m256i x, __m256i y) {
    return simd_dot_u8_s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* 8 MXFP4 blocks' scales 2^(e - 128) from their exponent bytes e8[0..7],
 * nib_mxfp4_half_scale's bits (e = 0, 1: the subnormals). */
static inline __m256 simd_mxfp4_half_scales(const uint8_t *e8) {
    uint64_t e64;
    memcpy(&e64, e8, 8);
    const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)e64));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, small));
}

#endif
