/* The activation quantizer's arithmetic, shared by every kernel that writes
 * int8 activations (quantize_act_q8 in gemv_kernels.cuh, the norm in ops.cu):
 * one warp holds 32 consecutive values, one per lane; d = amax / 127,
 * q = round(v / d) half away from zero (as quant/q_legacy.c's quantize_q8),
 * s = d * sum(q) in fp32. Lane 0 writes (d, s). */
#ifndef NIB_CUDA_ACT_Q8_CUH
#define NIB_CUDA_ACT_Q8_CUH

#include <stdint.h>

/* The trailer of an activation buffer. A deferred RMSNorm (nib_cuda_add_norm
 * with defer) quantizes x * w without the row's 1/rms, which needs the whole
 * row's sum of squares, and leaves that here as partial sums in double (one
 * per block of the norm, each over n, block 0's plus eps: their sum is
 * nib_rmsnorm's ss / n + eps). Every GEMV that reads the activation adds them
 * and scales its dot by 1/sqrt(sum) (the dot is linear in the (d, s) pairs,
 * so that is the product with the normed row). All zero: the quants are the
 * row itself (every other writer zeroes them). A norm kernel writes at most
 * ACT_SCALE_PARTS parts, which every reader adds (act_rs_begin); the output
 * projection's fused FFN norm (gemv_t32's NORM) writes one a 32-row block,
 * up to ACT_SCALE_SLOTS, which only the tiled gate/up kernels read
 * (act_rs_load4). */
#define ACT_SCALE_PARTS 32
#define ACT_SCALE_SLOTS 128 /* cuda.h's NIB_CUDA_ACT_SCALE_SLOTS */
struct act_scale {
    double part[ACT_SCALE_SLOTS];
};

/* Parts [first, ACT_SCALE_SLOTS) to zero, by threads t of nt. */
__device__ __forceinline__ void act_scale_clear(act_scale *sc, int first, int t, int nt) {
    for (int i = first + t; i < ACT_SCALE_SLOTS; i += nt) sc->part[i] = 0.0;
}

__device__ __forceinline__ void quantize_warp32(float v, int8_t *q_out, float2 *ds_out) {
    float amax = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const int q = (int)roundf(v * id);
    int sum = q;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
    *q_out = (int8_t)q;
    if ((threadIdx.x & 31) == 0) *ds_out = make_float2(d, d * (float)sum);
}

/* (int)roundf(y) for |y| < 2^22 on the FP32 pipe instead of the conversion
 * unit (16 results a clock a multiprocessor on sm_90): |y| + 0.5 rounded
 * down keeps floor(|y| + 0.5) (integers are representable), and adding 2^23
 * rounded down leaves that floor in the low mantissa bits. Checked against
 * roundf for every float of magnitude up to 132; a quant's |y| is at most
 * 127 and a little. */
__device__ __forceinline__ int round_away_fp32(float y) {
    const int m = __float_as_int(__fadd_rd(__fadd_rd(fabsf(y), 0.5f), 8388608.0f)) - 0x4B000000;
    return y < 0.0f ? -m : m;
}

/* The rule for 4 values of a block once the block's max is known: d, the 4
 * quants (returned) and their sum, which the caller adds over the block.
 * FP32_ROUND: round with round_away_fp32 (same values as roundf). */
template <bool FP32_ROUND>
__device__ __forceinline__ char4 quantize4_from_amax(float4 v, float amax, float &d, int &sum) {
    d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    auto rnd = [](float y) { return FP32_ROUND ? round_away_fp32(y) : (int)roundf(y); };
    const int q0 = rnd(v.x * id), q1 = rnd(v.y * id), q2 = rnd(v.z * id), q3 = rnd(v.w * id);
    sum = q0 + q1 + q2 + q3;
    return make_char4((signed char)q0, (signed char)q1, (signed char)q2, (signed char)q3);
}
__device__ __forceinline__ float amax4(float4 v) {
    return fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
}

/* The same rule for a block held 4 values a lane by 8 consecutive lanes
 * (lane 8b + i holds elements 4i..4i+3 of block b): the max and the integer
 * sum are order-free, so the bits are quantize_warp32's. All 8 lanes of a
 * group must call it together; other groups may be absent. */
/* the rule's numbers: the lane's 4 quants (returned), the block's d and its
 * quants' sum (every lane of the group) */
__device__ __forceinline__ char4 quantize_lanes8x4_q(float4 v, float &d, int &sum) {
    const unsigned lane = threadIdx.x & 31u, mask = 0xFFu << (lane & 24u);
    float amax = amax4(v);
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(mask, amax, o));
    const char4 q = quantize4_from_amax<false>(v, amax, d, sum);
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) sum += __shfl_xor_sync(mask, sum, o);
    return q;
}
__device__ __forceinline__ void quantize_lanes8x4(float4 v, int8_t *q_out, float2 *ds_out) {
    float d;
    int sum;
    *(char4 *)q_out = quantize_lanes8x4_q(v, d, sum);
    if ((threadIdx.x & 7u) == 0) *ds_out = make_float2(d, d * (float)sum);
}

#endif
