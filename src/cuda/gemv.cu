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

#include "cuda/cuda_internal.h"
#include "cuda/gemv_kernels.cuh"

/* What a launcher gets: the op entry has checked every field. */
typedef struct gemv_args {
    const nib_cuda_weight *w;
    const float *x;     /* (n_in) device */
    float *y;           /* (n_out) device */
    int8_t *xq;         /* (n_in) scratch: activation quants, or NULL for float paths */
    float2 *xds;        /* (n_in / 32) scratch: (d, s) per 32 */
    cudaStream_t stream;
} gemv_args;

typedef void (*gemv_launch_fn)(const gemv_args *a);

/* Grid. Blocks loop over rows (grid stride), so a launch needs no more
 * blocks than the device holds at once: starting a block costs about as much
 * as a small one's work (the lab measured 20-24 us for launching the 32-38k
 * empty blocks that one row per warp needs for 128k-152k vocabulary rows). */
typedef cudaError_t (*occupancy_fn)(int *, int);

template <class F, int R, int U>
static cudaError_t occupancy_q8(int *blocks_per_sm, int threads) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, gemv_q8<F, GEMV_WARPS, R, U>, threads, 0);
}
template <bool BF16>
static cudaError_t occupancy_f16(int *blocks_per_sm, int threads) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, gemv_f16<BF16, true>, threads, 0);
}

template <class F, int R, int U>
static void launch_q8(const gemv_args *a) {
    const int n_in = (int)a->w->n_in, n_out = (int)a->w->n_out;
    quantize_act_q8<<<CEIL_DIV(n_in, 256), 256, 0, a->stream>>>(a->x, a->xq, a->xds, n_in);
    gemv_q8<F, GEMV_WARPS, R, U><<<a->w->grid, GEMV_WARPS * 32, 0, a->stream>>>(a->w->dev, a->w->row_bytes, a->xq,
                                                                                      a->xds, a->y, n_in, n_out);
}

template <bool BF16>
static void launch_f16(const gemv_args *a) {
    const int n_in = (int)a->w->n_in, n_out = (int)a->w->n_out;
    const dim3 grid(a->w->grid), block(GEMV_WARPS * 32);
    if (n_in % 8 == 0)
        gemv_f16<BF16, true><<<grid, block, 0, a->stream>>>(a->w->dev, a->w->row_bytes, a->x, a->y, n_in, n_out);
    else
        gemv_f16<BF16, false><<<grid, block, 0, a->stream>>>(a->w->dev, a->w->row_bytes, a->x, a->y, n_in, n_out);
}

typedef struct gemv_row {
    nib_type type;
    const char *kernel;     /* for error messages and inspect */
    bool act_q8;            /* true: x quantized to int8 blocks per call (dp4a path); false: x read as f32 */
    gemv_launch_fn launch;
    occupancy_fn occupancy;
    int rows_per_block;
    bool persistent;        /* cap the grid at what the device holds at once */
} gemv_row;

/* One row per format with a kernel. The dp4a path won for every quantized
 * format by construction (their levels are small integers, so the int8 dot is
 * exact and reads 4x fewer activation bytes than f32); see
 * bench/results/ for the measured rates. Formats missing here (IQ1_*, IQ2_*,
 * IQ3_*, TQ1_0, TQ2_0, F32, Q8_1, Q8_K) stay on the CPU. */
/* A quantized row: format F, R rows per warp, U items in flight per lane, P
 * persistent grid. R/U/P per format are the lab's winners on the H200
 * (bench/results/2026-11-30-h200-gemv.md, sweeps "/w" and "/u"): R=2 with a
 * persistent grid pays for the K-quants whose items are large (their
 * per-item activation loads are shared by the two rows), R=1 for the rest. */
