/* The K-quants: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and their activation format Q8_K.
 *
 * Every K-quant packs QK_K = 256 weights into one super-block. The super-block
 * is split into sub-blocks (16 of 16 elements, or 8 of 32) that each carry a
 * small integer scale (and for the "affine" formats a small integer minimum);
 * those integers are in turn multiplied by one or two fp16 super-block scales:
 *
 *   Q2_K  x = d*sc[e/16]*q - dmin*m[e/16]      q in 0..3,   sc, m 4-bit
 *   Q3_K  x = d*(sc[e/16]-32)*(q-4)            q in 0..7,   sc 6-bit
 *   Q4_K  x = d*sc[e/32]*q - dmin*m[e/32]      q in 0..15,  sc, m 6-bit
 *   Q5_K  x = d*sc[e/32]*q - dmin*m[e/32]      q in 0..31,  sc, m 6-bit
 *   Q6_K  x = d*sc[e/16]*(q-32)                q in 0..63,  sc signed 8-bit
 *   Q8_K  x = d*q                              q in -127..127, d fp32
 *
 * (e is the element's index inside its super-block.) The exact place of every
 * bit is documented next to each format's decoder below; the decoders are the
 * one place that knows the layout, and dequantize and vec_dot both go through
 * them.
 *
 * Everything here must reproduce ggml bit for bit: dequantize forms the same
 * fp32 products in the same order as ggml's dequantize_row_*, the quantizers
 * follow ggml's reference (no importance matrix) search with its nearest_int
 * rounding, and the dots keep the fp32 accumulation order of ggml's generic
 * scalar kernels. Floating-point contraction must stay off (the Makefile's
 * -ffp-contract=off): a fused multiply-add would change the last bit.
 */
#include <math.h>
#include <string.h>

#include "core/fp16.h"
#include "quant/formats.h"

/* Below this absolute maximum a group counts as all zeros (ggml's GROUP_MAX_EPS). */
#define QK_GROUP_EPS 1e-15f

static int qk_clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* ========================================================================
 * Shared packing pieces
 * ======================================================================== */

/* 2-bit fields, used for all of Q2_K and for the low two bits of Q3_K.
 * The 256 quants are two halves of 128; inside a half, byte b (0..31) of the
 * half's 32 bytes holds elements b, b+32, b+64 and b+96 in bit pairs 0-1, 2-3,
 * 4-5 and 6-7. So element e sits in qs[32*(e/128) + e%32] at bit
 * 2*((e%128)/32). Consecutive elements share no byte, which lets SIMD code
 * unpack 32 neighbours with one shift and mask. */
