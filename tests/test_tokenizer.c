/* Tokenizer tests.
 *
 * Golden: tests/golden/tokenize_<model>.txt hold llama.cpp's ids for a corpus
 * of tricky texts (tools/gen_golden_tokens.py writes them and describes the
 * format); nib must give the same ids for every case, and the same bytes back
 * from token_to_piece. Models come from $NIB_MODELS_DIR (default models/);
 * a missing model is a skip with the reason.
 *
 * Without models: small vocabularies written with nib's own GGUF writer check
 * the algorithms (merge order, byte fallback, special tokens), the streaming
 * detokenizer, and that broken metadata is an error naming the key. */
#define _GNU_SOURCE 1  /* memmem */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nib.h"
#include "test.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tok_utf8.h"

/* ---- helpers ---------------------------------------------------------------- */

static const char *models_dir(void) {
    const char *d = getenv("NIB_MODELS_DIR");
    return d && *d ? d : "models";
}

/* Opens models_dir/name and loads its tokenizer; NULL (and why) if absent. */
static nib_tokenizer *load_model(const char *name, nib_gguf **g, char *why, size_t why_len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", models_dir(), name);
    if (access(path, R_OK) != 0) {
        snprintf(why, why_len, "model %s not found (set NIB_MODELS_DIR; tools/fetch_models.sh)", path);
        return NULL;
    }
    nib_error err;
    *g = nib_gguf_open(path, &err);
    if (!*g) {
        snprintf(why, why_len, "cannot open %s: %s", path, err.msg);
        return NULL;
    }
    nib_tokenizer *tok = nib_tokenizer_load(*g, &err);
    if (!tok) {
        snprintf(why, why_len, "tokenizer of %s failed to load: %s", path, err.msg);
        nib_gguf_close(*g);
        *g = NULL;
    }
    return tok;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Concatenated pieces of ids (special tokens as text) into a malloc'ed buffer. */
static char *pieces_of(const nib_tokenizer *tok, const int32_t *ids, int64_t n, size_t *len) {
    size_t cap = 16, k = 0;
    char *out = malloc(cap);
    for (int64_t i = 0; out && i < n; i++) {
        size_t need = nib_token_to_piece(tok, ids[i], true, NULL, 0);
        if (k + need > cap) {
            while (k + need > cap) cap *= 2;
            char *b = realloc(out, cap);
            if (!b) free(out);
            out = b;
            if (!out) break;
        }
        nib_token_to_piece(tok, ids[i], true, out + k, need);
        k += need;
    }
    *len = k;
    return out;
}

static bool valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        int r = tok_utf8_strict((const unsigned char *)s + i, n - i);
        if (r <= 0) return false;
        i += (size_t)r;
    }
    return true;
}

/* A temporary GGUF file written by the library's writer. */
static char tmp_path[64];
static nib_gguf *write_and_open(nib_gguf_writer *w, nib_error *err) {
    snprintf(tmp_path, sizeof tmp_path, "/tmp/nib_tok_test_XXXXXX");
    int fd = mkstemp(tmp_path);
    if (fd < 0) return NULL;
    close(fd);
    nib_gguf *g = NULL;
    if (nib_gguf_writer_write(w, tmp_path, err) == NIB_OK) g = nib_gguf_open(tmp_path, err);
    unlink(tmp_path);
    nib_gguf_writer_free(w);
    return g;
}

/* ---- golden files ---------------------------------------------------------- */

typedef struct golden_case {
    int number, add_special, parse_special;
    char *text;
    size_t text_len;
    int32_t *ids;
    int64_t n_ids;
    char *piece;
    size_t piece_len;
} golden_case;

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* "-" or hex digits -> bytes; false on bad hex */
static bool unhex(const char *s, char **out, size_t *len) {
    size_t n = strlen(s);
    if (n == 1 && s[0] == '-') n = 0;
    if (n % 2) return false;
    *out = malloc(n / 2 + 1);
    if (!*out) return false;
    for (size_t i = 0; i < n / 2; i++) {
        int a = hexval(s[2 * i]), b = hexval(s[2 * i + 1]);
        if (a < 0 || b < 0) return false;
        (*out)[i] = (char)(a << 4 | b);
    }
    *len = n / 2;
    return true;
}

