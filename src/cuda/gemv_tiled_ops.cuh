/* The tiled layout's per-format host side, as a table row (t32_ops) that
 * gemv_tiled.cu looks up by format: the launch plan, the conversion kernel,
 * the launch. The rows are defined in gemv_tiled_kq.cu and gemv_tiled_iq.cu
 * (T32_OPS), so the formats' kernel instances compile in parallel. */
#ifndef NIB_CUDA_GEMV_TILED_OPS_CUH
#define NIB_CUDA_GEMV_TILED_OPS_CUH

#include "cuda/cuda_internal.h"
#include "cuda/gemv_tiled.cuh"

#define T32_KS_TILES 7 /* the split kernel's warps: one a tile of a 4-row group of 14336-wide rows */

/* gemv_t32_seg's warps a block at most, a column of the format's row
 * (T32_OPS): its __launch_bounds__ are this many threads, and ptxas sizes
 * the registers by them. At 12 warps (384 threads) Q4_K's GLU instance took
 * 140 registers where at 8 it takes 127, and two 8-warp blocks no longer fit
 * a multiprocessor. Q6_K's instances take more than 128 at 8 already (156
 * and 166: one block a multiprocessor) and 159 and 163 at 12, so Q6_K alone
 * takes 12 (Q5_K's GLU instance would go from 128 to 159). */
#define T32_SEG_WARPS 8
#define T32_SEG_WARPS_WIDE 12

/* nib_cuda_weight.t32_kernel: which tiled kernel reads the matrix */
enum { T32_WARPS = 0, T32_SPLIT = 1, T32_SEG = 2 };

/* a format's long rows in 7-tile groups (the T32_OPS column KS): kept on the
 * item kernels' split K, or on gemv_t32_ks with one or two tile buffers */
enum { T32_KS_NONE = 0, T32_KS_ONE = 1, T32_KS_TWO = 2 };

struct t32_ops {
    nib_type type;
    int tile;      /* bytes a tile of 32 blocks */
    bool ks;       /* long rows in 7-tile groups take the split kernel (else the item kernels keep them) */
    bool sq;       /* about square matrices (the output projection) are tiled (else the item kernels keep them) */
    bool qkv;      /* a fused Q/K/V matrix of the format is tiled too (else the item kernels keep it) */
    /* w->t32_grid for rows of g-row groups on kernel (T32_*; glu: a gate/up pair); 0 where
     * a block does not fit the device */
    bool (*plan)(nib_cuda_weight *w, int g, int kernel, bool glu, nib_error *err);
    /* the conversion kernel (t32_tile) on grid blocks */
    void (*tile_matrix)(const uint8_t *src0, const uint8_t *src1, int n_src, uint8_t *dst, size_t n_blocks, int nb,
                        int stride, unsigned grid);
    /* one token's launch */
    cudaError_t (*launch)(const nib_cuda_weight *w, const act_q8 &a, float *y, int add, int act,
                          unsigned long long *best, cudaStream_t st);
    /* one token's y += W x with the deferred norm of y into nrm (gemv_t32's
     * NORM: 2-row groups, 16 warps a block, n_out / 32 blocks), or NULL where
     * the format has no such instance (about square matrices not tiled, or a
     * kernel above 128 registers, which 16 warps a block cannot hold) */
    cudaError_t (*launch_norm)(const nib_cuda_weight *w, const act_q8 &a, float *y, const t32_norm &nrm,
                               cudaStream_t st);
    /* w->t32_norm: whether launch_norm takes the tiled matrix w on this device */
    bool (*norm_plan)(nib_cuda_weight *w, nib_error *err);
    /* one token's fused Q/K/V with RoPE and the KV-cache stores in the
     * epilogue (gemv_t32 on t32_rope: w's own grid and groups, G even), after
     * the attention norm of xn->x where xn is not NULL (t32_rope_xn; only
     * where rope_xn), or NULL where the format's Q/K/V is not tiled */
    cudaError_t (*launch_rope)(const nib_cuda_weight *w, const act_q8 &a, const t32_rope &r, const t32_rope_xn *xn,
                               cudaStream_t st);
    bool rope_xn;
};
#define T32_NORM_WARPS 16