static void qk_unpack_2bit(const uint8_t *qs, uint8_t *q) {
    for (int e = 0; e < QK_K; e++) {
        q[e] = (uint8_t)((qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3);
    }
}

static void qk_pack_2bit(const uint8_t *q, uint8_t *qs) {
    for (int h = 0; h < QK_K; h += 128) {
        for (int b = 0; b < 32; b++) {
            qs[h / 4 + b] = (uint8_t)(q[h + b] | (q[h + b + 32] << 2) |
                                      (q[h + b + 64] << 4) | (q[h + b + 96] << 6));
        }
    }
}

/* 4-bit fields, used for Q4_K and the low four bits of Q5_K. The quants are
 * four chunks of 64; byte b (0..31) of a chunk's 32 bytes holds element b in
 * its low nibble and element b+32 in its high nibble. Element e: byte
 * qs[32*(e/64) + e%32], high nibble when e%64 >= 32. */
static void qk_unpack_nibbles(const uint8_t *qs, uint8_t *q) {
    for (int e = 0; e < QK_K; e++) {
        q[e] = (uint8_t)((qs[32 * (e / 64) + e % 32] >> (4 * ((e % 64) / 32))) & 0xF);
    }
}

static void qk_pack_nibbles(const uint8_t *q, uint8_t *qs) {
    for (int c = 0; c < QK_K; c += 64) {
        for (int b = 0; b < 32; b++) qs[c / 2 + b] = (uint8_t)((q[c + b] & 0xF) | (q[c + b + 32] << 4));
    }
}

/* The 12 scale bytes of Q4_K and Q5_K: eight 6-bit scales sc[j] and eight
 * 6-bit minimums m[j], one pair per 32-element sub-block, 96 bits in 12 bytes.
 *
 *   byte 0..3    bits 0-5: sc[0..3]      bits 6-7: high 2 bits of sc[4..7]
 *   byte 4..7    bits 0-5: m[0..3]       bits 6-7: high 2 bits of m[4..7]
 *   byte 8..11   bits 0-3: low 4 bits of sc[4..7]
 *                bits 4-7: low 4 bits of m[4..7]
 *
 * The first four pairs are thus readable with one mask; the last four are
 * stitched together from two bytes each. */
static void qk_unpack_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* Inverse of qk_unpack_scale_min for one pair (ls, lm at most 63). Call it
 * for j = 0..7 in order: pairs 0..3 assign bytes 0..7 outright, pairs 4..7
 * assign bytes 8..11 and or their high bits into bytes 0..7, so no byte needs
 * clearing first. */
static void qk_pack_scale_min(int j, uint8_t ls, uint8_t lm, uint8_t *s) {
    if (j < 4) {
        s[j] = ls;
        s[j + 4] = lm;
    } else {
        s[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
        s[j - 4] |= (uint8_t)((ls >> 4) << 6);
        s[j] |= (uint8_t)((lm >> 4) << 6);
    }
}

/* The 12 scale bytes of Q3_K: sixteen 6-bit scales, stored biased by 32 (the
 * stored value u means the signed scale u - 32, range -32..31).
 *
 *   byte 0..7    bits 0-3: low 4 bits of u[0..7]
 *                bits 4-7: low 4 bits of u[8..15]
 *   byte 8..11   byte 8 + j%4, bits 2*(j/4) .. 2*(j/4)+1: high 2 bits of u[j]
 *
 * so byte 8 carries the high bits of u[0], u[4], u[8], u[12], byte 9 those of
 * u[1], u[5], u[9], u[13], and so on. */
static void qk_unpack_q3_scales(const uint8_t *s, int *sc) {
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
        int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (lo | (hi << 4)) - 32;
    }
}

/* u is the biased (0..63) scale of sub-block j; s must start zeroed. */
static void qk_pack_q3_scale(int j, int u, uint8_t *s) {
    if (j < 8) {
        s[j] |= (uint8_t)(u & 0xF);
    } else {
        s[j - 8] |= (uint8_t)((u & 0xF) << 4);
    }
    s[8 + j % 4] |= (uint8_t)((u >> 4) << (2 * (j / 4)));
}

/* ========================================================================
 * Per-block decoders: the bit layout of each format's quants, in one place
 * ======================================================================== */

/* Q3_K: a 3-bit quant is 2 low bits in qs (the 2-bit layout above) plus one
 * high bit in hmask. hmask is 32 bytes: element e's high bit is bit e/32 of
 * hmask[e%32]. The signed value is (low | high<<2) - 4, i.e. a clear high bit
 * subtracts 4 and a set one leaves the low bits as they are (-4..3 in all). */
static void qk_decode_q3_K(const block_q3_K *b, int8_t *q) {
    uint8_t lo[QK_K];
    qk_unpack_2bit(b->qs, lo);
    for (int e = 0; e < QK_K; e++) {
        int high = (b->hmask[e % 32] >> (e / 32)) & 1;
        q[e] = (int8_t)(lo[e] - (high ? 0 : 4));
    }
}

/* Q5_K: a 5-bit quant is 4 low bits in qs (the nibble layout above) plus one
 * high bit in qh, 32 bytes with the same placement as Q3_K's hmask: element
 * e's fifth bit is bit e/32 of qh[e%32]. Values 0..31. */
static void qk_decode_q5_K(const block_q5_K *b, uint8_t *q) {
    qk_unpack_nibbles(b->qs, q);
    for (int e = 0; e < QK_K; e++) q[e] = (uint8_t)(q[e] | (((b->qh[e % 32] >> (e / 32)) & 1) << 4));
}

/* Q6_K: a 6-bit quant is 4 low bits in ql (128 bytes) and 2 high bits in qh
 * (64 bytes). The super-block is two halves of 128; inside half h, with
 * r = e%128, quarter k = r/32 and lane l = r%32:
 *   low bits:  ql[64*h + 32*(k%2) + l], low nibble for k < 2, high for k >= 2
 *   high bits: qh[32*h + l], bits 2k and 2k+1
 * so each ql byte serves quarters 0 and 2 (or 1 and 3) and each qh byte all
 * four quarters of one lane. The signed value is q - 32 (-32..31). */
static void qk_decode_q6_K(const block_q6_K *b, int8_t *q) {
    for (int e = 0; e < QK_K; e++) {
        int h = e / 128, k = (e % 128) / 32, l = e % 32;
        int low = (b->ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
        int high = (b->qh[32 * h + l] >> (2 * k)) & 3;
        q[e] = (int8_t)((low | (high << 4)) - 32);
    }
}

/* ========================================================================
 * Scale search, as ggml's reference quantizers do it
 *
 * These reproduce ggml's make_qx_quants (rmse_type 1, no importance matrix),
 * make_q3_quants (with the RMSE refinement) and make_qkx2_quants, including
 * the order of every fp32 operation: a different order would pick different
 * quants now and then and the files would no longer match ggml's.
 * ======================================================================== */

/* Symmetric quants L in 0..2*nmax-1 (value L - nmax) for n elements, scale
 * chosen to minimise the x^2-weighted squared error: start from the scale
 * that maps the largest magnitude to -nmax, then try 18 nearby scales
 * -(nmax +- 0.1*k)/max and keep the best least-squares fit. Returns the
 * scale; x ~= scale * (L - nmax). */
static float qk_fit_symmetric(int n, int nmax, const float *x, int8_t *L) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < QK_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = qk_clamp(nib_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    /* the weighted error of the least-squares scale is sum(w x^2) - sumlx^2/suml2,
     * so maximising sumlx^2/suml2 (= scale*sumlx) minimises the error */
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = qk_clamp(nib_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                L[i] = (int8_t)(nmax + qk_clamp(nib_nearest_int(iscale * x[i]), -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Q3_K's sub-block fit (16 elements, values -4..3): start from the scale that
 * maps the largest magnitude to -4, then up to 5 sweeps of coordinate descent
 * that move one quant at a time to the value the current least-squares scale
 * prefers, keeping a move only when it raises sumlx^2/suml2 (the x^2-weighted
 * error falls). Returns the scale; L ends in 0..7 (value L - 4), except for an
 * all-zero group where L is left 0, as in ggml. */
static float qk_fit_q3(const float *x, int8_t *L) {
    const int n = 16, nmax = 4;
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < QK_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = qk_clamp(nib_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            /* the sums without element i; its best quant is x * sl2 / slx */
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                int new_l = qk_clamp(nib_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * (float)new_l;
                    sl2 += w * (float)new_l * (float)new_l;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Affine fit x ~= scale*L - the_min with L in 0..nmax, for the formats with a
 * minimum (Q2_K, Q4_K, Q5_K). The minimum is never positive (a group of
 * positive values keeps offset 0, so zero stays exactly representable). Start
 * from the min..max range, then for nstep+1 candidate scales
 * (nmax + rmin + rdelta*is)/(max - min) quantize, solve the weighted 2x2
 * least-squares problem for scale and min, and keep the candidate with the
 * smallest weighted error (absolute error when use_mad, squared otherwise).
 * Laux is scratch of n bytes. Returns the scale; *the_min gets -min >= 0. */
static float qk_fit_affine(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                           float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                           int use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0.0f) min = 0.0f;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.0f / iscale;
    float best_error = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = nib_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)qk_clamp(l, 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = qk_clamp(nib_nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * (float)l;
            sum_l2 += w * (float)l * (float)l;
            sum_xl += w * (float)l * x[i];
        }
        /* normal equations of min over (scale, min) of sum w (scale*l + min - x)^2 */
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0.0f;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* ========================================================================
 * Q2_K: 84 bytes, 2.625 bits per weight
 *
 *   scales[16]  one byte per 16-element sub-block: low nibble = scale sc,
 *               high nibble = minimum m (both 0..15)
 *   qs[64]      2-bit quants, the 2-bit layout above
 *   d, dmin     fp16 super-block multipliers of sc and m
 *
 * x[e] = (d*sc)*q - dmin*m, with sc, m of sub-block e/16.
 * ======================================================================== */

void nib_dequantize_q2_K(const void *src, float *dst, int64_t n) {
    const block_q2_K *b = (const block_q2_K *)src;
    uint8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, b++, dst += QK_K) {
        const float d = nib_fp16_to_f32(b->d);
        const float dmin = nib_fp16_to_f32(b->dmin);
        qk_unpack_2bit(b->qs, q);
        for (int j = 0; j < 16; j++) {
            const float dl = d * (float)(b->scales[j] & 0xF);
            const float ml = dmin * (float)(b->scales[j] >> 4);
            for (int l = 0; l < 16; l++) dst[16 * j + l] = dl * (float)q[16 * j + l] - ml;
        }
    }
}

void nib_quantize_q2_K(const float *src, void *dst, int64_t n) {
    block_q2_K *y = (block_q2_K *)dst;
    uint8_t L[QK_K], Laux[16];
    float weights[16], scales[16], mins[16];
    for (int64_t i = 0; i < n / QK_K; i++, y++, src += QK_K) {
        const float *x = src;
        /* scales are positive after the minimum is taken out */
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = qk_fit_affine(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                      -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        /* each sub-block scale and minimum becomes a 4-bit multiple of the
         * largest one / 15 */
        if (max_scale > 0.0f) {
            const float iscale = 15.0f / max_scale;
            for (int j = 0; j < 16; j++) y->scales[j] = (uint8_t)nib_nearest_int(iscale * scales[j]);
            y->d = nib_f32_to_fp16(max_scale / 15.0f);
        } else {
            memset(y->scales, 0, sizeof y->scales);
            y->d = nib_f32_to_fp16(0.0f);
        }
        if (max_min > 0.0f) {
            const float iscale = 15.0f / max_min;
            for (int j = 0; j < 16; j++) {
                y->scales[j] |= (uint8_t)((unsigned)nib_nearest_int(iscale * mins[j]) << 4);
            }
            y->dmin = nib_f32_to_fp16(max_min / 15.0f);
        } else {
            y->dmin = nib_f32_to_fp16(0.0f);
        }
        /* requantize against the scales as they will be decoded (rounded to
         * 4 bits and through fp16); a sub-block whose scale rounded to zero
         * keeps the quants of its own fit */
        for (int j = 0; j < 16; j++) {
            const float d = nib_fp16_to_f32(y->d) * (float)(y->scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = nib_fp16_to_f32(y->dmin) * (float)(y->scales[j] >> 4);
            for (int l = 0; l < 16; l++) {
                L[16 * j + l] = (uint8_t)qk_clamp(nib_nearest_int((x[16 * j + l] + dm) / d), 0, 3);
            }
        }
        qk_pack_2bit(L, y->qs);
    }
}

/* ========================================================================
 * Q3_K: 110 bytes, 3.4375 bits per weight
 *
 *   hmask[32]   high bit of each 3-bit quant (see qk_decode_q3_K)
 *   qs[64]      low 2 bits, the 2-bit layout above
 *   scales[12]  sixteen 6-bit signed scales (see qk_unpack_q3_scales)
 *   d           fp16 super-block scale
 *
 * x[e] = (d*sc)*q with sc of sub-block e/16 in -32..31 and q in -4..3. There
 * is no minimum: the format is symmetric around zero.
 * ======================================================================== */

void nib_dequantize_q3_K(const void *src, float *dst, int64_t n) {
    const block_q3_K *b = (const block_q3_K *)src;
    int8_t q[QK_K];
    int sc[16];
    for (int64_t i = 0; i < n / QK_K; i++, b++, dst += QK_K) {
        const float d = nib_fp16_to_f32(b->d);
        qk_decode_q3_K(b, q);
        qk_unpack_q3_scales(b->scales, sc);
        for (int j = 0; j < 16; j++) {
            const float dl = d * (float)sc[j];
            for (int l = 0; l < 16; l++) dst[16 * j + l] = dl * (float)q[16 * j + l];
        }
    }
}

void nib_quantize_q3_K(const float *src, void *dst, int64_t n) {
    block_q3_K *y = (block_q3_K *)dst;
    int8_t L[QK_K];
    float scales[16];
    int sc[16];
    for (int64_t i = 0; i < n / QK_K; i++, y++, src += QK_K) {
        const float *x = src;
        /* the signed scale of largest magnitude sets d, so that it maps to -32 */
        float max_scale = 0.0f, amax = 0.0f;
        for (int j = 0; j < 16; j++) {
            scales[j] = qk_fit_q3(x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) {
                amax = fabsf(scales[j]);
                max_scale = scales[j];
            }
        }
        memset(y->scales, 0, sizeof y->scales);
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            for (int j = 0; j < 16; j++) {
                /* ggml narrows to int8 before clamping; the value is within
                 * about +-32 here, so that never wraps */
                int l = (int8_t)nib_nearest_int(iscale * scales[j]);
                qk_pack_q3_scale(j, qk_clamp(l, -32, 31) + 32, y->scales);
            }
            y->d = nib_f32_to_fp16(1.0f / iscale);
        } else {
            y->d = nib_f32_to_fp16(0.0f);
        }
        /* requantize against the decoded scales */
        qk_unpack_q3_scales(y->scales, sc);
        for (int j = 0; j < 16; j++) {
            const float d = nib_fp16_to_f32(y->d) * (float)sc[j];
            if (d == 0.0f) continue;
            for (int l = 0; l < 16; l++) {
                L[16 * j + l] = (int8_t)(qk_clamp(nib_nearest_int(x[16 * j + l] / d), -4, 3) + 4);
            }
        }
        /* split 0..7 into the hmask bit (set for 4..7) and the low 2 bits */
        uint8_t lo[QK_K];
        memset(y->hmask, 0, sizeof y->hmask);
        for (int e = 0; e < QK_K; e++) {
            int v = L[e];
            if (v > 3) {
                y->hmask[e % 32] |= (uint8_t)(1u << (e / 32));
                v -= 4;
            }
            lo[e] = (uint8_t)v;
        }
        qk_pack_2bit(lo, y->qs);
    }
}

/* ========================================================================
 * Q4_K: 144 bytes, 4.5 bits per weight
 *
 *   d, dmin     fp16 super-block multipliers
 *   scales[12]  eight 6-bit scale/minimum pairs (see qk_unpack_scale_min)
 *   qs[128]     4-bit quants, the nibble layout above
 *
 * x[e] = (d*sc)*q - dmin*m, with sc, m of sub-block e/32.
 *
 * Q5_K: 176 bytes, 5.5 bits per weight, the same with a fifth bit per quant
 * in qh[32] (see qk_decode_q5_K).
 * ======================================================================== */

/* Dequantize a super-block of 0..nmax quants with Q4_K/Q5_K's scales. */
static void qk_dequantize_affine32(nib_half dh, nib_half dminh, const uint8_t *scales,
                                   const uint8_t *q, float *y) {
    const float d = nib_fp16_to_f32(dh);
    const float dmin = nib_fp16_to_f32(dminh);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        qk_unpack_scale_min(j, scales, &sc, &m);
        const float d1 = d * (float)sc;
        const float m1 = dmin * (float)m;
        for (int l = 0; l < 32; l++) y[32 * j + l] = d1 * (float)q[32 * j + l] - m1;
    }
}

/* The common part of the Q4_K and Q5_K quantizers: fit each 32-element
 * sub-block with the affine search, quantize the eight scales and eight
 * minimums to 6 bits against the largest of each, then requantize the
 * elements to 0..nmax against the scales as they will decode. The search
 * weights each element by the sub-block's RMS plus its own magnitude, which
 * favours large weights without ignoring small ones. */
static void qk_quantize_affine32(const float *x, int nmax, float rmin, int nstep,
                                 nib_half *dh, nib_half *dminh, uint8_t *packed, uint8_t *L) {
    uint8_t Laux[32];
    float weights[32], scales[8], mins[8];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; j++) {
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; l++) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = qk_fit_affine(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                  rmin, 0.1f, nstep, 0);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; j++) {
        /* ggml narrows to uint8 first, then caps at 63 */
        uint8_t ls = (uint8_t)nib_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)nib_nearest_int(inv_min * mins[j]);
        qk_pack_scale_min(j, ls < 63 ? ls : 63, lm < 63 ? lm : 63, packed);
    }
    *dh = nib_f32_to_fp16(max_scale / 63.0f);
    *dminh = nib_f32_to_fp16(max_min / 63.0f);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        qk_unpack_scale_min(j, packed, &sc, &m);
        const float d = nib_fp16_to_f32(*dh) * (float)sc;
        if (d == 0.0f) continue;
        const float dm = nib_fp16_to_f32(*dminh) * (float)m;
        for (int l = 0; l < 32; l++) {
            L[32 * j + l] = (uint8_t)qk_clamp(nib_nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
        }
    }
}

void nib_dequantize_q4_K(const void *src, float *dst, int64_t n) {
    const block_q4_K *b = (const block_q4_K *)src;
    uint8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, b++, dst += QK_K) {
        qk_unpack_nibbles(b->qs, q);
        qk_dequantize_affine32(b->d, b->dmin, b->scales, q, dst);
    }
}

void nib_quantize_q4_K(const float *src, void *dst, int64_t n) {
    block_q4_K *y = (block_q4_K *)dst;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, y++, src += QK_K) {
        qk_quantize_affine32(src, 15, -1.0f, 20, &y->d, &y->dmin, y->scales, L);
        qk_pack_nibbles(L, y->qs);
    }
}

void nib_dequantize_q5_K(const void *src, float *dst, int64_t n) {
    const block_q5_K *b = (const block_q5_K *)src;
    uint8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, b++, dst += QK_K) {
        qk_decode_q5_K(b, q);
        qk_dequantize_affine32(b->d, b->dmin, b->scales, q, dst);
    }
}

void nib_quantize_q5_K(const float *src, void *dst, int64_t n) {
    block_q5_K *y = (block_q5_K *)dst;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, y++, src += QK_K) {
        qk_quantize_affine32(src, 31, -0.5f, 15, &y->d, &y->dmin, y->scales, L);
        /* fifth bit to qh (bit e/32 of qh[e%32]), the rest as nibbles */
        memset(y->qh, 0, sizeof y->qh);
        for (int e = 0; e < QK_K; e++) {
            if (L[e] > 15) {
                y->qh[e % 32] |= (uint8_t)(1u << (e / 32));
                L[e] = (uint8_t)(L[e] - 16);
            }
        }
        qk_pack_nibbles(L, y->qs);
    }
}

/* ========================================================================
 * Q6_K: 210 bytes, 6.5625 bits per weight
 *
 *   ql[128]     low 4 bits of each quant   } see qk_decode_q6_K
 *   qh[64]      high 2 bits of each quant  }
 *   scales[16]  signed 8-bit scale per 16-element sub-block
 *   d           fp16 super-block scale
 *
 * x[e] = (d*sc)*q with q in -32..31; symmetric, no minimum.
 * ======================================================================== */

void nib_dequantize_q6_K(const void *src, float *dst, int64_t n) {
    const block_q6_K *b = (const block_q6_K *)src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, b++, dst += QK_K) {
        const float d = nib_fp16_to_f32(b->d);
        qk_decode_q6_K(b, q);
        for (int j = 0; j < 16; j++) {
            const float dl = d * (float)b->scales[j];
            for (int l = 0; l < 16; l++) dst[16 * j + l] = dl * (float)q[16 * j + l];
        }
    }
}

