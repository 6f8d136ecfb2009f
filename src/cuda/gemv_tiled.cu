/* The tiled GEMV's host side: which matrices take the t32 layout, the
 * conversion at load, and the launches (kernels: gemv_tiled.cuh).
 *
 * A tiled matrix keeps only the tiled copy; every device reader of it knows
 * the layout: the one-token GEMV and gate/up GLU here, prompt tokens as
 * one-token launches (nib_cuda_matmul with n_tok > 1), the prompt GEMM's
 * decoder (dequant.cu). The pair kernel, the staged LM head and the row
 * lookup read the file's layout and are not given tiled matrices (gemv.cu
 * pair_get; get_rows refuses them).
 *
 * Which: Q4_K and Q6_K matrices whose rows are a multiple of 2048 elements
 * (G = 1, 2 or 4 rows a warp group) and short or about square (the output
 * projection, gate, up, LM head), and Q6_K's long rows when a group is 7
 * tiles (14336-wide downs: split over 7 warps). Q4_K's long rows keep the
 * item kernels' split K, which the lab had ahead (14336 x 4096: 12.9 us
 * against 13.4). Kernel lab, H200, PDL graph replay, item kernel -> tiled
 * (bench/gpu-decode-notes.md v55): gate/up GLU Q4_K 4096 x 2 x 14336 21.3 ->
 * 19.3 us, Q4_K 4096 x 4096 6.4 -> 5.5, Q6_K 4096 x 4096 8.9 -> 7.2, Q6_K
 * 14336 x 4096 20.2 -> 17.8, Q6_K 4096 x 128256 117.6 -> 102.5 (99% of copy
 * bandwidth), Q4_K 4096 x 128256 ~76 -> 71.8. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cuda_internal.h"
#include "cuda/gemv_tiled.cuh"

#define T32_WARPS_Q4_K 8 /* the lab's best block for Q4_K; Q6_K's 159 registers fit more blocks of 4 */
#define T32_WARPS_Q6_K 4
#define T32_KS_TILES 7   /* the split kernel's warps: one a tile of a 4-row group of 14336-wide rows */

template <class F>
struct t32_cfg;
template <>
struct t32_cfg<t32_q4_K> {
    static constexpr int W = T32_WARPS_Q4_K;
};
template <>
struct t32_cfg<t32_q6_K> {
    static constexpr int W = T32_WARPS_Q6_K;
};

/* ---- the layout ------------------------------------------------------------------- */

/* blocks of the device layout (stride bytes apart) into tiles; the last tile's pad blocks zero */
template <class F>
__global__ void t32_tile(const uint8_t *__restrict__ src, uint8_t *__restrict__ dst, size_t n_blocks, int stride) {
    constexpr int CHD = F::CH + (F::HAS_D ? 1 : 0); /* the d's as one more 2-byte "chunk" */
    const size_t n = (n_blocks + 31) / 32 * 32 * CHD;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t b = i / CHD, c = i % CHD;
        uint8_t *t = dst + (b / 32) * F::TILE;
        if ((int)c < F::CH) {
            uint4 v = make_uint4(0, 0, 0, 0);
            if (b < n_blocks) v = *(const uint4 *)(src + b * stride + 16 * c); /* 16-byte aligned blocks */
            *(uint4 *)(t + 512 * c + (b % 32) * 16) = v;
        } else {
            unsigned short d = 0;
            if (b < n_blocks) d = *(const unsigned short *)(src + b * stride + 16 * F::CH);
            *(unsigned short *)(t + 512 * F::CH + (b % 32) * 2) = d;
        }
    }
}

/* Blocks an SM holds of kernel K with smem bytes of dynamic shared memory */
template <class K>
static bool t32_per_sm(K kernel, int threads, int smem, int *per_sm, nib_error *err) {
    return CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, kernel, threads, smem), "t32 grid", err);
}

template <class F>
static bool t32_plan(nib_cuda_weight *w, int g, bool ks, nib_error *err) {
    const int nb = (int)(w->n_in / F::QK), smem = nb * F::ACT, n_groups = (int)CEIL_DIV(w->n_out, g);
    constexpr int W = t32_cfg<F>::W;
    int a = 0, b = 0;
    if (ks) {
        if (!t32_per_sm(gemv_t32_ks<F, T32_KS_TILES, 4>, 32 * T32_KS_TILES, smem, &a, err)) return false;
        const int most = w->sms * (a > 0 ? a : 1);
        w->t32_grid = n_groups < most ? n_groups : most;
        return true;
    }
    bool ok = g == 1   ? t32_per_sm(gemv_t32<F, W, 1, false>, 32 * W, smem, &a, err) &&
                           t32_per_sm(gemv_t32<F, W, 1, true>, 32 * W, smem, &b, err)
              : g == 2 ? t32_per_sm(gemv_t32<F, W, 2, false>, 32 * W, smem, &a, err) &&
                           t32_per_sm(gemv_t32<F, W, 2, true>, 32 * W, smem, &b, err)
                       : t32_per_sm(gemv_t32<F, W, 4, false>, 32 * W, smem, &a, err) &&
                           t32_per_sm(gemv_t32<F, W, 4, true>, 32 * W, smem, &b, err);
    if (!ok) return false;
    const int need = CEIL_DIV(n_groups, W), most = w->sms * (a > 0 ? a : 1), most_glu = w->sms * (b > 0 ? b : 1);
    w->t32_grid = need < most ? need : most;
    w->t32_grid_glu = need < most_glu ? need : most_glu;
    return true;
}

