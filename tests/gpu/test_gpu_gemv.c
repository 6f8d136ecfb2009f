/* The CUDA GEMV kernels against the scalar reference of quant/.
 *
 * For every format with a CUDA kernel (nib_cuda_has_gemv), on random valid
 * blocks (random bytes, then every fp16 scale replaced by a finite random
 * value of either sign, never zero) and random normal activations, over shapes
 * that include row counts not a multiple of the 4 rows of a thread block,
 * a long row (n_in 14336), short ones (n_in 32..896), and each launch choice
 * of one token (split K 2 at 8192 x 2050, 4 at 4096 x 131, 4096 x 1003 and the
 * longer rows, 4 rows a warp group at 3584 x 2051 and 4096 x 2051; the
 * plain kernels below 4096):
 *
 *  - activation quantization: the int8 blocks the GPU left in scratch must be
 *    bit-identical to the CPU's rounding of the same rule (d = amax/127,
 *    q = roundf(x/d), s = d*sum(q), all single IEEE operations on both sides);
 *  - the output, poisoned with NaN before each launch, against a float64 dot
 *    of the reference dequantization (nib_dequantize_row) with those same
 *    int8 activations. The integer part of every dp4a sub-block is exact, so
 *    the two differ only by fp32 rounding: each item's value takes a handful
 *    (<= 8) of fp32 roundings and each lane then adds about n_in/1024 items,
 *    plus 5 shuffle levels, so |gpu - ref| <= (n_in/1024 + 13) u T, where T is
 *    the sum of the magnitudes of the terms added (u = 2^-24). T exceeds
 *    M = sum_j |w_j a_j| when scale and minimum terms cancel; on random blocks
 *    by at most a small factor, bounded here by 8. So the check is
 *        |gpu - ref| <= 8 (n_in/1024 + 13) u M     (+ 1e-30 for an all-tiny row)
 *    F16/BF16 read x as floats: the same bound with x itself as a_j.
 *    A wrong nibble or scale at n_in <= 896 moves a row by ~M/n >= 1e-3 M,
 *    far above the bound (~1e-5 M).
 *  - end to end against the unquantized x, so a wrong activation scale cannot
 *    hide: rounding x to q*d moves each x_j by at most d_j/2 (d_j the scale of
 *    its block; 1/d is rounded once, so up to (1 + 2^-13) d_j/2), hence
 *        |gpu - sum_j w_j x_j| <= (1 + 1e-4) sum_j |w_j| d_j / 2 + the bound above.
 *    The NMSE against the float x is printed too (~3e-5 on normal data).
 *  - error paths: no kernel (Q8_K, an activation format), n_in not whole blocks, and an upload
 *    far larger than the device, which must say bytes needed and free.
 *
 * Without a usable GPU (no driver, no device, or a build without CUDA) the
 * run is one skip with the reason.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "core/fp16.h"
#include "cuda/cuda.h"
#include "nib.h"
#include "quant/blocks.h"
#include "quant/types.h"
#include "test.h"

#define U32 (1.0 / 16777216.0) /* fp32 unit roundoff */


#include "gpu_test.h"

/* ---- one format, one shape --------------------------------------------------------- */

typedef struct shape {
    int64_t n_in, n_out;
} shape;

static const shape shapes[] = {
    {256, 1},    {512, 37},    {896, 33}, {1024, 4},    {3584, 2051}, {4096, 131},
    {4096, 1003}, {4096, 2051}, {4864, 9}, {8192, 2050}, {14336, 67},
};

