/* The lattice IQ formats with unsigned codebooks (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S) in one common form, which the reference (q_iq.c) reads
 * every format through, and their codebooks, which the SIMD dots
 * (cpu/dot_iq_avx2.c, where each layout is restated for speed) take from
 * here: a 32-weight sub-block is 4 groups of 8, each with its 8
 * magnitudes (codebook rows), 8 sign bits and an odd scale multiplier 2s+1:
 *
 *     weight = d * ls * step * magnitude * (negative ? -1 : 1)
 *
 * The bit layouts of each format are documented at its unpacker in q_iq.c. */
#ifndef NIB_QUANT_IQ_LATTICE_H
#define NIB_QUANT_IQ_LATTICE_H

#include <stddef.h>
#include <stdint.h>

#include "nib.h"

/* One sub-block. Group g is weights 8g..8g+7; its magnitudes are
 * mag[2g][0..3] then mag[2g+1][0..3] (two halves of one 8-wide IQ2 point, or
 * two 4-wide IQ3 points). */
typedef struct {
    const uint8_t *mag[8];
    uint8_t neg[4]; /* bit j set: weight 8g+j is negative */
    uint8_t ls[4];  /* odd scale multiplier 2s+1 of group g */
} iq_sub;

typedef struct {
    size_t block_bytes;
    void (*unpack)(const void *blk, int ib, iq_sub *s); /* sub-block ib = 0..7 */
    float step;                                         /* weight = d * ls * step * magnitude */
    const uint8_t *grid; /* the codebook (quant/iq_grids.h), point_bytes a point */
    int point_bytes;     /* 8 (IQ2) or 4 (IQ3) */
} iq_grid_format;

/* The format of type t, or NULL when t is not one of the five. Every block
 * starts with its fp16 super-block scale d. */
const iq_grid_format *nib_iq_grid_format(nib_type t);

/* IQ1_S and IQ1_M's codebook: 2048 points of 8 values in {-1, 0, 1}, point i
 * at nib_iq1s_grid + 8i (layouts at their unpackers in q_iq.c). */
extern const int8_t *const nib_iq1s_grid;

#endif
