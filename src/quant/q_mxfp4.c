/* MXFP4: the OCP Microscaling FP4 format (as in gpt-oss weights).
 *
 * A block is 32 elements in 17 bytes: one shared E8M0 scale byte e, then 16
 * bytes of 4-bit E2M1 values.
 *
 * E8M0 is a bare exponent: 8 bits, no sign, no mantissa, bias 127, so the
 * scale is 2^(e - 127). (The OCP spec reserves 0xFF for NaN; ggml does not,
 * and neither do we: e = 255 is the scale 2^128, of which only the half,
 * 2^127, is ever formed.)
 *
 * E2M1 is a 4-bit float: bit 3 sign, bits 2..1 exponent (bias 1), bit 0
 * mantissa. Its 8 magnitudes are 0, 0.5, 1, 1.5, 2, 3, 4, 6 (exponent 0 is
 * subnormal: 0 and 0.5). Codes 8..15 are the same magnitudes negated; code 8
 * is -0, which reads as 0.
 *
 * ggml keeps every number an integer by doubling the E2M1 table (0, 1, 2, 3,
 * 4, 6, 8, 12) and halving the scale to 2^(e - 128); x = kvalue * half_scale
 * is the same value. The halved scale of e = 0 and e = 1 is an fp32
 * subnormal (2^-128, 2^-127), built from its bits directly.
 *
 * Nibble order is the legacy one: byte j holds element j in its low nibble
 * and element j + 16 in its high nibble.
 *
 * The quantizer picks e so that the block's largest magnitude amax, divided
 * by the scale, lands in [4, 8): e = floor(log2(amax)) - 2 + 127, since the
 * largest E2M1 magnitude 6 is 1.5 * 2^2. Each element then takes the table
 * entry nearest to it (the first one on a tie), so values in [6, 8) clamp
 * to 6. log2f comes from the C library, as in ggml; just below a power of
 * two it can round up to the integer, which gives the next e (both sides
 * compute it this way, so the files still agree).
 *
 * The dot pairs with Q8_0 activations (same 32-element blocks): an exact
 * integer sum of kvalue * q8 per block, scaled by d_a * half_scale in fp32.
 */
#include "quant/formats.h"

#include <math.h>

#include "core/fp16.h"

/* E2M1 values doubled, indexed by the 4-bit code. */
const int8_t nib_mxfp4_levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* The shared exponent for a block whose largest magnitude is amax. ggml
 * converts the float straight to uint8_t; that is undefined for amax below
 * 2^-125 (a negative e) or infinite, so those clamp to the ends here. */
static uint8_t choose_e8m0(float amax) {
    if (!(amax > 0.0f)) return 0;
    float e = floorf(log2f(amax)) - 2.0f + 127.0f;
    if (!(e >= 0.0f)) return 0;
    if (e > 255.0f) return 255;
    return (uint8_t)e;
}

/* Index of the table entry nearest to x at this scale; the lowest index wins
 * a tie, so 0 is written as code 0, never 8. */
static uint8_t nearest_code(float x, float half_scale) {
    int best = 0;
    float best_err = fabsf((float)nib_mxfp4_levels[0] * half_scale - x);
    for (int i = 1; i < 16; i++) {
        float err = fabsf((float)nib_mxfp4_levels[i] * half_scale - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

/* Doubled values of one block in element order. */
static void mxfp4_unpack(const uint8_t qs[16], int8_t v[32]) {
    for (int j = 0; j < 16; j++) {
        v[j] = nib_mxfp4_levels[qs[j] & 0x0F];
        v[j + 16] = nib_mxfp4_levels[qs[j] >> 4];
    }
}

void nib_dequantize_mxfp4(const void *src, float *dst, int64_t n) {
    const block_mxfp4 *b = (const block_mxfp4 *)src;
    int8_t v[32];
    for (int64_t i = 0; i < n / QK_MXFP4; i++, dst += QK_MXFP4) {
        const float d = nib_mxfp4_half_scale(b[i].e);
        mxfp4_unpack(b[i].qs, v);
        for (int j = 0; j < QK_MXFP4; j++) dst[j] = (float)v[j] * d;
    }
}

void nib_quantize_mxfp4(const float *src, void *dst, int64_t n) {
    block_mxfp4 *b = (block_mxfp4 *)dst;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, src += QK_MXFP4) {
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; j++) {
            if (amax < fabsf(src[j])) amax = fabsf(src[j]);
        }
        const uint8_t e = choose_e8m0(amax);
        const float d = nib_mxfp4_half_scale(e);
        b[i].e = e;
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            uint8_t lo = nearest_code(src[j], d);
            uint8_t hi = nearest_code(src[j + QK_MXFP4 / 2], d);
            b[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

float nib_vec_dot_mxfp4_q8_0(int64_t n, const void *w, const void *a) {
    const block_mxfp4 *x = (const block_mxfp4 *)w;
    const block_q8_0 *y = (const block_q8_0 *)a;
    int8_t v[32];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_MXFP4; i++) {
        mxfp4_unpack(x[i].qs, v);
        int32_t si = 0;
        for (int j = 0; j < QK_MXFP4; j++) si += v[j] * y[i].qs[j];
        const float d = nib_fp16_to_f32(y[i].d) * nib_mxfp4_half_scale(x[i].e);
        sum += d * (float)si;
    }
    return sum;
}
