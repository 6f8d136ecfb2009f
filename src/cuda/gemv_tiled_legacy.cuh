/* The tiled GEMV (gemv_tiled.cuh) for the legacy formats beside Q4_0: Q4_1,
 * Q5_0, Q5_1 and IQ4_NL, in Q4_0's unit of 8 file blocks (t32_legacy_chunk:
 * 8 quant chunks, then the 8 headers as more chunks). The numbers are those
 * of the item kernels (gemv_formats.cuh fmt_q4_1 ...): integer dots per 32
 * elements, the scale d and the minimum m (with the activation's s = d_a *
 * sum of its quants) in fp32. */
#ifndef NIB_CUDA_GEMV_TILED_LEGACY_CUH
#define NIB_CUDA_GEMV_TILED_LEGACY_CUH

#include "cuda/gemv_tiled.cuh"

/* the unit of 8 blocks of FB bytes (header H = FB - 16): 8 chunks of quants,
 * then the 8 headers as whole chunks (FB / 2 chunks in all), or, when they
 * are 8 bytes (MXFP4's exponent), as the side bytes */
template <int FB>
struct t32_legacy_geo {
    static constexpr int H = FB - 16;
    static constexpr int QK = 256, BYTES = 8 * FB, CH = 8 + 8 * H / 16, SIDE = 8 * H % 16, TILE = CH * 512 + 32 * SIDE,
                         ACT = 336;
    static_assert(SIDE == 0 || SIDE == 8, "the headers are whole chunks or 8 side bytes");
    static constexpr bool SUMS16 = false;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return t32_legacy_chunk<FB, 1>(b, c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *b) {
        uint32_t w[2] = {0, 0};
        if (SIDE)
#pragma unroll
            for (int k = 0; k < 8; k++) w[k >> 2] |= (uint32_t)b[FB * (k / H) + k % H] << (8 * (k & 3));
        return make_uint2(w[0], w[1]);
    }
};

/* block j's 16 quant bytes and its 32 fifth bits qh (bit k: element k)
 * against its 32 activations: the dot of the 5-bit codes (Q5_0, Q5_1) */
__device__ __forceinline__ int t32_q5_sumi(const uint4 &q4, uint32_t qh, const uint8_t *a32) {
    const uint32_t q[4] = {q4.x, q4.y, q4.z, q4.w};
    const int4 a0 = *(const int4 *)a32, a1 = *(const int4 *)(a32 + 16);
    const int al[4] = {a0.x, a0.y, a0.z, a0.w}, ah[4] = {a1.x, a1.y, a1.z, a1.w};
    int sumi = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        sumi = __dp4a((int)((q[k] & 0x0F0F0F0Fu) | spread4(qh >> (4 * k))), al[k], sumi);
        sumi = __dp4a((int)(((q[k] >> 4) & 0x0F0F0F0Fu) | spread4(qh >> (16 + 4 * k))), ah[k], sumi);
    }
    return sumi;
}

/* Q4_1, 20 bytes: (d, m) then 16 quant bytes; x = d q + m */
struct t32_q4_1 : t32_legacy_geo<20> {
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int lo, hi;
            t32_nibble_dots(w.c[j], act + 32 * j, lo, hi);
            const uint32_t dm = t32_word(w, 32 + j);
            const float2 sd = *(const float2 *)(act + 256 + 8 * j);
            acc += h2f(dm) * (sd.x * (float)(lo + (hi >> 4))) + h2f(dm >> 16) * sd.y;
        }
        return acc;
    }
};

/* Q5_0, 22 bytes: d, qh (bit k: the fifth bit of element k), 16 quant
 * bytes; x = d (q - 16). Headers at byte 128 + 6 j of the unit. */
struct t32_q5_0 : t32_legacy_geo<22> {
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const uint32_t d = t32_u32(w, 128 + 6 * j), qh = t32_u32(w, 130 + 6 * j);
            const int sumi = t32_q5_sumi(w.c[j], qh, act + 32 * j);
            const float2 sd = *(const float2 *)(act + 256 + 8 * j);
            acc += h2f(d) * (sd.x * (float)sumi - 16.0f * sd.y);
        }
        return acc;
    }
};

/* Q5_1, 24 bytes: d, m, qh, 16 quant bytes; x = d q + m. Headers: words
 * 32 + 2 j (d, m) and 33 + 2 j (qh). */
struct t32_q5_1 : t32_legacy_geo<24> {
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const uint32_t dm = t32_word(w, 32 + 2 * j), qh = t32_word(w, 33 + 2 * j);
            const int sumi = t32_q5_sumi(w.c[j], qh, act + 32 * j);
            const float2 sd = *(const float2 *)(act + 256 + 8 * j);
            acc += h2f(dm) * (sd.x * (float)sumi) + h2f(dm >> 16) * sd.y;
        }
        return acc;
    }
};

/* IQ4_NL, 18 bytes (Q4_0's geometry): d, 16 bytes of 4-bit codes into the
 * 16 IQ4 levels (iq4_word_dot, gemv_tiled.cuh) */
struct t32_iq4_nl : t32_legacy_geo<18> {
    static constexpr bool PERM = true; /* the activation copy in iq4_word_dot's order */
    static constexpr int BOOK_BYTES = LEVELS_HEAD;
    static __device__ __forceinline__ void prepare() { levels_head_prepare(IQ4_T0, IQ4_T2P); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t t0 = t32_head_reg(0), t2 = t32_head_reg(1);
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const uint32_t q[4] = {w.c[j].x, w.c[j].y, w.c[j].z, w.c[j].w};
            const int sumi = iq4_sub_dot(q, act + 32 * j, t0, t2);
            acc += t32_d8(w.c[8], j) * (*(const float *)(act + 256 + 8 * j) * (float)sumi);
        }
        return acc;
    }
};

/* MXFP4, 17 bytes: the exponent e (the side byte j of block j), 16 bytes of
 * E2M1 codes (fmt_mxfp4, gemv_formats.cuh: levels one lower by two picks,
 * the activation's s added back) */
struct t32_mxfp4 : t32_legacy_geo<17> {
    static constexpr bool PERM = true; /* the activation copy in levels_word_dot's order */
    static constexpr int BOOK_BYTES = LEVELS_HEAD;
    static __device__ __forceinline__ void prepare() { levels_head_prepare(MXFP4_A0, MXFP4_B0); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t t0 = t32_head_reg(0), t2 = t32_head_reg(1);
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const uint32_t q[4] = {w.c[j].x, w.c[j].y, w.c[j].z, w.c[j].w};
            const int sumi = levels_sub_dot<MXFP4_A1, MXFP4_B1>(q, act + 32 * j, t0, t2);
            const float2 sd = *(const float2 *)(act + 256 + 8 * j);
            acc += e8m0_half((w.s[j >> 2] >> (8 * (j & 3))) & 0xFFu) * (sd.x * (float)sumi + sd.y);
        }
        return acc;
    }
};

#endif
