/* AVX2 dots of the 16-level table formats: IQ4_NL and MXFP4 with Q8_0
 * activations, IQ4_XS with Q8_K; and of the lattice formats IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M with Q8_K (at the end of the file).
 *
 * The table formats store 32 weights in 16 bytes as the legacy Q4 formats
 * do (byte j: weight j in the low nibble, j + 16 in the high one), but a
 * nibble indexes 16 signed levels (nib_iq4_levels, -127..113; MXFP4's own)
 * instead of standing for q - 8. One pshufb of the nibbles (simd_legacy_nibbles, element order)
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
#include <stdbool.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/iq_lattice_avx2.h"
#include "cpu/kquant_scales.h"
#include "cpu/repack.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/iq_lattice.h"

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
 * A sub-block of 32 weights becomes three registers (iq_lattice_avx2.h
 * lat_decode_bits): its 32 magnitudes as unsigned bytes, its 32 sign bits
 * as byte masks that negate the activation (never -128, so exact), and each
 * group's odd scale multiplier 2s+1 over its 4 int16 pairs. Then per token
 * maddubs (pairs at most 2 * 62 * 127) and madd, all in int32 across the
 * super-block as in the reference; d * d_a per super-block and the format's
 * step at the end. The decoding is done once for the tokens of a call. */
typedef struct {
    __m256i mag, neg, ls;
} lat_sub;

static ALWAYS_INLINE __m256i lat_signs(uint32_t word) {
    uint8_t b[4];
    memcpy(b, &word, 4);
    return simd_bits_to_bytes(b);
}

static ALWAYS_INLINE void lat_decode(nib_type t, const uint8_t *grid, const uint8_t *blk, int ib, lat_sub *o) {
    o->neg = lat_signs(lat_decode_bits(t, grid, blk, ib, &o->mag, &o->ls));
}

static ALWAYS_INLINE void lattice_dot(nib_type type, int nt, int64_t n, const void *w, const void *a, size_t a_stride,
                                      float *out) {
    const iq_grid_format *f = nib_iq_grid_format(type);
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * f->block_bytes;
        __m256i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            lat_sub s;
            lat_decode(type, f->grid, blk, ib, &s);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib));
                const __m256i sq = _mm256_sub_epi8(_mm256_xor_si256(q8, s.neg), s.neg); /* -q8 where the weight is negative */
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(s.mag, sq), s.ls));
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
        lattice_dot(TYPE, 1, n, w, a, 0, &r);                                                                 \
        return r;                                                                                             \
    }                                                                                                         \
    void cpu_dot_##name##_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) { \
        lattice_dot(TYPE, 4, n, w, a, a_stride, out);                                                         \
    }
/* Super-block i of 8 rows decoded ahead for a prompt (repack.h block_i8x8):
 * the same sub-block decoding, the signed weights w stored as w + 128, the
 * group multipliers 2s + 1 as the scales of the 16-element halves, and d
 * times the format's step (a power of two: exact). */
static ALWAYS_INLINE void lattice_decode_x8(nib_type type, const uint8_t *w, size_t w_stride, int64_t i,
                                            block_i8x8 *o) {
    const iq_grid_format *f = nib_iq_grid_format(type);
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const uint8_t *blk = w + (size_t)r * w_stride + (size_t)i * f->block_bytes;
        uint16_t dh;
        memcpy(&dh, blk, 2);
        o->d[r] = simd_fp16_to_f32(dh) * f->step;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            lat_sub sb;
            lat_decode(type, f->grid, blk, ib, &sb);
            const __m256i v = _mm256_xor_si256(_mm256_sub_epi8(_mm256_xor_si256(sb.mag, sb.neg), sb.neg), bias);
            uint8_t u[32];
            _mm256_storeu_si256((__m256i *)u, v);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) memcpy(&o->qs[ib][k][8 * r], u + 8 * k, 8);
            o->sc[2 * ib][r] = (int16_t)_mm256_extract_epi16(sb.ls, 0);  /* elements 0-15 */
            o->sc[2 * ib + 1][r] = (int16_t)_mm256_extract_epi16(sb.ls, 8); /* 16-31 */
        }
    }
    i8x8_fill_off(o);
}

#define LATTICE_DECODE_X8(name, TYPE)                                                              \
    void cpu_decode_x8_##name##_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst) { \
        lattice_decode_x8(TYPE, w, w_stride, i, (block_i8x8 *)dst);                              \
    }
