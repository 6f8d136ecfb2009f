/* The forward step's CUDA pieces against their references.
 *
 *  - matmul over n_tok token rows (prompt chunks of 8 per weight pass) must be
 *    bit-identical to the one-token GEMV of each row: the lanes add their items
 *    in the same order whatever the rows-per-warp and unrolling, so any
 *    difference is a bug (wrong token row, wrong scale row, a lost chunk);
 *    with add = true, y_before + the same value exactly (one fp32 add).
 *  - the pair kernel (Q/K and a V of another format in one launch): bit for
 *    bit the two plain calls, and taken exactly where its rule says.
 *  - the fused gate/up GLU kernel against act(gemv(gate)) * gemv(up) computed
 *    on the host from the GEMV outputs: the kernel rounds the same products;
 *    only expf/tanhf may differ by an ulp between host and device, so a
 *    relative bound of 1e-5 (a wrong row or activation is off by O(1)).
 *  - add_norm against ops.c's nib_rmsnorm in float64 order-free terms: the
 *    sum of squares is double on both sides, only its order differs, so the
 *    1/rms factor agrees to ~1e-15 relative and the outputs to 1 ulp
 *    (bound 2^-22 relative); its int8 activation blocks must equal
 *    nib_cuda_act_quantize's of the same xn bit for bit.
 *  - the deferred norm (one token: x * w quantized, 1/rms applied by the
 *    GEMV), in two parts. Its activation buffer against the plain norm's:
 *    the 1/rms its trailer gives within 1e-9 of the host's double one, each
 *    block's d times it within 1e-6 of the plain d (a few ulp), and the
 *    quants equal but where x * w / d fell within a few ulp of a rounding
 *    boundary: such a flip is +-1, and there are a few per 10k (bound
 *    1 + n / 1000; a wrong scale flips most). Then the GEMV and the GLU on
 *    it against the same kernels on its quants with the 1/rms folded into
 *    the blocks' (d, s) (a plain buffer): only the fp32 place of one product
 *    differs, so within 1e-5 of the outputs' rms. (Comparing with the plain
 *    path's outputs instead fails whenever one flip happens: one flip moves
 *    every output by ~4e-4 rms at n = 4096.) A plain writer after a
 *    deferred one must leave no scale behind: bit for bit the plain result.
 *  - the deferred norm after a sandwich norm (x += rmsnorm(o) * post_w
 *    first): x within 1 ulp of the single-block kernel's (o's sum of squares
 *    in another order), then its activation and a GEMV as above, and a
 *    second run the same bytes.
 *  - the output projection that leaves the FFN's deferred norm
 *    (nib_cuda_matmul_norm) against the GEMV and the deferred norm it
 *    replaces: y and the activation's blocks bit for bit, its trailer's sum
 *    within 1e-12, a GEMV on it as above.
 *  - qkv_rope against bias + nib_rmsnorm + nib_rope_table/apply_table and an
 *    f16 round of K/V (nib_f32_to_fp16): the angle is computed in double on
 *    both sides; device cos/sin in double may differ by an ulp of a double,
 *    invisible after rounding to float in almost every case: bound 4 ulp.
 *  - the fused Q/K/V with RoPE in its epilogue (nib_cuda_matmul_qkv_rope),
 *    one matrix or a Q/K with a V of another format beside it, against the
 *    GEMVs and qkv_rope it replaces: q and both caches bit for bit, the
 *    caches whole (poisoned before: only row pos written); with the
 *    attention norm in the kernel, bit for bit against the deferred norm
 *    kernel's activation read by the same fused kernel.
 *  - argmax: the first maximum, NaN never wins.
 *  - an LM head's shape (the 4-rows-per-warp kernel): bit for bit the
 *    prompt path's outputs, and the fused argmax their first maximum.
 * Inputs are random normal, outputs poisoned with NaN before each launch.
 * Without a usable GPU: one skip with the reason. */
#include <stdbool.h>
#include <stdlib.h>

#include "core/fp16.h"
#include "cuda/cuda.h"
#include "cuda/cuda_ops.h"
#include "nib.h"
#include "ops/ops.h"
#include "test.h"
#include "gpu_test.h"

/* A matrix of random valid blocks on the device (NULL, counted as a failed
 * check, when the upload fails). */
static nib_cuda_weight *random_weight(nib_type t, int64_t n_in, int64_t n_out) {
    nib_error err;
    size_t rb = 0;
    nib_row_bytes(t, n_in, &rb);
    uint8_t *W = malloc(rb * (size_t)n_out);
    random_rows(t, W, n_in, n_out);
    nib_cuda_weight *w = NULL;
    CHECK(nib_cuda_weight_upload(t, W, n_in, n_out, &w, &err) == NIB_OK, "upload %s %lldx%lld: %s", nib_type_name(t),
          (long long)n_in, (long long)n_out, err.msg);
    free(W);
    return w;
}

/* IQ2_XXS, IQ3_S and IQ1_M: their kernels copy the codebook to shared memory
 * first (a barrier in every body: the batch and GLU kernels too); TQ1_0 and
 * TQ2_0 subtract the activation sum in their dots */
static const nib_type mm_types[] = {NIB_TYPE_Q4_0,  NIB_TYPE_Q8_0,  NIB_TYPE_Q4_K,  NIB_TYPE_Q6_K, NIB_TYPE_F16,
                                    NIB_TYPE_IQ2_XXS, NIB_TYPE_IQ3_S, NIB_TYPE_IQ1_M, NIB_TYPE_TQ1_0, NIB_TYPE_TQ2_0};

static void test_matmul_tokens(void) {
    const int64_t n_in = 512, n_out = 203;
    const int toks[] = {1, 3, 8, 13};
    for (size_t ti = 0; ti < sizeof mm_types / sizeof mm_types[0]; ti++) {
        nib_type t = mm_types[ti];
        nib_error err;
        size_t rb = 0;
        nib_row_bytes(t, n_in, &rb);
        nib_cuda_weight *w = random_weight(t, n_in, n_out);
        if (!w) continue;
        const int T = 13;
        float *x = malloc(sizeof(float) * (size_t)(T * n_in)), *ref = malloc(sizeof(float) * (size_t)(T * n_out));
        float *y = malloc(sizeof(float) * (size_t)(T * n_out)), *y0 = malloc(sizeof(float) * (size_t)(T * n_out));
        for (int64_t i = 0; i < T * n_in; i++) x[i] = (float)rng_normal();
        for (int64_t i = 0; i < T * n_out; i++) y0[i] = (float)rng_normal();
        float *dx = gpu_alloc(sizeof(float) * (size_t)(T * n_in)), *dy = gpu_alloc(sizeof(float) * (size_t)(T * n_out));
        void *act = gpu_alloc(nib_cuda_act_bytes(n_in, T)), *s1 = gpu_alloc(nib_cuda_act_bytes(n_in, 1));
        gpu_upload(dx, x, sizeof(float) * (size_t)(T * n_in));
        /* the reference: one GEMV per row */
        for (int r = 0; r < T; r++) {
            nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
            CHECK(nib_cuda_gemv(w, dx + r * n_in, dy, s1, NULL, &err) == NIB_OK, "gemv: %s", err.msg);
            gpu_download(ref + r * n_out, dy, sizeof(float) * (size_t)n_out);
        }
        for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
            const int n = toks[k];
            for (int add = 0; add < 2; add++) {
                if (add) gpu_upload(dy, y0, sizeof(float) * (size_t)(n * n_out));
                else nib_cuda_fill_f32(dy, NAN, (size_t)(T * n_out), &err);
                nib_status s = nib_cuda_act_quantize(dx, n_in, n, act, NULL, &err);
                if (s == NIB_OK) s = nib_cuda_matmul(w, dx, act, n, dy, add, NULL, &err);
                CHECK(s == NIB_OK, "%s matmul %d tokens: %s", nib_type_name(t), n, err.msg);
                gpu_download(y, dy, sizeof(float) * (size_t)(n * n_out));
                int bad = 0;
                for (int64_t i = 0; i < n * n_out; i++) {
                    float want = add ? y0[i] + ref[i] : ref[i];
                    if (!(y[i] == want) && bad++ < 3)
                        fprintf(stderr, "  %s n_tok %d add %d: y[%lld] = %.9g, want %.9g\n", nib_type_name(t), n, add,
                                (long long)i, y[i], want);
                }
                CHECK(bad == 0, "%s n_tok %d add %d: %d outputs differ from the one-token GEMV", nib_type_name(t), n,
                      add, bad);
            }
        }
        /* GLU: gate = w, up = a second matrix of the same format */
        {
            uint8_t *W2 = malloc(rb * (size_t)n_out);
            random_rows(t, W2, n_in, n_out);
            nib_cuda_weight *w2 = NULL;
            nib_cuda_weight_upload(t, W2, n_in, n_out, &w2, &err);
            free(W2);
            float *ref2 = malloc(sizeof(float) * (size_t)(T * n_out)), *dtmp = gpu_alloc(sizeof(float) * (size_t)(T * n_out));
            for (int r = 0; r < T && w2; r++) {
                CHECK(nib_cuda_gemv(w2, dx + r * n_in, dy, s1, NULL, &err) == NIB_OK, "gemv up: %s", err.msg);
                gpu_download(ref2 + r * n_out, dy, sizeof(float) * (size_t)n_out);
            }
            for (int g = 1; g <= 2 && w2; g++)
                for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
                    const int n = toks[k];
                    nib_cuda_fill_f32(dy, NAN, (size_t)(T * n_out), &err);
                    nib_status s = nib_cuda_act_quantize(dx, n_in, n, act, NULL, &err);
                    if (s == NIB_OK)
                        s = nib_cuda_matmul_glu(w, w2, dx, act, n, (nib_cuda_glu)g, dy, dtmp, NULL, &err);
                    CHECK(s == NIB_OK, "glu: %s", err.msg);
                    gpu_download(y, dy, sizeof(float) * (size_t)(n * n_out));
                    int bad = 0;
                    for (int64_t i = 0; i < n * n_out; i++) {
                        float gg = ref[i], want;
                        if (g == 1) want = gg / (1.0f + expf(-gg)) * ref2[i];
                        else want = 0.5f * gg * (1.0f + tanhf(0.7978845608028654f * (gg + 0.044715f * gg * gg * gg))) * ref2[i];
                        /* device and host tanhf/expf differ by a few ulp of
                         * their result, which 1 + tanh can turn into a large
                         * relative error of a small h: bound it absolutely */
                        if (!(fabsf(y[i] - want) <= 1e-5f * fabsf(want) + 1e-6f * fabsf(gg * ref2[i]) + 1e-30f) &&
                            bad++ < 3)
                            fprintf(stderr, "  %s glu %d n_tok %d: h[%lld] = %.9g, want %.9g\n", nib_type_name(t), g, n,
                                    (long long)i, y[i], want);
                    }
                    CHECK(bad == 0, "%s glu %d n_tok %d: %d outputs off", nib_type_name(t), g, n, bad);
                }
            nib_cuda_weight_free(w2);
            nib_cuda_free(dtmp);
            free(ref2);
        }
        nib_cuda_weight_free(w);
        nib_cuda_free(dx), nib_cuda_free(dy), nib_cuda_free(act), nib_cuda_free(s1);
        free(x), free(ref), free(y), free(y0);
    }
}

