/* Kernel lab for the CPU matmul: time per matrix-vector product (decode) and
 * per 64-token product (prompt), for each SIMD level this CPU has, 1 and 2
 * threads, at the shapes of our test models. A program, not a test: it prints
 * a table and, with --json FILE, writes the same rows as JSON.
 *
 *   make bench-cpu && build/bench/cpu_matmul [--quick] [--kernels] [--threads 1,2] [--json out.json]
 *
 * --quick takes 2 timing batches instead of 4, --kernels stops after the
 * kernel table, --matvec skips the 64-token products, --simd-only the scalar
 * level, --types and --threads choose what to time; NIB_SIMD=avx2 in the
 * environment caps the levels.
 *
 * Decode is bound by reading the weights: each step reads every matrix once,
 * and a real model's matrices do not stay in cache between steps. So the
 * matvec loop cycles through enough copies of W (ROTATE_BYTES in all) that
 * every call reads its weights from DRAM; GB/s is weight bytes / time, next
 * to the machine's read bandwidth measured the same way with F32 weights (a
 * pure streaming dot). The 64-token product is bound by arithmetic (each
 * weight row is reused for 64 tokens), so one copy of W is used and GB/s
 * there says how far from the memory roofline it stays.
 *
 * The variants are the SIMD levels of src/cpu/cpu_kernels.c (nib_cpu_set_simd_level);
 * to try a new kernel, add it to the table at a level and compare here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu.h"
#include "cpu/cpu_internal.h"
#include "cpu/repack.h"
#include "nib.h"
#include "quant/iq_lattice.h"
#include "quant/types.h"

#define ROTATE_BYTES (192u << 20)  /* > any L3 we run on, so every matvec reads DRAM */
#define MIN_SECONDS 0.25           /* per measurement batch */

