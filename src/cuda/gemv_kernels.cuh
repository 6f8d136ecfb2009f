/* GEMV kernels, one per weight format: y = W x for one activation row.
 *
 * Included by gemv.cu (the library's launchers and type table) and by the
 * kernel lab dev/cuda/gemv_lab.cu (which times these and its own variants).
 * The kernels know nothing of GGUF or models: rows of blocks in, floats out.
 *
 * Shape of the work. One warp computes R output rows (R = 1, 2 or 4 per
 * format, gemv.cu's table; GEMV_WARPS warps per thread block). A row is cut
 * into "items", a format-chosen slice of one weight block (32 to 128
 * elements), and lane l takes items l, l+32, ... so a warp's loads sweep the
 * row contiguously: 32 neighbouring items are one run of memory. Each lane
 * ends with one fp32 partial per row; a shuffle tree adds them. The item loop
 * is unrolled U times (2-8) so several items' loads are in flight at once,
 * which is what a bandwidth-bound kernel needs (Little's law: ~3 MB in flight
 * on an H200 at 4.3 TB/s and ~700 ns latency). Long rows are also split
 * across warps (split K, gemv_q8_ks) and several rows share a warp's
 * activation loads (R); which launch a matrix gets is gemv.cu's plan_q8, and
 * what was measured on the way is in bench/gpu-decode-notes.md.
 *
 * The formats (their blocks, items and dots) are in gemv_formats.cuh.
 */
#ifndef NIB_CUDA_GEMV_KERNELS_CUH
#define NIB_CUDA_GEMV_KERNELS_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "cuda/act_q8.cuh"
#include "cuda/gemv_formats.cuh"
#include "cuda/pdl.cuh"

#define GEMV_WARPS 4  /* warps per thread block (rows per warp and unrolling: per format, gemv.cu) */
#define F16_U 4       /* steps a lane has in flight on the float path (gemv_f16) */

/* ---- the kernels ------------------------------------------------------------------ */

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
}

/* GLU activations of the gated feed-forward, as the CPU's ops.c computes them. */
enum { GLU_NONE = 0, GLU_SILU = 1, GLU_GELU_TANH = 2 };

__device__ __forceinline__ float glu_act(int act, float g) {
    if (act == GLU_SILU) return g / (1.0f + expf(-g));
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * g * (1.0f + tanhf(k * (g + 0.044715f * g * g * g)));
}

/* x (n_tok rows of n floats, n % 32 == 0) to int8 blocks of 32, one warp per
 * block (act_q8.cuh). Row t's quants start at qs + t * qs_stride, its (d, s)
 * pairs at ds + t * (n / 32). */
static __global__ void quantize_act_q8(const float *__restrict__ x, int8_t *__restrict__ qs, float2 *__restrict__ ds, int n,
                                int n_tok, int qs_stride, act_scale *sc) {
    pdl_launch_dependents();
    pdl_wait();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x == 0) act_scale_clear(sc, 0, (int)threadIdx.x, (int)blockDim.x); /* no deferred norm */
    if (i >= (int64_t)n * n_tok) return;  /* n % 32 == 0: whole warps leave together */
    const int t = (int)(i / n), j = (int)(i % n);
    quantize_warp32(x[i], qs + (int64_t)t * qs_stride + j, ds + i / 32);
}

/* The greedy pick fused into the LM head. A row's key is the orderable bits
 * of its value << 32 | ~row, so the largest key is the largest value and,
 * among equal values, the lowest row: the CPU's first maximum. NaN never
 * competes. Each lane keeps the best key of the rows it stored; at the end of
 * the kernel the block reduces them and makes one atomicMax (one atomic per
 * row on a single address serialised a 152k-row head to 140 us). best must
 * be 0 before the launch. */
__device__ __forceinline__ unsigned long long row_key(float v, int row) {
    if (v != v) return 0ull;
    const uint32_t u = __float_as_uint(v);
    const uint32_t key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)key << 32) | (unsigned long long)(0xFFFFFFFFu - (uint32_t)row);
}

/* Called by every thread of the block once, after its last row. */
__device__ __forceinline__ void block_offer_best(unsigned long long *best, unsigned long long mine) {
    __shared__ unsigned long long warp_best[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long other = __shfl_xor_sync(0xFFFFFFFFu, mine, o);
        mine = other > mine ? other : mine;
    }
    if ((threadIdx.x & 31) == 0) warp_best[threadIdx.x >> 5] = mine;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) mine = warp_best[w] > mine ? warp_best[w] : mine;
        if (mine) atomicMax(best, mine);
    }
}

