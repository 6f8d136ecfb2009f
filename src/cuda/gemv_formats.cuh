/* GEMV weight formats for the dp4a kernels of gemv_kernels.cuh: per format
 * its block geometry and the integer dot of one item against int8
 * activations, plus the load helpers they share.
 *
 * Activations. The quantized formats read x as int8 blocks of 32 with an fp32
 * scale d and the fp32 term s = d * sum(q) (quantize_act_q8 in gemv_kernels.cuh,
 * once per call): each item's integer dot is exact (dp4a: 4 int8 products + int32 add
 * per instruction), the per-sub-block scales are applied in fp32, and offset
 * formats fold their minimum in with s (sum_j (d q_j + m) a_j = d sum q a + m s).
 * The K-quants' 16-element sub-blocks take the activation sum from a dp4a
 * with 0x01010101 where they need it per 16.
 *
 * Loads. Block sizes are not multiples of 4 (Q4_0 is 18 bytes, MXFP4 17), so
 * load_words reads the aligned 32-bit words covering a block and funnel-shifts
 * them into place: one extra word per block instead of byte or halfword loads.
 * It may read up to 7 bytes past a row's last block; weight allocations carry
 * 16 bytes of padding for that (cuda_device.cu). Q4_K/Q5_K blocks (144, 176
 * bytes) are 16-byte multiples: their quants come in as 16-byte vectors;
 * so do Q6_K's, whose blocks the device keeps in 224-byte slots
 * (gpu_layout.h).
 */
#ifndef NIB_CUDA_GEMV_FORMATS_CUH
#define NIB_CUDA_GEMV_FORMATS_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/act_q8.cuh"
#include "cuda/gpu_layout.h"
#include "cuda/ld_weights.cuh"
#include "quant/blocks.h"

/* ---- small device helpers ------------------------------------------------------- */

__device__ __forceinline__ float h2f(uint32_t bits) { return __half2float(__ushort_as_half((unsigned short)(bits & 0xFFFFu))); }

/* Where a dot's weight words come from (L of the dots that take one):
 * global memory through the read-only path with L2's evict-first policy
 * (ld_weights.cuh), for the kernels that load their own weights, or shared
 * memory, for the staged kernel (gemv_stream.cuh), whose weights arrive there
 * by bulk copy. */
struct ld_global {
    template <class T>
    static __device__ __forceinline__ T ld(const T *p) { return ldw(p); }
};
struct ld_shared {
    template <class T>
    static __device__ __forceinline__ T ld(const T *p) { return *p; }
};

/* N words of the bytes starting at p (any alignment): aligned loads, then
 * funnel shifts. Reads the word after the last one too. */
template <int N, class L = ld_global>
__device__ __forceinline__ void load_words(const uint8_t *p, uint32_t (&w)[N]) {
    const uintptr_t a = (uintptr_t)p;
    const uint32_t *q = (const uint32_t *)(a & ~(uintptr_t)3);
    const unsigned sh = (unsigned)(a & 3) * 8u;
    uint32_t raw[N + 1];
#pragma unroll
    for (int i = 0; i <= N; i++) raw[i] = L::ld(q + i);
#pragma unroll
    for (int i = 0; i < N; i++) w[i] = __funnelshift_r(raw[i], raw[i + 1], sh);
}

/* N words at a 4-byte aligned address. */
template <int N, class L = ld_global>
__device__ __forceinline__ void load_words_a4(const uint8_t *p, uint32_t (&w)[N]) {
    const uint32_t *q = (const uint32_t *)p;
#pragma unroll
    for (int i = 0; i < N; i++) w[i] = L::ld(q + i);
}

/* 8 int8x4 activation words (32 quants) at a 16-byte aligned address. */
__device__ __forceinline__ void load_act32(const int8_t *xq, int (&a)[8]) {
    const int4 v0 = __ldg((const int4 *)xq), v1 = __ldg((const int4 *)xq + 1);
    a[0] = v0.x, a[1] = v0.y, a[2] = v0.z, a[3] = v0.w;
    a[4] = v1.x, a[5] = v1.y, a[6] = v1.z, a[7] = v1.w;
}

/* 8 nibbles of q looked up in a 16-entry int8 table held in 4 words: .x the
 * values of the low nibbles of q's 4 bytes, .y of the high nibbles. Two byte
 * permutes pick from entries 0-7 and 8-15; a third picks between them by
 * each nibble's bit 3 (the trick of ggml-cuda's get_int_from_table_16). */
