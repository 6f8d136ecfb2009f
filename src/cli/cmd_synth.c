/* nib synth: write a model of a real architecture's shapes with random valid
 * weights (model/synth.h), for speed measurements without downloads.
 *
 *     nib synth --shape llama3-8b --type Q4_K_M -o /tmp/l8b.gguf
 *     nib bench /tmp/l8b.gguf
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "cpu/cpu.h"
#include "model/synth.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: nib synth --shape NAME --type TYPE -o FILE.gguf [--seed N] [-t N]\n"
            "       nib synth --list\n"
            "  --shape NAME   an architecture's shapes (see --list)\n"
            "  --type TYPE    F16, Q8_0, Q6_K, Q5_K_M, Q5_1, Q5_0, Q4_K_M, Q4_1, Q4_0, Q3_K_M or Q2_K:\n"
            "                 llama.cpp's mix for that file type; IQ4_XS, IQ4_NL, IQ3_XXS, IQ3_S,\n"
            "                 IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, TQ2_0, TQ1_0 or MXFP4: that format\n"
            "                 for every layer matrix, the LM head in Q6_K\n"
            "  -o FILE        the GGUF file to write (replaced if it exists)\n"
            "  --seed N       the weights are a function of (shape, type, seed); default 1\n"
            "  -t N           threads (default: one per CPU); the file does not depend on it\n"
            "  --list         every shape and type, with the size of each combination\n"
            "The weights are random (valid blocks, std 1/sqrt(n_in)) and the vocabulary a\n"
            "placeholder: good for measuring speed, not for reading the output.\n");
}

static void list_names(FILE *f, bool types) {
    int n = types ? nib_synth_n_ftypes() : nib_synth_n_shapes();
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? ", " : "", types ? nib_synth_ftype_at(i)->name : nib_synth_shape_at(i)->name);
}

static int list(void) {
    printf("shapes:\n  %-14s %-6s %7s %5s %6s %5s %3s %4s %6s %7s %9s %6s %s\n", "name", "arch", "vocab", "embd",
           "layers", "heads", "kv", "hd", "ff", "ctx", "rope", "eps", "");
    for (int i = 0; i < nib_synth_n_shapes(); i++) {
        const nib_synth_shape *s = nib_synth_shape_at(i);
        printf("  %-14s %-6s %7d %5d %6d %5d %3d %4d %6d %7d %9g %6g %s%s\n", s->name, s->arch, s->n_vocab, s->n_embd,
               s->n_layer, s->n_head, s->n_head_kv, s->head_dim, s->n_ff, s->n_ctx, (double)s->rope_base,
               (double)s->norm_eps, s->tied ? "tied" : "untied", s->qkv_bias ? ", qkv bias" : "");
    }
    printf("\ntypes (general.file_type): ");
    for (int i = 0; i < nib_synth_n_ftypes(); i++)
        printf("%s%s (%u)", i ? ", " : "", nib_synth_ftype_at(i)->name, nib_synth_ftype_at(i)->file_type);
    printf("\n\ntensor data, bytes (GB = 1e9 bytes; llama.cpp's \"model size\"), and parameters:\n  %-14s", "shape");
    for (int j = 0; j < nib_synth_n_ftypes(); j++) printf(" %22s", nib_synth_ftype_at(j)->name);
    printf(" %14s\n", "params");
    for (int i = 0; i < nib_synth_n_shapes(); i++) {
        const nib_synth_shape *s = nib_synth_shape_at(i);
        printf("  %-14s", s->name);
        uint64_t params = 0;
        for (int j = 0; j < nib_synth_n_ftypes(); j++) {
            uint64_t bytes;
            nib_error err;
            if (nib_synth_sizes(s, nib_synth_ftype_at(j), &bytes, &params, &err) != NIB_OK) {
                printf(" %22s", "-");
                continue;
            }
            char cell[32];
            snprintf(cell, sizeof cell, "%llu (%.2f)", (unsigned long long)bytes, (double)bytes / 1e9);
            printf(" %22s", cell);
        }
        printf(" %14llu\n", (unsigned long long)params);
    }
    return 0;
}

int cmd_synth(int argc, char **argv) {
    const char *shape = NULL, *type = NULL, *out = NULL;
    unsigned long long seed = 1;
    long threads = 0;
    bool do_list = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **str_opt = !strcmp(a, "--shape") ? &shape : !strcmp(a, "--type") ? &type
                                                                : !strcmp(a, "-o") ? &out : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) {
            do_list = true;
        } else if (str_opt || !strcmp(a, "--seed") || !strcmp(a, "-t")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "nib synth: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (str_opt) {
                *str_opt = v;
                continue;
            }
            char *end;
            errno = 0;
            unsigned long long x = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-' || (!strcmp(a, "-t") && (x < 1 || x > 1024))) {
                fprintf(stderr, "nib synth: %s '%s' is not %s\n", a, v,
                        !strcmp(a, "-t") ? "a thread count (1..1024)" : "a non-negative integer");
                return 2;
            }
            if (!strcmp(a, "--seed")) seed = x;
            else threads = (long)x;
        } else {
            fprintf(stderr, "nib synth: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (do_list) return list();
    if (!shape || !type || !out) {
        fprintf(stderr, "nib synth: --shape, --type and -o are required\n");
        usage(stderr);
        return 2;
    }
    const nib_synth_shape *sh = nib_synth_shape_find(shape);
    if (!sh) {
        fprintf(stderr, "nib synth: unknown shape '%s' (shapes: ", shape);
        list_names(stderr, false);
        fprintf(stderr, ")\n");
        return 2;
    }
    const nib_synth_ftype *ft = nib_synth_ftype_find(type);
    if (!ft) {
        fprintf(stderr, "nib synth: unknown type '%s' (types: ", type);
        list_names(stderr, true);
        fprintf(stderr, ")\n");
        return 2;
    }
    nib_error err;
    nib_pool *pool = nib_pool_new((int)threads, &err);
    if (!pool) {
        fprintf(stderr, "nib synth: %s\n", err.msg);
        return 1;
    }
    double t0 = cli_now_s();
    nib_synth_stats st;
    nib_status s = nib_synth_write(out, sh, ft, seed, pool, &st, &err);
    double dt = cli_now_s() - t0;
    int n_threads = nib_pool_size(pool);
    nib_pool_free(pool);
    if (s != NIB_OK) {
        fprintf(stderr, "nib synth: %s\n", err.msg);
        return 1;
    }
    printf("%s: %s %s seed %llu, %lld tensors, %llu bytes of tensors (%.2f GB), %llu bytes in all\n", out, sh->name,
           ft->name, seed, (long long)st.n_tensors, (unsigned long long)st.data_bytes, (double)st.data_bytes / 1e9,
           (unsigned long long)st.file_bytes);
    printf("written and checked in %.2f s (%.2f GB/s, %d threads); self-check: %lld rows finite, "
           "matrix std %.2f..%.2f x 1/sqrt(n_in)\n",
           dt, (double)st.file_bytes / 1e9 / (dt > 0 ? dt : 1e-9), n_threads, (long long)st.rows_checked,
           st.std_ratio_min, st.std_ratio_max);
    return 0;
}
