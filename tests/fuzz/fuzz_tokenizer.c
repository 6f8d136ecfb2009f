/* Fuzz harness: the tokenizer, encoding and decoding arbitrary bytes
 * (invalid UTF-8 included) on small vocabularies made with nib's GGUF writer
 * (byte-level BPE under three pre-tokenizers, SentencePiece) and on the real
 * models of models/ when present (NIB_FUZZ_MODELS names another folder).
 *
 * Input: a selector byte, then the text. Selector bits 0-2 pick the
 * vocabulary, bit 3 add_special, bit 4 parse_special, bit 5 renders control
 * tokens, bit 6 gives the detokenizer a small output buffer. Checked:
 *   - every id is inside the vocabulary;
 *   - the streaming detokenizer's output is strictly valid UTF-8;
 *   - byte-level BPE loses nothing: decode(encode(text)) == text for valid
 *     UTF-8 text encoded with neither special parsing nor added specials, on
 *     vocabularies with a token for every byte (SmolLM2's lacks 0x04's, and
 *     llama.cpp, like nib, drops a byte it has no token for);
 *   - the text read as raw ids (any int32, out of range included) goes
 *     through nib_detok_push and nib_token_to_piece into exact-size buffers;
 *   - nib_detok_push writes at most its cap, and loses nothing when the
 *     buffer has the documented size. */
#include <unistd.h>

#include "fuzz.h"
#include "tiny_model.h"
#include "tokenizer/tok_internal.h"

#define MAX_VOCABS 8

typedef struct vocab {
    const char *name;
    nib_gguf *g;
    nib_tokenizer *tok;
    bool lossless;  /* byte-level BPE with all 256 byte tokens: every text round-trips */
} vocab;

static vocab vocabs[MAX_VOCABS];
static int n_vocabs;

static bool every_byte_has_a_token(const nib_tokenizer *tok) {
    for (int b = 0; b < 256; b++)
        if (tok->byte_token[b] < 0) return false;
    return true;
}

static const char *pre_name;
static void x_pre(nib_gguf_writer *w) { nib_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre_name, NULL); }

static void add_tiny(const char *name, bool spm, const char *pre) {
    tiny_model t;
    tiny_defaults(&t, spm);
    if (pre) {
        pre_name = pre;
        t.skip_key = "tokenizer.ggml.pre";
        t.extra = x_pre;
    }
    char path[] = "/tmp/nib-fuzz-vocab-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return;
    close(fd);
    nib_error err = {0};
    nib_gguf *g = tiny_write(&t, path, &err) == NIB_OK ? nib_gguf_open(path, &err) : NULL;
    unlink(path);  /* the mapping stays */
    nib_tokenizer *tok = g ? nib_tokenizer_load(g, &err) : NULL;
    if (!tok) {
        fprintf(stderr, "fuzz_tokenizer: vocabulary %s: %s\n", name, err.msg);
        abort();  /* a vocabulary the builder makes must load */
    }
    vocabs[n_vocabs++] = (vocab){name, g, tok, !spm && every_byte_has_a_token(tok)};
    if (!spm && !vocabs[n_vocabs - 1].lossless) abort();  /* the tiny BPE vocabulary has all 256 */
}

static void add_model(const char *dir, const char *file, bool bpe) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (access(path, R_OK) != 0) return;
    nib_error err = {0};
    nib_gguf *g = nib_gguf_open(path, &err);
    nib_tokenizer *tok = g ? nib_tokenizer_load(g, &err) : NULL;
    if (!tok) {
        fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path, err.msg);
        nib_gguf_close(g);
        return;
    }
    vocabs[n_vocabs++] = (vocab){file, g, tok, bpe && every_byte_has_a_token(tok)};
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    add_tiny("tiny BPE (gpt-2)", false, NULL);
    add_tiny("tiny BPE (llama3: ignore_merges)", false, "llama3");
    add_tiny("tiny BPE (qwen2)", false, "qwen2");
    add_tiny("tiny SentencePiece", true, NULL);
    const char *dir = getenv("NIB_FUZZ_MODELS") ? getenv("NIB_FUZZ_MODELS") : "models";
    add_model(dir, "SmolLM2-135M-Instruct.Q4_1.gguf", true);
    add_model(dir, "gemma-3-270m-q4_k_m.gguf", false);
    fprintf(stderr, "fuzz_tokenizer: %d vocabularies:", n_vocabs);
    for (int i = 0; i < n_vocabs; i++)
        fprintf(stderr, "%s %s%s", i ? "," : "", vocabs[i].name, vocabs[i].lossless ? " (lossless)" : "");
    fputc('\n', stderr);
    return 0;
}