__device__ __forceinline__ int2 lut16(uint32_t q, uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3) {
    const uint32_t sel = 0x32103210u | ((q & 0x88888888u) >> 1);
    uint32_t r[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const uint32_t sh = 16 * i;
        const uint32_t lo = __byte_perm(t0, t1, q >> sh);
        const uint32_t hi = __byte_perm(t2, t3, q >> sh);
        r[i] = __byte_perm(lo, hi, sel >> sh);
    }
    return make_int2((int)__byte_perm(r[0], r[1], 0x6420), (int)__byte_perm(r[0], r[1], 0x7531));
}

__host__ __device__ constexpr uint32_t pack4(int a, int b, int c, int d) {
    return (uint32_t)(uint8_t)a | (uint32_t)(uint8_t)b << 8 | (uint32_t)(uint8_t)c << 16 | (uint32_t)(uint8_t)d << 24;
}

/* bit i (i < 4) of h to bit 8i+4: Q5's fifth bits into place over 4 nibbles */
__device__ __forceinline__ uint32_t spread4(uint32_t h) {
    return ((h & 1u) << 4) | ((h & 2u) << 11) | ((h & 4u) << 18) | ((h & 8u) << 25);
}

/* Per-byte v - k, each byte of v and k below 128, result as signed bytes:
 * setting each byte's high bit first keeps the borrows inside the bytes.
 * Three operations where __vsubss4 (saturating, which these bytes never
 * need) costs fourteen: sm_90 has no instruction for it. Q6_K's split-K
 * kernel went 1,995 -> 1,356 PTX instructions, and Llama-3-8B Q4_K_M decode
 * 418 -> 434 t/s (bench/gpu-decode-notes.md v21). */
__device__ __forceinline__ uint32_t sub_bytes7(uint32_t v, uint32_t k) { return ((v | 0x80808080u) - k) ^ 0x80808080u; }
__device__ __forceinline__ int byte_at(const uint32_t *w, int k) { return (int)((w[k >> 2] >> (8 * (k & 3))) & 0xFFu); }

/* byte k of 12 held in 3 words, for a run-time k: selects instead of an
 * indexed array, which would go to local memory */
__device__ __forceinline__ int byte_of3(const uint32_t (&w)[3], int k) {
    const uint32_t word = k < 4 ? w[0] : (k < 8 ? w[1] : w[2]);
    return (int)((word >> (8 * (k & 3))) & 0xFFu);
}

/* ---- formats ----------------------------------------------------------------------
 * Each format: QK elements and BYTES bytes per block, CH elements per item
 * (QK / CH items per block), and
 *     dot(blk, sub, xq, ds)
 * the item `sub` of the block at blk against the activations of the whole
 * block (xq: QK int8 quants, ds: QK/32 pairs (d, s)). Layout comments point at
 * the reference decoders in src/quant/, which these must agree with. */

/* The legacy formats' item is their whole block, N words from its start
 * (A4: blocks 4-byte aligned). They split dot into load (the item's weight
 * words: W) and dot_w (the arithmetic on them and the activations), so the
 * one-token kernels can load ahead (load_ahead); dot is the two in a row. */
template <class F, int N, bool A4>
struct words_block {
    struct W {
        uint32_t w[N];
    };
    template <class L = ld_global>
    static __device__ __forceinline__ W load(const uint8_t *b, int) {
        W r;
        if constexpr (A4) load_words_a4<N, L>(b, r.w);
        else load_words<N, L>(b, r.w);
        return r;
    }
    template <class L = ld_global>
    static __device__ __forceinline__ float dot(const uint8_t *b, int sub, const int8_t *xq, const float2 *ds) {
        return F::dot_w(load<L>(b, sub), sub, xq, ds);
    }
};

/* Q4_0, 18 bytes: d, qs[16]; byte j = element j (low nibble), j+16 (high); x = d (q - 8). */
struct fmt_q4_0 : words_block<fmt_q4_0, 5, false> {
    static constexpr int QK = 32, BYTES = 18, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[5] = r.w;
        int a[8];
        load_act32(xq, a);
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t q = __funnelshift_r(w[k], w[k + 1], 16);
            sumi = __dp4a((int)(q & 0x0F0F0F0Fu), a[k], sumi);
            sumi = __dp4a((int)((q >> 4) & 0x0F0F0F0Fu), a[k + 4], sumi);
        }
        const float2 s = __ldg(ds);
        return h2f(w[0]) * (s.x * (float)sumi - 8.0f * s.y);
    }
};

