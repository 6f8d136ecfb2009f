/* Device dequantization (get_rows): the per-format block decoders, the host
 * launcher and the op entry nib_cuda_get_rows (cuda_dequant.h).
 *
 * Three layers (STYLE.md, CUDA): nib_cuda_get_rows validates -> the row's
 * launcher picks the grid on the caller's stream -> get_rows<D>, the one
 * kernel, templated on the format's decoder D. The table at the bottom is
 * the one place that says which formats have a decoder.
 *
 * Shape of the work. A row is cut into "pieces" of PE elements: 32 for every
 * block format (one legacy block, or one 32-element sub-block of a 256-element
 * super-block), 1 for the plain float formats. Thread i of the grid's x
 * dimension decodes piece i of a row into registers and stores it (8 float4
 * stores for a 32-piece); the y dimension walks the tokens. The work is
 * small (one embedding row per token is a few KB of weights and 8-32 KB of
 * floats), so the decoders are written for agreement with the reference,
 * byte loads and all, not for speed: an H200 writes a 4096-wide f32 row in
 * well under a microsecond either way.
 *
 * Exactness. Each decoder is a transcription of its scalar reference in
 * src/quant/ (the comment above each names it): the same fp32 operations in
 * the same order. nvcc fuses a*b+c into one FMA by default (one rounding
 * instead of the reference's two), so every such expression is spelled with
 * __fmul_rn / __fadd_rn / __fsub_rn, which are never fused. Products like
 * d * (float)q are exact-order-independent (one rounding, commutative), so
 * they match however the reference writes them. fp16 is decoded from its
 * bits as core/fp16.h does (a NaN keeps its payload), and denormals are kept
 * (the build never passes -ftz or --use_fast_math).
 */
#include <cuda_fp16.h>
#include <stdio.h>

#include <atomic>

#include "cuda/cuda_dequant.h"
#include "cuda/cuda_internal.h"
#include "cuda/gpu_layout.h"
#include "cuda/iq_grids_dev.cuh"
#include "cuda/pdl.cuh"
#include "quant/blocks.h"

#define GET_ROWS_THREADS 128 /* threads per block: 4 warps, 128 pieces of a row */
#define GET_ROWS_MAX_GRID_Y 65535 /* CUDA's limit on gridDim.y; more tokens loop */

/* ---- small device helpers -------------------------------------------------------- */

__device__ __forceinline__ uint32_t ldb(const uint8_t *p) { return __ldg(p); }
/* little-endian fields at any alignment (blocks are 17, 18, 22... bytes) */
__device__ __forceinline__ uint32_t ld16(const uint8_t *p) { return ldb(p) | ldb(p + 1) << 8; }
__device__ __forceinline__ uint32_t ld32(const uint8_t *p) { return ld16(p) | ld16(p + 2) << 16; }

/* A block of a tiled matrix (gemv_tiled.cuh), staged in shared memory by
 * t32_copy (below): its chunks and then its side bytes, back to back, which
 * is the device block's own byte order (zero-padded where the tiled form
 * pads: Q3_K's 110 bytes to 7 chunks). So byte off is just s[off]; the
 * decoders that serve tiled matrices (the formats with CH, SIDE and UNIT 1)
 * take it where they take a block pointer. */
struct t32_ptr {
    const uint8_t *s; /* shared memory */
    __device__ t32_ptr operator+(int k) const { return {s + k}; }
};
__device__ __forceinline__ uint32_t ldb(t32_ptr p) { return *p.s; }
__device__ __forceinline__ uint32_t ld16(t32_ptr p) { return ldb(p) | ldb(p + 1) << 8; }
__device__ __forceinline__ uint32_t ld32(t32_ptr p) { return ld16(p) | ld16(p + 2) << 16; }
/* A legacy format's 32-element block j of 8 in a tiled block staged the
 * same way (gemv_tiled.cuh t32_legacy_chunk): its header (file bytes
 * 0..h-1: d; d, m; d, qh...) at byte h j of the header chunks, which follow
 * the 8 CQ chunks of quants; its quant byte k (file byte h + k) in chunk
 * CQ j + k / 16 at k % 16 (CQ chunks of quants a block: 1 but for Q8_0). */
struct t32_lptr {
    const uint8_t *s; /* shared memory */
    int j, cq, h, off;
    __device__ t32_lptr operator+(int k) const { return {s, j, cq, h, off + k}; }
};
__device__ __forceinline__ uint32_t ldb(t32_lptr p) {
    const int pos = p.h * p.j + p.off; /* in the headers */
    const int c = p.off < p.h ? 8 * p.cq + pos / 16 : p.cq * p.j + (p.off - p.h) / 16;
    const int o = p.off < p.h ? pos % 16 : (p.off - p.h) % 16;
    return p.s[16 * c + o];
}
__device__ __forceinline__ uint32_t ld16(t32_lptr p) { return ldb(p) | ldb(p + 1) << 8; }
__device__ __forceinline__ uint32_t ld32(t32_lptr p) { return ld16(p) | ld16(p + 2) << 16; }

