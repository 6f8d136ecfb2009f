/* GEMV: the per-format kernel table, the host launchers and the op entry.
 *
 * Three layers (STYLE.md, CUDA): nib_cuda_gemv validates and unpacks the
 * shape -> the row's launcher picks grid and block on the caller's stream ->
 * the kernel (gemv_kernels.cuh). The table below is the one place that says
 * which formats the CUDA backend computes and how; nothing else switches on
 * the type.
 *
 * To add a format: write its fmt_ struct in gemv_kernels.cuh (block layout,
 * items, dot), add a row here, and tests/gpu/test_gpu_gemv.c checks it
 * against the scalar reference on the next GPU run. */
#include <stdio.h>

#include <atomic>

#include "cuda/cuda_internal.h"
#include "cuda/gemv_formats_extra.cuh"
#include "cuda/gemv_kernels.cuh"
#include "cuda/gemv_stream.cuh"

/* What a launcher gets: the op entry has checked every field. */
typedef struct mm_args {
    const nib_cuda_weight *w, *w_up; /* w_up: the GLU's up matrix, else NULL */
    const float *x;                  /* (n_tok, n_in) f32: the float path reads these */
    act_q8 a;                        /* the same rows quantized: the dp4a path reads these */
    float *y;                        /* (n_tok, n_out) */
    unsigned long long *best;        /* NULL, or the fused argmax's key (one token) */
    int n_tok, add, glu;
    bool persistent;                 /* the format's row asks for a persistent grid (gemv_row) */
    cudaStream_t stream;
} mm_args;

typedef cudaError_t (*mm_launch_fn)(const mm_args *a);

/* Grid. Blocks loop over rows (grid stride), so a launch needs no more
 * blocks than the device holds at once: starting a block costs about as much
 * as a small one's work (the lab measured 20-24 us for launching the 32-38k
 * empty blocks that one row per warp needs for 128k-152k vocabulary rows). */
typedef cudaError_t (*occupancy_fn)(int *, int);

/* Tokens per weight pass: one for decode; prompt chunks of NT_BATCH tokens
 * share each weight load (blockIdx.y walks the chunks). */
#define NT_BATCH 8

template <class F, int R, int U>
static cudaError_t occupancy_q8(int *blocks_per_sm, int threads) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, gemv_q8<F, GEMV_WARPS, R, U, 1>, threads, 0);
}
template <bool BF16>
static cudaError_t occupancy_f16(int *blocks_per_sm, int threads) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, gemv_f16<BF16, true, F16_U>, threads, 0);
}

/* Decode (one token) runs the lab's R/U winners; prompt chunks run R = 1,
 * U = 1, where NT_BATCH tokens already give each lane NT_BATCH independent
 * dots per item (and the unrolled code stays small enough to compile fast). */
/* Decode (one token) runs the format's R/U, or U = 1 when a row has fewer
 * items than one pass of U per lane (Qwen2.5-0.5B's 896-wide rows are 28
 * items: with U = 4 three of every four dots would be padding). Prompt chunks
 * run R = 1, U = 1, where NT_BATCH tokens already give each lane NT_BATCH
 * independent dots per item (and the unrolled code stays small enough to
 * compile fast). */
/* Decode (one token) runs the format's R/U; a row shorter than one pass of U
 * per lane (Qwen2.5-0.5B's 896-wide rows are 28 items) runs U = 1; when
 * there are rows enough to fill a persistent grid (an LM head of 152k rows),
 * with SHORT_R rows per warp on that grid: with one item per lane and row, a
 * warp needs several rows' loads in flight, and tens of thousands of one-row
 * blocks cost more to start than to run.
 * With the fused argmax the grid is persistent too, so the per-block keys
 * that reach the atomic are few. Prompt chunks run R = 1, U = 1, where
 * NT_BATCH tokens already give each lane NT_BATCH independent dots per item
 * (and the unrolled code stays small enough to compile fast). */
#define SHORT_R 4

static unsigned persistent_grid(const nib_cuda_weight *w, int rows_per_block) {
    const int64_t need = CEIL_DIV(w->n_out, rows_per_block);
    return (unsigned)(w->grid_cap > 0 && w->grid_cap < need ? w->grid_cap : need);
}

/* Blocks of kernel K an SM holds at once (GEMV_WARPS warps, no dynamic
 * shared memory), asked once per process: the same for every device of one
 * architecture, and only a grid size if not. Threads that ask together store
 * the same value. */
template <auto K>
static int blocks_per_sm() {
    static std::atomic<int> n{0};
    int v = n.load(std::memory_order_relaxed);
    if (v == 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, K, GEMV_WARPS * 32, 0) != cudaSuccess || v < 1) {
            (void)cudaGetLastError();
            v = 1;
        }
        n.store(v, std::memory_order_relaxed);
    }
    return v;
}

/* The persistent grid of kernel K (not the format's plain kernel, whose
 * occupancy grid_cap is): a grid of more blocks than fit leaves a second
 * wave, one of fewer leaves some blocks a row group more than the rest.
 * Llama-3-8B Q4_K_M's down projection (split K, 64 registers: 8 blocks an
 * SM where the plain kernel's 70 fit 7) went 395 -> 412 t/s with it. */
template <auto K>
static unsigned grid_of(const nib_cuda_weight *w, int rows_per_block) {
    const int64_t need = CEIL_DIV(w->n_out, rows_per_block), most = (int64_t)w->sms * blocks_per_sm<K>();
    return (unsigned)(w->sms > 0 && most < need ? most : need);
}