/* Weights do not depend on the kernel before this one, so a GEMV asks L2
 * for its first rows before pdl_wait(): under programmatic dependent launch
 * its blocks start while the previous kernel drains, and the weight fetch
 * overlaps that tail instead of following it. The warp's lanes split the
 * rows' 128-byte lines. Only for matrices of at most PREFETCH_MAX_BYTES: on
 * the H200 it made Qwen2.5-0.5B (matrices of 0.5-5 MB) 7-8% faster, and
 * Llama-3-8B (10-66 MB, more than L2 takes ahead of use) 3-7% slower. */
#define PREFETCH_MAX_BYTES ((size_t)8 << 20)
__device__ __forceinline__ void prefetch_rows_l2(const uint8_t *row, size_t bytes, int lane) {
    for (size_t off = (size_t)lane * 128; off < bytes; off += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(row + off));
}

/* Where a kernel's activations are: NT token rows of int8 quants and (d, s)
 * pairs; a chunk shorter than NT repeats its last row (not stored). */
struct act_q8 {
    const int8_t *xq;
    const float2 *xds;
    int qs_stride;  /* bytes between token rows of xq */
    int n_tok;
    const act_scale *sc; /* the buffer's trailer: a deferred norm's row scale (act_q8.cuh) */
};

/* The row scale of a deferred norm (act_scale), in two halves: lane l loads
 * part l before a kernel's dot loop and the sum is taken after it, so the
 * load's latency hides under the weight loads (2 registers live across the
 * loop). The butterfly gives every lane the same bits, in the same order on
 * every run. 1 without a norm (all parts zero). The parts past
 * ACT_SCALE_PARTS are read only by the tiled gate/up kernels
 * (act_rs_load4): only the output projection's fused norm writes them, and
 * only those kernels read its activation (every other writer leaves them
 * zero). Four loads a lane in every GEMV cost 2.2% on Llama-3.2-1B and 1% on
 * Qwen2.5-7B (bench/gpu-decode-notes.md v94). */
static_assert(ACT_SCALE_PARTS == 32, "act_rs_begin: a part a lane");
__device__ __forceinline__ double act_rs_begin(const act_q8 &a, int lane) {
    return a.sc->part[lane & 31];
}
/* All ACT_SCALE_SLOTS parts, lane l's four loaded before a kernel's
 * activation fill and added after it (act_rs_fold), so the adds wait on no
 * load the fill has not waited on already. Adding parts that are zero
 * changes no bit, so a trailer of 32 parts gives act_rs_begin's value. */
static_assert(ACT_SCALE_SLOTS == 4 * 32, "act_rs_load4: four parts a lane");
struct act_rs4 {
    double p0, p1, p2, p3;
};
__device__ __forceinline__ act_rs4 act_rs_load4(const act_q8 &a, int lane) {
    const double *p = a.sc->part + (lane & 31);
    return act_rs4{p[0], p[32], p[64], p[96]};
}
__device__ __forceinline__ double act_rs_fold(const act_rs4 &r) { return (r.p0 + r.p1) + (r.p2 + r.p3); }
/* the row scale from the whole sum, ss / n + eps */
__device__ __forceinline__ float act_rs_of(double s) {
    return s > 0.0 ? (float)(1.0 / sqrt(s)) : 1.0f; /* as ops.c's nib_rmsnorm: 1 / sqrt(ss / n + eps) */
}
__device__ __forceinline__ float act_rs_end(double s) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);
    return act_rs_of(s);
}

/* Loading ahead. A one-token GEMV's weights do not depend on the kernel
 * before it, so its warps load their first pass of weight words (the U items
 * of each of the R rows that dot_rows would load first) into registers before
 * pdl_wait(): under programmatic dependent launch the loads overlap that
 * kernel's tail, and after the wait only the activations' (L2-resident) load
 * is left on the chain. Registers, not a cache: an L2 or L1 prefetch of the
 * same rows made Llama-3-8B 6-9% slower (bench/gpu-decode-notes.md v12),
 * most likely evicted before use while the kernel before ran. For the
 * formats that split dot into load and dot_w (words_block). Measured on the
 * H200 (v12): Llama-3-8B Q4_0 469 -> 501 t/s, Qwen2.5-0.5B Q8_0 1512 -> 1631;
 * the K-quants' words (12-19 per item, U x R items held across the wait) took
 * the Q4_K/Q6_K kernels from 64-72 to 80-255 registers and Llama-3-8B Q4_K_M
 * from 387 to 359 t/s, so they have no W and load after the wait as before. */
