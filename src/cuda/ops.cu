/* The forward step's small ops: residual add + RMSNorm + activation
 * quantization, the Q/K/V epilogue (bias, QK-norm, RoPE, KV-cache store), the
 * logit softcap and the greedy argmax. See cuda_ops.h for what each computes.
 *
 * Rounding. Each op mirrors its CPU reference step by step, including where
 * the CPU rounds an intermediate to float: products and sums that the CPU
 * rounds separately use __fmul_rn/__fadd_rn here, so nvcc cannot contract
 * them into one FMA (the CPU build runs with -ffp-contract=off). Sums of
 * squares are in double as in ops.c; only their order differs. */
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>

#include "cuda/cuda_internal.h"
#include "cuda/act_q8.cuh"
#include "cuda/cuda_ops.h"
#include "cuda/pdl.cuh"
#include "cuda/rope.cuh"

#define NORM_THREADS 256

/* Sum of a double over the block (blockDim.x a multiple of 32, <= 1024). */
__device__ double block_sum_d(double v) {
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
__device__ float rms_inv(const float *x, int n, float eps) {
    double ss = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += (double)x[i] * (double)x[i];
    ss = block_sum_d(ss);
    return (float)(1.0 / sqrt(ss / (double)n + (double)eps));
}

/* One block of up to 1024 threads per token row, the row held in registers
 * (PER_T elements per thread, element i = k * blockDim + tid, so a warp owns
 * 32 consecutive elements in each pass k: one quantization block). A single
 * 256-thread block looping over the row took 19 us at n = 4096 inside a
 * decode step (ncu on the H200): the row's passes ran one after another on
 * one SM; with the row spread over 1024 threads each pass is one load. */
template <int PER_T>
__global__ void __launch_bounds__(1024) add_norm_kernel(nib_cuda_norm_args a, int qs_stride, size_t scale_off) {
    pdl_launch_dependents();
    const int t = blockIdx.x, n = a.n, nt = blockDim.x;
    float *x = a.x + (size_t)t * n;
    /* the norm weights before pdl_wait (they are cold: a whole step of
     * weights streamed through L2 since this layer last ran, and do not
     * depend on the kernel before), then the row: one round trip after the
     * wait, not one per step of the norm */
    float xv[PER_T], wv[PER_T], pv[PER_T];
#pragma unroll
    for (int k = 0; k < PER_T; k++) {
        const int i = k * nt + threadIdx.x;
        wv[k] = i < n ? __ldg(a.norm_w + i) : 0.0f;
        pv[k] = i < n && a.post_w ? __ldg(a.post_w + i) : 0.0f;
    }
    pdl_wait();
    if (a.act && t == 0) /* no deferred norm */
        act_scale_clear((act_scale *)((uint8_t *)a.act + scale_off), 0, (int)threadIdx.x, (int)blockDim.x);
#pragma unroll
    for (int k = 0; k < PER_T; k++) {
        const int i = k * nt + threadIdx.x;
        xv[k] = i < n ? x[i] : 0.0f;
    }
    if (a.o) {
        const float *o = a.o + (size_t)t * n;
        float ov[PER_T];
        double ss = 0.0;
#pragma unroll
        for (int k = 0; k < PER_T; k++) {
            const int i = k * nt + threadIdx.x;
            ov[k] = i < n ? o[i] : 0.0f;
            ss += (double)ov[k] * (double)ov[k];
        }
        float inv_o = 1.0f;
        if (a.post_w) inv_o = (float)(1.0 / sqrt(block_sum_d(ss) / (double)n + (double)a.eps));
#pragma unroll
        for (int k = 0; k < PER_T; k++) {
            const int i = k * nt + threadIdx.x;
            if (i >= n) continue;
            /* as context.c: o normed (rounded) first, then added */
            const float add = a.post_w ? __fmul_rn(__fmul_rn(ov[k], inv_o), pv[k]) : ov[k];
            xv[k] = __fadd_rn(xv[k], add);
            x[i] = xv[k];
        }
    }
    double ss = 0.0;
#pragma unroll
    for (int k = 0; k < PER_T; k++) ss += (double)xv[k] * (double)xv[k];
    const float inv = (float)(1.0 / sqrt(block_sum_d(ss) / (double)n + (double)a.eps));
    float *xn = a.xn + (size_t)t * n;
    int8_t *qs = a.act ? (int8_t *)a.act + (size_t)t * qs_stride : NULL;
    float2 *ds = a.act ? (float2 *)((uint8_t *)a.act + (size_t)qs_stride * a.n_tok) + (size_t)t * (n / 32) : NULL;
#pragma unroll
    for (int k = 0; k < PER_T; k++) {
        const int i = k * nt + threadIdx.x;
        if (k * nt >= n) break;  /* whole warps leave: n % 32 == 0 when act is set */
        const float v = i < n ? __fmul_rn(__fmul_rn(xv[k], inv), wv[k]) : 0.0f;
        if (i < n) xn[i] = v;
        if (!qs) continue;
        /* as quantize_act_q8, so both give the same blocks; n % 32 == 0 (act
         * requires it), so a warp is wholly inside the row or wholly past it */
        if (i < n) quantize_warp32(v, qs + i, ds + i / 32);
    }
}

#define NORM_MAX_PER_T 16

/* A deferred norm block's end: its run's sum of squares (ss, this thread's
 * part) over n into the trailer's part blockIdx.x, block 0's plus eps, and
 * block 0 zeroing the parts no block writes (act_q8.cuh's act_scale). */
__device__ __forceinline__ void deferred_part_store(double ss, int n, float eps, act_scale *sc) {
    ss = block_sum_d(ss) / (double)n;
    if (threadIdx.x == 0) sc->part[blockIdx.x] = blockIdx.x == 0 ? ss + (double)eps : ss;
    if (blockIdx.x == 0) act_scale_clear(sc, (int)gridDim.x, (int)threadIdx.x, (int)blockDim.x);
}

/* The deferred norm of one row (nib_cuda_norm_args.defer): blocks of
 * NORM_THREADS take runs of `per_block` elements, quantize x * w (without
 * 1/rms: act_q8.cuh's act_scale) and leave their run's sum of squares in the
 * trailer. No block waits for another, so the row is spread over several
 * SMs; the single-block add_norm_kernel cost 3.9 us per norm at n = 4096
 * inside a Llama-3-8B step (2.1 at 896), about its load-reduce-write chain
 * on one SM. */
__global__ void __launch_bounds__(NORM_THREADS) norm_q8_deferred(const float *__restrict__ x,
                                                                 const float *__restrict__ w, int8_t *__restrict__ qs,
                                                                 float2 *__restrict__ ds, act_scale *sc, int n,
                                                                 float eps, int per_block) {
    pdl_launch_dependents();
    const int lo = blockIdx.x * per_block, hi = min(lo + per_block, n);
    /* the first pass's norm weight before pdl_wait: a weight, cold in L2 */
    const float w0 = lo + (int)threadIdx.x < hi ? __ldg(w + lo + threadIdx.x) : 0.0f;
    pdl_wait();
    double ss = 0.0;
    for (int i0 = lo; i0 < hi; i0 += NORM_THREADS) {
        const int i = i0 + threadIdx.x; /* n % 32 == 0: whole warps are inside or past the row */
        if (i < hi) {
            const float v = x[i];
            ss += (double)v * (double)v;
            quantize_warp32(__fmul_rn(v, i0 == lo ? w0 : __ldg(w + i)), qs + i, ds + i / 32);
        }
    }
    deferred_part_store(ss, n, eps, sc);
}

/* The deferred norm after Gemma's sandwich norm, one token: x += rmsnorm(o)
 * * post_w, then x * w quantized with its partial sums as norm_q8_deferred
 * does. o's sum of squares needs the whole row, so every block reads all of
 * o (POST_MAX_PER_T elements a thread at most: n <= 6,144) and reduces it
 * itself: the same bits in every block, no block waits for another. Then
 * each block forms and quantizes its run of NORM_THREADS elements.
 * add_norm_kernel's rounding, step for step. Against add_norm_kernel (one
 * block, two reductions in a row), tg128 Gemma 3 12B Q4_K_M +10.6%, 270M
 * +4.1%; v82's version, whose blocks met at a counter to share the sum, was
 * level on the 12B and lost 11% on the 270M (bench/gpu-decode-notes.md). */
#define POST_MAX_PER_T 24
static_assert(POST_MAX_PER_T * NORM_THREADS == NIB_CUDA_POST_DEFER_MAX_N, "cuda_ops.h's bound");
__global__ void __launch_bounds__(NORM_THREADS) norm_q8_post_deferred(float *__restrict__ x, const float *__restrict__ o,
                                                                      const float *__restrict__ pw,
                                                                      const float *__restrict__ w, int8_t *__restrict__ qs,
                                                                      float2 *__restrict__ ds, act_scale *sc, int n,
                                                                      float eps) {
    pdl_launch_dependents();
    const int i = blockIdx.x * NORM_THREADS + (int)threadIdx.x; /* this thread's element of the run */
    const float wi = i < n ? __ldg(w + i) : 0.0f, pi = i < n ? __ldg(pw + i) : 0.0f; /* weights: before the wait */
    pdl_wait();
    float ov[POST_MAX_PER_T];
#pragma unroll
    for (int k = 0; k < POST_MAX_PER_T; k++) {
        const int j = k * NORM_THREADS + (int)threadIdx.x;
        ov[k] = j < n ? o[j] : 0.0f;
    }
    const float xi = i < n ? x[i] : 0.0f;
    double so = 0.0;
#pragma unroll
    for (int k = 0; k < POST_MAX_PER_T; k++) so += (double)ov[k] * (double)ov[k];
    const float inv_o = (float)(1.0 / sqrt(block_sum_d(so) / (double)n + (double)eps));
    double ss = 0.0;
    if (i < n) { /* n % 32 == 0: whole warps are inside or past the row */
        const float xv = __fadd_rn(xi, __fmul_rn(__fmul_rn(o[i], inv_o), pi));
        x[i] = xv;
        ss = (double)xv * (double)xv;
        quantize_warp32(__fmul_rn(xv, wi), qs + i, ds + i / 32);
    }
    deferred_part_store(ss, n, eps, sc);
}

static nib_status add_norm_deferred(const nib_cuda_norm_args *a, cudaStream_t st, nib_error *err) {
    uint8_t *act = (uint8_t *)a->act;
    if (a->o) {
        const cudaError_t e = pdl_launch(norm_q8_post_deferred, CEIL_DIV(a->n, NORM_THREADS), NORM_THREADS, 0, st, a->x,
                                         a->o, a->post_w, a->norm_w, (int8_t *)act,
                                         (float2 *)(act + cuda_act_qs_stride(a->n)),
                                         (act_scale *)(act + cuda_act_scale_off(a->n, 1)), a->n, a->eps);
        char what[96];
        snprintf(what, sizeof what, "launch of norm_q8_post_deferred (n %d)", a->n);
        return cuda_launch_status(e, what, err);
    }
    /* runs of whole warps, at most ACT_SCALE_PARTS of them */
    int per_block = NORM_THREADS;
    while (CEIL_DIV(a->n, per_block) > ACT_SCALE_PARTS) per_block += NORM_THREADS;
    const cudaError_t e =
        pdl_launch(norm_q8_deferred, CEIL_DIV(a->n, per_block), NORM_THREADS, 0, st, (const float *)a->x, a->norm_w,
                   (int8_t *)act, (float2 *)(act + cuda_act_qs_stride(a->n)),
                   (act_scale *)(act + cuda_act_scale_off(a->n, 1)), a->n, a->eps, per_block);
    char what[96];
    snprintf(what, sizeof what, "launch of norm_q8_deferred (n %d)", a->n);
    return cuda_launch_status(e, what, err);
}

extern "C" nib_status nib_cuda_add_norm(const nib_cuda_norm_args *a, void *stream, nib_error *err) {
    if (!a || !a->x || !a->norm_w || !a->xn || a->n_tok < 1 || a->n < 1 || (a->act && a->n % 32 != 0) ||
        a->n > 1024 * NORM_MAX_PER_T)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_add_norm: bad arguments (n %d (at most %d), %d tokens)",
                             a ? a->n : 0, 1024 * NORM_MAX_PER_T, a ? a->n_tok : 0);
    /* threads: the row in as few passes as a 1024-thread block allows, whole warps */
    const int per_t = a->n <= 1024 ? 1 : a->n <= 2048 ? 2 : a->n <= 4096 ? 4 : a->n <= 8192 ? 8 : 16;
    const int threads = CEIL_DIV(CEIL_DIV(a->n, per_t), 32) * 32;
    const int qs_stride = (int)cuda_act_qs_stride(a->n);
    const size_t so = cuda_act_scale_off(a->n, a->n_tok);
    cudaStream_t st = (cudaStream_t)stream;
    if (a->defer) {
        if (a->n_tok != 1 || !a->act || (a->o && (!a->post_w || a->n > NIB_CUDA_POST_DEFER_MAX_N)))
            return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_add_norm: a deferred norm takes one token, an activation "
                                 "buffer, and a residual add only with its post-norm and n <= %d (%d tokens, n %d, "
                                 "o %s, post_w %s, act %s)", NIB_CUDA_POST_DEFER_MAX_N, a->n_tok, a->n,
                                 a->o ? "set" : "NULL", a->post_w ? "set" : "NULL", a->act ? "set" : "NULL");
        return add_norm_deferred(a, st, err);
    }
    cudaError_t e;
    switch (per_t) {
    case 1: e = pdl_launch(add_norm_kernel<1>, a->n_tok, threads, 0, st, *a, qs_stride, so); break;
    case 2: e = pdl_launch(add_norm_kernel<2>, a->n_tok, threads, 0, st, *a, qs_stride, so); break;
    case 4: e = pdl_launch(add_norm_kernel<4>, a->n_tok, threads, 0, st, *a, qs_stride, so); break;
    case 8: e = pdl_launch(add_norm_kernel<8>, a->n_tok, threads, 0, st, *a, qs_stride, so); break;
    default: e = pdl_launch(add_norm_kernel<16>, a->n_tok, threads, 0, st, *a, qs_stride, so); break;
    }
    char what[96];
    snprintf(what, sizeof what, "launch of add_norm (n %d, %d tokens)", a->n, a->n_tok);
    return cuda_launch_status(e, what, err);
}

