/* AVX-512 VNNI kernels of the packed weight layouts (cpu/repack.h): 8 rows
 * interleaved, so that a token's activation bytes are broadcast once to all 8
 * rows and one vpdpbusd serves them; the per-row work the file layout pays
 * for every row and token (scales, sign tricks, reductions) is paid here once
 * per group of 8 rows and token.
 *
 * Each kernel takes 1 to 4 tokens a call (cpu_packed_dot_fn); a (row,
 * token)'s operations do not depend on how many, so a token gets the same
 * bits in any batch. The integer sums are exact; the float sums differ from
 * the file layout's kernels only by reassociation. tests/test_cpu.c checks
 * the layouts bit for bit and the products against float64.
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

/* The 8 rows' sums from 16 float lanes, in the two lane layouts of these
 * kernels. Lanes 4L + c hold row 2L + c % 2 (the K-quants, after vpdpwssd)
 * or lanes 2r + h row r (the 32-element formats). */
static ALWAYS_INLINE __m256 rows_of_quads(__m512 v) {
    const __m512i idx = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 13, 12, 9, 8, 5, 4, 1, 0);
    const __m512 f = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_castps512_ps256(_mm512_permutexvar_ps(idx, f));
}
static ALWAYS_INLINE __m256 rows_of_pairs(__m512 v) {
    const __m512i idx = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512 f = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castps512_ps256(_mm512_permutexvar_ps(idx, f));
}

/* ---- Q4_K, 8 rows interleaved (cpu/repack.h, Q4_KX8_PAIRS) -------------------------
 * Register p of a sub-block holds 8 elements of each of the 8 rows (lane
 * 2r + h: quad 2p + h of row r), so a token's 8 activation bytes for it are
 * one 64-bit broadcast; four vpdpbusd (two registers, low and high nibbles)
 * give each lane 16 products, at most 16 * 15 * 128 = 30,720 in size, so
 * two sub-blocks' sums pack to int16 without saturating and meet their 16
 * scales in one vpdpwssd, whose pairs also add a row's two lanes: lane
 * 4L + c of the result is row 2L + c % 2. The file layout's VNNI kernel
 * does as many vpdpbusd per element; what the layout removes is the per-row
 * work around them (a pack and a vpdpwssd per row and token for every two
 * sub-blocks, the scales' permutes per row). A (row, token)'s operations do
 * not depend on nt.
 *
 * Q5_K (five): the same with the fifth bits added as masked byte adds
 * (block_q5_Kx8's qh masks); its lanes reach 16 * 31 * 128, too many for
 * int16, so each sub-block's low-nibble and high-nibble halves (8 products
 * a lane) pack separately and meet that sub-block's scales alone. */
