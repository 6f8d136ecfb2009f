/* gemma2: Gemma 3's block without the QK-norms: embeddings scaled by
 * sqrt(n_embd), sandwich norms (before and after attention and the FFN),
 * GeGLU with the tanh GELU, NeoX RoPE with one base for every layer; every
 * other layer (the even ones) attends to a sliding window
 * (attention.sliding_window), and the attention scores and the final logits
 * are soft-capped: c * tanh(x / c), with attn_logit_softcapping (50) and
 * final_logit_softcapping (30). The norm weights in GGUF already include
 * Gemma's "+1". */
#include <math.h>

#include "core/error.h"
#include "model/arch.h"

#define GEMMA2_27B_LAYERS 46


nib_status nib_arch_gemma2_hparams(nib_loader *ld, nib_hparams *hp) {
    hp->rope_kind = NIB_ROPE_NEOX;
    hp->ffn_act = NIB_FFN_GELU_TANH;
    hp->embd_scale = sqrtf((float)hp->n_embd);
    /* as Gemma 3's: the 27B (46 layers here) scales q.k by 1/sqrt(n_embd / n_head) = 1/sqrt(144) */
    hp->attn_scale = nib_gemma_attn_scale(hp, GEMMA2_27B_LAYERS);
    nib_status s;
    if ((s = nib_ld_f32_or(ld, "final_logit_softcapping", 30.0f, &hp->logit_softcap)) ||
        (s = nib_ld_f32_or(ld, "attn_logit_softcapping", 50.0f, &hp->attn_softcap)))
        return s;
    if (hp->logit_softcap < 0.0f || hp->attn_softcap < 0.0f)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "gemma2: softcapping %g / %g must not be negative",
                             (double)hp->attn_softcap, (double)hp->logit_softcap);
    return NIB_OK;
}

nib_status nib_arch_gemma2_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    const nib_hparams *hp = &m->hp;
    nib_status s;
    if ((s = nib_ld_layer_weight(ld, &l->post_attn_norm, il, "post_attention_norm.weight", hp->n_embd, 0, true)))
        return s;
    if ((s = nib_ld_layer_weight(ld, &l->post_ffn_norm, il, "post_ffw_norm.weight", hp->n_embd, 0, true))) return s;
    int32_t window;
    if ((s = nib_ld_u32(ld, "attention.sliding_window", &window))) return s;
    if (window < 1) return nib_error_set(ld->err, NIB_ERR_FORMAT, "gemma2: sliding window %d must be positive", window);
    if (il % 2 == 0) l->window = window; /* llama.cpp's swa pattern 2: the even layers are local */
    return NIB_OK;
}
