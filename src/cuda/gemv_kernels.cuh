/* GEMV kernels, one per weight format: y = W x for one activation row.
 *
 * Included by gemv.cu (the library's launchers and type table) and by the
 * kernel lab dev/cuda/gemv_lab.cu (which times these and its own variants).
 * The kernels know nothing of GGUF or models: rows of blocks in, floats out.
 *
 * Shape of the work. One warp computes R output rows (R = 1, 2 or 4 per
 * format, gemv.cu's table; GEMV_WARPS warps per thread block). A row is cut
 * into "items", a format-chosen slice of one weight block (32 to 128
 * elements), and lane l takes items l, l+32, ... so a warp's loads sweep the
 * row contiguously: 32 neighbouring items are one run of memory. Each lane
 * ends with one fp32 partial per row; a shuffle tree adds them. The item loop
 * is unrolled U times (2-8) so several items' loads are in flight at once,
 * which is what a bandwidth-bound kernel needs (Little's law: ~3 MB in flight
 * on an H200 at 4.3 TB/s and ~700 ns latency). Known limit (measured in
 * bench/results/2026-11-30-h200-gemv.md): with lane stride = item size, a
 * warp's activation loads touch 8-32 cache lines each, so L1 wavefronts, not
 * HBM, bound the per-layer shapes; lanes cooperating inside an item is the
 * next variant to try in dev/cuda/gemv_lab.cu.
 *
 * Activations. The quantized formats read x as int8 blocks of 32 with an fp32
 * scale d and the fp32 term s = d * sum(q) (quantize_act_q8 below, once per
 * call): each item's integer dot is exact (dp4a: 4 int8 products + int32 add
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
 * bytes) are 16-byte multiples: their quants come in as 16-byte vectors.
 */
#ifndef NIB_CUDA_GEMV_KERNELS_CUH
#define NIB_CUDA_GEMV_KERNELS_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "cuda/act_q8.cuh"
#include "cuda/pdl.cuh"
#include "quant/blocks.h"

#define GEMV_WARPS 4  /* warps per thread block (rows per warp and unrolling: per format, gemv.cu) */

/* ---- small device helpers ------------------------------------------------------- */

__device__ __forceinline__ float h2f(uint32_t bits) { return __half2float(__ushort_as_half((unsigned short)(bits & 0xFFFFu))); }

/* N words of the bytes starting at p (any alignment): aligned loads, then
 * funnel shifts. Reads the word after the last one too. */
template <int N>
__device__ __forceinline__ void load_words(const uint8_t *p, uint32_t (&w)[N]) {
    const uintptr_t a = (uintptr_t)p;
    const uint32_t *q = (const uint32_t *)(a & ~(uintptr_t)3);
    const unsigned sh = (unsigned)(a & 3) * 8u;
    uint32_t raw[N + 1];
#pragma unroll
    for (int i = 0; i <= N; i++) raw[i] = __ldg(q + i);
#pragma unroll
    for (int i = 0; i < N; i++) w[i] = __funnelshift_r(raw[i], raw[i + 1], sh);
}

/* N words at a 4-byte aligned address. */
template <int N>
__device__ __forceinline__ void load_words_a4(const uint8_t *p, uint32_t (&w)[N]) {
    const uint32_t *q = (const uint32_t *)p;
#pragma unroll
    for (int i = 0; i < N; i++) w[i] = __ldg(q + i);
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
    static __device__ __forceinline__ W load(const uint8_t *b, int) {
        W r;
        if constexpr (A4) load_words_a4(b, r.w);
        else load_words(b, r.w);
        return r;
    }
    static __device__ __forceinline__ float dot(const uint8_t *b, int sub, const int8_t *xq, const float2 *ds) {
        return F::dot_w(load(b, sub), sub, xq, ds);
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
#define IQ4NL_T pack4(-127, -104, -83, -65), pack4(-49, -35, -22, -10), pack4(1, 13, 25, 38), pack4(53, 69, 89, 113)
struct fmt_iq4_nl : words_block<fmt_iq4_nl, 5, false> {
    static constexpr int QK = 32, BYTES = 18, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[5] = r.w;
        int a[8];
        load_act32(xq, a);
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int2 v = lut16(__funnelshift_r(w[k], w[k + 1], 16), IQ4NL_T);
            sumi = __dp4a(v.x, a[k], sumi);
            sumi = __dp4a(v.y, a[k + 4], sumi);
        }
        return h2f(w[0]) * __ldg(&ds->x) * (float)sumi;
    }
};

