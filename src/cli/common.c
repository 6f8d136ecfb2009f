/* See common.h. */
#include "cli/common.h"

#include "cuda/cuda.h"
#include "model/synth.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double cli_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A seed that differs between runs started in the same second (the time in
 * seconds alone gave two quick runs the same "random" text). */
static uint64_t random_seed(void) {
    uint64_t x;
    if (getentropy(&x, sizeof x) == 0) return x;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
    return x * 0x9E3779B97F4A7C15ull;
}

void cli_opts_init(cli_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_predict = 256;
    o->n_threads = 0;
    o->sp = nib_sampler_default_params();
    o->sp.seed = random_seed();
    o->device = "auto";
    o->n_gpu_layers = CLI_NGL_UNSET;
    o->n_ctx = CLI_CTX_UNSET;
    o->bench_pp = (cli_int_list){{512}, 1};
    o->bench_tg = (cli_int_list){{128}, 1};
    o->bench_depth = (cli_int_list){{0}, 1};
    o->bench_reps = 3;
}

typedef enum { ARG_NONE, ARG_STR, ARG_INT, ARG_FLOAT, ARG_U64, ARG_INT_LIST } arg_kind;

typedef struct flag {
    const char *short_name, *long_name;
    unsigned group;
    arg_kind kind;
    size_t offset;      /* field in cli_opts */
    double lo, hi;      /* allowed range for numbers */
    const char *help;
} flag;

