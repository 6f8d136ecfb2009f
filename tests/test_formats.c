/* The format table, walked: every row complete, quantize round trips within
 * bounds derived from the bit width, dots against float64 references.
 *
 * The bit-exact comparison with an independent implementation (gguf-py's
 * numpy code) lives in tests/oracle/; this runner checks the arithmetic
 * properties every format must have, on random data (never zeros), with
 * outputs poisoned (NaN) before each call so an unwritten element fails.
 */
#include <stdlib.h>

#include "core/fp16.h"
#include "nib.h"
#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/types.h"
#include "test.h"

#define MAX_ROW 8192

/* The formats the library must have and their sizes as ggml defines them
 * (written out here independently of blocks.h, so a wrong struct is caught). */
static const struct { nib_type type; const char *name; int64_t elems; size_t bytes; } expected[] = {
    {NIB_TYPE_F32, "F32", 1, 4},          {NIB_TYPE_F16, "F16", 1, 2},
    {NIB_TYPE_BF16, "BF16", 1, 2},        {NIB_TYPE_Q4_0, "Q4_0", 32, 18},
    {NIB_TYPE_Q4_1, "Q4_1", 32, 20},      {NIB_TYPE_Q5_0, "Q5_0", 32, 22},
    {NIB_TYPE_Q5_1, "Q5_1", 32, 24},      {NIB_TYPE_Q8_0, "Q8_0", 32, 34},
    {NIB_TYPE_Q8_1, "Q8_1", 32, 36},      {NIB_TYPE_Q2_K, "Q2_K", 256, 84},
    {NIB_TYPE_Q3_K, "Q3_K", 256, 110},    {NIB_TYPE_Q4_K, "Q4_K", 256, 144},
    {NIB_TYPE_Q5_K, "Q5_K", 256, 176},    {NIB_TYPE_Q6_K, "Q6_K", 256, 210},
    {NIB_TYPE_Q8_K, "Q8_K", 256, 292},    {NIB_TYPE_IQ2_XXS, "IQ2_XXS", 256, 66},
    {NIB_TYPE_IQ2_XS, "IQ2_XS", 256, 74}, {NIB_TYPE_IQ2_S, "IQ2_S", 256, 82},
    {NIB_TYPE_IQ3_XXS, "IQ3_XXS", 256, 98}, {NIB_TYPE_IQ3_S, "IQ3_S", 256, 110},
    {NIB_TYPE_IQ1_S, "IQ1_S", 256, 50},   {NIB_TYPE_IQ1_M, "IQ1_M", 256, 56},
    {NIB_TYPE_IQ4_NL, "IQ4_NL", 32, 18},  {NIB_TYPE_IQ4_XS, "IQ4_XS", 256, 136},
    {NIB_TYPE_TQ1_0, "TQ1_0", 256, 54},   {NIB_TYPE_TQ2_0, "TQ2_0", 256, 66},
    {NIB_TYPE_MXFP4, "MXFP4", 32, 17},
};
#define N_EXPECTED ((int)(sizeof expected / sizeof expected[0]))

static const nib_type_traits *tr(nib_type t) { return nib_type_traits_get((int)t); }

/* ---- random valid blocks ------------------------------------------------------
 * Random bytes everywhere, then the scale fields overwritten with finite,
 * non-zero values of random sign (a random fp16 bit pattern could be inf/NaN,
 * which is a legal file but not a useful test). Offsets are ggml's layouts. */

typedef struct { int16_t off[2]; } scale_fields;  /* byte offsets of fp16 scales, -1 = none */

