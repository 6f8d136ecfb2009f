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

/* One super-block (256 elements) of 8 consecutive Q4_K rows: each row's
 * d, dmin, its eight 6-bit scales and minimums unpacked to bytes, and each
 * sub-block's quants of all 8 rows in 128 bytes. A byte holds element
 * 4k + b of a row's sub-block in its low nibble and element 16 + 4k + b in
 * its high one (k = 0..3, b = 0..3); where it sits depends on the kernels'
 * register width (q4_Kx8_qs_byte):
 *  - Q4_KX8_QUADS (AVX2): byte 32k + 4r + b. A 256-bit register k holds
 *    4 elements of each of the 8 rows, all against the same 4 activation
 *    bytes (one 32-bit broadcast).
 *  - Q4_KX8_PAIRS (AVX-512): byte 64p + 8r + 4h + b with k = 2p + h. A
 *    512-bit register p holds 8 elements of each row, rows' quads k = 2p
 *    and 2p + 1 side by side, whose activation bytes are 8 contiguous ones
 *    (one 64-bit broadcast).
 * x = d*sc*q - dmin*m per row. */
typedef struct {
    nib_half d[Q4_KX8_ROWS], dmin[Q4_KX8_ROWS];
    uint8_t sc[8][Q4_KX8_ROWS];      /* [sub-block][row], 6-bit scales */
    uint8_t m[4][Q4_KX8_ROWS][2];    /* [sub-block pair][row][which of the pair], 6-bit minimums */
    uint8_t qs[8][16 * Q4_KX8_ROWS]; /* [sub-block][q4_Kx8_qs_byte] */
} block_q4_Kx8;
NIB_STATIC_ASSERT(sizeof(block_q4_Kx8) == 1184, "block_q4_Kx8 size");

typedef enum { Q4_KX8_QUADS, Q4_KX8_PAIRS } q4_Kx8_order;

/* Q5_K, 8 rows (PAIRS only): block_q4_Kx8's fields and the fifth bits as
 * 64-bit masks, qh[j][p][h] byte r bit i = the fifth bit of element
 * 16h + 8p + i of row r's sub-block j: bit for byte with the low (h = 0) or
 * high (h = 1) nibbles of register p of sub-block j. */
typedef struct {
    nib_half d[Q4_KX8_ROWS], dmin[Q4_KX8_ROWS];
    uint8_t sc[8][Q4_KX8_ROWS];
    uint8_t m[4][Q4_KX8_ROWS][2];
    uint8_t qh[8][2][2][Q4_KX8_ROWS];
    uint8_t qs[8][16 * Q4_KX8_ROWS];
} block_q5_Kx8;
NIB_STATIC_ASSERT(sizeof(block_q5_Kx8) == 1440, "block_q5_Kx8 size"); /* 8 x 176 + the unpacked scales' 32 */
void cpu_pack_q5_Kx8(const uint8_t *w, size_t w_stride, int64_t i, block_q5_Kx8 *dst);

/* Q5_K, 8 rows (AVX2): block_q4_Kx8's fields with qs in Q4_KX8_QUADS order,
 * and the fifth bits as 32-bit masks, qh[j][k][h] bit 4r + b = the fifth bit
 * of the element in byte 4r + b of register k of sub-block j, low (h = 0) or
 * high (h = 1) nibble: element 4k + b or 16 + 4k + b of row r. */
typedef struct {
    nib_half d[Q4_KX8_ROWS], dmin[Q4_KX8_ROWS];
    uint8_t sc[8][Q4_KX8_ROWS];
    uint8_t m[4][Q4_KX8_ROWS][2];
    uint32_t qh[8][4][2];
    uint8_t qs[8][16 * Q4_KX8_ROWS];
} block_q5_Kx8q;
NIB_STATIC_ASSERT(sizeof(block_q5_Kx8q) == 1440, "block_q5_Kx8q size");
void cpu_pack_q5_Kx8q(const uint8_t *w, size_t w_stride, int64_t i, block_q5_Kx8q *dst);

