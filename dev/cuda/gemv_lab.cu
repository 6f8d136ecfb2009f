/* GEMV kernel lab: times the library's per-format GEMV kernels (and variants
 * kept here for comparison) on real model shapes, against the device's own
 * measured copy bandwidth. A program, not a test: correctness is
 * tests/gpu/test_gpu_gemv.c's job; this file answers "how fast, and which
 * variant wins".
 *
 *   make gpu-lab && build/dev/cuda/gemv_lab [OUT.md] [FORMAT...]
 *
 * Method (see /work/.library/device/METHOD.md):
 *  - ceiling: a device-to-device cudaMemcpy of 2 GiB, bytes read + written
 *    over the time, best of 10 after a warm-up;
 *  - each case rotates among enough copies of the weight matrix that the
 *    working set is >= 1 GiB (the H200's L2 is 60 MB), so every call streams
 *    its weights from HBM; weights are random bytes (never zeros), x random;
 *  - one call = quantize x to int8 + the GEMV kernel (what nib_cuda_gemv
 *    launches), timed with events over >= 200 calls after 10 warm-ups; "graph"
 *    replays the same calls captured in a CUDA graph, which removes the CPU
 *    launch gaps that bound the small Qwen shapes;
 *  - GB/s counts the weight bytes plus x (f32 in) and y (f32 out) over the
 *    best of the three times; % is of the copy bandwidth measured in the
 *    same run;
 *  - "PDL graph": the same graph with every launch of the library's kernels
 *    made as the library makes it, with programmatic dependent launch, so
 *    a call's kernels start while the call before drains, as in the decode
 *    step (the float-activation variants stay plain launches);
 *  - floor: the same two launches with empty kernels, graph-replayed (with
 *    PDL): what a call costs with no bytes moved (the launch-bound floor).
 *
 * Variants: rows named by format alone are the library's configuration.
 * FORMAT/wWrR[p] sweep warps per block, rows per warp and the persistent grid
 * (run with the argument "/w"). FORMAT/v2-f32x (Q4_0, Q8_0) dequantizes to f32
 * and dots x as floats, to measure the dp4a-vs-float choice. The argument
 * "pair" times two matrices of different formats in one kernel (v9 below).
 * LAB_SHAPES="14336x4096,4096x4096" (environment) keeps only those shapes;
 * "check-iq" first checks the shared-memory codebooks' bits (v13).
 * v38: "READ" rows time a kernel that only reads a matrix's bytes (the read
 * floor of one launch); "/st", "/ws", "/hst" and "/glu-" rows the staged
 * kernels (weights to shared memory by bulk copy; "check-st" checks their
 * sums first); "/head" the library's 4-row LM-head launch they replaced.
 * v55: "/t32" rows time the tiled GEMV (gemv_tiled.cuh) on random bytes read
 * as tiles, "check-t32" checks it against the library's kernels first.
 */
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/gemv_formats_extra.cuh"
#include "cuda/gemv_kernels.cuh"
#include "cuda/gemv_stream.cuh"
#include "cuda/gemv_tiled.cuh"
#include "cuda/gemv_tiled_iq.cuh"
#include "cuda/gemv_tiled_legacy.cuh"

#define CK(call)                                                                                 \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1); /* a lab program may exit; the library never does */                       \
        }                                                                                        \
    } while (0)
#define CK_LAUNCH(label) CK(cudaGetLastError())
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

/* ---- v2: float-activation variants (lab only) -------------------------------------- */

/* Q4_0 dequantized in registers, dotted with f32 x: 4x the activation bytes of
 * int8, and 32 FMAs per block instead of 8 dp4a. */
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_q4_0_f32x(const uint8_t *__restrict__ W, size_t row_bytes, const float *__restrict__ x, float *__restrict__ y,
               int n_in, int n_out) {
    const int row = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= n_out) return;
    const uint8_t *wr = W + (size_t)row * row_bytes;
    float acc = 0.0f;
    for (int ib = lane; ib < n_in / 32; ib += 32) {
        uint32_t w[5];
        load_words(wr + (size_t)ib * 18, w);
        const float d = h2f(w[0]);
        const float4 *xv = (const float4 *)(x + 32 * ib);
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t q = __funnelshift_r(w[k], w[k + 1], 16);
            const float4 lo = __ldg(xv + k), hi = __ldg(xv + 4 + k);
            s += (float)((int)(q & 15) - 8) * lo.x + (float)((int)((q >> 8) & 15) - 8) * lo.y +
                 (float)((int)((q >> 16) & 15) - 8) * lo.z + (float)((int)((q >> 24) & 15) - 8) * lo.w;
            s += (float)((int)((q >> 4) & 15) - 8) * hi.x + (float)((int)((q >> 12) & 15) - 8) * hi.y +
                 (float)((int)((q >> 20) & 15) - 8) * hi.z + (float)((int)((q >> 28) & 15) - 8) * hi.w;
        }
        acc += d * s;
    }
    acc = warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_q8_0_f32x(const uint8_t *__restrict__ W, size_t row_bytes, const float *__restrict__ x, float *__restrict__ y,
               int n_in, int n_out) {
    const int row = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= n_out) return;
    const uint8_t *wr = W + (size_t)row * row_bytes;
    float acc = 0.0f;
    for (int ib = lane; ib < n_in / 32; ib += 32) {
        uint32_t w[9];
        load_words(wr + (size_t)ib * 34, w);
        const float4 *xv = (const float4 *)(x + 32 * ib);
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const uint32_t q = __funnelshift_r(w[k], w[k + 1], 16);
            const float4 v = __ldg(xv + k);
            s += (float)(int8_t)q * v.x + (float)(int8_t)(q >> 8) * v.y + (float)(int8_t)(q >> 16) * v.z +
                 (float)(int8_t)(q >> 24) * v.w;
        }
        acc += h2f(w[0]) * s;
    }
    acc = warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

__global__ void empty_kernel(int) {}

/* ---- v41: the K-quant dots' loads without their arithmetic (lab only) ---------------- */

/* Argument "/ld": the library's launches with a dot that makes exactly the
 * loads of fmt_q4_K's (fmt_q6_K's) dot, weights and activations, and folds
 * them with xor instead of the dp4a work. If a launch takes about as long
 * with it, the K-quant GEMV's time is in how its loads are issued
 * (registers, loads in flight, the loop's structure); if it comes near the
 * read floor, the dot work between the loads is what costs. The sums are
 * meaningless (a small positive float per item). */
struct fmt_q4_K_ld {
    static constexpr int QK = 256, BYTES = 144, CH = 64;
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        /* the library's loads since v41: header and scales one vector, (d, s) one float4 */
        const uint4 q0 = __ldg((const uint4 *)(b + 16 + 32 * c)), q1 = __ldg((const uint4 *)(b + 32 + 32 * c));
        const uint4 hs = __ldg((const uint4 *)b);
        int a[8], a2[8];
        load_act32(xq + 64 * c, a);
        load_act32(xq + 64 * c + 32, a2);
        const float4 dd = __ldg((const float4 *)(ds + 2 * c));
        uint32_t x = q0.x ^ q0.y ^ q0.z ^ q0.w ^ q1.x ^ q1.y ^ q1.z ^ q1.w ^ hs.x ^ hs.y ^ hs.z ^ hs.w;
#pragma unroll
        for (int k = 0; k < 8; k++) x ^= (uint32_t)(a[k] ^ a2[k]);
        x ^= __float_as_uint(dd.x) ^ __float_as_uint(dd.y) ^ __float_as_uint(dd.z) ^ __float_as_uint(dd.w);
        return __uint_as_float(x & 0x007FFFFFu);
    }
};
struct fmt_q6_K_ld { /* the library's loads since v43: 224-byte slots, 16-byte vectors */
    static constexpr int QK = 256, BYTES = NIB_CUDA_Q6_K_SLOT, CH = 64;
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        const int hh = c >> 1, p = c & 1;
        const uint4 l0 = __ldg((const uint4 *)(b + 64 * hh + 32 * p)), l1 = __ldg((const uint4 *)(b + 64 * hh + 32 * p + 16));
        const uint4 h0 = __ldg((const uint4 *)(b + 128 + 32 * hh)), h1 = __ldg((const uint4 *)(b + 144 + 32 * hh));
        const uint2 s2 = __ldg((const uint2 *)(b + 192 + 8 * hh));
        const uint32_t ql[8] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
        const uint32_t qh[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
        const uint32_t sc[2] = {s2.x, s2.y};
        uint32_t x = __ldg((const unsigned short *)(b + 208)) ^ sc[0] ^ sc[1];
#pragma unroll
        for (int k = 0; k < 8; k++) x ^= ql[k] ^ qh[k];
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int quarter = p + 2 * half;
            int a[8];
            load_act32(xq + 128 * hh + 32 * quarter, a);
#pragma unroll
            for (int k = 0; k < 8; k++) x ^= (uint32_t)a[k];
            x ^= __float_as_uint(__ldg(&ds[4 * hh + quarter].x));
        }
        return __uint_as_float(x & 0x007FFFFFu);
    }
};

/* ---- v44 (ready, not yet run): Q4_K in half items of 32 weights (lab only) ------------

   Argument "/h-" (timing) and "check-h" (sums). v41's loads-alone dot was as
   slow as the real one, so the loads bound the K-quant GEMVs; counted in L1
   wavefronts (a warp's load instruction costs one per 128-byte line it
   touches) a pass of the library's Q4_K dot is ~124 wavefronts for 2 rows x 32
   items (2,304 bytes): the 4 activation loads an item alone are 64 (lane l
   reads 16 bytes at 64 l + 16 j: 16 lines each), the two quant halves ~20 a
   row (lanes 4 apart in a 144-byte block), the header 8 a row. With items
   of 32 weights (one 16-byte half of a chunk's quants: low nibbles are 16
   elements of sub-block 2c, high nibbles 16 of 2c + 1) consecutive lanes
   read consecutive 16-byte quant runs (5 lines for 32 lanes), the header
   of 4 blocks (4), two activation vectors at 32-byte strides (8 each) and
   one (d, s) float4 shared by lane pairs (2): ~36 wavefronts for 2 rows x
   1,152 bytes, 43% fewer per byte, for twice the scale unpacking per weight.
   The min term (dmin m s, s over all 32 elements of a sub-block) goes with
   the first half only, so the two halves add to the full item; the fp32
   order differs from fmt_q4_K's, hence a tolerance check, not bits.
   Prediction: 14336 x 4096 split K 12.9 -> ~10.5 us if L1 wavefronts bound
   the loads; no change if the loads' latency does. */
struct fmt_q4_K_h {
    static constexpr int QK = 256, BYTES = 144, CH = 32;
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        const int ch = c >> 1, h = c & 1;
        const uint4 q = __ldg((const uint4 *)(b + 16 + 32 * ch + 16 * h));
        const uint4 hs = __ldg((const uint4 *)b);
        const int4 alo = __ldg((const int4 *)(xq + 64 * ch + 16 * h)), ahi = __ldg((const int4 *)(xq + 64 * ch + 32 + 16 * h));
        const float4 dd = __ldg((const float4 *)(ds + 2 * ch));
        const uint32_t s[3] = {hs.y, hs.z, hs.w};
        int sum_lo = __dp4a((int)(q.x & 0x0F0F0F0Fu), alo.x, 0), sum_hi = __dp4a((int)((q.x >> 4) & 0x0F0F0F0Fu), ahi.x, 0);
        sum_lo = __dp4a((int)(q.y & 0x0F0F0F0Fu), alo.y, sum_lo), sum_hi = __dp4a((int)((q.y >> 4) & 0x0F0F0F0Fu), ahi.y, sum_hi);
        sum_lo = __dp4a((int)(q.z & 0x0F0F0F0Fu), alo.z, sum_lo), sum_hi = __dp4a((int)((q.z >> 4) & 0x0F0F0F0Fu), ahi.z, sum_hi);
        sum_lo = __dp4a((int)(q.w & 0x0F0F0F0Fu), alo.w, sum_lo), sum_hi = __dp4a((int)((q.w >> 4) & 0x0F0F0F0Fu), ahi.w, sum_hi);
        int sc0, m0, sc1, m1;
        scale_min_k4(2 * ch, s, sc0, m0);
        scale_min_k4(2 * ch + 1, s, sc1, m1);
        const float mins = h == 0 ? (float)m0 * dd.y + (float)m1 * dd.w : 0.0f;
        return h2f(hs.x) * ((float)(sc0 * sum_lo) * dd.x + (float)(sc1 * sum_hi) * dd.z) - h2f(hs.x >> 16) * mins;
    }
};

/* ---- v45 (ready, not yet run): Q4_0 and Q8_0 in 16-byte aligned groups (lab only) -----

   Argument "/g-" (timing) and "check-g" (bits). The legacy formats' blocks
   (Q4_0 18 bytes, Q8_0 34) sit at 2-byte offsets, so their dots build each
   word from funnel-shifted 4-byte loads: Q8_0 10 loads an item, lanes 34
   bytes apart, ~9 L1 wavefronts each: ~100 wavefronts per KB of weights
   (Q4_K after v41: ~54). Grouped, 8 blocks at a time, the quants of the 8
   blocks come first, then their 8 fp16 scales: Q4_0 144 bytes (8 x 16 +
   16), Q8_0 272 (8 x 32 + 16), both 16-byte multiples, so an item is one
   (Q4_0) or two (Q8_0) 16-byte loads and a 2-byte one: Q8_0 ~38 wavefronts
   per 1,088 bytes, Q4_0 ~half its present count. The same values in the
   same order: the outputs must equal the library's bit for bit. A row must
   be whole groups (256 elements: the 8B's and 1B's rows, not Qwen2.5-0.5B's
   896). Prediction: if L1 wavefronts bound the legacy formats as v41-v43
   found for the K-quants, 14336 x 4096 Q8_0 19.8 -> ~15 us, Q4_0 11.9 ->
   ~10; the library would then group at upload where rows allow (as the Q6_K
   slots, cuda/gpu_layout.h). */
struct fmt_q4_0_g {
    static constexpr int QK = 256, BYTES = 144, CH = 32;
    struct W {
        uint4 q;
        uint32_t d;
    };
    template <class L = ld_global>
    static __device__ __forceinline__ W load(const uint8_t *b, int c) {
        W r;
        r.q = L::ld((const uint4 *)(b + 16 * c));
        r.d = L::ld((const unsigned short *)(b + 128 + 2 * c));
        return r;
    }
    static __device__ __forceinline__ float dot_w(const W &r, int c, const int8_t *xq, const float2 *ds) {
        int a[8];
        load_act32(xq + 32 * c, a);
        const uint32_t q[4] = {r.q.x, r.q.y, r.q.z, r.q.w};
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) { /* fmt_q4_0's order */
            sumi = __dp4a((int)(q[k] & 0x0F0F0F0Fu), a[k], sumi);
            sumi = __dp4a((int)((q[k] >> 4) & 0x0F0F0F0Fu), a[k + 4], sumi);
        }
        const float2 s = __ldg(ds + c);
        return h2f(r.d) * (s.x * (float)sumi - 8.0f * s.y);
    }
    template <class L = ld_global>
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        return dot_w(load<L>(b, c), c, xq, ds);
    }
};
struct fmt_q8_0_g {
    static constexpr int QK = 256, BYTES = 272, CH = 32;
    struct W {
        uint4 q0, q1;
        uint32_t d;
    };
    template <class L = ld_global>
    static __device__ __forceinline__ W load(const uint8_t *b, int c) {
        W r;
        r.q0 = L::ld((const uint4 *)(b + 32 * c)), r.q1 = L::ld((const uint4 *)(b + 32 * c + 16));
        r.d = L::ld((const unsigned short *)(b + 256 + 2 * c));
        return r;
    }
    static __device__ __forceinline__ float dot_w(const W &r, int c, const int8_t *xq, const float2 *ds) {
        int a[8];
        load_act32(xq + 32 * c, a);
        const uint32_t q[8] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w, r.q1.x, r.q1.y, r.q1.z, r.q1.w};
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) sumi = __dp4a((int)q[k], a[k], sumi);
        return h2f(r.d) * __ldg(&ds[c].x) * (float)sumi;
    }
    template <class L = ld_global>
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        return dot_w(load<L>(b, c), c, xq, ds);
    }
};
/* file blocks (bb bytes: a 2-byte d, then qb bytes of quants) into groups of 8 */
__global__ void group_blocks(const uint8_t *__restrict__ src, uint8_t *__restrict__ dst, size_t n_groups, int bb,
                             int qb) {
    const int gb = 8 * bb;
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < n_groups; g += (size_t)gridDim.x * blockDim.x)
        for (int k = 0; k < 8; k++) {
            const uint8_t *b = src + (g * 8 + k) * bb;
            uint8_t *o = dst + g * gb;
            for (int j = 0; j < qb; j++) o[qb * k + j] = b[2 + j];
            o[8 * qb + 2 * k] = b[0], o[8 * qb + 2 * k + 1] = b[1];
        }
}

/* ---- the cases ------------------------------------------------------------------------ */

typedef struct lab_ctx {
    const uint8_t *W;   /* this call's weight copy */
    size_t row_bytes;
    const float *x;
    int8_t *xq;
    float2 *xds;
    act_scale *sc;
    float *y;
    int n_in, n_out;
    cudaStream_t st;
} lab_ctx;

typedef void (*lab_fn)(const lab_ctx *c);

/* Launches of the library's kernels: plain, or (lab_pdl) with programmatic
 * dependent launch as the library launches them, so that a call's
 * quantize and GEMV overlap the call before as they do in the decode step
 * (the legacy formats' weights loaded ahead of pdl_wait only pay there). */
static bool lab_pdl = false;
template <typename... KArgs, typename... Args>
static void launch(void (*kernel)(KArgs...), unsigned grid, unsigned block, cudaStream_t st, Args &&...args) {
    if (lab_pdl) CK(pdl_launch(kernel, dim3(grid), dim3(block), 0, st, std::forward<Args>(args)...));
    else kernel<<<grid, block, 0, st>>>(std::forward<Args>(args)...);
}

/* Blocks a persistent launch starts: the device's multiprocessors times how
 * many of the kernel's blocks fit on one. */
static int sm_count;
template <class K>
static int persistent_blocks(K kernel, int threads) {
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
    return sm_count * (per_sm > 0 ? per_sm : 1);
}

/* a call's first launch: x quantized to int8 blocks, and the kernels' view of them */
static act_q8 lab_act(const lab_ctx *c) {
    launch(quantize_act_q8, CEIL_DIV(c->n_in, 256), 256, c->st, (const float *)c->x, c->xq, c->xds, c->n_in, 1, c->n_in,
           c->sc);
    act_q8 a;
    a.xq = c->xq, a.xds = c->xds, a.qs_stride = c->n_in, a.n_tok = 1, a.sc = c->sc;
    return a;
}

