/* qwen3: no biases; RMSNorm on each query and key head before RoPE (QK-norm);
 * NeoX RoPE; head size from attention.key_length (128, not n_embd/n_head). */
#include "core/error.h"
#include "model/arch.h"

nib_status nib_arch_qwen3_hparams(nib_loader *ld, nib_hparams *hp) {
    (void)ld;
    hp->rope_kind = NIB_ROPE_NEOX;
    hp->ffn_act = NIB_FFN_SILU;
    return NIB_OK;
}

/* qwen3moe: qwen3's attention, every layer's FFN a mixture of experts with
 * the top-k weights renormalised (llama.cpp's norm_w for this architecture). */
nib_status nib_arch_qwen3moe_hparams(nib_loader *ld, nib_hparams *hp) {
    if (hp->n_expert == 0)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "qwen3moe: %s.expert_count is missing or 0", ld->arch);
    hp->expert_norm = true;
    return nib_arch_qwen3_hparams(ld, hp);
}

nib_status nib_arch_qwen3_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    nib_status s;
    if ((s = nib_ld_layer_weight(ld, &l->q_norm, il, "attn_q_norm.weight", m->hp.head_dim_k, 0, true))) return s;
    return nib_ld_layer_weight(ld, &l->k_norm, il, "attn_k_norm.weight", m->hp.head_dim_k, 0, true);
}