#define OFF(f) offsetof(cli_opts, f)
/* The one table of flags. To add one: a field in cli_opts, a row here. */
static const flag flags[] = {
    {"-m", "--model", CLI_F_MODEL, ARG_STR, OFF(model), 0, 0, "the model file, as the positional MODEL (llama.cpp's spelling)"},
    {"-p", "--prompt", CLI_F_PROMPT, ARG_STR, OFF(prompt), 0, 0, "prompt text"},
    {"-f", "--file", CLI_F_PROMPT, ARG_STR, OFF(prompt_file), 0, 0, "read the prompt from FILE (- for stdin)"},
    {NULL, "--echo", CLI_F_PROMPT, ARG_NONE, OFF(echo), 0, 0, "print the prompt before the generated text"},
    {NULL, "--truncate", CLI_F_PROMPT, ARG_NONE, OFF(truncate), 0, 0,
     "keep the end of a prompt longer than the context instead of failing"},
    {"-e", "--escape", CLI_F_PROMPT | CLI_F_SAMPLING, ARG_NONE, OFF(escape), 0, 0,
     "read \\n \\r \\t \\' \\\" \\\\ \\xHH in -p and --stop as llama.cpp does (the default; -f's file is taken as it is)"},
    {NULL, "--no-escape", CLI_F_PROMPT | CLI_F_SAMPLING, ARG_NONE, OFF(no_escape), 0, 0, "take -p and --stop text as it is"},
    {"-n", "--n-predict", CLI_F_SAMPLING, ARG_INT, OFF(n_predict), -1, 1 << 30,
     "tokens to generate (default 256; -1 = until the end of generation or of the context)"},
    {NULL, "--temp", CLI_F_SAMPLING, ARG_FLOAT, OFF(sp.temp), 0, 100, "temperature; 0 = greedy (default 0.8)"},
    {NULL, "--top-k", CLI_F_SAMPLING, ARG_INT, OFF(sp.top_k), 0, 1 << 30, "top-k, 0 = off (default 40)"},
    {NULL, "--top-p", CLI_F_SAMPLING, ARG_FLOAT, OFF(sp.top_p), 1e-9, 1, "top-p, 1 = off (default 0.95)"},
    {NULL, "--min-p", CLI_F_SAMPLING, ARG_FLOAT, OFF(sp.min_p), 0, 1, "min-p, 0 = off (default 0.05)"},
    {NULL, "--repeat-penalty", CLI_F_SAMPLING, ARG_FLOAT, OFF(sp.repeat_penalty), 1e-3, 10,
     "repetition penalty, 1 = off (default 1)"},
    {NULL, "--presence-penalty", CLI_F_SAMPLING, ARG_FLOAT, OFF(sp.presence_penalty), -10, 10,
     "subtract this from the logit of every token among the last --repeat-last-n, 0 = off (default 0)"},
    {NULL, "--frequency-penalty", CLI_F_SAMPLING, ARG_FLOAT, OFF(sp.frequency_penalty), -10, 10,
     "subtract this times its count there, 0 = off (default 0)"},
    {NULL, "--repeat-last-n", CLI_F_SAMPLING, ARG_INT, OFF(sp.repeat_last_n), 0, 1 << 20,
     "tokens the penalty looks back over (default 64)"},
    {"-s", "--seed", CLI_F_SAMPLING, ARG_U64, OFF(sp.seed), 0, 0, "random seed (default, or -1 as in llama.cpp: a new one each run)"},
    {NULL, "--stop", CLI_F_SAMPLING, ARG_STR, 0, 0, 0, "stop when this text is generated (repeatable)"},
    {NULL, "--ignore-eos", CLI_F_SAMPLING, ARG_NONE, OFF(ignore_eos), 0, 0,
     "never end at the model's end-of-generation tokens (their logits -inf, as llama.cpp)"},
    {"-c", "--ctx-size", CLI_F_CONTEXT, ARG_INT, OFF(n_ctx), 0, 1 << 24,
     "context size (default: model's, at most 4096; 0 = model's, as llama.cpp)"},
    {"-b", "--batch-size", CLI_F_CONTEXT, ARG_INT, OFF(n_batch), 1, 1 << 16, "prompt tokens per forward step (default 256)"},
    {"-t", "--threads", CLI_F_CONTEXT | CLI_F_BENCH, ARG_INT, OFF(n_threads), 1, 1024, "threads (default: all CPUs)"},
    {NULL, "--kv-f32", CLI_F_CONTEXT, ARG_NONE, OFF(kv_f32), 0, 0, "keep the KV cache in fp32 (default fp16)"},
    {NULL, "--device", CLI_F_CONTEXT | CLI_F_BENCH, ARG_STR, OFF(device), 0, 0, "cpu or cuda (default: cuda if present, else cpu)"},
    {"-ngl", "--n-gpu-layers", CLI_F_CONTEXT | CLI_F_BENCH, ARG_INT, OFF(n_gpu_layers), -1, 1 << 20,
     "llama.cpp's: 0 = the CPU, -1 or more = the GPU if present (all layers: nib does not split a model)"},
    {NULL, "--system", CLI_F_CHAT, ARG_STR, OFF(system), 0, 0, "system message"},
    {NULL, "--chat-template", CLI_F_CHAT, ARG_STR, OFF(chat_template), 0, 0,
     "template name (chatml, gemma, llama3) or Jinja file, instead of the model's"},
    {"-p", "--n-prompt", CLI_F_BENCH, ARG_INT_LIST, OFF(bench_pp), 0, 1 << 20,
     "prompt tokens to process (default 512; a comma list runs each)"},
    {"-n", "--n-gen", CLI_F_BENCH, ARG_INT_LIST, OFF(bench_tg), 0, 1 << 20,
     "tokens to generate (default 128; a comma list runs each)"},
    {"-r", "--repetitions", CLI_F_BENCH, ARG_INT, OFF(bench_reps), 1, 1000, "repetitions (default 3)"},
    {"-d", "--depth", CLI_F_BENCH, ARG_INT_LIST, OFF(bench_depth), 0, 1 << 24,
     "context already filled before timing (default 0; a comma list runs each)"},
    {NULL, "--json", CLI_F_BENCH, ARG_NONE, OFF(json), 0, 0, "print the results as JSON"},
    {NULL, "--pieces", CLI_F_TOKENIZE, ARG_NONE, OFF(pieces), 0, 0, "show each token's piece"},
};

/* "512" or "128,512,2048" into l; nonzero on anything else. */
static int parse_int_list(const char *v, double lo, double hi, cli_int_list *l) {
    cli_int_list out = {{0}, 0};
    const char *p = v;
    for (;;) {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (errno || end == p || out.n == CLI_MAX_LIST || !((double)x >= lo && (double)x <= hi)) return 1;
        out.v[out.n++] = (int32_t)x;
        if (*end == 0) break;
        if (*end != ',') return 1;
        p = end + 1;
    }
    *l = out;
    return 0;
}

int32_t cli_ctx_size(const cli_opts *o, const nib_model *m) {
    if (o->n_ctx == CLI_CTX_UNSET) return 0; /* the library's default */
    if (o->n_ctx == 0) return m->hp.n_ctx_train > 0 ? m->hp.n_ctx_train : 0;
    return o->n_ctx;
}