/* MXFP4, 17 bytes: e (E8M0), qs[16] of E2M1 codes in Q4_0's nibble order.
 * As in quant/q_mxfp4.c: doubled E2M1 values times 2^(e-128). */
#define MXFP4_T pack4(0, 1, 2, 3), pack4(4, 6, 8, 12), pack4(0, -1, -2, -3), pack4(-4, -6, -8, -12)
struct fmt_mxfp4 : words_block<fmt_mxfp4, 5, false> {
    static constexpr int QK = 32, BYTES = 17, CH = 32;
    static __device__ __forceinline__ float dot_w(const W &r, int, const int8_t *xq, const float2 *ds) {
        const uint32_t(&w)[5] = r.w;
        int a[8];
        load_act32(xq, a);
        int sumi = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int2 v = lut16(__funnelshift_r(w[k], w[k + 1], 8), MXFP4_T);
            sumi = __dp4a(v.x, a[k], sumi);
            sumi = __dp4a(v.y, a[k + 4], sumi);
        }
        const uint32_t e = w[0] & 0xFFu;
        const float half_scale = __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
        return half_scale * __ldg(&ds->x) * (float)sumi;
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
 * x = d sc q - dmin m. */
struct fmt_q4_K {
    static constexpr int QK = 256, BYTES = 144, CH = 64;
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        const uint4 q0 = __ldg((const uint4 *)(b + 16 + 32 * c)), q1 = __ldg((const uint4 *)(b + 32 + 32 * c));
        const uint32_t q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        uint32_t hdr[1], s[3];
        load_words_a4(b, hdr);
        load_words_a4(b + 4, s);
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
        const float2 d0 = __ldg(ds + 2 * c), d1 = __ldg(ds + 2 * c + 1);
        return h2f(hdr[0]) * ((float)(sc0 * sum_lo) * d0.x + (float)(sc1 * sum_hi) * d1.x) -
               h2f(hdr[0] >> 16) * ((float)m0 * d0.y + (float)m1 * d1.y);
    }
};

/* Q5_K, 176 bytes: d, dmin, scales[12], qh[32], qs[128]. As Q4_K, plus bit 4
 * of element e in bit e/32 of qh[e%32]. */
struct fmt_q5_K {
    static constexpr int QK = 256, BYTES = 176, CH = 64;
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        const uint4 q0 = __ldg((const uint4 *)(b + 48 + 32 * c)), q1 = __ldg((const uint4 *)(b + 64 + 32 * c));
        const uint4 h0 = __ldg((const uint4 *)(b + 16)), h1 = __ldg((const uint4 *)(b + 32));
        const uint32_t q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        const uint32_t h[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
        uint32_t hdr[1], s[3];
        load_words_a4(b, hdr);
        load_words_a4(b + 4, s);
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
        const float2 d0 = __ldg(ds + 2 * c), d1 = __ldg(ds + 2 * c + 1);
        return h2f(hdr[0]) * ((float)(sc0 * sum_lo) * d0.x + (float)(sc1 * sum_hi) * d1.x) -
               h2f(hdr[0] >> 16) * ((float)m0 * d0.y + (float)m1 * d1.y);
    }
};

/* Q6_K, 210 bytes: ql[128], qh[64], scales[16] int8, d. Item = 64 elements:
 * half hh = c/2, p = c%2, quarters p and p+2 of that half (they share the ql
 * bytes ql[64hh + 32p + l]: low nibble quarter p, high nibble quarter p+2;
 * high bits qh[32hh + l] bits 2p.. and 2p+4..). x = d sc (q - 32), sc per 16. */