static ALWAYS_INLINE void q45_Kx8_dot(bool five, int nt, int64_t n, const void *p, const void *a, size_t a_stride,
                                      float *out) {
    /* block_q4_Kx8 and block_q5_Kx8 share d, dmin, sc and m; then qh (Q5_K), qs */
    const size_t bb = five ? sizeof(block_q5_Kx8) : sizeof(block_q4_Kx8);
    const __m512i m4 = _mm512_set1_epi8(0x0F), c16 = _mm512_set1_epi8(0x10);
    short sidx1[2][32];
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < 32; w++) sidx1[s][w] = (short)(8 * s + 2 * (w / 8) + (w / 2) % 2);
    const __m512i sc_idx1[2] = {_mm512_loadu_si512((const void *)sidx1[0]), _mm512_loadu_si512((const void *)sidx1[1])};
    /* the 16 scales of sub-blocks (j, j+1), sc[j][0..7] then sc[j+1][0..7]
     * as int16, to the words of packs(s_j, s_j+1): word w of 128-bit lane L
     * is sub-block j + w / 4, row 2L + (w / 2) % 2 */
    short sidx[32];
    for (int w = 0; w < 32; w++) sidx[w] = (short)(8 * ((w % 8) / 4) + 2 * (w / 8) + (w / 2) % 2);
    const __m512i sc_idx = _mm512_loadu_si512((const void *)sidx);
    const __m512i row_of_lane = _mm512_set_epi32(7, 6, 7, 6, 5, 4, 5, 4, 3, 2, 3, 2, 1, 0, 1, 0);
    __m512 acc[NT_MAX];
    __m256 acc_m[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps(), acc_m[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_q4_Kx8 *x = (const block_q4_Kx8 *)((const uint8_t *)p + (size_t)i * bb);
        const block_q5_Kx8 *x5 = (const block_q5_Kx8 *)x;
        const uint8_t(*qs)[16 * Q4_KX8_ROWS] = five ? x5->qs : x->qs;
        __m512i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; j += 2) {
            const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)x->sc[j]));
            const __m512i scw = _mm512_permutexvar_epi16(sc_idx, _mm512_castsi256_si512(sc16));
            __m512i scw1[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
            if (five)
                for (int s = 0; s < 2; s++) scw1[s] = _mm512_permutexvar_epi16(sc_idx1[s], _mm512_castsi256_si512(sc16));
            __m512i lo[2][2], hi[2][2];
#pragma GCC unroll 2
            for (int s = 0; s < 2; s++)
#pragma GCC unroll 2
                for (int q = 0; q < 2; q++) {
                    const __m512i bits = _mm512_loadu_si512((const void *)(qs[j + s] + 64 * q));
                    lo[s][q] = _mm512_and_si512(bits, m4);
                    hi[s][q] = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
                    if (five) {
                        uint64_t ml, mh;
                        memcpy(&ml, x5->qh[j + s][q][0], 8), memcpy(&mh, x5->qh[j + s][q][1], 8);
                        lo[s][q] = _mm512_mask_add_epi8(lo[s][q], _cvtu64_mask64(ml), lo[s][q], c16);
                        hi[s][q] = _mm512_mask_add_epi8(hi[s][q], _cvtu64_mask64(mh), hi[s][q], c16);
                    }
                }
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const int8_t *yq = kq_act_block(a, a_stride, t, i)->qs + 32 * j;
                __m512i sj[2];
#pragma GCC unroll 2
                for (int s = 0; s < 2; s++) {
                    int64_t y[4];
                    memcpy(y, yq + 32 * s, sizeof y);
                    __m512i v = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[s][0], _mm512_set1_epi64(y[0]));
                    v = _mm512_dpbusd_epi32(v, lo[s][1], _mm512_set1_epi64(y[1]));
                    if (five) {
                        __m512i u = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi[s][0], _mm512_set1_epi64(y[2]));
                        u = _mm512_dpbusd_epi32(u, hi[s][1], _mm512_set1_epi64(y[3]));
                        sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_packs_epi32(v, u), scw1[s]);
                        continue;
                    }
                    v = _mm512_dpbusd_epi32(v, hi[s][0], _mm512_set1_epi64(y[2]));
                    sj[s] = _mm512_dpbusd_epi32(v, hi[s][1], _mm512_set1_epi64(y[3]));
                }
                if (!five) sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_packs_epi32(sj[0], sj[1]), scw);
            }
        }
        const __m512 d = _mm512_permutexvar_ps(row_of_lane,
                                               _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d))));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->dmin));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            const __m256i bs = _mm256_castsi128_si256(kq_bsums32(y)); /* 8 sums of 32, int16 */
            __m256i ms = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                const __m256i m = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)x->m[q]));
                ms = _mm256_dpwssd_epi32(ms, m, _mm256_permutevar8x32_epi32(bs, _mm256_set1_epi32(q)));
            }
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(y->d)), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
            acc_m[t] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, _mm256_set1_ps(y->d)), _mm256_cvtepi32_ps(ms), acc_m[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, _mm256_sub_ps(rows_of_quads(acc[t]), acc_m[t]));
}

PACKED_ENTRY_F(cpu_dot_q4_Kx8_q8_K_avx512, q45_Kx8_dot, false)

PACKED_ENTRY_F(cpu_dot_q5_Kx8_q8_K_avx512, q45_Kx8_dot, true)

/* ---- Q6_K, 8 rows (cpu/repack.h block_q6_Kx8) ------------------------------------
 * A sub-block's two registers (A, B) of unsigned 6-bit codes, each against a
 * 64-bit broadcast of the token's matching 8 codes: one vpdpbusd from zero
 * each gives a lane 4 products, at most 4 * 63 * 128 = 32,256, so the two
 * pack to int16 and meet the sub-block's signed scales in one vpdpwssd
 * (lane 4L + c of the result is row 2L + c % 2, as for Q4_K). The -32 offset
 * comes off once a super-block and token: 32 * sum_j sc_j * bsums_j per row,
 * eight vpdpwssd of the scale pairs with the token's pairs of 16-element sums. */