/* Q4_1, 20 bytes: d, m, qs[16]; x = d q + m. */
struct fmt_q4_1 : words_block<fmt_q4_1, 5, true> {
    static constexpr int QK = 32, BYTES = 20, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[5] = r.w;
        int a[8];
        load_act32(xq, a);
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            sumi = __dp4a((int)(w[k + 1] & 0x0F0F0F0Fu), a[k], sumi);
            sumi = __dp4a((int)((w[k + 1] >> 4) & 0x0F0F0F0Fu), a[k + 4], sumi);
        }
        const float2 s = __ldg(ds);
        return h2f(w[0]) * s.x * (float)sumi + h2f(w[0] >> 16) * s.y;
    }
};

/* Q5_0, 22 bytes: d, qh[4] (bit j = bit 4 of element j), qs[16]; x = d (q - 16). */
struct fmt_q5_0 : words_block<fmt_q5_0, 6, false> {
    static constexpr int QK = 32, BYTES = 22, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[6] = r.w;
        const uint32_t qh = __funnelshift_r(w[0], w[1], 16);
        int a[8];
        load_act32(xq, a);
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t q = __funnelshift_r(w[k + 1], w[k + 2], 16);
            const uint32_t lo = (q & 0x0F0F0F0Fu) | spread4(qh >> (4 * k));
            const uint32_t hi = ((q >> 4) & 0x0F0F0F0Fu) | spread4(qh >> (16 + 4 * k));
            sumi = __dp4a((int)lo, a[k], sumi);
            sumi = __dp4a((int)hi, a[k + 4], sumi);
        }
        const float2 s = __ldg(ds);
        return h2f(w[0]) * (s.x * (float)sumi - 16.0f * s.y);
    }
};

/* Q5_1, 24 bytes: d, m, qh[4], qs[16]; x = d q + m. */
struct fmt_q5_1 : words_block<fmt_q5_1, 6, true> {
    static constexpr int QK = 32, BYTES = 24, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[6] = r.w;
        const uint32_t qh = w[1];
        int a[8];
        load_act32(xq, a);
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t q = w[k + 2];
            const uint32_t lo = (q & 0x0F0F0F0Fu) | spread4(qh >> (4 * k));
            const uint32_t hi = ((q >> 4) & 0x0F0F0F0Fu) | spread4(qh >> (16 + 4 * k));
            sumi = __dp4a((int)lo, a[k], sumi);
            sumi = __dp4a((int)hi, a[k + 4], sumi);
        }
        const float2 s = __ldg(ds);
        return h2f(w[0]) * s.x * (float)sumi + h2f(w[0] >> 16) * s.y;
    }
};

/* Q8_0, 34 bytes: d, qs[32] int8; x = d q. */
struct fmt_q8_0 : words_block<fmt_q8_0, 9, false> {
    static constexpr int QK = 32, BYTES = 34, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[9] = r.w;
        int a[8];
        load_act32(xq, a);
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) sumi = __dp4a((int)__funnelshift_r(w[k], w[k + 1], 16), a[k], sumi);
        return h2f(w[0]) * __ldg(&ds->x) * (float)sumi;
    }
};

/* IQ4_NL, 18 bytes: d, qs[16] as Q4_0 but each nibble indexes kvalues_iq4nl; x = d * kv[q]. */
#define IQ4_T0 pack4(-127, -104, -83, -65)
#define IQ4_T1 pack4(-49, -35, -22, -10)
#define IQ4_T2 pack4(1, 13, 25, 38)
#define IQ4_T3 pack4(53, 69, 89, 113)
#define IQ4NL_T IQ4_T0, IQ4_T1, IQ4_T2, IQ4_T3
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
}
/* The IQ4 formats' 16 levels (IQ4_NL's table T) by prmt, without a select:
 * a nibble n picks from the pair (t0, IQ4_T1) = T[0..7] with q as it is, and
 * from (t2, IQ4_T3P) = T[8..15] + 1 with q ^ 0x88888888. Where bit 3 of its
 * selector nibble is set prmt fills the byte with the sign of the byte it
 * picks: in the first pick that is n >= 8, and T[0..7] are all negative, so
 * the byte is -1; in the second n < 8, and T[8..15] + 1 are all positive, so
 * 0. The two picks' bytes then add to T[n] for every n (-1 + T[n] + 1, or
 * T[n] + 0), and two dp4a against the same activations sum them: 11
 * instructions a word of 8 levels, where lut16 (above) took ~20.
 * The levels come in nibble order: for IQ4's bytes (low nibble element i,
 * high nibble i + 16) that is i, i + 16, i + 1, i + 17, the order of the
 * permuted activation copy of the tiled kernels (gemv_tiled.cuh t32_fill
 * with F::PERM), or activations permuted in registers (iq4_dot32). t0 and
 * t2 are IQ4_T0 and IQ4_T2P, passed in registers the caller keeps per lane
 * (a warp-uniform constant lands in a uniform register, which prmt cannot
 * read: nvcc then copies it out before every prmt). */
