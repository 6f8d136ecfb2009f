/* The tiled GEMV's host side: which matrices take the t32 layout, the
 * conversion at load, and the launches (kernels: gemv_tiled.cuh).
 *
 * A tiled matrix keeps only the tiled copy; every device reader of it knows
 * the layout: the one-token GEMV here, prompt tokens as one-token launches
 * (nib_cuda_matmul with n_tok > 1), the prompt GEMM's decoder (dequant.cu).
 * A gate/up pair is tiled as one matrix of interleaved rows (gate i, up i),
 * so the GLU kernel's groups are single tiles: tiled apart, a group was a
 * gate tile and an up tile, and 7,168 such groups of the 8B's 4096 x 14336
 * pair over ~2,100 warps left the last warps 8 tiles where the mean is 6.8
 * (lab: 20.8 us against 19.3 interleaved). The pair kernel, the staged LM
 * head and the row lookup read the file's layout and are not given tiled
 * matrices (gemv.cu pair_get; get_rows refuses them).
 *
 * Which: Q4_K, Q5_K, Q6_K, Q3_K, Q2_K, IQ4_XS and Q4_0 matrices whose rows
 * are a multiple of 2048 elements (G = 1, 2 or 4 rows a warp group) and short
 * or about square (the output projection, gate, up, LM head), and the long
 * rows of the formats with t32_cfg::KS when a group is 7 tiles (14336-wide
 * downs: split over 7 warps); with rows enough to fill the device
 * (t32_fills). Q4_K's and Q4_0's long rows keep the item kernels' split K,
 * which the lab had ahead for Q4_K (14336 x 4096: 12.9 us against 13.4).
 * Q5_K, Q3_K, Q2_K, IQ4_XS: bench/gpu-decode-notes.md v65. Kernel lab, H200, PDL graph replay, item kernel -> tiled
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
    static constexpr bool KS = false; /* long rows: the item kernels' split K was ahead */
};
template <>
struct t32_cfg<t32_q6_K> {
    static constexpr int W = T32_WARPS_Q6_K;
    static constexpr bool KS = true;
};
template <>
struct t32_cfg<t32_q4_0> {
    static constexpr int W = T32_WARPS_Q4_K; /* 9 chunks, as Q4_K */
    static constexpr bool KS = false;
};
template <>
struct t32_cfg<t32_q5_K> {
    static constexpr int W = T32_WARPS_Q4_K;
    static constexpr bool KS = true;
};
template <>
struct t32_cfg<t32_q3_K> {
    static constexpr int W = T32_WARPS_Q4_K;
    static constexpr bool KS = true;
};
template <>
struct t32_cfg<t32_q2_K> {
    static constexpr int W = T32_WARPS_Q4_K;
    static constexpr bool KS = true;
};
template <>
struct t32_cfg<t32_iq4_xs> {
    static constexpr int W = T32_WARPS_Q4_K;
    static constexpr bool KS = true;
};

/* The one place that maps a format to its tiled form: fn(F{}) for F the
 * tiled format of t (t32_has(t) first). */
static bool t32_has(nib_type t) {
    return t == NIB_TYPE_Q4_K || t == NIB_TYPE_Q6_K || t == NIB_TYPE_Q4_0 || t == NIB_TYPE_Q5_K ||
           t == NIB_TYPE_Q3_K || t == NIB_TYPE_Q2_K || t == NIB_TYPE_IQ4_XS;
}
template <class Fn>
static decltype(auto) t32_dispatch(nib_type t, Fn &&fn) {
    switch (t) {
    case NIB_TYPE_Q4_K: return fn(t32_q4_K{});
    case NIB_TYPE_Q6_K: return fn(t32_q6_K{});
    case NIB_TYPE_Q5_K: return fn(t32_q5_K{});
    case NIB_TYPE_Q3_K: return fn(t32_q3_K{});
    case NIB_TYPE_Q2_K: return fn(t32_q2_K{});
    case NIB_TYPE_IQ4_XS: return fn(t32_iq4_xs{});
    default: return fn(t32_q4_0{});
    }
}

/* ---- the layout ------------------------------------------------------------------- */

