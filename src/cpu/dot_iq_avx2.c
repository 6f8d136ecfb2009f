/* AVX2 dots of the 16-level table formats: IQ4_NL and MXFP4 with Q8_0
 * activations, IQ4_XS with Q8_K; and of the lattice formats IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS and IQ3_S with Q8_K (at the end of the file).
 *
 * Both store 32 weights in 16 bytes as the legacy Q4 formats do (byte j:
 * weight j in the low nibble, j + 16 in the high one), but a nibble indexes
 * the 16 signed levels of nib_iq4_levels (-127..113) instead of standing
 * for q - 8. One pshufb of the nibbles (simd_legacy_nibbles, element order)
 * into the levels gives the 32 weights as int8; the product with the int8
 * activation goes through maddubs by the sign trick (|w| with the
 * activation carrying w's sign: pairs reach 2 * 127 * 127 < 32768).
 *
 *   IQ4_NL  each 32-block has its own fp16 d, as Q4_0: one fp32 multiply-add
 *           of the block's int32 sum by d_w * d_a per block. MXFP4 is the
 *           same with its own table (E2M1 values doubled, |w| <= 12) and the
 *           block's E8M0 exponent as half its scale.
 *   IQ4_XS  a super-block of 256 has one fp16 d and a signed 6-bit scale per
 *           32: madd of the int16 pairs with the scale keeps the whole
 *           super-block in int32 (at most 256 * 127 * 127 * 32 < 2^31), one
 *           fp32 multiply-add per super-block.
 * The reference adds its fp32 terms per 32-block, so only the order of the
 * fp32 adds differs.
 *
 * As in dot_kquant_avx2.c each body serves a single-token vec_dot and an x4
 * version that decodes the weights once for four activation rows, with the
 * same per-token operations, so results do not depend on the batch. */
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/kquant_scales.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/iq_lattice.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NT_MAX 4

/* The 32 weights of a 16-byte IQ4 (or MXFP4) block as int8, in element order. */
static ALWAYS_INLINE __m256i iq4_weights(__m256i levels, const uint8_t *qs) {
    return _mm256_shuffle_epi8(levels, simd_legacy_nibbles(qs));
}

static ALWAYS_INLINE __m256i iq4_levels256(void) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)nib_iq4_levels));
}

/* IQ4_XS's scale of 32-block ib, unbiased (-32..31): the low 4 bits are
 * nibble ib % 2 of scales_l[ib / 2], the top 2 bits bits 2ib, 2ib + 1 of
 * scales_h. */
static ALWAYS_INLINE int iq4_xs_scale(const block_iq4_xs *x, int ib) {
    const int lo = (x->scales_l[ib / 2] >> (4 * (ib % 2))) & 15;
    const int hi = (x->scales_h >> (2 * ib)) & 3;
    return (lo | (hi << 4)) - 32;
}

/* The 32-blocks with a table of 16 levels and a scale per block: IQ4_NL
 * (fp16 d) and MXFP4 (E8M0 exponent, levels doubled, scale halved). */
typedef enum { NL_IQ4, NL_MXFP4 } nl4_fmt;

static ALWAYS_INLINE void nl4_dot(nl4_fmt f, int nt, int64_t n, const void *w, const void *a, size_t a_stride,
                                  float *out) {
    const size_t bb = f == NL_MXFP4 ? sizeof(block_mxfp4) : sizeof(block_iq4_nl);
    const __m256i levels = _mm256_broadcastsi128_si256(
        _mm_loadu_si128((const __m128i *)(f == NL_MXFP4 ? nib_mxfp4_levels : nib_iq4_levels)));
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * bb;
        const __m256i q = iq4_weights(levels, f == NL_MXFP4 ? ((const block_mxfp4 *)blk)->qs : ((const block_iq4_nl *)blk)->qs);
        const float xd = f == NL_MXFP4 ? nib_mxfp4_half_scale(((const block_mxfp4 *)blk)->e)
                                       : simd_fp16_to_f32(((const block_iq4_nl *)blk)->d);
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_0 *y = (const block_q8_0 *)((const uint8_t *)a + (size_t)t * a_stride) + i;
            const __m256i s = simd_dot_s8_s8(q, _mm256_loadu_si256((const __m256i *)y->qs));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xd * simd_fp16_to_f32(y->d)), _mm256_cvtepi32_ps(s), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = simd_hsum_f32x8(acc[t]);
}

