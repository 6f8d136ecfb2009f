/* Device dequantization (nib_cuda_get_rows) against the scalar reference.
 *
 * For every format with a device decoder (nib_cuda_has_get_rows): random
 * valid blocks (random bytes, then every fp16 scale replaced by a finite
 * random value of either sign, never zero; MXFP4's exponent kept near 1.0;
 * plus, where the format has a reference quantizer, its blocks of random
 * normal data), over shapes with an odd row count (37) and a single row,
 * n_tok 1 and 7 with ids repeated and out of order, and two scales (1 and a
 * value that is not a power of two, so the final product rounds):
 *
 *  - out, poisoned with NaN before each launch (and 64 floats past its end,
 *    which must stay NaN), must equal nib_dequantize_row(W[ids[t]]) * scale
 *    in fp32 BIT FOR BIT: the device decoders repeat the reference's fp32
 *    operations in the same order with no fused multiply-add, so there is no
 *    rounding difference to allow for;
 *  - ids outside [0, n_out) are clamped (to 0 and n_out - 1);
 *  - more than 65535 tokens (the grid's y limit: the kernel loops);
 *  - the table has no hole: every format with a GEMV kernel, and every
 *    format of quant/types.c but the activation formats Q8_1 and Q8_K, has a
 *    decoder;
 *  - error paths: NULL pointers, n_tok < 0, n_tok = 0 (a no-op), an out that
 *    is not 16-byte aligned for a block format.
 *
 * A format the weight upload refuses (cuda_device.cu accepts only formats
 * with a GEMV kernel) is a skip that says so. Without a usable GPU the run is
 * one skip with the reason.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "core/fp16.h"
#include "cuda/cuda.h"
#include "cuda/cuda_dequant.h"
#include "nib.h"
#include "quant/types.h"
#include "test.h"


#include "gpu_test.h"

/* The reference quantizer's blocks of random normal rows; false when the
 * format has none (IQ1/IQ2/IQ3 need an importance matrix). */
static bool quantized_rows(nib_type t, void *dst, int64_t n_in, int64_t n_out) {
    float *x = malloc(sizeof(float) * (size_t)(n_in * n_out));
    for (int64_t i = 0; i < n_in * n_out; i++) x[i] = (float)rng_normal();
    size_t rb = 0;
    nib_row_bytes(t, n_in, &rb);
    bool ok = true;
    for (int64_t o = 0; o < n_out && ok; o++)
        ok = nib_quantize_row(t, x + o * n_in, (uint8_t *)dst + (size_t)o * rb, n_in) == NIB_OK;
    free(x);
    return ok;
}

/* ---- one case -------------------------------------------------------------------------- */

#define TAIL 64 /* poisoned floats after out that must stay NaN */

typedef enum { DATA_RANDOM, DATA_QUANTIZED } data_kind;

/* Uploads n_out random rows, gathers ids[0..n_tok) on the GPU and checks every
 * float bit for bit. Returns false (with the reason printed) when the upload
 * refuses the type, so the caller can skip. */