struct fmt_q6_K {
    static constexpr int QK = 256, BYTES = 210, CH = 64;
    static __device__ __forceinline__ float dot(const uint8_t *b, int c, const int8_t *xq, const float2 *ds) {
        const int hh = c >> 1, p = c & 1;
        uint32_t ql[8], qh[8], sc[2];
        load_words(b + 64 * hh + 32 * p, ql);
        load_words(b + 128 + 32 * hh, qh);
        load_words(b + 192 + 8 * hh, sc);
        const float d = h2f(__ldg((const unsigned short *)(b + 208)));
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
        const float d = h2f(__ldg((const unsigned short *)(b + 108)));
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
        const uint2 h = __ldg((const uint2 *)b);
        r.hdr[0] = h.x, r.hdr[1] = h.y;
        const uint2 *q = (const uint2 *)(b + 8 + 32 * c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint2 v = __ldg(q + i);
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
        int a[8];
        float acc = 0.0f;
#pragma unroll
        for (int t = 0; t < 2; t++) {
            const int ib = 2 * c + t;
            load_act32(xq + 32 * ib, a);
            int sumi = 0;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int2 v = lut16(q[4 * t + k], IQ4NL_T);
                sumi = __dp4a(v.x, a[k], sumi);
                sumi = __dp4a(v.y, a[k + 4], sumi);
            }
            const int ls = ((int)((hdr[1] >> (4 * ib)) & 15u) | (int)(((hdr[0] >> 16) >> (2 * ib)) & 3u) << 4) - 32;
            acc += __ldg(&ds[ib].x) * (float)(ls * sumi);
        }
        return d * acc;
    }
};

/* ---- the kernels ------------------------------------------------------------------ */

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
}

/* GLU activations of the gated feed-forward, as the CPU's ops.c computes them. */
enum { GLU_NONE = 0, GLU_SILU = 1, GLU_GELU_TANH = 2 };

__device__ __forceinline__ float glu_act(int act, float g) {
    if (act == GLU_SILU) return g / (1.0f + expf(-g));
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * g * (1.0f + tanhf(k * (g + 0.044715f * g * g * g)));
}

/* x (n_tok rows of n floats, n % 32 == 0) to int8 blocks of 32, one warp per
 * block (act_q8.cuh). Row t's quants start at qs + t * qs_stride, its (d, s)
 * pairs at ds + t * (n / 32). */
__global__ void quantize_act_q8(const float *__restrict__ x, int8_t *__restrict__ qs, float2 *__restrict__ ds, int n,
                                int n_tok, int qs_stride, act_scale *sc) {
    pdl_launch_dependents();
    pdl_wait();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < ACT_SCALE_PARTS) sc->part[i] = 0.0; /* no deferred norm (n >= 32: these threads exist) */
    if (i >= (int64_t)n * n_tok) return;  /* n % 32 == 0: whole warps leave together */
    const int t = (int)(i / n), j = (int)(i % n);
    quantize_warp32(x[i], qs + (int64_t)t * qs_stride + j, ds + i / 32);
}

/* The greedy pick fused into the LM head. A row's key is the orderable bits
 * of its value << 32 | ~row, so the largest key is the largest value and,
 * among equal values, the lowest row: the CPU's first maximum. NaN never
 * competes. Each lane keeps the best key of the rows it stored; at the end of
 * the kernel the block reduces them and makes one atomicMax (one atomic per
 * row on a single address serialised a 152k-row head to 140 us). best must
 * be 0 before the launch. */
__device__ __forceinline__ unsigned long long row_key(float v, int row) {
    if (v != v) return 0ull;
    const uint32_t u = __float_as_uint(v);
    const uint32_t key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)key << 32) | (unsigned long long)(0xFFFFFFFFu - (uint32_t)row);
}

/* Called by every thread of the block once, after its last row. */
__device__ __forceinline__ void block_offer_best(unsigned long long *best, unsigned long long mine) {
    __shared__ unsigned long long warp_best[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long other = __shfl_xor_sync(0xFFFFFFFFu, mine, o);
        mine = other > mine ? other : mine;
    }
    if ((threadIdx.x & 31) == 0) warp_best[threadIdx.x >> 5] = mine;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) mine = warp_best[w] > mine ? warp_best[w] : mine;
        if (mine) atomicMax(best, mine);
    }
}

/* Weights do not depend on the kernel before this one, so a GEMV asks L2
 * for its first rows before pdl_wait(): under programmatic dependent launch
 * its blocks start while the previous kernel drains, and the weight fetch
 * overlaps that tail instead of following it. The warp's lanes split the
 * rows' 128-byte lines. Only for matrices of at most PREFETCH_MAX_BYTES: on
 * the H200 it made Qwen2.5-0.5B (matrices of 0.5-5 MB) 7-8% faster, and
 * Llama-3-8B (10-66 MB, more than L2 takes ahead of use) 3-7% slower. */
#define PREFETCH_MAX_BYTES ((size_t)8 << 20)
__device__ __forceinline__ void prefetch_rows_l2(const uint8_t *row, size_t bytes, int lane) {
    for (size_t off = (size_t)lane * 128; off < bytes; off += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(row + off));
}