/* Blocks an SM holds of kernel K with smem bytes of dynamic shared memory.
 * Above the default 48 KB (the replicated IQ2 codebooks, gemv_tiled_iq.cuh)
 * the kernel opts in first, here at load time; where the device's opt-in
 * limit is lower (sm_86/sm_89: 99 KB) *per_sm is 0 and the matrix keeps the
 * file's layout (t32_plan leaves t32_grid 0). */
#define T32_SMEM_DEFAULT (48 * 1024)
template <class K>
static bool t32_per_sm(K kernel, int threads, int smem, int *per_sm, nib_error *err) {
    *per_sm = 0;
    if (smem > T32_SMEM_DEFAULT) {
        int dev = 0, most = 0;
        if (!CUDA_OK(cudaGetDevice(&dev), "t32 grid", err) ||
            !CUDA_OK(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "t32 grid", err))
            return false;
        if (smem > most) return true;
        if (!CUDA_OK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "t32 shared memory",
                     err))
            return false;
    }
    return CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, kernel, threads, smem), "t32 grid", err);
}

/* gemv_t32_seg's warps a block (*nw) for g-row groups of w's rows, and its
 * blocks a multiprocessor (*per_sm). A group's T tiles go to the warps in
 * rounds (tile j to warp j % nw), so a group takes ceil(T / nw) tile times,
 * and a multiprocessor holds per_sm groups at once. Of 7 to SW warps, the
 * count with the most groups a multiprocessor a tile time, per_sm /
 * ceil(T / nw); the fewest warps on a tie. So 8 warps where that takes
 * fewer rounds at the same blocks a multiprocessor: 8 tiles (Llama-3.2-1B's
 * 8192-wide downs) in 1 round, not 2; 15 (Gemma 3 12B's 3840-wide rows) in
 * 2, not 3; 37 (Qwen2.5-7B's 18944-wide downs) in 5, not 6. tg128 Q4_K_M,
 * one binary, 7 warps everywhere -> this rule up to 8: Gemma 3 12B 262.4 ->
 * 282.0 t/s, Llama-3.2-1B 1,704 -> 1,762, Qwen2.5-7B 523 -> 537
 * (bench/gpu-decode-notes.md v84). Q6_K up to 12: Gemma 3 27B's 21-tile
 * groups on 11 warps, 146.6 -> 148.1; Qwen2.5-7B's Q6_K downs on 10,
 * level (v85). */
template <class F, int SW>
static bool t32_seg_warps(const nib_cuda_weight *w, int g, bool glu, int *nw, int *per_sm, nib_error *err) {
    const int ss = t32_seg_smem_bytes<F>((int)w->n_in, g), t = g * (int)(w->n_in / F::QK) / 32;
    *nw = 0, *per_sm = 0;
    int best_rounds = 1;
    for (int n = T32_KS_TILES; n <= SW; n++) {
        int a = 0;
        const bool ok = glu ? t32_per_sm(gemv_t32_seg<F, SW, true>, 32 * n, ss, &a, err)
                            : t32_per_sm(gemv_t32_seg<F, SW, false>, 32 * n, ss, &a, err);
        if (!ok) return false;
        const int rounds = (t + n - 1) / n;
        if (*nw == 0 || a * best_rounds > *per_sm * rounds) *nw = n, *per_sm = a, best_rounds = rounds;
    }
    return true;
}

/* blocks an SM of gemv_t32 on g-row groups (a gate/up pair: glu), two tile buffers or one */
template <class F, int W, int G, bool GLU>
static bool t32_warps_per_sm_g(bool two, int smem, int *a, nib_error *err) {
    return two ? t32_per_sm(gemv_t32<F, W, G, GLU, t32_plain, true>, 32 * W, smem, a, err)
               : t32_per_sm(gemv_t32<F, W, G, GLU>, 32 * W, smem, a, err);
}
template <class F, int W>
static bool t32_warps_per_sm(int g, bool glu, bool two, int smem, int *a, nib_error *err) {
    if (glu)
        return g == 2 ? t32_warps_per_sm_g<F, W, 2, true>(two, smem, a, err)
                      : t32_warps_per_sm_g<F, W, 4, true>(two, smem, a, err);
    return g == 1   ? t32_warps_per_sm_g<F, W, 1, false>(two, smem, a, err)
           : g == 2 ? t32_warps_per_sm_g<F, W, 2, false>(two, smem, a, err)
                    : t32_warps_per_sm_g<F, W, 4, false>(two, smem, a, err);
}