static ALWAYS_INLINE void q6_Kx8_dot(int nt, int64_t n, const void *p, const void *a, size_t a_stride, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    /* the scale pairs (word 2r + s: sub-block 2c + s of row r) to the words
     * of packs(sA, sB) for sub-block s: word w of 128-bit lane L is row
     * 2L + (w / 2) % 2 */
    short sidx[2][32];
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < 32; w++) sidx[s][w] = (short)(2 * (2 * (w / 8) + (w / 2) % 2) + s);
    const __m512i sc_idx[2] = {_mm512_loadu_si512((const void *)sidx[0]), _mm512_loadu_si512((const void *)sidx[1])};
    const __m512i row_of_lane = _mm512_set_epi32(7, 6, 7, 6, 5, 4, 5, 4, 3, 2, 3, 2, 1, 0, 1, 0);
    __m512 acc[NT_MAX];
    __m256 acc_o[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps(), acc_o[t] = _mm256_setzero_ps();
    const block_q6_Kx8 *x = (const block_q6_Kx8 *)p;
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        /* two sums a token (the sub-blocks 2c and 2c + 1): half the chain of dependent vpdpwssd */
        __m512i sumi[2][NT_MAX];
        __m256i off[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            sumi[0][t] = _mm512_setzero_si512(), sumi[1][t] = _mm512_setzero_si512(), off[t] = _mm256_setzero_si256();
        for (int c = 0; c < 8; c++) {
            const __m256i scp = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->sc[c]));
            const __m512i scw[2] = {_mm512_permutexvar_epi16(sc_idx[0], _mm512_castsi256_si512(scp)),
                                    _mm512_permutexvar_epi16(sc_idx[1], _mm512_castsi256_si512(scp))};
            const __m512i h = _mm512_loadu_si512((const void *)x->qh[c]);
            const __m512i l0 = _mm512_loadu_si512((const void *)x->ql[2 * c]);
            const __m512i l1 = _mm512_loadu_si512((const void *)x->ql[2 * c + 1]);
            __m512i q[2][2]; /* [sub-block 2c + s][A, B] */
            q[0][0] = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
            q[0][1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4),
                                      _mm512_and_si512(_mm512_slli_epi16(h, 2), m30));
            q[1][0] = _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_and_si512(h, m30));
            q[1][1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                                      _mm512_and_si512(_mm512_srli_epi16(h, 2), m30));
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                int64_t yq[4];
                memcpy(yq, y->qs + 32 * c, sizeof yq);
#pragma GCC unroll 2
                for (int s = 0; s < 2; s++) {
                    const __m512i sa = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[s][0], _mm512_set1_epi64(yq[2 * s]));
                    const __m512i sb = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[s][1], _mm512_set1_epi64(yq[2 * s + 1]));
                    sumi[s][t] = _mm512_dpwssd_epi32(sumi[s][t], _mm512_packs_epi32(sa, sb), scw[s]);
                }
                int32_t bs;
                memcpy(&bs, &y->bsums[2 * c], 4);
                off[t] = _mm256_dpwssd_epi32(off[t], scp, _mm256_set1_epi32(bs));
            }
        }
        const __m256 d8 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d));
        const __m512 d = _mm512_permutexvar_ps(row_of_lane, _mm512_castps256_ps512(d8));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const float dy = kq_act_block(a, a_stride, t, i)->d;
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(dy)),
                                     _mm512_cvtepi32_ps(_mm512_add_epi32(sumi[0][t], sumi[1][t])), acc[t]);
            acc_o[t] = _mm256_fmadd_ps(_mm256_mul_ps(d8, _mm256_set1_ps(32.0f * dy)), _mm256_cvtepi32_ps(off[t]),
                                       acc_o[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, _mm256_sub_ps(rows_of_quads(acc[t]), acc_o[t]));
}

PACKED_ENTRY(cpu_dot_q6_Kx8_q8_K_avx512, q6_Kx8_dot)

