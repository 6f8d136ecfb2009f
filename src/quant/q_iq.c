/* The IQ formats ("i-quants"): dequantization, dot products with the
 * activation formats, and the reference quantizers of IQ4_NL and IQ4_XS.
 *
 * Two families live here.
 *
 * Lattice formats: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M.
 *   A 256-weight super-block has one fp16 scale d and 8 sub-blocks of 32
 *   weights; a sub-block is 4 groups of 8 weights. A group is not stored
 *   weight by weight: it is one point of a fixed codebook (the grids of
 *   quant/iq_grids.h), named by an index of 8 to 11 bits. IQ2 points are 8
 *   magnitudes, IQ3 points are 4 (so a group takes two indices). The codebooks
 *   of IQ2/IQ3 are unsigned, and the signs come separately, 8 per group: either
 *   as 8 explicit bits (IQ2_S, IQ3_S) or as 7 bits whose 8th is implied by
 *   making the number of negative weights even (XXS and XS; the quantizer flips
 *   the least important weight to keep that true). A 3- or 4-bit code s per
 *   sub-block (or per half sub-block) scales it by the odd integer 2s+1:
 *
 *       weight = d * (2s+1) * step * magnitude * sign
 *
 *   with step = 1/8 for IQ2 and 1/4 for IQ3_XXS, whose codebooks are stored
 *   multiplied by 8 and 4 so that levels like 3.125 are integers, and 1 for
 *   IQ3_S, whose levels are the odd integers 1..15. IQ1 codebooks hold signed
 *   values in {-1, 0, +1}, and every group is shifted by delta = +-1/8:
 *
 *       weight = d * (2s+1) * (value + delta)
 *
 *   Each format below has an unpack function that reads one sub-block into a
 *   common form (codebook rows, sign bits, scale multipliers); dequantization
 *   and the dot product are written once per family on top of that.
 *
 * Non-linear 4-bit formats: IQ4_NL (blocks of 32, one fp16 scale each) and
 *   IQ4_XS (super-blocks of 256 with a 6-bit scale per 32). Every weight is a
 *   4-bit index into 16 fixed, unevenly spaced levels.
 *
 * Bit-exactness: the arithmetic follows ggml's dequantize_row_iq* and its
 * generic scalar ggml_vec_dot_iq*_q8_K / _q8_0 (same float operations in the
 * same order), so results are identical to ggml's, and dequantization is
 * checked bit for bit against gguf-py's numpy code. Blocks are read in place,
 * so multi-byte fields are little-endian host integers, as everywhere in nib.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/fp16.h"
#include "quant/formats.h"
#include "quant/iq_grids.h"
#include "quant/iq_lattice.h"

/* ======================================================================== */
/* Shared pieces                                                            */
/* ======================================================================== */

/* Every IQ2/IQ3/IQ1_S block starts with its fp16 super-block scale, so the
 * lattice code can read it without knowing the struct. */
NIB_STATIC_ASSERT(offsetof(block_iq2_xxs, d) == 0, "iq2_xxs d first");
NIB_STATIC_ASSERT(offsetof(block_iq2_xs, d) == 0, "iq2_xs d first");
NIB_STATIC_ASSERT(offsetof(block_iq2_s, d) == 0, "iq2_s d first");
NIB_STATIC_ASSERT(offsetof(block_iq3_xxs, d) == 0, "iq3_xxs d first");
NIB_STATIC_ASSERT(offsetof(block_iq3_s, d) == 0, "iq3_s d first");
NIB_STATIC_ASSERT(offsetof(block_iq1_s, d) == 0, "iq1_s d first");

static float leading_d(const void *blk) {
    nib_half h;
    memcpy(&h, blk, sizeof h);
    return nib_fp16_to_f32(h);
}

static uint32_t load_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint16_t load_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The sign byte of a group of 8 from its 7 stored sign bits (XXS and XS
 * formats): bit j set means weight j is negative, and bit 7 is whatever
 * makes the count of set bits even. (ggml keeps this as a 128-entry table.) */
