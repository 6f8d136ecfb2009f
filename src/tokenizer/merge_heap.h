/* The priority queue both merge loops use (BPE by rank, SentencePiece by
 * score): a binary min-heap on (key, left). Stale entries are not removed;
 * the loops skip them when popped, as llama.cpp's do, which keeps a merge at
 * O(log n) and a whole word at O(n log n) however long it is. */
#ifndef NIB_TOKENIZER_MERGE_HEAP_H
#define NIB_TOKENIZER_MERGE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nib.h"

typedef struct tok_bigram {
    double key;     /* BPE: the merge rank; SentencePiece: minus the token score */
    int32_t left;   /* symbol index; among equal keys the leftmost goes first */
    int32_t right;
    size_t size;    /* bytes of left + right when queued, to spot stale entries */
    int32_t id;     /* the token the merge makes */
} tok_bigram;

typedef struct tok_heap {
    tok_bigram *v;
    size_t n, cap;
} tok_heap;

nib_status tok_heap_push(tok_heap *h, tok_bigram b, nib_error *err);
/* Removes the smallest entry into *out; false when empty. */
bool tok_heap_pop(tok_heap *h, tok_bigram *out);
void tok_heap_free(tok_heap *h);

#endif
