/* The prompt GEMM (cuda_gemm.h) against the CPU's decoder and a float64
 * product.
 *
 *  - y = W x over n_tok token rows, for several formats, shapes whose rows
 *    and tokens fit no tile (n_out 1,000 and 203, 37 and 64 tokens), with
 *    and without the residual add, against sum_i dequant(W)[o][i] x[t][i] in
 *    double (W decoded by nib_dequantize_row, the reference decoder).
 *    Bound: the GEMM rounds both inputs to fp16 (11 significant bits,
 *    relative error up to 2^-11 each) and accumulates in fp32, so each product is off
 *    by ~1e-3 relative in the worst case, ~5e-4 on average, with random sign;
 *    over K random terms the output's error is ~5e-4 of the terms' rms times
 *    sqrt(K), against an output of rms sqrt(K) times that: NMSE ~3e-7. The
 *    bound is 1e-5 (a wrong row, token or scale gives ~1); each output also
 *    within 1e-2 of the outputs' rms.
 *  - the GLU form, h = silu(gate x) * (up x) and the GELU-tanh one, against
 *    the same float64 products (expf/tanhf on both: within the same NMSE).
 *  - a matrix larger than the scratch is refused with NIB_ERR_ARG, and
 *    `takes` says so first; so is a chunk of more activations than it holds.
 *  - an activation past fp16's range (1e6) is saturated, not turned into
 *    inf: every output stays finite; a NaN activation is not hidden.
 * Inputs random normal; outputs poisoned with NaN before each call. Without
 * a GPU, or without cuBLAS on the machine: one skip with the reason. */
#include <stdbool.h>
#include <stdlib.h>

#include "cuda/cuda.h"
#include "cuda/cuda_gemm.h"
#include "nib.h"
#include "test.h"
#include "gpu_test.h"

static nib_cuda_blas *G;


/* a random matrix on the device, and its rows decoded on the host */
static nib_cuda_weight *random_matrix(nib_type t, int64_t n_in, int64_t n_out, float *dq) {
    nib_error err;
    size_t rb = 0;
    nib_row_bytes(t, n_in, &rb);
    uint8_t *W = malloc(rb * (size_t)n_out);
    random_rows(t, W, n_in, n_out);
    for (int64_t r = 0; r < n_out; r++) nib_dequantize_row(t, W + rb * (size_t)r, dq + r * n_in, n_in);
    nib_cuda_weight *w = NULL;
    CHECK(nib_cuda_weight_upload(t, W, n_in, n_out, &w, &err) == NIB_OK, "upload %s %lldx%lld: %s", nib_type_name(t),
          (long long)n_in, (long long)n_out, err.msg);
    free(W);
    return w;
}

/* out[t][o] = sum_i dq[o][i] x[t][i] in double */
static void ref_product(const float *dq, const float *x, int64_t n_in, int64_t n_out, int n_tok, double *out) {
    for (int t = 0; t < n_tok; t++)
        for (int64_t o = 0; o < n_out; o++) {
            double s = 0.0;
            for (int64_t i = 0; i < n_in; i++) s += (double)dq[o * n_in + i] * (double)x[t * n_in + i];
            out[t * n_out + o] = s;
        }
}

/* NMSE of y against want, and the largest |y - want| over want's rms */
static bool close_enough(const float *y, const double *want, int64_t n, const char *what) {
    double se = 0.0, ss = 0.0, worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = (double)y[i] - want[i];
        se += d * d, ss += want[i] * want[i];
        if (!(fabs(d) <= worst)) worst = fabs(d); /* NaN sticks */
    }
    const double nmse = se / (ss > 0 ? ss : 1), rms = sqrt(ss / (double)n);
    const bool ok = nmse <= 1e-5 && worst <= 1e-2 * rms;
    if (!ok) fprintf(stderr, "  %s: NMSE %.3g (bound 1e-5), worst %.3g of rms %.3g (bound 1e-2)\n", what, nmse, worst / rms, rms);
    return ok;
}

static const nib_type types[] = {NIB_TYPE_Q4_0, NIB_TYPE_Q8_0, NIB_TYPE_Q4_K, NIB_TYPE_Q6_K,
                                 NIB_TYPE_F16,  NIB_TYPE_IQ4_XS, NIB_TYPE_MXFP4};

