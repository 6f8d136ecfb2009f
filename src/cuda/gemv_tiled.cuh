/* Tiled GEMV: one lane takes one whole weight block, and the blocks are laid
 * out on the device so that every load instruction of a warp reads 512
 * contiguous bytes.
 *
 * Why. The item kernels of gemv_kernels.cuh (a lane takes a 64-element slice
 * of a block, rows share the activation loads) spend ~23 warp instructions
 * per Q4_K block, and Nsight Compute has their warps alternating between
 * waiting on loads and issuing (45% of cycles issued on 14336 x 4096, the
 * memory pipes 14% busy): instruction bound more than byte bound
 * (bench/gpu-decode-notes.md v38, v41). Here a lane reads its block with
 * CH 16-byte loads, takes the block's activation (256 int8 and 8 (d, s)
 * pairs) from a copy in shared memory made once per thread block, and
 * decodes the scales once per block, not once per item: ~7 warp instructions
 * a block.
 *
 * Layout (t32). The matrix's blocks in file order (row after row) are cut
 * into tiles of 32; a tile is CH chunks of 512 bytes, chunk c holding bytes
 * 16c..16c+15 of the tile's 32 blocks in order. Lane l of a warp loads chunk
 * c at 16 l: one fully used 512-byte span per instruction. The last tile is
 * padded with zero blocks. A block is CH whole chunks (Q4_K 144, Q5_K 176)
 * plus up to 8 side bytes stored after the tile's chunks (t32_w), or padded
 * to whole chunks (Q3_K's 110 to 112).
 *
 * Rows. A tile's 32 blocks may belong to several rows. A warp takes G rows
 * at a time, G the smallest of 1, 2, 4 with G * (blocks a row) a multiple
 * of 32, so its T = G * nb / 32 tiles hold exactly its rows (a 4096-wide
 * Q4_K row is 16 blocks: G = 2, T = 1; 14336 is 56: G = 4, T = 7; rows that
 * need 8, 16 or 32: a thread block a group, gemv_t32_seg below). Each lane
 * adds its block's dot into the accumulator of its block's row; after the
 * group's last tile G warp sums give the rows. The next tile's loads are in
 * flight while a lane computes the current one (two register buffers).
 * Where it runs (gemv_tiled.cu) and what it measured: bench/gpu-decode-notes.md v55. */
#ifndef NIB_CUDA_GEMV_TILED_CUH
#define NIB_CUDA_GEMV_TILED_CUH

#include "cuda/gemv_kernels.cuh"
#include "cuda/rope.cuh"

/* dp4a of 4 unsigned bytes with 4 signed ones */
__device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

/* A lane's block in registers: CH 16-byte chunks, then the block's last
 * SIDE bytes (0, 2, 4 or 8), which the tile keeps apart, 32 of them after
 * the chunks, so that a block of 16 CH + SIDE bytes moves no padding (Q6_K's
 * 210 = 13 chunks and its d; Q2_K's 84 = 5 chunks and d, dmin). A block of
 * the tiled layout is the device block's bytes in order, zero-padded to
 * that size (Q3_K's 110 to 7 chunks), so the prompt decoder reads it through
 * t32_ptr (dequant.cu) with the format's own decoder. */
template <int CH, int SIDE>
struct t32_w {
    uint4 c[CH];
    uint32_t s[SIDE > 4 ? 2 : 1];
};
/* 32-bit word i of a lane's block (i a compile-time constant after unrolling;
 * 0 past the block) */
template <int CH, int SIDE>
__device__ __forceinline__ uint32_t t32_word(const t32_w<CH, SIDE> &w, int i) {
    if (i >= 4 * CH + (SIDE + 3) / 4) return 0;
    if (i >= 4 * CH) return w.s[i - 4 * CH];
    const uint4 &c = w.c[i >> 2];
    return (i & 3) == 0 ? c.x : (i & 3) == 1 ? c.y : (i & 3) == 2 ? c.z : c.w;
}
/* the 4 bytes of a lane's block at byte off (any alignment; off a
 * compile-time constant after unrolling) */
template <int CH, int SIDE>
__device__ __forceinline__ uint32_t t32_u32(const t32_w<CH, SIDE> &w, int off) {
    const int i = off >> 2, sh = 8 * (off & 3);
    return sh == 0 ? t32_word(w, i) : __funnelshift_r(t32_word(w, i), t32_word(w, i + 1), sh);
}
/* chunk c and the side bytes of a device block of BYTES bytes at b (any
 * alignment), zero past its end: the conversion at load (t32_tile) */
template <int BYTES>
__device__ __forceinline__ uint4 t32_block_chunk(const uint8_t *b, int c) {
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        w[k] = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int o = 16 * c + 4 * k + j;
            if (o < BYTES) w[k] |= (uint32_t)b[o] << (8 * j);
        }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}
template <int BYTES, int CH, int SIDE>
__device__ __forceinline__ uint2 t32_block_side(const uint8_t *b) {
    uint32_t w[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < SIDE; j++)
        if (16 * CH + j < BYTES) w[j >> 2] |= (uint32_t)b[16 * CH + j] << (8 * (j & 3));
    return make_uint2(w[0], w[1]);
}

/* The kernels' dynamic shared memory: F::BOOK_BYTES of codebook tables
 * (formats that declare them; a multiple of 16), then the activation's copy
 * (nb * F::ACT). t32_smem_bytes is the launch's dynamic size. */
template <class F, class = void>
struct t32_book_of {
    static constexpr int bytes = 0;
};
template <class F>
struct t32_book_of<F, std::void_t<decltype(F::BOOK_BYTES)>> {
    static constexpr int bytes = F::BOOK_BYTES;
};
template <class F>
constexpr int t32_smem_bytes(int n_in) {
    return t32_book_of<F>::bytes + n_in / F::QK * F::ACT;
}
__device__ __forceinline__ uint32_t *t32_book_words() {
    extern __shared__ __align__(16) uint8_t t32_smem[];
    return (uint32_t *)t32_smem;
}
template <class F>
__device__ __forceinline__ uint8_t *t32_act_smem() {
    return (uint8_t *)t32_book_words() + t32_book_of<F>::bytes;
}
/* A book's head: words a prmt reads as its register operand, 32 copies of
 * each (T32_HEAD bytes a word), each lane reading its own. As a constant, or
 * read from one address, nvcc keeps such a word in a uniform register, which
 * prmt cannot read, and copies it out before every prmt. */
#define T32_HEAD 128
__device__ __forceinline__ void t32_head_fill(uint32_t v, int h) {
    if (threadIdx.x < 32) t32_book_words()[32 * h + threadIdx.x] = v;
}
__device__ __forceinline__ uint32_t t32_head_reg(int h) {
    uint32_t r;
    asm volatile("ld.shared.u32 %0, [%1];"
                 : "=r"(r)
                 : "r"((uint32_t)__cvta_generic_to_shared(t32_book_words() + 32 * h + threadIdx.x % 32)));
    return r;
}

/* The 16-level formats' picks (levels_word_dot, gemv_formats.cuh: IQ4_T0 and
 * IQ4_T2P for IQ4, MXFP4_A0 and MXFP4_B0 for MXFP4) read their register
 * words t0 and t2 from the book's head: LEVELS_HEAD bytes, filled by the
 * format's prepare() */
#define LEVELS_HEAD (2 * T32_HEAD)
__device__ __forceinline__ void levels_head_prepare(uint32_t t0, uint32_t t2) {
    t32_head_fill(t0, 0);
    t32_head_fill(t2, 1);
    __syncthreads();
}

/* The activation of one 256-element block in shared memory: 256 quants at 0,
 * 8 (d, s) pairs at 256, and for Q6_K the 16 sums of 16 quants at 320 (its
 * -32 offset then costs one multiply-add a 16 elements). F::ACT, the bytes a
 * block takes there, is 4 banks past a multiple of 32 (336 = 84 words, 400 =
 * 100), so 8 lanes on 8 consecutive blocks read 16-byte pieces without bank
 * conflicts. */

