/* The CPU backend: thread pool, activation quantizers, SIMD dot kernels and
 * matrix products, each against its reference.
 *
 *  - Thread pool: every index runs exactly once per job, over many jobs,
 *    including jobs that find the workers asleep.
 *  - Activation quantizers (Q8_0, Q8_1, Q8_K): SIMD output bit-identical to the
 *    reference quantizers, on normal data, exact rounding ties and sign ties.
 *  - Dot kernels: every kernel of every SIMD level this CPU has, against the
 *    format table's scalar vec_dot on random valid blocks and on quantized
 *    normal data (never zeros). Levels the CPU lacks are skipped with a reason.
 *  - Matmul: every format of the format table, several shapes (n_out not a
 *    multiple of the chunk, n_tok 1, 3, 17), 1 and several threads, at the
 *    scalar and the best level, against a float64 reference; outputs poisoned
 *    with NaN before each call so an unwritten element fails.
 *
 * Tolerances. The integer part of every quantized dot is exact in both the
 * kernel and the reference, so they differ only in fp32 rounding: each adds
 * the same block terms (d_w * d_a * sumi, and for the formats with an offset
 * the minimum terms m * sum(a)) in a different order and with or without FMA.
 * A term costs at most 4 roundings to form (fp16 scale products, the int to
 * float conversion, the product), and a sum of N terms in any order is off by
 * at most (N - 1) u sum|term| (u = 2^-24, first order). So
 *     |kernel - exact|, |reference - exact| <= (N + 4) u M
 * where N is the longest chain of adds (at most 2 per block, plus 16 for the
 * lane and horizontal sums) and M = sum over terms of |term| <=
 * sum_i (|d q_i| + |min_i|) |a_i|, computed from dequantized values (for the
 * offset formats the minimum part is found by dequantizing the block with its
 * scale d set to 0). Hence
 *     |kernel - reference| <= 2 (2 n_blocks + 20) u M, with a little slack.
 * The float64 reference of the matmul test sees one implementation's error,
 * plus, for Q8_1 activations, the rounding of s = d sum(q) to fp16 against
 * the values dequantized with d rounded to fp16: up to 2^-10 |m| sum|a| per
 * block (the reference format's own inexactness, not the kernel's).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/fp16.h"
#include "cpu/cpu.h"
#include "cpu/cpu_internal.h"
#include "cpu/repack.h"
#include "nib.h"
#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/types.h"
#include "test.h"

#define U32 (1.0 / 16777216.0) /* fp32 unit roundoff, 2^-24 */

static const nib_type_traits *tr(nib_type t) { return nib_type_traits_get((int)t); }

static size_t row_bytes(nib_type t, int64_t n) {
    size_t b = 0;
    nib_row_bytes(t, n, &b);
    return b;
}

static void poison(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = NAN;
}

static void random_normal(float *x, int64_t n, double scale) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * rng_normal());
}

/* ---- random valid blocks ---------------------------------------------------------
 * Random bytes, then every fp16 scale overwritten with a finite non-zero value
 * of random sign (byte offsets are ggml's layouts), as tests/test_formats.c. */

static const int16_t fp16_scale_off[NIB_TYPE_COUNT][2] = {
    [NIB_TYPE_Q4_0] = {0, -1},    [NIB_TYPE_Q4_1] = {0, 2},     [NIB_TYPE_Q5_0] = {0, -1},
    [NIB_TYPE_Q5_1] = {0, 2},     [NIB_TYPE_Q8_0] = {0, -1},    [NIB_TYPE_Q8_1] = {0, 2},
    [NIB_TYPE_Q2_K] = {80, 82},   [NIB_TYPE_Q3_K] = {108, -1},  [NIB_TYPE_Q4_K] = {0, 2},
    [NIB_TYPE_Q5_K] = {0, 2},     [NIB_TYPE_Q6_K] = {208, -1},  [NIB_TYPE_Q8_K] = {-1, -1},
    [NIB_TYPE_IQ2_XXS] = {0, -1}, [NIB_TYPE_IQ2_XS] = {0, -1},  [NIB_TYPE_IQ2_S] = {0, -1},
    [NIB_TYPE_IQ3_XXS] = {0, -1}, [NIB_TYPE_IQ3_S] = {0, -1},   [NIB_TYPE_IQ1_S] = {0, -1},
    [NIB_TYPE_IQ1_M] = {-1, -1},  [NIB_TYPE_IQ4_NL] = {0, -1},  [NIB_TYPE_IQ4_XS] = {0, -1},
    [NIB_TYPE_TQ1_0] = {52, -1},  [NIB_TYPE_TQ2_0] = {64, -1},  [NIB_TYPE_MXFP4] = {-1, -1},
    [NIB_TYPE_F32] = {-1, -1},    [NIB_TYPE_F16] = {-1, -1},    [NIB_TYPE_BF16] = {-1, -1},
};

/* Offset of the scale d in the formats with a minimum (x = d*q + min): with
 * d zeroed, dequantizing gives the minimum part alone. -1: no minimum. */
static int affine_d_offset(nib_type t) {
    switch (t) {
    case NIB_TYPE_Q4_1: case NIB_TYPE_Q5_1: case NIB_TYPE_Q4_K: case NIB_TYPE_Q5_K: return 0;
    case NIB_TYPE_Q2_K: return 80;
    default: return -1;
    }
}

/* |x| in [2^-12, 2^-2], random sign */
static nib_fp16 random_scale(void) {
    double mag = exp2(-12.0 + 10.0 * rng_uniform());
    return nib_f32_to_fp16((float)((rng_u64() & 1) ? -mag : mag));
}

/* A block's scales made finite and non-zero whatever its other bytes: every
 * fp16 scale a random value of random sign, IQ1_M's fp16 scale (the top
 * nibbles of its scale words) likewise, MXFP4's E8M0 exponent near 1. */
static void set_block_scales(nib_type t, uint8_t *blk) {
    for (int k = 0; k < 2; k++) {
        if (fp16_scale_off[t][k] < 0) continue;
        nib_fp16 h = random_scale();
        memcpy(blk + fp16_scale_off[t][k], &h, 2);
    }
    if (t == NIB_TYPE_IQ1_M) {
        nib_fp16 h = random_scale();
        block_iq1_m *q = (block_iq1_m *)blk;
        for (int k = 0; k < 4; k++)
            q->scales[2 * k + 1] = (uint8_t)((q->scales[2 * k + 1] & 0x0f) | (((h >> (4 * k)) & 0xf) << 4));
    } else if (t == NIB_TYPE_MXFP4) {
        blk[0] = (uint8_t)(112 + rng_u64() % 24);
    }
}

static void random_blocks(nib_type t, uint8_t *dst, int64_t n) {
    const nib_type_traits *tt = tr(t);
    for (int64_t b = 0; b < n / tt->block_elems; b++) {
        uint8_t *blk = dst + b * tt->block_bytes;
        if (tt->block_elems == 1) { /* plain floats */
            float v = (float)rng_normal();
            if (t == NIB_TYPE_F32) memcpy(blk, &v, 4);
            else {
                uint16_t h = t == NIB_TYPE_F16 ? nib_f32_to_fp16(v) : nib_f32_to_bf16(v);
                memcpy(blk, &h, 2);
            }
            continue;
        }
        rng_bytes(blk, tt->block_bytes);
        set_block_scales(t, blk);
        if (t == NIB_TYPE_Q8_K) {
            block_q8_K *q = (block_q8_K *)blk;
            q->d = nib_fp16_to_f32(random_scale());
            for (int g = 0; g < QK_K / 16; g++) {
                int s = 0;
                for (int i = 0; i < 16; i++) s += q->qs[16 * g + i];
                q->bsums[g] = (int16_t)s;
            }
        }
    }
}

/* A weight row: random valid blocks, or (odd calls) quantized normal data
 * with a random per-row scale, where the format has a quantizer. */
static void weight_row(nib_type t, uint8_t *dst, int64_t n, int quantized) {
    const nib_type_traits *tt = tr(t);
    if (quantized && tt->quantize) {
        static float src[16384];
        random_normal(src, n, exp2(-6.0 + 6.0 * rng_uniform()));
        tt->quantize(src, dst, n);
    } else {
        random_blocks(t, dst, n);
    }
}

/* Activations: normal data with a random scale and a few outliers (as real
 * hidden states have), quantized by the reference quantizer. */
static void activation_floats(float *x, int64_t n) {
    random_normal(x, n, exp2(-4.0 + 8.0 * rng_uniform()));
    for (int k = 0; k < 3; k++) x[rng_u64() % (uint64_t)n] *= 20.0f;
}

/* M (see the header comment): sum_i (|w_i - min_i| + |min_i|) |a_i| and the
 * minimum part alone sum_i |min_i| |a_i|. a are dequantized activations. */
static void magnitudes(nib_type t, const uint8_t *wq, const float *a, int64_t n, double *M, double *M_min) {
    static float w[16384], mn[16384];
    static uint8_t tmp[16384 * 4];
    const nib_type_traits *tt = tr(t);
    tt->dequantize(wq, w, n);
    int off = affine_d_offset(t);
    if (off >= 0) {
        size_t rb = row_bytes(t, n);
        memcpy(tmp, wq, rb);
        for (int64_t b = 0; b < n / tt->block_elems; b++) memset(tmp + b * tt->block_bytes + off, 0, 2);
        tt->dequantize(tmp, mn, n);
    } else {
        for (int64_t i = 0; i < n; i++) mn[i] = 0.0f;
    }
    double m = 0, mm = 0;
    for (int64_t i = 0; i < n; i++) {
        m += (fabs((double)w[i] - mn[i]) + fabs((double)mn[i])) * fabs((double)a[i]);
        mm += fabs((double)mn[i]) * fabs((double)a[i]);
    }
    /* The ternary kernels dot the stored codes t + 1 (0..2) and take d times
     * the activation's sum back off, in float: their rounding scales with
     * d * sum |a|, which stays when every weight is 0 (all-0x80 TQ1_0 blocks,
     * where sum |w| |a| is 0 and a tolerance on it alone is none). */
    const int d_off = t == NIB_TYPE_TQ1_0 ? (int)offsetof(block_tq1_0, d)
                      : t == NIB_TYPE_TQ2_0 ? (int)offsetof(block_tq2_0, d) : -1;
    if (d_off >= 0)
        for (int64_t i = 0; i < n; i++) {
            const uint8_t *blk = wq + (i / tt->block_elems) * tt->block_bytes;
            nib_fp16 d;
            memcpy(&d, blk + d_off, sizeof d);
            m += fabs((double)nib_fp16_to_f32(d)) * fabs((double)a[i]);
        }
    *M = m;
    *M_min = mm;
}

