/* The tiled GEMV (gemv_tiled.cuh) for the IQ lattice formats and the
 * ternary ones: a lane takes a whole block, read from its registers
 * (t32_u32: the block's bytes at any offset), against the activation's copy
 * in shared memory. The arithmetic is that of the item kernels in
 * gemv_formats_extra.cuh (whose comments give the layouts and why the
 * integer sums are exact), over the block's 8 sub-blocks in a row; the
 * codebooks are copied into shared memory by prepare() (iq_book, as the
 * item kernels do).
 *
 * Geometry: each block is its device bytes in order, cut into CH chunks and
 * SIDE bytes apart (gemv_tiled.cuh t32_w): IQ2_XXS 66 = 4 + 2, IQ2_S 82 =
 * 5 + 2, IQ3_XXS 98 = 6 + 2, IQ1_S 50 = 3 + 2, IQ1_M 56 = 3 + 8, TQ2_0 66 =
 * 4 + 2; IQ2_XS's 74 and IQ3_S's 110 are padded to 5 and 7 chunks. TQ1_0
 * is TQ2_0 on the device (gpu_layout.h). */
#ifndef NIB_CUDA_GEMV_TILED_IQ_CUH
#define NIB_CUDA_GEMV_TILED_IQ_CUH

#include "cuda/gemv_formats_extra.cuh"
#include "cuda/gemv_tiled.cuh"

/* the 8 activation words of sub-block ib and its fp32 d */
struct t32_act32 {
    int a[8];
    float d;
};
__device__ __forceinline__ t32_act32 t32_act_of(const uint8_t *act, int ib) {
    t32_act32 r;
    t32_act_words(act + 32 * ib, r.a);
    r.d = *(const float *)(act + 256 + 8 * ib);
    return r;
}

/* the shared part of every tiled IQ/TQ format: the block's geometry and the
 * conversion at load */
template <int BYTES_, int CH_, int SIDE_, bool SUMS16_>
struct t32_geo {
    static constexpr int QK = 256, BYTES = BYTES_, CH = CH_, SIDE = SIDE_, TILE = CH * 512 + 32 * SIDE;
    static constexpr int ACT = SUMS16_ ? 400 : 336;
    static constexpr bool SUMS16 = SUMS16_;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return t32_block_chunk<BYTES>(b, c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *b) { return t32_block_side<BYTES, CH, SIDE>(b); }
};

/* ---- codebooks in shared memory, replicated ------------------------------------------
 *
 * The lattice formats look up one codebook entry a group of 8 (or 4)
 * weights, each lane of a warp at its own random index. From one copy of a
 * table in shared memory that costs ~3.5 wavefronts a lookup (32 lanes on
 * 32 banks, several words a bank), and those lookups, not the weight loads,
 * bound the v66 kernels. So a table lives in the block's shared memory REP
 * times over: entry e at words e * REP .. e * REP + REP - 1, lane l reading
 * copy l % REP. With REP 32 (words) or 16 (8-byte entries, which a warp
 * reads as two half-warps) every lookup is one conflict-free wavefront. The
 * prepare() of a format builds its tables (t32_book_words: the head of the
 * kernel's dynamic shared memory) before pdl_wait; measured in
 * bench/gpu-decode-notes.md v71.
 *
 * The IQ2 and IQ1 codebooks also change form: every IQ2 magnitude is 8, 25
 * or 43 and every IQ1 value -1, 0 or 1, so an entry becomes prmt selectors
 * (iq_grids_dev.cuh iq2_sel), one nibble a weight, and prmt over a register
 * pair of the 6 signed values gives a word of 4 weights in one instruction
 * (iq_sel_dot); bit 2 of a nibble (a sign word, or IQ1's shift) picks the
 * negative half. */

/* the N words at src into a table of REP copies at dst (every thread of the
 * block; the loads of a pass issued before its stores) */