/* 32 activation quants of the copy in shared memory as 8 words */
__device__ __forceinline__ void t32_act_words(const uint8_t *a32, int (&a)[8]) {
    const int4 a0 = *(const int4 *)a32, a1 = *(const int4 *)(a32 + 16);
    a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w, a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
}
/* 64 activation quants of a copy in shared memory as two runs of 8 words */
__device__ __forceinline__ void t32_act64(const uint8_t *a64, int (&al)[8], int (&ah)[8]) {
    const int4 a0 = *(const int4 *)a64, a1 = *(const int4 *)(a64 + 16);
    const int4 a2 = *(const int4 *)(a64 + 32), a3 = *(const int4 *)(a64 + 48);
    al[0] = a0.x, al[1] = a0.y, al[2] = a0.z, al[3] = a0.w, al[4] = a1.x, al[5] = a1.y, al[6] = a1.z, al[7] = a1.w;
    ah[0] = a2.x, ah[1] = a2.y, ah[2] = a2.z, ah[3] = a2.w, ah[4] = a3.x, ah[5] = a3.y, ah[6] = a3.z, ah[7] = a3.w;
}

/* Q4_K's and Q5_K's header (the block's first 16 bytes: d, dmin, then the
 * 12 bytes of 6-bit scales and minimums) with the scales and minimums of
 * sub-blocks 0-3 (lo) and 4-7 (hi) as bytes, and the sum of the block from
 * its 64-element integer dots. HI16: the high nibbles were dotted in place
 * (16 times their value; Q4_K), so 1/16 comes back out, exactly. */
struct t32_kaffine {
    uint32_t hdr, sc_lo, m_lo, sc_hi, m_hi;
    float fs = 0.0f, fm = 0.0f;
    __device__ __forceinline__ explicit t32_kaffine(const uint4 &h) : hdr(h.x) {
        sc_lo = h.y & 0x3F3F3F3Fu, m_lo = h.z & 0x3F3F3F3Fu;
        sc_hi = (h.w & 0x0F0F0F0Fu) | ((h.y >> 2) & 0x30303030u);
        m_hi = ((h.w >> 4) & 0x0F0F0F0Fu) | ((h.z >> 2) & 0x30303030u);
    }
    /* elements 64c..64c+63: lo the dot of sub-block 2c, hi of 2c + 1 */
    template <bool HI16>
    __device__ __forceinline__ void add(int c, int lo, int hi, const uint8_t *act) {
        const float4 dd = *(const float4 *)(act + 256 + 16 * c); /* (d, s) of sub-blocks 2c and 2c + 1 */
        const uint32_t scw = c < 2 ? sc_lo : sc_hi, mw = c < 2 ? m_lo : m_hi;
        const int sh = 16 * (c & 1);
        const int sc0 = (scw >> sh) & 0xFF, sc1 = (scw >> (sh + 8)) & 0xFF;
        const int m0 = (mw >> sh) & 0xFF, m1 = (mw >> (sh + 8)) & 0xFF;
        if (HI16) fs += (float)(sc0 * lo) * dd.x + (float)(sc1 * hi) * 0.0625f * dd.z;
        else fs += (float)(sc0 * lo) * dd.x + (float)(sc1 * hi) * dd.z;
        fm += (float)m0 * dd.y + (float)m1 * dd.w;
    }
    __device__ __forceinline__ float sum() const { return h2f(hdr) * fs - h2f(hdr >> 16) * fm; }
};

/* Q4_K: bytes 0-15 d, dmin and the 12 scale bytes; 16-143 qs. A high nibble
 * is dotted in place (q & 0xF0: 16 times its value, exact in int32), and the
 * 16 comes back out as an exact fp32 factor of 1/16. */
struct t32_q4_K {
    static constexpr int QK = 256, BYTES = 144, CH = 9, SIDE = 0, TILE = CH * 512, ACT = 336;
    static constexpr bool SUMS16 = false;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return *(const uint4 *)(b + 16 * c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *) { return make_uint2(0, 0); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        t32_kaffine k(w.c[0]);
#pragma unroll
        for (int c = 0; c < 4; c++) { /* 64 elements: sub-block 2c in the low nibbles, 2c + 1 in the high */
            const uint4 qa = w.c[1 + 2 * c], qb = w.c[2 + 2 * c];
            const uint32_t q[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
            int al[8], ah[8];
            t32_act64(act + 64 * c, al, ah);
            int lo = 0, hi = 0;
#pragma unroll
            for (int k2 = 0; k2 < 8; k2++) {
                lo = dp4a_us(q[k2] & 0x0F0F0F0Fu, al[k2], lo);
                hi = dp4a_us(q[k2] & 0xF0F0F0F0u, ah[k2], hi);
            }
            k.add<true>(c, lo, hi, act);
        }
        return k.sum();
    }
};

/* Q6_K: chunks 0-7 ql, 8-11 qh, 12 the 16 signed scales; d apart. Element
 * 128h + 32q + l (half h, quarter q) is ql[64h + 32(q & 1) + l] >> 4(q >> 1)
 * (4 bits) | (qh[32h + l] >> 2q & 3) << 4, minus 32 (as fmt_q6_K). The 32
 * comes off as 32 times the activation's sum over each 16 elements. */
struct t32_q6_K {
    static constexpr int QK = 256, BYTES = 210, CH = 13, SIDE = 2, TILE = CH * 512 + 32 * SIDE, ACT = 400;
    static constexpr bool SUMS16 = true;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return *(const uint4 *)(b + 16 * c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *b) { return t32_block_side<BYTES, CH, SIDE>(b); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t sc[4] = {w.c[12].x, w.c[12].y, w.c[12].z, w.c[12].w};
        float acc = 0.0f;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint32_t la[8] = {w.c[4 * h].x, w.c[4 * h].y, w.c[4 * h].z, w.c[4 * h].w,
                                    w.c[4 * h + 1].x, w.c[4 * h + 1].y, w.c[4 * h + 1].z, w.c[4 * h + 1].w};
            const uint32_t lb[8] = {w.c[4 * h + 2].x, w.c[4 * h + 2].y, w.c[4 * h + 2].z, w.c[4 * h + 2].w,
                                    w.c[4 * h + 3].x, w.c[4 * h + 3].y, w.c[4 * h + 3].z, w.c[4 * h + 3].w};
            const uint32_t hb[8] = {w.c[8 + 2 * h].x, w.c[8 + 2 * h].y, w.c[8 + 2 * h].z, w.c[8 + 2 * h].w,
                                    w.c[9 + 2 * h].x, w.c[9 + 2 * h].y, w.c[9 + 2 * h].z, w.c[9 + 2 * h].w};
            const int4 s16 = *(const int4 *)(act + 320 + 32 * h), s16b = *(const int4 *)(act + 336 + 32 * h);
            const int sums[8] = {s16.x, s16.y, s16.z, s16.w, s16b.x, s16b.y, s16b.z, s16b.w};
#pragma unroll
            for (int q = 0; q < 4; q++) {
                int a[8];
                t32_act_words(act + 128 * h + 32 * q, a);
                int s0 = 0, s1 = 0;
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    const uint32_t l = (q & 1) ? lb[k] : la[k];
                    const uint32_t hi = 2 * q <= 4 ? (hb[k] << (4 - 2 * q)) : (hb[k] >> (2 * q - 4));
                    const uint32_t v = ((l >> (4 * (q >> 1))) & 0x0F0F0F0Fu) | (hi & 0x30303030u);
                    if (k < 4) s0 = __dp4a((int)v, a[k], s0);
                    else s1 = __dp4a((int)v, a[k], s1);
                }
                const int j = 8 * h + 2 * q; /* the scales of the quarter's two 16-element sub-blocks */
                const int sc0 = (int)(int8_t)(sc[j >> 2] >> (8 * (j & 3))), sc1 = (int)(int8_t)(sc[j >> 2] >> (8 * (j & 3) + 8));
                const float da = *(const float *)(act + 256 + 8 * (4 * h + q));
                acc += da * (float)(sc0 * (s0 - 32 * sums[2 * q]) + sc1 * (s1 - 32 * sums[2 * q + 1]));
            }
        }
        return h2f(w.s[0]) * acc;
    }
};