/* Q6_K, 8 rows (AVX-512). Sub-block j (16 elements) of the 8 rows is two
 * registers of 64 bytes, A (elements 0..7) and B (8..15), byte 8r + 4h + b
 * of each holding element 4h + b (A) or 8 + 4h + b (B) of row r; a token's
 * matching activation bytes are 8 contiguous ones (one 64-bit broadcast).
 * The 6-bit codes q are stored split:
 *   ql[j] byte 8r + 4h + b: low nibble the low 4 bits of A's code there,
 *         high nibble B's;
 *   qh[c] byte 8r + 4h + b: two bits each, from bit 0 up, the top 2 bits of
 *         A's and B's codes of sub-block 2c, then A's and B's of 2c + 1;
 *   sc[c][r] the signed scales of sub-blocks 2c and 2c + 1 of row r.
 * x = d * sc * (q - 32). Same bytes as the rows they replace. */
typedef struct {
    nib_half d[Q4_KX8_ROWS];
    int8_t sc[8][Q4_KX8_ROWS][2];
    uint8_t ql[16][8 * Q4_KX8_ROWS];
    uint8_t qh[8][8 * Q4_KX8_ROWS];
} block_q6_Kx8;
NIB_STATIC_ASSERT(sizeof(block_q6_Kx8) == 8 * sizeof(block_q6_K), "block_q6_Kx8 size");
void cpu_pack_q6_Kx8(const uint8_t *w, size_t w_stride, int64_t i, block_q6_Kx8 *dst);

/* Q6_K, 8 rows (AVX2, byte order Q4_KX8_QUADS). Sub-blocks 2p and 2p + 1
 * (16 elements each) of the 8 rows are 4 registers k of 32 bytes, byte 4r +
 * b holding element 4k + b of row r of both; a token's matching activation
 * bytes are 4 contiguous ones (a 32-bit broadcast):
 *   ql[p][k] byte 4r + b: low nibble the low 4 bits of sub-block 2p's code
 *            there, high nibble 2p + 1's;
 *   qh[p][k / 2] byte 4r + b: from bit 4 (k % 2) up, the top 2 bits of 2p's
 *            code, then of 2p + 1's;
 *   sc[j][r] the signed scale of sub-block j of row r.
 * x = d * sc * (q - 32). Same bytes as the rows they replace. */
typedef struct {
    nib_half d[Q4_KX8_ROWS];
    int8_t sc[16][Q4_KX8_ROWS];
    uint8_t ql[8][4][4 * Q4_KX8_ROWS];
    uint8_t qh[8][2][4 * Q4_KX8_ROWS];
} block_q6_Kx8q;
NIB_STATIC_ASSERT(sizeof(block_q6_Kx8q) == 8 * sizeof(block_q6_K), "block_q6_Kx8q size");
void cpu_pack_q6_Kx8q(const uint8_t *w, size_t w_stride, int64_t i, block_q6_Kx8q *dst);

/* Where quad k (elements 4k..4k+3, low nibbles; 16+4k.., high) byte b of
 * row r sits in a sub-block's 128 bytes. */
static inline int q4_Kx8_qs_byte(q4_Kx8_order o, int k, int r, int b) {
    return o == Q4_KX8_QUADS ? 32 * k + 4 * r + b : 64 * (k / 2) + 8 * r + 4 * (k % 2) + b;
}

/* Packs super-block i of the 8 rows starting at w (row stride w_stride bytes). */
void cpu_pack_q4_Kx8(const uint8_t *w, size_t w_stride, int64_t i, q4_Kx8_order order, block_q4_Kx8 *dst);