/* ---- SIMD levels --------------------------------------------------------------------- */

static void test_simd_levels(void) {
    nib_simd_level det = nib_cpu_detect_simd();
    printf("      detected: %s, active: %s\n", nib_simd_level_name(det), nib_simd_level_name(nib_cpu_simd_level()));
    nib_simd_level prev = nib_cpu_set_simd_level(NIB_SIMD_SCALAR);
    CHECK(nib_cpu_simd_level() == NIB_SIMD_SCALAR, "set scalar");
    nib_cpu_set_simd_level(NIB_SIMD_AVX512_VNNI);
    CHECK(nib_cpu_simd_level() == det, "a level above the CPU's is clamped to it");
    nib_cpu_set_simd_level(prev);
    /* every type of the format table resolves at every level */
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        if (!tr((nib_type)t)) continue;
        for (int l = 0; l < 3; l++) {
            cpu_kernel k;
            CHECK(cpu_kernel_get_at((nib_type)t, (nib_simd_level)l, &k) && k.vec_dot, "%s level %d has no kernel",
                  tr((nib_type)t)->name, l);
        }
    }
    /* every weight format has a SIMD dot of its own, with its 4-token form (the
     * activation formats Q8_1 and Q8_K are not weights): a format left on the
     * scalar reference runs a model tens of times slower */
    int missing = 0;
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        if (!tr((nib_type)t) || t == NIB_TYPE_Q8_1 || t == NIB_TYPE_Q8_K) continue;
        if (!cpu_kernel_has_level((nib_type)t, NIB_SIMD_AVX2)) {
            fprintf(stderr, "    %s has no AVX2 dot\n", tr((nib_type)t)->name);
            missing++;
            continue;
        }
        cpu_kernel k;
        cpu_kernel_get_at((nib_type)t, NIB_SIMD_AVX2, &k);
        if (!k.act_f32 && !k.vec_dot_x4) fprintf(stderr, "    %s has no 4-token AVX2 form\n", tr((nib_type)t)->name), missing++;
    }
    CHECK(missing == 0, "%d weight formats lack an AVX2 dot or its 4-token form", missing);
}

/* ---- thread pool ------------------------------------------------------------------- */

typedef struct {
    atomic_int counts[64];
    atomic_int bad_nth;
    int expect_nth;
} pool_ctx;

static void count_job(void *arg, int ith, int nth) {
    pool_ctx *c = arg;
    if (nth != c->expect_nth || ith < 0 || ith >= nth) atomic_fetch_add(&c->bad_nth, 1);
    else atomic_fetch_add(&c->counts[ith], 1);
}

static void test_pool_runs_every_index_once(void) {
    static const int sizes[] = {1, 2, 3, 5, 16};  /* 16: more threads than cores, so shares get stolen */
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        nib_error err;
        nib_pool *p = nib_pool_new(sizes[s], &err);
        CHECK(p != NULL, "pool of %d: %s", sizes[s], err.msg);
        if (!p) continue;
        CHECK(nib_pool_size(p) == sizes[s], "pool size %d", nib_pool_size(p));
        static pool_ctx c;
        for (int i = 0; i < 64; i++) atomic_init(&c.counts[i], 0);
        atomic_init(&c.bad_nth, 0);
        c.expect_nth = sizes[s];
        const int runs = 3000;
        for (int r = 0; r < runs; r++) {
            nib_pool_run(p, count_job, &c);
            /* every index must be done when run returns, not just eventually */
            for (int i = 0; i < sizes[s]; i++)
                if (atomic_load(&c.counts[i]) != r + 1) {
                    CHECK(0, "pool %d run %d: index %d ran %d times", sizes[s], r, i, atomic_load(&c.counts[i]));
                    r = runs;
                    break;
                }
            /* now and then let the workers fall asleep (longer than their spin) */
            if (r % 1000 == 999) usleep(3000);
        }
        CHECK(atomic_load(&c.bad_nth) == 0, "pool %d: %d calls with a wrong ith/nth", sizes[s], atomic_load(&c.bad_nth));
        nib_pool_free(p);
    }
    /* NULL pool: the caller alone */
    static pool_ctx c;
    for (int i = 0; i < 64; i++) atomic_init(&c.counts[i], 0);
    atomic_init(&c.bad_nth, 0);
    c.expect_nth = 1;
    nib_pool_run(NULL, count_job, &c);
    CHECK(atomic_load(&c.counts[0]) == 1 && atomic_load(&c.bad_nth) == 0, "NULL pool runs once as 0 of 1");
    CHECK(nib_pool_size(NULL) == 1, "NULL pool has size 1");
    nib_error err;
    nib_pool *p = nib_pool_new(0, &err);
    CHECK(p && nib_pool_size(p) >= 1, "pool of 0 threads means one per CPU");
    nib_pool_free(p);
    nib_pool_free(NULL);
}

/* ---- activation quantizers ------------------------------------------------------------ */

static const nib_type act_types[] = {NIB_TYPE_Q8_0, NIB_TYPE_Q8_1, NIB_TYPE_Q8_K};

/* Data with the cases where a careless SIMD quantizer goes wrong. */
static void tricky_activations(float *x, int64_t n, int kind) {
    switch (kind) {
    case 0: /* normal, random scale, outliers */
        activation_floats(x, n);
        break;
    case 1: /* rounding ties: block amax 127 makes d = 1, so k + 0.5 is an exact tie */
        for (int64_t i = 0; i < n; i++) x[i] = (float)((int)(rng_u64() % 200) - 100) + 0.5f;
        for (int64_t i = 0; i < n; i += 32) x[i] = 127.0f;
        break;
    case 2: /* sign ties of the largest magnitude: the first one decides Q8_K's sign */
        random_normal(x, n, 1.0);
        for (int64_t i = 0; i < n; i += 256) {
            x[i + 1 + rng_u64() % 100] = (rng_u64() & 1) ? 9.0f : -9.0f;
            x[i + 101 + rng_u64() % 100] = (rng_u64() & 1) ? 9.0f : -9.0f;
        }
        break;
    case 3: /* an all-zero block among normal ones (the 1/d = 0 branch) */
        random_normal(x, n, 1.0);
        for (int64_t i = 0; i < 256 && i < n; i++) x[i] = 0.0f;
        break;
    default: /* tiny and huge magnitudes (subnormal fp16 scales, large ones) */
        random_normal(x, n, (kind & 1) ? 1e-6 : 1e4);
        break;
    }
}

static void check_act_quantizers(nib_simd_level level) {
    enum { N = 4096 };
    static float x[N];
    static uint8_t ref[N * 2], got[N * 2];
    rng_seed(101);
    for (size_t k = 0; k < sizeof act_types / sizeof act_types[0]; k++) {
        nib_type t = act_types[k];
        nib_quantize_fn fast = cpu_act_quantizer(t, level);
        CHECK(fast && fast != tr(t)->quantize, "%s has no %s quantizer", tr(t)->name, nib_simd_level_name(level));
        if (!fast) continue;
        int diffs = 0;
        for (int rep = 0; rep < 300; rep++) {
            int kind = rep % 6;
            int64_t n = kind == 0 ? 256 * (1 + (int64_t)(rng_u64() % 16)) : N;
            tricky_activations(x, n, kind);
            size_t rb = row_bytes(t, n);
            memset(ref, 0xAA, rb);
            memset(got, 0x55, rb);
            tr(t)->quantize(x, ref, n);
            fast(x, got, n);
            if (memcmp(ref, got, rb) != 0) {
                if (diffs < 3) {
                    size_t i = 0;
                    while (ref[i] == got[i]) i++;
                    fprintf(stderr, "    %s kind %d: first differing byte %zu (block %zu): %02x vs %02x\n",
                            tr(t)->name, kind, i, i / tr(t)->block_bytes, ref[i], got[i]);
                }
                diffs++;
            }
        }
        CHECK(diffs == 0, "%s %s quantizer: %d of 300 rows differ from the reference", tr(t)->name,
              nib_simd_level_name(level), diffs);
    }
}

static void test_act_quantizers_avx2(void) {
    if (nib_cpu_detect_simd() < NIB_SIMD_AVX2) SKIP("this CPU lacks AVX2/FMA/F16C");
    check_act_quantizers(NIB_SIMD_AVX2);
}

/* ---- dot kernels -------------------------------------------------------------------- */

/* One kernel on one row against the reference; returns error / tolerance. */
static double compare_dot(nib_type t, nib_vec_dot_fn fast, const uint8_t *wq, int64_t n, const float *x) {
    static uint8_t aq[16384 * 2];
    static float a[16384];
    const nib_type_traits *tt = tr(t);
    cpu_kernel k;
    cpu_kernel_get_at(t, NIB_SIMD_SCALAR, &k);
    double ref, tol;
    float got;
    if (k.act_f32) { /* float weights: against float64 directly, sequential sum (n adds) */
        static float w[16384];
        tt->dequantize(wq, w, n);
        double r = 0, m = 0;
        for (int64_t i = 0; i < n; i++) {
            r += (double)w[i] * x[i];
            m += fabs((double)w[i] * x[i]);
        }
        ref = r;
        tol = (double)(n + 4) * U32 * m * 1.01;
        got = fast(n, wq, x);
    } else {
        const nib_type_traits *at = tr(tt->vec_dot_type);
        at->quantize(x, aq, n);
        at->dequantize(aq, a, n);
        double M, M_min;
        magnitudes(t, wq, a, n, &M, &M_min);
        const double nb = (double)(n / tt->block_elems);
        ref = tt->vec_dot(n, wq, aq);
        tol = 2.0 * (2.0 * nb + 20.0) * U32 * M * 1.01;
        got = fast(n, wq, aq);
    }
    double err = fabs((double)got - ref);
    if (!(err <= tol)) return isnan(err) ? INFINITY : err / (tol > 0 ? tol : 1e-300);
    return tol > 0 ? err / tol : 0.0;
}