/* The formats below keep the device block's bytes as they are (chunk: bytes
 * 16c.. of it) and read them as 32-bit words (t32_word: word i is bytes
 * 4i..4i+3 of the block, the side bytes after the chunks included). */

/* Q5_K, 176 bytes = 11 chunks: Q4_K's header (words 0-3), qh[32] (words
 * 4-11), qs[128] (words 12-43). Element 64c + m (m < 32) is the low nibble of
 * qs[32c + m] with bit 2c of qh[m] as its fifth bit; 64c + 32 + m the high
 * nibble with bit 2c + 1 (as fmt_q5_K). */
struct t32_q5_K {
    static constexpr int QK = 256, BYTES = 176, CH = 11, SIDE = 0, TILE = CH * 512, ACT = 336;
    static constexpr bool SUMS16 = false;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return *(const uint4 *)(b + 16 * c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *) { return make_uint2(0, 0); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        t32_kaffine k(w.c[0]);
#pragma unroll
        for (int c = 0; c < 4; c++) {
            int al[8], ah[8];
            t32_act64(act + 64 * c, al, ah);
            int lo = 0, hi = 0;
#pragma unroll
            for (int k2 = 0; k2 < 8; k2++) {
                const uint32_t q = t32_word(w, 12 + 8 * c + k2), h = t32_word(w, 4 + k2);
                lo = dp4a_us((q & 0x0F0F0F0Fu) | (((h >> (2 * c)) & 0x01010101u) << 4), al[k2], lo);
                hi = dp4a_us(((q >> 4) & 0x0F0F0F0Fu) | (((h >> (2 * c + 1)) & 0x01010101u) << 4), ah[k2], hi);
            }
            k.add<false>(c, lo, hi, act);
        }
        return k.sum();
    }
};

/* Q3_K, 110 bytes padded to 7 chunks: hmask[32] (words 0-7), qs[64] (words
 * 8-23), scales[12] (words 24-26), d (word 27). Element 128hh + 32k + l is
 * (qs[32hh + l] >> 2k & 3) - 4 (1 - (hmask[l] >> (4hh + k) & 1)); scales as
 * fmt_q3_K, whose arithmetic this is over the whole block. */
struct t32_q3_K {
    static constexpr int QK = 256, BYTES = 110, CH = 7, SIDE = 0, TILE = CH * 512, ACT = 336;
    static constexpr bool SUMS16 = false;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return t32_block_chunk<BYTES>(b, c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *) { return make_uint2(0, 0); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t s[3] = {t32_word(w, 24), t32_word(w, 25), t32_word(w, 26)};
        float acc = 0.0f;
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const uint32_t hi = s[2] >> (4 * hh);
            uint32_t sc[2];
            sc[0] = sub_bytes7(((s[0] >> (4 * hh)) & 0x0F0F0F0Fu) | ((hi & 0x03030303u) << 4), 0x20202020u);
            sc[1] = sub_bytes7(((s[1] >> (4 * hh)) & 0x0F0F0F0Fu) | (((hi >> 2) & 0x03030303u) << 4), 0x20202020u);
            uint32_t hm[8];
#pragma unroll
            for (int i = 0; i < 8; i++) hm[i] = ~t32_word(w, i) >> (4 * hh); /* bit k: 1 where the high bit is 0 */
#pragma unroll
            for (int k = 0; k < 4; k++) {
                int a[8];
                t32_act_words(act + 128 * hh + 32 * k, a);
                int s0 = 0, s1 = 0;
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const uint32_t lo = ((t32_word(w, 8 + 8 * hh + i) >> (2 * k)) & 0x03030303u) | 0x80808080u;
                    const uint32_t v = (lo - (((hm[i] >> k) & 0x01010101u) << 2)) ^ 0x80808080u;
                    if (i < 4) s0 = __dp4a((int)v, a[i], s0);
                    else s1 = __dp4a((int)v, a[i], s1);
                }
                const uint32_t sw = sc[k >> 1] >> (16 * (k & 1));
                const float da = *(const float *)(act + 256 + 8 * (4 * hh + k));
                acc += da * (float)((int)(int8_t)sw * s0 + (int)(int8_t)(sw >> 8) * s1);
            }
        }
        return h2f(t32_word(w, 27)) * acc;
    }
};

/* Q2_K, 84 bytes = 5 chunks and 4 side bytes: scales[16] (words 0-3: low
 * nibble scale, high nibble minimum, a 16 elements), qs[64] (words 4-19), d
 * and dmin (the side). Element 128hh + 32k + l is (qs[32hh + l] >> 2k) & 3;
 * x = d sc q - dmin m, the minimum's sum of 16 activations from the copy in
 * shared memory (SUMS16). */
struct t32_q2_K {
    static constexpr int QK = 256, BYTES = 84, CH = 5, SIDE = 4, TILE = CH * 512 + 32 * SIDE, ACT = 400;
    static constexpr bool SUMS16 = true;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return t32_block_chunk<BYTES>(b, c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *b) { return t32_block_side<BYTES, CH, SIDE>(b); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc_d = 0.0f, acc_m = 0.0f;
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int4 s16 = *(const int4 *)(act + 320 + 32 * hh), s16b = *(const int4 *)(act + 336 + 32 * hh);
            const int sums[8] = {s16.x, s16.y, s16.z, s16.w, s16b.x, s16b.y, s16b.z, s16b.w};
#pragma unroll
            for (int k = 0; k < 4; k++) {
                int a[8];
                t32_act_words(act + 128 * hh + 32 * k, a);
                int s0 = 0, s1 = 0;
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const int v = (int)((t32_word(w, 4 + 8 * hh + i) >> (2 * k)) & 0x03030303u);
                    if (i < 4) s0 = __dp4a(v, a[i], s0);
                    else s1 = __dp4a(v, a[i], s1);
                }
                const int j = 8 * hh + 2 * k; /* the 16-element sub-blocks j, j + 1 */
                const uint32_t sw = t32_word(w, j >> 2) >> (8 * (j & 3));
                const int b0 = (int)(sw & 0xFFu), b1 = (int)((sw >> 8) & 0xFFu);
                const float da = *(const float *)(act + 256 + 8 * (4 * hh + k));
                acc_d += da * (float)((b0 & 0xF) * s0 + (b1 & 0xF) * s1);
                acc_m += da * (float)((b0 >> 4) * sums[2 * k] + (b1 >> 4) * sums[2 * k + 1]);
            }
        }
        const uint32_t dd = t32_word(w, 20);
        return h2f(dd) * acc_d - h2f(dd >> 16) * acc_m;
    }
};

/* A 32-element sub-block of a 16-level format: its 16 quant bytes (IQ4_NL's
 * order) against the permuted activation copy at a32 (F::PERM), the levels
 * by levels_word_dot's picks from (t0, T1) and (t2, T3) */
template <uint32_t T1, uint32_t T3>
__device__ __forceinline__ int levels_sub_dot(const uint32_t (&q)[4], const uint8_t *a32, uint32_t t0, uint32_t t2) {
    const int4 a0 = *(const int4 *)a32, a1 = *(const int4 *)(a32 + 16);
    const int a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
    int sumi = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) sumi = levels_word_dot<T1, T3>(q[k], a[2 * k], a[2 * k + 1], t0, t2, sumi);
    return sumi;
}
__device__ __forceinline__ int iq4_sub_dot(const uint32_t (&q)[4], const uint8_t *a32, uint32_t t0, uint32_t t2) {
    return levels_sub_dot<IQ4_T1, IQ4_T3P>(q, a32, t0, t2);
}

/* IQ4_XS, 136 bytes = 8 chunks and 8 side bytes: d and scales_h (word 0),
 * scales_l (word 1), qs[128] (words 2-33: 16 bytes a 32 elements, IQ4_NL's
 * order); as fmt_iq4_xs over the whole block, its levels by iq4_word_dot. */