/* ---- the 32-element formats: Q4_0, Q5_0, Q4_1, Q5_1, 8 rows a block --------
 * One 32-element block of 8 consecutive rows: each row's scales, and the
 * quants in one of two orders (the file's qs byte j of a row holds element j
 * in its low nibble and 16 + j in its high one):
 *  - Q4_KX8_PAIRS (AVX-512): the 128 bytes of qs are qs[p][8r + i] = the
 *    file's qs[8p + i] of row r, so a 512-bit register p holds 8 bytes of
 *    each row and a token's matching activation bytes are 8 contiguous ones.
 *    The fifth bits (Q5_0, Q5_1): qh[b][r] is byte b of row r's qh (bit i:
 *    element 8b + i); read as a 64-bit mask, qh[p] lines up bit for byte
 *    with the low nibbles of register p and qh[2 + p] with its high ones.
 *  - Q4_KX8_QUADS (AVX2): qs byte 32k + 4r + b = the file's qs[4k + b] of
 *    row r (a 256-bit register k: 4 bytes of each row, one 32-bit
 *    activation broadcast); the fifth bits as 8 little-endian 32-bit words,
 *    word 2k + h's bit 4r + b the fifth bit of element 16h + 4k + b of row r
 *    (bit for byte with register k's low (h = 0) or high (h = 1) nibbles).
 * Same bytes as the rows they replace. */
typedef struct { nib_half d[Q4_KX8_ROWS]; uint8_t qs[2][8 * Q4_KX8_ROWS]; } block_q4_0x8;
typedef struct { nib_half d[Q4_KX8_ROWS]; uint8_t qh[4][Q4_KX8_ROWS]; uint8_t qs[2][8 * Q4_KX8_ROWS]; } block_q5_0x8;
typedef struct { nib_half d[Q4_KX8_ROWS], m[Q4_KX8_ROWS]; uint8_t qs[2][8 * Q4_KX8_ROWS]; } block_q4_1x8;
typedef struct {
    nib_half d[Q4_KX8_ROWS], m[Q4_KX8_ROWS];
    uint8_t qh[4][Q4_KX8_ROWS];
    uint8_t qs[2][8 * Q4_KX8_ROWS];
} block_q5_1x8;
NIB_STATIC_ASSERT(sizeof(block_q4_0x8) == 8 * sizeof(block_q4_0), "block_q4_0x8 size");
NIB_STATIC_ASSERT(sizeof(block_q5_0x8) == 8 * sizeof(block_q5_0), "block_q5_0x8 size");
NIB_STATIC_ASSERT(sizeof(block_q4_1x8) == 8 * sizeof(block_q4_1), "block_q4_1x8 size");
NIB_STATIC_ASSERT(sizeof(block_q5_1x8) == 8 * sizeof(block_q5_1), "block_q5_1x8 size");

/* IQ4_NL is packed as Q4_0 (pairs for AVX-512, quads for AVX2): its block is
 * Q4_0's bytes (d, 16 bytes of nibbles in the same element order), the
 * nibbles indexing the 16 IQ4 levels instead of standing for q - 8. */

/* MXFP4: the 8 rows' E8M0 exponents e[r], then the nibbles as Q4_0x8's qs
 * (pairs or quads), indexing MXFP4's 16 levels (x = 2^(e - 128) * level[q]). */
typedef struct { uint8_t e[Q4_KX8_ROWS]; uint8_t qs[2][8 * Q4_KX8_ROWS]; } block_mxfp4x8;
NIB_STATIC_ASSERT(sizeof(block_mxfp4x8) == 8 * sizeof(block_mxfp4), "block_mxfp4x8 size");

/* IQ4_XS, 8 rows (PAIRS only): each row's d, its eight 6-bit scales unbiased
 * to int8 (-32..31: sc[sub-block][row]), and each 32-element sub-block's
 * nibbles of the 8 rows as Q4_0x8's qs (qs[j][64p + 8r + i] = the file's
 * qs[16j + 8p + i] of row r: low nibble element 8p + i, high 16 + 8p + i).
 * x = d * sc * level[q]. 16 bytes more than the 8 rows it replaces. */
typedef struct {
    nib_half d[Q4_KX8_ROWS];
    int8_t sc[8][Q4_KX8_ROWS];
    uint8_t qs[8][16 * Q4_KX8_ROWS];
} block_iq4_xsx8;
NIB_STATIC_ASSERT(sizeof(block_iq4_xsx8) == 8 * sizeof(block_iq4_xs) + 16, "block_iq4_xsx8 size");
void cpu_pack_iq4_xsx8(const uint8_t *w, size_t w_stride, int64_t i, block_iq4_xsx8 *dst);

