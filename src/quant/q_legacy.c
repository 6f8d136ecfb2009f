/* The legacy 32-element formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q8_1.
 *
 * Each block covers 32 consecutive elements with one fp16 scale d, and the
 * "_1" kinds add an fp16 offset m (the block minimum):
 *
 *   Q4_0  18 bytes  d, qs[16]            x = d * (q - 8),   q in 0..15
 *   Q4_1  20 bytes  d, m, qs[16]         x = d * q + m,     q in 0..15
 *   Q5_0  22 bytes  d, qh[4], qs[16]     x = d * (q - 16),  q in 0..31
 *   Q5_1  24 bytes  d, m, qh[4], qs[16]  x = d * q + m,     q in 0..31
 *   Q8_0  34 bytes  d, qs[32]            x = d * q,         q in -128..127
 *   Q8_1  36 bytes  d, s, qs[32]         x = d * q,  s = d * sum(q)
 *
 * Nibble order (Q4 and Q5): byte j of qs holds element j in its low nibble
 * and element j + 16 in its high nibble, so the two halves of the block sit
 * in the two halves of each byte (not neighbours in one byte).
 *
 * The fifth bit (Q5): qh is one 32-bit little-endian word; bit j is bit 4 of
 * element j, for j = 0..31. qs holds the low four bits as in Q4.
 *
 * Q8_0 and Q8_1 are the activation formats the Q4/Q5 dots pair with: Q8_0
 * for the symmetric "_0" kinds, Q8_1 for the "_1" kinds, whose offset m
 * multiplies the sum of the activations; s carries d * sum(q) precomputed
 * (rounded to fp16) so that term costs one multiply per block.
 *
 * Every number below follows ggml's reference code step by step in fp32
 * (quantize_row_*_ref, dequantize_row_*, the generic ggml_vec_dot_*), because
 * a different but "equivalent" order rounds differently and the files we
 * write must be byte-identical to theirs. Build with -ffp-contract=off: a
 * fused multiply-add would also change the bits.
 */
#include "quant/formats.h"

#include <float.h>
#include <math.h>

#include "core/fp16.h"

/* ---- shared pieces -------------------------------------------------------- */

/* The element of largest magnitude, with its sign; the first one wins a tie.
 * The symmetric quantizers divide by it (negated) so that it lands exactly
 * on the most negative level, -8 or -16, which has no positive twin. */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static float absmax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        float a = fabsf(x[j]);
        if (a > amax) amax = a;
    }
    return amax;
}

static void min_max(const float *x, int n, float *mn, float *mx) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

/* 1/d, or 0 for an all-zero block so every element quantizes to the zero level. */
static float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

/* qh travels as bytes; assemble the word explicitly so the bit order is the
 * file's little-endian one on any host. */
static uint32_t load_qh(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

static void store_qh(uint8_t qh[4], uint32_t w) {
    for (int b = 0; b < 4; b++) qh[b] = (uint8_t)(w >> (8 * b));
}

/* Unpack the levels of one Q4 block in element order, minus `bias` (8 for
 * Q4_0, 0 for Q4_1). */
static void q4_unpack(const uint8_t qs[16], int bias, int32_t q[32]) {
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0x0F) - bias;
        q[j + 16] = (qs[j] >> 4) - bias;
    }
}

/* As q4_unpack with bit 4 of each level taken from qh (bias 16 or 0). */
static void q5_unpack(const uint8_t qs[16], const uint8_t qh[4], int bias, int32_t q[32]) {
    uint32_t h = load_qh(qh);
    for (int j = 0; j < 16; j++) {
        int32_t h0 = (int32_t)((h >> j) & 1u) << 4;
        int32_t h1 = (int32_t)((h >> (j + 16)) & 1u) << 4;
        q[j] = ((qs[j] & 0x0F) | h0) - bias;
        q[j + 16] = ((qs[j] >> 4) | h1) - bias;
    }
}

