/* GEMV formats beyond gemv_kernels.cuh's: the ternary TQ2_0 (TQ1_0 too: gpu_layout.h), the IQ
 * lattice formats (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), and
 * a float kernel for F32 weights.
 *
 * The fmt_ structs have exactly the interface of those in gemv_kernels.cuh
 * (QK, BYTES, CH, dot(blk, sub, xq, ds) against int8 activations in blocks
 * of 32 with float2 (d, s = d * sum(q)) per 32), so gemv_q8 / gemv_q8_glu
 * take them as they are; gemv.cu's table names them.
 *
 * Arithmetic. Every weight level here is an integer times a per-group fp32
 * factor, so each item is an exact dp4a integer sum with the integer scale
 * multiplier folded in (|sum| < 2^23: an IQ3_XXS sub-block is at most
 * 62 * 127 * 32 * 31 ~ 7.8e6, so the conversion to float is exact too), then
 * one fp32 product with d and the activation scale. The numbers are those of
 * the scalar references in src/quant/ (q_iq.c, q_ternary.c):
 *   IQ2/IQ3  w = d * (2s+1) * step * magnitude * sign, step 1/8 (IQ2),
 *            1/4 (IQ3_XXS), 1 (IQ3_S); step is a power of two, applied to d
 *            exactly.
 *   IQ1      w = d * (2s+1) * (value + delta), delta = +-1/8 per group: here
 *            (2s+1) * (8 value +- 1) is the integer and d/8 the factor, so the
 *            shift costs one dp4a with 0x01010101 per 4 activations.
 *   TQ       w = d * t, t in -1..1.
 * Only the fp32 roundings differ from the reference dots (which sum whole
 * 256-blocks of Q8_K activations); tests/gpu/test_gpu_gemv.c's bound covers
 * them, as for the other formats.
 *
 * The IQ codebooks come from iq_grids_dev.cuh: each kernel block copies its
 * format's codebook into shared memory first (iq_book, S = true, the
 * library's choice) rather than reading it from global memory through L1
 * (S = false; that header says why not __constant__). Kernel lab, H200, with
 * the signs below and split K 4 on the long rows (gemv.cu KS_U1), 14336 x
 * 4096, best of graph and PDL graph replay: IQ2_XXS 26.9 -> 15.7 us, IQ3_XXS
 * 30.3 -> 19.9, IQ1_S 20.5 -> 14.2 (bench/gpu-decode-notes.md v33). Signs
 * are expanded to byte masks arithmetically (a multiply and a prmt,
 * iq_mask_lo) instead of ggml's 128-entry ksigns table: the parity bit of
 * the XXS/XS formats is a __popc.
 */
#ifndef NIB_CUDA_GEMV_FORMATS_EXTRA_CUH
#define NIB_CUDA_GEMV_FORMATS_EXTRA_CUH

#include "cuda/gemv_kernels.cuh"
#include "cuda/iq_grids_dev.cuh"

/* ---- helpers ------------------------------------------------------------------------ */

/* fp16 at an even offset of a 2-byte aligned block */
__device__ __forceinline__ float h2f_at(const uint8_t *p) { return h2f(ldw((const unsigned short *)p)); }

/* the sign byte of a group of 8 from its 7 stored bits (XXS/XS): bit 7 makes
 * the number of set bits even (quant/q_iq.c even_signs) */
__device__ __forceinline__ uint32_t iq_even_signs(uint32_t bits7) {
    const uint32_t s = bits7 & 0x7Fu;
    return s | (uint32_t)(__popc(s) & 1) << 7;
}

/* The signs of a group of 8 as byte masks, 0xFF where negative: m0 for
 * weights 0-3 (bits 0..3 of neg), m1 for 4-7 (bits 4..7). One multiply
 * moves bit k of each nibble to bit 8k + 7 (the partial products land on
 * distinct bits, so nothing carries), and prmt's sign mode (selector nibble
 * 8 + k) fills byte k with its bit 7. Three operations a mask where the SIMD
 * intrinsics (__vcmpne4, __vsub4) are emulated on sm_90 with several each. */
__device__ __forceinline__ uint32_t bytes_from_msb(uint32_t x) {
    uint32_t r;
    asm("prmt.b32 %0, %1, 0, 0xBA98;" : "=r"(r) : "r"(x));
    return r;
}
__device__ __forceinline__ uint32_t iq_mask_lo(uint32_t neg) { return bytes_from_msb((neg & 0x0Fu) * 0x10204080u); }
__device__ __forceinline__ uint32_t iq_mask_hi(uint32_t neg) { return bytes_from_msb((neg & 0xF0u) * 0x01020408u); }

