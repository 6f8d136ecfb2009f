/* A tiny llama model written with nib's own GGUF writer: 2 layers, embedding
 * 64, 4 heads (2 KV heads) of 16, feed-forward 256, a vocabulary of 300 tokens
 * (byte-level BPE or SentencePiece), random weights in seven formats. It runs
 * (the text is noise, the plumbing is real) and is small enough to write, load
 * and break a hundred times in a test.
 *
 * The fields of tiny_model say what the file states; each hostile case in
 * tests/gen_hostile.c changes one of them (or leaves out one key or tensor,
 * or adds keys through `extra`) and expects the loader to name the problem.
 * The fuzz harnesses use the same builder for their vocabularies and seeds.
 *
 * Header-only (static functions): included by gen_hostile.c and the fuzz
 * harnesses, each a program of its own. */
#ifndef NIB_TESTS_TINY_MODEL_H
#define NIB_TESTS_TINY_MODEL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nib.h"

#define TINY_N_VOCAB 300
#define TINY_MAX_LAYERS 8

typedef struct tiny_model {
    bool spm;                  /* SentencePiece vocabulary ("llama"), else byte-level BPE ("gpt2") */
    const char *arch;          /* general.architecture */
    /* hyperparameters as the metadata states them */
    int64_t n_layer, n_ctx, n_embd, n_ff, n_head, n_head_kv, n_rot;
    float eps, rope_base;
    /* what the tensors are (normally what the metadata says) */
    int t_layers, t_embd, t_ff, t_vocab, t_head, t_head_kv, t_head_dim;
    int n_tokens;              /* entries of tokenizer.ggml.tokens (the vocabulary is TINY_N_VOCAB) */
    int n_scores, n_types;     /* entries of the score and token-type arrays */
    int64_t bos, eos;          /* special ids written (-1: key absent) */
    uint32_t alignment;        /* 0: the default, no general.alignment key */
    bool add_bos_key;          /* write tokenizer.ggml.add_bos_token */
    bool untied;               /* write output.weight */
    int long_tokens;           /* > 0: every token but the first 3 is this many bytes long, of type normal */
    const char *skip_key;      /* leave this key out */
    const char *skip_tensor;   /* leave this tensor out */
    const char *odd_tensor;    /* the tensor the next three change */
    int64_t odd_ne0, odd_ne1;  /* nonzero: its shape (odd_ne1 < 0: make it 1-D) */
    int odd_type;              /* >= 0: its type */
    float poison;              /* nonzero: every weight of odd_tensor becomes this (NaN, inf; float types only) */
    bool extra_tensor;         /* add a tensor no architecture uses */
    void (*extra)(nib_gguf_writer *w);  /* more keys, after the usual ones */
    /* split files (llama.cpp's gguf-split layout): n_split > 1 writes
     * PATH-0000k-of-0000n.gguf, the metadata in the first, tensor i in file
     * i % n_split, each file with split.no, split.count, split.tensors.count */
    int n_split;
    /* nonzero: these replace the split keys of file split_odd (0-based); a
     * value < 0 leaves the key out */
    int split_odd, split_odd_no, split_odd_count, split_odd_tensors;
    const char *split_dup;     /* this tensor is written to the last file too */
} tiny_model;

static void tiny_defaults(tiny_model *t, bool spm) {
    memset(t, 0, sizeof *t);
    t->spm = spm;
    t->arch = "llama";
    t->n_layer = 2, t->n_ctx = 64, t->n_embd = 64, t->n_ff = 256, t->n_head = 4, t->n_head_kv = 2, t->n_rot = 16;
    t->eps = 1e-5f, t->rope_base = 10000.0f;
    t->t_layers = 2, t->t_embd = 64, t->t_ff = 256, t->t_vocab = TINY_N_VOCAB;
    t->t_head = 4, t->t_head_kv = 2, t->t_head_dim = 16;
    t->n_tokens = t->n_scores = t->n_types = TINY_N_VOCAB;
    t->bos = spm ? 1 : 298;
    t->eos = spm ? 2 : 299;
    t->odd_type = -1;
}

/* ---- the vocabulary --------------------------------------------------------------- */

/* BPE: the 256 GPT-2 byte characters, 41 merged tokens, 3 control tokens. Each
 * merge is "left right" of two earlier tokens whose concatenation is a token. */
