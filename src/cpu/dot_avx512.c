/* AVX-512 VNNI dots: Q4_0, Q5_0, Q8_0 (with Q8_0), Q4_1, Q5_1 (with Q8_1) and
 * Q2_K, Q3_K, Q4_K, Q6_K, TQ2_0, IQ4_XS (with Q8_K), and IQ4_NL, MXFP4 (with
 * Q8_0, on the Q4_0 body: their nibbles index a table of 16 levels). The kernels of the packed layouts (cpu/repack.h)
 * are in dot_packed_avx512.c.
 *
 * What VNNI changes: vpdpbusd sums four u8 x s8 products into an int32 lane
 * with no int16 stage (replacing maddubs + madd + add), and vpdpwssd
 * multiplies int16 pairs and accumulates into int32 (replacing madd + add
 * where a per-sub-block int16 scale is applied). The integer part stays
 * exact, as in the reference; the fp32 part differs only by reassociation,
 * as for AVX2.
 *
 * Register width, chosen by measurement (bench/cpu_matmul.c --kernels, Xeon
 * with AVX-512 VNNI, 1 thread, in cache):
 *  - Q4_0/Q5_0/Q8_0 put two 32-element blocks in a 512-bit register (pair_dot
 *    below). An earlier measurement on another Xeon had rejected that form
 *    (each activation pair needs a load + vinserti64x4, the two blocks'
 *    scales a blend: Q8_0 0.097 ns per element against 0.087 for the 256-bit
 *    VNNI form); on an AMD EPYC with AVX-512 VNNI it wins over the 256-bit
 *    form it replaced, ns per element per token, vec_dot / x4: Q4_0 0.0337 /
 *    0.0210 -> 0.0321 / 0.0194, Q8_0 0.0238 / 0.0177 -> 0.0226 / 0.0166,
 *    and Q5_0 (AVX2 before) 0.0412 / 0.0251 -> 0.0402 / 0.0213.
 *  - Q4_K/Q6_K use 512-bit registers: a super-block's 64-element steps line
 *    up with 64 contiguous activation bytes, so nothing needs inserting per
 *    token (Q6_K 0.074 against 0.131 for AVX2; Q4_K 0.083 against 0.099).
 *
 * As in the AVX2 files, each body serves a single-token vec_dot and an x4
 * form (four activation rows, weights decoded once) with identical per-token
 * operations, so a token's result does not depend on its batch.
 *
 * Signed x signed uses the sign trick (|x| as u8, y with x's sign; y is never
 * -128, see simd_avx2.h). tests/test_cpu.c runs these where the CPU has
 * AVX-512 VNNI and skips them, with the reason, where it has not.
 */
#include <stdbool.h>

#include "cpu/cpu_internal.h"
#include "cpu/kquant_scales.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/formats.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NT_MAX 4

/* ---- Q4_0, Q5_0, Q8_0 with Q8_0, two blocks a 512-bit register -------------------------
 * A register holds blocks i and i+1 of the weight row (decoded once for all
 * the tokens of a call) and of a token's activations (two 32-byte loads, one
 * insert); the sign trick is a masked negate (AVX-512 has no vpsignb on 512
 * bits; the mask comes from the weights, once per pair), and the two blocks'
 * scale products go in as one blend of two broadcasts. An odd last block
 * takes a 256-bit step of the same operations. */
typedef enum { PAIR_Q4_0, PAIR_Q5_0, PAIR_Q8_0, PAIR_IQ4_NL, PAIR_MXFP4 } pair_fmt;

static ALWAYS_INLINE size_t pair_block_bytes(pair_fmt f) {
    return f == PAIR_Q4_0     ? sizeof(block_q4_0)
           : f == PAIR_Q5_0   ? sizeof(block_q5_0)
           : f == PAIR_IQ4_NL ? sizeof(block_iq4_nl)
           : f == PAIR_MXFP4  ? sizeof(block_mxfp4)
                              : sizeof(block_q8_0);
}

/* a block's 32 signed codes: Q4_0 nibble - 8; Q5_0 the nibble with 0xF0 or-ed
 * in where the fifth bit is clear (as int8: nibble - 16; set: the nibble, i.e.
 * nibble + 16 - 16); Q8_0 the bytes */
