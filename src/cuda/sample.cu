/* Token sampling on the GPU (cuda_sample.h): top-k by radix select in two
 * kernels, then the CPU sampler's chain over the k survivors in one block.
 *
 * Keys. Every logit becomes a 64-bit key, orderable float bits << 32 |
 * (0xFFFFFFFF - id) (as row_key in gemv_kernels.cuh, but a NaN keeps its id
 * in the low half, so keys stay unique): a larger key is a larger logit, and
 * on equal logits the lower id, which is the CPU sampler's (logit desc, id
 * asc) order. NaN's high half is 0, below -inf, so a NaN is kept only when
 * fewer than k other logits exist, and the pick kernel drops it then.
 *
 * Kernel A (sample_slices): the vocabulary is cut into G slices of at most
 * SAMPLE_SLICE_MAX logits; a block of 512 threads holds its slice in
 * registers and keeps its k largest keys by radix select (8 bits a pass from
 * the top, stopping as soon as the threshold's bin holds exactly the keys
 * still needed: 2-4 passes expected on real logits, all 8 when the k-th
 * logit is tied and the ids decide), writing exactly min(k, slice length)
 * keys to scratch. Block b
 * writes at b * min(k, slice), so the G lists lie end to end.
 *
 * Kernel B (sample_pick): one block of 1024 threads takes the k largest of
 * those G * min(k, slice) keys (radix select again; they are copied to
 * shared memory first when they fit, SAMPLE_CACHE_KEYS), sorts the k (rank
 * sort up to 256, bitonic above), then runs the chain with thread i owning
 * candidate i: block scans in double for the sums, a ballot for each "first
 * i such that" (top-p's cut, min-p's cut, the draw).
 *
 * G. More slices spread the 0.6-1 MB of logits over more SMs, but kernel B
 * reads G * k keys; the slice is at least 4 * top_k_max (up to
 * SAMPLE_SLICE_MAX) so that B's input stays within a few times the vocabulary
 * / 4 even when k = top_k_max, and at least n_vocab / 128 otherwise. For
 * n_vocab 151936: top_k_max 40 gives 128 slices of 1187 (B reads 5120 keys
 * at k 40), top_k_max 1024 gives 38 slices of 4096 (B reads 1520 keys at k
 * 40, 38912 at k 1024).
 *
 * Histograms. Real logits share their top bits (sign and exponent), so the
 * first pass sends most of a warp to one bin; a warp's equal digits are
 * merged with __match_any_sync first, one shared atomic per distinct digit,
 * instead of 32 atomics serialised on one address. Warps with no key still
 * in the running skip the pass (a ballot).
 *
 * Rounding follows sampler.c step by step: l_i - l_0 and its division by
 * temp are float operations (__fsub_rn, __fdiv_rn: nothing contracted or
 * approximated), min_p * p_0 is a float product, exp is
 * (float)exp((double)x) (correctly rounded but for ~2^-29 of inputs; glibc's
 * expf, 0.502 ulp, is 1 ulp off it for about 1 input in 1600), and sums are
 * in double, accumulated by a scan instead of a loop. */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "cuda/cuda_internal.h"
#include "cuda/cuda_sample.h"
#include "cuda/pdl.cuh"

typedef unsigned long long u64;

#define SAMPLE_A_THREADS 512
#define SAMPLE_SLICE_MAX 4096   /* SAMPLE_A_THREADS * 8 keys in registers */
#define SAMPLE_SLICE_MIN 512    /* below this a block has too little to do */
#define SAMPLE_BLOCKS_WANT 128  /* about one per SM of an H100/H200 */
#define SAMPLE_B_THREADS 1024   /* one thread per candidate of the chain: >= NIB_CUDA_SAMPLE_MAX_K */
#define SAMPLE_CACHE_KEYS 4096  /* kernel B's shared copy of its input (32 KB) */
#define SAMPLE_RANK_SORT_MAX 256
#define FULL_MASK 0xFFFFFFFFu

static_assert(SAMPLE_B_THREADS >= NIB_CUDA_SAMPLE_MAX_K, "the chain gives each candidate a thread");
static_assert(SAMPLE_CACHE_KEYS >= NIB_CUDA_SAMPLE_MAX_K, "the sorted candidates reuse the cache");