/* Split K (gemv_q8_ks) for one token's long rows, no fused argmax: when a
 * row is at least 3 times as long as there are rows (Llama-3-8B's down
 * projection, 14336 x 4096), KS = 2 warps share a row, 4 from 5 times
 * (Qwen2.5-0.5B's, 4864 x 896): the lab's winners; shorter rows lose. KS = 4
 * also where 2 would leave a lane two passes of U items and the format does
 * not load its first pass ahead (the K-quants): the second pass's round trip
 * is then on the kernel's chain (Llama-3-8B Q4_K_M, whose 14336-wide rows are
 * Q4_K and Q6_K: 385.6 -> 401.6 t/s; Q4_0, which loads ahead, lost 2% with
 * KS = 4, and Llama-3.2-1B's 8192-wide rows, one pass at KS = 2, lost 5%).
 * KS = 4 too for outputs of at most 1024 rows (Llama-3-8B Q4_K_M's separate
 * Q6_K V projection, 4096 -> 1024: 256 blocks at KS = 2, 12% of copy
 * bandwidth under ncu; 416.4 -> 419.3 t/s, bench/gpu-decode-notes.md v19).
 * Rows under 4096 (Gemma 3 270M's 2048-wide down) keep the plain kernel:
 * unmeasured there. Which formats take it, and where: KS_ALL (every rule
 * above), KS_NARROW (only KS = 4's first and last rules: rows >= 5 times as
 * long as there are rows, or at most 1024 rows) for Q3_K, whose 4-row warps
 * beat split K on Llama-3-8B's 14336 x 4096 (kernel lab: 19.1 us against
 * 21.2) but not on Qwen2.5-0.5B's 4864 x 896 (7.9 against 5.8) or on a few
 * rows (64 blocks of 16 rows for 1024); KS_NONE for the rest (Q2_K lost with
 * it: 13.3 -> 18.5 us on 14336 x 4096).
 * KS_ALL formats also split K where the matrix is about square (n_in / 3 <
 * n_out <= 2 n_in, more than 1024 rows: Q/K/V and output projections) and
 * a row has an item for at least 7 of every 8 lanes of the split, with 4
 * rows a warp group and U = 1: KS = 4 for the legacy formats (a 4096 row's
 * 128 items, one a lane), KS = 2 for the K-quants (64 items): each lane
 * holds 4 rows' items where the plain launch holds 2 rows x 2 items, with
 * twice the warps in flight. The 7/8: Qwen2.5-7B's 3584-wide rows (56 items
 * on 64 lanes) gained (tg128 396.1 -> 407.3 t/s), Llama-3.2-1B's 2048-wide
 * ones (32 on 64) lost (1,419 -> 1,398), in one run (v27).
 * Kernel lab, 4096 x 4096, against the plain launch: Q4_K 7.7 -> 7.2 us, Q6_K
 * 9.6 -> 8.9, Q4_0 7.6 -> 6.8; tg128 in one build: Llama-3-8B Q4_K_M 440 ->
 * 451 t/s, Q4_0 524 -> 535 (bench/gpu-decode-notes.md v27). The same split
 * for the down projections (4 rows a group there too) lost or tied. Q4_1
 * loses with it (lab, 4096 x 4096: 7.2 -> 8.6 us; Q5_0 8.9 -> 8.2, Q5_1 8.8
 * -> 8.6, Q8_0 9.5 -> 8.6, Q5_K 8.1 -> 7.8): KS_LONG, every rule but this.
 * KS_U1, for the IQ1/IQ2/IQ3 codebook formats and the ternary ones: only
 * the long rows' rule, always at U = 1, with KS and R per format (u1_split).
 * Their dots are bound by instruction issue and (IQ) the codebook lookups,
 * not by loads in flight. Kernel lab, 14336 x 4096, PDL graph replay,
 * against their plain launch: IQ2_XXS 21.2 -> 15.7 us, IQ3_S 26.5 -> 19.5,
 * IQ1_S 23.4 -> 14.2 (at U = 4 the split lost: 20.7 for IQ2_XXS); TQ2_0
 * 20.6 -> 12.9 (bench/gpu-decode-notes.md v33, v34; TQ1_0 is read as
 * TQ2_0, cuda/gpu_layout.h). */
enum { KS_NONE, KS_ALL, KS_LONG, KS_NARROW, KS_U1 };
template <class F>
struct u1_split { /* the codebook formats: 32-element items, 448 on a 14336 row */
    static constexpr int KS = 4, R = 2;
};
template <>
struct u1_split<fmt_tq2_0> { /* 112 items; 4 rows a group won (12.9 us against 16.9 at 2) */
    static constexpr int KS = 4, R = 4;
};
/* the about square matrices' split: KS = 4 where the format loads ahead (W), 2 for the K-quants */
template <class F>
constexpr int KS_SQUARE = has_w<F>::value ? 4 : 2;
/* IQ4_XS's long rows where the rule gives KS = 2: 4 rows a warp group at
 * U = 1 instead of 2 rows at U = 2 (kernel lab, 14336 x 4096 under PDL graph
 * replay: 16.5 -> 14.7 us; at KS = 4 with 4 rows 16.1; Qwen2.5-0.5B's 4864 x
 * 896 keeps KS = 4, 2 rows, U = 1: 4.2 us against 6.3; v35) */
template <class F>
constexpr bool LONG_R4 = std::is_same<F, fmt_iq4_xs>::value;
/* Long rows on other launch shapes than the rule's (kernel lab, 14336 x 4096
 * under PDL graph replay, bench/gpu-decode-notes.md v46): Q8_0 on the square
 * split (4 rows a group, U = 1, KS = 4) 19.7 -> 18.4 us, where Q4_0, Q4_1,
 * Q5_0, IQ4_NL and MXFP4 lost with it and Q5_1 tied; Q6_K at U = 1 (2 rows,
 * KS = 4) 20.2 -> 18.2, where Q4_K lost (12.9 -> 14.6). */
template <class F>
constexpr bool LONG_SQUARE = std::is_same<F, fmt_q8_0>::value;
template <class F>
constexpr bool LONG_U1 = std::is_same<F, fmt_q6_K>::value;
template <class F, int U, int KS, int R2 = 2>
static cudaError_t launch_ks(const mm_args *a) {
    constexpr int W = GEMV_WARPS;
    constexpr auto K = gemv_q8_ks<F, W, R2, U, KS>;
    const nib_cuda_weight *w = a->w;
    return pdl_launch(K, dim3(grid_of<K>(w, (W / KS) * R2)), dim3(W * 32), 0, a->stream, w->dev, w->row_bytes, a->a,
                      a->y, (int)w->n_in, (int)w->n_out, a->add);
}
/* Which kernel launch_q8 runs for a matrix: split K (KS warps a row, R rows
 * a warp group, U items a lane a pass; the rules are the comment's above),
 * the plain kernel (R rows a warp, U items), the LM head's 4-row warps, the
 * plain kernel at U = 1 for few short rows, or the prompt kernel. One
 * function, so the pair launcher (launch_pair) asks the same. A row whose
 * items all fit one pass of the KS warps' lanes at one item each runs
 * U = 1: dot_rows computes all U items of a pass, so U = 2 there doubles
 * the work for nothing (Qwen2.5-0.5B's 4864-wide Q4_K down: 76 items on 128
 * lanes; a 4096 -> 1024 V: 64). */
