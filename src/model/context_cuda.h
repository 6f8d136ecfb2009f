/* The forward step on a CUDA GPU: the model's weights on the device, a f16
 * KV cache there, and one decode step captured as a CUDA graph per context
 * bucket. nib_ctx (context.c) owns one of these when asked for the CUDA
 * device and routes its decode/logits calls here. */
#ifndef NIB_MODEL_CONTEXT_CUDA_H
#define NIB_MODEL_CONTEXT_CUDA_H

#include "model/model.h"

typedef struct nib_gpu nib_gpu;

/* Uploads every weight once, allocates the cache and all buffers for n_batch
 * tokens per step; a model that does not fit says how many bytes it needs and
 * how many are free. Tensors whose format has no CUDA kernel are named in the
 * error (nothing runs silently on the host). */
nib_gpu *nib_gpu_new(const nib_model *m, int32_t n_ctx, int32_t n_batch, nib_error *err);
void nib_gpu_free(nib_gpu *g);

/* Sampling on the device: nib_sampler_params' meaning, the chain
 * nib_sampler_device_ok accepts, and the uniform the host sampler would
 * have drawn for this token. */
typedef struct nib_gpu_sampling {
    float temp;
    int32_t top_k;
    float top_p, min_p;
    double u;
} nib_gpu_sampling;

/* Runs n tokens (n <= n_batch) at positions pos.. . all_logits: NULL or room
 * for n * n_vocab floats. Afterwards the greedy id of the last position (or,
 * with smp, its id sampled on the device) is known (nib_gpu_argmax) without
 * copying any logits. */
nib_status nib_gpu_decode(nib_gpu *g, const int32_t *tokens, int64_t n, int32_t pos, float *all_logits,
                          const nib_gpu_sampling *smp, nib_error *err);
int32_t nib_gpu_argmax(const nib_gpu *g);
/* Copies the last position's logits to the host (n_vocab floats). */
nib_status nib_gpu_logits(nib_gpu *g, float *out, nib_error *err);
uint64_t nib_gpu_device_bytes(const nib_gpu *g);  /* everything allocated on the device */
/* How prompt chunks run: the GEMM's name, or why they keep the batched GEMV. */
const char *nib_gpu_prompt_path(const nib_gpu *g);

#endif