template <class F, class = void>
struct has_w : std::false_type {};
template <class F>
struct has_w<F, std::void_t<typename F::W>> : std::true_type {};

template <class F, int R, int U, bool ON = has_w<F>::value>
struct ahead {  /* no ahead loads: the formats without W */
    static constexpr bool on = false;
};
template <class F, int R, int U>
struct ahead<F, R, U, true> {
    static constexpr bool on = true;
    typename F::W w[U][R];
};

/* A format whose dot reads a table from shared memory (the IQ codebooks,
 * gemv_formats_extra.cuh) fills it once per block, before the first
 * divergence: every kernel body calls this first. A no-op for the rest. */
template <class F, class = void>
struct has_prepare : std::false_type {};
template <class F>
struct has_prepare<F, std::void_t<decltype(F::prepare())>> : std::true_type {};
template <class F>
__device__ __forceinline__ void fmt_prepare() {
    if constexpr (has_prepare<F>::value) F::prepare();
}

/* the items dot_rows takes in its first pass, as it clamps them */
template <class F, int R, int U, int LANES>
__device__ __forceinline__ void load_ahead(const uint8_t *const (&wr)[R], int n_in, int lane, ahead<F, R, U> &pre) {
    if constexpr (ahead<F, R, U>::on) {
        constexpr int IPB = F::QK / F::CH;
        const int n_items = n_in / F::CH;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = lane + LANES * u, ii = i < n_items ? i : n_items - 1;
#pragma unroll
            for (int r = 0; r < R; r++) pre.w[u][r] = F::load(wr[r] + (size_t)(ii / IPB) * F::BYTES, ii % IPB);
        }
    }
}

/* The R rows' dots against NT activation rows, one fp32 partial per lane.
 * Each pass takes U items per lane; an item past the row's end is computed
 * on the row's last item (a valid address: its loads hit L1) and added as 0,
 * so the U items' loads carry no branch and the compiler issues all of them
 * before the first dot. (A guarded `#pragma unroll U` loop ran its remainder
 * one item at a time: a 4096-wide Q4_K row has 2 items per lane, so every row
 * took two dependent memory round trips.) The NT dots of an item read the
 * same weight words, which the compiler loads once (weight loads are pure:
 * ld_weights.cuh), as
 * the R rows share the activation loads. Lanes add their items in index
 * order whatever U, R and NT are, so every variant gives the same bits. */
template <class F, int R, int U, int NT, int LANES = 32>
__device__ __forceinline__ void dot_rows(const uint8_t *const (&wr)[R], const act_q8 &a, int t0, int n_in, int lane,
                                         float (&acc)[NT][R], const ahead<F, R, U> &pre, bool use_pre) {
    /* LANES > 32: several warps share the rows (lane counts 0..LANES-1
     * across them, each warp's sum is its part of the dot; the kernel lab's
     * split-K variants) */
    constexpr int IPB = F::QK / F::CH; /* items per block */
    const int n_items = n_in / F::CH;
    const int8_t *xq[NT];
    const float2 *xds[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) {
        const int tt = min(t0 + t, a.n_tok - 1);
        xq[t] = a.xq + (size_t)tt * a.qs_stride;
        xds[t] = a.xds + (size_t)tt * (n_in / 32);
#pragma unroll
        for (int r = 0; r < R; r++) acc[t][r] = 0.0f;
    }
    int base = lane;
    if constexpr (ahead<F, R, U>::on && NT == 1) {
        if (use_pre) { /* the first pass, on the words loaded ahead */
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = base + LANES * u;
                const bool ok = i < n_items;
                const int ib = (ok ? i : n_items - 1) / IPB, sub = (ok ? i : n_items - 1) % IPB;
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const float v = F::dot_w(pre.w[u][r], sub, xq[0] + (size_t)ib * F::QK,
                                             xds[0] + (size_t)ib * (F::QK / 32));
                    acc[0][r] += ok ? v : 0.0f;
                }
            }
            base += LANES * U;
        }
    }
    for (; base < n_items; base += LANES * U) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = base + LANES * u;
            const bool ok = i < n_items;
            const int ii = ok ? i : n_items - 1;
            const int ib = ii / IPB, sub = ii % IPB;