enum { Q8_KS, Q8_PLAIN, Q8_SHORT, Q8_FEW, Q8_BATCH };
typedef struct q8_plan {
    int kind, ks, r, u;
} q8_plan;
typedef q8_plan (*q8_plan_fn)(const nib_cuda_weight *w, int n_tok, bool best);
template <class F, int R, int U, int KSP>
static q8_plan plan_q8(const nib_cuda_weight *w, int n_tok, bool best) {
    const int n_in = (int)w->n_in, n_out = (int)w->n_out;
    if (n_tok != 1) return {Q8_BATCH, 0, 1, 1};
    if (KSP != KS_NONE && !best) {
        if (KSP == KS_ALL && (n_in / F::CH) * 8 >= 7 * 32 * KS_SQUARE<F> && n_in < 3 * n_out && n_out <= 2 * n_in &&
            n_out > 1024)
            return {Q8_KS, KS_SQUARE<F>, 4, 1};
        if (n_in >= 3 * n_out && n_in >= 4096 && !(KSP == KS_NARROW && n_in < 5 * n_out && n_out > 1024)) {
            if (KSP == KS_U1) return {Q8_KS, u1_split<F>::KS, u1_split<F>::R, 1};
            const bool two_passes = n_in / F::CH > 2 * 32 * U;
            const int ks = n_in >= 5 * n_out || (two_passes && !has_w<F>::value) || n_out <= 1024 ? 4 : 2;
            if (LONG_R4<F> && ks == 2) return {Q8_KS, 2, 4, 1};
            if (LONG_SQUARE<F> && ks == 2) return {Q8_KS, KS_SQUARE<F>, 4, 1};
            return {Q8_KS, ks, 2, LONG_U1<F> || (U > 1 && n_in / F::CH <= 32 * ks) ? 1 : U};
        }
    }
    /* an LM head (rows for 4 passes of a persistent grid of 4-row warps):
     * 4 rows per warp, one item each per pass, whatever the row length
     * (Llama-3-8B, 4096-wide rows, R = 2 and U = 2 before: Q4_K_M 395 ->
     * 400 t/s, Q4_0 512 -> 521, Qwen2.5-7B Q4_K_M 375 -> 377) */
    const bool tall = CEIL_DIV(n_out, GEMV_WARPS * SHORT_R) >= 4 * (int64_t)w->grid_cap;
    if (n_in / F::CH >= 32 * U && !tall) return {Q8_PLAIN, 0, R, U};
    if (CEIL_DIV(n_out, GEMV_WARPS * SHORT_R) >= w->grid_cap) return {Q8_SHORT, 0, SHORT_R, 1};
    return {Q8_FEW, 0, R, 1}; /* few short rows: as many warps as rows (896 x 896 on 4-row warps used 56 SMs) */
}

/* LM heads on the staged kernel (gemv_stream.cuh) for the formats whose
 * dot can read its weights from shared memory (has_ld): the tall matrices
 * that plan_q8 gives the 4-row kernel (Q8_SHORT). TR rows a tile (16 where
 * 16 rows are at most 28 KB, else 8), 3 tiles in flight a block. Its lanes
 * add their items in the same order as every other launch here, so the bits
 * are the same (test_gpu_step's tall matrices). Kernel lab, H200, PDL graph
 * replay, 4-row kernel -> staged (bench/gpu-decode-notes.md v38):
 * 4096 x 128256 Q4_K 93.2 -> 75.9 us (92% of copy bandwidth), Q5_K 112.4 ->
 * 93.3, Q4_1 121.9 -> 78.4, Q5_1 137.8 -> 103.1, Q4_0 81.1 -> 76.2, Q6_K
 * 136.2 -> 124-138 (run to run); 896 x 151936 Q8_0 39.6 -> 36.8, Q4_0 28.1
 * -> 25.4, MXFP4 43.9 -> 39.8. A head whose 3 stages do not fit a block's
 * shared memory, or on a device before sm_90, keeps the 4-row kernel. */
#define STREAM_ST 3
template <class F, class = void>
struct has_ld : std::false_type {};
template <class F>
struct has_ld<F, std::void_t<decltype(F::template dot<ld_shared>((const uint8_t *)0, 0, (const int8_t *)0,
                                                                  (const float2 *)0))>> : std::true_type {};
template <class F, int TR>
static bool stream_setup_tr(nib_cuda_weight *w, size_t stage, nib_error *err) {
    constexpr auto K = gemv_q8_stream<F, GEMV_WARPS, TR, STREAM_ST>;
    const int smem = (int)(STREAM_ST * stage);
    int per_sm = 0;
    if (!CUDA_OK(cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "gemv_q8_stream", err) ||
        !CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, K, GEMV_WARPS * 32, smem), "gemv_q8_stream",
                 err))
        return false;
    if (per_sm < 1) return true; /* does not fit: the 4-row kernel */
    const int64_t need = CEIL_DIV(w->n_out, TR), most = (int64_t)w->sms * per_sm;
    w->stream_grid = (int)(most < need ? most : need);
    w->stream_tr = TR, w->stream_stage = (unsigned)stage;
    return true;
}
template <class F>
static bool stream_setup(nib_cuda_weight *w, nib_error *err) {
    if constexpr (has_ld<F>::value) {
        const bool tall = CEIL_DIV(w->n_out, GEMV_WARPS * SHORT_R) >= 4 * (int64_t)w->grid_cap;
        if (!tall) return true;
        const int tr = 16 * w->row_bytes <= (28u << 10) ? 16 : 8;
        const size_t stage = stream_stage_bytes(w->row_bytes, tr);
        int dev = 0, optin = 0, major = 0;
        if (!CUDA_OK(cudaGetDevice(&dev), "plan GEMV grid", err) ||
            !CUDA_OK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "plan GEMV grid",
                     err) ||
            !CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "plan GEMV grid", err))
            return false;
        if (major < 9) return true;                                 /* the bulk copy is sm_90's */
        if (STREAM_ST * stage + 1024 > (size_t)optin) return true; /* + its static shared memory */
        return tr == 16 ? stream_setup_tr<F, 16>(w, stage, err) : stream_setup_tr<F, 8>(w, stage, err);
    }
    (void)w, (void)err;
    return true;
}
template <class F>
static cudaError_t launch_stream(const mm_args *a) {
    const nib_cuda_weight *w = a->w;
    if constexpr (has_ld<F>::value) {
        const size_t smem = STREAM_ST * (size_t)w->stream_stage;
        const dim3 grid((unsigned)w->stream_grid), block(GEMV_WARPS * 32);
        if (w->stream_tr == 16)
            return pdl_launch(gemv_q8_stream<F, GEMV_WARPS, 16, STREAM_ST>, grid, block, smem, a->stream, w->dev,
                              w->row_bytes, a->a, a->y, (int)w->n_in, (int)w->n_out, a->add, w->stream_stage, a->best);
        return pdl_launch(gemv_q8_stream<F, GEMV_WARPS, 8, STREAM_ST>, grid, block, smem, a->stream, w->dev,
                          w->row_bytes, a->a, a->y, (int)w->n_in, (int)w->n_out, a->add, w->stream_stage, a->best);
    }
    return cudaErrorInvalidValue; /* not reached: stream_tr is 0 for these formats */
}

