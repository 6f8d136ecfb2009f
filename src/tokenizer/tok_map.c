/* Open-addressing hash maps with linear probing, sized once (load <= 1/2). */
#include "tokenizer/tok_map.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* FNV-1a: keys are short token texts; good spread, no tables, no alignment needs. */
uint64_t tok_hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* splitmix64's finalizer: merge pairs (left id << 32 | right id) are far from random. */
static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Smallest power of two >= 2n (and >= 16); false if that overflows. */
static bool table_cap(uint64_t n, uint64_t *cap) {
    if (n > (UINT64_MAX >> 2)) return false;
    uint64_t c = 16;
    while (c < n * 2) c <<= 1;
    *cap = c;
    return true;
}

bool tok_strmap_init(tok_strmap *m, uint64_t n, const char *text, const uint64_t *off,
                     const uint32_t *len) {
    memset(m, 0, sizeof *m);
    uint64_t cap, bytes;
    if (!table_cap(n, &cap) || !nib_mul_u64(cap, sizeof(int32_t), &bytes) || bytes > SIZE_MAX)
        return false;
    m->slots = malloc((size_t)bytes);
    m->hashes = malloc((size_t)bytes);
    if (!m->slots || !m->hashes) {
        tok_strmap_free(m);
        return false;
    }
    memset(m->slots, 0xff, (size_t)bytes);  /* every slot -1 */
    m->mask = cap - 1;
    m->text = text;
    m->off = off;
    m->len = len;
    return true;
}

void tok_strmap_free(tok_strmap *m) {
    free(m->slots);
    free(m->hashes);
    memset(m, 0, sizeof *m);
}

static bool slot_matches(const tok_strmap *m, uint64_t i, uint32_t h, const char *s, size_t n) {
    int32_t id = m->slots[i];
    return m->hashes[i] == h && m->len[id] == n && memcmp(m->text + m->off[id], s, n) == 0;
}

int32_t tok_strmap_insert(tok_strmap *m, int32_t id) {
    const char *s = m->text + m->off[id];
    size_t n = m->len[id];
    uint64_t h = tok_hash_bytes(s, n);
    for (uint64_t i = h & m->mask;; i = (i + 1) & m->mask) {
        if (m->slots[i] < 0) {
            m->slots[i] = id;
            m->hashes[i] = (uint32_t)h;
            return -1;
        }
        if (slot_matches(m, i, (uint32_t)h, s, n)) return m->slots[i];
    }
}

int32_t tok_strmap_find(const tok_strmap *m, const char *s, size_t n) {
    if (!m->slots) return -1;
    uint64_t h = tok_hash_bytes(s, n);
    for (uint64_t i = h & m->mask;; i = (i + 1) & m->mask) {
        if (m->slots[i] < 0) return -1;
        if (slot_matches(m, i, (uint32_t)h, s, n)) return m->slots[i];
    }
}

bool tok_u64map_init(tok_u64map *m, uint64_t n) {
    memset(m, 0, sizeof *m);
    uint64_t cap, bytes;
    if (!table_cap(n, &cap) || !nib_mul_u64(cap, sizeof(uint64_t), &bytes) || bytes > SIZE_MAX)
        return false;
    m->keys = malloc((size_t)bytes);
    m->vals = malloc((size_t)bytes);
    if (!m->keys || !m->vals) {
        tok_u64map_free(m);
        return false;
    }
    memset(m->keys, 0xff, (size_t)bytes);  /* every key TOK_U64MAP_EMPTY */
    m->mask = cap - 1;
    return true;
}

void tok_u64map_free(tok_u64map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

bool tok_u64map_insert(tok_u64map *m, uint64_t key, uint64_t val) {
    for (uint64_t i = hash_u64(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == TOK_U64MAP_EMPTY) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->count++;
            return true;
        }
        if (m->keys[i] == key) return false;
    }
}

bool tok_u64map_find(const tok_u64map *m, uint64_t key, uint64_t *val) {
    if (!m->keys) return false;
    for (uint64_t i = hash_u64(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == TOK_U64MAP_EMPTY) return false;
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return true;
        }
    }
}
