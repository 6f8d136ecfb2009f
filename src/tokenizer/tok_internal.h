/* The tokenizer's insides, shared by its files (not part of the public API).
 *
 *   vocab.c    load tokenizer.* metadata, validate it, special ids, EOG set
 *   pretok.c   BPE pre-tokenizers: the table of regex lists, PCRE2 splitting
 *   bpe.c      byte-level BPE: GPT-2 byte mapping, merges by rank
 *   spm.c      SentencePiece: bigram merges by score, byte fallback
 *   special.c  special-token partition of the input (llama.cpp's tokenizer_st_partition)
 *   tokenize.c nib_tokenize: fragments, BOS/EOS, dispatch
 *   detok.c    token -> bytes, the streaming UTF-8 detokenizer
 *   merge_heap.c, tok_map.c, tok_utf8.c  the data structures they share
 *
 * Reference: llama.cpp src/llama-vocab.cpp and src/unicode.cpp; nib must give
 * the same ids for the same text, so where llama.cpp does something odd, the
 * comment says so and we do it too. */
#ifndef NIB_TOKENIZER_TOK_INTERNAL_H
#define NIB_TOKENIZER_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nib.h"
#include "tokenizer/tok_map.h"
#include "tokenizer/tokenizer.h"

/* Token attributes: llama.cpp's llama_token_attr bits (a token can carry
 * several, e.g. CONTROL|UNUSED for Gemma's <unused17>). */
enum {
    TOK_ATTR_UNKNOWN = 1 << 0,
    TOK_ATTR_UNUSED = 1 << 1,
    TOK_ATTR_NORMAL = 1 << 2,
    TOK_ATTR_CONTROL = 1 << 3,
    TOK_ATTR_USER_DEFINED = 1 << 4,
    TOK_ATTR_BYTE = 1 << 5,
};

typedef enum tok_kind {
    TOK_KIND_BPE,  /* tokenizer.ggml.model "gpt2" */
    TOK_KIND_SPM,  /* tokenizer.ggml.model "llama" */
} tok_kind;

/* A growable list of ids (the output of nib_tokenize). */
typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
} tok_ids;
nib_status tok_ids_push(tok_ids *ids, int32_t id, nib_error *err);

/* A byte range [off, off + len) of some buffer. */
typedef struct tok_span {
    size_t off, len;
} tok_span;
typedef struct tok_spans {
    tok_span *v;
    size_t n, cap;
} tok_spans;
nib_status tok_spans_push(tok_spans *s, size_t off, size_t len, nib_error *err);

/* ---- pre-tokenizer (pretok.c) ---------------------------------------------- */

#define TOK_MAX_REGEX 6

typedef struct tok_pretok_row {
    const char *const *names;           /* tokenizer.ggml.pre values, NULL-terminated */
    const char *regex[TOK_MAX_REGEX];   /* applied in turn, each splitting the pieces of the last */
    bool ignore_merges;                 /* a piece that is itself a token is taken whole */
    bool add_bos;                       /* default when add_bos_token is absent */
} tok_pretok_row;

/* The row for a tokenizer.ggml.pre value; NULL if nib does not know it. */
const tok_pretok_row *tok_pretok_find(const char *name, size_t len);

typedef struct tok_regexes {
    void *code[TOK_MAX_REGEX];  /* pcre2_code_8 *, compiled once at load */
    int n;
} tok_regexes;

/* The code point PCRE2 should read in place of cpt so that it classes it as
 * llama.cpp does (same UTF-8 length; cpt itself almost always). */
uint32_t tok_pretok_stand_in(uint32_t cpt);

nib_status tok_regexes_compile(tok_regexes *r, const tok_pretok_row *row, nib_error *err);
void tok_regexes_free(tok_regexes *r);
/* Splits subject[0..n) (valid UTF-8) as llama.cpp's unicode_regex_split: each
 * regex splits every current piece into its matches and the gaps between them. */
nib_status tok_regexes_split(const tok_regexes *r, const char *subject, size_t n, tok_spans *pieces,
                             nib_error *err);

/* ---- the tokenizer --------------------------------------------------------- */

struct nib_tokenizer {
    tok_kind kind;
    int32_t n_vocab;

    /* (n_vocab) token texts, owned: text[off[i] .. off[i] + len[i]) */
    char *text;
    uint64_t *off;
    uint32_t *len;
    float *scores;     /* (n_vocab) SentencePiece merge priority; 0 when absent */
    uint8_t *attr;     /* (n_vocab) TOK_ATTR_* bits */
    tok_strmap ids;    /* text -> id */
    uint32_t max_token_len;

    /* BPE */
    tok_u64map merges;        /* (left id << 32 | right id) -> (rank << 32 | merged id as u32, or UINT32_MAX) */
    tok_regexes regexes;
    bool ignore_merges;
    int32_t byte_token[256];  /* BPE: the token for a byte's GPT-2 character; SPM: <0xNN> or the byte itself; -1 */

    /* special ids, -1 when absent */
    int32_t bos, eos, eot, eom, unk, sep, pad, mask;
    int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    bool add_bos, add_eos, add_space_prefix;
    uint8_t *eog;             /* (n_vocab + 7) / 8 bits: end of generation */

    /* special-token partition (special.c) */
    int32_t *special;         /* (n_special) CONTROL/USER_DEFINED/UNKNOWN ids, longest text first */
    int32_t n_special;
    tok_u64map trie;          /* (node << 8 | byte) -> child node, over the special texts */
    int32_t *trie_rank;       /* (n_trie_nodes) index into special[] of the text ending here, or -1 */
    int32_t n_trie_nodes;

    /* pieces (detok.c): the bytes each token stands for, special tokens as text */
    char *piece;
    uint64_t *piece_off;
    uint32_t *piece_len;
    uint32_t max_piece_len;
};

/* token text as a pointer and length */
static inline const char *tok_text(const nib_tokenizer *t, int32_t id) { return t->text + t->off[id]; }

nib_status tok_special_build(nib_tokenizer *tok, nib_error *err);

/* A fragment of the input: raw text still to be tokenized (token < 0), or a
 * special token found in it. */
typedef struct tok_frag {
    int32_t token;
    size_t off, len;
} tok_frag;
typedef struct tok_frags {
    tok_frag *v;
    size_t n, cap;
} tok_frags;
nib_status tok_special_partition(const nib_tokenizer *tok, const char *text, size_t len,
                                 bool parse_special, tok_frags *out, nib_error *err);

nib_status tok_bpe_encode(const nib_tokenizer *tok, const char *text, size_t len, tok_ids *out,
                          nib_error *err);
nib_status tok_spm_encode(const nib_tokenizer *tok, const char *text, size_t len, bool prefix_space,
                          tok_ids *out, nib_error *err);

/* GPT-2's bytes_to_unicode: the code point standing for byte b, and back
 * (-1 for a code point that stands for no byte). */
uint32_t tok_byte_to_cpt(uint8_t b);
int tok_cpt_to_byte(uint32_t cpt);

nib_status tok_pieces_build(nib_tokenizer *tok, nib_error *err);

#endif