static void test_gemm_formats(void) {
    const int64_t shapes[][2] = {{1024, 1000}, {512, 203}};
    const int toks[] = {37, 64};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const nib_type t = types[ti];
            const int64_t n_in = shapes[si][0], n_out = shapes[si][1];
            const int T = 64;
            nib_error err;
            float *dq = malloc(sizeof(float) * (size_t)(n_in * n_out));
            nib_cuda_weight *w = random_matrix(t, n_in, n_out, dq);
            float *x = malloc(sizeof(float) * (size_t)(T * n_in)), *y0 = malloc(sizeof(float) * (size_t)(T * n_out));
            float *y = malloc(sizeof(float) * (size_t)(T * n_out));
            double *want = malloc(sizeof(double) * (size_t)(T * n_out));
            for (int64_t i = 0; i < T * n_in; i++) x[i] = (float)rng_normal();
            for (int64_t i = 0; i < T * n_out; i++) y0[i] = (float)rng_normal();
            float *dx = gpu_alloc(sizeof(float) * (size_t)(T * n_in)), *dy = gpu_alloc(sizeof(float) * (size_t)(T * n_out));
            if (!w || !dx || !dy) goto next;
            gpu_upload(dx, x, sizeof(float) * (size_t)(T * n_in));
            ref_product(dq, x, n_in, n_out, T, want);
            CHECK(nib_cuda_blas_takes(G, w), "%s %lldx%lld: not taken", nib_type_name(t), (long long)n_in,
                  (long long)n_out);
            for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++)
                for (int add = 0; add < 2; add++) {
                    const int n = toks[k];
                    if (add) gpu_upload(dy, y0, sizeof(float) * (size_t)(T * n_out));
                    else nib_cuda_fill_f32(dy, NAN, (size_t)(T * n_out), &err);
                    nib_status s = nib_cuda_gemm(G, w, dx, n, dy, add, NULL, &err);
                    CHECK(s == NIB_OK, "%s gemm %d tokens: %s", nib_type_name(t), n, err.msg);
                    gpu_download(y, dy, sizeof(float) * (size_t)(T * n_out));
                    double *w2 = malloc(sizeof(double) * (size_t)(n * n_out));
                    for (int64_t i = 0; i < n * n_out; i++) w2[i] = want[i] + (add ? (double)y0[i] : 0.0);
                    char what[96];
                    snprintf(what, sizeof what, "%s %lldx%lld, %d tokens, add %d", nib_type_name(t), (long long)n_in,
                             (long long)n_out, n, add);
                    CHECK(close_enough(y, w2, n * n_out, what), "%s: outputs off the float64 product", what);
                    /* the rows past n_tok are left alone: still NaN, or y0 with add */
                    int touched = 0;
                    for (int64_t i = n * n_out; i < T * n_out; i++)
                        touched += add ? y[i] != y0[i] : !isnan(y[i]);
                    CHECK(touched == 0, "%s: %d outputs past the last token written", what, touched);
                    free(w2);
                }
        next:
            nib_cuda_weight_free(w);
            nib_cuda_free(dx), nib_cuda_free(dy);
            free(dq), free(x), free(y0), free(y), free(want);
        }
}

