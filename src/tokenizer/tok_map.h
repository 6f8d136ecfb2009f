/* Hash maps the tokenizer builds once at load, so that encoding never scans
 * the vocabulary (Gemma's has 262144 entries):
 *   tok_strmap  token text -> id (open addressing over ids; the text lives in
 *               the tokenizer's own copy of the vocabulary)
 *   tok_u64map  64-bit key -> 64-bit value (BPE merge pairs, the special-token
 *               trie's edges)
 * Both are sized at build time and never grow afterwards. */
#ifndef NIB_TOKENIZER_TOK_MAP_H
#define NIB_TOKENIZER_TOK_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint64_t tok_hash_bytes(const char *s, size_t n);

typedef struct tok_strmap {
    int32_t *slots;       /* (cap) token id or -1 */
    uint32_t *hashes;     /* (cap) low 32 bits of the slot's hash, to skip most memcmp */
    uint64_t mask;        /* cap - 1; cap is a power of two */
    const char *text;     /* token texts, indexed by off/len below */
    const uint64_t *off;
    const uint32_t *len;
} tok_strmap;

/* Room for n keys at a load factor of at most 1/2. false on overflow or OOM. */
bool tok_strmap_init(tok_strmap *m, uint64_t n, const char *text, const uint64_t *off,
                     const uint32_t *len);
void tok_strmap_free(tok_strmap *m);
/* Inserts id (whose text is text[off[id]..]); returns the id already holding
 * that text, or -1 if it was new. */
int32_t tok_strmap_insert(tok_strmap *m, int32_t id);
int32_t tok_strmap_find(const tok_strmap *m, const char *s, size_t n);

#define TOK_U64MAP_EMPTY UINT64_MAX

typedef struct tok_u64map {
    uint64_t *keys;   /* (cap) TOK_U64MAP_EMPTY when free */
    uint64_t *vals;   /* (cap) */
    uint64_t mask;
    uint64_t count;
} tok_u64map;

bool tok_u64map_init(tok_u64map *m, uint64_t n);
void tok_u64map_free(tok_u64map *m);
/* Inserts unless the key is present (the first value wins, as std::map::emplace).
 * Returns false if the key was already there. key must not be TOK_U64MAP_EMPTY;
 * the map must have been sized for every insert. */
bool tok_u64map_insert(tok_u64map *m, uint64_t key, uint64_t val);
bool tok_u64map_find(const tok_u64map *m, uint64_t key, uint64_t *val);

#endif