static const scale_fields fp16_scales[NIB_TYPE_COUNT] = {
    [NIB_TYPE_Q4_0] = {{0, -1}},   [NIB_TYPE_Q4_1] = {{0, 2}},   [NIB_TYPE_Q5_0] = {{0, -1}},
    [NIB_TYPE_Q5_1] = {{0, 2}},    [NIB_TYPE_Q8_0] = {{0, -1}},  [NIB_TYPE_Q8_1] = {{0, 2}},
    [NIB_TYPE_Q2_K] = {{80, 82}},  [NIB_TYPE_Q3_K] = {{108, -1}}, [NIB_TYPE_Q4_K] = {{0, 2}},
    [NIB_TYPE_Q5_K] = {{0, 2}},    [NIB_TYPE_Q6_K] = {{208, -1}}, [NIB_TYPE_Q8_K] = {{-1, -1}},
    [NIB_TYPE_IQ2_XXS] = {{0, -1}}, [NIB_TYPE_IQ2_XS] = {{0, -1}}, [NIB_TYPE_IQ2_S] = {{0, -1}},
    [NIB_TYPE_IQ3_XXS] = {{0, -1}}, [NIB_TYPE_IQ3_S] = {{0, -1}}, [NIB_TYPE_IQ1_S] = {{0, -1}},
    [NIB_TYPE_IQ1_M] = {{-1, -1}}, [NIB_TYPE_IQ4_NL] = {{0, -1}}, [NIB_TYPE_IQ4_XS] = {{0, -1}},
    [NIB_TYPE_TQ1_0] = {{52, -1}}, [NIB_TYPE_TQ2_0] = {{64, -1}}, [NIB_TYPE_MXFP4] = {{-1, -1}},
    [NIB_TYPE_F32] = {{-1, -1}},   [NIB_TYPE_F16] = {{-1, -1}},  [NIB_TYPE_BF16] = {{-1, -1}},
};

/* |x| in [2^-12, 2^-2], random sign: products of two scales and 8-bit codes
 * over thousands of elements stay far from fp32 overflow and underflow. */
static nib_fp16 random_scale(void) {
    double mag = exp2(-12.0 + 10.0 * rng_uniform());
    return nib_f32_to_fp16((float)((rng_u64() & 1) ? -mag : mag));
}

static void random_blocks(nib_type t, uint8_t *dst, int64_t n) {
    const nib_type_traits *tt = tr(t);
    int64_t nb = n / tt->block_elems;
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = dst + b * tt->block_bytes;
        if (t == NIB_TYPE_F32) {
            float v = (float)rng_normal();
            memcpy(blk, &v, 4);
            continue;
        }
        if (t == NIB_TYPE_F16 || t == NIB_TYPE_BF16) {
            float v = (float)rng_normal();
            uint16_t h = t == NIB_TYPE_F16 ? nib_f32_to_fp16(v) : nib_f32_to_bf16(v);
            memcpy(blk, &h, 2);
            continue;
        }
        rng_bytes(blk, tt->block_bytes);
        for (int k = 0; k < 2; k++) {
            int off = fp16_scales[t].off[k];
            if (off < 0) continue;
            nib_fp16 h = random_scale();
            memcpy(blk + off, &h, 2);
        }
        if (t == NIB_TYPE_Q8_K) {  /* fp32 d, and bsums that agree with qs */
            block_q8_K *q = (block_q8_K *)blk;
            q->d = nib_fp16_to_f32(random_scale());
            for (int g = 0; g < QK_K / 16; g++) {
                int s = 0;
                for (int i = 0; i < 16; i++) s += q->qs[16 * g + i];
                q->bsums[g] = (int16_t)s;
            }
        } else if (t == NIB_TYPE_IQ1_M) {  /* the fp16 scale lives in the top nibble of each 16-bit scale word */
            nib_fp16 h = random_scale();
            block_iq1_m *q = (block_iq1_m *)blk;
            for (int k = 0; k < 4; k++)
                q->scales[2 * k + 1] = (uint8_t)((q->scales[2 * k + 1] & 0x0f) | (((h >> (4 * k)) & 0xf) << 4));
        } else if (t == NIB_TYPE_MXFP4) {  /* E8M0 exponent 2^(e-127): keep it near 1 */
            blk[0] = (uint8_t)(112 + rng_u64() % 24);
        }
    }
}

static void random_normal(float *x, int64_t n, double scale) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * rng_normal());
}

static void poison(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = NAN;
}

static int all_finite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* ---- the table itself ---------------------------------------------------------- */

