/* Plain floating-point "formats": F32, F16 and BF16.
 *
 * These have no blocks (block size 1) and no scale: every element is stored
 * on its own.
 *
 *   F32   IEEE binary32, 4 bytes little-endian, copied as is.
 *   F16   IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
 *         Reading is exact; writing rounds to nearest even, makes subnormals,
 *         overflows to infinity and turns any NaN into the quiet NaN 0x7e00.
 *   BF16  the upper 16 bits of a binary32: 1 sign, 8 exponent, 7 mantissa.
 *         Reading is exact; writing rounds to nearest even and keeps a NaN a
 *         NaN by setting the top mantissa bit (bit 6) rather than rounding it,
 *         which could carry a NaN's payload into infinity. Subnormals are
 *         rounded like any other value, not flushed (current ggml and gguf-py
 *         agree; ggml before mid-2024 flushed them to signed zero).
 *
 * The conversions themselves live in core/fp16.h so every format shares them.
 *
 * The dot products multiply in fp32 and accumulate in one fp32 sum, in
 * element order. A product of two F16 or two BF16 values is exact in fp32
 * (11+11 and 8+8 significant bits fit in 24), so only the sum rounds.
 * ggml's scalar fallback accumulates these products in double instead, and
 * its SIMD paths use several fp32 lanes; neither is reproduced bit for bit.
 */
#include "quant/formats.h"

#include "core/fp16.h"

/* ---- F32 ------------------------------------------------------------------ */

void nib_dequantize_f32(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void nib_quantize_f32(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

float nib_vec_dot_f32_f32(int64_t n, const void *w, const void *a) {
    const float *x = (const float *)w;
    const float *y = (const float *)a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += x[i] * y[i];
    return sum;
}

/* ---- F16 ------------------------------------------------------------------ */

void nib_dequantize_f16(const void *src, float *dst, int64_t n) {
    const nib_fp16 *h = (const nib_fp16 *)src;
    for (int64_t i = 0; i < n; i++) dst[i] = nib_fp16_to_f32(h[i]);
}

void nib_quantize_f16(const float *src, void *dst, int64_t n) {
    nib_fp16 *h = (nib_fp16 *)dst;
    for (int64_t i = 0; i < n; i++) h[i] = nib_f32_to_fp16(src[i]);
}

float nib_vec_dot_f16_f16(int64_t n, const void *w, const void *a) {
    const nib_fp16 *x = (const nib_fp16 *)w;
    const nib_fp16 *y = (const nib_fp16 *)a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += nib_fp16_to_f32(x[i]) * nib_fp16_to_f32(y[i]);
    return sum;
}

/* ---- BF16 ----------------------------------------------------------------- */

void nib_dequantize_bf16(const void *src, float *dst, int64_t n) {
    const nib_bf16 *h = (const nib_bf16 *)src;
    for (int64_t i = 0; i < n; i++) dst[i] = nib_bf16_to_f32(h[i]);
}

void nib_quantize_bf16(const float *src, void *dst, int64_t n) {
    nib_bf16 *h = (nib_bf16 *)dst;
    for (int64_t i = 0; i < n; i++) h[i] = nib_f32_to_bf16(src[i]);
}

float nib_vec_dot_bf16_bf16(int64_t n, const void *w, const void *a) {
    const nib_bf16 *x = (const nib_bf16 *)w;
    const nib_bf16 *y = (const nib_bf16 *)a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += nib_bf16_to_f32(x[i]) * nib_bf16_to_f32(y[i]);
    return sum;
}