/* One token's long rows take the split-K kernel (rows >= 3x as long as
 * there are rows: KS = 2; >= 5x: KS = 4; 4096 x 1100 the 4-row split of
 * about square matrices, an output projection's): with add, y must be y_before +
 * the plain product exactly (one fp32 add after the split sums). Its sums
 * against the scalar reference: test_gpu_gemv's long shapes. */
static void test_split_k_add(void) {
    const struct { int64_t n_in, n_out; } shapes[] = {{1536, 512}, {2048, 96}, {4864, 33}, {4096, 1100}};
    nib_error err;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t ti = 0; ti + 1 < sizeof mm_types / sizeof mm_types[0]; ti++) { /* the quantized ones */
            const nib_type t = mm_types[ti];
            const int64_t n_in = shapes[si].n_in, n_out = shapes[si].n_out;
            if (n_in % nib_type_block_elems(t) != 0) continue;
            nib_cuda_weight *w = random_weight(t, n_in, n_out);
            float *x = malloc(sizeof(float) * (size_t)n_in), *y0 = malloc(sizeof(float) * (size_t)n_out);
            float *p = malloc(sizeof(float) * (size_t)n_out), *ya = malloc(sizeof(float) * (size_t)n_out);
            for (int64_t i = 0; i < n_in; i++) x[i] = (float)rng_normal();
            for (int64_t i = 0; i < n_out; i++) y0[i] = (float)rng_normal();
            float *dx = gpu_alloc(sizeof(float) * (size_t)n_in), *dy = gpu_alloc(sizeof(float) * (size_t)n_out);
            void *act = gpu_alloc(nib_cuda_act_bytes(n_in, 1));
            gpu_upload(dx, x, sizeof(float) * (size_t)n_in);
            nib_status s = w ? nib_cuda_act_quantize(dx, n_in, 1, act, NULL, &err) : NIB_ERR_ARG;
            if (s == NIB_OK) s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
            if (s == NIB_OK) s = nib_cuda_matmul(w, dx, act, 1, dy, false, NULL, &err);
            if (s == NIB_OK) gpu_download(p, dy, sizeof(float) * (size_t)n_out), gpu_upload(dy, y0, sizeof(float) * (size_t)n_out);
            if (s == NIB_OK) s = nib_cuda_matmul(w, dx, act, 1, dy, true, NULL, &err);
            CHECK(s == NIB_OK, "%s %lldx%lld: %s", nib_type_name(t), (long long)n_in, (long long)n_out, err.msg);
            if (s == NIB_OK) {
                gpu_download(ya, dy, sizeof(float) * (size_t)n_out);
                int64_t bad = 0;
                for (int64_t i = 0; i < n_out; i++) bad += !(ya[i] == y0[i] + p[i]) || isnan(p[i]);
                CHECK(bad == 0, "%s %lldx%lld: %lld of %lld outputs of y += Wx are not y + (Wx)", nib_type_name(t),
                      (long long)n_in, (long long)n_out, (long long)bad, (long long)n_out);
            }
            nib_cuda_weight_free(w);
            nib_cuda_free(dx), nib_cuda_free(dy), nib_cuda_free(act);
            free(x), free(y0), free(p), free(ya);
        }
}

/* Two matrices of one activation row in one launch (nib_cuda_matmul_pair:
 * Q/K of one format, V of another): the outputs, poisoned before, must be bit
 * for bit the two plain calls' (the same kernel bodies, the same order of
 * additions), which test_gpu_gemv checks against the CPU reference. The
 * shapes say whether the pair kernel runs (Llama-3-8B's 4096 -> 5120 and
 * 1024 on split K, Qwen2.5-7B's split Q/K and plain V, the small models'
 * plain pairs, and odd row counts with the same plans) or two launches (a
 * split at U = 2, three tokens, a format pair without an instance), and the
 * test checks that choice too. */