static void test_table_complete(void) {
    int rows = 0;
    for (int t = 0; t < NIB_TYPE_COUNT; t++) rows += nib_type_traits_get(t) != NULL;
    CHECK(rows == N_EXPECTED, "table has %d rows, expected %d", rows, N_EXPECTED);
    for (int i = 0; i < N_EXPECTED; i++) {
        const nib_type_traits *tt = tr(expected[i].type);
        CHECK(tt != NULL, "%s has no row", expected[i].name);
        if (!tt) continue;
        CHECK(!strcmp(tt->name, expected[i].name), "type %d named %s", (int)expected[i].type, tt->name);
        CHECK(tt->block_elems == expected[i].elems, "%s block elems %lld", tt->name, (long long)tt->block_elems);
        CHECK(tt->block_bytes == expected[i].bytes, "%s block bytes %zu", tt->name, tt->block_bytes);
        CHECK(tt->dequantize != NULL, "%s has no dequantize", tt->name);
        CHECK(tt->vec_dot != NULL, "%s has no vec_dot", tt->name);
        CHECK(tt->quantize != NULL || (tt->quantize_note && tt->quantize_note[0]),
              "%s has neither a quantizer nor a note saying why", tt->name);
        /* the activation type must itself be quantizable, or the dot is unusable */
        const nib_type_traits *at = tr(tt->vec_dot_type);
        CHECK(at && at->quantize, "%s dots with %d, which has no quantizer", tt->name, (int)tt->vec_dot_type);
        CHECK(at && tt->block_elems % at->block_elems == 0 && at->block_elems <= tt->block_elems * 256,
              "%s and its activation type have incompatible blocks", tt->name);
        nib_type parsed;
        CHECK(nib_type_parse(tt->name, &parsed) && parsed == expected[i].type, "parse %s", tt->name);
    }
    /* Only the IQ1/IQ2/IQ3 formats may lack a reference quantizer. */
    static const nib_type must_quantize[] = {
        NIB_TYPE_F32, NIB_TYPE_F16, NIB_TYPE_BF16, NIB_TYPE_Q4_0, NIB_TYPE_Q4_1, NIB_TYPE_Q5_0, NIB_TYPE_Q5_1,
        NIB_TYPE_Q8_0, NIB_TYPE_Q8_1, NIB_TYPE_Q2_K, NIB_TYPE_Q3_K, NIB_TYPE_Q4_K, NIB_TYPE_Q5_K, NIB_TYPE_Q6_K,
        NIB_TYPE_Q8_K, NIB_TYPE_IQ4_NL, NIB_TYPE_IQ4_XS, NIB_TYPE_TQ1_0, NIB_TYPE_TQ2_0, NIB_TYPE_MXFP4,
    };
    for (size_t i = 0; i < sizeof must_quantize / sizeof must_quantize[0]; i++)
        CHECK(tr(must_quantize[i]) && tr(must_quantize[i])->quantize, "%s must have a quantizer",
              nib_type_name(must_quantize[i]));
    CHECK(nib_type_name((nib_type)4) == NULL, "removed type 4 must stay unnamed");
    CHECK(!nib_type_is_supported(NIB_TYPE_I32) && nib_type_is_known(NIB_TYPE_I32), "I32 known, not computed");
    CHECK(!nib_type_is_known(41) && !nib_type_is_known(-1), "out-of-range numbers are unknown");
}

static void test_api_rejects_bad_rows(void) {
    float x[64], y[64];
    uint8_t q[64];
    random_normal(x, 64, 1.0);
    rng_bytes(q, sizeof q);
    CHECK(nib_dequantize_row(NIB_TYPE_Q4_0, q, y, 33) == NIB_ERR_ARG, "row of 33 in Q4_0 must be rejected");
    CHECK(nib_quantize_row(NIB_TYPE_Q4_0, x, q, 31) == NIB_ERR_ARG, "row of 31 in Q4_0 must be rejected");
    CHECK(nib_dequantize_row((nib_type)4, q, y, 32) == NIB_ERR_UNSUPPORTED, "type 4 must be unsupported");
    CHECK(nib_dequantize_row(NIB_TYPE_I8, q, y, 32) == NIB_ERR_UNSUPPORTED, "I8 is not computed with");
    CHECK(nib_quantize_row(NIB_TYPE_IQ2_XXS, x, q, 256) == NIB_ERR_UNSUPPORTED, "IQ2_XXS has no quantizer");
    size_t b;
    CHECK(nib_row_bytes(NIB_TYPE_Q4_K, 512, &b) && b == 288, "Q4_K row of 512 is 288 bytes");
    CHECK(!nib_row_bytes(NIB_TYPE_Q4_K, 100, &b), "Q4_K row of 100 is not whole blocks");
    CHECK(!nib_row_bytes(NIB_TYPE_F32, INT64_MAX, &b) || b / 4 == (size_t)INT64_MAX, "no silent overflow");
}

/* ---- fp16 / bf16 ----------------------------------------------------------------- */