static double silu(double v) { return v / (1.0 + exp(-v)); }
static double gelu_tanh(double v) { return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

static void test_gemm_glu(void) {
    const int64_t n_in = 768, n_out = 517;
    const int n = 41;
    const nib_cuda_glu kinds[] = {NIB_CUDA_GLU_SILU, NIB_CUDA_GLU_GELU_TANH};
    float *dg = malloc(sizeof(float) * (size_t)(n_in * n_out)), *du = malloc(sizeof(float) * (size_t)(n_in * n_out));
    nib_cuda_weight *wg = random_matrix(NIB_TYPE_Q4_K, n_in, n_out, dg), *wu = random_matrix(NIB_TYPE_Q4_K, n_in, n_out, du);
    float *x = malloc(sizeof(float) * (size_t)(n * n_in)), *h = malloc(sizeof(float) * (size_t)(n * n_out));
    double *rg = malloc(sizeof(double) * (size_t)(n * n_out)), *ru = malloc(sizeof(double) * (size_t)(n * n_out));
    double *want = malloc(sizeof(double) * (size_t)(n * n_out));
    for (int64_t i = 0; i < n * n_in; i++) x[i] = (float)rng_normal();
    float *dx = gpu_alloc(sizeof(float) * (size_t)(n * n_in)), *dh = gpu_alloc(sizeof(float) * (size_t)(n * n_out));
    float *dt = gpu_alloc(sizeof(float) * (size_t)(n * n_out));
    if (wg && wu && dx && dh && dt) {
        gpu_upload(dx, x, sizeof(float) * (size_t)(n * n_in));
        ref_product(dg, x, n_in, n_out, n, rg);
        ref_product(du, x, n_in, n_out, n, ru);
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            nib_error err;
            for (int64_t i = 0; i < n * n_out; i++)
                want[i] = (kinds[k] == NIB_CUDA_GLU_SILU ? silu(rg[i]) : gelu_tanh(rg[i])) * ru[i];
            nib_cuda_fill_f32(dh, NAN, (size_t)(n * n_out), &err);
            nib_status s = nib_cuda_gemm_glu(G, wg, wu, dx, n, kinds[k], dh, dt, NULL, &err);
            CHECK(s == NIB_OK, "gemm_glu: %s", err.msg);
            gpu_download(h, dh, sizeof(float) * (size_t)(n * n_out));
            CHECK(close_enough(h, want, n * n_out, kinds[k] == NIB_CUDA_GLU_SILU ? "GLU silu" : "GLU gelu-tanh"),
                  "GLU %d: outputs off the float64 products", (int)kinds[k]);
        }
    }
    nib_cuda_weight_free(wg), nib_cuda_weight_free(wu);
    nib_cuda_free(dx), nib_cuda_free(dh), nib_cuda_free(dt);
    free(dg), free(du), free(x), free(h), free(rg), free(ru), free(want);
}

/* the scratch holds 1024 x 1000 weights and 1024 x 64 activations: a
 * 1024 x 1001 matrix, or 65 tokens of 1024, are refused by name */
static void test_gemm_too_big(void) {
    float *dq = malloc(sizeof(float) * 1024 * 1001);
    nib_cuda_weight *w = random_matrix(NIB_TYPE_Q8_0, 1024, 1001, dq), *w2 = random_matrix(NIB_TYPE_Q8_0, 1024, 100, dq);
    float *dx = gpu_alloc(sizeof(float) * 1024 * 65), *dy = gpu_alloc(sizeof(float) * 1001 * 65);
    if (w && w2 && dx && dy) {
        nib_error err = {0};
        CHECK(!nib_cuda_blas_takes(G, w), "a matrix larger than the scratch is taken");
        CHECK(nib_cuda_gemm(G, w, dx, 40, dy, false, NULL, &err) == NIB_ERR_ARG && strstr(err.msg, "1024 x 1001"),
              "a matrix larger than the scratch: status %d, '%s'", (int)err.status, err.msg);
        CHECK(nib_cuda_gemm(G, w2, dx, 65, dy, false, NULL, &err) == NIB_ERR_ARG && strstr(err.msg, "65 tokens"),
              "more activations than the scratch: status %d, '%s'", (int)err.status, err.msg);
    }
    nib_cuda_weight_free(w), nib_cuda_weight_free(w2);
    nib_cuda_free(dx), nib_cuda_free(dy);
    free(dq);
}

/* one activation of 1e6 (fp16's largest is 65504): saturated, so the
 * outputs stay finite where inf would have made them inf or NaN; a NaN
 * activation stays NaN (its token's outputs are all NaN, no other's) */
