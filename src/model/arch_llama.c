/* llama: Llama 2/3.x, SmolLM2, Mistral. Pre-norm blocks, SwiGLU, RoPE on
 * adjacent pairs; Llama 3.1+ rope scaling arrives as the optional
 * rope_freqs.weight tensor (bound for every architecture by the loader). */
#include "model/arch.h"

nib_status nib_arch_llama_hparams(nib_loader *ld, nib_hparams *hp) {
    (void)ld;
    hp->rope_kind = NIB_ROPE_NORM;
    hp->ffn_act = NIB_FFN_SILU;
    hp->expert_norm = true; /* Mixtral's top-2 weights sum to 1 */
    return NIB_OK;
}