/* ---- Q4_0, Q5_0, Q4_1, Q5_1, 8 rows a 32-element block ---------------------------
 * Registers p = 0, 1 of a block hold 8 elements of each row (lane 2r + h:
 * elements 8p + 4h.. of row r in the low nibbles, 16 + 8p + 4h.. in the high
 * ones); the fifth bits come in as one masked byte add per register from the
 * 64-bit qh masks. Four vpdpbusd against 64-bit broadcasts of the token's
 * codes give lane 2r + h the products of 16 of row r's elements with the
 * unsigned codes q. The offsets of Q4_0/Q5_0 (q - 8, q - 16) come off as
 * offset/2 * sum(y) in each of a row's two lanes (the activation carries the
 * sum: block_q8_0s); Q4_1/Q5_1 add m * s (Q8_1's s = d * sum) in lane 2r
 * only. IQ4_NL (block_q4_0x8's bytes) looks its nibbles up as levels + 128
 * (levels_u), so its offset is 128: at most 16 * 241 * 127 a lane, no
 * int16 step to saturate; MXFP4 (block_mxfp4x8) the same with its own
 * levels, its scale 2^(e - 128) from the exponent byte. Then one convert and
 * one multiply-add by d * d_y a block and token; the two lanes of a row are
 * added at the end. */
typedef enum { LX_Q4_0, LX_Q5_0, LX_Q4_1, LX_Q5_1, LX_IQ4_NL, LX_MXFP4 } lx_fmt;

/* 16 signed levels + 128 as bytes in every 128-bit lane: a vpshufb of a
 * nibble gives the unsigned code that vpdpbusd takes. */
static ALWAYS_INLINE __m512i levels_u(const int8_t *levels) {
    const __m128i lv = _mm_loadu_si128((const __m128i *)levels);
    return _mm512_broadcast_i32x4(_mm_xor_si128(lv, _mm_set1_epi8((char)0x80)));
}

/* A row's two lanes (2r, 2r + 1) added in lane 2r, lane 2r + 1 zeroed: where
 * the lanes hold parts of an offset that cancel only in their sum (each
 * takes 64 * sum(y) of elements it does not hold), they meet exactly in
 * int32, not after a rounding to float each. */
static ALWAYS_INLINE __m512i row_pair_sum(__m512i v) {
    return _mm512_maskz_add_epi32(0x5555, v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
}

static ALWAYS_INLINE void legacy_x8_dot(lx_fmt f, int nt, int64_t n, const void *p, const void *a, size_t a_stride,
                                        float *out) {
    const bool has_min = f == LX_Q4_1 || f == LX_Q5_1, has_qh = f == LX_Q5_0 || f == LX_Q5_1;
    const bool table = f == LX_IQ4_NL || f == LX_MXFP4;
    const int half_off = f == LX_Q4_0 ? 4 : table ? 64 : 8;
    const size_t bb = f == LX_Q4_0 || f == LX_IQ4_NL ? sizeof(block_q4_0x8)
                      : f == LX_MXFP4 ? sizeof(block_mxfp4x8)
                      : f == LX_Q5_0  ? sizeof(block_q5_0x8)
                      : f == LX_Q4_1  ? sizeof(block_q4_1x8)
                                      : sizeof(block_q5_1x8);
    const size_t ab = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0s);
    const __m512i m4 = _mm512_set1_epi8(0x0F), c16 = _mm512_set1_epi8(0x10);
    const __m512i levels = f == LX_IQ4_NL ? levels_u(nib_iq4_levels)
                           : f == LX_MXFP4 ? levels_u(nib_mxfp4_levels)
                                           : _mm512_setzero_si512();
    const __m512i row_of_lane = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    __m512 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    const uint8_t *x = (const uint8_t *)p;
    for (int64_t i = 0; i < n / 32; i++, x += bb) {
        /* the fields, in the order of every block_*x8: d[8] (MXFP4: e[8]), m[8], qh[4][8], qs[2][64] */
        const uint8_t *qh = x + (has_min ? 32 : f == LX_MXFP4 ? 8 : 16);
        const uint8_t *qs = qh + (has_qh ? 32 : 0);
        __m512i q[2][2]; /* [register][low, high nibbles] */
#pragma GCC unroll 2
        for (int r = 0; r < 2; r++) {
            const __m512i bits = _mm512_loadu_si512((const void *)(qs + 64 * r));
            q[r][0] = _mm512_and_si512(bits, m4);
            q[r][1] = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
            if (has_qh) {
                uint64_t lo, hi;
                memcpy(&lo, qh + 8 * r, 8), memcpy(&hi, qh + 8 * (2 + r), 8);
                q[r][0] = _mm512_mask_add_epi8(q[r][0], _cvtu64_mask64(lo), q[r][0], c16);
                q[r][1] = _mm512_mask_add_epi8(q[r][1], _cvtu64_mask64(hi), q[r][1], c16);
            }
            if (table)
                q[r][0] = _mm512_shuffle_epi8(levels, q[r][0]), q[r][1] = _mm512_shuffle_epi8(levels, q[r][1]);
        }
        const __m256 d8 = f == LX_MXFP4 ? simd_mxfp4_half_scales(x) : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x));
        const __m512 dw = _mm512_permutexvar_ps(row_of_lane, _mm512_castps256_ps512(d8));
        __m512 mw = _mm512_setzero_ps();
        if (has_min)
            mw = _mm512_maskz_permutexvar_ps(0x5555, row_of_lane,
                                             _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + 16)))));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const uint8_t *yb = (const uint8_t *)a + (size_t)t * a_stride + (size_t)i * ab;
            const int8_t *yq = has_min ? ((const block_q8_1 *)yb)->qs : ((const block_q8_0s *)yb)->qs;
            int64_t y[4];
            memcpy(y, yq, sizeof y);
            __m512i v = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[0][0], _mm512_set1_epi64(y[0]));
            v = _mm512_dpbusd_epi32(v, q[1][0], _mm512_set1_epi64(y[1]));
            v = _mm512_dpbusd_epi32(v, q[0][1], _mm512_set1_epi64(y[2]));
            v = _mm512_dpbusd_epi32(v, q[1][1], _mm512_set1_epi64(y[3]));
            float dy;
            if (has_min) {
                const block_q8_1 *y1 = (const block_q8_1 *)yb;
                dy = simd_fp16_to_f32(y1->d);
                acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(simd_fp16_to_f32(y1->s)), acc[t]);
            } else {
                const block_q8_0s *y0 = (const block_q8_0s *)yb;
                dy = simd_fp16_to_f32(y0->d);
                v = _mm512_sub_epi32(v, _mm512_set1_epi32(half_off * y0->sum));
                /* MXFP4's levels (|l| <= 12) are small next to the offset 128 its lanes take off: their
                 * halves, apart, would carry that cancellation through the float sums */
                if (f == LX_MXFP4) v = row_pair_sum(v);
            }
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(dy)), _mm512_cvtepi32_ps(v), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, rows_of_pairs(acc[t]));
}

