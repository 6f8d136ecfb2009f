/* A loaded model: hyperparameters, the weights bound by name to a struct per
 * layer, and what makes one architecture differ from another, as data.
 *
 * Data flows file -> gguf -> (this) model weights -> backend forward step.
 * Each architecture (arch_*.c) reads its own hyperparameters and says which
 * optional pieces it has (biases, QK-norm, post-norms, activation, RoPE
 * ordering, sliding window pattern); the decoder block in forward_cpu.c runs
 * any combination of them.
 */
#ifndef NIB_MODEL_H
#define NIB_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "nib.h"

typedef struct nib_weight {
    const char *name;  /* for messages: name_len bytes in the mapping, not NUL-terminated; NULL when absent */
    int name_len;
    nib_type type;
    int64_t ne[4];     /* ne[0] = row length (input features) */
    const void *data;  /* into the mapped file */
} nib_weight;

typedef enum nib_ffn_act {
    NIB_FFN_SILU = 0,   /* SwiGLU: silu(gate) * up */
    NIB_FFN_GELU_TANH,  /* GeGLU: gelu_tanh(gate) * up (Gemma) */
    NIB_FFN_SWIGLU_OAI, /* gpt-oss's clamped SwiGLU (nib_swiglu_oai) */
} nib_ffn_act;

typedef enum nib_rope_kind {
    NIB_ROPE_NORM = 0,  /* rotate pairs (2i, 2i+1): llama */
    NIB_ROPE_NEOX,      /* rotate pairs (i, i + d/2): qwen2/3, gemma3 */
} nib_rope_kind;

typedef struct nib_layer {
    nib_weight attn_norm;       /* (n_embd) */
    nib_weight wq, wk, wv, wo;  /* (n_embd, n_head*hd_k) (n_embd, n_head_kv*hd_k) (n_embd, n_head_kv*hd_v) (n_head*hd_v, n_embd) */
    nib_weight bq, bk, bv;      /* optional biases (qwen2): (n_head*hd_k) ... */
    nib_weight q_norm, k_norm;  /* optional RMSNorm per head (qwen3, gemma3): (hd_k); or of the whole projection (olmoe) */
    nib_weight post_attn_norm;  /* optional (gemma3): (n_embd) */
    nib_weight ffn_norm;        /* (n_embd) */
    nib_weight gate, up, down;  /* (n_embd, n_ff) (n_embd, n_ff) (n_ff, n_embd); absent in a mixture-of-experts layer */
    /* a mixture-of-experts layer (n_expert > 0): the router and the experts'
     * matrices, expert e's the e-th (ne[0], ne[1]) slice of each */
    nib_weight gate_inp;        /* (n_embd, n_expert) */
    nib_weight gate_exps, up_exps, down_exps; /* (n_embd, n_ff_exp, n_expert) x2, (n_ff_exp, n_embd, n_expert) */
    /* gpt-oss: biases of the router (n_expert) and of each expert's outputs
     * ((n_ff_exp, n_expert) x2, (n_embd, n_expert)), the attention output's
     * bias (n_embd) and one sink logit per query head (n_head) */
    nib_weight gate_inp_b, gate_exps_b, up_exps_b, down_exps_b, bo, sinks;
    nib_weight post_ffn_norm;   /* optional (gemma3): (n_embd) */

    /* per-layer attention settings (sliding-window layers differ in Gemma 3) */
    int32_t window;             /* attend to the last `window` positions; 0 = all */
    float rope_base;
    float rope_scale;           /* positions are divided by this (linear scaling) */
    bool no_rope;               /* no rotation at all in this layer (SmolLM3's every fourth) */
} nib_layer;

typedef struct nib_hparams {
    char arch_name[32];
    int32_t n_vocab;
    int32_t n_ctx_train;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim_k;         /* key/query head size */
    int32_t head_dim_v;
    int32_t n_ff;
    int32_t n_rot;              /* rotated dimensions per head (<= head_dim_k) */
    float norm_eps;
    float attn_scale;           /* multiplies q.k; usually 1/sqrt(head_dim_k) */
    float embd_scale;           /* multiplies the embedding row; 1 except Gemma (sqrt(n_embd)) */
    float logit_softcap;        /* final logits: c * tanh(x / c); 0 = off */
    float logit_scale;          /* final logits divided by it (Granite); 1 = off */
    float residual_scale;       /* each block's output times it before the residual add (Granite); 1 = off */
    float attn_softcap;         /* attention scores (after attn_scale): c * tanh(s / c); 0 = off */
    /* mixture of experts (expert_count, expert_used_count,
     * expert_feed_forward_length): each token's FFN is the sum of its
     * n_expert_used best experts by the router's softmax, weighted by their
     * probabilities (renormalised to sum to 1 when expert_norm) */
    int32_t n_expert, n_expert_used, n_ff_exp;
    bool expert_norm;
    bool expert_softmax_chosen; /* gpt-oss: top-k of the router's logits, softmax over the chosen only */
    /* Phi-3's fused matrices: attn_qkv (q's rows, then k's, then v's) and
     * ffn_up holding the gate's rows then the up's */
    bool fused_qkv, fused_gate_up;
    /* OLMo 2: no norm before attention or the FFN, only after them (the
     * post-norms); the sub-blocks read the residual stream itself */
    bool post_norm_only;
    bool ffn_norm_post_attn;    /* gpt-oss: the FFN's norm is the tensor named post_attention_norm */
    nib_rope_kind rope_kind;
    nib_ffn_act ffn_act;
} nib_hparams;