/* core/fp16.h nib_fp16_to_f32, bit for bit (subnormals are man * 2^-24, exact). */
__device__ __forceinline__ float dq_half(uint32_t h) {
    const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1F) return __uint_as_float(sign | 0x7F800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return __uint_as_float(sign);
        const float f = __fmul_rn((float)man, 1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    return __uint_as_float(sign | ((exp + 112u) << 23) | (man << 13));
}

/* ---- decoders -------------------------------------------------------------------------
 * Each format: QK elements and BYTES bytes per block, PE elements per piece
 * (QK / PE pieces per block), and
 *     dec(blk, part, v)   piece `part` of the block at blk into v[0..PE-1]
 * Offsets are those of the structs in quant/blocks.h. */

/* quant/q_float.c */
struct dq_f32 {
    static constexpr int QK = 1, BYTES = 4, PE = 1;
    static __device__ __forceinline__ void dec(const uint8_t *b, int, float (&v)[PE]) {
        v[0] = __ldg((const float *)b); /* rows are 4-byte aligned: row_bytes = 4 n_in */
    }
};
struct dq_f16 {
    static constexpr int QK = 1, BYTES = 2, PE = 1;
    static __device__ __forceinline__ void dec(const uint8_t *b, int, float (&v)[PE]) {
        v[0] = dq_half(__ldg((const unsigned short *)b));
    }
};
struct dq_bf16 {
    static constexpr int QK = 1, BYTES = 2, PE = 1;
    static __device__ __forceinline__ void dec(const uint8_t *b, int, float (&v)[PE]) {
        v[0] = __uint_as_float((uint32_t)__ldg((const unsigned short *)b) << 16);
    }
};

/* quant/q_legacy.c: byte j of qs is element j (low nibble) and j + 16 (high);
 * scale_levels: (float)q * d; scale_levels_offset: (float)q * d + m. */
struct dq_q4_0 {
    static constexpr int QK = 32, BYTES = 18, PE = 32, UNIT = 8, CQ = 1; /* UNIT, CQ: its tiled form (t32_lptr) */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int, float (&v)[PE]) {
        const float d = dq_half(ld16(b));
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const int q = (int)ldb(b + 2 + j);
            v[j] = __fmul_rn((float)((q & 0xF) - 8), d);
            v[j + 16] = __fmul_rn((float)((q >> 4) - 8), d);
        }
    }
};
struct dq_q4_1 {
    static constexpr int QK = 32, BYTES = 20, PE = 32, UNIT = 8, CQ = 1; /* its tiled form: t32_lptr */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int, float (&v)[PE]) {
        const float d = dq_half(ld16(b)), m = dq_half(ld16(b + 2));
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const int q = (int)ldb(b + 4 + j);
            v[j] = __fadd_rn(__fmul_rn((float)(q & 0xF), d), m);
            v[j + 16] = __fadd_rn(__fmul_rn((float)(q >> 4), d), m);
        }
    }
};
/* qh: bit j is bit 4 of element j */
struct dq_q5_0 {
    static constexpr int QK = 32, BYTES = 22, PE = 32, UNIT = 8, CQ = 1; /* its tiled form: t32_lptr */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int, float (&v)[PE]) {
        const float d = dq_half(ld16(b));
        const uint32_t h = ld32(b + 2);
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const int q = (int)ldb(b + 6 + j);
            v[j] = __fmul_rn((float)(((q & 0xF) | (int)((h >> j) & 1u) << 4) - 16), d);
            v[j + 16] = __fmul_rn((float)(((q >> 4) | (int)((h >> (j + 16)) & 1u) << 4) - 16), d);
        }
    }
};
struct dq_q5_1 {
    static constexpr int QK = 32, BYTES = 24, PE = 32, UNIT = 8, CQ = 1; /* its tiled form: t32_lptr */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int, float (&v)[PE]) {
        const float d = dq_half(ld16(b)), m = dq_half(ld16(b + 2));
        const uint32_t h = ld32(b + 4);
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const int q = (int)ldb(b + 8 + j);
            v[j] = __fadd_rn(__fmul_rn((float)((q & 0xF) | (int)((h >> j) & 1u) << 4), d), m);
            v[j + 16] = __fadd_rn(__fmul_rn((float)((q >> 4) | (int)((h >> (j + 16)) & 1u) << 4), d), m);
        }
    }
};
struct dq_q8_0 {
    static constexpr int QK = 32, BYTES = 34, PE = 32;
    static __device__ __forceinline__ void dec(const uint8_t *b, int, float (&v)[PE]) {
        const float d = dq_half(ld16(b));
#pragma unroll
        for (int j = 0; j < 32; j++) v[j] = __fmul_rn((float)(int8_t)ldb(b + 2 + j), d);
    }
};

/* quant/q_mxfp4.c: doubled E2M1 values times 2^(e - 128), Q4_0's nibble order. */
__device__ __forceinline__ int mxfp4_value(int code) {
    /* kvalues_mxfp4 without a table: magnitudes 0,1,2,3,4,6,8,12 then negated */
    const int m = code & 7, mag = m < 4 ? m : (m < 6 ? 4 + 2 * (m - 4) : 8 + 4 * (m - 6));
    return code & 8 ? -mag : mag;
}
struct dq_mxfp4 {
    static constexpr int QK = 32, BYTES = 17, PE = 32, UNIT = 8, CQ = 1; /* its tiled form: t32_lptr, e as side bytes */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int, float (&v)[PE]) {
        const uint32_t e = ldb(b);
        const float d = __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const int q = (int)ldb(b + 1 + j);
            v[j] = __fmul_rn((float)mxfp4_value(q & 0xF), d);
            v[j + 16] = __fmul_rn((float)mxfp4_value(q >> 4), d);
        }
    }
};

/* quant/q_k.c. Piece p = elements 32p..32p+31 of the super-block. */

/* Q2_K, 84 bytes: scales[16] at 0, qs[64] at 16, d at 80, dmin at 82. Element
 * 32p + m is (qs[32(p/4) + m] >> 2(p%4)) & 3 (qk_unpack_2bit); y = dl*q - ml. */
struct dq_q2_K {
    static constexpr int QK = 256, BYTES = 84, PE = 32, CH = 5, SIDE = 4, UNIT = 1; /* CH, SIDE: t32_q2_K */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const float d = dq_half(ld16(b + 80)), dmin = dq_half(ld16(b + 82));
        const int shift = 2 * (p % 4);
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const uint32_t sc = ldb(b + 2 * p + half);
            const float dl = __fmul_rn(d, (float)(sc & 0xF)), ml = __fmul_rn(dmin, (float)(sc >> 4));
#pragma unroll
            for (int l = 0; l < 16; l++) {
                const int m = 16 * half + l;
                const int q = (int)(ldb(b + 16 + 32 * (p / 4) + m) >> shift) & 3;
                v[m] = __fsub_rn(__fmul_rn(dl, (float)q), ml);
            }
        }
    }
};

/* Q3_K, 110 bytes: hmask[32] at 0, qs[64] at 32, scales[12] at 96, d at 108.
 * qk_decode_q3_K: low 2 bits as Q2_K, high bit (hmask[m] >> p) & 1, value
 * low - (high ? 0 : 4); qk_unpack_q3_scales for sub-block j = e/16. */
struct dq_q3_K {
    static constexpr int QK = 256, BYTES = 110, PE = 32, CH = 7, SIDE = 0, UNIT = 1; /* t32_q3_K: padded to 7 chunks */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const float d = dq_half(ld16(b + 108));
        const P s = b + 96;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int j = 2 * p + half;
            const int lo = j < 8 ? (int)(ldb(s + j) & 0xF) : (int)(ldb(s + (j - 8)) >> 4);
            const int hi = (int)(ldb(s + 8 + j % 4) >> (2 * (j / 4))) & 3;
            const float dl = __fmul_rn(d, (float)((lo | hi << 4) - 32));
#pragma unroll
            for (int l = 0; l < 16; l++) {
                const int m = 16 * half + l;
                const int low = (int)(ldb(b + 32 + 32 * (p / 4) + m) >> (2 * (p % 4))) & 3;
                const int high = (int)(ldb(b + m) >> p) & 1;
                v[m] = __fmul_rn(dl, (float)(low - (high ? 0 : 4)));
            }
        }
    }
};

