/* qwen2: the llama block with biases on Q, K and V, and NeoX RoPE (the two
 * halves of each head rotate together). */
#include "model/arch.h"

nib_status nib_arch_qwen2_hparams(nib_loader *ld, nib_hparams *hp) {
    (void)ld;
    hp->rope_kind = NIB_ROPE_NEOX;
    hp->ffn_act = NIB_FFN_SILU;
    return NIB_OK;
}

nib_status nib_arch_qwen2_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    const nib_hparams *hp = &m->hp;
    nib_status s;
    if ((s = nib_ld_layer_weight(ld, &l->bq, il, "attn_q.bias", (int64_t)hp->n_head * hp->head_dim_k, 0, true))) return s;
    if ((s = nib_ld_layer_weight(ld, &l->bk, il, "attn_k.bias", (int64_t)hp->n_head_kv * hp->head_dim_k, 0, true))) return s;
    return nib_ld_layer_weight(ld, &l->bv, il, "attn_v.bias", (int64_t)hp->n_head_kv * hp->head_dim_v, 0, true);
}