static void test_half_conversions(void) {
    /* every fp16 bit pattern survives fp16 -> fp32 -> fp16 (NaNs stay NaN) */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = nib_fp16_to_f32((nib_fp16)h);
        nib_fp16 back = nib_f32_to_fp16(f);
        int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (is_nan ? !isnan(f) || (back & 0x7c00) != 0x7c00 || !(back & 0x3ff) : back != h) bad++;
    }
    CHECK(bad == 0, "%d fp16 patterns do not round-trip", bad);
#if defined(__FLT16_MAX__)
    /* fp32 -> fp16 rounding against the compiler's IEEE conversion on random floats of every magnitude */
    bad = 0;
    for (int i = 0; i < 2000000; i++) {
        float f = nib_bits_f32((uint32_t)rng_u64());
        if (isnan(f)) continue;
        _Float16 h = (_Float16)f;
        uint16_t hb;
        memcpy(&hb, &h, 2);
        if (nib_f32_to_fp16(f) != hb) bad++;
    }
    CHECK(bad == 0, "%d floats round to fp16 differently from the compiler", bad);
#endif
    /* bf16: round to nearest even on the dropped 16 bits */
    CHECK(nib_f32_to_bf16(nib_bits_f32(0x3f808000u)) == 0x3f80, "tie rounds to even (down)");
    CHECK(nib_f32_to_bf16(nib_bits_f32(0x3f818000u)) == 0x3f82, "tie rounds to even (up)");
    CHECK(nib_f32_to_bf16(nib_bits_f32(0x3f808001u)) == 0x3f81, "above tie rounds up");
    CHECK(isnan(nib_bf16_to_f32(nib_f32_to_bf16(NAN))), "NaN stays NaN");
}

/* ---- quantize round trips ----------------------------------------------------------
 * Relative RMSE (rmse / rms of the data) on N(0,1) data. The bound per format is
 * what its step size allows: a uniform b-bit quantizer over a block's range R has
 * step R/(2^b - 1) and error ~ step/sqrt(12); blocks of 32 normal values have
 * R ~ 4.5 sigma (+-2.25), 256-element super-blocks with 16- or 32-element
 * sub-blocks about the same. So b bits give ~ 4.5/((2^b - 1) * 3.46) sigma:
 *   8 bits 0.005, 6 bits 0.021, 5 bits 0.042, 4 bits 0.087, 3 bits 0.19, 2 bits 0.43.
 * Symmetric formats (Q4_0, Q5_0, Q8_0) waste half a level; non-uniform grids
 * (IQ4_NL, MXFP4) trade the tails for the centre; ternary (TQ*) keeps only
 * {-1,0,1} x scale and loses ~half the signal on normal data. The bounds below
 * are these estimates with headroom, tightened to the measured values in the
 * comment where the estimate is loose. */
static const struct { nib_type t; double max_rel_rmse; } rt_bounds[] = {
    {NIB_TYPE_F32, 0.0},      /* exact */
    {NIB_TYPE_F16, 0.0005},   /* 11-bit mantissa: 2^-12 relative */
    {NIB_TYPE_BF16, 0.004},   /* 8-bit mantissa: 2^-9 relative */
    {NIB_TYPE_Q8_0, 0.008},   {NIB_TYPE_Q8_1, 0.008},  {NIB_TYPE_Q8_K, 0.008},
    {NIB_TYPE_Q6_K, 0.035},
    {NIB_TYPE_Q5_0, 0.07},    {NIB_TYPE_Q5_1, 0.06},   {NIB_TYPE_Q5_K, 0.06},
    {NIB_TYPE_Q4_0, 0.14},    {NIB_TYPE_Q4_1, 0.12},   {NIB_TYPE_Q4_K, 0.12},
    {NIB_TYPE_IQ4_NL, 0.12},  {NIB_TYPE_IQ4_XS, 0.12}, {NIB_TYPE_MXFP4, 0.20},
    {NIB_TYPE_Q3_K, 0.25},    {NIB_TYPE_Q2_K, 0.50},
    /* ternary: d = amax of 256 normals (~2.9 sigma), so |x| < 1.45 sigma (85% of
     * the values) become 0: ~0.8 of the signal is lost by design */
    {NIB_TYPE_TQ1_0, 0.85},   {NIB_TYPE_TQ2_0, 0.85},
};

