/* The CPU's element-wise ops and attention for the forward step: scalar
 * reference code, written to be read (the matrix products, where the time
 * goes, live in cpu/). Shapes are given in the comments as (rows, cols). */
#ifndef NIB_OPS_H
#define NIB_OPS_H

#include <stdint.h>

#include "core/fp16.h"

/* y = x / rms(x) * w over n elements (y may be x). w NULL: no weight. */
void nib_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps);

/* Rotary embedding of one head vector x (head_dim floats) at position pos:
 * the first n_rot dimensions rotate, the rest pass through. neox: pairs
 * (i, i + n_rot/2), else adjacent pairs (2i, 2i+1). theta_i = pos / scale *
 * base^(-2i/n_rot) / freq_factors[i] (freq_factors may be NULL). */
typedef struct nib_rope {
    int32_t n_rot;
    int neox;
    float base;
    float scale;
    const float *freq_factors;
} nib_rope;
void nib_rope_apply(float *x, int64_t pos, const nib_rope *r);

/* gate = act(gate) * up over n elements. */
void nib_swiglu(float *gate, const float *up, int64_t n);
void nib_geglu_tanh(float *gate, const float *up, int64_t n);

/* Attention of one query head over a KV cache range:
 *   out = softmax(scale * q . K[j] for j in [j0, j1)) . V[j]
 * K and V rows are strided (kv_stride elements between positions) and stored
 * in fp16 or fp32 (kv_f16). scores: scratch of (j1 - j0) floats. */
void nib_attention_head(float *out, const float *q, const void *k, const void *v, int64_t kv_stride, int kv_f16,
                        int32_t hd_k, int32_t hd_v, int64_t j0, int64_t j1, float scale, float *scores);

#endif
