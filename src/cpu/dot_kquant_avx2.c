/* AVX2 dots of the K-quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K, and of the
 * ternary TQ2_0 (Q2_K's layout) and TQ1_0, with Q8_K activations.
 *
 * A super-block is 256 elements, i.e. eight 256-bit registers of int8. Per
 * register: maddubs (u8 weight x s8 activation, pairs summed into int16),
 * then madd with the sub-block scale broadcast as int16 (pairs into int32),
 * which applies the integer scale for free. All of a super-block's products
 * stay in one int32 vector, exact, and meet the fp32 scale d_w * d_a once per
 * super-block, as in the reference; only the order of the fp32 adds differs.
 *
 * Ranges (no int16 saturation): maddubs pairs reach 2*15*127 (Q4_K),
 * 2*31*127 (Q5_K), 2*63*127 (Q6_K) < 32767; times a 6- or 8-bit scale and
 * paired again they stay far inside int32.
 *
 * Offsets are never subtracted per element:
 *   Q4_K/Q5_K  x = d*sc*q - dmin*m: the minimum term is dmin * d_a *
 *              sum_j m_j * (sum of a over sub-block j), and Q8_K carries those
 *              activation sums (bsums, per 16) already; one madd does it.
 *   Q6_K       x = d*sc*(q - 32): the unsigned q (0..63) goes into maddubs and
 *              32 * sum_j sc_j * bsums_j comes off the int32 total once.
 *
 * As in dot_legacy_avx2.c each body serves a single-token vec_dot and an x4
 * version that decodes the weights once for four activation rows, with the
 * same per-token operations, so results do not depend on the batch.
 */
#include <stdbool.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/kquant_scales.h"
#include "cpu/repack.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NT_MAX 4

/* Broadcast int16 element k of each 128-bit lane to the whole lane. */
static ALWAYS_INLINE __m256i broadcast_i16(__m256i v, int k) {
    const __m256i idx = _mm256_set1_epi16((short)((2 * k) | ((2 * k + 1) << 8)));
    return _mm256_shuffle_epi8(v, idx);
}

/* ---- Q4_K and Q5_K -----------------------------------------------------------------
 * Step j (0..3) covers 64 elements: 32 bytes of qs whose low nibbles are
 * sub-block 2j and high nibbles sub-block 2j+1 (layout in quant/q_k.c). Q5_K
 * adds element e's fifth bit, bit e/32 of qh[e%32]: for sub-block s it is bit
 * s of every qh byte, moved to bit 4. There is no 8-bit shift, so 16-bit lanes
 * are shifted right by s (< 8) and bit 0 of each byte kept: what the high byte
 * pushes into the low one lands in bits 8-s..7, masked off. */

static ALWAYS_INLINE void affine_dot(bool five, int nt, int64_t n, const void *w, const void *a, size_t a_stride,
                                     float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc[NT_MAX];
    __m128 acc_m[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) {
        acc[t] = _mm256_setzero_ps();
        acc_m[t] = _mm_setzero_ps();
    }
    const size_t bb = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int64_t i = 0; i < n / QK_K; i++) {
        /* block_q4_K and block_q5_K share d, dmin, scales; qh and qs follow */
        const block_q4_K *x = (const block_q4_K *)((const uint8_t *)w + (size_t)i * bb);
        const block_q5_K *x5 = (const block_q5_K *)x;
        const uint8_t *qs = five ? x5->qs : x->qs;
        uint32_t sm[4];
        kq_unpack_scales_mins(x->scales, sm);
        const __m256i sc = _mm256_broadcastsi128_si256(kq_scales16(sm));
        const float xd = simd_fp16_to_f32(x->d), xmin = simd_fp16_to_f32(x->dmin);
        const __m256i hbits = five ? _mm256_loadu_si256((const __m256i *)x5->qh) : _mm256_setzero_si256();
        __m256i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
            __m256i ql = _mm256_and_si256(bits, m4);
            __m256i qh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if (five) {
                ql = _mm256_or_si256(ql, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), one), 4));
                qh = _mm256_or_si256(qh, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), one), 4));
            }
            const __m256i scl = broadcast_i16(sc, 2 * j), sch = broadcast_i16(sc, 2 * j + 1);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                const __m256i al = _mm256_loadu_si256((const __m256i *)(y->qs + 64 * j));
                const __m256i ah = _mm256_loadu_si256((const __m256i *)(y->qs + 64 * j + 32));
                const __m256i pl = _mm256_madd_epi16(scl, _mm256_maddubs_epi16(ql, al));
                const __m256i ph = _mm256_madd_epi16(sch, _mm256_maddubs_epi16(qh, ah));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(pl, ph));
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            acc_m[t] = _mm_fmadd_ps(_mm_set1_ps(y->d * xmin), _mm_cvtepi32_ps(kq_min_sum(sm, y)), acc_m[t]);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(y->d * xd), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = simd_hsum_f32x8(acc[t]) - kq_hsum_f32x4(acc_m[t]);
}