static ALWAYS_INLINE __m256i pair_codes(pair_fmt f, const uint8_t *blk) {
    if (f == PAIR_Q4_0) return _mm256_sub_epi8(simd_legacy_nibbles(((const block_q4_0 *)blk)->qs), _mm256_set1_epi8(8));
    if (f == PAIR_IQ4_NL || f == PAIR_MXFP4) { /* the nibbles index 16 levels (dot_iq_avx2.c) */
        const int8_t *lv = f == PAIR_MXFP4 ? nib_mxfp4_levels : nib_iq4_levels;
        const uint8_t *qs = f == PAIR_MXFP4 ? ((const block_mxfp4 *)blk)->qs : ((const block_iq4_nl *)blk)->qs;
        return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)lv)),
                                   simd_legacy_nibbles(qs));
    }
    if (f == PAIR_Q5_0) {
        const block_q5_0 *b = (const block_q5_0 *)blk;
        uint32_t h;
        memcpy(&h, b->qh, 4);
        const __m256i nib = simd_legacy_nibbles(b->qs);
        return _mm256_mask_blend_epi8((__mmask32)~h, nib, _mm256_or_si256(nib, _mm256_set1_epi8((char)0xF0)));
    }
    return _mm256_loadu_si256((const __m256i *)((const block_q8_0 *)blk)->qs);
}

/* the fp16 d every legacy weight and Q8_0 activation block starts with */
static ALWAYS_INLINE float pair_d(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return simd_fp16_to_f32(h);
}

/* a weight block's scale: pair_d, or MXFP4's half E8M0 scale */
static ALWAYS_INLINE float pair_wd(pair_fmt f, const uint8_t *blk) {
    return f == PAIR_MXFP4 ? nib_mxfp4_half_scale(blk[0]) : pair_d(blk);
}

/* R weight rows (w0, w0 + w_stride) x nt tokens. Per row the codes, their
 * magnitudes and signs and the two blocks' scales are decoded once; per
 * token the activations and their scales are loaded once for the R rows. A
 * (row, token)'s operations are the same whatever R and nt are, so every
 * form gives each of them the same bits. */
static ALWAYS_INLINE void pair_step(pair_fmt f, int R, int nt, const uint8_t *w0, size_t w_stride, const uint8_t *a,
                                    size_t a_stride, int64_t i, __m512 (*acc)[NT_MAX]) {
    __m512i u[2];
    __mmask64 neg[2];
    float d0[2], d1[2];
    __m512 dw[2];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        const uint8_t *wr = w0 + (size_t)r * w_stride, *w1 = wr + pair_block_bytes(f);
        const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(pair_codes(f, wr)), pair_codes(f, w1), 1);
        u[r] = _mm512_abs_epi8(q);
        neg[r] = _mm512_movepi8_mask(q);
        d0[r] = pair_wd(f, wr), d1[r] = pair_wd(f, w1);
        if (R > 1) dw[r] = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d0[r]), _mm512_set1_ps(d1[r]));
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        const block_q8_0 *y = (const block_q8_0 *)(a + (size_t)t * a_stride) + i;
        const __m512i yv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[0].qs)),
                                              _mm256_loadu_si256((const __m256i *)y[1].qs), 1);
        const float dy0 = pair_d((const uint8_t *)&y[0]), dy1 = pair_d((const uint8_t *)&y[1]);
        /* the scale products d_w d_a: two scalar products broadcast for one
         * row; for two, one vector product a row of [d0 x8, d1 x8] and the
         * token's [dy0 x8, dy1 x8] (the same products lane by lane; each
         * form measured fastest where it is used) */
        const __m512 dy =
            R > 1 ? _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(dy0), _mm512_set1_ps(dy1)) : _mm512_setzero_ps();
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            const __m512i sy = _mm512_mask_sub_epi8(yv, neg[r], _mm512_setzero_si512(), yv);
            const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[r], sy);
            const __m512 sc =
                R > 1 ? _mm512_mul_ps(dw[r], dy)
                      : _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d0[r] * dy0), _mm512_set1_ps(d1[r] * dy1));
            acc[r][t] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(s), acc[r][t]);
        }
    }
}

/* the odd last block: the same operations on 256 bits */
static ALWAYS_INLINE void pair_tail(pair_fmt f, int R, int nt, const uint8_t *w0, size_t w_stride, const uint8_t *a,
                                    size_t a_stride, int64_t i, __m256 (*acc)[NT_MAX]) {
    __m256i u[2];
    __mmask32 neg[2];
    float d0[2];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        const uint8_t *wr = w0 + (size_t)r * w_stride;
        const __m256i q = pair_codes(f, wr);
        u[r] = _mm256_abs_epi8(q);
        neg[r] = _mm256_movepi8_mask(q);
        d0[r] = pair_wd(f, wr);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        const block_q8_0 *y = (const block_q8_0 *)(a + (size_t)t * a_stride) + i;
        const __m256i yv = _mm256_loadu_si256((const __m256i *)y->qs);
        const float dy = pair_d((const uint8_t *)y);
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            const __m256i sy = _mm256_mask_sub_epi8(yv, neg[r], _mm256_setzero_si256(), yv);
            const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u[r], sy);
            acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(d0[r] * dy), _mm256_cvtepi32_ps(s), acc[r][t]);
        }
    }
}