/* The 4-token form must give each token the single-token result bit for bit
 * (a token's output may not depend on its batch). */
static void check_x4_matches_single(nib_type t, const cpu_kernel *k) {
    static uint8_t wq[4096 * 2], aq[4][4096 * 2];
    static float x[4096];
    const nib_type_traits *at = tr(k->act_type);
    int diffs = 0;
    for (int rep = 0; rep < 50; rep++) {
        /* an odd block count for the 32-element formats every third row (pair kernels' tail) */
        const int64_t n = 256 * (1 + (int64_t)(rng_u64() % 12)) + (tr(t)->block_elems == 32 && rep % 3 == 0 ? 32 : 0);
        const size_t arb = row_bytes(k->act_type, n);
        weight_row(t, wq, n, rep & 1);
        for (int r = 0; r < 4; r++) {
            activation_floats(x, n);
            at->quantize(x, aq[r], n);
        }
        /* rows at a stride, as the matmul lays them out */
        static uint8_t packed[4 * 4096 * 2];
        for (int r = 0; r < 4; r++) memcpy(packed + r * arb, aq[r], arb);
        float four[4] = {NAN, NAN, NAN, NAN};
        k->vec_dot_x4(n, wq, packed, arb, four);
        for (int r = 0; r < 4; r++) {
            float one = k->vec_dot(n, wq, aq[r]);
            diffs += memcmp(&one, &four[r], sizeof one) != 0;
        }
    }
    CHECK(diffs == 0, "%s: %d of 200 x4 results differ from the single-token kernel", tr(t)->name, diffs);
}

/* The 2-row form likewise: each (row, token) gets the single-token result
 * bit for bit, rows at the matmul's stride. */
static void check_2x4_matches_single(nib_type t, const cpu_kernel *k) {
    static uint8_t wq[2 * 4096 * 2], packed[4 * 4096 * 2];
    static float x[4096];
    const nib_type_traits *at = tr(k->act_type);
    int diffs = 0;
    for (int rep = 0; rep < 30; rep++) {
        const int64_t n = 256 * (1 + (int64_t)(rng_u64() % 12)) + (rep % 3 == 0 ? 32 : 0);
        const size_t arb = row_bytes(k->act_type, n), wrb = row_bytes(t, n);
        weight_row(t, wq, n, rep & 1);
        weight_row(t, wq + wrb, n, !(rep & 1));
        for (int r = 0; r < 4; r++) {
            activation_floats(x, n);
            at->quantize(x, packed + r * arb, n);
        }
        float eight[8];
        for (int i = 0; i < 8; i++) eight[i] = NAN;
        k->vec_dot_2x4(n, wq, wrb, packed, arb, eight);
        for (int w = 0; w < 2; w++)
            for (int r = 0; r < 4; r++) {
                const float one = k->vec_dot(n, wq + w * wrb, packed + r * arb);
                diffs += memcmp(&one, &eight[4 * w + r], sizeof one) != 0;
            }
    }
    CHECK(diffs == 0, "%s: %d of 240 2x4 results differ from the single-token kernel", tr(t)->name, diffs);
}

static void check_dot_kernels(nib_simd_level level) {
    static const int64_t blocks[] = {1, 2, 3, 7, 16, 33};
    static uint8_t wq[16384 * 4];
    static float x[16384];
    rng_seed(202 + (uint64_t)level);
    int tested = 0;
    for (int ti = 0; ti < NIB_TYPE_COUNT; ti++) {
        nib_type t = (nib_type)ti;
        if (!tr(t) || !cpu_kernel_has_level(t, level)) continue;
        cpu_kernel k;
        cpu_kernel_get_at(t, level, &k);
        const nib_type_traits *tt = tr(t);
        int bad = 0, runs = 0;
        double worst = 0;
        for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
            /* float formats: odd lengths too, for the scalar tails */
            int64_t n = tt->block_elems == 1 ? 32 * blocks[bi] + (int64_t)bi * 3 : blocks[bi] * tt->block_elems;
            /* legacy blocks are short: reach thousands of elements, with an odd
             * block count every other size (kernels that take blocks in pairs
             * have a tail step) */
            if (tt->block_elems < 256) n = n * 8 + (bi & 1 ? tt->block_elems : 0);
            for (int rep = 0; rep < 60; rep++, runs++) {
                weight_row(t, wq, n, rep & 1);
                activation_floats(x, n);
                double r = compare_dot(t, k.vec_dot, wq, n, x);
                if (r > 1.0) {
                    if (bad < 3) fprintf(stderr, "    %s n=%lld rep %d: error %.3g x tolerance\n", tt->name, (long long)n, rep, r);
                    bad++;
                }
                if (r > worst) worst = r;
            }
        }
        CHECK(bad == 0, "%s %s: %d of %d dots outside tolerance", tt->name, nib_simd_level_name(level), bad, runs);
        if (k.vec_dot_x4) check_x4_matches_single(t, &k);
        if (k.vec_dot_2x4) check_2x4_matches_single(t, &k);
        printf("      %-5s %-11s %d rows, worst error/tolerance %.4f\n", tt->name, nib_simd_level_name(level), runs, worst);
        tested++;
    }
    CHECK(tested > 0, "no %s kernels found", nib_simd_level_name(level));
}

static void test_dot_kernels_avx2(void) {
    if (nib_cpu_detect_simd() < NIB_SIMD_AVX2) SKIP("this CPU lacks AVX2/FMA/F16C");
    check_dot_kernels(NIB_SIMD_AVX2);
}

static void test_dot_kernels_avx512(void) {
    if (nib_cpu_detect_simd() < NIB_SIMD_AVX512_VNNI)
        SKIP("this CPU lacks AVX-512 F/BW/VL + VNNI (detected %s); the kernels are compiled, not run",
             nib_simd_level_name(nib_cpu_detect_simd()));
    check_dot_kernels(NIB_SIMD_AVX512_VNNI);
}

/* The kernels must see their extreme codes: all-max nibbles, -128 weights,
 * maximal 6-bit scales and -128 Q6_K scales, which random bytes reach only
 * rarely in a given lane. Blocks of all 0xFF / 0x80 bytes with finite scales. */
static void test_dot_kernels_extremes(void) {
    nib_simd_level best = nib_cpu_detect_simd();
    if (best == NIB_SIMD_SCALAR) SKIP("no SIMD level on this CPU");
    static uint8_t wq[4096 * 2];
    static float x[4096];
    rng_seed(303);
    for (int ti = 0; ti < NIB_TYPE_COUNT; ti++) {
        nib_type t = (nib_type)ti;
        const nib_type_traits *tt = tr(t);
        if (!tt || tt->block_elems == 1) continue;
        for (int l = NIB_SIMD_AVX2; l <= (int)best; l++) {
            if (!cpu_kernel_has_level(t, (nib_simd_level)l)) continue;
            cpu_kernel k;
            cpu_kernel_get_at(t, (nib_simd_level)l, &k);
            for (int pat = 0; pat < 3; pat++) {
                const int64_t n = 1024;
                static const uint8_t fill[3] = {0xFF, 0x80, 0x7F};
                memset(wq, fill[pat], row_bytes(t, n));
                /* the scales finite (at 0xFF MXFP4's 2^127 or IQ1_M's NaN scale
                 * overflows every implementation's float sum): the codes stay extreme */
                for (int64_t b = 0; b < n / tt->block_elems; b++) set_block_scales(t, wq + b * tt->block_bytes);
                activation_floats(x, n);
                double r = compare_dot(t, k.vec_dot, wq, n, x);
                CHECK(r <= 1.0, "%s %s all-0x%02X blocks: error %.3g x tolerance", tt->name,
                      nib_simd_level_name((nib_simd_level)l), fill[pat], r);
            }
        }
    }
}

/* ---- matmul ------------------------------------------------------------------------- */

typedef struct { int64_t n_in, n_out; } shape;

/* Y against float64, for one type, one level, one pool. Returns the worst
 * error / tolerance; *bad counts outputs outside. */
