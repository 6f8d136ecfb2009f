/* The tiled GEMV's table rows (gemv_tiled_ops.cuh) for the IQ lattice
 * formats and the ternary ones (gemv_tiled_iq.cuh): 8 warps a block, as the
 * K-quants', and the split kernel for long rows (bench/gpu-decode-notes.md
 * v66, v67: IQ1_S's 8B file +10% with it, +6.6% with the item kernels'). The
 * split kernel measured again in the step (the 8B files with their downs on
 * the item kernels' split K, v79): IQ2_S -8.1%, IQ3_S -5.8%, TQ2_0 -5.1%,
 * IQ1_S -5.0%. Its loop keeps one tile buffer, but for IQ2_XXS (14336 x 4096
 * in the lab 12.6 us with two, 14.7 with one: v98). Seventh column: the
 * output projections tiled (the 8B files with them on the item kernels, v75:
 * IQ1_S -4.4%, IQ2_XS -0.8%, IQ2_XXS level; v79: IQ1_S -4.7%, TQ2_0 -2.2%,
 * IQ2_XS -1.5%, IQ3_S -0.5%), but for IQ3_XXS and IQ2_S, whose files decoded
 * +0.9 to +1.5% and +0.1 to +1.1% faster with them on the item kernels (v79:
 * three and four pairs of runs). Last column: the fused Q/K/V matrix tiled
 * too, by the 8B files' tg128 with and without (v71): IQ2_XXS +7.6%, IQ1_S
 * +6.2%, IQ2_S +2.6%; IQ2_XS -1.5%, IQ3_XXS -3.3% and IQ3_S -4.1% keep the
 * item kernels there. */
#include "cuda/gemv_tiled_iq.cuh"
#include "cuda/gemv_tiled_ops.cuh"

T32_OPS(t32_ops_iq2_xxs, NIB_TYPE_IQ2_XXS, t32_iq2_xxs, 8, T32_SEG_WARPS, T32_KS_TWO, true, true)
T32_OPS(t32_ops_iq2_xs, NIB_TYPE_IQ2_XS, t32_iq2_xs, 8, T32_SEG_WARPS, T32_KS_ONE, true, false)
T32_OPS(t32_ops_iq2_s, NIB_TYPE_IQ2_S, t32_iq2_s, 8, T32_SEG_WARPS, T32_KS_ONE, false, true)
T32_OPS(t32_ops_iq3_xxs, NIB_TYPE_IQ3_XXS, t32_iq3_xxs, 8, T32_SEG_WARPS, T32_KS_ONE, false, false)
T32_OPS(t32_ops_iq3_s, NIB_TYPE_IQ3_S, t32_iq3_s, 8, T32_SEG_WARPS, T32_KS_ONE, true, false)
T32_OPS(t32_ops_iq1_s, NIB_TYPE_IQ1_S, t32_iq1_s, 8, T32_SEG_WARPS, T32_KS_ONE, true, true)
T32_OPS(t32_ops_iq1_m, NIB_TYPE_IQ1_M, t32_iq1_m, 8, T32_SEG_WARPS, T32_KS_ONE, true, false)
T32_OPS(t32_ops_tq2_0, NIB_TYPE_TQ2_0, t32_tq2_0, 8, T32_SEG_WARPS, T32_KS_ONE, true, false)
