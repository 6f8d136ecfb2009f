/* Loading a tokenizer from GGUF metadata (llama.cpp: llama_vocab::impl::load).
 *
 * Everything read is checked: array element types and lengths, token types,
 * special ids inside the vocabulary, merges whose halves are tokens, byte
 * tokens spelled <0xNN>. An error names the key (and index) at fault. Where
 * llama.cpp only warns (a special id out of range, a merge of unknown text),
 * nib refuses the file: a vocabulary like that was written by a broken
 * converter, and tokens from it would be wrong in quiet ways. */
#define _GNU_SOURCE 1  /* memmem */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_PRE "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"

/* tokenizer.ggml.token_type values (gguf-py's TokenType; file format) -> attributes */
static const uint8_t token_type_attr[] = {
    0,                      /* 0 undefined */
    TOK_ATTR_NORMAL,        /* 1 normal */
    TOK_ATTR_UNKNOWN,       /* 2 unknown */
    TOK_ATTR_CONTROL,       /* 3 control */
    TOK_ATTR_USER_DEFINED,  /* 4 user defined */
    TOK_ATTR_UNUSED,        /* 5 unused */
    TOK_ATTR_BYTE,          /* 6 byte */
};

/* Special-token id keys, in llama.cpp's order (a later key for the same slot wins). */
static const struct {
    const char *key;
    size_t slot;  /* offsetof(nib_tokenizer, <id>) */
} id_keys[] = {
    {"tokenizer.ggml.bos_token_id", offsetof(nib_tokenizer, bos)},
    {"tokenizer.ggml.eos_token_id", offsetof(nib_tokenizer, eos)},
    {"tokenizer.ggml.eot_token_id", offsetof(nib_tokenizer, eot)},
    {"tokenizer.ggml.eom_token_id", offsetof(nib_tokenizer, eom)},
    {"tokenizer.ggml.unknown_token_id", offsetof(nib_tokenizer, unk)},
    {"tokenizer.ggml.seperator_token_id", offsetof(nib_tokenizer, sep)},  /* sic: the GGUF key's spelling */
    {"tokenizer.ggml.padding_token_id", offsetof(nib_tokenizer, pad)},
    {"tokenizer.ggml.mask_token_id", offsetof(nib_tokenizer, mask)},
    {"tokenizer.ggml.fim_pre_token_id", offsetof(nib_tokenizer, fim_pre)},
    {"tokenizer.ggml.fim_suf_token_id", offsetof(nib_tokenizer, fim_suf)},
    {"tokenizer.ggml.fim_mid_token_id", offsetof(nib_tokenizer, fim_mid)},
    {"tokenizer.ggml.fim_pad_token_id", offsetof(nib_tokenizer, fim_pad)},
    {"tokenizer.ggml.fim_rep_token_id", offsetof(nib_tokenizer, fim_rep)},
    {"tokenizer.ggml.fim_sep_token_id", offsetof(nib_tokenizer, fim_sep)},
    {"tokenizer.ggml.prefix_token_id", offsetof(nib_tokenizer, fim_pre)},
    {"tokenizer.ggml.suffix_token_id", offsetof(nib_tokenizer, fim_suf)},
    {"tokenizer.ggml.middle_token_id", offsetof(nib_tokenizer, fim_mid)},
};

/* Roles found by token text when no key names them (llama.cpp's lists); the
 * token found is forced to CONTROL, as there. */
