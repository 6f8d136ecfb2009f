/* The staged GEMV: weights come to shared memory by bulk copy (the Hopper
 * copy engine, cp.async.bulk), ST tiles in flight a block, and the warps
 * compute from there.
 *
 * Why. The register-fed kernels (gemv_kernels.cuh) hold a warp's weight words
 * in registers between load and dot, so the bytes a warp has in flight end
 * when its loads return, and it issues no more until its dots are done. On
 * the H200 under Nsight Compute the Q4_K split-K kernel on 14336 x 4096 ran
 * at 50% of DRAM bandwidth with its schedulers issuing in 36% of cycles and
 * waiting on loads in half the rest: neither bound, each warp alternating
 * (bench/gpu-decode-notes.md v38). Here one thread asks for a tile (TR whole
 * rows, one contiguous run of bytes) per stage and the copy engine fills it,
 * so the next ST - 1 tiles stream in while the warps compute on one, at the
 * cost of no registers; the first ST tiles are asked for before pdl_wait,
 * since weights do not depend on the kernel before.
 *
 * Work in a tile: TR rows over WARPS warps. TR >= WARPS: each warp takes TR /
 * WARPS rows whole. TR < WARPS: KS = WARPS / TR warps share a row, their
 * lanes striding its items, and add their parts through shared memory.
 * Activations are read as the other kernels read them (int8 blocks from
 * global memory; they stay in L1). One token.
 */
#ifndef NIB_CUDA_GEMV_STREAM_CUH
#define NIB_CUDA_GEMV_STREAM_CUH

#include "cuda/gemv_kernels.cuh"

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
/* one arrival that also expects `bytes` from the copy engine */
__device__ __forceinline__ void mbar_expect(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity)
            : "memory");
    } while (!done);
}
/* bytes (a multiple of 16) from global src to shared dst (both 16-byte
 * aligned), completing on bar */
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
}

/* bytes a stage holds for TR rows: the rows' 16-byte aligned cover */
static inline size_t stream_stage_bytes(size_t row_bytes, int tr) { return (tr * row_bytes + 15 + 15) / 16 * 16; }

template <class F, int WARPS, int TR, int ST>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8_stream(const uint8_t *__restrict__ W, size_t row_bytes, act_q8 a, float *__restrict__ y, int n_in, int n_out,
               int add, uint32_t stage_bytes, unsigned long long *best) {
    constexpr int RW = TR >= WARPS ? TR / WARPS : 1, KS = TR >= WARPS ? 1 : WARPS / TR;
    static_assert(TR >= WARPS ? TR % WARPS == 0 : WARPS % TR == 0, "whole rows a warp or whole warps a row");
    extern __shared__ __align__(128) uint8_t stage[];
    __shared__ uint64_t full[ST];
    __shared__ float part[2][WARPS];
    pdl_launch_dependents();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n_tiles = (n_out + TR - 1) / TR;
    /* tile t into stage s: the aligned cover of its rows; returns nothing,
     * the offset of row 0 in the stage is (start & 15) */
    auto ask = [&](int t, int s) {
        const int rows = min(TR, n_out - t * TR);
        const uintptr_t start = (uintptr_t)(W + (size_t)t * TR * row_bytes);
        const uintptr_t a0 = start & ~(uintptr_t)15, a1 = (start + rows * row_bytes + 15) & ~(uintptr_t)15;
        mbar_expect(&full[s], (uint32_t)(a1 - a0));
        bulk_copy(stage + (size_t)s * stage_bytes, (const void *)a0, (uint32_t)(a1 - a0), &full[s]);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < ST; s++) mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int s = 0; s < ST; s++)
            if (blockIdx.x + s * gridDim.x < n_tiles) ask(blockIdx.x + s * gridDim.x, s);
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    constexpr int IPB = F::QK / F::CH;
    const int n_items = n_in / F::CH;
    const int slot = KS == 1 ? warp * RW : warp / KS, k = warp % KS;
    unsigned long long mine = 0; /* the fused greedy pick (row_key), as gemv_q8 */
    int i = 0;
    for (int t = blockIdx.x; t < n_tiles; t += gridDim.x, i++) {
        const int s = i % ST;
        mbar_wait(&full[s], (uint32_t)(i / ST) & 1u);
        const uint8_t *base = stage + (size_t)s * stage_bytes + ((uintptr_t)(W + (size_t)t * TR * row_bytes) & 15);
        const int rows = min(TR, n_out - t * TR);
        const uint8_t *wr[RW];
#pragma unroll
        for (int r = 0; r < RW; r++) wr[r] = base + (size_t)min(slot + r, rows - 1) * row_bytes;
        float acc[RW];
#pragma unroll
        for (int r = 0; r < RW; r++) acc[r] = 0.0f;
#pragma unroll 2
        for (int it = k * 32 + lane; it < n_items; it += 32 * KS) {
            const int ib = it / IPB, sub = it % IPB;
            const int8_t *xq = a.xq + (size_t)ib * F::QK;
            const float2 *xds = a.xds + (size_t)ib * (F::QK / 32);
#pragma unroll
            for (int r = 0; r < RW; r++)
                acc[r] += F::template dot<ld_shared>(wr[r] + (size_t)ib * F::BYTES, sub, xq, xds);
        }
#pragma unroll
        for (int r = 0; r < RW; r++) acc[r] = warp_sum(acc[r]);
        const float rs = act_rs_end(rsp);
        if (KS > 1 && lane == 0) part[i & 1][warp] = acc[0];
        __syncthreads(); /* every warp is done with stage s (and its part is written) */
        if (threadIdx.x == 0 && t + ST * (int)gridDim.x < n_tiles) ask(t + ST * gridDim.x, s);
        if (KS == 1) {
            if (lane == 0)
#pragma unroll
                for (int r = 0; r < RW; r++)
                    if (slot + r < rows) {
                        float *p = y + (size_t)t * TR + slot + r;
                        const float v = acc[r] * rs;
                        *p = add ? *p + v : v;
                        const unsigned long long key = row_key(*p, t * TR + slot + r);
                        mine = key > mine ? key : mine;
                    }
        } else if (k == 0 && lane == 0 && slot < rows) {
            float v = 0.0f;
#pragma unroll
            for (int j = 0; j < KS; j++) v += part[i & 1][slot * KS + j];
            v *= rs;
            float *p = y + (size_t)t * TR + slot;
            *p = add ? *p + v : v;
            const unsigned long long key = row_key(*p, t * TR + slot);
            mine = key > mine ? key : mine;
        }
    }
    if (best) block_offer_best(best, mine);
}