void cli_print_flags(FILE *f, unsigned groups) {
    groups |= CLI_F_MODEL;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const flag *fl = &flags[i];
        if (!(fl->group & groups)) continue;
        char names[48];
        snprintf(names, sizeof names, "%s%s%s%s", fl->short_name ? fl->short_name : "", fl->short_name ? ", " : "    ",
                 fl->long_name, fl->kind == ARG_NONE ? "" : fl->kind == ARG_STR ? " S" : fl->kind == ARG_INT_LIST ? " N,.." : " N");
        fprintf(f, "  %-28s %s\n", names, fl->help);
    }
}

/* llama.cpp's escapes, in place (the text only shrinks): \n \r \t \' \" \\
 * and \xHH; any other backslash stays as it is. Nonzero for \x00, which would
 * end the C string early: an error rather than a silently shorter prompt. */
static int unescape(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (r[0] != '\\' || !r[1]) {
            *w++ = *r;
            continue;
        }
        static const char from[] = "nrt'\"\\", to[] = "\n\r\t'\"\\";
        const char *k = strchr(from, r[1]);
        if (k) {
            *w++ = to[k - from], r++;
        } else if (r[1] == 'x' && isxdigit((unsigned char)r[2]) && isxdigit((unsigned char)r[3])) {
            char hex[3] = {r[2], r[3], 0};
            long v = strtol(hex, NULL, 16);
            if (v == 0) return 1;
            *w++ = (char)v, r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
    return 0;
}

int cli_parse(cli_opts *o, int argc, char **argv, unsigned groups, void (*usage)(FILE *f)) {
    groups |= CLI_F_MODEL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (o->model) {
                fprintf(stderr, "nib %s: unexpected argument '%s' (the model is already '%s')\n", argv[0], a, o->model);
                return 2;
            }
            o->model = a;
            continue;
        }
        const flag *fl = NULL;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0] && !fl; k++)
            if ((flags[k].group & groups) &&
                ((flags[k].short_name && !strcmp(a, flags[k].short_name)) || !strcmp(a, flags[k].long_name)))
                fl = &flags[k];
        if (!fl) {
            fprintf(stderr, "nib %s: unknown option '%s'\n", argv[0], a);
            usage(stderr);
            return 2;
        }
        char *field = (char *)o + fl->offset;
        if (fl->kind == ARG_NONE) {
            *(bool *)field = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "nib %s: option '%s' needs a value\n", argv[0], a);
            return 2;
        }
        const char *v = argv[++i];
        char *end;
        errno = 0;
        if (!strcmp(fl->long_name, "--stop")) {
            if (o->n_stops >= CLI_MAX_STOPS || !v[0]) {
                fprintf(stderr, "nib %s: at most %d non-empty --stop strings\n", argv[0], CLI_MAX_STOPS);
                return 2;
            }
            o->stops[o->n_stops++] = v;
        } else if (fl->kind == ARG_STR) {
            if (fl->offset == OFF(model) && o->model) {
                fprintf(stderr, "nib %s: unexpected model '%s' (the model is already '%s')\n", argv[0], v, o->model);
                return 2;
            }
            *(const char **)field = v;
        } else if (fl->kind == ARG_INT_LIST) {
            if (parse_int_list(v, fl->lo, fl->hi, (cli_int_list *)field)) {
                fprintf(stderr, "nib %s: %s takes integers in [%.0f, %.0f], one or up to %d separated by commas; got '%s'\n",
                        argv[0], a, fl->lo, fl->hi, CLI_MAX_LIST, v);
                return 2;
            }
        } else if (fl->kind == ARG_U64 && fl->offset == OFF(sp.seed) && !strcmp(v, "-1")) {
            /* llama.cpp's "a random seed": the default's */
        } else if (fl->kind == ARG_U64) {
            unsigned long long x = strtoull(v, &end, 0);
            if (errno || *end || !*v || v[0] == '-') {
                fprintf(stderr, "nib %s: %s needs a non-negative integer, got '%s'\n", argv[0], a, v);
                return 2;
            }
            *(uint64_t *)field = x;
        } else {
            double x = fl->kind == ARG_INT ? (double)strtoll(v, &end, 10) : strtod(v, &end);
            if (errno || *end || !*v || !(x >= fl->lo && x <= fl->hi)) {
                if (fl->kind == ARG_INT) /* integers in full, not as %g's 1.04858e+06 */
                    fprintf(stderr, "nib %s: %s must be an integer in [%.0f, %.0f], got '%s'\n", argv[0], a, fl->lo,
                            fl->hi, v);
                else
                    fprintf(stderr, "nib %s: %s must be a number in [%g, %g], got '%s'\n", argv[0], a, fl->lo, fl->hi, v);
                return 2;
            }
            if (fl->kind == ARG_INT) *(int32_t *)field = (int32_t)x;
            else *(float *)field = (float)x;
        }
    }
    if (o->escape && o->no_escape) {
        fprintf(stderr, "nib %s: give -e or --no-escape, not both\n", argv[0]);
        return 2;
    }
    /* the strings point into argv, which is the program's to change */
    if (!o->no_escape) {
        if (o->prompt && unescape((char *)o->prompt)) {
            fprintf(stderr, "nib %s: -p holds \\x00, a NUL byte, which a prompt cannot hold (--no-escape takes the text as it is)\n",
                    argv[0]);
            return 2;
        }
        for (int k = 0; k < o->n_stops; k++)
            if (unescape((char *)o->stops[k]) || !o->stops[k][0]) {
                fprintf(stderr, "nib %s: --stop '%s' holds \\x00 or nothing once its escapes are read\n", argv[0],
                        o->stops[k]);
                return 2;
            }
    }
    if (!o->model) {
        fprintf(stderr, "nib %s: no model file given\n", argv[0]);
        usage(stderr);
        return 2;
    }
    if (strcmp(o->device, "auto") && strcmp(o->device, "cpu") && strcmp(o->device, "cuda")) {
        fprintf(stderr, "nib %s: unknown device '%s' (cpu or cuda)\n", argv[0], o->device);
        return 2;
    }
    if (o->n_gpu_layers != CLI_NGL_UNSET) { /* -ngl N: as llama.cpp, a GPU-less machine runs on the CPU */
        if (strcmp(o->device, "auto")) {
            fprintf(stderr, "nib %s: give -ngl or --device, not both\n", argv[0]);
            return 2;
        }
        if (o->n_gpu_layers == 0) o->device = "cpu";
    }
    return 0;
}