static void test_quantize_round_trip(void) {
    enum { ROWS = 8, N = 4096 };
    static float x[ROWS * N], y[ROWS * N];
    static uint8_t q[ROWS * N * 4 + 64];
    rng_seed(11);
    for (size_t k = 0; k < sizeof rt_bounds / sizeof rt_bounds[0]; k++) {
        nib_type t = rt_bounds[k].t;
        const nib_type_traits *tt = tr(t);
        if (!tt || !tt->quantize) {
            CHECK(0, "%s: no quantizer", nib_type_name(t));
            continue;
        }
        random_normal(x, ROWS * N, 1.0);
        double se = 0, ss = 0;
        for (int r = 0; r < ROWS; r++) {
            /* rows quantized one by one, as a matrix is */
            poison(y + r * N, N);
            CHECK(nib_quantize_row(t, x + r * N, q + (size_t)r * (N / tt->block_elems) * tt->block_bytes, N) == NIB_OK,
                  "%s quantize", tt->name);
        }
        for (int r = 0; r < ROWS; r++)
            nib_dequantize_row(t, q + (size_t)r * (N / tt->block_elems) * tt->block_bytes, y + r * N, N);
        CHECK(all_finite(y, ROWS * N), "%s: dequantize left non-finite values", tt->name);
        for (int i = 0; i < ROWS * N; i++) {
            se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
            ss += (double)x[i] * x[i];
        }
        double rel = sqrt(se / ss);
        printf("      %-7s rel. RMSE %.5f (bound %.4f)\n", tt->name, rel, rt_bounds[k].max_rel_rmse);
        CHECK(rel <= rt_bounds[k].max_rel_rmse, "%s: relative RMSE %.5f above %.4f", tt->name, rel,
              rt_bounds[k].max_rel_rmse);
    }
}

/* ---- dots --------------------------------------------------------------------------- */

/* Quantize x to t's activation format; returns the activation traits. */
static const nib_type_traits *quantize_activation(nib_type t, const float *x, void *a, int64_t n) {
    const nib_type_traits *at = tr(tr(t)->vec_dot_type);
    at->quantize(x, a, n);
    return at;
}

/* vec_dot against float64 sum of dequantized weight x dequantized activation.
 * Integer block sums are exact, so the only error is fp32 rounding where blocks
 * and sub-block scales are combined: bound it by 2^-22 * (number of terms) *
 * sum |w a|, with terms = sub-blocks per block x blocks (16 for K-quants).
 * Q8_1's s = d * sum(q) is computed with the unrounded d and stored in fp16,
 * while its dequantized values use d rounded to fp16: two roundings of 2^-11
 * each, so |s| * 2^-10 * |m_w| per block; the formats that dot with Q8_1 (Q4_1, Q5_1) keep m_w as the second
 * fp16 of their block. */
static double dot_tolerance(nib_type t, const void *wq, const float *w, const float *a, const void *aq, int64_t n) {
    const nib_type_traits *tt = tr(t);
    double sum_abs = 0;
    for (int64_t i = 0; i < n; i++) sum_abs += fabs((double)w[i] * a[i]);
    double terms = (double)(n / tt->block_elems) * (tt->block_elems >= 256 ? 16 : 2) + 8;
    if (tt->block_elems == 1) terms = (double)n;  /* plain floats: one fp32 add per element */
    double tol = sum_abs * terms * ldexp(1.0, -23) + 1e-30;
    if (tt->vec_dot_type == NIB_TYPE_Q8_1) {
        const block_q8_1 *b = aq;
        for (int64_t k = 0; k < n / QK8_1; k++) {
            nib_fp16 m;
            memcpy(&m, (const uint8_t *)wq + k * tt->block_bytes + 2, 2);
            tol += fabs(nib_fp16_to_f32(b[k].s)) * ldexp(1.0, -10) * fabs(nib_fp16_to_f32(m));
        }
    }
    return tol;
}

