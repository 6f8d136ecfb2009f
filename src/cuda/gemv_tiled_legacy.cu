/* The tiled GEMV's table rows (gemv_tiled_ops.cuh) for Q4_1, Q5_0, Q5_1,
 * IQ4_NL and MXFP4 (gemv_tiled_legacy.cuh): 8 warps a block, as Q4_0's. Long
 * rows: the split kernel on its one tile buffer for Q4_1, Q5_1, IQ4_NL and
 * MXFP4, the item kernels' split K for Q5_0, by the 8B files' decode speed
 * with that one choice switched in one run: Q5_1 with two tile buffers
 * (+2.2%, bench/gpu-decode-notes.md v67; one buffer since v98, lab 17.5 ->
 * 15.4 us), the others with one (v99, item split -> split kernel: Q4_1
 * +0.9%, IQ4_NL +1.3%, MXFP4 +0.3%). With two buffers the split kernel had
 * lost for Q4_1 (-1.8%), Q5_0 (-1.3%), IQ4_NL and MXFP4 (their downs +4.2%
 * and +4.6% on the item kernels; v67, v75). Seventh column: the output
 * projections tiled, by the same measurement (v75, item kernels: IQ4_NL
 * +2.0%, MXFP4 +2.2%, Q5_0 +2.6%, Q5_1 +1.2%, Q4_1 -0.9%; Q4_1 -1.1% again
 * in v79). */
#include "cuda/gemv_tiled_legacy.cuh"
#include "cuda/gemv_tiled_ops.cuh"

T32_OPS(t32_ops_q4_1, NIB_TYPE_Q4_1, t32_q4_1, 8, T32_SEG_WARPS, T32_KS_ONE, true, false)
T32_OPS(t32_ops_q5_0, NIB_TYPE_Q5_0, t32_q5_0, 8, T32_SEG_WARPS, T32_KS_NONE, false, false)
T32_OPS(t32_ops_q5_1, NIB_TYPE_Q5_1, t32_q5_1, 8, T32_SEG_WARPS, T32_KS_ONE, false, false)
T32_OPS(t32_ops_iq4_nl, NIB_TYPE_IQ4_NL, t32_iq4_nl, 8, T32_SEG_WARPS, T32_KS_ONE, false, false)
T32_OPS(t32_ops_mxfp4, NIB_TYPE_MXFP4, t32_mxfp4, 8, T32_SEG_WARPS, T32_KS_ONE, false, false)