float cpu_dot_q4_K_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    affine_dot(false, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q4_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    affine_dot(false, 4, n, w, a, a_stride, out);
}

float cpu_dot_q5_K_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    affine_dot(true, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q5_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    affine_dot(true, 4, n, w, a, a_stride, out);
}

/* ---- Q6_K ------------------------------------------------------------------------
 * Layout (quant/q_k.c): two halves of 128; in half h, quarter k (32 elements)
 * has its low 4 bits in ql[64h + 32(k%2) + l] (low nibble for k < 2, high for
 * k >= 2) and its top 2 bits in qh[32h + l] bits 2k..2k+1. Each quarter spans
 * two 16-element sub-blocks, whose scales go to the two 128-bit lanes. */

/* bytes 0..7 <- scale s, bytes 8..15 <- scale s+1, then sign-extended to
 * int16: the low 128-bit lane gets scale s, the high lane s+1. */
static ALWAYS_INLINE __m256i q6_scale_pair(__m128i scales8, int s) {
    const __m128i idx = _mm_set_epi64x(0x0101010101010101LL * (s + 1), 0x0101010101010101LL * s);
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales8, idx));
}

static ALWAYS_INLINE void q6_dot(int nt, int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    const block_q6_K *x = (const block_q6_K *)w;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m30 = _mm256_set1_epi8(0x30);
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        const float xd = simd_fp16_to_f32(x->d);
        const __m128i scales8 = _mm_loadu_si128((const __m128i *)x->scales);
        __m256i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x->ql + 64 * h;
            const __m256i lo01 = _mm256_loadu_si256((const __m256i *)ql);
            const __m256i lo23 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i hb = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
            /* quarters 0..3: low nibble of lo01, of lo23, high nibble of lo01,
             * of lo23; top bits from hb bits 0-1, 2-3, 4-5, 6-7, shifted to
             * bits 4-5 and masked (16-bit shifts: what crosses into the
             * neighbouring byte lands outside bits 4-5 and is masked off) */
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(lo01, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
            q[1] = _mm256_or_si256(_mm256_and_si256(lo23, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo01, 4), m4), _mm256_and_si256(hb, m30));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo23, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
            for (int k = 0; k < 4; k++) {
                const __m256i sc = q6_scale_pair(scales8, 8 * h + 2 * k);
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++) {
                    const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                    const __m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)(y->qs + 128 * h + 32 * k)));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(sc, p));
                }
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            /* the -32 offset: 32 * sum_j sc_j * bsums_j, subtracted once */
            const __m256i s = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(kq_scale_bsums(scales8, y), 5));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(y->d * xd), _mm256_cvtepi32_ps(s), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = simd_hsum_f32x8(acc[t]);
}

float cpu_dot_q6_K_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    q6_dot(1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q6_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    q6_dot(4, n, w, a, a_stride, out);
}

/* ---- Q2_K, Q3_K and TQ2_0 -----------------------------------------------------------
 * All three keep their 2-bit fields in the layout of quant/q_k.c: in half h of
 * 128 elements, element 128h + 32k + l has bits 2k..2k+1 of qs[32h + l], so
 * one 32-byte load serves four steps, each a 16-bit shift by 2k and a mask.
 * A step's 32 elements are sub-blocks 8h + 2k (low 128-bit lane) and
 * 8h + 2k + 1 (high lane), whose scales q6_scale_pair places likewise.
 *
 *   Q2_K  x = d*sc*q - dmin*m, q 0..3, sc and m 4 bits: the minimum term is
 *         dmin * d_a * sum_j m_j * bsums_j, one madd per super-block.
 *   Q3_K  x = d*sc*(q - 4*(1 - hbit)), sc signed 6 bits: the unsigned
 *         q' = q + 4*hbit (0..7) goes into maddubs and 4 * sum_j sc_j *
 *         bsums_j comes off the int32 total once, as Q6_K's -32 does.
 *         Element e's hbit is bit e/32 of hmask[e%32]: bit 4h + k of byte l,
 *         taken by the 16-bit shift and byte mask Q5_K uses.
 *   TQ2_0 x = d*(q - 1), no sub-block scales: a scale of 1 everywhere, and
 *         sum_j bsums_j comes off the int32 total.
 * maddubs pairs reach 2*3*127 and 2*7*127, far from int16's limit. */