static void test_gemm_saturates(void) {
    const int64_t n_in = 512, n_out = 64;
    const int n = 33;
    float *dq = malloc(sizeof(float) * (size_t)(n_in * n_out)), *x = malloc(sizeof(float) * (size_t)(n * n_in));
    float *y = malloc(sizeof(float) * (size_t)(n * n_out));
    nib_cuda_weight *w = random_matrix(NIB_TYPE_Q4_0, n_in, n_out, dq);
    for (int64_t i = 0; i < n * n_in; i++) x[i] = (float)rng_normal();
    x[5 * n_in + 7] = 1e6f, x[9 * n_in + 100] = -1e6f, x[20 * n_in + 3] = NAN;
    float *dx = gpu_alloc(sizeof(float) * (size_t)(n * n_in)), *dy = gpu_alloc(sizeof(float) * (size_t)(n * n_out));
    if (w && dx && dy) {
        nib_error err;
        gpu_upload(dx, x, sizeof(float) * (size_t)(n * n_in));
        nib_cuda_fill_f32(dy, NAN, (size_t)(n * n_out), &err);
        CHECK(nib_cuda_gemm(G, w, dx, n, dy, false, NULL, &err) == NIB_OK, "gemm: %s", err.msg);
        gpu_download(y, dy, sizeof(float) * (size_t)(n * n_out));
        int bad = 0, nan_row = 0;
        for (int64_t i = 0; i < n * n_out; i++) {
            if (i / n_out == 20) nan_row += isnan(y[i]) != 0;
            else bad += !isfinite(y[i]);
        }
        CHECK(bad == 0, "%d outputs not finite with an activation of 1e6", bad);
        CHECK(nan_row == n_out, "a NaN activation: %d of %lld outputs of its token NaN", nan_row, (long long)n_out);
    }
    nib_cuda_weight_free(w);
    nib_cuda_free(dx), nib_cuda_free(dy);
    free(dq), free(x), free(y);
}

/* the formats with a tiled layout (gemv_tiled.cu t32_table) */
static const nib_type tiled_types[] = {
    NIB_TYPE_Q4_0,    NIB_TYPE_Q4_K,  NIB_TYPE_Q6_K,  NIB_TYPE_Q5_K,  NIB_TYPE_Q3_K,   NIB_TYPE_Q2_K,   NIB_TYPE_IQ4_XS,
    NIB_TYPE_IQ2_XXS, NIB_TYPE_IQ2_XS, NIB_TYPE_IQ2_S, NIB_TYPE_IQ3_XXS, NIB_TYPE_IQ3_S, NIB_TYPE_IQ1_S,  NIB_TYPE_IQ1_M,
    NIB_TYPE_TQ2_0,   NIB_TYPE_TQ1_0, NIB_TYPE_Q4_1,  NIB_TYPE_Q5_0,  NIB_TYPE_Q5_1,   NIB_TYPE_IQ4_NL, NIB_TYPE_MXFP4};
#define N_TILED_TYPES (sizeof tiled_types / sizeof tiled_types[0])

/* The decoder of the tiled layout (gemv_tiled.cuh; the formats that have
 * one): a matrix of a shape the layout takes (rows of 2048, enough of them
 * to fill the device) tiled in place, then the GEMM's product against the
 * float64 one of the reference decoder's rows, same bounds as above. */
static void test_gemm_tiled(void) {
    const nib_type *tt = tiled_types;
    const int64_t n_in = 2048, n_out = 4352;
    const int n = 37;
    nib_error err;
    nib_cuda_blas *B = NULL;
    char why[160];
    CHECK(nib_cuda_blas_new(n_in * n_out, n_in * 64, &B, why, sizeof why, &err) == NIB_OK && B, "blas: %s %s", err.msg,
          why);
    if (!B) return;
    for (size_t ti = 0; ti < N_TILED_TYPES; ti++) {
        const nib_type t = tt[ti];
        float *dq = malloc(sizeof(float) * (size_t)(n_in * n_out));
        nib_cuda_weight *w = random_matrix(t, n_in, n_out, dq);
        float *x = malloc(sizeof(float) * (size_t)(n * n_in)), *y = malloc(sizeof(float) * (size_t)(n * n_out));
        double *want = malloc(sizeof(double) * (size_t)(n * n_out));
        for (int64_t i = 0; i < n * n_in; i++) x[i] = (float)rng_normal();
        float *dx = gpu_alloc(sizeof(float) * (size_t)(n * n_in)), *dy = gpu_alloc(sizeof(float) * (size_t)(n * n_out));
        bool tiled = false;
        if (!w || !dx || !dy) goto next;
        CHECK(nib_cuda_weight_tile(w, &tiled, &err) == NIB_OK && tiled, "%s %lldx%lld: not tiled (%s)", nib_type_name(t),
              (long long)n_in, (long long)n_out, err.msg);
        if (!tiled) goto next;
        gpu_upload(dx, x, sizeof(float) * (size_t)(n * n_in));
        ref_product(dq, x, n_in, n_out, n, want);
        nib_cuda_fill_f32(dy, NAN, (size_t)(n * n_out), &err);
        CHECK(nib_cuda_gemm(B, w, dx, n, dy, false, NULL, &err) == NIB_OK, "%s tiled gemm: %s", nib_type_name(t), err.msg);
        gpu_download(y, dy, sizeof(float) * (size_t)(n * n_out));
        char what[96];
        snprintf(what, sizeof what, "%s %lldx%lld tiled, %d tokens", nib_type_name(t), (long long)n_in, (long long)n_out, n);
        CHECK(close_enough(y, want, n * n_out, what), "%s: outputs off the float64 product", what);
        printf("      %s: checked\n", what);
    next:
        nib_cuda_weight_free(w);
        nib_cuda_free(dx), nib_cuda_free(dy);
        free(dq), free(x), free(y), free(want);
    }
    nib_cuda_blas_free(B);
}