LATTICE_DECODE_X8(iq2_xxs, NIB_TYPE_IQ2_XXS)
LATTICE_DECODE_X8(iq2_xs, NIB_TYPE_IQ2_XS)
LATTICE_DECODE_X8(iq2_s, NIB_TYPE_IQ2_S)
LATTICE_DECODE_X8(iq3_xxs, NIB_TYPE_IQ3_XXS)
LATTICE_DECODE_X8(iq3_s, NIB_TYPE_IQ3_S)

/* The same prompts at the AVX2 level (no vpdpbusd to dot integers of both
 * signs 8 rows at a time): super-block i of 8 rows decoded ahead as each
 * row's 8 lat_sub and d times the format's step, then the x4 form's
 * arithmetic per row and token on them, so a block is decoded once a call
 * instead of once per 4 tokens (cpu_kernel.decode_x8). Super-block i of the
 * piece is 8 lat_decoded, row after row. */
typedef struct {
    lat_sub s[QK_K / 32];
    float d;
} lat_decoded;
NIB_STATIC_ASSERT(Q4_KX8_ROWS * sizeof(lat_decoded) == CPU_DECODED_MAX_BYTES, "lat_decoded: the decoded super-block's bytes");

static ALWAYS_INLINE void lattice_decode_rows(nib_type type, const uint8_t *w, size_t w_stride, int64_t i,
                                              lat_decoded *o) {
    const iq_grid_format *f = nib_iq_grid_format(type);
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const uint8_t *blk = w + (size_t)r * w_stride + (size_t)i * f->block_bytes;
        uint16_t dh;
        memcpy(&dh, blk, 2);
        o[r].d = simd_fp16_to_f32(dh) * f->step;
        for (int ib = 0; ib < QK_K / 32; ib++) lat_decode(type, f->grid, blk, ib, &o[r].s[ib]);
    }
}

static ALWAYS_INLINE void lat8_dot(int nt, int64_t n, const void *p, const void *a, size_t a_stride, float *out) {
    const lat_decoded *x = (const lat_decoded *)p;
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        __m256 acc[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
        for (int64_t i = 0; i < n / QK_K; i++) {
            const lat_decoded *xr = x + i * Q4_KX8_ROWS + r;
            __m256i sumi[NT_MAX];
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
            for (int ib = 0; ib < QK_K / 32; ib++) {
                const lat_sub *sb = &xr->s[ib];
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++) {
                    const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                    const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib));
                    const __m256i sq = _mm256_sub_epi8(_mm256_xor_si256(q8, sb->neg), sb->neg);
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(sb->mag, sq), sb->ls));
                }
            }
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++)
                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xr->d * kq_act_block(a, a_stride, t, i)->d),
                                         _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) out[Q4_KX8_ROWS * t + r] = simd_hsum_f32x8(acc[t]);
    }
}
PACKED_ENTRY(cpu_dot_lat8_q8_K_avx2, lat8_dot)

#define LATTICE_DECODE_ROWS(name, TYPE)                                                             \
    void cpu_decode_rows_##name##_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst) { \
        lattice_decode_rows(TYPE, w, w_stride, i, (lat_decoded *)dst);                           \
    }
LATTICE_DECODE_ROWS(iq2_xxs, NIB_TYPE_IQ2_XXS)
LATTICE_DECODE_ROWS(iq2_xs, NIB_TYPE_IQ2_XS)
LATTICE_DECODE_ROWS(iq2_s, NIB_TYPE_IQ2_S)
LATTICE_DECODE_ROWS(iq3_xxs, NIB_TYPE_IQ3_XXS)
LATTICE_DECODE_ROWS(iq3_s, NIB_TYPE_IQ3_S)

LATTICE_ENTRIES(iq2_xxs, NIB_TYPE_IQ2_XXS)
LATTICE_ENTRIES(iq2_xs, NIB_TYPE_IQ2_XS)
LATTICE_ENTRIES(iq2_s, NIB_TYPE_IQ2_S)
LATTICE_ENTRIES(iq3_xxs, NIB_TYPE_IQ3_XXS)
LATTICE_ENTRIES(iq3_s, NIB_TYPE_IQ3_S)