/* 4 magnitudes (bytes of g) negated where m is 0xFF: -g = ~g + 1 byte by
 * byte, and since every codebook magnitude is at least 1 (IQ2: 8, 25, 43;
 * IQ3_XXS: 4..62; IQ3_S: 1..15) no byte's + 1 carries into the next. */
__device__ __forceinline__ int iq_signed4(uint32_t g, uint32_t m) { return (int)((g ^ m) + (m & 0x01010101u)); }

/* The integer dot of one 8-weight group (magnitudes lo, hi; sign bits neg)
 * with 8 activations a0 (weights 0-3) and a1 (4-7). */
__device__ __forceinline__ int iq_group_dot(uint32_t lo, uint32_t hi, uint32_t neg, int a0, int a1, int sum) {
    sum = __dp4a(iq_signed4(lo, iq_mask_lo(neg)), a0, sum);
    return __dp4a(iq_signed4(hi, iq_mask_hi(neg)), a1, sum);
}

/* ---- IQ2 / IQ3 (quant/q_iq.c grid_dequantize) --------------------------------------
 * Item = one 32-weight sub-block (CH = 32): 4 groups of 8, each one codebook
 * point (IQ2) or two (IQ3), against the 8 activation words of that block. */

/* IQ2_XXS, 66 bytes: d, qs at 2: per sub-block 4 index bytes, then a word of
 * 4 x 7 sign bits with the scale code in bits 28..31. */
template <bool S = true>
struct fmt_iq2_xxs_t {
    using book = iq_book<uint2, 256, S>;
    static __device__ __forceinline__ void prepare() { book::prepare(iq2xxs_grid_dev.v); }
    static constexpr int QK = 256, BYTES = 66, CH = 32;
    static __device__ __forceinline__ float dot(const uint8_t *b, int ib, const int8_t *xq, const float2 *ds) {
        uint32_t w[2];
        load_words(b + 2 + 8 * ib, w);
        int a[8];
        load_act32(xq + 32 * ib, a);
        int sumi = 0;
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint2 pt = book::at(iq2xxs_grid_dev.v, (w[0] >> (8 * g)) & 0xFFu);
            sumi = iq_group_dot(pt.x, pt.y, iq_even_signs(w[1] >> (7 * g)), a[2 * g], a[2 * g + 1], sumi);
        }
        const int ls = 2 * (int)(w[1] >> 28) + 1;
        return 0.125f * h2f_at(b) * (__ldg(&ds[ib].x) * (float)(ls * sumi));
    }
};
using fmt_iq2_xxs = fmt_iq2_xxs_t<>;

/* IQ2_XS, 74 bytes: d, qs[32] u16 at 2 (9-bit index | 7 sign bits << 9),
 * scales[8] at 66 (low nibble: groups 0-1, high nibble: groups 2-3). */
template <bool S = true>
struct fmt_iq2_xs_t {
    using book = iq_book<uint2, 512, S>;
    static __device__ __forceinline__ void prepare() { book::prepare(iq2xs_grid_dev.v); }
    static constexpr int QK = 256, BYTES = 74, CH = 32;
    static __device__ __forceinline__ float dot(const uint8_t *b, int ib, const int8_t *xq, const float2 *ds) {
        uint32_t w[2];
        load_words(b + 2 + 8 * ib, w);
        int a[8];
        load_act32(xq + 32 * ib, a);
        int sum[2] = {0, 0};
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t q = (w[g >> 1] >> (16 * (g & 1))) & 0xFFFFu;
            const uint2 pt = book::at(iq2xs_grid_dev.v, q & 511u);
            sum[g >> 1] = iq_group_dot(pt.x, pt.y, iq_even_signs(q >> 9), a[2 * g], a[2 * g + 1], sum[g >> 1]);
        }
        const int sc = (int)ldw(b + 66 + ib);
        const int isum = (2 * (sc & 15) + 1) * sum[0] + (2 * (sc >> 4) + 1) * sum[1];
        return 0.125f * h2f_at(b) * (__ldg(&ds[ib].x) * (float)isum);
    }
};
using fmt_iq2_xs = fmt_iq2_xs_t<>;

/* IQ2_S, 82 bytes: d, qs[64] at 2 (32 index low bytes, then 32 sign bytes),
 * qh[8] at 66 (index bits 8-9 of group g at bits 2g..), scales[8] at 74. */
