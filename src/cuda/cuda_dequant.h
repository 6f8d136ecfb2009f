/* Device dequantization: rows of a weight matrix on the GPU to floats, for
 * the token embedding lookup (and anything else that needs weight rows as
 * f32 on the device: a tied output head's rows, a debug dump).
 *
 * Plain C, like cuda.h: the library's C code includes this, dequant.cu
 * implements it, and a build without nvcc answers from cuda_stub.c with
 * "CUDA not compiled into this build".
 *
 * Usage (embedding lookup of one decode step, inside a captured graph):
 *
 *     nib_cuda_weight *emb;                                        // at load, any type
 *     nib_cuda_weight_upload(NIB_TYPE_Q6_K, host, n_embd, n_vocab, &emb, &err);
 *     int32_t *ids_dev = nib_cuda_alloc(sizeof(int32_t) * n_max, &err);  // at load
 *     float *x_dev = nib_cuda_alloc(sizeof(float) * n_embd * n_max, &err);
 *     ...
 *     nib_cuda_copy_to_device(ids_dev, ids, ...);                  // per step, host-checked ids
 *     nib_cuda_get_rows(emb, ids_dev, n_tok, 1.0f, x_dev, stream, &err);
 *
 * Arithmetic: every element is formed with the same fp32 operations, in the
 * same order, as the format's scalar reference decoder in src/quant/ (the
 * kernels use __fmul_rn/__fadd_rn so nvcc cannot fuse a multiply and an add
 * that the reference rounds separately), then multiplied by `scale` in fp32.
 * So out is bit-identical to nib_dequantize_row(...) times scale on the CPU.
 */
#ifndef NIB_CUDA_DEQUANT_H
#define NIB_CUDA_DEQUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "cuda/cuda.h"
#include "nib.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Does this build have a device decoder for the type? F32, F16, BF16, the
 * legacy, K, IQ and ternary formats and MXFP4: every format of the table in
 * quant/types.c except the activation formats Q8_1 and Q8_K. */
bool nib_cuda_has_get_rows(nib_type type);

/* out[t * n_in + i] = scale * W[ids[t]][i] for t < n_tok and i < n_in.
 *
 * ids: n_tok int32 row indices in DEVICE memory, so a captured CUDA graph
 *      replays with new token ids written there. An id outside [0, n_out) is
 *      clamped into it (the host validates ids before they reach the device;
 *      the clamp only keeps a bad id from reading outside the weight).
 * out: n_tok * n_in floats in device memory, 16-byte aligned for the block
 *      formats (their kernels store float4s).
 *
 * On `stream` (a cudaStream_t; NULL is the default stream); no allocation, no
 * synchronisation. n_tok = 0 does nothing. NIB_ERR_UNSUPPORTED for a type
 * without a decoder, NIB_ERR_ARG for NULL pointers, a negative n_tok or a
 * misaligned out; a launch failure names the kernel, the format and the shape. */
nib_status nib_cuda_get_rows(const nib_cuda_weight *w, const int32_t *ids, int n_tok, float scale, float *out,
                             void *stream, nib_error *err);

#ifdef __cplusplus
}
#endif

#endif