void nib_quantize_q6_K(const float *src, void *dst, int64_t n) {
    block_q6_K *y = (block_q6_K *)dst;
    int8_t L[QK_K];
    float scales[16];
    for (int64_t i = 0; i < n / QK_K; i++, y++, src += QK_K) {
        const float *x = src;
        float max_scale = 0.0f, max_abs_scale = 0.0f;
        for (int j = 0; j < 16; j++) {
            scales[j] = qk_fit_symmetric(16, 32, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > max_abs_scale) {
                max_abs_scale = fabsf(scales[j]);
                max_scale = scales[j];
            }
        }
        if (max_abs_scale < QK_GROUP_EPS) {
            memset(y, 0, sizeof *y);
            continue;
        }
        /* the largest sub-block scale maps to -128, the others to -128..127 */
        const float iscale = -128.0f / max_scale;
        y->d = nib_f32_to_fp16(1.0f / iscale);
        for (int j = 0; j < 16; j++) {
            int l = nib_nearest_int(iscale * scales[j]);
            y->scales[j] = (int8_t)(l < 127 ? l : 127);
        }
        for (int j = 0; j < 16; j++) {
            const float d = nib_fp16_to_f32(y->d) * (float)y->scales[j];
            if (d == 0.0f) continue;
            for (int l = 0; l < 16; l++) {
                L[16 * j + l] = (int8_t)(qk_clamp(nib_nearest_int(x[16 * j + l] / d), -32, 31) + 32);
            }
        }
        /* pack: see qk_decode_q6_K for where each bit goes */
        memset(y->ql, 0, sizeof y->ql);
        memset(y->qh, 0, sizeof y->qh);
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, k = (e % 128) / 32, l = e % 32;
            int v = (uint8_t)L[e];
            y->ql[64 * h + 32 * (k % 2) + l] |= (uint8_t)((v & 0xF) << (4 * (k / 2)));
            y->qh[32 * h + l] |= (uint8_t)((v >> 4) << (2 * k));
        }
    }
}