static void test_matmul_pair(void) {
    const struct { nib_type a, b; int64_t n_in, n_a, n_b; int n_tok; bool one; } cases[] = {
        {NIB_TYPE_Q4_K, NIB_TYPE_Q6_K, 4096, 5120, 1024, 1, true}, /* split + split */
        {NIB_TYPE_Q4_K, NIB_TYPE_Q6_K, 4096, 4100, 1000, 1, true},
        {NIB_TYPE_Q5_K, NIB_TYPE_Q6_K, 4096, 5120, 1024, 1, true},
        {NIB_TYPE_Q4_K, NIB_TYPE_Q6_K, 3584, 4096, 512, 1, true},  /* split + plain */
        {NIB_TYPE_Q4_K, NIB_TYPE_Q6_K, 2048, 2560, 512, 1, true},  /* plain + plain */
        {NIB_TYPE_Q5_0, NIB_TYPE_Q8_0, 896, 1024, 128, 1, true},  /* 1-row warps */
        {NIB_TYPE_Q5_1, NIB_TYPE_Q8_0, 896, 1030, 131, 1, true},
        {NIB_TYPE_Q4_K, NIB_TYPE_Q6_K, 8192, 2048, 512, 1, false}, /* Q/K split K 2 at U = 2 */
        {NIB_TYPE_Q4_K, NIB_TYPE_Q6_K, 4096, 5120, 1024, 3, false},
        {NIB_TYPE_Q4_K, NIB_TYPE_Q8_0, 4096, 5120, 1024, 1, false},
    };
    nib_error err;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t n_in = cases[ci].n_in, n_a = cases[ci].n_a, n_b = cases[ci].n_b;
        const int T = cases[ci].n_tok;
        nib_cuda_weight *wa = random_weight(cases[ci].a, n_in, n_a), *wb = random_weight(cases[ci].b, n_in, n_b);
        if (!wa || !wb) { /* counted by random_weight */
            nib_cuda_weight_free(wa), nib_cuda_weight_free(wb);
            continue;
        }
        const char *k = nib_cuda_pair_kernel(wa, wb, T);
        CHECK((k != NULL) == cases[ci].one, "%s+%s %lld -> %lld+%lld, %d tokens: pair kernel %s, expected %s",
              nib_type_name(cases[ci].a), nib_type_name(cases[ci].b), (long long)n_in, (long long)n_a,
              (long long)n_b, T, k ? k : "none", cases[ci].one ? "one" : "none");
        const size_t na = (size_t)(n_a * T), nb = (size_t)(n_b * T);
        float *x = malloc(sizeof(float) * (size_t)(n_in * T));
        float *ya = malloc(sizeof(float) * na), *yb = malloc(sizeof(float) * nb);
        float *pa = malloc(sizeof(float) * na), *pb = malloc(sizeof(float) * nb);
        for (int64_t i = 0; i < n_in * T; i++) x[i] = (float)rng_normal();
        float *dx = gpu_alloc(sizeof(float) * (size_t)(n_in * T));
        float *dya = gpu_alloc(sizeof(float) * na), *dyb = gpu_alloc(sizeof(float) * nb);
        void *act = gpu_alloc(nib_cuda_act_bytes(n_in, T));
        gpu_upload(dx, x, sizeof(float) * (size_t)(n_in * T));
        nib_status s = nib_cuda_act_quantize(dx, n_in, T, act, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_fill_f32(dya, NAN, na, &err);
        if (s == NIB_OK) s = nib_cuda_fill_f32(dyb, NAN, nb, &err);
        if (s == NIB_OK) s = nib_cuda_matmul(wa, dx, act, T, dya, false, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_matmul(wb, dx, act, T, dyb, false, NULL, &err);
        if (s == NIB_OK) gpu_download(ya, dya, sizeof(float) * na), gpu_download(yb, dyb, sizeof(float) * nb);
        if (s == NIB_OK) s = nib_cuda_fill_f32(dya, NAN, na, &err);
        if (s == NIB_OK) s = nib_cuda_fill_f32(dyb, NAN, nb, &err);
        if (s == NIB_OK) s = nib_cuda_matmul_pair(wa, wb, dx, act, T, dya, dyb, NULL, &err);
        CHECK(s == NIB_OK, "pair case %zu: %s", ci, err.msg);
        if (s == NIB_OK) {
            gpu_download(pa, dya, sizeof(float) * na), gpu_download(pb, dyb, sizeof(float) * nb);
            int64_t bad = 0, nan = 0;
            for (size_t i = 0; i < na; i++) bad += memcmp(&pa[i], &ya[i], 4) != 0, nan += isnan(ya[i]);
            for (size_t i = 0; i < nb; i++) bad += memcmp(&pb[i], &yb[i], 4) != 0, nan += isnan(yb[i]);
            CHECK(bad == 0 && nan == 0, "pair case %zu (%s): %lld of %zu outputs differ from two launches, %lld NaN",
                  ci, k ? k : "two launches", (long long)bad, na + nb, (long long)nan);
        }
        nib_cuda_weight_free(wa), nib_cuda_weight_free(wb);
        nib_cuda_free(dx), nib_cuda_free(dya), nib_cuda_free(dyb), nib_cuda_free(act);
        free(x), free(ya), free(yb), free(pa), free(pb);
    }
    /* rows of different lengths: an error that names the call */
    nib_cuda_weight *wa = random_weight(NIB_TYPE_Q4_K, 4096, 8), *wb = random_weight(NIB_TYPE_Q6_K, 2048, 8);
    nib_status s = nib_cuda_matmul_pair(wa, wb, NULL, NULL, 1, NULL, NULL, NULL, &err);
    CHECK(s == NIB_ERR_ARG && strstr(err.msg, "matmul_pair"), "pair of 4096- and 2048-wide rows: status %d, '%s'",
          (int)s, err.msg);
    nib_cuda_weight_free(wa), nib_cuda_weight_free(wb);
}

static bool close_rel(float a, float b, float rel) { return fabsf(a - b) <= rel * fabsf(b) + 1e-30f; }

static void test_add_norm(void) {
    const int T = 5;
    const int ns[] = {576, 896, 4096};
    nib_error err;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        const int n = ns[k];
        for (int mode = 0; mode < 3; mode++) { /* 0: norm only, 1: x += o, 2: x += rmsnorm(o) * post_w */
            float *x = malloc(sizeof(float) * (size_t)(T * n)), *o = malloc(sizeof(float) * (size_t)(T * n));
            float *w = malloc(sizeof(float) * (size_t)n), *pw = malloc(sizeof(float) * (size_t)n);
            float *xr = malloc(sizeof(float) * (size_t)(T * n)), *xn = malloc(sizeof(float) * (size_t)(T * n));
            float *got_x = malloc(sizeof(float) * (size_t)(T * n)), *got_xn = malloc(sizeof(float) * (size_t)(T * n));
            for (int i = 0; i < T * n; i++) x[i] = (float)(3 * rng_normal()), o[i] = (float)rng_normal();
            for (int i = 0; i < n; i++) w[i] = (float)(1 + 0.3 * rng_normal()), pw[i] = (float)(0.5 + rng_uniform());
            /* reference: as context.c does it */
            memcpy(xr, x, sizeof(float) * (size_t)(T * n));
            for (int t = 0; t < T; t++) {
                float *row = xr + (size_t)t * n, tmp[4096];
                if (mode == 1) for (int i = 0; i < n; i++) row[i] += o[t * n + i];
                if (mode == 2) {
                    nib_rmsnorm(tmp, o + (size_t)t * n, pw, n, 1e-6f);
                    for (int i = 0; i < n; i++) row[i] += tmp[i];
                }
                nib_rmsnorm(xn + (size_t)t * n, row, w, n, 1e-6f);
            }
            float *dx = gpu_alloc(sizeof(float) * (size_t)(T * n)), *dox = gpu_alloc(sizeof(float) * (size_t)(T * n));
            float *dw = gpu_alloc(sizeof(float) * (size_t)n), *dpw = gpu_alloc(sizeof(float) * (size_t)n);
            float *dxn = gpu_alloc(sizeof(float) * (size_t)(T * n));
            void *act = gpu_alloc(nib_cuda_act_bytes(n, T)), *act2 = gpu_alloc(nib_cuda_act_bytes(n, T));
            gpu_upload(dx, x, sizeof(float) * (size_t)(T * n)), gpu_upload(dox, o, sizeof(float) * (size_t)(T * n));
            gpu_upload(dw, w, sizeof(float) * (size_t)n), gpu_upload(dpw, pw, sizeof(float) * (size_t)n);
            nib_cuda_fill_f32(dxn, NAN, (size_t)(T * n), &err);
            nib_cuda_norm_args a = {dx, mode ? dox : NULL, mode == 2 ? dpw : NULL, dw, dxn, act, T, n, 1e-6f, false};
            CHECK(nib_cuda_add_norm(&a, NULL, &err) == NIB_OK, "add_norm: %s", err.msg);
            gpu_download(got_x, dx, sizeof(float) * (size_t)(T * n));
            gpu_download(got_xn, dxn, sizeof(float) * (size_t)(T * n));
            int bad = 0;
            for (int i = 0; i < T * n; i++)
                if ((!close_rel(got_x[i], xr[i], 2.5e-7f) || !close_rel(got_xn[i], xn[i], 2.5e-7f)) && bad++ < 3)
                    fprintf(stderr, "  n %d mode %d [%d]: x %.9g vs %.9g, xn %.9g vs %.9g\n", n, mode, i, got_x[i], xr[i],
                            got_xn[i], xn[i]);
            CHECK(bad == 0, "add_norm n %d mode %d: %d values off", n, mode, bad);
            /* its quantized blocks equal the quantizer's on the same xn */
            nib_cuda_act_quantize(dxn, n, T, act2, NULL, &err);
            size_t ab = nib_cuda_act_bytes(n, T);
            uint8_t *h1 = malloc(ab), *h2 = malloc(ab);
            gpu_download(h1, act, ab), gpu_download(h2, act2, ab);
            /* compare quants (rows padded to 256: skip the padding) and scales */
            size_t stride = (size_t)((n + 255) / 256 * 256);
            int qbad = 0;
            for (int t = 0; t < T; t++) qbad += memcmp(h1 + t * stride, h2 + t * stride, (size_t)n) != 0;
            qbad += memcmp(h1 + T * stride, h2 + T * stride, (size_t)T * (n / 32) * 8) != 0;
            CHECK(qbad == 0, "add_norm n %d mode %d: activation blocks differ from nib_cuda_act_quantize's", n, mode);
            free(h1), free(h2);
            nib_cuda_free(dx), nib_cuda_free(dox), nib_cuda_free(dw), nib_cuda_free(dpw), nib_cuda_free(dxn);
            nib_cuda_free(act), nib_cuda_free(act2);
            free(x), free(o), free(w), free(pw), free(xr), free(xn), free(got_x), free(got_xn);
        }
    }
}

/* y against want: each within 1e-5 of want's rms (see the top of the file) */
static bool deferred_close(const float *y, const float *want, int64_t n, const char *what) {
    double ms = 0.0;
    for (int64_t i = 0; i < n; i++) ms += (double)want[i] * want[i];
    const double rms = sqrt(ms / (double)n);
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)y[i] - (double)want[i]) <= 1e-5 * rms) && off++ < 3)
            fprintf(stderr, "  %s: [%lld] %.9g, want %.9g (rms %.3g)\n", what, (long long)i, y[i], want[i], rms);
    return off == 0;
}

/* An activation buffer of one token (layout of cuda_internal.h: n quants
 * padded to 256, n / 32 pairs (d, s), then the norm trailer's
 * NIB_CUDA_ACT_SCALE_SLOTS doubles at the end) read back to the host. */
typedef struct host_act {
    uint8_t *bytes;
    const int8_t *q;
    const float *ds;
    const double *parts;
} host_act;
static host_act act_down(const void *dev, int64_t n) {
    const size_t ab = nib_cuda_act_bytes(n, 1);
    host_act h = {malloc(ab), NULL, NULL, NULL};
    gpu_download(h.bytes, dev, ab);
    h.q = (const int8_t *)h.bytes;
    h.ds = (const float *)(h.bytes + (size_t)(n + 255) / 256 * 256);
    h.parts = (const double *)(h.bytes + ab - NIB_CUDA_ACT_SCALE_SLOTS * sizeof(double));
    return h;
}

/* The deferred norm's buffer (def) against the plain one's (pl) of x * w:
 * see the top of the file. Writes into folded the deferred buffer with its
 * 1/rms folded into (d, s) and the trailer zeroed; returns false (and says
 * why) when a bound fails. */
static bool deferred_act_ok(const host_act *def, const host_act *pl, const float *x, int64_t n, float eps,
                            uint8_t *folded, const char *what) {
    double ss = 0.0, parts = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    for (int i = 0; i < NIB_CUDA_ACT_SCALE_SLOTS; i++) parts += def->parts[i];
    const double rs_host = 1.0 / sqrt(ss / (double)n + eps), rs = parts > 0.0 ? 1.0 / sqrt(parts) : 0.0;
    bool ok = fabs(rs - rs_host) <= 1e-9 * rs_host;
    if (!ok) fprintf(stderr, "  %s: the trailer's 1/rms %.12g, the host's %.12g\n", what, rs, rs_host);
    int64_t flips = 0, big = 0, dbad = 0;
    for (int64_t i = 0; i < n; i++) flips += def->q[i] != pl->q[i], big += abs(def->q[i] - pl->q[i]) > 1;
    for (int64_t b = 0; b < n / 32; b++)
        dbad += !(fabs(def->ds[2 * b] * rs - pl->ds[2 * b]) <= 1e-6 * fabs(pl->ds[2 * b]) + 1e-30);
    if (big || flips > 1 + n / 1000 || dbad) {
        fprintf(stderr, "  %s: %lld quants differ from the plain norm's (%lld by more than 1), %lld block scales off\n",
                what, (long long)flips, (long long)big, (long long)dbad);
        ok = false;
    }
    const size_t ab = nib_cuda_act_bytes(n, 1);
    memcpy(folded, def->bytes, ab);
    float *fds = (float *)(folded + ((const uint8_t *)def->ds - def->bytes));
    for (int64_t b = 0; b < n / 32; b++)
        fds[2 * b] = (float)(def->ds[2 * b] * rs), fds[2 * b + 1] = (float)(def->ds[2 * b + 1] * rs);
    memset(folded + ab - NIB_CUDA_ACT_SCALE_SLOTS * sizeof(double), 0, NIB_CUDA_ACT_SCALE_SLOTS * sizeof(double));
    return ok;
}