/* Blocks an SM holds of kernel K with smem bytes of dynamic shared memory */
template <class K>
static bool t32_per_sm(K kernel, int threads, int smem, int *per_sm, nib_error *err) {
    return CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, kernel, threads, smem), "t32 grid", err);
}

template <class F>
static bool t32_plan(nib_cuda_weight *w, int g, bool ks, bool glu, nib_error *err) {
    const int nb = (int)(w->n_in / F::QK), smem = nb * F::ACT, rows = (int)w->n_out * (glu ? 2 : 1);
    const int n_groups = CEIL_DIV(rows, g);
    constexpr int W = t32_cfg<F>::W;
    int a = 0;
    bool ok;
    if (ks) ok = t32_per_sm(gemv_t32_ks<F, T32_KS_TILES, 4>, 32 * T32_KS_TILES, smem, &a, err);
    else if (glu) ok = g == 2 ? t32_per_sm(gemv_t32<F, W, 2, true>, 32 * W, smem, &a, err)
                              : t32_per_sm(gemv_t32<F, W, 4, true>, 32 * W, smem, &a, err);
    else ok = g == 1   ? t32_per_sm(gemv_t32<F, W, 1, false>, 32 * W, smem, &a, err)
              : g == 2 ? t32_per_sm(gemv_t32<F, W, 2, false>, 32 * W, smem, &a, err)
                       : t32_per_sm(gemv_t32<F, W, 4, false>, 32 * W, smem, &a, err);
    if (!ok) return false;
    const int need = ks ? n_groups : CEIL_DIV(n_groups, W), most = w->sms * (a > 0 ? a : 1);
    w->t32_grid = need < most ? need : most;
    return true;
}

/* Enough row groups to fill the device: a warp takes a group at a time, so
 * a matrix of few rows leaves most multiprocessors idle where the item
 * kernels split its rows over more warps. Gemma 3 270M (its 2048 -> 640
 * downs tiled: 160 groups) lost 5% (tg128 1,723 -> 1,627-1,637 t/s); the
 * 8B's 4096-row output projections (2,048 groups) gained. At least
 * T32_MIN_WARPS_SM groups a multiprocessor (the split kernel: a block, 7
 * warps, a group). */
#define T32_MIN_WARPS_SM 8
static bool t32_fills(const nib_cuda_weight *w, int g, bool ks, bool glu) {
    const int64_t n_groups = CEIL_DIV(w->n_out * (glu ? 2 : 1), g);
    return n_groups >= (int64_t)w->sms * (ks ? 1 : T32_MIN_WARPS_SM);
}

/* the blocks of the matrices src[0..n_src) (stride bytes a device block, nb a
 * row) in interleaved row order (row r of the result is row r / n_src of
 * src[r % n_src]; one matrix: its own order) into tiles */
template <class F>
__global__ void t32_tile(const uint8_t *__restrict__ src0, const uint8_t *__restrict__ src1, int n_src,
                         uint8_t *__restrict__ dst, size_t n_blocks, int nb, int stride) {
    constexpr int CHD = F::CH + (F::SIDE ? 1 : 0); /* the side bytes as one more "chunk" */
    const size_t n = (n_blocks + 31) / 32 * 32 * CHD;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t b = i / CHD, c = i % CHD, r = b / nb;
        const uint8_t *blk = (r % n_src ? src1 : src0) + ((r / n_src) * nb + b % nb) * stride;
        uint8_t *t = dst + (b / 32) * F::TILE;
        if ((int)c < F::CH) {
            uint4 v = make_uint4(0, 0, 0, 0);
            if (b < n_blocks) v = F::chunk(blk, (int)c);
            *(uint4 *)(t + 512 * c + (b % 32) * 16) = v;
        } else {
            const uint2 v = b < n_blocks ? F::side(blk) : make_uint2(0, 0);
            uint8_t *o = t + 512 * F::CH + (b % 32) * F::SIDE;
            if (F::SIDE == 2) *(unsigned short *)o = (unsigned short)v.x;
            if (F::SIDE == 4) *(uint32_t *)o = v.x;
            if (F::SIDE == 8) *(uint2 *)o = v;
        }
    }
}