static const char *const eot_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                        "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                        "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                        "<end_of_utterance>", NULL};
static const char *const eom_names[] = {"<|eom_id|>", NULL};
static const char *const fim_pre_names[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                            "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>",
                                            "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
static const char *const fim_suf_names[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                            "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>", "<SUF>",
                                            "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
static const char *const fim_mid_names[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                            "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>",
                                            "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL};
static const char *const fim_pad_names[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const fim_rep_names[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL};
static const char *const fim_sep_names[] = {"<|file_sep|>", NULL};

static const struct {
    size_t slot;
    const char *const *names;
} role_names[] = {
    {offsetof(nib_tokenizer, eot), eot_names},         {offsetof(nib_tokenizer, eom), eom_names},
    {offsetof(nib_tokenizer, fim_pre), fim_pre_names}, {offsetof(nib_tokenizer, fim_suf), fim_suf_names},
    {offsetof(nib_tokenizer, fim_mid), fim_mid_names}, {offsetof(nib_tokenizer, fim_pad), fim_pad_names},
    {offsetof(nib_tokenizer, fim_rep), fim_rep_names}, {offsetof(nib_tokenizer, fim_sep), fim_sep_names},
};

/* Texts that end generation whatever their role (llama.cpp's EOG list). */
static const char *const eog_names[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[", NULL};

/* gpt-oss's harmony markers are plain user-defined text, whatever the file says */
static const char *const user_defined_names[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};

static int32_t *slot_of(nib_tokenizer *t, size_t off) { return (int32_t *)((char *)t + off); }

static int32_t find_name(const nib_tokenizer *t, const char *s) { return tok_strmap_find(&t->ids, s, strlen(s)); }

static void eog_set(nib_tokenizer *t, int32_t id, bool on) {
    if (id < 0 || id >= t->n_vocab) return;
    if (on) t->eog[id >> 3] |= (uint8_t)(1u << (id & 7));
    else t->eog[id >> 3] &= (uint8_t)~(1u << (id & 7));
}

nib_status tok_ids_push(tok_ids *ids, int32_t id, nib_error *err) {
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof *ids->v) return nib_error_set(err, NIB_ERR_NOMEM, "too many tokens");
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for %zu tokens", cap);
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return NIB_OK;
}

nib_status tok_spans_push(tok_spans *s, size_t off, size_t len, nib_error *err) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof *s->v) return nib_error_set(err, NIB_ERR_NOMEM, "too many pieces");
        tok_span *v = realloc(s->v, cap * sizeof *v);
        if (!v) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for %zu pieces", cap);
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (tok_span){off, len};
    return NIB_OK;
}

/* An optional bool key: absent leaves *out alone; another type is an error. */
static nib_status get_opt_bool(const nib_gguf *g, const char *key, bool *out, nib_error *err) {
    nib_status s = nib_gguf_get_bool(g, key, out, err);
    return s == NIB_ERR_NOT_FOUND ? NIB_OK : s;
}

/* Token texts into one owned buffer; an empty text becomes "[EMPTY_<i>]" as in llama.cpp. */
static nib_status load_tokens(nib_tokenizer *t, const nib_gguf *g, nib_error *err) {
    uint64_t n;
    const nib_str *strs;
    nib_status s = nib_gguf_get_str_array(g, KEY_TOKENS, &n, &strs, err);
    if (s) return s;
    if (n == 0) return nib_error_set(err, NIB_ERR_FORMAT, "%s is empty", KEY_TOKENS);
    if (n > INT32_MAX) return nib_error_set(err, NIB_ERR_FORMAT, "%s has %llu tokens, more than ids can hold", KEY_TOKENS, (unsigned long long)n);
    t->n_vocab = (int32_t)n;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (strs[i].len > UINT32_MAX / 2)
            return nib_error_set(err, NIB_ERR_FORMAT, "%s[%llu] is %llu bytes long", KEY_TOKENS, (unsigned long long)i, (unsigned long long)strs[i].len);
        total += strs[i].len ? strs[i].len : 32;  /* room for "[EMPTY_<i>]"; the file's bytes bound the sum */
    }
    t->text = malloc(total ? (size_t)total : 1);
    t->off = malloc((size_t)n * sizeof *t->off);
    t->len = malloc((size_t)n * sizeof *t->len);
    t->scores = calloc((size_t)n, sizeof *t->scores);
    t->attr = malloc((size_t)n);
    if (!t->text || !t->off || !t->len || !t->scores || !t->attr)
        return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for %llu tokens", (unsigned long long)n);
    uint64_t pos = 0;
    for (uint64_t i = 0; i < n; i++) {
        t->off[i] = pos;
        if (strs[i].len) {
            memcpy(t->text + pos, strs[i].ptr, (size_t)strs[i].len);
            t->len[i] = (uint32_t)strs[i].len;
        } else {
            t->len[i] = (uint32_t)snprintf(t->text + pos, 32, "[EMPTY_%llu]", (unsigned long long)i);
        }
        pos += t->len[i];
        if (t->len[i] > t->max_token_len) t->max_token_len = t->len[i];
        t->attr[i] = TOK_ATTR_NORMAL;
    }
    if (!tok_strmap_init(&t->ids, n, t->text, t->off, t->len))
        return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for the token index");
    for (int32_t i = 0; i < t->n_vocab; i++) {
        int32_t prev = tok_strmap_insert(&t->ids, i);
        /* llama.cpp asserts on this; two ids for one text make encoding ambiguous */
        if (prev >= 0)
            return nib_error_set(err, NIB_ERR_FORMAT, "%s[%d] repeats the text of token %d ('%.*s')", KEY_TOKENS, i, prev,
                                 (int)(t->len[i] < 64 ? t->len[i] : 64), tok_text(t, i));
    }
    return NIB_OK;
}

static nib_status load_scores_and_types(nib_tokenizer *t, const nib_gguf *g, nib_error *err) {
    int64_t k = nib_gguf_find_key(g, KEY_SCORES);
    if (k >= 0) {
        const nib_gguf_kv *kv = nib_gguf_kv_at(g, k);
        /* llama.cpp takes float32 or int32 scores */
        if (kv->type != NIB_GGUF_ARRAY || (kv->elem_type != NIB_GGUF_FLOAT32 && kv->elem_type != NIB_GGUF_INT32))
            return nib_error_set(err, NIB_ERR_TYPE, "%s must be an array of float32 (or int32), found %s%s", KEY_SCORES,
                                 kv->type == NIB_GGUF_ARRAY ? "an array of " : "a ",
                                 nib_gguf_vtype_name(kv->type == NIB_GGUF_ARRAY ? kv->elem_type : kv->type));
        if (kv->n < (uint64_t)t->n_vocab)
            return nib_error_set(err, NIB_ERR_FORMAT, "%s has %llu entries for %d tokens", KEY_SCORES,
                                 (unsigned long long)kv->n, t->n_vocab);
        for (int32_t i = 0; i < t->n_vocab; i++) {
            if (kv->elem_type == NIB_GGUF_FLOAT32) {
                memcpy(&t->scores[i], (const char *)kv->data + 4 * (size_t)i, 4);
            } else {
                int32_t v;
                memcpy(&v, (const char *)kv->data + 4 * (size_t)i, 4);
                t->scores[i] = (float)v;
            }
        }
    }
    uint64_t n;
    const void *data;
    nib_status s = nib_gguf_get_array(g, KEY_TYPES, NIB_GGUF_INT32, &n, &data, err);
    if (s == NIB_ERR_NOT_FOUND) return NIB_OK;  /* every token normal, as in llama.cpp */
    if (s) return s;
    if (n < (uint64_t)t->n_vocab)
        return nib_error_set(err, NIB_ERR_FORMAT, "%s has %llu entries for %d tokens", KEY_TYPES, (unsigned long long)n,
                             t->n_vocab);
    for (int32_t i = 0; i < t->n_vocab; i++) {
        int32_t v;
        memcpy(&v, (const char *)data + 4 * (size_t)i, 4);
        if (v < 0 || (size_t)v >= sizeof token_type_attr)
            return nib_error_set(err, NIB_ERR_FORMAT, "%s[%d] = %d is not a token type (0..6)", KEY_TYPES, i, v);
        t->attr[i] = token_type_attr[v];
    }
    return NIB_OK;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Byte tokens must read <0xNN>: decoding takes the byte from those two digits. */
static nib_status check_byte_tokens(const nib_tokenizer *t, nib_error *err) {
    for (int32_t i = 0; i < t->n_vocab; i++) {
        if (!(t->attr[i] & TOK_ATTR_BYTE)) continue;
        const char *s = tok_text(t, i);
        if (t->len[i] != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>' || hex_digit(s[3]) < 0 || hex_digit(s[4]) < 0)
            return nib_error_set(err, NIB_ERR_FORMAT, "%s[%d] is a byte token but reads '%.*s', not <0xNN>", KEY_TOKENS, i,
                                 (int)(t->len[i] < 32 ? t->len[i] : 32), s);
    }
    return NIB_OK;
}

/* Merges "left right" by rank (their index). Each half must be a token; the
 * merged text is looked up once here, so the merge loop works on ids. */
static nib_status load_merges(nib_tokenizer *t, const nib_gguf *g, nib_error *err) {
    uint64_t n;
    const nib_str *strs;
    nib_status s = nib_gguf_get_str_array(g, KEY_MERGES, &n, &strs, err);
    if (s == NIB_ERR_NOT_FOUND) return nib_error_set(err, NIB_ERR_FORMAT, "a gpt2 (BPE) tokenizer needs %s", KEY_MERGES);
    if (s) return s;
    if (n > UINT32_MAX - 1) return nib_error_set(err, NIB_ERR_FORMAT, "%s has too many entries", KEY_MERGES);
    if (!tok_u64map_init(&t->merges, n)) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory for %llu merges", (unsigned long long)n);
    char *cat = malloc((size_t)t->max_token_len * 2 + 1);
    if (!cat) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
        const char *m = strs[i].ptr;
        size_t len = (size_t)strs[i].len;
        /* split at the first space after the first byte (llama.cpp: find(' ', 1)) */
        const char *sp = len > 1 ? memchr(m + 1, ' ', len - 1) : NULL;
        int32_t l = -1, r = -1;
        if (sp) {
            l = tok_strmap_find(&t->ids, m, (size_t)(sp - m));
            r = tok_strmap_find(&t->ids, sp + 1, len - (size_t)(sp - m) - 1);
        }
        if (!sp || l < 0 || r < 0) {
            free(cat);
            return nib_error_set(err, NIB_ERR_FORMAT, "%s[%llu] '%.*s' %s", KEY_MERGES, (unsigned long long)i,
                                 (int)(len < 64 ? len : 64), m,
                                 !sp ? "is not two texts separated by a space" : "names a text that is not a token");
        }
        memcpy(cat, tok_text(t, l), t->len[l]);
        memcpy(cat + t->len[l], tok_text(t, r), t->len[r]);
        int32_t merged = tok_strmap_find(&t->ids, cat, (size_t)t->len[l] + t->len[r]);
        /* a repeated pair keeps its first (lowest) rank, as std::map::emplace */
        tok_u64map_insert(&t->merges, (uint64_t)l << 32 | (uint32_t)r,
                          i << 32 | (merged >= 0 ? (uint32_t)merged : UINT32_MAX));
    }
    free(cat);
    return NIB_OK;
}

static void build_byte_tokens(nib_tokenizer *t) {
    for (int b = 0; b < 256; b++) {
        char buf[8];
        if (t->kind == TOK_KIND_BPE) {
            /* the byte's GPT-2 character */
            uint32_t c = tok_byte_to_cpt((uint8_t)b);
            size_t k = c < 0x80 ? 1 : 2;
            if (k == 1) buf[0] = (char)c;
            else buf[0] = (char)(0xC0 | (c >> 6)), buf[1] = (char)(0x80 | (c & 0x3F));
            t->byte_token[b] = tok_strmap_find(&t->ids, buf, k);
        } else {
            /* llama.cpp's byte_to_token: <0xNN>, else the byte itself */
            snprintf(buf, sizeof buf, "<0x%02X>", b);
            int32_t id = tok_strmap_find(&t->ids, buf, 6);
            if (id < 0) {
                buf[0] = (char)b;
                id = tok_strmap_find(&t->ids, buf, 1);
            }
            t->byte_token[b] = id;
        }
    }
}

static nib_status load_special_ids(nib_tokenizer *t, const nib_gguf *g, nib_error *err) {
    int32_t *all[] = {&t->bos, &t->eos, &t->eot, &t->eom, &t->unk, &t->sep, &t->pad, &t->mask,
                      &t->fim_pre, &t->fim_suf, &t->fim_mid, &t->fim_pad, &t->fim_rep, &t->fim_sep};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) *all[i] = -1;
    /* llama.cpp's defaults when the file names none (BPE's 11 is GPT-2 lore kept there) */
    if (t->kind == TOK_KIND_SPM) t->bos = 1, t->eos = 2, t->unk = 0;
    else t->bos = 11, t->eos = 11;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i] >= t->n_vocab) *all[i] = -1;
    for (size_t i = 0; i < sizeof id_keys / sizeof id_keys[0]; i++) {
        int64_t v;
        nib_status s = nib_gguf_get_int(g, id_keys[i].key, &v, err);
        if (s == NIB_ERR_NOT_FOUND) continue;
        if (s) return s;
        if (v < 0 || v >= t->n_vocab)
            return nib_error_set(err, NIB_ERR_FORMAT, "%s = %lld is outside the vocabulary (%d tokens)", id_keys[i].key,
                                 (long long)v, t->n_vocab);
        *slot_of(t, id_keys[i].slot) = (int32_t)v;
    }
    return NIB_OK;
}