static bool check_case(nib_type t, int64_t n_in, int64_t n_out, const int32_t *ids, int n_tok, float scale,
                       data_kind kind) {
    nib_error err = {0};
    size_t rb = 0;
    if (!nib_row_bytes(t, n_in, &rb)) return true; /* shape not whole blocks of this format */
    const size_t n_out_f = (size_t)n_tok * (size_t)n_in;
    uint8_t *W = malloc(rb * (size_t)n_out + 16);
    float *got = malloc(sizeof(float) * (n_out_f + TAIL)), *row = malloc(sizeof(float) * (size_t)n_in);
    bool uploaded = true;
    nib_cuda_weight *w = NULL;
    int32_t *d_ids = NULL;
    float *d_out = NULL;
    if (kind == DATA_QUANTIZED) {
        if (!quantized_rows(t, W, n_in, n_out)) goto done; /* no reference quantizer: nothing to check */
    } else {
        random_rows(t, W, n_in, n_out);
    }

    nib_status s = nib_cuda_weight_upload(t, W, n_in, n_out, &w, &err);
    if (s == NIB_ERR_UNSUPPORTED && !nib_cuda_has_gemv(t)) {
        uploaded = false;
        printf("      %s: upload refuses it (%s)\n", nib_type_name(t), err.msg);
        goto done;
    }
    CHECK(s == NIB_OK, "%s %lldx%lld upload: %s", nib_type_name(t), (long long)n_in, (long long)n_out, err.msg);
    if (s != NIB_OK) goto done;
    d_ids = nib_cuda_alloc(sizeof(int32_t) * (size_t)n_tok, &err);
    d_out = nib_cuda_alloc(sizeof(float) * (n_out_f + TAIL), &err);
    CHECK(d_ids && d_out, "alloc: %s", err.msg);
    if (!d_ids || !d_out) goto done;
    s = nib_cuda_copy_to_device(d_ids, ids, sizeof(int32_t) * (size_t)n_tok, &err);
    if (s == NIB_OK) s = nib_cuda_fill_f32(d_out, NAN, n_out_f + TAIL, &err); /* poison */
    if (s == NIB_OK) s = nib_cuda_get_rows(w, d_ids, n_tok, scale, d_out, NULL, &err);
    if (s == NIB_OK) s = nib_cuda_sync(&err);
    if (s == NIB_OK) s = nib_cuda_copy_to_host(got, d_out, sizeof(float) * (n_out_f + TAIL), &err);
    CHECK(s == NIB_OK, "%s %lldx%lld get_rows: %s", nib_type_name(t), (long long)n_in, (long long)n_out, err.msg);
    if (s != NIB_OK) goto done;

    int64_t bad = 0, first_t = -1, first_i = -1;
    float first_got = 0.0f, first_ref = 0.0f;
    for (int tk = 0; tk < n_tok; tk++) {
        /* the clamp the kernel applies to an out-of-range id */
        const int64_t id = ids[tk] < 0 ? 0 : ids[tk] >= n_out ? n_out - 1 : ids[tk];
        nib_dequantize_row(t, W + (size_t)id * rb, row, n_in);
        for (int64_t i = 0; i < n_in; i++) {
            const float ref = row[i] * scale; /* one fp32 rounding (the build has -ffp-contract=off) */
            const float g = got[(size_t)tk * (size_t)n_in + (size_t)i];
            if (memcmp(&ref, &g, sizeof ref) != 0) {
                if (first_t < 0) first_t = tk, first_i = i, first_got = g, first_ref = ref;
                bad++;
            }
        }
    }
    CHECK(bad == 0,
          "%s %lldx%lld n_tok %d scale %g (%s): %lld floats differ; first token %lld element %lld: gpu %.9g ref %.9g",
          nib_type_name(t), (long long)n_in, (long long)n_out, n_tok, (double)scale,
          kind == DATA_RANDOM ? "random blocks" : "quantized", (long long)bad, (long long)first_t,
          (long long)first_i, (double)first_got, (double)first_ref);
    int tail_bad = 0;
    for (int i = 0; i < TAIL; i++) tail_bad += !isnan(got[n_out_f + (size_t)i]);
    CHECK(tail_bad == 0, "%s: %d floats written past the end of out", nib_type_name(t), tail_bad);
done:
    nib_cuda_weight_free(w);
    nib_cuda_free(d_ids);
    nib_cuda_free(d_out);
    free(W), free(got), free(row);
    return uploaded;
}

/* ---- per format ------------------------------------------------------------------------ */

static nib_type cur_type;

static void test_format(void) {
    const nib_type t = cur_type;
    rng_seed(2000 + (uint64_t)t);
    const int64_t qk = nib_type_block_elems(t);
    /* row lengths: 1, 3 or 8 blocks of 32; 1 or 3 super-blocks; any length for floats */
    const int64_t n_ins[2] = {qk == 1 ? 100 : qk == 32 ? 96 : 256, qk == 1 ? 256 : qk == 32 ? 256 : 768};
    const int64_t n_outs[2] = {37, 1};
    const float scales[2] = {1.0f, 0.70710677f};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            const int64_t n_out = n_outs[b];
            /* repeated and out of order (taken mod n_out), then one token */
            int32_t ids7[7] = {5, 0, 36, 5, 17, 36, 2};
            for (int k = 0; k < 7; k++) ids7[k] = (int32_t)(ids7[k] % n_out);
            const int32_t ids1[1] = {(int32_t)(n_out - 1)};
            if (!check_case(t, n_ins[a], n_out, ids7, 7, scales[(a + b) & 1], DATA_RANDOM))
                SKIP("nib_cuda_weight_upload refuses %s (it has no GEMV kernel): cuda_device.cu must accept "
                     "formats with a get_rows decoder", nib_type_name(t));
            check_case(t, n_ins[a], n_out, ids1, 1, scales[(a + b + 1) & 1], DATA_RANDOM);
        }
    const int32_t ids7[7] = {3, 36, 36, 0, 11, 3, 29};
    check_case(t, n_ins[1], 37, ids7, 7, 0.70710677f, DATA_QUANTIZED);
    /* clamping: below 0 reads row 0, at or past n_out reads the last row */
    const int32_t wild[5] = {-3, 37, 42, INT32_MIN, INT32_MAX};
    check_case(t, n_ins[0], 37, wild, 5, 1.0f, DATA_RANDOM);
}