#pragma unroll
            for (int t = 0; t < NT; t++)
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const float v = F::dot(wr[r] + (size_t)ib * F::BYTES, sub, xq[t] + (size_t)ib * F::QK,
                                           xds[t] + (size_t)ib * (F::QK / 32));
                    acc[t][r] += ok ? v : 0.0f;
                }
        }
    }
#pragma unroll
    for (int t = 0; t < NT; t++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[t][r] = warp_sum(acc[t][r]);
}

/* Formats whose plain GEMV lets the next kernel launch only at its end; the
 * others trigger at the top. Q3_K's heavy dot ran slower under PDL than
 * without it, the next launch's early blocks in its way; triggered at the end
 * (kernel lab, PDL graph us): 14336 x 4096 27.5 -> 20.8, 4096 x 14336 17.0 ->
 * 15.5, 4096 x 4096 7.0 -> 6.8, Q2_K (left as it was) the same in both builds (notes
 * v49). */
template <class F>
struct late_trigger : std::false_type {};
template <>
struct late_trigger<fmt_q3_K> : std::true_type {};
/* y[t][row] = dot(W[row], x[t]) (+ y[t][row] when add: the residual add of an
 * output projection, fused) with int8 activations. Each warp takes R rows at
 * a time, WARPS warps per block, and loops over row groups with a grid
 * stride, so the launcher may start fewer blocks than row groups (a
 * persistent grid: see gemv.cu for why). blockIdx.y picks a chunk of NT
 * tokens: the weights are read once per chunk. */
template <class F, int WARPS, int R, int U, int NT>
__device__ __forceinline__ void q8_body(const uint8_t *__restrict__ W, size_t row_bytes, const act_q8 &a,
                                        float *__restrict__ y, int y_stride, int n_in, int n_out, int add,
                                        unsigned long long *best, int block, int n_blocks) {
    if constexpr (!late_trigger<F>::value) pdl_launch_dependents();
    fmt_prepare<F>();
    const int lane = threadIdx.x & 31, t0 = blockIdx.y * NT;
    const int first = (block * WARPS + (threadIdx.x >> 5)) * R;
    constexpr bool AHEAD = ahead<F, R, U>::on && NT == 1;
    ahead<F, R, U> pre;
    if (AHEAD) {
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) wr[r] = W + (size_t)min(first + r, n_out - 1) * row_bytes;
        if (first < n_out) load_ahead<F, R, U, 32>(wr, n_in, lane, pre);
    } else if (!AHEAD && first < n_out && (size_t)n_out * row_bytes <= PREFETCH_MAX_BYTES) {
        prefetch_rows_l2(W + (size_t)first * row_bytes, (size_t)min(R, n_out - first) * row_bytes, lane);
    }
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    unsigned long long mine = 0;
    auto group = [&](int row0, bool use_pre) {
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) /* a row past the end repeats the last one; its result is not stored */
            wr[r] = W + (size_t)min(row0 + r, n_out - 1) * row_bytes;
        float acc[NT][R];
        dot_rows<F, R, U, NT>(wr, a, t0, n_in, lane, acc, pre, use_pre);
        const float rs = act_rs_end(rsp);
#pragma unroll
        for (int t = 0; t < NT; t++)
#pragma unroll
            for (int r = 0; r < R; r++)
                if (lane == t && t0 + t < a.n_tok && row0 + r < n_out) {
                    float *p = y + (size_t)(t0 + t) * y_stride + row0 + r;
                    const float v = acc[t][r] * rs;
                    *p = add ? *p + v : v;
                    const unsigned long long k = row_key(*p, row0 + r);
                    mine = k > mine ? k : mine;
                }
    };
    /* the first row group apart, so the words loaded ahead die with it */
    int row0 = first;
    if (AHEAD && row0 < n_out) group(row0, true), row0 += n_blocks * WARPS * R;
    for (; row0 < n_out; row0 += n_blocks * WARPS * R) group(row0, false);
    if constexpr (late_trigger<F>::value) pdl_launch_dependents();
    if (best) block_offer_best(best, mine);
}
template <class F, int WARPS, int R, int U, int NT>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8(const uint8_t *__restrict__ W, size_t row_bytes, act_q8 a, float *__restrict__ y, int y_stride, int n_in,
        int n_out, int add, unsigned long long *best) {
    q8_body<F, WARPS, R, U, NT>(W, row_bytes, a, y, y_stride, n_in, n_out, add, best, blockIdx.x, gridDim.x);
}