/* Q4_K/Q5_K scale and minimum of 32-element sub-block j (qk_unpack_scale_min) */
template <class P>
__device__ __forceinline__ void dq_scale_min_k4(int j, P s, int &sc, int &m) {
    if (j < 4) {
        sc = (int)ldb(s + j) & 63;
        m = (int)ldb(s + j + 4) & 63;
    } else {
        sc = (int)(ldb(s + j + 4) & 0xF) | (int)(ldb(s + (j - 4)) >> 6) << 4;
        m = (int)(ldb(s + j + 4) >> 4) | (int)(ldb(s + j) >> 6) << 4;
    }
}

/* Q4_K, 144 bytes: d, dmin, scales[12] at 4, qs[128] at 16. Element 32p + m:
 * nibble p%2 of qs[32(p/2) + m] (qk_unpack_nibbles); qk_dequantize_affine32:
 * d1 = d*sc, m1 = dmin*m, y = d1*q - m1. Q5_K adds qh[32] at 16 (qs at 48):
 * bit p of qh[m] is the fifth bit (qk_decode_q5_K). */
template <bool Q5>
struct dq_qk_affine {
    static constexpr int QK = 256, BYTES = Q5 ? 176 : 144, PE = 32, CH = Q5 ? 11 : 9, SIDE = 0, UNIT = 1;
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const float d = dq_half(ld16(b)), dmin = dq_half(ld16(b + 2));
        int sc, mn;
        dq_scale_min_k4(p, b + 4, sc, mn);
        const float d1 = __fmul_rn(d, (float)sc), m1 = __fmul_rn(dmin, (float)mn);
        const P qs = b + (Q5 ? 48 : 16) + 32 * (p / 2);
#pragma unroll
        for (int m = 0; m < 32; m++) {
            int q = (int)(ldb(qs + m) >> (4 * (p % 2))) & 0xF;
            if (Q5) q |= (int)((ldb(b + 16 + m) >> p) & 1u) << 4;
            v[m] = __fsub_rn(__fmul_rn(d1, (float)q), m1);
        }
    }
};
typedef dq_qk_affine<false> dq_q4_K;
typedef dq_qk_affine<true> dq_q5_K;

/* Q6_K, 210 bytes: ql[128] at 0, qh[64] at 128, scales[16] (int8) at 192, d at
 * 208. qk_decode_q6_K with h = p/4, k = p%4: low nibble k/2 of
 * ql[64h + 32(k%2) + m], high bits 2k.. of qh[32h + m]; value - 32. */
struct dq_q6_K { /* blocks in the device's 224-byte slots (gpu_layout.h) */
    static constexpr int QK = 256, BYTES = NIB_CUDA_Q6_K_SLOT, PE = 32, CH = 13, SIDE = 2, UNIT = 1;
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const float d = dq_half(ld16(b + 208));
        const int h = p / 4, k = p % 4;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const float dl = __fmul_rn(d, (float)(int8_t)ldb(b + 192 + 2 * p + half));
#pragma unroll
            for (int l = 0; l < 16; l++) {
                const int m = 16 * half + l;
                const int low = (int)(ldb(b + 64 * h + 32 * (k % 2) + m) >> (4 * (k / 2))) & 0xF;
                const int high = (int)(ldb(b + 128 + 32 * h + m) >> (2 * k)) & 3;
                v[m] = __fmul_rn(dl, (float)((low | high << 4) - 32));
            }
        }
    }
};

/* quant/q_iq.c: IQ4_NL and IQ4_XS, y = d * kvalues_iq4nl[q] (iq4_put32). */
__host__ __device__ constexpr uint32_t dq_pack4(int a, int b, int c, int d) {
    return (uint32_t)(uint8_t)a | (uint32_t)(uint8_t)b << 8 | (uint32_t)(uint8_t)c << 16 | (uint32_t)(uint8_t)d << 24;
}
/* the 16 levels packed in 4 words, picked by selects (an indexed local array
 * would live in local memory) */
__device__ __forceinline__ int iq4_value(int q) {
    const uint32_t w = q < 8 ? (q < 4 ? dq_pack4(-127, -104, -83, -65) : dq_pack4(-49, -35, -22, -10))
                             : (q < 12 ? dq_pack4(1, 13, 25, 38) : dq_pack4(53, 69, 89, 113));
    return (int)(int8_t)(w >> (8 * (q & 3)));
}
struct dq_iq4_nl {
    static constexpr int QK = 32, BYTES = 18, PE = 32, UNIT = 8, CQ = 1; /* its tiled form: t32_lptr */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int, float (&v)[PE]) {
        const float d = dq_half(ld16(b));
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const int q = (int)ldb(b + 2 + j);
            v[j] = __fmul_rn(d, (float)iq4_value(q & 0xF));
            v[j + 16] = __fmul_rn(d, (float)iq4_value(q >> 4));
        }
    }
};
/* IQ4_XS, 136 bytes: d, scales_h at 2, scales_l[4] at 4, qs[128] at 8;
 * iq4_xs_scale: nibble p of scales_l | bits 2p.. of scales_h << 4, minus 32. */
struct dq_iq4_xs {
    static constexpr int QK = 256, BYTES = 136, PE = 32, CH = 8, SIDE = 8, UNIT = 1; /* CH, SIDE: t32_iq4_xs */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const int lo = (int)(ldb(b + 4 + p / 2) >> (4 * (p % 2))) & 0xF;
        const int hi = (int)(ld16(b + 2) >> (2 * p)) & 3;
        const float dl = __fmul_rn(dq_half(ld16(b)), (float)((lo | hi << 4) - 32));
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const int q = (int)ldb(b + 8 + 16 * p + j);
            v[j] = __fmul_rn(dl, (float)iq4_value(q & 0xF));
            v[j + 16] = __fmul_rn(dl, (float)iq4_value(q >> 4));
        }
    }
};

/* quant/q_ternary.c: y = (float)t * d with t in -1..1. */

/* TQ2_0, 66 bytes: qs[64] at 0, d at 64. Element 128h + 32l + m is bits 2l..
 * of qs[32h + m], minus 1. */
struct dq_tq2_0 {
    static constexpr int QK = 256, BYTES = 66, PE = 32, CH = 4, SIDE = 2, UNIT = 1; /* CH, SIDE: its tiled form */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const float d = dq_half(ld16(b + 64));
#pragma unroll
        for (int m = 0; m < 32; m++) {
            const int t = (int)((ldb(b + 32 * (p / 4) + m) >> (2 * (p % 4))) & 3u) - 1;
            v[m] = __fmul_rn((float)t, d);
        }
    }
};

/* quant/q_iq.c lattice formats. Piece p = sub-block ib = p, 4 groups of 8.
 * grid_dequantize: db = d * (2s+1) * step (left to right), then
 * y = db * magnitude, negated where the sign bit is set. */

/* even_signs: 7 stored sign bits plus the one that makes the count even */
__device__ __forceinline__ uint32_t dq_even_signs(uint32_t bits7) {
    const uint32_t s = bits7 & 0x7Fu;
    return s | (uint32_t)(__popc(s) & 1) << 7;
}