template <int N, int REP>
__device__ __forceinline__ void t32_rep_fill(uint32_t *dst, const uint32_t *src) {
    static_assert(REP % 4 == 0, "copies are written 4 at a time");
    constexpr int V = N * REP / 4, U = 8;
    for (int i0 = threadIdx.x; i0 < V; i0 += U * (int)blockDim.x) {
        uint32_t v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = i0 + u * (int)blockDim.x;
            v[u] = i < V ? __ldg(src + 4 * i / REP) : 0u;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = i0 + u * (int)blockDim.x;
            if (i < V) ((uint4 *)dst)[i] = make_uint4(v[u], v[u], v[u], v[u]);
        }
    }
}
/* the N uint2 entries at src into REP copies at dst (8-byte entries) */
template <int N, int REP>
__device__ __forceinline__ void t32_rep_fill2(uint32_t *dst, const uint2 *src) {
    static_assert(REP % 2 == 0, "copies are written 2 at a time");
    constexpr int V = N * REP / 2, U = 8;
    for (int i0 = threadIdx.x; i0 < V; i0 += U * (int)blockDim.x) {
        uint2 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = i0 + u * (int)blockDim.x;
            v[u] = i < V ? __ldg(src + 2 * i / REP) : make_uint2(0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = i0 + u * (int)blockDim.x;
            if (i < V) ((uint4 *)dst)[i] = make_uint4(v[u].x, v[u].y, v[u].x, v[u].y);
        }
    }
}
/* This lane's copy of a replicated table (of E-word entries) at word
 * offset off of the book, as a shared-memory address the compiler cannot
 * take apart, and entry i of it: one LEA and one LDS a lookup. (Seeing the
 * lane in the address, nvcc folded it into every index: three integer
 * instructions a lookup.) */
template <int REP, int E = 1>
__device__ __forceinline__ uint32_t t32_rep_lane(int off) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(t32_book_words() + off + E * (threadIdx.x % REP));
    asm volatile("" : "+r"(a));
    return a;
}
template <int REP>
__device__ __forceinline__ uint32_t t32_rep_at(uint32_t lane_tab, uint32_t i) {
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(lane_tab + i * (4 * REP)));
    return v;
}
template <int REP>
__device__ __forceinline__ uint2 t32_rep_at2(uint32_t lane_tab, uint32_t i) {
    uint2 v;
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(lane_tab + i * (8 * REP)));
    return v;
}
/* byte k of w, zero-extended: one prmt */
__device__ __forceinline__ uint32_t iq_byte(uint32_t w, int k) {
    uint32_t r;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(w), "r"(0x4440 + k));
    return r;
}

/* The prmt pairs: bytes 0-3 the "positive" values (a register, read back
 * from the book's head: t32_head_reg), 4-7 the negative ones (an immediate). */
#define IQ2_POS 0x002B1908u /* 8, 25, 43, 0 */
#define IQ2_NEG 0x00D5E7F8u /* -8, -25, -43, 0 */
#define IQ1_POS 0x000901F9u /* 8v + 1 for v = -1, 0, 1: -7, 1, 9, 0 */
#define IQ1_NEG 0x0007FFF7u /* 8v - 1: -9, -1, 7, 0 */
template <uint32_t NEG>
__device__ __forceinline__ int iq_prmt(uint32_t pos, uint32_t sel) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(pos), "n"(NEG), "r"(sel));
    return (int)r;
}
/* one 8-weight group's integer dot: sel = the entry's codes | sign bits */
template <uint32_t NEG>
__device__ __forceinline__ int iq_sel_dot(uint32_t pos, uint32_t sel, int a0, int a1, int sum) {
    sum = __dp4a(iq_prmt<NEG>(pos, sel), a0, sum);
    return __dp4a(iq_prmt<NEG>(pos, sel >> 16), a1, sum);
}

/* The book of a prmt-coded format: the pair's first word in the head, then
 * NS selector entries and NG sign words (none for IQ1), each REP times over;
 * fill() is the format's prepare(), pos/sel/sgn this lane's pair word and
 * tables (t32_rep_lane). */
template <int NS, int NG, int REP>
struct t32_sel_book {
    static constexpr int T0 = T32_HEAD / 4, SG = T0 + NS * REP, BYTES = T32_HEAD + (NS + NG) * REP * 4;
    static __device__ __forceinline__ void fill(uint32_t pos, const uint32_t *sel, const uint32_t *sgn) {
        t32_head_fill(pos, 0);
        t32_rep_fill<NS, REP>(t32_book_words() + T0, sel);
        if constexpr (NG > 0) t32_rep_fill<NG, REP>(t32_book_words() + SG, sgn);
        __syncthreads();
    }
    static __device__ __forceinline__ uint32_t pos() { return t32_head_reg(0); }
    static __device__ __forceinline__ uint32_t sel() { return t32_rep_lane<REP>(T0); }
    static __device__ __forceinline__ uint32_t sgn() { return t32_rep_lane<REP>(SG); }
};