#define ROW_Q8(T, NAME, F, R, U, P) \
    {NIB_TYPE_##T, "gemv_q8<" NAME ">", true, launch_q8<F, R, U>, occupancy_q8<F, R, U>, GEMV_WARPS * (R), P}

static const gemv_row gemv_rows[] = {
    {NIB_TYPE_F16, "gemv_f16", false, launch_f16<false>, occupancy_f16<false>, GEMV_WARPS, true},
    {NIB_TYPE_BF16, "gemv_bf16", false, launch_f16<true>, occupancy_f16<true>, GEMV_WARPS, true},
    ROW_Q8(Q4_0, "q4_0", fmt_q4_0, 1, 4, false),
    ROW_Q8(Q4_1, "q4_1", fmt_q4_1, 1, 4, false),
    ROW_Q8(Q5_0, "q5_0", fmt_q5_0, 1, 4, false),
    ROW_Q8(Q5_1, "q5_1", fmt_q5_1, 1, 4, false),
    ROW_Q8(Q8_0, "q8_0", fmt_q8_0, 1, 8, false),
    ROW_Q8(Q2_K, "q2_K", fmt_q2_K, 4, 2, true),
    ROW_Q8(Q3_K, "q3_K", fmt_q3_K, 1, 8, false),
    ROW_Q8(Q4_K, "q4_K", fmt_q4_K, 2, 4, true),
    ROW_Q8(Q5_K, "q5_K", fmt_q5_K, 2, 4, true),
    ROW_Q8(Q6_K, "q6_K", fmt_q6_K, 2, 4, true),
    ROW_Q8(IQ4_NL, "iq4_nl", fmt_iq4_nl, 1, 4, false),
    ROW_Q8(IQ4_XS, "iq4_xs", fmt_iq4_xs, 1, 4, false),
    ROW_Q8(MXFP4, "mxfp4", fmt_mxfp4, 1, 4, false),
};

static const gemv_row *row_get(nib_type t) {
    for (size_t i = 0; i < sizeof gemv_rows / sizeof gemv_rows[0]; i++)
        if (gemv_rows[i].type == t) return &gemv_rows[i];
    return NULL;
}

extern "C" bool nib_cuda_has_gemv(nib_type type) { return row_get(type) != NULL; }

extern "C" const char *nib_cuda_gemv_path(nib_type type) {
    const gemv_row *r = row_get(type);
    return r ? (r->act_q8 ? "dp4a" : "f32") : NULL;
}

static bool is_dp4a(const nib_cuda_weight *w) {
    const gemv_row *r = row_get(w->type);
    return r && r->act_q8;
}

/* Scratch layout: n_in int8 quants (rounded up to 256 bytes), then n_in/32 float2. */
static size_t scratch_qs_bytes(int64_t n_in) { return (size_t)CEIL_DIV(n_in, 256) * 256; }

extern "C" size_t nib_cuda_gemv_scratch_bytes(const nib_cuda_weight *w) {
    if (!w || !is_dp4a(w)) return 0;
    return scratch_qs_bytes(w->n_in) + (size_t)(w->n_in / 32) * sizeof(float2);
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
    return true;
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

extern "C" nib_status nib_cuda_gemv(const nib_cuda_weight *w, const float *x, float *y, void *scratch,
                                    void *stream, nib_error *err) {
    if (!w || !x || !y) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_gemv: NULL weight, x or y");
    const gemv_row *r = row_get(w->type);
    if (!r) return nib_error_set(err, NIB_ERR_UNSUPPORTED, "nib_cuda_gemv: no kernel for %s", nib_type_name(w->type));
    if (((uintptr_t)x & 15) != 0)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_gemv %s: x is not 16-byte aligned", r->kernel);
    gemv_args a = {w, x, y, NULL, NULL, (cudaStream_t)stream};
    if (is_dp4a(w)) {
        if (!scratch || ((uintptr_t)scratch & 15) != 0)
            return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_gemv %s: scratch NULL or not 16-byte aligned", r->kernel);
        a.xq = (int8_t *)scratch;
        a.xds = (float2 *)((uint8_t *)scratch + scratch_qs_bytes(w->n_in));
    }
    r->launch(&a);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        char what[160];
        snprintf(what, sizeof what, "launch of %s (%s, n_in %lld, n_out %lld)", r->kernel, nib_type_name(w->type),
                 (long long)w->n_in, (long long)w->n_out);
        cuda_ok(e, "cudaGetLastError()", what, err);
        return err ? err->status : NIB_ERR_IO;
    }
    return NIB_OK;
}

extern "C" nib_status nib_cuda_gemv_scratch_read(const nib_cuda_weight *w, const void *scratch, int8_t *qs,
                                                 float *ds, nib_error *err) {
    if (!w || !scratch || !is_dp4a(w)) return nib_error_set(err, NIB_ERR_ARG, "gemv_scratch_read: no int8 scratch");
    const uint8_t *s = (const uint8_t *)scratch;
    if (!CUDA_OK(cudaMemcpy(qs, s, (size_t)w->n_in, cudaMemcpyDeviceToHost), "read activation quants", err))
        return err ? err->status : NIB_ERR_IO;
    if (!CUDA_OK(cudaMemcpy(ds, s + scratch_qs_bytes(w->n_in), (size_t)(w->n_in / 32) * sizeof(float2),
                            cudaMemcpyDeviceToHost),
                 "read activation scales", err))
        return err ? err->status : NIB_ERR_IO;
    return NIB_OK;
}