/* Runs one case; returns false on a failed check (CHECKs already counted). */
static void check_case(nib_type t, int64_t n_in, int64_t n_out, bool tiled) {
    nib_error err = {0};
    size_t rb = 0;
    if (!nib_row_bytes(t, n_in, &rb)) return;  /* shape not whole blocks of this format */
    const bool q8 = nib_cuda_gemv_path(t)[0] == 'd';
    uint8_t *W = malloc(rb * (size_t)n_out + 16);
    float *x = malloc(sizeof(float) * (size_t)n_in), *y = malloc(sizeof(float) * (size_t)n_out);
    float *row = malloc(sizeof(float) * (size_t)n_in), *a = malloc(sizeof(float) * (size_t)n_in);
    int8_t *qs = malloc((size_t)n_in);
    float *ds = malloc(sizeof(float) * 2 * (size_t)(n_in / 32 + 1));
    random_rows(t, W, n_in, n_out);
    for (int64_t i = 0; i < n_in; i++) x[i] = (float)rng_normal();

    nib_cuda_weight *w = NULL;
    float *dx = NULL, *dy = NULL;
    void *scratch = NULL;
    nib_status s = nib_cuda_weight_upload(t, W, n_in, n_out, &w, &err);
    CHECK(s == NIB_OK, "%s %lldx%lld upload: %s", nib_type_name(t), (long long)n_in, (long long)n_out, err.msg);
    if (s != NIB_OK) goto done;
    if (tiled) { /* the same checks on the tiled layout, where the shape has it */
        bool did = false;
        s = nib_cuda_weight_tile(w, &did, &err);
        CHECK(s == NIB_OK, "%s %lldx%lld tile: %s", nib_type_name(t), (long long)n_in, (long long)n_out, err.msg);
        if (s != NIB_OK || !did) goto done;
        printf("      (tiled)");
    }
    dx = nib_cuda_alloc(sizeof(float) * (size_t)n_in, &err);
    dy = nib_cuda_alloc(sizeof(float) * (size_t)n_out, &err);
    size_t sb = nib_cuda_gemv_scratch_bytes(w);
    scratch = sb ? nib_cuda_alloc(sb, &err) : NULL;
    CHECK(dx && dy && (!sb || scratch), "alloc: %s", err.msg);
    if (!dx || !dy || (sb && !scratch)) goto done;
    s = nib_cuda_copy_to_device(dx, x, sizeof(float) * (size_t)n_in, &err);
    if (s == NIB_OK) s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);  /* poison */
    if (s == NIB_OK) s = nib_cuda_gemv(w, dx, dy, scratch, NULL, &err);
    if (s == NIB_OK) s = nib_cuda_sync(&err);
    if (s == NIB_OK) s = nib_cuda_copy_to_host(y, dy, sizeof(float) * (size_t)n_out, &err);
    CHECK(s == NIB_OK, "%s %lldx%lld gemv: %s", nib_type_name(t), (long long)n_in, (long long)n_out, err.msg);
    if (s != NIB_OK) goto done;

    /* the activations the kernel saw: check the quantization, then use them */
    if (q8) {
        s = nib_cuda_gemv_scratch_read(w, scratch, qs, ds, &err);
        CHECK(s == NIB_OK, "scratch read: %s", err.msg);
        if (s != NIB_OK) goto done;
        int bad = 0;
        for (int64_t b = 0; b < n_in / 32; b++) {
            float amax = 0.0f;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            int sum = 0;
            for (int j = 0; j < 32; j++) {
                int q = (int)roundf(x[32 * b + j] * id);
                sum += q;
                if (q != qs[32 * b + j]) bad++;
                a[32 * b + j] = (float)qs[32 * b + j] * ds[2 * b];
            }
            if (d != ds[2 * b] || d * (float)sum != ds[2 * b + 1]) bad++;
        }
        CHECK(bad == 0, "%s: %d activation quants/scales differ from the CPU rounding", nib_type_name(t), bad);
    } else {
        memcpy(a, x, sizeof(float) * (size_t)n_in);
    }

    double worst = 0.0, err2 = 0.0, ref2 = 0.0;
    int64_t bad_rows = 0, first_bad = -1, bad_e2e = 0;
    /* fp32 FMA chains of the float path are n_in/32 long per lane (no cancellation factor) */
    const double bound_rel = q8 ? 8.0 * ((double)n_in / 1024.0 + 13.0) * U32 : 2.0 * ((double)n_in / 32.0 + 13.0) * U32;
    for (int64_t o = 0; o < n_out; o++) {
        nib_dequantize_row(t, W + (size_t)o * rb, row, n_in);
        double ref = 0.0, m = 0.0, ref_f = 0.0, half_step = 0.0;
        for (int64_t j = 0; j < n_in; j++) {
            ref += (double)row[j] * (double)a[j];
            m += fabs((double)row[j] * (double)a[j]);
            ref_f += (double)row[j] * (double)x[j];
            if (q8) half_step += fabs((double)row[j]) * 0.5 * (double)ds[2 * (j / 32)];
        }
        if (!(fabs((double)y[o] - ref_f) <= (1.0 + 1e-4) * half_step + bound_rel * m + 1e-30)) bad_e2e++;
        const double diff = fabs((double)y[o] - ref), tol = bound_rel * m + 1e-30;
        if (!(diff <= tol)) {  /* NaN fails */
            if (first_bad < 0) first_bad = o;
            bad_rows++;
        }
        if (m > 0 && diff / m > worst) worst = diff / m;
        err2 += ((double)y[o] - ref_f) * ((double)y[o] - ref_f);
        ref2 += ref_f * ref_f;
    }
    CHECK(bad_rows == 0, "%s %lldx%lld: %lld rows out of tolerance (first row %lld: gpu %g), bound %.2g M",
          nib_type_name(t), (long long)n_in, (long long)n_out, (long long)bad_rows, (long long)first_bad,
          first_bad >= 0 ? (double)y[first_bad] : 0.0, bound_rel);
    const double nmse = ref2 > 0 ? err2 / ref2 : 0.0;
    CHECK(bad_e2e == 0, "%s %lldx%lld: %lld rows further from the float-x dot than activation rounding allows",
          nib_type_name(t), (long long)n_in, (long long)n_out, (long long)bad_e2e);
    printf("      %-7s %6lld x %-6lld max |gpu-ref|/M %.2e (bound %.1e)  NMSE vs float x %.1e\n", nib_type_name(t),
           (long long)n_in, (long long)n_out, worst, bound_rel, nmse);