/* out[r * nt + t] = row r . token t */
static ALWAYS_INLINE void pair_dot(pair_fmt f, int R, int nt, int64_t n, const void *w, size_t w_stride,
                                   const void *a, size_t a_stride, float *out) {
    const uint8_t *wb = (const uint8_t *)w;
    const size_t bb = pair_block_bytes(f);
    const int64_t nb = n / 32;
    __m512 acc[2][NT_MAX];
    __m256 tail[2][NT_MAX];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) acc[r][t] = _mm512_setzero_ps(), tail[r][t] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) pair_step(f, R, nt, wb + (size_t)i * bb, w_stride, (const uint8_t *)a, a_stride, i, acc);
    if (i < nb) pair_tail(f, R, nt, wb + (size_t)i * bb, w_stride, (const uint8_t *)a, a_stride, i, tail);
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) out[r * nt + t] = _mm512_reduce_add_ps(acc[r][t]) + simd_hsum_f32x8(tail[r][t]);
}

/* A format's three entry points from one body (BODY: pair_dot or mpair_dot):
 * cpu_dot_NAME_avx512 (one row, one token), _x4 (one row, four tokens) and
 * _2x4 (two rows, four tokens), as cpu_internal.h declares them. */
#define DOT_FORMS(NAME, BODY, FMT)                                                                              \
    float cpu_dot_##NAME##_avx512(int64_t n, const void *w, const void *a) {                                  \
        float r;                                                                                              \
        BODY(FMT, 1, 1, n, w, 0, a, 0, &r);                                                                   \
        return r;                                                                                             \
    }                                                                                                         \
    void cpu_dot_##NAME##_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {   \
        BODY(FMT, 1, 4, n, w, 0, a, a_stride, out);                                                           \
    }                                                                                                         \
    void cpu_dot_##NAME##_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride, \
                                     float *out) {                                                            \
        BODY(FMT, 2, 4, n, w, w_stride, a, a_stride, out);                                                    \
    }

DOT_FORMS(q4_0_q8_0, pair_dot, PAIR_Q4_0)
DOT_FORMS(q5_0_q8_0, pair_dot, PAIR_Q5_0)
DOT_FORMS(q8_0_q8_0, pair_dot, PAIR_Q8_0)
DOT_FORMS(iq4_nl_q8_0, pair_dot, PAIR_IQ4_NL)
DOT_FORMS(mxfp4_q8_0, pair_dot, PAIR_MXFP4)

/* ---- Q4_1, Q5_1 with Q8_1, two blocks a 512-bit register --------------------------------
 * x = d q + m with q unsigned (0..15, 0..31), so no sign trick: vpdpbusd takes
 * q as the u8 operand and the activations as they are. The offset's share of
 * a block, m d_a sum(y), is m times the Q8_1 block's s: the pair products
 * [d_w d_a, m s] of a block are one multiply of the two fp16 pairs each block
 * starts with (as the AVX2 file does); the m s lanes add up apart. */
typedef enum { MPAIR_Q4_1, MPAIR_Q5_1 } mpair_fmt;

static ALWAYS_INLINE size_t mpair_block_bytes(mpair_fmt f) {
    return f == MPAIR_Q4_1 ? sizeof(block_q4_1) : sizeof(block_q5_1);
}

/* a block's 32 unsigned codes: the nibbles, and for Q5_1 0x10 or-ed in where the fifth bit is set */
static ALWAYS_INLINE __m256i mpair_codes(mpair_fmt f, const uint8_t *blk) {
    if (f == MPAIR_Q4_1) return simd_legacy_nibbles(((const block_q4_1 *)blk)->qs);
    const block_q5_1 *b = (const block_q5_1 *)blk;
    uint32_t h;
    memcpy(&h, b->qh, 4);
    const __m256i nib = simd_legacy_nibbles(b->qs);
    return _mm256_mask_blend_epi8((__mmask32)h, nib, _mm256_or_si256(nib, _mm256_set1_epi8(0x10)));
}

/* R weight rows x nt tokens, each activation pair and its fp16 pairs loaded
 * once for the R rows; a (row, token)'s operations are those of R = 1 */
