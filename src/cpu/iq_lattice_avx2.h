/* The lattice formats' sub-block decoding (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S; quant/iq_lattice.h), shared by the AVX2 dots (dot_iq_avx2.c) and
 * the AVX-512 single-token ones (dot_iq_avx512.c). A sub-block of 32 weights
 * becomes its 32 magnitudes as unsigned bytes (codebook rows fetched by
 * index: four 8-byte rows for IQ2, eight 4-byte rows for IQ3; at most 62),
 * each group's odd scale multiplier 2s+1 over its 4 int16 pairs, and its 32
 * sign bits (bit k: weight k is negative). The decoding restates each
 * format's bit layout (documented at its unpacker in quant/q_iq.c). AVX2
 * intrinsics only, so both files' flags compile it. */
#ifndef NIB_CPU_IQ_LATTICE_AVX2_H
#define NIB_CPU_IQ_LATTICE_AVX2_H

#include <string.h>

#include "cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/iq_lattice.h"

#ifndef ALWAYS_INLINE
#define ALWAYS_INLINE inline __attribute__((always_inline))
#endif

/* The sign bytes of four groups from their 7 stored bits each, given as the
 * four bytes of b (bit 7 clear): bit 7 of each becomes what makes its count
 * of set bits even (the XXS and XS formats). The folds run on the whole
 * word: bits that a shift moves into the byte below land in its bits 1-7,
 * and only bit 0 of each byte, its parity, is kept. */
static ALWAYS_INLINE uint32_t lat_even_signs4(uint32_t b) {
    uint32_t p = b ^ (b >> 4);
    p ^= p >> 2;
    p ^= p >> 1;
    return b | ((p & 0x01010101u) << 7);
}

static ALWAYS_INLINE uint64_t lat_row8(const uint8_t *grid, unsigned i) {
    uint64_t v;
    memcpy(&v, grid + 8 * (size_t)i, 8);
    return v;
}
static ALWAYS_INLINE int32_t lat_row4(const uint8_t *grid, unsigned i) {
    int32_t v;
    memcpy(&v, grid + 4 * (size_t)i, 4);
    return v;
}

/* Group multipliers: one per sub-block (a), or one per half (lo for groups 0-1, hi for 2-3). */
static ALWAYS_INLINE __m256i lat_ls(unsigned lo, unsigned hi) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)lo)), _mm_set1_epi16((short)hi), 1);
}

static ALWAYS_INLINE uint32_t lat_decode_bits(nib_type t, const uint8_t *grid, const uint8_t *blk, int ib, __m256i *mag,
                                              __m256i *ls) {
    uint32_t bits;
    if (t == NIB_TYPE_IQ2_XXS || t == NIB_TYPE_IQ3_XXS) {
        /* indices (4 bytes for IQ2, 8 for IQ3), then one word: 4 x 7 sign bits, scale code in bits 28..31 */
        const uint8_t *idx, *auxp;
        if (t == NIB_TYPE_IQ2_XXS) {
            idx = (const uint8_t *)((const block_iq2_xxs *)blk)->qs + 8 * ib;
            auxp = idx + 4;
        } else {
            const uint8_t *qs = ((const block_iq3_xxs *)blk)->qs;
            idx = qs + 8 * ib;
            auxp = qs + QK_K / 4 + 4 * ib;
        }
        uint32_t aux;
        memcpy(&aux, auxp, 4);
        if (t == NIB_TYPE_IQ2_XXS)
            *mag = _mm256_set_epi64x((int64_t)lat_row8(grid, idx[3]), (int64_t)lat_row8(grid, idx[2]),
                                       (int64_t)lat_row8(grid, idx[1]), (int64_t)lat_row8(grid, idx[0]));
        else
            *mag = _mm256_setr_epi32(lat_row4(grid, idx[0]), lat_row4(grid, idx[1]), lat_row4(grid, idx[2]),
                                       lat_row4(grid, idx[3]), lat_row4(grid, idx[4]), lat_row4(grid, idx[5]),
                                       lat_row4(grid, idx[6]), lat_row4(grid, idx[7]));
        bits = lat_even_signs4((aux & 0x7fu) | ((aux << 1) & 0x7f00u) | ((aux << 2) & 0x7f0000u) |
                               ((aux << 3) & 0x7f000000u));
        *ls = _mm256_set1_epi16((short)(2 * (aux >> 28) + 1));
    } else if (t == NIB_TYPE_IQ2_XS) {
        /* a 16-bit word a group: 9 index bits, 7 sign bits; a scale nibble per two groups */
        const block_iq2_xs *b = (const block_iq2_xs *)blk;
        const uint16_t *q = b->qs + 4 * ib;
        *mag = _mm256_set_epi64x((int64_t)lat_row8(grid, q[3] & 511u), (int64_t)lat_row8(grid, q[2] & 511u),
                                   (int64_t)lat_row8(grid, q[1] & 511u), (int64_t)lat_row8(grid, q[0] & 511u));
        bits = lat_even_signs4((uint32_t)q[0] >> 9 | ((uint32_t)q[1] >> 9) << 8 | ((uint32_t)q[2] >> 9) << 16 |
                               ((uint32_t)q[3] >> 9) << 24);
        *ls = lat_ls(2u * (b->scales[ib] & 15u) + 1u, 2u * (b->scales[ib] >> 4) + 1u);
    } else if (t == NIB_TYPE_IQ2_S) {
        /* low index bytes, their top 2 bits in qh[ib], explicit sign bytes, scales as IQ2_XS */
        const block_iq2_s *b = (const block_iq2_s *)blk;
        const uint8_t *idx = b->qs + 4 * ib;
        const unsigned qh = b->qh[ib];
        *mag = _mm256_set_epi64x((int64_t)lat_row8(grid, idx[3] | ((qh >> 6) & 3u) << 8),
                                   (int64_t)lat_row8(grid, idx[2] | ((qh >> 4) & 3u) << 8),
                                   (int64_t)lat_row8(grid, idx[1] | ((qh >> 2) & 3u) << 8),
                                   (int64_t)lat_row8(grid, idx[0] | (qh & 3u) << 8));
        memcpy(&bits, b->qs + QK_K / 8 + 4 * ib, 4);
        *ls = lat_ls(2u * (b->scales[ib] & 15u) + 1u, 2u * (b->scales[ib] >> 4) + 1u);
    } else { /* IQ3_S: 9-bit indices (8 low bytes, the 9th bits in qh[ib]), explicit signs, a scale nibble per sub-block */
        const block_iq3_s *b = (const block_iq3_s *)blk;
        const uint8_t *idx = b->qs + 8 * ib;
        const unsigned qh = b->qh[ib];
        /* the 9th bit of index k: bit k of qh, moved to bit 8 */
        *mag = _mm256_setr_epi32(lat_row4(grid, idx[0] | ((qh << 8) & 256u)), lat_row4(grid, idx[1] | ((qh << 7) & 256u)),
                                   lat_row4(grid, idx[2] | ((qh << 6) & 256u)), lat_row4(grid, idx[3] | ((qh << 5) & 256u)),
                                   lat_row4(grid, idx[4] | ((qh << 4) & 256u)), lat_row4(grid, idx[5] | ((qh << 3) & 256u)),
                                   lat_row4(grid, idx[6] | ((qh << 2) & 256u)), lat_row4(grid, idx[7] | ((qh << 1) & 256u)));
        memcpy(&bits, b->signs + 4 * ib, 4);
        *ls = _mm256_set1_epi16((short)(2 * ((b->scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1));
    }
    return bits;
}

#endif
