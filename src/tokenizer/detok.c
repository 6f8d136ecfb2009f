/* Tokens back to bytes (llama.cpp: token_to_piece), and a streaming
 * detokenizer that only ever emits whole UTF-8 characters.
 *
 * Every token's piece is computed once at load into one buffer (as llama.cpp's
 * cache_token_to_piece), so decoding in the token loop is a copy, never an
 * allocation. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_utf8.h"

/* A piece longer than this is a broken vocabulary, not a token. */
#define MAX_PIECE_BYTES (1u << 20)

static int hex_val(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* Writes token id's piece (special tokens as their text) to out, or only
 * counts it when out is NULL. Mirrors llama.cpp's token_to_piece branches. */
static uint64_t piece_of(const nib_tokenizer *t, int32_t id, char *out) {
    const char *s = tok_text(t, id);
    size_t n = t->len[id];
    uint8_t a = t->attr[id];
    if (a & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED)) {
        if (out) memcpy(out, s, n);
        return n;
    }
    if (a & TOK_ATTR_NORMAL) {
        uint64_t k = 0;
        if (t->kind == TOK_KIND_SPM) {
            /* '▁' (U+2581) stands for a space */
            for (size_t i = 0; i < n;) {
                if (i + 3 <= n && !memcmp(s + i, "\xe2\x96\x81", 3)) {
                    if (out) out[k] = ' ';
                    k++, i += 3;
                } else {
                    if (out) out[k] = s[i];
                    k++, i++;
                }
            }
            return k;
        }
        /* byte-level BPE: each character stands for one byte. A character
         * outside GPT-2's map is written the way llama.cpp's llama_decode_text
         * writes it, "[UNK_BYTE_0x<its UTF-8 in hex><the token's text>]", so
         * pieces match llama.cpp even for such vocabularies. */
        for (size_t i = 0; i < n;) {
            uint32_t c = tok_utf8_decode(s, n, &i);
            int b = tok_cpt_to_byte(c);
            if (b >= 0) {
                if (out) out[k] = (char)b;
                k++;
                continue;
            }
            char u[4];
            size_t un = tok_utf8_encode(c, u);
            static const char hex[] = "0123456789abcdef";
            if (out) {
                memcpy(out + k, "[UNK_BYTE_0x", 12);
                for (size_t j = 0; j < un; j++) {
                    out[k + 12 + 2 * j] = hex[(unsigned char)u[j] >> 4];
                    out[k + 13 + 2 * j] = hex[(unsigned char)u[j] & 15];
                }
                memcpy(out + k + 12 + 2 * un, s, n);
                out[k + 12 + 2 * un + n] = ']';
            }
            k += 12 + 2 * un + n + 1;
            if (k > MAX_PIECE_BYTES) return k;  /* the caller refuses it; stop counting */
        }
        return k;
    }
    if (a & TOK_ATTR_BYTE) {
        /* <0xNN>, checked at load */
        if (out) out[0] = (char)(hex_val(s[3]) << 4 | hex_val(s[4]));
        return 1;
    }
    return 0;  /* unused or undefined tokens render as nothing, as in llama.cpp */
}

nib_status tok_pieces_build(nib_tokenizer *t, nib_error *err) {
    uint64_t total = 0;
    t->piece_off = malloc((size_t)t->n_vocab * sizeof *t->piece_off);
    t->piece_len = malloc((size_t)t->n_vocab * sizeof *t->piece_len);
    if (!t->piece_off || !t->piece_len) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for token pieces");
    for (int32_t i = 0; i < t->n_vocab; i++) {
        uint64_t k = piece_of(t, i, NULL);
        if (k > MAX_PIECE_BYTES)
            return nib_error_set(err, NIB_ERR_FORMAT, "tokenizer.ggml.tokens[%d] decodes to over %u bytes", i, MAX_PIECE_BYTES);
        t->piece_off[i] = total;
        t->piece_len[i] = (uint32_t)k;
        if (k > t->max_piece_len) t->max_piece_len = (uint32_t)k;
        total += k;  /* <= n_vocab * 1 MiB: no overflow */
    }
    if (total > SIZE_MAX) return nib_error_set(err, NIB_ERR_NOMEM, "token pieces too large");
    t->piece = malloc(total ? (size_t)total : 1);
    if (!t->piece) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for %llu bytes of token pieces", (unsigned long long)total);
    for (int32_t i = 0; i < t->n_vocab; i++) piece_of(t, i, t->piece + t->piece_off[i]);
    return NIB_OK;
}

size_t nib_tokenizer_max_piece_len(const nib_tokenizer *t) { return t->max_piece_len; }

/* The piece for id, or an empty one (out of range; control/unknown unless special). */
static const char *piece_for(const nib_tokenizer *t, int32_t id, bool special, size_t *n) {
    *n = 0;
    if (!t || id < 0 || id >= t->n_vocab) return "";
    if (!special && (t->attr[id] & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL))) return "";
    *n = t->piece_len[id];
    return t->piece + t->piece_off[id];
}

size_t nib_token_to_piece(const nib_tokenizer *t, int32_t id, bool special, char *buf, size_t cap) {
    size_t n;
    const char *p = piece_for(t, id, special, &n);
    if (buf) memcpy(buf, p, n < cap ? n : cap);
    return n;
}

static const char replacement[3] = {'\xef', '\xbf', '\xbd'};  /* U+FFFD */

size_t nib_detok_push(nib_detok *d, const nib_tokenizer *tok, int32_t id, bool special, char *out, size_t cap) {
    size_t n;
    const char *p = piece_for(tok, id, special, &n);
    size_t k = 0, i = 0;
    size_t total = (size_t)d->n_pending + n;
    bool cut = false;
    /* walk pending bytes followed by the piece as one stream */
    while (i < total) {
        unsigned char w[4];
        size_t have = 0;
        for (; have < 4 && i + have < total; have++) {
            size_t j = i + have;
            w[have] = (unsigned char)(j < (size_t)d->n_pending ? d->pending[j] : p[j - (size_t)d->n_pending]);
        }
        int r = tok_utf8_strict(w, have);
        if (r == 0) break;  /* an incomplete character at the end: keep it */
        const char *src = r > 0 ? (const char *)w : replacement;
        size_t len = r > 0 ? (size_t)r : 3;
        /* once a character does not fit, the rest is dropped too: the text
         * stays in order, with a hole only at its end */
        if (!cut && k + len <= cap) {
            memcpy(out + k, src, len);
            k += len;
        } else {
            cut = true;
            d->n_lost += len;
        }
        i += r > 0 ? (size_t)r : (size_t)-r;
    }
    /* the tail (at most 3 bytes of a valid prefix) waits for the next token */
    int np = 0;
    for (; i < total; i++, np++) {
        char c = i < (size_t)d->n_pending ? d->pending[i] : p[i - (size_t)d->n_pending];
        d->pending[np] = c;
    }
    d->n_pending = np;
    return k;
}

size_t nib_detok_flush(nib_detok *d, char *out, size_t cap) {
    size_t k = 0;
    /* what is left is one incomplete character: one U+FFFD */
    if (d->n_pending > 0) {
        if (cap >= 3) {
            memcpy(out, replacement, 3);
            k = 3;
        } else {
            d->n_lost += 3;
        }
    }
    d->n_pending = 0;
    return k;
}