/* v1 (call it w4r1): the first library kernel, one warp per row, one block per
 * 4 rows. wWrR[p]: W warps per block, R rows per warp, p = persistent grid. */
template <class F, int W, int R, bool P, int U = 2>
static void run_q8(const lab_ctx *c) {
    static int most = 0;
    if (P && !most) most = persistent_blocks(gemv_q8<F, W, R, U, 1>, W * 32);
    int grid = CEIL_DIV(c->n_out, W * R);
    if (P && grid > most) grid = most;
    const act_q8 a = lab_act(c);
    if (c->n_in / F::CH >= 32 * U) /* as gemv.cu's launcher: U = 1 for rows shorter than one pass */
        launch(gemv_q8<F, W, R, U, 1>, grid, W * 32, c->st, c->W, c->row_bytes, a, c->y, c->n_out, c->n_in, c->n_out, 0,
               (unsigned long long *)NULL);
    else { /* and, with rows enough to fill it, 4 rows per warp on a persistent grid */
        static int most4 = 0;
        if (!most4) most4 = persistent_blocks(gemv_q8<F, W, 4, 1, 1>, W * 32);
        int g4 = CEIL_DIV(c->n_out, W * 4);
        if (g4 >= most4)
            launch(gemv_q8<F, W, 4, 1, 1>, most4, W * 32, c->st, c->W, c->row_bytes, a, c->y, c->n_out, c->n_in,
                   c->n_out, 0, (unsigned long long *)NULL);
        else
            launch(gemv_q8<F, W, R, 1, 1>, grid, W * 32, c->st, c->W, c->row_bytes, a, c->y, c->n_out, c->n_in,
                   c->n_out, 0, (unsigned long long *)NULL);
    }
}
template <bool BF, int U = F16_U>
static void run_f16(const lab_ctx *c) {
    static int most = 0;
    if (!most) most = persistent_blocks(gemv_f16<BF, true, U>, GEMV_WARPS * 32);
    int grid = CEIL_DIV(c->n_out, GEMV_WARPS);
    if (grid > most) grid = most;
    launch(gemv_f16<BF, true, U>, grid, GEMV_WARPS * 32, c->st, c->W, c->row_bytes, c->x, c->n_in, c->y, c->n_out,
           c->n_in, c->n_out, 0, (unsigned long long *)NULL);
}
static void run_q4_0_f32x(const lab_ctx *c) {
    gemv_q4_0_f32x<<<CEIL_DIV(c->n_out, GEMV_WARPS), GEMV_WARPS * 32, 0, c->st>>>(c->W, c->row_bytes, c->x, c->y,
                                                                                   c->n_in, c->n_out);
}
static void run_q8_0_f32x(const lab_ctx *c) {
    gemv_q8_0_f32x<<<CEIL_DIV(c->n_out, GEMV_WARPS), GEMV_WARPS * 32, 0, c->st>>>(c->W, c->row_bytes, c->x, c->y,
                                                                                   c->n_in, c->n_out);
}
static void run_floor(const lab_ctx *c) {
    launch(empty_kernel, 1, 32, c->st, 0);
    launch(empty_kernel, CEIL_DIV(c->n_out, GEMV_WARPS), GEMV_WARPS * 32, c->st, 0);
}

/* v3 (names "/ksK"): split K, the library's gemv_q8_ks (gemv_kernels.cuh). */
template <class F, int W, int R, int U, int KS>
static void run_q8_ksplit(const lab_ctx *c) {
    static int most = 0;
    if (!most) most = persistent_blocks(gemv_q8_ks<F, W, R, U, KS>, W * 32);
    int grid = CEIL_DIV(c->n_out, (W / KS) * R);
    if (grid > most) grid = most;
    const act_q8 a = lab_act(c);
    launch(gemv_q8_ks<F, W, R, U, KS>, grid, W * 32, c->st, c->W, c->row_bytes, a, c->y, c->n_in, c->n_out, 0);
}

/* v38 (argument "/st"): the staged kernel (gemv_stream.cuh): TR rows a
 * tile, ST tiles in flight a block, WARPS warps */
template <class F, int W, int TR, int ST>
static void run_stream(const lab_ctx *c) {
    static int most = 0;
    const uint32_t sb = (uint32_t)stream_stage_bytes(c->row_bytes, TR);
    static uint32_t set_for = 0;
    if (set_for != sb) {
        CK(cudaFuncSetAttribute(gemv_q8_stream<F, W, TR, ST>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)(sb * ST)));
        if (getenv("LAB_CARVE")) { /* one shared-memory split for both kernels of a call */
            const int pct = atoi(getenv("LAB_CARVE"));
            CK(cudaFuncSetAttribute(gemv_q8_stream<F, W, TR, ST>, cudaFuncAttributePreferredSharedMemoryCarveout, pct));
            CK(cudaFuncSetAttribute(quantize_act_q8, cudaFuncAttributePreferredSharedMemoryCarveout, pct));
        }
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_q8_stream<F, W, TR, ST>, W * 32, sb * ST));
        most = sm_count * (per_sm > 0 ? per_sm : 1);
        set_for = sb;
    }
    int grid = CEIL_DIV(c->n_out, TR);
    if (grid > most) grid = most;
    const act_q8 a = lab_act(c);
    if (lab_pdl)
        CK(pdl_launch(gemv_q8_stream<F, W, TR, ST>, dim3(grid), dim3(W * 32), sb * ST, c->st, c->W, c->row_bytes, a,
                      c->y, c->n_in, c->n_out, 0, sb, (unsigned long long *)NULL));
    else
        gemv_q8_stream<F, W, TR, ST><<<grid, W * 32, sb * ST, c->st>>>(c->W, c->row_bytes, a, c->y, c->n_in, c->n_out,
                                                                        0, sb, (unsigned long long *)NULL);
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
        mbar_fence_init();
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

/* v38 (argument "/ws"): the per-warp staged kernel, U items a lane a chunk,
 * ST chunks in flight a warp, WARPS warps a block */
template <class F, int W, int U, int ST>
static void run_wstream(const lab_ctx *c) {
    static int most = 0;
    const uint32_t sb = wstream_stage_bytes(wstream_geo<F, U>::NB, F::BYTES);
    const size_t smem = (size_t)sb * ST * W;
    if (!most) {
        CK(cudaFuncSetAttribute(gemv_q8_wstream<F, W, U, ST>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_q8_wstream<F, W, U, ST>, W * 32, smem));
        most = sm_count * (per_sm > 0 ? per_sm : 1);
    }
    int grid = CEIL_DIV(c->n_out, W);
    if (grid > most) grid = most;
    const act_q8 a = lab_act(c);
    if (lab_pdl)
        CK(pdl_launch(gemv_q8_wstream<F, W, U, ST>, dim3(grid), dim3(W * 32), smem, c->st, c->W, c->row_bytes, a, c->y,
                      c->n_in, c->n_out, 0, sb));
    else
        gemv_q8_wstream<F, W, U, ST><<<grid, W * 32, smem, c->st>>>(c->W, c->row_bytes, a, c->y, c->n_in, c->n_out, 0,
                                                                     sb);
}

/* v38 (argument "/glu"): the gate/up GLU staged as the LM heads are: a
 * tile is TR gate rows and the same TR up rows (two bulk copies, one
 * barrier), each warp TR / WARPS row pairs whole. The lab's 4096 x 28672
 * shape is one 14336-row GLU (gate = the first half, up = the second). */
template <class F, int WARPS, int TR, int ST>
__global__ void __launch_bounds__(WARPS * 32)
glu_stream(const uint8_t *__restrict__ Wg, const uint8_t *__restrict__ Wu, size_t row_bytes, act_q8 a,
           float *__restrict__ h, int n_in, int n_out, int act, uint32_t cover) {
    constexpr int RW = TR / WARPS;
    static_assert(TR % WARPS == 0, "whole rows a warp");
    extern __shared__ __align__(128) uint8_t stage[];
    __shared__ uint64_t full[ST];
    pdl_launch_dependents();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n_tiles = (n_out + TR - 1) / TR;
    auto ask = [&](int t, int s) {
        const int rows = min(TR, n_out - t * TR);
        const uintptr_t g = (uintptr_t)(Wg + (size_t)t * TR * row_bytes), u = (uintptr_t)(Wu + (size_t)t * TR * row_bytes);
        const uintptr_t g0 = g & ~(uintptr_t)15, g1 = (g + rows * row_bytes + 15) & ~(uintptr_t)15;
        const uintptr_t u0 = u & ~(uintptr_t)15, u1 = (u + rows * row_bytes + 15) & ~(uintptr_t)15;
        mbar_expect(&full[s], (uint32_t)(g1 - g0 + u1 - u0));
        bulk_copy(stage + (size_t)s * 2 * cover, (const void *)g0, (uint32_t)(g1 - g0), &full[s]);
        bulk_copy(stage + (size_t)s * 2 * cover + cover, (const void *)u0, (uint32_t)(u1 - u0), &full[s]);
    };
    stages_start<ST>(full, n_tiles, ask);
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    constexpr int IPB = F::QK / F::CH;
    const int n_items = n_in / F::CH, slot = warp * RW;
    int i = 0;
    for (int t = blockIdx.x; t < n_tiles; t += gridDim.x, i++) {
        const int s = i % ST;
        mbar_wait(&full[s], (uint32_t)(i / ST) & 1u);
        const uint8_t *bg = stage + (size_t)s * 2 * cover + ((uintptr_t)(Wg + (size_t)t * TR * row_bytes) & 15);
        const uint8_t *bu = stage + (size_t)s * 2 * cover + cover + ((uintptr_t)(Wu + (size_t)t * TR * row_bytes) & 15);
        const int rows = min(TR, n_out - t * TR);
        const uint8_t *wr[2 * RW];
#pragma unroll
        for (int r = 0; r < RW; r++) {
            const size_t off = (size_t)min(slot + r, rows - 1) * row_bytes;
            wr[r] = bg + off, wr[RW + r] = bu + off;
        }
        float acc[2 * RW];
#pragma unroll
        for (int r = 0; r < 2 * RW; r++) acc[r] = 0.0f;
        for (int it = lane; it < n_items; it += 32) {
            const int ib = it / IPB, sub = it % IPB;
            const int8_t *xq = a.xq + (size_t)ib * F::QK;
            const float2 *xds = a.xds + (size_t)ib * (F::QK / 32);
#pragma unroll
            for (int r = 0; r < 2 * RW; r++)
                acc[r] += F::template dot<ld_shared>(wr[r] + (size_t)ib * F::BYTES, sub, xq, xds);
        }
#pragma unroll
        for (int r = 0; r < 2 * RW; r++) acc[r] = warp_sum(acc[r]);
        const float rs = act_rs_end(rsp);
        __syncthreads();
        if (threadIdx.x == 0 && t + ST * (int)gridDim.x < n_tiles) ask(t + ST * gridDim.x, s);
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < RW; r++)
                if (slot + r < rows) h[(size_t)t * TR + slot + r] = glu_act(act, acc[r] * rs) * (acc[RW + r] * rs);
    }
}
template <class F, int W, int TR, int ST>
static void run_glu_stream(const lab_ctx *c) {
    static int most = 0;
    static uint32_t set_for = 0;
    const int rows = c->n_out / 2;
    const uint32_t cover = (uint32_t)stream_stage_bytes(c->row_bytes, TR);
    if (set_for != cover) {
        CK(cudaFuncSetAttribute(glu_stream<F, W, TR, ST>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)(2 * cover * ST)));
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, glu_stream<F, W, TR, ST>, W * 32, 2 * cover * ST));
        most = sm_count * (per_sm > 0 ? per_sm : 1);
        set_for = cover;
    }
    int grid = CEIL_DIV(rows, TR);
    if (grid > most) grid = most;
    const act_q8 a = lab_act(c);
    const uint8_t *Wu = c->W + (size_t)rows * c->row_bytes;
    if (lab_pdl)
        CK(pdl_launch(glu_stream<F, W, TR, ST>, dim3(grid), dim3(W * 32), 2 * cover * ST, c->st, c->W, Wu, c->row_bytes,
                      a, c->y, c->n_in, rows, (int)GLU_SILU, cover));
    else
        glu_stream<F, W, TR, ST><<<grid, W * 32, 2 * cover * ST, c->st>>>(c->W, Wu, c->row_bytes, a, c->y, c->n_in,
                                                                           rows, (int)GLU_SILU, cover);
}
__global__ void fill_random(uint32_t *p, size_t n_words, uint32_t seed);
__global__ void set_d(uint8_t *W, size_t n_blocks, int bytes, int d_off);

/* The checks' verdicts on two device outputs of n floats (ref, got): within
 * 1e-5 of max |ref| with every output finite, or the same bits. */
static void report_close(const char *name, int k, int n, const float *ref, const float *got, const char *what) {
    CK(cudaDeviceSynchronize());
    float *h1 = (float *)malloc(sizeof(float) * n), *h2 = (float *)malloc(sizeof(float) * n);
    CK(cudaMemcpy(h1, ref, sizeof(float) * n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h2, got, sizeof(float) * n, cudaMemcpyDeviceToHost));
    double mx = 0.0, err = 0.0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(h1[i]) || !isfinite(h2[i])) bad++;
        mx = fabs(h1[i]) > mx ? fabs(h1[i]) : mx;
        err = fabs(h1[i] - h2[i]) > err ? fabs(h1[i] - h2[i]) : err;
    }
    const bool ok = bad == 0 && mx > 0.0 && err <= 1e-5 * mx;
    printf("%s check (%dx%d): max |diff| %.3g of max |%s| %.3g, %d not finite (%s)\n", name, k, n, err, what, mx, bad,
           ok ? "ok" : "DIFFER");
    free(h1), free(h2);
}
static void report_same_bits(const char *name, int n, const float *ref, const float *got) {
    float *h1 = (float *)malloc(sizeof(float) * n), *h2 = (float *)malloc(sizeof(float) * n);
    CK(cudaMemcpy(h1, ref, sizeof(float) * n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h2, got, sizeof(float) * n, cudaMemcpyDeviceToHost));
    int diff = 0, finite = 0;
    for (int i = 0; i < n; i++) diff += memcmp(&h1[i], &h2[i], sizeof(float)) != 0, finite += isfinite(h1[i]) != 0;
    printf("%s check (4096x4096): %d of %d outputs differ from the library's bits, %d finite (%s)\n", name, diff, n,
           finite, diff == 0 && finite == n ? "same" : "DIFFER");
    free(h1), free(h2);
}
/* v50 (argument "/gks-"): the gate/up GLU split over K, as the downs are
 * (gemv_kernels.cuh ks_body): KS warps of a block share R rows of gate and R
 * of up, their 32 * KS lanes striding the row's items, and add their parts
 * through shared memory before the GLU epilogue. Why: the library's GLU
 * (one warp a row pair, 2 rows of each at U = 2) streams 4096 x 28672 Q4_K at
 * 21.1 us against a read floor of 16.6; on the about square 4096-wide
 * matrices the same split with 4 rows a group took 7.7 -> 6.3 us (v27), one
 * item a lane in a single pass instead of two, twice the warps in flight. */
template <class F, int WARPS, int R, int U, int KS>
__global__ void __launch_bounds__(WARPS * 32)
lab_glu_ks(const uint8_t *__restrict__ Wg, const uint8_t *__restrict__ Wu, size_t row_bytes, act_q8 a,
           float *__restrict__ h, int n_in, int n_out, int act) {
    static_assert(WARPS % KS == 0, "whole groups of KS warps");
    constexpr int GROUPS = WARPS / KS;
    pdl_launch_dependents();
    fmt_prepare<F>();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, group = warp / KS, k = warp % KS;
    const int base_first = blockIdx.x * GROUPS * R;
    ahead<F, 2 * R, U> pre;
    {
        const int first = base_first + group * R;
        if (k == 0 && first < n_out && 2 * (size_t)n_out * row_bytes <= PREFETCH_MAX_BYTES) {
            const size_t bytes = (size_t)min(R, n_out - first) * row_bytes;
            prefetch_rows_l2(Wg + (size_t)first * row_bytes, bytes, lane);
            prefetch_rows_l2(Wu + (size_t)first * row_bytes, bytes, lane);
        }
    }
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    __shared__ float part[WARPS][2 * R];
    for (int base_row = base_first; base_row < n_out; base_row += gridDim.x * GROUPS * R) {
        const int row0 = base_row + group * R;
        const uint8_t *wr[2 * R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const size_t off = (size_t)min(row0 + r, n_out - 1) * row_bytes;
            wr[r] = Wg + off, wr[R + r] = Wu + off;
        }
        float acc[1][2 * R];
        dot_rows<F, 2 * R, U, 1, 32 * KS>(wr, a, 0, n_in, k * 32 + lane, acc, pre, false);
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < 2 * R; r++) part[warp][r] = acc[0][r];
        const float rs = act_rs_end(rsp);
        __syncthreads();
        if (k == 0 && lane < R && row0 + lane < n_out) {
            float g = 0.0f, u = 0.0f;
#pragma unroll
            for (int j = 0; j < KS; j++) g += part[group * KS + j][lane], u += part[group * KS + j][R + lane];
            h[row0 + lane] = glu_act(act, g * rs) * (u * rs);
        }
        __syncthreads();
    }
}
template <class F, int W, int R, int U, int KS>
static void run_glu_ks(const lab_ctx *c) {
    static int most = 0;
    if (!most) most = persistent_blocks(lab_glu_ks<F, W, R, U, KS>, W * 32);
    const int rows = c->n_out / 2;
    int grid = CEIL_DIV(rows, (W / KS) * R);
    if (grid > most) grid = most;
    const act_q8 a = lab_act(c);
    launch(lab_glu_ks<F, W, R, U, KS>, grid, W * 32, c->st, c->W, c->W + (size_t)rows * c->row_bytes, c->row_bytes,
           a, c->y, c->n_in, rows, (int)GLU_SILU);
}
/* v50's check: the split GLU against the library's on the same blocks, within
 * 1e-5 of max |h| (the split adds its parts in another order) */