static ALWAYS_INLINE void mpair_step(mpair_fmt f, int R, int nt, const uint8_t *w0, size_t w_stride, const uint8_t *a,
                                     size_t a_stride, int64_t i, __m512 (*acc)[NT_MAX], __m128 (*mins)[NT_MAX]) {
    __m512i q[2];
    __m128 wd0[2], wd1[2];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        const uint8_t *wr = w0 + (size_t)r * w_stride, *w1 = wr + mpair_block_bytes(f);
        q[r] = _mm512_inserti64x4(_mm512_castsi256_si512(mpair_codes(f, wr)), mpair_codes(f, w1), 1);
        wd0[r] = simd_half2(wr), wd1[r] = simd_half2(w1);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        const block_q8_1 *y = (const block_q8_1 *)(a + (size_t)t * a_stride) + i;
        const __m512i yv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[0].qs)),
                                              _mm256_loadu_si256((const __m256i *)y[1].qs), 1);
        const __m128 y0 = simd_half2(&y[0]), y1 = simd_half2(&y[1]);
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[r], yv);
            const __m128 p0 = _mm_mul_ps(wd0[r], y0), p1 = _mm_mul_ps(wd1[r], y1);
            const __m512 sc = _mm512_mask_blend_ps(0xFF00, _mm512_broadcastss_ps(p0), _mm512_broadcastss_ps(p1));
            acc[r][t] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(s), acc[r][t]);
            mins[r][t] = _mm_add_ps(mins[r][t], _mm_add_ps(p0, p1));
        }
    }
}

static ALWAYS_INLINE void mpair_tail(mpair_fmt f, int R, int nt, const uint8_t *w0, size_t w_stride, const uint8_t *a,
                                     size_t a_stride, int64_t i, __m256 (*acc)[NT_MAX], __m128 (*mins)[NT_MAX]) {
    __m256i q[2];
    __m128 wd0[2];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        const uint8_t *wr = w0 + (size_t)r * w_stride;
        q[r] = mpair_codes(f, wr);
        wd0[r] = simd_half2(wr);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        const block_q8_1 *y = (const block_q8_1 *)(a + (size_t)t * a_stride) + i;
        const __m256i yv = _mm256_loadu_si256((const __m256i *)y->qs);
        const __m128 y0 = simd_half2(y);
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q[r], yv);
            const __m128 p0 = _mm_mul_ps(wd0[r], y0);
            acc[r][t] = _mm256_fmadd_ps(_mm256_broadcastss_ps(p0), _mm256_cvtepi32_ps(s), acc[r][t]);
            mins[r][t] = _mm_add_ps(mins[r][t], p0);
        }
    }
}

/* out[r * nt + t] = row r . token t */
static ALWAYS_INLINE void mpair_dot(mpair_fmt f, int R, int nt, int64_t n, const void *w, size_t w_stride,
                                    const void *a, size_t a_stride, float *out) {
    const uint8_t *wb = (const uint8_t *)w;
    const size_t bb = mpair_block_bytes(f);
    const int64_t nb = n / 32;
    __m512 acc[2][NT_MAX];
    __m256 tail[2][NT_MAX];
    __m128 mins[2][NT_MAX];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            acc[r][t] = _mm512_setzero_ps(), tail[r][t] = _mm256_setzero_ps(), mins[r][t] = _mm_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2)
        mpair_step(f, R, nt, wb + (size_t)i * bb, w_stride, (const uint8_t *)a, a_stride, i, acc, mins);
    if (i < nb) mpair_tail(f, R, nt, wb + (size_t)i * bb, w_stride, (const uint8_t *)a, a_stride, i, tail, mins);
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            out[r * nt + t] = _mm512_reduce_add_ps(acc[r][t]) + simd_hsum_f32x8(tail[r][t]) +
                              _mm_cvtss_f32(_mm_movehdup_ps(mins[r][t]));
}

DOT_FORMS(q4_1_q8_1, mpair_dot, MPAIR_Q4_1)
DOT_FORMS(q5_1_q8_1, mpair_dot, MPAIR_Q5_1)

/* ---- Q4_K x Q8_K -----------------------------------------------------------------
 * Step j takes qs[32j..32j+31]: the low nibbles are sub-block 2j (elements
 * 64j..64j+31), the high nibbles sub-block 2j+1 (64j+32..64j+63), which is
 * exactly the order of the 64 activation bytes at 64j. vpdpbusd makes int32
 * sums of 4 (at most 4*15*128, so they fit int16); two steps' sums pack into
 * int16 (packs, within 128-bit lanes: lane k holds 4 sums of step 2p then 4
 * of step 2p+1, of sub-blocks 4p + k/2 and 4p + 2 + k/2) and one vpdpwssd
 * applies the sub-blocks' scales and accumulates in int32. Three multiplies
 * per 128 elements and token instead of four (maddubs + vpdpwssd a step);
 * ns per element per token (bench/cpu_matmul --kernels, AMD EPYC): vec_dot
 * 0.0217 -> 0.0174, x4 0.0105 -> 0.0099, 2x4 0.0093 -> 0.0091. */

