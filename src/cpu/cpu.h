/* The CPU backend: a thread pool and the matrix products of every format.
 *
 * The forward pass calls only these entry points; which kernel runs (AVX-512
 * VNNI, AVX2 or the scalar reference) is chosen once at startup from the CPU's
 * features and recorded in the per-type kernel table (cpu_kernels.c), keyed by
 * nib_type like the format table. Every kernel is tested against the scalar
 * reference in quant/.
 */
#ifndef NIB_CPU_H
#define NIB_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "nib.h"

/* ---- thread pool ---------------------------------------------------------------
 * Workers sleep on a condition variable between jobs (they spin only briefly
 * after a job ends, so a token's back-to-back matmuls do not pay a wake-up each). */
typedef struct nib_pool nib_pool;

/* n_threads <= 0: one per online CPU. NULL on failure (err says why). */
nib_pool *nib_pool_new(int n_threads, nib_error *err);
void nib_pool_free(nib_pool *pool);
int nib_pool_size(const nib_pool *pool);
/* Runs fn(ctx, ith, nth) for ith = 0..nth-1 on the pool's threads (the caller
 * is thread 0) and returns when all are done. pool may be NULL: runs fn(ctx, 0, 1).
 * Each ith runs exactly once, but not necessarily on its own thread: the caller
 * takes over the shares of workers that have not started yet. One caller at a
 * time, and fn must not call nib_pool_run itself. */
void nib_pool_run(nib_pool *pool, void (*fn)(void *ctx, int ith, int nth), void *ctx);

/* ---- matrix products -------------------------------------------------------------
 * W is a weight matrix of n_out rows, each of n_in elements in format wtype,
 * rows contiguous (a GGUF tensor of shape n_in x n_out). X is n_tok rows of
 * n_in floats (stride n_in); Y gets n_tok rows of n_out floats (stride n_out):
 *     Y[t][o] = dot(W[o], X[t])
 * Each X row is quantized once to the format's activation type (Q8_0, Q8_1,
 * Q8_K) into scratch, then every weight row is dotted with it. Threads split
 * the output rows. */

/* Scratch bytes nib_cpu_matmul needs for this shape (size it once at load). */
size_t nib_cpu_matmul_scratch_bytes(nib_type wtype, int64_t n_in, int64_t n_tok);

/* Returns NIB_ERR_UNSUPPORTED if wtype has no kernel, NIB_ERR_ARG if n_in is
 * not whole blocks. scratch must hold nib_cpu_matmul_scratch_bytes() (0 for
 * F32/F16/BF16 weights, which dot with X directly; scratch may then be NULL).
 * A token's outputs are the same bits whatever n_tok and the thread count. */
nib_status nib_cpu_matmul(nib_pool *pool, nib_type wtype, const void *W, int64_t n_in, int64_t n_out,
                          const float *X, int64_t n_tok, float *Y, void *scratch);

/* Row lookup (embeddings): dequantize row `row` of W into out (n_in floats). */
nib_status nib_cpu_get_row(nib_type wtype, const void *W, int64_t n_in, int64_t row, float *out);

/* ---- features ----------------------------------------------------------------------- */
typedef enum nib_simd_level {
    NIB_SIMD_SCALAR = 0,
    NIB_SIMD_AVX2 = 1,        /* AVX2 + FMA + F16C */
    NIB_SIMD_AVX512_VNNI = 2, /* AVX-512 F/BW/VL + VNNI */
} nib_simd_level;

/* What this CPU supports (detected once). */
nib_simd_level nib_cpu_detect_simd(void);
/* What the kernels use: the detected level, lowered by NIB_SIMD=scalar|avx2
 * in the environment (read once, for testing both paths on one machine). */
nib_simd_level nib_cpu_simd_level(void);
const char *nib_simd_level_name(nib_simd_level l);
/* The CPU kernels t has, for `nib inspect --types`: "scalar" plus every SIMD
 * level with a kernel of its own, then the levels with an 8-row packed
 * layout (e.g. "scalar+avx2+avx512-vnni (8-row packed: avx2, avx512-vnni)"). */
void nib_cpu_describe_kernels(nib_type t, char *buf, size_t n);
/* Force a level (tests compare levels on one machine); returns the previous one.
 * A level above what the CPU supports is clamped to it. */
nib_simd_level nib_cpu_set_simd_level(nib_simd_level l);

/* ---- weights in the CPU kernels' own layout ----------------------------------------- */
/* Weights in the CPU kernels' own layout (cpu/repack.h), packed once at
 * load: a prompt's matmul then runs about half the multiplies. The packed
 * copy replaces W for nib_cpu_matmul_packed (same scratch, same meaning of
 * Y); W itself stays the reference for row lookups and other backends.
 * nib_cpu_repack_bytes: the bytes of the packed copy, or 0 when wtype has no
 * packed layout at the active SIMD level or the shape does not fit it (then
 * use nib_cpu_matmul on W). */
size_t nib_cpu_repack_bytes(nib_type wtype, int64_t n_in, int64_t n_out);
/* Packs W into dst (nib_cpu_repack_bytes of them) in the active level's
 * layout, which *layout names: the layouts differ between levels. */
nib_status nib_cpu_repack(nib_pool *pool, nib_type wtype, const void *W, int64_t n_in, int64_t n_out, void *dst,
                          nib_simd_level *layout);
/* As nib_cpu_matmul, with P from nib_cpu_repack and the layout it reported
 * (NIB_ERR_UNSUPPORTED where this CPU cannot run that layout's kernel,
 * whatever level is active now); a token's outputs are the same bits
 * whatever n_tok and the thread count (they differ from nib_cpu_matmul's in
 * the last bits: the float sums run in another order). */
nib_status nib_cpu_matmul_packed(nib_pool *pool, nib_type wtype, nib_simd_level layout, const void *P, int64_t n_in,
                                 int64_t n_out, const float *X, int64_t n_tok, float *Y, void *scratch);
/* The fewest tokens for which the packed copy is the faster one (1 for most
 * layouts; more where a single token runs faster on the file's layout, which
 * the caller then keeps using for those products); 0 if there is no such
 * layout. */
int64_t nib_cpu_packed_min_tokens(nib_type wtype, nib_simd_level layout);

#endif