/* Where a kernel's activations are: NT token rows of int8 quants and (d, s)
 * pairs; a chunk shorter than NT repeats its last row (not stored). */
struct act_q8 {
    const int8_t *xq;
    const float2 *xds;
    int qs_stride;  /* bytes between token rows of xq */
    int n_tok;
    const act_scale *sc; /* the buffer's trailer: a deferred norm's row scale (act_q8.cuh) */
};

/* The row scale of a deferred norm (act_scale), in two halves: lane l loads
 * part l before a kernel's dot loop and the sum is taken after it, so the
 * load's latency hides under the weight loads (2 registers live across the
 * loop). The butterfly gives every lane the same bits, in the same order on
 * every run. 1 without a norm (all parts zero). */
__device__ __forceinline__ double act_rs_begin(const act_q8 &a, int lane) {
    return a.sc->part[lane & (ACT_SCALE_PARTS - 1)];
}
__device__ __forceinline__ float act_rs_end(double s) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);
    return s > 0.0 ? (float)(1.0 / sqrt(s)) : 1.0f; /* as ops.c's nib_rmsnorm: 1 / sqrt(ss / n + eps) */
}

/* Loading ahead. A one-token GEMV's weights do not depend on the kernel
 * before it, so its warps load their first pass of weight words (the U items
 * of each of the R rows that dot_rows would load first) into registers before
 * pdl_wait(): under programmatic dependent launch the loads overlap that
 * kernel's tail, and after the wait only the activations' (L2-resident) load
 * is left on the chain. Registers, not a cache: an L2 or L1 prefetch of the
 * same rows made Llama-3-8B 6-9% slower (bench/gpu-decode-notes.md v12),
 * most likely evicted before use while the kernel before ran. For the
 * formats that split dot into load and dot_w (words_block). Measured on the
 * H200 (v12): Llama-3-8B Q4_0 469 -> 501 t/s, Qwen2.5-0.5B Q8_0 1512 -> 1631;
 * the K-quants' words (12-19 per item, U x R items held across the wait) took
 * the Q4_K/Q6_K kernels from 64-72 to 80-255 registers and Llama-3-8B Q4_K_M
 * from 387 to 359 t/s, so they have no W and load after the wait as before. */
template <class F, class = void>
struct has_w : std::false_type {};
template <class F>
struct has_w<F, std::void_t<typename F::W>> : std::true_type {};

template <class F, int R, int U, bool ON = has_w<F>::value>
struct ahead {  /* no ahead loads: the formats without W */
    static constexpr bool on = false;
};
template <class F, int R, int U>
struct ahead<F, R, U, true> {
    static constexpr bool on = true;
    typename F::W w[U][R];
};

/* A format whose dot reads a table from shared memory (the IQ codebooks,
 * gemv_formats_extra.cuh) fills it once per block, before the first
 * divergence: every kernel body calls this first. A no-op for the rest. */
template <class F, class = void>
struct has_prepare : std::false_type {};
template <class F>
struct has_prepare<F, std::void_t<decltype(F::prepare())>> : std::true_type {};
template <class F>
__device__ __forceinline__ void fmt_prepare() {
    if constexpr (has_prepare<F>::value) F::prepare();
}

/* the items dot_rows takes in its first pass, as it clamps them */
template <class F, int R, int U, int LANES>
__device__ __forceinline__ void load_ahead(const uint8_t *const (&wr)[R], int n_in, int lane, ahead<F, R, U> &pre) {
    if constexpr (ahead<F, R, U>::on) {
        constexpr int IPB = F::QK / F::CH;
        const int n_items = n_in / F::CH;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = lane + LANES * u, ii = i < n_items ? i : n_items - 1;
#pragma unroll
            for (int r = 0; r < R; r++) pre.w[u][r] = F::load(wr[r] + (size_t)(ii / IPB) * F::BYTES, ii % IPB);
        }
    }
}

/* The R rows' dots against NT activation rows, one fp32 partial per lane.
 * Each pass takes U items per lane; an item past the row's end is computed
 * on the row's last item (a valid address: its loads hit L1) and added as 0,
 * so the U items' loads carry no branch and the compiler issues all of them
 * before the first dot. (A guarded `#pragma unroll U` loop ran its remainder
 * one item at a time: a 4096-wide Q4_K row has 2 items per lane, so every row
 * took two dependent memory round trips.) The NT dots of an item read the
 * same weight words, which the compiler loads once (__ldg loads are pure), as
 * the R rows share the activation loads. Lanes add their items in index
 * order whatever U, R and NT are, so every variant gives the same bits. */