/* One group of 8: magnitudes in the 8 bytes of (lo, hi), signs in neg. */
__device__ __forceinline__ void dq_group(float *y, float db, uint32_t lo, uint32_t hi, uint32_t neg) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const float val = __fmul_rn(db, (float)((j < 4 ? lo >> (8 * j) : hi >> (8 * (j - 4))) & 0xFFu));
        y[j] = (neg >> j) & 1u ? -val : val;
    }
}
__device__ __forceinline__ float dq_db(float d, uint32_t ls, float step) {
    return __fmul_rn(__fmul_rn(d, (float)ls), step);
}

/* IQ2_XXS, 66 bytes: d, qs at 2: per sub-block 4 grid indices then a word of
 * 4 x 7 sign bits and the scale code in bits 28..31 (unpack_iq2_xxs). */
struct dq_iq2_xxs {
    static constexpr int QK = 256, BYTES = 66, PE = 32, CH = 4, SIDE = 2, UNIT = 1; /* CH, SIDE: its tiled form */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const P q = b + 2 + 8 * p;
        const uint32_t aux = ld32(q + 4);
        const float db = dq_db(dq_half(ld16(b)), 2 * (aux >> 28) + 1, 0.125f);
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint2 pt = iq_point8(iq2xxs_grid_dev, ldb(q + g));
            dq_group(v + 8 * g, db, pt.x, pt.y, dq_even_signs(aux >> (7 * g)));
        }
    }
};
/* IQ2_XS, 74 bytes: d, qs[32] u16 at 2 (9-bit index, 7 sign bits), scales[8]
 * at 66 (low nibble groups 0-1, high nibble groups 2-3). */
struct dq_iq2_xs {
    static constexpr int QK = 256, BYTES = 74, PE = 32, CH = 5, SIDE = 0, UNIT = 1; /* CH, SIDE: its tiled form */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const float d = dq_half(ld16(b));
        const uint32_t sc = ldb(b + 66 + p);
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t q = ld16(b + 2 + 2 * (4 * p + g));
            const uint2 pt = iq_point8(iq2xs_grid_dev, q & 511u);
            dq_group(v + 8 * g, dq_db(d, 2 * ((sc >> (4 * (g / 2))) & 15u) + 1, 0.125f), pt.x, pt.y,
                     dq_even_signs(q >> 9));
        }
    }
};
/* IQ2_S, 82 bytes: d, qs[64] at 2 (32 index low bytes, then 32 sign bytes),
 * qh[8] at 66 (2 high index bits per group), scales[8] at 74. */
struct dq_iq2_s {
    static constexpr int QK = 256, BYTES = 82, PE = 32, CH = 5, SIDE = 2, UNIT = 1; /* CH, SIDE: its tiled form */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const float d = dq_half(ld16(b));
        const uint32_t qh = ldb(b + 66 + p), sc = ldb(b + 74 + p);
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t idx = ldb(b + 2 + 4 * p + g) | ((qh >> (2 * g)) & 3u) << 8;
            const uint2 pt = iq_point8(iq2s_grid_dev, idx);
            dq_group(v + 8 * g, dq_db(d, 2 * ((sc >> (4 * (g / 2))) & 15u) + 1, 0.125f), pt.x, pt.y,
                     ldb(b + 2 + 32 + 4 * p + g));
        }
    }
};
/* IQ3_XXS, 98 bytes: d, qs[96] at 2: 8 indices per sub-block (two 4-wide
 * points per group) in the first 64 bytes, then one word per sub-block laid
 * out as IQ2_XXS's second word. step 1/4. */
struct dq_iq3_xxs {
    static constexpr int QK = 256, BYTES = 98, PE = 32, CH = 6, SIDE = 2, UNIT = 1; /* CH, SIDE: its tiled form */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const uint32_t aux = ld32(b + 2 + 64 + 4 * p);
        const float db = dq_db(dq_half(ld16(b)), 2 * (aux >> 28) + 1, 0.25f);
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t lo = iq_point4(iq3xxs_grid_dev, ldb(b + 2 + 8 * p + 2 * g));
            const uint32_t hi = iq_point4(iq3xxs_grid_dev, ldb(b + 2 + 8 * p + 2 * g + 1));
            dq_group(v + 8 * g, db, lo, hi, dq_even_signs(aux >> (7 * g)));
        }
    }
};
/* IQ3_S, 110 bytes: d, qs[64] at 2 (8 index low bytes per sub-block), qh[8]
 * at 66 (bit k: 9th bit of index k), signs[32] at 74, scales[4] at 106 (a
 * nibble per sub-block). step 1. */
struct dq_iq3_s {
    static constexpr int QK = 256, BYTES = 110, PE = 32, CH = 7, SIDE = 0, UNIT = 1; /* CH, SIDE: its tiled form */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const uint32_t qh = ldb(b + 66 + p);
        const float db = dq_db(dq_half(ld16(b)), 2 * ((ldb(b + 106 + p / 2) >> (4 * (p % 2))) & 15u) + 1, 1.0f);
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t lo = iq_point4(iq3s_grid_dev, ldb(b + 2 + 8 * p + 2 * g) | ((qh >> (2 * g)) & 1u) << 8);
            const uint32_t hi =
                iq_point4(iq3s_grid_dev, ldb(b + 2 + 8 * p + 2 * g + 1) | ((qh >> (2 * g + 1)) & 1u) << 8);
            dq_group(v + 8 * g, db, lo, hi, ldb(b + 74 + 4 * p + g));
        }
    }
};

/* IQ1 (iq1_dequantize): dl = d * (2s+1), y = dl * (value + delta), delta =
 * +-1/8 per group. One group's 8 signed grid values in (lo, hi). */
__device__ __forceinline__ void dq_group_iq1(float *y, float dl, uint2 pt, bool neg_delta) {
    const float delta = neg_delta ? -0.125f : 0.125f;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int val = (int)(int8_t)((j < 4 ? pt.x >> (8 * j) : pt.y >> (8 * (j - 4))) & 0xFFu);
        y[j] = __fmul_rn(dl, __fadd_rn((float)val, delta));
    }
}
/* IQ1_S, 50 bytes: d, qs[32] at 2 (index low bytes), qh[8] u16 at 34: top 3
 * index bits per group (bits 3g..), scale code (bits 12..14), shift sign (15). */