static ALWAYS_INLINE void iq4_xs_dot(int nt, int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    const block_iq4_xs *x = (const block_iq4_xs *)w;
    const __m256i levels = iq4_levels256();
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        __m256i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const __m256i q = iq4_weights(levels, x->qs + 16 * ib);
            const __m256i qa = _mm256_sign_epi8(q, q); /* |w| */
            const __m256i sc = _mm256_set1_epi16((short)iq4_xs_scale(x, ib));
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                const __m256i ay = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib)), q);
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(qa, ay), sc));
            }
        }
        const float xd = simd_fp16_to_f32(x->d);
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xd * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = simd_hsum_f32x8(acc[t]);
}

float cpu_dot_iq4_nl_q8_0_avx2(int64_t n, const void *w, const void *a) {
    float r;
    nl4_dot(NL_IQ4, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_iq4_nl_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    nl4_dot(NL_IQ4, 4, n, w, a, a_stride, out);
}

float cpu_dot_mxfp4_q8_0_avx2(int64_t n, const void *w, const void *a) {
    float r;
    nl4_dot(NL_MXFP4, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_mxfp4_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    nl4_dot(NL_MXFP4, 4, n, w, a, a_stride, out);
}

float cpu_dot_iq4_xs_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    iq4_xs_dot(1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_iq4_xs_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    iq4_xs_dot(4, n, w, a, a_stride, out);
}

/* ---- the lattice formats (quant/iq_lattice.h) --------------------------------------
 * A sub-block goes through its format's unpacker (the reference's own: grid
 * rows, sign bits, scale multipliers), then: the 8 four-byte magnitude runs
 * as one register of 32 unsigned bytes (at most 62), the 32 sign bits as
 * byte masks that negate the activation (never -128, so exact), maddubs
 * (pairs at most 2 * 62 * 127) and one madd with each group's multiplier
 * over its 4 pairs, all in int32 across the super-block as in the reference;
 * d * d_a per super-block and the format's step at the end. The unpacking is
 * scalar and done once for the tokens of a call. */
static ALWAYS_INLINE void lattice_dot(const iq_grid_format *f, int nt, int64_t n, const void *w, const void *a,
                                      size_t a_stride, float *out) {
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * f->block_bytes;
        __m256i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            iq_sub s;
            f->unpack(blk, ib, &s);
            int32_t m[8];
            for (int k = 0; k < 8; k++) memcpy(&m[k], s.mag[k], 4);
            const __m256i mag = _mm256_setr_epi32(m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]);
            const __m256i neg = simd_bits_to_bytes(s.neg);
            const __m256i ls = _mm256_set_epi64x((int64_t)(0x0001000100010001ULL * s.ls[3]),
                                                 (int64_t)(0x0001000100010001ULL * s.ls[2]),
                                                 (int64_t)(0x0001000100010001ULL * s.ls[1]),
                                                 (int64_t)(0x0001000100010001ULL * s.ls[0]));
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib));
                const __m256i sq = _mm256_sub_epi8(_mm256_xor_si256(q8, neg), neg); /* -q8 where the weight is negative */
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(mag, sq), ls));
            }
        }
        uint16_t dh;
        memcpy(&dh, blk, 2);
        const float xd = simd_fp16_to_f32(dh);
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xd * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = f->step * simd_hsum_f32x8(acc[t]);
}

#define LATTICE_ENTRIES(name, TYPE)                                                                           \
    float cpu_dot_##name##_q8_K_avx2(int64_t n, const void *w, const void *a) {                             \
        float r;                                                                                              \
        lattice_dot(nib_iq_grid_format(TYPE), 1, n, w, a, 0, &r);                                             \
        return r;                                                                                             \
    }                                                                                                         \
    void cpu_dot_##name##_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) { \
        lattice_dot(nib_iq_grid_format(TYPE), 4, n, w, a, a_stride, out);                                     \
    }
LATTICE_ENTRIES(iq2_xxs, NIB_TYPE_IQ2_XXS)
LATTICE_ENTRIES(iq2_xs, NIB_TYPE_IQ2_XS)
LATTICE_ENTRIES(iq2_s, NIB_TYPE_IQ2_S)
LATTICE_ENTRIES(iq3_xxs, NIB_TYPE_IQ3_XXS)
LATTICE_ENTRIES(iq3_s, NIB_TYPE_IQ3_S)
