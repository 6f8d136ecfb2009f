/* Ternary formats TQ1_0 and TQ2_0 (BitNet b1.58 and TriLM weights).
 *
 * Every element is a trit t in {-1, 0, +1} times one fp16 scale per
 * 256-element block: x = d * t. The quantizer takes d = max|x| and rounds
 * x/d to the nearest of -1, 0, 1 (halves away from zero, lroundf), so a
 * block's largest element is exactly +-d.
 *
 * Both formats store t + 1 (0, 1 or 2), never t itself.
 *
 * TQ2_0 (66 bytes: qs[64], d): two bits per trit. The block is two halves of
 * 128 elements; in half h (bytes 32h..32h+31), byte 32h + m holds the four
 * elements 128h + m + 32l, l = 0..3, element l in bits 2l..2l+1.
 *
 * TQ1_0 (54 bytes: qs[48], qh[4], d): five trits per byte, 1.6875 bits per
 * element. Five trits read as a base-3 number v = t0*81 + t1*27 + t2*9 +
 * t3*3 + t4 (0..242, first element most significant) are stored as the
 * fixed-point fraction v/243 of 256, rounded up: byte = ceil(v * 256 / 243).
 * Reading trit k back needs no division: multiplying the byte by 3^k modulo
 * 256 shifts the fraction k trits to the left and drops the whole part, and
 * then (byte * 3) >> 8 is the leading trit. Rounding up on the way in is
 * what keeps every truncation on the way out from landing one trit short.
 * Elements are spread over the bytes like this:
 *   qs[0..31]   elements 0..159:    byte m holds m + 32k,       k = 0..4
 *   qs[32..47]  elements 160..239:  byte 32 + m holds 160 + m + 16k
 *   qh[0..3]    elements 240..255:  byte m holds 240 + m + 4k,  k = 0..3,
 *               with a zero fifth trit so the same decoding applies.
 *
 * The dots pair both with Q8_K activations (fp32 scale, 256 int8 quants):
 * an exact integer sum per block, scaled once by d_w * d_a in fp32.
 */
#include "quant/formats.h"

#include <math.h>

#include "core/fp16.h"

/* ---- shared pieces -------------------------------------------------------- */

static const uint8_t pow3[5] = {1, 3, 9, 27, 81};

/* The leading trit of a fixed-point base-3 fraction byte, as 0..2. */
static int leading_trit(uint8_t b) { return (int)(((uint16_t)b * 3u) >> 8); }

/* A block's scale and rounded trits, as t + 1 in 0..2, in element order. */
static float ternarize(const float *x, uint8_t t[QK_K]) {
    float amax = 0.0f;
    for (int j = 0; j < QK_K; j++) {
        float a = fabsf(x[j]);
        if (a > amax) amax = a;
    }
    const float id = amax != 0.0f ? 1.0f / amax : 0.0f;
    for (int j = 0; j < QK_K; j++) t[j] = (uint8_t)(lroundf(x[j] * id) + 1);
    return amax;
}

/* ---- TQ1_0 ---------------------------------------------------------------- */

/* Decode `count` bytes whose k-th trit (k < ntrits) is element
 * base + m + stride*k, into t (values -1..1). */
static void tq1_decode_run(const uint8_t *bytes, int count, int ntrits, int stride, int8_t *t) {
    for (int k = 0; k < ntrits; k++) {
        for (int m = 0; m < count; m++) {
            uint8_t b = (uint8_t)(bytes[m] * pow3[k]);  /* wraps mod 256 on purpose */
            t[m + stride * k] = (int8_t)(leading_trit(b) - 1);
        }
    }
}

static void tq1_unpack(const block_tq1_0 *b, int8_t t[QK_K]) {
    tq1_decode_run(b->qs, 32, 5, 32, t);
    tq1_decode_run(b->qs + 32, 16, 5, 16, t + 160);
    tq1_decode_run(b->qh, 4, 4, 4, t + 240);
}

/* Encode the inverse of tq1_decode_run. Four-trit bytes get a zero fifth
 * trit (one more *3) before scaling. */
static void tq1_encode_run(const uint8_t *t, int count, int ntrits, int stride, uint8_t *bytes) {
    for (int m = 0; m < count; m++) {
        unsigned v = 0;
        for (int k = 0; k < ntrits; k++) v = v * 3u + t[m + stride * k];
        for (int k = ntrits; k < 5; k++) v *= 3u;
        bytes[m] = (uint8_t)((v * 256u + 242u) / 243u);  /* ceil(v * 256 / 243) */
    }
}