static double cpu_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A number for JSON, which has no NaN: null instead. */
static const char *json_num(double v, char buf[32]) {
    if (isnan(v)) return "null";
    snprintf(buf, 32, "%.2f", v);
    return buf;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

typedef struct { int64_t n_in, n_out; const char *what; } shape;

static const shape shapes[] = {
    {576, 1536, "SmolLM2 ffn up"},   {1536, 576, "SmolLM2 ffn down"},
    {640, 2048, "Gemma3-270M up"},   {2048, 640, "Gemma3-270M down"},
    {4096, 4096, "Llama-8B attn"},
};
static const nib_type types[] = {NIB_TYPE_Q4_1, NIB_TYPE_Q8_0, NIB_TYPE_Q4_K, NIB_TYPE_Q6_K, NIB_TYPE_Q5_0};

typedef struct {
    uint8_t *W;          /* n_copies copies of the matrix, back to back */
    size_t w_bytes;
    int n_copies;
    int packed;          /* W holds copies repacked (cpu/repack.h) in layout `lay` */
    nib_simd_level lay;
    float *X, *Y;
    void *scratch;
} buffers;

/* Average seconds per call, the best of `batches` batches of at least
 * MIN_SECONDS each (the best, because other processes only ever add time). */
static double time_calls(nib_pool *pool, nib_type t, const shape *s, int64_t n_tok, const buffers *b, int batches) {
    double best = 1e30;
    int copy = 0;
    for (int k = -1; k < batches; k++) { /* k = -1: one call to warm up */
        int calls = 0;
        double t0 = now_s(), el;
        do {
            const uint8_t *W = b->W + (size_t)copy * b->w_bytes;
            copy = (copy + 1) % b->n_copies;
            if (b->packed)
                nib_cpu_matmul_packed(pool, t, b->lay, W, s->n_in, s->n_out, b->X, n_tok, b->Y, b->scratch);
            else
                nib_cpu_matmul(pool, t, W, s->n_in, s->n_out, b->X, n_tok, b->Y, b->scratch);
            calls++;
        } while (k >= 0 && (el = now_s() - t0) < MIN_SECONDS);
        if (k >= 0 && el / calls < best) best = el / calls;
    }
    return best;
}

static int alloc_buffers(buffers *b, nib_type t, const shape *s, int64_t n_tok, int rotate) {
    size_t rb;
    if (!nib_row_bytes(t, s->n_in, &rb)) return 0;
    b->w_bytes = rb * (size_t)s->n_out;
    b->n_copies = rotate ? (int)(ROTATE_BYTES / b->w_bytes) + 1 : 1;
    b->W = malloc(b->w_bytes * (size_t)b->n_copies);
    b->X = malloc(sizeof(float) * (size_t)(s->n_in * n_tok));
    b->Y = malloc(sizeof(float) * (size_t)(s->n_out * n_tok));
    size_t sb = nib_cpu_matmul_scratch_bytes(t, s->n_in, n_tok);
    b->scratch = malloc(sb ? sb : 1);
    if (!b->W || !b->X || !b->Y || !b->scratch) return 0;
    /* real quantized weights (random codes would do as well for timing, but
     * these also keep the F32/F16 values finite) */
    float *row = malloc(sizeof(float) * (size_t)s->n_in);
    const nib_type_traits *tt = nib_type_traits_get((int)t);
    for (int64_t o = 0; o < s->n_out; o++) {
        for (int64_t i = 0; i < s->n_in; i++) row[i] = (float)(uniform() - 0.5);
        tt->quantize(row, b->W + (size_t)o * rb, s->n_in);
    }
    for (int c = 1; c < b->n_copies; c++) memcpy(b->W + (size_t)c * b->w_bytes, b->W, b->w_bytes);
    free(row);
    for (int64_t i = 0; i < s->n_in * n_tok; i++) b->X[i] = (float)(uniform() - 0.5);
    return 1;
}

/* b's copies repacked at the active level into p (0 if t has no packed layout there). */
static int pack_buffers(const buffers *b, nib_type t, const shape *s, buffers *p) {
    const size_t pb = nib_cpu_repack_bytes(t, s->n_in, s->n_out);
    if (pb == 0) return 0;
    *p = *b;
    p->w_bytes = pb, p->packed = 1;
    if (!(p->W = malloc(pb * (size_t)b->n_copies))) return 0;
    for (int c = 0; c < b->n_copies; c++)
        nib_cpu_repack(NULL, t, b->W + (size_t)c * b->w_bytes, s->n_in, s->n_out, p->W + (size_t)c * pb, &p->lay);
    return 1;
}

static void free_buffers(buffers *b) {
    free(b->W), free(b->X), free(b->Y), free(b->scratch);
    memset(b, 0, sizeof *b);
}

/* ---- the kernels alone -----------------------------------------------------------
 * One thread, weights and activations in L2 (1024 x 64 rows), thread CPU time
 * (so other processes on a shared machine do not count): ns per weight element
 * per token, for the single-token vec_dot, the 4-token and 2-row forms, and
 * the packed layout's kernel (cpu/repack.h) on 4 tokens a call; for the
 * formats decoded ahead (cpu_kernel.decode_x8) that column is 8 rows decoded
 * once for the TOK tokens, their decoding included. */
static void kernel_lab(const nib_type *tys, int n_types, nib_simd_level top) {
    enum { N = 1024, ROWS = 64, TOK = 16 };
    static float src[N];
    static uint8_t W[ROWS * N * 4], A[TOK * N * 4 + 1024], P[ROWS * N * 4];
    printf("%-5s %-11s %12s %12s %12s %12s   (ns per weight element per token, in cache, 1 thread)\n", "type",
           "level", "vec_dot", "x4/token", "2x4/token", "packed/tok");
    for (int ti = 0; ti < n_types; ti++) {
        const nib_type t = tys[ti];
        const nib_type_traits *tt = nib_type_traits_get((int)t);
        size_t wrb, arb;
        if (!nib_row_bytes(t, N, &wrb)) continue;
        for (int r = 0; r < ROWS; r++) {
            for (int i = 0; i < N; i++) src[i] = (float)(uniform() - 0.5);
            if (tt->quantize) {
                tt->quantize(src, W + (size_t)r * wrb, N);
                continue;
            }
            /* no reference quantizer (the lattice IQ formats): random bytes, each
             * block's leading fp16 scale (where the format has one) set to 2^-7 */
            uint8_t *row = W + (size_t)r * wrb;
            for (size_t b = 0; b < wrb; b++) row[b] = (uint8_t)(uniform() * 256.0);
            if (nib_iq_grid_format(t) || t == NIB_TYPE_IQ1_S)
                for (int64_t blk = 0; blk < N / tt->block_elems; blk++)
                    row[blk * tt->block_bytes] = 0x00, row[blk * tt->block_bytes + 1] = 0x20;
        }
        for (int l = NIB_SIMD_SCALAR; l <= (int)top; l++) {
            cpu_kernel k;
            if (!cpu_kernel_get_at(t, (nib_simd_level)l, &k) || k.act_f32) continue;
            arb = (size_t)(N / k.act_block_elems) * k.act_block_bytes;
            for (int r = 0; r < TOK; r++) {
                for (int i = 0; i < N; i++) src[i] = (float)(uniform() - 0.5);
                k.quantize(src, A + (size_t)r * arb, N);
            }
            /* the packed layout of this level (cpu/repack.h), 4 tokens a call */
            const nib_simd_level was = nib_cpu_set_simd_level((nib_simd_level)l);
            cpu_packed pk;
            nib_simd_level lay;
            const int packed = cpu_packed_get(t, &pk) && nib_cpu_repack_bytes(t, N, ROWS) <= sizeof P &&
                               nib_cpu_repack(NULL, t, W, N, ROWS, P, &lay) == NIB_OK;
            const size_t group_bytes = packed ? nib_cpu_repack_bytes(t, N, ROWS) / (ROWS / pk.rows) : 0;
            nib_cpu_set_simd_level(was);
            volatile float sink = 0;
            double best1 = 1e30, best4 = 1e30, best24 = 1e30, bestp = 1e30;
            for (int rep = 0; rep < 5; rep++) {
                double t0 = cpu_now_s();
                for (int r = 0; r < ROWS; r++)
                    for (int tok = 0; tok < TOK; tok++) sink += k.vec_dot(N, W + (size_t)r * wrb, A + (size_t)tok * arb);
                double el = cpu_now_s() - t0;
                if (el < best1) best1 = el;
                if (k.decode_x8) { /* the lattices: 8 rows decoded ahead, then 4 tokens a call */
                    t0 = cpu_now_s();
                    for (int g = 0; g < ROWS / 8; g++) {
                        for (int i = 0; i < N / 256; i++)
                            k.decode_x8(W + (size_t)g * 8 * wrb, wrb, i, P + (size_t)i * sizeof(block_i8x8));
                        for (int tok = 0; tok < TOK; tok += 4) {
                            float out[32];
                            k.decoded_dot(N, P, A + (size_t)tok * arb, arb, 4, out);
                            sink += out[0];
                        }
                    }
                    el = cpu_now_s() - t0;
                    if (el < bestp) bestp = el;
                }
                if (packed) {
                    t0 = cpu_now_s();
                    for (int g = 0; g < ROWS / pk.rows; g++)
                        for (int tok = 0; tok < TOK; tok += 4) {
                            float out[64];
                            pk.dot(N, P + (size_t)g * group_bytes, A + (size_t)tok * arb, arb, 4, out);
                            sink += out[0];
                        }
                    el = cpu_now_s() - t0;
                    if (el < bestp) bestp = el;
                }
                if (!k.vec_dot_x4) continue;
                t0 = cpu_now_s();
                for (int r = 0; r < ROWS; r++)
                    for (int tok = 0; tok < TOK; tok += 4) {
                        float out[4];
                        k.vec_dot_x4(N, W + (size_t)r * wrb, A + (size_t)tok * arb, arb, out);
                        sink += out[0];
                    }
                el = cpu_now_s() - t0;
                if (el < best4) best4 = el;
                if (!k.vec_dot_2x4) continue;
                t0 = cpu_now_s();
                for (int r = 0; r < ROWS; r += 2)
                    for (int tok = 0; tok < TOK; tok += 4) {
                        float out[8];
                        k.vec_dot_2x4(N, W + (size_t)r * wrb, wrb, A + (size_t)tok * arb, arb, out);
                        sink += out[0];
                    }
                el = cpu_now_s() - t0;
                if (el < best24) best24 = el;
            }
            const double per = 1e9 / ((double)N * ROWS * TOK);
            char x4[32] = "-", x24[32] = "-", xp[32] = "-";
            if (k.vec_dot_x4) snprintf(x4, sizeof x4, "%.4f", best4 * per);
            if (k.vec_dot_2x4) snprintf(x24, sizeof x24, "%.4f", best24 * per);
            if (packed || k.decode_x8) snprintf(xp, sizeof xp, "%.4f", bestp * per);
            printf("%-5s %-11s %12.4f %12s %12s %12s\n", tt->name, nib_simd_level_name((nib_simd_level)l), best1 * per,
                   x4, x24, xp);
        }
    }
    printf("\n");
}

int main(int argc, char **argv) {
    const char *json_path = NULL;
    int quick = 0, lab_only = 0;
    int threads[8] = {1, 2}, n_threads = 2;
    nib_type sel[16];
    int n_sel = 0, matvec_only = 0, simd_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--kernels")) lab_only = 1;
        else if (!strcmp(argv[i], "--matvec")) matvec_only = 1;
        else if (!strcmp(argv[i], "--simd-only")) simd_only = 1;
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) {
            /* a comma-separated list of type names, e.g. q8_0,q4_k */
            char buf[256];
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            for (char *tok = strtok(buf, ","); tok && n_sel < 16; tok = strtok(NULL, ","))
                if (!nib_type_parse(tok, &sel[n_sel++])) {
                    fprintf(stderr, "unknown type %s\n", tok);
                    return 2;
                }
        }
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            /* a comma-separated list, e.g. 1,2,8 */
            n_threads = 0;
            for (char *p = argv[++i]; *p && n_threads < 8;) {
                threads[n_threads++] = (int)strtol(p, &p, 10);
                if (*p == ',') p++;
            }
        }
        else {
            fprintf(stderr, "usage: %s [--quick] [--kernels] [--matvec] [--simd-only] [--types q4_1,q8_0] [--threads 1,2] [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    const int batches = quick ? 2 : 4;
    nib_error err;
    nib_pool *pools[8] = {0};
    for (int p = 0; p < n_threads; p++) {
        if (threads[p] < 1) threads[p] = 1;
        if (threads[p] == 1) continue;  /* NULL pool: the caller alone */
        if (!(pools[p] = nib_pool_new(threads[p], &err))) {
            fprintf(stderr, "pool: %s\n", err.msg);
            return 1;
        }
    }
    FILE *js = json_path ? fopen(json_path, "w") : NULL;
    if (json_path && !js) {
        fprintf(stderr, "cannot write %s\n", json_path);
        return 1;
    }
    /* the active level: the CPU's, lowered by NIB_SIMD=scalar|avx2 if set */
    const nib_simd_level top = nib_cpu_simd_level();
    const int lo = simd_only ? NIB_SIMD_AVX2 : NIB_SIMD_SCALAR;
    printf("CPU SIMD: %s; weights rotate through %u MiB for n_tok=1\n\n", nib_simd_level_name(top), ROTATE_BYTES >> 20);
    const nib_type *tys = n_sel ? sel : types;
    const int n_tys = n_sel ? n_sel : (int)(sizeof types / sizeof types[0]);
    kernel_lab(tys, n_tys, top);
    if (lab_only) return 0;

    /* the roofline: F32 4096x4096 matvec streams 64 MiB with a trivial dot */
    double bw[8] = {0};
    {
        const shape s = {4096, 4096, "stream"};
        buffers b = {0};
        if (alloc_buffers(&b, NIB_TYPE_F32, &s, 1, 1)) {
            printf("read bandwidth (F32 4096x4096 matvec, %s):", nib_simd_level_name(nib_cpu_simd_level()));
            for (int p = 0; p < n_threads; p++) {
                bw[p] = (double)b.w_bytes / time_calls(pools[p], NIB_TYPE_F32, &s, 1, &b, batches) / 1e9;
                printf(" %.1f GB/s with %d thread%s%s", bw[p], threads[p], threads[p] > 1 ? "s" : "", p + 1 < n_threads ? "," : "");
            }
            printf("\n\n");
        }
        free_buffers(&b);
    }
    if (js) {
        fprintf(js, "{\"simd\": \"%s\", \"read_gbs\": {", nib_simd_level_name(top));
        for (int p = 0; p < n_threads; p++) fprintf(js, "%s\"%d\": %.2f", p ? ", " : "", threads[p], bw[p]);
        fprintf(js, "}, \"rows\": [\n");
    }

    printf("%-5s %-11s %-17s %-11s %3s %10s %8s %10s %8s %9s\n", "type", "shape", "", "level", "thr", "matvec us",
           "GB/s", "64-tok us", "GB/s", "tok/s");
    int first = 1;
    const int n_shapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int ti = 0; ti < n_tys; ti++) {
        const nib_type t = tys[ti];
        for (int si = 0; si < n_shapes; si++) {
            const shape *s = &shapes[si];
            size_t rb;
            if (!nib_row_bytes(t, s->n_in, &rb)) continue;  /* n_in not whole blocks (K-quants need 256) */
            buffers b1 = {0}, b64 = {0};
            if (!alloc_buffers(&b1, t, s, 1, 1) || !alloc_buffers(&b64, t, s, 64, 0)) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            for (int l = lo; l <= (int)top; l++) {
                nib_cpu_set_simd_level((nib_simd_level)l);
                buffers p1, p64;
                const int packed = pack_buffers(&b1, t, s, &p1) && pack_buffers(&b64, t, s, &p64);
                for (int v = 0; v < 1 + packed; v++)
                for (int p = 0; p < n_threads; p++) {
                    /* scalar 64-token products take up to seconds: one batch, and
                     * none at all for the 4096x4096 shape (NaN in the table) */
                    const int nb64 = l == NIB_SIMD_SCALAR ? 1 : batches;
                    const int skip64 = matvec_only || (l == NIB_SIMD_SCALAR && s->n_in * s->n_out > (1 << 22));
                    const double t1 = time_calls(pools[p], t, s, 1, v ? &p1 : &b1, batches);
                    const double t64 = skip64 ? NAN : time_calls(pools[p], t, s, 64, v ? &p64 : &b64, nb64);
                    char sh[32], lv[32];
                    snprintf(sh, sizeof sh, "%lldx%lld", (long long)s->n_in, (long long)s->n_out);
                    snprintf(lv, sizeof lv, "%s%s", nib_simd_level_name((nib_simd_level)l), v ? "+pk" : "");
                    printf("%-5s %-11s %-17s %-11s %3d %10.1f %8.1f %10.1f %8.1f %9.0f\n", nib_type_name(t), sh, s->what,
                           lv, threads[p], t1 * 1e6, (double)b1.w_bytes / t1 / 1e9,
                           t64 * 1e6, (double)b64.w_bytes / t64 / 1e9, 64.0 / t64);
                    char num[32];
                    if (js)
                        fprintf(js,
                                "%s  {\"type\": \"%s\", \"n_in\": %lld, \"n_out\": %lld, \"level\": \"%s\", \"threads\": %d, "
                                "\"weight_bytes\": %zu, \"matvec_us\": %.2f, \"matvec_gbs\": %.2f, \"tok64_us\": %s}",
                                first ? "" : ",\n", nib_type_name(t), (long long)s->n_in, (long long)s->n_out,
                                lv, threads[p], b1.w_bytes, t1 * 1e6,
                                (double)b1.w_bytes / t1 / 1e9, json_num(t64 * 1e6, num));
                    first = 0;
                    fflush(stdout);
                }
                if (packed) free(p1.W), free(p64.W);
            }
            nib_cpu_set_simd_level(top);
            free_buffers(&b1);
            free_buffers(&b64);
        }
        printf("\n");
    }
    if (js) {
        fprintf(js, "\n]}\n");
        fclose(js);
    }
    for (int p = 0; p < n_threads; p++) nib_pool_free(pools[p]);
    return 0;
}