/* Split K for long rows: KS warps of a block share R rows, their 32 * KS
 * lanes striding the row's items, and add their parts through shared
 * memory (then the residual add, when asked). For a down projection (14336
 * or 4864 wide, few rows) a lane holds KS times fewer items per row, so
 * fewer dependent passes, and the short output gets KS times the warps.
 * Lab (dev/cuda/gemv_lab.cu "/ks", H200): 14336x4096 Q4_K 16.2 -> 14.6 us,
 * Q6_K 29.3 -> 25.6 (KS = 2); 4864x896 Q4_K 7.0 -> 5.7 (KS = 4); with 2
 * rows a group it loses on 4096-wide rows and on LM heads; with 4 rows a
 * group it wins on about square matrices of 3584-wide rows and up (gemv.cu
 * plan_q8). One token; the row loop is block-uniform for the barriers. */
template <class F, int WARPS, int R, int U, int KS>
__device__ __forceinline__ void ks_body(const uint8_t *__restrict__ W, size_t row_bytes, const act_q8 &a,
                                        float *__restrict__ y, int n_in, int n_out, int add, int block, int n_blocks) {
    static_assert(WARPS % KS == 0, "whole groups of KS warps");
    constexpr int GROUPS = WARPS / KS;
    pdl_launch_dependents();
    fmt_prepare<F>();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, group = warp / KS, k = warp % KS;
    const int base_first = block * GROUPS * R;
    constexpr bool AHEAD = ahead<F, R, U>::on;
    ahead<F, R, U> pre;
    if (AHEAD) {
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) wr[r] = W + (size_t)min(base_first + group * R + r, n_out - 1) * row_bytes;
        if (base_first < n_out) load_ahead<F, R, U, 32 * KS>(wr, n_in, k * 32 + lane, pre);
    } else if (!AHEAD) {
        const int first = base_first + group * R;
        if (k == 0 && first < n_out && (size_t)n_out * row_bytes <= PREFETCH_MAX_BYTES)
            prefetch_rows_l2(W + (size_t)first * row_bytes, (size_t)min(R, n_out - first) * row_bytes, lane);
    }
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    __shared__ float part[WARPS][R];
    auto rows = [&](int base_row, bool use_pre) {
        const int row0 = base_row + group * R;
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) wr[r] = W + (size_t)min(row0 + r, n_out - 1) * row_bytes;
        float acc[1][R];
        dot_rows<F, R, U, 1, 32 * KS>(wr, a, 0, n_in, k * 32 + lane, acc, pre, use_pre);
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < R; r++) part[warp][r] = acc[0][r];
        const float rs = act_rs_end(rsp);
        __syncthreads();
        if (k == 0 && lane < R && row0 + lane < n_out) {
            float v = 0.0f;
#pragma unroll
            for (int j = 0; j < KS; j++) v += part[group * KS + j][lane];
            v *= rs;
            float *p = y + row0 + lane;
            *p = add ? *p + v : v;
        }
        __syncthreads();
    };
    /* the first row group apart, so the words loaded ahead die with it */
    int base_row = base_first;
    if (AHEAD && base_row < n_out) rows(base_row, true), base_row += n_blocks * GROUPS * R;
    for (; base_row < n_out; base_row += n_blocks * GROUPS * R) rows(base_row, false);
}
template <class F, int WARPS, int R, int U, int KS>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8_ks(const uint8_t *__restrict__ W, size_t row_bytes, act_q8 a, float *__restrict__ y, int n_in, int n_out,
           int add) {
    ks_body<F, WARPS, R, U, KS>(W, row_bytes, a, y, n_in, n_out, add, blockIdx.x, gridDim.x);
}

/* Two GEMVs of one activation row (one token) in one grid, for two
 * matrices of different formats that would run as two launches (a model's
 * fused Q and K, Q4_K, and its V, Q6_K, in the layers where llama.cpp's
 * Q4_K_M mix gives V more bits): the first g_a blocks run the first part,
 * the rest the second; each block runs one body, so its barriers stay
 * block-uniform. A part is the split-K body or the plain one, both at U = 1,
 * as the launcher would run that matrix alone, so the outputs are bit for
 * bit the two launches'. Kernel lab (dev/cuda/gemv_lab.cu "pair"), Llama-3-8B's
 * 4096 -> 5120 Q4_K + 4096 -> 1024 Q6_K under PDL graph replay: 9.7 -> 8.6 us. */