template <class F, int W, int R, int U, int KS>
static void check_glu_ks(const char *name, float *x, int8_t *xq, float2 *xds, act_scale *sc, int k, int n) {
    const size_t row_bytes = (size_t)(k / F::QK) * F::BYTES;
    uint8_t *Wt;
    float *y1, *y2;
    CK(cudaMalloc(&Wt, 2 * row_bytes * n + 256));
    CK(cudaMalloc(&y1, sizeof(float) * n));
    CK(cudaMalloc(&y2, sizeof(float) * n));
    fill_random<<<2048, 256>>>((uint32_t *)Wt, (2 * row_bytes * n + 256) / 4, 97u);
    set_d<<<1024, 256>>>(Wt, 2 * (size_t)n * (k / F::QK), F::BYTES, 0);
    set_d<<<1024, 256>>>(Wt + 2, 2 * (size_t)n * (k / F::QK), F::BYTES, 0); /* dmin too */
    quantize_act_q8<<<CEIL_DIV(k, 256), 256>>>(x, xq, xds, k, 1, k, sc);
    act_q8 a;
    a.xq = xq, a.xds = xds, a.qs_stride = k, a.n_tok = 1, a.sc = sc;
    const uint8_t *Wu = Wt + (size_t)n * row_bytes;
    gemv_q8_glu<F, 4, 2, 2, 1><<<CEIL_DIV(n, 8), 128>>>(Wt, Wu, row_bytes, a, y1, n, k, n, (int)GLU_SILU);
    CK(cudaMemset(y2, 0xFF, sizeof(float) * n)); /* NaN: an unwritten output shows */
    lab_glu_ks<F, W, R, U, KS><<<CEIL_DIV(n, (W / KS) * R), W * 32>>>(Wt, Wu, row_bytes, a, y2, k, n, (int)GLU_SILU);
    CK_LAUNCH("glu ks check");
    report_close(name, k, n, y1, y2, "h");
    CK(cudaFree(Wt));
    CK(cudaFree(y1));
    CK(cudaFree(y2));
}
/* the library's one-token GLU launch (gemv.cu launch_q8_glu): R rows of
 * gate and up a warp, U items, on a persistent grid */
template <class F, int R, int U>
static void run_glu_lib(const lab_ctx *c) {
    static int most = 0;
    if (!most) most = persistent_blocks(gemv_q8_glu<F, 4, R, U, 1>, 128);
    const int rows = c->n_out / 2;
    int grid = CEIL_DIV(rows, 4 * R);
    if (grid > most) grid = most;
    const act_q8 a = lab_act(c);
    launch(gemv_q8_glu<F, 4, R, U, 1>, grid, 128, c->st, c->W, c->W + (size_t)rows * c->row_bytes, c->row_bytes, a,
           c->y, rows, c->n_in, rows, (int)GLU_SILU);
}

/* v38 (argument "/h"): the LM-head launch of the library (gemv.cu plan_q8,
 * Q8_SHORT: 4 rows a warp, one item each a pass, persistent grid) against
 * the staged kernel with TR rows a tile, 3 stages */
template <class F>
static void run_head(const lab_ctx *c) {
    static int most = 0;
    if (!most) most = persistent_blocks(gemv_q8<F, 4, 4, 1, 1>, 128);
    int grid = CEIL_DIV(c->n_out, 16);
    if (grid > most) grid = most;
    const act_q8 a = lab_act(c);
    launch(gemv_q8<F, 4, 4, 1, 1>, grid, 128, c->st, c->W, c->row_bytes, a, c->y, c->n_out, c->n_in, c->n_out, 0,
           (unsigned long long *)NULL);
}

/* v38 (argument "READ"): the read floor of a matrix's bytes: a kernel that
 * only streams them (16-byte loads, 4 in flight a lane, a persistent grid
 * of 8 warps a block) and folds them into one word a block, so the time a
 * GEMV of that size could reach at best with one launch */
__global__ void __launch_bounds__(256) read_only(const uint4 *__restrict__ p, size_t n16, float *__restrict__ y) {
    uint32_t acc = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                    d = __ldg(p + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n16; i += stride) {
        const uint4 a = __ldg(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x12345678u) y[blockIdx.x] = 1.0f; /* keeps the loads; never true in practice */
}
static void run_read(const lab_ctx *c) {
    static int most = 0;
    if (!most) most = persistent_blocks(read_only, 256);
    (void)lab_act(c); /* the call's quantize, as the GEMVs' calls have it */
    launch(read_only, most, 256, c->st, (const uint4 *)c->W, c->row_bytes * c->n_out / 16, c->y);
}


/* v71: the lattice formats' tiled dots as they were before the replicated
 * codebooks and the prmt selectors (gemv_tiled_iq.cuh): the codebook from
 * one shared copy, the signs as byte masks; "/v66" rows, for the A/B in one
 * run. */
/* IQ2_XXS: d at 0; sub-block ib's index word at 2 + 8 ib, its sign/scale word at 6 + 8 ib */
struct t32_iq2_xxs_v66 : t32_geo<66, 4, 2, false> {
    using book = fmt_iq2_xxs::book;
    static __device__ __forceinline__ void prepare() { fmt_iq2_xxs::prepare(); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t w0 = t32_u32(w, 2 + 8 * ib), w1 = t32_u32(w, 6 + 8 * ib);
            const t32_act32 x = t32_act_of(act, ib);
            int sumi = 0;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint2 pt = book::at(iq2xxs_grid_dev.v, (w0 >> (8 * g)) & 0xFFu);
                sumi = iq_group_dot(pt.x, pt.y, iq_even_signs(w1 >> (7 * g)), x.a[2 * g], x.a[2 * g + 1], sumi);
            }
            acc += x.d * (float)((2 * (int)(w1 >> 28) + 1) * sumi);
        }
        return 0.125f * h2f(t32_word(w, 0)) * acc;
    }
};

/* IQ2_XS: d at 0, 32 u16 (9-bit index | 7 sign bits) at 2, scales[8] at 66 */
struct t32_iq2_xs_v66 : t32_geo<74, 5, 0, false> {
    using book = fmt_iq2_xs::book;
    static __device__ __forceinline__ void prepare() { fmt_iq2_xs::prepare(); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t q2[2] = {t32_u32(w, 2 + 8 * ib), t32_u32(w, 6 + 8 * ib)};
            const t32_act32 x = t32_act_of(act, ib);
            int sum[2] = {0, 0};
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t q = (q2[g >> 1] >> (16 * (g & 1))) & 0xFFFFu;
                const uint2 pt = book::at(iq2xs_grid_dev.v, q & 511u);
                sum[g >> 1] = iq_group_dot(pt.x, pt.y, iq_even_signs(q >> 9), x.a[2 * g], x.a[2 * g + 1], sum[g >> 1]);
            }
            const int sc = (int)((t32_u32(w, 66 + ib)) & 0xFFu);
            acc += x.d * (float)((2 * (sc & 15) + 1) * sum[0] + (2 * (sc >> 4) + 1) * sum[1]);
        }
        return 0.125f * h2f(t32_word(w, 0)) * acc;
    }
};

/* IQ2_S: d at 0, index low bytes at 2 + 4 ib, sign bytes at 34 + 4 ib, qh at 66, scales at 74 */
struct t32_iq2_s_v66 : t32_geo<82, 5, 2, false> {
    using book = fmt_iq2_s::book;
    static __device__ __forceinline__ void prepare() { fmt_iq2_s::prepare(); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t qh2[2] = {t32_u32(w, 66), t32_u32(w, 70)}, sc2[2] = {t32_u32(w, 74), t32_u32(w, 78)};
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t idx = t32_u32(w, 2 + 4 * ib), sgn = t32_u32(w, 34 + 4 * ib);
            const uint32_t qh = (qh2[ib >> 2] >> (8 * (ib & 3))) & 0xFFu, sc = (sc2[ib >> 2] >> (8 * (ib & 3))) & 0xFFu;
            const t32_act32 x = t32_act_of(act, ib);
            int sum[2] = {0, 0};
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint2 pt = book::at(iq2s_grid_dev.v, ((idx >> (8 * g)) & 0xFFu) | ((qh >> (2 * g)) & 3u) << 8);
                sum[g >> 1] = iq_group_dot(pt.x, pt.y, sgn >> (8 * g), x.a[2 * g], x.a[2 * g + 1], sum[g >> 1]);
            }
            acc += x.d * (float)((2 * (int)(sc & 15u) + 1) * sum[0] + (2 * (int)(sc >> 4) + 1) * sum[1]);
        }
        return 0.125f * h2f(t32_word(w, 0)) * acc;
    }
};

/* IQ3_XXS: d at 0, 8 index bytes a sub-block at 2 + 8 ib, its sign/scale word at 66 + 4 ib */
struct t32_iq3_xxs_v66 : t32_geo<98, 6, 2, false> {
    using book = fmt_iq3_xxs::book;
    static __device__ __forceinline__ void prepare() { fmt_iq3_xxs::prepare(); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t idx[2] = {t32_u32(w, 2 + 8 * ib), t32_u32(w, 6 + 8 * ib)}, aux = t32_u32(w, 66 + 4 * ib);
            const t32_act32 x = t32_act_of(act, ib);
            int sumi = 0;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t pair = idx[g >> 1] >> (16 * (g & 1));
                const uint32_t lo = book::at(iq3xxs_grid_dev.v, pair & 0xFFu);
                const uint32_t hi = book::at(iq3xxs_grid_dev.v, (pair >> 8) & 0xFFu);
                sumi = iq_group_dot(lo, hi, iq_even_signs(aux >> (7 * g)), x.a[2 * g], x.a[2 * g + 1], sumi);
            }
            acc += x.d * (float)((2 * (int)(aux >> 28) + 1) * sumi);
        }
        return 0.25f * h2f(t32_word(w, 0)) * acc;
    }
};

/* IQ3_S: d at 0, index low bytes at 2 + 8 ib, qh at 66, signs at 74 + 4 ib, scale nibbles at 106 */
struct t32_iq3_s_v66 : t32_geo<110, 7, 0, false> {
    using book = fmt_iq3_s::book;
    static __device__ __forceinline__ void prepare() { fmt_iq3_s::prepare(); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t qh2[2] = {t32_u32(w, 66), t32_u32(w, 70)}, scw = t32_u32(w, 106);
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t idx[2] = {t32_u32(w, 2 + 8 * ib), t32_u32(w, 6 + 8 * ib)}, sgn = t32_u32(w, 74 + 4 * ib);
            const uint32_t qh = (qh2[ib >> 2] >> (8 * (ib & 3))) & 0xFFu;
            const int ls = 2 * (int)((scw >> (4 * ib)) & 15u) + 1;
            const t32_act32 x = t32_act_of(act, ib);
            int sumi = 0;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t pair = idx[g >> 1] >> (16 * (g & 1));
                const uint32_t lo = book::at(iq3s_grid_dev.v, (pair & 0xFFu) | ((qh >> (2 * g)) & 1u) << 8);
                const uint32_t hi = book::at(iq3s_grid_dev.v, ((pair >> 8) & 0xFFu) | ((qh >> (2 * g + 1)) & 1u) << 8);
                sumi = iq_group_dot(lo, hi, sgn >> (8 * g), x.a[2 * g], x.a[2 * g + 1], sumi);
            }
            acc += x.d * (float)(ls * sumi);
        }
        return h2f(t32_word(w, 0)) * acc;
    }
};

/* IQ1_S: d at 0, index low bytes at 2 + 4 ib, a u16 at 34 + 2 ib (high index
 * bits, scale code, shift sign) */
struct t32_iq1_s_v66 : t32_geo<50, 3, 2, false> {
    using book = fmt_iq1_s::book;
    static __device__ __forceinline__ void prepare() { fmt_iq1_s::prepare(); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t qs = t32_u32(w, 2 + 4 * ib), h = t32_u32(w, 34 + 2 * ib) & 0xFFFFu;
            const t32_act32 x = t32_act_of(act, ib);
            int isum = 0;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint2 pt = book::at(iq1s_grid_dev.v, ((qs >> (8 * g)) & 0xFFu) | ((h >> (3 * g)) & 7u) << 8);
                isum += iq1_group(pt, (h & 0x8000u) != 0, x.a[2 * g], x.a[2 * g + 1]);
            }
            acc += x.d * (float)((2 * (int)((h >> 12) & 7u) + 1) * isum);
        }
        return 0.125f * h2f(t32_word(w, 0)) * acc;
    }
};

/* IQ1_M: index low bytes at 4 ib, a u16 of group nibbles at 32 + 2 ib, the
 * scale words (with d's nibbles) at 48 and 52: the side bytes */
struct t32_iq1_m_v66 : t32_geo<56, 3, 8, false> {
    using book = fmt_iq1_m::book;
    static __device__ __forceinline__ void prepare() { fmt_iq1_m::prepare(); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t sc[2] = {t32_word(w, 12), t32_word(w, 13)};
        const uint32_t dbits = (sc[0] >> 12 & 0xFu) | (sc[0] >> 28) << 4 | (sc[1] >> 12 & 0xFu) << 8 | (sc[1] >> 28) << 12;
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t qs = t32_word(w, ib), qh = t32_u32(w, 32 + 2 * ib) & 0xFFFFu;
            const uint32_t pair = ib >> 2 ? sc[1] : sc[0];
            const uint32_t word = ((ib >> 1) & 1 ? pair >> 16 : pair) >> (6 * (ib & 1));
            const t32_act32 x = t32_act_of(act, ib);
            int part[2] = {0, 0};
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t hn = qh >> (4 * g);
                const uint2 pt = book::at(iq1s_grid_dev.v, ((qs >> (8 * g)) & 0xFFu) | (hn & 7u) << 8);
                part[g >> 1] += iq1_group(pt, (hn & 8u) != 0, x.a[2 * g], x.a[2 * g + 1]);
            }
            acc += x.d * (float)((2 * (int)(word & 7u) + 1) * part[0] + (2 * (int)((word >> 3) & 7u) + 1) * part[1]);
        }
        return 0.125f * h2f(dbits) * acc;
    }
};

/* v72: the IQ4 formats' tiled dots before iq4_word_dot (lut16 on the
 * activation in natural order); "/v67" rows, for the A/B in one run. */
/* IQ4_XS, 136 bytes = 8 chunks and 8 side bytes: d and scales_h (word 0),
 * scales_l (word 1), qs[128] (words 2-33: 16 bytes a 32 elements, IQ4_NL's
 * order); as fmt_iq4_xs over the whole block. */
struct t32_iq4_xs_v67 {
    static constexpr int QK = 256, BYTES = 136, CH = 8, SIDE = 8, TILE = CH * 512 + 32 * SIDE, ACT = 336;
    static constexpr bool SUMS16 = false;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return t32_block_chunk<BYTES>(b, c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *b) { return t32_block_side<BYTES, CH, SIDE>(b); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t h0 = t32_word(w, 0), h1 = t32_word(w, 1);
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *ap = act + 32 * ib;
            const int4 a0 = *(const int4 *)ap, a1 = *(const int4 *)(ap + 16);
            const int a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            int sumi = 0;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int2 v = lut16(t32_word(w, 2 + 4 * ib + k), IQ4NL_T);
                sumi = __dp4a(v.x, a[k], sumi);
                sumi = __dp4a(v.y, a[k + 4], sumi);
            }
            const int ls = ((int)((h1 >> (4 * ib)) & 15u) | (int)(((h0 >> 16) >> (2 * ib)) & 3u) << 4) - 32;
            acc += *(const float *)(act + 256 + 8 * ib) * (float)(ls * sumi);
        }
        return h2f(h0) * acc;
    }
};

struct t32_iq4_nl_v67 : t32_legacy_geo<18> {
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const uint32_t q[4] = {w.c[j].x, w.c[j].y, w.c[j].z, w.c[j].w};
            const int4 a0 = *(const int4 *)(act + 32 * j), a1 = *(const int4 *)(act + 32 * j + 16);
            const int al[4] = {a0.x, a0.y, a0.z, a0.w}, ah[4] = {a1.x, a1.y, a1.z, a1.w};
            int sumi = 0;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int2 v = lut16(q[k], IQ4NL_T);
                sumi = __dp4a(v.x, al[k], sumi);
                sumi = __dp4a(v.y, ah[k], sumi);
            }
            acc += t32_d8(w.c[8], j) * (*(const float *)(act + 256 + 8 * j) * (float)sumi);
        }
        return acc;
    }
};

/* v75: MXFP4's item dot before the level picks (lut16 on the activation in
 * natural order); "/v74" rows, for the A/B in one run. */
struct fmt_mxfp4_v74 : words_block<fmt_mxfp4_v74, 5, false> {
    static constexpr int QK = 32, BYTES = 17, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[5] = r.w;
        int a[8];
        load_act32(xq, a);
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int2 v = lut16(__funnelshift_r(w[k], w[k + 1], 8), pack4(0, 1, 2, 3), pack4(4, 6, 8, 12),
                                 pack4(0, -1, -2, -3), pack4(-4, -6, -8, -12));
            sumi = __dp4a(v.x, a[k], sumi);
            sumi = __dp4a(v.y, a[k + 4], sumi);
        }
        return e8m0_half(w[0] & 0xFFu) * __ldg(&ds->x) * (float)sumi;
    }
};

/* v55 (argument "/t32", "check-t32"): the tiled GEMV (gemv_tiled.cuh): a lane
 * a block, tiles of 32 blocks laid out so each warp load is 512 contiguous
 * bytes, the activation in shared memory. The weight copies are random bytes
 * read as tiles (the layout is a permutation of the file's bytes, so the
 * time is the same); "glu" rows read the gate+up shape as (gate, up) row
 * pairs; "ks" rows split a group's T tiles over the T warps of a block
 * (WARPS must equal T). Grid: BPS blocks an SM at most (0: as many as fit). */
