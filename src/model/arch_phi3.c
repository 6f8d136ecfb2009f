/* phi3: Phi-3, Phi-3.5 and Phi-4-mini. A llama block with NeoX RoPE whose Q,
 * K and V come as one matrix (attn_qkv) and whose gate and up come as one
 * (ffn_up, the gate's rows first); no biases. The long-context models carry
 * LongRoPE's rope_factors_short/long and rope.scaling.attn_factor (read for
 * every architecture, rope_scaling.c); Phi-4-mini rotates 96 of 128 head
 * dimensions. llama.cpp turns the sliding window the files state off
 * (attention.sliding_window: "Phi SWA is currently disabled"), and so does
 * nib, to give what it gives. */
#include "model/arch.h"

nib_status nib_arch_phi3_hparams(nib_loader *ld, nib_hparams *hp) {
    (void)ld;
    hp->rope_kind = NIB_ROPE_NEOX;
    hp->ffn_act = NIB_FFN_SILU;
    hp->fused_qkv = true;
    hp->fused_gate_up = true;
    return NIB_OK;
}