/* R weight rows (x, x + w_stride) x nt tokens: each activation load and each
 * token's per-super-block work (bsums, d) serves the R rows; a (row, token)'s
 * operations are those of R = 1, so every form gives it the same bits. */
static ALWAYS_INLINE void q4k_dot(int R, int nt, int64_t n, const void *w, size_t w_stride, const void *a,
                                  size_t a_stride, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    /* permutexvar indices for step pair p: int16 lane l (128-bit lane k =
     * l / 8, position l % 8) <- scale 4p + (l % 8 < 4 ? 0 : 2) + k / 2 */
    __m512i sc_idx[2];
    for (int p = 0; p < 2; p++) {
        short idx[32];
        for (int l = 0; l < 32; l++) idx[l] = (short)(4 * p + (l % 8 < 4 ? 0 : 2) + (l / 8) / 2);
        sc_idx[p] = _mm512_loadu_si512((const void *)idx);
    }
    /* The minimums' term: one token, acc_m[r][0] (4 lanes); four tokens,
     * acc_m4[r] with token t in 128-bit lane t: the same lane-wise
     * operations, done for the four tokens at once */
    const bool four = nt == 4;
    __m512 acc[2][NT_MAX], acc_m4[2];
    __m128 acc_m[2][NT_MAX];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        acc_m4[r] = _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            acc[r][t] = _mm512_setzero_ps();
            acc_m[r][t] = _mm_setzero_ps();
        }
    }
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_q4_K *x[2];
        float xd[2], xmin[2];
        uint32_t sm[2][4];
        __m512i sc[2], sumi[2][NT_MAX];
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            x[r] = (const block_q4_K *)((const uint8_t *)w + (size_t)r * w_stride) + i;
            xd[r] = simd_fp16_to_f32(x[r]->d), xmin[r] = simd_fp16_to_f32(x[r]->dmin);
            kq_unpack_scales_mins(x[r]->scales, sm[r]);
            sc[r] = _mm512_castsi128_si512(kq_scales16(sm[r])); /* lanes 0..7 used */
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) sumi[r][t] = _mm512_setzero_si512();
        }
        for (int p = 0; p < 2; p++) {
            __m512i q0[2], q1[2], scp[2];
#pragma GCC unroll 2
            for (int r = 0; r < R; r++) {
                const __m256i b0 = _mm256_loadu_si256((const __m256i *)(x[r]->qs + 64 * p));
                const __m256i b1 = _mm256_loadu_si256((const __m256i *)(x[r]->qs + 64 * p + 32));
                q0[r] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(b0, m4)),
                                           _mm256_and_si256(_mm256_srli_epi16(b0, 4), m4), 1);
                q1[r] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(b1, m4)),
                                           _mm256_and_si256(_mm256_srli_epi16(b1, 4), m4), 1);
                scp[r] = _mm512_permutexvar_epi16(sc_idx[p], sc[r]);
            }
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const int8_t *yq = kq_act_block(a, a_stride, t, i)->qs + 128 * p;
                const __m512i y0 = _mm512_loadu_si512((const void *)yq);
                const __m512i y1 = _mm512_loadu_si512((const void *)(yq + 64));
#pragma GCC unroll 2
                for (int r = 0; r < R; r++) {
                    const __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q0[r], y0);
                    const __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q1[r], y1);
                    sumi[r][t] = _mm512_dpwssd_epi32(sumi[r][t], _mm512_packs_epi32(s0, s1), scp[r]);
                }
            }
        }
        if (four) {
            /* the tokens' 32-element activation sums and scales, lane t each
             * (spelled out: the lanes are immediates, which clang wants constant) */
            const block_q8_K *y0 = kq_act_block(a, a_stride, 0, i), *y1 = kq_act_block(a, a_stride, 1, i);
            const block_q8_K *y2 = kq_act_block(a, a_stride, 2, i), *y3 = kq_act_block(a, a_stride, 3, i);
            const __m256i b01 = _mm256_inserti128_si256(_mm256_castsi128_si256(kq_bsums32(y0)), kq_bsums32(y1), 1);
            const __m256i b23 = _mm256_inserti128_si256(_mm256_castsi128_si256(kq_bsums32(y2)), kq_bsums32(y3), 1);
            const __m512i bs = _mm512_inserti64x4(_mm512_castsi256_si512(b01), b23, 1);
            const __m512 dy = _mm512_permutexvar_ps(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                                                    _mm512_castps128_ps512(_mm_set_ps(y3->d, y2->d, y1->d, y0->d)));
#pragma GCC unroll 2
            for (int r = 0; r < R; r++) {
                const __m512i m = _mm512_broadcast_i32x4(kq_mins16(sm[r]));
                acc_m4[r] = _mm512_fmadd_ps(_mm512_mul_ps(dy, _mm512_set1_ps(xmin[r])),
                                            _mm512_cvtepi32_ps(_mm512_madd_epi16(m, bs)), acc_m4[r]);
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
#pragma GCC unroll 2
            for (int r = 0; r < R; r++) {
                if (!four)
                    acc_m[r][t] = _mm_fmadd_ps(_mm_set1_ps(y->d * xmin[r]), _mm_cvtepi32_ps(kq_min_sum(sm[r], y)),
                                               acc_m[r][t]);
                acc[r][t] = _mm512_fmadd_ps(_mm512_set1_ps(y->d * xd[r]), _mm512_cvtepi32_ps(sumi[r][t]), acc[r][t]);
            }
        }
    }
#pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        if (four) {
            acc_m[r][0] = _mm512_extractf32x4_ps(acc_m4[r], 0), acc_m[r][1] = _mm512_extractf32x4_ps(acc_m4[r], 1);
            acc_m[r][2] = _mm512_extractf32x4_ps(acc_m4[r], 2), acc_m[r][3] = _mm512_extractf32x4_ps(acc_m4[r], 3);
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) out[r * nt + t] = _mm512_reduce_add_ps(acc[r][t]) - kq_hsum_f32x4(acc_m[r][t]);
    }
}

float cpu_dot_q4_K_q8_K_avx512(int64_t n, const void *w, const void *a) {
    float r;
    q4k_dot(1, 1, n, w, 0, a, 0, &r);
    return r;
}
void cpu_dot_q4_K_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    q4k_dot(1, 4, n, w, 0, a, a_stride, out);
}
void cpu_dot_q4_K_q8_K_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                                  float *out) {
    q4k_dot(2, 4, n, w, w_stride, a, a_stride, out);
}

/* ---- Q6_K x Q8_K -----------------------------------------------------------------
 * Per half h (128 elements): the 64 bytes ql[64h..] give, in their low
 * nibbles, quarters 0 and 1 (elements 0..63 of the half) and in their high
 * nibbles quarters 2 and 3 (64..127); the top two bits of quarter k are bits
 * 2k..2k+1 of qh[32h + l]. So two 512-bit registers of unsigned 6-bit quants
 * line up with two 64-byte loads of activations. After vpdpbusd each 128-bit
 * lane holds one 16-element sub-block's sums. The -32 offset comes off once
 * per super-block via bsums. */

static ALWAYS_INLINE void q6k_dot(int nt, int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    const block_q6_K *x = (const block_q6_K *)w;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i m30 = _mm512_set1_epi8(0x30);
    /* per-half shift counts: quarter 0 << 4, quarter 1 << 2; quarter 2 >> 0, quarter 3 >> 2 */
    const __m512i shl01 = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(2));
    const __m512i shr23 = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(0), _mm512_set1_epi16(2));
    /* vpdpbusd's sums of 4 (at most 4*63*128, so they fit int16) of q01 and
     * q23 packed to int16 within 128-bit lanes: lane k holds 4 sums of
     * quarter pair 01 (sub-block 8h + k) then 4 of pair 23 (8h + 4 + k), and
     * one vpdpwssd scales both. Index: int16 lane l <- scale 8h + (l % 8 < 4
     * ? 0 : 4) + l / 8. Three multiplies per 128 elements and token instead of
     * four (maddubs + vpdpwssd for each 64). */
    __m512i sc_idx[2];
    for (int h = 0; h < 2; h++) {
        short idx[32];
        for (int l = 0; l < 32; l++) idx[l] = (short)(8 * h + (l % 8 < 4 ? 0 : 4) + l / 8);
        sc_idx[h] = _mm512_loadu_si512((const void *)idx);
    }
    __m512 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        const float xd = simd_fp16_to_f32(x->d);
        const __m128i scales8 = _mm_loadu_si128((const __m128i *)x->scales);
        const __m512i sc = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(scales8)); /* lanes 0..15 used */
        __m512i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            const __m512i lo = _mm512_loadu_si512((const void *)(x->ql + 64 * h));
            const __m256i hb = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
            /* top bits of quarters 0..3 (hb bits 0-1, 2-3, 4-5, 6-7) at bits
             * 4-5: [hb << 4 | hb << 2] and [hb | hb >> 2] as 512-bit pairs,
             * one shift and one mask each (16-bit shifts: bits that cross
             * into the neighbouring byte land outside bits 4-5) */
            const __m512i hb2 = _mm512_inserti64x4(_mm512_castsi256_si512(hb), hb, 1);
            const __m512i top01 = _mm512_and_si512(_mm512_sllv_epi16(hb2, shl01), m30);
            const __m512i top23 = _mm512_and_si512(_mm512_srlv_epi16(hb2, shr23), m30);
            const __m512i q01 = _mm512_or_si512(_mm512_and_si512(lo, m4), top01);
            const __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo, 4), m4), top23);
            const __m512i sch = _mm512_permutexvar_epi16(sc_idx[h], sc);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                const __m512i d01 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q01,
                                                        _mm512_loadu_si512((const void *)(y->qs + 128 * h)));
                const __m512i d23 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q23,
                                                        _mm512_loadu_si512((const void *)(y->qs + 128 * h + 64)));
                sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_packs_epi32(d01, d23), sch);
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            const __m512i offset = _mm512_zextsi256_si512(kq_scale_bsums(scales8, y));
            const __m512i s = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(offset, 5));
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(y->d * xd), _mm512_cvtepi32_ps(s), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = _mm512_reduce_add_ps(acc[t]);
}

