/* Token sampling: greedy, or the llama.cpp chain in its order: repetition
 * penalty -> top-k -> top-p -> min-p -> temperature -> draw with a seeded RNG. */
#ifndef NIB_SAMPLER_H
#define NIB_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "nib.h"

typedef struct nib_sampler_params {
    float temp;            /* <= 0: greedy (argmax) */
    int32_t top_k;         /* <= 0: off */
    float top_p;           /* >= 1: off */
    float min_p;           /* <= 0: off */
    float repeat_penalty;  /* 1: off */
    int32_t repeat_last_n; /* tokens the penalty looks back over */
    uint64_t seed;
} nib_sampler_params;

/* llama.cpp's defaults: temp 0.8, top-k 40, top-p 0.95, min-p 0.05, no penalty. */
nib_sampler_params nib_sampler_default_params(void);
/* A message naming the first out-of-range parameter, or NIB_OK. */
nib_status nib_sampler_check_params(const nib_sampler_params *p, nib_error *err);

typedef struct nib_sampler nib_sampler;
nib_sampler *nib_sampler_new(const nib_sampler_params *p, int32_t n_vocab, nib_error *err);
void nib_sampler_free(nib_sampler *s);
/* Pick a token from logits (n_vocab). Does not modify logits. */
int32_t nib_sampler_sample(nib_sampler *s, const float *logits);
/* Greedy with no penalty: the pick is the logits' first maximum, which a
 * backend can compute where the logits are (nib_ctx_argmax). */
bool nib_sampler_is_greedy(const nib_sampler *s);
/* Record a token (prompt or generated) for the repetition penalty. */
void nib_sampler_accept(nib_sampler *s, int32_t token);

int32_t nib_argmax(const float *x, int32_t n);

#endif