struct t32_iq4_xs {
    static constexpr int QK = 256, BYTES = 136, CH = 8, SIDE = 8, TILE = CH * 512 + 32 * SIDE, ACT = 336;
    static constexpr bool SUMS16 = false, PERM = true;
    static constexpr int BOOK_BYTES = LEVELS_HEAD;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return t32_block_chunk<BYTES>(b, c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *b) { return t32_block_side<BYTES, CH, SIDE>(b); }
    static __device__ __forceinline__ void prepare() { levels_head_prepare(IQ4_T0, IQ4_T2P); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        const uint32_t t0 = t32_head_reg(0), t2 = t32_head_reg(1);
        const uint32_t h0 = t32_word(w, 0), h1 = t32_word(w, 1);
        float acc = 0.0f;
#pragma unroll
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t q[4] = {t32_word(w, 2 + 4 * ib), t32_word(w, 3 + 4 * ib), t32_word(w, 4 + 4 * ib),
                                   t32_word(w, 5 + 4 * ib)};
            const int sumi = iq4_sub_dot(q, act + 32 * ib, t0, t2);
            const int ls = ((int)((h1 >> (4 * ib)) & 15u) | (int)(((h0 >> 16) >> (2 * ib)) & 3u) << 4) - 32;
            acc += *(const float *)(act + 256 + 8 * ib) * (float)(ls * sumi);
        }
        return h2f(h0) * acc;
    }
};

/* A legacy format's 32-element blocks, 8 to a tiled "block" of 256
 * elements: their quants as whole chunks (Q4_0: one a block; CQ a block in
 * general), then the 8 blocks' headers (the FB - 16 CQ bytes before the
 * quants: d; d, m; d, qh...) one after the other as more chunks, so 8 Q4_0
 * blocks of 18 bytes are 9 chunks with no padding (Q4_1 10, Q5_0 11, Q5_1
 * 12). chunk(): chunk c of the 8 file blocks at b (any alignment), for the
 * conversion at load. (Q8_0 in this form, 17 chunks, lost:
 * bench/gpu-decode-notes.md v57.) */
__device__ __forceinline__ uint4 t32_bytes16(const uint8_t *p) {
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; k++) w[k] = p[4 * k] | p[4 * k + 1] << 8 | p[4 * k + 2] << 16 | (uint32_t)p[4 * k + 3] << 24;
    return make_uint4(w[0], w[1], w[2], w[3]);
}
template <int FB, int CQ>
__device__ __forceinline__ uint4 t32_legacy_chunk(const uint8_t *b, int c) {
    constexpr int H = FB - 16 * CQ; /* header bytes a block */
    if (c < 8 * CQ) return t32_bytes16(b + FB * (c / CQ) + H + 16 * (c % CQ));
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < 16; k++) {
        const int pos = 16 * (c - 8 * CQ) + k; /* byte pos of the 8 headers in a row */
        w[k >> 2] |= (uint32_t)b[FB * (pos / H) + pos % H] << (8 * (k & 3));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ float t32_d8(const uint4 &dw, int j) { /* fp16 d of block j of 8 */
    const uint32_t w = j < 4 ? (j < 2 ? dw.x : dw.y) : (j < 6 ? dw.z : dw.w);
    return h2f(w >> (16 * (j & 1)));
}

/* block j's 16 quant bytes against its 32 activations: lo the low nibbles'
 * dot, hi the high ones' (q & 0xF0: 16 times the value, exact) */
__device__ __forceinline__ void t32_nibble_dots(const uint4 &q4, const uint8_t *a32, int &lo, int &hi) {
    const uint32_t q[4] = {q4.x, q4.y, q4.z, q4.w};
    const int4 a0 = *(const int4 *)a32, a1 = *(const int4 *)(a32 + 16);
    const int al[4] = {a0.x, a0.y, a0.z, a0.w}, ah[4] = {a1.x, a1.y, a1.z, a1.w};
    lo = 0, hi = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        lo = dp4a_us(q[k] & 0x0F0F0F0Fu, al[k], lo);
        hi = dp4a_us(q[k] & 0xF0F0F0F0u, ah[k], hi);
    }
}

/* Q4_0, x = d (q - 8): as fmt_q4_0, the - 8 folded in with the activation's s */
struct t32_q4_0 {
    static constexpr int QK = 256, BYTES = 144, CH = 9, SIDE = 0, TILE = CH * 512, ACT = 336;
    static constexpr bool SUMS16 = false;
    static __device__ __forceinline__ uint4 chunk(const uint8_t *b, int c) { return t32_legacy_chunk<18, 1>(b, c); }
    static __device__ __forceinline__ uint2 side(const uint8_t *) { return make_uint2(0, 0); }
    static __device__ __forceinline__ float dot(const t32_w<CH, SIDE> &w, const uint8_t *act) {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int lo, hi;
            t32_nibble_dots(w.c[j], act + 32 * j, lo, hi);
            const float2 sd = *(const float2 *)(act + 256 + 8 * j);
            acc += t32_d8(w.c[8], j) * (sd.x * (float)(lo + (hi >> 4)) - 8.0f * sd.y); /* hi: 16 x, exact */
        }
        return acc;
    }
};

/* A format with a codebook (the IQ lattices, gemv_tiled_iq.cuh) copies it
 * into shared memory first: F::prepare(), every thread of the block. The
 * codebook is no kernel's output, so this runs before pdl_wait. */
template <class F, class = void>
struct t32_has_book : std::false_type {};
template <class F>
struct t32_has_book<F, std::void_t<decltype(F::prepare())>> : std::true_type {};
template <class F>
__device__ __forceinline__ void t32_prepare() {
    if constexpr (t32_has_book<F>::value) F::prepare();
}

/* rows a warp group takes at a time for nb blocks a row: the smallest G of
 * 1, 2, 4, 8, 16, 32 with G * nb a multiple of 32 (8 and more: gemv_t32_seg);
 * 0 when none (the item kernels serve) */
static inline int t32_group_rows(int nb) {
    for (int g = 1; g <= 32; g *= 2)
        if ((g * nb) % 32 == 0) return g;
    return 0;
}

/* lane's block of tile t */
template <class F>
__device__ __forceinline__ void t32_load(const uint8_t *__restrict__ Wt, size_t t, int lane, t32_w<F::CH, F::SIDE> &w) {
    const uint8_t *p = Wt + t * F::TILE;
#pragma unroll
    for (int c = 0; c < F::CH; c++) w.c[c] = ldw((const uint4 *)(p + 512 * c) + lane);
    if (F::SIDE == 2) w.s[0] = ldw((const unsigned short *)(p + F::CH * 512) + lane);
    if (F::SIDE == 4) w.s[0] = ldw((const uint32_t *)(p + F::CH * 512) + lane);
    if (F::SIDE == 8) {
        const uint2 v = ldw((const uint2 *)(p + F::CH * 512) + lane);
        w.s[0] = v.x, w.s[F::SIDE > 4 ? 1 : 0] = v.y;
    }
}

/* The call's activation into shared memory (every thread of the block): 20
 * 16-byte pieces a 256-element block (16 of quants, 4 of (d, s) pairs); a
 * quant piece is one 16-element sub-block, whose sum (Q6_K) its thread
 * writes too. A thread issues all its loads before its first store (up to
 * T32_FILL_MAX pieces a pass): one L2 round trip, not one a piece.
 * F::PERM (the IQ4 formats): each 32-element sub-block's quants are stored
 * permuted, word 2k + h holding elements 4k + 2h, 4k + 2h + 16, 4k + 2h + 1,
 * 4k + 2h + 17 (iq4_word_dot's order), so a thread takes a sub-block's two
 * pieces at once. */