static double check_matmul_as(nib_type t, nib_pool *pool, shape s, int64_t n_tok, bool packed, int *bad) {
    const nib_type_traits *tt = tr(t);
    const size_t wrb = row_bytes(t, s.n_in);
    uint8_t *W = malloc(wrb * (size_t)s.n_out);
    float *X = malloc(sizeof(float) * (size_t)(s.n_in * n_tok));
    float *Y = malloc(sizeof(float) * (size_t)(s.n_out * n_tok));
    float *A = malloc(sizeof(float) * (size_t)(s.n_in * n_tok)); /* activations as the dot sees them */
    float *w = malloc(sizeof(float) * (size_t)s.n_in);
    size_t sb = nib_cpu_matmul_scratch_bytes(t, s.n_in, n_tok);
    uint8_t *scratch = malloc(sb ? sb : 1);
    uint8_t *aq = malloc(row_bytes(tt->vec_dot_type, s.n_in) + 1);
    for (int64_t o = 0; o < s.n_out; o++) weight_row(t, W + (size_t)o * wrb, s.n_in, (int)(o & 1));
    for (int64_t k = 0; k < n_tok; k++) activation_floats(X + k * s.n_in, s.n_in);
    cpu_kernel k;
    cpu_kernel_get(t, &k);
    const nib_type_traits *at = tr(k.act_type);
    for (int64_t tk = 0; tk < n_tok; tk++) {
        if (k.act_f32) memcpy(A + tk * s.n_in, X + tk * s.n_in, sizeof(float) * (size_t)s.n_in);
        else {
            at->quantize(X + tk * s.n_in, aq, s.n_in);
            at->dequantize(aq, A + tk * s.n_in, s.n_in);
        }
    }
    poison(Y, s.n_out * n_tok);
    nib_status st;
    if (packed) {
        const size_t pb = nib_cpu_repack_bytes(t, s.n_in, s.n_out);
        uint8_t *P = malloc(pb ? pb : 1);
        memset(P, 0xA5, pb ? pb : 1);
        nib_simd_level lay = NIB_SIMD_SCALAR;
        st = pb ? nib_cpu_repack(pool, t, W, s.n_in, s.n_out, P, &lay) : NIB_ERR_ARG;
        if (st == NIB_OK) st = nib_cpu_matmul_packed(pool, t, lay, P, s.n_in, s.n_out, X, n_tok, Y, scratch);
        free(P);
    } else {
        st = nib_cpu_matmul(pool, t, W, s.n_in, s.n_out, X, n_tok, Y, scratch);
    }
    CHECK(st == NIB_OK, "%s %smatmul returned %d", tt->name, packed ? "packed " : "", (int)st);
    double worst = 0;
    const double nb = (double)(s.n_in / tt->block_elems);
    for (int64_t o = 0; o < s.n_out; o++) {
        const uint8_t *wr = W + (size_t)o * wrb;
        tt->dequantize(wr, w, s.n_in);
        for (int64_t tk = 0; tk < n_tok; tk++) {
            const float *a = A + tk * s.n_in;
            double ref = 0;
            for (int64_t i = 0; i < s.n_in; i++) ref += (double)w[i] * a[i];
            double M, M_min, tol;
            magnitudes(t, wr, a, s.n_in, &M, &M_min);
            if (k.act_f32) tol = (double)(s.n_in + 4) * U32 * M * 1.01;
            else tol = (2.0 * nb + 20.0) * U32 * M * 1.01;
            if (k.act_type == NIB_TYPE_Q8_1) tol += ldexp(1.0, -10) * M_min * 1.01;
            double got = Y[tk * s.n_out + o];
            double err = fabs(got - ref);
            if (!(err <= tol)) {
                if (*bad < 3)
                    fprintf(stderr, "    %s%s %s %lldx%lld tok %lld/%lld row %lld: %.9g vs float64 %.9g (tol %.3g)\n",
                            tt->name, packed ? " packed" : "", nib_simd_level_name(nib_cpu_simd_level()), (long long)s.n_in,
                            (long long)s.n_out, (long long)tk, (long long)n_tok, (long long)o, got, ref, tol);
                (*bad)++;
                worst = isnan(err) ? INFINITY : fmax(worst, err / tol);
            } else if (tol > 0) {
                worst = fmax(worst, err / tol);
            }
        }
    }
    free(W), free(X), free(Y), free(A), free(w), free(scratch), free(aq);
    return worst;
}

static double check_matmul(nib_type t, nib_pool *pool, shape s, int64_t n_tok, int *bad) {
    return check_matmul_as(t, pool, s, n_tok, false, bad);
}

static void run_matmul_suite(nib_simd_level level, const nib_type *types, int n_types) {
    nib_simd_level prev = nib_cpu_set_simd_level(level);
    nib_error err;
    nib_pool *pools[3] = {NULL, nib_pool_new(2, &err), nib_pool_new(3, &err)};
    CHECK(pools[1] && pools[2], "pools: %s", err.msg);
    static const int64_t toks[] = {1, 3, 17};
    for (int i = 0; i < n_types; i++) {
        nib_type t = types[i];
        const nib_type_traits *tt = tr(t);
        /* n_in one or two blocks of the format (>= 256), n_out with no small
         * factor so the chunks never divide it */
        const int64_t be = tt->block_elems >= 256 ? tt->block_elems : 256;
        const shape shapes[] = {{be, 37}, {2 * be, 131}, {be, 1}};
        int bad = 0;
        double worst = 0;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (size_t ki = 0; ki < sizeof toks / sizeof toks[0]; ki++)
                for (int p = 0; p < 3; p++) {
                    if (!pools[p] && p) continue;
                    rng_seed(400 + 17 * (uint64_t)t + 5 * si + ki);
                    worst = fmax(worst, check_matmul(t, pools[p], shapes[si], toks[ki], &bad));
                }
        CHECK(bad == 0, "%s at %s: %d outputs outside tolerance", tt->name, nib_simd_level_name(level), bad);
        printf("      %-7s %-11s worst error/tolerance %.4f\n", tt->name, nib_simd_level_name(nib_cpu_simd_level()), worst);
    }
    nib_pool_free(pools[1]);
    nib_pool_free(pools[2]);
    nib_cpu_set_simd_level(prev);
}

/* Every format of the table, at the scalar level (the fallback path). */
static void test_matmul_every_format_scalar(void) {
    nib_type types[NIB_TYPE_COUNT];
    int n = 0;
    for (int t = 0; t < NIB_TYPE_COUNT; t++)
        if (tr((nib_type)t)) types[n++] = (nib_type)t;
    run_matmul_suite(NIB_SIMD_SCALAR, types, n);
}

/* Every format again at the best level: SIMD kernels where they exist, the
 * scalar fallback with SIMD activation quantizers elsewhere. */
static void test_matmul_every_format_best(void) {
    if (nib_cpu_detect_simd() == NIB_SIMD_SCALAR) SKIP("no SIMD level on this CPU");
    nib_type types[NIB_TYPE_COUNT];
    int n = 0;
    for (int t = 0; t < NIB_TYPE_COUNT; t++)
        if (tr((nib_type)t)) types[n++] = (nib_type)t;
    run_matmul_suite(nib_cpu_detect_simd(), types, n);
}

/* Larger shapes for the model formats, and 1 vs 3 threads bit for bit: each
 * output comes from one dot call whichever thread makes it. And every token of
 * a batch gets exactly what it gets alone (the x4 kernels and the token
 * blocks must not change a token's arithmetic); n_in = 16384 makes the token
 * blocks of the matmul smaller than the batch of 17. */
static void test_matmul_threads_agree(void) {
    static const nib_type types[] = {NIB_TYPE_Q4_1, NIB_TYPE_Q8_0, NIB_TYPE_Q5_0, NIB_TYPE_Q4_K, NIB_TYPE_Q6_K,
                                     NIB_TYPE_F16, NIB_TYPE_F32};
    static const shape shapes[] = {{1536, 579}, {16384, 37}};
    const int64_t n_tok = 17;
    nib_error err;
    nib_pool *pool = nib_pool_new(3, &err);
    CHECK(pool != NULL, "pool: %s", err.msg);
    if (!pool) return;
    rng_seed(505);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t n_in = shapes[si].n_in, n_out = shapes[si].n_out;
        float *X = malloc(sizeof(float) * n_in * n_tok);
        float *Y1 = malloc(sizeof(float) * n_out * n_tok), *Y3 = malloc(sizeof(float) * n_out * n_tok);
        float *y = malloc(sizeof(float) * n_out);
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            nib_type t = types[i];
            const size_t wrb = row_bytes(t, n_in);
            uint8_t *W = malloc(wrb * n_out);
            uint8_t *scratch = malloc(nib_cpu_matmul_scratch_bytes(t, n_in, n_tok) + 1);
            for (int64_t o = 0; o < n_out; o++) weight_row(t, W + o * wrb, n_in, (int)(o & 1));
            for (int64_t k = 0; k < n_tok; k++) activation_floats(X + k * n_in, n_in);
            for (int64_t nt = 1; nt <= n_tok; nt += 16) {
                poison(Y1, n_out * nt);
                poison(Y3, n_out * nt);
                CHECK(nib_cpu_matmul(NULL, t, W, n_in, n_out, X, nt, Y1, scratch) == NIB_OK, "%s 1 thread", tr(t)->name);
                CHECK(nib_cpu_matmul(pool, t, W, n_in, n_out, X, nt, Y3, scratch) == NIB_OK, "%s 3 threads", tr(t)->name);
                CHECK(memcmp(Y1, Y3, sizeof(float) * n_out * nt) == 0, "%s %lldx%lld n_tok %lld: 1 and 3 threads differ",
                      tr(t)->name, (long long)n_in, (long long)n_out, (long long)nt);
            }
            int differ = 0;
            for (int64_t tk = 0; tk < n_tok; tk++) {
                poison(y, n_out);
                nib_cpu_matmul(pool, t, W, n_in, n_out, X + tk * n_in, 1, y, scratch);
                differ += memcmp(y, Y3 + tk * n_out, sizeof(float) * n_out) != 0;
            }
            CHECK(differ == 0, "%s %lldx%lld: %d of %lld tokens differ alone and in a batch", tr(t)->name,
                  (long long)n_in, (long long)n_out, differ, (long long)n_tok);
            free(W), free(scratch);
        }
        free(X), free(Y1), free(Y3), free(y);
    }
    nib_pool_free(pool);
}