struct dq_iq1_s {
    static constexpr int QK = 256, BYTES = 50, PE = 32, CH = 3, SIDE = 2, UNIT = 1; /* CH, SIDE: its tiled form */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        const uint32_t h = ld16(b + 34 + 2 * p);
        const float dl = __fmul_rn(dq_half(ld16(b)), (float)(2 * ((h >> 12) & 7u) + 1));
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint2 pt = iq_point8(iq1s_grid_dev, ldb(b + 2 + 4 * p + g) | ((h >> (3 * g)) & 7u) << 8);
            dq_group_iq1(v + 8 * g, dl, pt, (h & 0x8000u) != 0);
        }
    }
};
/* IQ1_M, 56 bytes: qs[32] at 0, qh[16] at 32 (a nibble per group: 3 index
 * bits and the shift sign), scales[8] at 48: four u16 words, word k holding
 * four 3-bit codes of sub-blocks 2k, 2k+1 and, in bits 12..15, nibble k of
 * the fp16 d (iq1_m_scale, unpack_iq1_m). */
struct dq_iq1_m {
    static constexpr int QK = 256, BYTES = 56, PE = 32, CH = 3, SIDE = 8, UNIT = 1; /* CH, SIDE: its tiled form */
    template <class P>
    static __device__ __forceinline__ void dec(P b, int p, float (&v)[PE]) {
        uint32_t dbits = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) dbits |= (ld16(b + 48 + 2 * k) >> 12) << (4 * k);
        const float d = dq_half(dbits);
        const uint32_t sc = ld16(b + 48 + 2 * (p / 2)) >> (6 * (p % 2));
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const uint32_t h = ldb(b + 32 + 2 * p + g / 2) >> (4 * (g % 2));
            const float dl = __fmul_rn(d, (float)(2 * ((sc >> (3 * (g / 2))) & 7u) + 1));
            const uint2 pt = iq_point8(iq1s_grid_dev, ldb(b + 4 * p + g) | (h & 7u) << 8);
            dq_group_iq1(v + 8 * g, dl, pt, (h & 8u) != 0);
        }
    }
};

/* ---- the kernel ------------------------------------------------------------------------ */

/* out[t][i] = scale * W[clamp(ids[t])][i]. x: pieces of a row (grid stride), y:
 * tokens (grid stride past 65535). Each piece ends in PE/4 float4 stores
 * (PE = 32) or one float store (PE = 1, the float formats). */
template <class D>
__global__ void __launch_bounds__(GET_ROWS_THREADS)
get_rows(const uint8_t *__restrict__ W, size_t row_bytes, int n_in, int n_out, const int32_t *__restrict__ ids,
         int n_tok, float scale, float *__restrict__ out) {
    pdl_launch_dependents(); /* lets the next kernel of the step get scheduled early (cuda/pdl.cuh) */
    pdl_wait();
    constexpr int PPB = D::QK / D::PE; /* pieces per block */
    const int n_pieces = n_in / D::PE;
    for (int t = blockIdx.y; t < n_tok; t += gridDim.y) {
        const int id = min(max(__ldg(ids + t), 0), n_out - 1);
        const uint8_t *row = W + (size_t)id * row_bytes;
        float *o = out + (size_t)t * (size_t)n_in;
        for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < n_pieces; p += gridDim.x * blockDim.x) {
            float v[D::PE];
            D::dec(row + (size_t)(p / PPB) * D::BYTES, p % PPB, v);
            float *dst = o + (size_t)p * D::PE;
            if (D::PE % 4 == 0) {
#pragma unroll
                for (int j = 0; j < D::PE; j += 4)
                    *(float4 *)(dst + j) = make_float4(__fmul_rn(v[j], scale), __fmul_rn(v[j + 1], scale),
                                                       __fmul_rn(v[j + 2], scale), __fmul_rn(v[j + 3], scale));
            } else {
#pragma unroll
                for (int j = 0; j < D::PE; j++) dst[j] = __fmul_rn(v[j], scale);
            }
        }
    }
}

/* Whole matrices to fp16, for the prompt GEMM (gemm.cu). The matrix is a
 * run of pieces in row-major order (row r's piece p is piece r * n_pieces_row
 * + p, its elements at 32 times that), so a block's DQ16_THREADS consecutive
 * pieces are one contiguous stretch of the output: each thread decodes its
 * piece into shared memory as fp16, then the block writes the stretch with
 * 16-byte stores, consecutive threads at consecutive addresses. (get_rows'
 * own stores, a float4 per thread 128 bytes apart, are what a row lookup
 * needs; over a whole matrix they wrote at ~1 TB/s.) The values are the
 * reference decoder's, then rounded to fp16. */
#define DQ16_THREADS 128

/* a piece's values as fp16 at t (shared memory), 16 bytes a store */
template <int PE>
__device__ __forceinline__ void dq16_put(const float (&v)[PE], __half *t) {
    if constexpr (PE % 8 == 0) {
#pragma unroll
        for (int j = 0; j < PE; j += 8) {
            const __half2 a = __floats2half2_rn(v[j], v[j + 1]), b = __floats2half2_rn(v[j + 2], v[j + 3]),
                          c = __floats2half2_rn(v[j + 4], v[j + 5]), d = __floats2half2_rn(v[j + 6], v[j + 7]);
            uint4 q;
            q.x = *(const uint32_t *)&a, q.y = *(const uint32_t *)&b, q.z = *(const uint32_t *)&c,
            q.w = *(const uint32_t *)&d;
            *(uint4 *)(t + j) = q;
        }
    } else {
#pragma unroll
        for (int j = 0; j < PE; j++) t[j] = __float2half_rn(v[j]);
    }
}
/* the block's stretch of n_h halves from tile to o (16-byte aligned: the
 * stretch starts at a multiple of DQ16_THREADS pieces) */
__device__ __forceinline__ void dq16_write(const __half *tile, __half *o, int64_t n_h) {
    for (int64_t i = threadIdx.x; i < n_h / 8; i += DQ16_THREADS) ((uint4 *)o)[i] = ((const uint4 *)tile)[i];
    for (int64_t i = n_h / 8 * 8 + threadIdx.x; i < n_h; i += DQ16_THREADS) o[i] = tile[i];
}

template <class D>
__global__ void __launch_bounds__(DQ16_THREADS)
dequant_f16(const uint8_t *__restrict__ W, size_t row_bytes, int n_pieces_row, int64_t n_pieces,
            __half *__restrict__ out) {
    constexpr int PPB = D::QK / D::PE;
    __shared__ __align__(16) __half tile[DQ16_THREADS * D::PE];
    for (int64_t base = (int64_t)blockIdx.x * DQ16_THREADS; base < n_pieces;
         base += (int64_t)gridDim.x * DQ16_THREADS) {
        const int64_t P = base + threadIdx.x;
        if (P < n_pieces) {
            const int64_t row = P / n_pieces_row;
            const int p = (int)(P - row * n_pieces_row);
            float v[D::PE];
            D::dec(W + (size_t)row * row_bytes + (size_t)(p / PPB) * D::BYTES, p % PPB, v);
            dq16_put(v, tile + threadIdx.x * D::PE);
        }
        __syncthreads();
        dq16_write(tile, out + base * D::PE, (n_pieces - base < DQ16_THREADS ? n_pieces - base : DQ16_THREADS) * D::PE);
        __syncthreads();
    }
}