static inline unsigned even_signs(uint32_t bits7) {
    unsigned s = bits7 & 0x7fu;
    unsigned parity = s ^ (s >> 4);
    parity ^= parity >> 2;
    parity ^= parity >> 1;
    return s | ((parity & 1u) << 7);
}

/* ---- IQ2 / IQ3: unsigned codebooks with separate signs ------------------
 * The common form of a sub-block (iq_sub) and a format's unpacker are in
 * quant/iq_lattice.h, which the SIMD dots use too. */

static inline void set_point8(iq_sub *s, int g, const uint8_t *point) {
    s->mag[2 * g] = point;
    s->mag[2 * g + 1] = point + 4;
}

/* A group's 8 floats: db * magnitude, negated where its sign bit is set. */
static void put_group(float *y, float db, const uint8_t *lo, const uint8_t *hi, unsigned neg) {
    for (int j = 0; j < 8; j++) {
        const float v = db * (float)(j < 4 ? lo[j] : hi[j - 4]);
        y[j] = ((neg >> j) & 1u) ? -v : v;
    }
}

/* A group's integer dot with 8 activation quants. */
static int32_t dot_group(const int8_t *q8, const uint8_t *lo, const uint8_t *hi, unsigned neg) {
    int32_t sum = 0;
    for (int j = 0; j < 8; j++) {
        const int32_t p = (int32_t)(j < 4 ? lo[j] : hi[j - 4]) * q8[j];
        sum += ((neg >> j) & 1u) ? -p : p;
    }
    return sum;
}

/* ggml writes the IQ2 and IQ3_XXS scales as d * (0.5 + s) * 2^-k where we
 * write d * (2s+1) * 2^-(k+1) (IQ3_S: d * (2s+1) in both). The two products
 * differ by an exact factor of two, and with d an fp16 value both stay normal
 * fp32 numbers, so every rounding is the same and the floats are identical bit
 * for bit; the multiplication by the magnitude and the sign follow as in ggml. */
static void grid_dequantize(const iq_grid_format *f, const void *src, float *dst, int64_t n) {
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += f->block_bytes) {
        const float d = leading_d(blk);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            iq_sub s;
            f->unpack(blk, ib, &s);
            for (int g = 0; g < 4; g++, dst += 8) {
                const float db = d * (float)s.ls[g] * f->step;
                put_group(dst, db, s.mag[2 * g], s.mag[2 * g + 1], s.neg[g]);
            }
        }
    }
}

/* Integer sum per super-block (scale multipliers included: at most about
 * 2^26, no overflow), then (d * d8) * sum in fp32, and step applied once at
 * the end, as ggml does. */
static float grid_vec_dot(const iq_grid_format *f, int64_t n, const void *w, const void *a) {
    const uint8_t *blk = w;
    const block_q8_K *act = a;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, blk += f->block_bytes) {
        const int8_t *q8 = act[i].qs;
        int32_t isum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            iq_sub s;
            f->unpack(blk, ib, &s);
            for (int g = 0; g < 4; g++, q8 += 8)
                isum += (int32_t)s.ls[g] * dot_group(q8, s.mag[2 * g], s.mag[2 * g + 1], s.neg[g]);
        }
        sumf += leading_d(blk) * act[i].d * (float)isum;
    }
    return f->step * sumf;
}

/* ---- IQ2_XXS: 2.0625 bits per weight --------------------------------------
 * qs holds 8 bytes per sub-block. Bytes 0..3 are the grid indices (into the
 * 256-point iq2xxs_grid) of groups 0..3. Bytes 4..7 are a little-endian 32-bit
 * word: bits 7g..7g+6 are the 7 sign bits of group g, bits 28..31 the scale
 * code s of the whole sub-block. */