template <class F, int R, int U, int KSP = KS_NONE>
static cudaError_t launch_q8(const mm_args *a) {
    const nib_cuda_weight *w = a->w;
    const int n_in = (int)w->n_in, n_out = (int)w->n_out;
    const q8_plan p = plan_q8<F, R, U, KSP>(w, a->n_tok, a->best != NULL);
    constexpr auto K_SHORT = gemv_q8<F, GEMV_WARPS, SHORT_R, 1, 1>;
    switch (p.kind) {
    case Q8_KS:
        if constexpr (KSP == KS_U1) {
            return launch_ks<F, 1, u1_split<F>::KS, u1_split<F>::R>(a);
        } else if constexpr (KSP != KS_NONE) {
            if constexpr (LONG_R4<F>)
                if (p.r == 4 && p.ks == 2) return launch_ks<F, 1, 2, 4>(a);
            if (p.r == 4) return launch_ks<F, 1, KS_SQUARE<F>, 4>(a);
            if (p.ks == 4) return p.u == 1 ? launch_ks<F, 1, 4>(a) : launch_ks<F, U, 4>(a);
            return p.u == 1 ? launch_ks<F, 1, 2>(a) : launch_ks<F, U, 2>(a);
        }
        return cudaErrorInvalidValue; /* not reached: KS_NONE plans no split */
    case Q8_PLAIN:
        return pdl_launch(gemv_q8<F, GEMV_WARPS, R, U, 1>,
                          dim3(a->best ? persistent_grid(w, GEMV_WARPS * R) : (unsigned)w->grid),
                          dim3(GEMV_WARPS * 32), 0, a->stream, w->dev, w->row_bytes, a->a, a->y, n_out, n_in, n_out,
                          a->add, a->best);
    case Q8_SHORT:
        if (w->stream_tr) return launch_stream<F>(a);
        return pdl_launch(K_SHORT, dim3(grid_of<K_SHORT>(w, GEMV_WARPS * SHORT_R)), dim3(GEMV_WARPS * 32), 0,
                          a->stream, w->dev, w->row_bytes, a->a, a->y, n_out, n_in, n_out, a->add, a->best);
    case Q8_FEW:
        return pdl_launch(gemv_q8<F, GEMV_WARPS, R, 1, 1>, dim3(w->grid), dim3(GEMV_WARPS * 32), 0, a->stream, w->dev,
                          w->row_bytes, a->a, a->y, n_out, n_in, n_out, a->add, a->best);
    default:
        return pdl_launch(gemv_q8<F, GEMV_WARPS, 1, 1, NT_BATCH>,
                          dim3(CEIL_DIV(n_out, GEMV_WARPS), CEIL_DIV(a->n_tok, NT_BATCH)), dim3(GEMV_WARPS * 32), 0,
                          a->stream, w->dev, w->row_bytes, a->a, a->y, n_out, n_in, n_out, a->add,
                          (unsigned long long *)NULL);
    }
}

template <class F, int R, int U>
static cudaError_t launch_q8_glu(const mm_args *a) {
    const nib_cuda_weight *w = a->w;
    const int n_in = (int)w->n_in, n_out = (int)w->n_out;
    if (a->n_tok == 1 && n_in / F::CH >= 32 * U) {
        constexpr auto K = gemv_q8_glu<F, GEMV_WARPS, R, U, 1>;
        const unsigned grid = a->persistent ? grid_of<K>(w, GEMV_WARPS * R) : (unsigned)w->grid;
        return pdl_launch(K, dim3(grid), dim3(GEMV_WARPS * 32), 0, a->stream, w->dev, a->w_up->dev, w->row_bytes,
                          a->a, a->y, n_out, n_in, n_out, a->glu);
    }
    if (a->n_tok == 1) {
        constexpr auto K = gemv_q8_glu<F, GEMV_WARPS, R, 1, 1>;
        const unsigned grid = a->persistent ? grid_of<K>(w, GEMV_WARPS * R) : (unsigned)w->grid;
        return pdl_launch(K, dim3(grid), dim3(GEMV_WARPS * 32), 0, a->stream, w->dev, a->w_up->dev, w->row_bytes,
                          a->a, a->y, n_out, n_in, n_out, a->glu);
    }
    return pdl_launch(gemv_q8_glu<F, GEMV_WARPS, 1, 1, NT_BATCH>,
                      dim3(CEIL_DIV(n_out, GEMV_WARPS), CEIL_DIV(a->n_tok, NT_BATCH)), dim3(GEMV_WARPS * 32), 0,
                      a->stream, w->dev, a->w_up->dev, w->row_bytes, a->a, a->y, n_out, n_in, n_out, a->glu);
}

template <bool BF16>
static cudaError_t launch_f16(const mm_args *a) {
    const nib_cuda_weight *w = a->w;
    const int n_in = (int)w->n_in, n_out = (int)w->n_out;
    const dim3 grid(a->best ? persistent_grid(w, GEMV_WARPS) : (unsigned)w->grid, a->n_tok), block(GEMV_WARPS * 32);
    if (n_in % 8 == 0)
        return pdl_launch(gemv_f16<BF16, true, F16_U>, grid, block, 0, a->stream, w->dev, w->row_bytes, a->x, n_in, a->y,
                          n_out, n_in, n_out, a->add, a->best);
    return pdl_launch(gemv_f16<BF16, false>, grid, block, 0, a->stream, w->dev, w->row_bytes, a->x, n_in, a->y, n_out,
                      n_in, n_out, a->add, a->best);
}

static cudaError_t occupancy_f32(int *bps, int threads) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(bps, gemv_f32<true>, threads, 0);
}
static cudaError_t launch_f32(const mm_args *a) {
    const nib_cuda_weight *w = a->w;
    const int n_in = (int)w->n_in, n_out = (int)w->n_out;
    const dim3 grid(a->best ? persistent_grid(w, GEMV_WARPS) : (unsigned)w->grid, a->n_tok), block(GEMV_WARPS * 32);
    if (n_in % 4 == 0)
        return pdl_launch(gemv_f32<true>, grid, block, 0, a->stream, w->dev, w->row_bytes, a->x, n_in, a->y, n_out,
                          n_in, n_out, a->add, a->best);
    return pdl_launch(gemv_f32<false>, grid, block, 0, a->stream, w->dev, w->row_bytes, a->x, n_in, a->y, n_out, n_in,
                      n_out, a->add, a->best);
}

typedef struct gemv_row {
    nib_type type;
    const char *kernel;     /* for error messages and inspect */
    bool act_q8;            /* true: x quantized to int8 blocks (dp4a path); false: x read as f32 */
    mm_launch_fn launch;
    mm_launch_fn launch_glu; /* gate and up of this format in one kernel, or NULL */
    occupancy_fn occupancy;
    int rows_per_block;
    bool persistent;        /* cap the grid at what the device holds at once */
    q8_plan_fn plan;        /* the kernel launch_q8 runs (dp4a formats), or NULL */
    bool (*stream)(nib_cuda_weight *w, nib_error *err); /* an LM head's staged launch (stream_setup), or NULL */
} gemv_row;

