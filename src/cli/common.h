/* Options and setup shared by the commands that run a model (run, chat,
 * bench, tokenize): parsing is a table of flags, each writing one field. */
#ifndef NIB_CLI_COMMON_H
#define NIB_CLI_COMMON_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include "model/context.h"
#include "model/model.h"
#include "sampler/sampler.h"
#include "tokenizer/tokenizer.h"

#define CLI_MAX_STOPS 8
#define CLI_MAX_LIST 16 /* values in a comma list (bench's -p 128,512) */

/* An option that takes one integer or a comma list of them, as llama-bench's. */
typedef struct cli_int_list {
    int32_t v[CLI_MAX_LIST];
    int n;
} cli_int_list;
#define CLI_NGL_UNSET (-2) /* -ngl's -1 is llama.cpp's "all layers" */
#define CLI_CTX_UNSET (-1) /* -c 0 is llama.cpp's "the model's training context" */

typedef struct cli_opts {
    const char *model;        /* the positional MODEL argument, or -m */
    const char *prompt;       /* -p */
    const char *prompt_file;  /* -f FILE ("-" = stdin) */
    const char *system;       /* --system (chat) */
    const char *chat_template;/* --chat-template NAME|FILE */
    const char *device;       /* --device cpu|cuda */
    int32_t n_predict;        /* -n; -1: until the end of generation or of the context */
    int32_t n_ctx;            /* -c; CLI_CTX_UNSET when not given (use cli_ctx_size) */
    int32_t n_batch;          /* -b */
    int32_t n_threads;        /* -t */
    int32_t n_gpu_layers;     /* -ngl; CLI_NGL_UNSET when not given */
    bool echo, truncate, kv_f32, no_display_prompt, pieces, json, ignore_eos;
    bool escape, no_escape;   /* -e (the default, as llama.cpp's), --no-escape */
    nib_sampler_params sp;
    const char *stops[CLI_MAX_STOPS];
    int n_stops;
    /* bench */
    cli_int_list bench_pp, bench_tg, bench_depth; /* -p -n -d: lists */
    int32_t bench_reps;
} cli_opts;

/* Flag groups a command accepts (bit set). */
enum {
    CLI_F_PROMPT = 1 << 0,   /* -p -f --echo --truncate */
    CLI_F_SAMPLING = 1 << 1, /* --temp --top-k --top-p --min-p --repeat-* --seed -n --stop */
    CLI_F_CONTEXT = 1 << 2,  /* -c -b -t --kv-f32 --device */
    CLI_F_CHAT = 1 << 3,     /* --system --chat-template */
    CLI_F_BENCH = 1 << 4,    /* -p N -n N -r N -d N --json (bench's own meanings) */
    CLI_F_TOKENIZE = 1 << 5, /* --pieces */
    CLI_F_MODEL = 1 << 6,    /* -m (every command that parses with cli_parse) */
};

void cli_opts_init(cli_opts *o);
/* Parse argv[1..] (argv[0] is the command name). Returns 0 ok, 1 help printed,
 * 2 usage error (message printed naming the option). */
int cli_parse(cli_opts *o, int argc, char **argv, unsigned groups, void (*usage)(FILE *f));
void cli_print_flags(FILE *f, unsigned groups);

/* A loaded model with its tokenizer and context. */
typedef struct cli_session {
    nib_model *model;
    nib_tokenizer *tok;
    nib_ctx *ctx;
} cli_session;

/* Load everything, printing progress to stderr; on error prints it and returns nonzero. */
int cli_session_open(cli_session *s, const cli_opts *o, bool with_ctx);
void cli_session_close(cli_session *s);

/* Read the prompt from -p, or -f FILE, or stdin for "-f -". malloc'ed; NULL on error (printed). */
char *cli_read_prompt(const cli_opts *o);

/* The context size to ask the library for: 0 (its default: the model's, at
 * most 4096) when -c was not given, the model's training context for -c 0. */
int32_t cli_ctx_size(const cli_opts *o, const nib_model *m);

double cli_now_s(void);

#endif
