/* nib bench MODEL: prompt processing (pp) and generation (tg) speed, like
 * llama-bench, with the decode roofline next to the speed:
 *
 *   bytes per token = weights one decode step reads (every layer matrix and
 *                     the LM head, plus the embedding row) + the KV cache read
 *                     at the run's mean position
 *   effective GB/s  = bytes per token x tokens/s
 *   % of bandwidth  = effective / a streaming-read probe measured in this run
 *
 * Generation is greedy from the previous token, and the token sequences of
 * the repetitions are compared: a run whose tokens differ is reported, not
 * averaged. One value each for -p, -n and -d is one test that times both
 * (the JSON is one object); lists make a test of each prompt size and each
 * generation length at each depth (the JSON is an array of such objects). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/membw.h"
#include "cuda/cuda.h"
#include "sampler/sampler.h"

static void usage(FILE *f) {
    fprintf(f, "usage: nib bench MODEL.gguf [-p 512] [-n 128] [-r 3] [-d DEPTH] [-t THREADS] [--json]\n"
               "  -p, -n and -d take comma lists (-p 128,512 -d 0,4096), as llama-bench: then each prompt\n"
               "  size and each generation length is its own test, at each depth\n\noptions:\n");
    cli_print_flags(f, CLI_F_BENCH);
}

typedef struct stats {
    double mean, sd;
} stats;

static stats stats_of(const double *x, int n) {
    stats s = {0, 0};
    for (int i = 0; i < n; i++) s.mean += x[i];
    s.mean /= n;
    for (int i = 0; i < n; i++) s.sd += (x[i] - s.mean) * (x[i] - s.mean);
    s.sd = n > 1 ? sqrt(s.sd / (n - 1)) : 0.0;
    return s;
}

/* Fill positions [0, n) with pseudo-random tokens (as llama-bench does). */
static int decode_random(nib_ctx *ctx, int32_t n_vocab, int64_t n, uint64_t seed, nib_error *err) {
    enum { CHUNK = 512 };
    int32_t ids[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t k = n - i < CHUNK ? n - i : CHUNK;
        for (int64_t j = 0; j < k; j++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            ids[j] = (int32_t)((seed >> 33) % (uint64_t)n_vocab);
        }
        if (nib_ctx_decode(ctx, ids, k, NULL, err) != NIB_OK) return 1;
    }
    return 0;
}

/* One test: a prompt of pp tokens and/or a generation of tg, after depth. */
typedef struct bench_test {
    int32_t pp, tg, depth;
} bench_test;

typedef struct bench_result {
    stats pp, tg;
    double bytes_tok, weights_tok, kv_tok, mean_pos;
    bool deterministic;
} bench_result;

/* Scratch for a test's repetitions, sized for the longest generation. */
typedef struct bench_scratch {
    double *pp, *tg;
    int32_t *tokens;
} bench_scratch;

static int run_test(cli_session *s, const bench_test *t, int reps, bench_scratch *w, bench_result *res, nib_error *err) {
    const nib_model *m = s->model;
    const int32_t n_vocab = m->hp.n_vocab;
    for (int r = 0; r < reps; r++) {
        w->pp[r] = w->tg[r] = 0.0;
        nib_ctx_truncate(s->ctx, 0);
        if (t->depth > 0 && decode_random(s->ctx, n_vocab, t->depth, 7, err)) return 1;
        if (t->pp > 0) {
            /* the first repetition runs its prompt once untimed first, as
             * llama-bench warms up: on the GPU, the prompt GEMM's library
             * loads its kernels and picks them on its first calls */
            for (int pass = r == 0 ? 0 : 1; pass < 2; pass++) {
                nib_ctx_truncate(s->ctx, t->depth);
                double t0 = cli_now_s();
                if (decode_random(s->ctx, n_vocab, t->pp, 11 + (uint64_t)r, err)) return 1;
                w->pp[r] = (double)t->pp / (cli_now_s() - t0);
            }
        }
        nib_ctx_truncate(s->ctx, t->depth);
        if (t->tg > 0) {
            int32_t *seq = w->tokens + (size_t)r * (size_t)(t->tg + 1);
            /* the first repetition runs its generation once untimed first, as
             * llama-bench warms up: on the GPU, what a position first needs
             * (the decode graph of its context bucket) is made there */
            for (int pass = r == 0 ? 0 : 1; pass < 2; pass++) {
                /* the first token decoded here, after the depth too: the
                 * logits left by the prompt test or by the warm-up pass are
                 * not this repetition's (they made repetitions differ) */
                nib_ctx_truncate(s->ctx, t->depth);
                seq[0] = 1 % n_vocab;
                if (nib_ctx_decode(s->ctx, seq, 1, NULL, err)) return 1;
                double t0 = cli_now_s();
                for (int i = 0; i < t->tg; i++) {
                    seq[i + 1] = nib_ctx_argmax(s->ctx);
                    if (nib_ctx_decode(s->ctx, &seq[i + 1], 1, NULL, err)) return 1;
                }
                w->tg[r] = (double)t->tg / (cli_now_s() - t0);
            }
        }
    }
    res->deterministic = true; /* (a prompt-only test generates nothing to compare) */
    for (int r = 1; r < reps && t->tg > 0; r++)
        if (memcmp(w->tokens, w->tokens + (size_t)r * (size_t)(t->tg + 1), (size_t)(t->tg + 1) * sizeof *w->tokens))
            res->deterministic = false;
    /* the roofline of decode */
    size_t embd_row = 0;
    nib_row_bytes(m->tok_embd.type, m->hp.n_embd, &embd_row);
    res->mean_pos = t->depth + t->tg / 2.0;
    res->weights_tok = (double)m->weight_bytes + (double)embd_row;
    res->kv_tok = (double)nib_ctx_kv_bytes(s->ctx) / nib_ctx_n_ctx(s->ctx) * res->mean_pos;
    res->bytes_tok = res->weights_tok + res->kv_tok;
    res->pp = stats_of(w->pp, reps);
    res->tg = stats_of(w->tg, reps);
    return 0;
}