template <class F, int R, int U, int NT, int LANES = 32>
__device__ __forceinline__ void dot_rows(const uint8_t *const (&wr)[R], const act_q8 &a, int t0, int n_in, int lane,
                                         float (&acc)[NT][R], const ahead<F, R, U> &pre, bool use_pre) {
    /* LANES > 32: several warps share the rows (lane counts 0..LANES-1
     * across them, each warp's sum is its part of the dot; the kernel lab's
     * split-K variants) */
    constexpr int IPB = F::QK / F::CH; /* items per block */
    const int n_items = n_in / F::CH;
    const int8_t *xq[NT];
    const float2 *xds[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) {
        const int tt = min(t0 + t, a.n_tok - 1);
        xq[t] = a.xq + (size_t)tt * a.qs_stride;
        xds[t] = a.xds + (size_t)tt * (n_in / 32);
#pragma unroll
        for (int r = 0; r < R; r++) acc[t][r] = 0.0f;
    }
    int base = lane;
    if constexpr (ahead<F, R, U>::on && NT == 1) {
        if (use_pre) { /* the first pass, on the words loaded ahead */
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = base + LANES * u;
                const bool ok = i < n_items;
                const int ib = (ok ? i : n_items - 1) / IPB, sub = (ok ? i : n_items - 1) % IPB;
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const float v = F::dot_w(pre.w[u][r], sub, xq[0] + (size_t)ib * F::QK,
                                             xds[0] + (size_t)ib * (F::QK / 32));
                    acc[0][r] += ok ? v : 0.0f;
                }
            }
            base += LANES * U;
        }
    }
    for (; base < n_items; base += LANES * U) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = base + LANES * u;
            const bool ok = i < n_items;
            const int ii = ok ? i : n_items - 1;
            const int ib = ii / IPB, sub = ii % IPB;
#pragma unroll
            for (int t = 0; t < NT; t++)
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const float v = F::dot(wr[r] + (size_t)ib * F::BYTES, sub, xq[t] + (size_t)ib * F::QK,
                                           xds[t] + (size_t)ib * (F::QK / 32));
                    acc[t][r] += ok ? v : 0.0f;
                }
        }
    }
#pragma unroll
    for (int t = 0; t < NT; t++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[t][r] = warp_sum(acc[t][r]);
}

/* y[t][row] = dot(W[row], x[t]) (+ y[t][row] when add: the residual add of an
 * output projection, fused) with int8 activations. Each warp takes R rows at
 * a time, WARPS warps per block, and loops over row groups with a grid
 * stride, so the launcher may start fewer blocks than row groups (a
 * persistent grid: see gemv.cu for why). blockIdx.y picks a chunk of NT
 * tokens: the weights are read once per chunk. */
template <class F, int WARPS, int R, int U, int NT>
__device__ __forceinline__ void q8_body(const uint8_t *__restrict__ W, size_t row_bytes, const act_q8 &a,
                                        float *__restrict__ y, int y_stride, int n_in, int n_out, int add,
                                        unsigned long long *best, int block, int n_blocks) {
    pdl_launch_dependents();
    fmt_prepare<F>();
    const int lane = threadIdx.x & 31, t0 = blockIdx.y * NT;
    const int first = (block * WARPS + (threadIdx.x >> 5)) * R;
    constexpr bool AHEAD = ahead<F, R, U>::on && NT == 1;
    ahead<F, R, U> pre;
    if (AHEAD) {
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) wr[r] = W + (size_t)min(first + r, n_out - 1) * row_bytes;
        if (first < n_out) load_ahead<F, R, U, 32>(wr, n_in, lane, pre);
    } else if (!AHEAD && first < n_out && (size_t)n_out * row_bytes <= PREFETCH_MAX_BYTES) {
        prefetch_rows_l2(W + (size_t)first * row_bytes, (size_t)min(R, n_out - first) * row_bytes, lane);
    }
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    unsigned long long mine = 0;
    auto group = [&](int row0, bool use_pre) {
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) /* a row past the end repeats the last one; its result is not stored */
            wr[r] = W + (size_t)min(row0 + r, n_out - 1) * row_bytes;
        float acc[NT][R];
        dot_rows<F, R, U, NT>(wr, a, t0, n_in, lane, acc, pre, use_pre);
        const float rs = act_rs_end(rsp);
