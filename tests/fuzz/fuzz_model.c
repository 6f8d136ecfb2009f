/* Fuzz harness: the model loader on top of the reader, then everything a
 * loaded file feeds: the tokenizer built from its vocabulary, its own chat
 * template, and a few decode steps of the forward pass on its weights.
 *
 * A file either loads or fails with a message; one that loads must give a
 * context, tokens inside the vocabulary and finite-or-not (never wild) reads
 * of its weights: ASan sees any shape the loader let through that does not
 * match the data behind it. The SIMD level alternates with the input size, so
 * the scalar reference kernels see hostile weights too. Seeds: the micro and
 * tiny models gen_hostile writes (one layer, embedding 32: cheap to run). */
#include "fuzz.h"

#include "chat/chat_template.h"
#include "cpu/cpu.h"
#include "model/context.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

static nib_simd_level best_level;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    best_level = nib_cpu_detect_simd();
    return 0;
}

static void exercise_tokenizer(const nib_gguf *g, int32_t *ids, int64_t *n_ids) {
    nib_error err = {0};
    nib_tokenizer *tok = nib_tokenizer_load(g, &err);
    if (!tok) {
        fuzz_check_error(&err, "nib_tokenizer_load");
        return;
    }
    static const char text[] = "Hello world <|im_end|> caf\xc3\xa9 \xff\xfe <s>\n\n";
    int32_t *v = NULL;
    int64_t n = 0;
    if (nib_tokenize(tok, text, sizeof text - 1, true, true, &v, &n, &err) == NIB_OK) {
        nib_detok d = {0};
        char out[4096];
        for (int64_t i = 0; i < n; i++) {
            FUZZ_CHECK(v[i] >= 0 && v[i] < nib_tokenizer_n_vocab(tok), "token %d outside the vocabulary", v[i]);
            nib_detok_push(&d, tok, v[i], i & 1, out, sizeof out);
            if (*n_ids < 4) ids[(*n_ids)++] = v[i];
        }
        nib_detok_flush(&d, out, sizeof out);
    } else {
        fuzz_check_error(&err, "nib_tokenize");
    }
    free(v);
    /* the file's own chat template, if it has one */
    nib_str tmpl;
    if (nib_gguf_get_str(g, "tokenizer.chat_template", &tmpl, NULL) == NIB_OK && tmpl.len < 65536) {
        char *src = malloc(tmpl.len + 1);
        if (src) {
            memcpy(src, tmpl.ptr, tmpl.len);
            src[tmpl.len] = 0;
            nib_chat_message msgs[2] = {{"user", "Hello!"}, {"assistant", "Hi."}};
            nib_chat_vars vars = {"<s>", "</s>", true};
            char *out = NULL;
            if (nib_chat_render_at(src, msgs, 2, &vars, 0, &out, &err) != NIB_OK) fuzz_check_error(&err, "nib_chat_render");
            free(out);
            free(src);
        }
    }
    nib_tokenizer_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nib_error err = {0};
    nib_gguf *g = nib_gguf_open_memory(data, size, &err);
    if (!g) {
        fuzz_check_error(&err, "nib_gguf_open_memory");
        return 0;
    }
    nib_model *m = nib_model_load_gguf(g, NULL, &err);  /* owns g from here */
    if (!m) {
        fuzz_check_error(&err, "nib_model_load_gguf");
        return 0;
    }
    const nib_hparams *hp = &m->hp;
    FUZZ_CHECK(hp->n_vocab >= 1 && hp->n_layer >= 1 && hp->n_embd >= 1 && hp->n_head >= 1 && hp->n_head_kv >= 1,
               "hyperparameters");
    int32_t ids[4];
    int64_t n_ids = 0;
    exercise_tokenizer(m->gguf, ids, &n_ids);
    if (n_ids == 0) ids[n_ids++] = 0, ids[n_ids++] = hp->n_vocab - 1;

    nib_cpu_set_simd_level(size & 1 ? NIB_SIMD_SCALAR : best_level);
    nib_ctx_params cp = {8, 4, 1, size & 2, NIB_DEVICE_CPU};
    nib_ctx *c = nib_ctx_new(m, &cp, &err);
    if (!c) {
        fuzz_check_error(&err, "nib_ctx_new");
    } else {
        if (nib_ctx_decode(c, ids, n_ids, NULL, &err) == NIB_OK) {
            const float *logits = nib_ctx_logits(c);
            int32_t best = 0;
            for (int32_t i = 1; i < hp->n_vocab; i++)
                if (logits[i] > logits[best]) best = i;
            if (nib_ctx_decode(c, &best, 1, NULL, &err) != NIB_OK) fuzz_check_error(&err, "nib_ctx_decode");
            /* past the end of the context: an error, not a write past the cache */
            int32_t many[8] = {0};
            FUZZ_CHECK(nib_ctx_decode(c, many, 8, NULL, &err) != NIB_OK, "8 more tokens fit a context of 8");
        } else {
            fuzz_check_error(&err, "nib_ctx_decode");
        }
        nib_ctx_free(c);
    }
    nib_model_free(m);
    return 0;
}