/* ---- Q/K/V epilogue ------------------------------------------------------------------
 * Block (t, head) with heads laid out as n_head query heads, then n_head_kv
 * key heads, then n_head_kv value heads; the head vector sits in shared
 * memory while it is normed and rotated. */
#define QKV_THREADS 128
#define QKV_MAX_HD 1024

__global__ void qkv_rope_kernel(nib_cuda_qkv_args a) {
    pdl_launch_dependents();
    __shared__ float vec[QKV_MAX_HD];
    const int t = blockIdx.x, h = blockIdx.y;
    const int p = *a.pos + t; /* the io block is copied in before the step's first kernel */
    const bool is_q = h < a.n_head, is_k = !is_q && h < a.n_head + a.n_head_kv, is_v = !is_q && !is_k;
    const int hd = is_v ? a.hd_v : a.hd_k;
    const int kvh = is_q ? 0 : (is_k ? h - a.n_head : h - a.n_head - a.n_head_kv);
    const int qs = a.q_stride ? a.q_stride : a.n_head * a.hd_k, ks = a.k_stride ? a.k_stride : a.n_head_kv * a.hd_k;
    const int vs = a.v_stride ? a.v_stride : a.n_head_kv * a.hd_v;
    const float *src;
    const float *bias;
    if (is_q) src = a.q + (size_t)t * qs + (size_t)h * hd, bias = a.bq ? a.bq + (size_t)h * hd : NULL;
    else if (is_k) src = a.k + (size_t)t * ks + (size_t)kvh * hd, bias = a.bk ? a.bk + (size_t)kvh * hd : NULL;
    else src = a.v + (size_t)t * vs + (size_t)kvh * hd, bias = a.bv ? a.bv + (size_t)kvh * hd : NULL;
    /* Before pdl_wait, while the projection still runs: what depends only
     * on the position (this thread's rotation, when one pair per thread
     * covers the head: nib_rope_table's base^(-2i/n_rot) from the host's
     * table, the angle in double) and the bias. */
    const int half = a.n_rot / 2;
    const bool pre = a.inv_freq && !is_v && half <= (int)blockDim.x && (int)threadIdx.x < half;
    float c_pre = 1.0f, s_pre = 0.0f;
    if (pre) rope_cos_sin(p, a.rope_scale, __ldg(a.inv_freq + threadIdx.x), c_pre, s_pre);
    const float *nw = is_v ? NULL : (is_q ? a.q_norm : a.k_norm);
    float b_pre[QKV_MAX_HD / QKV_THREADS], n_pre[QKV_MAX_HD / QKV_THREADS];
#pragma unroll
    for (int k = 0; k < QKV_MAX_HD / QKV_THREADS; k++) {
        const int i = k * QKV_THREADS + (int)threadIdx.x;
        b_pre[k] = bias && i < hd ? __ldg(bias + i) : 0.0f;
        n_pre[k] = nw && i < hd ? __ldg(nw + i) : 0.0f;
    }
    pdl_wait();
#pragma unroll
    for (int k = 0; k < QKV_MAX_HD / QKV_THREADS; k++) {
        const int i = k * QKV_THREADS + (int)threadIdx.x;
        if (i < hd) vec[i] = bias ? __fadd_rn(src[i], b_pre[k]) : src[i];
    }
    __syncthreads();
    if (!is_v) {
        if (nw) {
            const float inv = rms_inv(vec, hd, a.eps); /* its barriers order the reads before the writes */
#pragma unroll
            for (int k = 0; k < QKV_MAX_HD / QKV_THREADS; k++) {
                const int i = k * QKV_THREADS + (int)threadIdx.x;
                if (i < hd) vec[i] = __fmul_rn(__fmul_rn(vec[i], inv), n_pre[k]);
            }
            __syncthreads();
        }
        for (int i = threadIdx.x; i < half; i += blockDim.x) {
            /* nib_rope_table: base^(-2i/n_rot) (from the host's table when
             * given: the same pow() as the CPU's, and no pow here) and the
             * angle in double */
            float c = c_pre, s = s_pre;
            if (!pre) {
                double inv_freq;
                if (a.inv_freq) {
                    inv_freq = a.inv_freq[i];
                } else {
                    inv_freq = pow((double)a.rope_base, -2.0 * i / (double)a.n_rot);
                    if (a.rope_freqs) inv_freq /= (double)a.rope_freqs[i];
                }
                rope_cos_sin(p, a.rope_scale, inv_freq, c, s);
            }
            const int ia = a.neox ? i : 2 * i, ib = a.neox ? i + half : 2 * i + 1;
            float x0 = vec[ia], x1 = vec[ib];
            rope_rotate(x0, x1, c, s);
            vec[ia] = x0, vec[ib] = x1;
        }
        __syncthreads();
    }
    if (is_q) {
        float *dst = a.q_out ? a.q_out + ((size_t)t * a.n_head + h) * hd : a.q + (size_t)t * qs + (size_t)h * hd;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) dst[i] = vec[i];
    } else {
        uint16_t *cache = is_k ? a.k_cache : a.v_cache;
        __half *dst = (__half *)cache + ((size_t)p * a.n_head_kv + kvh) * hd;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) dst[i] = __float2half_rn(vec[i]);
    }
}