static void unpack_iq2_xxs(const void *blk, int ib, iq_sub *s) {
    const uint8_t *q = (const uint8_t *)((const block_iq2_xxs *)blk)->qs + 8 * ib;
    const uint32_t aux = load_u32(q + 4);
    for (int g = 0; g < 4; g++) {
        set_point8(s, g, iq2xxs_grid[q[g]]);
        s->neg[g] = (uint8_t)even_signs(aux >> (7 * g));
        s->ls[g] = (uint8_t)(2 * (aux >> 28) + 1);
    }
}

/* ---- IQ2_XS: 2.3125 bits per weight ---------------------------------------
 * One 16-bit word per group: bits 0..8 index the 512-point iq2xs_grid, bits
 * 9..15 are the 7 sign bits. scales[ib] holds two 4-bit codes: the low nibble
 * scales groups 0-1 (the first 16 weights), the high nibble groups 2-3. */
static void unpack_iq2_xs(const void *blk, int ib, iq_sub *s) {
    const block_iq2_xs *b = blk;
    for (int g = 0; g < 4; g++) {
        const uint16_t q = b->qs[4 * ib + g];
        set_point8(s, g, iq2xs_grid[q & 511]);
        s->neg[g] = (uint8_t)even_signs((uint32_t)q >> 9);
        s->ls[g] = (uint8_t)(2 * ((b->scales[ib] >> (4 * (g / 2))) & 15) + 1);
    }
}

/* ---- IQ2_S: 2.5625 bits per weight ----------------------------------------
 * A 1024-point grid, so 10-bit indices: qs[0..31] are their low 8 bits (one
 * per group), qh[ib] carries the top 2 bits of the sub-block's four indices
 * (bits 2g..2g+1 for group g). qs[32..63] are explicit sign bytes, one per
 * group, no parity trick. Scales as IQ2_XS: one nibble per 16 weights. */
static void unpack_iq2_s(const void *blk, int ib, iq_sub *s) {
    const block_iq2_s *b = blk;
    const uint8_t *idx = b->qs + 4 * ib;
    const uint8_t *sgn = b->qs + QK_K / 8 + 4 * ib;
    for (int g = 0; g < 4; g++) {
        const unsigned i = idx[g] | (((unsigned)b->qh[ib] >> (2 * g)) & 3u) << 8;
        set_point8(s, g, iq2s_grid[i]);
        s->neg[g] = sgn[g];
        s->ls[g] = (uint8_t)(2 * ((b->scales[ib] >> (4 * (g / 2))) & 15) + 1);
    }
}

/* ---- IQ3_XXS: 3.0625 bits per weight --------------------------------------
 * Points of 4 weights from the 256-point iq3xxs_grid: qs[0..63] are the
 * indices, 8 per sub-block (two per group of 8). qs[64..95] are one 32-bit
 * word per sub-block laid out exactly as IQ2_XXS's second word: 4 x 7 sign
 * bits, then the 4-bit scale code in bits 28..31. */
static void unpack_iq3_xxs(const void *blk, int ib, iq_sub *s) {
    const uint8_t *qs = ((const block_iq3_xxs *)blk)->qs;
    const uint8_t *idx = qs + 8 * ib;
    const uint32_t aux = load_u32(qs + QK_K / 4 + 4 * ib);
    for (int g = 0; g < 4; g++) {
        s->mag[2 * g] = iq3xxs_grid[idx[2 * g]];
        s->mag[2 * g + 1] = iq3xxs_grid[idx[2 * g + 1]];
        s->neg[g] = (uint8_t)even_signs(aux >> (7 * g));
        s->ls[g] = (uint8_t)(2 * (aux >> 28) + 1);
    }
}

/* ---- IQ3_S: 3.4375 bits per weight ----------------------------------------
 * 9-bit indices into the 512-point iq3s_grid, 8 per sub-block: low bits in
 * qs[8ib..8ib+7], the 9th bit of index k in bit k of qh[ib]. signs[4ib+g] is
 * the explicit sign byte of group g. scales[ib/2] holds a 4-bit code per
 * sub-block (low nibble for even ib). The codebook values are odd (1..15), so
 * here step is 1. */
