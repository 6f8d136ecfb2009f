/* granite, granitemoe: IBM Granite 3.x. A llama block (RoPE on adjacent
 * pairs, SwiGLU; granitemoe's FFN a mixture of experts) with four scalars
 * from the file: the embeddings times embedding_scale, each block's output
 * times residual_scale before the residual add, q.k times attention.scale
 * (instead of 1/sqrt(head_dim)), and the final logits divided by
 * logit_scale. */
#include <math.h>

#include "core/error.h"
#include "model/arch.h"

nib_status nib_arch_granite_hparams(nib_loader *ld, nib_hparams *hp) {
    hp->rope_kind = NIB_ROPE_NORM;
    hp->ffn_act = NIB_FFN_SILU;
    hp->expert_norm = true;
    float attn_scale;
    nib_status s;
    if ((s = nib_ld_f32_or(ld, "embedding_scale", 1.0f, &hp->embd_scale)) ||
        (s = nib_ld_f32_or(ld, "residual_scale", 1.0f, &hp->residual_scale)) ||
        (s = nib_ld_f32_or(ld, "logit_scale", 1.0f, &hp->logit_scale)) ||
        (s = nib_ld_f32_or(ld, "attention.scale", 0.0f, &attn_scale)))
        return s;
    if (attn_scale != 0.0f) hp->attn_scale = attn_scale; /* 0: llama.cpp's 1/sqrt(head_dim) */
    if (!(hp->embd_scale > 0.0f) || !(hp->residual_scale > 0.0f) || !(hp->logit_scale > 0.0f) || !(attn_scale >= 0.0f))
        return nib_error_set(ld->err, NIB_ERR_FORMAT,
                             "%s: embedding_scale %g, residual_scale %g, logit_scale %g and attention.scale %g must be "
                             "positive",
                             ld->arch, (double)hp->embd_scale, (double)hp->residual_scale, (double)hp->logit_scale,
                             (double)attn_scale);
    return NIB_OK;
}