typedef struct nib_model {
    nib_gguf *gguf;             /* owns the mapping all weights point into */
    nib_hparams hp;
    nib_weight tok_embd;        /* (n_embd, n_vocab) */
    nib_weight output_norm;     /* (n_embd) */
    nib_weight output;          /* (n_embd, n_vocab); tok_embd when tied */
    nib_weight rope_freqs;      /* optional (n_rot/2) frequency divisors (Llama 3.1 rope scaling) */
    /* Phi-3's long-context RoPE (LongRoPE): frequency divisors (n_rot/2) for
     * contexts up to original_context_length and beyond it; optional */
    nib_weight rope_factors_short, rope_factors_long;
    /* the (n_rot/2) frequency divisors both backends use (rope_scaling.c):
     * rope_freqs, times YaRN's, or LongRoPE's short and long; NULL for none.
     * nib_model_rope_ff picks for a context size. */
    const float *rope_ff_short, *rope_ff_long;
    int32_t rope_n_ctx_orig;    /* longer contexts take rope_ff_long */
    float *rope_ff_owned;       /* the divisors when computed here */
    float rope_mscale;          /* cos and sin times this: rope.scaling.attn_factor (and YaRN's); 1: none */
    struct {
        bool on;
        int32_t n_ctx_orig;
        float ext_factor, attn_factor, rope_attn_factor, beta_fast, beta_slow;
    } yarn;                     /* rope.scaling.*: YaRN's (type yarn); rope_attn_factor for any type */
    nib_layer *layers;          /* (n_layer) */
    uint64_t weight_bytes;      /* bytes of all weights a decode step reads */
} nib_model;

/* ---- architectures as data ---------------------------------------------------
 * One row per architecture (model_arch.c). read_hparams fills what is
 * specific to it; bind_extra binds its optional tensors. To add an
 * architecture: write arch_<name>.c with these two functions, add a row. */
typedef struct nib_loader nib_loader;

#define NIB_MAX_EXPERTS 512 /* as llama.cpp's LLAMA_MAX_EXPERTS */

typedef struct nib_arch_desc {
    const char *name;  /* general.architecture */
    bool experts;      /* may have mixture-of-experts layers */
    nib_status (*read_hparams)(nib_loader *ld, nib_hparams *hp);
    nib_status (*bind_layer)(nib_loader *ld, nib_model *m, int il, nib_layer *l);
} nib_arch_desc;

const nib_arch_desc *nib_arch_find(const char *name);
const char *nib_arch_supported_list(void);  /* "llama, qwen2, qwen3, gemma3" */

/* ---- loader helpers, shared by the arch files ------------------------------------- */
struct nib_loader {
    const nib_gguf *g;
    const char *arch;      /* key prefix */
    nib_error *err;
    uint8_t *used;         /* (n_tensors) which tensors were bound */
};

/* "<arch>.<suffix>" as u32/f32, required or with a default. */
nib_status nib_ld_u32(nib_loader *ld, const char *suffix, int32_t *out);
nib_status nib_ld_u32_or(nib_loader *ld, const char *suffix, int32_t def, int32_t *out);
nib_status nib_ld_f32(nib_loader *ld, const char *suffix, float *out);
nib_status nib_ld_f32_or(nib_loader *ld, const char *suffix, float def, float *out);

/* Bind a tensor by name with an exact expected shape (ne1 = 0 for 1-D).
 * Missing (when required) or wrong shape/type: an error naming the tensor. */
nib_status nib_ld_weight(nib_loader *ld, nib_weight *w, const char *name, int64_t ne0, int64_t ne1, bool required);
/* A 3-D tensor of exactly (ne0, ne1, ne2) (the experts' matrices); required. */
nib_status nib_ld_weight3(nib_loader *ld, nib_weight *w, const char *name, int64_t ne0, int64_t ne1, int64_t ne2);
/* Same for "blk.<il>.<suffix>". */
nib_status nib_ld_layer_weight(nib_loader *ld, nib_weight *w, int il, const char *suffix, int64_t ne0, int64_t ne1,
                               bool required);

/* RoPE scaling (rope_scaling.c): the type and factor (every layer's
 * rope_scale) and YaRN's settings, read before the layers are bound; after
 * them (and the architecture's per-layer changes) the frequency divisors and
 * YaRN's attention factor. */
nib_status nib_read_rope_scaling(nib_loader *ld, nib_model *m);
/* The frequency divisors for a context of n_ctx positions (NULL: none). */
const float *nib_model_rope_ff(const nib_model *m, int32_t n_ctx);
nib_status nib_finish_rope_scaling(nib_loader *ld, nib_model *m);
/* YaRN's per-pair frequency divisors (n_rot/2) for a model of base `base`
 * scaled by `factor` from n_ctx_orig positions, and its cos/sin scale. */
void nib_yarn_freq_divisors(float *div, int n_rot, float base, float factor, int n_ctx_orig, float ext_factor,
                            float beta_fast, float beta_slow);
float nib_yarn_mscale(float factor, float ext_factor, float attn_factor);

/* Expert e's matrix of a 3-D expert weight, as a 2-D weight of its own. */
nib_weight nib_expert_slice(const nib_weight *w, int e);

/* The shared layer binding: norms, q/k/v/o, ffn (every architecture has these;
 * the FFN is the router and the experts when n_expert > 0). */
nib_status nib_bind_common_layer(nib_loader *ld, nib_model *m, int il, nib_layer *l);

/* ---- the model -------------------------------------------------------------------- */
nib_model *nib_model_load(const char *path, nib_error *err);
/* The same from a file already open (from memory, for tests and fuzzing); the
 * model owns g from here on, also when loading fails. path names it in
 * messages (NULL: "<memory>"). */
nib_model *nib_model_load_gguf(nib_gguf *g, const char *path, nib_error *err);
void nib_model_free(nib_model *m);

#endif