/* A super-block of 8 rows decoded to integers, for the formats whose
 * blocks cost more to decode than to dot (the lattices): made while a
 * prompt is multiplied (cpu_kernel.decode_x8), not kept. Row r's element
 * 32j + 8k + e is d[r] * sc[2j + (k >= 2)][r] * (qs[j][k][8r + e] - 128):
 * register k of sub-block j holds 8 elements of each row, as Q4_0x8's (lane
 * 2r + h: elements 8k + 4h..), against one 64-bit broadcast of the token's
 * codes; sc holds an integer scale a 16 elements; d the format's fp16 d
 * times its fixed step. off holds the same scales times 128 in vpdpwssd
 * pairs for the + 128's correction: off[m][2r + h] = (sc[4m + h][r],
 * sc[4m + h + 2][r]) * 128, so the lanes of row r cover its even (h = 0)
 * and odd (h = 1) 16-element halves. */
typedef struct {
    float d[Q4_KX8_ROWS];
    int16_t sc[16][Q4_KX8_ROWS];
    int16_t off[4][2 * Q4_KX8_ROWS][2];
    uint8_t qs[8][4][8 * Q4_KX8_ROWS];
} block_i8x8;
NIB_STATIC_ASSERT(sizeof(block_i8x8) == 2592, "block_i8x8 size");
/* block_i8x8's off from its sc (after a decoder filled sc) */
static inline void i8x8_fill_off(block_i8x8 *o) {
    for (int m = 0; m < 4; m++)
        for (int r = 0; r < Q4_KX8_ROWS; r++)
            for (int h = 0; h < 2; h++) {
                o->off[m][2 * r + h][0] = (int16_t)(128 * o->sc[4 * m + h][r]);
                o->off[m][2 * r + h][1] = (int16_t)(128 * o->sc[4 * m + h + 2][r]);
            }
}

/* Q8_0: qs[p][8r + i] is row r's code 8p + i (Q4_KX8_PAIRS, AVX-512); in
 * Q4_KX8_QUADS (AVX2) byte 32k + 4r + b of qs (flat) is row r's code 4k + b. */
typedef struct { nib_half d[Q4_KX8_ROWS]; int8_t qs[4][8 * Q4_KX8_ROWS]; } block_q8_0x8;
NIB_STATIC_ASSERT(sizeof(block_q8_0x8) == 8 * sizeof(block_q8_0), "block_q8_0x8 size");

/* The activation of the packed Q8_0 kernel: a Q8_0 block with its codes
 * offset to unsigned (y + 128, never 0: the codes are within +-127), so that
 * vpdpbusd multiplies them with the signed weights as they are; the kernel
 * takes 128 * sum(w) off, the weights' sums made once a block for all tokens. */
typedef struct { nib_half d; uint8_t qs[32]; } block_q8_0u;
NIB_STATIC_ASSERT(sizeof(block_q8_0u) == 34, "block_q8_0u size");
void cpu_quantize_q8_0u(const float *x, void *dst, int64_t n);

/* The activation of the packed Q4_0/Q5_0 kernels: a Q8_0 block (the same d
 * and qs as the Q8_0 quantizer gives) with the sum of its 32 codes, so the
 * kernels dot the unsigned codes q and take offset * sum off once per block
 * and token instead of a sign trick per register. */
typedef struct { nib_half d; int16_t sum; int8_t qs[32]; } block_q8_0s;
NIB_STATIC_ASSERT(sizeof(block_q8_0s) == 36, "block_q8_0s size");

/* Packs block i of the 8 rows of a 32-element format starting at w (Q8_0:
 * PAIRS only). */
void cpu_pack_legacy_x8(nib_type t, const uint8_t *w, size_t w_stride, int64_t i, q4_Kx8_order order, void *dst);
/* X (n floats, whole blocks) to block_q8_0s. */
void cpu_quantize_q8_0s(const float *x, void *dst, int64_t n);

#endif