/* ========================================================================
 * Q8_K: 292 bytes, the activation side of every K-quant dot
 *
 *   d           fp32 scale; its sign is opposite to the block's largest-
 *               magnitude value, which always quantizes to -127
 *   qs[256]     int8 quants, in element order
 *   bsums[16]   sum of qs over each 16-element group
 *
 * x[e] = d*q. The bsums let the formats with a minimum add the
 * -dmin*m*sum(a) term from 16 numbers instead of a second pass over qs.
 * ======================================================================== */

void nib_dequantize_q8_K(const void *src, float *dst, int64_t n) {
    const block_q8_K *b = (const block_q8_K *)src;
    for (int64_t i = 0; i < n / QK_K; i++, b++, dst += QK_K) {
        for (int e = 0; e < QK_K; e++) dst[e] = b->d * (float)b->qs[e];
    }
}

void nib_quantize_q8_K(const float *src, void *dst, int64_t n) {
    block_q8_K *y = (block_q8_K *)dst;
    for (int64_t i = 0; i < n / QK_K; i++, y++, src += QK_K) {
        const float *x = src;
        float max = 0.0f, amax = 0.0f;
        for (int e = 0; e < QK_K; e++) {
            if (fabsf(x[e]) > amax) {
                amax = fabsf(x[e]);
                max = x[e];
            }
        }
        if (amax == 0.0f) {
            /* ggml leaves bsums unwritten here; zero is what they sum to */
            memset(y, 0, sizeof *y);
            continue;
        }
        /* the largest-magnitude value maps to -127, so quants stay in
         * -127..127 and never reach -128 (ggml's SIMD IQ kernels count on
         * that symmetric range) */
        const float iscale = -127.0f / max;
        for (int e = 0; e < QK_K; e++) {
            int v = nib_nearest_int(iscale * x[e]);
            y->qs[e] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += y->qs[16 * j + l];
            y->bsums[j] = (int16_t)sum;
        }
        y->d = 1.0f / iscale;
    }
}