/* Pack 32 levels (0..15, or 0..31 with qh) in the nibble order above. */
static void q4_pack(const uint8_t q[32], uint8_t qs[16]) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
}

static void q5_pack(const uint8_t q[32], uint8_t qs[16], uint8_t qh[4]) {
    uint32_t h = 0;
    for (int j = 0; j < 32; j++) h |= (uint32_t)((q[j] >> 4) & 1) << j;
    q4_pack(q, qs);
    store_qh(qh, h);
}

/* (int)v for the truncating quantizers below. NaN, inf or a denormal scale
 * (1/d overflows) can push v outside int, where the cast is undefined; such a
 * value gets level 0. Finite blocks never reach that branch, so the levels
 * stay byte-identical to gguf-py's. */
static int level_of(float v) { return v >= 0.0f && v < 2147483648.0f ? (int)v : 0; }

/* Levels of a symmetric ("_0") block. The element of largest magnitude
 * fixes d = max / -half (half = 8 or 16): it maps to level 0, and the rest
 * spread over 0..2*half-1. The level is the truncation of x/d + half + 0.5,
 * i.e. round half up, clamped at the top because the positive side has one
 * level fewer. Returns d. */
static float quantize_symmetric(const float *x, int half, uint8_t q[32]) {
    const float d = signed_absmax(x, 32) / (float)-half;
    const float id = inverse_or_zero(d);
    const float bias = (float)half + 0.5f;
    const int top = 2 * half - 1;
    for (int j = 0; j < 32; j++) {
        int l = level_of(x[j] * id + bias);
        q[j] = (uint8_t)(l < top ? l : top);
    }
    return d;
}

/* Levels of an affine ("_1") block: min maps to level 0 and max to nmax
 * (15 or 31), rounding (x - min)/d half up by truncating +0.5. Returns d and
 * stores the offset in *m. ggml clamps Q4_1 at 15 and leaves Q5_1 unclamped;
 * a level above nmax cannot occur (max maps to nmax within a few ulps), so
 * clamping both is the same result. */
static float quantize_affine(const float *x, int nmax, uint8_t q[32], float *m) {
    float mn, mx;
    min_max(x, 32, &mn, &mx);
    const float d = (mx - mn) / (float)nmax;
    const float id = inverse_or_zero(d);
    for (int j = 0; j < 32; j++) {
        int l = level_of((x[j] - mn) * id + 0.5f);
        q[j] = (uint8_t)(l < nmax ? l : nmax);
    }
    *m = mn;
    return d;
}

/* A rounded Q8 level as the AVX2 twin produces it: _mm256_cvtps_epi32 gives
 * INT32_MIN for NaN and for anything outside int32 (inf), and the pack
 * saturates to int8. In C the cast of those is undefined, and they do arrive:
 * NaN or inf from NaN/inf weights (legal in a file), inf when a denormal
 * block maximum makes 1/d overflow (both found by fuzzing under UBSan). */
static int8_t q8_level(float v) {
    if (!(v > -2147483648.0f && v < 2147483648.0f)) return INT8_MIN;
    return v > 127.0f ? 127 : v < -128.0f ? INT8_MIN : (int8_t)v;
}

/* Q8 levels: d = amax/127 and q = roundf(x/d), halves away from zero (this
 * one uses roundf, not the +0.5 truncation of the 4/5-bit kinds). */
static float quantize_q8(const float *x, int8_t qs[32]) {
    const float d = absmax(x, 32) / 127.0f;
    const float id = inverse_or_zero(d);
    for (int j = 0; j < 32; j++) qs[j] = q8_level(roundf(x[j] * id));
    return d;
}

/* Exact integer dot of one block's levels with one Q8 block's quants. */
static int32_t dot_levels(const int32_t q[32], const int8_t a[32]) {
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += q[j] * a[j];
    return s;
}

static int32_t dot_i8(const int8_t w[32], const int8_t a[32]) {
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += w[j] * a[j];
    return s;
}