float cpu_dot_q6_K_q8_K_avx512(int64_t n, const void *w, const void *a) {
    float r;
    q6k_dot(1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q6_K_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    q6k_dot(4, n, w, a, a_stride, out);
}

/* ---- Q2_K, Q3_K and TQ2_0 with Q8_K -------------------------------------------------
 * Q6_K's shape (above) on the 2-bit layout of dot_kquant_avx2.c: in half h
 * the 32 bytes of qs[32h..] doubled into a 512-bit register give quarters
 * 0|1 and 2|3 with one variable shift and a mask each (Q3_K adds its high
 * bits, bit 4h + k of each hmask byte, at bit 2), so q01 and q23 line up
 * with 64 contiguous activation bytes each; vpdpbusd's sums of 4 (at most
 * 4 * 7 * 128) pack to int16 and meet the sub-block scales, laid out as for
 * Q6_K, in one vpdpwssd: three multiplies per 128 elements and token. The
 * offsets as in the AVX2 kernel: Q2_K's minimum term apart, Q3_K's
 * 4 * sum_j sc_j * bsums_j off the int32 total. */
static ALWAYS_INLINE void low2k_dot(low2_fmt f, int nt, int64_t n, const void *w, const void *a, size_t a_stride,
                                    float *out) {
    const __m512i m3 = _mm512_set1_epi8(3), one = _mm512_set1_epi8(1);
    const __m512i sh01 = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(0), _mm512_set1_epi16(2));
    const __m512i sh23 = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(6));
    __m512i sc_idx[2], hs01[2], hs23[2];
    for (int h = 0; h < 2; h++) {
        short idx[32];
        for (int l = 0; l < 32; l++) idx[l] = (short)(8 * h + (l % 8 < 4 ? 0 : 4) + l / 8);
        sc_idx[h] = _mm512_loadu_si512((const void *)idx);
        hs01[h] = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16((short)(4 * h)), _mm512_set1_epi16((short)(4 * h + 1)));
        hs23[h] = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16((short)(4 * h + 2)), _mm512_set1_epi16((short)(4 * h + 3)));
    }
    __m512 acc[NT_MAX];
    __m256 acc_m[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps(), acc_m[t] = _mm256_setzero_ps();
    const bool three = f == LOW2_Q3_K, ternary = f == LOW2_TQ2_0;
    const size_t bb = low2_block_bytes(f);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const low2_head x = low2_head_of(f, (const uint8_t *)w + (size_t)i * bb);
        const uint8_t *qs = x.qs;
        const __m128i scales8 = x.scales8;
        const __m512i hm2 = three ? _mm512_inserti64x4(_mm512_castsi256_si512(x.hm), x.hm, 1) : _mm512_setzero_si512();
        const __m512i sc = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(scales8)); /* lanes 0..15 used */
        __m512i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            const __m256i q2 = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
            const __m512i q22 = _mm512_inserti64x4(_mm512_castsi256_si512(q2), q2, 1);
            __m512i q01 = _mm512_and_si512(_mm512_srlv_epi16(q22, sh01), m3);
            __m512i q23 = _mm512_and_si512(_mm512_srlv_epi16(q22, sh23), m3);
            if (three) {
                q01 = _mm512_or_si512(q01, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hm2, hs01[h]), one), 2));
                q23 = _mm512_or_si512(q23, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hm2, hs23[h]), one), 2));
            }
            const __m512i sch = _mm512_permutexvar_epi16(sc_idx[h], sc);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                const __m512i d01 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q01,
                                                        _mm512_loadu_si512((const void *)(y->qs + 128 * h)));
                const __m512i d23 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q23,
                                                        _mm512_loadu_si512((const void *)(y->qs + 128 * h + 64)));
                sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_packs_epi32(d01, d23), sch);
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            __m512i s = sumi[t];
            if (three) {
                s = _mm512_sub_epi32(s, _mm512_slli_epi32(_mm512_zextsi256_si512(kq_scale_bsums(scales8, y)), 2));
            } else if (ternary) {
                s = _mm512_sub_epi32(s, _mm512_zextsi256_si512(kq_scale_bsums(scales8, y)));
            } else {
                const __m256i ms = _mm256_madd_epi16(x.mins16, _mm256_loadu_si256((const __m256i *)y->bsums));
                acc_m[t] = _mm256_fmadd_ps(_mm256_set1_ps(y->d * x.dmin), _mm256_cvtepi32_ps(ms), acc_m[t]);
            }
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(y->d * x.d), _mm512_cvtepi32_ps(s), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = _mm512_reduce_add_ps(acc[t]) - (f == LOW2_Q2_K ? simd_hsum_f32x8(acc_m[t]) : 0.0f);
}