/* IQ2_XXS: d at 0; sub-block ib's index word at 2 + 8 ib, its sign/scale word at 6 + 8 ib */
template <int REP = 32>
struct t32_iq2_xxs_t : t32_geo<66, 4, 2, false> {
    using book = t32_sel_book<256, 128, REP>;
    static constexpr int BOOK_BYTES = book::BYTES;
    static __device__ __forceinline__ void prepare() { book::fill(IQ2_POS, iq2xxs_sel_dev.v, iq_sign7_sel_dev.v); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t pos = book::pos(), sel = book::sel(), sgn = book::sgn();
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t w0 = t32_u32(w, 2 + 8 * ib), w1 = t32_u32(w, 6 + 8 * ib);
            const t32_act32 x = t32_act_of(act, ib);
            int sumi = 0;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t s = t32_rep_at<REP>(sel, iq_byte(w0, g)) | t32_rep_at<REP>(sgn, (w1 >> (7 * g)) & 0x7Fu);
                sumi = iq_sel_dot<IQ2_NEG>(pos, s, x.a[2 * g], x.a[2 * g + 1], sumi);
            }
            acc += x.d * (float)((2 * (int)(w1 >> 28) + 1) * sumi);
        }
        return 0.125f * h2f(t32_word(w, 0)) * acc;
    }
};
using t32_iq2_xxs = t32_iq2_xxs_t<>;

/* IQ2_XS: d at 0, 32 u16 (9-bit index | 7 sign bits) at 2, scales[8] at 66 */
template <int REP = 32>
struct t32_iq2_xs_t : t32_geo<74, 5, 0, false> {
    using book = t32_sel_book<512, 128, REP>;
    static constexpr int BOOK_BYTES = book::BYTES;
    static __device__ __forceinline__ void prepare() { book::fill(IQ2_POS, iq2xs_sel_dev.v, iq_sign7_sel_dev.v); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t pos = book::pos(), sel = book::sel(), sgn = book::sgn();
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t q2[2] = {t32_u32(w, 2 + 8 * ib), t32_u32(w, 6 + 8 * ib)};
            const t32_act32 x = t32_act_of(act, ib);
            int sum[2] = {0, 0};
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t q = (q2[g >> 1] >> (16 * (g & 1))) & 0xFFFFu;
                sum[g >> 1] = iq_sel_dot<IQ2_NEG>(pos, t32_rep_at<REP>(sel, q & 511u) | t32_rep_at<REP>(sgn, q >> 9),
                                                  x.a[2 * g], x.a[2 * g + 1], sum[g >> 1]);
            }
            const int sc = (int)((t32_u32(w, 66 + ib)) & 0xFFu);
            acc += x.d * (float)((2 * (sc & 15) + 1) * sum[0] + (2 * (sc >> 4) + 1) * sum[1]);
        }
        return 0.125f * h2f(t32_word(w, 0)) * acc;
    }
};
using t32_iq2_xs = t32_iq2_xs_t<>;

/* IQ2_S: d at 0, index low bytes at 2 + 4 ib, sign bytes at 34 + 4 ib, qh at
 * 66, scales at 74 */
template <int REP = 16>
struct t32_iq2_s_t : t32_geo<82, 5, 2, false> {
    using book = t32_sel_book<1024, 256, REP>;
    static constexpr int BOOK_BYTES = book::BYTES;
    static __device__ __forceinline__ void prepare() { book::fill(IQ2_POS, iq2s_sel_dev.v, iq_sign8_sel_dev.v); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t pos = book::pos(), sel = book::sel(), sgn = book::sgn();
        const uint32_t qh2[2] = {t32_u32(w, 66), t32_u32(w, 70)}, sc2[2] = {t32_u32(w, 74), t32_u32(w, 78)};
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t idx = t32_u32(w, 2 + 4 * ib), sg = t32_u32(w, 34 + 4 * ib);
            const uint32_t qh = (qh2[ib >> 2] >> (8 * (ib & 3))) & 0xFFu, sc = (sc2[ib >> 2] >> (8 * (ib & 3))) & 0xFFu;
            const t32_act32 x = t32_act_of(act, ib);
            int sum[2] = {0, 0};
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t i = iq_byte(idx, g) | ((qh >> (2 * g)) & 3u) << 8;
                sum[g >> 1] = iq_sel_dot<IQ2_NEG>(pos, t32_rep_at<REP>(sel, i) | t32_rep_at<REP>(sgn, iq_byte(sg, g)),
                                                  x.a[2 * g], x.a[2 * g + 1], sum[g >> 1]);
            }
            acc += x.d * (float)((2 * (int)(sc & 15u) + 1) * sum[0] + (2 * (int)(sc >> 4) + 1) * sum[1]);
        }
        return 0.125f * h2f(t32_word(w, 0)) * acc;
    }
};
using t32_iq2_s = t32_iq2_s_t<>;

