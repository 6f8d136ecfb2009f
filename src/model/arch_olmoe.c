/* olmoe and olmo2 (AllenAI). olmoe: OLMoE. A mixture of experts (64, 8 a token) whose top-k weights are
 * the router's probabilities as they are (not renormalised: llama.cpp's
 * norm_w false for this architecture); RMSNorm over the whole query and the
 * whole key projection (attn_q_norm of n_head * head_dim, attn_k_norm of
 * n_head_kv * head_dim), not per head; NeoX RoPE. */
#include "core/error.h"
#include "model/arch.h"

nib_status nib_arch_olmoe_hparams(nib_loader *ld, nib_hparams *hp) {
    if (hp->n_expert == 0)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "olmoe: %s.expert_count is missing or 0", ld->arch);
    hp->rope_kind = NIB_ROPE_NEOX;
    hp->ffn_act = NIB_FFN_SILU;
    hp->expert_norm = false;
    return NIB_OK;
}

/* olmo2: OLMo 2, dense. Norms only after attention and the FFN
 * (post_attention_norm, post_ffw_norm), RMSNorm over the whole query and key
 * projections as OLMoE's, NeoX RoPE. */
nib_status nib_arch_olmo2_hparams(nib_loader *ld, nib_hparams *hp) {
    (void)ld;
    hp->rope_kind = NIB_ROPE_NEOX;
    hp->ffn_act = NIB_FFN_SILU;
    hp->post_norm_only = true;
    return NIB_OK;
}

nib_status nib_arch_olmo2_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    const nib_hparams *hp = &m->hp;
    nib_status s;
    if ((s = nib_ld_layer_weight(ld, &l->post_attn_norm, il, "post_attention_norm.weight", hp->n_embd, 0, true)) ||
        (s = nib_ld_layer_weight(ld, &l->post_ffn_norm, il, "post_ffw_norm.weight", hp->n_embd, 0, true)))
        return s;
    return nib_arch_olmoe_bind(ld, m, il, l);
}

nib_status nib_arch_olmoe_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    const nib_hparams *hp = &m->hp;
    nib_status s;
    if ((s = nib_ld_layer_weight(ld, &l->q_norm, il, "attn_q_norm.weight", (int64_t)hp->n_head * hp->head_dim_k, 0, true)))
        return s;
    return nib_ld_layer_weight(ld, &l->k_norm, il, "attn_k_norm.weight", (int64_t)hp->n_head_kv * hp->head_dim_k, 0,
                               true);
}