static void detok_all(const nib_tokenizer *tok, const int32_t *ids, int64_t n, bool special, size_t cap,
                      bool small_tail, char **text, size_t *len) {
    size_t max_piece = 3 * nib_tokenizer_max_piece_len(tok) + 12;
    char *out = malloc((size_t)n * max_piece + 16);
    char *piece = malloc(cap ? cap : 1);  /* exactly cap bytes: a write past it is an ASan report */
    size_t total = 0;
    nib_detok d = {0};
    for (int64_t i = 0; i < n; i++) {
        size_t k = nib_detok_push(&d, tok, ids[i], special, piece, cap);
        FUZZ_CHECK(k <= cap, "%zu bytes written to a %zu-byte buffer", k, cap);
        memcpy(out + total, piece, k);
        total += k;
    }
    FUZZ_CHECK(cap < max_piece || d.n_lost == 0, "%llu bytes lost from a %zu-byte buffer the documentation says suffices",
               (unsigned long long)d.n_lost, cap);
    char tail[3];  /* flush writes at most 3 */
    size_t k = nib_detok_flush(&d, tail, small_tail ? 2 : sizeof tail);
    FUZZ_CHECK(k <= (small_tail ? 2u : sizeof tail), "flush wrote %zu bytes", k);
    memcpy(out + total, tail, k);
    total += k;
    free(piece);
    *text = out;
    *len = total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || n_vocabs == 0) return 0;
    uint8_t sel = data[0];
    const vocab *v = &vocabs[(sel & 7) % n_vocabs];
    bool add_special = sel & 8, parse_special = sel & 16, render_special = sel & 32, small = sel & 64;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    int32_t n_vocab = nib_tokenizer_n_vocab(v->tok);

    nib_error err = {0};
    int32_t *ids = NULL;
    int64_t n = 0;
    if (nib_tokenize(v->tok, text, len, add_special, parse_special, &ids, &n, &err) != NIB_OK) {
        fuzz_check_error(&err, "nib_tokenize");
        return 0;
    }
    FUZZ_CHECK(ids != NULL, "no id array");
    for (int64_t i = 0; i < n; i++)
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < n_vocab, "%s: id %d outside the vocabulary of %d", v->name, ids[i], n_vocab);

    size_t max_piece = 3 * nib_tokenizer_max_piece_len(v->tok) + 12;
    char *back;
    size_t back_len;
    detok_all(v->tok, ids, n, render_special, small ? 3 : max_piece, false, &back, &back_len);
    FUZZ_CHECK(fuzz_valid_utf8((const unsigned char *)back, back_len), "%s: the detokenizer wrote invalid UTF-8", v->name);
    if (v->lossless && !small && !add_special && !parse_special && fuzz_valid_utf8((const unsigned char *)text, len))
        FUZZ_CHECK(back_len == len && !memcmp(back, text, len), "%s: decode(encode(text)) differs: %zu bytes in, %zu out",
                   v->name, len, back_len);
    free(back);
    free(ids);

    /* the bytes as raw ids, anything an int32 holds */
    int64_t n_raw = (int64_t)(len / 4);
    int32_t *raw = malloc((size_t)(n_raw ? n_raw : 1) * sizeof *raw);
    for (int64_t i = 0; i < n_raw; i++) {
        uint32_t u;
        memcpy(&u, text + 4 * i, 4);
        /* mostly ids near the vocabulary, some anywhere */
        raw[i] = (u & 0x80000000u) ? (int32_t)u : (int32_t)(u % (uint32_t)(n_vocab + 8)) - 4;
        size_t cap = (u >> 8) % 24;
        char *buf = malloc(cap ? cap : 1);
        size_t k = nib_token_to_piece(v->tok, raw[i], (u >> 16) & 1, buf, cap);
        FUZZ_CHECK(raw[i] >= 0 && raw[i] < n_vocab ? 1 : k == 0, "id %d outside the vocabulary gave %zu bytes", raw[i], k);
        free(buf);
    }
    detok_all(v->tok, raw, n_raw, render_special, small ? 5 : max_piece, small, &back, &back_len);
    FUZZ_CHECK(fuzz_valid_utf8((const unsigned char *)back, back_len), "%s: raw ids gave invalid UTF-8", v->name);
    free(back);
    free(raw);
    return 0;
}