static const char *const tiny_bpe_merges[][2] = {
    {"h", "e"}, {"l", "l"}, {"i", "n"}, {"t", "h"}, {"e", "r"}, {"a", "n"}, {"r", "e"}, {"o", "n"},
    {"a", "t"}, {"e", "n"}, {"e", "s"}, {"o", "r"}, {"i", "s"}, {"i", "t"}, {"o", "u"}, {"a", "r"},
    {"\xc4\xa0", "t"}, {"\xc4\xa0", "a"}, {"\xc4\xa0", "s"}, {"\xc4\xa0", "w"}, {"\xc4\xa0", "c"},
    {"\xc4\xa0", "b"}, {"\xc4\xa0", "o"}, {"\xc4\xa0", "i"}, {"\xc4\xa0", "h"}, {"\xc4\xa0", "f"},
    {"\xc4\xa0t", "h"}, {"th", "e"}, {"\xc4\xa0th", "e"}, {"he", "ll"}, {"hell", "o"},
    {"\xc4\xa0", "hello"}, {"in", "g"}, {"\xc4\xa0", "in"}, {"\xc4\xa0", "is"}, {"\xc4\xa0", "it"},
    {"\xc4\xa0w", "or"}, {"\xc4\xa0wor", "l"}, {"\xc4\xa0worl", "d"}, {"\xc4\xa0", "an"}, {"an", "d"},
};
#define TINY_BPE_N_MERGES 41
/* SentencePiece: <unk> <s> </s>, 256 byte tokens, "▁", a..z, 14 pieces. */
static const char *const tiny_spm_pieces[] = {
    "\xe2\x96\x81t", ("\xe2\x96\x81" "a"), "\xe2\x96\x81s", "he", "th", "in", "er", "an", "ll", "on",
    "\xe2\x96\x81the", "\xe2\x96\x81h", "\xe2\x96\x81he", "\xe2\x96\x81hell",
};
#define TINY_SPM_N_PIECES 14

typedef struct tiny_vocab {
    char text[TINY_N_VOCAB][24];
    const char *tokens[TINY_N_VOCAB];
    float scores[TINY_N_VOCAB];
    int32_t types[TINY_N_VOCAB];
    char merge_text[TINY_BPE_N_MERGES][24];
    const char *merges[TINY_BPE_N_MERGES];
    char *long_text;  /* (TINY_N_VOCAB, long_len + 1) when long_len > 0 */
} tiny_vocab;

