/* Shared by the CUDA backend's .cu files: checked calls and the weight struct.
 * C++ (nvcc) only; the public API is cuda.h. */
#ifndef NIB_CUDA_INTERNAL_H
#define NIB_CUDA_INTERNAL_H

#include <cuda_runtime.h>

/* the C library's internal headers carry no extern "C" of their own */
extern "C" {
#include "core/error.h"
}
#include "cuda/cuda.h"

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

/* Oldest compute capability the kernels are built for (dp4a needs 6.1; the
 * default build targets sm_80..sm_90 plus PTX, see the Makefile). */
#define NIB_CUDA_MIN_CC_MAJOR 8

/* Every CUDA call is checked; a failure becomes a returned error naming the
 * failing expression and what it was doing (`what`: kernel/op and shape).
 * Library code never exits. Usage:
 *     if (!cuda_ok(cudaMemcpy(...), "cudaMemcpy(...)", "upload Q4_K 4096x4096", err)) return err->status; */
static inline bool cuda_ok(cudaError_t e, const char *expr, const char *what, nib_error *err) {
    if (e == cudaSuccess) return true;
    (void)cudaGetLastError();  /* clear a non-sticky error so the next call starts clean */
    nib_error_set(err, e == cudaErrorMemoryAllocation ? NIB_ERR_NOMEM : NIB_ERR_IO, "CUDA: %s failed in %s: %s (%s)",
                  expr, what, cudaGetErrorString(e), cudaGetErrorName(e));
    return false;
}
#define CUDA_OK(call, what, err) cuda_ok((call), #call, (what), (err))

/* After a launch: the launch call's own error, else the last error (a bad
 * configuration shows there), as a returned status naming `what`. */
static inline nib_status cuda_launch_status(cudaError_t e, const char *what, nib_error *err) {
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e == cudaSuccess) return NIB_OK;
    cuda_ok(e, "kernel launch", what, err);
    return err ? err->status : NIB_ERR_IO;
}

/* A weight matrix on the device: one allocation made at upload. */
struct nib_cuda_weight {
    nib_type type;
    int64_t n_in, n_out;     /* row length (elements), rows */
    size_t row_bytes;        /* bytes of one row in its format */
    size_t bytes;            /* row_bytes * n_out */
    uint8_t *dev;            /* (n_out, row_bytes) + 16 bytes of zero padding for over-reading loads */
    int grid;                /* thread blocks per GEMV launch, fixed at upload (gemv.cu) */
    int grid_cap;            /* blocks of that kernel the device holds at once: its persistent grid's size */
    int sms;                 /* the device's multiprocessors (other kernels' persistent grids) */
    int stream_tr;           /* an LM head on the staged kernel (gemv_stream.cuh): rows a tile, else 0 */
    int stream_grid;         /* its persistent grid */
    unsigned stream_stage;   /* its bytes a stage */
    int t32_g;               /* tiled (gemv_tiled.cuh): rows a warp group; 0: the file's layout (slots for Q6_K) */
    int t32_kernel;          /* tiled: T32_WARPS (gemv_t32: a group a warp), T32_SPLIT (gemv_t32_ks: long rows, a
                                group's tiles over a block's warps), T32_SEG (gemv_t32_seg: a group a block, the
                                rows summed through shared memory); gemv_tiled_ops.cuh */
    int t32_pair;            /* a gate/up pair tiled as one matrix of interleaved rows: 1 the gate (its dev
                                owns the allocation), 2 the up (dev the same allocation); 0 not a pair */
    int t32_grid;            /* the tiled kernel's persistent grid */
    int t32_warps;           /* the tiled kernel's warps a block */
    bool t32_two;            /* gemv_t32 on two tile buffers (at most 2 tiles a warp), else one */
    int t32_tile;            /* bytes a tile of 32 blocks (the format's tiled form, gemv_tiled.cuh) */
    bool t32_norm;           /* one token's GEMV may also leave the deferred norm of its output
                                (nib_cuda_matmul_norm; gemv_t32's NORM instance fits the device) */
    int t32_qk_grid;         /* a fused Q/K tiled with its V (nib_cuda_weight_tile_qkv_pair): the blocks of the
                                Q/K part of their one launch (gemv_t32_qkv2), and of the V part: */
    int t32_v_grid;          /* 0 where the Q/K has no V beside it */
};

/* Activation scratch (nib_cuda_act_quantize): n_tok rows of n int8 quants,
 * each row rounded up to 256 bytes so every row and block starts 16-byte
 * aligned, then n_tok * n/32 float2 (d, s), then at the next 16-byte
 * boundary an act_scale (act_q8.cuh): the row scale of a deferred RMSNorm. */
static inline size_t cuda_act_qs_stride(int64_t n) { return (size_t)CEIL_DIV(n, 256) * 256; }
static inline size_t cuda_act_scale_off(int64_t n, int n_tok) {
    return (cuda_act_qs_stride(n) + (size_t)(n / 32) * 8) * (size_t)n_tok + 15 & ~(size_t)15;
}

struct act_q8; /* gemv_kernels.cuh */
/* gemv.cu: the kernels' view of an activation buffer of n_tok rows of n (its
 * quants, (d, s) pairs and trailer) */
act_q8 cuda_act_view(const void *act, int64_t n, int n_tok);
/* gemv_tiled.cu: y = W x on a tiled matrix (w->t32_pair == 0), or h =
 * act(gate x) * (up x) on a tiled gate/up pair (w its gate), for a.n_tok
 * tokens, one token a launch */
cudaError_t cuda_t32_matmul(const nib_cuda_weight *w, const act_q8 &a, float *y, int add, int act,
                            unsigned long long *best, cudaStream_t st);

/* gemv.cu: can this device run the kernels of this build? (false + reason on
 * "no kernel image for this device" and the like) */
bool cuda_gemv_image_ok(char *reason, size_t reason_size);
/* gemv.cu: the launch grid for this weight on the current device (at upload) */
bool cuda_gemv_plan(nib_cuda_weight *w, nib_error *err);
/* dequant.cu: the whole matrix as fp16 (n_out rows of n_in) in out, 16-byte
 * aligned: the reference decoder's values rounded to fp16; for the types
 * nib_cuda_has_get_rows takes */
nib_status cuda_dequant_f16(const nib_cuda_weight *w, void *out, cudaStream_t st, nib_error *err);
/* gemv.cu: h = act(g) * u over n floats (h may alias g), the GLU's
 * elementwise half for products made apart (gemm.cu) */
nib_status cuda_glu_rows(const float *g, const float *u, float *h, int64_t n, nib_cuda_glu glu, cudaStream_t st,
                         nib_error *err);

#endif