#define T32_FILL_MAX 8
template <class F, class = void>
struct t32_perm_of : std::false_type {};
template <class F>
struct t32_perm_of<F, std::void_t<decltype(F::PERM)>> : std::bool_constant<F::PERM> {};
template <class F>
__device__ __forceinline__ void t32_fill(uint8_t *act, const act_q8 &a, int nb) {
    constexpr bool P = t32_perm_of<F>::value;
    constexpr int QU = P ? 8 : 16, UN = QU + 4; /* quant units a block, then the 4 (d, s) pieces */
    constexpr int FM = P ? T32_FILL_MAX / 2 : T32_FILL_MAX;
    const int total = nb * UN;
    for (int base = 0; base < total; base += FM * (int)blockDim.x) {
        uint4 v[FM], v2[P ? FM : 1];
#pragma unroll
        for (int k = 0; k < FM; k++) {
            const int i = base + k * (int)blockDim.x + (int)threadIdx.x, s = i / UN, p = i % UN;
            if (i < total) {
                if (p >= QU) v[k] = __ldg((const uint4 *)(a.xds + (size_t)s * 8) + (p - QU));
                else if (!P) v[k] = __ldg((const uint4 *)(a.xq + (size_t)s * 256) + p);
                else {
                    v[k] = __ldg((const uint4 *)(a.xq + (size_t)s * 256) + 2 * p);
                    v2[P ? k : 0] = __ldg((const uint4 *)(a.xq + (size_t)s * 256) + 2 * p + 1);
                }
            }
        }
#pragma unroll
        for (int k = 0; k < FM; k++) {
            const int i = base + k * (int)blockDim.x + (int)threadIdx.x, s = i / UN, p = i % UN;
            if (i >= total) break;
            uint8_t *o = act + s * F::ACT;
            if (p >= QU) {
                *(uint4 *)(o + 256 + 16 * (p - QU)) = v[k];
            } else if (P) { /* elements 0-15 in v, 16-31 in v2 */
                const uint4 x = v[k], y = v2[P ? k : 0];
                *(uint4 *)(o + 32 * p) = make_uint4(prmt(x.x, y.x, 0x5140), prmt(x.x, y.x, 0x7362),
                                                    prmt(x.y, y.y, 0x5140), prmt(x.y, y.y, 0x7362));
                *(uint4 *)(o + 32 * p + 16) = make_uint4(prmt(x.z, y.z, 0x5140), prmt(x.z, y.z, 0x7362),
                                                         prmt(x.w, y.w, 0x5140), prmt(x.w, y.w, 0x7362));
            } else {
                *(uint4 *)(o + 16 * p) = v[k];
                if (F::SUMS16)
                    *(int *)(o + 320 + 4 * p) =
                        __dp4a((int)v[k].w, 0x01010101,
                               __dp4a((int)v[k].z, 0x01010101,
                                      __dp4a((int)v[k].y, 0x01010101, __dp4a((int)v[k].x, 0x01010101, 0))));
            }
        }
    }
    __syncthreads();
}

/* the row of lane's block in its group's tile j, and that block's place in the row */
template <int G>
__device__ __forceinline__ int t32_row(int j, int lane, int nb, int &sb) {
    const int x = j * 32 + lane;
    int r = 0;
#pragma unroll
    for (int q = 1; q < G; q++) r += x >= q * nb;
    sb = x - r * nb;
    return r;
}

/* What a gemv_t32 launch does after its rows' dots (its epilogue) is the
 * type of its last argument: t32_plain (nothing more), t32_norm (the
 * deferred norm of y) or t32_rope (the attention's Q/K/V epilogue). */
struct t32_plain {
    int unused;
};

/* The deferred RMSNorm of a GEMV's output (gemv_t32 with E = t32_norm): y's rows times w,
 * quantized into qs/ds, and each block's sum of squares into part
 * blockIdx.x of sc, as norm_q8_deferred leaves them for n = n_out (one part a
 * block of 32 rows instead of 256). */
struct t32_norm {
    const float *w;
    int8_t *qs;
    float2 *ds;
    act_scale *sc;
    float eps;
};

/* One token's fused Q/K/V rows (n_q of Q, n_k of K, then V) leave RoPE done
 * and stored, as qkv_rope_kernel (ops.cu) would from y (E = t32_rope): pairs
 * (2i, 2i + 1) of a head's first n_rot dims rotated by p * inv_freq[i] /
 * rope_scale (p = *pos), Q to q (packed as the rows), K and V as f16 into
 * row p of their caches. No bias, no QK-norm, adjacent pairs only: the host
 * checks (nib_cuda_matmul_qkv_rope_ok). */
struct t32_rope {
    float *q;
    __half *k_cache, *v_cache;
    const int32_t *pos;
    const double *inv_freq;
    float rope_scale;
    int n_q, n_k, n_v, hd, n_rot;
};

/* The same with the attention's RMSNorm before it (E = t32_rope_xn): the
 * block reads the residual row x and normalises it itself (t32_fill_xn)
 * instead of reading the norm kernel's activation, so the step loses
 * that kernel too. */
struct t32_rope_xn : t32_rope {
    const float *x, *w; /* the row (n_in) and the norm's weight */
    float eps;
};

template <class E, class T>
constexpr bool t32_is = std::is_same<E, T>::value;

/* What norm_q8_deferred (ops.cu) and t32_fill leave, from the row itself:
 * x * w quantized into the block's activation (quants, (d, s) pairs, and
 * Q6_K's sums of 16; the bits of quantize_warp32, whose max and integer
 * sum do not depend on the order) and the row's ss / n + eps on every lane
 * (act_rs_begin gives it to lane 0 and 0 to the others, for act_rs_end's
 * butterfly, which this saves; the squares summed in another order than
 * the norm kernel's, so the scale may differ from its by an ulp of a double
 * before the rounding to float). Thread t
 * takes elements 1024 k + 4 t .. + 3 of pass k, so 8 lanes quantize a
 * 32-element block (quantize_lanes8x4's arithmetic) with 6 shuffles for 4
 * values a lane: a warp's own shuffles for each 32 values (quantize_warp32's
 * 10, and 10 more for each run's sum in double, ~450 a warp) cost the
 * Llama-3-8B step 10% (bench/gpu-decode-notes.md v97). Every block runs
 * this on the whole row before its first dot, so its latency is the Q/K/V's
 * (v108: ~0.85 us a layer over a plain fill): the passes' shuffles go level
 * by level, all passes at each level (shfl.sync keeps program order, so
 * pass by pass they were four chains of six end to end), with the full
 * mask (an 8-lane group's mask made the compiler check convergence before
 * each), and roundf on the FP32 pipe (round_away_fp32; the conversion unit
 * gives 16 results a clock a multiprocessor, and the squares' conversions to
 * double need it too): Llama-3-8B Q4_K_M tg128 +1.2% (v108). 256 threads;
 * n a multiple of 1024, at most 1024 * T32_XN_PASS; the norm weight wn
 * loaded before pdl_wait. Ends with a barrier. */
#define T32_XN_PASS 4
template <class F>
__device__ __forceinline__ double t32_fill_xn(uint8_t *act, const float *__restrict__ x,
                                              const float4 (&wn)[T32_XN_PASS], int n, float eps, int lane) {
    static_assert(!t32_perm_of<F>::value, "the permuted activation layouts are t32_fill's only");
    __shared__ double ssp[8];
    const int t = (int)threadIdx.x, np = n / 1024;
    float4 xv[T32_XN_PASS];
#pragma unroll
    for (int k = 0; k < T32_XN_PASS; k++)
        xv[k] = k < np ? *(const float4 *)(x + 1024 * k + 4 * t) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    /* quantize_lanes8x4_q's arithmetic on each value, pass by pass, so the
     * same bits; its shuffles level by level across the passes (above).
     * Passes past np run on zeros and store nothing. */
    double ss = 0.0;
    float4 m[T32_XN_PASS];
    float amax[T32_XN_PASS];
#pragma unroll
    for (int k = 0; k < T32_XN_PASS; k++) {
        const float4 v = xv[k];
        if (k < np)
            ss += (double)v.x * (double)v.x + (double)v.y * (double)v.y + (double)v.z * (double)v.z +
                  (double)v.w * (double)v.w;
        m[k] = make_float4(__fmul_rn(v.x, wn[k].x), __fmul_rn(v.y, wn[k].y), __fmul_rn(v.z, wn[k].z),
                           __fmul_rn(v.w, wn[k].w));
        amax[k] = amax4(m[k]);
    }
    /* the row's squares: the warp's sum (levels 16, 8, 4 beside the maxima's) */
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) {
        ss += __shfl_xor_sync(0xFFFFFFFFu, ss, 4 * o);
#pragma unroll
        for (int k = 0; k < T32_XN_PASS; k++) amax[k] = fmaxf(amax[k], __shfl_xor_sync(0xFFFFFFFFu, amax[k], o));
    }
    float d[T32_XN_PASS];
    int sum[T32_XN_PASS];
    char4 q[T32_XN_PASS];