/* ========================================================================
 * Dot products with a Q8_K activation row
 *
 * Within a super-block all products are integers and summed exactly in
 * int32; the fp32 scales only come in per super-block. ggml's generic scalar
 * kernels for Q3_K..Q6_K keep eight int32 partial sums per block (element e
 * goes to lane e%8, a shape meant for auto-vectorisation), scale each lane
 * into its own fp32 accumulator and add the eight accumulators at the end;
 * the minimum terms of Q4_K/Q5_K go to a separate accumulator that the lanes
 * are added onto. The fp32 result depends on that order, so it is kept here.
 * ======================================================================== */

/* lanes[l] = sum over e with e%8 == l of scale16[e/16] * w[e] * a[e] */
static void qk_dot_lanes(const int8_t *w, const int8_t *a, const int *scale16, int32_t *lanes) {
    for (int l = 0; l < 8; l++) lanes[l] = 0;
    for (int e = 0; e < QK_K; e++) lanes[e % 8] += scale16[e / 16] * (w[e] * a[e]);
}

static void qk_accumulate_lanes(float *sums, float d, const int32_t *lanes) {
    for (int l = 0; l < 8; l++) sums[l] += d * (float)lanes[l];
}

static float qk_finish_lanes(float total, const float *sums) {
    for (int l = 0; l < 8; l++) total += sums[l];
    return total;
}

