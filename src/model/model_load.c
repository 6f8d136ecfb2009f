/* Loading a model: the strict binder from GGUF tensors to named weights.
 *
 * Nothing runs on a half-loaded model: every required tensor must be present
 * with exactly the shape the hyperparameters imply and a type the format table
 * computes with, or loading fails with a message naming the tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"

/* ---- metadata ----------------------------------------------------------------- */

static nib_status ld_int(nib_loader *ld, const char *suffix, int32_t *out, bool required, int32_t def) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", ld->arch, suffix);
    int64_t v;
    nib_error e;
    nib_status s = nib_gguf_get_int(ld->g, key, &v, &e);
    if (s == NIB_ERR_NOT_FOUND && !required) {
        *out = def;
        return NIB_OK;
    }
    if (s != NIB_OK) return nib_error_set(ld->err, s == NIB_ERR_NOT_FOUND ? NIB_ERR_FORMAT : s, "%s", e.msg);
    if (v < 0 || v > INT32_MAX)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "metadata key '%s' = %lld is out of range", key, (long long)v);
    *out = (int32_t)v;
    return NIB_OK;
}

nib_status nib_ld_u32(nib_loader *ld, const char *suffix, int32_t *out) { return ld_int(ld, suffix, out, true, 0); }
nib_status nib_ld_u32_or(nib_loader *ld, const char *suffix, int32_t def, int32_t *out) {
    return ld_int(ld, suffix, out, false, def);
}

static nib_status ld_float(nib_loader *ld, const char *suffix, float *out, bool required, float def) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", ld->arch, suffix);
    nib_error e;
    nib_status s = nib_gguf_get_f32(ld->g, key, out, &e);
    if (s == NIB_ERR_NOT_FOUND && !required) {
        *out = def;
        return NIB_OK;
    }
    if (s != NIB_OK) return nib_error_set(ld->err, s == NIB_ERR_NOT_FOUND ? NIB_ERR_FORMAT : s, "%s", e.msg);
    if (!(*out == *out) || *out > 3.0e38f || *out < -3.0e38f)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "metadata key '%s' is not a finite number", key);
    return NIB_OK;
}

nib_status nib_ld_f32(nib_loader *ld, const char *suffix, float *out) { return ld_float(ld, suffix, out, true, 0); }
nib_status nib_ld_f32_or(nib_loader *ld, const char *suffix, float def, float *out) {
    return ld_float(ld, suffix, out, false, def);
}

/* ---- tensors -------------------------------------------------------------------- */

/* Binds tensor `name` to w if it has exactly the shape want (the first
 * n_shown dimensions named in the message) and a type nib computes with. */
static nib_status bind_tensor(nib_loader *ld, nib_weight *w, const char *name, const int64_t want[4], int n_shown,
                              bool required) {
    memset(w, 0, sizeof *w);
    int64_t i = nib_gguf_find_tensor(ld->g, name);
    if (i < 0) {
        if (!required) return NIB_OK;
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "tensor '%s' is missing", name);
    }
    const nib_gguf_tensor *t = nib_gguf_tensor_at(ld->g, i);
    if (t->ne[0] != want[0] || t->ne[1] != want[1] || t->ne[2] != want[2] || t->ne[3] != want[3]) {
        char shape[96];
        int k = 0;
        for (int d = 0; d < n_shown; d++)
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", d ? " x " : "", (long long)want[d]);
        return nib_error_set(ld->err, NIB_ERR_FORMAT,
                             "tensor '%s' has shape %lld x %lld x %lld x %lld, expected %s (from the hyperparameters)",
                             name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                             shape);
    }
    if (!nib_type_is_supported((int)t->type))
        return nib_error_set(ld->err, NIB_ERR_UNSUPPORTED, "tensor '%s' has type %s, which nib cannot compute with",
                             name, nib_type_name(t->type) ? nib_type_name(t->type) : "?");
    /* the name lives in the mapping, where no NUL ends it: print it with its length */
    w->name = t->name.ptr;
    w->name_len = (int)(t->name.len < 256 ? t->name.len : 256);
    w->type = t->type;
    for (int d = 0; d < 4; d++) w->ne[d] = t->ne[d];
    w->data = t->data;
    ld->used[i] = 1;
    return NIB_OK;
}