/* y = d * q (symmetric) or y = d * q + m (affine, m added as its own fp32 step). */
static void scale_levels(const int32_t q[32], float d, float *y) {
    for (int j = 0; j < 32; j++) y[j] = (float)q[j] * d;
}

static void scale_levels_offset(const int32_t q[32], float d, float m, float *y) {
    for (int j = 0; j < 32; j++) y[j] = (float)q[j] * d + m;
}

/* ---- Q4_0 -----------------------------------------------------------------
 * 4.5 bits per element. Levels 0..15 stand for -8..7 times d. d is stored
 * with the sign that sends the largest-magnitude element to -8: d is
 * negative when that element is positive, so a block can use its full range
 * on whichever side its extreme value lies. */

void nib_dequantize_q4_0(const void *src, float *dst, int64_t n) {
    const block_q4_0 *b = (const block_q4_0 *)src;
    int32_t q[32];
    for (int64_t i = 0; i < n / QK4_0; i++, dst += QK4_0) {
        q4_unpack(b[i].qs, 8, q);
        scale_levels(q, nib_fp16_to_f32(b[i].d), dst);
    }
}

void nib_quantize_q4_0(const float *src, void *dst, int64_t n) {
    block_q4_0 *b = (block_q4_0 *)dst;
    uint8_t q[32];
    for (int64_t i = 0; i < n / QK4_0; i++, src += QK4_0) {
        b[i].d = nib_f32_to_fp16(quantize_symmetric(src, 8, q));
        q4_pack(q, b[i].qs);
    }
}

float nib_vec_dot_q4_0_q8_0(int64_t n, const void *w, const void *a) {
    const block_q4_0 *x = (const block_q4_0 *)w;
    const block_q8_0 *y = (const block_q8_0 *)a;
    int32_t q[32];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        q4_unpack(x[i].qs, 8, q);
        int32_t si = dot_levels(q, y[i].qs);
        /* Each dot combines its scales in the order of ggml's scalar kernel
         * for that pair (they differ from pair to pair): fp32 products are not
         * associative, and this is where bit-exactness with ggml is decided.
         * Here: (sumi * d_w) * d_a. */
        sum += (float)si * nib_fp16_to_f32(x[i].d) * nib_fp16_to_f32(y[i].d);
    }
    return sum;
}

/* ---- Q4_1 -----------------------------------------------------------------
 * 5 bits per element. The offset m (the block minimum, rounded to fp16) lets
 * a block whose values are all on one side use all 16 levels; d >= 0. Note
 * that reading back adds the fp16 m, not the fp32 minimum the levels were
 * computed from, so values can move by up to half an fp16 ulp of m. */

void nib_dequantize_q4_1(const void *src, float *dst, int64_t n) {
    const block_q4_1 *b = (const block_q4_1 *)src;
    int32_t q[32];
    for (int64_t i = 0; i < n / QK4_1; i++, dst += QK4_1) {
        q4_unpack(b[i].qs, 0, q);
        scale_levels_offset(q, nib_fp16_to_f32(b[i].d), nib_fp16_to_f32(b[i].m), dst);
    }
}

void nib_quantize_q4_1(const float *src, void *dst, int64_t n) {
    block_q4_1 *b = (block_q4_1 *)dst;
    uint8_t q[32];
    for (int64_t i = 0; i < n / QK4_1; i++, src += QK4_1) {
        float m;
        b[i].d = nib_f32_to_fp16(quantize_affine(src, 15, q, &m));
        b[i].m = nib_f32_to_fp16(m);
        q4_pack(q, b[i].qs);
    }
}

/* sum_j (d q_j + m) * (d_a a_j) = (d d_a) sum_j q_j a_j + m * (d_a sum_j a_j),
 * and the activation block carries the last factor as s. */
