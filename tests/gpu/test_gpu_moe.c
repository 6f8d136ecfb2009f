/* The mixture-of-experts kernels (cuda/cuda_moe.h) against their references.
 *
 *  - the router's choice against the CPU's arithmetic (model/ffn_moe.c:
 *    softmax with the sum in double, top-k largest first, weights divided by
 *    their float sum when norm) on logits spaced far apart relative to
 *    expf's error (so the order is unambiguous): the ids exactly, the
 *    weights within 4e-6 relative (expf may differ by 2 ulp between host
 *    and device, the sum and division add a few more); logits with exact
 *    ties: the smaller index first, as the CPU's top_k.
 *  - the experts' products: each slot's outputs bit for bit the plain GEMV
 *    of that expert alone on that slot's activation row (the kernel runs the
 *    same body, whose lanes add their items in the same order); every format
 *    in the table, gate/up slots (one row per token, act_div = k) and down
 *    slots (one row per slot).
 *  - the weighted sum: bit for bit the host's float products and sums in
 *    choice order (the kernel rounds each, no fused multiply-add; this file
 *    is compiled as ISO C, which does not contract either), written and
 *    added to a residual.
 * Outputs are poisoned with NaN before each launch. Without a usable GPU:
 * one skip with the reason. */
#include <stdbool.h>
#include <stdlib.h>

#include "cuda/cuda.h"
#include "cuda/cuda_moe.h"
#include "nib.h"
#include "test.h"
#include "gpu_test.h"

/* the CPU's routing of one token (ffn_moe.c), for the reference */
static void route_ref(const float *l, int ne, int k, bool norm, int32_t *ids, float *w) {
    float p[512], mx = -INFINITY;
    for (int e = 0; e < ne; e++) mx = l[e] > mx ? l[e] : mx;
    double sum = 0.0;
    for (int e = 0; e < ne; e++) sum += (p[e] = expf(l[e] - mx));
    const float inv = (float)(1.0 / sum);
    for (int e = 0; e < ne; e++) p[e] *= inv;
    bool taken[512] = {false};
    float ws = 0.0f;
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < ne; e++)
            if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
        taken[best] = true;
        ids[j] = best;
        w[j] = p[best];
        ws += w[j];
    }
    if (norm) {
        ws = ws > 6.103515625e-5f ? ws : 6.103515625e-5f;
        for (int j = 0; j < k; j++) w[j] /= ws;
    }
}

static void test_route(void) {
    const struct { int n_tok, ne, k; } cases[] = {{1, 8, 2}, {7, 40, 5}, {5, 128, 8}, {3, 512, 32}, {9, 60, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int T = cases[c].n_tok, NE = cases[c].ne, K = cases[c].k;
        float *l = malloc(sizeof(float) * (size_t)(T * NE)), *w = malloc(sizeof(float) * (size_t)(T * K));
        float *wr = malloc(sizeof(float) * (size_t)K);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)(T * K)), idr[32];
        for (int t = 0; t < T; t++) { /* a random order of values 0.05 apart, with noise below 0.01 */
            float *r = l + (size_t)t * NE;
            for (int e = 0; e < NE; e++) r[e] = 0.05f * (float)e - 0.025f * (float)NE + 0.01f * (float)rng_uniform();
            for (int e = NE - 1; e > 0; e--) {
                const int j = (int)(rng_u64() % (uint64_t)(e + 1));
                const float v = r[e];
                r[e] = r[j], r[j] = v;
            }
            if (t == 1) { /* exact ties among the largest: the smaller index first */
                int top = 0;
                for (int e = 1; e < NE; e++) top = r[e] > r[top] ? e : top;
                const int other = (top + NE / 2) % NE;
                r[other] = r[top];
            }
        }
        float *dl = gpu_alloc(sizeof(float) * (size_t)(T * NE)), *dw = gpu_alloc(sizeof(float) * (size_t)(T * K));
        int32_t *dids = gpu_alloc(sizeof(int32_t) * (size_t)(T * K));
        gpu_upload(dl, l, sizeof(float) * (size_t)(T * NE));
        for (int norm = 0; norm < 2; norm++) {
            nib_error err;
            nib_cuda_fill_f32(dw, NAN, (size_t)(T * K), &err);
            nib_cuda_fill_f32((float *)dids, NAN, (size_t)(T * K), &err);
            CHECK(nib_cuda_moe_route(dl, T, NE, K, norm, dids, dw, NULL, &err) == NIB_OK, "route: %s", err.msg);
            gpu_download(w, dw, sizeof(float) * (size_t)(T * K));
            gpu_download(ids, dids, sizeof(int32_t) * (size_t)(T * K));
            int bad_id = 0, bad_w = 0;
            for (int t = 0; t < T; t++) {
                route_ref(l + (size_t)t * NE, NE, K, norm, idr, wr);
                for (int j = 0; j < K; j++) {
                    const int32_t got = ids[t * K + j];
                    if (got != idr[j] && bad_id++ < 3)
                        fprintf(stderr, "  %d experts top %d token %d choice %d: expert %d, want %d\n", NE, K, t, j,
                                (int)got, (int)idr[j]);
                    const float g = w[t * K + j];
                    if (!(fabsf(g - wr[j]) <= 4e-6f * fabsf(wr[j])) && bad_w++ < 3)
                        fprintf(stderr, "  %d experts token %d choice %d: weight %.9g, want %.9g\n", NE, t, j, g, wr[j]);
                }
            }
            CHECK(bad_id == 0 && bad_w == 0, "route %d tokens, %d experts, top %d, norm %d: %d ids and %d weights wrong",
                  T, NE, K, norm, bad_id, bad_w);
        }
        nib_cuda_free(dl), nib_cuda_free(dw), nib_cuda_free(dids);
        free(l), free(w), free(wr), free(ids);
    }
}