/* Which layout a matrix takes (t32_g, t32_ks), or false: the file's. */
static bool t32_shape(const nib_cuda_weight *w, bool pair, int *g, bool *ks) {
    if (getenv("NIB_CUDA_TILED") && getenv("NIB_CUDA_TILED")[0] == '0') return false;
    const bool split = t32_dispatch(w->type, [](auto f) { return t32_cfg<decltype(f)>::KS; });
    if (!t32_has(w->type) || w->n_in % 2048 != 0 || w->n_in > 30720) return false; /* G <= 4; activation fits 48 KB */
    const int nb = (int)(w->n_in / 256);
    *g = t32_group_rows(nb);
    const int t = *g * nb / 32;
    const bool long_rows = w->n_in >= 3 * w->n_out && w->n_in >= 4096; /* gemv.cu plan_q8's split-K rule */
    *ks = !pair && long_rows && split && *g == 4 && t == T32_KS_TILES;
    if (pair) {
        if (*g == 1) *g = 2; /* whole (gate, up) pairs a group */
        return true;
    }
    return !long_rows || *ks;
}

/* n_src matrices of w's shape into one new tiled allocation *out of *bytes;
 * *out NULL (and NIB_OK) when the device has no room for it while the file's
 * layout is still there: that layout stays */
static nib_status t32_build(const nib_cuda_weight *w, const uint8_t *src0, const uint8_t *src1, int n_src,
                            uint8_t **out, size_t *bytes, nib_error *err) {
    const int nb = (int)(w->n_in / 256), tile = t32_dispatch(w->type, [](auto f) { return decltype(f)::TILE; });
    const size_t n_blocks = (size_t)w->n_out * nb * n_src, tiles = (n_blocks + 31) / 32;
    const int stride = (int)(w->row_bytes / nb); /* a tiled block's device bytes: 144, Q6_K's 224-byte slot, 8 x 18 */
    *out = NULL;
    *bytes = tiles * tile;
    uint8_t *dst = NULL;
    const cudaError_t e = cudaMalloc(&dst, *bytes + 16);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return NIB_OK;
    }
    if (!CUDA_OK(e, "tile a weight", err)) return err ? err->status : NIB_ERR_IO;
    const unsigned grid = (unsigned)(tiles < 4096 ? tiles : 4096);
    t32_dispatch(w->type, [&](auto f) {
        t32_tile<decltype(f)><<<grid, 256>>>(src0, src1, n_src, dst, n_blocks, nb, stride);
        return 0;
    });
    if (!CUDA_OK(cudaGetLastError(), "t32_tile", err) || !CUDA_OK(cudaMemset(dst + *bytes, 0, 16), "tile a weight", err) ||
        !CUDA_OK(cudaDeviceSynchronize(), "t32_tile", err)) {
        cudaFree(dst);
        return err ? err->status : NIB_ERR_IO;
    }
    *out = dst;
    return NIB_OK;
}

extern "C" nib_status nib_cuda_weight_tile(nib_cuda_weight *w, bool *tiled, nib_error *err) {
    *tiled = false;
    if (!w) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_weight_tile: NULL weight");
    if (w->t32_g) {
        *tiled = !w->t32_pair;
        return NIB_OK;
    }
    int g = 0;
    bool ks = false;
    if (!t32_shape(w, false, &g, &ks) || !t32_fills(w, g, ks, false)) return NIB_OK;
    if (!t32_dispatch(w->type, [&](auto f) { return t32_plan<decltype(f)>(w, g, ks, false, err); }))
        return err ? err->status : NIB_ERR_IO;
    uint8_t *dst = NULL;
    size_t bytes = 0;
    const nib_status s = t32_build(w, w->dev, w->dev, 1, &dst, &bytes, err);
    if (s != NIB_OK || !dst) return s;
    cudaFree(w->dev);
    w->dev = dst, w->bytes = bytes, w->t32_g = g, w->t32_ks = ks;
    w->t32_tile = t32_dispatch(w->type, [](auto f) { return decltype(f)::TILE; });
    *tiled = true;
    return NIB_OK;
}