/* The per-warp form: each warp streams its own rows through ST stages of its
 * own, a chunk of 32 * U items (whole blocks) a stage, so a chunk is
 * computed as soon as it lands (one item per lane per u) and the next asked
 * for at once: no block barrier, fine-grained like the register kernels, and
 * ST chunks in flight a warp at no register cost. A warp's rows are rows g,
 * g + all warps, ...; its chunk sequence runs on across its rows, so the
 * pipeline does not drain between them. */
template <class F, int U>
struct wstream_geo {
    static constexpr int IPB = F::QK / F::CH;
    static_assert((32 * U) % IPB == 0, "a chunk of whole blocks");
    static constexpr int NB = 32 * U / IPB; /* blocks a chunk */
};
static inline uint32_t wstream_stage_bytes(int nb, int bytes) { return (uint32_t)((nb * bytes + 15 + 15) / 16 * 16); }

template <class F, int WARPS, int U, int ST>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8_wstream(const uint8_t *__restrict__ W, size_t row_bytes, act_q8 a, float *__restrict__ y, int n_in, int n_out,
                int add, uint32_t stage_bytes) {
    constexpr int IPB = wstream_geo<F, U>::IPB, NB = wstream_geo<F, U>::NB;
    extern __shared__ __align__(128) uint8_t stage_all[];
    __shared__ uint64_t full_all[WARPS][ST];
    pdl_launch_dependents();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    uint8_t *stage = stage_all + (size_t)warp * ST * stage_bytes;
    uint64_t *full = full_all[warp];
    const int n_blocks = n_in / F::QK, n_chunks = (n_blocks + NB - 1) / NB;
    const int all_warps = gridDim.x * WARPS;
    int prow = blockIdx.x * WARPS + warp, pc = 0; /* the next chunk to ask for */
    auto ask = [&](int s) {                        /* lane 0: chunk (prow, pc) into stage s, then advance */
        const int nb = min(NB, n_blocks - pc * NB);
        const uintptr_t start = (uintptr_t)(W + (size_t)prow * row_bytes + (size_t)pc * NB * F::BYTES);
        const uintptr_t a0 = start & ~(uintptr_t)15, a1 = (start + (size_t)nb * F::BYTES + 15) & ~(uintptr_t)15;
        mbar_expect(&full[s], (uint32_t)(a1 - a0));
        bulk_copy(stage + (size_t)s * stage_bytes, (const void *)a0, (uint32_t)(a1 - a0), &full[s]);
        if (++pc == n_chunks) pc = 0, prow += all_warps;
    };
    if (lane == 0) {
        for (int s = 0; s < ST; s++) mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int s = 0; s < ST && prow < n_out; s++) ask(s);
    }
    __syncwarp();
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    int j = 0; /* chunks consumed */
    for (int row = blockIdx.x * WARPS + warp; row < n_out; row += all_warps) {
        float acc = 0.0f;
        const uintptr_t row_start = (uintptr_t)(W + (size_t)row * row_bytes);
        for (int c = 0; c < n_chunks; c++, j++) {
            const int s = j % ST;
            mbar_wait(&full[s], (uint32_t)(j / ST) & 1u);
            const uintptr_t start = row_start + (size_t)c * NB * F::BYTES;
            const uint8_t *base = stage + (size_t)s * stage_bytes + (start & 15);
            const int n_items = min(NB, n_blocks - c * NB) * IPB;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int it = lane + 32 * u;
                if (it < n_items) {
                    const int ib = it / IPB, sub = it % IPB, gb = c * NB + ib;
                    acc += F::template dot<ld_shared>(base + (size_t)ib * F::BYTES, sub, a.xq + (size_t)gb * F::QK,
                                                      a.xds + (size_t)gb * (F::QK / 32));
                }
            }
            __syncwarp(); /* every lane is done with stage s */
            if (lane == 0 && prow < n_out) ask(s);
        }
        acc = warp_sum(acc);
        const float rs = act_rs_end(rsp);
        if (lane == 0) {
            float *p = y + row;
            const float v = acc * rs;
            *p = add ? *p + v : v;
        }
    }
}

#endif
