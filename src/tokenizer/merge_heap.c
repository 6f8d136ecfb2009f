/* Binary min-heap of merge candidates, ordered as llama.cpp's comparators:
 * smallest key first, then smallest left index. */
#include "tokenizer/merge_heap.h"

#include <stdlib.h>

#include "core/error.h"

static bool before(const tok_bigram *a, const tok_bigram *b) {
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

nib_status tok_heap_push(tok_heap *h, tok_bigram b, nib_error *err) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof *h->v) return nib_error_set(err, NIB_ERR_NOMEM, "merge queue too large");
        tok_bigram *v = realloc(h->v, cap * sizeof *v);
        if (!v) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for the merge queue");
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&b, &h->v[parent])) break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = b;
    return NIB_OK;
}

bool tok_heap_pop(tok_heap *h, tok_bigram *out) {
    if (h->n == 0) return false;
    *out = h->v[0];
    tok_bigram last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
        if (!before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return true;
}

void tok_heap_free(tok_heap *h) {
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
