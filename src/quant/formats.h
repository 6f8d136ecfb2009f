/* The format library: scalar reference kernels of every ggml type.
 *
 * Every function here is the definition of its format's numbers; SIMD and CUDA
 * kernels are tested against them. Conventions, the same for every format:
 *
 *   nib_dequantize_X(src, dst, n)   n elements (a multiple of the block size)
 *                                   from blocks at src into floats at dst.
 *   nib_quantize_X(src, dst, n)     n floats into blocks (reference quantizer,
 *                                   no importance matrix).
 *   nib_vec_dot_X_Y(n, w, a)        dot product of a weight row of n elements
 *                                   in format X with an activation row already
 *                                   quantized to format Y (Q8_0, Q8_1 or Q8_K),
 *                                   as ggml pairs them. Integer sums per block
 *                                   are exact; blocks are combined in fp32.
 *
 * The table in types.c ties these to the type enum; add a format there.
 */
#ifndef NIB_QUANT_FORMATS_H
#define NIB_QUANT_FORMATS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"

#define NIB_DECLARE_FORMAT(x)                                           \
    void nib_dequantize_##x(const void *src, float *dst, int64_t n);    \
    void nib_quantize_##x(const float *src, void *dst, int64_t n);

/* plain floats (vec_dot pairs each with itself) */
NIB_DECLARE_FORMAT(f32)
NIB_DECLARE_FORMAT(f16)
NIB_DECLARE_FORMAT(bf16)
float nib_vec_dot_f32_f32(int64_t n, const void *w, const void *a);
float nib_vec_dot_f16_f16(int64_t n, const void *w, const void *a);
float nib_vec_dot_bf16_bf16(int64_t n, const void *w, const void *a);

/* legacy 32-element formats (q_legacy.c) */
NIB_DECLARE_FORMAT(q4_0)
NIB_DECLARE_FORMAT(q4_1)
NIB_DECLARE_FORMAT(q5_0)
NIB_DECLARE_FORMAT(q5_1)
NIB_DECLARE_FORMAT(q8_0)
NIB_DECLARE_FORMAT(q8_1)
float nib_vec_dot_q4_0_q8_0(int64_t n, const void *w, const void *a);
float nib_vec_dot_q4_1_q8_1(int64_t n, const void *w, const void *a);
float nib_vec_dot_q5_0_q8_0(int64_t n, const void *w, const void *a);
float nib_vec_dot_q5_1_q8_1(int64_t n, const void *w, const void *a);
float nib_vec_dot_q8_0_q8_0(int64_t n, const void *w, const void *a);
float nib_vec_dot_q8_1_q8_1(int64_t n, const void *w, const void *a);  /* activation format as weight */

/* K-quants (q_k.c) */
NIB_DECLARE_FORMAT(q2_K)
NIB_DECLARE_FORMAT(q3_K)
NIB_DECLARE_FORMAT(q4_K)
NIB_DECLARE_FORMAT(q5_K)
NIB_DECLARE_FORMAT(q6_K)
NIB_DECLARE_FORMAT(q8_K)
float nib_vec_dot_q2_K_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_q3_K_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_q4_K_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_q5_K_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_q6_K_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_q8_K_q8_K(int64_t n, const void *w, const void *a);  /* activation format as weight */

/* IQ formats (q_iq.c). The IQ1/IQ2/IQ3 quantizers need an importance matrix and
 * grid search tables; they are not implemented yet (nib_quantize_* absent). */
void nib_dequantize_iq2_xxs(const void *src, float *dst, int64_t n);
void nib_dequantize_iq2_xs(const void *src, float *dst, int64_t n);
void nib_dequantize_iq2_s(const void *src, float *dst, int64_t n);
void nib_dequantize_iq3_xxs(const void *src, float *dst, int64_t n);
void nib_dequantize_iq3_s(const void *src, float *dst, int64_t n);
void nib_dequantize_iq1_s(const void *src, float *dst, int64_t n);
void nib_dequantize_iq1_m(const void *src, float *dst, int64_t n);
NIB_DECLARE_FORMAT(iq4_nl)
NIB_DECLARE_FORMAT(iq4_xs)
/* the 16 levels of a 4-bit IQ4 quant (ggml's kvalues_iq4nl): q stands for d * nib_iq4_levels[q] */
extern const int8_t nib_iq4_levels[16];
float nib_vec_dot_iq2_xxs_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_iq2_xs_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_iq2_s_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_iq3_xxs_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_iq3_s_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_iq1_s_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_iq1_m_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_iq4_nl_q8_0(int64_t n, const void *w, const void *a);
float nib_vec_dot_iq4_xs_q8_K(int64_t n, const void *w, const void *a);

/* ternary (q_ternary.c) and microscaling FP4 (q_mxfp4.c) */
NIB_DECLARE_FORMAT(tq1_0)
NIB_DECLARE_FORMAT(tq2_0)
NIB_DECLARE_FORMAT(mxfp4)
float nib_vec_dot_tq1_0_q8_K(int64_t n, const void *w, const void *a);
float nib_vec_dot_tq2_0_q8_K(int64_t n, const void *w, const void *a);
/* n_blocks TQ1_0 blocks as TQ2_0 blocks holding the same values (q_ternary.c) */
void nib_tq1_0_to_tq2_0(const void *src, void *dst, int64_t n_blocks);
float nib_vec_dot_mxfp4_q8_0(int64_t n, const void *w, const void *a);
/* MXFP4's E2M1 values doubled, by 4-bit code, and half the E8M0 block scale
 * 2^(e - 128) that goes with them: a code q stands for
 * nib_mxfp4_half_scale(e) * nib_mxfp4_levels[q] */
extern const int8_t nib_mxfp4_levels[16];
static inline float nib_mxfp4_half_scale(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* ggml's nearest_int(): adding 1.5*2^23 makes the fp32 adder round to the
 * nearest integer, ties to even, for |f| < 2^22. The K-quant and IQ quantizers
 * are defined with this rounding; the legacy ones use roundf() or truncation
 * of x + 0.5 (each quantizer says which). */
static inline int nib_nearest_int(float f) {
    float v = f + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

#endif