nib_status nib_ld_weight(nib_loader *ld, nib_weight *w, const char *name, int64_t ne0, int64_t ne1, bool required) {
    const int64_t want[4] = {ne0, ne1 ? ne1 : 1, 1, 1};
    nib_status s = bind_tensor(ld, w, name, want, 2, required);
    /* 1-D tensors (norms, biases) are read as floats directly */
    if (s == NIB_OK && w->data && ne1 == 0 && w->type != NIB_TYPE_F32) {
        nib_type type = w->type;
        memset(w, 0, sizeof *w);
        return nib_error_set(ld->err, NIB_ERR_UNSUPPORTED, "tensor '%s' is %s; vectors must be F32", name,
                             nib_type_name(type));
    }
    return s;
}

nib_status nib_ld_weight3(nib_loader *ld, nib_weight *w, const char *name, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t want[4] = {ne0, ne1, ne2, 1};
    return bind_tensor(ld, w, name, want, 3, true);
}

/* Rows [r0, r0 + n) of w, as a weight of its own (a fused matrix's part, an expert's matrix). */
static nib_weight row_slice(const nib_weight *w, int64_t r0, int64_t n) {
    nib_weight s = *w;
    size_t row = 0;
    nib_row_bytes(w->type, w->ne[0], &row); /* checked at load: the tensor's size came from it */
    s.ne[1] = n;
    s.ne[2] = 1;
    s.data = (const uint8_t *)w->data + (size_t)r0 * row;
    return s;
}

nib_weight nib_expert_slice(const nib_weight *w, int e) { return row_slice(w, (int64_t)e * w->ne[1], w->ne[1]); }

nib_status nib_ld_layer_weight(nib_loader *ld, nib_weight *w, int il, const char *suffix, int64_t ne0, int64_t ne1,
                               bool required) {
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    return nib_ld_weight(ld, w, name, ne0, ne1, required);
}

/* One matrix of several outputs' rows stacked (Phi-3's attn_qkv, its ffn_up
 * of gate and up): n parts of rows[i] rows each, as weights of their own. */
static nib_status bind_fused(nib_loader *ld, int il, const char *suffix, int64_t ne0, const int64_t *rows,
                             nib_weight **parts, int n) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += rows[i];
    nib_weight fused;
    nib_status s = nib_ld_layer_weight(ld, &fused, il, suffix, ne0, total, true);
    for (int64_t i = 0, r0 = 0; s == NIB_OK && i < n; r0 += rows[i], i++) *parts[i] = row_slice(&fused, r0, rows[i]);
    return s;
}

nib_status nib_bind_common_layer(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    const nib_hparams *hp = &m->hp;
    int64_t e = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim_k, kd = (int64_t)hp->n_head_kv * hp->head_dim_k,
            vd = (int64_t)hp->n_head_kv * hp->head_dim_v, od = (int64_t)hp->n_head * hp->head_dim_v;
    nib_status s;
    if (!hp->post_norm_only && (s = nib_ld_layer_weight(ld, &l->attn_norm, il, "attn_norm.weight", e, 0, true))) return s;
    if (hp->fused_qkv) {
        const int64_t rows[3] = {qd, kd, vd};
        nib_weight *parts[3] = {&l->wq, &l->wk, &l->wv};
        if ((s = bind_fused(ld, il, "attn_qkv.weight", e, rows, parts, 3))) return s;
    } else {
        if ((s = nib_ld_layer_weight(ld, &l->wq, il, "attn_q.weight", e, qd, true))) return s;
        if ((s = nib_ld_layer_weight(ld, &l->wk, il, "attn_k.weight", e, kd, true))) return s;
        if ((s = nib_ld_layer_weight(ld, &l->wv, il, "attn_v.weight", e, vd, true))) return s;
    }
    if ((s = nib_ld_layer_weight(ld, &l->wo, il, "attn_output.weight", od, e, true))) return s;
    if (!hp->post_norm_only &&
        (s = nib_ld_layer_weight(ld, &l->ffn_norm, il, hp->ffn_norm_post_attn ? "post_attention_norm.weight" : "ffn_norm.weight",
                                 e, 0, true)))
        return s;
    l->window = 0;
    if (hp->n_expert > 0) {
        const int64_t fe = hp->n_ff_exp, ne = hp->n_expert;
        char name[96];
        if ((s = nib_ld_layer_weight(ld, &l->gate_inp, il, "ffn_gate_inp.weight", e, ne, true))) return s;
        snprintf(name, sizeof name, "blk.%d.ffn_gate_exps.weight", il);
        if ((s = nib_ld_weight3(ld, &l->gate_exps, name, e, fe, ne))) return s;
        snprintf(name, sizeof name, "blk.%d.ffn_up_exps.weight", il);
        if ((s = nib_ld_weight3(ld, &l->up_exps, name, e, fe, ne))) return s;
        snprintf(name, sizeof name, "blk.%d.ffn_down_exps.weight", il);
        return nib_ld_weight3(ld, &l->down_exps, name, fe, e, ne);
    }
    if (hp->fused_gate_up) { /* gate's rows first: llama.cpp's swiglu takes silu of the first half */
        const int64_t rows[2] = {hp->n_ff, hp->n_ff};
        nib_weight *parts[2] = {&l->gate, &l->up};
        if ((s = bind_fused(ld, il, "ffn_up.weight", e, rows, parts, 2))) return s;
        return nib_ld_layer_weight(ld, &l->down, il, "ffn_down.weight", hp->n_ff, e, true);
    }
    if ((s = nib_ld_layer_weight(ld, &l->gate, il, "ffn_gate.weight", e, hp->n_ff, true))) return s;
    if ((s = nib_ld_layer_weight(ld, &l->up, il, "ffn_up.weight", e, hp->n_ff, true))) return s;
    return nib_ld_layer_weight(ld, &l->down, il, "ffn_down.weight", hp->n_ff, e, true);
}