/* Roles by name, the "unused" mark, and the end-of-generation set, in
 * llama.cpp's order (later steps see the attributes earlier ones set). */
static nib_status build_eog(nib_tokenizer *t, nib_error *err) {
    for (size_t r = 0; r < sizeof role_names / sizeof role_names[0]; r++) {
        int32_t *slot = slot_of(t, role_names[r].slot);
        if (*slot >= 0) continue;
        /* llama.cpp takes the first match in hash-map order; nib the lowest id */
        for (const char *const *n = role_names[r].names; *n; n++) {
            int32_t id = find_name(t, *n);
            if (id >= 0 && (*slot < 0 || id < *slot)) *slot = id;
        }
        if (*slot >= 0) t->attr[*slot] |= TOK_ATTR_CONTROL;
    }
    for (int32_t i = 0; i < t->n_vocab; i++)
        if ((t->attr[i] & TOK_ATTR_CONTROL) && memmem(tok_text(t, i), t->len[i], "unused", 6))
            t->attr[i] |= TOK_ATTR_UNUSED;

    t->eog = calloc(((size_t)t->n_vocab + 7) / 8, 1);
    if (!t->eog) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory");
    eog_set(t, t->fim_pad, true);
    eog_set(t, t->fim_rep, true);
    eog_set(t, t->fim_sep, true);
    for (const char *const *n = eog_names; *n; n++) {
        int32_t id = find_name(t, *n);
        if (id < 0) continue;
        eog_set(t, id, true);
        t->attr[id] |= TOK_ATTR_CONTROL;
    }
    for (const char *const *n = user_defined_names; *n; n++) {
        int32_t id = find_name(t, *n);
        if (id >= 0) t->attr[id] = TOK_ATTR_USER_DEFINED;
    }
    eog_set(t, t->eos, true);
    eog_set(t, t->eot, true);
    eog_set(t, t->eom, true);

    /* gpt-oss: with <|return|> and <|call|> (or solar-open's <|calls|> and
     * <|flush|>), <|end|> only ends a message, not the generation */
    int32_t end = find_name(t, "<|end|>");
    bool has_ret = nib_tokenizer_is_eog(t, find_name(t, "<|return|>"));
    bool has_call = nib_tokenizer_is_eog(t, find_name(t, "<|call|>")) || nib_tokenizer_is_eog(t, find_name(t, "<|calls|>"));
    bool has_flush = nib_tokenizer_is_eog(t, find_name(t, "<|flush|>"));
    if (nib_tokenizer_is_eog(t, end) && ((has_ret && has_call) || (has_call && has_flush))) {
        eog_set(t, end, false);
        t->attr[end] = TOK_ATTR_USER_DEFINED;
    }
    /* with <|tool_response> or <|plamo:eos|> ending turns, </s> is plain text */
    int32_t s_end = find_name(t, "</s>");
    bool marker = nib_tokenizer_is_eog(t, find_name(t, "<|tool_response>")) ||
                  nib_tokenizer_is_eog(t, find_name(t, "<|plamo:eos|>"));
    if (marker && nib_tokenizer_is_eog(t, s_end)) {
        eog_set(t, s_end, false);
        t->attr[s_end] = TOK_ATTR_NORMAL;
    }
    return NIB_OK;
}