int cli_session_open(cli_session *s, const cli_opts *o, bool with_ctx) {
    memset(s, 0, sizeof *s);
    nib_error err;
    double t0 = cli_now_s();
    fprintf(stderr, "nib: loading %s ...\n", o->model);
    if (!strncmp(o->model, "synth:", 6)) {
        /* synth:SHAPE:TYPE, a model of random weights built now (nib synth) */
        char shape[64] = "";
        const char *colon = strchr(o->model + 6, ':');
        size_t n = colon ? (size_t)(colon - (o->model + 6)) : 0;
        const nib_synth_shape *sh = NULL;
        const nib_synth_ftype *ft = colon ? nib_synth_ftype_find(colon + 1) : NULL;
        if (n && n < sizeof shape) memcpy(shape, o->model + 6, n), sh = nib_synth_shape_find(shape);
        if (!sh || !ft) {
            fprintf(stderr, "nib: '%s': expected synth:SHAPE:TYPE with a shape and type of 'nib synth --list'\n",
                    o->model);
            return 1;
        }
        nib_pool *pool = nib_pool_new(o->n_threads, &err);
        s->model = pool ? nib_synth_model(sh, ft, 1, pool, &err) : NULL;
        nib_pool_free(pool);
    } else {
        s->model = nib_model_load(o->model, &err);
    }
    if (!s->model) {
        fprintf(stderr, "nib: %s\n", err.msg);
        return 1;
    }
    s->tok = nib_tokenizer_load(s->model->gguf, &err);
    if (!s->tok) {
        fprintf(stderr, "nib: %s: %s\n", o->model, err.msg);
        cli_session_close(s);
        return 1;
    }
    if (with_ctx) {
        /* auto: the GPU when there is one and the model runs there, else the
         * CPU, saying why; an explicit --device cuda that cannot run is an error */
        bool want_cuda = !strcmp(o->device, "cuda"), auto_dev = !strcmp(o->device, "auto");
        char why[256] = "";
        if (auto_dev) want_cuda = nib_cuda_probe(why, sizeof why);
        if (auto_dev && !want_cuda && o->n_gpu_layers != CLI_NGL_UNSET && o->n_gpu_layers != 0)
            fprintf(stderr, "nib: -ngl %d: no usable GPU (%s); running on the CPU\n", o->n_gpu_layers, why);
        nib_ctx_params cp = {cli_ctx_size(o, s->model), o->n_batch, o->n_threads, o->kv_f32,
                             want_cuda ? NIB_DEVICE_CUDA : NIB_DEVICE_CPU};
        s->ctx = nib_ctx_new(s->model, &cp, &err);
        if (!s->ctx && auto_dev && want_cuda) {
            fprintf(stderr, "nib: not on the GPU: %s; running on the CPU\n", err.msg);
            cp.device = NIB_DEVICE_CPU;
            s->ctx = nib_ctx_new(s->model, &cp, &err);
        }
        if (!s->ctx) {
            fprintf(stderr, "nib: %s\n", err.msg);
            cli_session_close(s);
            return 1;
        }
        if (nib_ctx_device(s->ctx) == NIB_DEVICE_CUDA) {
            fprintf(stderr, "nib: running on the GPU (%.1f MiB of device memory); prompts: %s\n",
                    (double)nib_ctx_device_bytes(s->ctx) / (1 << 20), nib_ctx_prompt_path(s->ctx));
            if (o->n_gpu_layers > 0 && o->n_gpu_layers < s->model->hp.n_layer)
                fprintf(stderr, "nib: -ngl %d: all %d layers are on the GPU (nib does not split a model between devices)\n",
                        o->n_gpu_layers, s->model->hp.n_layer);
        }
        int n_packed = 0;
        const uint64_t packed = nib_ctx_repacked_bytes(s->ctx, &n_packed);
        if (n_packed)
            fprintf(stderr, "nib: %d matrices repacked for the %s kernels (%.1f MiB; NIB_REPACK=0 keeps the file's layout)\n",
                    n_packed, nib_simd_level_name(nib_cpu_simd_level()), (double)packed / (1 << 20));
        if (nib_ctx_experts_note(s->ctx)) fprintf(stderr, "nib: %s\n", nib_ctx_experts_note(s->ctx));
        /* as llama.cpp: allowed, but said (RoPE past the trained positions) */
        const int32_t train = s->model->hp.n_ctx_train, n_ctx = nib_ctx_n_ctx(s->ctx);
        if (train > 0 && n_ctx > train)
            fprintf(stderr,
                    "nib: warning: a context of %d positions is longer than the model's training context (%d); "
                    "output past position %d may degrade\n",
                    n_ctx, train, train);
    }
    const nib_hparams *hp = &s->model->hp;
    char ctx_note[48] = "", split_note[48] = "";
    if (s->ctx) snprintf(ctx_note, sizeof ctx_note, ", context %d", nib_ctx_n_ctx(s->ctx));
    if (nib_gguf_n_splits(s->model->gguf) > 1)
        snprintf(split_note, sizeof split_note, " in %d split files", nib_gguf_n_splits(s->model->gguf));
    fprintf(stderr, "nib: %s, %d layers, %d embd, %d heads (%d kv), vocab %d, %.1f MiB of weights%s%s; loaded in %.2f s\n",
            hp->arch_name, hp->n_layer, hp->n_embd, hp->n_head, hp->n_head_kv, hp->n_vocab,
            (double)s->model->weight_bytes / (1 << 20), split_note, ctx_note, cli_now_s() - t0);
    return 0;
}