static void unpack_iq3_s(const void *blk, int ib, iq_sub *s) {
    const block_iq3_s *b = blk;
    const uint8_t *idx = b->qs + 8 * ib;
    const unsigned qh = b->qh[ib];
    const uint8_t ls = (uint8_t)(2 * ((b->scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1);
    for (int g = 0; g < 4; g++) {
        s->mag[2 * g] = iq3s_grid[idx[2 * g] | ((qh >> (2 * g)) & 1u) << 8];
        s->mag[2 * g + 1] = iq3s_grid[idx[2 * g + 1] | ((qh >> (2 * g + 1)) & 1u) << 8];
        s->neg[g] = b->signs[4 * ib + g];
        s->ls[g] = ls;
    }
}

static const iq_grid_format fmt_iq2_xxs = {sizeof(block_iq2_xxs), unpack_iq2_xxs, 0.125f, &iq2xxs_grid[0][0], 8};
static const iq_grid_format fmt_iq2_xs = {sizeof(block_iq2_xs), unpack_iq2_xs, 0.125f, &iq2xs_grid[0][0], 8};
static const iq_grid_format fmt_iq2_s = {sizeof(block_iq2_s), unpack_iq2_s, 0.125f, &iq2s_grid[0][0], 8};
static const iq_grid_format fmt_iq3_xxs = {sizeof(block_iq3_xxs), unpack_iq3_xxs, 0.25f, &iq3xxs_grid[0][0], 4};
static const iq_grid_format fmt_iq3_s = {sizeof(block_iq3_s), unpack_iq3_s, 1.0f, &iq3s_grid[0][0], 4};

const iq_grid_format *nib_iq_grid_format(nib_type t) {
    static const iq_grid_format *const by_type[NIB_TYPE_COUNT] = {
        [NIB_TYPE_IQ2_XXS] = &fmt_iq2_xxs, [NIB_TYPE_IQ2_XS] = &fmt_iq2_xs, [NIB_TYPE_IQ2_S] = &fmt_iq2_s,
        [NIB_TYPE_IQ3_XXS] = &fmt_iq3_xxs, [NIB_TYPE_IQ3_S] = &fmt_iq3_s,
    };
    return (int)t >= 0 && t < NIB_TYPE_COUNT ? by_type[t] : NULL;
}

/* ---- IQ1: signed ternary codebook plus a +-1/8 shift -------------------- */

/* ggml's IQ1S_DELTA and IQ1M_DELTA (equal): the grid values {-1, 0, 1} are
 * shifted by this, up or down per group, so the levels are not symmetric. */
#define IQ1_DELTA 0.125f

typedef struct {
    const int8_t *point[4];  /* the 8 values of group g */
    uint8_t ls[4];           /* odd scale multiplier 2s+1 of group g */
    uint8_t neg_delta;       /* bit g set: group g shifts by -1/8, else +1/8 */
} iq1_sub;

typedef struct {
    size_t block_bytes;
    float (*scale)(const void *blk);  /* the super-block's d */
    void (*unpack)(const void *blk, int ib, iq1_sub *s);
} iq1_format;

static void iq1_dequantize(const iq1_format *f, const void *src, float *dst, int64_t n) {
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += f->block_bytes) {
        const float d = f->scale(blk);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            iq1_sub s;
            f->unpack(blk, ib, &s);
            for (int g = 0; g < 4; g++, dst += 8) {
                const float dl = d * (float)s.ls[g];
                const float delta = ((s.neg_delta >> g) & 1u) ? -IQ1_DELTA : IQ1_DELTA;
                for (int j = 0; j < 8; j++) dst[j] = dl * ((float)s.point[g][j] + delta);
            }
        }
    }
}

/* The shift contributes delta * (sum of the group's activation quants), so the
 * dot keeps two integer sums: codebook part and (signed) shift part, combined
 * as d * d8 * (sum + 1/8 * shift_sum) per super-block like ggml. ggml's IQ1_S
 * dot reads the activation sums from block_q8_K.bsums; we add the quants
 * themselves, which is the same integer for every well-formed Q8_K block. */
