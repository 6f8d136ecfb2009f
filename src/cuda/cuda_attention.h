/* CUDA decode attention: softmax(q K^T) V for the tokens of one step against
 * one layer's f16 KV cache, as split-K "flash decoding".
 *
 * Plain C, like cuda.h: attention.cu implements it, cuda_stub.c answers "not
 * compiled" in a build without nvcc.
 *
 * Usage (one layer, one decode step; everything device-side):
 *
 *     size_t sb = nib_cuda_attention_scratch_bytes(1, n_head, hd_v, max_len);   // at load
 *     void *scratch = sb ? nib_cuda_alloc(sb, &err) : NULL;                     // at load
 *     if (scratch) {                                 // at load, once: zero it (the merge counters)
 *         nib_cuda_fill_f32((float *)scratch, 0.0f, sb / sizeof(float), &err);
 *         nib_cuda_sync(&err);                       // fill runs on the legacy stream
 *     }
 *     nib_cuda_attn a = {q, k_cache, v_cache, out, pos_dev, 1, n_head, n_head_kv, hd, hd,
 *                        n_ctx, 0, 1.0f / sqrtf(hd), 0.0f, NULL, max_len, scratch, NULL};
 *     nib_cuda_attention(&a, stream, &err);                                     // per token
 *
 * The position is read on the device (*pos), never on the host, and the call
 * neither allocates nor synchronises: a CUDA graph captured once per max_len
 * bucket replays at every position <= max_len - n_tok with only *pos changed.
 *
 * A position the host bound does not cover (*pos + n_tok > max_len, or
 * *pos < 0) cannot be reported from the device without a sync, so those
 * tokens' outputs are written as NaN: loud, never a silent truncation.
 *
 * Arithmetic: scores, softmax and the weighted sum of V in fp32 (exp2 with
 * log2(e) folded in); K/V are read as IEEE f16 and widened exactly.
 */
#ifndef NIB_CUDA_ATTENTION_H
#define NIB_CUDA_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "nib.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nib_cuda_attn {
    const float *q;         /* (n_tok, n_head, hd_k) device, f32, RoPE already applied, not scaled */
    const uint16_t *k;      /* this layer's K cache, IEEE f16 bits: (n_ctx, n_head_kv, hd_k) */
    const uint16_t *v;      /* this layer's V cache: (n_ctx, n_head_kv, hd_v) */
    float *out;             /* (n_tok, n_head, hd_v) device */
    const int32_t *pos;     /* device int: position of token 0 of this batch. Token t sits at p = *pos + t and
                               attends to cache rows [j0, p] with j0 = window > 0 ? max(0, p - window + 1) : 0.
                               Its K/V rows are already in the cache when this runs. Read on the device so a
                               captured CUDA graph replays at a new position without any update. */
    int n_tok, n_head, n_head_kv, hd_k, hd_v;  /* n_head % n_head_kv == 0 (GQA), hd_k, hd_v in {64,..,512} multiples of 32 (test 64,128,256,512) */
    int n_ctx;              /* cache capacity (rows) */
    int window;             /* sliding window in positions, 0 = attend to all */
    float scale;            /* multiplies q.k (usually 1/sqrt(hd_k)) */
    float softcap;          /* 0 = off; else score = softcap * tanh(score / softcap) after scaling */
    const float *sinks;     /* NULL, or (n_head) device: a learned logit per head that joins the softmax
                               denominator only (contributes exp(sink - max) to the sum, no value) */
    int max_len;            /* host-known upper bound on *pos + n_tok (e.g. a context bucket); it fixes the
                               split-K grid, so one captured graph serves every length <= max_len */
    void *scratch;          /* nib_cuda_attention_scratch_bytes(...) bytes of device memory, zeroed once at
                               allocation (see below); NULL allowed when max_len <= 32 */
    void *act_out;          /* NULL, or nib_cuda_act_bytes(n_head * hd_v, n_tok) bytes of device memory that
                               get out quantized as nib_cuda_act_quantize(out) would leave them, bit for bit
                               (by the attention kernels themselves where a CTA writes few dims: one kernel
                               fewer before a quantized output projection; else by that kernel after them) */
} nib_cuda_attn;

/* Device scratch for the split-K partials: 4 KB of merge counters (uint32),
 * then (token, head, split) pairs (m, l) and rows of hd_v floats; the number
 * of splits is picked per call from max_len and the shapes (chunks of 32 to
 * 256 rows). The size returned covers every call with n_tok' <= n_tok, the
 * same n_head and hd_v, and max_len' <= max_len, so one allocation sized for
 * the largest batch and bucket serves every step and every layer on one
 * stream.
 *
 * The scratch must be zeroed once after allocation (at least its first 4096
 * bytes; zeroing all of it, as in the usage above, is simplest): the kernels
 * keep an arrival counter per (token, KV-head slice) there that the last
 * arriving chunk resets to 0, so it is 0 again after every call and every
 * graph replay. Scratch is not shared between calls that can run at the same
 * time (two streams need two scratches).
 *
 * 0 when max_len <= 32 (always one split: no partials, scratch may be NULL)
 * or when an argument is < 1; SIZE_MAX if the size overflows (so the
 * allocation fails loudly). */
size_t nib_cuda_attention_scratch_bytes(int n_tok, int n_head, int hd_v, int max_len);

/* out = softmax(scale * q K^T (softcapped, windowed, causal) [+ sink]) V on
 * `stream` (a cudaStream_t; NULL is the default stream). Validates every
 * field (NULL pointers, head counts, head dims, max_len > n_ctx, n_tok < 1,
 * 16-byte alignment of q, k, v, out, scratch) with NIB_ERR_ARG naming the
 * problem; launch errors name the kernel and the shape. q, k, v, out must not
 * overlap scratch. */
nib_status nib_cuda_attention(const nib_cuda_attn *a, void *stream /* cudaStream_t */, nib_error *err);

#ifdef __cplusplus
}
#endif

#endif
