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
 * 4 + 2; IQ2_XS's 74 and IQ3_S's 110 are padded to 5 and 7 chunks, TQ1_0's
 * 54 to 3 chunks and 8 side bytes. */
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

/* IQ2_XXS: d at 0; sub-block ib's index word at 2 + 8 ib, its sign/scale word at 6 + 8 ib */
struct t32_iq2_xxs : t32_geo<66, 4, 2, false> {
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
struct t32_iq2_xs : t32_geo<74, 5, 0, false> {
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
struct t32_iq2_s : t32_geo<82, 5, 2, false> {
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
struct t32_iq3_xxs : t32_geo<98, 6, 2, false> {
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
struct t32_iq3_s : t32_geo<110, 7, 0, false> {
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
struct t32_iq1_s : t32_geo<50, 3, 2, false> {
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
struct t32_iq1_m : t32_geo<56, 3, 8, false> {
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

/* TQ1_0: qs[48] (words 0-11), qh[4] (word 12), d (word 13): the element
 * order of fmt_tq1_0 */
struct t32_tq1_0 : t32_geo<54, 3, 8, true> {
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        constexpr uint32_t P3[5] = {1, 3, 9, 27, 81};
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < 5; k++) { /* activation blocks 0..4: qs[0..31], trit k */
            const t32_act32 x = t32_act_of(act, k);
            int sumi = -t32_sum32(act, k);
#pragma unroll
            for (int i = 0; i < 8; i++) sumi = __dp4a(tq1_trits4(t32_word(w, i), P3[k]), x.a[i], sumi);
            acc += x.d * (float)sumi;
        }
#pragma unroll
        for (int blk = 5; blk < 8; blk++) { /* qs[32..47] trits 2(blk - 5), +1; block 7 then qh */
            const t32_act32 x = t32_act_of(act, blk);
            const int k0 = 2 * (blk - 5);
            int sumi = -t32_sum32(act, blk);
#pragma unroll
            for (int i = 0; i < 4; i++) sumi = __dp4a(tq1_trits4(t32_word(w, 8 + i), P3[k0]), x.a[i], sumi);
            if (blk < 7) {
#pragma unroll
                for (int i = 0; i < 4; i++) sumi = __dp4a(tq1_trits4(t32_word(w, 8 + i), P3[k0 + 1]), x.a[4 + i], sumi);
            } else {
#pragma unroll
                for (int k = 0; k < 4; k++) sumi = __dp4a(tq1_trits4(t32_word(w, 12), P3[k]), x.a[4 + k], sumi);
            }
            acc += x.d * (float)sumi;
        }
        return h2f(t32_word(w, 13)) * acc;
    }
};

#endif