static void test_matmul_rejects_bad_args(void) {
    float x[512], y[8];
    uint8_t w[4096], scratch[4096];
    random_normal(x, 512, 1.0);
    rng_bytes(w, sizeof w);
    CHECK(nib_cpu_matmul(NULL, (nib_type)4, w, 32, 1, x, 1, y, scratch) == NIB_ERR_UNSUPPORTED, "type 4");
    CHECK(nib_cpu_matmul(NULL, NIB_TYPE_I32, w, 32, 1, x, 1, y, scratch) == NIB_ERR_UNSUPPORTED, "I32");
    CHECK(nib_cpu_matmul(NULL, NIB_TYPE_Q4_0, w, 33, 1, x, 1, y, scratch) == NIB_ERR_ARG, "33 is not whole Q4_0 blocks");
    CHECK(nib_cpu_matmul(NULL, NIB_TYPE_Q4_K, w, 128, 1, x, 1, y, scratch) == NIB_ERR_ARG, "128 is not whole Q4_K blocks");
    CHECK(nib_cpu_matmul(NULL, NIB_TYPE_Q4_0, w, 32, 1, x, 1, y, NULL) == NIB_ERR_ARG, "quantized needs scratch");
    CHECK(nib_cpu_matmul(NULL, NIB_TYPE_F32, w, 32, 1, x, 1, y, NULL) == NIB_OK, "F32 needs none");
    CHECK(nib_cpu_matmul_scratch_bytes(NIB_TYPE_F16, 4096, 7) == 0, "float weights need no scratch");
    CHECK(nib_cpu_matmul_scratch_bytes(NIB_TYPE_Q4_K, 4096, 3) == 3 * 16 * sizeof(block_q8_K), "Q4_K scratch");
    CHECK(nib_cpu_matmul_scratch_bytes(NIB_TYPE_Q4_1, 64, 2) == 2 * 2 * sizeof(block_q8_1), "Q4_1 scratch");
    y[0] = 1.0f;
    CHECK(nib_cpu_matmul(NULL, NIB_TYPE_Q4_0, w, 32, 0, x, 1, y, scratch) == NIB_OK && y[0] == 1.0f, "n_out 0 is a no-op");
}

/* ---- weights repacked for the CPU kernels (cpu/repack.h) ----------------------------- */

/* The packed layouts are used at one SIMD level each. Sets the next level
 * below *level (start at the detected level + 1) at which t has one; false
 * when none is left. */
static bool next_packed_level(nib_type t, int *level) {
    for ((*level)--; *level > NIB_SIMD_SCALAR; (*level)--) {
        nib_cpu_set_simd_level((nib_simd_level)*level);
        cpu_packed p;
        if (nib_cpu_simd_level() == (nib_simd_level)*level && cpu_packed_get(t, &p)) return true;
    }
    return false;
}

/* Packing moves bits and changes none: every element of the packed Q4_K
 * layouts, decoded as repack.h describes them (an independent reading), is
 * the reference dequantizer's value of the original row, bit for bit. */
static void test_repack_q4_K_layout(void) {
    rng_seed(707);
    const int64_t n = 512, nb = n / QK_K;
    const size_t rb = row_bytes(NIB_TYPE_Q4_K, n);
    uint8_t *W = malloc(rb * Q4_KX8_ROWS);
    block_q4_Kx8 *P = malloc(sizeof *P * (size_t)nb);
    float ref[512], got[512];
    for (int r = 0; r < Q4_KX8_ROWS; r++) random_blocks(NIB_TYPE_Q4_K, W + r * rb, n);
    static const char *names[] = {"quads", "pairs"};
    for (int o = Q4_KX8_QUADS; o <= Q4_KX8_PAIRS; o++) {
        memset(P, 0x5A, sizeof *P * (size_t)nb);
        for (int64_t i = 0; i < nb; i++) cpu_pack_q4_Kx8(W, rb, i, (q4_Kx8_order)o, P + i);
        int bad = 0;
        for (int r = 0; r < Q4_KX8_ROWS; r++) {
            tr(NIB_TYPE_Q4_K)->dequantize(W + r * rb, ref, n);
            poison(got, n);
            for (int64_t i = 0; i < nb; i++)
                for (int j = 0; j < 8; j++) {
                    const float d1 = nib_fp16_to_f32(P[i].d[r]) * (float)P[i].sc[j][r];
                    const float m1 = nib_fp16_to_f32(P[i].dmin[r]) * (float)P[i].m[j / 2][r][j % 2];
                    for (int e = 0; e < 32; e++) {
                        const int k = (e / 4) % 4, b = e % 4;
                        const int pos = o == Q4_KX8_QUADS ? 32 * k + 4 * r + b : 64 * (k / 2) + 8 * r + 4 * (k % 2) + b;
                        const uint8_t byte = P[i].qs[j][pos];
                        const int q = e < 16 ? byte & 0x0F : byte >> 4;
                        got[QK_K * i + 32 * j + e] = d1 * (float)q - m1;
                    }
                }
            bad += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
        }
        CHECK(bad == 0, "Q4_Kx8 %s: %d of 8 rows decode differently from the file layout", names[o], bad);
    }
    free(W), free(P);

    /* Q5_K: the same, and each element's fifth bit from qh[j][p][h] byte r,
     * bit e % 8, where e = 16h + 8p + (e % 8) within sub-block j */
    const size_t rb5 = row_bytes(NIB_TYPE_Q5_K, n);
    uint8_t *W5 = malloc(rb5 * Q4_KX8_ROWS);
    block_q5_Kx8 *P5 = malloc(sizeof *P5 * (size_t)nb);
    for (int r = 0; r < Q4_KX8_ROWS; r++) random_blocks(NIB_TYPE_Q5_K, W5 + r * rb5, n);
    memset(P5, 0x5A, sizeof *P5 * (size_t)nb);
    for (int64_t i = 0; i < nb; i++) cpu_pack_q5_Kx8(W5, rb5, i, P5 + i);
    int bad5 = 0;
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        tr(NIB_TYPE_Q5_K)->dequantize(W5 + r * rb5, ref, n);
        poison(got, n);
        for (int64_t i = 0; i < nb; i++)
            for (int j = 0; j < 8; j++) {
                const float d1 = nib_fp16_to_f32(P5[i].d[r]) * (float)P5[i].sc[j][r];
                const float m1 = nib_fp16_to_f32(P5[i].dmin[r]) * (float)P5[i].m[j / 2][r][j % 2];
                for (int e = 0; e < 32; e++) {
                    const int k = (e / 4) % 4, b = e % 4;
                    const uint8_t byte = P5[i].qs[j][64 * (k / 2) + 8 * r + 4 * (k % 2) + b];
                    int q = e < 16 ? byte & 0x0F : byte >> 4;
                    q |= ((P5[i].qh[j][(e % 16) / 8][e / 16][r] >> (e % 8)) & 1) << 4;
                    got[QK_K * i + 32 * j + e] = d1 * (float)q - m1;
                }
            }
        bad5 += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
    }
    CHECK(bad5 == 0, "Q5_Kx8: %d of 8 rows decode differently from the file layout", bad5);

    /* Q5_K for AVX2: Q4_KX8_QUADS codes, the fifth bit of byte 4r + b of
     * register k at bit 4r + b of qh[j][k][low 0 / high 1 nibble] */
    block_q5_Kx8q *Q5 = malloc(sizeof *Q5 * (size_t)nb);
    memset(Q5, 0x5A, sizeof *Q5 * (size_t)nb);
    for (int64_t i = 0; i < nb; i++) cpu_pack_q5_Kx8q(W5, rb5, i, Q5 + i);
    int bad5q = 0;
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        tr(NIB_TYPE_Q5_K)->dequantize(W5 + r * rb5, ref, n);
        poison(got, n);
        for (int64_t i = 0; i < nb; i++)
            for (int j = 0; j < 8; j++) {
                const float d1 = nib_fp16_to_f32(Q5[i].d[r]) * (float)Q5[i].sc[j][r];
                const float m1 = nib_fp16_to_f32(Q5[i].dmin[r]) * (float)Q5[i].m[j / 2][r][j % 2];
                for (int e = 0; e < 32; e++) {
                    const int k = (e % 16) / 4, b = e % 4, h = e / 16;
                    const uint8_t byte = Q5[i].qs[j][32 * k + 4 * r + b];
                    int q = h == 0 ? byte & 0x0F : byte >> 4;
                    q |= (int)((Q5[i].qh[j][k][h] >> (4 * r + b)) & 1u) << 4;
                    got[QK_K * i + 32 * j + e] = d1 * (float)q - m1;
                }
            }
        bad5q += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
    }
    CHECK(bad5q == 0, "Q5_Kx8q: %d of 8 rows decode differently from the file layout", bad5q);
    free(W5), free(P5), free(Q5);

    /* Q6_K: element 4h + b (A) or 8 + 4h + b (B) of sub-block j at byte 8r + 4h + b */
    const size_t rb6 = row_bytes(NIB_TYPE_Q6_K, n);
    uint8_t *W6 = malloc(rb6 * Q4_KX8_ROWS);
    block_q6_Kx8 *P6 = malloc(sizeof *P6 * (size_t)nb);
    for (int r = 0; r < Q4_KX8_ROWS; r++) random_blocks(NIB_TYPE_Q6_K, W6 + r * rb6, n);
    memset(P6, 0x5A, sizeof *P6 * (size_t)nb);
    for (int64_t i = 0; i < nb; i++) cpu_pack_q6_Kx8(W6, rb6, i, P6 + i);
    int bad6 = 0;
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        tr(NIB_TYPE_Q6_K)->dequantize(W6 + r * rb6, ref, n);
        poison(got, n);
        for (int64_t i = 0; i < nb; i++)
            for (int j = 0; j < 16; j++) {
                const float d1 = nib_fp16_to_f32(P6[i].d[r]) * (float)P6[i].sc[j / 2][r][j % 2];
                for (int e = 0; e < 16; e++) {
                    const int half = e / 8, pos = 8 * r + e % 8; /* half 0: A, 1: B */
                    const int low = (P6[i].ql[j][pos] >> (4 * half)) & 0xF;
                    const int high = (P6[i].qh[j / 2][pos] >> (4 * (j % 2) + 2 * half)) & 3;
                    got[QK_K * i + 16 * j + e] = d1 * (float)((low | (high << 4)) - 32);
                }
            }
        bad6 += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
    }
    CHECK(bad6 == 0, "Q6_Kx8: %d of 8 rows decode differently from the file layout", bad6);

    /* Q6_K for AVX2: element 4k + b of sub-blocks 2p (low nibble) and 2p + 1
     * (high) at byte 4r + b of ql[p][k]; their top 2 bits at 4 (k % 2) and
     * 4 (k % 2) + 2 of qh[p][k / 2] */
    block_q6_Kx8q *Q6 = malloc(sizeof *Q6 * (size_t)nb);
    memset(Q6, 0x5A, sizeof *Q6 * (size_t)nb);
    for (int64_t i = 0; i < nb; i++) cpu_pack_q6_Kx8q(W6, rb6, i, Q6 + i);
    int bad6q = 0;
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        tr(NIB_TYPE_Q6_K)->dequantize(W6 + r * rb6, ref, n);
        poison(got, n);
        for (int64_t i = 0; i < nb; i++)
            for (int j = 0; j < 16; j++) {
                const float d1 = nib_fp16_to_f32(Q6[i].d[r]) * (float)Q6[i].sc[j][r];
                for (int e = 0; e < 16; e++) {
                    const int pp = j / 2, sub = j % 2, k = e / 4, b = e % 4;
                    const int low = (Q6[i].ql[pp][k][4 * r + b] >> (4 * sub)) & 0xF;
                    const int high = (Q6[i].qh[pp][k / 2][4 * r + b] >> (4 * (k % 2) + 2 * sub)) & 3;
                    got[QK_K * i + 16 * j + e] = d1 * (float)((low | (high << 4)) - 32);
                }
            }
        bad6q += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
    }
    CHECK(bad6q == 0, "Q6_Kx8q: %d of 8 rows decode differently from the file layout", bad6q);
    free(W6), free(P6), free(Q6);
}

