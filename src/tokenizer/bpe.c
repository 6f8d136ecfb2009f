/* Byte-level BPE (tokenizer.ggml.model "gpt2"), as llama.cpp's
 * llm_tokenizer_bpe_session:
 *   1. the text is decoded leniently (invalid bytes -> U+FFFD) and re-encoded,
 *   2. the pre-tokenizer's regexes cut it into words,
 *   3. each word's bytes start as one symbol each (a byte stands for its
 *      GPT-2 character, so the vocabulary is looked up by that character),
 *   4. adjacent symbols merge, lowest merge rank first (leftmost on ties),
 *      until no pair of neighbours is a merge.
 * Merges are keyed by the two token ids (every merge's halves are checked to
 * be tokens at load), so the loop never hashes strings. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/merge_heap.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_utf8.h"

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves; the
 * other 68 (0x00-0x20, 0x7F-0xA0, 0xAD) for U+0100.. in byte order. */
uint32_t tok_byte_to_cpt(uint8_t b) {
    if (b <= 0x20) return 256u + b;
    if (b >= 0x7F && b <= 0xA0) return 256u + 33 + (b - 0x7Fu);
    if (b == 0xAD) return 256u + 67;
    return b;
}

int tok_cpt_to_byte(uint32_t cpt) {
    if (cpt < 256) return tok_byte_to_cpt((uint8_t)cpt) == cpt ? (int)cpt : -1;
    uint32_t n = cpt - 256;
    if (n < 33) return (int)n;
    if (n < 67) return (int)(0x7F + n - 33);
    if (n == 67) return 0xAD;
    return -1;
}

/* The GPT-2 characters for bytes s[0..n) into out (2 bytes per input byte at most). */
static size_t byte_encode(const unsigned char *s, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += tok_utf8_encode(tok_byte_to_cpt(s[i]), out + k);
    return k;
}

/* Per-call scratch: symbol chains for the longest word, the merge queue. */
typedef struct bpe_work {
    int32_t *prev, *next, *id;
    size_t *n;
    size_t cap;
    char *enc;        /* (2 * cap) a word in GPT-2 characters */
    tok_heap heap;
} bpe_work;

static void work_free(bpe_work *w) {
    free(w->prev);
    free(w->next);
    free(w->id);
    free(w->n);
    free(w->enc);
    tok_heap_free(&w->heap);
}

static nib_status work_reserve(bpe_work *w, size_t n, nib_error *err) {
    if (n <= w->cap) return NIB_OK;
    if (n > INT32_MAX) return nib_error_set(err, NIB_ERR_ARG, "a pre-tokenized word of %zu bytes is too long", n);
    int32_t *prev = realloc(w->prev, n * sizeof *prev);
    if (prev) w->prev = prev;
    int32_t *next = realloc(w->next, n * sizeof *next);
    if (next) w->next = next;
    int32_t *id = realloc(w->id, n * sizeof *id);
    if (id) w->id = id;
    size_t *len = realloc(w->n, n * sizeof *len);
    if (len) w->n = len;
    char *enc = realloc(w->enc, 2 * n);
    if (enc) w->enc = enc;
    if (!prev || !next || !id || !len || !enc)
        return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for a %zu-byte word", n);
    w->cap = n;
    return NIB_OK;
}

static nib_status add_bigram(const nib_tokenizer *tok, bpe_work *w, int32_t l, int32_t r, nib_error *err) {
    if (l < 0 || r < 0 || w->id[l] < 0 || w->id[r] < 0) return NIB_OK;
    uint64_t v;
    if (!tok_u64map_find(&tok->merges, (uint64_t)w->id[l] << 32 | (uint32_t)w->id[r], &v)) return NIB_OK;
    uint32_t merged = (uint32_t)v;
    tok_bigram b = {(double)(v >> 32), l, r, w->n[l] + w->n[r], merged == UINT32_MAX ? -1 : (int32_t)merged};
    return tok_heap_push(&w->heap, b, err);
}

/* A final symbol that is not a token: llama.cpp looks up each byte of its
 * GPT-2 text as a one-byte token and emits the ones it finds (in practice the
 * printable ASCII ones); nib does the same. */
