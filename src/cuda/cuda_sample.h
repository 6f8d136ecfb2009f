/* Token sampling on the GPU: the CPU sampler's temperature / top-k / top-p /
 * min-p chain (src/sampler/sampler.c, nib_sampler_sample_u) run where the
 * logits are, so a decode step picks its token without copying n_vocab
 * floats to the host.
 *
 * Plain C, like cuda.h: sample.cu implements it, cuda_stub.c answers "not
 * compiled" in a build without nvcc.
 *
 * Usage (everything device-side but the sizes):
 *
 *     size_t sb = nib_cuda_sample_scratch_bytes(n_vocab, NIB_CUDA_SAMPLE_MAX_K);  // at load
 *     void *scratch = nib_cuda_alloc(sb, &err);                                   // at load
 *     // per token: the host writes params and u (pinned staging + a captured copy, say)
 *     nib_cuda_sample(logits, n_vocab, params_dev, u_dev, scratch, NIB_CUDA_SAMPLE_MAX_K,
 *                     id_dev, stream, &err);
 *
 * The parameters and the uniform are read from device memory when the
 * kernels run, never on the host, and the call neither allocates nor
 * synchronises: a CUDA graph captured once replays with new values.
 *
 * What it computes, with k = top_k (top_k_max when top_k < 1 or > top_k_max;
 * at most n_vocab):
 *   candidates sorted by (logit desc, id asc), the k first kept (NaN logits
 *   are never kept; -inf ones are, with weight 0, when fewer than k others
 *   exist); over them p_i = expf(l_i - l_0); top-p (top_p < 1) keeps up to
 *   the first i whose cumulative p_i / sum(p) >= top_p; min-p (min_p > 0)
 *   keeps while p_i >= min_p * p_0; w_i = expf((l_i - l_0) / temp); the pick
 *   is the first i with u * sum(w) < w_0 + .. + w_i, else the last kept.
 *   temp <= 0 picks the first maximum (greedy). Sums are in double; only
 *   their order differs from the CPU's, and exp is (float)exp((double)x),
 *   the correctly rounded expf the CPU's glibc expf agrees with but for
 *   about 1 value in 1600 (by 1 ulp, measured over [-60, 0]): see
 *   tests/gpu/test_gpu_sample.c for what that allows.
 * The repetition penalty is not here (nib_sampler_device_ok says when the
 * CPU sampler's chain fits). */
#ifndef NIB_CUDA_SAMPLE_H
#define NIB_CUDA_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "nib.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest top_k_max (equal to the sampler's NIB_SAMPLE_MAX_K). */
#define NIB_CUDA_SAMPLE_MAX_K 1024

/* In device memory; the fields mean what nib_sampler_params' do. */
typedef struct nib_cuda_sample_params {
    float temp;     /* <= 0: greedy */
    int32_t top_k;  /* < 1 (off) or > top_k_max: top_k_max */
    float top_p;    /* >= 1: off */
    float min_p;    /* <= 0: off */
} nib_cuda_sample_params;

/* Device scratch bytes for nib_cuda_sample over n_vocab logits with
 * top_k_max (1..NIB_CUDA_SAMPLE_MAX_K); the two must be those of the calls
 * that use it (they fix the launch grid). 0 on bad arguments. */
size_t nib_cuda_sample_scratch_bytes(int n_vocab, int top_k_max);

/* Samples one token from logits (n_vocab floats, device) on `stream` (a
 * cudaStream_t; NULL is the default stream): *out_id (device int32) gets
 * the pick. params_dev and u_dev (a uniform in [0, 1), the one
 * nib_sampler_next_uniform gives) are device pointers read at run time.
 * scratch: nib_cuda_sample_scratch_bytes(n_vocab, top_k_max) bytes of
 * device memory, 8-byte aligned, not shared with a call that can run at the
 * same time. top_k_max is the host-known bound on the runtime top_k; a
 * smaller bound makes the call cheaper (see sample.cu). Two kernels, both
 * launched with programmatic dependent launch. */
nib_status nib_cuda_sample(const float *logits, int n_vocab, const nib_cuda_sample_params *params_dev,
                           const double *u_dev, void *scratch, int top_k_max, int32_t *out_id,
                           void *stream /* cudaStream_t */, nib_error *err);

#ifdef __cplusplus
}
#endif

#endif
