/* Prompt chunks as matrix products on tensor cores: a weight matrix is
 * decoded to fp16 on the device (the reference decoder's values, rounded)
 * into a scratch sized at load, the chunk's activations are rounded to fp16
 * beside it, and one cuBLAS GEMM with fp32 accumulation takes every token
 * row at once, writing fp32 (or adding to it: the residual). The batched
 * GEMV (nib_cuda_matmul with n_tok > 1) reads the weights once per 8 tokens
 * and does integer dots; from a few dozen tokens up this is several times
 * faster. Decode (one token) never comes here.
 *
 * cuBLAS is loaded at run time (dlopen of libcublas.so.13, or libcublas.so),
 * so a binary built with nvcc needs no cuBLAS to start and a machine
 * without it keeps the batched GEMV: nib_cuda_blas_new says why.
 *
 * Numbers: fp16 keeps 11 significant bits, as the TF32 inputs of a float
 * GEMM do; the GEMV instead quantizes activations to int8 per 32 values.
 * Both differ from the CPU's (Q8 activations, as llama.cpp's CPU backend)
 * by about the same order, and `nib verify` compares the GPU's tokens with
 * the CPU's. Activations beyond fp16's range (|x| > 65504) are saturated
 * there (llama.cpp's cuBLAS path converts them to fp16 the same way,
 * without the saturation).
 *
 * Usage (at load, then per prompt chunk):
 *
 *     char why[128];
 *     nib_cuda_blas *G = NULL;
 *     if (nib_cuda_blas_new(largest_matrix, widest_row * n_batch, &G, why, sizeof why, &err) != NIB_OK) ...
 *     if (!G) printf("prompt GEMM off: %s\n", why);              // the batched GEMV then
 *     if (G && nib_cuda_blas_takes(G, w)) nib_cuda_gemm(G, w, x, n_tok, y, false, stream, &err);
 */
#ifndef NIB_CUDA_GEMM_H
#define NIB_CUDA_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "cuda/cuda.h"
#include "nib.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nib_cuda_blas nib_cuda_blas;

/* Loads cuBLAS, makes its handle and workspace, and allocates the fp16
 * scratch for matrices of up to max_elems weights and chunks of up to
 * max_act activations (row length times tokens). *out NULL (and NIB_OK)
 * with the reason in why when cuBLAS cannot be used here or the scratch does
 * not fit: the caller keeps the batched GEMV. */
nib_status nib_cuda_blas_new(int64_t max_elems, int64_t max_act, nib_cuda_blas **out, char *why, size_t why_size,
                             nib_error *err);
void nib_cuda_blas_free(nib_cuda_blas *g);

/* Can cuBLAS be loaded here? true with the library's file name in what,
 * false with the reason (no device needed; `nib info` says it). */
bool nib_cuda_blas_probe(char *what, size_t what_size);

/* Can this matrix go through the GEMM (fits the scratch, has a decoder)?
 * (The chunk's tokens must fit max_act too; nib_cuda_gemm checks.) */
bool nib_cuda_blas_takes(const nib_cuda_blas *g, const nib_cuda_weight *w);

/* y[t][o] = sum_i W[o][i] x[t][i] for t < n_tok, o < n_out (+ y[t][o] with
 * add): x is n_tok rows of n_in floats, y n_tok rows of n_out, both device
 * memory, 16-byte aligned. On `stream`; no allocation, no synchronisation. */
nib_status nib_cuda_gemm(nib_cuda_blas *g, const nib_cuda_weight *w, const float *x, int n_tok, float *y, bool add,
                         void *stream, nib_error *err);

/* The gated feed-forward's first half: h = act(gate x) * (up x), with tmp
 * (n_tok rows of n_out floats) for the up product. */
nib_status nib_cuda_gemm_glu(nib_cuda_blas *g, const nib_cuda_weight *gate, const nib_cuda_weight *up, const float *x,
                             int n_tok, nib_cuda_glu glu, float *h, float *tmp, void *stream, nib_error *err);

/* What the GEMM runs on, for load messages and bench records. */
const char *nib_cuda_blas_name(void);

#ifdef __cplusplus
}
#endif

#endif
