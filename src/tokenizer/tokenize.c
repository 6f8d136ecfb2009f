/* nib_tokenize: special tokens first, then each raw fragment through the
 * model's algorithm, with BOS/EOS as the model's flags say (llama.cpp:
 * llama_vocab::impl::tokenize). */
#include <stdlib.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"

nib_status nib_tokenize(const nib_tokenizer *tok, const char *text, size_t len, bool add_special, bool parse_special,
                        int32_t **ids, int64_t *n_ids, nib_error *err) {
    if (!tok || !ids || !n_ids || (!text && len))
        return nib_error_set(err, NIB_ERR_ARG, "nib_tokenize: missing tokenizer, text or output");
    *ids = NULL;
    *n_ids = 0;
    tok_frags frags = {0};
    tok_ids out = {0};
    nib_status st = tok_special_partition(tok, text, len, parse_special, &frags, err);
    if (st) goto done;

    if (add_special && tok->add_bos && (st = tok_ids_push(&out, tok->bos, err))) goto done;
    /* SentencePiece puts its space prefix (when the model asks for one) on the
     * first fragment and on every fragment right after a special token */
    bool prev_special = true;
    for (size_t i = 0; i < frags.n; i++) {
        tok_frag f = frags.v[i];
        if (f.token >= 0) st = tok_ids_push(&out, f.token, err);
        else if (tok->kind == TOK_KIND_SPM)
            st = tok_spm_encode(tok, text + f.off, f.len, tok->add_space_prefix && prev_special, &out, err);
        else st = tok_bpe_encode(tok, text + f.off, f.len, &out, err);
        if (st) goto done;
        prev_special = f.token >= 0;
    }
    if (add_special && tok->add_eos && (st = tok_ids_push(&out, tok->eos, err))) goto done;

    /* an empty result is still a malloc'ed array, so NULL only ever means failure */
    if (!out.v && !(out.v = malloc(sizeof *out.v))) st = nib_error_set(err, NIB_ERR_NOMEM, "out of memory");
done:
    free(frags.v);
    if (st) {
        free(out.v);
        return st;
    }
    *ids = out.v;
    *n_ids = (int64_t)out.n;
    return NIB_OK;
}