float nib_vec_dot_q4_1_q8_1(int64_t n, const void *w, const void *a) {
    const block_q4_1 *x = (const block_q4_1 *)w;
    const block_q8_1 *y = (const block_q8_1 *)a;
    int32_t q[32];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_1; i++) {
        q4_unpack(x[i].qs, 0, q);
        int32_t si = dot_levels(q, y[i].qs);
        float dd = nib_fp16_to_f32(x[i].d) * nib_fp16_to_f32(y[i].d);
        sum += dd * (float)si + nib_fp16_to_f32(x[i].m) * nib_fp16_to_f32(y[i].s);
    }
    return sum;
}

/* ---- Q5_0 -----------------------------------------------------------------
 * 5.5 bits per element: Q4_0 with a fifth bit, levels 0..31 for -16..15.
 * The fifth bits are gathered into qh (bit j for element j) because 5-bit
 * fields would straddle bytes; the low four bits keep Q4's nibble order. */

void nib_dequantize_q5_0(const void *src, float *dst, int64_t n) {
    const block_q5_0 *b = (const block_q5_0 *)src;
    int32_t q[32];
    for (int64_t i = 0; i < n / QK5_0; i++, dst += QK5_0) {
        q5_unpack(b[i].qs, b[i].qh, 16, q);
        scale_levels(q, nib_fp16_to_f32(b[i].d), dst);
    }
}

void nib_quantize_q5_0(const float *src, void *dst, int64_t n) {
    block_q5_0 *b = (block_q5_0 *)dst;
    uint8_t q[32];
    for (int64_t i = 0; i < n / QK5_0; i++, src += QK5_0) {
        b[i].d = nib_f32_to_fp16(quantize_symmetric(src, 16, q));
        q5_pack(q, b[i].qs, b[i].qh);
    }
}

float nib_vec_dot_q5_0_q8_0(int64_t n, const void *w, const void *a) {
    const block_q5_0 *x = (const block_q5_0 *)w;
    const block_q8_0 *y = (const block_q8_0 *)a;
    int32_t q[32];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK5_0; i++) {
        q5_unpack(x[i].qs, x[i].qh, 16, q);
        int32_t si = dot_levels(q, y[i].qs);
        /* (d_w * d_a) * sumi, unlike Q4_0's (sumi * d_w) * d_a */
        float dd = nib_fp16_to_f32(x[i].d) * nib_fp16_to_f32(y[i].d);
        sum += dd * (float)si;
    }
    return sum;
}

/* ---- Q5_1 -----------------------------------------------------------------
 * 6 bits per element: Q4_1 with the fifth bit in qh, as for Q5_0. */

void nib_dequantize_q5_1(const void *src, float *dst, int64_t n) {
    const block_q5_1 *b = (const block_q5_1 *)src;
    int32_t q[32];
    for (int64_t i = 0; i < n / QK5_1; i++, dst += QK5_1) {
        q5_unpack(b[i].qs, b[i].qh, 0, q);
        scale_levels_offset(q, nib_fp16_to_f32(b[i].d), nib_fp16_to_f32(b[i].m), dst);
    }
}

void nib_quantize_q5_1(const float *src, void *dst, int64_t n) {
    block_q5_1 *b = (block_q5_1 *)dst;
    uint8_t q[32];
    for (int64_t i = 0; i < n / QK5_1; i++, src += QK5_1) {
        float m;
        b[i].d = nib_f32_to_fp16(quantize_affine(src, 31, q, &m));
        b[i].m = nib_f32_to_fp16(m);
        q5_pack(q, b[i].qs, b[i].qh);
    }
}

float nib_vec_dot_q5_1_q8_1(int64_t n, const void *w, const void *a) {
    const block_q5_1 *x = (const block_q5_1 *)w;
    const block_q8_1 *y = (const block_q8_1 *)a;
    int32_t q[32];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK5_1; i++) {
        q5_unpack(x[i].qs, x[i].qh, 0, q);
        int32_t si = dot_levels(q, y[i].qs);
        float dd = nib_fp16_to_f32(x[i].d) * nib_fp16_to_f32(y[i].d);
        sum += dd * (float)si + nib_fp16_to_f32(x[i].m) * nib_fp16_to_f32(y[i].s);
    }
    return sum;
}