static void tiny_vocab_build(tiny_vocab *v, bool spm, int long_len) {
    int n = 0;
    if (!spm) {
        /* GPT-2's bytes_to_unicode, written out independently of the library */
        int extra = 0;
        for (int b = 0; b < 256; b++) {
            bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            unsigned c = printable ? (unsigned)b : 256u + (unsigned)extra++;
            char *o = v->text[b];
            if (c < 0x80) o[0] = (char)c, o[1] = 0;
            else o[0] = (char)(0xC0 | (c >> 6)), o[1] = (char)(0x80 | (c & 0x3F)), o[2] = 0;
            v->types[b] = 1;
        }
        n = 256;
        for (int i = 0; i < TINY_BPE_N_MERGES; i++, n++) {
            snprintf(v->text[n], sizeof v->text[n], "%s%s", tiny_bpe_merges[i][0], tiny_bpe_merges[i][1]);
            snprintf(v->merge_text[i], sizeof v->merge_text[i], "%s %s", tiny_bpe_merges[i][0], tiny_bpe_merges[i][1]);
            v->merges[i] = v->merge_text[i];
            v->types[n] = 1;
        }
        static const char *const ctl[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
        for (int i = 0; i < 3; i++, n++) snprintf(v->text[n], sizeof v->text[n], "%s", ctl[i]), v->types[n] = 3;
    } else {
        static const char *const ctl[] = {"<unk>", "<s>", "</s>"};
        static const int32_t ctl_type[] = {2, 3, 3};
        for (int i = 0; i < 3; i++, n++) snprintf(v->text[n], sizeof v->text[n], "%s", ctl[i]), v->types[n] = ctl_type[i];
        for (int b = 0; b < 256; b++, n++) snprintf(v->text[n], sizeof v->text[n], "<0x%02X>", b), v->types[n] = 6;
        snprintf(v->text[n], sizeof v->text[n], "\xe2\x96\x81"), v->types[n] = 1, v->scores[n] = -1.0f, n++;
        for (int c = 'a'; c <= 'z'; c++, n++)
            snprintf(v->text[n], sizeof v->text[n], "%c", c), v->types[n] = 1, v->scores[n] = -2.0f - 0.01f * (float)c;
        for (int i = 0; i < TINY_SPM_N_PIECES; i++, n++)
            snprintf(v->text[n], sizeof v->text[n], "%s", tiny_spm_pieces[i]), v->types[n] = 1,
                v->scores[n] = -0.5f - 0.1f * (float)i;
    }
    for (int i = 0; i < TINY_N_VOCAB; i++) v->tokens[i] = v->text[i];
    /* long tokens: "<text>~<id>~zzz...", unique, each a piece of long_len bytes */
    v->long_text = long_len > 0 ? malloc((size_t)TINY_N_VOCAB * ((size_t)long_len + 1)) : NULL;
    for (int i = 3; v->long_text && i < TINY_N_VOCAB; i++) {
        char *s = v->long_text + (size_t)i * ((size_t)long_len + 1);
        int k = snprintf(s, (size_t)long_len + 1, "%s~%d~", v->text[i], i);
        for (; k < long_len; k++) s[k] = 'z';
        s[long_len] = 0;
        v->tokens[i] = s;
        v->types[i] = 1;
    }
}

/* ---- weights ----------------------------------------------------------------------- */

typedef struct tiny_rng {
    uint64_t s;
} tiny_rng;

static float tiny_normal(tiny_rng *r) {
    /* the sum of four uniforms: roughly normal, deterministic, no libm */
    float acc = 0;
    for (int k = 0; k < 4; k++) {
        uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        acc += (float)(z >> 40) / (float)(1 << 24) - 0.5f;
    }
    return acc;
}

#define TINY_MAX_SPLITS 4

typedef struct tiny_writer {
    nib_gguf_writer *w;        /* the first file's */
    nib_gguf_writer *ws[TINY_MAX_SPLITS];
    int n_ws, n_added;
    const tiny_model *t;
    tiny_rng rng;
    void *blobs[64];  /* tensor data, alive until the file is written */
    int n_blobs;
    nib_error *err;
    bool ok;
} tiny_writer;

/* Adds a tensor of shape (ne0, ne1) (ne1 = 0: 1-D) filled with scale * noise
 * (+ offset), in type, unless the case leaves it out or reshapes it. */
static void tiny_tensor(tiny_writer *tw, const char *name, nib_type type, int64_t ne0, int64_t ne1, float scale,
                        float offset) {
    const tiny_model *t = tw->t;
    if (!tw->ok) return;
    if (t->skip_tensor && !strcmp(t->skip_tensor, name)) return;
    bool odd = t->odd_tensor && !strcmp(t->odd_tensor, name);
    if (odd && t->odd_ne0) ne0 = t->odd_ne0, ne1 = t->odd_ne1 < 0 ? 0 : t->odd_ne1;
    if (odd && t->odd_type >= 0) type = (nib_type)t->odd_type;
    int64_t rows = ne1 ? ne1 : 1;
    size_t row_bytes = 0;
    /* a row the type cannot hold (a partial block) still gets bytes: the writer is the one to refuse */
    if (!nib_row_bytes(type, ne0, &row_bytes)) row_bytes = (size_t)ne0 * 4;
    float *row = malloc((size_t)ne0 * sizeof *row);
    uint8_t *data = malloc(row_bytes * (size_t)rows + 1);
    if (!row || !data || tw->n_blobs == 64) {
        free(row), free(data);
        tw->ok = false;
        return;
    }
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < ne0; i++) row[i] = odd && t->poison != 0 ? t->poison : offset + scale * tiny_normal(&tw->rng);
        if (nib_quantize_row(type, row, data + (size_t)r * row_bytes, ne0) != NIB_OK)
            memset(data + (size_t)r * row_bytes, 0, row_bytes);
    }
    free(row);
    tw->blobs[tw->n_blobs++] = data;
    int64_t ne[2] = {ne0, ne1};
    nib_gguf_writer *w = tw->ws[tw->n_added++ % tw->n_ws];
    if (nib_gguf_writer_add_tensor(w, name, type, ne1 ? 2 : 1, ne, data, tw->err) != NIB_OK) tw->ok = false;
    if (t->split_dup && !strcmp(t->split_dup, name) && w != tw->ws[tw->n_ws - 1] &&
        nib_gguf_writer_add_tensor(tw->ws[tw->n_ws - 1], name, type, ne1 ? 2 : 1, ne, data, tw->err) != NIB_OK)
        tw->ok = false;
}