/* The tiled layout's fp16 decode against the file layout's, bit for bit.
 * The same random bytes go up twice and one copy is tiled: alone, or with a
 * second matrix as a gate/up pair, whose halves the GEMM decodes one at a
 * time (every other row of the pair's tiles). Both copies go through GEMMs
 * whose activations are rows of the identity: token t of a chunk is 1.0 at
 * column c0 + t and 0 elsewhere, so y[t][o] is the decoded fp16 W[o][c0 + t]
 * exactly (one product by 1, exact in fp32, and zeros), and the two
 * layouts' outputs must be equal everywhere (as values: bit for bit but for
 * the sign of a zero). Rows of 8 tiled blocks (2048 elements: 4 rows a
 * tile), 16 (4096: 2 rows a tile), 32 (8192: a row a tile) and 56 (14336:
 * rows straddle tiles), row counts that leave the last tile part-filled
 * where the row length allows, all sized to be tiled on the H200's 132
 * multiprocessors (8 row groups a multiprocessor, rows not 3 times fewer
 * than their length). Each GEMM's output starts as NaN, and before each
 * matrix both GEMMs' fp16 scratches are filled with NaN (a GEMM on a Q4_0
 * matrix whose scales are all NaN), so a weight no thread decoded is NaN in
 * the output and fails the comparison. */
#define DECODE_TOKENS 1024 /* identity rows a GEMM */

typedef struct decode_ctx {
    nib_cuda_blas *bf, *bt; /* the file layout's GEMM and the tiled one's: two fp16 scratches */
    nib_cuda_weight *nan_w; /* (n_out, n_in) Q4_0, every scale NaN */
    const float *eye;       /* (n_in, n_in) device: the identity */
    float *dyf, *dyt;       /* (DECODE_TOKENS, n_out) device */
    float *yf, *yt;         /* the same, host */
    int64_t n_in, n_out;
} decode_ctx;

