/* The Q/K/V epilogue of one head, shared by the qkv_rope kernel (ops.cu) and
 * the decode attention that folds it in (attention.cu, nib_cuda_attn.rope):
 * bias, QK-norm and RoPE on one head vector in shared memory, by one block of
 * QKV_THREADS threads, with the same operations in the same order in both,
 * so both give the same bits.
 *
 * Rounding mirrors the CPU reference (ops.c): products and sums it rounds
 * separately use __fmul_rn/__fadd_rn so nvcc cannot contract them into an
 * FMA; the sum of squares is in double (only its order differs from the CPU).
 */
#ifndef NIB_CUDA_QKV_EPILOGUE_CUH
#define NIB_CUDA_QKV_EPILOGUE_CUH

#include <math.h>

#include "cuda/cuda_ops.h"

#define QKV_THREADS 128
#define QKV_MAX_HD 1024
#define QKV_PER_T (QKV_MAX_HD / QKV_THREADS)

/* Sum of a double over the block (blockDim.x a multiple of 32, <= 1024). */
static __device__ __forceinline__ double block_sum_d(double v) {
    __shared__ double part[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();  /* part[] may still be read by a previous call */
    if (lane == 0) part[warp] = v;
    __syncthreads();
    double s = 0.0;
    const int nw = blockDim.x >> 5;
    for (int i = 0; i < nw; i++) s += part[i];
    return s;
}

/* 1 / sqrt(mean square + eps), as nib_rmsnorm computes it */
static __device__ __forceinline__ float rms_inv(const float *x, int n, float eps) {
    double ss = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += (double)x[i] * (double)x[i];
    ss = block_sum_d(ss);
    return (float)(1.0 / sqrt(ss / (double)n + (double)eps));
}

/* What a head's epilogue needs that does not depend on the projection's
 * output, so it can be read before pdl_wait: this thread's bias and norm
 * weights (element k * QKV_THREADS + tid) and, when one rotation pair per
 * thread covers the head and the host gave its frequency table, this
 * thread's rotation (nib_rope_table's base^(-2i/n_rot), the angle in double). */
typedef struct qkv_pre {
    float b[QKV_PER_T], n[QKV_PER_T];
    float c, s;
    bool rot; /* c, s hold this thread's rotation */
} qkv_pre;

static __device__ __forceinline__ void qkv_head_prepare(qkv_pre &pr, const nib_cuda_qkv_args &a, int hd,
                                                        const float *bias, const float *nw, bool rotate, int p) {
    const int half = a.n_rot / 2;
    pr.rot = rotate && a.inv_freq && half <= (int)blockDim.x && (int)threadIdx.x < half;
    pr.c = 1.0f, pr.s = 0.0f;
    if (pr.rot) {
        const double theta = (double)p / (double)a.rope_scale * __ldg(a.inv_freq + threadIdx.x);
        pr.c = (float)cos(theta), pr.s = (float)sin(theta);
    }
#pragma unroll
    for (int k = 0; k < QKV_PER_T; k++) {
        const int i = k * QKV_THREADS + (int)threadIdx.x;
        pr.b[k] = bias && i < hd ? __ldg(bias + i) : 0.0f;
        pr.n[k] = nw && i < hd ? __ldg(nw + i) : 0.0f;
    }
}

/* vec[0, hd) = src (+ bias); then, with rotate (a q or k head), the RMS norm
 * when has_norm and the rotation of the first n_rot dims at position p. Ends
 * with the block synchronised and vec final. */
static __device__ __forceinline__ void qkv_head_run(float *vec, const float *src, int hd, bool has_bias, bool has_norm,
                                                    bool rotate, const qkv_pre &pr, const nib_cuda_qkv_args &a,
                                                    int p) {
#pragma unroll
    for (int k = 0; k < QKV_PER_T; k++) {
        const int i = k * QKV_THREADS + (int)threadIdx.x;
        if (i < hd) vec[i] = has_bias ? __fadd_rn(src[i], pr.b[k]) : src[i];
    }
    __syncthreads();
    if (!rotate) return;
    if (has_norm) {
        const float inv = rms_inv(vec, hd, a.eps); /* its barriers order the reads before the writes */
#pragma unroll
        for (int k = 0; k < QKV_PER_T; k++) {
            const int i = k * QKV_THREADS + (int)threadIdx.x;
            if (i < hd) vec[i] = __fmul_rn(__fmul_rn(vec[i], inv), pr.n[k]);
        }
        __syncthreads();
    }
    const int half = a.n_rot / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        /* nib_rope_table: base^(-2i/n_rot) (from the host's table when given:
         * the same pow() as the CPU's, and no pow here) and the angle in double */
        float c = pr.c, s = pr.s;
        if (!pr.rot) {
            double inv_freq;
            if (a.inv_freq) {
                inv_freq = a.inv_freq[i];
            } else {
                inv_freq = pow((double)a.rope_base, -2.0 * i / (double)a.n_rot);
                if (a.rope_freqs) inv_freq /= (double)a.rope_freqs[i];
            }
            const double theta = (double)p / (double)a.rope_scale * inv_freq;
            c = (float)cos(theta), s = (float)sin(theta);
        }
        const int ia = a.neox ? i : 2 * i, ib = a.neox ? i + half : 2 * i + 1;
        const float x0 = vec[ia], x1 = vec[ib];
        vec[ia] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
        vec[ib] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    }
    __syncthreads();
}

#endif