#define IQ4_T2P pack4(2, 14, 26, 39)
#define IQ4_T3P pack4(54, 70, 90, 114)
/* sum + the 8 levels of q against a0 (nibbles 0-3) and a1 (nibbles 4-7),
 * picked from (t0, T1) with q and from (t2, T3) with q ^ 0x88888888: the
 * rule above for any 16-entry table whose pairs make the sign fills cancel
 * (IQ4: T1 = IQ4_T1, T3 = IQ4_T3P; MXFP4 below) */
template <uint32_t T1, uint32_t T3>
__device__ __forceinline__ int levels_word_dot(uint32_t q, int a0, int a1, uint32_t t0, uint32_t t2, int sum) {
    const uint32_t qx = q ^ 0x88888888u;
    sum = __dp4a((int)prmt(t0, T1, q), a0, sum);
    sum = __dp4a((int)prmt(t2, T3, qx), a0, sum);
    sum = __dp4a((int)prmt(t0, T1, q >> 16), a1, sum);
    return __dp4a((int)prmt(t2, T3, qx >> 16), a1, sum);
}
__device__ __forceinline__ int iq4_word_dot(uint32_t q, int a0, int a1, uint32_t t0, uint32_t t2, int sum) {
    return levels_word_dot<IQ4_T1, IQ4_T3P>(q, a0, a1, t0, t2, sum);
}
/* sum + a 32-element IQ4 sub-block (q: its 16 quant bytes) against its
 * activations in natural order (a[k]: elements 4k..4k+3, a[k + 4]: 16 + 4k..),
 * which two prmt a word put in iq4_word_dot's order (shared by the rows of
 * an item that load the same activations). t0, t2: as iq4_word_dot. */
template <uint32_t T1, uint32_t T3>
__device__ __forceinline__ int levels_dot32(const uint32_t (&q)[4], const int (&a)[8], uint32_t t0, uint32_t t2, int sum) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const uint32_t x = (uint32_t)a[k], y = (uint32_t)a[k + 4];
        sum = levels_word_dot<T1, T3>(q[k], (int)prmt(x, y, 0x5140), (int)prmt(x, y, 0x7362), t0, t2, sum);
    }
    return sum;
}
__device__ __forceinline__ int iq4_dot32(const uint32_t (&q)[4], const int (&a)[8], uint32_t t0, uint32_t t2, int sum) {
    return levels_dot32<IQ4_T1, IQ4_T3P>(q, a, t0, t2, sum);
}
/* the pair's register words per lane for the item kernels: from a table of
 * 32 copies each in global memory (L1), one load a dot */
struct levels_regs_dev_t {
    uint32_t v[64];
};
constexpr levels_regs_dev_t levels_regs_make(uint32_t t0, uint32_t t2) {
    levels_regs_dev_t r{};
    for (int i = 0; i < 32; i++) r.v[i] = t0, r.v[32 + i] = t2;
    return r;
}
__device__ __forceinline__ uint2 levels_regs(const levels_regs_dev_t &t) {
    const unsigned l = threadIdx.x & 31;
    return make_uint2(__ldg(&t.v[l]), __ldg(&t.v[32 + l]));
}
static __device__ const levels_regs_dev_t iq4_regs_dev = levels_regs_make(IQ4_T0, IQ4_T2P);
__device__ __forceinline__ uint2 iq4_regs() { return levels_regs(iq4_regs_dev); }
struct fmt_iq4_nl : words_block<fmt_iq4_nl, 5, false> {
    static constexpr int QK = 32, BYTES = 18, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[5] = r.w;
        int a[8];
        load_act32(xq, a);
        const uint32_t q[4] = {__funnelshift_r(w[0], w[1], 16), __funnelshift_r(w[1], w[2], 16),
                               __funnelshift_r(w[2], w[3], 16), __funnelshift_r(w[3], w[4], 16)};
        const uint2 t = iq4_regs();
        return h2f(w[0]) * __ldg(&ds->x) * (float)iq4_dot32(q, a, t.x, t.y, 0);
    }
};