/* The same from the tiled layout (gemv_tiled.cuh). A tiled block is 256
 * elements (a super-block, or 8 legacy blocks), 8 pieces, and rows are whole
 * tiled blocks (only rows of whole 256-element blocks are tiled), so a thread block's
 * 128 pieces are 16 whole tiled blocks, consecutive in the matrix's row
 * order: lanes 0-15 or 16-31 of one tile for a matrix of its own; for the
 * half of a gate/up pair (its rows every other row of the tiles) one or two
 * runs of 8 or 16 lanes, from a lane that is a multiple of 8, over at most
 * two tiles, where rows are multiples of 8 tiled blocks (2048, 4096, ...;
 * rows of 3584 are 14 blocks: shorter runs, the same bytes). Each block's
 * place is computed on its own (t32_copy), whatever the row length.
 *
 * Read in place, a block's bytes lie 512 bytes apart, one load a byte: the
 * 8B's pp512 was 1.4% (Q4_K_M) to 6.7% (Q2_K) slower tiled than in the
 * file's layout (bench/gpu-decode-notes.md v56, v67). So a thread block
 * first copies its 16 blocks to shared memory with 16-byte loads, thread i
 * taking chunk i / 16 of block i % 16: the 16 threads of a chunk read its
 * 16 lanes in order, 256 contiguous bytes (two runs of 128 for a pair's
 * half). The decoders then read the copy (t32_ptr, t32_lptr), byte by byte
 * as before, from shared memory. The grid is persistent and a thread block
 * issues its next round's loads before it decodes this one, so they are in
 * flight during the decode. Kernel lab (dev/cuda/dequant_lab.cu), H200,
 * 4096 x 14336, file layout / tiled byte loads / tiled staged / staged and
 * overlapped, us: Q4_K 63.9 / 68.4 / 56.0 / 49.0, Q6_K 85.3 / 85.3 / 60.1 /
 * 59.9, Q3_K 59.0 / 85.3 / 56.0 / 56.5, Q2_K 51.2 / 68.6 / 50.1 / 45.4,
 * IQ2_XXS 44.0 / 50.1 / 46.9 / 46.1, Q4_0 45.0 / 60.5 / 48.5 / 45.5, Q5_1
 * 47.5 / 68.5 / 58.0 / 49.5. The overlap lost only on the IQ4 formats (IQ4_XS
 * 59.2 -> 63.9, IQ4_NL 56.2 -> 60.4: 4 more registers, 10 blocks an SM
 * where 12 fitted, for decoders that are mostly arithmetic). */
#define DQ16_T32_BLOCKS (DQ16_THREADS / 8) /* tiled blocks a thread block */

/* A format's tiled block: CH chunks, then SIDE side bytes (legacy: 8 CQ
 * chunks of quants, then the 8 headers as whole chunks, or as 8 side bytes
 * where they are 8 bytes: MXFP4; gemv_tiled_legacy.cuh t32_legacy_geo). The
 * side bytes follow the chunks in the staged copy, where t32_lptr finds a
 * header either way. */
template <class D>
__host__ __device__ constexpr int t32_chunks() {
    if constexpr (D::UNIT == 1) return D::CH;
    else return 8 * D::CQ + 8 * (D::BYTES - 16 * D::CQ) / 16;
}
template <class D>
__host__ __device__ constexpr int t32_side() {
    if constexpr (D::UNIT == 1) return D::SIDE;
    else return 8 * (D::BYTES - 16 * D::CQ) % 16;
}
/* 32-bit words a staged block takes: an odd number. A warp decodes 4 blocks,
 * and a decoder's 8 pieces read offsets 32 bytes (8 banks) apart at once
 * (Q4_K's qs + 32 (p / 2), Q6_K's ql + 64 h + 32 (k % 2)); an odd stride
 * starts the 4 blocks at 4 different banks mod 8, which those offsets keep,
 * so up to 16 different words fall on 16 different banks. (The legacy
 * formats' 8 pieces are 8 blocks, their quants a chunk apart: 4 banks; the
 * 32 words again fall on 32 banks.) */
template <class D>
__host__ __device__ constexpr int t32_words() {
    return (16 * t32_chunks<D>() + t32_side<D>() + 3) / 4 | 1;
}

/* A thread's part of copying tiled blocks k0..k0+n-1 (n <= DQ16_T32_BLOCKS)
 * of the matrix, in its row order (nbt tiled blocks a row; its row r is row
 * r rstep + roff of the tiles), to shared memory: block j at word
 * t32_words<D>() j, its chunks then its side bytes. Thread i's k-th load is
 * task i + 128 k: chunk (i + 128 k) / 16 of block (i + 128 k) % 16, the side
 * bytes as chunk CH. fetch issues the loads into registers and put stores
 * them, so that a round's loads are in flight while the round before
 * decodes. */
template <class D>
struct t32_copy {
    static constexpr int CH = t32_chunks<D>(), SIDE = t32_side<D>(), NB = DQ16_T32_BLOCKS;
    static constexpr int TASKS = NB * (CH + (SIDE ? 1 : 0)), LOADS = (TASKS + DQ16_THREADS - 1) / DQ16_THREADS;
    static_assert(SIDE == 0 || SIDE == 2 || SIDE == 4 || SIDE == 8, "side bytes: one load of 2, 4 or 8");
    uint4 q[LOADS]; /* the side bytes in .x (and .y) */

    __device__ __forceinline__ void fetch(const uint8_t *__restrict__ W, size_t tile_bytes, int64_t k0, int n, int nbt,
                                          int rstep, int roff) {
        const int64_t row0 = k0 / nbt;
        const int q0 = (int)(k0 - row0 * nbt);
#pragma unroll
        for (int k = 0; k < LOADS; k++) {
            const int i = (int)threadIdx.x + k * DQ16_THREADS, j = i % NB, c = i / NB;
            q[k] = make_uint4(0, 0, 0, 0);
            if (i >= TASKS || j >= n) continue;
            const int64_t b = ((row0 + (q0 + j) / nbt) * rstep + roff) * nbt + (q0 + j) % nbt; /* in the tiles */
            const uint8_t *t = W + (size_t)(b / 32) * tile_bytes;
            const int lane = (int)(b % 32);
            if (c < CH) {
                q[k] = __ldg((const uint4 *)(t + 512 * c + 16 * lane));
            } else if constexpr (SIDE == 8) {
                const uint2 u = __ldg((const uint2 *)(t + 512 * CH + 8 * lane));
                q[k].x = u.x, q[k].y = u.y;
            } else if constexpr (SIDE == 4) {
                q[k].x = __ldg((const unsigned int *)(t + 512 * CH + 4 * lane));
            } else if constexpr (SIDE == 2) {
                q[k].x = __ldg((const unsigned short *)(t + 512 * CH + 2 * lane));
            }
        }
    }
    __device__ __forceinline__ void put(uint32_t *s, int n) const {
#pragma unroll
        for (int k = 0; k < LOADS; k++) {
            const int i = (int)threadIdx.x + k * DQ16_THREADS, j = i % NB, c = i / NB;
            if (i >= TASKS || j >= n) continue;
            uint32_t *d = s + t32_words<D>() * j + 4 * c; /* 4-byte aligned only: an odd stride */
            d[0] = q[k].x;
            if (c < CH) d[1] = q[k].y, d[2] = q[k].z, d[3] = q[k].w;
            else if (SIDE > 4) d[1] = q[k].y;
        }
    }
};