static ALWAYS_INLINE void low2_dot(low2_fmt f, int nt, int64_t n, const void *w, const void *a, size_t a_stride,
                                   float *out) {
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc[NT_MAX], acc_m[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = acc_m[t] = _mm256_setzero_ps();
    const bool three = f == LOW2_Q3_K, ternary = f == LOW2_TQ2_0;
    const size_t bb = low2_block_bytes(f);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const low2_head x = low2_head_of(f, (const uint8_t *)w + (size_t)i * bb);
        const uint8_t *qs = x.qs;
        const __m128i scales8 = x.scales8;
        const __m256i hm = x.hm;
        __m256i sumi[NT_MAX];
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) sumi[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q2 = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
            for (int k = 0; k < 4; k++) {
                __m256i q = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * k), m3);
                if (three)
                    q = _mm256_or_si256(q, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), one), 2));
                const __m256i sc = q6_scale_pair(scales8, 8 * h + 2 * k);
#pragma GCC unroll 4
                for (int t = 0; t < nt; t++) {
                    const block_q8_K *y = kq_act_block(a, a_stride, t, i);
                    const __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(y->qs + 128 * h + 32 * k)));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(sc, p));
                }
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            __m256i s = sumi[t];
            if (three) { /* the -4 of every quant whose hbit is clear: 4 * sum_j sc_j * bsums_j */
                s = _mm256_sub_epi32(s, _mm256_slli_epi32(kq_scale_bsums(scales8, y), 2));
            } else if (ternary) { /* the -1 of every quant */
                s = _mm256_sub_epi32(s, kq_scale_bsums(scales8, y));
            } else {
                const __m256i ms = _mm256_madd_epi16(x.mins16, _mm256_loadu_si256((const __m256i *)y->bsums));
                acc_m[t] = _mm256_fmadd_ps(_mm256_set1_ps(y->d * x.dmin), _mm256_cvtepi32_ps(ms), acc_m[t]);
            }
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(y->d * x.d), _mm256_cvtepi32_ps(s), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = simd_hsum_f32x8(acc[t]) - (f == LOW2_Q2_K ? simd_hsum_f32x8(acc_m[t]) : 0.0f);
}

float cpu_dot_q2_K_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    low2_dot(LOW2_Q2_K, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q2_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    low2_dot(LOW2_Q2_K, 4, n, w, a, a_stride, out);
}

/* Super-block i of 8 Q3_K rows decoded ahead for a prompt (repack.h
 * block_i8x8): element 128hh + 32k + l is (qs[32hh + l] >> 2k & 3) - 4 + 4 *
 * (hmask[l] >> (4hh + k) & 1), stored + 128; the 16 unbiased 6-bit scales are
 * the halves' scales (element 16j.. has scale j), d the block's. */
void cpu_decode_x8_q3_K_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    block_i8x8 *o = dst;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), base = _mm256_set1_epi8(124);
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const block_q3_K *x = (const block_q3_K *)(w + (size_t)r * w_stride) + i;
        int8_t sc[16];
        _mm_storeu_si128((__m128i *)sc, kq_q3_scales8(x->scales));
        const __m256i hm = _mm256_loadu_si256((const __m256i *)x->hmask);
        for (int hh = 0; hh < 2; hh++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * hh));
            for (int k = 0; k < 4; k++) {
                const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m3);
                const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * hh + k), one);
                const __m256i u = _mm256_add_epi8(_mm256_add_epi8(lo, base), _mm256_slli_epi16(hb, 2));
                uint8_t b[32];
                _mm256_storeu_si256((__m256i *)b, u);
                const int ib = 4 * hh + k;
                for (int kk = 0; kk < 4; kk++) memcpy(&o->qs[ib][kk][8 * r], b + 8 * kk, 8);
            }
        }
        for (int j = 0; j < 16; j++) o->sc[j][r] = sc[j];
        o->d[r] = _cvtsh_ss(x->d);
    }
    i8x8_fill_off(o);
}

float cpu_dot_q3_K_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    low2_dot(LOW2_Q3_K, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_q3_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    low2_dot(LOW2_Q3_K, 4, n, w, a, a_stride, out);
}