/* The 32-element formats' packed blocks, decoded as repack.h describes them,
 * against the reference dequantizer, bit for bit; and the activation with
 * sums against the Q8_0 quantizer. */
static void test_repack_legacy_layout(void) {
    static const nib_type types[] = {NIB_TYPE_Q4_0, NIB_TYPE_Q5_0, NIB_TYPE_Q4_1, NIB_TYPE_Q5_1};
    rng_seed(708);
    const int64_t n = 96, nb = n / 32;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const nib_type t = types[ti];
        const bool has_min = t == NIB_TYPE_Q4_1 || t == NIB_TYPE_Q5_1, has_qh = t == NIB_TYPE_Q5_0 || t == NIB_TYPE_Q5_1;
        const int off = t == NIB_TYPE_Q4_0 ? 8 : t == NIB_TYPE_Q5_0 ? 16 : 0;
        const size_t rb = row_bytes(t, n), gb = 8 * rb / (size_t)nb; /* a packed block: 8 file blocks */
        uint8_t *W = malloc(rb * 8), *P = malloc(gb * (size_t)nb);
        float ref[96], got[96];
        for (int r = 0; r < 8; r++) random_blocks(t, W + r * rb, n);
        for (int o = Q4_KX8_QUADS; o <= Q4_KX8_PAIRS; o++) {
        memset(P, 0x5A, gb * (size_t)nb);
        for (int64_t i = 0; i < nb; i++) cpu_pack_legacy_x8(t, W, rb, i, (q4_Kx8_order)o, P + (size_t)i * gb);
        int bad = 0;
        for (int r = 0; r < 8; r++) {
            tr(t)->dequantize(W + r * rb, ref, n);
            poison(got, n);
            for (int64_t i = 0; i < nb; i++) {
                const uint8_t *b = P + (size_t)i * gb; /* d[8], m[8] (_1), qh[4][8] (Q5), qs[2][64] */
                nib_half d, m = 0;
                memcpy(&d, b + 2 * r, 2);
                if (has_min) memcpy(&m, b + 16 + 2 * r, 2);
                const uint8_t *qh = b + (has_min ? 32 : 16), *qs = qh + (has_qh ? 32 : 0);
                for (int e = 0; e < 32; e++) {
                    const int j = e % 16; /* the file's qs byte */
                    const bool pairs = o == Q4_KX8_PAIRS;
                    const uint8_t byte = pairs ? qs[64 * (j / 8) + 8 * r + j % 8] : qs[32 * (j / 4) + 4 * r + j % 4];
                    int q = e < 16 ? byte & 0x0F : byte >> 4;
                    if (has_qh && pairs) q |= ((qh[8 * (e / 8) + r] >> (e % 8)) & 1) << 4;
                    if (has_qh && !pairs) {
                        const int word = 2 * (j / 4) + e / 16, bit = 4 * r + j % 4;
                        q |= ((qh[4 * word + bit / 8] >> (bit % 8)) & 1) << 4;
                    }
                    got[32 * i + e] = has_min ? nib_fp16_to_f32(d) * (float)q + nib_fp16_to_f32(m)
                                              : nib_fp16_to_f32(d) * (float)(q - off);
                }
            }
            bad += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
        }
        CHECK(bad == 0, "%s x8 %s: %d of 8 rows decode differently from the file layout", tr(t)->name,
              o == Q4_KX8_PAIRS ? "pairs" : "quads", bad);
        }
        free(W), free(P);
    }

    float x[256];
    block_q8_0 q[8];
    block_q8_0s s[8];
    random_normal(x, 256, 3.0);
    tr(NIB_TYPE_Q8_0)->quantize(x, q, 256);
    memset(s, 0x5A, sizeof s);
    cpu_quantize_q8_0s(x, s, 256);
    int bad = 0;
    for (int b = 0; b < 8; b++) {
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += q[b].qs[j];
        bad += s[b].d != q[b].d || s[b].sum != sum || memcmp(s[b].qs, q[b].qs, 32) != 0;
    }
    CHECK(bad == 0, "q8_0s: %d of 8 blocks differ from Q8_0's codes and their sums", bad);

    /* Q8_0: qs[p][8r + i] is row r's code 8p + i; its activation the codes + 128 */
    {
        const size_t rb = row_bytes(NIB_TYPE_Q8_0, n);
        uint8_t *W = malloc(rb * 8);
        block_q8_0x8 P[3];
        float ref[96], got[96];
        for (int r = 0; r < 8; r++) random_blocks(NIB_TYPE_Q8_0, W + r * rb, n);
        memset(P, 0x5A, sizeof P);
        for (int64_t i = 0; i < nb; i++) cpu_pack_legacy_x8(NIB_TYPE_Q8_0, W, rb, i, Q4_KX8_PAIRS, &P[i]);
        int rows_bad = 0;
        for (int r = 0; r < 8; r++) {
            tr(NIB_TYPE_Q8_0)->dequantize(W + r * rb, ref, n);
            poison(got, n);
            for (int64_t i = 0; i < nb; i++)
                for (int e = 0; e < 32; e++)
                    got[32 * i + e] = nib_fp16_to_f32(P[i].d[r]) * (float)P[i].qs[e / 8][8 * r + e % 8];
            rows_bad += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
        }
        CHECK(rows_bad == 0, "Q8_0 x8: %d of 8 rows decode differently from the file layout", rows_bad);
        /* quads (AVX2): byte 32k + 4r + b of the flat qs is row r's code 4k + b */
        memset(P, 0x5A, sizeof P);
        for (int64_t i = 0; i < nb; i++) cpu_pack_legacy_x8(NIB_TYPE_Q8_0, W, rb, i, Q4_KX8_QUADS, &P[i]);
        rows_bad = 0;
        for (int r = 0; r < 8; r++) {
            tr(NIB_TYPE_Q8_0)->dequantize(W + r * rb, ref, n);
            poison(got, n);
            for (int64_t i = 0; i < nb; i++)
                for (int e = 0; e < 32; e++)
                    got[32 * i + e] = nib_fp16_to_f32(P[i].d[r]) * (float)(&P[i].qs[0][0])[32 * (e / 4) + 4 * r + e % 4];
            rows_bad += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
        }
        CHECK(rows_bad == 0, "Q8_0 x8 quads: %d of 8 rows decode differently from the file layout", rows_bad);
        free(W);
        block_q8_0u u[8];
        memset(u, 0x5A, sizeof u);
        cpu_quantize_q8_0u(x, u, 256);
        bad = 0;
        for (int b = 0; b < 8; b++)
            for (int j = 0; j < 32; j++) bad += u[b].d != q[b].d || (int)u[b].qs[j] != q[b].qs[j] + 128;
        CHECK(bad == 0, "q8_0u: %d codes differ from Q8_0's + 128", bad);
    }
}

/* The 16-level formats packed in Q4_0x8's nibble order (repack.h), pairs
 * (AVX-512) or quads (AVX2): IQ4_NL with block_q4_0x8's fp16 d[r], MXFP4
 * with block_mxfp4x8's exponents e[r]; each element decoded as the header
 * describes, against the reference dequantizer, bit for bit. n <= 512. */
static void check_x8_levels_layout(nib_type t, int64_t n, q4_Kx8_order order) {
    const bool mx = t == NIB_TYPE_MXFP4;
    const size_t gb = mx ? sizeof(block_mxfp4x8) : sizeof(block_q4_0x8), hdr = mx ? 8 : 16; /* header, then qs[2][64] */
    const int8_t *levels = mx ? nib_mxfp4_levels : nib_iq4_levels;
    const size_t rb = row_bytes(t, n);
    uint8_t *W = malloc(rb * 8), *P = malloc(gb * (size_t)(n / 32));
    float ref[512], got[512];
    for (int r = 0; r < 8; r++) random_blocks(t, W + r * rb, n);
    memset(P, 0x5A, gb * (size_t)(n / 32));
    for (int64_t i = 0; i < n / 32; i++) cpu_pack_legacy_x8(t, W, rb, i, order, P + (size_t)i * gb);
    int bad = 0;
    for (int r = 0; r < 8; r++) {
        tr(t)->dequantize(W + r * rb, ref, n);
        poison(got, n);
        for (int64_t i = 0; i < n / 32; i++) {
            const uint8_t *b = P + (size_t)i * gb, *qs = b + hdr;
            nib_half d;
            memcpy(&d, b + 2 * r, 2);
            const float scale = mx ? nib_mxfp4_half_scale(b[r]) : nib_fp16_to_f32(d);
            for (int e = 0; e < 32; e++) {
                const int j = e % 16; /* the file's qs byte */
                const uint8_t byte = order == Q4_KX8_PAIRS ? qs[64 * (j / 8) + 8 * r + j % 8]
                                                           : qs[32 * (j / 4) + 4 * r + j % 4];
                got[32 * i + e] = scale * (float)levels[e < 16 ? byte & 15 : byte >> 4];
            }
        }
        bad += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
    }
    CHECK(bad == 0, "%s x8 (%s): %d of 8 rows decode differently from the file layout", tr(t)->name,
          order == Q4_KX8_PAIRS ? "pairs" : "quads", bad);
    free(W), free(P);
}