#pragma unroll
        for (int t = 0; t < NT; t++)
#pragma unroll
            for (int r = 0; r < R; r++)
                if (lane == t && t0 + t < a.n_tok && row0 + r < n_out) {
                    float *p = y + (size_t)(t0 + t) * y_stride + row0 + r;
                    const float v = acc[t][r] * rs;
                    *p = add ? *p + v : v;
                    const unsigned long long k = row_key(*p, row0 + r);
                    mine = k > mine ? k : mine;
                }
    };
    /* the first row group apart, so the words loaded ahead die with it */
    int row0 = first;
    if (AHEAD && row0 < n_out) group(row0, true), row0 += n_blocks * WARPS * R;
    for (; row0 < n_out; row0 += n_blocks * WARPS * R) group(row0, false);
    if (best) block_offer_best(best, mine);
}
template <class F, int WARPS, int R, int U, int NT>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8(const uint8_t *__restrict__ W, size_t row_bytes, act_q8 a, float *__restrict__ y, int y_stride, int n_in,
        int n_out, int add, unsigned long long *best) {
    q8_body<F, WARPS, R, U, NT>(W, row_bytes, a, y, y_stride, n_in, n_out, add, best, blockIdx.x, gridDim.x);
}

/* Split K for long rows: KS warps of a block share R rows, their 32 * KS
 * lanes striding the row's items, and add their parts through shared
 * memory (then the residual add, when asked). For a down projection (14336
 * or 4864 wide, few rows) a lane holds KS times fewer items per row, so
 * fewer dependent passes, and the short output gets KS times the warps.
 * Lab (dev/cuda/gemv_lab.cu "/ks", H200): 14336x4096 Q4_K 16.2 -> 14.6 us,
 * Q6_K 29.3 -> 25.6 (KS = 2); 4864x896 Q4_K 7.0 -> 5.7 (KS = 4); with 2
 * rows a group it loses on 4096-wide rows and on LM heads; with 4 rows a
 * group it wins on about square matrices of 3584-wide rows and up (gemv.cu
 * plan_q8). One token; the row loop is block-uniform for the barriers. */
template <class F, int WARPS, int R, int U, int KS>
__device__ __forceinline__ void ks_body(const uint8_t *__restrict__ W, size_t row_bytes, const act_q8 &a,
                                        float *__restrict__ y, int n_in, int n_out, int add, int block, int n_blocks) {
    static_assert(WARPS % KS == 0, "whole groups of KS warps");
    constexpr int GROUPS = WARPS / KS;
    pdl_launch_dependents();
    fmt_prepare<F>();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, group = warp / KS, k = warp % KS;
    const int base_first = block * GROUPS * R;
    constexpr bool AHEAD = ahead<F, R, U>::on;
    ahead<F, R, U> pre;
    if (AHEAD) {
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) wr[r] = W + (size_t)min(base_first + group * R + r, n_out - 1) * row_bytes;
        if (base_first < n_out) load_ahead<F, R, U, 32 * KS>(wr, n_in, k * 32 + lane, pre);
    } else if (!AHEAD) {
        const int first = base_first + group * R;
        if (k == 0 && first < n_out && (size_t)n_out * row_bytes <= PREFETCH_MAX_BYTES)
            prefetch_rows_l2(W + (size_t)first * row_bytes, (size_t)min(R, n_out - first) * row_bytes, lane);
    }
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    __shared__ float part[WARPS][R];
    auto rows = [&](int base_row, bool use_pre) {
        const int row0 = base_row + group * R;
        const uint8_t *wr[R];
#pragma unroll
        for (int r = 0; r < R; r++) wr[r] = W + (size_t)min(row0 + r, n_out - 1) * row_bytes;
        float acc[1][R];
        dot_rows<F, R, U, 1, 32 * KS>(wr, a, 0, n_in, k * 32 + lane, acc, pre, use_pre);
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < R; r++) part[warp][r] = acc[0][r];
        const float rs = act_rs_end(rsp);
        __syncthreads();
        if (k == 0 && lane < R && row0 + lane < n_out) {
            float v = 0.0f;
#pragma unroll
            for (int j = 0; j < KS; j++) v += part[group * KS + j][lane];
            v *= rs;
            float *p = y + row0 + lane;
            *p = add ? *p + v : v;
        }
        __syncthreads();
    };
    /* the first row group apart, so the words loaded ahead die with it */
    int base_row = base_first;
    if (AHEAD && base_row < n_out) rows(base_row, true), base_row += n_blocks * GROUPS * R;
    for (; base_row < n_out; base_row += n_blocks * GROUPS * R) rows(base_row, false);
}
template <class F, int WARPS, int R, int U, int KS>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8_ks(const uint8_t *__restrict__ W, size_t row_bytes, act_q8 a, float *__restrict__ y, int n_in, int n_out,
           int add) {
    ks_body<F, WARPS, R, U, KS>(W, row_bytes, a, y, n_in, n_out, add, blockIdx.x, gridDim.x);
}