extern "C" nib_status nib_cuda_qkv_rope(const nib_cuda_qkv_args *a, void *stream, nib_error *err) {
    if (!a || !a->q || !a->k || !a->v || !a->k_cache || !a->v_cache || !a->pos || a->n_tok < 1 || a->n_head < 1 ||
        a->n_head_kv < 1 || a->hd_k < 1 || a->hd_v < 1 || a->hd_k > QKV_MAX_HD || a->hd_v > QKV_MAX_HD ||
        a->n_rot < 0 || a->n_rot > a->hd_k || a->n_rot % 2 != 0)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_qkv_rope: bad arguments (heads %d/%d, head dims %d/%d, "
                             "n_rot %d, %d tokens)", a ? a->n_head : 0, a ? a->n_head_kv : 0, a ? a->hd_k : 0,
                             a ? a->hd_v : 0, a ? a->n_rot : 0, a ? a->n_tok : 0);
    const dim3 grid(a->n_tok, a->n_head + 2 * a->n_head_kv);
    cudaError_t e = pdl_launch(qkv_rope_kernel, grid, dim3(QKV_THREADS), 0, (cudaStream_t)stream, *a);
    char what[96];
    snprintf(what, sizeof what, "launch of qkv_rope (%d+2x%d heads, %d tokens)", a->n_head, a->n_head_kv, a->n_tok);
    return cuda_launch_status(e, what, err);
}

