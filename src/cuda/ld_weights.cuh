/* Weight loads that leave L2 to the step's small data.
 *
 * One decode step streams every weight once (4.6 GB for Llama-3-8B Q4_K_M)
 * through a 60 MB L2, so with plain loads the lines a kernel of the step
 * writes and a later one reads (the residual row, h, the quantized
 * activations, the KV cache's new rows, the norm weights) are pushed out by
 * weight lines that will never be read again before the next token, and
 * every such read on the step's dependency chain becomes a DRAM round trip.
 * Loaded with an L2 evict-first policy, weight lines are the first the L2
 * gives up, and the step's own data stays. Llama-3-8B Q4_K_M tg128 on the
 * H200, the tiled kernels' weight loads alone: 609.7 -> 633.1 t/s (+3.8%;
 * bench/gpu-decode-notes.md v104). Not keeping the lines in L1 as well
 * (L1::no_allocate) changed nothing there, so L1 is left as it was.
 *
 * The asm is not volatile: like __ldg, a load of constant weights is pure,
 * so the compiler may merge equal loads (the item kernels rely on it,
 * gemv_kernels.cuh) and hoist them above pdl_wait. The policy is a 64-bit
 * register made by createpolicy, an instruction without memory access; the
 * compiler merges some of them (the PTX of a tiled kernel holds 7 to 29,
 * about one for two loads) and the 8B's tiled kernels' registers did not
 * change. */
#ifndef NIB_CUDA_LD_WEIGHTS_CUH
#define NIB_CUDA_LD_WEIGHTS_CUH

#include <stdint.h>

__device__ __forceinline__ uint64_t ldw_policy() {
    uint64_t p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ uint4 ldw(const uint4 *p) {
    uint4 v;
    asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "l"(ldw_policy()));
    return v;
}
__device__ __forceinline__ uint2 ldw(const uint2 *p) {
    uint2 v;
    asm("ld.global.nc.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(v.x), "=r"(v.y) : "l"(p), "l"(ldw_policy()));
    return v;
}
__device__ __forceinline__ uint32_t ldw(const uint32_t *p) {
    uint32_t v;
    asm("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(ldw_policy()));
    return v;
}
__device__ __forceinline__ unsigned short ldw(const unsigned short *p) {
    unsigned short v;
    asm("ld.global.nc.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(v) : "l"(p), "l"(ldw_policy()));
    return v;
}
__device__ __forceinline__ uint8_t ldw(const uint8_t *p) {
    uint32_t v;
    asm("ld.global.nc.L2::cache_hint.u8 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(ldw_policy()));
    return (uint8_t)v;
}
/* Floats travel as their bits: the same load instruction, no second asm. */
__device__ __forceinline__ float ldw(const float *p) {
    return __uint_as_float(ldw(reinterpret_cast<const uint32_t *>(p)));
}
__device__ __forceinline__ float4 ldw(const float4 *p) {
    const uint4 v = ldw(reinterpret_cast<const uint4 *>(p));
    return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z), __uint_as_float(v.w));
}

#endif