/* Two GEMVs of one activation row (one token) in one grid, for two
 * matrices of different formats that would run as two launches (a model's
 * fused Q and K, Q4_K, and its V, Q6_K, in the layers where llama.cpp's
 * Q4_K_M mix gives V more bits): the first g_a blocks run the first part,
 * the rest the second; each block runs one body, so its barriers stay
 * block-uniform. A part is the split-K body or the plain one, both at U = 1,
 * as the launcher would run that matrix alone, so the outputs are bit for
 * bit the two launches'. Kernel lab (dev/cuda/gemv_lab.cu "pair"), Llama-3-8B's
 * 4096 -> 5120 Q4_K + 4096 -> 1024 Q6_K under PDL graph replay: 9.7 -> 8.6 us. */
template <class F, int R_, int KS_>
struct part_ks {
    static constexpr int KS = KS_, R = R_;             /* its plan (gemv.cu plan_q8): split K KS, R rows, U = 1 */
    static constexpr int ROWS = (GEMV_WARPS / KS) * R; /* rows a block covers */
    static __device__ __forceinline__ void run(const uint8_t *W, size_t rb, const act_q8 &a, float *y, int n_in,
                                               int n_out, int block, int n_blocks) {
        ks_body<F, GEMV_WARPS, R, 1, KS>(W, rb, a, y, n_in, n_out, 0, block, n_blocks);
    }
};
template <class F, int R_>
struct part_plain {
    static constexpr int KS = 0, R = R_; /* the plain kernel, R rows a warp, U = 1 */
    static constexpr int ROWS = GEMV_WARPS * R;
    static __device__ __forceinline__ void run(const uint8_t *W, size_t rb, const act_q8 &a, float *y, int n_in,
                                               int n_out, int block, int n_blocks) {
        q8_body<F, GEMV_WARPS, R, 1, 1>(W, rb, a, y, n_out, n_in, n_out, 0, NULL, block, n_blocks);
    }
};
template <class PA, class PB>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_q8_pair(const uint8_t *__restrict__ WA, size_t rb_a, int n_a, const uint8_t *__restrict__ WB, size_t rb_b,
             int n_b, act_q8 a, float *__restrict__ y_a, float *__restrict__ y_b, int n_in, int g_a) {
    if ((int)blockIdx.x < g_a) PA::run(WA, rb_a, a, y_a, n_in, n_a, blockIdx.x, g_a);
    else PB::run(WB, rb_b, a, y_b, n_in, n_b, blockIdx.x - g_a, gridDim.x - g_a);
}

/* The gated feed-forward's first half in one pass: h[t][row] =
 * act(gate[row] . x[t]) * (up[row] . x[t]). A warp takes R rows of each
 * matrix (2R dots sharing the activation loads); both matrices have format F
 * and the same row bytes. */
