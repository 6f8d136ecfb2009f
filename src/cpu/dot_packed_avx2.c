/* AVX2 kernels of the packed weight layouts (cpu/repack.h), in the byte
 * order Q4_KX8_QUADS: a 256-bit register holds 4 consecutive elements of
 * each of 8 rows, all against the same 4 activation bytes (one 32-bit
 * broadcast), so one maddubs serves 8 rows and a register's lanes are the
 * rows themselves. dot_packed_avx512.c has the AVX-512 kernels and says more.
 *
 * Each kernel takes 1 to 4 tokens a call (cpu_packed_dot_fn); a (row,
 * token)'s operations do not depend on how many. Integer sums exact, float
 * sums reassociated; tests/test_cpu.c checks them against float64.
 */
#include <stdbool.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/kquant_scales.h"
#include "cpu/repack.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/formats.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NT_MAX 4

/* bit i of w as 0x10 in byte i, 0 elsewhere */
static ALWAYS_INLINE __m256i fifth_bits(uint32_t w) {
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)w), shuf), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(0x10));
}

/* ---- Q4_K and Q5_K, 8 rows interleaved (cpu/repack.h) -----------------------------
 * Per sub-block and token: 8 maddubs of a register of 8 rows x 4 elements
 * by the token's 4 activation bytes broadcast, added in int16 (16 products
 * of at most 15 * 128 a lane: 30,720, no overflow), then one madd with the 8
 * rows' scales as int16 pairs. Against the file layout's dot (one maddubs
 * and one madd per 32 elements of one row and token) that is half the
 * multiplies. The minimums: 4 madds of the rows' (m_2p, m_2p+1) pairs with
 * the token's pair of 32-element activation sums. Q5_K (five,
 * block_q5_Kx8q): each register's fifth bits added from two 32-bit masks
 * (fifth_bits); codes up to 31 keep 4 maddubs in int16 (4 * 2 * 31 * 128 =
 * 31,744), so a sub-block's 8 meet its scales in two madds. A (row,
 * token)'s operations do not depend on nt: any batch gives it the same bits. */
static ALWAYS_INLINE void q45_Kx8_dot(bool five, int nt, int64_t n, const void *p, const void *a, size_t a_stride,
                                      float *out) {
    /* block_q4_Kx8 and block_q5_Kx8q share d, dmin, sc and m; then qh (Q5_K), qs */
    const size_t bb = five ? sizeof(block_q5_Kx8q) : sizeof(block_q4_Kx8);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[NT_MAX], acc_m[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps(), acc_m[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_q4_Kx8 *x = (const block_q4_Kx8 *)((const uint8_t *)p + (size_t)i * bb);
        const block_q5_Kx8q *x5 = (const block_q5_Kx8q *)x;
        const uint8_t(*qs)[16 * Q4_KX8_ROWS] = five ? x5->qs : x->qs;
        __m256i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            const __m128i s8 = _mm_loadl_epi64((const __m128i *)x->sc[j]);
            const __m256i sc = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(s8, s8)); /* (sc_r, sc_r) a row */
            __m256i s16[2][NT_MAX]; /* Q4_K: all 8 maddubs in [0]; Q5_K: registers 0-1 in [0], 2-3 in [1] */
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) s16[0][t] = _mm256_setzero_si256(), s16[1][t] = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs[j] + 32 * k)); /* Q4_KX8_QUADS */
                __m256i lo = _mm256_and_si256(bits, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
                if (five) {
                    lo = _mm256_or_si256(lo, fifth_bits(x5->qh[j][k][0]));
                    hi = _mm256_or_si256(hi, fifth_bits(x5->qh[j][k][1]));
                }
                const int h = five ? k / 2 : 0;
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++) {
                    const int8_t *yq = kq_act_block(a, a_stride, t, i)->qs + 32 * j + 4 * k;
                    int32_t y0, y1;
                    memcpy(&y0, yq, 4), memcpy(&y1, yq + 16, 4);
                    s16[h][t] = _mm256_add_epi16(s16[h][t], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(y0)));
                    s16[h][t] = _mm256_add_epi16(s16[h][t], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(y1)));
                }
            }
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                __m256i v = _mm256_madd_epi16(s16[0][t], sc);
                if (five) v = _mm256_add_epi32(v, _mm256_madd_epi16(s16[1][t], sc));
                sumi[t] = _mm256_add_epi32(sumi[t], v);
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->dmin));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            const __m256i bs = _mm256_castsi128_si256(kq_bsums32(y)); /* 8 sums of 32, int16 */
            __m256i ms = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                const __m256i m = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)x->m[q]));
                ms = _mm256_add_epi32(ms, _mm256_madd_epi16(m, _mm256_permutevar8x32_epi32(bs, _mm256_set1_epi32(q))));
            }
            const __m256 dy = _mm256_set1_ps(y->d);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, dy), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            acc_m[t] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, dy), _mm256_cvtepi32_ps(ms), acc_m[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, _mm256_sub_ps(acc[t], acc_m[t]));
}