static nib_status emit_fallback(const nib_tokenizer *tok, bpe_work *w, const unsigned char *s, size_t n,
                                tok_ids *out, nib_error *err) {
    size_t k = byte_encode(s, n, w->enc);
    for (size_t i = 0; i < k; i++) {
        int32_t id = tok_strmap_find(&tok->ids, w->enc + i, 1);
        nib_status st;
        if (id >= 0 && (st = tok_ids_push(out, id, err))) return st;
    }
    return NIB_OK;
}

static nib_status bpe_word(const nib_tokenizer *tok, bpe_work *w, const unsigned char *s, size_t n, tok_ids *out,
                           nib_error *err) {
    nib_status st = work_reserve(w, n, err);
    if (st) return st;
    if (tok->ignore_merges) {
        /* llama-3 style: a word that is itself a token is taken whole */
        size_t k = byte_encode(s, n, w->enc);
        int32_t id = tok_strmap_find(&tok->ids, w->enc, k);
        if (id >= 0) return tok_ids_push(out, id, err);
    }
    for (size_t i = 0; i < n; i++) {
        w->prev[i] = (int32_t)i - 1;
        w->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
        w->n[i] = 1;
        w->id[i] = tok->byte_token[s[i]];
    }
    w->heap.n = 0;
    for (size_t i = 1; i < n; i++)
        if ((st = add_bigram(tok, w, (int32_t)i - 1, (int32_t)i, err))) return st;

    tok_bigram b;
    while (tok_heap_pop(&w->heap, &b)) {
        /* stale: one side was merged away, or grew since this pair was queued
         * (llama.cpp compares the texts; same bytes, same positions, so the
         * sizes say the same) */
        if (w->n[b.left] == 0 || w->n[b.right] == 0 || w->n[b.left] + w->n[b.right] != b.size) continue;
        w->n[b.left] += w->n[b.right];
        w->n[b.right] = 0;
        w->id[b.left] = b.id;
        w->next[b.left] = w->next[b.right];
        if (w->next[b.right] >= 0) w->prev[w->next[b.right]] = b.left;
        if ((st = add_bigram(tok, w, w->prev[b.left], b.left, err))) return st;
        if ((st = add_bigram(tok, w, b.left, w->next[b.left], err))) return st;
    }
    size_t pos = 0;
    for (int32_t i = 0; i >= 0; i = w->next[i]) {
        if (w->id[i] >= 0) st = tok_ids_push(out, w->id[i], err);
        else st = emit_fallback(tok, w, s + pos, w->n[i], out, err);
        if (st) return st;
        pos += w->n[i];
    }
    return NIB_OK;
}

nib_status tok_bpe_encode(const nib_tokenizer *tok, const char *text, size_t len, tok_ids *out, nib_error *err) {
    if (len == 0) return NIB_OK;
    if (len > SIZE_MAX / 3 - 4) return nib_error_set(err, NIB_ERR_ARG, "text of %zu bytes is too long", len);
    /* The words are cut from llama.cpp's re-encoding of the decoded text
     * (word), while PCRE2 reads a twin of the same length (subject) where a
     * few code points are swapped so that it classes them as llama.cpp does
     * (tok_pretok_stand_in; surrogates, which PCRE2 refuses, among them). */
    char *word = malloc(3 * len + 4), *subject = malloc(3 * len + 4);
    tok_spans pieces = {0};
    bpe_work w = {0};
    nib_status st = NIB_OK;
    if (!word || !subject) {
        st = nib_error_set(err, NIB_ERR_NOMEM, "out of memory for %zu bytes of text", len);
        goto done;
    }
    size_t n = 0;
    for (size_t pos = 0; pos < len;) {
        uint32_t cpt = tok_utf8_decode(text, len, &pos);
        size_t k = tok_utf8_encode(cpt, word + n);
        uint32_t stand_in = tok_pretok_stand_in(cpt);
        if (stand_in == cpt) memcpy(subject + n, word + n, k);
        else tok_utf8_encode(stand_in, subject + n);
        n += k;
    }
    if ((st = tok_regexes_split(&tok->regexes, subject, n, &pieces, err))) goto done;
    for (size_t p = 0; p < pieces.n && st == NIB_OK; p++)
        st = bpe_word(tok, &w, (const unsigned char *)word + pieces.v[p].off, pieces.v[p].len, out, err);
done:
    free(word);
    free(subject);
    free(pieces.v);
    work_free(&w);
    return st;
}