static nib_status load(nib_tokenizer *t, const nib_gguf *g, nib_error *err) {
    nib_str model, pre = {"default", 7};
    nib_status s = nib_gguf_get_str(g, KEY_MODEL, &model, err);
    if (s) return s;
    if (model.len == 4 && !memcmp(model.ptr, "gpt2", 4)) t->kind = TOK_KIND_BPE;
    else if (model.len == 5 && !memcmp(model.ptr, "llama", 5)) t->kind = TOK_KIND_SPM;
    else return nib_error_set(err, NIB_ERR_UNSUPPORTED, "%s '%.*s' is not supported (gpt2 and llama are)", KEY_MODEL,
                              (int)(model.len < 64 ? model.len : 64), model.ptr);

    const tok_pretok_row *row = NULL;
    if (t->kind == TOK_KIND_BPE) {
        s = nib_gguf_get_str(g, KEY_PRE, &pre, err);
        if (s == NIB_ERR_NOT_FOUND) pre = (nib_str){"default", 7};  /* llama.cpp warns and uses "default" */
        else if (s) return s;
        row = tok_pretok_find(pre.ptr, (size_t)pre.len);
        if (!row)
            return nib_error_set(err, NIB_ERR_UNSUPPORTED, "%s '%.*s' is not a pre-tokenizer nib knows", KEY_PRE,
                                 (int)(pre.len < 64 ? pre.len : 64), pre.ptr);
        t->ignore_merges = row->ignore_merges;
    }

    if ((s = load_tokens(t, g, err))) return s;
    if ((s = load_scores_and_types(t, g, err))) return s;
    if ((s = check_byte_tokens(t, err))) return s;
    if (t->kind == TOK_KIND_BPE && (s = load_merges(t, g, err))) return s;
    build_byte_tokens(t);
    if ((s = load_special_ids(t, g, err))) return s;

    /* defaults by model type, then the file's flags */
    t->add_bos = t->kind == TOK_KIND_SPM || (row && row->add_bos);
    t->add_eos = false;
    t->add_space_prefix = t->kind == TOK_KIND_SPM;
    if ((s = get_opt_bool(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err))) return s;
    if ((s = get_opt_bool(g, "tokenizer.ggml.add_bos_token", &t->add_bos, err))) return s;
    if ((s = get_opt_bool(g, "tokenizer.ggml.add_eos_token", &t->add_eos, err))) return s;
    if (t->add_bos && t->bos < 0)
        return nib_error_set(err, NIB_ERR_FORMAT, "tokenizer.ggml.add_bos_token is set but there is no BOS token");
    if (t->add_eos && t->eos < 0)
        return nib_error_set(err, NIB_ERR_FORMAT, "tokenizer.ggml.add_eos_token is set but there is no EOS token");

    if ((s = build_eog(t, err))) return s;
    if ((s = tok_special_build(t, err))) return s;
    if ((s = tok_pieces_build(t, err))) return s;
    if (t->kind == TOK_KIND_BPE && (s = tok_regexes_compile(&t->regexes, row, err))) return s;
    return NIB_OK;
}