template <class F, int R_, int KS_>
struct part_ks {
    static constexpr int KS = KS_, R = R_;             /* its plan (gemv.cu plan_q8): split K KS, R rows, U = 1 */
    static constexpr int ROWS = (GEMV_WARPS / KS) * R; /* rows a block covers */
    static __device__ __forceinline__ void run(const uint8_t *W, size_t rb, const act_q8 &a, float *y, int n_in,
                                               int n_out, int block, int n_blocks) {
        ks_body<F, GEMV_WARPS, R, 1, KS>(W, rb, a, y, n_in, n_out, 0, block, n_blocks);
    }
};
template <class F, int R_>
struct part_plain {
    static constexpr int KS = 0, R = R_; /* the plain kernel, R rows a warp, U = 1 */
    static constexpr int ROWS = GEMV_WARPS * R;
    static __device__ __forceinline__ void run(const uint8_t *W, size_t rb, const act_q8 &a, float *y, int n_in,
                                               int n_out, int block, int n_blocks) {
        q8_body<F, GEMV_WARPS, R, 1, 1>(W, rb, a, y, n_out, n_in, n_out, 0, NULL, block, n_blocks);
    }
};
template <class PA, class PB>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_q8_pair(const uint8_t *__restrict__ WA, size_t rb_a, int n_a, const uint8_t *__restrict__ WB, size_t rb_b,
             int n_b, act_q8 a, float *__restrict__ y_a, float *__restrict__ y_b, int n_in, int g_a) {
    if ((int)blockIdx.x < g_a) PA::run(WA, rb_a, a, y_a, n_in, n_a, blockIdx.x, g_a);
    else PB::run(WB, rb_b, a, y_b, n_in, n_b, blockIdx.x - g_a, gridDim.x - g_a);
}

/* The gated feed-forward's first half in one pass: h[t][row] =
 * act(gate[row] . x[t]) * (up[row] . x[t]). A warp takes R rows of each
 * matrix (2R dots sharing the activation loads); both matrices have format F
 * and the same row bytes. */
template <class F, int WARPS, int R, int U, int NT>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8_glu(const uint8_t *__restrict__ Wg, const uint8_t *__restrict__ Wu, size_t row_bytes, act_q8 a,
            float *__restrict__ h, int h_stride, int n_in, int n_out, int act) {
    pdl_launch_dependents();
    fmt_prepare<F>();
    const int lane = threadIdx.x & 31, t0 = blockIdx.y * NT;
    const int first = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * R;
    constexpr bool AHEAD = ahead<F, 2 * R, U>::on && NT == 1;
    ahead<F, 2 * R, U> pre;
    if (AHEAD) {
        const uint8_t *wr[2 * R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const size_t off = (size_t)min(first + r, n_out - 1) * row_bytes;
            wr[r] = Wg + off, wr[R + r] = Wu + off;
        }
        if (first < n_out) load_ahead<F, 2 * R, U, 32>(wr, n_in, lane, pre);
    } else if (!AHEAD && first < n_out && 2 * (size_t)n_out * row_bytes <= PREFETCH_MAX_BYTES) {
        const size_t bytes = (size_t)min(R, n_out - first) * row_bytes;
        prefetch_rows_l2(Wg + (size_t)first * row_bytes, bytes, lane);
        prefetch_rows_l2(Wu + (size_t)first * row_bytes, bytes, lane);
    }
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    auto group = [&](int row0, bool use_pre) {
        const uint8_t *wr[2 * R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const size_t off = (size_t)min(row0 + r, n_out - 1) * row_bytes;
            wr[r] = Wg + off;
            wr[R + r] = Wu + off;
        }
        float acc[NT][2 * R];
        dot_rows<F, 2 * R, U, NT>(wr, a, t0, n_in, lane, acc, pre, use_pre);
        const float rs = act_rs_end(rsp);
#pragma unroll
        for (int t = 0; t < NT; t++)
#pragma unroll
            for (int r = 0; r < R; r++)
                if (lane == t && t0 + t < a.n_tok && row0 + r < n_out)
                    h[(size_t)(t0 + t) * h_stride + row0 + r] = glu_act(act, acc[t][r] * rs) * (acc[t][R + r] * rs);
    };
    /* the first row group apart, so the words loaded ahead die with it */
    int row0 = first;
    if (AHEAD && row0 < n_out) group(row0, true), row0 += gridDim.x * WARPS * R;
    for (; row0 < n_out; row0 += gridDim.x * WARPS * R) group(row0, false);
}

