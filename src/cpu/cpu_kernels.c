/* The CPU kernel table and the choice of SIMD level.
 *
 * One row per weight type that has a kernel of its own, keyed by nib_type
 * like the format table, with one vec_dot per SIMD level. A NULL entry falls
 * back to the level below, and the scalar level to the format table's
 * reference vec_dot, so every type of the format table computes (slowly where
 * nobody wrote a kernel yet). To add a kernel: write it in the *_avx2.c or
 * *_avx512.c file of its family, declare it in cpu_internal.h, put it in its
 * row here, and tests/test_cpu.c compares it with the reference.
 *
 * The level is detected once (__builtin_cpu_supports also checks that the OS
 * saves the wide registers), lowered by NIB_SIMD=scalar|avx2 if set, and
 * kept in an atomic so tests may change it between calls. Resolving a row is
 * a few loads, so it is done per matmul call rather than cached: there is then
 * no second, mutable table to keep in step with the level.
 */
#include <pthread.h>
#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/repack.h"
#include "quant/formats.h"

typedef struct cpu_type_row {
    bool act_f32;                               /* dot with float X (float weight formats) */
    nib_vec_dot_fn dot[NIB_SIMD_LEVELS];        /* NULL: use the level below */
    cpu_vec_dot_x4_fn dot_x4[NIB_SIMD_LEVELS];  /* 4-token twin of dot[] at the same level */
    cpu_vec_dot_2x4_fn dot_2x4[NIB_SIMD_LEVELS]; /* 2-row, 4-token twin, or NULL */
} cpu_type_row;

#define L_SCALAR NIB_SIMD_SCALAR
#define L_AVX2 NIB_SIMD_AVX2
#define L_512 NIB_SIMD_AVX512_VNNI