PACKED_ENTRY_F(cpu_dot_q4_Kx8_q8_K_avx2, q45_Kx8_dot, false)
PACKED_ENTRY_F(cpu_dot_q5_Kx8q_q8_K_avx2, q45_Kx8_dot, true)

/* ---- Q6_K, 8 rows (cpu/repack.h block_q6_Kx8q) ------------------------------------
 * Per pair of sub-blocks (2p, 2p + 1) and token: 4 registers of 8 rows x 4
 * elements, each giving two maddubs (the codes of 2p, then of 2p + 1) by the
 * token's 4 matching activation bytes broadcast. Two maddubs of codes up to
 * 63 against bytes up to 128 in magnitude stay in int16 (2 * 2 * 63 * 128 =
 * 32,256), so every two meet the rows' scales (int16 pairs) in one madd.
 * The -32 offset comes off once a super-block and token as 32 * sum_j sc_j *
 * bsums_j per row, one madd a sub-block pair; all in int32 (the super-block's
 * sum is below 2^29), then one convert and one multiply-add by d * d_y. */
static ALWAYS_INLINE void q6_Kx8q_dot(int nt, int64_t n, const void *p, const void *a, size_t a_stride,
                                      float *out) {
    const block_q6_Kx8q *x = (const block_q6_Kx8q *)p;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        __m256i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int pp = 0; pp < 8; pp++) {
            const __m128i sa8 = _mm_loadl_epi64((const __m128i *)x->sc[2 * pp]);
            const __m128i sb8 = _mm_loadl_epi64((const __m128i *)x->sc[2 * pp + 1]);
            const __m256i sca = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(sa8, sa8)); /* (sc_r, sc_r) a row */
            const __m256i scb = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(sb8, sb8));
            const __m256i h0 = _mm256_loadu_si256((const __m256i *)x->qh[pp][0]);
            const __m256i h1 = _mm256_loadu_si256((const __m256i *)x->qh[pp][1]);
            __m256i qa[4], qb[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m256i bits = _mm256_loadu_si256((const __m256i *)x->ql[pp][k]);
                const __m256i h = k < 2 ? h0 : h1;
                const __m256i ha = k % 2 ? _mm256_and_si256(h, m30) : _mm256_and_si256(_mm256_slli_epi16(h, 4), m30);
                const __m256i hb = k % 2 ? _mm256_and_si256(_mm256_srli_epi16(h, 2), m30)
                                         : _mm256_and_si256(_mm256_slli_epi16(h, 2), m30);
                qa[k] = _mm256_or_si256(_mm256_and_si256(bits, m4), ha);
                qb[k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), hb);
            }
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const int8_t *yq = kq_act_block(a, a_stride, t, i)->qs + 32 * pp;
                int32_t ya[4], yb[4];
                memcpy(ya, yq, sizeof ya), memcpy(yb, yq + 16, sizeof yb);
                const __m256i a01 = _mm256_add_epi16(_mm256_maddubs_epi16(qa[0], _mm256_set1_epi32(ya[0])),
                                                     _mm256_maddubs_epi16(qa[1], _mm256_set1_epi32(ya[1])));
                const __m256i a23 = _mm256_add_epi16(_mm256_maddubs_epi16(qa[2], _mm256_set1_epi32(ya[2])),
                                                     _mm256_maddubs_epi16(qa[3], _mm256_set1_epi32(ya[3])));
                const __m256i b01 = _mm256_add_epi16(_mm256_maddubs_epi16(qb[0], _mm256_set1_epi32(yb[0])),
                                                     _mm256_maddubs_epi16(qb[1], _mm256_set1_epi32(yb[1])));
                const __m256i b23 = _mm256_add_epi16(_mm256_maddubs_epi16(qb[2], _mm256_set1_epi32(yb[2])),
                                                     _mm256_maddubs_epi16(qb[3], _mm256_set1_epi32(yb[3])));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(_mm256_madd_epi16(a01, sca), _mm256_madd_epi16(a23, sca)));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(_mm256_madd_epi16(b01, scb), _mm256_madd_epi16(b23, scb)));
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            __m256i off = _mm256_setzero_si256();
            for (int pp = 0; pp < 8; pp++) {
                const __m128i sab = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)x->sc[2 * pp]),
                                                      _mm_loadl_epi64((const __m128i *)x->sc[2 * pp + 1]));
                int32_t bs;
                memcpy(&bs, &y->bsums[2 * pp], 4);
                off = _mm256_add_epi32(off, _mm256_madd_epi16(_mm256_cvtepi8_epi16(sab), _mm256_set1_epi32(bs)));
            }
            const __m256i tot = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(off, 5));
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(y->d)), _mm256_cvtepi32_ps(tot), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, acc[t]);
}

