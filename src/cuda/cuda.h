/* The CUDA backend: device probing, weights on the GPU, and the quantized
 * matrix-vector product (GEMV) of every format it has a kernel for, over one
 * token or a batch of token rows. The rest of the forward step's kernels are
 * in cuda_ops.h (norm, RoPE/KV store, logits, streams and graphs),
 * cuda_attention.h, cuda_dequant.h (embedding rows) and cuda_sample.h
 * (temperature/top-k/top-p/min-p on the device); model/context_cuda.c
 * strings them into a decode step.
 *
 * Plain C: the library's C code and the CLI include this; the .cu files
 * implement it. A build without nvcc compiles cuda_stub.c instead, whose every
 * function reports "CUDA not compiled into this build", so callers never need
 * an #ifdef.
 *
 * Usage (one weight matrix, one token):
 *
 *     char why[256];
 *     if (!nib_cuda_probe(why, sizeof why)) { use the CPU; print why; }
 *     nib_cuda_weight *w;
 *     nib_cuda_weight_upload(NIB_TYPE_Q4_K, host_rows, n_in, n_out, &w, &err);  // at load
 *     void *scratch = nib_cuda_alloc(nib_cuda_gemv_scratch_bytes(w), &err);     // at load
 *     nib_cuda_gemv(w, x_dev, y_dev, scratch, NULL, &err);                      // per token
 *
 * Layout: W is n_out rows of n_in elements in its format, rows contiguous
 * (a GGUF tensor of shape n_in x n_out); x is n_in floats and y n_out floats,
 * both in device memory: y[o] = dot(W[o], x).
 *
 * Arithmetic: the quantized formats quantize x once per call, on the GPU, to
 * 32-element int8 blocks with an fp32 scale d and the fp32 sum s = d * sum(q)
 * (ggml's Q8_1 idea, kept in fp32), and dot them with the weights' integer
 * levels through dp4a: the integer part of every sub-block is exact, the
 * scales are combined in fp32. F16/BF16 weights dot x as floats in fp32.
 */
#ifndef NIB_CUDA_H
#define NIB_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nib.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- probing ------------------------------------------------------------------
 * Never crashes and never exits: with no driver, no device, or only devices
 * older than the kernels were built for, it returns false with a one-line
 * reason, and the caller stays on the CPU. */
bool nib_cuda_compiled(void);                 /* false in a build without nvcc */
bool nib_cuda_probe(char *reason, size_t reason_size);

typedef struct nib_cuda_device_info {
    char name[128];
    int cc_major, cc_minor;   /* compute capability */
    int sm_count;             /* multiprocessors */
    size_t free_bytes, total_bytes;
    size_t l2_bytes;
} nib_cuda_device_info;

/* Number of devices (0 on any failure, reason filled). */
int nib_cuda_device_count(char *reason, size_t reason_size);
bool nib_cuda_device_get(int index, nib_cuda_device_info *info, char *reason, size_t reason_size);

/* ---- device memory ------------------------------------------------------------
 * Plain cudaMalloc'd buffers for activations and scratch, sized once at load.
 * An out-of-memory error says how many bytes were asked for and how many are
 * free. */
void *nib_cuda_alloc(size_t bytes, nib_error *err);
void nib_cuda_free(void *p);
nib_status nib_cuda_copy_to_device(void *dst, const void *src, size_t bytes, nib_error *err);
nib_status nib_cuda_copy_to_host(void *dst, const void *src, size_t bytes, nib_error *err);
nib_status nib_cuda_fill_f32(float *dst, float value, size_t n, nib_error *err);  /* e.g. NaN poison */
nib_status nib_cuda_sync(nib_error *err);

/* Device-to-device copy bandwidth in GB/s, counting bytes read plus written
 * (a 1 GiB cudaMemcpy, median of 10 after a warm-up): the ceiling a decode
 * step's weight reads are compared with. 0 on failure (err set). */
double nib_cuda_copy_bandwidth_gbs(nib_error *err);

/* ---- weights --------------------------------------------------------------------- */
typedef struct nib_cuda_weight nib_cuda_weight;