/* MXFP4, 17 bytes: e (E8M0), qs[16] of E2M1 codes in Q4_0's nibble order.
 * As in quant/q_mxfp4.c: doubled E2M1 values T = {0, 1, 2, 3, 4, 6, 8, 12}
 * and their negatives (codes 8-15) times 2^(e-128). The levels by
 * levels_word_dot's two picks, with every level one lower: (t0, MXFP4_A1) =
 * T[0..7], whose sign fills (codes 8-15) are 0, and (t2, MXFP4_B1) = T[8..15]
 * - 1 = {-1, -2, -3, -4, -5, -7, -9, -13}, all negative, whose sign fills
 * (codes 0-7) are -1. So the picks add to T[n] - 1 for every code n, and the
 * dot's -sum(a) comes back with the activation's s = d * sum(a). */
#define MXFP4_A0 pack4(0, 1, 2, 3)
#define MXFP4_A1 pack4(4, 6, 8, 12)
#define MXFP4_B0 pack4(-1, -2, -3, -4)
#define MXFP4_B1 pack4(-5, -7, -9, -13)
/* 2^(e - 128) for an E8M0 exponent byte: half its scale, for the doubled levels */
__device__ __forceinline__ float e8m0_half(uint32_t e) {
    return __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
}
static __device__ const levels_regs_dev_t mxfp4_regs_dev = levels_regs_make(MXFP4_A0, MXFP4_B0);
struct fmt_mxfp4 : words_block<fmt_mxfp4, 5, false> {
    static constexpr int QK = 32, BYTES = 17, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[5] = r.w;
        int a[8];
        load_act32(xq, a);
        const uint32_t q[4] = {__funnelshift_r(w[0], w[1], 8), __funnelshift_r(w[1], w[2], 8),
                               __funnelshift_r(w[2], w[3], 8), __funnelshift_r(w[3], w[4], 8)};
        const uint2 t = levels_regs(mxfp4_regs_dev);
        const int sumi = levels_dot32<MXFP4_A1, MXFP4_B1>(q, a, t.x, t.y, 0);
        const float2 d = __ldg(ds);
        return e8m0_half(w[0] & 0xFFu) * (d.x * (float)sumi + d.y);
    }
};

/* Q4_K/Q5_K 6-bit scale and min of 32-element sub-block j (quant/q_k.c qk_unpack_scale_min). */
__device__ __forceinline__ void scale_min_k4(int j, const uint32_t (&s)[3], int &sc, int &m) {
    if (j < 4) {
        sc = byte_of3(s, j) & 63;
        m = byte_of3(s, j + 4) & 63;
    } else {
        sc = (byte_of3(s, j + 4) & 0xF) | ((byte_of3(s, j - 4) >> 6) << 4);
        m = (byte_of3(s, j + 4) >> 4) | ((byte_of3(s, j) >> 6) << 4);
    }
}

/* Q4_K, 144 bytes: d, dmin, scales[12], qs[128]. Item = 64 elements (chunk c):
 * qs[32c..32c+31] low nibbles are sub-block 2c, high nibbles 2c+1;
 * x = d sc q - dmin m.
 * Few load instructions per byte: the kernel lab's loads-alone dot (gemv_lab
 * "/ld": the same loads folded by xor, no arithmetic) took as long as the
 * real one in every launch (14336 x 4096 split K 13.3 us, loads alone 16.7;
 * the read floor 9.6), so what costs is the loads' issue, not the dp4a work.
 * The header and scales come in as one 16-byte vector (four 4-byte loads
 * before), the two halves' (d, s) pairs as one float4 (two float2):
 * Llama-3-8B Q4_K_M tg128 461.3 -> 469.4 t/s, Llama-3.2-1B 1,487 -> 1,539
 * (bench/gpu-decode-notes.md v41). Q5_K the same. */