static bool tiny_key(const tiny_model *t, const char *key) { return !(t->skip_key && !strcmp(t->skip_key, key)); }

#define TINY_KV(call)                                      \
    do {                                                   \
        if (tw.ok && (call) != NIB_OK) tw.ok = false;      \
    } while (0)

static const char tiny_chat_template[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/* Writes the model t describes to path. */
static nib_status tiny_write(const tiny_model *t, const char *path, nib_error *err) {
    tiny_writer tw = {nib_gguf_writer_new(), {NULL}, 1, 0, t, {0x5eed}, {0}, 0, err, true};
    tw.ws[0] = tw.w;
    int n_split = t->n_split > 1 ? (t->n_split < TINY_MAX_SPLITS ? t->n_split : TINY_MAX_SPLITS) : 1;
    for (; tw.n_ws < n_split; tw.n_ws++)
        if (!(tw.ws[tw.n_ws] = nib_gguf_writer_new())) tw.ok = false;
    if (!tw.w || !tw.ok) {
        for (int k = 0; k < tw.n_ws; k++) nib_gguf_writer_free(tw.ws[k]);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return err->status = NIB_ERR_NOMEM;
    }
    tiny_vocab *v = calloc(1, sizeof *v);
    if (!v) {
        for (int k = 0; k < tw.n_ws; k++) nib_gguf_writer_free(tw.ws[k]);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return err->status = NIB_ERR_NOMEM;
    }
    tiny_vocab_build(v, t->spm, t->long_tokens);
    nib_gguf_writer *w = tw.w;
    char key[96];
    if (t->alignment) TINY_KV(nib_gguf_writer_set_alignment(w, t->alignment, err));
    if (tiny_key(t, "general.architecture")) TINY_KV(nib_gguf_writer_add_str(w, "general.architecture", t->arch, err));
    if (tiny_key(t, "general.name")) TINY_KV(nib_gguf_writer_add_str(w, "general.name", "nib tiny test model", err));
    const struct {
        const char *suffix;
        int64_t v;
    } ints[] = {
        {"block_count", t->n_layer},          {"context_length", t->n_ctx},
        {"embedding_length", t->n_embd},      {"feed_forward_length", t->n_ff},
        {"attention.head_count", t->n_head},  {"attention.head_count_kv", t->n_head_kv},
        {"rope.dimension_count", t->n_rot},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", t->arch, ints[i].suffix);
        if (tiny_key(t, key)) TINY_KV(nib_gguf_writer_add_u32(w, key, (uint32_t)ints[i].v, err));
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", t->arch);
    if (tiny_key(t, key)) TINY_KV(nib_gguf_writer_add_f32(w, key, t->eps, err));
    snprintf(key, sizeof key, "%s.rope.freq_base", t->arch);
    if (tiny_key(t, key)) TINY_KV(nib_gguf_writer_add_f32(w, key, t->rope_base, err));

    if (tiny_key(t, "tokenizer.ggml.model"))
        TINY_KV(nib_gguf_writer_add_str(w, "tokenizer.ggml.model", t->spm ? "llama" : "gpt2", err));
    if (!t->spm && tiny_key(t, "tokenizer.ggml.pre")) TINY_KV(nib_gguf_writer_add_str(w, "tokenizer.ggml.pre", "gpt-2", err));
    if (tiny_key(t, "tokenizer.ggml.tokens"))
        TINY_KV(nib_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", v->tokens, (uint64_t)t->n_tokens, err));
    if (t->spm && tiny_key(t, "tokenizer.ggml.scores"))
        TINY_KV(nib_gguf_writer_add_array(w, "tokenizer.ggml.scores", NIB_GGUF_FLOAT32, v->scores, (uint64_t)t->n_scores, err));
    if (tiny_key(t, "tokenizer.ggml.token_type"))
        TINY_KV(nib_gguf_writer_add_array(w, "tokenizer.ggml.token_type", NIB_GGUF_INT32, v->types, (uint64_t)t->n_types, err));
    if (!t->spm && tiny_key(t, "tokenizer.ggml.merges"))
        TINY_KV(nib_gguf_writer_add_str_array(w, "tokenizer.ggml.merges", v->merges, TINY_BPE_N_MERGES, err));
    if (t->bos >= 0 && tiny_key(t, "tokenizer.ggml.bos_token_id"))
        TINY_KV(nib_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)t->bos, err));
    if (t->eos >= 0 && tiny_key(t, "tokenizer.ggml.eos_token_id"))
        TINY_KV(nib_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)t->eos, err));
    if (t->add_bos_key) TINY_KV(nib_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", t->spm, err));
    if (tiny_key(t, "tokenizer.chat_template"))
        TINY_KV(nib_gguf_writer_add_str(w, "tokenizer.chat_template", tiny_chat_template, err));
    if (t->extra && tw.ok) t->extra(w);

    /* tensors: seven formats between them, norms in F32 as the loader requires */
    int64_t E = t->t_embd, F = t->t_ff, hd = t->t_head_dim;
    tiny_tensor(&tw, "token_embd.weight", NIB_TYPE_Q8_0, E, t->t_vocab, 0.5f, 0);
    tiny_tensor(&tw, "output_norm.weight", NIB_TYPE_F32, E, 0, 0.05f, 1.0f);
    if (t->untied) tiny_tensor(&tw, "output.weight", NIB_TYPE_F16, E, t->t_vocab, 0.2f, 0);
    for (int il = 0; il < t->t_layers && il < TINY_MAX_LAYERS; il++) {
        char name[64];
#define TINY_LAYER(suffix, type, ne0, ne1, scale, offset)                 \
    snprintf(name, sizeof name, "blk.%d." suffix, il);                  \
    tiny_tensor(&tw, name, type, ne0, ne1, scale, offset)
        TINY_LAYER("attn_norm.weight", NIB_TYPE_F32, E, 0, 0.05f, 1.0f);
        TINY_LAYER("attn_q.weight", NIB_TYPE_Q4_0, E, t->t_head * hd, 0.3f, 0);
        TINY_LAYER("attn_k.weight", NIB_TYPE_Q8_0, E, t->t_head_kv * hd, 0.3f, 0);
        TINY_LAYER("attn_v.weight", NIB_TYPE_F16, E, t->t_head_kv * hd, 0.3f, 0);
        TINY_LAYER("attn_output.weight", NIB_TYPE_Q5_1, t->t_head * hd, E, 0.3f, 0);
        TINY_LAYER("ffn_norm.weight", NIB_TYPE_F32, E, 0, 0.05f, 1.0f);
        TINY_LAYER("ffn_gate.weight", NIB_TYPE_Q4_1, E, F, 0.3f, 0);
        TINY_LAYER("ffn_up.weight", NIB_TYPE_Q5_0, E, F, 0.3f, 0);
        TINY_LAYER("ffn_down.weight", il % 2 ? NIB_TYPE_Q6_K : NIB_TYPE_Q4_K, F, E, 0.3f, 0);
#undef TINY_LAYER
    }
    if (t->extra_tensor) tiny_tensor(&tw, "blk.0.ffn_surprise.weight", NIB_TYPE_F32, 32, 0, 1.0f, 0);
    nib_status s = tw.ok ? NIB_OK : (err->status ? err->status : NIB_ERR_ARG);
    if (s == NIB_OK && n_split == 1) s = nib_gguf_writer_write(w, path, err);
    for (int k = 0; k < n_split && s == NIB_OK; k++) {
        int sv[3] = {k, n_split, tw.n_added + (t->split_dup ? 1 : 0)};
        if (t->split_odd == k && t->split_odd_no) sv[0] = t->split_odd_no;
        if (t->split_odd == k && t->split_odd_count) sv[1] = t->split_odd_count;
        if (t->split_odd == k && t->split_odd_tensors) sv[2] = t->split_odd_tensors;
        static const char *const keys[3] = {"split.no", "split.count", "split.tensors.count"};
        for (int j = 0; j < 3 && s == NIB_OK; j++)
            if (sv[j] >= 0) s = nib_gguf_writer_add_u32(tw.ws[k], keys[j], (uint32_t)sv[j], err);
        char p[1024];
        snprintf(p, sizeof p, "%s-%05d-of-%05d.gguf", path, k + 1, n_split);
        if (s == NIB_OK) s = nib_gguf_writer_write(tw.ws[k], p, err);
    }
    for (int i = 0; i < tw.n_blobs; i++) free(tw.blobs[i]);
    for (int k = 0; k < tw.n_ws; k++) nib_gguf_writer_free(tw.ws[k]);
    free(v->long_text);
    free(v);
    return s;
}

#undef TINY_KV
#endif