float cpu_dot_tq2_0_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    low2_dot(LOW2_TQ2_0, 1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_tq2_0_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    low2_dot(LOW2_TQ2_0, 4, n, w, a, a_stride, out);
}

/* ---- TQ1_0 ---------------------------------------------------------------------------
 * Five trits a byte as a base-3 fraction of 256 (quant/q_ternary.c): trit k
 * of byte b is ((b * 3^k mod 256) * 3) >> 8. Bytes have no multiply, so the
 * even and odd bytes of each 16-bit lane go through mullo_epi16 apart, each
 * product masked back to 8 bits. Eight registers of 32 trits (t + 1, 0..2)
 * cover the block in element order:
 *   qs[0..31], k = 0..4:          elements 32k + m
 *   qs[32..47] in both lanes, the low lane at 3^k and the high at 3^(k+1),
 *   k = 0, 2:                     elements 160 + 16k .. 160 + 16k + 31
 *   qs[32..47] at 3^4 (low lane) and qh spread so byte 4k + m is qh[m] at 3^k
 *   (high lane):                  elements 224..255
 * maddubs pairs of t + 1 (at most 2 * 2 * 127) add up over the 8 registers in
 * int16, one madd a block and token; the +1 comes off as the sum of bsums. */
static ALWAYS_INLINE __m256i tq1_trits(__m256i x, __m256i c16) {
    const __m256i lo8 = _mm256_set1_epi16(0x00FF), three = _mm256_set1_epi16(3);
    const __m256i lo = _mm256_and_si256(_mm256_mullo_epi16(_mm256_and_si256(x, lo8), c16), lo8);
    const __m256i hi = _mm256_and_si256(_mm256_mullo_epi16(_mm256_srli_epi16(x, 8), c16), lo8);
    return _mm256_or_si256(_mm256_srli_epi16(_mm256_mullo_epi16(lo, three), 8),
                           _mm256_slli_epi16(_mm256_srli_epi16(_mm256_mullo_epi16(hi, three), 8), 8));
}

static ALWAYS_INLINE void tq1_dot(int nt, int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    const block_tq1_0 *x = (const block_tq1_0 *)w;
    const __m256i ones16 = _mm256_set1_epi16(1);
    const __m128i ones8 = _mm_set1_epi8(1);
    const __m256i c_pair[2] = {_mm256_setr_epi16(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3),
                               _mm256_setr_epi16(9, 9, 9, 9, 9, 9, 9, 9, 27, 27, 27, 27, 27, 27, 27, 27)};
    const __m256i c_last = _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27);
    const __m128i spread = _mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    __m256 acc[NT_MAX];
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x++) {
        __m256i tr[8];
        const __m256i qa = _mm256_loadu_si256((const __m256i *)x->qs);
        static const short pow3[5] = {1, 3, 9, 27, 81};
        for (int k = 0; k < 5; k++) tr[k] = tq1_trits(qa, _mm256_set1_epi16(pow3[k]));
        const __m128i qb = _mm_loadu_si128((const __m128i *)(x->qs + 32));
        const __m256i qbb = _mm256_broadcastsi128_si256(qb);
        tr[5] = tq1_trits(qbb, c_pair[0]);
        tr[6] = tq1_trits(qbb, c_pair[1]);
        uint32_t qh;
        memcpy(&qh, x->qh, 4);
        const __m128i hs = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)qh), spread);
        tr[7] = tq1_trits(_mm256_inserti128_si256(_mm256_castsi128_si256(qb), hs, 1), c_last);
        static const short at[8] = {0, 32, 64, 96, 128, 160, 192, 224}; /* first element of each register */
        const float xd = simd_fp16_to_f32(x->d);
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = kq_act_block(a, a_stride, t, i);
            __m256i s16 = _mm256_setzero_si256();
            for (int r = 0; r < 8; r++)
                s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(tr[r], _mm256_loadu_si256((const __m256i *)(y->qs + at[r]))));
            const __m256i s = _mm256_sub_epi32(_mm256_madd_epi16(s16, ones16), kq_scale_bsums(ones8, y));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(y->d * xd), _mm256_cvtepi32_ps(s), acc[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++) out[t] = simd_hsum_f32x8(acc[t]);
}

float cpu_dot_tq1_0_q8_K_avx2(int64_t n, const void *w, const void *a) {
    float r;
    tq1_dot(1, n, w, a, 0, &r);
    return r;
}
void cpu_dot_tq1_0_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out) {
    tq1_dot(4, n, w, a, a_stride, out);
}