/* the kernel's opt-in to smem bytes of dynamic shared memory (codebook tables past 48 KB) */
template <class F, int WARPS, int G, int KS, bool GLU>
static void t32_optin(int smem) {
    if (smem <= 48 * 1024) return;
    if (KS) CK(cudaFuncSetAttribute(gemv_t32_ks<F, WARPS, G, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    else CK(cudaFuncSetAttribute((gemv_t32<F, WARPS, G, GLU, t32_plain, true>), cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
}
template <class F, int WARPS, int G, int KS, bool GLU, int BPS>
static void run_t32(const lab_ctx *c) {
    static int most = 0, smem = 0;
    const int nb = c->n_in / F::QK;
    if ((G * nb) % 32 != 0 || (KS && G * nb / 32 != WARPS)) return; /* not this variant's shape: no launch */
    if (!most || smem != t32_smem_bytes<F>(c->n_in)) {
        smem = t32_smem_bytes<F>(c->n_in);
        int per_sm = 0;
        t32_optin<F, WARPS, G, KS, GLU>(smem);
        if (KS) CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_t32_ks<F, WARPS, G, true>, WARPS * 32, smem));
        else CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (gemv_t32<F, WARPS, G, GLU, t32_plain, true>), WARPS * 32, smem));
        if (BPS && per_sm > BPS) per_sm = BPS;
        most = sm_count * (per_sm > 0 ? per_sm : 1);
    }
    int grid = KS ? CEIL_DIV(c->n_out, G) : CEIL_DIV(CEIL_DIV(c->n_out, G), WARPS);
    if (grid > most) grid = most;
    const act_q8 a = lab_act(c);
    if (KS) {
        if (lab_pdl)
            CK(pdl_launch(gemv_t32_ks<F, WARPS, G, true>, dim3(grid), dim3(WARPS * 32), (size_t)smem, c->st, c->W, a, c->y,
                          c->n_in, c->n_out, 0));
        else
            gemv_t32_ks<F, WARPS, G, true><<<grid, WARPS * 32, smem, c->st>>>(c->W, a, c->y, c->n_in, c->n_out, 0);
    } else {
        if (lab_pdl) /* GLU: the rows read as (gate, up) pairs */
            CK(pdl_launch((gemv_t32<F, WARPS, G, GLU, t32_plain, true>), dim3(grid), dim3(WARPS * 32), (size_t)smem, c->st, c->W, a,
                          c->y, c->n_in, c->n_out, 0, (int)GLU_SILU, (unsigned long long *)NULL, t32_plain{}));
        else
            gemv_t32<F, WARPS, G, GLU, t32_plain, true><<<grid, WARPS * 32, smem, c->st>>>(c->W, a, c->y, c->n_in, c->n_out, 0,
                                                                         (int)GLU_SILU, (unsigned long long *)NULL,
                                                                         t32_plain{});
    }
}
/* v98 (argument "/t32s1"): the tiled kernels with one tile buffer (TWO
 * false: the next tile asked for right after the dot that frees the
 * registers) against two (the "/t32" rows: the next tile asked for before
 * the dot). First run as lab copies with __launch_bounds__(threads, MINB):
 * at MINB 3 (5 for 4-warp blocks) ptxas capped them at 80 (96) registers
 * and spilled 40-340 bytes, and every shape lost (bench/gpu-decode-notes.md
 * v98); at the blocks an SM the registers give, one buffer won where a warp
 * takes many tiles, and became the library's choice there. */