/* tile_bytes: a tile's bytes; nbt: tiled blocks a row; a pair's half:
 * rstep 2, roff 0 (gate) or 1 (up), else 1, 0. Each thread block takes
 * rounds of 128 pieces, a grid's width apart. */
template <class D>
__global__ void __launch_bounds__(DQ16_THREADS)
dequant_f16_t32(const uint8_t *__restrict__ W, size_t tile_bytes, int nbt, int rstep, int roff, int64_t n_pieces,
                __half *__restrict__ out) {
    static_assert(D::PE == 32 && D::QK * D::UNIT == 256, "a tiled block: 256 elements, 8 pieces of 32");
    __shared__ __align__(16) __half tile[DQ16_THREADS * 32];
    __shared__ uint32_t staged[DQ16_T32_BLOCKS * t32_words<D>()];
    const int64_t step = (int64_t)gridDim.x * DQ16_THREADS;
    int64_t base = (int64_t)blockIdx.x * DQ16_THREADS;
    t32_copy<D> cp;
    const auto blocks_at = [n_pieces](int64_t b) { /* tiled blocks of the round at b */
        return (int)((n_pieces - b < DQ16_THREADS ? n_pieces - b : DQ16_THREADS) / 8);
    };
    if (base < n_pieces) cp.fetch(W, tile_bytes, base / 8, blocks_at(base), nbt, rstep, roff);
    for (; base < n_pieces; base += step) {
        const int n = blocks_at(base);
        cp.put(staged, n);
        __syncthreads();
        if (base + step < n_pieces) cp.fetch(W, tile_bytes, (base + step) / 8, blocks_at(base + step), nbt, rstep, roff);
        if ((int)threadIdx.x < 8 * n) {
            const int j = threadIdx.x / 8, part = threadIdx.x % 8;
            const uint8_t *b = (const uint8_t *)(staged + t32_words<D>() * j);
            float v[32];
            if constexpr (D::UNIT == 1) D::dec(t32_ptr{b}, part, v);
            else D::dec(t32_lptr{b, part, D::CQ, D::BYTES - 16 * D::CQ, 0}, 0, v); /* 8 file blocks a tiled block */
            dq16_put(v, tile + threadIdx.x * 32);
        }
        __syncthreads();
        /* no barrier after: the next round's put writes `staged`, whose
         * reads ended at the barrier above, and its decode writes `tile` only
         * after the next round's first barrier, which every thread reaches
         * past its stores */
        dq16_write(tile, out + base * 32, (int64_t)256 * n);
    }
}

/* ---- launchers and the table ---------------------------------------------------------- */

typedef struct get_rows_args {
    const nib_cuda_weight *w;
    const int32_t *ids; /* (n_tok) device */
    int n_tok;
    float scale;
    float *out;         /* (n_tok, n_in) device */
    cudaStream_t stream;
} get_rows_args;

typedef void (*get_rows_launch_fn)(const get_rows_args *a);
typedef void (*dequant_f16_fn)(const nib_cuda_weight *w, __half *out, cudaStream_t st);

template <class D>
static void launch_dequant_f16(const nib_cuda_weight *w, __half *out, cudaStream_t st) {
    const int n_pieces_row = (int)(w->n_in / D::PE);
    const int64_t n_pieces = (int64_t)n_pieces_row * w->n_out;
    const int64_t blocks = CEIL_DIV(n_pieces, DQ16_THREADS);
    dequant_f16<D><<<(unsigned)(blocks < (1 << 20) ? blocks : (1 << 20)), DQ16_THREADS, 0, st>>>(
        w->dev, w->row_bytes, n_pieces_row, n_pieces, out);
}
/* a tiled matrix's (gemv_tiled.cuh): tiles of 32 blocks, w->t32_tile bytes
 * each; the half of a tiled gate/up pair takes every other row of the pair's
 * tiles */
template <class D>
static void launch_dequant_f16_t32(const nib_cuda_weight *w, __half *out, cudaStream_t st) {
    /* thread blocks an SM holds, asked once per process (gemv.cu
     * blocks_per_sm: the same for every device of one architecture) */
    static std::atomic<int> per_sm{0};
    int k = per_sm.load(std::memory_order_relaxed);
    if (k == 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&k, dequant_f16_t32<D>, DQ16_THREADS, 0) != cudaSuccess ||
            k < 1) {
            (void)cudaGetLastError();
            k = 1;
        }
        per_sm.store(k, std::memory_order_relaxed);
    }
    const int64_t n_pieces = w->n_in / 32 * w->n_out;
    const int64_t blocks = CEIL_DIV(n_pieces, DQ16_THREADS);
    const int64_t most = w->sms > 0 ? (int64_t)w->sms * k : (1 << 20); /* one wave; SMs unknown: a wide grid */
    dequant_f16_t32<D><<<(unsigned)(blocks < most ? blocks : most), DQ16_THREADS, 0, st>>>(
        w->dev, (size_t)w->t32_tile, (int)(w->n_in / 256), w->t32_pair ? 2 : 1, w->t32_pair ? w->t32_pair - 1 : 0,
        n_pieces, out);
}

template <class D>
static void launch_get_rows(const get_rows_args *a) {
    const int n_in = (int)a->w->n_in, n_out = (int)a->w->n_out;
    const dim3 grid((unsigned)CEIL_DIV(n_in / D::PE, GET_ROWS_THREADS),
                    (unsigned)(a->n_tok < GET_ROWS_MAX_GRID_Y ? a->n_tok : GET_ROWS_MAX_GRID_Y));
    get_rows<D><<<grid, GET_ROWS_THREADS, 0, a->stream>>>(a->w->dev, a->w->row_bytes, n_in, n_out, a->ids, a->n_tok,
                                                          a->scale, a->out);
}