/* ---- keys ------------------------------------------------------------------------ */
__device__ __forceinline__ u64 sample_key(float v, int id) {
    const uint32_t u = __float_as_uint(v);
    const uint32_t f = v != v ? 0u : (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((u64)f << 32) | (u64)(0xFFFFFFFFu - (uint32_t)id);
}
__device__ __forceinline__ float key_logit(u64 k) {
    const uint32_t f = (uint32_t)(k >> 32);
    return __uint_as_float((f & 0x80000000u) ? (f & 0x7FFFFFFFu) : ~f);
}
__device__ __forceinline__ int32_t key_id(u64 k) { return (int32_t)(0xFFFFFFFFu - (uint32_t)k); }

/* The runtime k: top_k, or top_k_max when top_k is off (< 1) or above it;
 * at most the vocabulary. Both kernels compute it alike. */
__device__ __forceinline__ int sample_k(int32_t top_k, int top_k_max, int n) {
    const int k = top_k < 1 || top_k > top_k_max ? top_k_max : top_k;
    return k < n ? k : n;
}

/* ---- block radix select ---------------------------------------------------------- */
struct radix_smem {
    unsigned int hist[2][256]; /* this pass's counts; the other is zeroed for the next */
    u64 prefix, mask;          /* the threshold's digits found so far */
    int need;                  /* keys still to take among those matching prefix */
    int done;
};

/* One key into the pass's histogram if it still matches (in). Called by
 * every lane of the warp together. */
__device__ __forceinline__ void radix_count(unsigned int *h, u64 key, bool in, int shift) {
    if (!__any_sync(FULL_MASK, in)) return;
    const unsigned d = in ? (unsigned)(key >> shift) & 0xFFu : 0x100u;
    const unsigned peers = __match_any_sync(FULL_MASK, d);
    if (in && (int)(threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&h[d], (unsigned)__popc(peers));
}

/* Warp 0: the digit whose bin holds the need-th largest matching key. Lane l
 * owns digits 255 - 8l down to 248 - 8l; a scan over lanes counts the keys
 * in higher digits. Exactly one lane writes the new state. */
__device__ __forceinline__ void radix_pick(radix_smem *s, const unsigned int *h, int shift, u64 prefix, u64 mask,
                                           int need) {
    const int lane = threadIdx.x & 31;
    unsigned c[8], tot = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) tot += (c[j] = h[255 - 8 * lane - j]);
    unsigned incl = tot;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned t = __shfl_up_sync(FULL_MASK, incl, o);
        if (lane >= o) incl += t;
    }
    unsigned above = incl - tot;
    const unsigned nd = (unsigned)need;
    if (above < nd && nd <= incl) {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (above + c[j] >= nd) {
                const unsigned d = 255u - 8u * (unsigned)lane - (unsigned)j, left = nd - above;
                s->prefix = prefix | ((u64)d << shift);
                s->mask = mask | (0xFFull << shift);
                s->need = (int)left;
                s->done = c[j] == left; /* the whole bin is taken: the threshold is found */
                break;
            }
            above += c[j];
        }
    } else if (lane == 31 && incl < nd) { /* fewer keys than asked (callers never do this): take them all */
        s->prefix = prefix, s->mask = mask, s->need = need, s->done = 1;
    }
}

/* Block-wide: afterwards s->prefix and s->mask are such that exactly k of
 * the block's keys have (key & mask) >= prefix: the k largest. Keys must be
 * unique, and at least k of them valid. each(fn) calls fn(key, valid) for
 * this thread's keys, in a count every lane of a warp shares. */
template <class Each>
__device__ void radix_select(radix_smem *s, int k, Each each) {
    u64 prefix = 0, mask = 0;
    int need = k;
    for (int i = threadIdx.x; i < 2 * 256; i += blockDim.x) (&s->hist[0][0])[i] = 0u;
    __syncthreads();
    for (int pass = 0, shift = 56; shift >= 0; pass++, shift -= 8) {
        unsigned int *h = s->hist[pass & 1];
        each([&](u64 key, bool valid) { radix_count(h, key, valid && (key & mask) == prefix, shift); });
        /* the other histogram was last read in the previous pass's pick, before its second barrier */
        for (int i = threadIdx.x; i < 256; i += blockDim.x) s->hist[(pass + 1) & 1][i] = 0u;
        __syncthreads();
        if (threadIdx.x < 32) radix_pick(s, h, shift, prefix, mask, need);
        __syncthreads();
        prefix = s->prefix, mask = s->mask, need = s->need;
        if (s->done) break; /* the same value in every thread */
    }
}