/* ---- logits ------------------------------------------------------------------------- */
__global__ void softcap_kernel(float *x, int64_t n, float c) {
    pdl_launch_dependents();
    pdl_wait();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = c * tanhf(x[i] / c); /* as head() in context.c */
}

extern "C" nib_status nib_cuda_softcap(float *x, int64_t n, float c, void *stream, nib_error *err) {
    if (!x || n < 1 || !(c > 0.0f)) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_softcap: bad arguments");
    cudaError_t e = pdl_launch(softcap_kernel, dim3((unsigned)CEIL_DIV(n, 256)), dim3(256), 0, (cudaStream_t)stream, x,
                               n, c);
    return cuda_launch_status(e, "launch of softcap", err);
}

/* One block: each thread scans a strided slice, then a tree picks the
 * largest value, the lowest index among equals (as the CPU sampler's greedy
 * pick: the first maximum). A vocabulary of 150k floats is 0.6 MB: one SM
 * streams it in a few microseconds, under the LM head before it. */
#define ARGMAX_THREADS 1024
__global__ void __launch_bounds__(ARGMAX_THREADS) argmax_kernel(const float *x, int64_t n, uint64_t *out) {
    pdl_launch_dependents();
    pdl_wait();
    __shared__ float bv[ARGMAX_THREADS / 32];
    __shared__ int64_t bi[ARGMAX_THREADS / 32];
    float v = -INFINITY;
    int64_t idx = -1;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float xi = x[i];
        if (xi > v || (idx < 0 && xi == xi)) v = xi, idx = i; /* NaN never wins */
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xFFFFFFFFu, v, o);
        const int64_t oi = __shfl_xor_sync(0xFFFFFFFFu, idx, o);
        if (oi >= 0 && (idx < 0 || ov > v || (ov == v && oi < idx))) v = ov, idx = oi;
    }
    if ((threadIdx.x & 31) == 0) bv[threadIdx.x >> 5] = v, bi[threadIdx.x >> 5] = idx;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < ARGMAX_THREADS / 32; w++)
            if (bi[w] >= 0 && (idx < 0 || bv[w] > v || (bv[w] == v && bi[w] < idx))) v = bv[w], idx = bi[w];
        /* the key nib_cuda_matmul_argmax leaves: orderable bits << 32 | ~index */
        if (idx < 0) {
            *out = 0;
        } else {
            const uint32_t u = __float_as_uint(v), key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
            *out = ((uint64_t)key << 32) | (uint64_t)(0xFFFFFFFFu - (uint32_t)idx);
        }
    }
}

extern "C" nib_status nib_cuda_argmax(const float *x, int64_t n, uint64_t *out, void *stream, nib_error *err) {
    if (!x || !out || n < 1 || n > 0xFFFFFFFFll) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_argmax: bad arguments");
    cudaError_t e = pdl_launch(argmax_kernel, dim3(1), dim3(ARGMAX_THREADS), 0, (cudaStream_t)stream, x, n, out);
    return cuda_launch_status(e, "launch of argmax", err);
}
