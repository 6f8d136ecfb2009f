/* The tiled GEMV's table rows (gemv_tiled_ops.cuh) for Q4_1, Q5_0, Q5_1,
 * IQ4_NL and MXFP4 (gemv_tiled_legacy.cuh): 8 warps a block, as Q4_0's. Long
 * rows: the split kernel for Q5_1 only, by the 8B files' decode speed, tiled
 * off and on in one run (bench/gpu-decode-notes.md v67): with it Q4_1
 * -1.8%, Q5_0 -1.3%, Q5_1 +2.2%; with the item kernels' split K Q4_1 +0.5%,
 * Q5_0 +2.8%, Q5_1 -2.7%. IQ4_NL had taken the split kernel when its levels
 * came from iq4_word_dot (v72: 427.6 -> 473.8 t/s, against item kernels
 * still on lut16); once the item kernels had the same picks (v73) the split
 * kernel lost, and so did the tiled output projection, for IQ4_NL and MXFP4
 * alike (v75, 8B tg128, each role off in one run: IQ4_NL down +4.2%, output
 * projection +2.0%, both +6.5%; MXFP4 +4.6%, +2.2%, +7.9%). Seventh column:
 * the output projections tiled, by the same measurement (item kernels:
 * Q5_0 +2.6%, Q5_1 +1.2%, Q4_1 -0.9%; Q4_1 -1.1% again in v79). */
#include "cuda/gemv_tiled_legacy.cuh"
#include "cuda/gemv_tiled_ops.cuh"

T32_OPS(t32_ops_q4_1, NIB_TYPE_Q4_1, t32_q4_1, 8, T32_SEG_WARPS, T32_KS_NONE, true, false)
T32_OPS(t32_ops_q5_0, NIB_TYPE_Q5_0, t32_q5_0, 8, T32_SEG_WARPS, T32_KS_NONE, false, false)
T32_OPS(t32_ops_q5_1, NIB_TYPE_Q5_1, t32_q5_1, 8, T32_SEG_WARPS, T32_KS_ONE, false, false)
T32_OPS(t32_ops_iq4_nl, NIB_TYPE_IQ4_NL, t32_iq4_nl, 8, T32_SEG_WARPS, T32_KS_NONE, false, false)
T32_OPS(t32_ops_mxfp4, NIB_TYPE_MXFP4, t32_mxfp4, 8, T32_SEG_WARPS, T32_KS_NONE, false, false)