/* One row per format with a kernel. The dp4a path won for every quantized
 * format by construction (their levels are small integers, so the int8 dot is
 * exact and reads 4x fewer activation bytes than f32); see
 * bench/results/ for the measured rates. Q8_1 and Q8_K are activation
 * formats (no weights come in them): they have no row. */
/* A quantized row: format F, R rows per warp, U items in flight per lane, P
 * persistent grid. R/P per format are the lab's winners on the H200
 * (bench/results/2026-11-30-h200-gemv.md, sweeps "/w" and "/u"): R=2 with a
 * persistent grid pays for the K-quants whose items are large (their
 * per-item activation loads are shared by the two rows), R=1 for the rest.
 * In the decode step (bench/gpu-decode-notes.md, v3-v4) the fused gate/up
 * kernel, 2R rows per warp, streamed Q4_K at 3.0 TB/s while the plain R = 2
 * GEMVs got 1.7-1.8; R = 4 for the plain K-quant GEMVs was tried and lost
 * (8B Q4_K_M 346 -> 305 t/s), so R stays 2.
 * U is 32 * U * CH = 4096 elements per pass where that holds (U = 4 for
 * 32-element items, 2 for 64, 1 for 128 and more): dot_rows computes every
 * pass's U items unconditionally, so a U that overshoots the common 4096-wide
 * rows would waste loads and dp4a work on padding. */
#define ROW_Q8_GLU(T, NAME, F, R, U, P, KSP, GR, GU)                                                      \
    {NIB_TYPE_##T, "gemv_q8<" NAME ">", true, launch_q8<F, R, U, KSP>, launch_q8_glu<F, GR, GU>,     \
     occupancy_q8<F, R, U>, GEMV_WARPS * (R), P, plan_q8<F, R, U, KSP>, stream_setup<F>}
#define ROW_Q8_KS(T, NAME, F, R, U, P, KSP) ROW_Q8_GLU(T, NAME, F, R, U, P, KSP, R, U)
/* KSP: KS_ALL, KS_LONG (without the about square matrices' rule), KS_NARROW,
 * KS_U1 or KS_NONE (plan_q8); ROW_Q8 has no split; ROW_Q8_GLU gives the
 * gate/up kernel its own R and U (GR, GU) */
#define ROW_Q8(T, NAME, F, R, U, P) ROW_Q8_KS(T, NAME, F, R, U, P, KS_NONE)

static const gemv_row gemv_rows[] = {
    {NIB_TYPE_F16, "gemv_f16", false, launch_f16<false>, NULL, occupancy_f16<false>, GEMV_WARPS, true, NULL},
    {NIB_TYPE_BF16, "gemv_bf16", false, launch_f16<true>, NULL, occupancy_f16<true>, GEMV_WARPS, true, NULL},
    ROW_Q8_KS(Q4_0, "q4_0", fmt_q4_0, 1, 4, false, KS_ALL),
    ROW_Q8_KS(Q4_1, "q4_1", fmt_q4_1, 1, 4, false, KS_LONG),
    ROW_Q8_KS(Q5_0, "q5_0", fmt_q5_0, 1, 4, false, KS_ALL),
    ROW_Q8_KS(Q5_1, "q5_1", fmt_q5_1, 1, 4, false, KS_ALL),
    ROW_Q8_KS(Q8_0, "q8_0", fmt_q8_0, 1, 4, false, KS_ALL),
    ROW_Q8(Q2_K, "q2_K", fmt_q2_K, 4, 1, true),
    /* Q3_K: 4 rows a warp on a persistent grid for one token (kernel lab,
     * against 1 row a warp: 4096 x 14336 26.8 -> 17.7 us, 4096 x 4096 10.8 ->
     * 8.5), split K only where rows are few (KS_NARROW); its gate/up kernel
     * keeps 1 row a warp (2 with the up rows), unmeasured with more */
    ROW_Q8_GLU(Q3_K, "q3_K", fmt_q3_K, 4, 1, true, KS_NARROW, 1, 1),
    ROW_Q8_KS(Q4_K, "q4_K", fmt_q4_K, 2, 2, true, KS_ALL),
    ROW_Q8_KS(Q5_K, "q5_K", fmt_q5_K, 2, 2, true, KS_ALL),
    ROW_Q8_KS(Q6_K, "q6_K", fmt_q6_K, 2, 2, true, KS_ALL),
    /* IQ4_NL, IQ4_XS, MXFP4: words loaded ahead (W) and split K, as the
     * legacy formats (kernel lab under PDL graph replay, before -> now:
     * 14336 x 4096 IQ4_NL 26.8 -> 16.0 us, MXFP4 27.5 -> 16.4, IQ4_XS 21.2
     * -> 18.8; 4096 x 4096 IQ4_NL 8.9 -> 6.3, MXFP4 9.0 -> 6.3, IQ4_XS 8.0
     * -> 7.0; bench/gpu-decode-notes.md v29) */
    ROW_Q8_KS(IQ4_NL, "iq4_nl", fmt_iq4_nl, 1, 4, false, KS_ALL),
    ROW_Q8_KS(IQ4_XS, "iq4_xs", fmt_iq4_xs, 1, 2, false, KS_ALL),
    ROW_Q8_KS(MXFP4, "mxfp4", fmt_mxfp4, 1, 4, false, KS_ALL),
    /* gemv_formats_extra.cuh: untuned (R = 1, U = 4 as the legacy formats) */
    {NIB_TYPE_F32, "gemv_f32", false, launch_f32, NULL, occupancy_f32, GEMV_WARPS, true, NULL},
    /* TQ2_0 (and TQ1_0, kept as TQ2_0 on the device: gpu_layout.h): 4 rows a
     * warp on a persistent grid for one token, as Q3_K
     * (kernel lab, against 1 row a warp: TQ2_0 4096 x 14336 22.4 -> 13.7 us,
     * 14336 x 4096 22.9 -> 15.1; TQ1_0 14336 x 4096 30.8 -> 17.9, 4096 x 4096
     * 12.4 -> 9.7); their gate/up kernel keeps 1 row a warp, unmeasured. The
     * IQ1/IQ2/IQ3 kernels lost with it (IQ2_XXS 14336 x 4096 26.8 -> 43.7).
     * Long rows split K at U = 1 (KS_U1). */
    ROW_Q8_GLU(TQ2_0, "tq2_0", fmt_tq2_0, 4, 1, true, KS_U1, 1, 1),
    ROW_Q8_KS(IQ2_XXS, "iq2_xxs", fmt_iq2_xxs, 1, 4, false, KS_U1),
    ROW_Q8_KS(IQ2_XS, "iq2_xs", fmt_iq2_xs, 1, 4, false, KS_U1),
    ROW_Q8_KS(IQ2_S, "iq2_s", fmt_iq2_s, 1, 4, false, KS_U1),
    ROW_Q8_KS(IQ3_XXS, "iq3_xxs", fmt_iq3_xxs, 1, 4, false, KS_U1),
    ROW_Q8_KS(IQ3_S, "iq3_s", fmt_iq3_s, 1, 4, false, KS_U1),
    ROW_Q8_KS(IQ1_S, "iq1_s", fmt_iq1_s, 1, 4, false, KS_U1),
    ROW_Q8_KS(IQ1_M, "iq1_m", fmt_iq1_m, 1, 4, false, KS_U1),
};