/* ---- hyperparameters every architecture shares ------------------------------------ */

static nib_status read_common_hparams(nib_loader *ld, nib_hparams *hp) {
    nib_status s;
    if ((s = nib_ld_u32(ld, "block_count", &hp->n_layer))) return s;
    if ((s = nib_ld_u32(ld, "embedding_length", &hp->n_embd))) return s;
    if ((s = nib_ld_u32(ld, "feed_forward_length", &hp->n_ff))) return s;
    if ((s = nib_ld_u32(ld, "attention.head_count", &hp->n_head))) return s;
    if ((s = nib_ld_u32_or(ld, "attention.head_count_kv", hp->n_head, &hp->n_head_kv))) return s;
    if ((s = nib_ld_u32_or(ld, "context_length", 4096, &hp->n_ctx_train))) return s;
    if ((s = nib_ld_f32(ld, "attention.layer_norm_rms_epsilon", &hp->norm_eps))) return s;
    /* experts (Mixtral keeps the llama name and adds them; qwen3moe) */
    if ((s = nib_ld_u32_or(ld, "expert_count", 0, &hp->n_expert))) return s;
    if (hp->n_expert > 0) {
        if ((s = nib_ld_u32(ld, "expert_used_count", &hp->n_expert_used))) return s;
        if ((s = nib_ld_u32_or(ld, "expert_feed_forward_length", hp->n_ff, &hp->n_ff_exp))) return s;
        if (hp->n_expert > NIB_MAX_EXPERTS || hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert ||
            hp->n_ff_exp < 1)
            return nib_error_set(ld->err, NIB_ERR_FORMAT,
                                 "%s: %d experts (at most %d), %d used a token (1 to the expert count), expert "
                                 "feed-forward length %d",
                                 ld->arch, hp->n_expert, NIB_MAX_EXPERTS, hp->n_expert_used, hp->n_ff_exp);
    }
    if (hp->n_layer < 1 || hp->n_layer > 1024) return nib_error_set(ld->err, NIB_ERR_FORMAT, "%s.block_count = %d is out of range", ld->arch, hp->n_layer);
    if (hp->n_embd < 1 || hp->n_ff < 1 || hp->n_head < 1 || hp->n_head_kv < 1)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "%s: embedding, feed-forward and head counts must be positive",
                             ld->arch);
    if (hp->n_head % hp->n_head_kv != 0)
        return nib_error_set(ld->err, NIB_ERR_FORMAT,
                             "%s.attention.head_count (%d) is not a multiple of head_count_kv (%d)", ld->arch,
                             hp->n_head, hp->n_head_kv);
    int32_t def_hd = hp->n_embd % hp->n_head == 0 ? hp->n_embd / hp->n_head : 0;
    if ((s = nib_ld_u32_or(ld, "attention.key_length", def_hd, &hp->head_dim_k))) return s;
    if ((s = nib_ld_u32_or(ld, "attention.value_length", hp->head_dim_k, &hp->head_dim_v))) return s;
    if (hp->head_dim_k < 2 || hp->head_dim_k % 2 || hp->head_dim_v < 1 || hp->head_dim_k > 1024 || hp->head_dim_v > 1024)
        return nib_error_set(ld->err, NIB_ERR_FORMAT,
                             "%s: head size %d/%d is invalid (embedding %d does not divide by %d heads and no key_length)",
                             ld->arch, hp->head_dim_k, hp->head_dim_v, hp->n_embd, hp->n_head);
    if ((s = nib_ld_u32_or(ld, "rope.dimension_count", hp->head_dim_k, &hp->n_rot))) return s;
    if (hp->n_rot > hp->head_dim_k || hp->n_rot % 2)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "%s.rope.dimension_count = %d does not fit head size %d",
                             ld->arch, hp->n_rot, hp->head_dim_k);
    if (!(hp->norm_eps > 0.0f && hp->norm_eps < 1.0f))
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "%s.attention.layer_norm_rms_epsilon = %g is out of range",
                             ld->arch, (double)hp->norm_eps);
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    hp->embd_scale = 1.0f;
    hp->logit_softcap = 0.0f;
    hp->attn_softcap = 0.0f;
    hp->logit_scale = 1.0f;
    hp->residual_scale = 1.0f;
    return NIB_OK;
}

