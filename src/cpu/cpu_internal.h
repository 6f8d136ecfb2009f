/* Inside the CPU backend: the kernel table's shape and every kernel's name.
 *
 * Kernels come in three kinds, all with the format table's conventions
 * (quant/types.h):
 *   vec_dot    float f(n, w, a): one weight row (n elements in the weight
 *              format) against one activation row already in the activation
 *              format. For F32/F16/BF16 weights the activation is the float X
 *              row itself (act_f32 below): converting X to F16 first would
 *              lose bits for nothing.
 *   vec_dot_x4 void f(n, w, a, a_stride, out): the same for four activation
 *              rows (a, a + a_stride, ...) into out[0..3], decoding each weight
 *              block once (prompt processing). It must give each token exactly
 *              what vec_dot of the same level gives it, so a token's result does
 *              not depend on the batch (tests/test_cpu.c checks bit equality).
 *   vec_dot_2x4 void f(n, w, w_stride, a, a_stride, out): two weight rows (w,
 *              w + w_stride) against four activation rows into out[0..3] (the
 *              first row) and out[4..7], each activation row loaded once for
 *              both; each (row, token) again exactly what vec_dot gives it.
 *   quantize   the activation quantizer, bit-identical to the reference
 *              quantizer of that activation type.
 *
 * The SIMD kernels live in files named *_avx2.c / *_avx512.c, which the
 * Makefile compiles with the matching -m flags; nothing else is, so the rest of
 * the library runs on any x86-64 and the kernels are reached only through the
 * table, after the CPU said it has the instructions.
 */
#ifndef NIB_CPU_INTERNAL_H
#define NIB_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/cpu.h"
#include "quant/types.h"

#define NIB_SIMD_LEVELS 3

