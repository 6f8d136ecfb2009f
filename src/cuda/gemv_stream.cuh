/* The staged GEMV, for LM heads: weights come to shared memory by bulk copy
 * (the Hopper copy engine, cp.async.bulk), ST tiles in flight a block, and
 * the warps compute from there.
 *
 * Why. The register-fed kernels (gemv_kernels.cuh) hold a warp's weight words
 * in registers between load and dot, so a warp issues no new loads while its
 * dots run. Here one thread asks for a tile (TR whole rows, one contiguous
 * run of bytes) per stage and the copy engine fills it while the warps
 * compute on another, at no register cost; the first ST tiles are asked for
 * before pdl_wait, since weights do not depend on the kernel before. On the
 * H200 it wins where the stream is long: an LM head (4096 x 128256 Q4_K 93.2
 * -> 75.9 us, 92% of copy bandwidth). On the per-layer matrices (9-66 MB) it
 * ties or loses (14336 x 4096 Q4_K 13.3 -> 18.0 us at best; the gate/up pair
 * 21.2 either way): there a kernel's ramp and drain, not its loads in
 * flight, set the time; a kernel that only reads the bytes takes 9.8 us
 * for those 33 MB (bench/gpu-decode-notes.md v38).
 *
 * Work in a tile: TR rows over WARPS warps. TR >= WARPS: each warp takes TR /
 * WARPS rows whole, its lanes adding their items in the order of every
 * other launch (gemv_kernels.cuh dot_rows), so the bits are the same. TR <
 * WARPS (the kernel lab's variants): KS = WARPS / TR warps share a row and
 * add their parts through shared memory. Activations are read as the other
 * kernels read them (int8 blocks from global memory; they stay in L1). One
 * token; the fused greedy pick as gemv_q8's.
 */
#ifndef NIB_CUDA_GEMV_STREAM_CUH
#define NIB_CUDA_GEMV_STREAM_CUH

#include "cuda/gemv_kernels.cuh"

/* The bulk copy and its barriers are sm_90 instructions. Older targets of
 * a full build compile these helpers as a trap: the launchers take the
 * staged kernels only on devices of compute capability 9.0 and up. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define NIB_BULK(code) __trap()
#else
#define NIB_BULK(code) code
#endif

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
    NIB_BULK(asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory"));
}
/* makes the initialised barriers visible to the copy engine */
__device__ __forceinline__ void mbar_fence_init() {
    NIB_BULK(asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"));
}
/* one arrival that also expects `bytes` from the copy engine */
__device__ __forceinline__ void mbar_expect(uint64_t *bar, uint32_t bytes) {
    NIB_BULK(asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
                          : "memory"));
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        NIB_BULK(asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity)
            : "memory"));
    } while (!done);
}
/* bytes (a multiple of 16) of weights from global src to shared dst (both
 * 16-byte aligned), completing on bar; evict-first in L2 (ld_weights.cuh) */
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    NIB_BULK(asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::
            "r"(smem_u32(dst)),
        "l"(src), "r"(bytes), "r"(smem_u32(bar)), "l"(ldw_policy())
        : "memory"));
}

/* A block's start on a tiled stream: thread 0 sets up the ST stage
 * barriers, then asks for the block's first ST tiles (blockIdx.x, + gridDim.x,
 * ...; ask(t, s) puts tile t into stage s). */
template <int ST, class Ask>
__device__ __forceinline__ void stages_start(uint64_t (&full)[ST], int n_tiles, Ask ask) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < ST; s++) mbar_init(&full[s], 1);
        mbar_fence_init();
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int s = 0; s < ST; s++)
            if (blockIdx.x + s * gridDim.x < n_tiles) ask(blockIdx.x + s * gridDim.x, s);
}

/* bytes a stage holds for TR rows: the rows' 16-byte aligned cover */
static inline size_t stream_stage_bytes(size_t row_bytes, int tr) { return (tr * row_bytes + 15 + 15) / 16 * 16; }

template <class F, int WARPS, int TR, int ST>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8_stream(const uint8_t *__restrict__ W, size_t row_bytes, act_q8 a, float *__restrict__ y, int n_in, int n_out,
               int add, uint32_t stage_bytes, unsigned long long *best) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    __trap(); /* never launched before sm_90 (gemv.cu stream_setup); nothing to compile there */
#else
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
    stages_start<ST>(full, n_tiles, ask);
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
#endif
}

#endif