/* Copies n_out rows of n_in elements of type `type` from host memory into one
 * device allocation made now (the weights' only copy; the decode path never
 * allocates). NIB_ERR_UNSUPPORTED if the type has no GEMV kernel,
 * NIB_ERR_ARG if n_in is not whole blocks, NIB_ERR_NOMEM (with bytes needed
 * and free) if the device is full. */
nib_status nib_cuda_weight_upload(nib_type type, const void *host, int64_t n_in, int64_t n_out,
                                  nib_cuda_weight **out, nib_error *err);
void nib_cuda_weight_free(nib_cuda_weight *w);
/* Lays an uploaded matrix out for the tiled one-token GEMV (gemv_tiled.cuh)
 * where that layout has a kernel for its format and shape and measured
 * faster (21 formats, rows of whole 256-element blocks: gemv_tiled.cu says which),
 * replacing its copy; *tiled says whether it did. For matrices read only as
 * products (not by nib_cuda_get_rows or the pair kernel). NIB_CUDA_TILED=0
 * in the environment keeps every matrix in the file's layout. */
nib_status nib_cuda_weight_tile(nib_cuda_weight *w, bool *tiled, nib_error *err);
/* The same for a fused Q/K/V matrix (Q, K and V of one format as one): tiled
 * only for the formats where that measured faster than the item kernels. */
nib_status nib_cuda_weight_tile_qkv(nib_cuda_weight *w, bool *tiled, nib_error *err);
/* The same for a fused Q/K and its V where V's format differs (llama.cpp's
 * Q4_K_M layers with a Q6_K V), tiled together or not at all: then one
 * token's Q/K/V is one launch (nib_cuda_matmul_qkv_rope with both), and
 * neither is read by the pair kernel again (nib_cuda_matmul_pair takes two
 * launches for them). */
nib_status nib_cuda_weight_tile_qkv_pair(nib_cuda_weight *qk, nib_cuda_weight *v, bool *tiled, nib_error *err);
/* The same for a feed-forward's gate and up (one shape and format), tiled
 * together as one matrix of interleaved rows for the gate/up kernel: from
 * then on they are used only together, by nib_cuda_matmul_glu (and freed
 * each as before; the gate's allocation holds both). */
nib_status nib_cuda_weight_tile_glu(nib_cuda_weight *gate, nib_cuda_weight *up, bool *tiled, nib_error *err);
size_t nib_cuda_weight_bytes(const nib_cuda_weight *w);  /* bytes of the rows, without padding */
/* The device bytes of a matrix of `file_bytes` in the file: more for the
 * formats the device keeps in wider block slots or another format
 * (cuda/gpu_layout.h). */
uint64_t nib_cuda_layout_bytes(nib_type type, uint64_t file_bytes);
/* The format the device keeps a matrix of `type` in, and its kernels read
 * (TQ1_0 as TQ2_0; the type itself for every other) */
nib_type nib_cuda_device_type(nib_type type);

/* ---- GEMV -------------------------------------------------------------------------- */

/* Does this build have a GEMV kernel for the type (inspect --types lists it)? */
bool nib_cuda_has_gemv(nib_type type);
/* Which path the type's kernel takes: "dp4a" (int8 activations), "f32" (float
 * activations), or NULL without a kernel. */
const char *nib_cuda_gemv_path(nib_type type);

/* Device scratch bytes nib_cuda_gemv needs for this weight (0 for F16/BF16). */
size_t nib_cuda_gemv_scratch_bytes(const nib_cuda_weight *w);

/* y = W x on `stream` (a cudaStream_t; NULL is the default stream). x and y
 * are device pointers; scratch holds nib_cuda_gemv_scratch_bytes(w). Does not
 * synchronise and does not allocate, so it can be captured into a graph.
 * Launch errors come back with the kernel, the format and the shape named. */
nib_status nib_cuda_gemv(const nib_cuda_weight *w, const float *x, float *y, void *scratch, void *stream,
                         nib_error *err);

/* ---- matmul over token rows (the forward step's entry points) -----------------
 * Activations are quantized once per step and shared by every matmul that
 * reads them (Q, K and V; gate and up): nib_cuda_act_quantize turns n_tok rows
 * of n floats into the int8 blocks the dp4a kernels read. Each matmul takes
 * both the float rows x (read by the F16/BF16 kernels) and the quantized act
 * (read by the quantized ones). One token is a GEMV; more tokens (a prompt)
 * go through the same kernels NT tokens per weight pass. */
