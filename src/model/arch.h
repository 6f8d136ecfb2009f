/* The per-architecture functions the table in model_arch.c points to. */
#ifndef NIB_MODEL_ARCH_H
#define NIB_MODEL_ARCH_H

#include "model/model.h"

nib_status nib_arch_llama_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_qwen2_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_qwen2_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l);
nib_status nib_arch_qwen3_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_qwen3_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l);
nib_status nib_arch_qwen3moe_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_gemma3_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_gemma3_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l);
nib_status nib_arch_phi3_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_gpt_oss_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_gpt_oss_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l);
nib_status nib_arch_smollm3_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l);
nib_status nib_arch_granite_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_olmoe_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_olmoe_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l);
nib_status nib_arch_olmo2_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_olmo2_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l);
nib_status nib_arch_gemma2_hparams(nib_loader *ld, nib_hparams *hp);
nib_status nib_arch_gemma2_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l);
/* the attention scales nib_arch_gemma{2,3}_hparams set: 1/sqrt(head_dim), but
 * 1/sqrt(n_embd / n_head) for the 27B, told by its layer count (arch_gemma3.c) */
float nib_gemma_attn_scale(const nib_hparams *hp, int n_layer_27b);
float nib_gemma3_attn_scale(const nib_hparams *hp);

#endif