PACKED_ENTRY_F(cpu_dot_q4_0x8_q8_0s_avx512, legacy_x8_dot, LX_Q4_0)
PACKED_ENTRY_F(cpu_dot_q5_0x8_q8_0s_avx512, legacy_x8_dot, LX_Q5_0)
PACKED_ENTRY_F(cpu_dot_q4_1x8_q8_1_avx512, legacy_x8_dot, LX_Q4_1)
PACKED_ENTRY_F(cpu_dot_q5_1x8_q8_1_avx512, legacy_x8_dot, LX_Q5_1)
PACKED_ENTRY_F(cpu_dot_iq4_nlx8_q8_0s_avx512, legacy_x8_dot, LX_IQ4_NL)
PACKED_ENTRY_F(cpu_dot_mxfp4x8_q8_0s_avx512, legacy_x8_dot, LX_MXFP4)


/* ---- IQ4_XS, 8 rows (cpu/repack.h block_iq4_xsx8) --------------------------------
 * A 32-element sub-block of the 8 rows is Q4_0x8's two registers of nibbles
 * (lane 2r + h: elements 8p + 4h.. low, 16 + 8p + 4h.. high), looked up as
 * levels + 128 (levels_u). Four vpdpbusd against 64-bit broadcasts of
 * the token's codes give each lane 16 products, at most 16 * 241 * 127; the
 * 128 * sum(y) of the offset comes off as 64 * sum(y) in each of a row's two
 * lanes (the sub-block's sum from Q8_K's bsums); one vpmulld by the row's
 * signed scale (-32..31) and the super-block stays in int32 (at most 8 *
 * 2^21 * 32 a lane), as the file layout's kernel keeps it, a row's two
 * lanes added there (row_pair_sum); then one convert and one multiply-add
 * by d * d_y. */