static bool parse_ids(char *s, int32_t **ids, int64_t *n) {
    size_t cap = 16;
    *n = 0;
    *ids = malloc(cap * sizeof **ids);
    if (!*ids) return false;
    if (!strcmp(s, "-")) return true;
    for (char *t = strtok(s, " "); t; t = strtok(NULL, " ")) {
        if ((size_t)*n == cap) {
            cap *= 2;
            int32_t *b = realloc(*ids, cap * sizeof *b);
            if (!b) return false;
            *ids = b;
        }
        (*ids)[(*n)++] = (int32_t)strtol(t, NULL, 10);
    }
    return true;
}

/* Reads every case of a golden file; returns the count, or -1 with a message. */
static int read_golden(const char *path, golden_case **cases) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t cap = 64;
    int n = 0;
    *cases = calloc(cap, sizeof **cases);
    static char line[1 << 20];
    golden_case c = {0};
    bool ok = *cases != NULL;
    while (ok && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == '#' || !line[0]) continue;
        char *sp = strchr(line, ' ');
        char *val = sp ? sp + 1 : line + strlen(line);
        if (!strncmp(line, "case ", 5)) {
            memset(&c, 0, sizeof c);
            ok = sscanf(val, "%d %d %d", &c.number, &c.add_special, &c.parse_special) == 3;
        } else if (!strncmp(line, "text ", 5)) {
            ok = unhex(val, &c.text, &c.text_len);
        } else if (!strncmp(line, "ids ", 4)) {
            ok = parse_ids(val, &c.ids, &c.n_ids);
        } else if (!strncmp(line, "piece ", 6)) {
            ok = unhex(val, &c.piece, &c.piece_len);
        } else if (!strcmp(line, "end")) {
            if ((size_t)n == cap) {
                cap *= 2;
                golden_case *b = realloc(*cases, cap * sizeof *b);
                if (!b) break;
                *cases = b;
            }
            (*cases)[n++] = c;
            memset(&c, 0, sizeof c);
        }
    }
    fclose(f);
    return ok ? n : -1;
}

static void free_golden(golden_case *cases, int n) {
    for (int i = 0; i < n; i++) {
        free(cases[i].text);
        free(cases[i].ids);
        free(cases[i].piece);
    }
    free(cases);
}

static void print_ids(const char *label, const int32_t *ids, int64_t n) {
    fprintf(stderr, "    %s:", label);
    for (int64_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "%s\n", n > 40 ? " ..." : "");
}

/* Every golden case: same ids as llama.cpp, same bytes back, and decoding
 * plain-text tokenization gives the text back. */
static void check_golden(const char *model_file, const char *short_name) {
    nib_gguf *g = NULL;
    char why[2048];
    nib_tokenizer *tok = load_model(model_file, &g, why, sizeof why);
    if (!tok) {
        if (strstr(why, "not found")) SKIP("%s", why);
        CHECK(0, "%s", why);
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "tests/golden/tokenize_%s.txt", short_name);
    golden_case *cases = NULL;
    int n = read_golden(path, &cases);
    CHECK(n > 0, "cannot read %s (run tools/gen_golden_tokens.py)", path);
    int same_ids = 0, same_pieces = 0, round_trips = 0, plain = 0;
    for (int i = 0; i < n; i++) {
        golden_case *c = &cases[i];
        int32_t *ids = NULL;
        int64_t n_ids = 0;
        nib_error err;
        nib_status st = nib_tokenize(tok, c->text, c->text_len, c->add_special, c->parse_special, &ids, &n_ids, &err);
        CHECK(st == NIB_OK, "case %d: %s", c->number, err.msg);
        if (st != NIB_OK) continue;
        bool same = n_ids == c->n_ids && (n_ids == 0 || !memcmp(ids, c->ids, (size_t)n_ids * sizeof *ids));
        same_ids += same;
        if (!same) {
            CHECK(0, "%s case %d (add_special %d, parse_special %d): ids differ from llama.cpp", short_name, c->number,
                  c->add_special, c->parse_special);
            if (test_cur_failures <= 10) {
                print_ids("llama.cpp", c->ids, c->n_ids);
                print_ids("nib      ", ids, n_ids);
            }
        }
        size_t plen;
        char *p = pieces_of(tok, ids, n_ids, &plen);
        if (same) {
            bool sp = p && plen == c->piece_len && !memcmp(p, c->piece, plen);
            same_pieces += sp;
            CHECK(sp, "%s case %d: token_to_piece bytes differ from llama.cpp", short_name, c->number);
        }
        /* both vocabularies cover every byte (GPT-2 bytes; <0xNN>), so plain
         * text comes back as it went in; except what llama.cpp also changes:
         * invalid UTF-8 (BPE reads it as U+FFFD) and '▁' (SentencePiece's space) */
        if (!c->add_special && !c->parse_special && valid_utf8(c->text, c->text_len) &&
            !memmem(c->text, c->text_len, "\xe2\x96\x81", 3)) {
            plain++;
            bool rt = p && plen == c->text_len && !memcmp(p, c->text, plen);
            round_trips += rt;
            CHECK(rt, "%s case %d: decode(tokenize(text)) != text", short_name, c->number);
        }
        free(p);
        free(ids);
    }
    printf("      %s: %d/%d cases with llama.cpp's ids, %d/%d with its pieces, %d/%d plain texts round-trip\n",
           short_name, same_ids, n, same_pieces, same_ids, round_trips, plain);
    free_golden(cases, n > 0 ? n : 0);
    nib_tokenizer_free(tok);
    nib_gguf_close(g);
}

