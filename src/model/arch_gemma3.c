/* gemma3: embeddings scaled by sqrt(n_embd); QK-norm; a norm after attention
 * and after the FFN as well as before (sandwich norms); GeGLU with the tanh
 * GELU; interleaved layers: five sliding-window layers (window from
 * attention.sliding_window, RoPE base 10000, no rope scaling) then one global
 * layer (rope.freq_base and its scaling). The norm weights in GGUF already
 * include Gemma's "+1", so they are plain RMSNorm weights here. */
#include <math.h>

#include "core/error.h"
#include "model/arch.h"

/* Gemma 3's local layers use this RoPE base whatever the file says for the global ones. */
#define GEMMA3_LOCAL_ROPE_BASE 10000.0f
#define GEMMA3_DEFAULT_PATTERN 6  /* every 6th layer is global */
#define GEMMA3_27B_LAYERS 62

/* Gemma 3 27B scales q.k by 1/sqrt(n_embd / n_head) = 1/sqrt(168) (its
 * query_pre_attn_scalar), not by 1/sqrt(head_dim) = 1/sqrt(128) as the
 * other sizes do. The GGUF has no key for it; llama.cpp tells the 27B by its
 * 62 layers (and divides as integers), and so does nib. */
float nib_gemma_attn_scale(const nib_hparams *hp, int n_layer_27b) {
    if (hp->n_layer == n_layer_27b) return 1.0f / sqrtf((float)(hp->n_embd / hp->n_head));
    return 1.0f / sqrtf((float)hp->head_dim_k);
}

float nib_gemma3_attn_scale(const nib_hparams *hp) { return nib_gemma_attn_scale(hp, GEMMA3_27B_LAYERS); }

nib_status nib_arch_gemma3_hparams(nib_loader *ld, nib_hparams *hp) {
    hp->rope_kind = NIB_ROPE_NEOX;
    hp->ffn_act = NIB_FFN_GELU_TANH;
    hp->embd_scale = sqrtf((float)hp->n_embd);
    hp->attn_scale = nib_gemma3_attn_scale(hp);
    return nib_ld_f32_or(ld, "final_logit_softcapping", 0.0f, &hp->logit_softcap);
}

nib_status nib_arch_gemma3_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    const nib_hparams *hp = &m->hp;
    nib_status s;
    if ((s = nib_ld_layer_weight(ld, &l->q_norm, il, "attn_q_norm.weight", hp->head_dim_k, 0, true))) return s;
    if ((s = nib_ld_layer_weight(ld, &l->k_norm, il, "attn_k_norm.weight", hp->head_dim_k, 0, true))) return s;
    if ((s = nib_ld_layer_weight(ld, &l->post_attn_norm, il, "post_attention_norm.weight", hp->n_embd, 0, true)))
        return s;
    if ((s = nib_ld_layer_weight(ld, &l->post_ffn_norm, il, "post_ffw_norm.weight", hp->n_embd, 0, true))) return s;
    int32_t window, pattern;
    if ((s = nib_ld_u32(ld, "attention.sliding_window", &window))) return s;
    if ((s = nib_ld_u32_or(ld, "attention.sliding_window_pattern", GEMMA3_DEFAULT_PATTERN, &pattern))) return s;
    if (window < 1 || pattern < 1)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "gemma3: sliding window %d / pattern %d must be positive",
                             window, pattern);
    if (il % pattern < pattern - 1) {  /* a local layer */
        l->window = window;
        l->rope_base = GEMMA3_LOCAL_ROPE_BASE;
        l->rope_scale = 1.0f;
    }
    return NIB_OK;
}