/* one IQ3 group of 8: its two entries' magnitudes, its sign masks (.x for
 * lo, .y for hi) */
__device__ __forceinline__ int iq3_group_dot(uint32_t lo, uint32_t hi, uint2 m, int a0, int a1, int sum) {
    sum = __dp4a(iq_signed4(lo, m.x), a0, sum);
    return __dp4a(iq_signed4(hi, m.y), a1, sum);
}

/* IQ3_XXS: d at 0, 8 index bytes a sub-block at 2 + 8 ib, its sign/scale
 * word at 66 + 4 ib. Its 8 magnitudes (4..62) leave no room in a prmt pair
 * for the signs, so the entries stay bytes (REP 32 copies) and the signs
 * come as byte masks from a table of their own (iq_sign7_mask_dev, 16 copies
 * of 8-byte entries) instead of 10 instructions of arithmetic. */
template <int REP = 32>
struct t32_iq3_xxs_t : t32_geo<98, 6, 2, false> {
    static constexpr int RS = 16, BOOK_BYTES = 256 * REP * 4 + 128 * RS * 8;
    static __device__ __forceinline__ void prepare() {
        t32_rep_fill<256, REP>(t32_book_words(), (const uint32_t *)iq3xxs_grid_dev.v);
        t32_rep_fill2<128, RS>(t32_book_words() + 256 * REP, iq_sign7_mask_dev.v);
        __syncthreads();
    }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t grid = t32_rep_lane<REP>(0), sgn = t32_rep_lane<RS, 2>(256 * REP);
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t idx[2] = {t32_u32(w, 2 + 8 * ib), t32_u32(w, 6 + 8 * ib)}, aux = t32_u32(w, 66 + 4 * ib);
            const t32_act32 x = t32_act_of(act, ib);
            int sumi = 0;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t lo = t32_rep_at<REP>(grid, iq_byte(idx[g >> 1], 2 * (g & 1)));
                const uint32_t hi = t32_rep_at<REP>(grid, iq_byte(idx[g >> 1], 2 * (g & 1) + 1));
                const uint2 m = t32_rep_at2<RS>(sgn, (aux >> (7 * g)) & 0x7Fu);
                sumi = iq3_group_dot(lo, hi, m, x.a[2 * g], x.a[2 * g + 1], sumi);
            }
            acc += x.d * (float)((2 * (int)(aux >> 28) + 1) * sumi);
        }
        return 0.25f * h2f(t32_word(w, 0)) * acc;
    }
};
using t32_iq3_xxs = t32_iq3_xxs_t<>;

/* IQ3_S: d at 0, index low bytes at 2 + 8 ib, qh at 66, signs at 74 + 4 ib,
 * scale nibbles at 106. As IQ3_XXS: entries as bytes (REP copies), the
 * stored sign bytes' masks from a table (16 copies of 256 8-byte entries). */
template <int REP = 16>
struct t32_iq3_s_t : t32_geo<110, 7, 0, false> {
    static constexpr int RS = 16, BOOK_BYTES = 512 * REP * 4 + 256 * RS * 8;
    static __device__ __forceinline__ void prepare() {
        t32_rep_fill<512, REP>(t32_book_words(), (const uint32_t *)iq3s_grid_dev.v);
        t32_rep_fill2<256, RS>(t32_book_words() + 512 * REP, iq_sign8_mask_dev.v);
        __syncthreads();
    }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t grid = t32_rep_lane<REP>(0), sgn = t32_rep_lane<RS, 2>(512 * REP);
        const uint32_t qh2[2] = {t32_u32(w, 66), t32_u32(w, 70)}, scw = t32_u32(w, 106);
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t idx[2] = {t32_u32(w, 2 + 8 * ib), t32_u32(w, 6 + 8 * ib)}, sg = t32_u32(w, 74 + 4 * ib);
            const uint32_t qh = (qh2[ib >> 2] >> (8 * (ib & 3))) & 0xFFu;
            const int ls = 2 * (int)((scw >> (4 * ib)) & 15u) + 1;
            const t32_act32 x = t32_act_of(act, ib);
            int sumi = 0;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t lo = t32_rep_at<REP>(grid, iq_byte(idx[g >> 1], 2 * (g & 1)) | ((qh >> (2 * g)) & 1u) << 8);
                const uint32_t hi =
                    t32_rep_at<REP>(grid, iq_byte(idx[g >> 1], 2 * (g & 1) + 1) | ((qh >> (2 * g + 1)) & 1u) << 8);
                sumi = iq3_group_dot(lo, hi, t32_rep_at2<RS>(sgn, iq_byte(sg, g)), x.a[2 * g], x.a[2 * g + 1], sumi);
            }
            acc += x.d * (float)(ls * sumi);
        }
        return h2f(t32_word(w, 0)) * acc;
    }
};
using t32_iq3_s = t32_iq3_s_t<>;