/* Q2_K's generic kernel is simpler: one int32 sum per block for the scales
 * and one for the minimums, combined as dall*isum - dmin*summs. */
float nib_vec_dot_q2_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q2_K *x = (const block_q2_K *)w;
    const block_q8_K *y = (const block_q8_K *)a;
    uint8_t q[QK_K];
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, x++, y++) {
        qk_unpack_2bit(x->qs, q);
        int isum = 0, summs = 0;
        for (int j = 0; j < 16; j++) {
            int s = 0;
            for (int l = 0; l < 16; l++) s += q[16 * j + l] * y->qs[16 * j + l];
            isum += (x->scales[j] & 0xF) * s;
            summs += (x->scales[j] >> 4) * y->bsums[j];
        }
        const float dall = y->d * nib_fp16_to_f32(x->d);
        const float dmin = y->d * nib_fp16_to_f32(x->dmin);
        sumf += dall * (float)isum - dmin * (float)summs;
    }
    return sumf;
}

float nib_vec_dot_q3_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q3_K *x = (const block_q3_K *)w;
    const block_q8_K *y = (const block_q8_K *)a;
    int8_t q[QK_K];
    int sc[16];
    int32_t lanes[8];
    float sums[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++, x++, y++) {
        qk_decode_q3_K(x, q);
        qk_unpack_q3_scales(x->scales, sc);
        qk_dot_lanes(q, y->qs, sc, lanes);
        qk_accumulate_lanes(sums, nib_fp16_to_f32(x->d) * y->d, lanes);
    }
    return qk_finish_lanes(0.0f, sums);
}