typedef struct get_rows_row {
    nib_type type;
    const char *kernel;     /* for error messages */
    int piece;              /* elements per piece: 32 (out must be 16-byte aligned) or 1 */
    get_rows_launch_fn launch;
    dequant_f16_fn launch_f16;
    dequant_f16_fn launch_f16_t32; /* the same on the tiled layout, for the formats that have one; else NULL */
} get_rows_row;

/* One row per format with a device decoder. To add a format: write its dq_
 * struct above, transcribing the reference decoder in src/quant/, and add a
 * row; tests/gpu/test_gpu_dequant.c checks it bit for bit on the next GPU run.
 * Q8_1 and Q8_K are activation formats no model stores weights in. */
#define ROW(T, NAME, D) {NIB_TYPE_##T, "get_rows<" NAME ">", D::PE, launch_get_rows<D>, launch_dequant_f16<D>, NULL}
#define ROW_T32(T, NAME, D) \
    {NIB_TYPE_##T, "get_rows<" NAME ">", D::PE, launch_get_rows<D>, launch_dequant_f16<D>, launch_dequant_f16_t32<D>}

static const get_rows_row get_rows_rows[] = {
    ROW(F32, "f32", dq_f32),
    ROW(F16, "f16", dq_f16),
    ROW(BF16, "bf16", dq_bf16),
    ROW_T32(Q4_0, "q4_0", dq_q4_0),
    ROW_T32(Q4_1, "q4_1", dq_q4_1),
    ROW_T32(Q5_0, "q5_0", dq_q5_0),
    ROW_T32(Q5_1, "q5_1", dq_q5_1),
    ROW(Q8_0, "q8_0", dq_q8_0),
    ROW_T32(Q2_K, "q2_K", dq_q2_K),
    ROW_T32(Q3_K, "q3_K", dq_q3_K),
    ROW_T32(Q4_K, "q4_K", dq_q4_K),
    ROW_T32(Q5_K, "q5_K", dq_q5_K),
    ROW_T32(Q6_K, "q6_K", dq_q6_K),
    ROW_T32(IQ2_XXS, "iq2_xxs", dq_iq2_xxs),
    ROW_T32(IQ2_XS, "iq2_xs", dq_iq2_xs),
    ROW_T32(IQ2_S, "iq2_s", dq_iq2_s),
    ROW_T32(IQ3_XXS, "iq3_xxs", dq_iq3_xxs),
    ROW_T32(IQ3_S, "iq3_s", dq_iq3_s),
    ROW_T32(IQ1_S, "iq1_s", dq_iq1_s),
    ROW_T32(IQ1_M, "iq1_m", dq_iq1_m),
    ROW_T32(IQ4_NL, "iq4_nl", dq_iq4_nl),
    ROW_T32(IQ4_XS, "iq4_xs", dq_iq4_xs),
    ROW_T32(TQ2_0, "tq2_0", dq_tq2_0),
    ROW_T32(MXFP4, "mxfp4", dq_mxfp4),
};

static const get_rows_row *get_rows_row_get(nib_type t) {
    for (size_t i = 0; i < sizeof get_rows_rows / sizeof get_rows_rows[0]; i++)
        if (get_rows_rows[i].type == t) return &get_rows_rows[i];
    return NULL;
}

/* a file's type, as the device keeps it (nib_cuda_device_type) */
extern "C" bool nib_cuda_has_get_rows(nib_type type) { return get_rows_row_get(nib_cuda_device_type(type)) != NULL; }

/* ---- the op entry ------------------------------------------------------------------- */

extern "C" nib_status nib_cuda_get_rows(const nib_cuda_weight *w, const int32_t *ids, int n_tok, float scale,
                                        float *out, void *stream, nib_error *err) {
    if (!w || !ids || !out) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_get_rows: NULL weight, ids or out");
    const get_rows_row *r = get_rows_row_get(w->type);
    if (!r)
        return nib_error_set(err, NIB_ERR_UNSUPPORTED, "nib_cuda_get_rows: no device decoder for %s",
                             nib_type_name(w->type) ? nib_type_name(w->type) : "?");
    if (n_tok < 0) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_get_rows %s: n_tok %d < 0", r->kernel, n_tok);
    if (n_tok == 0) return NIB_OK;
    /* upload guarantees whole blocks; a piece never straddles one (PE divides QK) */
    if (w->n_in % r->piece != 0 || w->n_out <= 0)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_get_rows %s: n_in %lld not whole pieces of %d", r->kernel,
                             (long long)w->n_in, r->piece);
    if (r->piece % 4 == 0 && ((uintptr_t)out & 15) != 0)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_get_rows %s: out is not 16-byte aligned", r->kernel);
    if (((uintptr_t)ids & 3) != 0 || ((uintptr_t)out & 3) != 0)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_get_rows %s: ids or out not 4-byte aligned", r->kernel);
    if (w->t32_g)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_get_rows %s: the matrix is in the tiled GEMV layout (rows "
                             "cannot be looked up)", r->kernel);
    const get_rows_args a = {w, ids, n_tok, scale, out, (cudaStream_t)stream};
    r->launch(&a);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        char what[160];
        snprintf(what, sizeof what, "launch of %s (%s, n_in %lld, n_out %lld, n_tok %d)", r->kernel,
                 nib_type_name(w->type), (long long)w->n_in, (long long)w->n_out, n_tok);
        cuda_ok(e, "cudaGetLastError()", what, err);
        return err ? err->status : NIB_ERR_IO;
    }
    return NIB_OK;
}

nib_status cuda_dequant_f16(const nib_cuda_weight *w, void *out, cudaStream_t st, nib_error *err) {
    const get_rows_row *r = w ? get_rows_row_get(w->type) : NULL;
    if (!r || !out || ((uintptr_t)out & 15) != 0 || w->n_in % r->piece != 0)
        return nib_error_set(err, NIB_ERR_ARG, "cuda_dequant_f16: no decoder for %s, out NULL or not 16-byte aligned, or "
                             "rows not whole pieces", w ? nib_type_name(w->type) : "a NULL weight");
    const dequant_f16_fn launch = w->t32_g ? r->launch_f16_t32 : r->launch_f16;
    if (!launch) return nib_error_set(err, NIB_ERR_ARG, "cuda_dequant_f16: a tiled %s matrix", nib_type_name(w->type));
    if (w->t32_g && w->n_in % 256 != 0) /* not reached: only rows of whole 256-element blocks are tiled */
        return nib_error_set(err, NIB_ERR_ARG, "cuda_dequant_f16: a tiled %s matrix with rows of %lld, not whole tiled "
                             "blocks", nib_type_name(w->type), (long long)w->n_in);
    launch(w, (__half *)out, st);
    char what[160];
    snprintf(what, sizeof what, "launch of dequant_f16 (%s, n_in %lld, n_out %lld)", nib_type_name(w->type),
             (long long)w->n_in, (long long)w->n_out);
    return cuda_launch_status(cudaGetLastError(), what, err);
}