static float iq1_vec_dot(const iq1_format *f, int64_t n, const void *w, const void *a) {
    const uint8_t *blk = w;
    const block_q8_K *act = a;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, blk += f->block_bytes) {
        const int8_t *q8 = act[i].qs;
        int32_t sum = 0, shift_sum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            iq1_sub s;
            f->unpack(blk, ib, &s);
            for (int g = 0; g < 4; g++, q8 += 8) {
                int32_t gsum = 0, qsum = 0;
                for (int j = 0; j < 8; j++) {
                    gsum += (int32_t)s.point[g][j] * q8[j];
                    qsum += q8[j];
                }
                sum += (int32_t)s.ls[g] * gsum;
                shift_sum += (int32_t)s.ls[g] * (((s.neg_delta >> g) & 1u) ? -qsum : qsum);
            }
        }
        sumf += f->scale(blk) * act[i].d * ((float)sum + IQ1_DELTA * (float)shift_sum);
    }
    return sumf;
}

/* ---- IQ1_S: 1.5625 bits per weight ----------------------------------------
 * 11-bit indices into the 2048-point iq1s_grid: qs[4ib+g] is the low byte of
 * group g's index. qh[ib], one 16-bit word per sub-block, holds the top 3
 * bits of each (bits 3g..3g+2), the 3-bit scale code (bits 12..14) and the
 * shift direction of all four groups (bit 15 set: -1/8). */
static void unpack_iq1_s(const void *blk, int ib, iq1_sub *s) {
    const block_iq1_s *b = blk;
    const unsigned h = b->qh[ib];
    for (int g = 0; g < 4; g++) {
        s->point[g] = iq1s_grid[b->qs[4 * ib + g] | ((h >> (3 * g)) & 7u) << 8];
        s->ls[g] = (uint8_t)(2 * ((h >> 12) & 7u) + 1);
    }
    s->neg_delta = (h & 0x8000u) ? 0xf : 0;
}

/* ---- IQ1_M: 1.75 bits per weight ------------------------------------------
 * Same grid and low index bytes (qs) as IQ1_S. qh has one byte per pair of
 * groups: its low nibble serves the even group, the high nibble the odd one;
 * in each nibble bits 0..2 are the index's top 3 bits and bit 3 the shift
 * direction, so IQ1_M shifts each group on its own. scales is four 16-bit
 * words; word k covers sub-blocks 2k and 2k+1 with four 3-bit codes (bits
 * 6(ib%2)+0..2 scale groups 0-1, bits 6(ib%2)+3..5 groups 2-3), and its top
 * nibble (bits 12..15) is nibble k of the fp16 super-block scale d, which has
 * no field of its own. */
static float iq1_m_scale(const void *blk) {
    const block_iq1_m *b = blk;
    uint16_t bits = 0;
    for (int k = 0; k < 4; k++) bits |= (uint16_t)((load_u16(b->scales + 2 * k) >> 12) << (4 * k));
    return nib_fp16_to_f32(bits);
}

static void unpack_iq1_m(const void *blk, int ib, iq1_sub *s) {
    const block_iq1_m *b = blk;
    const unsigned sc = load_u16(b->scales + 2 * (ib / 2)) >> (6 * (ib % 2));
    s->neg_delta = 0;
    for (int g = 0; g < 4; g++) {
        const unsigned h = (unsigned)b->qh[2 * ib + g / 2] >> (4 * (g % 2));
        s->point[g] = iq1s_grid[b->qs[4 * ib + g] | (h & 7u) << 8];
        s->ls[g] = (uint8_t)(2 * ((sc >> (3 * (g / 2))) & 7u) + 1);
        s->neg_delta |= (uint8_t)(((h >> 3) & 1u) << g);
    }
}

const int8_t *const nib_iq1s_grid = &iq1s_grid[0][0];

