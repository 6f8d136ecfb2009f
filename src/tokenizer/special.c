/* Special tokens in the input text (llama.cpp's tokenizer_st_partition).
 *
 * llama.cpp takes the CONTROL, USER_DEFINED and UNKNOWN tokens longest text
 * first and, for each in turn, cuts every raw fragment at each non-overlapping
 * occurrence (leftmost first). The order matters when texts overlap ("abcd"
 * with specials "bcd" and "ab" gives a + <bcd>, not <ab> + cd), so nib keeps
 * exactly that loop. What it adds is a filter: one pass over the input through
 * a trie of all special texts finds which ones occur at all, and only those
 * run the loop; Gemma has 6000+ special tokens and a prompt holds a handful.
 *
 * Without parse_special, CONTROL and UNKNOWN texts stay plain text, but
 * USER_DEFINED ones are still cut out (Hugging Face's added tokens behave
 * that way; llama.cpp follows). */
#define _GNU_SOURCE 1  /* memmem */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"

/* Sort keys: longest text first, then lowest id. llama.cpp's std::sort leaves
 * equal lengths in an unspecified order; id order is the deterministic choice
 * (it only matters if two equal-length special texts overlap in the input). */
static int by_key(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

nib_status tok_special_build(nib_tokenizer *tok, nib_error *err) {
    int32_t n = 0;
    uint64_t total_bytes = 0;
    for (int32_t i = 0; i < tok->n_vocab; i++)
        if (tok->attr[i] & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN)) {
            n++;
            total_bytes += tok->len[i];
        }
    tok->n_special = n;
    tok->special = malloc((size_t)(n ? n : 1) * sizeof *tok->special);
    uint64_t *keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
    if (!tok->special || !keys) {
        free(keys);
        return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for %d special tokens", n);
    }
    n = 0;
    for (int32_t i = 0; i < tok->n_vocab; i++)
        if (tok->attr[i] & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN))
            keys[n++] = (uint64_t)(UINT32_MAX - tok->len[i]) << 32 | (uint32_t)i;
    qsort(keys, (size_t)n, sizeof *keys, by_key);
    for (int32_t r = 0; r < n; r++) tok->special[r] = (int32_t)(uint32_t)keys[r];
    free(keys);

    /* trie: one node per distinct prefix, so at most 1 + total bytes */
    if (total_bytes >= INT32_MAX) return nib_error_set(err, NIB_ERR_UNSUPPORTED, "special token texts too long in all");
    tok->trie_rank = malloc((size_t)(total_bytes + 1) * sizeof *tok->trie_rank);
    if (!tok->trie_rank || !tok_u64map_init(&tok->trie, total_bytes))
        return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for the special-token trie");
    tok->trie_rank[0] = -1;
    int32_t nodes = 1;
    for (int32_t r = 0; r < n; r++) {
        int32_t id = tok->special[r];
        const unsigned char *s = (const unsigned char *)tok_text(tok, id);
        uint64_t node = 0;
        for (uint32_t k = 0; k < tok->len[id]; k++) {
            uint64_t key = node << 8 | s[k], child;
            if (!tok_u64map_find(&tok->trie, key, &child)) {
                child = (uint64_t)nodes;
                tok->trie_rank[nodes++] = -1;
                tok_u64map_insert(&tok->trie, key, child);
            }
            node = child;
        }
        tok->trie_rank[node] = r;
    }
    tok->n_trie_nodes = nodes;
    return NIB_OK;
}

static nib_status frag_push(tok_frags *f, int32_t token, size_t off, size_t len, nib_error *err) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof *f->v) return nib_error_set(err, NIB_ERR_NOMEM, "too many fragments");
        tok_frag *v = realloc(f->v, cap * sizeof *v);
        if (!v) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for text fragments");
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = (tok_frag){token, off, len};
    return NIB_OK;
}

/* Cuts every raw fragment of in at each occurrence of id's text into out. */
static nib_status cut_at(const nib_tokenizer *tok, int32_t id, const char *text, const tok_frags *in, tok_frags *out,
                         nib_error *err) {
    const char *needle = tok_text(tok, id);
    size_t nlen = tok->len[id];
    nib_status st;
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        tok_frag f = in->v[i];
        if (f.token >= 0) {
            if ((st = frag_push(out, f.token, f.off, f.len, err))) return st;
            continue;
        }
        size_t pos = f.off, end = f.off + f.len;
        while (pos < end) {
            const char *hit = memmem(text + pos, end - pos, needle, nlen);
            if (!hit) break;
            size_t at = (size_t)(hit - text);
            if (at > pos && (st = frag_push(out, -1, pos, at - pos, err))) return st;
            if ((st = frag_push(out, id, at, nlen, err))) return st;
            pos = at + nlen;
        }
        if (pos < end && (st = frag_push(out, -1, pos, end - pos, err))) return st;
    }
    return NIB_OK;
}

nib_status tok_special_partition(const nib_tokenizer *tok, const char *text, size_t len, bool parse_special,
                                 tok_frags *out, nib_error *err) {
    out->n = 0;
    if (len == 0) return NIB_OK;
    nib_status st = frag_push(out, -1, 0, len, err);
    if (st || tok->n_special == 0) return st;

    /* which special texts occur anywhere in the input */
    uint8_t *present = calloc((size_t)tok->n_special, 1);
    if (!present) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for special-token search");
    bool any = false;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t p = 0; p < len; p++) {
        uint64_t node = 0;
        for (size_t q = p; q < len; q++) {
            if (!tok_u64map_find(&tok->trie, node << 8 | s[q], &node)) break;
            int32_t r = tok->trie_rank[node];
            if (r >= 0) present[r] = 1, any = true;
        }
    }
    tok_frags tmp = {0};
    for (int32_t r = 0; any && r < tok->n_special && st == NIB_OK; r++) {
        if (!present[r]) continue;
        int32_t id = tok->special[r];
        if (!parse_special && (tok->attr[id] & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN))) continue;
        st = cut_at(tok, id, text, out, &tmp, err);
        tok_frags swap = *out;
        *out = tmp;
        tmp = swap;
    }
    free(tmp.v);
    free(present);
    return st;
}