float cpu_dot_q2_K_q8_K_avx512(int64_t n, const void *w, const void *a) {
    float r;
    low2k_dot(LOW2_Q2_K, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q2_K_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    low2k_dot(LOW2_Q2_K, 4, n, w, a, a_stride, out);
}

float cpu_dot_q3_K_q8_K_avx512(int64_t n, const void *w, const void *a) {
    float r;
    low2k_dot(LOW2_Q3_K, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q3_K_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    low2k_dot(LOW2_Q3_K, 4, n, w, a, a_stride, out);
}

float cpu_dot_tq2_0_q8_K_avx512(int64_t n, const void *w, const void *a) {
    float r;
    low2k_dot(LOW2_TQ2_0, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_tq2_0_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    low2k_dot(LOW2_TQ2_0, 4, n, w, a, a_stride, out);
}

/* ---- IQ4_XS with Q8_K ---------------------------------------------------------------
 * Two 32-blocks a 512-bit register: the 32 qs bytes of blocks ib, ib + 1
 * become 128-bit lanes [lo nibbles of ib, hi of ib, lo of ib + 1, hi of
 * ib + 1], element order, and one vpshufb into the 16 levels (the table in
 * every lane) gives the 64 weights as int8. Signed x signed as the AVX2
 * kernel: |w| against the activation negated where w < 0 (a masked
 * subtract; it is never -128), maddubs pairs (at most 2 * 127 * 127), then
 * madd with the blocks' scales (lanes 0-1 block ib, 2-3 ib + 1): the super-
 * block stays in int32, one fp32 multiply-add per super-block. */
static ALWAYS_INLINE void iq4xs_dot(int nt, int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    const block_iq4_xs *x = (const block_iq4_xs *)w;
    const __m512i levels = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)nib_iq4_levels));
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        __m512i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm512_setzero_si512();
        for (int ib = 0; ib < QK_K / 32; ib += 2) {
            const __m256i b = _mm256_loadu_si256((const __m256i *)(x->qs + 16 * ib)); /* [q(ib), q(ib+1)] */
            const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(b), _mm256_srli_epi16(b, 4), 1);
            /* lanes [q(ib), q(ib+1), q(ib)>>4, q(ib+1)>>4] -> [q(ib), q(ib)>>4, q(ib+1), q(ib+1)>>4] */
            const __m512i codes = _mm512_and_si512(_mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0)), m4);
            const __m512i q = _mm512_shuffle_epi8(levels, codes);
            const __m512i qa = _mm512_abs_epi8(q);
            const __mmask64 neg = _mm512_movepi8_mask(q);
            const int s0 = ((x->scales_l[ib / 2] & 15) | (((x->scales_h >> (2 * ib)) & 3) << 4)) - 32;
            const int s1 = ((x->scales_l[ib / 2] >> 4) | (((x->scales_h >> (2 * ib + 2)) & 3) << 4)) - 32;
            const __m512i sc = _mm512_inserti64x4(_mm512_set1_epi16((short)s0), _mm256_set1_epi16((short)s1), 1);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                const __m512i av = _mm512_loadu_si512((const void *)(y->qs + 32 * ib));
                const __m512i as = _mm512_mask_sub_epi8(av, neg, _mm512_setzero_si512(), av);
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_madd_epi16(_mm512_maddubs_epi16(qa, as), sc));
            }
        }
        const float xd = simd_fp16_to_f32(x->d);
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(xd * y->d), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = _mm512_reduce_add_ps(acc[t]);
}

float cpu_dot_iq4_xs_q8_K_avx512(int64_t n, const void *w, const void *a) {
    float r;
    iq4xs_dot(1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_iq4_xs_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    iq4xs_dot(4, n, w, a, a_stride, out);
}
