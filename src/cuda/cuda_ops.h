/* The CUDA backend's small ops of the forward step, and the stream/graph
 * plumbing the step runs on. Plain C, like cuda.h; cuda_stub.c answers them
 * in a build without nvcc.
 *
 * Every op takes device pointers and a stream, neither allocates nor
 * synchronises, and reads the position from device memory where it needs
 * one, so a captured decode step replays at the next position unchanged.
 * Each mirrors the CPU reference in src/ops/ (named per op) in its
 * arithmetic, so CPU and GPU differ by summation order only. */
#ifndef NIB_CUDA_OPS_H
#define NIB_CUDA_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nib.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- residual add + RMSNorm + activation quantization (one kernel) -------------
 * For each of n_tok rows of n:
 *   if o:  x += post_w ? rmsnorm(o) * post_w : o     (the sub-block's residual add)
 *   xn = rmsnorm(x) * norm_w; act = xn quantized for the next matmuls
 * rmsnorm as ops.c's nib_rmsnorm: sum of squares in double, then
 * y = x * (float)(1 / sqrt(ss / n + eps)) * w. act: NULL, or the layout of
 * nib_cuda_act_quantize (n % 32 == 0). With defer (one token, no o), act
 * holds rmsnorm's x * w quantized and the sum of squares, and the GEMVs that
 * read it apply 1 / rms to their dots: one kernel spread over the row instead
 * of a block that reduces the whole row before it can write. */
typedef struct nib_cuda_norm_args {
    float *x;             /* (n_tok, n) residual stream, updated when o is set */
    const float *o;       /* (n_tok, n) sub-block output to add first, or NULL */
    const float *post_w;  /* (n) or NULL: RMSNorm o before adding (Gemma's sandwich norms) */
    const float *norm_w;  /* (n) */
    float *xn;            /* (n_tok, n) */
    void *act;            /* nib_cuda_act_bytes(n, n_tok) bytes, or NULL */
    int n_tok, n;
    float eps;
    bool defer;           /* one token: write only act, its 1/rms left for the GEMVs that read it (xn is not
                             written: only for rows whose every reader is a dp4a GEMV); with o, only with
                             post_w and n <= NIB_CUDA_POST_DEFER_MAX_N */
} nib_cuda_norm_args;
#define NIB_CUDA_POST_DEFER_MAX_N 6144
nib_status nib_cuda_add_norm(const nib_cuda_norm_args *a, void *stream, nib_error *err);

/* ---- after the Q/K/V projections (one kernel) --------------------------------------
 * Per token t (position p = *pos + t) and head: add the bias, RMSNorm per head
 * (QK-norm) when a weight is given, rotate the first n_rot dimensions (as
 * ops.c's nib_rope_table in double, then nib_rope_apply_table), and store K and
 * V as f16 into the cache row p. q is rotated in place (f32). */
typedef struct nib_cuda_qkv_args {
    float *q;                        /* (n_tok, n_head, hd_k) */
    const float *k, *v;              /* (n_tok, n_head_kv, hd_k), (n_tok, n_head_kv, hd_v) */
    int q_stride, k_stride, v_stride;/* floats between tokens; 0 = packed. A fused QKV projection leaves
                                        q, k, v interleaved per token: q = y, k = y + n_q, v = y + n_q + n_k
                                        with stride n_q + n_k + n_v */
    float *q_out;                    /* where the rotated q goes, packed (n_tok, n_head, hd_k); NULL = in place */
    const float *bq, *bk, *bv;       /* biases or NULL */
    const float *q_norm, *k_norm;    /* (hd_k) or NULL */
    float eps;
    uint16_t *k_cache, *v_cache;     /* this layer's (n_ctx, n_head_kv, hd) f16 */
    const int32_t *pos;              /* device: position of token 0 */
    int n_tok, n_head, n_head_kv, hd_k, hd_v, n_rot;
    bool neox;                       /* pairs (i, i + n_rot/2) instead of (2i, 2i+1) */
    float rope_base, rope_scale;     /* positions are divided by rope_scale */
    const float *rope_freqs;         /* (n_rot/2) divisors of the frequencies, or NULL */
    const double *inv_freq;          /* (n_rot/2) base^(-2i/n_rot) / rope_freqs[i] computed on the host, or NULL
                                        (then computed here from rope_base and rope_freqs) */
    /* nib_cuda_matmul_qkv_rope only: the attention's deferred RMSNorm of the
     * row norm_x (n_in floats, weight norm_w) done in the kernel, instead of
     * reading act (then not read); NULL: act as nib_cuda_add_norm left it */
    const float *norm_x, *norm_w;
    float norm_eps;
} nib_cuda_qkv_args;
nib_status nib_cuda_qkv_rope(const nib_cuda_qkv_args *a, void *stream, nib_error *err);

/* One token's fused Q/K/V projection with the above in its epilogue: what
 * nib_cuda_matmul(w, act) into a fused output and nib_cuda_qkv_rope on it
 * leave (rotated Q in a->q_out, K and V in the cache row *pos), the same
 * bits, in one kernel: the step loses qkv_rope. w is the fused matrix (the
 * rows of Q, K, V) and wv NULL, or w the fused Q/K and wv the V that
 * nib_cuda_weight_tile_qkv_pair tiled beside it (one launch for both); act
 * their quantized input, or with a->norm_x the row whose deferred norm the
 * kernel does itself (the quants of nib_cuda_add_norm's deferred activation,
 * its row scale to an ulp: the step loses that kernel too); a->q, k, v and
 * their strides are not
 * read. Only where nib_cuda_matmul_qkv_rope_ok(w, wv, a): tiled matrices
 * whose row groups are whole RoPE pairs, one token, adjacent pairs (not
 * neox), no bias or QK-norm, a host table of frequencies (inv_freq), q_out
 * set; with norm_x, rows of 1024 to 4096 (a multiple of 1024) and formats
 * with that instance. */
struct nib_cuda_weight;
bool nib_cuda_matmul_qkv_rope_ok(const struct nib_cuda_weight *w, const struct nib_cuda_weight *wv,
                                 const nib_cuda_qkv_args *a);
nib_status nib_cuda_matmul_qkv_rope(const struct nib_cuda_weight *w, const struct nib_cuda_weight *wv, const void *act,
                                    const nib_cuda_qkv_args *a, void *stream, nib_error *err);

/* ---- the end of the step --------------------------------------------------------- */
/* x = c * tanh(x / c) over n floats (final logit softcap). */
nib_status nib_cuda_softcap(float *x, int64_t n, float c, void *stream, nib_error *err);
/* *out = the key of the largest of n floats, as nib_cuda_matmul_argmax leaves
 * it: the index is 0xFFFFFFFF - (uint32_t)*out (lowest index on ties, NaN
 * never wins; 0 when all are NaN). */
nib_status nib_cuda_argmax(const float *x, int64_t n, uint64_t *out, void *stream, nib_error *err);

/* ---- streams, graphs, pinned memory ---------------------------------------------- */
void *nib_cuda_stream_new(nib_error *err);
void nib_cuda_stream_free(void *stream);
nib_status nib_cuda_stream_sync(void *stream, nib_error *err);
nib_status nib_cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream, nib_error *err);
void *nib_cuda_host_alloc(size_t bytes, nib_error *err);  /* pinned: copies from it can be captured */
void nib_cuda_host_free(void *p);
/* Capture everything issued on stream between begin and end into a graph
 * (instantiated, ready to launch). */
nib_status nib_cuda_graph_begin(void *stream, nib_error *err);
nib_status nib_cuda_graph_end(void *stream, void **graph, nib_error *err);
nib_status nib_cuda_graph_launch(void *graph, void *stream, nib_error *err);
void nib_cuda_graph_free(void *graph);

#ifdef __cplusplus
}
#endif

#endif