static void test_deferred_norm(void) {
    const struct { int n, n_out; } shapes[] = {{768, 203}, {4096, 203}, {4096, 96}, {16384, 64}};
    const nib_type types[] = {NIB_TYPE_Q4_0, NIB_TYPE_Q8_0, NIB_TYPE_Q4_K, NIB_TYPE_Q6_K};
    nib_error err;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int n = shapes[si].n, n_out = shapes[si].n_out;
        float *x = malloc(sizeof(float) * (size_t)n), *wn = malloc(sizeof(float) * (size_t)n);
        for (int i = 0; i < n; i++) x[i] = (float)(3 * rng_normal()), wn[i] = (float)(1 + 0.3 * rng_normal());
        float *dx = gpu_alloc(sizeof(float) * (size_t)n), *dw = gpu_alloc(sizeof(float) * (size_t)n);
        float *dxn = gpu_alloc(sizeof(float) * (size_t)n), *dy = gpu_alloc(sizeof(float) * (size_t)n_out);
        float *dtmp = gpu_alloc(sizeof(float) * (size_t)n_out);
        const size_t ab = nib_cuda_act_bytes(n, 1);
        void *act1 = gpu_alloc(ab), *act2 = gpu_alloc(ab), *act3 = gpu_alloc(ab);
        gpu_upload(dx, x, sizeof(float) * (size_t)n), gpu_upload(dw, wn, sizeof(float) * (size_t)n);
        nib_cuda_norm_args plain = {dx, NULL, NULL, dw, dxn, act1, 1, n, 1e-5f, false};
        nib_cuda_norm_args defer = {dx, NULL, NULL, dw, dxn, act2, 1, n, 1e-5f, true};
        float *y1 = malloc(sizeof(float) * (size_t)n_out), *y2 = malloc(sizeof(float) * (size_t)n_out);
        float *y3 = malloc(sizeof(float) * (size_t)n_out);
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const nib_type t = types[ti];
            if (n % nib_type_block_elems(t) != 0) continue;
            size_t rb = 0;
            nib_row_bytes(t, n, &rb);
            uint8_t *W = malloc(rb * (size_t)n_out), *W2 = malloc(rb * (size_t)n_out);
            random_rows(t, W, n, n_out), random_rows(t, W2, n, n_out);
            nib_cuda_weight *w = NULL, *w2 = NULL;
            CHECK(nib_cuda_weight_upload(t, W, n, n_out, &w, &err) == NIB_OK &&
                      nib_cuda_weight_upload(t, W2, n, n_out, &w2, &err) == NIB_OK,
                  "upload: %s", err.msg);
            free(W), free(W2);
            char what[96];
            snprintf(what, sizeof what, "%s %dx%d", nib_type_name(t), n, n_out);
            /* the plain path, then the deferred one into a poisoned buffer */
            nib_status s = w && w2 ? nib_cuda_add_norm(&plain, NULL, &err) : NIB_ERR_ARG;
            if (s == NIB_OK) s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
            if (s == NIB_OK) s = nib_cuda_matmul(w, dxn, act1, 1, dy, false, NULL, &err);
            if (s == NIB_OK) gpu_download(y1, dy, sizeof(float) * (size_t)n_out);
            if (s == NIB_OK) s = nib_cuda_fill_f32((float *)act2, NAN, ab / 4, &err);
            if (s == NIB_OK) s = nib_cuda_add_norm(&defer, NULL, &err);
            if (s == NIB_OK) s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
            if (s == NIB_OK) s = nib_cuda_matmul(w, dxn, act2, 1, dy, false, NULL, &err);
            CHECK(s == NIB_OK, "%s: %s", what, err.msg);
            if (s != NIB_OK) goto next;
            gpu_download(y2, dy, sizeof(float) * (size_t)n_out);
            {
                host_act hd = act_down(act2, n), hp = act_down(act1, n);
                uint8_t *folded = malloc(ab);
                CHECK(deferred_act_ok(&hd, &hp, x, n, 1e-5f, folded, what),
                      "%s: the deferred norm's activation is off", what);
                gpu_upload(act3, folded, ab);
                free(hd.bytes), free(hp.bytes), free(folded);
            }
            /* the GEMV and the GLU on it against the same on the folded buffer */
            s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
            if (s == NIB_OK) s = nib_cuda_matmul(w, dxn, act3, 1, dy, false, NULL, &err);
            if (s == NIB_OK) gpu_download(y3, dy, sizeof(float) * (size_t)n_out);
            CHECK(s == NIB_OK && deferred_close(y2, y3, n_out, what), "%s: the deferred norm's GEMV is off", what);
            {
                s = nib_cuda_matmul_glu(w, w2, dxn, act3, 1, NIB_CUDA_GLU_SILU, dy, dtmp, NULL, &err);
                if (s == NIB_OK) gpu_download(y3, dy, sizeof(float) * (size_t)n_out);
                if (s == NIB_OK) s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
                if (s == NIB_OK) s = nib_cuda_matmul_glu(w, w2, dxn, act2, 1, NIB_CUDA_GLU_SILU, dy, dtmp, NULL, &err);
                CHECK(s == NIB_OK, "%s glu: %s", what, err.msg);
                if (s == NIB_OK) gpu_download(y2, dy, sizeof(float) * (size_t)n_out);
                CHECK(s == NIB_OK && deferred_close(y2, y3, n_out, what), "%s: the deferred norm's GLU is off", what);
            }
            /* a plain norm, then the quantizer, over a deferred one's buffer: no scale left behind */
            for (int k = 0; k < 2 && s == NIB_OK; k++) {
                s = nib_cuda_add_norm(&defer, NULL, &err);
                if (s == NIB_OK)
                    s = k == 0 ? nib_cuda_add_norm(&(nib_cuda_norm_args){dx, NULL, NULL, dw, dxn, act2, 1, n, 1e-5f, false},
                                                   NULL, &err)
                               : nib_cuda_act_quantize(dxn, n, 1, act2, NULL, &err);
                if (s == NIB_OK) s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
                if (s == NIB_OK) s = nib_cuda_matmul(w, dxn, act2, 1, dy, false, NULL, &err);
                CHECK(s == NIB_OK, "%s: %s", what, err.msg);
                if (s != NIB_OK) break;
                gpu_download(y3, dy, sizeof(float) * (size_t)n_out);
                int bad = 0;
                for (int i = 0; i < n_out; i++) bad += !(y3[i] == y1[i]);
                CHECK(bad == 0, "%s: after a deferred norm, %s left %d of %d outputs unlike the plain path's", what,
                      k ? "the quantizer" : "a plain norm", bad, n_out);
            }
        next:
            nib_cuda_weight_free(w), nib_cuda_weight_free(w2);
        }
        /* what a deferred norm cannot do: it says so */
        nib_cuda_norm_args two = defer;
        two.n_tok = 2;
        CHECK(nib_cuda_add_norm(&two, NULL, &err) == NIB_ERR_ARG, "a deferred norm of 2 tokens was accepted");
        nib_cuda_free(dx), nib_cuda_free(dw), nib_cuda_free(dxn), nib_cuda_free(dy), nib_cuda_free(dtmp);
        nib_cuda_free(act1), nib_cuda_free(act2), nib_cuda_free(act3);
        free(x), free(wn), free(y1), free(y2), free(y3);
    }
}

/* The output projection that leaves the FFN's deferred norm
 * (nib_cuda_matmul_norm) against the two calls it replaces: nib_cuda_matmul
 * with the residual add, then nib_cuda_add_norm with defer. y bit for bit
 * (the same kernel arithmetic); the activation's quants and (d, s) bit for
 * bit (the same quantizer on the same y * w); its trailer's sum (one part a
 * 32-row block, where the norm kernel has one a 256-element run: only the
 * order of a double sum differs) within 1e-12 of the other's; the tiled
 * gate/up kernel (the one reader of its trailer's 128 parts) on each buffer
 * within deferred_close's bound. A matrix without the fused kernel is
 * refused with NIB_ERR_UNSUPPORTED. */