static int32_t max_of(const cli_int_list *l) {
    int32_t x = 0;
    for (int i = 0; i < l->n; i++) x = l->v[i] > x ? l->v[i] : x;
    return x;
}

/* The tests the lists ask for (see the top of the file); the count. */
static int make_tests(const cli_opts *o, bench_test *t, int cap) {
    if (o->bench_pp.n == 1 && o->bench_tg.n == 1 && o->bench_depth.n == 1) {
        t[0] = (bench_test){o->bench_pp.v[0], o->bench_tg.v[0], o->bench_depth.v[0]};
        return t[0].pp > 0 || t[0].tg > 0;
    }
    int n = 0;
    for (int d = 0; d < o->bench_depth.n; d++) {
        for (int i = 0; i < o->bench_pp.n && n < cap; i++)
            if (o->bench_pp.v[i] > 0) t[n++] = (bench_test){o->bench_pp.v[i], 0, o->bench_depth.v[d]};
        for (int i = 0; i < o->bench_tg.n && n < cap; i++)
            if (o->bench_tg.v[i] > 0) t[n++] = (bench_test){0, o->bench_tg.v[i], o->bench_depth.v[d]};
    }
    return n;
}

int cmd_bench(int argc, char **argv) {
    cli_opts o;
    cli_opts_init(&o);
    int rc = cli_parse(&o, argc, argv, CLI_F_BENCH, usage);
    if (rc) return rc == 1 ? 0 : 2;
    enum { MAX_TESTS = CLI_MAX_LIST * 2 * CLI_MAX_LIST };
    bench_test tests[MAX_TESTS];
    const int n_tests = make_tests(&o, tests, MAX_TESTS);
    if (n_tests == 0) {
        fprintf(stderr, "nib bench: nothing to time: every -p and -n value is 0\n");
        return 2;
    }
    const int32_t max_pp = max_of(&o.bench_pp), max_tg = max_of(&o.bench_tg), max_depth = max_of(&o.bench_depth);
    int64_t need = (int64_t)max_depth + (max_pp > max_tg ? max_pp : max_tg) + 1;
    o.n_ctx = (int32_t)(need < 256 ? 256 : need);
    /* the prompt (and the depth fill) in batches of up to 512 */
    o.n_batch = max_pp > 0 && max_pp < 512 ? max_pp : (max_pp > 0 || max_depth > 0 ? 512 : 1);
    cli_session s;
    if (cli_session_open(&s, &o, true)) return 1;
    const nib_model *m = s.model;
    nib_error err;
    const int reps = o.bench_reps;
    bench_scratch w = {calloc((size_t)reps, sizeof(double)), calloc((size_t)reps, sizeof(double)),
                       calloc((size_t)reps * (size_t)(max_tg + 1), sizeof(int32_t))};
    bench_result *res = calloc((size_t)n_tests, sizeof *res);
    if (!w.pp || !w.tg || !w.tokens || !res) {
        fprintf(stderr, "nib bench: out of memory\n");
        rc = 1;
        goto done;
    }
    /* the ceiling the decode roofline is a percentage of: device-to-device
     * copy bandwidth on the GPU, a streaming-read probe on the CPU */
    const bool on_gpu = nib_ctx_device(s.ctx) == NIB_DEVICE_CUDA;
    char backend[192];
    double bw;
    if (on_gpu) {
        nib_cuda_device_info info;
        char why[256];
        snprintf(backend, sizeof backend, "cuda (%s)", nib_cuda_device_get(0, &info, why, sizeof why) ? info.name : "?");
        fprintf(stderr, "nib bench: measuring device copy bandwidth ...\n");
        bw = nib_cuda_copy_bandwidth_gbs(&err);
    } else {
        snprintf(backend, sizeof backend, "cpu (%s, %d threads)", nib_simd_level_name(nib_cpu_simd_level()),
                 nib_ctx_n_threads(s.ctx));
        fprintf(stderr, "nib bench: measuring memory bandwidth ...\n");
        bw = nib_membw_probe_gbs(o.n_threads);
    }
    const char *bw_name = on_gpu ? "device-to-device copy bandwidth" : "streaming-read probe";
    bool deterministic = true;
    for (int i = 0; i < n_tests; i++) {
        if (run_test(&s, &tests[i], reps, &w, &res[i], &err)) {
            fprintf(stderr, "nib bench: %s\n", err.msg);
            rc = 1;
            goto done;
        }
        deterministic &= res[i].deterministic;
    }
    if (o.json) {
        if (n_tests > 1) printf("[\n");
        for (int i = 0; i < n_tests; i++) {
            const bench_test *t = &tests[i];
            const bench_result *r = &res[i];
            const double eff = r->bytes_tok * r->tg.mean / 1e9;
            printf("{\"model\": \"%s\", \"arch\": \"%s\", \"backend\": \"%s\", \"threads\": %d,\n"
                   " \"pp\": %d, \"tg\": %d, \"depth\": %d, \"reps\": %d,\n"
                   " \"pp_tps\": %.3f, \"pp_tps_sd\": %.3f, \"tg_tps\": %.3f, \"tg_tps_sd\": %.3f,\n"
                   " \"bytes_per_token\": %.0f, \"effective_gbs\": %.3f, \"probe_gbs\": %.3f, \"roofline_pct\": %.1f,\n"
                   " \"greedy_tokens_identical\": %s}%s\n",
                   o.model, m->hp.arch_name, backend, nib_ctx_n_threads(s.ctx), t->pp, t->tg, t->depth, reps,
                   r->pp.mean, r->pp.sd, r->tg.mean, r->tg.sd, r->bytes_tok, eff, bw, bw > 0 ? 100.0 * eff / bw : 0.0,
                   r->deterministic ? "true" : "false", n_tests > 1 && i + 1 < n_tests ? "," : "");
        }
        if (n_tests > 1) printf("]\n");
    } else {
        printf("| model | backend | test | t/s |\n|---|---|---|---|\n");
        for (int i = 0; i < n_tests; i++) {
            const bench_test *t = &tests[i];
            char depth[32] = "";
            if (t->depth) snprintf(depth, sizeof depth, " @ d%d", t->depth);
            if (t->pp > 0)
                printf("| %s | %s | pp%d%s | %.2f ± %.2f |\n", o.model, backend, t->pp, depth,
                       res[i].pp.mean, res[i].pp.sd);
            if (t->tg > 0)
                printf("| %s | %s | tg%d%s | %.2f ± %.2f |\n", o.model, backend, t->tg, depth, res[i].tg.mean,
                       res[i].tg.sd);
        }
        int first_tg = 0;
        while (first_tg < n_tests && tests[first_tg].tg == 0) first_tg++;
        for (int i = 0; i < n_tests; i++) {
            const bench_result *r = &res[i];
            if (tests[i].tg == 0) continue;
            const double eff = r->bytes_tok * r->tg.mean / 1e9;
            char which[48] = "";
            if (n_tests > 1) snprintf(which, sizeof which, " of tg%d @ d%d", tests[i].tg, tests[i].depth);
            printf("%sdecode roofline%s: %.2f MB read per token (weights %.2f MB + KV %.2f MB at mean position %.0f), "
                   "%.2f GB/s effective = %.1f%% of the %.2f GB/s %s\n",
                   i == first_tg ? "\n" : "", which, r->bytes_tok / 1e6, r->weights_tok / 1e6, r->kv_tok / 1e6, r->mean_pos, eff,
                   bw > 0 ? 100.0 * eff / bw : 0.0, bw, bw_name);
        }
    }
    if (!deterministic)
        fprintf(stderr, "nib bench: WARNING: greedy tokens differ between repetitions; the speeds above are suspect\n");
    rc = deterministic ? 0 : 1;
done:
    free(w.pp), free(w.tg), free(w.tokens), free(res);
    cli_session_close(&s);
    return rc;
}