static const iq1_format fmt_iq1_s = {sizeof(block_iq1_s), leading_d, unpack_iq1_s};
static const iq1_format fmt_iq1_m = {sizeof(block_iq1_m), iq1_m_scale, unpack_iq1_m};

/* ---- the lattice formats' public entry points ----------------------------- */

void nib_dequantize_iq2_xxs(const void *src, float *dst, int64_t n) {
    grid_dequantize(&fmt_iq2_xxs, src, dst, n);
}
void nib_dequantize_iq2_xs(const void *src, float *dst, int64_t n) {
    grid_dequantize(&fmt_iq2_xs, src, dst, n);
}
void nib_dequantize_iq2_s(const void *src, float *dst, int64_t n) {
    grid_dequantize(&fmt_iq2_s, src, dst, n);
}
void nib_dequantize_iq3_xxs(const void *src, float *dst, int64_t n) {
    grid_dequantize(&fmt_iq3_xxs, src, dst, n);
}
void nib_dequantize_iq3_s(const void *src, float *dst, int64_t n) {
    grid_dequantize(&fmt_iq3_s, src, dst, n);
}
void nib_dequantize_iq1_s(const void *src, float *dst, int64_t n) {
    iq1_dequantize(&fmt_iq1_s, src, dst, n);
}
void nib_dequantize_iq1_m(const void *src, float *dst, int64_t n) {
    iq1_dequantize(&fmt_iq1_m, src, dst, n);
}

float nib_vec_dot_iq2_xxs_q8_K(int64_t n, const void *w, const void *a) {
    return grid_vec_dot(&fmt_iq2_xxs, n, w, a);
}
float nib_vec_dot_iq2_xs_q8_K(int64_t n, const void *w, const void *a) {
    return grid_vec_dot(&fmt_iq2_xs, n, w, a);
}
float nib_vec_dot_iq2_s_q8_K(int64_t n, const void *w, const void *a) {
    return grid_vec_dot(&fmt_iq2_s, n, w, a);
}
float nib_vec_dot_iq3_xxs_q8_K(int64_t n, const void *w, const void *a) {
    return grid_vec_dot(&fmt_iq3_xxs, n, w, a);
}
float nib_vec_dot_iq3_s_q8_K(int64_t n, const void *w, const void *a) {
    return grid_vec_dot(&fmt_iq3_s, n, w, a);
}
float nib_vec_dot_iq1_s_q8_K(int64_t n, const void *w, const void *a) {
    return iq1_vec_dot(&fmt_iq1_s, n, w, a);
}
float nib_vec_dot_iq1_m_q8_K(int64_t n, const void *w, const void *a) {
    return iq1_vec_dot(&fmt_iq1_m, n, w, a);
}

/* ======================================================================== */
/* IQ4_NL and IQ4_XS                                                        */
/* ======================================================================== */

/* The 16 levels (ggml's kvalues_iq4nl): denser near zero, where most weights
 * are, and skewed (-127 .. 113) so that the scale's sign can choose which end
 * gets the extra reach. A 4-bit quant q stands for d * nib_iq4_levels[q]. */
const int8_t nib_iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* 32 weights stored in 16 bytes: byte j holds weight j in its low nibble and
 * weight j+16 in its high nibble (the layout of both IQ4 formats). */
static void iq4_put32(float *y, float d, const uint8_t *qs) {
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)nib_iq4_levels[qs[j] & 15];
        y[j + 16] = d * (float)nib_iq4_levels[qs[j] >> 4];
    }
}

static int32_t iq4_dot32(const int8_t *q8, const uint8_t *qs) {
    int32_t sum = 0;
    for (int j = 0; j < 16; j++)
        sum += q8[j] * nib_iq4_levels[qs[j] & 15] + q8[j + 16] * nib_iq4_levels[qs[j] >> 4];
    return sum;
}