/* Rope settings every layer starts with (architectures may override per layer). */
static nib_status read_rope(nib_loader *ld, nib_model *m) {
    float base;
    nib_status s;
    if ((s = nib_ld_f32_or(ld, "rope.freq_base", 10000.0f, &base))) return s;
    if (!(base > 0.0f)) return nib_error_set(ld->err, NIB_ERR_FORMAT, "%s.rope.freq_base must be positive", ld->arch);
    for (int il = 0; il < m->hp.n_layer; il++) m->layers[il].rope_base = base;
    if ((s = nib_read_rope_scaling(ld, m))) return s;
    if ((s = nib_ld_weight(ld, &m->rope_factors_short, "rope_factors_short.weight", m->hp.n_rot / 2, 0, false)) ||
        (s = nib_ld_weight(ld, &m->rope_factors_long, "rope_factors_long.weight", m->hp.n_rot / 2, 0, false)))
        return s;
    return nib_ld_weight(ld, &m->rope_freqs, "rope_freqs.weight", m->hp.n_rot / 2, 0, false);
}

static uint64_t weight_bytes(const nib_weight *w) {
    if (!w->data) return 0;
    size_t row;
    if (!nib_row_bytes(w->type, w->ne[0], &row)) return 0;
    return (uint64_t)row * (uint64_t)w->ne[1] * (uint64_t)w->ne[2];
}

static nib_status bind_all(nib_loader *ld, nib_model *m, const nib_arch_desc *arch) {
    nib_hparams *hp = &m->hp;
    nib_status s;
    /* the vocabulary size is the embedding's second dimension */
    int64_t ti = nib_gguf_find_tensor(ld->g, "token_embd.weight");
    if (ti < 0) return nib_error_set(ld->err, NIB_ERR_FORMAT, "tensor 'token_embd.weight' is missing");
    int64_t n_vocab = nib_gguf_tensor_at(ld->g, ti)->ne[1];
    if (n_vocab < 1 || n_vocab > INT32_MAX)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "token_embd.weight has %lld rows", (long long)n_vocab);
    hp->n_vocab = (int32_t)n_vocab;
    uint64_t n_tok_meta;
    const nib_str *unused;
    if (nib_gguf_get_str_array(ld->g, "tokenizer.ggml.tokens", &n_tok_meta, &unused, NULL) == NIB_OK &&
        n_tok_meta != (uint64_t)n_vocab)
        return nib_error_set(ld->err, NIB_ERR_FORMAT,
                             "the vocabulary has %llu tokens but token_embd.weight has %lld rows",
                             (unsigned long long)n_tok_meta, (long long)n_vocab);

    if ((s = nib_ld_weight(ld, &m->tok_embd, "token_embd.weight", hp->n_embd, hp->n_vocab, true))) return s;
    if ((s = nib_ld_weight(ld, &m->output_norm, "output_norm.weight", hp->n_embd, 0, true))) return s;
    if ((s = nib_ld_weight(ld, &m->output, "output.weight", hp->n_embd, hp->n_vocab, false))) return s;
    if (!m->output.data) m->output = m->tok_embd;  /* tied embeddings */
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return nib_error_set(ld->err, NIB_ERR_NOMEM, "out of memory for %d layers", hp->n_layer);
    if ((s = read_rope(ld, m))) return s;
    for (int il = 0; il < hp->n_layer; il++) {
        nib_layer *l = &m->layers[il];
        float base = l->rope_base, scale = l->rope_scale;
        if ((s = nib_bind_common_layer(ld, m, il, l))) return s;
        l->rope_base = base;
        l->rope_scale = scale;
        if (arch->bind_layer && (s = arch->bind_layer(ld, m, il, l))) return s;
    }
    if ((s = nib_finish_rope_scaling(ld, m))) return s;
    /* bytes one decode step reads: every layer's matrices (of the experts, the
     * used ones' share), the output head */
    uint64_t total = weight_bytes(&m->output);
    for (int il = 0; il < hp->n_layer; il++) {
        const nib_layer *l = &m->layers[il];
        const nib_weight *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->gate, &l->up, &l->down, &l->gate_inp};
        for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) total += weight_bytes(ws[k]);
        const nib_weight *xs[] = {&l->gate_exps, &l->up_exps, &l->down_exps};
        for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++)
            if (xs[k]->data) total += weight_bytes(xs[k]) / (uint64_t)hp->n_expert * (uint64_t)hp->n_expert_used;
    }
    m->weight_bytes = total;
    return NIB_OK;
}