static void check_vec_dot(nib_type t, const uint8_t *wq, int64_t n, const float *x, int *bad, double *worst) {
    static uint8_t aq[MAX_ROW * 4];  /* F32 activations (float weight types) take 4 bytes each */
    static float w[MAX_ROW], a[MAX_ROW];
    const nib_type_traits *at = quantize_activation(t, x, aq, n);
    poison(w, n);
    poison(a, n);
    tr(t)->dequantize(wq, w, n);
    at->dequantize(aq, a, n);
    double ref = 0;
    for (int64_t i = 0; i < n; i++) ref += (double)w[i] * a[i];
    float got = NAN;
    CHECK(nib_vec_dot(t, n, wq, aq, &got) == NIB_OK, "%s vec_dot call", tr(t)->name);
    double tol = dot_tolerance(t, wq, w, a, aq, n);
    double err = fabs((double)got - ref);
    if (!(err <= tol)) {
        if (*bad < 3)
            fprintf(stderr, "    %s n=%lld: vec_dot %.9g, float64 %.9g, error %.3g > tolerance %.3g\n", tr(t)->name,
                    (long long)n, (double)got, ref, err, tol);
        (*bad)++;
    }
    if (tol > 0 && err / tol > *worst) *worst = err / tol;
}

/* Single blocks first: there the fp32 part is tiny, so any wrong integer
 * product (even off by one code) is far outside the tolerance. Random valid
 * blocks reach every code, including the extremes. */
static void test_vec_dot_single_blocks(void) {
    rng_seed(21);
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        const nib_type_traits *tt = nib_type_traits_get(t);
        if (!tt) continue;
        int64_t n = tt->block_elems;
        if (n == 1) n = 256;  /* plain floats: a row of 256 */
        int bad = 0;
        double worst = 0;
        for (int rep = 0; rep < 2000; rep++) {
            uint8_t wq[2048];
            float x[QK_K];
            random_blocks((nib_type)t, wq, n);
            random_normal(x, n, 1.0);
            check_vec_dot((nib_type)t, wq, n, x, &bad, &worst);
        }
        CHECK(bad == 0, "%s: %d of 2000 single-block dots outside tolerance", tt->name, bad);
        printf("      %-7s 2000 blocks, worst error/tolerance %.3f\n", tt->name, worst);
    }
}

/* Rows of many blocks and a small matrix-vector product, against the float
 * input (not the quantized one): the extra error is the activation's own
 * rounding, at most d_a/2 per element, so |err| <= sum_b (d_a,b / 2) sum |w|;
 * Q8_0/Q8_1 store d in fp16 after rounding with the unrounded d, which adds up
 * to 127 * 2^-11 * d per element. */
static void test_vec_dot_rows_and_matvec(void) {
    rng_seed(31);
    static const int64_t lengths[] = {256, 512, 1280, 4096, 8192};
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        const nib_type_traits *tt = nib_type_traits_get(t);
        if (!tt) continue;
        int bad = 0;
        double worst = 0;
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            int64_t n = lengths[li];
            enum { ROWS = 5 };
            static uint8_t wq[ROWS][MAX_ROW * 4];
            static float x[MAX_ROW], w[MAX_ROW], a[MAX_ROW];
            static uint8_t aq[MAX_ROW * 4];  /* F32 activations take 4 bytes each */
            random_normal(x, n, 1.0);
            for (int r = 0; r < ROWS; r++) {
                if (tt->quantize && (r & 1)) {  /* alternate quantized real data and random valid blocks */
                    static float src[MAX_ROW];
                    random_normal(src, n, 0.05);
                    tt->quantize(src, wq[r], n);
                } else {
                    random_blocks((nib_type)t, wq[r], n);
                }
                check_vec_dot((nib_type)t, wq[r], n, x, &bad, &worst);
                /* against the unquantized activation */
                const nib_type_traits *at = quantize_activation((nib_type)t, x, aq, n);
                tt->dequantize(wq[r], w, n);
                at->dequantize(aq, a, n);
                double ref = 0, bound = dot_tolerance((nib_type)t, wq[r], w, a, aq, n);
                for (int64_t i = 0; i < n; i++) ref += (double)w[i] * x[i];
                for (int64_t b0 = 0; b0 < n; b0 += at->block_elems) {
                    double amax = 0, wsum = 0;  /* activation step: amax/127 for every Q8 format */
                    for (int64_t i = b0; i < b0 + at->block_elems; i++) {
                        amax = fmax(amax, fabs(x[i]));
                        wsum += fabs(w[i]);
                    }
                    bound += (at->block_elems == 1 ? fabs(x[b0]) * ldexp(1.0, -8) : amax / 127.0 * (0.5 + 127.0 * ldexp(1.0, -11))) * wsum;
                }
                float got;
                nib_vec_dot((nib_type)t, n, wq[r], aq, &got);
                if (!(fabs(got - ref) <= bound)) {
                    if (bad < 3)
                        fprintf(stderr, "    %s n=%lld row %d: %.9g vs float input %.9g (bound %.3g)\n", tt->name,
                                (long long)n, r, (double)got, ref, bound);
                    bad++;
                }
            }
        }
        CHECK(bad == 0, "%s: %d row dots outside tolerance", tt->name, bad);
    }
}