/* wf decoded against wt, every weight, through GEMMs on the identity's rows */
static void check_same_decode(const decode_ctx *c, nib_cuda_weight *wf, nib_cuda_weight *wt, const char *what) {
    nib_error err;
    const int64_t n_in = c->n_in, n_out = c->n_out;
    bool ok = nib_cuda_gemm(c->bf, c->nan_w, c->eye, 1, c->dyf, false, NULL, &err) == NIB_OK &&
              nib_cuda_gemm(c->bt, c->nan_w, c->eye, 1, c->dyt, false, NULL, &err) == NIB_OK;
    CHECK(ok, "%s: filling the scratches with NaN: %s", what, err.msg);
    int64_t bad = 0, bad_o = 0, bad_i = 0;
    float bad_f = 0.0f, bad_t = 0.0f;
    for (int64_t c0 = 0; ok && c0 < n_in; c0 += DECODE_TOKENS) {
        const int n = (int)(n_in - c0 < DECODE_TOKENS ? n_in - c0 : DECODE_TOKENS);
        const size_t ny = (size_t)n * (size_t)n_out;
        const float *x = c->eye + c0 * n_in;
        ok = nib_cuda_fill_f32(c->dyf, NAN, ny, &err) == NIB_OK && nib_cuda_fill_f32(c->dyt, NAN, ny, &err) == NIB_OK &&
             nib_cuda_gemm(c->bf, wf, x, n, c->dyf, false, NULL, &err) == NIB_OK &&
             nib_cuda_gemm(c->bt, wt, x, n, c->dyt, false, NULL, &err) == NIB_OK;
        CHECK(ok, "%s: gemm on identity rows %lld..: %s", what, (long long)c0, err.msg);
        if (!ok) break;
        gpu_download(c->yf, c->dyf, sizeof(float) * ny);
        gpu_download(c->yt, c->dyt, sizeof(float) * ny);
        for (size_t i = 0; i < ny; i++)
            if (!(c->yf[i] == c->yt[i]) && bad++ == 0) /* NaN fails too */
                bad_o = (int64_t)(i % (size_t)n_out), bad_i = c0 + (int64_t)(i / (size_t)n_out), bad_f = c->yf[i],
                bad_t = c->yt[i];
    }
    CHECK(bad == 0, "%s: %lld of %lld decoded weights differ, the first W[%lld][%lld]: file layout %g, tiled %g", what,
          (long long)bad, (long long)(n_in * n_out), (long long)bad_o, (long long)bad_i, bad_f, bad_t);
    if (ok && bad == 0) printf("      %s: %lld weights the same\n", what, (long long)(n_in * n_out));
}