static const gemv_row *row_get(nib_type t) {
    for (size_t i = 0; i < sizeof gemv_rows / sizeof gemv_rows[0]; i++)
        if (gemv_rows[i].type == t) return &gemv_rows[i];
    return NULL;
}

/* a file's type, as the device keeps it (nib_cuda_device_type) */
extern "C" bool nib_cuda_has_gemv(nib_type type) { return row_get(nib_cuda_device_type(type)) != NULL; }

extern "C" const char *nib_cuda_gemv_path(nib_type type) {
    const gemv_row *r = row_get(nib_cuda_device_type(type));
    return r ? (r->act_q8 ? "dp4a" : "f32") : NULL;
}

static bool is_dp4a(const nib_cuda_weight *w) {
    const gemv_row *r = row_get(w->type);
    return r && r->act_q8;
}

static size_t qs_stride(int64_t n) { return cuda_act_qs_stride(n); }

extern "C" size_t nib_cuda_act_bytes(int64_t n, int n_tok) {
    return cuda_act_scale_off(n, n_tok > 0 ? n_tok : 1) + sizeof(act_scale);
}

act_q8 cuda_act_view(const void *act, int64_t n, int n_tok) {
    act_q8 a;
    a.xq = (const int8_t *)act;
    a.xds = (const float2 *)((const uint8_t *)act + qs_stride(n) * (size_t)n_tok);
    a.qs_stride = (int)qs_stride(n);
    a.n_tok = n_tok;
    a.sc = (const act_scale *)((const uint8_t *)act + cuda_act_scale_off(n, n_tok));
    return a;
}

extern "C" size_t nib_cuda_gemv_scratch_bytes(const nib_cuda_weight *w) {
    if (!w || !is_dp4a(w)) return 0;
    return nib_cuda_act_bytes(w->n_in, 1);
}

bool cuda_gemv_plan(nib_cuda_weight *w, nib_error *err) {
    const gemv_row *r = row_get(w->type);
    int dev = 0, sms = 0, per_sm = 0;
    if (!CUDA_OK(cudaGetDevice(&dev), "plan GEMV grid", err) ||
        !CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "plan GEMV grid", err) ||
        !CUDA_OK(r->occupancy(&per_sm, GEMV_WARPS * 32), r->kernel, err))
        return false;
    const int64_t need = CEIL_DIV(w->n_out, r->rows_per_block), most = (int64_t)sms * (per_sm > 0 ? per_sm : 1);
    w->grid = (int)(r->persistent && most < need ? most : need);
    w->grid_cap = (int)most;
    w->sms = sms;
    w->stream_tr = 0;
    return !r->stream || r->stream(w, err);
}

bool cuda_gemv_image_ok(char *reason, size_t n) {
    /* cudaFuncGetAttributes fails with cudaErrorNoKernelImageForDevice (or
     * InvalidDeviceFunction) when this binary holds no code the device can run */
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, quantize_act_q8);
    if (e == cudaSuccess) return true;
    (void)cudaGetLastError();
    snprintf(reason, n, "this build's CUDA kernels cannot run on the device: %s", cudaGetErrorString(e));
    return false;
}

static nib_status launch_failed(cudaError_t e, const char *kernel, const nib_cuda_weight *w, int n_tok,
                                nib_error *err) {
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e == cudaSuccess) return NIB_OK; /* the message is built only for a failure */
    char what[192];
    snprintf(what, sizeof what, "launch of %s (%s, n_in %lld, n_out %lld, %d tokens)", kernel,
             nib_type_name(w->type), (long long)w->n_in, (long long)w->n_out, n_tok);
    return cuda_launch_status(e, what, err);
}

extern "C" nib_status nib_cuda_act_quantize(const float *x, int64_t n, int n_tok, void *act, void *stream,
                                            nib_error *err) {
    if (!x || !act || n <= 0 || n % 32 != 0 || n_tok < 1 || ((uintptr_t)act & 15) != 0)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_act_quantize: bad arguments (n %lld must be a positive "
                             "multiple of 32, %d tokens, act 16-byte aligned)", (long long)n, n_tok);
    act_q8 a = cuda_act_view(act, n, n_tok);
    const int64_t total = n * n_tok;
    cudaError_t e = pdl_launch(quantize_act_q8, dim3((unsigned)CEIL_DIV(total, 256)), dim3(256), 0,
                               (cudaStream_t)stream, x, (int8_t *)a.xq, (float2 *)a.xds, (int)n, n_tok, a.qs_stride,
                               (act_scale *)a.sc);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e == cudaSuccess) return NIB_OK;
    char what[96];
    snprintf(what, sizeof what, "launch of quantize_act_q8 (n %lld, %d tokens)", (long long)n, n_tok);
    return cuda_launch_status(e, what, err);
}

static nib_status check_mm(const gemv_row *r, const nib_cuda_weight *w, const float *x, const void *act, int n_tok,
                           const float *y, nib_error *err) {
    if (!r) return nib_error_set(err, NIB_ERR_UNSUPPORTED, "CUDA matmul: no kernel for %s", nib_type_name(w->type));
    if (!y || n_tok < 1) return nib_error_set(err, NIB_ERR_ARG, "CUDA matmul %s: NULL output or %d tokens", r->kernel, n_tok);
    if (r->act_q8 && (!act || ((uintptr_t)act & 15) != 0))
        return nib_error_set(err, NIB_ERR_ARG, "CUDA matmul %s: quantized activations NULL or not 16-byte aligned",
                             r->kernel);
    if (!r->act_q8 && (!x || ((uintptr_t)x & 15) != 0))
        return nib_error_set(err, NIB_ERR_ARG, "CUDA matmul %s: x NULL or not 16-byte aligned", r->kernel);
    return NIB_OK;
}