/* one launch of the one-buffer kernels (KS: the split one), grid as run_t32's */
template <class F, int WARPS, int G, int KS, bool GLU>
static cudaError_t t32s1_launch(cudaStream_t st, bool pdl, const uint8_t *W, act_q8 a, float *y, int n_in, int n_out,
                        int grid, int smem) {
    if (KS) {
        if (smem > 48 * 1024)
            CK(cudaFuncSetAttribute(gemv_t32_ks<F, WARPS, G, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        if (pdl) return pdl_launch(gemv_t32_ks<F, WARPS, G, false>, dim3(grid), dim3(WARPS * 32), (size_t)smem, st, W, a, y, n_in, n_out, 0);
        gemv_t32_ks<F, WARPS, G, false><<<grid, WARPS * 32, smem, st>>>(W, a, y, n_in, n_out, 0);
    } else {
        if (smem > 48 * 1024)
            CK(cudaFuncSetAttribute(gemv_t32<F, WARPS, G, GLU>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        if (pdl)
            return pdl_launch(gemv_t32<F, WARPS, G, GLU>, dim3(grid), dim3(WARPS * 32), (size_t)smem, st, W, a, y,
                              n_in, n_out, 0, (int)GLU_SILU, (unsigned long long *)NULL, t32_plain{});
        gemv_t32<F, WARPS, G, GLU><<<grid, WARPS * 32, smem, st>>>(W, a, y, n_in, n_out, 0, (int)GLU_SILU,
                                                                  (unsigned long long *)NULL, t32_plain{});
    }
    return cudaSuccess;
}
template <class F, int WARPS, int G, int KS, bool GLU>
static int t32s1_per_sm(int smem) {
    int per_sm = 0;
    if (KS) {
        if (smem > 48 * 1024)
            CK(cudaFuncSetAttribute(gemv_t32_ks<F, WARPS, G, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_t32_ks<F, WARPS, G, false>, WARPS * 32, smem));
    } else {
        if (smem > 48 * 1024)
            CK(cudaFuncSetAttribute(gemv_t32<F, WARPS, G, GLU>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_t32<F, WARPS, G, GLU>, WARPS * 32, smem));
    }
    return per_sm;
}
template <class F, int WARPS, int G, int KS, bool GLU>
static void run_t32s1(const lab_ctx *c) {
    static int most = 0, smem = 0;
    const int nb = c->n_in / F::QK;
    if ((G * nb) % 32 != 0 || (KS && G * nb / 32 != WARPS)) return;
    if (!most || smem != t32_smem_bytes<F>(c->n_in)) {
        smem = t32_smem_bytes<F>(c->n_in);
        const int per_sm = t32s1_per_sm<F, WARPS, G, KS, GLU>(smem);
        most = sm_count * (per_sm > 0 ? per_sm : 1);
        printf("  (%s: %d blocks an SM)\n", KS ? "t32s1 ks" : "t32s1", per_sm);
    }
    int grid = KS ? CEIL_DIV(c->n_out, G) : CEIL_DIV(CEIL_DIV(c->n_out, G), WARPS);
    if (grid > most) grid = most;
    const cudaError_t e = t32s1_launch<F, WARPS, G, KS, GLU>(c->st, lab_pdl, c->W, lab_act(c), c->y, c->n_in,
                                                                  c->n_out, grid, smem);
    CK(e);
}
/* v76 (argument "/t32seg"): gemv_t32_seg, a group of G rows a block, G as
 * the library picks it (gemv_tiled.cu t32_shape): 8 or 16 where a group of
 * 4 does not fill whole tiles (rows of 3584, 18944, 5120), or long rows of
 * fewer than 7 tiles a group, doubled until 7 (8192); other shapes no launch.
 * Every group whole (the lab's copies are not padded to groups). */
#define LAB_SEG_WARPS 7 /* the library's warps a block (gemv_tiled_ops.cuh T32_KS_TILES) */
template <class F, bool GLU>
static void run_t32_seg(const lab_ctx *c) {
    const int nb = c->n_in / F::QK;
    int g = t32_group_rows(nb);
    if (!g) return;
    if (g <= 4) {
        const bool long_rows = c->n_in >= 3 * c->n_out && c->n_in >= 4096;
        if (!long_rows || g * nb / 32 >= LAB_SEG_WARPS) return;
        while (g < 16 && g * nb / 32 < LAB_SEG_WARPS) g *= 2;
    }
    if (c->n_out % g != 0) return;
    const int smem = t32_seg_smem_bytes<F>(c->n_in, g);
    if (smem > 48 * 1024) CK(cudaFuncSetAttribute(gemv_t32_seg<F, LAB_SEG_WARPS, GLU>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_t32_seg<F, LAB_SEG_WARPS, GLU>, 32 * LAB_SEG_WARPS, smem));
    int grid = c->n_out / g;
    if (grid > sm_count * (per_sm > 0 ? per_sm : 1)) grid = sm_count * (per_sm > 0 ? per_sm : 1);
    const act_q8 a = lab_act(c);
    if (lab_pdl)
        CK(pdl_launch(gemv_t32_seg<F, LAB_SEG_WARPS, GLU>, dim3(grid), dim3(32 * LAB_SEG_WARPS), (size_t)smem, c->st, c->W,
                      a, c->y, c->n_in, c->n_out, 0, (int)GLU_SILU, g, (unsigned long long *)NULL));
    else
        gemv_t32_seg<F, LAB_SEG_WARPS, GLU><<<grid, 32 * LAB_SEG_WARPS, smem, c->st>>>(
            c->W, a, c->y, c->n_in, c->n_out, 0, (int)GLU_SILU, g, (unsigned long long *)NULL);
}
/* blocks (src_stride bytes apart: the device's, F::BYTES of them the block)
 * into t32 tiles; the pad blocks of the last tile zero */
template <class F>
__global__ void tile_t32(const uint8_t *__restrict__ src, uint8_t *__restrict__ dst, size_t n_blocks, int src_stride) {
    constexpr int ch = F::CH + (F::SIDE ? 1 : 0); /* the side bytes as one more "chunk" */
    const size_t n_tiles = (n_blocks + 31) / 32, n = n_tiles * 32 * ch;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t b = i / ch, c = i % ch; /* block b, chunk c */
        uint8_t *t = dst + (b / 32) * F::TILE;
        if ((int)c < F::CH) {
            uint4 v = make_uint4(0, 0, 0, 0);
            if (b < n_blocks) memcpy(&v, src + b * src_stride + 16 * c, 16);
            *(uint4 *)(t + 512 * c + (b % 32) * 16) = v;
        } else { /* the side bytes, zero past the block */
            uint2 v = make_uint2(0, 0);
            if (b < n_blocks) memcpy(&v, src + b * src_stride + 16 * F::CH, (size_t)(F::BYTES - 16 * F::CH < F::SIDE ? F::BYTES - 16 * F::CH : F::SIDE));
            memcpy(t + 512 * F::CH + (b % 32) * F::SIDE, &v, F::SIDE);
        }
    }
}
/* the tiled kernel against the library's plain one on the same blocks (sums
 * in another order: within 1e-5 of max |y|); glu: k x (2 n) as gate and up */
template <class F, class FL, int WARPS, int G, int KS, bool GLU, bool ONEBUF = false>
static void check_t32(const char *name, float *x, int8_t *xq, float2 *xds, act_scale *sc, int k, int n, int d_off) {
    const size_t rb = (size_t)(k / FL::QK) * FL::BYTES, rows = GLU ? 2 * (size_t)n : (size_t)n;
    const size_t n_blocks = rows * (k / F::QK), tiled = (n_blocks + 31) / 32 * F::TILE + F::TILE;
    uint8_t *W, *Wi, *Wt;
    float *y1, *y2;
    CK(cudaMalloc(&W, rb * rows + 256));
    CK(cudaMalloc(&Wi, rb * rows + 256));
    CK(cudaMalloc(&Wt, tiled));
    CK(cudaMalloc(&y1, sizeof(float) * n));
    CK(cudaMalloc(&y2, sizeof(float) * n));
    fill_random<<<2048, 256>>>((uint32_t *)W, (rb * rows + 256) / 4, 4242u + (uint32_t)k + (uint32_t)n);
    set_d<<<1024, 256>>>(W, n_blocks, FL::BYTES, d_off);
    if (d_off == 0) set_d<<<1024, 256>>>(W + 2, n_blocks, FL::BYTES, 0); /* dmin */
    if (FL::BYTES == 84) set_d<<<1024, 256>>>(W, n_blocks, FL::BYTES, 82); /* Q2_K's dmin */
    if (GLU) { /* gate rows 0..n-1, up rows n..2n-1 -> (gate i, up i) pairs */
        CK(cudaMemcpy2D(Wi, 2 * rb, W, rb, rb, n, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy2D(Wi + rb, 2 * rb, W + rb * n, rb, rb, n, cudaMemcpyDeviceToDevice));
    } else {
        CK(cudaMemcpy(Wi, W, rb * rows, cudaMemcpyDeviceToDevice));
    }
    tile_t32<F><<<1024, 256>>>(Wi, Wt, n_blocks, FL::BYTES);
    quantize_act_q8<<<CEIL_DIV(k, 256), 256>>>(x, xq, xds, k, 1, k, sc);
    act_q8 a;
    a.xq = xq, a.xds = xds, a.qs_stride = k, a.n_tok = 1, a.sc = sc;
    if (GLU)
        gemv_q8_glu<FL, 4, 1, 1, 1><<<CEIL_DIV(n, 4), 128>>>(W, W + rb * n, rb, a, y1, n, k, n, (int)GLU_SILU);
    else
        gemv_q8<FL, 4, 1, 1, 1><<<CEIL_DIV(n, 4), 128>>>(W, rb, a, y1, n, k, n, 0, (unsigned long long *)NULL);
    CK(cudaMemset(y2, 0xFF, sizeof(float) * n));
    const int smem = t32_smem_bytes<F>(k);
    t32_optin<F, WARPS, G, KS, GLU>(smem);
    if constexpr (ONEBUF) {
        const cudaError_t e = t32s1_launch<F, WARPS, G, KS, GLU>(0, false, Wt, a, y2, k, (int)rows, sm_count, smem);
        CK(e);
    }
    else if (KS) gemv_t32_ks<F, WARPS, G, true><<<sm_count, WARPS * 32, smem>>>(Wt, a, y2, k, (int)rows, 0);
    else
        gemv_t32<F, WARPS, G, GLU, t32_plain, true><<<sm_count, WARPS * 32, smem>>>(Wt, a, y2, k, (int)rows, 0, (int)GLU_SILU,
                                                                  (unsigned long long *)NULL, t32_plain{});
    CK_LAUNCH("t32 check");
    report_close(name, k, n, y1, y2, GLU ? "h" : "y");
    CK(cudaFree(W));
    CK(cudaFree(Wi));
    CK(cudaFree(Wt));
    CK(cudaFree(y1));
    CK(cudaFree(y2));
}

/* v9 (argument "pair"): Llama-3-8B Q4_K_M's Q/K/V where V is Q6_K (about
 * half its layers, and so in llama.cpp's Q4_K_M files): two launches, Q
 * and K fused (4096 -> 5120, Q4_K, split K 2 with 4 rows a group) and V
 * (4096 -> 1024, Q6_K, split K 4), against the library's gemv_q8_pair,
 * whose first blocks run the first and the rest the second. The pair's
 * outputs must equal the two launches' bit for bit; the run checks that
 * first. Measured before it went into the library (PDL graph): 9.7 -> 8.6
 * us (bench/gpu-decode-notes.md v28). */

/* one copy of the pair's weights: Q and K (n_out rows, c->row_bytes), then V */
static struct {
    size_t v_off, v_row_bytes;
    int v_rows;
} pair_geo;
static const int PAIR_QK = 5120, PAIR_V = 1024, PAIR_K = 4096;
static int imin(int a, int b) { return a < b ? a : b; }
static void pair_act(const lab_ctx *c, act_q8 *a) { *a = lab_act(c); }
static void run_pair_two(const lab_ctx *c) {
    act_q8 a;
    pair_act(c, &a);
    static int most_a = 0, most_b = 0;
    if (!most_a) most_a = persistent_blocks(gemv_q8_ks<fmt_q4_K, 4, 4, 1, 2>, 128);
    if (!most_b) most_b = persistent_blocks(gemv_q8_ks<fmt_q6_K, 4, 2, 1, 4>, 128);
    launch(gemv_q8_ks<fmt_q4_K, 4, 4, 1, 2>, imin(CEIL_DIV(c->n_out, 8), most_a), 128, c->st, c->W, c->row_bytes, a,
           c->y, c->n_in, c->n_out, 0);
    launch(gemv_q8_ks<fmt_q6_K, 4, 2, 1, 4>, imin(CEIL_DIV(pair_geo.v_rows, 2), most_b), 128, c->st,
           c->W + pair_geo.v_off, pair_geo.v_row_bytes, a, c->y + c->n_out, c->n_in, pair_geo.v_rows, 0);
}
static void run_pair_one(const lab_ctx *c) {
    act_q8 a;
    pair_act(c, &a);
    const int g_a = CEIL_DIV(c->n_out, 8), g_b = CEIL_DIV(pair_geo.v_rows, 2);
    launch(gemv_q8_pair<part_ks<fmt_q4_K, 4, 2>, part_ks<fmt_q6_K, 2, 4>>, g_a + g_b, 128, c->st, c->W, c->row_bytes, c->n_out,
           c->W + pair_geo.v_off, pair_geo.v_row_bytes, pair_geo.v_rows, a, c->y, c->y + c->n_out, c->n_in, g_a);
}

typedef struct variant {
    const char *name;
    int qk, bytes;  /* block geometry */
    lab_fn fn;
} variant;

/* the library's configuration, copied from gemv.cu's table (R, U, persistent) */
#define V_Q8(NAME, F, R, U, P) {NAME, F::QK, F::BYTES, run_q8<F, GEMV_WARPS, R, P, U>}
/* the tuning sweep: select with the argument "/w" */
#define V_TUNE(NAME, F)                                                                   \
    {NAME "/w4r1", F::QK, F::BYTES, run_q8<F, 4, 1, false>},                             \
    {NAME "/w4r1p", F::QK, F::BYTES, run_q8<F, 4, 1, true>},                             \
    {NAME "/w4r2p", F::QK, F::BYTES, run_q8<F, 4, 2, true>},                             \
    {NAME "/w8r2p", F::QK, F::BYTES, run_q8<F, 8, 2, true>},                             \
    {NAME "/w4r4p", F::QK, F::BYTES, run_q8<F, 4, 4, true>}
/* second sweep (argument "/u"): unroll factor U, 2 warps per block */
#define V_TUNE2(NAME, F)                                                                  \
    {NAME "/u4", F::QK, F::BYTES, run_q8<F, 4, 1, false, 4>},                            \
    {NAME "/u8", F::QK, F::BYTES, run_q8<F, 4, 1, false, 8>},                            \
    {NAME "/u4p", F::QK, F::BYTES, run_q8<F, 4, 1, true, 4>},                            \
    {NAME "/r2u4p", F::QK, F::BYTES, run_q8<F, 4, 2, true, 4>},                          \
    {NAME "/w2u4", F::QK, F::BYTES, run_q8<F, 2, 1, false, 4>}
/* third sweep (argument "/ks"): split K over KS warps, W warps per block */
#define V_KSPLIT(NAME, F, U)                                                              \
    {NAME "/ks2", F::QK, F::BYTES, run_q8_ksplit<F, 4, 2, U, 2>},                        \
    {NAME "/ks4", F::QK, F::BYTES, run_q8_ksplit<F, 4, 2, U, 4>},                        \
    {NAME "/ks4w8", F::QK, F::BYTES, run_q8_ksplit<F, 8, 2, U, 4>}
static const variant variants[] = {
    V_Q8("Q4_0", fmt_q4_0, 1, 4, false),     V_Q8("Q4_1", fmt_q4_1, 1, 4, false),
    V_Q8("Q5_0", fmt_q5_0, 1, 4, false),     V_Q8("Q5_1", fmt_q5_1, 1, 4, false),
    V_Q8("Q8_0", fmt_q8_0, 1, 4, false),     V_Q8("Q2_K", fmt_q2_K, 4, 1, true),
    V_Q8("Q3_K", fmt_q3_K, 4, 1, true),     V_Q8("Q4_K", fmt_q4_K, 2, 2, true),
    V_Q8("Q5_K", fmt_q5_K, 2, 2, true),      V_Q8("Q6_K", fmt_q6_K, 2, 2, true),
    V_Q8("IQ4_NL", fmt_iq4_nl, 1, 4, false), V_Q8("IQ4_XS", fmt_iq4_xs, 1, 2, false),
    V_Q8("MXFP4", fmt_mxfp4, 1, 4, false),   {"F16", 1, 2, run_f16<false>}, {"BF16", 1, 2, run_f16<true>},
    V_Q8("MXFP4/v74", fmt_mxfp4_v74, 1, 4, false),
    V_Q8("TQ2_0", fmt_tq2_0, 4, 1, true),
    V_Q8("IQ2_XXS", fmt_iq2_xxs, 1, 4, false), V_Q8("IQ2_XS", fmt_iq2_xs, 1, 4, false),
    V_Q8("IQ2_S", fmt_iq2_s, 1, 4, false),   V_Q8("IQ3_XXS", fmt_iq3_xxs, 1, 4, false),
    V_Q8("IQ3_S", fmt_iq3_s, 1, 4, false),   V_Q8("IQ1_S", fmt_iq1_s, 1, 4, false),
    V_Q8("IQ1_M", fmt_iq1_m, 1, 4, false),
    {"Q4_0/v2-f32x", 32, 18, run_q4_0_f32x}, {"Q8_0/v2-f32x", 32, 34, run_q8_0_f32x},
    V_TUNE("Q4_0", fmt_q4_0), V_TUNE("Q8_0", fmt_q8_0), V_TUNE("Q4_K", fmt_q4_K), V_TUNE("Q5_K", fmt_q5_K),
    V_TUNE("Q6_K", fmt_q6_K), V_TUNE("Q2_K", fmt_q2_K), V_TUNE("IQ4_XS", fmt_iq4_xs),
    V_TUNE2("Q4_0", fmt_q4_0), V_TUNE2("Q8_0", fmt_q8_0), V_TUNE2("Q4_K", fmt_q4_K), V_TUNE2("Q5_K", fmt_q5_K),
    V_TUNE2("Q6_K", fmt_q6_K), V_TUNE2("Q2_K", fmt_q2_K), V_TUNE2("Q3_K", fmt_q3_K), V_TUNE2("IQ4_XS", fmt_iq4_xs),
    V_TUNE2("MXFP4", fmt_mxfp4), V_TUNE2("Q5_0", fmt_q5_0),
    V_KSPLIT("Q4_0", fmt_q4_0, 4), V_KSPLIT("Q8_0", fmt_q8_0, 4), V_KSPLIT("Q4_K", fmt_q4_K, 2),
    V_KSPLIT("Q6_K", fmt_q6_K, 2),
    /* v10 (argument "/ks", not yet run): split K for the 4-bit formats that
     * have none in the library (IQ4_NL, IQ4_XS, MXFP4: 34-38% of copy
     * bandwidth on 14336 x 4096 with their plain launch) */
    V_KSPLIT("IQ4_NL", fmt_iq4_nl, 4), V_KSPLIT("IQ4_XS", fmt_iq4_xs, 2), V_KSPLIT("MXFP4", fmt_mxfp4, 4),
    /* v11 (argument "/r4", not yet run): 4 rows a warp on a persistent grid,
     * U = 1, for the formats still at 1 row a warp: Q3_K's 1-row launch was
     * latency bound (one item in flight a lane; 4 rows took its 4096 x 14336
     * from 26.8 to 20.9 us before its dot was rewritten), and these run at
     * 9-38% of copy bandwidth on 14336 x 4096 */
#define V_R4(NAME, F) {NAME "/r4", F::QK, F::BYTES, run_q8<F, 4, 4, true, 1>}
    V_R4("IQ4_NL", fmt_iq4_nl), V_R4("IQ4_XS", fmt_iq4_xs), V_R4("MXFP4", fmt_mxfp4),
    V_R4("TQ2_0", fmt_tq2_0), V_R4("IQ2_XXS", fmt_iq2_xxs), V_R4("IQ2_XS", fmt_iq2_xs), V_R4("IQ2_S", fmt_iq2_s),
    V_R4("IQ3_XXS", fmt_iq3_xxs), V_R4("IQ3_S", fmt_iq3_s), V_R4("IQ1_S", fmt_iq1_s), V_R4("IQ1_M", fmt_iq1_m),
#undef V_R4
    /* v7 (argument "/ks"): split K at U = 1, which the launcher takes when a
     * row's items fit one pass of the KS warps (Qwen's 4864-wide down, a
     * 4096 -> 1024 V) */
    {"Q4_K/ks4u1", 256, 144, run_q8_ksplit<fmt_q4_K, 4, 2, 1, 4>},
    {"Q6_K/ks4u1", 256, fmt_q6_K::BYTES, run_q8_ksplit<fmt_q6_K, 4, 2, 1, 4>},
    {"Q4_0/ks4u1", 32, 18, run_q8_ksplit<fmt_q4_0, 4, 2, 1, 4>},
    {"Q4_K/ks2u1", 256, 144, run_q8_ksplit<fmt_q4_K, 4, 2, 1, 2>},
    /* v8 (argument "/ks"): split K with 4 rows a warp group, so each
     * activation load serves 4 rows (2 before): the down projections read
     * twice the GLU's activation bytes per weight byte and stream at ~2,150
     * GB/s where the GLU streams at ~2,980 */
    {"Q4_K/ks4r4u1", 256, 144, run_q8_ksplit<fmt_q4_K, 4, 4, 1, 4>},
    {"Q6_K/ks4r4u1", 256, fmt_q6_K::BYTES, run_q8_ksplit<fmt_q6_K, 4, 4, 1, 4>},
    {"Q4_K/ks2r4u1", 256, 144, run_q8_ksplit<fmt_q4_K, 4, 4, 1, 2>},
    {"Q6_K/ks2r4u1", 256, fmt_q6_K::BYTES, run_q8_ksplit<fmt_q6_K, 4, 4, 1, 2>},
    {"Q4_K/ks4w8r4u1", 256, 144, run_q8_ksplit<fmt_q4_K, 8, 4, 1, 4>},
    {"Q4_0/ks4r4u1", 32, 18, run_q8_ksplit<fmt_q4_0, 4, 4, 1, 4>},
    {"Q4_0/ks2r4u2", 32, 18, run_q8_ksplit<fmt_q4_0, 4, 4, 2, 2>},
    /* the launcher's split for about square matrices (gemv.cu), for the
     * formats v8 did not time */
    {"Q4_1/ks4r4u1", 32, 20, run_q8_ksplit<fmt_q4_1, 4, 4, 1, 4>},
    {"Q5_0/ks4r4u1", 32, 22, run_q8_ksplit<fmt_q5_0, 4, 4, 1, 4>},
    {"Q5_1/ks4r4u1", 32, 24, run_q8_ksplit<fmt_q5_1, 4, 4, 1, 4>},
    {"Q8_0/ks4r4u1", 32, 34, run_q8_ksplit<fmt_q8_0, 4, 4, 1, 4>},
    {"Q5_K/ks2r4u1", 256, 176, run_q8_ksplit<fmt_q5_K, 4, 4, 1, 2>},
    /* v5 (argument "lowks"): split K 4 for the 2- and 3-bit K-quants against
     * their plain launch (14336-wide rows: 112 items, 4 dependent passes a
     * lane, 19-22% of copy bandwidth). Measured: Q3_K's 14336 x 4096 27.0 ->
     * 20.9 us, so the library gives Q3_K split K; Q2_K's lost (13.3 -> 18.5) */
    {"Q2_K/lowks-lib", 256, 84, run_q8<fmt_q2_K, 4, 4, true, 1>},
    {"Q2_K/lowks4", 256, 84, run_q8_ksplit<fmt_q2_K, 4, 2, 1, 4>},
    {"Q3_K/lowks-lib", 256, 110, run_q8<fmt_q3_K, 4, 1, false, 1>},
    {"Q3_K/lowks4", 256, 110, run_q8_ksplit<fmt_q3_K, 4, 2, 1, 4>},
    /* v12 (argument "/sq"): the launcher's split for about square matrices
     * with the IQ4 dots that load ahead. (The run of v12 also timed the old
     * dots, rows "/v1", since removed: bench/results/2026-11-30-h200-gemv-iq4.md) */
    {"IQ4_NL/sq4r4u1", 32, 18, run_q8_ksplit<fmt_iq4_nl, 4, 4, 1, 4>},
    {"MXFP4/sq4r4u1", 32, 17, run_q8_ksplit<fmt_mxfp4, 4, 4, 1, 4>},
    /* v13 (argument "/sm" or "/gks"): the IQ codebooks read from a copy in
     * shared memory (iq_book, S = true) against L1 (the library), in the
     * library's launch (1 row a warp, U = 4), on a persistent grid (of 4 or
     * 8 warps a block: fewer copies of the table), and split K 4 (2 rows a
     * group, U = 1) with either table */
#define V_SM(NAME, FT)                                                                    \
    {NAME "/sm", FT<true>::QK, FT<true>::BYTES, run_q8<FT<true>, 4, 1, false, 4>},       \
    {NAME "/smp", FT<true>::QK, FT<true>::BYTES, run_q8<FT<true>, 4, 1, true, 4>},       \
    {NAME "/smw8p", FT<true>::QK, FT<true>::BYTES, run_q8<FT<true>, 8, 1, true, 4>},     \
    {NAME "/smks4", FT<true>::QK, FT<true>::BYTES, run_q8_ksplit<FT<true>, 4, 2, 1, 4>}, \
    {NAME "/gks4", FT<false>::QK, FT<false>::BYTES, run_q8_ksplit<FT<false>, 4, 2, 1, 4>},  \
    {NAME "/smks4u4", FT<true>::QK, FT<true>::BYTES, run_q8_ksplit<FT<true>, 4, 2, 4, 4>}, \
    {NAME "/gks4u4", FT<false>::QK, FT<false>::BYTES, run_q8_ksplit<FT<false>, 4, 2, 4, 4>}
    V_SM("IQ2_XXS", fmt_iq2_xxs_t), V_SM("IQ2_XS", fmt_iq2_xs_t), V_SM("IQ2_S", fmt_iq2_s_t),
    V_SM("IQ3_XXS", fmt_iq3_xxs_t), V_SM("IQ3_S", fmt_iq3_s_t), V_SM("IQ1_S", fmt_iq1_s_t),
    V_SM("IQ1_M", fmt_iq1_m_t),
#undef V_SM
    /* v16 (argument "TQ"): split K for the ternary formats' long rows (their
     * library launch is 4 rows a warp, no split: 14336 x 4096 under PDL
     * graph replay 17.6 us TQ1_0, 20.6 TQ2_0); TQ2_0's 112 items a 14336
     * row, so KS = 4 (TQ1_0's device form is TQ2_0's since v90) */
    {"TQ2_0/ks4u1", 256, 66, run_q8_ksplit<fmt_tq2_0, 4, 2, 1, 4>},
    {"TQ2_0/ks4r4u1", 256, 66, run_q8_ksplit<fmt_tq2_0, 4, 4, 1, 4>},
    /* v17 (argument "/u1"): other long-row splits at U = 1 for the formats
     * still level with or behind llama.cpp's mat-vec on 14336 x 4096
     * (IQ4_XS 16.5 us against 14.2; IQ3_XXS 19.9 against 19.7) */
    {"IQ4_XS/u1ks4", 256, 136, run_q8_ksplit<fmt_iq4_xs, 4, 2, 1, 4>},
    {"IQ4_XS/u1ks4r4", 256, 136, run_q8_ksplit<fmt_iq4_xs, 4, 4, 1, 4>},
    {"IQ4_XS/u1ks2", 256, 136, run_q8_ksplit<fmt_iq4_xs, 4, 2, 1, 2>},
    {"IQ4_XS/u1ks2r4", 256, 136, run_q8_ksplit<fmt_iq4_xs, 4, 4, 1, 2>},
    {"IQ3_XXS/u1ks4r4", 256, 98, run_q8_ksplit<fmt_iq3_xxs, 4, 4, 1, 4>},
    {"IQ3_XXS/u1ks2", 256, 98, run_q8_ksplit<fmt_iq3_xxs, 4, 2, 1, 2>},
    {"IQ3_XXS/u1ks8", 256, 98, run_q8_ksplit<fmt_iq3_xxs, 8, 1, 1, 8>},
    {"IQ2_XXS/u1ks4r4", 256, 66, run_q8_ksplit<fmt_iq2_xxs, 4, 4, 1, 4>},
    /* "/lib14": the launch gemv.cu's plan_q8 gives each format on 14336 x
     * 4096 (llama.cpp's reference shape in issue 4): split K 2 at U = 4 for
     * the legacy formats and IQ4_NL/MXFP4 (loaded ahead), split K 4 at U = 2
     * for Q4_K/Q5_K/Q6_K, IQ4_XS 2 x 4 rows at U = 1, the codebook formats
     * 4 x 2 at U = 1, TQ2_0 4 x 4; Q2_K and Q3_K keep their
     * 4-row warps (their rows "Q2_K", "Q3_K") */
#define V_LIB(NAME, F, R, U, KS) {NAME "/lib14", F::QK, F::BYTES, run_q8_ksplit<F, 4, R, U, KS>}
    V_LIB("Q4_0", fmt_q4_0, 2, 4, 2), V_LIB("Q4_1", fmt_q4_1, 2, 4, 2), V_LIB("Q5_0", fmt_q5_0, 2, 4, 2),
    V_LIB("Q5_1", fmt_q5_1, 2, 4, 2), V_LIB("Q8_0", fmt_q8_0, 2, 4, 2), V_LIB("Q4_K", fmt_q4_K, 2, 2, 4),
    V_LIB("Q5_K", fmt_q5_K, 2, 2, 4), V_LIB("Q6_K", fmt_q6_K, 2, 2, 4), V_LIB("IQ4_NL", fmt_iq4_nl, 2, 4, 2),
    V_LIB("MXFP4", fmt_mxfp4, 2, 4, 2), V_LIB("MXFP4/v74", fmt_mxfp4_v74, 2, 4, 2), V_LIB("IQ4_XS", fmt_iq4_xs, 4, 1, 2), V_LIB("IQ2_XXS", fmt_iq2_xxs, 2, 1, 4),
    V_LIB("IQ2_XS", fmt_iq2_xs, 2, 1, 4), V_LIB("IQ2_S", fmt_iq2_s, 2, 1, 4), V_LIB("IQ3_XXS", fmt_iq3_xxs, 2, 1, 4),
    V_LIB("IQ3_S", fmt_iq3_s, 2, 1, 4), V_LIB("IQ1_S", fmt_iq1_s, 2, 1, 4), V_LIB("IQ1_M", fmt_iq1_m, 2, 1, 4),
    V_LIB("TQ2_0", fmt_tq2_0, 4, 1, 4),
#undef V_LIB
    /* v38 (argument "/st"): the staged kernel, /stTRxST[wW] */
#define V_ST(NAME, F)                                                                                               \
    {NAME "/st1x4", F::QK, F::BYTES, run_stream<F, 4, 1, 4>}, {NAME "/st2x3", F::QK, F::BYTES, run_stream<F, 4, 2, 3>}, \
    {NAME "/st4x4", F::QK, F::BYTES, run_stream<F, 4, 4, 4>}, {NAME "/st8x3", F::QK, F::BYTES, run_stream<F, 4, 8, 3>}, \
    {NAME "/st1x8", F::QK, F::BYTES, run_stream<F, 4, 1, 8>}, {NAME "/st2x4w8", F::QK, F::BYTES, run_stream<F, 8, 2, 4>}
    V_ST("Q4_K", fmt_q4_K), V_ST("Q6_K", fmt_q6_K),
#define V_WS(NAME, F)                                                                                               \
    {NAME "/ws1x4", F::QK, F::BYTES, run_wstream<F, 4, 1, 4>}, {NAME "/ws1x6", F::QK, F::BYTES, run_wstream<F, 4, 1, 6>}, \
    {NAME "/ws2x3", F::QK, F::BYTES, run_wstream<F, 4, 2, 3>}, {NAME "/ws1x3", F::QK, F::BYTES, run_wstream<F, 4, 1, 3>}, \
    {NAME "/ws1x4w8", F::QK, F::BYTES, run_wstream<F, 8, 1, 4>}
    V_WS("Q4_K", fmt_q4_K), V_WS("Q6_K", fmt_q6_K),
#define V_H(NAME, F)                                                                                         \
    {NAME "/head", F::QK, F::BYTES, run_head<F>}, {NAME "/hst4", F::QK, F::BYTES, run_stream<F, 4, 4, 3>},    \
    {NAME "/hst8", F::QK, F::BYTES, run_stream<F, 4, 8, 3>}, {NAME "/hst16", F::QK, F::BYTES, run_stream<F, 4, 16, 3>}
    V_H("Q4_0", fmt_q4_0), V_H("Q4_1", fmt_q4_1), V_H("Q5_0", fmt_q5_0), V_H("Q5_1", fmt_q5_1), V_H("Q8_0", fmt_q8_0),
    V_H("Q4_K", fmt_q4_K), V_H("Q5_K", fmt_q5_K), V_H("Q6_K", fmt_q6_K), V_H("IQ4_NL", fmt_iq4_nl),
    V_H("MXFP4", fmt_mxfp4),
#undef V_H
    /* v41 (argument "/ld"): the library's K-quant launches with loads alone
     * (fmt_q4_K_ld), beside the same launches with the real dot: 14336 x
     * 4096 on split K 4 (the downs), 4096 x 4096 on the square split (2 x 4
     * rows at U = 1), the gate/up GLU */
    {"Q4_K/ld-lib14", 256, 144, run_q8_ksplit<fmt_q4_K_ld, 4, 2, 2, 4>},
    /* v45 (argument "/g-"): Q4_0 and Q8_0 grouped, in the library's launches
     * (split K 2 at U = 4 on long rows, as "/lib14"; the square split, 2 x 4
     * rows at U = 1), beside the same launches on the file's blocks */
    {"Q4_0/g-lib14", 256, 144, run_q8_ksplit<fmt_q4_0_g, 4, 2, 4, 2>},
    {"Q8_0/g-lib14", 256, 272, run_q8_ksplit<fmt_q8_0_g, 4, 2, 4, 2>},
    {"Q4_0/g-sq", 256, 144, run_q8_ksplit<fmt_q4_0_g, 4, 4, 1, 4>},
    {"Q8_0/g-sq", 256, 272, run_q8_ksplit<fmt_q8_0_g, 4, 4, 1, 4>},
    {"Q4_0/sq-lib", 32, 18, run_q8_ksplit<fmt_q4_0, 4, 4, 1, 4>},
    {"Q8_0/sq-lib", 32, 34, run_q8_ksplit<fmt_q8_0, 4, 4, 1, 4>},
    /* v44 (argument "/h-"): half items (fmt_q4_K_h) in the library's launch
     * shapes: split K 4 (the downs; twice the items a lane, so U = 4 keeps
     * one pass, U = 2 two), the square split (2 x 4 rows), the GLU */
    {"Q4_K/h-ks4u4", 256, 144, run_q8_ksplit<fmt_q4_K_h, 4, 2, 4, 4>},
    {"Q4_K/h-ks4u2", 256, 144, run_q8_ksplit<fmt_q4_K_h, 4, 2, 2, 4>},
    {"Q4_K/h-sq", 256, 144, run_q8_ksplit<fmt_q4_K_h, 4, 4, 2, 2>},
    {"Q4_K/h-sq-u1", 256, 144, run_q8_ksplit<fmt_q4_K_h, 4, 4, 1, 2>},
    {"Q4_K/h-glu", 256, 144, run_glu_lib<fmt_q4_K_h, 2, 2>},
    {"Q4_K/h-glu-u4", 256, 144, run_glu_lib<fmt_q4_K_h, 2, 4>},
    {"Q6_K/ld-lib14", 256, fmt_q6_K::BYTES, run_q8_ksplit<fmt_q6_K_ld, 4, 2, 2, 4>},
    {"Q4_K/sq-lib", 256, 144, run_q8_ksplit<fmt_q4_K, 4, 4, 1, 2>},
    {"Q4_K/ld-sq", 256, 144, run_q8_ksplit<fmt_q4_K_ld, 4, 4, 1, 2>},
    {"Q4_K/ld-glu", 256, 144, run_glu_lib<fmt_q4_K_ld, 2, 2>},
    {"Q4_K/glu-lib", 256, 144, run_glu_lib<fmt_q4_K, 2, 2>}, {"Q6_K/glu-lib", 256, fmt_q6_K::BYTES, run_glu_lib<fmt_q6_K, 2, 2>},
    {"Q4_0/glu-lib", 32, 18, run_glu_lib<fmt_q4_0, 1, 4>},
    /* v46 (argument "/cf-"): other launch shapes, W warps a block, R rows a
     * warp group, U items a lane, split K: the legacy formats' long rows on
     * the square split (4 rows, U = 1, KS = 4), and the K-quants' 4096-wide
     * rows with more warps a block or a wider split (names /cf-wWrRuUkK) */
#define V_CF(NAME, F, W, R, U, KS) {NAME "/cf-w" #W "r" #R "u" #U "k" #KS, F::QK, F::BYTES, run_q8_ksplit<F, W, R, U, KS>}
    V_CF("Q4_0", fmt_q4_0, 4, 4, 1, 4), V_CF("Q4_1", fmt_q4_1, 4, 4, 1, 4), V_CF("Q5_0", fmt_q5_0, 4, 4, 1, 4),
    V_CF("Q5_1", fmt_q5_1, 4, 4, 1, 4), V_CF("Q8_0", fmt_q8_0, 4, 4, 1, 4), V_CF("IQ4_NL", fmt_iq4_nl, 4, 4, 1, 4),
    V_CF("MXFP4", fmt_mxfp4, 4, 4, 1, 4), V_CF("Q8_0", fmt_q8_0, 4, 4, 2, 2), V_CF("Q8_0", fmt_q8_0, 8, 4, 1, 4),
    V_CF("Q4_K", fmt_q4_K, 8, 4, 1, 2), V_CF("Q4_K", fmt_q4_K, 4, 4, 1, 4), V_CF("Q4_K", fmt_q4_K, 8, 4, 1, 4),
    V_CF("Q4_K", fmt_q4_K, 4, 2, 1, 4), V_CF("Q4_K", fmt_q4_K, 8, 2, 1, 4), V_CF("Q4_K", fmt_q4_K, 8, 2, 2, 4),
    V_CF("Q4_K", fmt_q4_K, 4, 8, 1, 2), V_CF("Q6_K", fmt_q6_K, 8, 2, 2, 4), V_CF("Q6_K", fmt_q6_K, 4, 2, 1, 4),
    V_CF("Q6_K", fmt_q6_K, 4, 4, 1, 4), V_CF("Q4_K", fmt_q4_K, 4, 2, 2, 4),
    /* v51: 8 warps a row group on the long rows (one pass of one item a lane on 14336-wide Q4_K/Q6_K rows) */
    V_CF("Q4_K", fmt_q4_K, 8, 2, 1, 8), V_CF("Q4_K", fmt_q4_K, 8, 4, 1, 8), V_CF("Q6_K", fmt_q6_K, 8, 2, 1, 8),
    V_CF("Q6_K", fmt_q6_K, 8, 1, 1, 8), V_CF("Q4_K", fmt_q4_K, 8, 1, 1, 8),
#undef V_CF
    /* v50 (argument "/gks-"): the GLU split over K, /gks-wWrRuUkK */
#define V_GKS(W, R, U, KS) {"Q4_K/gks-w" #W "r" #R "u" #U "k" #KS, 256, 144, run_glu_ks<fmt_q4_K, W, R, U, KS>}
    V_GKS(4, 2, 1, 2), V_GKS(4, 4, 1, 2), V_GKS(4, 2, 1, 4), V_GKS(4, 1, 1, 2), V_GKS(8, 2, 1, 2),
    V_GKS(8, 4, 1, 2), V_GKS(4, 1, 2, 2), V_GKS(4, 1, 1, 4),
#undef V_GKS
    /* v47 (argument "/gf-"): the gate/up GLU's rows a warp (R, gate and up
     * each) and items a lane (U); the library's is R = 2, U = 2 ("glu-lib") */
    {"Q4_K/gf-r1u4", 256, 144, run_glu_lib<fmt_q4_K, 1, 4>}, {"Q4_K/gf-r1u2", 256, 144, run_glu_lib<fmt_q4_K, 1, 2>},
    {"Q4_K/gf-r2u4", 256, 144, run_glu_lib<fmt_q4_K, 2, 4>}, {"Q4_K/gf-r2u1", 256, 144, run_glu_lib<fmt_q4_K, 2, 1>},
    {"Q4_K/gf-r4u1", 256, 144, run_glu_lib<fmt_q4_K, 4, 1>}, {"Q4_K/gf-r1u1", 256, 144, run_glu_lib<fmt_q4_K, 1, 1>},
    {"Q4_K/glu-st4x3", 256, 144, run_glu_stream<fmt_q4_K, 4, 4, 3>},
    {"Q4_K/glu-st8x3", 256, 144, run_glu_stream<fmt_q4_K, 4, 8, 3>},
    {"Q4_K/glu-st4x4", 256, 144, run_glu_stream<fmt_q4_K, 4, 4, 4>},
    {"Q4_K/glu-st8x2", 256, 144, run_glu_stream<fmt_q4_K, 4, 8, 2>},
    {"Q6_K/glu-st4x3", 256, fmt_q6_K::BYTES, run_glu_stream<fmt_q6_K, 4, 4, 3>},
    {"Q4_0/glu-st8x3", 32, 18, run_glu_stream<fmt_q4_0, 4, 8, 3>},
    {"READ/q4k", 256, 144, run_read}, {"READ/q6k", 256, 210, run_read}, {"READ/q8_0", 32, 34, run_read},
    /* the read floor of every format's bytes (argument "READ/" with LAB_SHAPES=14336x4096) */
    {"READ/F16", 1, 2, run_read}, {"READ/Q4_0", 32, 18, run_read}, {"READ/Q4_1", 32, 20, run_read},
    {"READ/Q5_0", 32, 22, run_read}, {"READ/Q5_1", 32, 24, run_read}, {"READ/Q2_K", 256, 84, run_read},
    {"READ/Q3_K", 256, 110, run_read}, {"READ/Q5_K", 256, 176, run_read}, {"READ/IQ4_XS", 256, 136, run_read},
    {"READ/MXFP4", 32, 17, run_read}, {"READ/IQ2_XXS", 256, 66, run_read}, {"READ/IQ2_XS", 256, 74, run_read},
    {"READ/IQ2_S", 256, 82, run_read}, {"READ/IQ3_XXS", 256, 98, run_read}, {"READ/IQ1_S", 256, 50, run_read},
    {"READ/IQ1_M", 256, 56, run_read}, {"READ/TQ1_0", 256, 54, run_read},
#undef V_WS
#undef V_ST
    /* v55 (argument "/t32"): the tiled GEMV, /t32-wWgG[bB], /t32ks-wWgG; "glu" on the gate+up shape.
     * Q6_K rows time 210-byte blocks (no slots). */
#define V_T32(W, G, B) {"Q4_K/t32-w" #W "g" #G "b" #B, 256, 144, run_t32<t32_q4_K, W, G, 0, false, B>}
    V_T32(4, 2, 0), V_T32(8, 2, 0), V_T32(8, 2, 1), V_T32(4, 4, 0), V_T32(8, 4, 0), V_T32(8, 4, 1),
    {"Q4_K/t32glu-w4g2", 256, 144, run_t32<t32_q4_K, 4, 2, 0, true, 0>},
    {"Q4_K/t32glu-w8g2", 256, 144, run_t32<t32_q4_K, 8, 2, 0, true, 0>},
    {"Q4_K/t32ks-w7g4", 256, 144, run_t32<t32_q4_K, 7, 4, 1, false, 0>},
    {"Q4_K/t32ks-w2g4", 256, 144, run_t32<t32_q4_K, 2, 4, 1, false, 0>},
    {"Q6_K/t32-w8g2b0", 256, 210, run_t32<t32_q6_K, 8, 2, 0, false, 0>},
    {"Q6_K/t32-w4g4b0", 256, 210, run_t32<t32_q6_K, 4, 4, 0, false, 0>},
    {"Q6_K/t32-w4g2b0", 256, 210, run_t32<t32_q6_K, 4, 2, 0, false, 0>},
    {"Q6_K/t32ks-w7g4", 256, 210, run_t32<t32_q6_K, 7, 4, 1, false, 0>},
    {"Q6_K/t32ks-w2g4", 256, 210, run_t32<t32_q6_K, 2, 4, 1, false, 0>},
    /* v98: one tile buffer ("/t32": two) */
    {"Q4_K/t32s1ks-w7g4m2", 256, 144, run_t32s1<t32_q4_K, 7, 4, 1, false>},
    {"Q6_K/t32s1ks-w7g4m2", 256, 210, run_t32s1<t32_q6_K, 7, 4, 1, false>},
    /* the tiled forms of Q5_K, Q3_K (its padded 112-byte blocks), Q2_K and IQ4_XS */
#define V_T32F(NAME, F, BY) {NAME "/t32-w8g2b0", 256, BY, run_t32<F, 8, 2, 0, false, 0>}, \
    {NAME "/t32-w8g4b0", 256, BY, run_t32<F, 8, 4, 0, false, 0>}, {NAME "/t32ks-w7g4", 256, BY, run_t32<F, 7, 4, 1, false, 0>}, \
    {NAME "/t32glu-w8g2", 256, BY, run_t32<F, 8, 2, 0, true, 0>}
    V_T32F("Q5_K", t32_q5_K, 176), V_T32F("Q3_K", t32_q3_K, 112), V_T32F("Q2_K", t32_q2_K, 84),
    V_T32F("IQ4_XS", t32_iq4_xs, 136),
    /* the IQ lattices and the ternary formats (padded: IQ2_XS 80, IQ3_S 112 bytes) */
    V_T32F("IQ2_XXS", t32_iq2_xxs, 66), V_T32F("IQ2_XS", t32_iq2_xs, 80), V_T32F("IQ2_S", t32_iq2_s, 82),
    V_T32F("IQ2_XXS/v66", t32_iq2_xxs_v66, 66), V_T32F("IQ2_XS/v66", t32_iq2_xs_v66, 80),
    V_T32F("IQ2_S/v66", t32_iq2_s_v66, 82),
    V_T32F("IQ4_XS/v67", t32_iq4_xs_v67, 136), V_T32F("IQ4_NL/v67", t32_iq4_nl_v67, 144),
    V_T32F("IQ3_XXS/v66", t32_iq3_xxs_v66, 98), V_T32F("IQ3_S/v66", t32_iq3_s_v66, 112),
    V_T32F("IQ1_S/v66", t32_iq1_s_v66, 50), V_T32F("IQ1_M/v66", t32_iq1_m_v66, 56),
    /* other copy counts than the library's */
    V_T32F("IQ2_XS/r16", t32_iq2_xs_t<16>, 80), V_T32F("IQ2_S/r8", t32_iq2_s_t<8>, 82),
    V_T32F("IQ3_XXS/r16", t32_iq3_xxs_t<16>, 98), V_T32F("IQ3_S/r32", t32_iq3_s_t<32>, 112),
    V_T32F("IQ1_S/r8", t32_iq1_s_t<8>, 50), V_T32F("IQ1_M/r4", t32_iq1_m_t<4>, 56),
    V_T32F("IQ3_XXS", t32_iq3_xxs, 98), V_T32F("IQ3_S", t32_iq3_s, 112), V_T32F("IQ1_S", t32_iq1_s, 50),
    V_T32F("IQ1_M", t32_iq1_m, 56), V_T32F("TQ2_0", t32_tq2_0, 66),
    /* the legacy formats in Q4_0's unit of 8 blocks (bytes: the unit of 256 elements) */
    V_T32F("Q4_1", t32_q4_1, 160), V_T32F("Q5_0", t32_q5_0, 176), V_T32F("Q5_1", t32_q5_1, 192),
    V_T32F("IQ4_NL", t32_iq4_nl, 144), V_T32F("MXFP4", t32_mxfp4, 136),
#undef V_T32F
    /* v98: the split kernel with one tile buffer, every tiled format (and Q4_0, whose long rows keep the item kernels) */
#define V_S1(NAME, F, BY) {NAME "/t32s1ks-w7g4m2", 256, BY, run_t32s1<F, 7, 4, 1, false>}
    V_S1("Q5_K", t32_q5_K, 176), V_S1("Q3_K", t32_q3_K, 112), V_S1("Q2_K", t32_q2_K, 84), V_S1("IQ4_XS", t32_iq4_xs, 136),
    V_S1("IQ2_XXS", t32_iq2_xxs, 66), V_S1("IQ2_XS", t32_iq2_xs, 80), V_S1("IQ2_S", t32_iq2_s, 82),
    V_S1("IQ3_XXS", t32_iq3_xxs, 98), V_S1("IQ3_S", t32_iq3_s, 112), V_S1("IQ1_S", t32_iq1_s, 50),
    V_S1("IQ1_M", t32_iq1_m, 56), V_S1("TQ2_0", t32_tq2_0, 66), V_S1("Q4_1", t32_q4_1, 160),
    V_S1("Q5_0", t32_q5_0, 176), V_S1("Q5_1", t32_q5_1, 192), V_S1("IQ4_NL", t32_iq4_nl, 144),
    V_S1("MXFP4", t32_mxfp4, 136), V_S1("Q4_0", t32_q4_0, 144),
#undef V_S1
    /* v98: gemv_t32 with one tile buffer, every tiled format on 8-warp blocks (Q6_K: 4) */
#define V_S1T(NAME, F, BY, W) {NAME "/t32s1-w8g2m2", 256, BY, run_t32s1<F, W, 2, 0, false>}, \
    {NAME "/t32s1glu-w8g2m2", 256, BY, run_t32s1<F, W, 2, 0, true>}
    V_S1T("Q5_K", t32_q5_K, 176, 8), V_S1T("Q3_K", t32_q3_K, 112, 8), V_S1T("Q2_K", t32_q2_K, 84, 8),
    V_S1T("IQ4_XS", t32_iq4_xs, 136, 8), V_S1T("IQ2_XXS", t32_iq2_xxs, 66, 8), V_S1T("IQ2_XS", t32_iq2_xs, 80, 8),
    V_S1T("IQ2_S", t32_iq2_s, 82, 8), V_S1T("IQ3_XXS", t32_iq3_xxs, 98, 8), V_S1T("IQ3_S", t32_iq3_s, 112, 8),
    V_S1T("IQ1_S", t32_iq1_s, 50, 8), V_S1T("IQ1_M", t32_iq1_m, 56, 8), V_S1T("TQ2_0", t32_tq2_0, 66, 8),
    V_S1T("Q4_1", t32_q4_1, 160, 8), V_S1T("Q5_0", t32_q5_0, 176, 8), V_S1T("Q5_1", t32_q5_1, 192, 8),
    V_S1T("IQ4_NL", t32_iq4_nl, 144, 8), V_S1T("MXFP4", t32_mxfp4, 136, 8), V_S1T("Q4_0", t32_q4_0, 144, 8),
    V_S1T("Q6_K/w4", t32_q6_K, 210, 4),
#undef V_S1T
    {"Q6_K/w4/t32glu-w8g2", 256, 210, run_t32<t32_q6_K, 4, 2, 0, true, 0>},
    {"Q4_0/t32-w8g2b0", 256, 144, run_t32<t32_q4_0, 8, 2, 0, false, 0>},
    /* v98: gemv_t32 with one tile buffer at the blocks an SM the registers give */
    {"Q4_K/t32s1glu-w8g2m2", 256, 144, run_t32s1<t32_q4_K, 8, 2, 0, true>},
    {"Q4_K/t32s1-w8g2m2", 256, 144, run_t32s1<t32_q4_K, 8, 2, 0, false>},
    {"Q4_0/t32s1glu-w8g2m2", 256, 144, run_t32s1<t32_q4_0, 8, 2, 0, true>},
    {"Q4_0/t32glu-w8g2", 256, 144, run_t32<t32_q4_0, 8, 2, 0, true, 0>},
    {"Q4_0/t32ks-w7g4", 256, 144, run_t32<t32_q4_0, 7, 4, 1, false, 0>},
    /* v76: the group-a-block kernel ("glu": the gate+up shape as (gate, up) pairs) */
#define V_SEG(NAME, F, BY) {NAME "/t32seg", 256, BY, run_t32_seg<F, false>}, {NAME "/t32segglu", 256, BY, run_t32_seg<F, true>}
    V_SEG("Q4_K", t32_q4_K, 144), V_SEG("Q6_K", t32_q6_K, 210), V_SEG("Q4_0", t32_q4_0, 144),
    V_SEG("IQ4_XS", t32_iq4_xs, 136), V_SEG("IQ4_NL", t32_iq4_nl, 144), V_SEG("Q5_K", t32_q5_K, 176),
#undef V_SEG
#undef V_T32
    /* v18 (argument "/fu"): the float path's steps in flight a lane (F16_U is the library's) */
    {"F16/fu1", 1, 2, run_f16<false, 1>}, {"F16/fu2", 1, 2, run_f16<false, 2>}, {"F16/fu4", 1, 2, run_f16<false, 4>},
    {"BF16/fu4", 1, 2, run_f16<true, 4>},
};

typedef struct lab_shape {
    const char *model;
    int k, n;  /* n_in, n_out */
} lab_shape;

static const lab_shape shapes[] = {
    {"Llama-3-8B", 4096, 4096},  {"Llama-3-8B", 4096, 1024},   {"Llama-3-8B", 4096, 14336}, {"Llama-3-8B", 14336, 4096},
    {"Llama-3-8B", 4096, 128256}, {"Llama-3-8B gate+up", 4096, 28672}, {"Llama-3-8B qkv", 4096, 6144}, {"Qwen2.5-0.5B", 896, 896},  {"Qwen2.5-0.5B", 896, 4864},
    {"Qwen2.5-0.5B", 4864, 896}, {"Qwen2.5-0.5B", 896, 151936},
    {"Qwen2.5-7B", 3584, 3584}, {"Qwen2.5-7B", 18944, 3584}, {"Qwen2.5-7B gate+up", 3584, 37888},
    {"Qwen2.5-7B", 3584, 152064}, {"Llama-3.2-1B", 8192, 2048},
};

__global__ void fill_random(uint32_t *p, size_t n_words, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n_words; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t z = (uint32_t)i * 0x9E3779B9u + seed;
        z ^= z >> 16, z *= 0x85EBCA6Bu, z ^= z >> 13, z *= 0xC2B2AE35u, z ^= z >> 16;
        p[i] = z;
    }
}

/* x: random in [-1, 1) */
__global__ void fill_x(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = (float)((i * 2654435761u) >> 8) / 8388608.0f - 1.0f;
}

static double copy_bandwidth(void) {
    const size_t bytes = (size_t)2 << 30;
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    fill_random<<<1024, 256>>>((uint32_t *)a, bytes / 4, 1);
    CK_LAUNCH("fill");
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    float best = 1e30f;
    for (int r = 0; r < 10; r++) {
        CK(cudaEventRecord(e0));
        CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (ms < best) best = ms;
    }
    CK(cudaFree(a));
    CK(cudaFree(b));
    return 2.0 * (double)bytes / (best * 1e-3) / 1e9;
}

/* Median-free but robust enough: mean over many calls, the best of 3 rounds. */
static double time_calls(lab_fn fn, lab_ctx *c, const uint8_t *base, size_t copy_bytes, int n_copies, bool graph) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int calls = 200;
    int rot = 0;
    for (int i = 0; i < 10; i++) {  /* warm-up */
        c->W = base + (size_t)(rot++ % n_copies) * copy_bytes;
        fn(c);
    }
    CK_LAUNCH("warm-up");
    cudaGraphExec_t exec = NULL;
    if (graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(c->st, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < calls; i++) {
            c->W = base + (size_t)(rot++ % n_copies) * copy_bytes;
            fn(c);
        }
        CK(cudaStreamEndCapture(c->st, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphDestroy(g));
        CK(cudaGraphLaunch(exec, c->st));  /* warm the graph too */
    }
    CK(cudaStreamSynchronize(c->st));
    float best = 1e30f;
    for (int round = 0; round < 3; round++) {
        CK(cudaEventRecord(e0, c->st));
        if (graph) {
            CK(cudaGraphLaunch(exec, c->st));
        } else {
            for (int i = 0; i < calls; i++) {
                c->W = base + (size_t)(rot++ % n_copies) * copy_bytes;
                fn(c);
            }
        }
        CK(cudaEventRecord(e1, c->st));
        CK(cudaEventSynchronize(e1));
        CK_LAUNCH("timed calls");
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (ms < best) best = ms;
    }
    if (exec) CK(cudaGraphExecDestroy(exec));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return best * 1e3 / calls;  /* microseconds per call */
}

/* A rewritten format's check: it against the library's on the same random
 * blocks (every fp16 d set to a finite scale): the same integer sums and the
 * same fp32 operations, so the outputs must be equal bit for bit. */
__global__ void set_d(uint8_t *W, size_t n_blocks, int bytes, int d_off) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n_blocks; i += (size_t)gridDim.x * blockDim.x)
        W[i * bytes + d_off] = 0x1F, W[i * bytes + d_off + 1] = 0x21; /* fp16 0.0101 */
}
template <class FL, class FV>
static void check_same(const char *name, float *x, int8_t *xq, float2 *xds, act_scale *sc, float *y,
                       int d_off = FL::BYTES - 2) {
    const int k = 4096, n = 4096;
    const size_t row_bytes = (size_t)(k / FL::QK) * FL::BYTES;
    uint8_t *W;
    float *y2;
    CK(cudaMalloc(&W, row_bytes * n + 256));
    CK(cudaMalloc(&y2, sizeof(float) * n));
    fill_random<<<2048, 256>>>((uint32_t *)W, (row_bytes * n + 256) / 4, 77u);
    set_d<<<1024, 256>>>(W, (size_t)n * (k / FL::QK), FL::BYTES, d_off);
    quantize_act_q8<<<CEIL_DIV(k, 256), 256>>>(x, xq, xds, k, 1, k, sc);
    act_q8 a;
    a.xq = xq, a.xds = xds, a.qs_stride = k, a.n_tok = 1, a.sc = sc;
    gemv_q8<FL, 4, 1, 1, 1><<<n / 4, 128>>>(W, row_bytes, a, y, n, k, n, 0, (unsigned long long *)NULL);
    gemv_q8<FV, 4, 1, 1, 1><<<n / 4, 128>>>(W, row_bytes, a, y2, n, k, n, 0, (unsigned long long *)NULL);
    CK_LAUNCH("format check");
    report_same_bits(name, n, y, y2);
    CK(cudaFree(W));
    CK(cudaFree(y2));
}

/* v45: a grouped format (FG) against the library's (FL) on the same blocks,
 * regrouped on the device: same values, same order, so the same bits */
template <class FL, class FG>
static void check_grouped(const char *name, int bb, int qb, float *x, int8_t *xq, float2 *xds, act_scale *sc,
                          float *y) {
    const int k = 4096, n = 4096;
    const size_t row_bytes = (size_t)(k / 32) * bb, n_groups = (size_t)n * (k / 256);
    uint8_t *W, *Wg;
    float *y2;
    CK(cudaMalloc(&W, row_bytes * n + 256));
    CK(cudaMalloc(&Wg, row_bytes * n + 256));
    CK(cudaMalloc(&y2, sizeof(float) * n));
    fill_random<<<2048, 256>>>((uint32_t *)W, (row_bytes * n + 256) / 4, 55u);
    set_d<<<1024, 256>>>(W, (size_t)n * (k / 32), bb, 0);
    group_blocks<<<1024, 256>>>(W, Wg, n_groups, bb, qb);
    quantize_act_q8<<<CEIL_DIV(k, 256), 256>>>(x, xq, xds, k, 1, k, sc);
    act_q8 a;
    a.xq = xq, a.xds = xds, a.qs_stride = k, a.n_tok = 1, a.sc = sc;
    gemv_q8<FL, 4, 1, 1, 1><<<n / 4, 128>>>(W, row_bytes, a, y, n, k, n, 0, (unsigned long long *)NULL);
    CK(cudaMemset(y2, 0xFF, sizeof(float) * n));
    gemv_q8<FG, 4, 1, 1, 1><<<n / 4, 128>>>(Wg, row_bytes, a, y2, n, k, n, 0, (unsigned long long *)NULL);
    CK_LAUNCH("grouped check");
    report_same_bits(name, n, y, y2);
    CK(cudaFree(W));
    CK(cudaFree(Wg));
    CK(cudaFree(y2));
}

/* v38: a staged kernel against the library's plain kernel on the same
 * blocks, at a shape of whole tiles and one with a partial last tile and a
 * row start off 16 bytes (Q6_K: 210-byte blocks): the sums run in another
 * order, so the bound is on |y - y_lib| / max |y_lib|: fp32 rounding of
 * sums of ~10^4 terms, well under 1e-5. run(W, row_bytes, a, y, k, n)
 * launches the staged kernel. */
template <class F, class Run>
static void check_staged(const char *name, float *x, int8_t *xq, float2 *xds, act_scale *sc, float *y, int d_off,
                         int k, int n, Run run) {
    const size_t row_bytes = (size_t)(k / F::QK) * F::BYTES;
    uint8_t *W;
    float *y2;
    CK(cudaMalloc(&W, row_bytes * n + 256));
    CK(cudaMalloc(&y2, sizeof(float) * n));
    fill_random<<<2048, 256>>>((uint32_t *)W, (row_bytes * n + 256) / 4, 91u);
    set_d<<<1024, 256>>>(W, (size_t)n * (k / F::QK), F::BYTES, d_off);
    if (d_off == 0) set_d<<<1024, 256>>>(W + 2, (size_t)n * (k / F::QK), F::BYTES, 0); /* dmin too */
    quantize_act_q8<<<CEIL_DIV(k, 256), 256>>>(x, xq, xds, k, 1, k, sc);
    act_q8 a;
    a.xq = xq, a.xds = xds, a.qs_stride = k, a.n_tok = 1, a.sc = sc;
    gemv_q8<F, 4, 1, 1, 1><<<CEIL_DIV(n, 4), 128>>>(W, row_bytes, a, y, n, k, n, 0, (unsigned long long *)NULL);
    CK(cudaMemset(y2, 0xFF, sizeof(float) * n)); /* NaN: an unwritten output shows */
    run(W, row_bytes, a, y2, k, n);
    CK_LAUNCH("stream check");
    report_close(name, k, n, y, y2, "y");
    CK(cudaFree(W));
    CK(cudaFree(y2));
}
/* the tile form (gemv_q8_stream) and the per-warp form (gemv_q8_wstream), on a grid of 2 blocks an SM */
template <class F, int WS, int TR, int ST>
static void check_stream(const char *name, float *x, int8_t *xq, float2 *xds, act_scale *sc, float *y, int d_off,
                         int k, int n) {
    check_staged<F>(name, x, xq, xds, sc, y, d_off, k, n,
                    [](const uint8_t *W, size_t rb, act_q8 a, float *y2, int kk, int nn) {
                        const uint32_t sb = (uint32_t)stream_stage_bytes(rb, TR);
                        CK(cudaFuncSetAttribute(gemv_q8_stream<F, WS, TR, ST>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(sb * ST)));
                        const int grid = CEIL_DIV(nn, TR) < 2 * sm_count ? CEIL_DIV(nn, TR) : 2 * sm_count;
                        gemv_q8_stream<F, WS, TR, ST><<<grid, WS * 32, sb * ST>>>(W, rb, a, y2, kk, nn, 0, sb,
                                                                                   (unsigned long long *)NULL);
                    });
}
template <class F, int WS, int U, int ST>
static void check_wstream(const char *name, float *x, int8_t *xq, float2 *xds, act_scale *sc, float *y, int d_off,
                          int k, int n) {
    check_staged<F>(name, x, xq, xds, sc, y, d_off, k, n,
                    [](const uint8_t *W, size_t rb, act_q8 a, float *y2, int kk, int nn) {
                        const uint32_t sb = wstream_stage_bytes(wstream_geo<F, U>::NB, F::BYTES);
                        CK(cudaFuncSetAttribute(gemv_q8_wstream<F, WS, U, ST>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(sb * ST * WS)));
                        const int grid = CEIL_DIV(nn, WS) < 2 * sm_count ? CEIL_DIV(nn, WS) : 2 * sm_count;
                        gemv_q8_wstream<F, WS, U, ST><<<grid, WS * 32, sb * ST * WS>>>(W, rb, a, y2, kk, nn, 0, sb);
                    });
}

/* v39, ready to run (argument "phases"): is a layer's chain of launches
 * worth merging into one persistent kernel with grid barriers between its
 * phases? One call reads the byte counts of a Llama-3-8B Q4_K_M layer's four
 * GEMVs (Q/K/V 14.16 MB, output 9.44, gate+up 66.06, down 33.03) as (a) four
 * launches of a read-only kernel, each waiting on the one before as the
 * step's kernels do (pdl_wait first), and (b) one persistent launch that
 * reads the four in turn with a grid barrier between them, and (c) the same
 * without the barriers (the bytes alone). Weight regions rotate over 1 GiB.
 * Read floors measured apart (v38): 5.2 + 4.3 + 16.7 + 9.8 = ~36 us; the
 * bytes at copy bandwidth ~29 us. */
static void emitf(FILE *out, const char *fmt, ...);
static const size_t PHASE_BYTES[4] = {14155776, 9437184, 66060288, 33030144};
static size_t phase_off(int i) {
    size_t o = 0;
    for (int j = 0; j < i; j++) o += (PHASE_BYTES[j] + 255) / 256 * 256;
    return o;
}
__device__ __forceinline__ uint32_t read_span(const uint4 *__restrict__ p, size_t n16, size_t first, size_t stride) {
    uint32_t acc = 0;
    size_t i = first;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                    d = __ldg(p + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n16; i += stride) {
        const uint4 a = __ldg(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    return acc;
}
__global__ void __launch_bounds__(256) phase_read(const uint4 *__restrict__ p, size_t n16, float *__restrict__ y) {
    pdl_launch_dependents();
    pdl_wait(); /* as a GEMV waits for its activations */
    const uint32_t acc =
        read_span(p, n16, (size_t)blockIdx.x * blockDim.x + threadIdx.x, (size_t)gridDim.x * blockDim.x);
    if (acc == 0x12345678u) y[blockIdx.x] = 1.0f;
}
/* every block of a grid that is all resident at once: count the arrivals;
 * the last one resets the count and moves the generation on */
__device__ __forceinline__ void grid_barrier(unsigned *count, volatile unsigned *gen, unsigned n_blocks) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned g = *gen;
        __threadfence();
        if (atomicAdd(count, 1u) == n_blocks - 1) {
            *count = 0;
            __threadfence();
            atomicAdd((unsigned *)gen, 1u);
        } else {
            while (*gen == g) {
            }
        }
        __threadfence();
    }
    __syncthreads();
}
struct phase_sizes {
    size_t b[4];
};
__global__ void __launch_bounds__(256)
phases_one(const uint8_t *__restrict__ base, phase_sizes sz, unsigned *bar, float *__restrict__ y, int barriers) {
    pdl_launch_dependents();
    pdl_wait();
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    uint32_t acc = 0;
    size_t off = 0;
    for (int ph = 0; ph < 4; ph++) {
        acc ^= read_span((const uint4 *)(base + off), sz.b[ph] / 16, first, stride);
        off += (sz.b[ph] + 255) / 256 * 256;
        if (barriers && ph < 3) grid_barrier(bar, bar + 1, gridDim.x);
    }
    if (acc == 0x12345678u) y[blockIdx.x] = 1.0f;
}
static unsigned *phase_bar;
static void run_phases_sep(const lab_ctx *c) {
    static int most = 0;
    if (!most) most = persistent_blocks(phase_read, 256);
    for (int i = 0; i < 4; i++)
        launch(phase_read, most, 256, c->st, (const uint4 *)(c->W + phase_off(i)), PHASE_BYTES[i] / 16, c->y);
}
template <int BARRIERS>
static void run_phases_one(const lab_ctx *c) {
    static int most = 0;
    if (!most) most = persistent_blocks(phases_one, 256);
    const phase_sizes sz = {{PHASE_BYTES[0], PHASE_BYTES[1], PHASE_BYTES[2], PHASE_BYTES[3]}};
    launch(phases_one, most, 256, c->st, c->W, sz, phase_bar, c->y, BARRIERS);
}
static void phases_case(FILE *out, double copy_gbs, lab_ctx *c) {
    const size_t region = phase_off(4), bytes = PHASE_BYTES[0] + PHASE_BYTES[1] + PHASE_BYTES[2] + PHASE_BYTES[3];
    const int n_copies = (int)(((size_t)1 << 30) / region) + 1;
    uint8_t *W;
    CK(cudaMalloc(&W, region * n_copies + 256));
    CK(cudaMalloc(&phase_bar, 2 * sizeof(unsigned)));
    CK(cudaMemset(phase_bar, 0, 2 * sizeof(unsigned)));
    fill_random<<<2048, 256>>>((uint32_t *)W, (region * n_copies + 256) / 4, 5u);
    CK_LAUNCH("fill phases");
    const struct {
        const char *name;
        lab_fn fn;
    } ways[] = {{"4 launches (pdl_wait first)", run_phases_sep},
                {"1 persistent launch, 3 grid barriers", run_phases_one<1>},
                {"1 persistent launch, no barriers", run_phases_one<0>}};
    emitf(out, "\n| a Llama-3-8B layer's GEMV bytes (%.1f MB) | stream us | graph us | PDL graph us | GB/s | %% copy |\n",
          bytes / 1e6);
    emitf(out, "|---|---|---|---|---|---|\n");
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        const double us = time_calls(ways[w].fn, c, W, region, n_copies, false);
        const double us_g = time_calls(ways[w].fn, c, W, region, n_copies, true);
        lab_pdl = true;
        const double us_p = time_calls(ways[w].fn, c, W, region, n_copies, true);
        lab_pdl = false;
        double best = us < us_g ? us : us_g;
        best = us_p < best ? us_p : best;
        const double gbs = bytes / (best * 1e-6) / 1e9;
        emitf(out, "| %s | %.1f | %.1f | %.1f | %.0f | %.0f%% |\n", ways[w].name, us, us_g, us_p, gbs,
              100.0 * gbs / copy_gbs);
    }
    CK(cudaFree(W));
    CK(cudaFree(phase_bar));
}