template <bool S = true>
struct fmt_iq2_s_t {
    using book = iq_book<uint2, 1024, S>;
    static __device__ __forceinline__ void prepare() { book::prepare(iq2s_grid_dev.v); }
    static constexpr int QK = 256, BYTES = 82, CH = 32;
    static __device__ __forceinline__ float dot(const uint8_t *b, int ib, const int8_t *xq, const float2 *ds) {
        uint32_t idx[1], sgn[1];
        load_words(b + 2 + 4 * ib, idx);
        load_words(b + 34 + 4 * ib, sgn);
        const uint32_t qh = ldw(b + 66 + ib), sc = ldw(b + 74 + ib);
        int a[8];
        load_act32(xq + 32 * ib, a);
        int sum[2] = {0, 0};
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint2 pt = book::at(iq2s_grid_dev.v, ((idx[0] >> (8 * g)) & 0xFFu) | ((qh >> (2 * g)) & 3u) << 8);
            sum[g >> 1] = iq_group_dot(pt.x, pt.y, sgn[0] >> (8 * g), a[2 * g], a[2 * g + 1], sum[g >> 1]);
        }
        const int isum = (2 * (int)(sc & 15u) + 1) * sum[0] + (2 * (int)(sc >> 4) + 1) * sum[1];
        return 0.125f * h2f_at(b) * (__ldg(&ds[ib].x) * (float)isum);
    }
};
using fmt_iq2_s = fmt_iq2_s_t<>;

/* IQ3_XXS, 98 bytes: d, qs[96] at 2: 8 index bytes per sub-block (two
 * 4-wide points per group) in the first 64, then per sub-block a word laid
 * out as IQ2_XXS's second one. step 1/4. */
template <bool S = true>
struct fmt_iq3_xxs_t {
    using book = iq_book<uint32_t, 256, S>;
    static __device__ __forceinline__ void prepare() { book::prepare(iq3xxs_grid_dev.v); }
    static constexpr int QK = 256, BYTES = 98, CH = 32;
    static __device__ __forceinline__ float dot(const uint8_t *b, int ib, const int8_t *xq, const float2 *ds) {
        uint32_t idx[2], aux[1];
        load_words(b + 2 + 8 * ib, idx);
        load_words(b + 66 + 4 * ib, aux);
        int a[8];
        load_act32(xq + 32 * ib, a);
        int sumi = 0;
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t pair = idx[g >> 1] >> (16 * (g & 1));
            const uint32_t lo = book::at(iq3xxs_grid_dev.v, pair & 0xFFu);
            const uint32_t hi = book::at(iq3xxs_grid_dev.v, (pair >> 8) & 0xFFu);
            sumi = iq_group_dot(lo, hi, iq_even_signs(aux[0] >> (7 * g)), a[2 * g], a[2 * g + 1], sumi);
        }
        const int ls = 2 * (int)(aux[0] >> 28) + 1;
        return 0.25f * h2f_at(b) * (__ldg(&ds[ib].x) * (float)(ls * sumi));
    }
};
using fmt_iq3_xxs = fmt_iq3_xxs_t<>;

/* IQ3_S, 110 bytes: d, qs[64] at 2 (8 index low bytes per sub-block), qh[8]
 * at 66 (bit k: bit 8 of index k), signs[32] at 74, scales[4] at 106 (a
 * nibble per sub-block, low first). step 1: the levels are odd integers. */
template <bool S = true>
struct fmt_iq3_s_t {
    using book = iq_book<uint32_t, 512, S>;
    static __device__ __forceinline__ void prepare() { book::prepare(iq3s_grid_dev.v); }
    static constexpr int QK = 256, BYTES = 110, CH = 32;
    static __device__ __forceinline__ float dot(const uint8_t *b, int ib, const int8_t *xq, const float2 *ds) {
        uint32_t idx[2], sgn[1];
        load_words(b + 2 + 8 * ib, idx);
        load_words(b + 74 + 4 * ib, sgn);
        const uint32_t qh = ldw(b + 66 + ib);
        const int ls = 2 * (int)((ldw(b + 106 + ib / 2) >> (4 * (ib & 1))) & 15u) + 1;
        int a[8];
        load_act32(xq + 32 * ib, a);
        int sumi = 0;
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t pair = idx[g >> 1] >> (16 * (g & 1));
            const uint32_t lo = book::at(iq3s_grid_dev.v, (pair & 0xFFu) | ((qh >> (2 * g)) & 1u) << 8);
            const uint32_t hi = book::at(iq3s_grid_dev.v, ((pair >> 8) & 0xFFu) | ((qh >> (2 * g + 1)) & 1u) << 8);
            sumi = iq_group_dot(lo, hi, sgn[0] >> (8 * g), a[2 * g], a[2 * g + 1], sumi);
        }
        return h2f_at(b) * (__ldg(&ds[ib].x) * (float)(ls * sumi));
    }
};
using fmt_iq3_s = fmt_iq3_s_t<>;

