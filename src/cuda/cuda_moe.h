/* Mixture-of-experts FFN pieces on the GPU (Mixtral, Qwen3-MoE), as the CPU's
 * model/ffn_moe.c computes them, for a step of n_tok tokens with k experts
 * each (n_tok * k "slots", slot s = token s / k, its (s % k)-th choice):
 *
 *   nib_cuda_moe_route    the router's logits -> per token the k chosen
 *                         experts (largest softmax probability first, the
 *                         first index among equals) and their weights
 *                         (the probabilities, divided by their sum when norm)
 *   nib_cuda_moe_matmul   y[s] = W[ids[s]] x[s / act_div]: one launch for all
 *                         slots, each block reading its expert's index from
 *                         device memory (so a captured step replays with the
 *                         router's new choices), on the plain GEMV kernel of
 *                         the experts' format
 *   nib_cuda_glu_rows     h = act(g) * u elementwise
 *   nib_cuda_moe_combine  dst[t] (+)= sum_j w[t k + j] * y[t k + j], in choice
 *                         order
 *
 * Nothing allocates or synchronises: the decode step captures them.
 * Experts: the 3-D tensor (n_in, rows, n_expert) uploaded as one matrix of
 * n_expert * rows rows (nib_cuda_weight_upload), expert e's rows the e-th
 * block of `rows`. */
#ifndef NIB_CUDA_MOE_H
#define NIB_CUDA_MOE_H

#include "cuda/cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NIB_CUDA_MOE_MAX_K 32 /* experts a token at most: one lane of a warp holds each choice */

/* Does this build have an expert kernel for the format? */
bool nib_cuda_moe_has(nib_type type);

/* logits (n_tok, n_expert) -> ids and w (n_tok, k). n_expert <= 512,
 * 1 <= k <= min(n_expert, NIB_CUDA_MOE_MAX_K). */
nib_status nib_cuda_moe_route(const float *logits, int n_tok, int n_expert, int k, bool norm, int32_t *ids, float *w,
                              void *stream, nib_error *err);

/* y (n_slots, rows) = the experts' products; act holds n_slots / act_div
 * quantized rows of experts->n_in (nib_cuda_act_quantize), ids n_slots
 * indices below n_expert (the router's; not checked on the device). */
nib_status nib_cuda_moe_matmul(const nib_cuda_weight *experts, int n_expert, const int32_t *ids, int n_slots,
                               int act_div, const void *act, float *y, void *stream, nib_error *err);

nib_status nib_cuda_glu_rows(const float *g, const float *u, float *h, int64_t n, nib_cuda_glu glu, void *stream,
                             nib_error *err);

/* y (n_tok * k, n), w (n_tok, k) -> dst (n_tok, n): written, or added to when add */
nib_status nib_cuda_moe_combine(const float *y, const float *w, int n_tok, int k, int64_t n, float *dst, bool add,
                                void *stream, nib_error *err);

#ifdef __cplusplus
}
#endif

#endif