PACKED_ENTRY(cpu_dot_q6_Kx8q_q8_K_avx2, q6_Kx8q_dot)

/* ---- Q4_0, Q5_0, Q4_1, Q5_1, 8 rows a 32-element block ---------------------------
 * Register k (k = 0..3) holds the file's qs bytes 4k..4k+3 of every row: low
 * nibbles elements 4k.., high nibbles 16 + 4k..; the fifth bits expand from
 * one 32-bit word a register half (a byte shuffle, a bit test, an and).
 * maddubs of the unsigned codes with the token's 4 bytes broadcast; the
 * int16 pairs stay below 2^15: Q4 all 8 registers' (8 * 2 * 15 * 128 =
 * 30,720), Q5 4 at a time (4 * 2 * 31 * 128 = 31,744), then one madd with
 * ones each. The offset (Q4_0 8, Q5_0 16) comes off as offset * sum(y) once
 * a block and token (block_q8_0s); Q4_1/Q5_1 add m * s. */
typedef enum { LX_Q4_0, LX_Q5_0, LX_Q4_1, LX_Q5_1 } lx_fmt;

static ALWAYS_INLINE void legacy_x8_dot(lx_fmt f, int nt, int64_t n, const void *p, const void *a, size_t a_stride,
                                        float *out) {
    const bool has_min = f == LX_Q4_1 || f == LX_Q5_1, has_qh = f == LX_Q5_0 || f == LX_Q5_1;
    const int off = f == LX_Q4_0 ? 8 : 16;
    const size_t bb = f == LX_Q4_0   ? sizeof(block_q4_0x8)
                      : f == LX_Q5_0 ? sizeof(block_q5_0x8)
                      : f == LX_Q4_1 ? sizeof(block_q4_1x8)
                                     : sizeof(block_q5_1x8);
    const size_t ab = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0s);
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    const uint8_t *x = (const uint8_t *)p;
    for (int64_t i = 0; i < n / 32; i++, x += bb) {
        /* the fields, in the order of every block_*x8: d[8], m[8], qh (32 bytes), qs (128) */
        const uint8_t *qh = x + (has_min ? 32 : 16);
        const uint8_t *qs = qh + (has_qh ? 32 : 0);
        uint32_t hw[8];
        if (has_qh) memcpy(hw, qh, sizeof hw);
        __m256i q[4][2]; /* [register][low, high nibbles] */
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * k));
            q[k][0] = _mm256_and_si256(bits, m4);
            q[k][1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if (has_qh) {
                q[k][0] = _mm256_or_si256(q[k][0], fifth_bits(hw[2 * k]));
                q[k][1] = _mm256_or_si256(q[k][1], fifth_bits(hw[2 * k + 1]));
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x));
        const __m256 mw = has_min ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + 16))) : _mm256_setzero_ps();
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const uint8_t *yb = (const uint8_t *)a + (size_t)t * a_stride + (size_t)i * ab;
            const int8_t *yq = has_min ? ((const block_q8_1 *)yb)->qs : ((const block_q8_0s *)yb)->qs;
            int32_t y[8];
            memcpy(y, yq, sizeof y);
            __m256i s[2];
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                s[h] = _mm256_maddubs_epi16(q[0][h], _mm256_set1_epi32(y[4 * h]));
#pragma GCC unroll 3
                for (int k = 1; k < 4; k++)
                    s[h] = _mm256_add_epi16(s[h], _mm256_maddubs_epi16(q[k][h], _mm256_set1_epi32(y[4 * h + k])));
            }
            __m256i v = has_qh ? _mm256_add_epi32(_mm256_madd_epi16(s[0], ones), _mm256_madd_epi16(s[1], ones))
                               : _mm256_madd_epi16(_mm256_add_epi16(s[0], s[1]), ones);
            float dy;
            if (has_min) {
                const block_q8_1 *y1 = (const block_q8_1 *)yb;
                dy = simd_fp16_to_f32(y1->d);
                acc[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(simd_fp16_to_f32(y1->s)), acc[t]);
            } else {
                const block_q8_0s *y0 = (const block_q8_0s *)yb;
                dy = simd_fp16_to_f32(y0->d);
                v = _mm256_sub_epi32(v, _mm256_set1_epi32(off * y0->sum));
            }
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(dy)), _mm256_cvtepi32_ps(v), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, acc[t]);
}