typedef void (*cpu_vec_dot_x4_fn)(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
typedef void (*cpu_vec_dot_2x4_fn)(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                                   float *out);

/* Super-block i of 8 consecutive weight rows (w_stride bytes apart) decoded
 * into the form its level's kernel reads (AVX-512: cpu/repack.h block_i8x8;
 * AVX2: dot_iq_avx2.c lat_decoded x 8), at most CPU_DECODED_MAX_BYTES. */
typedef void (*cpu_decode_x8_fn)(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
#define CPU_DECODED_MAX_BYTES 6400
/* A weight layout of the CPU's own (cpu/repack.h): groups of `rows` rows,
 * each super-block of a group (block_elems elements of every row) packed
 * into group_block_bytes. dot: n elements of one group against nt (1..4)
 * activation rows (a, a + a_stride, ...) into out[t * rows + r]; a (row,
 * token)'s result does not depend on nt. */
typedef void (*cpu_packed_dot_fn)(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);

/* What nib_cpu_matmul runs for one weight type at the active level. */
typedef struct cpu_kernel {
    nib_vec_dot_fn vec_dot;     /* weight row . activation row */
    cpu_vec_dot_x4_fn vec_dot_x4; /* the same level's 4-row version, or NULL */
    cpu_vec_dot_2x4_fn vec_dot_2x4; /* the same level's 2-row 4-token version, or NULL */
    bool act_f32;               /* activation is the float X row as given */
    nib_type act_type;          /* otherwise: the format X is quantized to */
    nib_quantize_fn quantize;   /* and its quantizer (NULL when act_f32) */
    size_t act_block_bytes;     /* bytes per act_block_elems of activation */
    int64_t act_block_elems;
    /* prompts: 8 rows at a time decoded ahead into block_i8x8 and dotted by
     * decoded_dot with every token of a block (both NULL: the x4 form) */
    cpu_decode_x8_fn decode_x8;
    cpu_packed_dot_fn decoded_dot;
    size_t decoded_bytes;       /* one decoded super-block of the 8 rows (32-byte multiple) */
} cpu_kernel;

/* A packed kernel's entry point from its always-inline body, with nt (1..4)
 * a compile-time constant: body(nt, n, p, a, a_stride, out), or with a
 * leading format argument f: body(f, nt, n, p, a, a_stride, out). */
#define PACKED_ENTRY_F(name, body, f)                                                                   \
    void name(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out) {           \
        switch (nt) {                                                                                   \
        case 1: body(f, 1, n, p, a, a_stride, out); break;                                              \
        case 2: body(f, 2, n, p, a, a_stride, out); break;                                              \
        case 3: body(f, 3, n, p, a, a_stride, out); break;                                              \
        default: body(f, 4, n, p, a, a_stride, out); break;                                             \
        }                                                                                               \
    }
#define PACKED_ENTRY(name, body)                                                                        \
    void name(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out) {           \
        switch (nt) {                                                                                   \
        case 1: body(1, n, p, a, a_stride, out); break;                                                 \
        case 2: body(2, n, p, a, a_stride, out); break;                                                 \
        case 3: body(3, n, p, a, a_stride, out); break;                                                 \
        default: body(4, n, p, a, a_stride, out); break;                                                \
        }                                                                                               \
    }
typedef struct cpu_packed {
    nib_type type;
    nib_simd_level level;       /* used only when this is the active level */
    int rows;
    int64_t block_elems;
    size_t group_block_bytes;
    void (*pack)(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
    cpu_packed_dot_fn dot;
    /* the activation the kernel reads when it is not the format's own
     * (cpu_kernel's act fields); 0 / NULL: the format's own */
    nib_quantize_fn act_quantize;
    size_t act_block_bytes;
    int64_t act_block_elems;
    /* fewer tokens than this (one: decode) run faster on the file's layout */
    int64_t min_tokens;
} cpu_packed;

/* The packed layout of wtype at the active level, or at `level`, if it has
 * one (repack.c). */
bool cpu_packed_get(nib_type wtype, cpu_packed *p);
bool cpu_packed_get_at(nib_type wtype, nib_simd_level level, cpu_packed *p);

/* Fills *k for wtype at the active SIMD level: the best kernel at or below it,
 * else the format table's scalar reference. false if wtype has no row. */
bool cpu_kernel_get(nib_type wtype, cpu_kernel *k);
/* The same at an explicit level (tests and the bench compare levels). */
bool cpu_kernel_get_at(nib_type wtype, nib_simd_level level, cpu_kernel *k);
/* true when a kernel written for exactly this level exists for wtype (tests
 * use it to say which kernels they compared rather than re-testing a fallback). */
bool cpu_kernel_has_level(nib_type wtype, nib_simd_level level);
/* The activation quantizer of act_type at a level (tests compare these). */
nib_quantize_fn cpu_act_quantizer(nib_type act_type, nib_simd_level level);

/* ---- scalar kernels of this backend (dot_float.c) ----------------------------
 * Float weights against float X, summed in fp32 in element order. */
float cpu_dot_f16_f32(int64_t n, const void *w, const void *x);
float cpu_dot_bf16_f32(int64_t n, const void *w, const void *x);

/* ---- AVX2 + FMA + F16C ----------------------------------------------------------- */
void cpu_quantize_q8_0_avx2(const float *x, void *dst, int64_t n);
void cpu_quantize_q8_1_avx2(const float *x, void *dst, int64_t n);
void cpu_quantize_q8_K_avx2(const float *x, void *dst, int64_t n);

float cpu_dot_f32_f32_avx2(int64_t n, const void *w, const void *x);
float cpu_dot_f16_f32_avx2(int64_t n, const void *w, const void *x);
float cpu_dot_bf16_f32_avx2(int64_t n, const void *w, const void *x);

float cpu_dot_q4_0_q8_0_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_q4_1_q8_1_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_q5_0_q8_0_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_q5_1_q8_1_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_q8_0_q8_0_avx2(int64_t n, const void *w, const void *a);

float cpu_dot_q4_K_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_q5_K_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_q6_K_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_q2_K_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_q3_K_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq4_nl_q8_0_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq4_xs_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_mxfp4_q8_0_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_tq2_0_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_tq1_0_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq1_s_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq1_m_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq2_xxs_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq2_xs_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq2_s_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq3_xxs_q8_K_avx2(int64_t n, const void *w, const void *a);
float cpu_dot_iq3_s_q8_K_avx2(int64_t n, const void *w, const void *a);

void cpu_dot_q4_0_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q4_1_q8_1_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q5_0_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q5_1_q8_1_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q8_0_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q4_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q5_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q6_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q2_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q3_K_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq4_nl_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq4_xs_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_mxfp4_q8_0_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_tq2_0_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_tq1_0_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq1_s_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq1_m_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq2_xxs_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq2_xs_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq2_s_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq3_xxs_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq3_s_q8_K_x4_avx2(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_decode_x8_iq2_xxs_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_x8_iq2_xs_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_x8_iq2_s_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_x8_iq3_xxs_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_x8_iq3_s_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_x8_iq1_s_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_x8_iq1_m_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_x8_q3_K_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_rows_iq2_xxs_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_rows_iq2_xs_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_rows_iq2_s_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_rows_iq3_xxs_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_decode_rows_iq3_s_avx2(const uint8_t *w, size_t w_stride, int64_t i, void *dst);
void cpu_dot_lat8_q8_K_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q4_Kx8_q8_K_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q6_Kx8q_q8_K_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q5_Kx8q_q8_K_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q8_0x8_q8_0_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_iq4_nlx8_q8_0_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_mxfp4x8_q8_0_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q4_0x8_q8_0s_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q5_0x8_q8_0s_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q4_1x8_q8_1_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q5_1x8_q8_1_avx2(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q4_Kx8_q8_K_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q6_Kx8_q8_K_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q5_Kx8_q8_K_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q4_0x8_q8_0s_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q5_0x8_q8_0s_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q8_0x8_q8_0u_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q4_1x8_q8_1_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_q5_1x8_q8_1_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_iq4_nlx8_q8_0s_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_mxfp4x8_q8_0s_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_iq4_xsx8_q8_K_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_i8x8_q8_K_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);
void cpu_dot_i8x8s32_q8_K_avx512(int64_t n, const void *p, const void *a, size_t a_stride, int nt, float *out);

/* ---- AVX-512 F/BW/VL + VNNI -------------------------------------------------------- */
float cpu_dot_q4_0_q8_0_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_q8_0_q8_0_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_q4_K_q8_K_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_q6_K_q8_K_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_q2_K_q8_K_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_q3_K_q8_K_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_tq2_0_q8_K_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_iq4_xs_q8_K_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_iq4_nl_q8_0_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_mxfp4_q8_0_avx512(int64_t n, const void *w, const void *a);
void cpu_dot_q4_0_q8_0_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q4_0_q8_0_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                                  float *out);
void cpu_dot_q8_0_q8_0_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q8_0_q8_0_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                                  float *out);
void cpu_dot_q4_K_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q4_K_q8_K_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                                  float *out);
void cpu_dot_q6_K_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q2_K_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q3_K_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_tq2_0_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq4_xs_q8_K_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq4_nl_q8_0_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_mxfp4_q8_0_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_iq4_nl_q8_0_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride, float *out);
void cpu_dot_mxfp4_q8_0_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride, float *out);
float cpu_dot_q5_0_q8_0_avx512(int64_t n, const void *w, const void *a);
void cpu_dot_q5_0_q8_0_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q5_0_q8_0_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                                  float *out);
float cpu_dot_q4_1_q8_1_avx512(int64_t n, const void *w, const void *a);
void cpu_dot_q4_1_q8_1_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q4_1_q8_1_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                                  float *out);
float cpu_dot_q5_1_q8_1_avx512(int64_t n, const void *w, const void *a);
/* the XXS/XS lattice formats' single-token dots with the sign bits as a mask register (dot_iq_avx512.c) */
float cpu_dot_iq2_xxs_q8_K_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_iq2_xs_q8_K_avx512(int64_t n, const void *w, const void *a);
float cpu_dot_iq3_xxs_q8_K_avx512(int64_t n, const void *w, const void *a);
void cpu_dot_q5_1_q8_1_x4_avx512(int64_t n, const void *w, const void *a, size_t a_stride, float *out);
void cpu_dot_q5_1_q8_1_2x4_avx512(int64_t n, const void *w, size_t w_stride, const void *a, size_t a_stride,
                                  float *out);

#endif