static nib_status matmul(const nib_cuda_weight *w, const float *x, const void *act, int n_tok, float *y, bool add,
                         unsigned long long *best, void *stream, nib_error *err) {
    if (!w) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul: NULL weight");
    const gemv_row *r = row_get(w->type);
    nib_status s = check_mm(r, w, x, act, n_tok, y, err);
    if (s != NIB_OK) return s;
    mm_args a = {w, NULL, x, cuda_act_view(act, w->n_in, n_tok), y, best, n_tok, add ? 1 : 0, GLU_NONE, r->persistent,
                 (cudaStream_t)stream};
    if (w->t32_pair)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul: %s %lld x %lld is half of a tiled gate/up pair "
                             "(nib_cuda_matmul_glu takes it)", nib_type_name(w->type), (long long)w->n_in,
                             (long long)w->n_out);
    if (w->t32_g) /* tiled (gemv_tiled.cu) */
        return launch_failed(cuda_t32_matmul(w, a.a, y, a.add, GLU_NONE, best, a.stream), "gemv_t32", w, n_tok, err);
    return launch_failed(r->launch(&a), r->kernel, w, n_tok, err);
}

extern "C" nib_status nib_cuda_matmul(const nib_cuda_weight *w, const float *x, const void *act, int n_tok, float *y,
                                      bool add, void *stream, nib_error *err) {
    return matmul(w, x, act, n_tok, y, add, NULL, stream, err);
}

extern "C" nib_status nib_cuda_matmul_argmax(const nib_cuda_weight *w, const float *x, const void *act, float *y,
                                             uint64_t *best, void *stream, nib_error *err) {
    if (!best) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul_argmax: NULL key");
    return matmul(w, x, act, 1, y, false, (unsigned long long *)best, stream, err);
}

extern "C" nib_status nib_cuda_matmul_glu(const nib_cuda_weight *gate, const nib_cuda_weight *up, const float *x,
                                          const void *act, int n_tok, nib_cuda_glu glu, float *h, float *tmp,
                                          void *stream, nib_error *err) {
    if (!gate || !up || (glu != NIB_CUDA_GLU_SILU && glu != NIB_CUDA_GLU_GELU_TANH))
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul_glu: NULL weight or unknown activation");
    if (gate->n_in != up->n_in || gate->n_out != up->n_out)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul_glu: gate (%lld x %lld) and up (%lld x %lld) differ",
                             (long long)gate->n_in, (long long)gate->n_out, (long long)up->n_in, (long long)up->n_out);
    const gemv_row *r = row_get(gate->type);
    nib_status s = check_mm(r, gate, x, act, n_tok, h, err);
    if (s != NIB_OK) return s;
    const int act_kind = glu == NIB_CUDA_GLU_SILU ? GLU_SILU : GLU_GELU_TANH;
    if (gate->t32_pair == 1 && up->t32_pair == 2 && gate->dev == up->dev) /* a tiled pair (gemv_tiled.cu) */
        return launch_failed(cuda_t32_matmul(gate, cuda_act_view(act, gate->n_in, n_tok), h, 0, act_kind, NULL,
                                             (cudaStream_t)stream),
                             "gemv_t32 (GLU)", gate, n_tok, err);
    if (gate->t32_pair || up->t32_pair)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul_glu: gate and up are not one tiled pair");
    if (gate->type == up->type && r->launch_glu && !gate->t32_g && !up->t32_g) {
        mm_args a = {gate, up, x, cuda_act_view(act, gate->n_in, n_tok), h, NULL, n_tok, 0, act_kind, r->persistent,
                     (cudaStream_t)stream};
        return launch_failed(r->launch_glu(&a), r->kernel, gate, n_tok, err);
    }
    /* two products and an elementwise pass: formats that differ, or float weights */
    if (!tmp) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul_glu: these formats need the tmp buffer");
    if ((s = nib_cuda_matmul(gate, x, act, n_tok, h, false, stream, err)) != NIB_OK ||
        (s = nib_cuda_matmul(up, x, act, n_tok, tmp, false, stream, err)) != NIB_OK)
        return s;
    const int64_t n = gate->n_out * n_tok;
    return launch_failed(pdl_launch(glu_rows, dim3((unsigned)CEIL_DIV(n, 256)), dim3(256), 0, (cudaStream_t)stream,
                                    (const float *)h, (const float *)tmp, h, n, act_kind),
                         "glu_rows", gate, n_tok, err);
}

nib_status cuda_glu_rows(const float *g, const float *u, float *h, int64_t n, nib_cuda_glu glu, cudaStream_t st,
                         nib_error *err) {
    const int act_kind = glu == NIB_CUDA_GLU_SILU ? GLU_SILU : GLU_GELU_TANH;
    const cudaError_t e = pdl_launch(glu_rows, dim3((unsigned)CEIL_DIV(n, 256)), dim3(256), 0, st, g, u, h, n, act_kind);
    char what[64];
    snprintf(what, sizeof what, "launch of glu_rows (%lld values)", (long long)n);
    return cuda_launch_status(e, what, err);
}

/* ---- two matrices of one activation row in one launch ------------------------ */

/* The pair kernel (gemv_kernels.cuh gemv_q8_pair) runs two matrices' bodies
 * in one grid: each part as the split-K body or the plain one at U = 1. A
 * row of the table below is one instance: nib_cuda_matmul_pair takes it
 * where both matrices' plans (plan_q8) are its parts', so it runs the very
 * kernels the two launches would; else two launches. The instances: the
 * fused Q/K and V shapes of Llama-3-8B (split + split), Qwen2.5-7B (split +
 * plain) and the small models (plain + plain), for the Q4_K_M and Q5_K_M
 * mixes (V in Q6_K in some layers, or Q8_0 where Q/K fall back to Q5_0/Q5_1).
 * tg128 against two launches, each in one build (bench/gpu-decode-notes.md
 * v28, v31): Llama-3-8B Q4_K_M +1.1%, Qwen2.5-7B Q4_K_M +1.6%, Llama-3.2-1B
 * Q4_K_M +2.9%, Qwen2.5-0.5B Q4_K_M +2.4%. */
typedef cudaError_t (*pair_launch_fn)(const nib_cuda_weight *wa, const nib_cuda_weight *wb, const act_q8 &a,
                                      float *ya, float *yb, cudaStream_t st);