#pragma unroll
    for (int k = 0; k < T32_XN_PASS; k++) q[k] = quantize4_from_amax<true>(m[k], amax[k], d[k], sum[k]);
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) {
        if (o >= 2) ss += __shfl_xor_sync(0xFFFFFFFFu, ss, o / 2); /* levels 2, 1 */
#pragma unroll
        for (int k = 0; k < T32_XN_PASS; k++) sum[k] += __shfl_xor_sync(0xFFFFFFFFu, sum[k], o);
    }
    int s16[T32_XN_PASS];
    if (F::SUMS16) {
#pragma unroll
        for (int k = 0; k < T32_XN_PASS; k++) s16[k] = (int)q[k].x + (int)q[k].y + (int)q[k].z + (int)q[k].w;
#pragma unroll
        for (int o = 1; o <= 2; o <<= 1)
#pragma unroll
            for (int k = 0; k < T32_XN_PASS; k++) s16[k] += __shfl_xor_sync(0xFFFFFFFFu, s16[k], o);
    }
#pragma unroll
    for (int k = 0; k < T32_XN_PASS; k++) {
        if (k >= np) break;
        const int e = 1024 * k + 4 * t, in = e % 256; /* the element, its place in its 256-element block */
        uint8_t *o = act + (e / 256) * F::ACT;
        *(char4 *)(o + in) = q[k];
        if ((lane & 7) == 0) *(float2 *)(o + 256 + 8 * (in / 32)) = make_float2(d[k], d[k] * (float)sum[k]);
        if (F::SUMS16 && (lane & 3) == 0) *(int *)(o + 320 + 4 * (in / 16)) = s16[k];
    }
    if (lane == 0) ssp[t >> 5] = ss;
    __syncthreads();
    /* every lane adds the 8 warps' sums (the same order everywhere, so the
     * bits lane 0 alone had; the reads are broadcasts): no butterfly after */
    double all = 0.0;
#pragma unroll
    for (int i = 0; i < 8; i++) all += ssp[i];
    return all / (double)n + (double)eps;
}

/* the rotation of fused Q/K/V row pair (row, row + 1) at position p
 * (rope.cuh, as qkv_rope_kernel's); (1, 0) for V rows and dims past n_rot */
__device__ __forceinline__ void t32_rope_angle(const t32_rope &e, int row, int p, float &c, float &s) {
    c = 1.0f, s = 0.0f;
    const int d = row % e.hd;
    if (row < e.n_q + e.n_k && d < e.n_rot) rope_cos_sin(p, e.rope_scale, __ldg(e.inv_freq + d / 2), c, s);
}

/* rows (row, row + 1) of the fused Q/K/V output rotated by (c, s) and stored */
__device__ __forceinline__ void t32_rope_store(const t32_rope &e, int row, int p, float x0, float x1, float c,
                                               float s) {
    if (row < e.n_q + e.n_k && row % e.hd < e.n_rot) rope_rotate(x0, x1, c, s);
    if (row < e.n_q) {
        *(float2 *)(e.q + row) = make_float2(x0, x1);
    } else if (row < e.n_q + e.n_k) {
        *(__half2 *)(e.k_cache + (size_t)p * e.n_k + (row - e.n_q)) = __floats2half2_rn(x0, x1);
    } else {
        *(__half2 *)(e.v_cache + (size_t)p * e.n_v + (row - e.n_q - e.n_k)) = __floats2half2_rn(x0, x1);
    }
}

/* gemv_t32's body, as blocks [0, n_blocks) of a grid (block: this one):
 * y[row] = W[row] . x (+ y[row] when add) for one token. GLU: W is a
 * gate/up pair tiled as one matrix of interleaved rows (gate i at 2i, up i at
 * 2i + 1; G even), and h[i] = act(gate i . x) * (up i . x) goes to y[i].
 * best: the fused argmax's key (row_key, gemv_kernels.cuh), or NULL. Shared
 * memory: t32_smem_bytes<F>(n_in). Launch any grid: warps loop over row groups.
 * E, the epilogue:
 * - t32_norm (WARPS * G == 32): a block's warps take one group each, the
 *   block's 32 rows, and after them the block normalises those rows into e
 *   (t32_norm): the grid must be exactly n_out / 32 blocks. So the output
 *   projection leaves the FFN's norm done and the step loses that kernel.
 * - t32_rope (G even, one token): a group's rows are whole RoPE pairs, so
 *   lane 0 rotates and stores them (t32_rope) where y would have gone: the
 *   step loses qkv_rope. Each lane works out one of its warp's pairs' angle
 *   before pdl_wait (p is in the io block, copied in before the step), so a
 *   warp takes at most 32 pairs (the launcher checks): the double cos and
 *   sin stay out of the loop, whose registers they would raise past 128.
 *   W's rows are the fused rows from row_base on (gemv_t32_qkv2's V part).
 * - t32_rope_xn (8 warps): t32_rope after the attention's deferred norm of
 *   e.x, done by every block into its own activation (t32_fill_xn): a is
 *   not read.
 * TWO: two tile buffers, the next tile asked for before the dot; else one,
 * the next tile asked for right after the dot that frees the registers (in
 * flight through the accumulate and a group's epilogue). Where a warp takes
 * many tiles one buffer is faster at the same two blocks a multiprocessor
 * (the Llama-3-8B gate/up pair 19.1 -> 18.3 us, 7 tiles a warp; kernel lab,
 * PDL graph); where it takes one or two, two buffers keep the second tile's
 * latency under the first dot (the 8B's Q/K/V, 1.5 tiles a warp, and
 * Llama-3.2-1B's gate/up pair lost with one: bench/gpu-decode-notes.md
 * v98). The launchers choose (t32_plan: w->t32_two). */