/* v9's run (argument "pair"): the check, then both ways timed as the table's rows */
static void emitf(FILE *out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fputs(line, stdout);
    if (out) fputs(line, out);
}
static void pair_case(FILE *out, double copy_gbs, float *x, int8_t *xq, float2 *xds, act_scale *sc, float *y,
                      cudaStream_t st) {
    const size_t rb_a = (PAIR_K / 256) * 144, rb_b = (PAIR_K / 256) * fmt_q6_K::BYTES;
    pair_geo.v_off = (rb_a * PAIR_QK + 255) / 256 * 256;
    pair_geo.v_row_bytes = rb_b, pair_geo.v_rows = PAIR_V;
    const size_t copy_bytes = (pair_geo.v_off + rb_b * PAIR_V + 255) / 256 * 256;
    const int n_copies = (int)(((size_t)1 << 30) / copy_bytes) + 1;
    uint8_t *W;
    CK(cudaMalloc(&W, copy_bytes * n_copies + 256));
    fill_random<<<2048, 256>>>((uint32_t *)W, (copy_bytes * n_copies + 256) / 4, 99u);
    /* finite scales in the first copy, for the check: Q4_K d and dmin at 0 and 2, Q6_K d at 208 */
    set_d<<<1024, 256>>>(W, (size_t)PAIR_QK * (PAIR_K / 256), 144, 0);
    set_d<<<1024, 256>>>(W + 2, (size_t)PAIR_QK * (PAIR_K / 256), 144, 0);
    set_d<<<1024, 256>>>(W + pair_geo.v_off, (size_t)PAIR_V * (PAIR_K / 256), fmt_q6_K::BYTES, 208);
    CK_LAUNCH("pair weights");
    lab_ctx c = {W, rb_a, x, xq, xds, sc, y, PAIR_K, PAIR_QK, st};
    const int n_y = PAIR_QK + PAIR_V;
    float *h1 = (float *)malloc(sizeof(float) * n_y), *h2 = (float *)malloc(sizeof(float) * n_y);
    run_pair_two(&c);
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(h1, y, sizeof(float) * n_y, cudaMemcpyDeviceToHost));
    CK(cudaMemset(y, 0xFF, sizeof(float) * n_y));
    run_pair_one(&c);
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(h2, y, sizeof(float) * n_y, cudaMemcpyDeviceToHost));
    int diff = 0, finite = 0;
    for (int i = 0; i < n_y; i++) diff += memcmp(&h1[i], &h2[i], 4) != 0, finite += isfinite(h1[i]) != 0;
    emitf(out, "\npair check: %d of %d outputs differ from the two launches' bits, %d finite (%s)\n\n", diff, n_y,
          finite, diff == 0 && finite == n_y ? "same" : "DIFFER");
    free(h1), free(h2);
    emitf(out, "| format | model | K x N | MB | stream us | graph us | PDL graph us | floor us | GB/s | %% copy |\n");
    emitf(out, "|---|---|---|---|---|---|---|---|---|---|\n");
    const double moved = (double)(rb_a * PAIR_QK + rb_b * PAIR_V) + 4.0 * PAIR_K + 4.0 * n_y;
    const lab_fn fns[2] = {run_pair_two, run_pair_one};
    const char *names[2] = {"Q4_K QK + Q6_K V/two", "Q4_K QK + Q6_K V/pair"};
    for (int v = 0; v < 2; v++) {
        const double us = time_calls(fns[v], &c, W, copy_bytes, n_copies, false);
        const double us_g = time_calls(fns[v], &c, W, copy_bytes, n_copies, true);
        lab_pdl = true;
        const double us_p = time_calls(fns[v], &c, W, copy_bytes, n_copies, true);
        lab_pdl = false;
        double best = us_g < us ? us_g : us;
        if (us_p < best) best = us_p;
        const double gbs = moved / (best * 1e-6) / 1e9;
        emitf(out, "| %s | Llama-3-8B | 4096x(5120+1024) | %.1f | %.1f | %.1f | %.1f | | %.0f | %.0f%% |\n", names[v],
              moved / 1e6, us, us_g, us_p, gbs, 100.0 * gbs / copy_gbs);
    }
    CK(cudaFree(W));
}