size_t nib_cuda_act_bytes(int64_t n, int n_tok);
nib_status nib_cuda_act_quantize(const float *x, int64_t n, int n_tok, void *act, void *stream, nib_error *err);

/* y[t] = W x[t] (add: y[t] += W x[t], the residual add fused) for t < n_tok. */
nib_status nib_cuda_matmul(const nib_cuda_weight *w, const float *x, const void *act, int n_tok, float *y, bool add,
                           void *stream, nib_error *err);

/* One token's y += W x (the residual add) that also leaves the deferred
 * RMSNorm of the new y, as nib_cuda_add_norm with defer would from y and
 * norm_w: y * norm_w quantized into act_out (an activation buffer of w's
 * n_out) with the row's partial sums of squares, for the next GEMV. One
 * kernel instead of two: the output projection leaves the FFN's norm done.
 * Only where nib_cuda_matmul_norm_ok(w) (a tiled matrix of 2-row groups, at
 * most 4,096 rows, whole 32-row blocks); act and act_out must differ. Its
 * trailer has one part a 32-row block, which only the tiled gate/up kernel
 * reads: act_out is for nib_cuda_matmul_glu on a pair where
 * nib_cuda_glu_takes_norm(gate). */
nib_status nib_cuda_matmul_norm(const nib_cuda_weight *w, const void *act, float *y, const float *norm_w, float eps,
                                void *act_out, void *stream, nib_error *err);
bool nib_cuda_matmul_norm_ok(const nib_cuda_weight *w);
bool nib_cuda_glu_takes_norm(const nib_cuda_weight *gate);
/* The partial sums of squares at the end of an activation buffer (doubles;
 * for tests that read one back) */
#define NIB_CUDA_ACT_SCALE_SLOTS 128

/* One token's y = W x with the greedy pick fused in: *best (0 before the
 * call) ends as the largest key (orderable value bits << 32 | 0xFFFFFFFF -
 * row) over the rows, so the argmax is 0xFFFFFFFF - (uint32_t)*best (the
 * first maximum; NaN rows never win; *best stays 0 if every row is NaN). */
nib_status nib_cuda_matmul_argmax(const nib_cuda_weight *w, const float *x, const void *act, float *y,
                                  uint64_t *best, void *stream, nib_error *err);

typedef enum nib_cuda_glu { NIB_CUDA_GLU_SILU = 1, NIB_CUDA_GLU_GELU_TANH = 2 } nib_cuda_glu;
/* h[t] = act(gate x[t]) * (up x[t]): one kernel when gate and up share a
 * quantized format; otherwise two products and an elementwise pass, using
 * tmp (n_tok, n_out) floats. */
nib_status nib_cuda_matmul_glu(const nib_cuda_weight *gate, const nib_cuda_weight *up, const float *x,
                               const void *act, int n_tok, nib_cuda_glu glu, float *h, float *tmp, void *stream,
                               nib_error *err);

/* ya = A x and yb = B x for two matrices of one row length (a model's fused
 * Q/K and its V of another format): one launch where a pair kernel exists
 * for the two formats and shapes (one token), else two nib_cuda_matmul
 * calls. The outputs are bit for bit those of the two calls either way. */
nib_status nib_cuda_matmul_pair(const nib_cuda_weight *a, const nib_cuda_weight *b, const float *x, const void *act,
                                int n_tok, float *ya, float *yb, void *stream, nib_error *err);
/* The pair kernel nib_cuda_matmul_pair would launch for these matrices, or
 * NULL where it takes two launches. */
const char *nib_cuda_pair_kernel(const nib_cuda_weight *a, const nib_cuda_weight *b, int n_tok);

/* For tests: the activation blocks a nib_cuda_gemv call left in scratch.
 * qs gets n_in int8 quants, ds n_in/32 pairs (d, s = d * sum(q)) as floats.
 * Copies device to host (synchronous). */
nib_status nib_cuda_gemv_scratch_read(const nib_cuda_weight *w, const void *scratch, int8_t *qs, float *ds,
                                      nib_error *err);

#ifdef __cplusplus
}
#endif

#endif