extern "C" nib_status nib_cuda_weight_tile_glu(nib_cuda_weight *gate, nib_cuda_weight *up, bool *tiled,
                                               nib_error *err) {
    *tiled = false;
    if (!gate || !up) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_weight_tile_glu: NULL weight");
    if (gate->t32_g || up->t32_g) {
        *tiled = gate->t32_pair == 1 && up->t32_pair == 2 && gate->dev == up->dev;
        return NIB_OK;
    }
    int g = 0;
    bool ks = false;
    if (gate->type != up->type || gate->n_in != up->n_in || gate->n_out != up->n_out ||
        !t32_shape(gate, true, &g, &ks) || !t32_fills(gate, g, false, true))
        return NIB_OK;
    if (!t32_dispatch(gate->type, [&](auto f) { return t32_plan<decltype(f)>(gate, g, false, true, err); }))
        return err ? err->status : NIB_ERR_IO;
    uint8_t *dst = NULL;
    size_t bytes = 0;
    const nib_status s = t32_build(gate, gate->dev, up->dev, 2, &dst, &bytes, err);
    if (s != NIB_OK || !dst) return s;
    cudaFree(gate->dev);
    cudaFree(up->dev);
    gate->dev = up->dev = dst;
    gate->bytes = bytes / 2, up->bytes = bytes - bytes / 2; /* the device bytes, shared out */
    gate->t32_g = up->t32_g = g;
    gate->t32_tile = up->t32_tile = t32_dispatch(gate->type, [](auto f) { return decltype(f)::TILE; });
    up->t32_grid = gate->t32_grid;
    gate->t32_pair = 1, up->t32_pair = 2;
    *tiled = true;
    return NIB_OK;
}

/* ---- the launches ------------------------------------------------------------------- */

template <class F>
static cudaError_t t32_launch(const nib_cuda_weight *w, const act_q8 &a, float *y, int add, int act,
                              unsigned long long *best, cudaStream_t st) {
    constexpr int W = t32_cfg<F>::W;
    const int smem = (int)(w->n_in / F::QK) * F::ACT, n_in = (int)w->n_in;
    if (w->t32_ks) {
        if (best) return cudaErrorInvalidValue; /* not reached: split rows are not LM heads */
        return pdl_launch(gemv_t32_ks<F, T32_KS_TILES, 4>, dim3(w->t32_grid), dim3(32 * T32_KS_TILES), smem, st, w->dev,
                          a, y, n_in, (int)w->n_out, add);
    }
    const dim3 grid(w->t32_grid), block(32 * W);
    if (w->t32_pair) { /* the pair's 2 n_out interleaved rows */
        const int rows = 2 * (int)w->n_out;
        if (w->t32_g == 2)
            return pdl_launch(gemv_t32<F, W, 2, true>, grid, block, smem, st, w->dev, a, y, n_in, rows, 0, act,
                              (unsigned long long *)NULL);
        if (w->t32_g == 4)
            return pdl_launch(gemv_t32<F, W, 4, true>, grid, block, smem, st, w->dev, a, y, n_in, rows, 0, act,
                              (unsigned long long *)NULL);
        return cudaErrorInvalidValue;
    }
    const int n_out = (int)w->n_out;
    if (w->t32_g == 1)
        return pdl_launch(gemv_t32<F, W, 1, false>, grid, block, smem, st, w->dev, a, y, n_in, n_out, add, act, best);
    if (w->t32_g == 2)
        return pdl_launch(gemv_t32<F, W, 2, false>, grid, block, smem, st, w->dev, a, y, n_in, n_out, add, act, best);
    if (w->t32_g == 4)
        return pdl_launch(gemv_t32<F, W, 4, false>, grid, block, smem, st, w->dev, a, y, n_in, n_out, add, act, best);
    return cudaErrorInvalidValue;
}

/* one token at a time: a prompt's rows each read the matrix (the GEMM takes
 * chunks of GEMM_MIN_TOKENS and more) */
cudaError_t cuda_t32_matmul(const nib_cuda_weight *w, const act_q8 &a, float *y, int add, int act,
                            unsigned long long *best, cudaStream_t st) {
    for (int t = 0; t < a.n_tok; t++) {
        act_q8 at = a;
        at.xq = a.xq + (size_t)t * a.qs_stride, at.xds = a.xds + (size_t)t * (w->n_in / 32), at.n_tok = 1;
        float *yt = y + (size_t)t * w->n_out;
        const cudaError_t e =
            t32_dispatch(w->type, [&](auto f) { return t32_launch<decltype(f)>(w, at, yt, add, act, best, st); });
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