/* The table's coverage, and the many-token path (grid y loops past 65535). */
static void test_table_and_many_tokens(void) {
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        if (!nib_type_traits_get(t)) continue;
        const bool activation_only = t == NIB_TYPE_Q8_1 || t == NIB_TYPE_Q8_K;
        CHECK(nib_cuda_has_get_rows((nib_type)t) == !activation_only, "%s: get_rows decoder %s",
              nib_type_name((nib_type)t), activation_only ? "present for an activation format" : "missing");
        CHECK(!nib_cuda_has_gemv((nib_type)t) || nib_cuda_has_get_rows((nib_type)t),
              "%s has a GEMV kernel but no get_rows decoder", nib_type_name((nib_type)t));
    }
    rng_seed(77);
    const int n_tok = 70000;
    int32_t *ids = malloc(sizeof(int32_t) * n_tok);
    for (int i = 0; i < n_tok; i++) ids[i] = (int32_t)(rng_u64() % 37);
    check_case(NIB_TYPE_Q4_0, 32, 37, ids, n_tok, 0.70710677f, DATA_RANDOM);
    free(ids);
}

static void test_errors(void) {
    nib_error err = {0};
    nib_cuda_weight *w = NULL;
    uint8_t blk[2 * 18];
    rng_bytes(blk, sizeof blk);
    nib_status s = nib_cuda_weight_upload(NIB_TYPE_Q4_0, blk, 32, 2, &w, &err);
    CHECK(s == NIB_OK, "upload: %s", err.msg);
    if (s != NIB_OK) return;
    int32_t *d_ids = nib_cuda_alloc(sizeof(int32_t) * 4, &err);
    float *d_out = nib_cuda_alloc(sizeof(float) * 256, &err);
    CHECK(d_ids && d_out, "alloc: %s", err.msg);
    if (d_ids && d_out) {
        const int32_t ids[4] = {0, 1, 1, 0};
        nib_cuda_copy_to_device(d_ids, ids, sizeof ids, &err);
        CHECK(nib_cuda_get_rows(NULL, d_ids, 1, 1.0f, d_out, NULL, &err) == NIB_ERR_ARG, "NULL weight accepted");
        CHECK(nib_cuda_get_rows(w, NULL, 1, 1.0f, d_out, NULL, &err) == NIB_ERR_ARG, "NULL ids accepted");
        CHECK(nib_cuda_get_rows(w, d_ids, 1, 1.0f, NULL, NULL, &err) == NIB_ERR_ARG, "NULL out accepted");
        CHECK(nib_cuda_get_rows(w, d_ids, -1, 1.0f, d_out, NULL, &err) == NIB_ERR_ARG, "n_tok -1 accepted");
        s = nib_cuda_get_rows(w, d_ids, 1, 1.0f, d_out + 1, NULL, &err);
        CHECK(s == NIB_ERR_ARG && strstr(err.msg, "aligned"), "misaligned out: status %d, '%s'", (int)s, err.msg);
        printf("      misaligned out says: %s\n", err.msg);
        /* n_tok 0: a no-op that leaves out as it was */
        float host[4];
        nib_cuda_fill_f32(d_out, NAN, 256, &err);
        CHECK(nib_cuda_get_rows(w, d_ids, 0, 1.0f, d_out, NULL, &err) == NIB_OK, "n_tok 0: %s", err.msg);
        nib_cuda_sync(&err);
        nib_cuda_copy_to_host(host, d_out, sizeof host, &err);
        CHECK(isnan(host[0]) && isnan(host[3]), "n_tok 0 wrote to out");
    }
    nib_cuda_free(d_ids);
    nib_cuda_free(d_out);
    nib_cuda_weight_free(w);
}

int main(void) {
    random_blocks_subnormal_every = 10;
    if (!gpu_test_start("cuda")) return test_summary();
    char name[64];
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        if (!nib_cuda_has_get_rows((nib_type)t)) continue;
        cur_type = (nib_type)t;
        snprintf(name, sizeof name, "get_rows_%s", nib_type_name(cur_type));
        test_run(name, test_format);
    }
    RUN(test_table_and_many_tokens);
    RUN(test_errors);
    return test_summary();
}
