/* The activation quantizer's arithmetic, shared by every kernel that writes
 * int8 activations (quantize_act_q8 in gemv_kernels.cuh, the norm in ops.cu):
 * one warp holds 32 consecutive values, one per lane; d = amax / 127,
 * q = round(v / d) half away from zero (as quant/q_legacy.c's quantize_q8),
 * s = d * sum(q) in fp32. Lane 0 writes (d, s). */
#ifndef NIB_CUDA_ACT_Q8_CUH
#define NIB_CUDA_ACT_Q8_CUH

#include <stdint.h>

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

#endif