struct fmt_q4_K {
    static constexpr int QK = 256, BYTES = 144, CH = 64;
    template <class L = ld_global>
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        const uint4 q0 = L::ld((const uint4 *)(b + 16 + 32 * c)), q1 = L::ld((const uint4 *)(b + 32 + 32 * c));
        const uint32_t q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        const uint4 hs = L::ld((const uint4 *)b); /* d, dmin and the 12 scale bytes: one 16-byte load */
        const uint32_t hdr[1] = {hs.x}, s[3] = {hs.y, hs.z, hs.w};
        int a[8], sum_lo = 0, sum_hi = 0;
        load_act32(xq + 64 * c, a);
#pragma unroll
        for (int k = 0; k < 8; k++) sum_lo = __dp4a((int)(q[k] & 0x0F0F0F0Fu), a[k], sum_lo);
        load_act32(xq + 64 * c + 32, a);
#pragma unroll
        for (int k = 0; k < 8; k++) sum_hi = __dp4a((int)((q[k] >> 4) & 0x0F0F0F0Fu), a[k], sum_hi);
        int sc0, m0, sc1, m1;
        scale_min_k4(2 * c, s, sc0, m0);
        scale_min_k4(2 * c + 1, s, sc1, m1);
        const float4 dd = __ldg((const float4 *)(ds + 2 * c)); /* (d, s) of both halves; 16-byte aligned */
        return h2f(hdr[0]) * ((float)(sc0 * sum_lo) * dd.x + (float)(sc1 * sum_hi) * dd.z) -
               h2f(hdr[0] >> 16) * ((float)m0 * dd.y + (float)m1 * dd.w);
    }
};

/* Q5_K, 176 bytes: d, dmin, scales[12], qh[32], qs[128]. As Q4_K, plus bit 4
 * of element e in bit e/32 of qh[e%32]. */
struct fmt_q5_K {
    static constexpr int QK = 256, BYTES = 176, CH = 64;
    template <class L = ld_global>
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        const uint4 q0 = L::ld((const uint4 *)(b + 48 + 32 * c)), q1 = L::ld((const uint4 *)(b + 64 + 32 * c));
        const uint4 h0 = L::ld((const uint4 *)(b + 16)), h1 = L::ld((const uint4 *)(b + 32));
        const uint32_t q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        const uint32_t h[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
        const uint4 hs = L::ld((const uint4 *)b); /* d, dmin and the 12 scale bytes: one 16-byte load */
        const uint32_t hdr[1] = {hs.x}, s[3] = {hs.y, hs.z, hs.w};
        int a[8], sum_lo = 0, sum_hi = 0;
        load_act32(xq + 64 * c, a);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const uint32_t v = (q[k] & 0x0F0F0F0Fu) | (((h[k] >> (2 * c)) & 0x01010101u) << 4);
            sum_lo = __dp4a((int)v, a[k], sum_lo);
        }
        load_act32(xq + 64 * c + 32, a);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const uint32_t v = ((q[k] >> 4) & 0x0F0F0F0Fu) | (((h[k] >> (2 * c + 1)) & 0x01010101u) << 4);
            sum_hi = __dp4a((int)v, a[k], sum_hi);
        }
        int sc0, m0, sc1, m1;
        scale_min_k4(2 * c, s, sc0, m0);
        scale_min_k4(2 * c + 1, s, sc1, m1);
        const float4 dd = __ldg((const float4 *)(ds + 2 * c)); /* (d, s) of both halves; 16-byte aligned */
        return h2f(hdr[0]) * ((float)(sc0 * sum_lo) * dd.x + (float)(sc1 * sum_hi) * dd.z) -
               h2f(hdr[0] >> 16) * ((float)m0 * dd.y + (float)m1 * dd.w);
    }
};

/* Q6_K, 210 bytes: ql[128], qh[64], scales[16] int8, d. Item = 64 elements:
 * half hh = c/2, p = c%2, quarters p and p+2 of that half (they share the ql
 * bytes ql[64hh + 32p + l]: low nibble quarter p, high nibble quarter p+2;
 * high bits qh[32hh + l] bits 2p.. and 2p+4..). x = d sc (q - 32), sc per 16. */