static void test_golden_smollm2(void) { check_golden("SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2"); }
static void test_golden_gemma3(void) { check_golden("gemma-3-270m-q4_k_m.gguf", "gemma3"); }

/* ---- facts about the two models ---------------------------------------------- */

static void test_model_facts(void) {
    nib_gguf *g = NULL;
    char why[2048];
    nib_tokenizer *tok = load_model("SmolLM2-135M-Instruct.Q4_1.gguf", &g, why, sizeof why);
    if (!tok) SKIP("%s", why);
    CHECK(nib_tokenizer_n_vocab(tok) == 49152, "smollm2 vocab %d", nib_tokenizer_n_vocab(tok));
    CHECK(nib_tokenizer_bos(tok) == 1 && nib_tokenizer_eos(tok) == 2, "smollm2 bos/eos");
    CHECK(!nib_tokenizer_adds_bos(tok), "smollm2 adds no BOS (add_bos_token false)");
    int32_t im_end = nib_tokenizer_find(tok, "<|im_end|>"), eot = nib_tokenizer_find(tok, "<|endoftext|>");
    CHECK(im_end == 2 && eot == 0, "smollm2 find: %d %d", im_end, eot);
    CHECK(nib_tokenizer_is_eog(tok, im_end) && nib_tokenizer_is_eog(tok, eot), "smollm2 EOG");
    CHECK(!nib_tokenizer_is_eog(tok, nib_tokenizer_find(tok, "<|im_start|>")), "<|im_start|> is not EOG");
    CHECK(!nib_tokenizer_is_eog(tok, nib_tokenizer_find(tok, "Hello")), "Hello is not EOG");
    CHECK(nib_tokenizer_find(tok, "no such token text") == -1, "find of a missing text");
    nib_tokenizer_free(tok);
    nib_gguf_close(g);

    tok = load_model("gemma-3-270m-q4_k_m.gguf", &g, why, sizeof why);
    if (!tok) SKIP("%s", why);
    CHECK(nib_tokenizer_n_vocab(tok) == 262144, "gemma3 vocab");
    CHECK(nib_tokenizer_adds_bos(tok) && nib_tokenizer_bos(tok) == 2, "gemma3 adds BOS 2");
    int32_t eot_g = nib_tokenizer_find(tok, "<end_of_turn>");
    CHECK(eot_g >= 0 && nib_tokenizer_is_eog(tok, eot_g), "<end_of_turn> is EOG");
    CHECK(nib_tokenizer_is_eog(tok, nib_tokenizer_eos(tok)), "<eos> is EOG");
    CHECK(!nib_tokenizer_is_eog(tok, nib_tokenizer_bos(tok)), "<bos> is not EOG");
    char buf[64];
    CHECK(nib_token_to_piece(tok, 2, false, buf, sizeof buf) == 0, "control token renders empty without special");
    size_t k = nib_token_to_piece(tok, 2, true, buf, sizeof buf);
    CHECK(k == 5 && !memcmp(buf, "<bos>", 5), "control token renders as text with special");
    nib_tokenizer_free(tok);
    nib_gguf_close(g);
}

/* ---- speed: long runs must not go quadratic ---------------------------------- */

static void time_one(const nib_tokenizer *tok, const char *label, const char *text, size_t len) {
    int32_t *ids = NULL;
    int64_t n = 0;
    nib_error err;
    double t0 = now_s();
    nib_status st = nib_tokenize(tok, text, len, true, true, &ids, &n, &err);
    double dt = now_s() - t0;
    CHECK(st == NIB_OK && n > 0, "%s: %s", label, err.msg);
    /* 200 KB in well under a second at O(n log n); a quadratic loop takes minutes */
    CHECK(dt < 2.0, "%s: %zu bytes took %.2f s", label, len, dt);
    size_t plen;
    char *p = pieces_of(tok, ids, n, &plen);
    CHECK(p && plen >= len, "%s: decode", label);
    free(p);
    free(ids);
}