/* nib_dot_f32: the float-activation dot, fp32 accumulation per block. */
static void test_dot_f32(void) {
    rng_seed(41);
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        const nib_type_traits *tt = nib_type_traits_get(t);
        if (!tt) continue;
        int bad = 0;
        for (int rep = 0; rep < 50; rep++) {
            int64_t n = tt->block_elems * (1 + (int64_t)(rng_u64() % (tt->block_elems == 1 ? 2048 : 2048 / tt->block_elems + 1)));
            if (n > MAX_ROW) n = MAX_ROW - MAX_ROW % tt->block_elems;
            static uint8_t wq[MAX_ROW * 4];
            static float x[MAX_ROW], w[MAX_ROW];
            random_blocks((nib_type)t, wq, n);
            random_normal(x, n, 1.0);
            tt->dequantize(wq, w, n);
            double ref = 0, sum_abs = 0;
            for (int64_t i = 0; i < n; i++) {
                ref += (double)w[i] * x[i];
                sum_abs += fabs((double)w[i] * x[i]);
            }
            float got = NAN;
            CHECK(nib_dot_f32((nib_type)t, n, wq, x, &got) == NIB_OK, "dot_f32 call");
            /* n fp32 multiply-adds: each rounding <= 2^-24 relative of a partial sum <= sum_abs */
            double tol = sum_abs * (double)(n + 2) * ldexp(1.0, -24);
            if (!(fabs(got - ref) <= tol)) bad++;
        }
        CHECK(bad == 0, "%s: %d float dots outside tolerance", tt->name, bad);
    }
}

/* Every dequantizer writes every element, and only finite values from finite scales. */
static void test_dequantize_writes_everything(void) {
    rng_seed(51);
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        const nib_type_traits *tt = nib_type_traits_get(t);
        if (!tt) continue;
        int64_t n = tt->block_elems == 1 ? 512 : tt->block_elems * 7;
        static uint8_t q[MAX_ROW * 4];
        static float y[MAX_ROW + 1];
        random_blocks((nib_type)t, q, n);
        poison(y, n + 1);
        y[n] = 12345.0f;  /* a sentinel just past the row */
        tt->dequantize(q, y, n);
        CHECK(all_finite(y, n), "%s: dequantize left NaN (unwritten) elements", tt->name);
        CHECK(y[n] == 12345.0f, "%s: dequantize wrote past the row", tt->name);
        int nonzero = 0;
        for (int64_t i = 0; i < n; i++) nonzero += y[i] != 0.0f;
        CHECK(nonzero > n / 4, "%s: only %d of %lld values non-zero from random blocks", tt->name, nonzero,
              (long long)n);
    }
}

/* NaN, inf and denormals in a row to quantize (NaN weights are legal in a
 * file, and reach the activation quantizers): Q8_0 and Q8_1 once cast NaN and
 * inf to int8, which is undefined (found by fuzzing under UBSan; a denormal
 * block maximum makes 1/d infinite). NaN codes are now -128, what the AVX2
 * twin's conversion gives; finite values in the block are unaffected. */