struct fmt_q6_K {
    /* blocks in the device's 224-byte slots (gpu_layout.h): 16-byte vectors */
    static constexpr int QK = 256, BYTES = NIB_CUDA_Q6_K_SLOT, CH = 64;
    template <class L = ld_global>
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        const int hh = c >> 1, p = c & 1;
        const uint4 l0 = L::ld((const uint4 *)(b + 64 * hh + 32 * p)), l1 = L::ld((const uint4 *)(b + 64 * hh + 32 * p + 16));
        const uint4 h0 = L::ld((const uint4 *)(b + 128 + 32 * hh)), h1 = L::ld((const uint4 *)(b + 144 + 32 * hh));
        const uint2 s2 = L::ld((const uint2 *)(b + 192 + 8 * hh));
        const uint32_t ql[8] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
        const uint32_t qh[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
        const uint32_t sc[2] = {s2.x, s2.y};
        const float d = h2f(L::ld((const unsigned short *)(b + 208)));
        int a[8];
        float acc = 0.0f;
#pragma unroll
        for (int half = 0; half < 2; half++) {  /* quarter p, then quarter p + 2 */
            const int quarter = p + 2 * half;
            load_act32(xq + 128 * hh + 32 * quarter, a);
            int s0 = 0, s1 = 0;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                uint32_t v = ((ql[k] >> (4 * half)) & 0x0F0F0F0Fu) | (((qh[k] >> (2 * quarter)) & 0x03030303u) << 4);
                v = sub_bytes7(v, 0x20202020u);
                if (k < 4) s0 = __dp4a((int)v, a[k], s0);
                else s1 = __dp4a((int)v, a[k], s1);
            }
            /* scales 2*quarter and 2*quarter+1 of the half's 8: word `half`, bytes 2p, 2p+1
             * (a compile-time word index keeps sc[] in registers) */
            const int sc0 = (int)(int8_t)(sc[half] >> (16 * p)), sc1 = (int)(int8_t)(sc[half] >> (16 * p + 8));
            acc += __ldg(&ds[4 * hh + quarter].x) * (float)(sc0 * s0 + sc1 * s1);
        }
        return d * acc;
    }
};

/* Q3_K, 110 bytes: hmask[32], qs[64], scales[12], d. Item = 128 elements (half
 * hh): element e = 128hh + 32k + l has low bits (qs[32hh + l] >> 2k) & 3 and
 * high bit (hmask[l] >> (4hh + k)) & 1; value (low | high << 2) - 4. The scale
 * of 16-element sub-block j = 8hh + i, signed (quant/q_k.c
 * qk_unpack_q3_scales): low nibble in byte i (hh = 0) or its high nibble
 * (hh = 1), high 2 bits in byte 8 + j%4 at bit 2*(j/4), minus 32.
 * Written for few operations a word (Q3_K was the heaviest format per weight
 * byte, ~14 PTX instructions a byte against ~6.5 for Q4_K):
 *  - the quant as low - 4 (1 - high): ~hmask shifted once per item, then each
 *    word is one mask of qs with every byte's high bit set, one mask of the
 *    shifted ~hmask, a subtract that cannot borrow across bytes and an xor
 *    back to signed bytes;
 *  - the 8 scales of the half built 4 at a time as bytes.
 * Kernel lab, H200, 4 rows a warp on a persistent grid (the launch gemv.cu
 * gives Q3_K), against the form before: 4096 x 14336 20.9 -> 17.7 us,
 * 14336 x 4096 27.2 -> 19.1, 4096 x 128256 119.8 -> 105.8
 * (bench/results/2026-11-30-h200-gemv-q3k.md). */
struct fmt_q3_K {
    static constexpr int QK = 256, BYTES = 110, CH = 128;
    static __device__ __forceinline__ float dot(const uint8_t *b, int hh, const int8_t *xq, const float2 *ds) {
        uint32_t qs[8], hm[8], s[3];
        load_words(b + 32 + 32 * hh, qs);
        load_words(b, hm);
        load_words(b + 96, s);
        const float d = h2f(ldw((const unsigned short *)(b + 108)));
        /* scales i = 0..3 in sc[0]'s bytes, 4..7 in sc[1]'s, as signed bytes */
        const uint32_t hi = s[2] >> (4 * hh);
        uint32_t sc[2];
        sc[0] = sub_bytes7(((s[0] >> (4 * hh)) & 0x0F0F0F0Fu) | ((hi & 0x03030303u) << 4), 0x20202020u);
        sc[1] = sub_bytes7(((s[1] >> (4 * hh)) & 0x0F0F0F0Fu) | (((hi >> 2) & 0x03030303u) << 4), 0x20202020u);
#pragma unroll
        for (int i = 0; i < 8; i++) hm[i] = ~hm[i] >> (4 * hh); /* bit k of each byte: 1 where the high bit is 0 */
        int a[8];
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            load_act32(xq + 128 * hh + 32 * k, a);
            int s0 = 0, s1 = 0;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const uint32_t lo = ((qs[i] >> (2 * k)) & 0x03030303u) | 0x80808080u;
                const uint32_t v = (lo - (((hm[i] >> k) & 0x01010101u) << 2)) ^ 0x80808080u;
                if (i < 4) s0 = __dp4a((int)v, a[i], s0);
                else s1 = __dp4a((int)v, a[i], s1);
            }
            const uint32_t w = sc[k >> 1] >> (16 * (k & 1));
            acc += __ldg(&ds[4 * hh + k].x) * (float)((int)(int8_t)w * s0 + (int)(int8_t)(w >> 8) * s1);
        }
        return d * acc;
    }
};