static void test_matmul_norm(void) {
    const nib_type types[] = {NIB_TYPE_Q4_K, NIB_TYPE_Q5_K};
    const int n = 4096; /* the output projection of a Llama-3-8B: 128 blocks of 32 rows */
    nib_error err;
    float *x = malloc(sizeof(float) * n), *y0 = malloc(sizeof(float) * n), *wn = malloc(sizeof(float) * n);
    float *ya = malloc(sizeof(float) * n), *yb = malloc(sizeof(float) * n);
    enum { NF = 2048 }; /* the gate/up pair after it: 2,048 (gate, up) rows, tiled */
    float *za = malloc(sizeof(float) * NF), *zb = malloc(sizeof(float) * NF);
    for (int i = 0; i < n; i++)
        x[i] = (float)rng_normal(), y0[i] = (float)(2 * rng_normal()), wn[i] = (float)(1 + 0.3 * rng_normal());
    float *dx = gpu_alloc(sizeof(float) * n), *dy = gpu_alloc(sizeof(float) * n), *dw = gpu_alloc(sizeof(float) * n);
    float *dz = gpu_alloc(sizeof(float) * NF), *dtmp = gpu_alloc(sizeof(float) * NF), *dxn = gpu_alloc(sizeof(float) * n);
    const size_t ab = nib_cuda_act_bytes(n, 1);
    void *act_in = gpu_alloc(ab), *act_a = gpu_alloc(ab), *act_b = gpu_alloc(ab);
    gpu_upload(dx, x, sizeof(float) * n), gpu_upload(dw, wn, sizeof(float) * n);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const nib_type t = types[ti];
        nib_cuda_weight *w = random_weight(t, n, n), *gate = random_weight(t, n, NF), *up = random_weight(t, n, NF);
        bool tiled = false, pair = false;
        nib_status s = w && gate && up ? nib_cuda_weight_tile(w, &tiled, &err) : NIB_ERR_ARG;
        if (s == NIB_OK) s = nib_cuda_weight_tile_glu(gate, up, &pair, &err);
        CHECK(s == NIB_OK && pair && nib_cuda_glu_takes_norm(gate), "%s gate/up %dx%d: tiled %d, takes the norm %d",
              nib_type_name(t), n, NF, pair, gate && nib_cuda_glu_takes_norm(gate));
        CHECK(s == NIB_OK && tiled && nib_cuda_matmul_norm_ok(w), "%s %dx%d: tiled %d, fused norm %d: %s",
              nib_type_name(t), n, n, tiled, w && nib_cuda_matmul_norm_ok(w), s == NIB_OK ? "" : err.msg);
        if (s != NIB_OK || !nib_cuda_matmul_norm_ok(w)) goto next;
        nib_cuda_norm_args defer = {dy, NULL, NULL, dw, dxn, act_a, 1, n, 1e-5f, true};
        /* the two calls */
        s = nib_cuda_act_quantize(dx, n, 1, act_in, NULL, &err);
        if (s == NIB_OK) gpu_upload(dy, y0, sizeof(float) * n);
        if (s == NIB_OK) s = nib_cuda_fill_f32((float *)act_a, NAN, ab / 4, &err);
        if (s == NIB_OK) s = nib_cuda_matmul(w, dx, act_in, 1, dy, true, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_add_norm(&defer, NULL, &err);
        if (s == NIB_OK) gpu_download(ya, dy, sizeof(float) * n);
        /* the fused one, into a poisoned buffer */
        if (s == NIB_OK) gpu_upload(dy, y0, sizeof(float) * n);
        if (s == NIB_OK) s = nib_cuda_fill_f32((float *)act_b, NAN, ab / 4, &err);
        if (s == NIB_OK) s = nib_cuda_matmul_norm(w, act_in, dy, dw, 1e-5f, act_b, NULL, &err);
        CHECK(s == NIB_OK, "%s: %s", nib_type_name(t), err.msg);
        if (s != NIB_OK) goto next;
        gpu_download(yb, dy, sizeof(float) * n);
        int bad = 0;
        for (int i = 0; i < n; i++) bad += !(ya[i] == yb[i]);
        CHECK(bad == 0, "%s: %d of %d outputs differ from the unfused GEMV's", nib_type_name(t), bad, n);
        {
            host_act ha = act_down(act_a, n), hb = act_down(act_b, n);
            const size_t qd = (size_t)((const uint8_t *)ha.ds - ha.bytes) + (size_t)(n / 32) * 8;
            CHECK(memcmp(ha.bytes, hb.bytes, qd) == 0, "%s: the fused norm's quants or scales differ",
                  nib_type_name(t));
            double sa = 0.0, sb = 0.0;
            for (int i = 0; i < NIB_CUDA_ACT_SCALE_SLOTS; i++) sa += ha.parts[i], sb += hb.parts[i];
            CHECK(fabs(sa - sb) <= 1e-12 * sa, "%s: the fused norm's sum of squares %.17g, the norm kernel's %.17g",
                  nib_type_name(t), sb, sa);
            free(ha.bytes), free(hb.bytes);
        }
        /* the gate/up kernel on each: the only reader of the fused norm's trailer */
        s = nib_cuda_fill_f32(dz, NAN, NF, &err);
        if (s == NIB_OK) s = nib_cuda_matmul_glu(gate, up, dy, act_a, 1, NIB_CUDA_GLU_SILU, dz, dtmp, NULL, &err);
        if (s == NIB_OK) gpu_download(za, dz, sizeof(float) * NF);
        if (s == NIB_OK) s = nib_cuda_fill_f32(dz, NAN, NF, &err);
        if (s == NIB_OK) s = nib_cuda_matmul_glu(gate, up, dy, act_b, 1, NIB_CUDA_GLU_SILU, dz, dtmp, NULL, &err);
        if (s == NIB_OK) gpu_download(zb, dz, sizeof(float) * NF);
        CHECK(s == NIB_OK && deferred_close(zb, za, NF, nib_type_name(t)), "%s: the gate/up on the fused norm is off",
              nib_type_name(t));
    next:
        nib_cuda_weight_free(w), nib_cuda_weight_free(gate), nib_cuda_weight_free(up);
    }
    {
        nib_cuda_weight *plain = random_weight(NIB_TYPE_Q8_0, n, n);
        CHECK(plain && !nib_cuda_matmul_norm_ok(plain) &&
                  nib_cuda_matmul_norm(plain, act_in, dy, dw, 1e-5f, act_b, NULL, &err) == NIB_ERR_UNSUPPORTED,
              "a Q8_0 matrix in the file's layout took the fused norm");
        nib_cuda_weight_free(plain);
    }
    nib_cuda_free(dx), nib_cuda_free(dy), nib_cuda_free(dw), nib_cuda_free(dz), nib_cuda_free(dtmp), nib_cuda_free(dxn);
    nib_cuda_free(act_in), nib_cuda_free(act_a), nib_cuda_free(act_b);
    free(x), free(y0), free(wn), free(ya), free(yb), free(za), free(zb);
}

/* The deferred norm after a sandwich norm (o and post_w set, one token):
 * x against the single-block kernel's (the same rounding steps; o's sum of
 * squares in another order, so 1 ulp), its activation against the plain
 * one's of that x and a GEMV on it as test_deferred_norm checks them, and
 * a second run on the same inputs the same bytes (every block reduces o
 * itself: no order may depend on timing). */
static bool ulps_close(float a, float b, int ulps);
static void test_post_deferred_norm(void) {
    const struct { int n, n_out; } shapes[] = {{640, 203}, {1152, 96}, {3840, 203}, {5376, 64}};
    nib_error err;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int n = shapes[si].n, n_out = shapes[si].n_out;
        const size_t fb = sizeof(float) * (size_t)n, ab = nib_cuda_act_bytes(n, 1);
        float *x = malloc(fb), *o = malloc(fb), *wn = malloc(fb), *pw = malloc(fb);
        float *x1 = malloc(fb), *x2 = malloc(fb), *y2 = malloc(sizeof(float) * (size_t)n_out);
        float *y3 = malloc(sizeof(float) * (size_t)n_out);
        for (int i = 0; i < n; i++)
            x[i] = (float)(3 * rng_normal()), o[i] = (float)(20 * rng_normal()), wn[i] = (float)(1 + 0.3 * rng_normal()),
            pw[i] = (float)(0.5 + 0.3 * rng_normal());
        float *dx = gpu_alloc(fb), *dxb = gpu_alloc(fb), *dox = gpu_alloc(fb), *dw = gpu_alloc(fb), *dpw = gpu_alloc(fb);
        float *dxn = gpu_alloc(fb), *dy = gpu_alloc(sizeof(float) * (size_t)n_out);
        void *act1 = gpu_alloc(ab), *act2 = gpu_alloc(ab), *act3 = gpu_alloc(ab);
        gpu_upload(dox, o, fb), gpu_upload(dw, wn, fb), gpu_upload(dpw, pw, fb);
        nib_cuda_norm_args plain = {dx, dox, dpw, dw, dxn, act1, 1, n, 1e-6f, false};
        nib_cuda_norm_args defer = {dxb, dox, dpw, dw, dxn, act2, 1, n, 1e-6f, true};
        char what[96];
        snprintf(what, sizeof what, "post-norm deferred n %d", n);
        gpu_upload(dx, x, fb), gpu_upload(dxb, x, fb);
        nib_status s = nib_cuda_fill_f32((float *)act2, NAN, ab / 4, &err);
        if (s == NIB_OK) s = nib_cuda_add_norm(&plain, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_add_norm(&defer, NULL, &err);
        CHECK(s == NIB_OK, "%s: %s", what, err.msg);
        if (s == NIB_OK) {
            gpu_download(x1, dx, fb), gpu_download(x2, dxb, fb);
            int xbad = 0, xdiff = 0;
            for (int i = 0; i < n; i++) xbad += !ulps_close(x2[i], x1[i], 1), xdiff += x2[i] != x1[i];
            CHECK(xbad == 0, "%s: %d of %d x values beyond 1 ulp of the single-block kernel's (%d differ)", what, xbad,
                  n, xdiff);
            /* the activation of that x, and a GEMV on it (Q4_K where a row holds whole blocks, else Q8_0) */
            host_act hd = act_down(act2, n), hp = act_down(act1, n);
            uint8_t *folded = malloc(ab);
            CHECK(deferred_act_ok(&hd, &hp, x1, n, 1e-6f, folded, what), "%s: the activation is off", what);
            gpu_upload(act3, folded, ab);
            const nib_type t = n % 256 == 0 ? NIB_TYPE_Q4_K : NIB_TYPE_Q8_0;
            size_t rb = 0;
            nib_row_bytes(t, n, &rb);
            uint8_t *W = malloc(rb * (size_t)n_out);
            random_rows(t, W, n, n_out);
            nib_cuda_weight *w = NULL;
            s = nib_cuda_weight_upload(t, W, n, n_out, &w, &err);
            free(W);
            if (s == NIB_OK) s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
            if (s == NIB_OK) s = nib_cuda_matmul(w, dxn, act2, 1, dy, false, NULL, &err);
            if (s == NIB_OK) gpu_download(y2, dy, sizeof(float) * (size_t)n_out);
            if (s == NIB_OK) s = nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
            if (s == NIB_OK) s = nib_cuda_matmul(w, dxn, act3, 1, dy, false, NULL, &err);
            if (s == NIB_OK) gpu_download(y3, dy, sizeof(float) * (size_t)n_out);
            CHECK(s == NIB_OK && deferred_close(y2, y3, n_out, what), "%s: a GEMV on it is off (%s)", what,
                  s == NIB_OK ? "values" : err.msg);
            nib_cuda_weight_free(w);
            /* the same inputs again: the same bytes */
            gpu_upload(dxb, x, fb);
            s = nib_cuda_fill_f32((float *)act2, NAN, ab / 4, &err);
            if (s == NIB_OK) s = nib_cuda_add_norm(&defer, NULL, &err);
            CHECK(s == NIB_OK, "%s again: %s", what, err.msg);
            if (s == NIB_OK) {
                host_act h2 = act_down(act2, n);
                gpu_download(x1, dxb, fb);
                CHECK(memcmp(h2.bytes, hd.bytes, ab) == 0 && memcmp(x1, x2, fb) == 0,
                      "%s: a second run gave other bytes", what);
                free(h2.bytes);
            }
            free(hd.bytes), free(hp.bytes), free(folded);
        }
        /* what it cannot do: it says so */
        nib_cuda_norm_args bad = defer;
        bad.post_w = NULL;
        CHECK(nib_cuda_add_norm(&bad, NULL, &err) == NIB_ERR_ARG, "a deferred residual add without a post-norm was accepted");
        nib_cuda_free(dx), nib_cuda_free(dxb), nib_cuda_free(dox), nib_cuda_free(dw), nib_cuda_free(dpw);
        nib_cuda_free(dxn), nib_cuda_free(dy), nib_cuda_free(act1), nib_cuda_free(act2), nib_cuda_free(act3);
        free(x), free(o), free(wn), free(pw), free(x1), free(x2), free(y2), free(y3);
    }
}