done:
    nib_cuda_weight_free(w);
    nib_cuda_free(dx);
    nib_cuda_free(dy);
    nib_cuda_free(scratch);
    free(W), free(x), free(y), free(row), free(a), free(qs), free(ds);
}

static nib_type cur_type;

static void test_gemv_format(void) {
    rng_seed(1000 + (uint64_t)cur_type);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_case(cur_type, shapes[i].n_in, shapes[i].n_out, false);
}

/* The tiled layout (nib_cuda_weight_tile): the CPU checks above on the
 * shapes it takes (the K-quants, Q4_0, the IQ and TQ formats; rows a multiple of 2048, and rows enough to
 * fill the device), then every other
 * reader of a tiled matrix against the same matrix in the file's layout:
 * 3 prompt tokens, the gate/up GLU on 3, the fused argmax. Other summation order
 * than the item kernels: within 1e-5 of the largest |y|, plus the same
 * argmax row (random rows: a near-tie at the top is ~1e-5 likely). */
static int64_t compare_rows(const float *a, const float *b, int64_t n, double *worst) {
    double mx = 0.0, d = 0.0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) mx = fabs((double)a[i]) > mx ? fabs((double)a[i]) : mx;
    for (int64_t i = 0; i < n; i++) {
        const double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= 1e-5 * mx)) bad++; /* NaN fails */
        d = e > d ? e : d;
    }
    *worst = mx > 0 ? d / mx : 0.0;
    return bad;
}
static void tiled_paths(nib_type t, int64_t n_in, int64_t n_out) {
    nib_error err = {0};
    size_t rb = 0;
    nib_row_bytes(t, n_in, &rb);
    const int nt = 3;
    uint8_t *Wg = malloc(rb * (size_t)n_out), *Wu = malloc(rb * (size_t)n_out);
    float *x = malloc(sizeof(float) * (size_t)(n_in * nt));
    float *y1 = malloc(sizeof(float) * (size_t)(n_out * nt)), *y2 = malloc(sizeof(float) * (size_t)(n_out * nt));
    random_rows(t, Wg, n_in, n_out);
    random_rows(t, Wu, n_in, n_out);
    for (int64_t i = 0; i < n_in * nt; i++) x[i] = (float)rng_normal();
    /* [0] the file's layout; g[1] tiled alone, (g[2], u[2]) a tiled gate/up pair */
    nib_cuda_weight *g[3] = {NULL, NULL, NULL}, *u[3] = {NULL, NULL, NULL};
    float *dx = nib_cuda_alloc(sizeof(float) * (size_t)(n_in * nt), &err);
    float *dy = nib_cuda_alloc(sizeof(float) * (size_t)(n_out * nt), &err);
    float *tmp = nib_cuda_alloc(sizeof(float) * (size_t)(n_out * nt), &err);
    void *act = nib_cuda_alloc(nib_cuda_act_bytes(n_in, nt), &err);
    uint64_t *key = nib_cuda_alloc(sizeof(uint64_t), &err);
    uint64_t keys[2] = {0, 0};
    bool did1 = false, did2 = false;
    nib_status s = dx && dy && tmp && act && key ? NIB_OK : NIB_ERR_NOMEM;
    for (int k = 0; k < 3 && s == NIB_OK; k++) {
        s = nib_cuda_weight_upload(t, Wg, n_in, n_out, &g[k], &err);
        if (s == NIB_OK && k != 1) s = nib_cuda_weight_upload(t, Wu, n_in, n_out, &u[k], &err);
    }
    if (s == NIB_OK) s = nib_cuda_weight_tile(g[1], &did1, &err);
    if (s == NIB_OK) s = nib_cuda_weight_tile_glu(g[2], u[2], &did2, &err);
    CHECK(s == NIB_OK && did1 && did2, "%s %lldx%lld: upload/tile: %s (tiled %d, pair %d)", nib_type_name(t),
          (long long)n_in, (long long)n_out, err.msg, (int)did1, (int)did2);
    if (s != NIB_OK || !did1 || !did2) goto done;
    /* a pair's half alone is refused, not computed on the wrong rows */
    CHECK(nib_cuda_matmul(g[2], dx, act, 1, dy, false, NULL, &err) == NIB_ERR_ARG, "half of a tiled pair accepted");
    s = nib_cuda_copy_to_device(dx, x, sizeof(float) * (size_t)(n_in * nt), &err);
    const char *what[3] = {"3 tokens", "GLU, 3 tokens", "argmax"};
    for (int c = 0; c < 3 && s == NIB_OK; c++) {
        float *out[2] = {y1, y2};
        s = nib_cuda_act_quantize(dx, n_in, c == 2 ? 1 : nt, act, NULL, &err);
        for (int k = 0; k < 2 && s == NIB_OK; k++) {
            s = nib_cuda_fill_f32(dy, NAN, (size_t)(n_out * nt), &err);
            if (s == NIB_OK && c == 0) s = nib_cuda_matmul(g[k], dx, act, nt, dy, false, NULL, &err);
            if (s == NIB_OK && c == 1)
                s = nib_cuda_matmul_glu(g[2 * k], u[2 * k], dx, act, nt, NIB_CUDA_GLU_SILU, dy, tmp, NULL, &err);
            if (s == NIB_OK && c == 2 && (s = nib_cuda_fill_f32((float *)key, 0.0f, 2, &err)) == NIB_OK)
                s = nib_cuda_matmul_argmax(g[k], dx, act, dy, key, NULL, &err);
            if (s == NIB_OK) s = nib_cuda_sync(&err);
            if (s == NIB_OK) s = nib_cuda_copy_to_host(out[k], dy, sizeof(float) * (size_t)(n_out * nt), &err);
            if (s == NIB_OK && c == 2) s = nib_cuda_copy_to_host(&keys[k], key, sizeof(uint64_t), &err);
        }
        CHECK(s == NIB_OK, "%s tiled %s: %s", nib_type_name(t), what[c], err.msg);
        if (s != NIB_OK) break;
        double worst = 0.0;
        const int64_t n = c == 2 ? n_out : n_out * nt;
        const int64_t bad = compare_rows(y1, y2, n, &worst);
        CHECK(bad == 0, "%s %lldx%lld tiled %s: %lld of %lld outputs differ by more than 1e-5 of max |y|",
              nib_type_name(t), (long long)n_in, (long long)n_out, what[c], (long long)bad, (long long)n);
        if (c == 2)
            CHECK((uint32_t)keys[0] == (uint32_t)keys[1], "%s tiled argmax: row %u, file layout %u", nib_type_name(t),
                  0xFFFFFFFFu - (uint32_t)keys[1], 0xFFFFFFFFu - (uint32_t)keys[0]);
        printf("      %-5s %6lld x %-6lld tiled %-13s max |diff| %.1e of max |y|\n", nib_type_name(t), (long long)n_in,
               (long long)n_out, what[c], worst);
    }
done:
    for (int k = 0; k < 3; k++) nib_cuda_weight_free(g[k]), nib_cuda_weight_free(u[k]);
    nib_cuda_free(dx), nib_cuda_free(dy), nib_cuda_free(tmp), nib_cuda_free(act), nib_cuda_free(key);
    free(Wg), free(Wu), free(x), free(y1), free(y2);
}
static void test_tiled(void) {
    const nib_type types[] = {NIB_TYPE_Q4_K,   NIB_TYPE_Q6_K,   NIB_TYPE_Q4_0,   NIB_TYPE_Q5_K,  NIB_TYPE_Q3_K,
                              NIB_TYPE_Q2_K,   NIB_TYPE_IQ4_XS, NIB_TYPE_IQ2_XXS, NIB_TYPE_IQ2_XS, NIB_TYPE_IQ2_S,
                              NIB_TYPE_IQ3_XXS, NIB_TYPE_IQ3_S, NIB_TYPE_IQ1_S,  NIB_TYPE_IQ1_M,  NIB_TYPE_TQ2_0,
                              NIB_TYPE_TQ1_0,  NIB_TYPE_Q4_1,   NIB_TYPE_Q5_0,    NIB_TYPE_Q5_1,  NIB_TYPE_IQ4_NL,
                              NIB_TYPE_MXFP4};
    rng_seed(77);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        for (size_t j = 0; j < sizeof shapes / sizeof shapes[0]; j++)
            check_case(types[i], shapes[j].n_in, shapes[j].n_out, true);
        /* tiled where there are rows for 8 warps a multiprocessor (up to 256
         * of them); about square matrices only for the formats that tile
         * them (t32_ops.sq), so the tiled paths take taller ones */
        check_case(types[i], 4096, 4097, true);
        check_case(types[i], 4096, 8195, true);
        check_case(types[i], 2048, 8195, true);
        check_case(types[i], 14336, 1030, true); /* Q6_K's split long rows: 7 tiles a 4-row group */
        /* rows of 14 and 74 blocks: 16-row groups of 7 and 37 tiles (gemv_t32_seg), the last group partial */
        check_case(types[i], 3584, 8195, true);
        check_case(types[i], 18944, 2115, true);
        check_case(types[i], 5120, 2203, true); /* 20 blocks: 8-row groups of 5 tiles */
        /* 15 and 21 blocks (Gemma 3 12B, 27B): 32-row groups of 15 and 21 tiles, the last group partial */
        check_case(types[i], 3840, 8195, true);
        check_case(types[i], 5376, 4229, true);
        tiled_paths(types[i], 4096, 8199);
        tiled_paths(types[i], 2048, 8197);
        tiled_paths(types[i], 3584, 8199);
        tiled_paths(types[i], 3840, 8199);
    }
}