/* ---- IQ1_S and IQ1_M ----------------------------------------------------------------
 * weight = d * ls * (v + delta), v in {-1, 0, 1} from the signed codebook
 * (four 8-byte rows a sub-block), delta = +-1/8 per group. As the reference:
 * two integer sums a super-block, sum ls * v . a (sign trick: |v| against
 * the activation with v's sign) and sum +-ls * (group's activation sum)
 * (maddubs of ones; IQ1_S, whose shift is one a sub-block, takes it from
 * the activation's sums of 16 instead, in a scalar), combined as d * d_a *
 * (sum + shift / 8). IQ1_S: one
 * multiplier and one shift direction a sub-block (qh[ib]); IQ1_M: a
 * multiplier per half sub-block and a direction per group (qh nibbles), and
 * its fp16 d assembled from the top nibbles of the four scale words. */
static ALWAYS_INLINE uint64_t iq1_row(unsigned i) {
    uint64_t v;
    memcpy(&v, nib_iq1s_grid + 8 * (size_t)i, 8);
    return v;
}

/* Sub-block ib of an IQ1 block: its 4 codebook indices, the multipliers of
 * groups 0-1 (lo) and 2-3 (hi), and each group's shift direction (1: down).
 * IQ1_S has one multiplier and one direction for the sub-block. */
typedef struct {
    unsigned idx[4], lo, hi, down[4];
} iq1_head;
static ALWAYS_INLINE iq1_head iq1_head_of(bool m, const uint8_t *blk, int ib) {
    iq1_head o;
    if (m) {
        const block_iq1_m *x = (const block_iq1_m *)blk;
        const uint8_t *qs = x->qs + 4 * ib;
        uint16_t sw;
        memcpy(&sw, x->scales + 2 * (ib / 2), 2);
        const unsigned sc = (unsigned)sw >> (6 * (ib % 2));
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            const unsigned h = (unsigned)x->qh[2 * ib + g / 2] >> (4 * (g % 2));
            o.idx[g] = qs[g] | (h & 7u) << 8;
            o.down[g] = (h >> 3) & 1u;
        }
        o.lo = 2u * (sc & 7u) + 1u, o.hi = 2u * ((sc >> 3) & 7u) + 1u;
    } else {
        const block_iq1_s *x = (const block_iq1_s *)blk;
        const uint8_t *qs = x->qs + 4 * ib;
        const unsigned h = x->qh[ib];
        o.idx[0] = qs[0] | ((h << 8) & 0x700u), o.idx[1] = qs[1] | ((h << 5) & 0x700u);
        o.idx[2] = qs[2] | ((h << 2) & 0x700u), o.idx[3] = qs[3] | ((h >> 1) & 0x700u);
        o.lo = o.hi = 2u * ((h >> 12) & 7u) + 1u;
        o.down[0] = o.down[1] = o.down[2] = o.down[3] = h >> 15;
    }
    return o;
}
/* the block's d: IQ1_S's fp16 d, IQ1_M's assembled from the top nibbles of its four scale words */
static ALWAYS_INLINE float iq1_d(bool m, const uint8_t *blk) {
    uint16_t bits = 0;
    if (m) {
        for (int k = 0; k < 4; k++) {
            uint16_t sw;
            memcpy(&sw, ((const block_iq1_m *)blk)->scales + 2 * k, 2);
            bits |= (uint16_t)((sw >> 12) << (4 * k));
        }
    } else {
        memcpy(&bits, blk, 2);
    }
    return simd_fp16_to_f32(bits);
}