nib_model *nib_model_load(const char *path, nib_error *err) {
    nib_gguf *g = nib_gguf_open_split(path, err);
    return g ? nib_model_load_gguf(g, path, err) : NULL;
}

nib_model *nib_model_load_gguf(nib_gguf *g, const char *path, nib_error *err) {
    nib_model *m = calloc(1, sizeof *m);
    if (!m) {
        nib_error_set(err, NIB_ERR_NOMEM, "out of memory");
        nib_gguf_close(g);
        return NULL;
    }
    m->gguf = g;
    if (!path) path = "<memory>";
    nib_str arch;
    nib_error e;
    nib_loader ld = {m->gguf, NULL, err, NULL};
    nib_status s = nib_gguf_get_str(m->gguf, "general.architecture", &arch, &e);
    if (s != NIB_OK) {
        nib_error_set(err, NIB_ERR_FORMAT, "%s: %s", path, e.msg);
        goto fail;
    }
    if (arch.len >= sizeof m->hp.arch_name) arch.len = sizeof m->hp.arch_name - 1;
    memcpy(m->hp.arch_name, arch.ptr, arch.len);
    m->hp.arch_name[arch.len] = 0;
    const nib_arch_desc *desc = nib_arch_find(m->hp.arch_name);
    if (!desc) {
        nib_error_set(err, NIB_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (supported: %s)", path,
                      m->hp.arch_name, nib_arch_supported_list());
        goto fail;
    }
    ld.arch = m->hp.arch_name;
    ld.used = calloc((size_t)nib_gguf_n_tensors(m->gguf) + 1, 1);
    if (!ld.used) {
        nib_error_set(err, NIB_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((s = read_common_hparams(&ld, &m->hp)) || (s = desc->read_hparams(&ld, &m->hp)) ||
        (m->hp.n_expert > 0 && !desc->experts &&
         (s = nib_error_set(err, NIB_ERR_UNSUPPORTED, "%s.expert_count = %d: nib runs experts in llama (Mixtral), qwen3moe, "
                            "olmoe, granitemoe and gpt-oss models, not in %s ones", m->hp.arch_name, m->hp.n_expert, m->hp.arch_name))) ||
        (s = bind_all(&ld, m, desc))) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        nib_error_set(err, s, "%s: %s", path, msg);
        goto fail;
    }
    int64_t n_unused = 0;
    for (int64_t i = 0; i < nib_gguf_n_tensors(m->gguf); i++) n_unused += !ld.used[i];
    if (n_unused > 0) {
        /* legal but odd: say so rather than silently ignore weights */
        for (int64_t i = 0; i < nib_gguf_n_tensors(m->gguf); i++)
            if (!ld.used[i]) {
                const nib_gguf_tensor *t = nib_gguf_tensor_at(m->gguf, i);
                fprintf(stderr, "nib: warning: %s: tensor '%.*s' is not used by the %s architecture\n", path,
                        (int)(t->name.len < 128 ? t->name.len : 128), t->name.ptr, m->hp.arch_name);
            }
    }
    free(ld.used);
    return m;
fail:
    free(ld.used);
    nib_model_free(m);
    return NULL;
}

void nib_model_free(nib_model *m) {
    if (!m) return;
    free(m->layers);
    free(m->rope_ff_owned);
    nib_gguf_close(m->gguf);
    free(m);
}
