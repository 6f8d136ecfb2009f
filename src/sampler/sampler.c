/* See sampler.h. Candidates live in one array sized at creation; sampling a
 * token allocates nothing. */
#include "sampler/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct cand {
    float logit;
    int32_t id;
} cand;

struct nib_sampler {
    nib_sampler_params p;
    int32_t n_vocab;
    cand *c;            /* (n_vocab) */
    float *probs;       /* (n_vocab) */
    int32_t *history;   /* (repeat_last_n) ring of recent tokens */
    int32_t *count;     /* (n_vocab) zero but while the penalties count the history */
    int32_t n_hist, hist_pos;
    uint64_t rng;
};

nib_sampler_params nib_sampler_default_params(void) {
    nib_sampler_params p = {0.8f, 40, 0.95f, 0.05f, 1.0f, 64, 0, 0.0f, 0.0f};
    return p;
}

nib_status nib_sampler_check_params(const nib_sampler_params *p, nib_error *err) {
    if (!(p->temp >= 0.0f && p->temp <= 100.0f))
        return nib_error_set(err, NIB_ERR_ARG, "temperature %g is out of range (0 to 100)", (double)p->temp);
    if (p->top_k < 0) return nib_error_set(err, NIB_ERR_ARG, "top-k %d must not be negative", p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return nib_error_set(err, NIB_ERR_ARG, "top-p %g is out of range (0, 1]", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return nib_error_set(err, NIB_ERR_ARG, "min-p %g is out of range [0, 1]", (double)p->min_p);
    if (!(p->repeat_penalty > 0.0f && p->repeat_penalty <= 10.0f))
        return nib_error_set(err, NIB_ERR_ARG, "repeat penalty %g is out of range (0, 10]", (double)p->repeat_penalty);
    if (!(fabsf(p->presence_penalty) <= 10.0f) || !(fabsf(p->frequency_penalty) <= 10.0f))
        return nib_error_set(err, NIB_ERR_ARG, "presence penalty %g / frequency penalty %g out of range [-10, 10]",
                             (double)p->presence_penalty, (double)p->frequency_penalty);
    if (p->repeat_last_n < 0 || p->repeat_last_n > 1 << 20)
        return nib_error_set(err, NIB_ERR_ARG, "repeat-last-n %d is out of range", p->repeat_last_n);
    return NIB_OK;
}

nib_sampler *nib_sampler_new(const nib_sampler_params *p, int32_t n_vocab, nib_error *err) {
    if (nib_sampler_check_params(p, err) != NIB_OK) return NULL;
    nib_sampler *s = calloc(1, sizeof *s);
    if (s) {
        s->p = *p;
        s->n_vocab = n_vocab;
        s->c = malloc((size_t)n_vocab * sizeof *s->c);
        s->probs = malloc((size_t)n_vocab * sizeof *s->probs);
        s->count = calloc((size_t)n_vocab, sizeof *s->count);
        s->history = malloc((size_t)(p->repeat_last_n > 0 ? p->repeat_last_n : 1) * sizeof *s->history);
        s->rng = p->seed ^ 0x853c49e6748fea9bull;
    }
    if (!s || !s->c || !s->probs || !s->history || !s->count) {
        nib_sampler_free(s);
        nib_error_set(err, NIB_ERR_NOMEM, "out of memory for a sampler over %d tokens", n_vocab);
        return NULL;
    }
    return s;
}

void nib_sampler_free(nib_sampler *s) {
    if (!s) return;
    free(s->c), free(s->probs), free(s->history), free(s->count), free(s);
}

void nib_sampler_accept(nib_sampler *s, int32_t token) {
    if (s->p.repeat_last_n <= 0) return;
    s->history[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % s->p.repeat_last_n;
    if (s->n_hist < s->p.repeat_last_n) s->n_hist++;
}

int32_t nib_argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;  /* first of equal maxima, as llama.cpp's greedy sampler */
    return best;
}

static int cmp_desc(const void *a, const void *b) {
    float x = ((const cand *)a)->logit, y = ((const cand *)b)->logit;
    if (x != y) return x > y ? -1 : 1;
    return ((const cand *)a)->id - ((const cand *)b)->id;
}

/* xorshift64*: fast, and a fixed seed gives a fixed stream on every machine */
static double rng_uniform(uint64_t *st) {
    uint64_t x = *st ? *st : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *st = x;
    return (double)((x * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0);
}

/* Keep the k largest candidates in c[0..k), sorted: a k-heap pass, then a sort of k. */
static int32_t keep_top_k(cand *c, int32_t n, int32_t k) {
    if (k >= n) {
        qsort(c, (size_t)n, sizeof *c, cmp_desc);
        return n;
    }
    /* min-heap of the best k seen so far at c[0..k) */
    for (int32_t i = k / 2 - 1; i >= 0; i--) {
        int32_t j = i;
        for (;;) {
            int32_t l = 2 * j + 1, r = l + 1, m = j;
            if (l < k && cmp_desc(&c[l], &c[m]) > 0) m = l;
            if (r < k && cmp_desc(&c[r], &c[m]) > 0) m = r;
            if (m == j) break;
            cand t = c[j]; c[j] = c[m]; c[m] = t; j = m;
        }
    }
    for (int32_t i = k; i < n; i++) {
        if (cmp_desc(&c[i], &c[0]) >= 0) continue;  /* not better than the worst kept */
        const cand evicted = c[0];                  /* swapped, not dropped: c stays a permutation */
        c[0] = c[i];
        c[i] = evicted;
        int32_t j = 0;
        for (;;) {
            int32_t l = 2 * j + 1, r = l + 1, m = j;
            if (l < k && cmp_desc(&c[l], &c[m]) > 0) m = l;
            if (r < k && cmp_desc(&c[r], &c[m]) > 0) m = r;
            if (m == j) break;
            cand t = c[j]; c[j] = c[m]; c[m] = t; j = m;
        }
    }
    qsort(c, (size_t)k, sizeof *c, cmp_desc);
    return k;
}

/* With top-k off, top-p or min-p without sorting the whole vocabulary (a
 * 152k-entry qsort took ~10 ms a token): the k largest are sorted (k = 64,
 * 256, ... until the cut falls inside them) and the cuts are taken over that
 * sorted prefix exactly as over a full sort. Top-p's normalising sum runs
 * over every candidate in id order (the full sort summed in sorted order:
 * the two differ in the last bits of a double, which moves a cut only when
 * the cumulative is within ~1e-16 of top_p). Returns m with c[0..m) sorted,
 * probs[0..m) = expf(l_i - l_0), and the cuts (top-p applied, min-p still
 * to apply) inside [0, m). */
static int32_t sorted_prefix(nib_sampler *s, int32_t n, float top_p, float min_p) {
    double total = 0.0;
    if (top_p < 1.0f) {
        float l0 = -INFINITY;
        for (int32_t i = 0; i < n; i++)
            if (s->c[i].logit > l0) l0 = s->c[i].logit;
        for (int32_t i = 0; i < n; i++)
            if (!isnan(s->c[i].logit)) total += expf(s->c[i].logit - l0);
    }
    for (int32_t k = 64;; k = k < n / 4 ? 4 * k : n) {
        const int32_t m = keep_top_k(s->c, n, k < n ? k : n);
        double cum = 0.0;
        for (int32_t i = 0; i < m; i++) {
            s->probs[i] = expf(s->c[i].logit - s->c[0].logit);
            if (top_p < 1.0f && (cum += s->probs[i] / total) >= top_p) return i + 1;
        }
        if (m == n || (min_p > 0.0f && s->probs[m - 1] < min_p * s->probs[0])) return m;
    }
}

static bool penalized(const nib_sampler_params *p) {
    return p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f;
}

bool nib_sampler_is_greedy(const nib_sampler *s) { return s->p.temp <= 0.0f && !penalized(&s->p); }

bool nib_sampler_device_ok(const nib_sampler *s, nib_sampler_params *out) {
    const nib_sampler_params *p = &s->p;
    if (out) *out = *p;
    return p->temp > 0.0f && !penalized(p) && p->top_k >= 1 && p->top_k <= NIB_SAMPLE_MAX_K;
}

double nib_sampler_next_uniform(nib_sampler *s) { return rng_uniform(&s->rng); }

int32_t nib_sampler_sample(nib_sampler *s, const float *logits) {
    /* greedy draws nothing, so its RNG stream stays where it was */
    return nib_sampler_sample_u(s, logits, s->p.temp <= 0.0f ? 0.0 : nib_sampler_next_uniform(s));
}

int32_t nib_sampler_sample_u(nib_sampler *s, const float *logits, double u) {
    const nib_sampler_params *p = &s->p;
    int32_t n = s->n_vocab;
    for (int32_t i = 0; i < n; i++) s->c[i] = (cand){logits[i], i};
    /* penalties, once per distinct token of the history (llama.cpp's rule:
     * divide positive logits, multiply the others; then frequency and presence) */
    if (penalized(p)) {
        for (int32_t h = 0; h < s->n_hist; h++)
            if (s->history[h] >= 0 && s->history[h] < n) s->count[s->history[h]]++;
        for (int32_t h = 0; h < s->n_hist; h++) {
            int32_t id = s->history[h];
            if (id < 0 || id >= n || s->count[id] == 0) continue;
            float l = s->c[id].logit;
            if (p->repeat_penalty != 1.0f) l = l <= 0.0f ? l * p->repeat_penalty : l / p->repeat_penalty;
            s->c[id].logit = l - (float)s->count[id] * p->frequency_penalty - p->presence_penalty;
            s->count[id] = 0;
        }
    }
    if (p->temp <= 0.0f) {
        int32_t best = 0;
        for (int32_t i = 1; i < n; i++)
            if (s->c[i].logit > s->c[best].logit) best = i;
        return s->c[best].id;
    }
    int32_t m;
    double sum = 0.0;
    if ((p->top_k <= 0 || p->top_k >= n) && (p->top_p < 1.0f || p->min_p > 0.0f)) {
        m = sorted_prefix(s, n, p->top_p, p->min_p);
    } else {
        m = keep_top_k(s->c, n, p->top_k > 0 ? p->top_k : n);
        /* probabilities of the sorted candidates (before temperature, as llama.cpp's top-p/min-p see them) */
        for (int32_t i = 0; i < m; i++) sum += (s->probs[i] = expf(s->c[i].logit - s->c[0].logit));
        if (p->top_p < 1.0f) {
            double cum = 0.0;
            for (int32_t i = 0; i < m; i++) {
                cum += s->probs[i] / sum;
                if (cum >= p->top_p) {
                    m = i + 1;
                    break;
                }
            }
        }
    }
    if (p->min_p > 0.0f) {
        int32_t keep = 1;
        while (keep < m && s->probs[keep] >= p->min_p * s->probs[0]) keep++;
        m = keep;
    }
    sum = 0.0;
    for (int32_t i = 0; i < m; i++) sum += (s->probs[i] = expf((s->c[i].logit - s->c[0].logit) / p->temp));
    double r = u * sum, acc = 0.0;
    for (int32_t i = 0; i < m; i++) {
        acc += s->probs[i];
        if (r < acc) return s->c[i].id;
    }
    return s->c[m - 1].id;
}