static ALWAYS_INLINE void iq1_dot(bool m, int nt, int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    const size_t bb = m ? sizeof(block_iq1_m) : sizeof(block_iq1_s);
    const __m256i ones = _mm256_set1_epi8(1);
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * bb;
        __m256i sumi[NT_MAX], shift[NT_MAX];
        int32_t shift1[NT_MAX]; /* IQ1_S: the shift term from the activation's sums of 16 */
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = shift[t] = _mm256_setzero_si256(), shift1[t] = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const iq1_head hd = iq1_head_of(m, blk, ib);
            const unsigned *idx = hd.idx;
            __m256i ls16, lsd16;
            if (m) {
                /* the multiplier of groups 0-1 and 2-3 over their int16 pairs, and
                 * each group's with its shift's sign */
                ls16 = lat_ls(hd.lo, hd.hi);
                const __m256i negm = _mm256_set_epi64x(-(int64_t)hd.down[3], -(int64_t)hd.down[2],
                                                       -(int64_t)hd.down[1], -(int64_t)hd.down[0]);
                lsd16 = _mm256_sub_epi16(_mm256_xor_si256(ls16, negm), negm); /* -ls where the shift is down */
            } else { /* one multiplier and one direction for the sub-block */
                const int l = (int)hd.lo;
                ls16 = _mm256_set1_epi16((short)l);
                lsd16 = _mm256_setzero_si256();
                const int ld = l * (1 - 2 * (int)hd.down[0]); /* -l where the shift is down */
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++) {
                    const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                    shift1[t] += ld * (y->bsums[2 * ib] + y->bsums[2 * ib + 1]);
                }
            }
            const __m256i v = _mm256_set_epi64x((int64_t)iq1_row(idx[3]), (int64_t)iq1_row(idx[2]),
                                                (int64_t)iq1_row(idx[1]), (int64_t)iq1_row(idx[0]));
            const __m256i va = _mm256_sign_epi8(v, v); /* |v| */
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(va, _mm256_sign_epi8(q8, v)), ls16));
                if (m) shift[t] = _mm256_add_epi32(shift[t], _mm256_madd_epi16(_mm256_maddubs_epi16(ones, q8), lsd16));
            }
        }
        const float xd = iq1_d(m, blk);
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            if (!m) shift[t] = _mm256_setr_epi32(shift1[t], 0, 0, 0, 0, 0, 0, 0);
            const __m256 tot = _mm256_fmadd_ps(_mm256_set1_ps(0.125f), _mm256_cvtepi32_ps(shift[t]), _mm256_cvtepi32_ps(sumi[t]));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xd * y->d), tot, acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = simd_hsum_f32x8(acc[t]);
}

/* Super-block i of 8 rows decoded ahead (repack.h block_i8x8): weight =
 * (d / 8) * ls * (8 v + s), s = +-1 the group's shift direction, so the
 * integers 8 v + s (at most 9) stored + 128, ls as the halves' scales. */
static ALWAYS_INLINE void iq1_decode_x8(bool m, const uint8_t *w, size_t w_stride, int64_t i, block_i8x8 *o) {
    const size_t bb = m ? sizeof(block_iq1_m) : sizeof(block_iq1_s);
    const __m256i m8 = _mm256_set1_epi8((char)0xF8), bias = _mm256_set1_epi8((char)0x80);
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const uint8_t *blk = w + (size_t)r * w_stride + (size_t)i * bb;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const iq1_head hd = iq1_head_of(m, blk, ib);
            const unsigned *idx = hd.idx, lo = hd.lo, hi = hd.hi;
            int64_t sg[4]; /* each group's shift, +-1 in all 8 bytes */
#pragma GCC unroll 4
            for (int g = 0; g < 4; g++) sg[g] = hd.down[g] ? -1 : 0x0101010101010101;
            const __m256i v = _mm256_set_epi64x((int64_t)iq1_row(idx[3]), (int64_t)iq1_row(idx[2]),
                                                (int64_t)iq1_row(idx[1]), (int64_t)iq1_row(idx[0]));
            const __m256i v8 = _mm256_and_si256(_mm256_slli_epi16(v, 3), m8); /* 8 v, bytewise */
            const __m256i q = _mm256_add_epi8(v8, _mm256_set_epi64x(sg[3], sg[2], sg[1], sg[0]));
            uint8_t u[32];
            _mm256_storeu_si256((__m256i *)u, _mm256_xor_si256(q, bias));
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) memcpy(&o->qs[ib][k][8 * r], u + 8 * k, 8);
            o->sc[2 * ib][r] = (int16_t)lo, o->sc[2 * ib + 1][r] = (int16_t)hi;
        }
        o->d[r] = iq1_d(m, blk) * 0.125f;
    }
    i8x8_fill_off(o);
}
void cpu_decode_x8_iq1_s_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    iq1_decode_x8(false, w, w_stride, i, (block_i8x8 *)dst);
}
void cpu_decode_x8_iq1_m_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    iq1_decode_x8(true, w, w_stride, i, (block_i8x8 *)dst);
}

float cpu_dot_iq1_s_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    iq1_dot(false, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_iq1_s_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    iq1_dot(false, 4, n, w, a, a_stride, out);
}
float cpu_dot_iq1_m_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    iq1_dot(true, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_iq1_m_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    iq1_dot(true, 4, n, w, a, a_stride, out);
}