static const nib_type moe_types[] = {NIB_TYPE_Q4_0, NIB_TYPE_Q4_1, NIB_TYPE_Q5_0,   NIB_TYPE_Q5_1,   NIB_TYPE_Q8_0,
                                     NIB_TYPE_Q2_K, NIB_TYPE_Q3_K, NIB_TYPE_Q4_K,   NIB_TYPE_Q5_K,   NIB_TYPE_Q6_K,
                                     NIB_TYPE_IQ4_NL, NIB_TYPE_IQ4_XS, NIB_TYPE_MXFP4};

/* slots of T tokens x K choices over NE experts of (n_in -> rows); act_div K: the
 * token's row for every choice (gate, up), 1: a row a slot (down) */
static void check_moe_matmul(nib_type t, int64_t n_in, int64_t rows, int NE, int T, int K, int act_div) {
    nib_error err;
    size_t rb = 0;
    nib_row_bytes(t, n_in, &rb);
    uint8_t *W = malloc(rb * (size_t)(rows * NE));
    random_rows(t, W, n_in, rows * NE);
    nib_cuda_weight *all = NULL, *one[16] = {NULL};
    CHECK(nib_cuda_weight_upload(t, W, n_in, rows * NE, &all, &err) == NIB_OK, "upload: %s", err.msg);
    for (int e = 0; e < NE; e++)
        CHECK(nib_cuda_weight_upload(t, W + rb * (size_t)(rows * e), n_in, rows, &one[e], &err) == NIB_OK,
              "upload expert %d: %s", e, err.msg);
    const int S = T * K, n_rows = S / act_div;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)S);
    for (int s = 0; s < S; s++) ids[s] = (int32_t)(rng_u64() % (uint64_t)NE);
    ids[0] = NE - 1; /* the last expert's rows: the end of the allocation */
    float *x = malloc(sizeof(float) * (size_t)(n_rows * n_in)), *y = malloc(sizeof(float) * (size_t)(S * rows));
    float *ref = malloc(sizeof(float) * (size_t)rows);
    for (int64_t i = 0; i < n_rows * n_in; i++) x[i] = (float)rng_normal();
    float *dx = gpu_alloc(sizeof(float) * (size_t)(n_rows * n_in)), *dy = gpu_alloc(sizeof(float) * (size_t)(S * rows));
    float *dr = gpu_alloc(sizeof(float) * (size_t)rows);
    int32_t *dids = gpu_alloc(sizeof(int32_t) * (size_t)S);
    void *act = gpu_alloc(nib_cuda_act_bytes(n_in, n_rows)), *s1 = gpu_alloc(nib_cuda_act_bytes(n_in, 1));
    gpu_upload(dx, x, sizeof(float) * (size_t)(n_rows * n_in));
    gpu_upload(dids, ids, sizeof(int32_t) * (size_t)S);
    nib_cuda_fill_f32(dy, NAN, (size_t)(S * rows), &err);
    nib_status st = nib_cuda_act_quantize(dx, n_in, n_rows, act, NULL, &err);
    if (st == NIB_OK) st = nib_cuda_moe_matmul(all, NE, dids, S, act_div, act, dy, NULL, &err);
    CHECK(st == NIB_OK, "%s moe matmul: %s", nib_type_name(t), err.msg);
    gpu_download(y, dy, sizeof(float) * (size_t)(S * rows));
    int bad = 0;
    for (int s = 0; s < S && all; s++) {
        nib_cuda_fill_f32(dr, NAN, (size_t)rows, &err);
        CHECK(nib_cuda_gemv(one[ids[s]], dx + (size_t)(s / act_div) * n_in, dr, s1, NULL, &err) == NIB_OK, "gemv: %s",
              err.msg);
        gpu_download(ref, dr, sizeof(float) * (size_t)rows);
        for (int64_t i = 0; i < rows; i++)
            if (!(y[(size_t)s * rows + i] == ref[i]) && bad++ < 3)
                fprintf(stderr, "  %s slot %d (expert %d) row %lld: %.9g, want %.9g\n", nib_type_name(t), s, ids[s],
                        (long long)i, y[(size_t)s * rows + i], ref[i]);
    }
    CHECK(bad == 0, "%s %lld -> %lld, %d experts, %d slots, act_div %d: %d outputs differ from the expert's GEMV",
          nib_type_name(t), (long long)n_in, (long long)rows, NE, S, act_div, bad);
    nib_cuda_weight_free(all);
    for (int e = 0; e < NE; e++) nib_cuda_weight_free(one[e]);
    nib_cuda_free(dx), nib_cuda_free(dy), nib_cuda_free(dr), nib_cuda_free(dids), nib_cuda_free(act), nib_cuda_free(s1);
    free(W), free(ids), free(x), free(y), free(ref);
}