static void test_errors(void) {
    nib_error err = {0};
    nib_cuda_weight *w = NULL;
    uint8_t blk[1024] = {0};
    CHECK(nib_cuda_weight_upload(NIB_TYPE_Q8_K, blk, 256, 1, &w, &err) == NIB_ERR_UNSUPPORTED && !w,
          "no-kernel type accepted");
    CHECK(nib_cuda_weight_upload(NIB_TYPE_Q4_0, blk, 48, 1, &w, &err) == NIB_ERR_ARG && !w, "n_in 48 accepted");
    /* ~1.1 TB of Q8_0: more than any device; must fail before touching the host pointer */
    nib_status s = nib_cuda_weight_upload(NIB_TYPE_Q8_0, blk, (int64_t)1 << 20, (int64_t)1 << 20, &w, &err);
    CHECK(s == NIB_ERR_NOMEM && !w && strstr(err.msg, "free"), "huge upload: status %d, '%s'", (int)s, err.msg);
    printf("      huge upload says: %s\n", err.msg);
}

/* TQ1_0 goes to the device as TQ2_0 (cuda/gpu_layout.h): 66 bytes a block
 * there, and the memory plan counts them (the products are checked against
 * TQ1_0's CPU reference by gemv_TQ1_0 above) */
static void test_tq1_0_as_tq2_0(void) {
    nib_error err = {0};
    nib_cuda_weight *w = NULL;
    const int64_t n_in = 512, n_out = 3;
    uint8_t blk[2 * 54 * 3];
    for (size_t i = 0; i < sizeof blk; i++) blk[i] = (uint8_t)(rng_u64() >> 7);
    CHECK(nib_cuda_device_type(NIB_TYPE_TQ1_0) == NIB_TYPE_TQ2_0, "TQ1_0 is kept as %s",
          nib_type_name(nib_cuda_device_type(NIB_TYPE_TQ1_0)));
    CHECK(nib_cuda_device_type(NIB_TYPE_Q4_K) == NIB_TYPE_Q4_K, "Q4_K is kept as another type");
    CHECK(nib_cuda_layout_bytes(NIB_TYPE_TQ1_0, 54 * 10) == 66 * 10, "TQ1_0 layout bytes %llu for 10 blocks",
          (unsigned long long)nib_cuda_layout_bytes(NIB_TYPE_TQ1_0, 54 * 10));
    nib_status s = nib_cuda_weight_upload(NIB_TYPE_TQ1_0, blk, n_in, n_out, &w, &err);
    CHECK(s == NIB_OK, "TQ1_0 upload: %s", err.msg);
    if (s == NIB_OK) {
        CHECK(nib_cuda_weight_bytes(w) == (size_t)(66 * 2 * 3), "TQ1_0 takes %zu device bytes, expected %d",
              nib_cuda_weight_bytes(w), 66 * 2 * 3);
        nib_cuda_weight_free(w);
    }
}

int main(void) {
    if (!gpu_test_start("cuda")) return test_summary();
    char name[64];
    printf("formats without a CUDA kernel:");
    for (int t = 0; t < NIB_TYPE_COUNT; t++)
        if (nib_type_traits_get(t) && !nib_cuda_has_gemv((nib_type)t)) printf(" %s", nib_type_name((nib_type)t));
    printf("\n");
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        if (!nib_cuda_has_gemv((nib_type)t)) continue;
        cur_type = (nib_type)t;
        snprintf(name, sizeof name, "gemv_%s (%s)", nib_type_name(cur_type), nib_cuda_gemv_path(cur_type));
        test_run(name, test_gemv_format);
    }
    RUN(test_tiled);
    RUN(test_errors);
    RUN(test_tq1_0_as_tq2_0);
    return test_summary();
}