/* Append key to out[] (at *count, shared) when take; order is arbitrary.
 * Called by every lane of the warp together. */
__device__ __forceinline__ void compact(u64 key, bool take, u64 *out, int *count) {
    const unsigned bal = __ballot_sync(FULL_MASK, take);
    if (!bal) return;
    const int lane = threadIdx.x & 31, leader = __ffs(bal) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(bal));
    base = __shfl_sync(FULL_MASK, base, leader);
    if (take) out[base + __popc(bal & ((1u << lane) - 1u))] = key;
}

/* ---- kernel A: each slice's k largest -------------------------------------------- */
template <int ITEMS>
__global__ void __launch_bounds__(SAMPLE_A_THREADS)
sample_slices(const float *logits, int n, int slice, const nib_cuda_sample_params *params, int top_k_max, u64 *cand) {
    pdl_launch_dependents();
    pdl_wait();
    __shared__ radix_smem rs;
    __shared__ int count;
    const int k = sample_k(params->top_k, top_k_max, n);
    const int lo = blockIdx.x * slice, len = min(slice, n - lo);
    u64 *out = cand + (size_t)blockIdx.x * (size_t)min(k, slice);
    u64 key[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        const int i = j * SAMPLE_A_THREADS + threadIdx.x;
        key[j] = i < len ? sample_key(logits[lo + i], lo + i) : 0ull;
    }
    if (len <= k) { /* the whole slice survives */
#pragma unroll
        for (int j = 0; j < ITEMS; j++) {
            const int i = j * SAMPLE_A_THREADS + threadIdx.x;
            if (i < len) out[i] = key[j];
        }
        return;
    }
    if (threadIdx.x == 0) count = 0; /* ordered before compact() by radix_select's barriers */
    radix_select(&rs, k, [&](auto fn) {
#pragma unroll
        for (int j = 0; j < ITEMS; j++) fn(key[j], j * SAMPLE_A_THREADS + (int)threadIdx.x < len);
    });
    const u64 prefix = rs.prefix, mask = rs.mask;
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        const bool valid = j * SAMPLE_A_THREADS + (int)threadIdx.x < len;
        compact(key[j], valid && (key[j] & mask) >= prefix, out, &count);
    }
}

/* ---- kernel B: the global k largest, sorted, then the chain ------------------------ */

/* Inclusive prefix sum over the block in thread order (blockDim.x a multiple
 * of 32); part: 32 doubles of shared memory. */
__device__ double block_scan_d(double v, double *part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const double t = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o) v += t;
    }
    __syncthreads(); /* part[] may still be read by the previous call */
    if (lane == 31) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        double w = lane < nw ? part[lane] : 0.0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const double t = __shfl_up_sync(FULL_MASK, w, o);
            if (lane >= o) w += t;
        }
        part[lane] = w;
    }
    __syncthreads();
    return warp > 0 ? v + part[warp - 1] : v;
}

/* *first (INT_MAX before, shared) becomes the lowest thread index with
 * cond; read it after a barrier. */
__device__ __forceinline__ void block_first(bool cond, int *first) {
    const unsigned bal = __ballot_sync(FULL_MASK, cond);
    if ((threadIdx.x & 31) == 0 && bal) atomicMin(first, (int)(threadIdx.x & ~31u) + __ffs(bal) - 1);
}