static bool ulps_close(float a, float b, int ulps) {
    if (a == b) return true;
    float tol = ulps * (fabsf(b) * 1.1920929e-7f) + 1e-30f;
    return fabsf(a - b) <= tol;
}

static void test_qkv_rope(void) {
    nib_error err;
    struct { int nh, nkv, hd, n_rot, neox, qk_norm, bias; float base; } cases[] = {
        {9, 3, 64, 64, 0, 0, 0, 100000.0f},   /* SmolLM2 */
        {14, 2, 64, 64, 1, 0, 1, 1e6f},       /* Qwen2.5 (biases) */
        {4, 1, 256, 256, 1, 1, 0, 10000.0f},  /* Gemma 3 (QK-norm, head 256) */
        {8, 2, 128, 64, 0, 1, 1, 500000.0f},  /* partial rotation */
    };
    const int T = 3, n_ctx = 64, pos0 = 37;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int nh = cases[c].nh, nkv = cases[c].nkv, hd = cases[c].hd;
        const int QD = nh * hd, KD = nkv * hd;
        float *q = malloc(sizeof(float) * (size_t)(T * QD)), *k = malloc(sizeof(float) * (size_t)(T * KD));
        float *v = malloc(sizeof(float) * (size_t)(T * KD)), *bq = malloc(sizeof(float) * (size_t)QD);
        float *bk = malloc(sizeof(float) * (size_t)KD), *bv = malloc(sizeof(float) * (size_t)KD);
        float *qn = malloc(sizeof(float) * (size_t)hd), *kn = malloc(sizeof(float) * (size_t)hd);
        for (int i = 0; i < T * QD; i++) q[i] = (float)rng_normal();
        for (int i = 0; i < T * KD; i++) k[i] = (float)rng_normal(), v[i] = (float)rng_normal();
        for (int i = 0; i < QD; i++) bq[i] = (float)(0.1 * rng_normal());
        for (int i = 0; i < KD; i++) bk[i] = (float)(0.1 * rng_normal()), bv[i] = (float)(0.1 * rng_normal());
        for (int i = 0; i < hd; i++) qn[i] = (float)(1 + 0.2 * rng_normal()), kn[i] = (float)(1 + 0.2 * rng_normal());
        float *dq = gpu_alloc(sizeof(float) * (size_t)(T * QD)), *dk = gpu_alloc(sizeof(float) * (size_t)(T * KD));
        float *dv = gpu_alloc(sizeof(float) * (size_t)(T * KD)), *dbq = gpu_alloc(sizeof(float) * (size_t)QD);
        float *dbk = gpu_alloc(sizeof(float) * (size_t)KD), *dbv = gpu_alloc(sizeof(float) * (size_t)KD);
        float *dqn = gpu_alloc(sizeof(float) * (size_t)hd), *dkn = gpu_alloc(sizeof(float) * (size_t)hd);
        uint16_t *kc = gpu_alloc(2 * (size_t)(n_ctx * KD)), *vc = gpu_alloc(2 * (size_t)(n_ctx * KD));
        int32_t *dpos = gpu_alloc(4);
        gpu_upload(dq, q, sizeof(float) * (size_t)(T * QD)), gpu_upload(dk, k, sizeof(float) * (size_t)(T * KD));
        gpu_upload(dv, v, sizeof(float) * (size_t)(T * KD)), gpu_upload(dbq, bq, sizeof(float) * (size_t)QD);
        gpu_upload(dbk, bk, sizeof(float) * (size_t)KD), gpu_upload(dbv, bv, sizeof(float) * (size_t)KD);
        gpu_upload(dqn, qn, sizeof(float) * (size_t)hd), gpu_upload(dkn, kn, sizeof(float) * (size_t)hd);
        int32_t p0 = pos0;
        gpu_upload(dpos, &p0, 4);
        nib_cuda_qkv_args a = {
            .q = dq, .k = dk, .v = dv, .bq = cases[c].bias ? dbq : NULL, .bk = cases[c].bias ? dbk : NULL,
            .bv = cases[c].bias ? dbv : NULL, .q_norm = cases[c].qk_norm ? dqn : NULL,
            .k_norm = cases[c].qk_norm ? dkn : NULL, .eps = 1e-6f, .k_cache = kc, .v_cache = vc, .pos = dpos,
            .n_tok = T, .n_head = nh, .n_head_kv = nkv, .hd_k = hd, .hd_v = hd, .n_rot = cases[c].n_rot,
            .neox = cases[c].neox, .rope_base = cases[c].base, .rope_scale = 1.0f, .rope_freqs = NULL,
        };
        CHECK(nib_cuda_qkv_rope(&a, NULL, &err) == NIB_OK, "qkv_rope: %s", err.msg);
        float *gq = malloc(sizeof(float) * (size_t)(T * QD));
        uint16_t *gk = malloc(2 * (size_t)(n_ctx * KD)), *gv = malloc(2 * (size_t)(n_ctx * KD));
        gpu_download(gq, dq, sizeof(float) * (size_t)(T * QD));
        gpu_download(gk, kc, 2 * (size_t)(n_ctx * KD)), gpu_download(gv, vc, 2 * (size_t)(n_ctx * KD));
        /* the CPU's way */
        nib_rope rope = {cases[c].n_rot, cases[c].neox, cases[c].base, 1.0f, NULL, 1.0f};
        int bad = 0;
        for (int t = 0; t < T; t++) {
            float cs[1024];
            nib_rope_table(cs, pos0 + t, &rope);
            for (int h = 0; h < nh + 2 * nkv; h++) {
                const bool isq = h < nh, isk = !isq && h < nh + nkv;
                const int kh = isq ? h : (isk ? h - nh : h - nh - nkv);
                float vec[512];
                const float *src = isq ? q + (t * nh + kh) * hd : (isk ? k : v) + (t * nkv + kh) * hd;
                const float *b = isq ? bq + kh * hd : (isk ? bk : bv) + kh * hd;
                for (int i = 0; i < hd; i++) vec[i] = cases[c].bias ? src[i] + b[i] : src[i];
                if (!(h >= nh + nkv)) {
                    if (cases[c].qk_norm) nib_rmsnorm(vec, vec, isq ? qn : kn, hd, 1e-6f);
                    nib_rope_apply_table(vec, cs, &rope);
                }
                for (int i = 0; i < hd; i++) {
                    if (isq) {
                        if (!ulps_close(gq[(t * nh + kh) * hd + i], vec[i], 4) && bad++ < 3)
                            fprintf(stderr, "  case %zu q t%d h%d [%d]: %.9g vs %.9g\n", c, t, kh, i,
                                    gq[(t * nh + kh) * hd + i], vec[i]);
                    } else {
                        uint16_t want = nib_f32_to_fp16(vec[i]);
                        uint16_t got = (isk ? gk : gv)[((size_t)(pos0 + t) * nkv + kh) * hd + i];
                        if (abs((int)want - (int)got) > 1 && bad++ < 3)
                            fprintf(stderr, "  case %zu %s t%d h%d [%d]: f16 %04x vs %04x\n", c, isk ? "k" : "v", t, kh, i,
                                    got, want);
                    }
                }
            }
        }
        CHECK(bad == 0, "qkv_rope case %zu: %d values off", c, bad);
        nib_cuda_free(dq), nib_cuda_free(dk), nib_cuda_free(dv), nib_cuda_free(dbq), nib_cuda_free(dbk);
        nib_cuda_free(dbv), nib_cuda_free(dqn), nib_cuda_free(dkn), nib_cuda_free(kc), nib_cuda_free(vc);
        nib_cuda_free(dpos);
        free(q), free(k), free(v), free(bq), free(bk), free(bv), free(qn), free(kn), free(gq), free(gk), free(gv);
    }
}

/* The fused Q/K/V projection with RoPE and the cache stores in its epilogue
 * against the two kernels it replaces (the tiled GEMV into a fused buffer,
 * then qkv_rope): the same products and the same rotation arithmetic, so q
 * and both caches bit for bit, the caches compared whole (poisoned first:
 * no other row may be written). Llama-3-8B's shape (2-row groups), full and
 * partial rotation; a neox layout is refused. */
