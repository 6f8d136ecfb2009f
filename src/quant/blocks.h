/* Block layouts of every ggml quantized format, defined once.
 *
 * This header is plain C that nvcc also compiles, so the CPU reference and the
 * CUDA kernels read the very same structs. Field order and sizes are file
 * format: each struct's size is asserted against the bytes ggml writes.
 *
 * Notation used in the comments: d = scale, m/dmin = minimum (offset), qs =
 * low bits of the quants, qh = high bits, QK_K = 256 (the "super-block" of the
 * K-quants and IQ formats).
 */
#ifndef NIB_QUANT_BLOCKS_H
#define NIB_QUANT_BLOCKS_H

#include <stdint.h>

#ifdef __cplusplus
#define NIB_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define NIB_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

typedef uint16_t nib_half;  /* fp16 bits; see core/fp16.h */

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK4_NL 32
#define QK_MXFP4 32
#define QK_K 256
#define K_SCALE_SIZE 12

/* ---- legacy 32-element blocks -------------------------------------------- */

typedef struct { nib_half d; uint8_t qs[QK4_0 / 2]; } block_q4_0;                /* x = d*(q-8) */
NIB_STATIC_ASSERT(sizeof(block_q4_0) == 18, "block_q4_0 size");

typedef struct { nib_half d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;             /* x = d*q + m */
NIB_STATIC_ASSERT(sizeof(block_q4_1) == 20, "block_q4_1 size");

typedef struct { nib_half d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0; /* x = d*(q-16) */
NIB_STATIC_ASSERT(sizeof(block_q5_0) == 22, "block_q5_0 size");

typedef struct { nib_half d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1; /* x = d*q + m */
NIB_STATIC_ASSERT(sizeof(block_q5_1) == 24, "block_q5_1 size");

typedef struct { nib_half d; int8_t qs[QK8_0]; } block_q8_0;                     /* x = d*q */
NIB_STATIC_ASSERT(sizeof(block_q8_0) == 34, "block_q8_0 size");

/* s = d * sum(qs): lets the Q4_1/Q5_1 dot fold the minimum in with one multiply. */
typedef struct { nib_half d, s; int8_t qs[QK8_1]; } block_q8_1;
NIB_STATIC_ASSERT(sizeof(block_q8_1) == 36, "block_q8_1 size");

/* ---- K-quants: 256-element super-blocks ---------------------------------- */

typedef struct {
    uint8_t scales[QK_K / 16];  /* 16 sub-blocks: low nibble scale, high nibble min */
    uint8_t qs[QK_K / 4];       /* 2-bit quants */
    nib_half d, dmin;
} block_q2_K;
NIB_STATIC_ASSERT(sizeof(block_q2_K) == 84, "block_q2_K size");

typedef struct {
    uint8_t hmask[QK_K / 8];    /* high bit of each 3-bit quant (set = no -4 offset) */
    uint8_t qs[QK_K / 4];       /* low 2 bits */
    uint8_t scales[12];         /* 16 signed 6-bit scales, biased by 32 */
    nib_half d;
} block_q3_K;
NIB_STATIC_ASSERT(sizeof(block_q3_K) == 110, "block_q3_K size");

typedef struct {
    nib_half d, dmin;
    uint8_t scales[K_SCALE_SIZE];  /* 8 sub-blocks: 6-bit scale and 6-bit min each */
    uint8_t qs[QK_K / 2];
} block_q4_K;
NIB_STATIC_ASSERT(sizeof(block_q4_K) == 144, "block_q4_K size");

typedef struct {
    nib_half d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;
NIB_STATIC_ASSERT(sizeof(block_q5_K) == 176, "block_q5_K size");

typedef struct {
    uint8_t ql[QK_K / 2];       /* low 4 bits */
    uint8_t qh[QK_K / 4];       /* high 2 bits */
    int8_t scales[QK_K / 16];   /* 16 signed 8-bit scales */
    nib_half d;
} block_q6_K;
NIB_STATIC_ASSERT(sizeof(block_q6_K) == 210, "block_q6_K size");

/* Activation format of the K-quant and IQ dots: fp32 scale, and the sum of each
 * 16-element group so minimum terms need no second pass over the quants. */
typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} block_q8_K;
NIB_STATIC_ASSERT(sizeof(block_q8_K) == 292, "block_q8_K size");

/* ---- IQ formats: lattice codebooks (grids in quant/iq_grids.h) ----------- */

typedef struct { nib_half d; uint16_t qs[QK_K / 8]; } block_iq2_xxs;
NIB_STATIC_ASSERT(sizeof(block_iq2_xxs) == 66, "block_iq2_xxs size");

typedef struct { nib_half d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } block_iq2_xs;
NIB_STATIC_ASSERT(sizeof(block_iq2_xs) == 74, "block_iq2_xs size");

typedef struct { nib_half d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; } block_iq2_s;
NIB_STATIC_ASSERT(sizeof(block_iq2_s) == 82, "block_iq2_s size");

typedef struct { nib_half d; uint8_t qs[3 * QK_K / 8]; } block_iq3_xxs;
NIB_STATIC_ASSERT(sizeof(block_iq3_xxs) == 98, "block_iq3_xxs size");

typedef struct {
    nib_half d;
    uint8_t qs[QK_K / 4];
    uint8_t qh[QK_K / 32];
    uint8_t signs[QK_K / 8];
    uint8_t scales[QK_K / 64];
} block_iq3_s;
NIB_STATIC_ASSERT(sizeof(block_iq3_s) == 110, "block_iq3_s size");

typedef struct { nib_half d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } block_iq1_s;
NIB_STATIC_ASSERT(sizeof(block_iq1_s) == 50, "block_iq1_s size");

/* IQ1_M has no d field: the fp16 scale is spread over the top nibbles of scales[]. */
typedef struct { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; } block_iq1_m;
NIB_STATIC_ASSERT(sizeof(block_iq1_m) == 56, "block_iq1_m size");

typedef struct { nib_half d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
NIB_STATIC_ASSERT(sizeof(block_iq4_nl) == 18, "block_iq4_nl size");

typedef struct {
    nib_half d;
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
} block_iq4_xs;
NIB_STATIC_ASSERT(sizeof(block_iq4_xs) == 136, "block_iq4_xs size");

/* ---- ternary and microscaling -------------------------------------------- */

typedef struct {
    uint8_t qs[(QK_K - 4 * QK_K / 64) / 5];  /* 5 trits per byte (base-3, scaled by 256/243) */
    uint8_t qh[QK_K / 64];                   /* 4 trits per byte */
    nib_half d;
} block_tq1_0;
NIB_STATIC_ASSERT(sizeof(block_tq1_0) == 54, "block_tq1_0 size");

typedef struct { uint8_t qs[QK_K / 4]; nib_half d; } block_tq2_0;  /* 2 bits per trit */
NIB_STATIC_ASSERT(sizeof(block_tq2_0) == 66, "block_tq2_0 size");

/* OCP MX FP4: one E8M0 shared exponent, 32 E2M1 values. */
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4;
NIB_STATIC_ASSERT(sizeof(block_mxfp4) == 17, "block_mxfp4 size");

#endif