__global__ void __launch_bounds__(SAMPLE_B_THREADS)
sample_pick(const u64 *cand, int n, int slice, int n_slices, const nib_cuda_sample_params *params, const double *u_dev,
            int top_k_max, int32_t *out_id) {
    pdl_launch_dependents();
    pdl_wait();
    __shared__ u64 cache[SAMPLE_CACHE_KEYS]; /* kernel A's keys when they fit; later the sorted candidates */
    __shared__ u64 sel[NIB_CUDA_SAMPLE_MAX_K];
    __shared__ radix_smem rs;
    __shared__ double part[32];
    __shared__ double s_sum[2];
    __shared__ int count, first[3];
    const int tid = threadIdx.x, nt = SAMPLE_B_THREADS;
    const nib_cuda_sample_params p = *params;
    const double u = *u_dev;
    const int k = sample_k(p.top_k, top_k_max, n);
    const int per = min(k, slice), last_len = n - (n_slices - 1) * slice;
    const int n_cand = (n_slices - 1) * per + min(k, last_len); /* >= k: kernel A wrote min(k, len) per slice */
    const int m = min(k, n_cand);
    const u64 *src = cand;
    if (n_cand <= SAMPLE_CACHE_KEYS) { /* one read of global memory instead of one per pass */
        for (int i = tid; i < n_cand; i += nt) cache[i] = cand[i];
        src = cache;
    }
    if (tid == 0) count = 0, first[0] = first[1] = first[2] = INT_MAX;
    __syncthreads();
    if (n_cand > k) {
        radix_select(&rs, k, [&](auto fn) {
            for (int b = 0; b < n_cand; b += nt) fn(b + tid < n_cand ? src[b + tid] : 0ull, b + tid < n_cand);
        });
        const u64 prefix = rs.prefix, mask = rs.mask;
        for (int b = 0; b < n_cand; b += nt) {
            const u64 key = b + tid < n_cand ? src[b + tid] : 0ull;
            compact(key, b + tid < n_cand && (key & mask) >= prefix, sel, &count);
        }
    } else {
        for (int i = tid; i < m; i += nt) sel[i] = src[i];
    }
    __syncthreads();

    /* sort the m candidates, largest key first */
    const u64 *sorted;
    if (m <= SAMPLE_RANK_SORT_MAX) { /* keys are unique: the count of larger ones is the place */
        if (tid < m) {
            const u64 key = sel[tid];
            int r = 0;
            for (int j = 0; j < m; j++) r += sel[j] > key;
            cache[r] = key; /* the cache's keys were last read before the barrier above */
        }
        sorted = cache;
    } else { /* bitonic over the next power of two, padded with 0 (below every key) */
        int pw = 1;
        while (pw < m) pw <<= 1;
        for (int i = m + tid; i < pw; i += nt) sel[i] = 0ull;
        __syncthreads();
        for (int size = 2; size <= pw; size <<= 1)
            for (int stride = size >> 1; stride > 0; stride >>= 1) {
                for (int i = tid; i < pw; i += nt) {
                    const int j = i ^ stride;
                    if (j > i) {
                        const u64 a = sel[i], b = sel[j];
                        const bool desc = (i & size) == 0;
                        if (desc ? a < b : a > b) sel[i] = b, sel[j] = a;
                    }
                }
                __syncthreads();
            }
        sorted = sel;
    }
    __syncthreads();

    /* the chain: thread i owns candidate i */
    const u64 key = tid < m ? sorted[tid] : 0ull, key0 = sorted[0];
    const int mv = __syncthreads_count(tid < m && (key >> 32) != 0); /* NaN keys sort last: drop them */
    if (mv == 0 || !(p.temp > 0.0f)) { /* greedy (or nothing but NaN): the first maximum */
        if (tid == 0) *out_id = key_id(key0);
        return;
    }
    const float l0 = key_logit(key0), l = key_logit(key);
    /* probabilities before temperature, as top-p and min-p see them */
    const float pr = tid < mv ? (float)exp((double)__fsub_rn(l, l0)) : 0.0f;
    int cut = mv;
    if (p.top_p < 1.0f) {
        const double c = block_scan_d((double)pr, part);
        if (tid == mv - 1) s_sum[0] = c;
        __syncthreads();
        const double cum = block_scan_d(tid < mv ? (double)pr / s_sum[0] : 0.0, part);
        block_first(tid < mv && cum >= (double)p.top_p, &first[0]);
        __syncthreads();
        if (first[0] != INT_MAX) cut = first[0] + 1;
    }
    if (p.min_p > 0.0f) {
        const float thr = __fmul_rn(p.min_p, (float)exp((double)__fsub_rn(l0, l0))); /* p_0: 1 for a finite l_0 */
        block_first(tid >= 1 && tid < cut && !(pr >= thr), &first[1]);
        __syncthreads();
        if (first[1] != INT_MAX) cut = first[1];
    }
    const float w = tid < cut ? (float)exp((double)__fdiv_rn(__fsub_rn(l, l0), p.temp)) : 0.0f;
    const double acc = block_scan_d((double)w, part);
    if (tid == cut - 1) s_sum[1] = acc;
    __syncthreads();
    const double r = u * s_sum[1];
    block_first(tid < cut && r < acc, &first[2]);
    __syncthreads();
    if (tid == 0) *out_id = key_id(sorted[first[2] != INT_MAX ? first[2] : cut - 1]);
}