extern "C" nib_status nib_cuda_weight_tile(nib_cuda_weight *w, bool *tiled, nib_error *err) {
    *tiled = false;
    if (!w) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_weight_tile: NULL weight");
    if (w->t32_g) {
        *tiled = true;
        return NIB_OK;
    }
    if (getenv("NIB_CUDA_TILED") && getenv("NIB_CUDA_TILED")[0] == '0') return NIB_OK;
    const bool q4 = w->type == NIB_TYPE_Q4_K, q6 = w->type == NIB_TYPE_Q6_K;
    if ((!q4 && !q6) || w->n_in % 2048 != 0 || w->n_in > 30720) return NIB_OK; /* G <= 4; activation fits 48 KB */
    const int nb = (int)(w->n_in / 256), g = t32_group_rows(nb), t = g * nb / 32;
    const bool long_rows = w->n_in >= 3 * w->n_out && w->n_in >= 4096; /* gemv.cu plan_q8's split-K rule */
    const bool ks = long_rows && q6 && g == 4 && t == T32_KS_TILES;
    if (long_rows && !ks) return NIB_OK;
    const int bytes = q4 ? t32_q4_K::BYTES : t32_q6_K::BYTES, tile = q4 ? t32_q4_K::TILE : t32_q6_K::TILE;
    const size_t n_blocks = (size_t)w->n_out * nb, tiles = (n_blocks + 31) / 32, out_bytes = tiles * tile;
    const int stride = (int)(w->row_bytes / nb); /* the device block: 144, or Q6_K's 224-byte slot */
    (void)bytes;
    if (!(q4 ? t32_plan<t32_q4_K>(w, g, ks, err) : t32_plan<t32_q6_K>(w, g, ks, err))) return err ? err->status : NIB_ERR_IO;
    uint8_t *dst = NULL;
    cudaError_t e = cudaMalloc(&dst, out_bytes + 16);
    if (e == cudaErrorMemoryAllocation) { /* no room for the second copy while converting: keep the file's layout */
        (void)cudaGetLastError();
        return NIB_OK;
    }
    if (!CUDA_OK(e, "tile a weight", err)) return err ? err->status : NIB_ERR_IO;
    const unsigned grid = (unsigned)(tiles < 4096 ? tiles : 4096);
    if (q4) t32_tile<t32_q4_K><<<grid, 256>>>(w->dev, dst, n_blocks, stride);
    else t32_tile<t32_q6_K><<<grid, 256>>>(w->dev, dst, n_blocks, stride);
    if (!CUDA_OK(cudaGetLastError(), "t32_tile", err) || !CUDA_OK(cudaMemset(dst + out_bytes, 0, 16), "tile a weight", err) ||
        !CUDA_OK(cudaDeviceSynchronize(), "t32_tile", err)) {
        cudaFree(dst);
        return err ? err->status : NIB_ERR_IO;
    }
    cudaFree(w->dev);
    w->dev = dst;
    w->bytes = out_bytes;
    w->t32_g = g;
    w->t32_ks = ks;
    *tiled = true;
    return NIB_OK;
}

/* ---- the launches ------------------------------------------------------------------- */

template <class F>
static cudaError_t t32_launch(const nib_cuda_weight *w, const nib_cuda_weight *up, const act_q8 &a, float *y,
                              int add, int act, unsigned long long *best, cudaStream_t st) {
    constexpr int W = t32_cfg<F>::W;
    const int smem = (int)(w->n_in / F::QK) * F::ACT, n_in = (int)w->n_in, n_out = (int)w->n_out;
    if (w->t32_ks) {
        if (best) return cudaErrorInvalidValue; /* not reached: split rows are not LM heads */
        return pdl_launch(gemv_t32_ks<F, T32_KS_TILES, 4>, dim3(w->t32_grid), dim3(32 * T32_KS_TILES), smem, st, w->dev,
                          a, y, n_in, n_out, add);
    }
    const dim3 grid(up ? w->t32_grid_glu : w->t32_grid), block(32 * W);
    const uint8_t *u = up ? up->dev : NULL;
#define T32_CASE(G)                                                                                               \
    if (w->t32_g == G)                                                                                            \
        return up ? pdl_launch(gemv_t32<F, W, G, true>, grid, block, smem, st, w->dev, u, a, y, n_in, n_out, 0, act, \
                               (unsigned long long *)NULL)                                                       \
                  : pdl_launch(gemv_t32<F, W, G, false>, grid, block, smem, st, w->dev, u, a, y, n_in, n_out, add,   \
                               act, best);
    T32_CASE(1)
    T32_CASE(2)
    T32_CASE(4)
#undef T32_CASE
    return cudaErrorInvalidValue;
}

/* one token at a time: a prompt's rows each read the matrix (the GEMM takes
 * chunks of GEMM_MIN_TOKENS and more) */
cudaError_t cuda_t32_matmul(const nib_cuda_weight *w, const nib_cuda_weight *up, const act_q8 &a, float *y, int add,
                            int act, unsigned long long *best, cudaStream_t st) {
    for (int t = 0; t < a.n_tok; t++) {
        act_q8 at = a;
        at.xq = a.xq + (size_t)t * a.qs_stride, at.xds = a.xds + (size_t)t * (w->n_in / 32), at.n_tok = 1;
        float *yt = y + (size_t)t * w->n_out;
        const cudaError_t e = w->type == NIB_TYPE_Q4_K ? t32_launch<t32_q4_K>(w, up, at, yt, add, act, best, st)
                                                       : t32_launch<t32_q6_K>(w, up, at, yt, add, act, best, st);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