PACKED_ENTRY_F(cpu_dot_q4_0x8_q8_0s_avx2, legacy_x8_dot, LX_Q4_0)
PACKED_ENTRY_F(cpu_dot_q5_0x8_q8_0s_avx2, legacy_x8_dot, LX_Q5_0)
PACKED_ENTRY_F(cpu_dot_q4_1x8_q8_1_avx2, legacy_x8_dot, LX_Q4_1)
PACKED_ENTRY_F(cpu_dot_q5_1x8_q8_1_avx2, legacy_x8_dot, LX_Q5_1)

/* ---- Q8_0, 8 rows a 32-element block (Q4_KX8_QUADS) --------------------------------
 * Signed codes against signed activations: maddubs takes |w| (once a block)
 * and the token's 4 bytes broadcast with w's signs (psignb), each pair sum
 * at most 2 * 128 * 127 = 32,512, widened by a madd with ones before the
 * next: the activation codes are at most 127 in magnitude (Q8_0's rounding
 * of x / (amax / 127)), so the sign flip never meets -128. */
/* One block of 8 rows' signed codes w (register k: codes 4k..4k+3 of every
 * row; aw = |w|, dw the rows' scales) against the nt tokens' block i of Q8_0,
 * into acc. */
static ALWAYS_INLINE void signed_x8_tokens(const __m256i w[8], const __m256i aw[8], __m256 dw, int nt, const void *a,
                                           size_t a_stride, int64_t i, __m256 *acc) {
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        const block_q8_0 *y = (const block_q8_0 *)((const uint8_t *)a + (size_t)t * a_stride) + i;
        int32_t yq[8];
        memcpy(yq, y->qs, sizeof yq);
        __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i s = _mm256_maddubs_epi16(aw[k], _mm256_sign_epi8(_mm256_set1_epi32(yq[k]), w[k]));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(s, ones));
        }
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(simd_fp16_to_f32(y->d))), _mm256_cvtepi32_ps(sum),
                                 acc[t]);
    }
}

static ALWAYS_INLINE void q8_0x8_dot(int nt, int64_t n, const void *p, const void *a, size_t a_stride, float *out) {
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    const block_q8_0x8 *x = (const block_q8_0x8 *)p;
    for (int64_t i = 0; i < n / 32; i++, x++) {
        __m256i w[8], aw[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            w[k] = _mm256_loadu_si256((const __m256i *)(&x->qs[0][0] + 32 * k));
            aw[k] = _mm256_abs_epi8(w[k]);
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d));
        signed_x8_tokens(w, aw, dw, nt, a, a_stride, i, acc);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, acc[t]);
}

PACKED_ENTRY(cpu_dot_q8_0x8_q8_0_avx2, q8_0x8_dot)

/* ---- IQ4_NL and MXFP4, 8 rows a 32-element block --------------------------------
 * The nibbles in Q4_0x8's quad order (register k: qs bytes 4k..4k+3 of
 * every row, low nibbles elements 4k.., high ones 16 + 4k..), each looked up
 * as its signed level by one byte shuffle. The codes are then Q8_0's, and
 * the dot q8_0x8_dot's: |w| against the token's bytes with w's signs, each
 * int16 pair at most 2 * 127 * 127 (IQ4 levels reach -127; MXFP4's 12),
 * widened by a madd with ones before the next. No offset to take off: the
 * sums are exact in int32. MXFP4's scale 2^(e - 128) comes from its
 * exponent byte (simd_mxfp4_half_scales). */
typedef enum { LV_IQ4_NL, LV_MXFP4 } lv_fmt;

static ALWAYS_INLINE void levels_x8_dot(lv_fmt f, int nt, int64_t n, const void *p, const void *a, size_t a_stride,
                                        float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i levels = _mm256_broadcastsi128_si256(
        _mm_loadu_si128((const __m128i *)(f == LV_MXFP4 ? nib_mxfp4_levels : nib_iq4_levels)));
    const size_t bb = f == LV_MXFP4 ? sizeof(block_mxfp4x8) : sizeof(block_q4_0x8);
    const size_t hdr = f == LV_MXFP4 ? 8 : 16; /* e[8] or d[8], then qs */
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    const uint8_t *x = (const uint8_t *)p;
    for (int64_t i = 0; i < n / 32; i++, x += bb) {
        __m256i w[8], aw[8];
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x + hdr + 32 * k));
            w[k] = _mm256_shuffle_epi8(levels, _mm256_and_si256(bits, m4));
            w[4 + k] = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4));
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) aw[k] = _mm256_abs_epi8(w[k]);
        const __m256 dw = f == LV_MXFP4 ? simd_mxfp4_half_scales(x) : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x));
        signed_x8_tokens(w, aw, dw, nt, a, a_stride, i, acc);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, acc[t]);
}

PACKED_ENTRY_F(cpu_dot_iq4_nlx8_q8_0_avx2, levels_x8_dot, LV_IQ4_NL)
PACKED_ENTRY_F(cpu_dot_mxfp4x8_q8_0_avx2, levels_x8_dot, LV_MXFP4)