template <class F, int WARPS, int R, int U, int NT>
__global__ void __launch_bounds__(WARPS * 32)
gemv_q8_glu(const uint8_t *__restrict__ Wg, const uint8_t *__restrict__ Wu, size_t row_bytes, act_q8 a,
            float *__restrict__ h, int h_stride, int n_in, int n_out, int act) {
    pdl_launch_dependents();
    fmt_prepare<F>();
    const int lane = threadIdx.x & 31, t0 = blockIdx.y * NT;
    const int first = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * R;
    constexpr bool AHEAD = ahead<F, 2 * R, U>::on && NT == 1;
    ahead<F, 2 * R, U> pre;
    if (AHEAD) {
        const uint8_t *wr[2 * R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const size_t off = (size_t)min(first + r, n_out - 1) * row_bytes;
            wr[r] = Wg + off, wr[R + r] = Wu + off;
        }
        if (first < n_out) load_ahead<F, 2 * R, U, 32>(wr, n_in, lane, pre);
    } else if (!AHEAD && first < n_out && 2 * (size_t)n_out * row_bytes <= PREFETCH_MAX_BYTES) {
        const size_t bytes = (size_t)min(R, n_out - first) * row_bytes;
        prefetch_rows_l2(Wg + (size_t)first * row_bytes, bytes, lane);
        prefetch_rows_l2(Wu + (size_t)first * row_bytes, bytes, lane);
    }
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    auto group = [&](int row0, bool use_pre) {
        const uint8_t *wr[2 * R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const size_t off = (size_t)min(row0 + r, n_out - 1) * row_bytes;
            wr[r] = Wg + off;
            wr[R + r] = Wu + off;
        }
        float acc[NT][2 * R];
        dot_rows<F, 2 * R, U, NT>(wr, a, t0, n_in, lane, acc, pre, use_pre);
        const float rs = act_rs_end(rsp);
#pragma unroll
        for (int t = 0; t < NT; t++)
#pragma unroll
            for (int r = 0; r < R; r++)
                if (lane == t && t0 + t < a.n_tok && row0 + r < n_out)
                    h[(size_t)(t0 + t) * h_stride + row0 + r] = glu_act(act, acc[t][r] * rs) * (acc[t][R + r] * rs);
    };
    /* the first row group apart, so the words loaded ahead die with it */
    int row0 = first;
    if (AHEAD && row0 < n_out) group(row0, true), row0 += gridDim.x * WARPS * R;
    for (; row0 < n_out; row0 += gridDim.x * WARPS * R) group(row0, false);
}

/* F16 / BF16 weights against float x: each lane reads 8 weights (16 bytes)
 * and 8 floats per step, fp32 FMA. VEC needs n_in % 8 == 0 (rows 16-byte
 * aligned); otherwise one element per lane per step. blockIdx.y is the token
 * (prefill re-reads the weights per token, from L2 when they fit: the float
 * path serves F16/BF16 files, not the quantized ones prefill is tuned for). */
template <bool BF16, bool VEC>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_f16(const uint8_t *__restrict__ W, size_t row_bytes, const float *__restrict__ x, int x_stride,
         float *__restrict__ y, int y_stride, int n_in, int n_out, int add, unsigned long long *best) {
    pdl_launch_dependents();
    pdl_wait();
    const int lane = threadIdx.x & 31;
    x += (size_t)blockIdx.y * x_stride;
    y += (size_t)blockIdx.y * y_stride;
    unsigned long long mine = 0;
    for (int row = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5); row < n_out; row += gridDim.x * GEMV_WARPS) {
        const uint16_t *wr = (const uint16_t *)(W + (size_t)row * row_bytes);
        float acc = 0.0f;
        if (VEC) {
#pragma unroll 2
            for (int i = 8 * lane; i < n_in; i += 256) {
                const uint4 w = __ldg((const uint4 *)(wr + i));
                const float4 x0 = __ldg((const float4 *)(x + i)), x1 = __ldg((const float4 *)(x + i + 4));
                const uint32_t ww[4] = {w.x, w.y, w.z, w.w};
                const float xx[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    float lo, hi;
                    if (BF16) lo = __uint_as_float(ww[k] << 16), hi = __uint_as_float(ww[k] & 0xFFFF0000u);
                    else lo = h2f(ww[k]), hi = h2f(ww[k] >> 16);
                    acc = fmaf(lo, xx[2 * k], acc);
                    acc = fmaf(hi, xx[2 * k + 1], acc);
                }
            }
        } else {
            for (int i = lane; i < n_in; i += 32) {
                const uint32_t h = __ldg(wr + i);
                acc = fmaf(BF16 ? __uint_as_float(h << 16) : h2f(h), __ldg(x + i), acc);
            }
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

/* h = act(g) * u elementwise, for a feed-forward whose gate and up matrices
 * cannot share the fused kernel (different formats, or float weights):
 * g and u are n_tok rows of n, h may alias g. */
__global__ void glu_rows(const float *g, const float *u, float *h, int64_t n, int act) {
    pdl_launch_dependents();
    pdl_wait();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) h[i] = glu_act(act, g[i]) * u[i];
}

#endif