/* ---- Q8_0 -----------------------------------------------------------------
 * 8.5 bits per element, symmetric: levels -127..127 (-128 is never written,
 * though a file's -128 reads back as -128 * d). Used both as a weight format
 * and as the activation format of the Q4_0, Q5_0, Q8_0, IQ4_NL and MXFP4 dots. */

void nib_dequantize_q8_0(const void *src, float *dst, int64_t n) {
    const block_q8_0 *b = (const block_q8_0 *)src;
    for (int64_t i = 0; i < n / QK8_0; i++, dst += QK8_0) {
        const float d = nib_fp16_to_f32(b[i].d);
        for (int j = 0; j < QK8_0; j++) dst[j] = (float)b[i].qs[j] * d;
    }
}

void nib_quantize_q8_0(const float *src, void *dst, int64_t n) {
    block_q8_0 *b = (block_q8_0 *)dst;
    for (int64_t i = 0; i < n / QK8_0; i++, src += QK8_0) {
        b[i].d = nib_f32_to_fp16(quantize_q8(src, b[i].qs));
    }
}

float nib_vec_dot_q8_0_q8_0(int64_t n, const void *w, const void *a) {
    const block_q8_0 *x = (const block_q8_0 *)w;
    const block_q8_0 *y = (const block_q8_0 *)a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        int32_t si = dot_i8(x[i].qs, y[i].qs);
        sum += (float)si * (nib_fp16_to_f32(x[i].d) * nib_fp16_to_f32(y[i].d));
    }
    return sum;
}

/* ---- Q8_1 -----------------------------------------------------------------
 * Q8_0 plus s, for the "_1" dots. s is fp16, so m * s carries a relative
 * error up to 2^-11 of that term: the dot of a Q4_1/Q5_1 row with Q8_1 is
 * that much less exact than a dot of the dequantized rows would be. */

/* s is not needed to read the values back: x = d * q, as in Q8_0. */
void nib_dequantize_q8_1(const void *src, float *dst, int64_t n) {
    const block_q8_1 *b = (const block_q8_1 *)src;
    for (int64_t i = 0; i < n / QK8_1; i++, dst += QK8_1) {
        const float d = nib_fp16_to_f32(b[i].d);
        for (int j = 0; j < QK8_1; j++) dst[j] = (float)b[i].qs[j] * d;
    }
}

/* Same quants as Q8_0; s is the integer sum of the quants times the fp32 d
 * (not the fp16-rounded one), rounded once to fp16. */
void nib_quantize_q8_1(const float *src, void *dst, int64_t n) {
    block_q8_1 *b = (block_q8_1 *)dst;
    for (int64_t i = 0; i < n / QK8_1; i++, src += QK8_1) {
        const float d = quantize_q8(src, b[i].qs);
        int32_t sum = 0;
        for (int j = 0; j < QK8_1; j++) sum += b[i].qs[j];
        b[i].d = nib_f32_to_fp16(d);
        b[i].s = nib_f32_to_fp16((float)sum * d);
    }
}

/* ggml has no kernel for Q8_1 weights; with no offset to fold in, the dot is
 * the Q8_0 one and s goes unused. */
float nib_vec_dot_q8_1_q8_1(int64_t n, const void *w, const void *a) {
    const block_q8_1 *x = (const block_q8_1 *)w;
    const block_q8_1 *y = (const block_q8_1 *)a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK8_1; i++) {
        int32_t si = dot_i8(x[i].qs, y[i].qs);
        sum += (float)si * (nib_fp16_to_f32(x[i].d) * nib_fp16_to_f32(y[i].d));
    }
    return sum;
}