void nib_dequantize_tq1_0(const void *src, float *dst, int64_t n) {
    const block_tq1_0 *b = (const block_tq1_0 *)src;
    int8_t t[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        const float d = nib_fp16_to_f32(b[i].d);
        tq1_unpack(&b[i], t);
        for (int j = 0; j < QK_K; j++) dst[j] = (float)t[j] * d;
    }
}

void nib_quantize_tq1_0(const float *src, void *dst, int64_t n) {
    block_tq1_0 *b = (block_tq1_0 *)dst;
    uint8_t t[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        b[i].d = nib_f32_to_fp16(ternarize(src, t));
        tq1_encode_run(t, 32, 5, 32, b[i].qs);
        tq1_encode_run(t + 160, 16, 5, 16, b[i].qs + 32);
        tq1_encode_run(t + 240, 4, 4, 4, b[i].qh);
    }
}

float nib_vec_dot_tq1_0_q8_K(int64_t n, const void *w, const void *a) {
    const block_tq1_0 *x = (const block_tq1_0 *)w;
    const block_q8_K *y = (const block_q8_K *)a;
    int8_t t[QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        tq1_unpack(&x[i], t);
        int32_t si = 0;
        for (int j = 0; j < QK_K; j++) si += t[j] * y[i].qs[j];
        sum += (float)si * (nib_fp16_to_f32(x[i].d) * y[i].d);
    }
    return sum;
}

/* TQ1_0 blocks rewritten as TQ2_0 blocks with the same trits and d: every
 * byte decodes to three valid values, so the two hold the same numbers and
 * their dots the same integer sums. The CUDA backend keeps TQ1_0 matrices
 * this way (cuda/gpu_layout.h): two bits a trit cost 22% more bytes and
 * far fewer instructions than five trits a byte. */
void nib_tq1_0_to_tq2_0(const void *src, void *dst, int64_t n_blocks) {
    const block_tq1_0 *in = (const block_tq1_0 *)src;
    block_tq2_0 *out = (block_tq2_0 *)dst;
    int8_t t[QK_K];
    for (int64_t i = 0; i < n_blocks; i++) {
        tq1_unpack(&in[i], t);
        for (int h = 0; h < 2; h++) {
            for (int m = 0; m < 32; m++) {
                unsigned byte = 0;
                for (int l = 0; l < 4; l++) byte |= (unsigned)(t[128 * h + 32 * l + m] + 1) << (2 * l);
                out[i].qs[32 * h + m] = (uint8_t)byte;
            }
        }
        out[i].d = in[i].d;
    }
}

/* ---- TQ2_0 ---------------------------------------------------------------- */

static void tq2_unpack(const block_tq2_0 *b, int8_t t[QK_K]) {
    for (int h = 0; h < 2; h++) {
        for (int l = 0; l < 4; l++) {
            for (int m = 0; m < 32; m++) {
                t[128 * h + 32 * l + m] = (int8_t)(((b->qs[32 * h + m] >> (2 * l)) & 3) - 1);
            }
        }
    }
}

void nib_dequantize_tq2_0(const void *src, float *dst, int64_t n) {
    const block_tq2_0 *b = (const block_tq2_0 *)src;
    int8_t t[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        const float d = nib_fp16_to_f32(b[i].d);
        tq2_unpack(&b[i], t);
        for (int j = 0; j < QK_K; j++) dst[j] = (float)t[j] * d;
    }
}

void nib_quantize_tq2_0(const float *src, void *dst, int64_t n) {
    block_tq2_0 *b = (block_tq2_0 *)dst;
    uint8_t t[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        b[i].d = nib_f32_to_fp16(ternarize(src, t));
        for (int h = 0; h < 2; h++) {
            for (int m = 0; m < 32; m++) {
                unsigned byte = 0;
                for (int l = 0; l < 4; l++) byte |= (unsigned)(t[128 * h + 32 * l + m] & 3) << (2 * l);
                b[i].qs[32 * h + m] = (uint8_t)byte;
            }
        }
    }
}

float nib_vec_dot_tq2_0_q8_K(int64_t n, const void *w, const void *a) {
    const block_tq2_0 *x = (const block_tq2_0 *)w;
    const block_q8_K *y = (const block_q8_K *)a;
    int8_t t[QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        tq2_unpack(&x[i], t);
        int32_t si = 0;
        for (int j = 0; j < QK_K; j++) si += t[j] * y[i].qs[j];
        sum += (float)si * (y[i].d * nib_fp16_to_f32(x[i].d));
    }
    return sum;
}