static void test_long_inputs_are_fast(void) {
    static const char *const models[] = {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"};
    size_t len = 200000;
    char *s = malloc(len);
    if (!s) SKIP("out of memory");
    int loaded = 0;
    char why[2048] = "";
    for (size_t m = 0; m < 2; m++) {
        nib_gguf *g = NULL;
        nib_tokenizer *tok = load_model(models[m], &g, why, sizeof why);
        if (!tok) continue;
        loaded++;
        memset(s, '7', len);
        time_one(tok, "digits", s, len);
        memset(s, ' ', len);
        time_one(tok, "spaces", s, len);
        memset(s, 'a', len);
        time_one(tok, "letters", s, len);
        memset(s, '\n', len);
        time_one(tok, "newlines", s, len);
        for (size_t i = 0; i < len; i++) s[i] = "<|im_start|><start_of_turn> x"[i % 29];
        time_one(tok, "special-token text", s, len);
        nib_tokenizer_free(tok);
        nib_gguf_close(g);
    }
    free(s);
    if (!loaded) SKIP("%s", why);
}

/* ---- streaming detokenizer ----------------------------------------------------- */

/* Feeds ids one by one: every output is valid UTF-8, the whole equals the
 * decoded text, and returns how many pushes held bytes back. */
static int stream_check(const nib_tokenizer *tok, const int32_t *ids, int64_t n, const char *want, size_t want_len) {
    nib_detok d = {0};
    char out[4096], all[8192];
    size_t total = 0;
    int held = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t k = nib_detok_push(&d, tok, ids[i], false, out, sizeof out);
        CHECK(k <= sizeof out && valid_utf8(out, k), "push %lld gave invalid UTF-8", (long long)i);
        if (d.n_pending) held++;
        if (total + k <= sizeof all) memcpy(all + total, out, k);
        total += k;
    }
    size_t k = nib_detok_flush(&d, out, sizeof out);
    CHECK(k == 0, "nothing left at the end of valid text");
    CHECK(total == want_len && !memcmp(all, want, want_len), "streamed text differs");
    return held;
}

static void test_detok_stream_models(void) {
    /* characters that byte-level BPE (and Gemma's byte fallback) split */
    static const char text[] = "\xf0\x9f\xa6\x9c \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9 "
                               "\xe1\x9a\xa0\xe1\x9b\x87 \xea\xb0\x80 \xf0\x9d\x94\x84";
    static const char *const models[] = {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"};
    int loaded = 0;
    char why[2048] = "";
    for (size_t m = 0; m < 2; m++) {
        nib_gguf *g = NULL;
        nib_tokenizer *tok = load_model(models[m], &g, why, sizeof why);
        if (!tok) continue;
        loaded++;
        int32_t *ids;
        int64_t n;
        nib_error err;
        CHECK(nib_tokenize(tok, text, sizeof text - 1, false, false, &ids, &n, &err) == NIB_OK, "%s", err.msg);
        int held = stream_check(tok, ids, n, text, sizeof text - 1);
        CHECK(held > 0, "%s: no character was split across tokens; the test proves nothing", models[m]);
        free(ids);
        nib_tokenizer_free(tok);
        nib_gguf_close(g);
    }
    if (!loaded) SKIP("%s", why);
}

/* ---- small vocabularies made with the writer ------------------------------------ */

typedef struct vocab_spec {
    const char *model;            /* tokenizer.ggml.model */
    const char *pre;              /* NULL: no key */
    const char *const *tokens;
    uint64_t n_tokens;
    const float *scores;          /* NULL: no key */
    uint64_t n_scores;
    const int32_t *types;         /* NULL: no key */
    uint64_t n_types;
    const char *const *merges;    /* NULL: no key */
    uint64_t n_merges;
    int64_t bos, eos, unk;        /* -1: no key */
    int add_bos;                  /* -1: no key */
    int add_space_prefix;         /* -1: no key */
} vocab_spec;

static nib_gguf_writer *spec_writer(const vocab_spec *v, nib_error *err) {
    nib_gguf_writer *w = nib_gguf_writer_new();
    if (!w) return NULL;
    if (v->model) nib_gguf_writer_add_str(w, "tokenizer.ggml.model", v->model, err);
    if (v->pre) nib_gguf_writer_add_str(w, "tokenizer.ggml.pre", v->pre, err);
    if (v->tokens) nib_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", v->tokens, v->n_tokens, err);
    if (v->scores) nib_gguf_writer_add_array(w, "tokenizer.ggml.scores", NIB_GGUF_FLOAT32, v->scores, v->n_scores, err);
    if (v->types) nib_gguf_writer_add_array(w, "tokenizer.ggml.token_type", NIB_GGUF_INT32, v->types, v->n_types, err);
    if (v->merges) nib_gguf_writer_add_str_array(w, "tokenizer.ggml.merges", v->merges, v->n_merges, err);
    if (v->bos >= 0) nib_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos, err);
    if (v->eos >= 0) nib_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos, err);
    if (v->unk >= 0) nib_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)v->unk, err);
    if (v->add_bos >= 0) nib_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos, err);
    if (v->add_space_prefix >= 0) nib_gguf_writer_add_bool(w, "tokenizer.ggml.add_space_prefix", v->add_space_prefix, err);
    return w;
}