template <class F, int W, int SW, int KS>
static bool t32_plan(nib_cuda_weight *w, int g, int kernel, bool glu, nib_error *err) {
    const int smem = t32_smem_bytes<F>((int)w->n_in), rows = (int)w->n_out * (glu ? 2 : 1);
    const int n_groups = CEIL_DIV(rows, g);
    int a = 0;
    bool ok;
    int nw = kernel == T32_SPLIT ? T32_KS_TILES : W;
    if (kernel == T32_SEG) { /* a block a group: its warps a block by t32_seg_warps */
        ok = t32_seg_warps<F, SW>(w, g, glu, &nw, &a, err);
    } else if (kernel == T32_SPLIT) {
        ok = t32_per_sm(gemv_t32_ks<F, T32_KS_TILES, 4, KS == T32_KS_TWO>, 32 * T32_KS_TILES, smem, &a, err);
    } else {
        ok = t32_warps_per_sm<F, W>(g, glu, true, smem, &a, err);
    }
    if (!ok) return false;
    const int need = kernel != T32_WARPS ? n_groups : CEIL_DIV(n_groups, W); /* a group a block, or a warp */
    w->t32_grid = need < w->sms * a ? need : w->sms * a; /* 0: no block fits, the file's layout stays */
    w->t32_warps = nw;
    w->t32_two = false;
    if (kernel == T32_WARPS && w->t32_grid > 0) { /* two buffers where a warp takes at most 2 tiles */
        const int tiles = CEIL_DIV(n_groups, w->t32_grid * W) * (g * (int)(w->n_in / F::QK) / 32);
        w->t32_two = tiles <= 2;
        if (!w->t32_two) { /* one buffer: its blocks a multiprocessor */
            if (!t32_warps_per_sm<F, W>(g, glu, false, smem, &a, err)) return false;
            w->t32_grid = need < w->sms * a ? need : w->sms * a;
        }
    }
    return true;
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
template <class F>
static void t32_tile_launch(const uint8_t *src0, const uint8_t *src1, int n_src, uint8_t *dst, size_t n_blocks, int nb,
                            int stride, unsigned grid) {
    t32_tile<F><<<grid, 256>>>(src0, src1, n_src, dst, n_blocks, nb, stride);
}

/* gemv_t32 on w's groups, TWO tile buffers or one (w->t32_two) */
template <class F, int W, bool TWO>
static cudaError_t t32_launch_warps(const nib_cuda_weight *w, const act_q8 &a, float *y, int add, int act,
                                   unsigned long long *best, cudaStream_t st) {
    const int smem = t32_smem_bytes<F>((int)w->n_in), n_in = (int)w->n_in;
    const dim3 grid(w->t32_grid), block(32 * W);
    if (w->t32_pair) { /* the pair's 2 n_out interleaved rows */
        const int rows = 2 * (int)w->n_out;
        if (w->t32_g == 2)
            return pdl_launch(gemv_t32<F, W, 2, true, t32_plain, TWO>, grid, block, smem, st, w->dev, a, y, n_in, rows,
                              0, act, (unsigned long long *)NULL, t32_plain{});
        if (w->t32_g == 4)
            return pdl_launch(gemv_t32<F, W, 4, true, t32_plain, TWO>, grid, block, smem, st, w->dev, a, y, n_in, rows,
                              0, act, (unsigned long long *)NULL, t32_plain{});
        return cudaErrorInvalidValue;
    }
    const int n_out = (int)w->n_out;
    if (w->t32_g == 1)
        return pdl_launch(gemv_t32<F, W, 1, false, t32_plain, TWO>, grid, block, smem, st, w->dev, a, y, n_in, n_out,
                          add, act, best, t32_plain{});
    if (w->t32_g == 2)
        return pdl_launch(gemv_t32<F, W, 2, false, t32_plain, TWO>, grid, block, smem, st, w->dev, a, y, n_in, n_out,
                          add, act, best, t32_plain{});
    if (w->t32_g == 4)
        return pdl_launch(gemv_t32<F, W, 4, false, t32_plain, TWO>, grid, block, smem, st, w->dev, a, y, n_in, n_out,
                          add, act, best, t32_plain{});
    return cudaErrorInvalidValue;
}

template <class F, int W, int SW, int KS>
static cudaError_t t32_launch(const nib_cuda_weight *w, const act_q8 &a, float *y, int add, int act,
                              unsigned long long *best, cudaStream_t st) {
    const int smem = t32_smem_bytes<F>((int)w->n_in), n_in = (int)w->n_in;
    if (w->t32_kernel == T32_SPLIT) {
        if (best) return cudaErrorInvalidValue; /* not reached: split rows are not LM heads */
        return pdl_launch(gemv_t32_ks<F, T32_KS_TILES, 4, KS == T32_KS_TWO>, dim3(w->t32_grid),
                          dim3(32 * T32_KS_TILES), smem, st, w->dev, a, y, n_in, (int)w->n_out, add);
    }
    if (w->t32_kernel == T32_SEG) { /* a group a block */
        const int ss = t32_seg_smem_bytes<F>(n_in, w->t32_g), g = w->t32_g;
        const dim3 sg(w->t32_grid), sb(32 * w->t32_warps);
        if (w->t32_pair)
            return pdl_launch(gemv_t32_seg<F, SW, true>, sg, sb, ss, st, w->dev, a, y, n_in,
                              2 * (int)w->n_out, 0, act, g, (unsigned long long *)NULL);
        return pdl_launch(gemv_t32_seg<F, SW, false>, sg, sb, ss, st, w->dev, a, y, n_in, (int)w->n_out,
                          add, act, g, best);
    }
    return w->t32_two ? t32_launch_warps<F, W, true>(w, a, y, add, act, best, st)
                      : t32_launch_warps<F, W, false>(w, a, y, add, act, best, st);
}

/* w as t32_norm_plan took it (w->t32_norm) */
template <class F>
static cudaError_t t32_launch_norm(const nib_cuda_weight *w, const act_q8 &a, float *y, const t32_norm &nrm,
                                   cudaStream_t st) {
    return pdl_launch(gemv_t32<F, T32_NORM_WARPS, 2, false, t32_norm>, dim3((unsigned)(w->n_out / 32)),
                      dim3(32 * T32_NORM_WARPS), t32_smem_bytes<F>((int)w->n_in), st, w->dev, a, y, (int)w->n_in,
                      (int)w->n_out, 1, 0, (unsigned long long *)NULL, nrm);
}

template <class F>
static bool t32_norm_plan(nib_cuda_weight *w, nib_error *err) {
    w->t32_norm = false;
    if (w->t32_kernel != T32_WARPS || w->t32_pair || w->t32_g * T32_NORM_WARPS != 32 || w->n_out % 32 ||
        w->n_out / 32 > ACT_SCALE_SLOTS)
        return true;
    int a = 0;
    if (!t32_per_sm(gemv_t32<F, T32_NORM_WARPS, 2, false, t32_norm>, 32 * T32_NORM_WARPS,
                    t32_smem_bytes<F>((int)w->n_in), &a, err))
        return false;
    w->t32_norm = a > 0;
    return true;
}

/* the two above where ON, else NULL (no instance of the NORM kernel) */
template <class F, bool ON>
constexpr cudaError_t (*t32_norm_launch_of())(const nib_cuda_weight *, const act_q8 &, float *, const t32_norm &,
                                              cudaStream_t) {
    if constexpr (ON) return t32_launch_norm<F>;
    else return nullptr;
}
template <class F, bool ON>
constexpr bool (*t32_norm_plan_of())(nib_cuda_weight *, nib_error *) {
    if constexpr (ON) return t32_norm_plan<F>;
    else return nullptr;
}

/* whether each warp of a grid of n_warps takes at most 32 RoPE pairs of
 * n_out rows in g-row groups (gemv_t32's ROPE: a lane works out one pair's
 * angle before the loop) */
static inline bool t32_rope_fits(int64_t n_out, int g, int64_t n_warps) {
    return g % 2 == 0 && n_warps > 0 && CEIL_DIV(CEIL_DIV(n_out, g), n_warps) * (g / 2) <= 32;
}

/* w's groups of 2 or 4 rows (whole RoPE pairs) on its plain grid, as
 * nib_cuda_matmul_qkv_rope_ok took it; with xn the instances that do the
 * attention norm first, where XN (8-warp blocks, no codebook: Q4_0, Q4_K).
 * Two tile buffers: a Q/K/V gives a warp one or two tiles (v98). */
template <class F, int W, int G, class E>
static cudaError_t t32_launch_rope_g(const nib_cuda_weight *w, const act_q8 &a, const E &r, cudaStream_t st) {
    return pdl_launch(gemv_t32<F, W, G, false, E, true>, dim3(w->t32_grid), dim3(32 * W),
                      t32_smem_bytes<F>((int)w->n_in), st, w->dev, a, (float *)NULL, (int)w->n_in, (int)w->n_out, 0, 0,
                      (unsigned long long *)NULL, r);
}
template <class F, int W, bool XN>
static cudaError_t t32_launch_rope(const nib_cuda_weight *w, const act_q8 &a, const t32_rope &r, const t32_rope_xn *xn,
                                   cudaStream_t st) {
    if constexpr (XN) {
        if (xn && w->t32_g == 2) return t32_launch_rope_g<F, W, 2>(w, a, *xn, st);
        if (xn && w->t32_g == 4) return t32_launch_rope_g<F, W, 4>(w, a, *xn, st);
    }
    if (xn) return cudaErrorInvalidValue;
    if (w->t32_g == 2) return t32_launch_rope_g<F, W, 2>(w, a, r, st);
    if (w->t32_g == 4) return t32_launch_rope_g<F, W, 4>(w, a, r, st);
    return cudaErrorInvalidValue;
}

/* the one above where ON, else NULL (no instance of the RoPE kernel) */
template <class F, int W>
constexpr bool t32_rope_xn_on = W == 8 && !t32_has_book<F>::value;
template <class F, int W, bool ON>
constexpr cudaError_t (*t32_rope_launch_of())(const nib_cuda_weight *, const act_q8 &, const t32_rope &,
                                              const t32_rope_xn *, cudaStream_t) {
    if constexpr (ON) return t32_launch_rope<F, W, t32_rope_xn_on<F, W>>;
    else return nullptr;
}

/* the format's table row (gemv_tiled.cu), or NULL: it keeps the file's layout */
const t32_ops *t32_find(nib_type t);

/* A fused Q/K (format a) and its V (format b) tiled in g-row groups, run
 * as one launch (gemv_tiled_qkv.cu): whether an instance exists, and the
 * two parts' grids into qk (t32_qk_grid, t32_v_grid; 0 where the launch
 * does not fit the device) */
bool t32_qkv2_has(nib_type a, nib_type b, int g);
bool t32_qkv2_plan(nib_cuda_weight *qk, const nib_cuda_weight *v, int g, nib_error *err);

/* the table row NAME of format TYPE, tiled form F on blocks of W warps
 * (gemv_t32), of up to SW (gemv_t32_seg); long rows as KS (T32_KS_*); the
 * norm epilogue's instance where the output projection is tiled (SQ) on
 * 8-warp blocks (W: at most 128 registers); the RoPE epilogue's where the
 * fused Q/K/V is tiled (QKV) */
#define T32_OPS(NAME, TYPE, F, W, SW, KS, SQ, QKV)                                                              \
    extern const t32_ops NAME = {TYPE, F::TILE, KS != T32_KS_NONE, SQ, QKV, t32_plan<F, W, SW, KS>,                \
                                 t32_tile_launch<F>, t32_launch<F, W, SW, KS>, t32_norm_launch_of<F, SQ && W == 8>(), \
                                 t32_norm_plan_of<F, SQ && W == 8>(), t32_rope_launch_of<F, W, QKV>(),              \
                                 QKV && t32_rope_xn_on<F, W>};

#endif