void cli_session_close(cli_session *s) {
    nib_ctx_free(s->ctx);
    nib_tokenizer_free(s->tok);
    nib_model_free(s->model);
    memset(s, 0, sizeof *s);
}

char *cli_read_prompt(const cli_opts *o) {
    if (o->prompt && o->prompt_file) {
        fprintf(stderr, "nib: give the prompt with -p or -f, not both\n");
        return NULL;
    }
    if (o->prompt) return strdup(o->prompt);
    if (!o->prompt_file) return strdup("");
    FILE *f = stdin;
    if (strcmp(o->prompt_file, "-")) {
        struct stat st;
        if (stat(o->prompt_file, &st) == 0 && S_ISDIR(st.st_mode)) {
            fprintf(stderr, "nib: prompt file '%s' is a directory\n", o->prompt_file);
            return NULL;
        }
        f = fopen(o->prompt_file, "rb");
        if (!f) {
            fprintf(stderr, "nib: cannot open prompt file '%s': %s\n", o->prompt_file, strerror(errno));
            return NULL;
        }
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        if (k == 0) break;
        n += k;
    }
    if (f != stdin) fclose(f);
    if (!buf) {
        fprintf(stderr, "nib: out of memory reading the prompt\n");
        return NULL;
    }
    buf[n] = 0;
    return buf;
}