/* IQ4_NL: {fp16 d, 16 bytes of nibbles}, exactly Q4_0's size. */
void nib_dequantize_iq4_nl(const void *src, float *dst, int64_t n) {
    const block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / QK4_NL; i++)
        iq4_put32(dst + QK4_NL * i, nib_fp16_to_f32(b[i].d), b[i].qs);
}

/* IQ4_XS: fp16 d, then a signed 6-bit scale per 32 weights, stored biased by
 * 32: its low 4 bits are nibble ib of scales_l (low nibble first) and its top
 * 2 bits are bits 2ib..2ib+1 of scales_h. qs as IQ4_NL, 16 bytes per 32. */
static int iq4_xs_scale(const block_iq4_xs *b, int ib) {
    const int lo = (b->scales_l[ib / 2] >> (4 * (ib % 2))) & 15;
    const int hi = (b->scales_h >> (2 * ib)) & 3;
    return (lo | hi << 4) - 32;
}

void nib_dequantize_iq4_xs(const void *src, float *dst, int64_t n) {
    const block_iq4_xs *b = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = nib_fp16_to_f32(b[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++, dst += 32)
            iq4_put32(dst, d * (float)iq4_xs_scale(&b[i], ib), b[i].qs + 16 * ib);
    }
}

float nib_vec_dot_iq4_nl_q8_0(int64_t n, const void *w, const void *a) {
    const block_iq4_nl *x = w;
    const block_q8_0 *y = a;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK4_NL; i++) {
        const float d = nib_fp16_to_f32(y[i].d) * nib_fp16_to_f32(x[i].d);
        sumf += d * (float)iq4_dot32(y[i].qs, x[i].qs);
    }
    return sumf;
}

/* Accumulated per 32-weight sub-block, each with its own float scale. */
float nib_vec_dot_iq4_xs_q8_K(int64_t n, const void *w, const void *a) {
    const block_iq4_xs *x = w;
    const block_q8_K *y = a;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d4d8 = nib_fp16_to_f32(x[i].d) * y[i].d;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const float dl = d4d8 * (float)iq4_xs_scale(&x[i], ib);
            sumf += dl * (float)iq4_dot32(y[i].qs + 32 * ib, x[i].qs + 16 * ib);
        }
    }
    return sumf;
}

/* ---- the IQ4 reference quantizers ----------------------------------------
 * ggml's quantize_row_iq4_nl_impl without an importance matrix, where every
 * weight is weighted by x^2. Per block of 32: try a set of trial scales, round
 * every weight to its nearest level under each, keep the one whose weighted
 * least-squares fit (d = sum w*q*x / sum w*q*q) explains the block best, then
 * round again under that d. IQ4_XS then quantizes the 8 block scales of a
 * super-block to 6 bits against one fp16 d and re-rounds every weight under
 * its block's quantized scale. */

/* Blocks whose largest |x| is below this are stored as zeros (ggml's
 * GROUP_MAX_EPS). */
#define IQ4_ZERO_EPS 1e-15f

/* Trial scales on each side of the first guess (ggml uses 7 when it writes
 * model files, quantize_iq4_nl/xs; see nib_quantize_iq4_nl). */
#define IQ4_NTRY 7

/* Index of the level nearest to x, ties to the upper level. Comparing 2x with
 * the sum of two neighbours is exact, where x - a < b - x could round. */
static int iq4_nearest(float x) {
    const float x2 = x + x;
    int i = 0;
    for (int k = 1; k < 16; k++) i += x2 >= (float)(nib_iq4_levels[k - 1] + nib_iq4_levels[k]);
    return i;
}

/* Rounds 32 weights to levels under the inverse scale id and returns the two
 * sums of the weighted fit; the levels go to L when L is not NULL. */
static void iq4_fit(const float *x, const float *w, float id, uint8_t *L,
                    float *sumqx, float *sumq2) {
    float sqx = 0.0f, sq2 = 0.0f;
    for (int j = 0; j < 32; j++) {
        const int l = iq4_nearest(id * x[j]);
        if (L) L[j] = (uint8_t)l;
        const float q = (float)nib_iq4_levels[l];
        sqx += w[j] * q * x[j];
        sq2 += w[j] * q * q;
    }
    *sumqx = sqx;
    *sumq2 = sq2;
}