int main(int argc, char **argv) {
    const char *out_path = argc > 1 ? argv[1] : NULL;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    sm_count = prop.multiProcessorCount;
    const double copy_gbs = copy_bandwidth();
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));

    FILE *out = out_path ? fopen(out_path, "w") : NULL;
    char line[512];
#define EMIT(...)                                  \
    do {                                           \
        snprintf(line, sizeof line, __VA_ARGS__);  \
        fputs(line, stdout);                       \
        if (out) fputs(line, out);                 \
    } while (0)
    EMIT("# GEMV lab, %s, %s (cc %d.%d, %d SMs, L2 %d MB)\n\n", date, prop.name, prop.major, prop.minor,
         prop.multiProcessorCount, prop.l2CacheSize >> 20);
    EMIT("device-to-device copy: %.0f GB/s (read + write)\n\n", copy_gbs);
    EMIT("| format | model | K x N | MB | stream us | graph us | PDL graph us | floor us | GB/s | %% copy |\n");
    EMIT("|---|---|---|---|---|---|---|---|---|---|\n");

    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    float *x, *y;
    int8_t *xq;
    float2 *xds;
    act_scale *sc;
    const int max_k = 14336, max_n = 151936;
    CK(cudaMalloc(&x, sizeof(float) * max_k));
    CK(cudaMalloc(&y, sizeof(float) * max_n));
    CK(cudaMalloc(&xq, max_k));
    CK(cudaMalloc(&xds, sizeof(float2) * (max_k / 32)));
    CK(cudaMalloc(&sc, sizeof(act_scale)));
    fill_x<<<CEIL_DIV(max_k, 256), 256>>>(x, max_k);
    CK_LAUNCH("fill_x");
    /* a rewritten format goes here first, e.g.
     * check_same<fmt_q3_K, fmt_q3_K_v2>("Q3_K/v2", x, xq, xds, sc, y); */
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "check-iq")) { /* the shared codebooks must give the library's bits (d at 0; IQ1_M's d is in its scales) */
            check_same<fmt_iq2_xxs_t<false>, fmt_iq2_xxs_t<true>>("IQ2_XXS/sm", x, xq, xds, sc, y, 0);
            check_same<fmt_iq2_xs_t<false>, fmt_iq2_xs_t<true>>("IQ2_XS/sm", x, xq, xds, sc, y, 0);
            check_same<fmt_iq2_s_t<false>, fmt_iq2_s_t<true>>("IQ2_S/sm", x, xq, xds, sc, y, 0);
            check_same<fmt_iq3_xxs_t<false>, fmt_iq3_xxs_t<true>>("IQ3_XXS/sm", x, xq, xds, sc, y, 0);
            check_same<fmt_iq3_s_t<false>, fmt_iq3_s_t<true>>("IQ3_S/sm", x, xq, xds, sc, y, 0);
            check_same<fmt_iq1_s_t<false>, fmt_iq1_s_t<true>>("IQ1_S/sm", x, xq, xds, sc, y, 0);
            check_same<fmt_iq1_m_t<false>, fmt_iq1_m_t<true>>("IQ1_M/sm", x, xq, xds, sc, y, 54);
        }
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "check-st")) { /* v38: the staged kernel's sums */
            check_stream<fmt_q4_K, 4, 1, 4>("Q4_K/st1x4", x, xq, xds, sc, y, 0, 14336, 4096);
            check_stream<fmt_q4_K, 4, 4, 4>("Q4_K/st4x4", x, xq, xds, sc, y, 0, 4096, 4093);
            check_stream<fmt_q4_K, 8, 2, 4>("Q4_K/st2x4w8", x, xq, xds, sc, y, 0, 4096, 1027);
            check_stream<fmt_q6_K, 4, 1, 4>("Q6_K/st1x4", x, xq, xds, sc, y, 208, 14336, 4096);
            check_stream<fmt_q6_K, 4, 4, 4>("Q6_K/st4x4", x, xq, xds, sc, y, 208, 4096, 4093);
            check_stream<fmt_q6_K, 4, 8, 3>("Q6_K/st8x3", x, xq, xds, sc, y, 208, 4096, 1031);
            check_wstream<fmt_q4_K, 4, 1, 4>("Q4_K/ws1x4", x, xq, xds, sc, y, 0, 14336, 4096);
            check_wstream<fmt_q4_K, 4, 2, 3>("Q4_K/ws2x3", x, xq, xds, sc, y, 0, 4096, 1027);
            check_wstream<fmt_q6_K, 4, 1, 4>("Q6_K/ws1x4", x, xq, xds, sc, y, 208, 14336, 4093);
            check_wstream<fmt_q6_K, 4, 2, 3>("Q6_K/ws2x3", x, xq, xds, sc, y, 208, 4096, 1031);
        }
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "check-g")) { /* v45: grouped Q4_0 / Q8_0 against the library's, bit for bit */
            check_grouped<fmt_q4_0, fmt_q4_0_g>("Q4_0/g", 18, 16, x, xq, xds, sc, y);
            check_grouped<fmt_q8_0, fmt_q8_0_g>("Q8_0/g", 34, 32, x, xq, xds, sc, y);
        }
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "check-h")) { /* v44: half items against the library's Q4_K */
            check_staged<fmt_q4_K>("Q4_K/h-ks4u4", x, xq, xds, sc, y, 0, 14336, 4096,
                                   [](const uint8_t *W, size_t rb, act_q8 a, float *y2, int kk, int nn) {
                                       gemv_q8_ks<fmt_q4_K_h, 4, 2, 4, 4><<<CEIL_DIV(nn, 2), 128>>>(W, rb, a, y2, kk, nn, 0);
                                   });
            check_staged<fmt_q4_K>("Q4_K/h-sq", x, xq, xds, sc, y, 0, 4096, 4093,
                                   [](const uint8_t *W, size_t rb, act_q8 a, float *y2, int kk, int nn) {
                                       gemv_q8_ks<fmt_q4_K_h, 4, 4, 2, 2><<<CEIL_DIV(nn, 8), 128>>>(W, rb, a, y2, kk, nn, 0);
                                   });
        }
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "check-gks")) { /* v50: the split GLU against the library's */
            check_glu_ks<fmt_q4_K, 4, 2, 1, 2>("Q4_K/gks-w4r2u1k2", x, xq, xds, sc, 4096, 14336);
            check_glu_ks<fmt_q4_K, 4, 1, 1, 4>("Q4_K/gks-w4r1u1k4", x, xq, xds, sc, 4096, 14333);
            check_glu_ks<fmt_q4_K, 8, 4, 1, 2>("Q4_K/gks-w8r4u1k2", x, xq, xds, sc, 2048, 1000);
        }
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "check-t32")) { /* v55: the tiled kernels against the library's */
            check_t32<t32_q4_K, fmt_q4_K, 4, 2, 0, false>("Q4_K/t32 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_q4_K, fmt_q4_K, 8, 4, 0, false>("Q4_K/t32 g4", x, xq, xds, sc, 14336, 4096, 0);
            check_t32<t32_q4_K, fmt_q4_K, 8, 4, 0, false>("Q4_K/t32 g4 part", x, xq, xds, sc, 14336, 1021, 0);
            check_t32<t32_q4_K, fmt_q4_K, 4, 8, 0, false>("Q4_K/t32 g8", x, xq, xds, sc, 1024, 999, 0);
            check_t32<t32_q4_K, fmt_q4_K, 8, 2, 0, true>("Q4_K/t32glu", x, xq, xds, sc, 4096, 14336, 0);
            check_t32<t32_q4_K, fmt_q4_K, 4, 2, 0, true>("Q4_K/t32glu part", x, xq, xds, sc, 4096, 1023, 0);
            check_t32<t32_q4_K, fmt_q4_K, 7, 4, 1, false>("Q4_K/t32ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_q4_K, fmt_q4_K, 2, 4, 1, false>("Q4_K/t32ks w2", x, xq, xds, sc, 4096, 1021, 0);
            check_t32<t32_q6_K, fmt_q6_K, 8, 2, 0, false>("Q6_K/t32 g2", x, xq, xds, sc, 4096, 4093, 208);
            check_t32<t32_q6_K, fmt_q6_K, 7, 4, 1, false>("Q6_K/t32ks", x, xq, xds, sc, 14336, 4093, 208);
            check_t32<t32_q5_K, fmt_q5_K, 8, 2, 0, false>("Q5_K/t32 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_q5_K, fmt_q5_K, 7, 4, 1, false>("Q5_K/t32ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_q5_K, fmt_q5_K, 8, 2, 0, true>("Q5_K/t32glu", x, xq, xds, sc, 4096, 1023, 0);
            check_t32<t32_q3_K, fmt_q3_K, 8, 2, 0, false>("Q3_K/t32 g2", x, xq, xds, sc, 4096, 4093, 108);
            check_t32<t32_q3_K, fmt_q3_K, 7, 4, 1, false>("Q3_K/t32ks", x, xq, xds, sc, 14336, 4093, 108);
            check_t32<t32_q2_K, fmt_q2_K, 8, 2, 0, false>("Q2_K/t32 g2", x, xq, xds, sc, 4096, 4093, 80);
            check_t32<t32_q2_K, fmt_q2_K, 7, 4, 1, false>("Q2_K/t32ks", x, xq, xds, sc, 14336, 4093, 80);
            check_t32<t32_iq4_xs, fmt_iq4_xs, 8, 2, 0, false>("IQ4_XS/t32 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq4_xs, fmt_iq4_xs, 7, 4, 1, false>("IQ4_XS/t32ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_iq2_xxs, fmt_iq2_xxs, 8, 2, 0, false>("IQ2_XXS/t32 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq2_xxs, fmt_iq2_xxs, 7, 4, 1, false>("IQ2_XXS/t32ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_iq2_xs, fmt_iq2_xs, 8, 2, 0, false>("IQ2_XS/t32 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq2_s, fmt_iq2_s, 7, 4, 1, false>("IQ2_S/t32ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_iq2_xs_t<16>, fmt_iq2_xs, 8, 2, 0, false>("IQ2_XS/r16 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq2_s_t<8>, fmt_iq2_s, 8, 2, 0, false>("IQ2_S/r8 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq3_xxs_t<16>, fmt_iq3_xxs, 7, 4, 1, false>("IQ3_XXS/r16 ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_iq3_s_t<32>, fmt_iq3_s, 8, 2, 0, false>("IQ3_S/r32 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq1_s_t<8>, fmt_iq1_s, 8, 2, 0, false>("IQ1_S/r8 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq1_m_t<4>, fmt_iq1_m, 7, 4, 1, false>("IQ1_M/r4 ks", x, xq, xds, sc, 14336, 4093, 54);
            check_t32<t32_iq2_xs, fmt_iq2_xs, 7, 4, 1, false>("IQ2_XS/t32ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_iq2_s, fmt_iq2_s, 8, 2, 0, true>("IQ2_S/t32glu", x, xq, xds, sc, 4096, 1023, 0);
            check_t32<t32_iq3_xxs, fmt_iq3_xxs, 8, 2, 0, false>("IQ3_XXS/t32 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq3_s, fmt_iq3_s, 7, 4, 1, false>("IQ3_S/t32ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_iq1_s, fmt_iq1_s, 8, 2, 0, false>("IQ1_S/t32 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_iq1_m, fmt_iq1_m, 8, 2, 0, false>("IQ1_M/t32 g2", x, xq, xds, sc, 4096, 4093, 54); /* d: the top nibbles of the scale words */
            check_t32<t32_iq3_xxs, fmt_iq3_xxs, 7, 4, 1, false>("IQ3_XXS/t32ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_tq2_0, fmt_tq2_0, 8, 2, 0, false>("TQ2_0/t32 g2", x, xq, xds, sc, 4096, 4093, 64);
            /* v98: one tile buffer */
            check_t32<t32_q4_K, fmt_q4_K, 7, 4, 1, false, true>("Q4_K/t32s1ks", x, xq, xds, sc, 14336, 4093, 0);
            check_t32<t32_q6_K, fmt_q6_K, 7, 4, 1, false, true>("Q6_K/t32s1ks", x, xq, xds, sc, 14336, 4093, 208);
            check_t32<t32_q4_K, fmt_q4_K, 8, 2, 0, true, true>("Q4_K/t32s1glu", x, xq, xds, sc, 4096, 14336, 0);
            check_t32<t32_q4_K, fmt_q4_K, 8, 2, 0, false, true>("Q4_K/t32s1 g2", x, xq, xds, sc, 4096, 4093, 0);
            check_t32<t32_q6_K, fmt_q6_K, 8, 2, 0, false, true>("Q6_K/t32s1 g2", x, xq, xds, sc, 4096, 4093, 208);
        }
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        const variant *var = &variants[v];
        /* no filter: every variant but the tuning sweeps */
        bool wanted = argc <= 2 && !strstr(var->name, "/w") && !strstr(var->name, "/u") && !strstr(var->name, "/r") &&
                      !strstr(var->name, "/ks") && !strstr(var->name, "/lowks") && !strstr(var->name, "/sq") &&
                      !strstr(var->name, "/cf-") &&
                      !strstr(var->name, "/gf-") &&
                      !strstr(var->name, "/gks-");
        for (int a = 2; a < argc; a++) /* "=NAME": that variant alone; else names containing it */
            wanted |= argv[a][0] == '=' ? !strcmp(var->name, argv[a] + 1) : strstr(var->name, argv[a]) != NULL;
        if (!wanted) continue;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const lab_shape *sh = &shapes[s];
            char kn[32];
            snprintf(kn, sizeof kn, "%dx%d", sh->k, sh->n);
            if (getenv("LAB_SHAPES") && !strstr(getenv("LAB_SHAPES"), kn)) continue; /* e.g. "14336x4096,4096x4096" */
            if (sh->k % var->qk != 0) {
                EMIT("| %s | %s | %dx%d | - | n/a (K not whole blocks) | | | | | |\n", var->name, sh->model, sh->k,
                     sh->n);
                continue;
            }
            const size_t row_bytes = (size_t)(sh->k / var->qk) * var->bytes;
            const size_t wbytes = row_bytes * sh->n;
            const size_t copy_bytes = (wbytes + 255) / 256 * 256;
            int n_copies = (int)(((size_t)1 << 30) / copy_bytes) + 1;
            if (n_copies < 2) n_copies = 2;
            uint8_t *W;
            CK(cudaMalloc(&W, copy_bytes * n_copies + 256));
            fill_random<<<2048, 256>>>((uint32_t *)W, (copy_bytes * n_copies + 256) / 4, (uint32_t)(v * 131 + s));
            CK_LAUNCH("fill W");
            lab_ctx c = {W, row_bytes, x, xq, xds, sc, y, sh->k, sh->n, st};
            const double us = time_calls(var->fn, &c, W, copy_bytes, n_copies, false);
            const double us_g = time_calls(var->fn, &c, W, copy_bytes, n_copies, true);
            lab_pdl = true;
            const double us_p = time_calls(var->fn, &c, W, copy_bytes, n_copies, true);
            const double us_floor = time_calls(run_floor, &c, W, copy_bytes, n_copies, true);
            lab_pdl = false;
            if (us_p < 0.05) { /* the variant launched nothing: not its shape (a tiled group or split) */
                EMIT("| %s | %s | %dx%d | - | n/a (not this variant's shape) | | | | | |\n", var->name, sh->model, sh->k,
                     sh->n);
                CK(cudaFree(W));
                continue;
            }
            const double moved = (double)wbytes + 4.0 * sh->k + 4.0 * sh->n;
            double best = us_g < us ? us_g : us;
            if (us_p < best) best = us_p;
            const double gbs = moved / (best * 1e-6) / 1e9;
            EMIT("| %s | %s | %dx%d | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f%% |\n", var->name, sh->model, sh->k,
                 sh->n, wbytes / 1e6, us, us_g, us_p, us_floor, gbs, 100.0 * gbs / copy_gbs);
            CK(cudaFree(W));
        }
    }
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "pair")) pair_case(out, copy_gbs, x, xq, xds, sc, y, st);
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "phases")) {
            lab_ctx c = {NULL, 0, x, xq, xds, sc, y, 4096, 4096, st};
            phases_case(out, copy_gbs, &c);
        }
    if (out) fclose(out);
    return 0;
}