/* F16 / BF16 weights against float x: each lane reads 8 weights (16 bytes)
 * and 8 floats per step, fp32 FMA. VEC needs n_in % 8 == 0 (rows 16-byte
 * aligned); otherwise one element per lane per step. A lane issues the loads
 * of U steps before the first FMA (a step past the row's end loads the
 * row's last step again and adds nothing), then adds them in step order, so
 * the bits do not depend on U. A 14336-wide row is 56 steps a lane: at one
 * step in flight that is a chain of ~56 memory round trips per warp, which
 * bounded the down projection's shape at 80-82% of copy bandwidth. Kernel
 * lab, H200, U = 1 -> 4 (F16_U): 14336 x 4096 34.3 -> 28.3 us (97%; llama.cpp
 * 29.7), 4096 x 4096 11.6 -> 9.7, 4096 x 128256 262 -> 240 (v37).
 * blockIdx.y is the token (prefill re-reads the weights per token, from L2
 * when they fit: the float path serves F16/BF16 files, not the quantized
 * ones prefill is tuned for). */
template <bool BF16>
__device__ __forceinline__ float f16x8_dot(const uint4 w, const float4 x0, const float4 x1, float acc) {
    const uint32_t ww[4] = {w.x, w.y, w.z, w.w};
    const float xx[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float lo, hi;
        if (BF16) lo = __uint_as_float(ww[k] << 16), hi = __uint_as_float(ww[k] & 0xFFFF0000u);
        else lo = h2f(ww[k]), hi = h2f(ww[k] >> 16);
        acc = fmaf(lo, xx[2 * k], acc);
        acc = fmaf(hi, xx[2 * k + 1], acc);
    }
    return acc;
}
template <bool BF16, bool VEC, int U = 1>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_f16(const uint8_t *__restrict__ W, size_t row_bytes, const float *__restrict__ x, int x_stride,
         float *__restrict__ y, int y_stride, int n_in, int n_out, int add, unsigned long long *best) {
    pdl_launch_dependents();
    pdl_wait();
    const int lane = threadIdx.x & 31;
    x += (size_t)blockIdx.y * x_stride;
    y += (size_t)blockIdx.y * y_stride;
    unsigned long long mine = 0;
    for (int row = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5); row < n_out; row += gridDim.x * GEMV_WARPS) {
        const uint16_t *wr = (const uint16_t *)(W + (size_t)row * row_bytes);
        float acc = 0.0f;
        if (VEC) {
            for (int i0 = 8 * lane; i0 < n_in; i0 += 256 * U) {
                uint4 w[U];
                float4 x0[U], x1[U];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const int i = min(i0 + 256 * u, n_in - 8);
                    w[u] = ldw((const uint4 *)(wr + i));
                    x0[u] = __ldg((const float4 *)(x + i)), x1[u] = __ldg((const float4 *)(x + i + 4));
                }
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (i0 + 256 * u < n_in) acc = f16x8_dot<BF16>(w[u], x0[u], x1[u], acc);
            }
        } else {
            for (int i = lane; i < n_in; i += 32) {
                const uint32_t h = ldw(wr + i);
                acc = fmaf(BF16 ? __uint_as_float(h << 16) : h2f(h), __ldg(x + i), acc);
            }
        }
        acc = warp_sum(acc);
        if (lane == 0) {
            y[row] = add ? y[row] + acc : acc;
            const unsigned long long k = row_key(y[row], row);
            mine = k > mine ? k : mine;
        }
    }
    if (best) block_offer_best(best, mine);
}

/* h = act(g) * u elementwise, for a feed-forward whose gate and up matrices
 * cannot share the fused kernel (different formats, or float weights):
 * g and u are n_tok rows of n, h may alias g. */
static __global__ void glu_rows(const float *g, const float *u, float *h, int64_t n, int act) {
    pdl_launch_dependents();
    pdl_wait();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) h[i] = glu_act(act, g[i]) * u[i];
}

#endif