/* The IQ4 and MXFP4 layouts (repack.h), decoded as it describes them, against
 * the reference dequantizer, bit for bit: IQ4_NL in Q4_0's bytes, MXFP4 with
 * its exponent bytes, IQ4_XS with its scales unbiased to bytes. */
static void test_repack_iq4_layout(void) {
    rng_seed(709);
    const int64_t n = 512;
    float ref[512], got[512];
    for (int o = Q4_KX8_QUADS; o <= Q4_KX8_PAIRS; o++) {
        check_x8_levels_layout(NIB_TYPE_IQ4_NL, n, (q4_Kx8_order)o);
        check_x8_levels_layout(NIB_TYPE_MXFP4, n, (q4_Kx8_order)o);
    }
    {
        const size_t rb = row_bytes(NIB_TYPE_IQ4_XS, n);
        uint8_t *W = malloc(rb * 8);
        block_iq4_xsx8 P[2];
        for (int r = 0; r < 8; r++) random_blocks(NIB_TYPE_IQ4_XS, W + r * rb, n);
        memset(P, 0x5A, sizeof P);
        for (int64_t i = 0; i < n / QK_K; i++) cpu_pack_iq4_xsx8(W, rb, i, &P[i]);
        int bad = 0;
        for (int r = 0; r < 8; r++) {
            tr(NIB_TYPE_IQ4_XS)->dequantize(W + r * rb, ref, n);
            poison(got, n);
            for (int64_t i = 0; i < n / QK_K; i++)
                for (int e = 0; e < QK_K; e++) {
                    const int sb = e / 32, j = e % 16;
                    const uint8_t byte = P[i].qs[sb][64 * (j / 8) + 8 * r + j % 8];
                    const float dl = nib_fp16_to_f32(P[i].d[r]) * (float)P[i].sc[sb][r];
                    got[QK_K * i + e] = dl * (float)nib_iq4_levels[e % 32 < 16 ? byte & 15 : byte >> 4];
                }
            bad += memcmp(got, ref, sizeof(float) * (size_t)n) != 0;
        }
        CHECK(bad == 0, "IQ4_XS x8: %d of 8 rows decode differently from the file layout", bad);
        free(W);
    }
}

/* Every packed layout's matmul against float64 (check_matmul's tolerance),
 * 1 and 3 threads, several batch sizes; and each token's outputs the same
 * bits alone, in any batch and with any thread count. */
static void test_matmul_packed(void) {
    static const nib_type types[] = {NIB_TYPE_Q4_K, NIB_TYPE_Q5_K, NIB_TYPE_Q6_K,   NIB_TYPE_Q4_0,   NIB_TYPE_Q5_0, NIB_TYPE_Q4_1,
                                     NIB_TYPE_Q5_1, NIB_TYPE_Q8_0, NIB_TYPE_IQ4_NL, NIB_TYPE_IQ4_XS, NIB_TYPE_MXFP4};
    int tested = 0;
    nib_error err;
    nib_pool *pool = nib_pool_new(3, &err);
    CHECK(pool != NULL, "pool: %s", err.msg);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0] && pool; ti++) {
        const nib_type t = types[ti];
        const nib_simd_level prev = nib_cpu_simd_level();
        for (int level = (int)nib_cpu_detect_simd() + 1; next_packed_level(t, &level);) {
        tested++;
        cpu_packed pk;
        cpu_packed_get(t, &pk);
        /* n_out: one group, many groups, groups that do not divide the chunks */
        const shape shapes[] = {{QK_K, pk.rows}, {2 * QK_K, 17 * pk.rows}, {16384, 3 * pk.rows}};
        static const int64_t toks[] = {1, 2, 3, 4, 5, 17};
        int bad = 0;
        double worst = 0;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (size_t ki = 0; ki < sizeof toks / sizeof toks[0]; ki++) {
                rng_seed(800 + 5 * si + ki);
                worst = fmax(worst, check_matmul_as(t, ki % 2 ? pool : NULL, shapes[si], toks[ki], true, &bad));
            }
        CHECK(bad == 0, "%s packed: %d outputs outside tolerance", tr(t)->name, bad);
        printf("      %-7s packed %-11s worst error/tolerance %.4f\n", tr(t)->name,
               nib_simd_level_name(nib_cpu_simd_level()), worst);

        /* batch and thread independence */
        const int64_t n_in = 2048, n_out = 5 * pk.rows, n_tok = 11;
        const size_t wrb = row_bytes(t, n_in), pb = nib_cpu_repack_bytes(t, n_in, n_out);
        uint8_t *W = malloc(wrb * n_out), *P = malloc(pb);
        uint8_t *scratch = malloc(nib_cpu_matmul_scratch_bytes(t, n_in, n_tok));
        float *X = malloc(sizeof(float) * n_in * n_tok), *Y1 = malloc(sizeof(float) * n_out * n_tok);
        float *Y3 = malloc(sizeof(float) * n_out * n_tok), *y = malloc(sizeof(float) * n_out);
        for (int64_t o = 0; o < n_out; o++) weight_row(t, W + o * wrb, n_in, (int)(o & 1));
        for (int64_t k = 0; k < n_tok; k++) activation_floats(X + k * n_in, n_in);
        nib_simd_level lay = NIB_SIMD_SCALAR;
        CHECK(nib_cpu_repack(pool, t, W, n_in, n_out, P, &lay) == NIB_OK && lay == (nib_simd_level)level,
              "%s repack at %s", tr(t)->name, nib_simd_level_name((nib_simd_level)level));
        poison(Y1, n_out * n_tok), poison(Y3, n_out * n_tok);
        CHECK(nib_cpu_matmul_packed(NULL, t, lay, P, n_in, n_out, X, n_tok, Y1, scratch) == NIB_OK, "1 thread");
        CHECK(nib_cpu_matmul_packed(pool, t, lay, P, n_in, n_out, X, n_tok, Y3, scratch) == NIB_OK, "3 threads");
        CHECK(memcmp(Y1, Y3, sizeof(float) * n_out * n_tok) == 0, "%s packed: 1 and 3 threads differ", tr(t)->name);
        int differ = 0;
        for (int64_t tk = 0; tk < n_tok; tk++) {
            poison(y, n_out);
            nib_cpu_matmul_packed(pool, t, lay, P, n_in, n_out, X + tk * n_in, 1, y, scratch);
            differ += memcmp(y, Y3 + tk * n_out, sizeof(float) * n_out) != 0;
        }
        CHECK(differ == 0, "%s packed: %d of %lld tokens differ alone and in a batch", tr(t)->name, differ,
              (long long)n_tok);
        /* the copy keeps its layout's kernel when another level is active */
        nib_cpu_set_simd_level(NIB_SIMD_SCALAR);
        poison(Y1, n_out * n_tok);
        CHECK(nib_cpu_matmul_packed(pool, t, lay, P, n_in, n_out, X, n_tok, Y1, scratch) == NIB_OK &&
                  memcmp(Y1, Y3, sizeof(float) * n_out * n_tok) == 0,
              "%s packed at %s, run with the scalar level active: other outputs", tr(t)->name,
              nib_simd_level_name(lay));
        nib_cpu_set_simd_level((nib_simd_level)level);
        free(W), free(P), free(scratch), free(X), free(Y1), free(Y3), free(y);
        }
        nib_cpu_set_simd_level(prev);
    }
    nib_pool_free(pool);
    if (!tested) SKIP("no packed layout at this CPU's SIMD levels");
}

/* Prompts decoded ahead (cpu_kernel.decode_x8), at each level that has
 * them, give the x4 form's sums: exact integer sums per super-block with
 * one float scale either way, so they differ only by the order of float
 * additions (bounded here by 1e-5 of the row's sum |w||x|); a token's bits
 * do not depend on which other tokens (4 or more) share its batch, or on
 * the thread count; rows past the last group of 8 take the x4 form. The x4
 * form is called directly, on the same quantized activations. */