static void test_quantize_nan_rows(void) {
    static const nib_type types[] = {NIB_TYPE_Q8_0, NIB_TYPE_Q8_1, NIB_TYPE_Q4_0, NIB_TYPE_Q4_1, NIB_TYPE_Q5_0,
                                     NIB_TYPE_Q5_1};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        float x[32], y[32];
        for (int i = 0; i < 32; i++) x[i] = (float)(i - 16) / 8.0f;
        x[3] = NAN;
        uint8_t q[64];
        bool q8 = types[k] == NIB_TYPE_Q8_0 || types[k] == NIB_TYPE_Q8_1;
        CHECK(nib_quantize_row(types[k], x, q, 32) == NIB_OK, "%s: quantize", nib_type_name(types[k]));
        const int8_t *qs = (const int8_t *)(q + (types[k] == NIB_TYPE_Q8_0 ? 2 : 4));
        CHECK(!q8 || qs[3] == INT8_MIN, "%s: NaN quantized to %d, expected -128", nib_type_name(types[k]), qs[3]);
        nib_dequantize_row(types[k], q, y, 32);
        CHECK(!q8 || (fabsf(y[0] - x[0]) < 0.02f && fabsf(y[31] - x[31]) < 0.02f), "%s: the finite values of the block",
              nib_type_name(types[k]));
        /* a denormal maximum: 1/d is infinite */
        for (int i = 0; i < 32; i++) x[i] = i == 5 ? 1e-44f : 0.0f;
        CHECK(nib_quantize_row(types[k], x, q, 32) == NIB_OK, "%s: a denormal block", nib_type_name(types[k]));
        for (int i = 0; i < 32; i++) x[i] = NAN;
        CHECK(nib_quantize_row(types[k], x, q, 32) == NIB_OK, "%s: an all-NaN block", nib_type_name(types[k]));
        x[0] = INFINITY;
        CHECK(nib_quantize_row(types[k], x, q, 32) == NIB_OK, "%s: inf and NaN", nib_type_name(types[k]));
    }
}

/* nib_tq1_0_to_tq2_0 (the CUDA backend's TQ1_0 on the device): random TQ1_0
 * blocks (every byte value, so every trit pattern and the bytes no quantizer
 * writes) must become TQ2_0 blocks that dequantize to the same floats bit
 * for bit and dot with a random Q8_K row to the same float (the integer sum
 * is the same, scaled in the same order). The output is poisoned first. */
static void test_tq1_0_to_tq2_0(void) {
    rng_seed(61);
    enum { NB = 64 };
    static uint8_t q1[NB * 54], q2[NB * 66 + 1], aq[NB * 292];
    static float x[NB * QK_K], y1[NB * QK_K], y2[NB * QK_K];
    random_blocks(NIB_TYPE_TQ1_0, q1, NB * QK_K);
    for (int b = 0; b < NB; b++) q1[54 * b + (b % 52)] = (uint8_t)(255 - b); /* the top byte values too */
    memset(q2, 0xA5, sizeof q2);
    nib_tq1_0_to_tq2_0(q1, q2, NB);
    CHECK(q2[NB * 66] == 0xA5, "the conversion wrote past its last block");
    poison(y1, NB * QK_K);
    poison(y2, NB * QK_K);
    tr(NIB_TYPE_TQ1_0)->dequantize(q1, y1, NB * QK_K);
    tr(NIB_TYPE_TQ2_0)->dequantize(q2, y2, NB * QK_K);
    int diff = 0, nonzero = 0;
    for (int i = 0; i < NB * QK_K; i++) diff += memcmp(&y1[i], &y2[i], 4) != 0, nonzero += y1[i] != 0.0f;
    CHECK(diff == 0, "%d of %d values differ after the conversion", diff, NB * QK_K);
    CHECK(nonzero > NB * QK_K / 2, "only %d non-zero values: the random blocks are not random", nonzero);
    random_normal(x, NB * QK_K, 1.0);
    CHECK(nib_quantize_row(NIB_TYPE_Q8_K, x, aq, NB * QK_K) == NIB_OK, "Q8_K quantize");
    float d1 = NAN, d2 = NAN;
    CHECK(nib_vec_dot(NIB_TYPE_TQ1_0, NB * QK_K, q1, aq, &d1) == NIB_OK, "TQ1_0 vec_dot");
    CHECK(nib_vec_dot(NIB_TYPE_TQ2_0, NB * QK_K, q2, aq, &d2) == NIB_OK, "TQ2_0 vec_dot");
    CHECK(d1 == d2 && isfinite(d1), "dots differ: TQ1_0 %.9g, converted %.9g", (double)d1, (double)d2);
}

int main(void) {
    RUN(test_table_complete);
    RUN(test_api_rejects_bad_rows);
    RUN(test_half_conversions);
    RUN(test_dequantize_writes_everything);
    RUN(test_quantize_round_trip);
    RUN(test_vec_dot_single_blocks);
    RUN(test_vec_dot_rows_and_matvec);
    RUN(test_dot_f32);
    RUN(test_quantize_nan_rows);
    RUN(test_tq1_0_to_tq2_0);
    return test_summary();
}