/* Q4_K and Q5_K share everything but the quant decoding: q holds 0..31. */
static void qk_dot_affine32(const uint8_t *q, nib_half dh, nib_half dminh, const uint8_t *scales,
                            const block_q8_K *y, float *sums, float *sumf) {
    int8_t qi[QK_K];
    int sc16[16];
    int32_t lanes[8];
    int summ = 0;
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        qk_unpack_scale_min(j, scales, &sc, &m);
        sc16[2 * j] = sc16[2 * j + 1] = sc;
        summ += m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    }
    for (int e = 0; e < QK_K; e++) qi[e] = (int8_t)q[e];
    qk_dot_lanes(qi, y->qs, sc16, lanes);
    qk_accumulate_lanes(sums, nib_fp16_to_f32(dh) * y->d, lanes);
    const float dmin = nib_fp16_to_f32(dminh) * y->d;
    *sumf -= dmin * (float)summ;
}

float nib_vec_dot_q4_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q4_K *x = (const block_q4_K *)w;
    const block_q8_K *y = (const block_q8_K *)a;
    uint8_t q[QK_K];
    float sums[8] = {0}, sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, x++, y++) {
        qk_unpack_nibbles(x->qs, q);
        qk_dot_affine32(q, x->d, x->dmin, x->scales, y, sums, &sumf);
    }
    return qk_finish_lanes(sumf, sums);
}