/* ---- IQ1 (quant/q_iq.c iq1_dequantize) ----------------------------------------------
 * A group's 8 grid values are signed bytes (-1, 0, 1), dotted as they are;
 * the group's shift +-1/8 adds +-(sum of its 8 activations)/8, so the exact
 * integer of a group is 8 * dot +- sum(a), and d/8 goes with the float
 * factor. Item = one 32-weight sub-block. */

/* 8 * (values . a) + (neg ? -1 : 1) * sum(a) for one group */
__device__ __forceinline__ int iq1_group(uint2 pt, bool neg, int a0, int a1) {
    const int dot = __dp4a((int)pt.y, a1, __dp4a((int)pt.x, a0, 0));
    const int sum = __dp4a(0x01010101, a1, __dp4a(0x01010101, a0, 0));
    return 8 * dot + (neg ? -sum : sum);
}

/* IQ1_S, 50 bytes: d, qs[32] at 2 (index low bytes), qh[8] u16 at 34: index
 * bits 8-10 of group g at bits 3g.., scale code at 12..14, shift sign at 15
 * (one for the whole sub-block). */
template <bool S = true>
struct fmt_iq1_s_t {
    using book = iq_book<uint2, 2048, S>;
    static __device__ __forceinline__ void prepare() { book::prepare(iq1s_grid_dev.v); }
    static constexpr int QK = 256, BYTES = 50, CH = 32;
    static __device__ __forceinline__ float dot(const uint8_t *b, int ib, const int8_t *xq, const float2 *ds) {
        uint32_t qs[1];
        load_words(b + 2 + 4 * ib, qs);
        const uint32_t h = ldw((const unsigned short *)(b + 34 + 2 * ib));
        int a[8];
        load_act32(xq + 32 * ib, a);
        int isum = 0;
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint2 pt = book::at(iq1s_grid_dev.v, ((qs[0] >> (8 * g)) & 0xFFu) | ((h >> (3 * g)) & 7u) << 8);
            isum += iq1_group(pt, (h & 0x8000u) != 0, a[2 * g], a[2 * g + 1]);
        }
        const int ls = 2 * (int)((h >> 12) & 7u) + 1;
        return 0.125f * h2f_at(b) * (__ldg(&ds[ib].x) * (float)(ls * isum));
    }
};
using fmt_iq1_s = fmt_iq1_s_t<>;

/* IQ1_M, 56 bytes (8-byte aligned rows): qs[32] at 0, qh[16] at 32 (a nibble
 * per group: index bits 8-10 and the shift sign), scales[8] at 48 as four u16
 * words: word k has the 3-bit codes of sub-blocks 2k, 2k+1 (6 bits each:
 * groups 0-1, then 2-3) and in bits 12..15 nibble k of the fp16 d. */
template <bool S = true>
struct fmt_iq1_m_t {
    using book = iq_book<uint2, 2048, S>;
    static __device__ __forceinline__ void prepare() { book::prepare(iq1s_grid_dev.v); }
    static constexpr int QK = 256, BYTES = 56, CH = 32;
    static __device__ __forceinline__ float dot(const uint8_t *b, int ib, const int8_t *xq, const float2 *ds) {
        uint32_t qs[1], sc[2];
        load_words_a4(b + 4 * ib, qs);
        load_words_a4(b + 48, sc);
        const uint32_t qh = ldw((const unsigned short *)(b + 32 + 2 * ib));
        const uint32_t dbits = (sc[0] >> 12 & 0xFu) | (sc[0] >> 28) << 4 | (sc[1] >> 12 & 0xFu) << 8 | (sc[1] >> 28) << 12;
        /* u16 word ib/2 of the four: half (ib/2)%2 of sc[ib/4] (selects keep sc[] in registers) */
        const uint32_t pair = ib >> 2 ? sc[1] : sc[0];
        const uint32_t word = ((ib >> 1) & 1 ? pair >> 16 : pair) >> (6 * (ib & 1));
        int a[8];
        load_act32(xq + 32 * ib, a);
        int part[2] = {0, 0};
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t hn = qh >> (4 * g); /* qh byte g/2, nibble g%2 */
            const uint2 pt = book::at(iq1s_grid_dev.v, ((qs[0] >> (8 * g)) & 0xFFu) | (hn & 7u) << 8);
            part[g >> 1] += iq1_group(pt, (hn & 8u) != 0, a[2 * g], a[2 * g + 1]);
        }
        const int isum = (2 * (int)(word & 7u) + 1) * part[0] + (2 * (int)((word >> 3) & 7u) + 1) * part[1];
        return 0.125f * h2f(dbits) * (__ldg(&ds[ib].x) * (float)isum);
    }
};
using fmt_iq1_m = fmt_iq1_m_t<>;