static void test_moe_matmul(void) {
    for (size_t i = 0; i < sizeof moe_types / sizeof moe_types[0]; i++) {
        const nib_type t = moe_types[i];
        CHECK(nib_cuda_moe_has(t), "%s has no expert kernel", nib_type_name(t));
        check_moe_matmul(t, 512, 203, 6, 3, 2, 2); /* gate/up: 3 tokens, 2 choices each */
        check_moe_matmul(t, 256, 512, 5, 2, 3, 1); /* down: a row a slot */
        check_moe_matmul(t, 256, 96, 9, 1, 4, 4);  /* one token (decode) */
    }
    CHECK(!nib_cuda_moe_has(NIB_TYPE_F16) && !nib_cuda_moe_has(NIB_TYPE_IQ2_XXS),
          "F16 and IQ2_XXS say they have expert kernels");
}

static void test_combine(void) {
    const int T = 4, K = 3;
    const int64_t n = 300;
    float *y = malloc(sizeof(float) * (size_t)(T * K * n)), w[12], *base = malloc(sizeof(float) * (size_t)(T * n));
    float *got = malloc(sizeof(float) * (size_t)(T * n));
    for (int64_t i = 0; i < T * K * n; i++) y[i] = (float)rng_normal();
    for (int i = 0; i < T * K; i++) w[i] = (float)rng_uniform();
    for (int64_t i = 0; i < T * n; i++) base[i] = (float)rng_normal();
    float *dy = gpu_alloc(sizeof(float) * (size_t)(T * K * n)), *dw = gpu_alloc(sizeof w);
    float *dd = gpu_alloc(sizeof(float) * (size_t)(T * n));
    gpu_upload(dy, y, sizeof(float) * (size_t)(T * K * n));
    gpu_upload(dw, w, sizeof w);
    for (int add = 0; add < 2; add++) {
        nib_error err;
        if (add) gpu_upload(dd, base, sizeof(float) * (size_t)(T * n));
        else nib_cuda_fill_f32(dd, NAN, (size_t)(T * n), &err);
        CHECK(nib_cuda_moe_combine(dy, dw, T, K, n, dd, add, NULL, &err) == NIB_OK, "combine: %s", err.msg);
        gpu_download(got, dd, sizeof(float) * (size_t)(T * n));
        int bad = 0;
        for (int t = 0; t < T; t++)
            for (int64_t i = 0; i < n; i++) {
                float o = y[(size_t)(t * K) * n + i] * w[t * K];
                for (int j = 1; j < K; j++) o += y[(size_t)(t * K + j) * n + i] * w[t * K + j];
                const float want = add ? base[t * n + i] + o : o;
                if (!(got[t * n + i] == want) && bad++ < 3)
                    fprintf(stderr, "  add %d token %d [%lld]: %.9g, want %.9g\n", add, t, (long long)i,
                            got[t * n + i], want);
            }
        CHECK(bad == 0, "combine add %d: %d outputs differ", add, bad);
    }
    nib_cuda_free(dy), nib_cuda_free(dw), nib_cuda_free(dd);
    free(y), free(base), free(got);
}

int main(void) {
    if (!gpu_test_start("cuda moe")) return test_summary();
    rng_seed(777);
    RUN(test_route);
    RUN(test_moe_matmul);
    RUN(test_combine);
    return test_summary();
}