template <class F, int WARPS, int G, bool GLU, class E, bool TWO>
__device__ __forceinline__ void t32_body(const uint8_t *__restrict__ Wt, const act_q8 &a, float *__restrict__ y,
                                         int n_in, int n_out, int add, int act, unsigned long long *best, const E &e,
                                         int block, int n_blocks, int row_base) {
    constexpr bool NORM = t32_is<E, t32_norm>, XN = t32_is<E, t32_rope_xn>, ROPE = t32_is<E, t32_rope> || XN;
    static_assert(!XN || WARPS == 8, "the in-kernel norm: 256 threads, the norm kernel's");
    uint8_t *const t32_act = t32_act_smem<F>();
    static_assert(!GLU || G % 2 == 0, "a GLU group holds whole (gate, up) pairs");
    static_assert(!NORM || (WARPS * G == 32 && !GLU), "a norm block is 32 rows, a group a warp");
    static_assert(!ROPE || (G % 2 == 0 && !GLU), "a RoPE group holds whole pairs");
    __shared__ float x_norm[NORM ? 32 : 1];
    pdl_launch_dependents();
    /* the norm weight of this block's rows: a weight, read before the wait */
    float w_norm = 0.0f;
    if constexpr (NORM) w_norm = threadIdx.x < 32 ? __ldg(e.w + block * 32 + threadIdx.x) : 0.0f;
    const int lane = threadIdx.x & 31;
    const int nb = n_in / F::QK, T = G * nb / 32; /* tiles a group */
    float4 wn[XN ? T32_XN_PASS : 1]; /* XN: the attention norm's weight, thread t's 4 of each pass */
    if constexpr (XN) {
#pragma unroll
        for (int k = 0; k < T32_XN_PASS; k++)
            wn[k] = 1024 * k < n_in ? __ldg((const float4 *)(e.w + 1024 * k) + threadIdx.x) : make_float4(0, 0, 0, 0);
    }
    const int n_groups = (n_out + G - 1) / G;
    const int gw = block * WARPS + (threadIdx.x >> 5), n_warps = n_blocks * WARPS;
    const int count = gw < n_groups ? ((n_groups - 1 - gw) / n_warps + 1) * T : 0; /* tiles this warp takes */
    int lg = gw, lj = 0; /* the load cursor: group lg, its tile lj */
    auto load = [&](t32_w<F::CH, F::SIDE> &w) {
        t32_load<F>(Wt, (size_t)lg * T + lj, lane, w);
        if (++lj == T) lj = 0, lg += n_warps;
    };
    t32_w<F::CH, F::SIDE> A, B;
    if (count > 0) load(A); /* weights depend on no kernel: before the wait */
    /* ROPE: lane l's angle, of its warp's pair l (group l / (G / 2)) */
    int pos = 0;
    float rc = 1.0f, rsn = 0.0f;
    if constexpr (ROPE) {
        pos = *e.pos;
        t32_rope_angle(e, row_base + (gw + lane / (G / 2) * n_warps) * G + 2 * (lane % (G / 2)), pos, rc, rsn);
    }
    t32_prepare<F>();
    pdl_wait();
    /* the row scale's loads in flight with the fill's (a gate/up pair reads
     * all the parts: the output projection's fused norm leaves 128) */
    act_rs4 rs4 = {0.0, 0.0, 0.0, 0.0};
    double rsp = 0.0;
    if constexpr (XN) {
        rsp = t32_fill_xn<F>(t32_act, e.x, wn, n_in, e.eps, lane);
    } else {
        if constexpr (GLU) rs4 = act_rs_load4(a, lane);
        else rsp = act_rs_begin(a, lane);
        t32_fill<F>(t32_act, a, nb);
        if constexpr (GLU) rsp = act_rs_fold(rs4);
    }
    unsigned long long mine = 0;
    if (count > 0) {
        const float rs = XN ? act_rs_of(rsp) : act_rs_end(rsp); /* XN: every lane has the whole sum */
        float acc[G];
#pragma unroll
        for (int q = 0; q < G; q++) acc[q] = 0.0f;
        int cg = gw, cj = 0, ck = 0; /* the compute cursor; ck: the warp's groups done */
        auto dot = [&](const t32_w<F::CH, F::SIDE> &w, int &r) {
            int sb;
            r = t32_row<G>(cj, lane, nb, sb);
            return F::dot(w, t32_act + sb * F::ACT);
        };
        auto step = [&](float v, int r) { /* a tile's dot into its row; a group's epilogue after its last */
#pragma unroll
            for (int q = 0; q < G; q++) acc[q] += r == q ? v : 0.0f;
            if (++cj == T) { /* the group's rows are complete */
                float out[G];
#pragma unroll
                for (int q = 0; q < G; q++) out[q] = warp_sum(acc[q]) * rs, acc[q] = 0.0f;
                float pc[ROPE ? G / 2 : 1], ps[ROPE ? G / 2 : 1];
                /* the pragma inside the braces: before a discarded if constexpr
                 * nvcc applied it to the lane-0 loop below and dropped that loop */
                if constexpr (ROPE) {
#pragma unroll
                    for (int q = 0; q < G / 2; q++) { /* the lane's angle that holds this pair's */
                        const int f = ck * (G / 2) + q;
                        pc[q] = __shfl_sync(0xFFFFFFFFu, rc, f), ps[q] = __shfl_sync(0xFFFFFFFFu, rsn, f);
                    }
                }
                if (lane == 0)
#pragma unroll
                    for (int q = 0; q < G; q += GLU || ROPE ? 2 : 1) {
                        const int row = cg * G + q;
                        if (row >= n_out) break;
                        if constexpr (ROPE) {
                            t32_rope_store(e, row_base + row, pos, out[q], out[q + 1], pc[q / 2], ps[q / 2]);
                        } else if (GLU) {
                            y[row / 2] = glu_act(act, out[q]) * out[q + 1];
                        } else {
                            const float v2 = add ? y[row] + out[q] : out[q];
                            y[row] = v2;
                            if (NORM) x_norm[row & 31] = v2;
                            const unsigned long long k = row_key(v2, row);
                            mine = k > mine ? k : mine;
                        }
                    }
                cj = 0, cg += n_warps, ck++;
            }
        };
        int r;
        if constexpr (TWO) {
            for (int k = 0; k < count; k += 2) {
                if (k + 1 < count) load(B);
                float v = dot(A, r);
                step(v, r);
                if (k + 2 < count) load(A);
                if (k + 1 < count) v = dot(B, r), step(v, r);
            }
        } else {
            for (int k = 0; k < count; k++) {
                const float v = dot(A, r);
                if (k + 1 < count) load(A); /* the buffer is free: the next tile in flight through the epilogue */
                step(v, r);
            }
        }
    }
    if constexpr (NORM) { /* norm_q8_deferred's arithmetic on this block's 32 rows */
        __syncthreads();
        if (threadIdx.x < 32) {
            const int row = block * 32 + lane;
            const float v = x_norm[lane];
            quantize_warp32(__fmul_rn(v, w_norm), e.qs + row, e.ds + row / 32);
            double ss = (double)v * (double)v;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xFFFFFFFFu, ss, o);
            ss /= (double)n_out;
            if (lane == 0) e.sc->part[block] = block == 0 ? ss + (double)e.eps : ss;
            if (block == 0) act_scale_clear(e.sc, n_blocks, lane, 32);
        }
    }
    if (best) block_offer_best(best, mine);
}
template <class F, int WARPS, int G, bool GLU, class E = t32_plain, bool TWO = false>
__global__ void __launch_bounds__(WARPS * 32)
gemv_t32(const uint8_t *__restrict__ Wt, act_q8 a, float *__restrict__ y, int n_in, int n_out, int add, int act,
         unsigned long long *best, E e) {
    t32_body<F, WARPS, G, GLU, E, TWO>(Wt, a, y, n_in, n_out, add, act, best, e, (int)blockIdx.x, (int)gridDim.x, 0);
}

/* One token's Q/K/V where V's format differs (Llama-3's Q4_K_M layers with
 * a Q6_K V): the fused Q/K rows (format FA) and the V rows (FB), each tiled
 * in G-row groups, in one grid with the RoPE epilogue: blocks [0, g_a) run
 * the Q/K part, the rest the V part (rows n_a on of the fused rows), a block
 * one body so its barriers stay block-uniform. The V part takes a tile a
 * warp (the launcher sizes it so: one buffer, which keeps Q6_K's registers
 * with Q4_K's under 128 and two 8-warp blocks a multiprocessor); the Q/K
 * part one or two (two buffers). Shared memory: the larger of the two
 * formats' t32_smem_bytes. */
template <class FA, class FB, int WARPS, int G, class E>
__global__ void __launch_bounds__(WARPS * 32)
gemv_t32_qkv2(const uint8_t *__restrict__ Wa, int n_a, const uint8_t *__restrict__ Wb, int n_b, act_q8 a, int n_in,
              int g_a, E e) {
    if ((int)blockIdx.x < g_a)
        t32_body<FA, WARPS, G, false, E, true>(Wa, a, NULL, n_in, n_a, 0, 0, NULL, e, (int)blockIdx.x, g_a, 0);
    else
        t32_body<FB, WARPS, G, false, E, false>(Wb, a, NULL, n_in, n_b, 0, 0, NULL, e, (int)blockIdx.x - g_a,
                                                (int)gridDim.x - g_a, n_a);
}

/* Split K for long rows: the T tiles of a group go to the T warps of a block
 * (WARPS == T, checked by the launcher), one each, and the warps add their
 * parts through shared memory; blocks loop over groups. A 14336-wide Q4_K
 * row group (G = 4, T = 7) is otherwise one warp's 7 tiles in a row, and
 * 4096 rows make only 1024 such warps.
 * One tile buffer: a warp asks for its next group's tile right after the
 * dot that frees the registers, so the loads are in flight through the
 * group's warp sums and barrier. TWO: two buffers, the next tile asked
 * for before the dot and the one after it once the barrier is passed (121
 * registers on Q4_K against 105). One buffer was faster at the same two
 * blocks a multiprocessor for 17 formats of 20 and level for IQ1_M
 * (14336 x 4096, kernel lab, PDL graph: Q4_K 12.9 -> 11.6 us, Q6_K 14.6 ->
 * 14.4, Q2_K 11.6 -> 9.9); IQ2_XXS (12.6 -> 14.7) and Q3_K (13.8 -> 14.3)
 * keep two, by their table rows (bench/gpu-decode-notes.md v98). */