static const cpu_type_row type_rows[NIB_TYPE_COUNT] = {
    /* Float weights dot with the float activations directly. The scalar F32
     * reference already takes floats; F16/BF16 get scalar twins here because
     * the format table pairs them with F16/BF16 activations. */
    [NIB_TYPE_F32] = {true, {[L_SCALAR] = nib_vec_dot_f32_f32, [L_AVX2] = cpu_dot_f32_f32_avx2}, {0}, {0}},
    [NIB_TYPE_F16] = {true, {[L_SCALAR] = cpu_dot_f16_f32, [L_AVX2] = cpu_dot_f16_f32_avx2}, {0}, {0}},
    [NIB_TYPE_BF16] = {true, {[L_SCALAR] = cpu_dot_bf16_f32, [L_AVX2] = cpu_dot_bf16_f32_avx2}, {0}, {0}},

    [NIB_TYPE_Q4_0] = {false, {[L_AVX2] = cpu_dot_q4_0_q8_0_avx2, [L_512] = cpu_dot_q4_0_q8_0_avx512},
                       {[L_AVX2] = cpu_dot_q4_0_q8_0_x4_avx2, [L_512] = cpu_dot_q4_0_q8_0_x4_avx512},
                       {[L_512] = cpu_dot_q4_0_q8_0_2x4_avx512}},
    [NIB_TYPE_Q4_1] = {false, {[L_AVX2] = cpu_dot_q4_1_q8_1_avx2, [L_512] = cpu_dot_q4_1_q8_1_avx512},
                       {[L_AVX2] = cpu_dot_q4_1_q8_1_x4_avx2, [L_512] = cpu_dot_q4_1_q8_1_x4_avx512},
                       {[L_512] = cpu_dot_q4_1_q8_1_2x4_avx512}},
    [NIB_TYPE_Q5_0] = {false, {[L_AVX2] = cpu_dot_q5_0_q8_0_avx2, [L_512] = cpu_dot_q5_0_q8_0_avx512},
                       {[L_AVX2] = cpu_dot_q5_0_q8_0_x4_avx2, [L_512] = cpu_dot_q5_0_q8_0_x4_avx512},
                       {[L_512] = cpu_dot_q5_0_q8_0_2x4_avx512}},
    [NIB_TYPE_Q5_1] = {false, {[L_AVX2] = cpu_dot_q5_1_q8_1_avx2, [L_512] = cpu_dot_q5_1_q8_1_avx512},
                       {[L_AVX2] = cpu_dot_q5_1_q8_1_x4_avx2, [L_512] = cpu_dot_q5_1_q8_1_x4_avx512},
                       {[L_512] = cpu_dot_q5_1_q8_1_2x4_avx512}},
    [NIB_TYPE_Q8_0] = {false, {[L_AVX2] = cpu_dot_q8_0_q8_0_avx2, [L_512] = cpu_dot_q8_0_q8_0_avx512},
                       {[L_AVX2] = cpu_dot_q8_0_q8_0_x4_avx2, [L_512] = cpu_dot_q8_0_q8_0_x4_avx512},
                       {[L_512] = cpu_dot_q8_0_q8_0_2x4_avx512}},
    [NIB_TYPE_Q4_K] = {false, {[L_AVX2] = cpu_dot_q4_K_q8_K_avx2, [L_512] = cpu_dot_q4_K_q8_K_avx512},
                       {[L_AVX2] = cpu_dot_q4_K_q8_K_x4_avx2, [L_512] = cpu_dot_q4_K_q8_K_x4_avx512},
                       {[L_512] = cpu_dot_q4_K_q8_K_2x4_avx512}},
    [NIB_TYPE_Q2_K] = {false, {[L_AVX2] = cpu_dot_q2_K_q8_K_avx2, [L_512] = cpu_dot_q2_K_q8_K_avx512},
                       {[L_AVX2] = cpu_dot_q2_K_q8_K_x4_avx2, [L_512] = cpu_dot_q2_K_q8_K_x4_avx512}, {0}},
    [NIB_TYPE_Q3_K] = {false, {[L_AVX2] = cpu_dot_q3_K_q8_K_avx2, [L_512] = cpu_dot_q3_K_q8_K_avx512},
                       {[L_AVX2] = cpu_dot_q3_K_q8_K_x4_avx2, [L_512] = cpu_dot_q3_K_q8_K_x4_avx512}, {0}},
    [NIB_TYPE_Q5_K] = {false, {[L_AVX2] = cpu_dot_q5_K_q8_K_avx2}, {[L_AVX2] = cpu_dot_q5_K_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_Q6_K] = {false, {[L_AVX2] = cpu_dot_q6_K_q8_K_avx2, [L_512] = cpu_dot_q6_K_q8_K_avx512},
                       {[L_AVX2] = cpu_dot_q6_K_q8_K_x4_avx2, [L_512] = cpu_dot_q6_K_q8_K_x4_avx512}, {0}},
    [NIB_TYPE_IQ4_NL] = {false, {[L_AVX2] = cpu_dot_iq4_nl_q8_0_avx2, [L_512] = cpu_dot_iq4_nl_q8_0_avx512},
                         {[L_AVX2] = cpu_dot_iq4_nl_q8_0_x4_avx2, [L_512] = cpu_dot_iq4_nl_q8_0_x4_avx512},
                         {[L_512] = cpu_dot_iq4_nl_q8_0_2x4_avx512}},
    [NIB_TYPE_IQ4_XS] = {false, {[L_AVX2] = cpu_dot_iq4_xs_q8_K_avx2, [L_512] = cpu_dot_iq4_xs_q8_K_avx512},
                         {[L_AVX2] = cpu_dot_iq4_xs_q8_K_x4_avx2, [L_512] = cpu_dot_iq4_xs_q8_K_x4_avx512}, {0}},
    [NIB_TYPE_MXFP4] = {false, {[L_AVX2] = cpu_dot_mxfp4_q8_0_avx2, [L_512] = cpu_dot_mxfp4_q8_0_avx512},
                        {[L_AVX2] = cpu_dot_mxfp4_q8_0_x4_avx2, [L_512] = cpu_dot_mxfp4_q8_0_x4_avx512},
                        {[L_512] = cpu_dot_mxfp4_q8_0_2x4_avx512}},
    [NIB_TYPE_IQ2_XXS] = {false, {[L_AVX2] = cpu_dot_iq2_xxs_q8_K_avx2, [L_512] = cpu_dot_iq2_xxs_q8_K_avx512},
                                 {[L_AVX2] = cpu_dot_iq2_xxs_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_IQ2_XS] = {false, {[L_AVX2] = cpu_dot_iq2_xs_q8_K_avx2, [L_512] = cpu_dot_iq2_xs_q8_K_avx512},
                                {[L_AVX2] = cpu_dot_iq2_xs_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_IQ2_S] = {false, {[L_AVX2] = cpu_dot_iq2_s_q8_K_avx2}, {[L_AVX2] = cpu_dot_iq2_s_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_IQ3_XXS] = {false, {[L_AVX2] = cpu_dot_iq3_xxs_q8_K_avx2, [L_512] = cpu_dot_iq3_xxs_q8_K_avx512},
                                 {[L_AVX2] = cpu_dot_iq3_xxs_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_IQ3_S] = {false, {[L_AVX2] = cpu_dot_iq3_s_q8_K_avx2}, {[L_AVX2] = cpu_dot_iq3_s_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_IQ1_S] = {false, {[L_AVX2] = cpu_dot_iq1_s_q8_K_avx2}, {[L_AVX2] = cpu_dot_iq1_s_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_IQ1_M] = {false, {[L_AVX2] = cpu_dot_iq1_m_q8_K_avx2}, {[L_AVX2] = cpu_dot_iq1_m_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_TQ1_0] = {false, {[L_AVX2] = cpu_dot_tq1_0_q8_K_avx2}, {[L_AVX2] = cpu_dot_tq1_0_q8_K_x4_avx2}, {0}},
    [NIB_TYPE_TQ2_0] = {false, {[L_AVX2] = cpu_dot_tq2_0_q8_K_avx2, [L_512] = cpu_dot_tq2_0_q8_K_avx512},
                        {[L_AVX2] = cpu_dot_tq2_0_q8_K_x4_avx2, [L_512] = cpu_dot_tq2_0_q8_K_x4_avx512}, {0}},
};

/* Prompts decoded ahead (cpu_kernel.decode_x8): 8 rows at a time, once a
 * call, then dotted with every token, so a block is decoded once a call
 * instead of once per 4 tokens: for the formats whose blocks cost more to
 * decode than to dot. AVX-512: the lattices, IQ1_S/IQ1_M and Q3_K to
 * integers (block_i8x8) for one vpdpbusd kernel over 8 rows (with one scale
 * a 32 elements, its one-chain form); AVX2: the lattices to the x4 form's
 * decoded sub-blocks (lat_decoded). */
typedef struct cpu_decode_row {
    cpu_decode_x8_fn decode;
    cpu_packed_dot_fn dot;
    size_t bytes; /* a decoded super-block of the 8 rows */
} cpu_decode_row;
#define I8_S32(dec) {dec, cpu_dot_i8x8s32_q8_K_avx512, sizeof(block_i8x8)}
#define I8_S16(dec) {dec, cpu_dot_i8x8_q8_K_avx512, sizeof(block_i8x8)}
#define LAT8(dec) {dec, cpu_dot_lat8_q8_K_avx2, CPU_DECODED_MAX_BYTES}
NIB_STATIC_ASSERT(sizeof(block_i8x8) <= CPU_DECODED_MAX_BYTES, "block_i8x8: at most a decoded super-block's bytes");
static const cpu_decode_row decode_rows[NIB_TYPE_COUNT][NIB_SIMD_LEVELS] = {
    [NIB_TYPE_IQ2_XXS] = {[L_AVX2] = LAT8(cpu_decode_rows_iq2_xxs_avx2), [L_512] = I8_S32(cpu_decode_x8_iq2_xxs_avx2)},
    [NIB_TYPE_IQ2_XS] = {[L_AVX2] = LAT8(cpu_decode_rows_iq2_xs_avx2), [L_512] = I8_S16(cpu_decode_x8_iq2_xs_avx2)},
    [NIB_TYPE_IQ2_S] = {[L_AVX2] = LAT8(cpu_decode_rows_iq2_s_avx2), [L_512] = I8_S16(cpu_decode_x8_iq2_s_avx2)},
    [NIB_TYPE_IQ3_XXS] = {[L_AVX2] = LAT8(cpu_decode_rows_iq3_xxs_avx2), [L_512] = I8_S32(cpu_decode_x8_iq3_xxs_avx2)},
    [NIB_TYPE_IQ3_S] = {[L_AVX2] = LAT8(cpu_decode_rows_iq3_s_avx2), [L_512] = I8_S32(cpu_decode_x8_iq3_s_avx2)},
    [NIB_TYPE_IQ1_S] = {[L_512] = I8_S32(cpu_decode_x8_iq1_s_avx2)},
    [NIB_TYPE_IQ1_M] = {[L_512] = I8_S16(cpu_decode_x8_iq1_m_avx2)},
    [NIB_TYPE_Q3_K] = {[L_512] = I8_S16(cpu_decode_x8_q3_K_avx2)},
};

/* Activation quantizers by activation type and level; NULL falls back the
 * same way, down to the format table's reference quantizer. The AVX-512 level
 * reuses the AVX2 ones: quantizing X is a sliver of a matmul's time. */
static const nib_quantize_fn act_rows[NIB_TYPE_COUNT][NIB_SIMD_LEVELS] = {
    [NIB_TYPE_Q8_0] = {[L_AVX2] = cpu_quantize_q8_0_avx2},
    [NIB_TYPE_Q8_1] = {[L_AVX2] = cpu_quantize_q8_1_avx2},
    [NIB_TYPE_Q8_K] = {[L_AVX2] = cpu_quantize_q8_K_avx2},
};

/* ---- the level ------------------------------------------------------------------ */

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static nib_simd_level detected_level;
static atomic_int active_level;

#if defined(__x86_64__) || defined(__i386__)
/* CPUID leaf 1, ECX bit 29. Asked directly: clang 14's __builtin_cpu_supports
 * has no "f16c" (a compile error), and the sanitizer and fuzz builds use clang. */
static bool cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

static nib_simd_level detect(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c()))
        return NIB_SIMD_SCALAR;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
        return NIB_SIMD_AVX512_VNNI;
    return NIB_SIMD_AVX2;
#else
    return NIB_SIMD_SCALAR;
#endif
}

static void detect_init(void) {
    detected_level = detect();
    nib_simd_level l = detected_level;
    /* read once: the environment is configuration, not a hot-path switch */
    const char *env = getenv("NIB_SIMD");
    if (env) {
        if (!strcmp(env, "scalar")) l = NIB_SIMD_SCALAR;
        else if (!strcmp(env, "avx2") && l > NIB_SIMD_AVX2) l = NIB_SIMD_AVX2;
    }
    atomic_store(&active_level, (int)l);
}

nib_simd_level nib_cpu_detect_simd(void) {
    pthread_once(&detect_once, detect_init);
    return detected_level;
}

nib_simd_level nib_cpu_simd_level(void) {
    pthread_once(&detect_once, detect_init);
    return (nib_simd_level)atomic_load_explicit(&active_level, memory_order_relaxed);
}

nib_simd_level nib_cpu_set_simd_level(nib_simd_level l) {
    pthread_once(&detect_once, detect_init);
    if ((int)l < NIB_SIMD_SCALAR) l = NIB_SIMD_SCALAR;
    if (l > detected_level) l = detected_level;
    return (nib_simd_level)atomic_exchange(&active_level, (int)l);
}

const char *nib_simd_level_name(nib_simd_level l) {
    static const char *const names[NIB_SIMD_LEVELS] = {"scalar", "avx2", "avx512-vnni"};
    return (int)l >= 0 && (int)l < NIB_SIMD_LEVELS ? names[l] : "unknown";
}

/* ---- resolving a row ----------------------------------------------------------- */

nib_quantize_fn cpu_act_quantizer(nib_type act_type, nib_simd_level level) {
    const nib_type_traits *at = nib_type_traits_get((int)act_type);
    if (!at) return NULL;
    if (level > nib_cpu_detect_simd()) level = nib_cpu_detect_simd();
    for (int l = (int)level; l > NIB_SIMD_SCALAR; l--)
        if (act_rows[act_type][l]) return act_rows[act_type][l];
    return at->quantize;
}

bool cpu_kernel_get_at(nib_type wtype, nib_simd_level level, cpu_kernel *k) {
    const nib_type_traits *tt = nib_type_traits_get((int)wtype);
    if (!tt) return false;
    /* never hand out a kernel this CPU cannot run, whatever the caller asks */
    if (level > nib_cpu_detect_simd()) level = nib_cpu_detect_simd();
    if ((int)level < NIB_SIMD_SCALAR) level = NIB_SIMD_SCALAR;
    const cpu_type_row *row = &type_rows[wtype];
    memset(k, 0, sizeof *k);
    k->vec_dot = tt->vec_dot;
    for (int l = (int)level; l >= NIB_SIMD_SCALAR; l--) {
        if (row->dot[l]) {
            k->vec_dot = row->dot[l];
            k->vec_dot_x4 = row->dot_x4[l];  /* only the same level's: see cpu_internal.h */
            k->vec_dot_2x4 = row->dot_2x4[l];
            break;
        }
    }
    if (decode_rows[wtype][level].decode) {
        const cpu_decode_row *d = &decode_rows[wtype][level];
        k->decode_x8 = d->decode, k->decoded_dot = d->dot, k->decoded_bytes = d->bytes;
    }
    k->act_f32 = row->act_f32;
    if (k->act_f32) {
        k->act_type = NIB_TYPE_F32;
        k->act_block_elems = 1;
        k->act_block_bytes = sizeof(float);
        return true;
    }
    const nib_type_traits *at = nib_type_traits_get((int)tt->vec_dot_type);
    if (!at) return false;
    k->act_type = tt->vec_dot_type;
    k->quantize = cpu_act_quantizer(k->act_type, level);
    k->act_block_elems = at->block_elems;
    k->act_block_bytes = at->block_bytes;
    return k->quantize != NULL;
}

bool cpu_kernel_get(nib_type wtype, cpu_kernel *k) { return cpu_kernel_get_at(wtype, nib_cpu_simd_level(), k); }

void nib_cpu_describe_kernels(nib_type t, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "scalar");
    for (int l = NIB_SIMD_AVX2; l < NIB_SIMD_LEVELS && k < n; l++)
        if (cpu_kernel_has_level(t, (nib_simd_level)l))
            k += (size_t)snprintf(buf + k, n - k, "+%s", nib_simd_level_name((nib_simd_level)l));
    /* the levels with a packed layout (cpu/repack.h) */
    const char *sep = " (8-row packed: ";
    for (int l = NIB_SIMD_AVX2; l < NIB_SIMD_LEVELS && k < n; l++) {
        cpu_packed p;
        if (!cpu_packed_get_at(t, (nib_simd_level)l, &p)) continue;
        k += (size_t)snprintf(buf + k, n - k, "%s%s%s", sep, nib_simd_level_name((nib_simd_level)l),
                              p.min_tokens > 1 ? " prompts" : "");
        sep = ", ";
    }
    if (k < n && sep[0] == ',') k += (size_t)snprintf(buf + k, n - k, ")");
    /* the levels whose prompts are decoded ahead (cpu_kernel.decode_x8) */
    sep = " (prompts decoded ahead: ";
    for (int l = NIB_SIMD_AVX2; l < NIB_SIMD_LEVELS && k < n && (int)t >= 0 && t < NIB_TYPE_COUNT; l++) {
        if (!decode_rows[t][l].decode) continue;
        k += (size_t)snprintf(buf + k, n - k, "%s%s", sep, nib_simd_level_name((nib_simd_level)l));
        sep = ", ";
    }
    if (k < n && sep[0] == ',') snprintf(buf + k, n - k, ")");
}

bool cpu_kernel_has_level(nib_type wtype, nib_simd_level level) {
    if ((int)wtype < 0 || wtype >= NIB_TYPE_COUNT || (int)level < 0 || (int)level >= NIB_SIMD_LEVELS) return false;
    return type_rows[wtype].dot[level] != NULL;
}