template <class PA, class PB>
static cudaError_t launch_pair(const nib_cuda_weight *wa, const nib_cuda_weight *wb, const act_q8 &a, float *ya,
                               float *yb, cudaStream_t st) {
    constexpr auto K = gemv_q8_pair<PA, PB>;
    const int64_t most = (int64_t)(wa->sms > 0 ? wa->sms : 1) * blocks_per_sm<K>();
    const int64_t need_a = CEIL_DIV(wa->n_out, PA::ROWS), need_b = CEIL_DIV(wb->n_out, PB::ROWS);
    const int g_a = (int)(need_a < most ? need_a : most), g_b = (int)(need_b < most ? need_b : most);
    return pdl_launch(K, dim3((unsigned)(g_a + g_b)), dim3(GEMV_WARPS * 32), 0, st, wa->dev, wa->row_bytes,
                      (int)wa->n_out, wb->dev, wb->row_bytes, (int)wb->n_out, a, ya, yb, (int)wa->n_in, g_a);
}
typedef struct pair_row {
    nib_type a, b;
    int ks_a, r_a, ks_b, r_b; /* each part's plan: split K ks (0: the plain kernel), R rows, U = 1 */
    const char *kernel;
    pair_launch_fn launch;
} pair_row;
/* a row of the table, its plans read off its parts */
template <class PA, class PB>
constexpr pair_row pair_of(nib_type a, nib_type b, const char *kernel) {
    return {a, b, PA::KS, PA::R, PB::KS, PB::R, kernel, launch_pair<PA, PB>};
}
#define PAIR_KK(A, B, FA, FB)                                                                           \
    pair_of<part_ks<FA, 4, 2>, part_ks<FB, 2, 4>>(NIB_TYPE_##A, NIB_TYPE_##B,                          \
                                                  "gemv_q8_pair<split " #A ", split " #B ">"),         \
    pair_of<part_ks<FA, 4, 2>, part_plain<FB, 2>>(NIB_TYPE_##A, NIB_TYPE_##B,                          \
                                                  "gemv_q8_pair<split " #A ", plain " #B ">"),         \
    pair_of<part_plain<FA, 2>, part_plain<FB, 2>>(NIB_TYPE_##A, NIB_TYPE_##B,                          \
                                                  "gemv_q8_pair<plain " #A ", plain " #B ">")
/* rows that are not whole K-quant blocks (Qwen2.5-0.5B's 896) fall back to
 * Q5_0/Q5_1 and Q8_0 in those mixes: plain pairs of 1-row warps */
#define PAIR_LL(A, B, FA, FB)                                                                           \
    pair_of<part_plain<FA, 1>, part_plain<FB, 1>>(NIB_TYPE_##A, NIB_TYPE_##B,                          \
                                                  "gemv_q8_pair<plain " #A ", plain " #B ">")
static const pair_row pair_rows[] = {
    PAIR_KK(Q4_K, Q6_K, fmt_q4_K, fmt_q6_K),
    PAIR_KK(Q5_K, Q6_K, fmt_q5_K, fmt_q6_K),
    PAIR_LL(Q5_0, Q8_0, fmt_q5_0, fmt_q8_0),
    PAIR_LL(Q5_1, Q8_0, fmt_q5_1, fmt_q8_0),
};
#undef PAIR_KK
#undef PAIR_LL

static bool part_is(const gemv_row *r, const nib_cuda_weight *w, int ks, int rows) {
    const q8_plan p = r->plan(w, 1, false);
    if (p.r != rows || p.u != 1) return false;
    return ks ? p.kind == Q8_KS && p.ks == ks : p.kind == Q8_PLAIN || p.kind == Q8_FEW;
}

static const pair_row *pair_get(const nib_cuda_weight *wa, const nib_cuda_weight *wb, int n_tok) {
    const gemv_row *ra = row_get(wa->type), *rb = row_get(wb->type);
    if (n_tok != 1 || wa->n_in != wb->n_in || !ra || !rb || !ra->plan || !rb->plan) return NULL;
    if (wa->t32_g || wb->t32_g) return NULL; /* the parts read the file's layout */
    for (size_t i = 0; i < sizeof pair_rows / sizeof pair_rows[0]; i++) {
        const pair_row *p = &pair_rows[i];
        if (p->a == wa->type && p->b == wb->type && part_is(ra, wa, p->ks_a, p->r_a) &&
            part_is(rb, wb, p->ks_b, p->r_b))
            return p;
    }
    return NULL;
}

extern "C" const char *nib_cuda_pair_kernel(const nib_cuda_weight *a, const nib_cuda_weight *b, int n_tok) {
    const pair_row *p = a && b ? pair_get(a, b, n_tok) : NULL;
    return p ? p->kernel : NULL;
}

extern "C" nib_status nib_cuda_matmul_pair(const nib_cuda_weight *wa, const nib_cuda_weight *wb, const float *x,
                                           const void *act, int n_tok, float *ya, float *yb, void *stream,
                                           nib_error *err) {
    if (!wa || !wb || wa->n_in != wb->n_in)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul_pair: NULL weight or rows of different lengths");
    const pair_row *p = pair_get(wa, wb, n_tok);
    if (!p) {
        nib_status s = nib_cuda_matmul(wa, x, act, n_tok, ya, false, stream, err);
        return s != NIB_OK ? s : nib_cuda_matmul(wb, x, act, n_tok, yb, false, stream, err);
    }
    nib_status s = check_mm(row_get(wa->type), wa, x, act, 1, ya, err);
    if (s == NIB_OK) s = check_mm(row_get(wb->type), wb, x, act, 1, yb, err);
    if (s != NIB_OK) return s;
    const cudaError_t e = p->launch(wa, wb, cuda_act_view(act, wa->n_in, 1), ya, yb, (cudaStream_t)stream);
    return launch_failed(e, p->kernel, wa, 1, err);
}

extern "C" nib_status nib_cuda_gemv(const nib_cuda_weight *w, const float *x, float *y, void *scratch,
                                    void *stream, nib_error *err) {
    if (!w || !x || !y) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_gemv: NULL weight, x or y");
    const gemv_row *r = row_get(w->type);
    if (!r) return nib_error_set(err, NIB_ERR_UNSUPPORTED, "nib_cuda_gemv: no kernel for %s", nib_type_name(w->type));
    if (((uintptr_t)x & 15) != 0)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_gemv %s: x is not 16-byte aligned", r->kernel);
    if (r->act_q8) {
        nib_status s = nib_cuda_act_quantize(x, w->n_in, 1, scratch, stream, err);
        if (s != NIB_OK) return s;
    }
    return nib_cuda_matmul(w, x, scratch, 1, y, false, stream, err);
}

extern "C" nib_status nib_cuda_gemv_scratch_read(const nib_cuda_weight *w, const void *scratch, int8_t *qs,
                                                 float *ds, nib_error *err) {
    if (!w || !scratch || !is_dp4a(w)) return nib_error_set(err, NIB_ERR_ARG, "gemv_scratch_read: no int8 scratch");
    const uint8_t *s = (const uint8_t *)scratch;
    if (!CUDA_OK(cudaMemcpy(qs, s, (size_t)w->n_in, cudaMemcpyDeviceToHost), "read activation quants", err))
        return err ? err->status : NIB_ERR_IO;
    if (!CUDA_OK(cudaMemcpy(ds, s + qs_stride(w->n_in), (size_t)(w->n_in / 32) * sizeof(float2),
                            cudaMemcpyDeviceToHost),
                 "read activation scales", err))
        return err ? err->status : NIB_ERR_IO;
    return NIB_OK;
}
