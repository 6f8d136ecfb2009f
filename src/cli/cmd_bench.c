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
 * averaged. */
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
    fprintf(f, "usage: nib bench MODEL.gguf [-p 512] [-n 128] [-r 3] [-d DEPTH] [-t THREADS] [--json]\n\noptions:\n");
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

int cmd_bench(int argc, char **argv) {
    cli_opts o;
    cli_opts_init(&o);
    int rc = cli_parse(&o, argc, argv, CLI_F_BENCH, usage);
    if (rc) return rc == 1 ? 0 : 2;
    int64_t need = (int64_t)o.bench_depth + (o.bench_pp > o.bench_tg ? o.bench_pp : o.bench_tg) + 1;
    o.n_ctx = (int32_t)(need < 256 ? 256 : need);
    /* the prompt (and the depth fill) in batches of up to 512 */
    o.n_batch = o.bench_pp > 0 && o.bench_pp < 512 ? o.bench_pp : (o.bench_pp > 0 || o.bench_depth > 0 ? 512 : 1);
    cli_session s;
    if (cli_session_open(&s, &o, true)) return 1;
    const nib_model *m = s.model;
    int32_t n_vocab = m->hp.n_vocab;
    nib_error err;
    int reps = o.bench_reps;
    double *pp = calloc((size_t)reps, sizeof *pp), *tg = calloc((size_t)reps, sizeof *tg);
    int32_t *tokens = calloc((size_t)reps * (size_t)(o.bench_tg + 1), sizeof *tokens);
    if (!pp || !tg || !tokens) {
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
    for (int r = 0; r < reps; r++) {
        nib_ctx_truncate(s.ctx, 0);
        if (o.bench_depth > 0 && decode_random(s.ctx, n_vocab, o.bench_depth, 7, &err)) goto fail;
        if (o.bench_pp > 0) {
            /* the first repetition runs its prompt once untimed first, as
             * llama-bench warms up: on the GPU, the prompt GEMM's library
             * loads its kernels and picks them on its first calls */
            for (int pass = r == 0 ? 0 : 1; pass < 2; pass++) {
                nib_ctx_truncate(s.ctx, o.bench_depth);
                double t0 = cli_now_s();
                if (decode_random(s.ctx, n_vocab, o.bench_pp, 11 + (uint64_t)r, &err)) goto fail;
                pp[r] = (double)o.bench_pp / (cli_now_s() - t0);
            }
        }
        nib_ctx_truncate(s.ctx, o.bench_depth);
        if (o.bench_tg > 0) {
            int32_t *seq = tokens + (size_t)r * (size_t)(o.bench_tg + 1);
            /* the first repetition runs its generation once untimed first, as
             * llama-bench warms up: on the GPU, what a position first needs
             * (the decode graph of its context bucket) is made there */
            for (int pass = r == 0 ? 0 : 1; pass < 2; pass++) {
                nib_ctx_truncate(s.ctx, o.bench_depth);
                seq[0] = 1 % n_vocab;
                if (o.bench_depth == 0 && nib_ctx_decode(s.ctx, seq, 1, NULL, &err)) goto fail;
                double t0 = cli_now_s();
                for (int i = 0; i < o.bench_tg; i++) {
                    seq[i + 1] = nib_ctx_argmax(s.ctx);
                    if (nib_ctx_decode(s.ctx, &seq[i + 1], 1, NULL, &err)) goto fail;
                }
                tg[r] = (double)o.bench_tg / (cli_now_s() - t0);
            }
        }
    }
    int deterministic = 1;
    for (int r = 1; r < reps; r++)
        if (memcmp(tokens, tokens + (size_t)r * (size_t)(o.bench_tg + 1), (size_t)(o.bench_tg + 1) * sizeof *tokens))
            deterministic = 0;

    /* the roofline of decode */
    size_t embd_row = 0;
    nib_row_bytes(m->tok_embd.type, m->hp.n_embd, &embd_row);
    double mean_pos = o.bench_depth + o.bench_tg / 2.0;
    double kv_per_pos = (double)nib_ctx_kv_bytes(s.ctx) / nib_ctx_n_ctx(s.ctx);
    double bytes_tok = (double)m->weight_bytes + (double)embd_row + kv_per_pos * mean_pos;
    stats sp = stats_of(pp, reps), st = stats_of(tg, reps);
    double eff = bytes_tok * st.mean / 1e9;
    if (o.json) {
        printf("{\"model\": \"%s\", \"arch\": \"%s\", \"backend\": \"%s\", \"threads\": %d,\n"
               " \"pp\": %d, \"tg\": %d, \"depth\": %d, \"reps\": %d,\n"
               " \"pp_tps\": %.3f, \"pp_tps_sd\": %.3f, \"tg_tps\": %.3f, \"tg_tps_sd\": %.3f,\n"
               " \"bytes_per_token\": %.0f, \"effective_gbs\": %.3f, \"probe_gbs\": %.3f, \"roofline_pct\": %.1f,\n"
               " \"greedy_tokens_identical\": %s}\n",
               o.model, m->hp.arch_name, backend, nib_ctx_n_threads(s.ctx), o.bench_pp,
               o.bench_tg, o.bench_depth, reps, sp.mean, sp.sd, st.mean, st.sd, bytes_tok, eff, bw,
               bw > 0 ? 100.0 * eff / bw : 0.0, deterministic ? "true" : "false");
    } else {
        printf("| model | backend | test | t/s |\n|---|---|---|---|\n");
        if (o.bench_pp > 0)
            printf("| %s | %s | pp%d | %.2f ± %.2f |\n", o.model, backend, o.bench_pp, sp.mean, sp.sd);
        if (o.bench_tg > 0) {
            char depth[32] = "";
            if (o.bench_depth) snprintf(depth, sizeof depth, " @ d%d", o.bench_depth);
            printf("| %s | %s | tg%d%s | %.2f ± %.2f |\n", o.model, backend, o.bench_tg, depth, st.mean, st.sd);
        }
        printf("\ndecode roofline: %.2f MB read per token (weights %.2f MB + KV %.2f MB at mean position %.0f), "
               "%.2f GB/s effective = %.1f%% of the %.2f GB/s %s\n",
               bytes_tok / 1e6, (double)(m->weight_bytes + embd_row) / 1e6, kv_per_pos * mean_pos / 1e6, mean_pos,
               eff, bw > 0 ? 100.0 * eff / bw : 0.0, bw, bw_name);
    }
    if (!deterministic)
        fprintf(stderr, "nib bench: WARNING: greedy tokens differ between repetitions; the speeds above are suspect\n");
    rc = deterministic ? 0 : 1;
    goto done;
fail:
    fprintf(stderr, "nib bench: %s\n", err.msg);
    rc = 1;
done:
    free(pp), free(tg), free(tokens);
    cli_session_close(&s);
    return rc;
}
