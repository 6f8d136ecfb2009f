/* See generate.h. */
#include "cli/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct textbuf {
    char *p;
    size_t n, cap;
} textbuf;

static int tb_add(textbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 1;
}

/* Bytes at the end of text that could still grow into a stop string: held back. */
static size_t stop_prefix_len(const char *text, size_t n, const cli_opts *o) {
    size_t hold = 0;
    for (int i = 0; i < o->n_stops; i++) {
        size_t sl = strlen(o->stops[i]);
        for (size_t k = sl - 1; k > hold; k--)
            if (k <= n && !memcmp(text + n - k, o->stops[i], k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

/* With a GPU context and a chain the device takes, the next decode samples
 * there: the uniform is drawn now, in the order the host sampler would. */
static bool arm_device_sampling(cli_session *s, const cli_opts *o, nib_sampler *smp) {
    nib_sampler_params p;
    if (o->ignore_eos) return false; /* the host masks the end-of-generation tokens */
    /* (on the CPU no uniform may be drawn here: the host sampler draws its own) */
    if (nib_ctx_device(s->ctx) != NIB_DEVICE_CUDA || nib_sampler_is_greedy(smp) || !nib_sampler_device_ok(smp, &p))
        return false;
    return nib_ctx_sample_next(s->ctx, p.temp, p.top_k, p.top_p, p.min_p, nib_sampler_next_uniform(smp));
}

/* --ignore-eos: the end-of-generation tokens (malloc'ed, *n of them); NULL on no memory. */
static int32_t *eog_ids(const nib_tokenizer *tok, int32_t n_vocab, int32_t *n) {
    *n = 0;
    for (int32_t i = 0; i < n_vocab; i++) *n += nib_tokenizer_is_eog(tok, i);
    int32_t *ids = malloc(((size_t)*n + 1) * sizeof *ids);
    if (!ids) return NULL;
    for (int32_t i = 0, k = 0; i < n_vocab; i++)
        if (nib_tokenizer_is_eog(tok, i)) ids[k++] = i;
    return ids;
}

/* The next token with the end-of-generation tokens' logits at -inf (llama.cpp's
 * --ignore-eos): from a copy of the logits, on the host. */
static int32_t pick_without_eog(cli_session *s, nib_sampler *smp, float *masked, const int32_t *eog, int32_t n_eog) {
    const int32_t n_vocab = s->model->hp.n_vocab;
    memcpy(masked, nib_ctx_logits(s->ctx), (size_t)n_vocab * sizeof *masked);
    for (int32_t i = 0; i < n_eog; i++) masked[eog[i]] = -INFINITY;
    return nib_sampler_is_greedy(smp) ? nib_argmax(masked, n_vocab) : nib_sampler_sample(smp, masked);
}

void cli_generate(cli_session *s, const cli_opts *o, nib_sampler *smp, const int32_t *prompt, int64_t n_prompt,
                  FILE *out, gen_result *r) {
    memset(r, 0, sizeof *r);
    nib_error err;
    textbuf text = {0};
    size_t printed = 0;
    r->n_prompt = n_prompt;
    for (int64_t i = 0; i < n_prompt; i++) nib_sampler_accept(smp, prompt[i]);
    double t0 = cli_now_s();
    if (n_prompt > 0) arm_device_sampling(s, o, smp);
    if (n_prompt > 0 && nib_ctx_decode(s->ctx, prompt, n_prompt, NULL, &err) != NIB_OK) {
        fprintf(stderr, "\nnib: %s\n", err.msg);
        r->stop = GEN_STOP_ERROR;
        return;
    }
    r->t_prompt_s = cli_now_s() - t0;
    /* NaN or infinite weights are legal in a file and run; say why the text is noise */
    if (n_prompt > 0) {
        const float *lg = nib_ctx_logits(s->ctx);
        int32_t n_vocab = s->model->hp.n_vocab, bad = 0;
        for (int32_t i = 0; i < n_vocab; i++) bad += !isfinite(lg[i]);
        if (bad)
            fprintf(stderr, "nib: warning: %d of the %d logits are NaN or infinite (the weights hold NaN or inf?); "
                    "the output is meaningless\n", bad, n_vocab);
    }
    t0 = cli_now_s();
    nib_detok detok = {0};
    /* room for the longest piece (a vocabulary may hold tokens of any length),
     * allocated before the token loop */
    size_t piece_cap = 3 * nib_tokenizer_max_piece_len(s->tok) + 12;
    char *piece = malloc(piece_cap);
    int32_t n_eog = 0, *eog = o->ignore_eos ? eog_ids(s->tok, s->model->hp.n_vocab, &n_eog) : NULL;
    float *masked = o->ignore_eos ? malloc((size_t)s->model->hp.n_vocab * sizeof *masked) : NULL;
    if (!piece || (o->ignore_eos && (!eog || !masked))) {
        fprintf(stderr, "\nnib: out of memory for the generation's buffers (a %zu-byte token buffer%s)\n", piece_cap,
                o->ignore_eos ? " and a copy of the logits" : "");
        free(piece), free(eog), free(masked);
        r->stop = GEN_STOP_ERROR;
        return;
    }
    r->stop = GEN_STOP_LIMIT;
    const bool greedy = nib_sampler_is_greedy(smp);
    /* -n -1: no limit but the end of generation, a stop string or the context */
    const int64_t n_max = o->n_predict < 0 ? INT64_MAX : o->n_predict;
    for (int64_t i = 0; i < n_max; i++) {
        /* greedy, or sampling the device did, needs no logits on the host */
        const int32_t dev_id = nib_ctx_sampled(s->ctx);
        int32_t id = o->ignore_eos ? pick_without_eog(s, smp, masked, eog, n_eog)
                     : greedy      ? nib_ctx_argmax(s->ctx)
                     : dev_id >= 0 ? dev_id
                                   : nib_sampler_sample(smp, nib_ctx_logits(s->ctx));
        nib_sampler_accept(smp, id);
        if (nib_tokenizer_is_eog(s->tok, id)) {
            r->stop = GEN_STOP_EOG;
            break;
        }
        r->n_gen++;
        size_t n = nib_detok_push(&detok, s->tok, id, false, piece, piece_cap);
        if (!tb_add(&text, piece, n)) {
            fprintf(stderr, "\nnib: out of memory\n");
            r->stop = GEN_STOP_ERROR;
            break;
        }
        /* a stop string ends the text just before it */
        size_t from = printed > 256 ? printed - 256 : 0;
        char *hit = NULL;
        for (int k = 0; k < o->n_stops; k++) {
            char *h = strstr(text.p + from, o->stops[k]);
            if (h && (!hit || h < hit)) hit = h;
        }
        if (hit) {
            text.n = (size_t)(hit - text.p);
            text.p[text.n] = 0;
            r->stop = GEN_STOP_STRING;
            break;
        }
        size_t safe = text.n - stop_prefix_len(text.p, text.n, o);
        if (out && safe > printed) {
            fwrite(text.p + printed, 1, safe - printed, out);
            fflush(out);
            printed = safe;
        }
        if (nib_ctx_pos(s->ctx) >= nib_ctx_n_ctx(s->ctx)) {
            r->stop = GEN_STOP_CONTEXT;
            break;
        }
        if (i + 1 < n_max) arm_device_sampling(s, o, smp);
        if (i + 1 < n_max && nib_ctx_decode(s->ctx, &id, 1, NULL, &err) != NIB_OK) {
            fprintf(stderr, "\nnib: %s\n", err.msg);
            r->stop = GEN_STOP_ERROR;
            break;
        }
    }
    free(piece), free(eog), free(masked);
    char tail[16];
    size_t n = nib_detok_flush(&detok, tail, sizeof tail);
    if (r->stop != GEN_STOP_STRING && n) tb_add(&text, tail, n);
    if (out && text.n > printed) fwrite(text.p + printed, 1, text.n - printed, out);
    if (out) fflush(out);
    r->t_gen_s = cli_now_s() - t0;
    r->text = text.p ? text.p : strdup("");
    if (r->stop == GEN_STOP_CONTEXT)
        fprintf(stderr, "\nnib: stopped: the context of %d tokens is full (use -c to enlarge it)\n",
                nib_ctx_n_ctx(s->ctx));
}

void cli_print_speed(const gen_result *r) {
    fprintf(stderr, "\nnib: prompt %lld tokens in %.3f s (%.1f tokens/s); generated %lld tokens in %.3f s (%.1f tokens/s)\n",
            (long long)r->n_prompt, r->t_prompt_s, r->t_prompt_s > 0 ? (double)r->n_prompt / r->t_prompt_s : 0.0,
            (long long)r->n_gen, r->t_gen_s, r->t_gen_s > 0 ? (double)r->n_gen / r->t_gen_s : 0.0);
}