nib_tokenizer *nib_tokenizer_load(const nib_gguf *g, nib_error *err) {
    if (!g) {
        nib_error_set(err, NIB_ERR_ARG, "nib_tokenizer_load: no file");
        return NULL;
    }
    nib_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        nib_error_set(err, NIB_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (load(t, g, err) != NIB_OK) {
        nib_tokenizer_free(t);
        return NULL;
    }
    return t;
}

void nib_tokenizer_free(nib_tokenizer *t) {
    if (!t) return;
    free(t->text);
    free(t->off);
    free(t->len);
    free(t->scores);
    free(t->attr);
    tok_strmap_free(&t->ids);
    tok_u64map_free(&t->merges);
    tok_regexes_free(&t->regexes);
    free(t->eog);
    free(t->special);
    tok_u64map_free(&t->trie);
    free(t->trie_rank);
    free(t->piece);
    free(t->piece_off);
    free(t->piece_len);
    free(t);
}

int32_t nib_tokenizer_n_vocab(const nib_tokenizer *t) { return t->n_vocab; }
int32_t nib_tokenizer_bos(const nib_tokenizer *t) { return t->bos; }
int32_t nib_tokenizer_eos(const nib_tokenizer *t) { return t->eos; }
int32_t nib_tokenizer_eot(const nib_tokenizer *t) { return t->eot; }
int32_t nib_tokenizer_unk(const nib_tokenizer *t) { return t->unk; }
bool nib_tokenizer_adds_bos(const nib_tokenizer *t) { return t->add_bos; }
bool nib_tokenizer_adds_eos(const nib_tokenizer *t) { return t->add_eos; }

bool nib_tokenizer_is_eog(const nib_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && (t->eog[id >> 3] >> (id & 7) & 1);
}

bool nib_tokenizer_is_control(const nib_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && (t->attr[id] & TOK_ATTR_CONTROL);
}

int32_t nib_tokenizer_find(const nib_tokenizer *t, const char *text) {
    return text ? tok_strmap_find(&t->ids, text, strlen(text)) : -1;
}

const char *nib_tokenizer_token_text(const nib_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) return NULL;
    if (len) *len = t->len[id];
    return tok_text(t, id);
}
