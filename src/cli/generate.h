/* The generation loop shared by run and chat: decode the prompt, then sample,
 * stream whole UTF-8 characters, and stop on end-of-generation, a stop string,
 * the token limit or the end of the context. */
#ifndef NIB_CLI_GENERATE_H
#define NIB_CLI_GENERATE_H

#include <stdio.h>

#include "cli/common.h"

typedef enum gen_stop {
    GEN_STOP_EOG = 0,     /* the model ended its turn */
    GEN_STOP_LIMIT,       /* -n tokens generated */
    GEN_STOP_STRING,      /* a --stop string appeared */
    GEN_STOP_CONTEXT,     /* the context is full */
    GEN_STOP_ERROR,
} gen_stop;

typedef struct gen_result {
    int64_t n_prompt, n_gen;
    double t_prompt_s, t_gen_s;
    gen_stop stop;
    char *text;           /* the generated text (malloc'ed; caller frees) */
} gen_result;

/* Decodes prompt (appended at the context's current position), then generates.
 * Streams to out (may be NULL). */
void cli_generate(cli_session *s, const cli_opts *o, nib_sampler *smp, const int32_t *prompt, int64_t n_prompt,
                  FILE *out, gen_result *r);

void cli_print_speed(const gen_result *r);

#endif