float nib_vec_dot_q5_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q5_K *x = (const block_q5_K *)w;
    const block_q8_K *y = (const block_q8_K *)a;
    uint8_t q[QK_K];
    float sums[8] = {0}, sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, x++, y++) {
        qk_decode_q5_K(x, q);
        qk_dot_affine32(q, x->d, x->dmin, x->scales, y, sums, &sumf);
    }
    return qk_finish_lanes(sumf, sums);
}

float nib_vec_dot_q6_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q6_K *x = (const block_q6_K *)w;
    const block_q8_K *y = (const block_q8_K *)a;
    int8_t q[QK_K];
    int sc[16];
    int32_t lanes[8];
    float sums[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++, x++, y++) {
        qk_decode_q6_K(x, q);
        for (int j = 0; j < 16; j++) sc[j] = x->scales[j];
        qk_dot_lanes(q, y->qs, sc, lanes);
        qk_accumulate_lanes(sums, nib_fp16_to_f32(x->d) * y->d, lanes);
    }
    return qk_finish_lanes(0.0f, sums);
}

/* ggml has no Q8_K x Q8_K kernel (Q8_K is never a weight there). This one
 * follows the rule of formats.h: an exact int32 sum per block, times the
 * product of the two fp32 scales, accumulated in fp32 block by block. */
float nib_vec_dot_q8_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q8_K *x = (const block_q8_K *)w;
    const block_q8_K *y = (const block_q8_K *)a;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, x++, y++) {
        int32_t isum = 0;
        for (int e = 0; e < QK_K; e++) isum += x->qs[e] * y->qs[e];
        sumf += (x->d * y->d) * (float)isum;
    }
    return sumf;
}