/* NaN into the caches (cb bytes each) and q (nq floats) */
static nib_status poison(uint16_t *kc, uint16_t *vc, float *q, size_t cb, int64_t nq, nib_error *err) {
    nib_status s = nib_cuda_fill_f32((float *)kc, NAN, cb / 4, err);
    if (s == NIB_OK) s = nib_cuda_fill_f32((float *)vc, NAN, cb / 4, err);
    return s == NIB_OK ? nib_cuda_fill_f32(q, NAN, nq, err) : s;
}

static void test_matmul_qkv_rope(void) {
    /* one fused matrix (v NIB_TYPE_COUNT), or a fused Q/K with V beside it (Q4_K_M's layers with a Q6_K V) */
    const struct { nib_type qk, v; } layouts[] = {
        {NIB_TYPE_Q4_K, NIB_TYPE_COUNT}, {NIB_TYPE_Q4_0, NIB_TYPE_COUNT}, {NIB_TYPE_Q4_K, NIB_TYPE_Q6_K}};
    const struct { int n_rot; float base; } cases[] = {{128, 500000.0f}, {64, 10000.0f}};
    const int n = 4096, nh = 32, nkv = 8, hd = 128, QD = nh * hd, KD = nkv * hd, NO = QD + 2 * KD;
    const int n_ctx = 2048, pos = 1234;
    nib_error err;
    float *x = malloc(sizeof(float) * n), *qa = malloc(sizeof(float) * QD), *qb = malloc(sizeof(float) * QD);
    const size_t cb = 2 * (size_t)n_ctx * KD;
    uint16_t *ka = malloc(cb), *kb = malloc(cb), *va = malloc(cb), *vb = malloc(cb);
    float *dx = gpu_alloc(sizeof(float) * n), *dqkv = gpu_alloc(sizeof(float) * NO), *dq = gpu_alloc(sizeof(float) * QD);
    float *dv = gpu_alloc(sizeof(float) * KD), *dnw = gpu_alloc(sizeof(float) * n), *dxn = gpu_alloc(sizeof(float) * n);
    void *act2 = gpu_alloc(nib_cuda_act_bytes(n, 1));
    for (int i = 0; i < n; i++) x[i] = (float)(0.5 + rng_uniform()); /* the norm's weight */
    gpu_upload(dnw, x, sizeof(float) * n);
    for (int i = 0; i < n; i++) x[i] = (float)rng_normal();
    uint16_t *kc = gpu_alloc(cb), *vc = gpu_alloc(cb);
    int32_t *dpos = gpu_alloc(4);
    double *dfreq = gpu_alloc(sizeof(double) * hd / 2);
    void *act = gpu_alloc(nib_cuda_act_bytes(n, 1));
    gpu_upload(dx, x, sizeof(float) * n);
    const int32_t p0 = pos;
    gpu_upload(dpos, &p0, 4);
    nib_status s = nib_cuda_act_quantize(dx, n, 1, act, NULL, &err);
    CHECK(s == NIB_OK, "quantize: %s", err.msg);
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0] && s == NIB_OK; li++) {
        const nib_type t = layouts[li].qk;
        const bool apart = layouts[li].v != NIB_TYPE_COUNT;
        char name[64];
        snprintf(name, sizeof name, "%s%s%s", nib_type_name(t), apart ? " + V " : "",
                 apart ? nib_type_name(layouts[li].v) : "");
        nib_cuda_weight *w = random_weight(t, n, apart ? QD + KD : NO), *wv = apart ? random_weight(layouts[li].v, n, KD) : NULL;
        bool tiled = false;
        if (!w || (apart && !wv)) s = NIB_ERR_ARG;
        else s = apart ? nib_cuda_weight_tile_qkv_pair(w, wv, &tiled, &err) : nib_cuda_weight_tile_qkv(w, &tiled, &err);
        const int stride = apart ? QD + KD : NO;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0] && s == NIB_OK; c++) {
            double freq[64];
            for (int i = 0; i < cases[c].n_rot / 2; i++)
                freq[i] = pow((double)cases[c].base, -2.0 * i / (double)cases[c].n_rot);
            gpu_upload(dfreq, freq, sizeof(double) * (size_t)(cases[c].n_rot / 2));
            nib_cuda_qkv_args a = {
                .q = dqkv, .k = dqkv + QD, .v = apart ? dv : dqkv + QD + KD, .q_stride = stride, .k_stride = stride,
                .v_stride = apart ? 0 : stride, .q_out = dq, .eps = 1e-6f, .k_cache = kc, .v_cache = vc, .pos = dpos,
                .n_tok = 1, .n_head = nh, .n_head_kv = nkv, .hd_k = hd, .hd_v = hd, .n_rot = cases[c].n_rot,
                .neox = false, .rope_base = cases[c].base, .rope_scale = 1.0f, .inv_freq = dfreq,
            };
            const bool ok = nib_cuda_matmul_qkv_rope_ok(w, wv, &a);
            CHECK(tiled && ok, "%s %dx%d: tiled %d, fused RoPE %d", name, n, NO, tiled, ok);
            if (!ok) break;
            /* the kernels it replaces (the tiled GEMVs, qkv_rope), then the fused one, each on poisoned outputs */
            s = poison(kc, vc, dq, cb, QD, &err);
            if (s == NIB_OK) s = nib_cuda_matmul(w, dx, act, 1, dqkv, false, NULL, &err);
            if (s == NIB_OK && apart) s = nib_cuda_matmul(wv, dx, act, 1, dv, false, NULL, &err);
            if (s == NIB_OK) s = nib_cuda_qkv_rope(&a, NULL, &err);
            if (s == NIB_OK) {
                gpu_download(qa, dq, sizeof(float) * QD), gpu_download(ka, kc, cb), gpu_download(va, vc, cb);
                s = poison(kc, vc, dq, cb, QD, &err);
            }
            if (s == NIB_OK) s = nib_cuda_fill_f32(dqkv, NAN, NO, &err); /* not to be read */
            if (s == NIB_OK) s = nib_cuda_fill_f32(dv, NAN, KD, &err);
            if (s == NIB_OK) s = nib_cuda_matmul_qkv_rope(w, wv, act, &a, NULL, &err);
            CHECK(s == NIB_OK, "%s rot %d: %s", name, cases[c].n_rot, err.msg);
            if (s != NIB_OK) break;
            gpu_download(qb, dq, sizeof(float) * QD), gpu_download(kb, kc, cb), gpu_download(vb, vc, cb);
            int bad = 0;
            for (int i = 0; i < QD; i++) bad += memcmp(&qa[i], &qb[i], 4) != 0 || qb[i] != qb[i];
            CHECK(bad == 0, "%s rot %d: %d of %d q values differ from qkv_rope's", name, cases[c].n_rot, bad, QD);
            CHECK(memcmp(ka, kb, cb) == 0 && memcmp(va, vb, cb) == 0,
                  "%s rot %d: the K or V cache differs from qkv_rope's", name, cases[c].n_rot);
            a.neox = true;
            CHECK(!nib_cuda_matmul_qkv_rope_ok(w, wv, &a) &&
                      nib_cuda_matmul_qkv_rope(w, wv, act, &a, NULL, &err) == NIB_ERR_UNSUPPORTED,
                  "%s: a neox layout took the fused RoPE", name);
            a.neox = false;
            if (apart) { /* the V alone is not a fused Q/K/V, nor the Q/K without its V */
                CHECK(!nib_cuda_matmul_qkv_rope_ok(w, NULL, &a) && !nib_cuda_matmul_qkv_rope_ok(wv, NULL, &a),
                      "%s: a part alone took the fused RoPE", name);
            }
            /* the attention norm in the kernel, against the deferred norm kernel's activation read by the
             * same fused kernel: the same quants, and a row scale from the squares summed in another
             * order (double sums, rounded to float: equal or an ulp apart), so q within 1e-6 of the
             * largest |q| and K/V within an f16 ulp (2^-10 relative) of it; none left unwritten */
            nib_cuda_norm_args na = {.x = dx, .norm_w = dnw, .xn = dxn, .act = act2, .n_tok = 1, .n = n,
                                     .eps = 1e-5f, .defer = true};
            s = nib_cuda_add_norm(&na, NULL, &err);
            if (s == NIB_OK) s = poison(kc, vc, dq, cb, QD, &err);
            if (s == NIB_OK) s = nib_cuda_matmul_qkv_rope(w, wv, act2, &a, NULL, &err);
            CHECK(s == NIB_OK, "%s rot %d, norm kernel first: %s", name, cases[c].n_rot, err.msg);
            if (s != NIB_OK) break;
            gpu_download(qa, dq, sizeof(float) * QD), gpu_download(ka, kc, cb), gpu_download(va, vc, cb);
            a.norm_x = dx, a.norm_w = dnw, a.norm_eps = 1e-5f;
            const bool xn_ok = nib_cuda_matmul_qkv_rope_ok(w, wv, &a);
            CHECK(xn_ok, "%s: the fused RoPE does not take the norm", name);
            if (!xn_ok) break;
            s = poison(kc, vc, dq, cb, QD, &err);
            if (s == NIB_OK) s = nib_cuda_matmul_qkv_rope(w, wv, NULL, &a, NULL, &err);
            CHECK(s == NIB_OK, "%s rot %d, norm in the kernel: %s", name, cases[c].n_rot, err.msg);
            if (s != NIB_OK) break;
            gpu_download(qb, dq, sizeof(float) * QD), gpu_download(kb, kc, cb), gpu_download(vb, vc, cb);
            float qmax = 0.0f;
            for (int i = 0; i < QD; i++) qmax = fmaxf(qmax, fabsf(qa[i]));
            bad = 0;
            for (int i = 0; i < QD; i++) bad += !(fabsf(qa[i] - qb[i]) <= 1e-6f * qmax);
            CHECK(bad == 0 && qmax > 0.0f, "%s rot %d: %d of %d q values off with the norm in the kernel", name,
                  cases[c].n_rot, bad, QD);
            bad = 0;
            for (size_t i = 0; i < cb / 2; i++) {
                const float k0 = nib_fp16_to_f32(ka[i]), k1 = nib_fp16_to_f32(kb[i]);
                const float v0 = nib_fp16_to_f32(va[i]), v1 = nib_fp16_to_f32(vb[i]);
                if (k0 != k0 && k1 != k1 && v0 != v0 && v1 != v1) continue; /* rows other than pos: poisoned in both */
                bad += !(fabsf(k0 - k1) <= 0x1p-10f * fabsf(k0) + 1e-6f) || !(fabsf(v0 - v1) <= 0x1p-10f * fabsf(v0) + 1e-6f);
            }
            CHECK(bad == 0, "%s rot %d: %d K/V cache values off with the norm in the kernel", name, cases[c].n_rot, bad);
            a.norm_x = NULL;
        }
        nib_cuda_weight_free(w);
        if (wv) nib_cuda_weight_free(wv);
    }
    nib_cuda_free(dx), nib_cuda_free(dqkv), nib_cuda_free(dq), nib_cuda_free(dv), nib_cuda_free(kc), nib_cuda_free(vc);
    nib_cuda_free(dnw), nib_cuda_free(dxn), nib_cuda_free(act2);
    nib_cuda_free(dpos), nib_cuda_free(dfreq), nib_cuda_free(act);
    free(x), free(qa), free(qb), free(ka), free(kb), free(va), free(vb);
}

