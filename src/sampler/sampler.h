/* Token sampling: greedy, or the llama.cpp chain in its order: penalties
 * (repetition, frequency, presence) -> top-k -> top-p -> min-p -> temperature
 * -> draw with a seeded RNG. */
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
    /* OpenAI's, as llama.cpp applies them over the same last repeat_last_n
     * tokens: logit -= count * frequency + (count > 0) * presence; 0: off */
    float presence_penalty, frequency_penalty;
} nib_sampler_params;

/* llama.cpp's defaults: temp 0.8, top-k 40, top-p 0.95, min-p 0.05, no penalty. */
nib_sampler_params nib_sampler_default_params(void);
/* A message naming the first out-of-range parameter, or NIB_OK. */
nib_status nib_sampler_check_params(const nib_sampler_params *p, nib_error *err);

/* Largest top-k the device sampler takes (nib_sampler_device_ok). */
#define NIB_SAMPLE_MAX_K 1024

typedef struct nib_sampler nib_sampler;
nib_sampler *nib_sampler_new(const nib_sampler_params *p, int32_t n_vocab, nib_error *err);
void nib_sampler_free(nib_sampler *s);
/* Pick a token from logits (n_vocab). Does not modify logits. Equal to
 * nib_sampler_sample_u(s, logits, nib_sampler_next_uniform(s)), except that
 * a greedy sampler (temp <= 0) draws no uniform: its RNG does not move. */
int32_t nib_sampler_sample(nib_sampler *s, const float *logits);
/* Advance the RNG and return the uniform in [0, 1) the next draw would use. */
double nib_sampler_next_uniform(nib_sampler *s);
/* The chain with a given uniform u in [0, 1) (ignored when greedy): the
 * repetition penalty, the candidates sorted by (logit desc, id asc), top-k,
 * then over the kept candidates p_i = expf(l_i - l_0) (before temperature):
 * top-p keeps up to the first i whose cumulative p / sum >= top_p, min-p
 * keeps while p_i >= min_p * p_0; then w_i = expf((l_i - l_0) / temp) and
 * the pick is the first i with u * sum(w) < w_0 + .. + w_i (else the last).
 * Sums in double. The RNG is not touched. */
int32_t nib_sampler_sample_u(nib_sampler *s, const float *logits, double u);
/* Can this sampler's chain run where the logits are (nib_cuda_sample)? True
 * when temp > 0, there is no repetition penalty and 1 <= top_k <=
 * NIB_SAMPLE_MAX_K (the device keeps at most that many candidates). *out
 * (if out is not NULL) gets the parameters either way. */
bool nib_sampler_device_ok(const nib_sampler *s, nib_sampler_params *out);
/* Greedy with no penalty: the pick is the logits' first maximum, which a
 * backend can compute where the logits are (nib_ctx_argmax). */
bool nib_sampler_is_greedy(const nib_sampler *s);
/* Record a token (prompt or generated) for the repetition penalty. */
void nib_sampler_accept(nib_sampler *s, int32_t token);

int32_t nib_argmax(const float *x, int32_t n);

#endif