/* Q2_K, 84 bytes: scales[16] (low nibble scale, high nibble min, per 16),
 * qs[64], d, dmin. Item = 128 elements (half hh): element 128hh + 32k + l is
 * (qs[32hh + l] >> 2k) & 3; x = d sc q - dmin m. */
struct fmt_q2_K {
    static constexpr int QK = 256, BYTES = 84, CH = 128;
    static __device__ __forceinline__ float dot(const uint8_t *b, int hh, const int8_t *xq, const float2 *ds) {
        uint32_t qs[8], sc[2], hdr[1];
        load_words_a4(b + 16 + 32 * hh, qs);
        load_words_a4(b + 8 * hh, sc);
        load_words_a4(b + 80, hdr);
        int a[8];
        float acc_d = 0.0f, acc_m = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            load_act32(xq + 128 * hh + 32 * k, a);
            int s0 = 0, s1 = 0, a0 = 0, a1 = 0;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int v = (int)((qs[i] >> (2 * k)) & 0x03030303u);
                if (i < 4) s0 = __dp4a(v, a[i], s0), a0 = __dp4a(0x01010101, a[i], a0);
                else s1 = __dp4a(v, a[i], s1), a1 = __dp4a(0x01010101, a[i], a1);
            }
            const int b0 = byte_at(sc, 2 * k), b1 = byte_at(sc, 2 * k + 1);
            const float da = __ldg(&ds[4 * hh + k].x);
            acc_d += da * (float)((b0 & 0xF) * s0 + (b1 & 0xF) * s1);
            acc_m += da * (float)((b0 >> 4) * a0 + (b1 >> 4) * a1);
        }
        return h2f(hdr[0]) * acc_d - h2f(hdr[0] >> 16) * acc_m;
    }
};

/* IQ4_XS, 136 bytes: d, scales_h (2 high bits per 32), scales_l[4] (nibbles),
 * qs[128] (16 bytes per 32 elements, IQ4_NL's order). Item = 64 elements. */
struct fmt_iq4_xs {
    static constexpr int QK = 256, BYTES = 136, CH = 64;
    struct W {
        uint32_t hdr[2], q[8];
    };
    /* 8-byte loads: blocks of 136 bytes in rows of whole blocks are 8-byte
     * aligned, so the header and an item's 32 quant bytes take 5 loads, not
     * 10 (kernel lab, H200, PDL graph replay: 4096 x 14336 16.7 -> 15.8 us,
     * the split-K 14336 x 4096 18.9 -> 16.5, LM head 123.3 -> 113.7) */
    static __device__ __forceinline__ W load(const uint8_t *b, int c) {
        W r;
        const uint2 h = ldw((const uint2 *)b);
        r.hdr[0] = h.x, r.hdr[1] = h.y;
        const uint2 *q = (const uint2 *)(b + 8 + 32 * c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint2 v = ldw(q + i);
            r.q[2 * i] = v.x, r.q[2 * i + 1] = v.y;
        }
        return r;
    }
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        return dot_w(load(b, c), c, xq, ds);
    }
    static __device__ __forceinline__ float dot_w(const W &r, int c, const int8_t *xq, const float2 *ds) {
        const uint32_t(&hdr)[2] = r.hdr, (&q)[8] = r.q;
        const float d = h2f(hdr[0]);
        const uint2 tr = iq4_regs();
        int a[8];
        float acc = 0.0f;
#pragma unroll
        for (int t = 0; t < 2; t++) {
            const int ib = 2 * c + t;
            load_act32(xq + 32 * ib, a);
            const uint32_t qt[4] = {q[4 * t], q[4 * t + 1], q[4 * t + 2], q[4 * t + 3]};
            const int sumi = iq4_dot32(qt, a, tr.x, tr.y, 0);
            const int ls = ((int)((hdr[1] >> (4 * ib)) & 15u) | (int)(((hdr[0] >> 16) >> (2 * ib)) & 3u) << 4) - 32;
            acc += __ldg(&ds[ib].x) * (float)(ls * sumi);
        }
        return d * acc;
    }
};

#endif