static void test_argmax(void) {
    nib_error err;
    const int64_t n = 151936;
    float *x = malloc(sizeof(float) * (size_t)n);
    float *dx = gpu_alloc(sizeof(float) * (size_t)n);
    uint64_t *dout = gpu_alloc(8), key = 0;
    int32_t got = -1;
    for (int rep = 0; rep < 4; rep++) {
        for (int64_t i = 0; i < n; i++) x[i] = (float)rng_normal();
        int64_t want = (int64_t)(rng_u64() % (uint64_t)n);
        x[want] = 10.0f;
        if (rep >= 1) x[(want + 777) % n] = 10.0f, want = want < (want + 777) % n ? want : (want + 777) % n; /* tie: first */
        if (rep >= 2) x[0] = NAN;
        if (rep == 3) want = 0, x[0] = 11.0f;
        gpu_upload(dx, x, sizeof(float) * (size_t)n);
        CHECK(nib_cuda_argmax(dx, n, dout, NULL, &err) == NIB_OK, "argmax: %s", err.msg);
        gpu_download(&key, dout, 8);
        got = key ? (int32_t)(0xFFFFFFFFu - (uint32_t)key) : -1;
        CHECK(got == want, "argmax rep %d: %d, want %lld", rep, got, (long long)want);
    }
    nib_cuda_free(dx), nib_cuda_free(dout);
    free(x);
    /* fused into the LM head: the key must name the host's first maximum of y */
    for (size_t ti = 0; ti < sizeof mm_types / sizeof mm_types[0]; ti++) {
        const nib_type t = mm_types[ti];
        const int64_t n_in = 256, n_out = 5003;
        size_t rb = 0;
        nib_row_bytes(t, n_in, &rb);
        uint8_t *W = malloc(rb * (size_t)n_out);
        random_rows(t, W, n_in, n_out);
        memcpy(W + 4000 * rb, W + 17 * rb, rb); /* rows 17 and 4000 equal: a tie to break */
        nib_cuda_weight *w = NULL;
        CHECK(nib_cuda_weight_upload(t, W, n_in, n_out, &w, &err) == NIB_OK, "upload: %s", err.msg);
        free(W);
        if (!w) continue;
        float *xv = malloc(sizeof(float) * (size_t)n_in), *y = malloc(sizeof(float) * (size_t)n_out);
        for (int64_t i = 0; i < n_in; i++) xv[i] = (float)rng_normal();
        float *dxv = gpu_alloc(sizeof(float) * (size_t)n_in), *dy = gpu_alloc(sizeof(float) * (size_t)n_out);
        void *act = gpu_alloc(nib_cuda_act_bytes(n_in, 1));
        uint64_t *dk = gpu_alloc(8), zero = 0;
        gpu_upload(dxv, xv, sizeof(float) * (size_t)n_in), gpu_upload(dk, &zero, 8);
        nib_status s = nib_cuda_act_quantize(dxv, n_in, 1, act, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_matmul_argmax(w, dxv, act, dy, dk, NULL, &err);
        CHECK(s == NIB_OK, "matmul_argmax: %s", err.msg);
        gpu_download(y, dy, sizeof(float) * (size_t)n_out), gpu_download(&key, dk, 8);
        int32_t want = 0;
        for (int64_t i = 1; i < n_out; i++)
            if (y[i] > y[want]) want = (int32_t)i;
        got = key ? (int32_t)(0xFFFFFFFFu - (uint32_t)key) : -1;
        CHECK(got == want, "%s matmul_argmax: %d, want %d", nib_type_name(t), got, want);
        nib_cuda_weight_free(w);
        nib_cuda_free(dxv), nib_cuda_free(dy), nib_cuda_free(act), nib_cuda_free(dk);
        free(xv), free(y);
    }
}

/* An LM head's shape (more rows than 4 passes of a persistent grid of 4-row
 * warps: 135,168 on a 132-SM device at 16 blocks an SM) takes the staged
 * one-token kernel (gemv_stream.cuh; the 4-row kernel for formats without
 * it, or where its stages do not fit); its outputs must equal the prompt
 * path's (8-token chunks, one row per warp) bit for bit, as the
 * matmul_tokens rule says, and with the fused argmax the key must name the
 * first maximum of those outputs. 896-wide Q8_0 rows (952 bytes) start off
 * 16-byte boundaries and take 16-row tiles; the 4096-wide ones 8-row tiles;
 * 140,001 rows end in a part tile. */
static void test_tall_matrix(void) {
    const struct {
        nib_type t;
        int64_t n_in, n_out;
    } cases[] = {{NIB_TYPE_Q4_0, 4096, 140000}, {NIB_TYPE_Q4_K, 4096, 140001}, {NIB_TYPE_Q6_K, 4096, 140000},
                 {NIB_TYPE_Q5_1, 4096, 140000}, {NIB_TYPE_Q8_0, 896, 160001}, {NIB_TYPE_MXFP4, 896, 160000}};
    for (size_t ti = 0; ti < sizeof cases / sizeof cases[0]; ti++) {
        const nib_type t = cases[ti].t;
        const int64_t n_in = cases[ti].n_in, n_out = cases[ti].n_out;
        nib_error err;
        nib_cuda_weight *w = random_weight(t, n_in, n_out);
        if (!w) continue;
        float *x = malloc(sizeof(float) * (size_t)(2 * n_in));
        float *y1 = malloc(sizeof(float) * (size_t)n_out), *y2 = malloc(sizeof(float) * (size_t)(2 * n_out));
        for (int64_t i = 0; i < n_in; i++) x[i] = x[n_in + i] = (float)rng_normal();
        float *dx = gpu_alloc(sizeof(float) * (size_t)(2 * n_in)), *dy = gpu_alloc(sizeof(float) * (size_t)(2 * n_out));
        void *act1 = gpu_alloc(nib_cuda_act_bytes(n_in, 1)), *act2 = gpu_alloc(nib_cuda_act_bytes(n_in, 2));
        uint64_t *dk = gpu_alloc(8), zero = 0, key = 0;
        gpu_upload(dx, x, sizeof(float) * (size_t)(2 * n_in)), gpu_upload(dk, &zero, 8);
        nib_cuda_fill_f32(dy, NAN, (size_t)(2 * n_out), &err);
        nib_status s = nib_cuda_act_quantize(dx, n_in, 2, act2, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_matmul(w, dx, act2, 2, dy, false, NULL, &err);
        gpu_download(y2, dy, sizeof(float) * (size_t)(2 * n_out));
        nib_cuda_fill_f32(dy, NAN, (size_t)n_out, &err);
        if (s == NIB_OK) s = nib_cuda_act_quantize(dx, n_in, 1, act1, NULL, &err);
        if (s == NIB_OK) s = nib_cuda_matmul_argmax(w, dx, act1, dy, dk, NULL, &err);
        CHECK(s == NIB_OK, "%s tall matmul: %s", nib_type_name(t), err.msg);
        gpu_download(y1, dy, sizeof(float) * (size_t)n_out), gpu_download(&key, dk, 8);
        int bad = 0;
        int32_t want = 0;
        for (int64_t i = 0; i < n_out; i++) {
            if (!(y1[i] == y2[i]) && bad++ < 3)
                fprintf(stderr, "  %s tall: y[%lld] = %.9g, prompt path %.9g\n", nib_type_name(t), (long long)i, y1[i],
                        y2[i]);
            if (y2[i] > y2[want]) want = (int32_t)i;
        }
        CHECK(bad == 0, "%s %lldx%lld: %d one-token outputs differ from the prompt path's", nib_type_name(t),
              (long long)n_in, (long long)n_out, bad);
        const int32_t got = key ? (int32_t)(0xFFFFFFFFu - (uint32_t)key) : -1;
        CHECK(got == want, "%s tall matmul_argmax: %d, want %d", nib_type_name(t), got, want);
        nib_cuda_weight_free(w);
        nib_cuda_free(dx), nib_cuda_free(dy), nib_cuda_free(act1), nib_cuda_free(act2), nib_cuda_free(dk);
        free(x), free(y1), free(y2);
    }
}

int main(void) {
    if (!gpu_test_start("cuda")) return test_summary();
    rng_seed(4242);
    RUN(test_matmul_tokens);
    RUN(test_split_k_add);
    RUN(test_matmul_pair);
    RUN(test_add_norm);
    RUN(test_deferred_norm);
    RUN(test_post_deferred_norm);
    RUN(test_matmul_norm);
    RUN(test_qkv_rope);
    RUN(test_matmul_qkv_rope);
    RUN(test_argmax);
    RUN(test_tall_matrix);
    return test_summary();
}