static ALWAYS_INLINE void iq4_xsx8_dot(int nt, int64_t n, const void *p, const void *a, size_t a_stride, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), levels = levels_u(nib_iq4_levels);
    const __m512i row_of_lane = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    __m512 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    const block_iq4_xsx8 *x = (const block_iq4_xsx8 *)p;
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        __m512i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; j++) {
            const __m512i sc = _mm512_permutexvar_epi32(
                row_of_lane, _mm512_castsi256_si512(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)x->sc[j]))));
            __m512i q[2][2]; /* [register][low, high nibbles] */
#pragma GCC unroll 2
            for (int r = 0; r < 2; r++) {
                const __m512i bits = _mm512_loadu_si512((const void *)(x->qs[j] + 64 * r));
                q[r][0] = _mm512_shuffle_epi8(levels, _mm512_and_si512(bits, m4));
                q[r][1] = _mm512_shuffle_epi8(levels, _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4));
            }
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                int64_t yq[4];
                memcpy(yq, y->qs + 32 * j, sizeof yq);
                __m512i v = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[0][0], _mm512_set1_epi64(yq[0]));
                v = _mm512_dpbusd_epi32(v, q[1][0], _mm512_set1_epi64(yq[1]));
                v = _mm512_dpbusd_epi32(v, q[0][1], _mm512_set1_epi64(yq[2]));
                v = _mm512_dpbusd_epi32(v, q[1][1], _mm512_set1_epi64(yq[3]));
                v = _mm512_sub_epi32(v, _mm512_set1_epi32(64 * (y->bsums[2 * j] + y->bsums[2 * j + 1])));
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(v, sc));
            }
        }
        const __m512 d = _mm512_permutexvar_ps(row_of_lane,
                                               _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d))));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(kq_act_block(a, a_stride, t, i)->d)),
                                     _mm512_cvtepi32_ps(row_pair_sum(sumi[t])), acc[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, rows_of_pairs(acc[t]));
}

PACKED_ENTRY(cpu_dot_iq4_xsx8_q8_K_avx512, iq4_xsx8_dot)

/* ---- 8 rows decoded ahead (cpu/repack.h block_i8x8) ----------------------------------
 * The lattice formats' prompt kernel, on blocks their decoders made for a
 * token block (cpu_kernel.decode_x8). A 32-element sub-block is four
 * registers of w + 128 (lane 2r + h: elements 8k + 4h.. of row r); two
 * vpdpbusd each for its two 16-element halves give a lane 8 products, at
 * most 8 * 190 * 127, and one vpmulld by the half's scale (at most 31):
 * the super-block stays in int32 (at most 16 * 2^18 * 31 a lane). The + 128
 * comes off once a super-block and token, not a half: 128 * sum_h sc_h *
 * bsums_h per row, four vpdpwssd of the block's off pairs with the token's
 * bsums permuted to match (a row's two lanes take its even and odd
 * halves), and a row's two lanes are added in int32 (row_pair_sum). Then
 * one convert and one multiply-add by d * d_y. s32: the formats with one
 * scale a 32 elements (sc[2j] == sc[2j + 1]; IQ2_XXS, IQ3_XXS, IQ3_S,
 * IQ1_S) run the sub-block's four vpdpbusd as one chain (at most 16 * 190 *
 * 127 a lane) and one vpmulld. */
