/* RoPE's arithmetic on the device, one definition for every kernel that
 * rotates (qkv_rope_kernel in ops.cu, the tiled Q/K/V GEMV's epilogue in
 * gemv_tiled.cuh), so both give the CPU's nib_rope_table/apply_table bits:
 * the angle p / scale * inv_freq in double, its cos and sin rounded to
 * float, and a rotation whose products and sums round separately (no
 * contraction into fma). */
#ifndef NIB_CUDA_ROPE_CUH
#define NIB_CUDA_ROPE_CUH

__device__ __forceinline__ void rope_cos_sin(int p, float rope_scale, double inv_freq, float &c, float &s) {
    const double theta = (double)p / (double)rope_scale * inv_freq;
    c = (float)cos(theta), s = (float)sin(theta);
}

/* (x0, x1) rotated by (c, s) */
__device__ __forceinline__ void rope_rotate(float &x0, float &x1, float c, float s) {
    const float r0 = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
    const float r1 = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    x0 = r0, x1 = r1;
}

#endif
