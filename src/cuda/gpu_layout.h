/* Where the device keeps a format's blocks differently from the file.
 *
 * Q6_K's blocks are 210 bytes, so in a row they start at every 2-byte
 * offset and its GEMV dot built each of its 18 weight words from two
 * funnel-shifted 4-byte loads (22 load instructions an item). On the device
 * each block sits in a 224-byte slot (the 210 bytes as in the file, then 14
 * bytes of zeros): every field (ql at 0, qh at 128, scales at 192, d at 208)
 * is then at a 16-byte multiple from a 16-byte aligned start, and the dot
 * takes 6 loads an item. The slots cost 6.7% more device memory and bytes
 * read for Q6_K matrices. Every device reader of Q6_K weights (the GEMV
 * dot, the staged LM head, the row and matrix decoders) reads slots;
 * nib_cuda_weight_upload (cuda_device.cu) lays them out. The CPU, the file
 * and every host-side size keep the 210-byte blocks.
 * A/B of two builds in one run on the H200 (tg128 t/s, two pairs):
 * Llama-3-8B Q4_K_M (Q6_K in half its downs, its V and its LM head) 466.4 /
 * 469.7 -> 478.2 / 478.1, Llama-3-8B Q6_K 327.2 / 327.1 -> 360.9 / 360.9
 * (bench/gpu-decode-notes.md v43).
 * The tiled GEMV's matrices (gemv_tiled.cuh: Q4_K and Q6_K, chosen by
 * nib_cuda_weight_tile after upload) take another layout again: tiles of 32
 * blocks with their 16-byte chunks interleaved, Q6_K's 210-byte blocks as 13
 * chunks and their d's apart, so without the slot's padding.
 *
 * TQ1_0 (five trits a byte, 54 bytes a block) goes to the device as TQ2_0
 * (two bits a trit, 66 bytes: nib_tq1_0_to_tq2_0, q_ternary.c): the same
 * values, so the same integer sums, and every device reader of it is
 * TQ2_0's. Decoding five trits from a byte took ~3.5 instructions a weight
 * where TQ2_0 takes under one, and the GEMVs of both are bound by
 * instruction issue, not bytes: kernel lab, PDL graph us, TQ1_0 -> TQ2_0 on
 * the tiled kernels, 4096 x 4096 6.4 -> 5.3, 14336 x 4096 12.9 -> 10.3,
 * 4096 x 128256 65.6 -> 40.9 (bench/results/2026-12-02-h200-gemv-tiled-iq.md).
 * 22% more device memory for a TQ1_0 matrix; bench's roofline keeps counting
 * the file's bytes. */
#ifndef NIB_CUDA_GPU_LAYOUT_H
#define NIB_CUDA_GPU_LAYOUT_H

#define NIB_CUDA_Q6_K_SLOT 224

#endif