static ALWAYS_INLINE void i8x8_dot(bool s32, int nt, int64_t n, const void *p, const void *a, size_t a_stride,
                                   float *out) {
    const __m512i row_of_lane = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    /* the bsums pairs of off[m]'s lanes: lane L takes halves 4m + L % 2 and 4m + L % 2 + 2 */
    __m512i bs_idx[4];
    for (int m = 0; m < 4; m++) {
        short idx[32];
        for (int L = 0; L < 16; L++) idx[2 * L] = (short)(4 * m + L % 2), idx[2 * L + 1] = (short)(4 * m + L % 2 + 2);
        bs_idx[m] = _mm512_loadu_si512((const void *)idx);
    }
    __m512 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    const block_i8x8 *x = (const block_i8x8 *)p;
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        __m512i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const __m512i bs = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)kq_act_block(a, a_stride, t, i)->bsums));
            __m512i c = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++)
                c = _mm512_dpwssd_epi32(c, _mm512_loadu_si512((const void *)x->off[m]), _mm512_permutexvar_epi16(bs_idx[m], bs));
            sumi[t] = _mm512_sub_epi32(_mm512_setzero_si512(), c);
        }
        for (int j = 0; j < 8; j++) {
            /* both halves' 8 rows as int32 (lanes 0-7 the first half's), to the rows' lanes */
            const __m512i sc = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)x->sc[2 * j]));
            const __m512i sc0 = _mm512_permutexvar_epi32(row_of_lane, sc);
            const __m512i sc1 = _mm512_permutexvar_epi32(_mm512_add_epi32(row_of_lane, _mm512_set1_epi32(8)), sc);
            __m512i q[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) q[k] = _mm512_loadu_si512((const void *)x->qs[j][k]);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                int64_t yq[4];
                memcpy(yq, y->qs + 32 * j, sizeof yq);
                if (s32) { /* one scale for the sub-block: one chain, one multiply */
                    __m512i v = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[0], _mm512_set1_epi64(yq[0]));
                    v = _mm512_dpbusd_epi32(v, q[1], _mm512_set1_epi64(yq[1]));
                    v = _mm512_dpbusd_epi32(v, q[2], _mm512_set1_epi64(yq[2]));
                    v = _mm512_dpbusd_epi32(v, q[3], _mm512_set1_epi64(yq[3]));
                    sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(v, sc0));
                    continue;
                }
                __m512i v0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[0], _mm512_set1_epi64(yq[0]));
                __m512i v1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[2], _mm512_set1_epi64(yq[2]));
                v0 = _mm512_dpbusd_epi32(v0, q[1], _mm512_set1_epi64(yq[1]));
                v1 = _mm512_dpbusd_epi32(v1, q[3], _mm512_set1_epi64(yq[3]));
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(_mm512_mullo_epi32(v0, sc0), _mm512_mullo_epi32(v1, sc1)));
            }
        }
        const __m512 d = _mm512_permutexvar_ps(row_of_lane, _mm512_castps256_ps512(_mm256_loadu_ps(x->d)));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(kq_act_block(a, a_stride, t, i)->d)),
                                     _mm512_cvtepi32_ps(row_pair_sum(sumi[t])), acc[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, rows_of_pairs(acc[t]));
}

PACKED_ENTRY_F(cpu_dot_i8x8_q8_K_avx512, i8x8_dot, false)
PACKED_ENTRY_F(cpu_dot_i8x8s32_q8_K_avx512, i8x8_dot, true)

/* ---- Q8_0, 8 rows a 32-element block -----------------------------------------------
 * Four registers of signed codes (register p: 8 codes of each row, lane 2r +
 * h codes 8p + 4h..), against 64-bit broadcasts of the token's unsigned codes
 * y + 128 (block_q8_0u): the products are w * y + 128 * w, and the 128 * sum(w)
 * of each lane, made once a block by four vpdpbusd with ones, comes off once
 * a block and token. */
static ALWAYS_INLINE void q8_0x8_dot(int nt, int64_t n, const void *p, const void *a, size_t a_stride, float *out) {
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512i row_of_lane = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    __m512 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    const block_q8_0x8 *x = (const block_q8_0x8 *)p;
    for (int64_t i = 0; i < n / 32; i++, x++) {
        __m512i w[4], ws = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            w[r] = _mm512_loadu_si512((const void *)x->qs[r]);
            ws = _mm512_dpbusd_epi32(ws, ones, w[r]);
        }
        ws = _mm512_slli_epi32(ws, 7);
        const __m512 dw = _mm512_permutexvar_ps(row_of_lane,
                                                _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d))));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_0u *y = (const block_q8_0u *)((const uint8_t *)a + (size_t)t * a_stride) + i;
            int64_t yq[4];
            memcpy(yq, y->qs, sizeof yq);
            __m512i v = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi64(yq[0]), w[0]);
            v = _mm512_dpbusd_epi32(v, _mm512_set1_epi64(yq[1]), w[1]);
            v = _mm512_dpbusd_epi32(v, _mm512_set1_epi64(yq[2]), w[2]);
            v = _mm512_dpbusd_epi32(v, _mm512_set1_epi64(yq[3]), w[3]);
            v = _mm512_sub_epi32(v, ws);
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(simd_fp16_to_f32(y->d))), _mm512_cvtepi32_ps(v),
                                     acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(out + Q4_KX8_ROWS * t, rows_of_pairs(acc[t]));
}

PACKED_ENTRY(cpu_dot_q8_0x8_q8_0u_avx512, q8_0x8_dot)
