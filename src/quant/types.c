/* The format table. To add a format: define its block in blocks.h with a size
 * assert, write its dequantize / quantize / vec_dot in a q_*.c file, declare
 * them in formats.h, and add one row here. tests/test_formats.c walks this
 * table and fails on a row with a missing piece. */
#include "quant/types.h"

#include "core/fp16.h"
#include "quant/formats.h"

#define NO_QUANT_IMATRIX "needs an importance matrix and grid search; not implemented yet"

#define ROW(T, NAME, BLK, BYTES, fmt, dot_type, dot_fn)                      \
    [NIB_TYPE_##T] = {NAME, BLK, BYTES, nib_dequantize_##fmt, nib_quantize_##fmt, NULL, \
                      dot_fn, NIB_TYPE_##dot_type}
#define ROW_NOQ(T, NAME, BLK, BYTES, fmt, dot_type, dot_fn)                  \
    [NIB_TYPE_##T] = {NAME, BLK, BYTES, nib_dequantize_##fmt, NULL, NO_QUANT_IMATRIX, \
                      dot_fn, NIB_TYPE_##dot_type}

static const nib_type_traits type_table[NIB_TYPE_COUNT] = {
    /*   type     name       elems bytes                  format   dot with  vec_dot */
    ROW(F32,     "F32",      1,    4,                     f32,     F32,  nib_vec_dot_f32_f32),
    ROW(F16,     "F16",      1,    2,                     f16,     F16,  nib_vec_dot_f16_f16),
    ROW(BF16,    "BF16",     1,    2,                     bf16,    BF16, nib_vec_dot_bf16_bf16),
    ROW(Q4_0,    "Q4_0",     QK4_0, sizeof(block_q4_0),   q4_0,    Q8_0, nib_vec_dot_q4_0_q8_0),
    ROW(Q4_1,    "Q4_1",     QK4_1, sizeof(block_q4_1),   q4_1,    Q8_1, nib_vec_dot_q4_1_q8_1),
    ROW(Q5_0,    "Q5_0",     QK5_0, sizeof(block_q5_0),   q5_0,    Q8_0, nib_vec_dot_q5_0_q8_0),
    ROW(Q5_1,    "Q5_1",     QK5_1, sizeof(block_q5_1),   q5_1,    Q8_1, nib_vec_dot_q5_1_q8_1),
    ROW(Q8_0,    "Q8_0",     QK8_0, sizeof(block_q8_0),   q8_0,    Q8_0, nib_vec_dot_q8_0_q8_0),
    /* Q8_1 and Q8_K exist as activation formats; ggml has no weight kernel for
     * them. Ours dot each with itself: an exact integer sum per block. */
    ROW(Q8_1,    "Q8_1",     QK8_1, sizeof(block_q8_1),   q8_1,    Q8_1, nib_vec_dot_q8_1_q8_1),
    ROW(Q2_K,    "Q2_K",     QK_K, sizeof(block_q2_K),    q2_K,    Q8_K, nib_vec_dot_q2_K_q8_K),
    ROW(Q3_K,    "Q3_K",     QK_K, sizeof(block_q3_K),    q3_K,    Q8_K, nib_vec_dot_q3_K_q8_K),
    ROW(Q4_K,    "Q4_K",     QK_K, sizeof(block_q4_K),    q4_K,    Q8_K, nib_vec_dot_q4_K_q8_K),
    ROW(Q5_K,    "Q5_K",     QK_K, sizeof(block_q5_K),    q5_K,    Q8_K, nib_vec_dot_q5_K_q8_K),
    ROW(Q6_K,    "Q6_K",     QK_K, sizeof(block_q6_K),    q6_K,    Q8_K, nib_vec_dot_q6_K_q8_K),
    ROW(Q8_K,    "Q8_K",     QK_K, sizeof(block_q8_K),    q8_K,    Q8_K, nib_vec_dot_q8_K_q8_K),
    ROW_NOQ(IQ2_XXS, "IQ2_XXS", QK_K, sizeof(block_iq2_xxs), iq2_xxs, Q8_K, nib_vec_dot_iq2_xxs_q8_K),
    ROW_NOQ(IQ2_XS,  "IQ2_XS",  QK_K, sizeof(block_iq2_xs),  iq2_xs,  Q8_K, nib_vec_dot_iq2_xs_q8_K),
    ROW_NOQ(IQ2_S,   "IQ2_S",   QK_K, sizeof(block_iq2_s),   iq2_s,   Q8_K, nib_vec_dot_iq2_s_q8_K),
    ROW_NOQ(IQ3_XXS, "IQ3_XXS", QK_K, sizeof(block_iq3_xxs), iq3_xxs, Q8_K, nib_vec_dot_iq3_xxs_q8_K),
    ROW_NOQ(IQ3_S,   "IQ3_S",   QK_K, sizeof(block_iq3_s),   iq3_s,   Q8_K, nib_vec_dot_iq3_s_q8_K),
    ROW_NOQ(IQ1_S,   "IQ1_S",   QK_K, sizeof(block_iq1_s),   iq1_s,   Q8_K, nib_vec_dot_iq1_s_q8_K),
    ROW_NOQ(IQ1_M,   "IQ1_M",   QK_K, sizeof(block_iq1_m),   iq1_m,   Q8_K, nib_vec_dot_iq1_m_q8_K),
    ROW(IQ4_NL,  "IQ4_NL",   QK4_NL, sizeof(block_iq4_nl), iq4_nl, Q8_0, nib_vec_dot_iq4_nl_q8_0),
    ROW(IQ4_XS,  "IQ4_XS",   QK_K, sizeof(block_iq4_xs),  iq4_xs,  Q8_K, nib_vec_dot_iq4_xs_q8_K),
    ROW(TQ1_0,   "TQ1_0",    QK_K, sizeof(block_tq1_0),   tq1_0,   Q8_K, nib_vec_dot_tq1_0_q8_K),
    ROW(TQ2_0,   "TQ2_0",    QK_K, sizeof(block_tq2_0),   tq2_0,   Q8_K, nib_vec_dot_tq2_0_q8_K),
    ROW(MXFP4,   "MXFP4",    QK_MXFP4, sizeof(block_mxfp4), mxfp4, Q8_0, nib_vec_dot_mxfp4_q8_0),
};

/* Names of the integer / f64 types the reader knows but nothing computes with. */
static const char *const plain_names[NIB_TYPE_COUNT] = {
    [NIB_TYPE_I8] = "I8", [NIB_TYPE_I16] = "I16", [NIB_TYPE_I32] = "I32",
    [NIB_TYPE_I64] = "I64", [NIB_TYPE_F64] = "F64",
};
static const size_t plain_bytes[NIB_TYPE_COUNT] = {
    [NIB_TYPE_I8] = 1, [NIB_TYPE_I16] = 2, [NIB_TYPE_I32] = 4, [NIB_TYPE_I64] = 8, [NIB_TYPE_F64] = 8,
};

const nib_type_traits *nib_type_traits_get(int t) {
    if (t < 0 || t >= NIB_TYPE_COUNT || type_table[t].name == NULL) return NULL;
    return &type_table[t];
}

bool nib_type_is_supported(int t) { return nib_type_traits_get(t) != NULL; }

bool nib_type_is_known(int t) {
    return nib_type_is_supported(t) || (t >= 0 && t < NIB_TYPE_COUNT && plain_names[t] != NULL);
}

const char *nib_type_name(nib_type t) {
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    if (tt) return tt->name;
    if ((int)t >= 0 && t < NIB_TYPE_COUNT) return plain_names[t];
    return NULL;
}

int64_t nib_type_block_elems(nib_type t) {
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    if (tt) return tt->block_elems;
    return nib_type_is_known((int)t) ? 1 : 0;
}

size_t nib_type_block_bytes(nib_type t) {
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    if (tt) return tt->block_bytes;
    return nib_type_is_known((int)t) ? plain_bytes[t] : 0;
}

bool nib_type_parse(const char *name, nib_type *out) {
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        const char *tn = nib_type_name((nib_type)t);
        if (!tn) continue;
        const char *a = tn, *b = name;
        while (*a && *b) {
            char cb = (*b >= 'a' && *b <= 'z') ? (char)(*b - 32) : *b;
            char ca = (*a >= 'a' && *a <= 'z') ? (char)(*a - 32) : *a;
            if (ca != cb) break;
            a++, b++;
        }
        if (!*a && !*b) { *out = (nib_type)t; return true; }
    }
    return false;
}

bool nib_row_bytes(nib_type t, int64_t n, size_t *bytes) {
    int64_t be = nib_type_block_elems(t);
    size_t bb = nib_type_block_bytes(t);
    if (be <= 0 || n < 0 || n % be != 0) return false;
    uint64_t nb = (uint64_t)(n / be);
    if (bb != 0 && nb > SIZE_MAX / bb) return false;
    *bytes = (size_t)nb * bb;
    return true;
}

static nib_status check_row(const nib_type_traits *tt, int64_t n) {
    if (!tt) return NIB_ERR_UNSUPPORTED;
    if (n < 0 || n % tt->block_elems != 0) return NIB_ERR_ARG;
    return NIB_OK;
}

nib_status nib_dequantize_row(nib_type t, const void *src, float *dst, int64_t n) {
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    nib_status s = check_row(tt, n);
    if (s != NIB_OK) return s;
    tt->dequantize(src, dst, n);
    return NIB_OK;
}

nib_status nib_quantize_row(nib_type t, const float *src, void *dst, int64_t n) {
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    nib_status s = check_row(tt, n);
    if (s != NIB_OK) return s;
    if (!tt->quantize) return NIB_ERR_UNSUPPORTED;
    tt->quantize(src, dst, n);
    return NIB_OK;
}

nib_type nib_vec_dot_type(nib_type t) {
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    return tt ? tt->vec_dot_type : NIB_TYPE_COUNT;
}

nib_status nib_vec_dot(nib_type t, int64_t n, const void *w, const void *a, float *out) {
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    nib_status s = check_row(tt, n);
    if (s != NIB_OK) return s;
    /* the activation row must also be whole blocks of its own type */
    const nib_type_traits *at = nib_type_traits_get((int)tt->vec_dot_type);
    if ((s = check_row(at, n)) != NIB_OK) return s;
    *out = tt->vec_dot(n, w, a);
    return NIB_OK;
}

nib_status nib_dot_f32(nib_type t, int64_t n, const void *w, const float *x, float *out) {
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    nib_status s = check_row(tt, n);
    if (s != NIB_OK) return s;
    /* one block at a time through a stack buffer: no allocation, any n */
    float buf[QK_K];
    const uint8_t *p = (const uint8_t *)w;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i += tt->block_elems, p += tt->block_bytes) {
        tt->dequantize(p, buf, tt->block_elems);
        float part = 0.0f;
        for (int64_t j = 0; j < tt->block_elems; j++) part += buf[j] * x[i + j];
        sum += part;
    }
    *out = sum;
    return NIB_OK;
}

float nib_half_to_float(uint16_t h) { return nib_fp16_to_f32(h); }
uint16_t nib_float_to_half(float f) { return nib_f32_to_fp16(f); }
float nib_bf16_to_float(uint16_t h) { return nib_bf16_to_f32(h); }
uint16_t nib_float_to_bf16(float f) { return nib_f32_to_bf16(f); }