/* IQ1_S: d at 0, index low bytes at 2 + 4 ib, a u16 at 34 + 2 ib (high index
 * bits, scale code, shift sign). A group's integer is sum (8 v + delta) a,
 * delta = -1 where the sub-block's shift sign is set: the pair's negative
 * half, selected for all 8 weights at once (0x44444444). */
template <int REP = 4>
struct t32_iq1_s_t : t32_geo<50, 3, 2, false> {
    using book = t32_sel_book<2048, 0, REP>;
    static constexpr int BOOK_BYTES = book::BYTES;
    static __device__ __forceinline__ void prepare() { book::fill(IQ1_POS, iq1s_sel_dev.v, nullptr); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t pos = book::pos(), sel = book::sel();
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t qs = t32_u32(w, 2 + 4 * ib), h = t32_u32(w, 34 + 2 * ib) & 0xFFFFu;
            const uint32_t neg = (h & 0x8000u) ? 0x44444444u : 0u;
            const t32_act32 x = t32_act_of(act, ib);
            int isum = 0;
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t i = iq_byte(qs, g) | ((h >> (3 * g)) & 7u) << 8;
                isum = iq_sel_dot<IQ1_NEG>(pos, t32_rep_at<REP>(sel, i) | neg, x.a[2 * g], x.a[2 * g + 1], isum);
            }
            acc += x.d * (float)((2 * (int)((h >> 12) & 7u) + 1) * isum);
        }
        return 0.125f * h2f(t32_word(w, 0)) * acc;
    }
};
using t32_iq1_s = t32_iq1_s_t<>;

/* IQ1_M: index low bytes at 4 ib, a u16 of group nibbles at 32 + 2 ib (index
 * bits 8-10, the group's shift sign), the scale words (with d's nibbles) at
 * 48 and 52: the side bytes */
template <int REP = 8>
struct t32_iq1_m_t : t32_geo<56, 3, 8, false> {
    using book = t32_sel_book<2048, 0, REP>;
    static constexpr int BOOK_BYTES = book::BYTES;
    static __device__ __forceinline__ void prepare() { book::fill(IQ1_POS, iq1s_sel_dev.v, nullptr); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t pos = book::pos(), sel = book::sel();
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
                const uint32_t s = t32_rep_at<REP>(sel, iq_byte(qs, g) | (hn & 7u) << 8) | ((hn & 8u) ? 0x44444444u : 0u);
                part[g >> 1] = iq_sel_dot<IQ1_NEG>(pos, s, x.a[2 * g], x.a[2 * g + 1], part[g >> 1]);
            }
            acc += x.d * (float)((2 * (int)(word & 7u) + 1) * part[0] + (2 * (int)((word >> 3) & 7u) + 1) * part[1]);
        }
        return 0.125f * h2f(dbits) * acc;
    }
};
using t32_iq1_m = t32_iq1_m_t<>;

/* The ternary formats take the stored t + 1 and subtract the activation's
 * sum of 32, from the 16-element sums in shared memory (SUMS16). */
__device__ __forceinline__ int t32_sum32(const uint8_t *act, int ib) {
    const int2 s = *(const int2 *)(act + 320 + 8 * ib);
    return s.x + s.y;
}

/* TQ2_0: qs[64] (words 0-15) as Q2_K's layout, d the side */
struct t32_tq2_0 : t32_geo<66, 4, 2, true> {
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const int hh = ib >> 2, k = ib & 3;
            const t32_act32 x = t32_act_of(act, ib);
            int sumi = -t32_sum32(act, ib);
#pragma unroll
            for (int i = 0; i < 8; i++) sumi = __dp4a((int)((t32_word(w, 8 * hh + i) >> (2 * k)) & 0x03030303u), x.a[i], sumi);
            acc += x.d * (float)sumi;
        }
        return h2f(t32_word(w, 16)) * acc;
    }
};

#endif
