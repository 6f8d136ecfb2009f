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
#include "quant/types.h"

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

template <class F>
static void launch_q8(const gemv_args *a) {
    const int n_in = (int)a->w->n_in, n_out = (int)a->w->n_out;
    quantize_act_q8<<<CEIL_DIV(n_in, 256), 256, 0, a->stream>>>(a->x, a->xq, a->xds, n_in);
    gemv_q8<F><<<CEIL_DIV(n_out, GEMV_WARPS), GEMV_WARPS * 32, 0, a->stream>>>(a->w->dev, a->w->row_bytes, a->xq,
                                                                                 a->xds, a->y, n_in, n_out);
}

template <bool BF16>
static void launch_f16(const gemv_args *a) {
    const int n_in = (int)a->w->n_in, n_out = (int)a->w->n_out;
    const dim3 grid(CEIL_DIV(n_out, GEMV_WARPS)), block(GEMV_WARPS * 32);
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
} gemv_row;

/* One row per format with a kernel. The dp4a path won for every quantized
 * format by construction (their levels are small integers, so the int8 dot is
 * exact and reads 4x fewer activation bytes than f32); see
 * bench/results/ for the measured rates. Formats missing here (IQ1_*, IQ2_*,
 * IQ3_*, TQ1_0, TQ2_0, F32, Q8_1, Q8_K) stay on the CPU. */
static const gemv_row gemv_rows[] = {
    {NIB_TYPE_F16, "gemv_f16", false, launch_f16<false>},
    {NIB_TYPE_BF16, "gemv_bf16", false, launch_f16<true>},
    {NIB_TYPE_Q4_0, "gemv_q8<q4_0>", true, launch_q8<fmt_q4_0>},
    {NIB_TYPE_Q4_1, "gemv_q8<q4_1>", true, launch_q8<fmt_q4_1>},
    {NIB_TYPE_Q5_0, "gemv_q8<q5_0>", true, launch_q8<fmt_q5_0>},
    {NIB_TYPE_Q5_1, "gemv_q8<q5_1>", true, launch_q8<fmt_q5_1>},
    {NIB_TYPE_Q8_0, "gemv_q8<q8_0>", true, launch_q8<fmt_q8_0>},
    {NIB_TYPE_Q2_K, "gemv_q8<q2_K>", true, launch_q8<fmt_q2_K>},
    {NIB_TYPE_Q3_K, "gemv_q8<q3_K>", true, launch_q8<fmt_q3_K>},
    {NIB_TYPE_Q4_K, "gemv_q8<q4_K>", true, launch_q8<fmt_q4_K>},
    {NIB_TYPE_Q5_K, "gemv_q8<q5_K>", true, launch_q8<fmt_q5_K>},
    {NIB_TYPE_Q6_K, "gemv_q8<q6_K>", true, launch_q8<fmt_q6_K>},
    {NIB_TYPE_IQ4_NL, "gemv_q8<iq4_nl>", true, launch_q8<fmt_iq4_nl>},
    {NIB_TYPE_IQ4_XS, "gemv_q8<iq4_xs>", true, launch_q8<fmt_iq4_xs>},
    {NIB_TYPE_MXFP4, "gemv_q8<mxfp4>", true, launch_q8<fmt_mxfp4>},
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

bool cuda_gemv_image_ok(char *reason, size_t n) {
    /* cudaFuncGetAttributes fails with cudaErrorNoKernelImageForDevice (or
     * InvalidDeviceFunction) when this binary holds no code the device can run */
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, gemv_q8<fmt_q4_0>);
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