template <class F, int WARPS, int G, bool TWO>
__global__ void __launch_bounds__(WARPS * 32)
gemv_t32_ks(const uint8_t *__restrict__ Wt, act_q8 a, float *__restrict__ y, int n_in, int n_out, int add) {
    uint8_t *const t32_act = t32_act_smem<F>();
    __shared__ float part[2][WARPS][G];
    pdl_launch_dependents();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nb = n_in / F::QK;
    const int n_groups = (n_out + G - 1) / G;
    const int count = (int)blockIdx.x < n_groups ? (n_groups - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
    int sb;
    const int r = t32_row<G>(warp, lane, nb, sb); /* the same tile of every group */
    t32_w<F::CH, F::SIDE> A;
    if (count > 0) t32_load<F>(Wt, (size_t)blockIdx.x * WARPS + warp, lane, A);
    t32_prepare<F>();
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    t32_fill<F>(t32_act, a, nb);
    const float rs = act_rs_end(rsp);
    const uint8_t *xa = t32_act + sb * F::ACT;
    auto tile = [&](int k) { return ((size_t)blockIdx.x + (size_t)k * gridDim.x) * WARPS + warp; };
    auto finish = [&](float v, int k) { /* group k's rows from the warps' parts */
        float out[G];
#pragma unroll
        for (int q = 0; q < G; q++) out[q] = warp_sum(r == q ? v : 0.0f);
        if (lane == 0)
#pragma unroll
            for (int q = 0; q < G; q++) part[k & 1][warp][q] = out[q];
        __syncthreads();
        if (warp == 0 && lane < G) {
            float s = 0.0f;
#pragma unroll
            for (int w2 = 0; w2 < WARPS; w2++) s += part[k & 1][w2][lane];
            const int row = ((int)blockIdx.x + k * (int)gridDim.x) * G + lane;
            if (row < n_out) y[row] = add ? y[row] + s * rs : s * rs;
        }
    };
    if constexpr (TWO) {
        t32_w<F::CH, F::SIDE> B;
        for (int k = 0; k < count; k += 2) {
            if (k + 1 < count) t32_load<F>(Wt, tile(k + 1), lane, B);
            finish(F::dot(A, xa), k);
            if (k + 2 < count) t32_load<F>(Wt, tile(k + 2), lane, A);
            if (k + 1 < count) finish(F::dot(B, xa), k + 1);
        }
    } else {
        for (int k = 0; k < count; k++) {
            const float v = F::dot(A, xa);
            if (k + 1 < count) t32_load<F>(Wt, tile(k + 1), lane, A);
            finish(v, k);
        }
    }
}

/* Rows whose blocks fill whole tiles only in groups of 8, 16 or 32 (rows of
 * 3584 elements: 14 blocks, 16 rows a group of 7 tiles; 18944: 74 blocks, 37
 * tiles; 5120: 20 blocks, 8 rows, 5 tiles; Gemma 3 12B's 3840: 15 blocks, 32
 * rows, 15 tiles; 27B's 5376: 21 blocks, 32 rows, 21 tiles). A block takes a
 * group at a time, its warps the group's tiles (tile j to warp j % WARPS), and
 * every lane's block dot goes to shared memory at its place in the group (seg:
 * the group's G * nb blocks in order, two groups' worth, alternating); after
 * the block's barrier, warp w sums rows w, w + WARPS, ... (a row's nb dots, a
 * lane each, then one warp sum), the gate/up pair's rows together (GLU). So a
 * group costs one barrier and G / WARPS warp sums a warp, where G accumulators
 * and G warp sums a warp, per tile, had lost (v74). G, T and WARPS (the
 * block's warps, up to MAX_WARPS: t32_seg_warps picks them from T) are the
 * launch's, so there is no instance per G or per warp count. Shared memory:
 * t32_seg_smem_bytes<F>(n_in, G). best: as gemv_t32. */
template <class F>
constexpr int t32_seg_smem_bytes(int n_in, int g) {
    return t32_smem_bytes<F>(n_in) + 2 * (g * (n_in / F::QK)) * (int)sizeof(float);
}
template <class F, int MAX_WARPS, bool GLU>
__global__ void __launch_bounds__(MAX_WARPS * 32)
gemv_t32_seg(const uint8_t *__restrict__ Wt, act_q8 a, float *__restrict__ y, int n_in, int n_out, int add, int act,
             int G, unsigned long long *best) {
    uint8_t *const t32_act = t32_act_smem<F>();
    const int nb = n_in / F::QK, T = G * nb / 32;
    float *const seg = (float *)(t32_act + nb * F::ACT); /* F::ACT is a multiple of 16 */
    pdl_launch_dependents();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, WARPS = (int)blockDim.x >> 5; /* t32_seg_warps */
    const int n_groups = (n_out + G - 1) / G;
    const int count = (int)blockIdx.x < n_groups ? (n_groups - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
    const int per = warp < T ? (T - 1 - warp) / WARPS + 1 : 0; /* tiles a group this warp takes */
    int lk = 0, li = 0; /* the load cursor (items in order): group lk, its tile li */
    auto load = [&](t32_w<F::CH, F::SIDE> &w) {
        t32_load<F>(Wt, ((size_t)blockIdx.x + (size_t)lk * gridDim.x) * T + warp + li * WARPS, lane, w);
        if (++li == per) li = 0, ++lk;
    };
    t32_w<F::CH, F::SIDE> A, B;
    const int items = count * per; /* this warp's tiles in all; item n in A when n is even, else in B */
    if (items > 0) load(A);
    t32_prepare<F>();
    pdl_wait();
    const double rsp = act_rs_begin(a, lane);
    t32_fill<F>(t32_act, a, nb);
    if (items > 1) load(B);
    const float rs = act_rs_end(rsp);
    unsigned long long mine = 0;
    auto step = [&](const t32_w<F::CH, F::SIDE> &w, int k, int i) {
        const int b = (warp + i * WARPS) * 32 + lane; /* the lane's block in the group */
        seg[(k & 1) * G * nb + b] = F::dot(w, t32_act + (b % nb) * F::ACT);
    };
    auto rows = [&](int k) { /* after the barrier: group k's rows from seg */
        const float *s = seg + (k & 1) * G * nb;
        const int g0 = ((int)blockIdx.x + k * (int)gridDim.x) * G;
        for (int q = warp; q < (GLU ? G / 2 : G); q += WARPS) {
            const int r0 = GLU ? 2 * q : q;
            float v0 = 0.0f, v1 = 0.0f;
            for (int l = lane; l < nb; l += 32) {
                v0 += s[r0 * nb + l];
                if (GLU) v1 += s[(r0 + 1) * nb + l];
            }
            v0 = warp_sum(v0) * rs;
            if (GLU) v1 = warp_sum(v1) * rs;
            const int row = g0 + r0;
            if (lane == 0 && row < n_out) {
                if (GLU) {
                    y[row / 2] = glu_act(act, v0) * v1;
                } else {
                    const float v2 = add ? y[row] + v0 : v0;
                    y[row] = v2;
                    const unsigned long long key = row_key(v2, row);
                    mine = key > mine ? key : mine;
                }
            }
        }
    };
    int n = 0; /* this warp's item */
    for (int k = 0; k < count; k++) { /* the same count for every warp: the barriers match */
        for (int i = 0; i < per; i++, n++) {
            if ((n & 1) == 0) {
                step(A, k, i);
                if (n + 2 < items) load(A);
            } else {
                step(B, k, i);
                if (n + 2 < items) load(B);
            }
        }
        __syncthreads();
        rows(k);
    }
    if (best) block_offer_best(best, mine);
}

#endif
