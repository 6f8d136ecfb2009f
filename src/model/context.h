/* An inference context: a KV cache, the compute buffers (sized once, here),
 * the thread pool, and the forward step over a batch of tokens. */
#ifndef NIB_MODEL_CONTEXT_H
#define NIB_MODEL_CONTEXT_H

#include "cpu/cpu.h"
#include "model/model.h"

typedef enum nib_device {
    NIB_DEVICE_CPU = 0,
    NIB_DEVICE_CUDA,   /* the whole step on the first CUDA GPU (context_cuda.c) */
} nib_device;

typedef struct nib_ctx_params {
    int32_t n_ctx;     /* KV cache positions; 0 = min(model's training context, 4096) */
    int32_t n_batch;   /* most tokens one forward step takes (prompt chunks); 0 = 256 */
    int n_threads;     /* <= 0: one per CPU */
    bool kv_f32;       /* KV cache in fp32 instead of fp16 (CPU only) */
    nib_device device;
} nib_ctx_params;

typedef struct nib_ctx nib_ctx;

nib_ctx *nib_ctx_new(const nib_model *m, const nib_ctx_params *p, nib_error *err);
void nib_ctx_free(nib_ctx *c);

int32_t nib_ctx_n_ctx(const nib_ctx *c);
int nib_ctx_n_threads(const nib_ctx *c);
int32_t nib_ctx_pos(const nib_ctx *c);           /* tokens in the cache */
void nib_ctx_truncate(nib_ctx *c, int32_t pos);  /* forget positions >= pos */
uint64_t nib_ctx_kv_bytes(const nib_ctx *c);

/* Run tokens (any count; split into batches of n_batch) at the next positions.
 * all_logits: NULL, or room for n * n_vocab floats to receive every
 * position's logits. The last position's logits are always kept. A batch that
 * would pass the end of the context is an error naming both numbers. */
nib_status nib_ctx_decode(nib_ctx *c, const int32_t *tokens, int64_t n, float *all_logits, nib_error *err);
const float *nib_ctx_logits(nib_ctx *c);   /* (n_vocab) of the last token decoded (copied from the GPU on demand) */
/* The greedy pick of the last token decoded (first maximum of its logits):
 * on the GPU computed there, with no logits copy. -1 before any decode. */
int32_t nib_ctx_argmax(nib_ctx *c);
/* Sampling on the device (CUDA): the next nib_ctx_decode also samples its
 * last position there, with nib_sampler_params' temperature, top-k, top-p
 * and min-p (the chain nib_sampler_device_ok accepts) and the uniform u the
 * host sampler would have drawn (nib_sampler_next_uniform); then
 * nib_ctx_sampled() gives the id, with no logits copied. false on the CPU
 * (sample on the host from nib_ctx_logits). */
bool nib_ctx_sample_next(nib_ctx *c, float temp, int32_t top_k, float top_p, float min_p, double u);
int32_t nib_ctx_sampled(const nib_ctx *c);  /* -1 unless the last decode sampled on the device */
nib_device nib_ctx_device(const nib_ctx *c);
uint64_t nib_ctx_device_bytes(const nib_ctx *c);
/* Host bytes of the matrices repacked for the CPU kernels (cpu/repack.h) and
 * their count (n_matrices may be NULL); 0 on the GPU or with NIB_REPACK=0. */
uint64_t nib_ctx_repacked_bytes(const nib_ctx *c, int *n_matrices);
/* Why a mixture of experts' experts were left in the file's layout (too
 * large for the memory available), or NULL. */
const char *nib_ctx_experts_note(const nib_ctx *c);  /* GPU memory in use; 0 on the CPU */
/* On the GPU, how prompt chunks run (the GEMM, or why the batched GEMV); NULL on the CPU */
const char *nib_ctx_prompt_path(const nib_ctx *c);

#endif
