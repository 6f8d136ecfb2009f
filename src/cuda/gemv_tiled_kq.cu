/* The tiled GEMV's table rows (gemv_tiled_ops.cuh) for the K-quants, IQ4_XS
 * and Q4_0: warps a block from the kernel lab (Q4_K's best was 8; Q6_K's 158
 * registers fit more blocks of 4), and which take the split kernel for long
 * rows: Q4_K since the split kernel's one tile buffer (14336 x 4096 12.9 ->
 * 11.6 us in the lab, where the item kernels' split K takes 12.9: v98), Q3_K
 * on its two-buffer loop (13.8 us, 14.3 with one); Q4_0 and IQ4_XS keep the
 * item kernels' split K (IQ4_XS's 8B file decoded 4.6% faster tiled that way
 * than 1% with the split kernel: bench/gpu-decode-notes.md v55, v65, v67;
 * with iq4_word_dot the two were level, 499.4 against 497.2 t/s, v72; in v79
 * IQ4_XS level again, Q2_K's file -16.4% and Q3_K_M's -0.5% without the
 * split kernel; on its one tile buffer the split kernel still lost, Q4_0's
 * file -0.8% and IQ4_XS's -0.7%, v99). Fifth column: gemv_t32_seg's warps a
 * block at most, 12 for Q6_K alone (gemv_tiled_ops.cuh, T32_SEG_WARPS_WIDE).
 * Seventh column: the about square matrices (the output projection) tiled,
 * but for Q4_0, whose 8B file decoded 1.1% faster with its output
 * projections on the item kernels (v75; v79 with them untiled: Q2_K -3.3%,
 * Q3_K_M -2.1%, IQ4_XS -0.6%). Last column: the fused Q/K/V matrix tiled
 * too, for Q4_0 and Q4_K (8B tg128 +1.0% and +0.8%, v71); the others keep
 * the item kernels there. */
#include "cuda/gemv_tiled_ops.cuh"

T32_OPS(t32_ops_q4_0, NIB_TYPE_Q4_0, t32_q4_0, 8, T32_SEG_WARPS, T32_KS_NONE, false, true)
T32_OPS(t32_ops_q4_K, NIB_TYPE_Q4_K, t32_q4_K, 8, T32_SEG_WARPS, T32_KS_ONE, true, true)
T32_OPS(t32_ops_q5_K, NIB_TYPE_Q5_K, t32_q5_K, 8, T32_SEG_WARPS, T32_KS_ONE, true, false)
T32_OPS(t32_ops_q6_K, NIB_TYPE_Q6_K, t32_q6_K, 4, T32_SEG_WARPS_WIDE, T32_KS_ONE, true, false)
T32_OPS(t32_ops_q3_K, NIB_TYPE_Q3_K, t32_q3_K, 8, T32_SEG_WARPS, T32_KS_TWO, true, false)
T32_OPS(t32_ops_q2_K, NIB_TYPE_Q2_K, t32_q2_K, 8, T32_SEG_WARPS, T32_KS_ONE, true, false)
T32_OPS(t32_ops_iq4_xs, NIB_TYPE_IQ4_XS, t32_iq4_xs, 8, T32_SEG_WARPS, T32_KS_NONE, true, false)
