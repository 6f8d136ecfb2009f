/* SentencePiece (tokenizer.ggml.model "llama"), as llama.cpp's
 * llm_tokenizer_spm_session: no pre-tokenizer; spaces become U+2581 ("▁"),
 * the text is cut into UTF-8 characters, and adjacent symbols whose
 * concatenation is a token merge, highest token score first (leftmost on
 * ties). A symbol left over that is not a token falls back to byte tokens
 * (<0xNN>). Gemma's newlines and runs of spaces need nothing special: they are
 * ordinary tokens ("\n\n", "▁▁▁") that the merges reach. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/merge_heap.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_utf8.h"

typedef struct spm_work {
    const char *s;
    int32_t *prev, *next, *id;
    size_t *start, *n;
    tok_heap heap;
} spm_work;

static nib_status try_bigram(const nib_tokenizer *tok, spm_work *w, int32_t l, int32_t r, nib_error *err) {
    if (l < 0 || r < 0) return NIB_OK;
    size_t size = w->n[l] + w->n[r];
    if (size > tok->max_token_len) return NIB_OK;  /* cannot be a token: skip the hash */
    int32_t id = tok_strmap_find(&tok->ids, w->s + w->start[l], size);
    if (id < 0) return NIB_OK;
    tok_bigram b = {-(double)tok->scores[id], l, r, size, id};
    return tok_heap_push(&w->heap, b, err);
}

/* An unmerged symbol that is no token: each byte as <0xNN> (or the one-byte
 * token, as llama.cpp's byte_to_token tries next). llama.cpp throws when
 * neither exists; nib uses the unknown token, or says which byte has none. */
static nib_status emit_bytes(const nib_tokenizer *tok, const unsigned char *s, size_t n, tok_ids *out,
                             nib_error *err) {
    for (size_t i = 0; i < n; i++) {
        int32_t id = tok->byte_token[s[i]];
        if (id < 0) id = tok->unk;
        if (id < 0) return nib_error_set(err, NIB_ERR_UNSUPPORTED, "byte 0x%02X has no token and there is no unknown token", s[i]);
        nib_status st = tok_ids_push(out, id, err);
        if (st) return st;
    }
    return NIB_OK;
}

nib_status tok_spm_encode(const nib_tokenizer *tok, const char *text, size_t len, bool prefix_space, tok_ids *out,
                          nib_error *err) {
    static const char space_mark[3] = {'\xe2', '\x96', '\x81'};  /* U+2581 */
    /* llama_escape_whitespace: only ' ' becomes ▁ (tabs and newlines stay) */
    size_t n_space = prefix_space ? 1 : 0;
    for (size_t i = 0; i < len; i++) n_space += text[i] == ' ';
    if (len + n_space == 0) return NIB_OK;
    if (len > (size_t)INT32_MAX / 3) return nib_error_set(err, NIB_ERR_ARG, "text of %zu bytes is too long", len);
    size_t n = len - (n_space - (prefix_space ? 1 : 0)) + 3 * n_space;  /* bytes once escaped; one symbol per byte at most */
    spm_work w = {0};
    nib_status st = NIB_OK;
    char *s = malloc(n);
    w.prev = malloc(n * sizeof *w.prev);
    w.next = malloc(n * sizeof *w.next);
    w.id = malloc(n * sizeof *w.id);
    w.start = malloc(n * sizeof *w.start);
    w.n = malloc(n * sizeof *w.n);
    if (!s || !w.prev || !w.next || !w.id || !w.start || !w.n) {
        st = nib_error_set(err, NIB_ERR_NOMEM, "out of memory for %zu bytes of text", len);
        goto done;
    }
    size_t k_out = 0;
    if (prefix_space) memcpy(s + k_out, space_mark, 3), k_out += 3;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') memcpy(s + k_out, space_mark, 3), k_out += 3;
        else s[k_out++] = text[i];
    }
    w.s = s;

    /* symbols: one per character, its length read from the lead byte alone
     * and cut at the end of the text, as llama.cpp does (no validation) */
    int32_t n_sym = 0;
    for (size_t off = 0; off < n;) {
        size_t k = tok_utf8_len((unsigned char)s[off]);
        if (k > n - off) k = n - off;
        w.start[n_sym] = off;
        w.n[n_sym] = k;
        w.prev[n_sym] = n_sym - 1;
        off += k;
        w.next[n_sym] = off == n ? -1 : n_sym + 1;
        w.id[n_sym] = -2;  /* not looked up yet */
        n_sym++;
    }
    for (int32_t i = 1; i < n_sym; i++)
        if ((st = try_bigram(tok, &w, i - 1, i, err))) goto done;

    tok_bigram b;
    while (tok_heap_pop(&w.heap, &b)) {
        if (w.n[b.left] == 0 || w.n[b.right] == 0 || w.n[b.left] + w.n[b.right] != b.size) continue;
        w.n[b.left] += w.n[b.right];
        w.n[b.right] = 0;
        w.id[b.left] = b.id;
        w.next[b.left] = w.next[b.right];
        if (w.next[b.right] >= 0) w.prev[w.next[b.right]] = b.left;
        if ((st = try_bigram(tok, &w, w.prev[b.left], b.left, err))) goto done;
        if ((st = try_bigram(tok, &w, b.left, w.next[b.left], err))) goto done;
    }

    /* llama.cpp's resegment: a merged symbol is a token by construction; a
     * single character is looked up, else spelled in bytes. (Its rev_merge
     * branch is never taken: only texts that are tokens are recorded there.) */
    for (int32_t i = 0; i >= 0; i = w.next[i]) {
        int32_t id = w.id[i];
        if (id == -2) id = tok_strmap_find(&tok->ids, s + w.start[i], w.n[i]);
        if (id >= 0) st = tok_ids_push(out, id, err);
        else st = emit_bytes(tok, (const unsigned char *)s + w.start[i], w.n[i], out, err);
        if (st) goto done;
    }
done:
    free(s);
    free(w.prev);
    free(w.next);
    free(w.id);
    free(w.start);
    free(w.n);
    tok_heap_free(&w.heap);
    return st;
}
