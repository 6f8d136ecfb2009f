/* Weight layouts the CPU kernels read instead of a file's rows.
 *
 * A prompt's matmul is bound by arithmetic, not by reading the weights, and
 * in a file's layout every (row, token) pair pays its own scale arithmetic:
 * a Q4_K dot applies a sub-block's scale to 32 elements at a time. With 8
 * rows interleaved, one 256-bit register holds 4 consecutive elements of
 * each of 8 rows, a token's 4 activation bytes are broadcast to all 8, and
 * one maddubs serves 8 rows; a sub-block's 8 maddubs then add in int16 and
 * meet the 8 rows' scales in one madd. llama.cpp's CPU backend repacks its
 * Q4_K weights at load time in the same spirit (8-row blocks).
 *
 * The format table's layout stays the definition of the numbers: packing
 * moves bits, it changes none (tests/test_cpu.c unpacks and compares), and
 * the packed kernels are checked against the reference vec_dot.
 */
#ifndef NIB_CPU_REPACK_H
#define NIB_CPU_REPACK_H

#include <stddef.h>
#include <stdint.h>

#include "quant/blocks.h"

#define Q4_KX8_ROWS 8

/* One super-block (256 elements) of 8 consecutive Q4_K rows. Element e of
 * sub-block j (32 elements) of row r is nibble q of
 *   qs[j][k][4r + e % 4], k = (e / 4) % 4, low nibble if e < 16 else high,
 * so register k of sub-block j holds elements 4k..4k+3 (low nibbles) and
 * 16+4k..16+4k+3 (high nibbles) of every row. x = d*sc*q - dmin*m per row. */
typedef struct {
    nib_half d[Q4_KX8_ROWS], dmin[Q4_KX8_ROWS];
    uint8_t sc[8][Q4_KX8_ROWS];      /* [sub-block][row], 6-bit scales */
    uint8_t m[4][Q4_KX8_ROWS][2];    /* [sub-block pair][row][which of the pair], 6-bit minimums */
    uint8_t qs[8][4][4 * Q4_KX8_ROWS];
} block_q4_Kx8;
NIB_STATIC_ASSERT(sizeof(block_q4_Kx8) == 1184, "block_q4_Kx8 size");

/* Packs super-block i of the 8 rows starting at w (row stride w_stride bytes). */
void cpu_pack_q4_Kx8(const uint8_t *w, size_t w_stride, int64_t i, block_q4_Kx8 *dst);

#endif