static void test_gemm_tiled_decode(void) {
    static const struct {
        int64_t n_in, n_out;
        bool pair;
    } shapes[] = {
        {2048, 4354, false},  /* 34,832 blocks: the last tile half full */
        {4096, 8195, false},  /* the last tile half full (taller than square: every format tiles it) */
        {3584, 8199, false},  /* 16-row groups of 7 tiles (gemv_t32_seg), the last group partial */
        {8192, 2753, false},  /* a row a tile */
        {14336, 4801, false}, /* the last tile 24 blocks */
        {2048, 2177, true},   /* a pair's halves, the last tile half full */
        {4096, 1090, true},   /* the 8B's gate/up row length */
        {3584, 1090, true},   /* Qwen2.5-7B's: 16-row groups (gemv_t32_seg), rows of 14 tiled blocks */
    };
    const int64_t max_in = 14336, max_elems = 14336 * 4801;
    decode_ctx c = {0};
    char why[160];
    nib_error err;
    CHECK(nib_cuda_blas_new(max_elems, DECODE_TOKENS * max_in, &c.bf, why, sizeof why, &err) == NIB_OK && c.bf &&
              nib_cuda_blas_new(max_elems, DECODE_TOKENS * max_in, &c.bt, why, sizeof why, &err) == NIB_OK && c.bt,
          "blas: %s %s", err.msg, why);
    if (!c.bf || !c.bt) goto done;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t n_in = shapes[si].n_in, n_out = shapes[si].n_out;
        const int n_src = shapes[si].pair ? 2 : 1;
        c.n_in = n_in, c.n_out = n_out;
        /* the identity, DECODE_TOKENS rows an upload; the NaN matrix */
        float *eye = gpu_alloc(sizeof(float) * (size_t)(n_in * n_in)), *rows = calloc((size_t)(DECODE_TOKENS * n_in), sizeof(float));
        size_t rb = 0;
        nib_row_bytes(NIB_TYPE_Q4_0, n_in, &rb);
        uint8_t *nan_rows = malloc(rb * (size_t)n_out);
        rng_bytes(nan_rows, rb * (size_t)n_out);
        for (size_t b = 0; b < rb * (size_t)n_out; b += 18) nan_rows[b] = 0x00, nan_rows[b + 1] = 0x7E; /* fp16 NaN */
        CHECK(nib_cuda_weight_upload(NIB_TYPE_Q4_0, nan_rows, n_in, n_out, &c.nan_w, &err) == NIB_OK, "NaN matrix: %s",
              err.msg);
        c.dyf = gpu_alloc(sizeof(float) * (size_t)(DECODE_TOKENS * n_out));
        c.dyt = gpu_alloc(sizeof(float) * (size_t)(DECODE_TOKENS * n_out));
        c.yf = malloc(sizeof(float) * (size_t)(DECODE_TOKENS * n_out));
        c.yt = malloc(sizeof(float) * (size_t)(DECODE_TOKENS * n_out));
        if (eye && c.nan_w && c.dyf && c.dyt) {
            for (int64_t r0 = 0; r0 < n_in; r0 += DECODE_TOKENS) {
                for (int64_t t = 0; t < DECODE_TOKENS; t++) rows[t * n_in + r0 + t] = 1.0f;
                gpu_upload(eye + r0 * n_in, rows, sizeof(float) * (size_t)(DECODE_TOKENS * n_in));
                for (int64_t t = 0; t < DECODE_TOKENS; t++) rows[t * n_in + r0 + t] = 0.0f;
            }
            c.eye = eye;
            for (size_t ti = 0; ti < N_TILED_TYPES; ti++) {
                const nib_type t = tiled_types[ti];
                nib_cuda_weight *wf[2] = {NULL, NULL}, *wt[2] = {NULL, NULL};
                nib_row_bytes(t, n_in, &rb);
                uint8_t *W = malloc(rb * (size_t)n_out);
                bool up = true, tiled = false;
                for (int k = 0; k < n_src; k++) {
                    random_rows(t, W, n_in, n_out);
                    up = up && nib_cuda_weight_upload(t, W, n_in, n_out, &wf[k], &err) == NIB_OK &&
                         nib_cuda_weight_upload(t, W, n_in, n_out, &wt[k], &err) == NIB_OK;
                }
                free(W);
                CHECK(up, "upload %s %lldx%lld: %s", nib_type_name(t), (long long)n_in, (long long)n_out, err.msg);
                if (up) {
                    const nib_status s = n_src == 2 ? nib_cuda_weight_tile_glu(wt[0], wt[1], &tiled, &err)
                                                    : nib_cuda_weight_tile(wt[0], &tiled, &err);
                    CHECK(s == NIB_OK && tiled, "%s %lldx%lld%s: not tiled: %s", nib_type_name(t), (long long)n_in,
                          (long long)n_out, n_src == 2 ? " pair" : "",
                          s == NIB_OK ? "the layout does not take the shape on this device" : err.msg);
                }
                for (int k = 0; tiled && k < n_src; k++) {
                    char what[96];
                    snprintf(what, sizeof what, "%s %lldx%lld tiled%s", nib_type_name(t), (long long)n_in,
                             (long long)n_out, n_src == 2 ? (k ? ", pair's up" : ", pair's gate") : "");
                    check_same_decode(&c, wf[k], wt[k], what);
                }
                for (int k = 0; k < 2; k++) nib_cuda_weight_free(wf[k]), nib_cuda_weight_free(wt[k]);
            }
        }
        nib_cuda_weight_free(c.nan_w), c.nan_w = NULL;
        nib_cuda_free(eye), nib_cuda_free(c.dyf), nib_cuda_free(c.dyt);
        free(rows), free(nan_rows), free(c.yf), free(c.yt);
    }
done:
    nib_cuda_blas_free(c.bf), nib_cuda_blas_free(c.bt);
}

int main(void) {
    if (!gpu_test_start("cuda gemm")) return test_summary();
    rng_seed(777);
    char why[160];
    nib_error err;
    if (nib_cuda_blas_new(1024 * 1000, 1024 * 64, &G, why, sizeof why, &err) != NIB_OK) {
        CHECK(false, "nib_cuda_blas_new: %s", err.msg);
        return test_summary();
    }
    if (!G) {
        printf("SKIP cuda gemm: %s\n", why);
        test_skipped++;
        return test_summary();
    }
    printf("prompt GEMM: %s\n", nib_cuda_blas_name());
    RUN(test_gemm_formats);
    RUN(test_gemm_glu);
    RUN(test_gemm_tiled);
    RUN(test_gemm_tiled_decode);
    RUN(test_gemm_too_big);
    RUN(test_gemm_saturates);
    nib_cuda_blas_free(G);
    return test_summary();
}