/* Loads the vocabulary; on failure err says why. Caller closes *g. */
static nib_tokenizer *load_spec(const vocab_spec *v, nib_gguf **g, nib_error *err) {
    nib_gguf_writer *w = spec_writer(v, err);
    *g = w ? write_and_open(w, err) : NULL;
    return *g ? nib_tokenizer_load(*g, err) : NULL;
}

/* A byte-level BPE vocabulary: 256 byte characters, then merged tokens. */
#define BPE_BASE 256
static char bpe_byte_chars[256][4];
static const char *bpe_tokens[BPE_BASE + 8];

static uint64_t bpe_vocab(void) {
    /* GPT-2's bytes_to_unicode, written out independently of the library */
    int n = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        unsigned c = printable ? (unsigned)b : 256u + (unsigned)n++;
        char *o = bpe_byte_chars[b];
        if (c < 0x80) o[0] = (char)c, o[1] = 0;
        else o[0] = (char)(0xC0 | (c >> 6)), o[1] = (char)(0x80 | (c & 0x3F)), o[2] = 0;
        bpe_tokens[b] = o;
    }
    static const char *const extra[] = {"ab", "abc", "bc", ("\xc4\xa0" "a"), "<|end|>", "aa", "aaaa"};
    for (int i = 0; i < 7; i++) bpe_tokens[BPE_BASE + i] = extra[i];
    return BPE_BASE + 7;
}

static void test_bpe_small(void) {
    uint64_t n = bpe_vocab();
    int32_t types[BPE_BASE + 8];
    for (uint64_t i = 0; i < n; i++) types[i] = 1;
    types[BPE_BASE + 4] = 3;  /* <|end|> control */
    /* rank order: "b c" before "a b", so "abc" is a + bc, never ab + c -> no "abc" */
    static const char *const merges[] = {"b c", "a b", "a bc", "\xc4\xa0 a", "a a", "aa aa"};
    vocab_spec v = {"gpt2", "gpt-2", bpe_tokens, n, NULL, 0, types, n, merges, 6, -1, BPE_BASE + 4, -1, -1, -1};
    nib_gguf *g;
    nib_error err;
    nib_tokenizer *tok = load_spec(&v, &g, &err);
    CHECK(tok, "small BPE vocabulary: %s", err.msg);
    if (!tok) {
        nib_gguf_close(g);
        return;
    }
    struct {
        const char *text;
        int32_t want[8];
        int n;
    } cases[] = {
        {"abc", {BPE_BASE + 1}, 1},                       /* b c, then a bc */
        {"ab", {BPE_BASE + 0}, 1},
        {" a", {BPE_BASE + 3}, 1},                        /* GPT-2 space character merges with a */
        {"aaaaa", {BPE_BASE + 6, 'a'}, 2},                /* leftmost on equal rank */
        {"x<|end|>y", {'x', BPE_BASE + 4, 'y'}, 3},       /* control text parsed */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t *ids;
        int64_t k;
        CHECK(nib_tokenize(tok, cases[i].text, strlen(cases[i].text), true, true, &ids, &k, &err) == NIB_OK, "%s", err.msg);
        bool same = k == cases[i].n && !memcmp(ids, cases[i].want, (size_t)k * sizeof *ids);
        CHECK(same, "BPE '%s': got %lld ids, first %d", cases[i].text, (long long)k, k ? ids[0] : -1);
        free(ids);
    }
    int32_t *ids;
    int64_t k;
    nib_tokenize(tok, "x<|end|>y", 9, true, false, &ids, &k, &err);
    CHECK(k == 9, "unparsed control text is plain bytes (%lld ids)", (long long)k);
    free(ids);
    CHECK(nib_tokenizer_is_eog(tok, BPE_BASE + 4), "<|end|> (eos) is EOG");
    nib_tokenizer_free(tok);
    nib_gguf_close(g);
}