/* The best scale of one block of 32 (0 for a block of zeros). L gets the
 * levels of the first guess only; callers re-round under the final scale.
 * The first guess maps the weight of largest magnitude to level -127
 * (ntry <= 0) or to +127, past the top level 113 (ntry > 0); trial t then maps
 * it to -127 + t for t in -ntry..ntry, and a trial wins when its fit removes
 * more squared error (sumqx^2 / sumq2 larger). */
static float iq4_block_scale(const float *x, int ntry, uint8_t *L) {
    float w[32];
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++) {
        w[j] = x[j] * x[j];
        const float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax < IQ4_ZERO_EPS) {
        memset(L, 0, 32);
        return 0.0f;
    }
    float sumqx, sumq2;
    float d = (ntry > 0 ? -max : max) / (float)nib_iq4_levels[0];
    iq4_fit(x, w, 1.0f / d, L, &sumqx, &sumq2);
    d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int t = -ntry; t <= ntry; t++) {
        iq4_fit(x, w, (float)(t + nib_iq4_levels[0]) / max, NULL, &sumqx, &sumq2);
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

static void iq4_round32(const float *x, float id, uint8_t *L) {
    for (int j = 0; j < 32; j++) L[j] = (uint8_t)iq4_nearest(id * x[j]);
}

static void iq4_pack32(uint8_t *qs, const uint8_t *L) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
}

/* ggml has two IQ4_NL quantizers without an importance matrix: the one that
 * writes model files (quantize_iq4_nl with no imatrix) searches 7 trial
 * scales per side and re-rounds; quantize_row_iq4_nl_ref (ggml's fast path for
 * activations and the KV cache) keeps the first guess (ntry = -1). We follow
 * the model-file one; IQ4_NTRY <= 0 would give the other. */
void nib_quantize_iq4_nl(const float *src, void *dst, int64_t n) {
    block_iq4_nl *b = dst;
    for (int64_t i = 0; i < n / QK4_NL; i++) {
        const float *x = src + QK4_NL * i;
        uint8_t L[QK4_NL];
        const float d = iq4_block_scale(x, IQ4_NTRY, L);
        b[i].d = nib_f32_to_fp16(d);
        if (IQ4_NTRY > 0) iq4_round32(x, d != 0.0f ? 1.0f / d : 0.0f, L);
        iq4_pack32(b[i].qs, L);
    }
}

/* The super-block d is chosen so the block scale of largest magnitude maps to
 * -32 (the 6-bit range is -32..31), keeping its sign. Rounding decisions use
 * the fp32 d, not the fp16 value stored, as in ggml. */
void nib_quantize_iq4_xs(const float *src, void *dst, int64_t n) {
    block_iq4_xs *b = dst;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float *x = src + QK_K * i;
        uint8_t L[32];
        float scales[QK_K / 32];
        float max_scale = 0.0f, amax_scale = 0.0f;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            scales[ib] = iq4_block_scale(x + 32 * ib, IQ4_NTRY, L);
            if (fabsf(scales[ib]) > amax_scale) {
                amax_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }
        const float d = -max_scale / 32.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = nib_f32_to_fp16(d);
        b[i].scales_h = 0;
        memset(b[i].scales_l, 0, sizeof b[i].scales_l);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            int l = nib_nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            const float dl = d * (float)l;
            iq4_round32(x + 32 * ib, dl != 0.0f ? 1.0f / dl : 0.0f, L);
            iq4_pack32(b[i].qs + 16 * ib, L);
            const unsigned biased = (unsigned)(l + 32);
            b[i].scales_l[ib / 2] |= (uint8_t)((biased & 15u) << (4 * (ib % 2)));
            b[i].scales_h |= (uint16_t)((biased >> 4) << (2 * ib));
        }
    }
}