/* ---- ternary (quant/q_ternary.c): w = d * t, t in -1..1 stored as t + 1 ---------------- *
 * The dots take the stored t + 1 as they are and subtract the block's
 * activation sum (8 dp4a with ones a block of 32): (t + 1) . a - 1 . a = t . a,
 * the same integer, without a per-byte subtract (__vsub4 is emulated on
 * sm_90 with several instructions a word). */
__device__ __forceinline__ int act_sum32(const int (&a)[8]) {
    int s = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) s = __dp4a(0x01010101, a[i], s);
    return s;
}

/* TQ2_0, 66 bytes: qs[64] at 0, d at 64. Item = 128 elements (half hh):
 * element 128hh + 32k + m is bits 2k.. of qs[32hh + m], as Q2_K's layout. */
struct fmt_tq2_0 {
    static constexpr int QK = 256, BYTES = 66, CH = 128;
    static __device__ __forceinline__ float dot(const uint8_t *b, int hh, const int8_t *xq, const float2 *ds) {
        uint32_t qs[8];
        load_words(b + 32 * hh, qs);
        int a[8];
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            load_act32(xq + 128 * hh + 32 * k, a);
            int sumi = -act_sum32(a);
#pragma unroll
            for (int i = 0; i < 8; i++) sumi = __dp4a((int)((qs[i] >> (2 * k)) & 0x03030303u), a[i], sumi);
            acc += __ldg(&ds[4 * hh + k].x) * (float)sumi;
        }
        return h2f_at(b + 64) * acc;
    }
};

/* ---- F32 weights: a float path like gemv_f16 ---------------------------------------------
 * y[t][row] = W[row] . x[t] (+ y when add), blockIdx.y the token, one warp per
 * row and a grid stride over rows. VEC (n_in % 4 == 0, so rows are 16-byte
 * aligned) reads 4 weights and 4 floats per lane per step; fp32 FMA, as the
 * F16/BF16 path (the reference sums in element order, so this is a float
 * sum within the same bound as that path, not bit-exact). */
template <bool VEC>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_f32(const uint8_t *__restrict__ W, size_t row_bytes, const float *__restrict__ x, int x_stride,
         float *__restrict__ y, int y_stride, int n_in, int n_out, int add, unsigned long long *best) {
    pdl_launch_dependents();
    pdl_wait();
    const int lane = threadIdx.x & 31;
    x += (size_t)blockIdx.y * x_stride;
    y += (size_t)blockIdx.y * y_stride;
    unsigned long long mine = 0;
    for (int row = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5); row < n_out; row += gridDim.x * GEMV_WARPS) {
        const float *wr = (const float *)(W + (size_t)row * row_bytes);
        float acc = 0.0f;
        if (VEC) {
#pragma unroll 4
            for (int i = 4 * lane; i < n_in; i += 128) {
                const float4 w = ldw((const float4 *)(wr + i)), xx = __ldg((const float4 *)(x + i));
                acc = fmaf(w.x, xx.x, acc);
                acc = fmaf(w.y, xx.y, acc);
                acc = fmaf(w.z, xx.z, acc);
                acc = fmaf(w.w, xx.w, acc);
            }
        } else {
            for (int i = lane; i < n_in; i += 32) acc = fmaf(ldw(wr + i), __ldg(x + i), acc);
        }
        acc = warp_sum(acc);
        if (lane == 0) {
            y[row] = add ? y[row] + acc : acc;
            const unsigned long long k = row_key(y[row], row);
            mine = k > mine ? k : mine;
        }
    }
    if (best) block_offer_best(best, mine);
}

#endif