/* ---- host side ------------------------------------------------------------------- */

/* Slice length and count for a vocabulary and bound (see "G" above). */
static void sample_plan(int n_vocab, int top_k_max, int *slice, int *n_slices) {
    int s = CEIL_DIV(n_vocab, SAMPLE_BLOCKS_WANT);
    const int want = 4 * top_k_max < SAMPLE_SLICE_MAX ? 4 * top_k_max : SAMPLE_SLICE_MAX;
    if (s < want) s = want;
    if (s < SAMPLE_SLICE_MIN) s = SAMPLE_SLICE_MIN;
    if (s > SAMPLE_SLICE_MAX) s = SAMPLE_SLICE_MAX;
    *slice = s;
    *n_slices = CEIL_DIV(n_vocab, s);
}

static bool sample_args_ok(int n_vocab, int top_k_max) {
    return n_vocab >= 1 && top_k_max >= 1 && top_k_max <= NIB_CUDA_SAMPLE_MAX_K;
}

extern "C" size_t nib_cuda_sample_scratch_bytes(int n_vocab, int top_k_max) {
    if (!sample_args_ok(n_vocab, top_k_max)) return 0;
    int slice, n_slices;
    sample_plan(n_vocab, top_k_max, &slice, &n_slices);
    return (size_t)n_slices * (size_t)(top_k_max < slice ? top_k_max : slice) * sizeof(u64);
}

extern "C" nib_status nib_cuda_sample(const float *logits, int n_vocab, const nib_cuda_sample_params *params_dev,
                                      const double *u_dev, void *scratch, int top_k_max, int32_t *out_id,
                                      void *stream, nib_error *err) {
    if (!logits || !params_dev || !u_dev || !scratch || !out_id || !sample_args_ok(n_vocab, top_k_max) ||
        ((uintptr_t)scratch & 7) != 0)
        return nib_error_set(err, NIB_ERR_ARG,
                             "nib_cuda_sample: bad arguments (n_vocab %d, top_k_max %d (1 to %d), a NULL pointer or "
                             "scratch not 8-byte aligned)", n_vocab, top_k_max, NIB_CUDA_SAMPLE_MAX_K);
    int slice, n_slices;
    sample_plan(n_vocab, top_k_max, &slice, &n_slices);
    cudaStream_t st = (cudaStream_t)stream;
    u64 *cand = (u64 *)scratch;
    /* keys per thread: the slice in registers, whole */
    const int items = slice <= 2 * SAMPLE_A_THREADS ? 2 : slice <= 4 * SAMPLE_A_THREADS ? 4 : 8;
    const dim3 grid_a((unsigned)n_slices), block_a(SAMPLE_A_THREADS);
    cudaError_t e;
    switch (items) {
    case 2: e = pdl_launch(sample_slices<2>, grid_a, block_a, 0, st, logits, n_vocab, slice, params_dev, top_k_max, cand); break;
    case 4: e = pdl_launch(sample_slices<4>, grid_a, block_a, 0, st, logits, n_vocab, slice, params_dev, top_k_max, cand); break;
    default: e = pdl_launch(sample_slices<8>, grid_a, block_a, 0, st, logits, n_vocab, slice, params_dev, top_k_max, cand); break;
    }
    char what[128];
    snprintf(what, sizeof what, "launch of sample_slices (n_vocab %d, %d slices of %d, top_k_max %d)", n_vocab,
             n_slices, slice, top_k_max);
    if (cuda_launch_status(e, what, err) != NIB_OK) return err ? err->status : NIB_ERR_IO;
    e = pdl_launch(sample_pick, dim3(1), dim3(SAMPLE_B_THREADS), 0, st, (const u64 *)cand, n_vocab, slice, n_slices,
                   params_dev, u_dev, top_k_max, out_id);
    snprintf(what, sizeof what, "launch of sample_pick (n_vocab %d, %d slices of %d, top_k_max %d)", n_vocab, n_slices,
             slice, top_k_max);
    return cuda_launch_status(e, what, err);
}