static void test_matmul_decoded(void) {
    static const nib_type types[] = {NIB_TYPE_IQ2_XXS, NIB_TYPE_IQ2_XS, NIB_TYPE_IQ2_S, NIB_TYPE_IQ3_XXS,
                                     NIB_TYPE_IQ3_S, NIB_TYPE_IQ1_S, NIB_TYPE_IQ1_M, NIB_TYPE_Q3_K};
    nib_error err;
    nib_pool *pool = nib_pool_new(3, &err);
    CHECK(pool != NULL, "pool: %s", err.msg);
    const nib_simd_level prev = nib_cpu_simd_level();
    int tested = 0;
    for (int level = NIB_SIMD_AVX2; level <= (int)nib_cpu_detect_simd() && pool; level++)
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const nib_type t = types[ti];
        cpu_kernel k;
        cpu_kernel_get_at(t, (nib_simd_level)level, &k);
        if (!k.decode_x8) continue;
        tested++;
        rng_seed(900 + (int)ti);
        const int64_t n_in = 2560, n_out = 8 * 5 + 3, n_tok = 17; /* 10 super-blocks: two pieces */
        const size_t wrb = row_bytes(t, n_in), arb = (size_t)(n_in / k.act_block_elems) * k.act_block_bytes;
        uint8_t *W = malloc(wrb * n_out), *scratch = malloc(nib_cpu_matmul_scratch_bytes(t, n_in, n_tok));
        uint8_t *A = malloc(arb * n_tok);
        float *X = malloc(sizeof(float) * n_in * n_tok), *Yd = malloc(sizeof(float) * n_out * n_tok);
        float *Yx = malloc(sizeof(float) * n_out * n_tok), *Y5 = malloc(sizeof(float) * n_out * 5);
        float *wf = malloc(sizeof(float) * n_in), *Yt = malloc(sizeof(float) * n_out * n_tok);
        for (int64_t o = 0; o < n_out; o++) random_blocks(t, W + o * wrb, n_in);
        for (int64_t q = 0; q < n_tok; q++) activation_floats(X + q * n_in, n_in), k.quantize(X + q * n_in, A + q * arb, n_in);
        /* the x4 form (and the single-token dot for the 17th token) */
        cpu_kernel kx;
        cpu_kernel_get_at(t, NIB_SIMD_AVX2, &kx);
        for (int64_t o = 0; o < n_out; o++) {
            int64_t q = 0;
            for (float four[4]; q + 4 <= n_tok; q += 4) {
                kx.vec_dot_x4(n_in, W + o * wrb, A + q * arb, arb, four);
                for (int m = 0; m < 4; m++) Yx[(q + m) * n_out + o] = four[m];
            }
            for (; q < n_tok; q++) Yx[q * n_out + o] = kx.vec_dot(n_in, W + o * wrb, A + q * arb);
        }
        poison(Yd, n_out * n_tok), poison(Yt, n_out * n_tok), poison(Y5, n_out * 5);
        nib_cpu_set_simd_level((nib_simd_level)level);
        CHECK(nib_cpu_matmul(NULL, t, W, n_in, n_out, X, n_tok, Yd, scratch) == NIB_OK, "decoded");
        CHECK(nib_cpu_matmul(pool, t, W, n_in, n_out, X, n_tok, Yt, scratch) == NIB_OK, "decoded, 3 threads");
        CHECK(nib_cpu_matmul(pool, t, W, n_in, n_out, X + 12 * n_in, 5, Y5, scratch) == NIB_OK, "decoded, 5 tokens");
        nib_cpu_set_simd_level(prev);
        const char *lv = nib_simd_level_name((nib_simd_level)level);
        CHECK(memcmp(Yd, Yt, sizeof(float) * n_out * n_tok) == 0, "%s decoded at %s: 1 and 3 threads differ",
              tr(t)->name, lv);
        CHECK(memcmp(Y5, Yd + 12 * n_out, sizeof(float) * n_out * 5) == 0, "%s decoded at %s: tokens 12-16 alone differ",
              tr(t)->name, lv);
        int bad = 0;
        double worst = 0;
        for (int64_t o = 0; o < n_out; o++) {
            tr(t)->dequantize(W + o * wrb, wf, n_in);
            for (int64_t q = 0; q < n_tok; q++) {
                double m = 0;
                for (int64_t i = 0; i < n_in; i++) m += fabs((double)wf[i] * X[q * n_in + i]);
                const double e = fabs((double)Yd[q * n_out + o] - Yx[q * n_out + o]) / (1e-5 * m);
                worst = fmax(worst, e);
                bad += !(e <= 1.0);
            }
        }
        CHECK(bad == 0, "%s decoded at %s: %d outputs off the x4 form's by more than 1e-5 of sum |w||x|", tr(t)->name,
              lv, bad);
        printf("      %-7s decoded at %-11s vs the x4 form: worst difference / bound %.4f\n", tr(t)->name, lv, worst);
        free(W), free(scratch), free(A), free(X), free(Yd), free(Yx), free(Y5), free(wf), free(Yt);
    }
    nib_pool_free(pool);
    if (!tested) SKIP("no level with decoded-ahead prompts on this CPU");
}

static void test_repack_rejects_bad_args(void) {
    const nib_simd_level prev = nib_cpu_simd_level();
    int level = (int)nib_cpu_detect_simd() + 1;
    if (!next_packed_level(NIB_TYPE_Q4_K, &level)) {
        nib_cpu_set_simd_level(prev);
        SKIP("no packed Q4_K layout at this CPU's SIMD levels");
    }
    uint8_t w[4096], p[4096], scratch[4096];
    float x[256], y[8];
    rng_bytes(w, sizeof w);
    random_normal(x, 256, 1.0);
    CHECK(nib_cpu_repack_bytes(NIB_TYPE_Q4_K, 256, 8) == sizeof(block_q4_Kx8), "one group");
    CHECK(nib_cpu_repack_bytes(NIB_TYPE_Q4_K, 256, 12) == 0, "12 rows are not whole groups");
    CHECK(nib_cpu_repack_bytes(NIB_TYPE_Q4_K, 128, 8) == 0, "128 is not whole super-blocks");
    CHECK(nib_cpu_repack_bytes(NIB_TYPE_Q3_K, 256, 8) == 0, "Q3_K has no packed layout");
    CHECK(nib_cpu_packed_min_tokens(NIB_TYPE_Q3_K, (nib_simd_level)level) == 0, "Q3_K: no minimum (no layout)");
    CHECK(nib_cpu_packed_min_tokens(NIB_TYPE_Q4_K, (nib_simd_level)level) == 1, "Q4_K: packed from one token");
    if (level == NIB_SIMD_AVX512_VNNI)
        CHECK(nib_cpu_packed_min_tokens(NIB_TYPE_Q6_K, NIB_SIMD_AVX512_VNNI) == 2,
              "Q6_K: one token stays on the file layout");
    nib_simd_level lay = NIB_SIMD_SCALAR;
    CHECK(nib_cpu_repack(NULL, NIB_TYPE_Q4_K, w, 256, 12, p, &lay) == NIB_ERR_ARG, "repack of 12 rows");
    CHECK(nib_cpu_repack(NULL, NIB_TYPE_Q4_K, w, 256, 8, p, NULL) == NIB_ERR_ARG, "repack without a layout out");
    CHECK(nib_cpu_repack(NULL, NIB_TYPE_Q4_K, w, 256, 8, p, &lay) == NIB_OK && lay == (nib_simd_level)level,
          "repack of one group");
    CHECK(nib_cpu_matmul_packed(NULL, NIB_TYPE_Q3_K, lay, p, 256, 8, x, 1, y, scratch) == NIB_ERR_UNSUPPORTED,
          "packed Q3_K");
    CHECK(nib_cpu_matmul_packed(NULL, NIB_TYPE_Q4_K, lay, p, 256, 12, x, 1, y, scratch) == NIB_ERR_ARG,
          "packed matmul of 12 rows");
    /* a layout the copy cannot be in, or one this CPU cannot run: an error, not other numbers */
    CHECK(nib_cpu_matmul_packed(NULL, NIB_TYPE_Q4_K, NIB_SIMD_SCALAR, p, 256, 8, x, 1, y, scratch) ==
              NIB_ERR_UNSUPPORTED,
          "packed matmul in the scalar layout");
    if (nib_cpu_detect_simd() < NIB_SIMD_AVX512_VNNI)
        CHECK(nib_cpu_matmul_packed(NULL, NIB_TYPE_Q4_K, NIB_SIMD_AVX512_VNNI, p, 256, 8, x, 1, y, scratch) ==
                  NIB_ERR_UNSUPPORTED,
              "packed matmul in a layout above this CPU's level");
    nib_cpu_set_simd_level(NIB_SIMD_SCALAR);
    CHECK(nib_cpu_repack_bytes(NIB_TYPE_Q4_K, 256, 8) == 0, "scalar level: no packed layout");
    nib_cpu_set_simd_level(prev);
}

static void test_get_row(void) {
    rng_seed(606);
    static uint8_t w[8 * 4096];
    static float got[1024], ref[1024];
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        const nib_type_traits *tt = tr((nib_type)t);
        if (!tt) continue;
        const int64_t n = 1024;
        const size_t rb = row_bytes((nib_type)t, n);
        for (int r = 0; r < 4; r++) random_blocks((nib_type)t, w + r * rb, n);
        poison(got, n);
        CHECK(nib_cpu_get_row((nib_type)t, w, n, 3, got) == NIB_OK, "%s get_row", tt->name);
        tt->dequantize(w + 3 * rb, ref, n);
        CHECK(memcmp(got, ref, sizeof(float) * (size_t)n) == 0, "%s row 3 differs from dequantize", tt->name);
    }
    CHECK(nib_cpu_get_row(NIB_TYPE_Q4_0, w, 33, 0, got) == NIB_ERR_ARG, "33 not whole blocks");
    CHECK(nib_cpu_get_row(NIB_TYPE_Q4_0, w, 32, -1, got) == NIB_ERR_ARG, "negative row");
    CHECK(nib_cpu_get_row((nib_type)4, w, 32, 0, got) == NIB_ERR_UNSUPPORTED, "type 4");
}

int main(void) {
    RUN(test_simd_levels);
    RUN(test_pool_runs_every_index_once);
    RUN(test_act_quantizers_avx2);
    RUN(test_dot_kernels_avx2);
    RUN(test_dot_kernels_avx512);
    RUN(test_dot_kernels_extremes);
    RUN(test_matmul_rejects_bad_args);
    RUN(test_matmul_every_format_scalar);
    RUN(test_matmul_every_format_best);
    RUN(test_matmul_threads_agree);
    RUN(test_repack_q4_K_layout);
    RUN(test_repack_legacy_layout);
    RUN(test_repack_iq4_layout);
    RUN(test_matmul_packed);
    RUN(test_matmul_decoded);
    RUN(test_repack_rejects_bad_args);
    RUN(test_get_row);
    return test_summary();
}