static const char *const spm_tokens[] = {
    "<unk>", "<s>", "</s>", "\xe2\x96\x81", "a", "b", "\xe2\x96\x81" "a", "ab", "\xe2\x96\x81" "ab", "<0xC3>", "<0xA9>",
    "<0xE2>", "<0x82>", "<0xAC>", "<0xFF>", "<user>",
};
static const float spm_scores[] = {0, 0, 0, -1, -2, -2, -1.5f, -3, -0.5f, 0, 0, 0, 0, 0, 0, 0};
static const int32_t spm_types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 6, 6, 6, 6, 6, 6, 4};

static void test_spm_small(void) {
    vocab_spec v = {"llama", NULL, spm_tokens, 16, spm_scores, 16, spm_types, 16, NULL, 0, 1, 2, 0, -1, -1};
    nib_gguf *g;
    nib_error err;
    nib_tokenizer *tok = load_spec(&v, &g, &err);
    CHECK(tok, "small SPM vocabulary: %s", err.msg);
    if (!tok) {
        nib_gguf_close(g);
        return;
    }
    CHECK(nib_tokenizer_adds_bos(tok), "SentencePiece adds BOS by default");
    struct {
        const char *text;
        int32_t want[8];
        int n;
    } cases[] = {
        /* default add_space_prefix: "ab" is "▁ab"; best score merges first */
        {"ab", {1, 8}, 2},
        {"a b", {1, 6, 3, 5}, 4},
        /* é is not a token: <0xC3><0xA9> by byte fallback */
        {"\xc3\xa9", {1, 3, 9, 10}, 4},
        /* a special token in the middle: the prefix space comes back after it */
        {"a<user>a", {1, 6, 15, 6}, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t *ids;
        int64_t k;
        CHECK(nib_tokenize(tok, cases[i].text, strlen(cases[i].text), true, true, &ids, &k, &err) == NIB_OK, "%s", err.msg);
        bool same = k == cases[i].n && !memcmp(ids, cases[i].want, (size_t)k * sizeof *ids);
        CHECK(same, "SPM '%s': got %lld ids:%s%d %d %d %d", cases[i].text, (long long)k, "", k > 0 ? ids[0] : -1,
              k > 1 ? ids[1] : -1, k > 2 ? ids[2] : -1, k > 3 ? ids[3] : -1);
        free(ids);
    }

    /* streaming: "€" arrives as three byte tokens; nothing comes out until the third */
    nib_detok d = {0};
    char out[16];
    CHECK(nib_detok_push(&d, tok, 11, false, out, sizeof out) == 0, "E2 held");
    CHECK(nib_detok_push(&d, tok, 12, false, out, sizeof out) == 0, "82 held");
    size_t k = nib_detok_push(&d, tok, 13, false, out, sizeof out);
    CHECK(k == 3 && !memcmp(out, "\xe2\x82\xac", 3), "euro sign whole on the third byte");
    /* a control token between is nothing; a byte that can never be UTF-8 is U+FFFD */
    CHECK(nib_detok_push(&d, tok, 1, false, out, sizeof out) == 0, "control token renders empty");
    k = nib_detok_push(&d, tok, 14, false, out, sizeof out);
    CHECK(k == 3 && !memcmp(out, "\xef\xbf\xbd", 3), "0xFF becomes U+FFFD");
    /* an interrupted character: U+FFFD, then what interrupted it */
    nib_detok_push(&d, tok, 11, false, out, sizeof out);
    k = nib_detok_push(&d, tok, 4, false, out, sizeof out);
    CHECK(k == 4 && !memcmp(out, "\xef\xbf\xbd" "a", 4), "E2 then 'a' gives U+FFFD a");
    nib_detok_push(&d, tok, 11, false, out, sizeof out);
    nib_detok_push(&d, tok, 12, false, out, sizeof out);
    k = nib_detok_flush(&d, out, sizeof out);
    CHECK(k == 3 && !memcmp(out, "\xef\xbf\xbd", 3) && d.n_pending == 0, "flush of a cut character");
    /* '▁' comes back as a space; user-defined text as itself */
    k = nib_token_to_piece(tok, 8, false, out, sizeof out);
    CHECK(k == 3 && !memcmp(out, " ab", 3), "▁ab renders ' ab'");
    k = nib_token_to_piece(tok, 15, false, out, sizeof out);
    CHECK(k == 6 && !memcmp(out, "<user>", 6), "user-defined renders as text");
    CHECK(nib_token_to_piece(tok, 99, true, out, sizeof out) == 0, "an id outside the vocabulary renders empty");

    /* a buffer too small: whole characters or nothing, the count is what was
     * written (it once was the count needed, and a caller trusting it read past
     * its buffer), and what was dropped is counted */
    nib_detok s = {0};
    char small[4] = {'#', '#', '#', '#'};
    nib_detok_push(&s, tok, 11, false, small, 2);
    nib_detok_push(&s, tok, 12, false, small, 2);
    k = nib_detok_push(&s, tok, 13, false, small, 2);
    CHECK(k == 0 && s.n_lost == 3 && small[0] == '#', "a 3-byte character into 2 bytes: %zu written, %llu lost", k,
          (unsigned long long)s.n_lost);
    k = nib_detok_push(&s, tok, 8, false, small, 2);
    CHECK(k == 2 && !memcmp(small, " a", 2) && s.n_lost == 4 && small[2] == '#', "' ab' into 2 bytes: ' a' kept, 'b' lost");
    nib_detok_push(&s, tok, 11, false, small, 2);
    k = nib_detok_flush(&s, small, 2);
    CHECK(k == 0 && s.n_lost == 7 && s.n_pending == 0, "flush into 2 bytes: nothing written, U+FFFD lost");
    nib_tokenizer_free(tok);
    nib_gguf_close(g);
}

/* Special texts are cut longest first, as llama.cpp does: "abcd" with "bcd"
 * and "ab" both special gives a + <bcd>, though "ab" comes first in the text. */
static void test_special_longest_first(void) {
    static const char *const tokens[] = {"<unk>", "<s>", "</s>", "bcd", "ab", "\xe2\x96\x81", "a", "b", "c", "d"};
    static const int32_t types[] = {2, 3, 3, 3, 3, 1, 1, 1, 1, 1};
    vocab_spec v = {"llama", NULL, tokens, 10, NULL, 0, types, 10, NULL, 0, 1, 2, 0, 0, 0};
    nib_gguf *g;
    nib_error err;
    nib_tokenizer *tok = load_spec(&v, &g, &err);
    CHECK(tok, "vocabulary: %s", err.msg);
    if (!tok) {
        nib_gguf_close(g);
        return;
    }
    int32_t *ids;
    int64_t n;
    CHECK(nib_tokenize(tok, "abcd", 4, true, true, &ids, &n, &err) == NIB_OK, "%s", err.msg);
    CHECK(n == 2 && ids[0] == 6 && ids[1] == 3, "abcd -> a <bcd>: got %lld ids, %d %d", (long long)n, ids[0], n > 1 ? ids[1] : -1);
    free(ids);
    CHECK(nib_tokenize(tok, "xbcdbcd", 7, true, true, &ids, &n, &err) == NIB_OK, "%s", err.msg);
    CHECK(n == 3 && ids[1] == 3 && ids[2] == 3, "every occurrence is cut");
    free(ids);
    CHECK(nib_tokenize(tok, "", 0, true, true, &ids, &n, &err) == NIB_OK && ids && n == 0, "empty text: no ids, not NULL");
    free(ids);
    nib_tokenizer_free(tok);
    nib_gguf_close(g);
}

/* ---- broken metadata: an error that names the key, never a crash ----------------- */

static void expect_error(const vocab_spec *v, const char *want, const char *label) {
    nib_gguf *g = NULL;
    nib_error err = {0};
    nib_tokenizer *tok = load_spec(v, &g, &err);
    CHECK(!tok, "%s: loaded, expected an error", label);
    CHECK(!tok && strstr(err.msg, want), "%s: message '%s' does not name '%s'", label, err.msg, want);
    nib_tokenizer_free(tok);
    nib_gguf_close(g);
}

static void test_broken_vocab(void) {
    vocab_spec good = {"llama", NULL, spm_tokens, 16, spm_scores, 16, spm_types, 16, NULL, 0, 1, 2, 0, -1, -1};
    vocab_spec v;

    v = good, v.model = NULL;
    expect_error(&v, "tokenizer.ggml.model", "no model key");
    v = good, v.model = "bert";
    expect_error(&v, "tokenizer.ggml.model", "unsupported model");
    v = good, v.tokens = NULL;
    expect_error(&v, "tokenizer.ggml.tokens", "no tokens");
    v = good, v.n_scores = 15;
    expect_error(&v, "tokenizer.ggml.scores", "scores shorter than tokens");
    v = good, v.n_types = 3;
    expect_error(&v, "tokenizer.ggml.token_type", "token types shorter than tokens");
    static const int32_t bad_types[] = {2, 3, 3, 1, 1, 9, 1, 1, 1, 6, 6, 6, 6, 6, 6, 4};
    v = good, v.types = bad_types;
    expect_error(&v, "tokenizer.ggml.token_type[5]", "token type out of range");
    static const int32_t byte_types[] = {2, 3, 3, 1, 1, 6, 1, 1, 1, 6, 6, 6, 6, 6, 6, 4};
    v = good, v.types = byte_types;
    expect_error(&v, "tokenizer.ggml.tokens[5]", "byte token not spelled <0xNN>");
    v = good, v.bos = 16;
    expect_error(&v, "tokenizer.ggml.bos_token_id", "BOS outside the vocabulary");
    v = good, v.eos = 1000000;
    expect_error(&v, "tokenizer.ggml.eos_token_id", "EOS outside the vocabulary");
    v = good, v.unk = 16;
    expect_error(&v, "tokenizer.ggml.unknown_token_id", "UNK outside the vocabulary");
    static const char *const dup_tokens[] = {"<unk>", "<s>", "</s>", "a", "a"};
    v = good, v.tokens = dup_tokens, v.n_tokens = 5, v.scores = NULL, v.types = NULL;
    expect_error(&v, "repeats", "duplicate token text");

    uint64_t n = bpe_vocab();
    vocab_spec bpe = {"gpt2", "gpt-2", bpe_tokens, n, NULL, 0, NULL, 0, NULL, 0, -1, -1, -1, -1, -1};
    expect_error(&bpe, "tokenizer.ggml.merges", "BPE without merges");
    static const char *const bad_merges[] = {"a b", "a zz"};
    v = bpe, v.merges = bad_merges, v.n_merges = 2;
    expect_error(&v, "tokenizer.ggml.merges[1]", "merge of a text that is not a token");
    static const char *const no_space[] = {"ab"};
    v = bpe, v.merges = no_space, v.n_merges = 1;
    expect_error(&v, "tokenizer.ggml.merges[0]", "merge without a space");
    static const char *const ok_merges[] = {"a b"};
    v = bpe, v.merges = ok_merges, v.n_merges = 1, v.pre = "no-such-pre";
    expect_error(&v, "tokenizer.ggml.pre", "unknown pre-tokenizer");

    /* wrong value types */
    nib_error err;
    int32_t not_strings[3] = {1, 2, 3};
    nib_gguf_writer *w = nib_gguf_writer_new();
    nib_gguf_writer_add_str(w, "tokenizer.ggml.model", "llama", &err);
    nib_gguf_writer_add_array(w, "tokenizer.ggml.tokens", NIB_GGUF_INT32, not_strings, 3, &err);
    nib_gguf *g = write_and_open(w, &err);
    nib_tokenizer *tok = g ? nib_tokenizer_load(g, &err) : NULL;
    CHECK(g && !tok && strstr(err.msg, "tokenizer.ggml.tokens"), "tokens of int32: '%s'", err.msg);
    nib_gguf_close(g);

    w = spec_writer(&good, &err);
    nib_gguf_writer_add_str(w, "tokenizer.ggml.eot_token_id", "seven", &err);
    g = write_and_open(w, &err);
    tok = g ? nib_tokenizer_load(g, &err) : NULL;
    CHECK(g && !tok && strstr(err.msg, "tokenizer.ggml.eot_token_id"), "id as a string: '%s'", err.msg);
    nib_gguf_close(g);

    v = good, v.types = NULL;
    w = spec_writer(&v, &err);
    float ftypes[16] = {0};
    nib_gguf_writer_add_array(w, "tokenizer.ggml.token_type", NIB_GGUF_FLOAT32, ftypes, 16, &err);
    g = write_and_open(w, &err);
    tok = g ? nib_tokenizer_load(g, &err) : NULL;
    CHECK(g && !tok && strstr(err.msg, "tokenizer.ggml.token_type"), "token types of float: '%s'", err.msg);
    nib_gguf_close(g);

    CHECK(nib_tokenizer_load(NULL, &err) == NULL, "no file");
}

int main(void) {
    RUN(test_bpe_small);
    RUN(test_spm_small);
    RUN(test_special_longest_first);
    RUN(test_broken_vocab);
    RUN(test_model_facts);
    RUN(test_golden_smollm2);
    RUN(test_golden_gemma3);
    RUN(test_detok_stream_models);
    RUN(test_long_inputs_are_fast);
    return test_summary();
}
