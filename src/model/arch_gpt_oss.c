/* gpt-oss: OpenAI's open-weight mixture of experts. Biases on Q, K, V and
 * the attention output; one learned sink logit per query head in the
 * attention's softmax; every other layer (the even ones) on a sliding window
 * (llama.cpp's pattern 2); YaRN RoPE (rope_scaling.c) on NeoX pairs, q.k
 * scaled by 1/sqrt(n_rot); the FFN's norm is the tensor named
 * post_attention_norm; the router has a bias, picks the top-k logits and
 * weights them by a softmax over those k only; each expert's three matrices
 * have biases, and its activation is the clamped SwiGLU (nib_swiglu_oai). */
#include <math.h>

#include "core/error.h"
#include "model/arch.h"

nib_status nib_arch_gpt_oss_hparams(nib_loader *ld, nib_hparams *hp) {
    if (hp->n_expert == 0)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "gpt-oss: %s.expert_count is missing or 0", ld->arch);
    hp->rope_kind = NIB_ROPE_NEOX;
    hp->ffn_act = NIB_FFN_SWIGLU_OAI;
    hp->expert_norm = false;
    hp->expert_softmax_chosen = true;
    hp->ffn_norm_post_attn = true;
    hp->attn_scale = 1.0f / sqrtf((float)hp->n_rot);
    return NIB_OK;
}

nib_status nib_arch_gpt_oss_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    const nib_hparams *hp = &m->hp;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim_k, kd = (int64_t)hp->n_head_kv * hp->head_dim_k,
                  vd = (int64_t)hp->n_head_kv * hp->head_dim_v, ne = hp->n_expert;
    nib_status s;
    if ((s = nib_ld_layer_weight(ld, &l->bq, il, "attn_q.bias", qd, 0, true)) ||
        (s = nib_ld_layer_weight(ld, &l->bk, il, "attn_k.bias", kd, 0, true)) ||
        (s = nib_ld_layer_weight(ld, &l->bv, il, "attn_v.bias", vd, 0, true)) ||
        (s = nib_ld_layer_weight(ld, &l->bo, il, "attn_output.bias", hp->n_embd, 0, true)) ||
        (s = nib_ld_layer_weight(ld, &l->sinks, il, "attn_sinks.weight", hp->n_head, 0, true)) ||
        (s = nib_ld_layer_weight(ld, &l->gate_inp_b, il, "ffn_gate_inp.bias", ne, 0, true)))
        return s;
    /* the experts' biases are 2-D: one row of outputs an expert, F32 */
    const struct { nib_weight *w; const char *suffix; int64_t ne0; } b[3] = {
        {&l->gate_exps_b, "ffn_gate_exps.bias", hp->n_ff_exp},
        {&l->up_exps_b, "ffn_up_exps.bias", hp->n_ff_exp},
        {&l->down_exps_b, "ffn_down_exps.bias", hp->n_embd},
    };
    for (int i = 0; i < 3; i++) {
        if ((s = nib_ld_layer_weight(ld, b[i].w, il, b[i].suffix, b[i].ne0, ne, true))) return s;
        if (b[i].w->type != NIB_TYPE_F32)
            return nib_error_set(ld->err, NIB_ERR_UNSUPPORTED, "blk.%d.%s is %s; nib takes the experts' biases as F32", il,
                                 b[i].suffix, nib_type_name(b[i].w->type));
    }
    int32_t window;
    if ((s = nib_ld_u32(ld, "attention.sliding_window", &window))) return s;
    if (window < 1) return nib_error_set(ld->err, NIB_ERR_FORMAT, "gpt-oss: sliding window %d must be positive", window);
    if (il % 2 == 0) l->window = window;
    return NIB_OK;
}
