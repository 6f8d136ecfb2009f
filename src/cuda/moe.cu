/* Mixture-of-experts FFN kernels (cuda_moe.h): the router's choice, the
 * experts' products over every slot in one launch, and the weighted sum.
 *
 * The experts' GEMV is the plain one-token body (gemv_kernels.cuh q8_body,
 * two rows a warp, one item a lane a pass) with the weight pointer taken from
 * the slot's expert index: blockIdx.y is the slot, and each slot reads one
 * expert's rows against one activation row. Its arithmetic is the plain
 * GEMV's, so a slot's outputs are bit for bit nib_cuda_matmul's of that
 * expert alone on that row (test_gpu_moe checks this). */
#include <math.h>
#include <stdio.h>

#include "cuda/cuda_internal.h"
#include "cuda/cuda_moe.h"
#include "cuda/gemv_kernels.cuh"

#define MOE_MAX_EXPERTS 512   /* as the loader's NIB_MAX_EXPERTS: 16 a lane */
#define ROUTE_WARPS 4
#define MOE_WEIGHT_SUM_MIN 6.103515625e-5f /* the CPU's (ffn_moe.c): llama.cpp's clamp of the sum, 2^-14 */

/* One warp a token. The softmax as the CPU's nib_softmax_rows (max, the
 * exponentials' sum in double, times the float reciprocal); then k rounds of
 * a warp-wide arg-max over the experts not yet taken (larger probability, or
 * the smaller index among equals: the CPU's top_k); lane j keeps choice j's
 * weight, summed in choice order in float as the CPU does. */
static __global__ void __launch_bounds__(ROUTE_WARPS * 32)
moe_route(const float *__restrict__ logits, int n_tok, int ne, int k, int norm, int32_t *__restrict__ ids,
          float *__restrict__ w) {
    pdl_launch_dependents();
    pdl_wait();
    const int t = blockIdx.x * ROUTE_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (t >= n_tok) return;
    const float *l = logits + (size_t)t * ne;
    float mx = -INFINITY;
    for (int e = lane; e < ne; e += 32) mx = l[e] > mx ? l[e] : mx;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    double sum = 0.0;
    for (int e = lane; e < ne; e += 32) sum += (double)expf(l[e] - mx);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = (float)(1.0 / sum);
    unsigned taken = 0; /* bit i: expert lane + 32 i */
    float mine = 0.0f, wsum = 0.0f;
    for (int j = 0; j < k; j++) {
        float bp = 0.0f;
        int be = -1;
        for (int i = 0, e = lane; e < ne; i++, e += 32) {
            if (taken >> i & 1u) continue;
            const float p = __fmul_rn(expf(l[e] - mx), inv);
            if (be < 0 || p > bp) bp = p, be = e;
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float op = __shfl_xor_sync(0xffffffffu, bp, o);
            const int oe = __shfl_xor_sync(0xffffffffu, be, o);
            if (oe >= 0 && (be < 0 || op > bp || (op == bp && oe < be))) bp = op, be = oe;
        }
        if ((be & 31) == lane) taken |= 1u << (be >> 5);
        if (lane == j) mine = bp;
        if (lane == 0) ids[(size_t)t * k + j] = be;
        wsum = __fadd_rn(wsum, bp);
    }
    if (lane < k) {
        const float s = wsum > MOE_WEIGHT_SUM_MIN ? wsum : MOE_WEIGHT_SUM_MIN;
        w[(size_t)t * k + lane] = norm ? __fdiv_rn(mine, s) : mine;
    }
}

/* y[s] = W[ids[s]] . x[s / act_div] for the slot s = blockIdx.y; two rows a
 * warp, grid.x covering the expert's rows once. The expert index comes from
 * the router's kernel: read after the wait, so no weights load ahead. Two
 * rows a warp against one, H200, synth Qwen3-30B-A3B Q4_K_M tg128 in three
 * alternated rounds: 362.3 / 361.0 / 362.2 -> 387.2 / 386.6 / 387.8 t/s
 * (+7%: a lane's two loads in flight; the rows are 2,048 and 768 wide, 32
 * and 12 items, one pass a lane either way). */
template <class F>
static __global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_q8_moe(const uint8_t *__restrict__ W, size_t expert_bytes, size_t row_bytes, const int32_t *__restrict__ ids,
            act_q8 a, int act_div, float *__restrict__ y, int n_in, int n_out) {
    pdl_wait();
    const int s = blockIdx.y, row = s / act_div;
    /* q8_body reads token row blockIdx.y (= s) of its activation and writes
     * y's row s: a view whose row s is the activation's row `row` */
    act_q8 as = a;
    as.xq = (const int8_t *)((uintptr_t)a.xq + (intptr_t)(row - s) * a.qs_stride);
    as.xds = (const float2 *)((uintptr_t)a.xds + (intptr_t)(row - s) * (n_in / 32) * (intptr_t)sizeof(float2));
    as.n_tok = s + 1;
    q8_body<F, GEMV_WARPS, 2, 1, 1>(W + (size_t)ids[s] * expert_bytes, row_bytes, as, y, n_out, n_in, n_out, 0, NULL,
                                    blockIdx.x, gridDim.x);
}

/* dst[t][i] (+)= sum_j y[t k + j][i] * w[t k + j]: the products and sums
 * rounded one by one (no fused multiply-add), in choice order, as the CPU */
static __global__ void moe_combine(const float *__restrict__ y, const float *__restrict__ w, int k, int64_t n,
                                   int64_t total, float *__restrict__ dst, int add) {
    pdl_launch_dependents();
    pdl_wait();
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    const int64_t t = idx / n, i = idx % n;
    const float *ys = y + (size_t)t * k * n + i, *ws = w + (size_t)t * k;
    float o = __fmul_rn(ys[0], ws[0]);
    for (int j = 1; j < k; j++) o = __fadd_rn(o, __fmul_rn(ys[(size_t)j * n], ws[j]));
    dst[idx] = add ? __fadd_rn(dst[idx], o) : o;
}

typedef cudaError_t (*moe_launch_fn)(const nib_cuda_weight *w, int64_t rows, const int32_t *ids, int n_slots,
                                     const act_q8 &a, int act_div, float *y, cudaStream_t st);
template <class F>
static cudaError_t launch_moe(const nib_cuda_weight *w, int64_t rows, const int32_t *ids, int n_slots, const act_q8 &a,
                              int act_div, float *y, cudaStream_t st) {
    return pdl_launch(gemv_q8_moe<F>, dim3((unsigned)CEIL_DIV(rows, GEMV_WARPS * 2), (unsigned)n_slots),
                      dim3(GEMV_WARPS * 32), 0, st, (const uint8_t *)w->dev, (size_t)rows * w->row_bytes, w->row_bytes,
                      ids, a, act_div, y, (int)w->n_in, (int)rows);
}

/* The formats with an expert kernel: the ones mixture-of-experts files come
 * in (llama.cpp's mixes and MXFP4) */
static const struct moe_row {
    nib_type type;
    moe_launch_fn launch;
} moe_rows[] = {
    {NIB_TYPE_Q4_0, launch_moe<fmt_q4_0>},     {NIB_TYPE_Q4_1, launch_moe<fmt_q4_1>},
    {NIB_TYPE_Q5_0, launch_moe<fmt_q5_0>},     {NIB_TYPE_Q5_1, launch_moe<fmt_q5_1>},
    {NIB_TYPE_Q8_0, launch_moe<fmt_q8_0>},     {NIB_TYPE_Q2_K, launch_moe<fmt_q2_K>},
    {NIB_TYPE_Q3_K, launch_moe<fmt_q3_K>},     {NIB_TYPE_Q4_K, launch_moe<fmt_q4_K>},
    {NIB_TYPE_Q5_K, launch_moe<fmt_q5_K>},     {NIB_TYPE_Q6_K, launch_moe<fmt_q6_K>},
    {NIB_TYPE_IQ4_NL, launch_moe<fmt_iq4_nl>}, {NIB_TYPE_IQ4_XS, launch_moe<fmt_iq4_xs>},
    {NIB_TYPE_MXFP4, launch_moe<fmt_mxfp4>},
};

static const moe_row *moe_get(nib_type t) {
    for (size_t i = 0; i < sizeof moe_rows / sizeof moe_rows[0]; i++)
        if (moe_rows[i].type == t) return &moe_rows[i];
    return NULL;
}

extern "C" bool nib_cuda_moe_has(nib_type type) { return moe_get(nib_cuda_device_type(type)) != NULL; }

extern "C" nib_status nib_cuda_moe_route(const float *logits, int n_tok, int n_expert, int k, bool norm, int32_t *ids,
                                         float *w, void *stream, nib_error *err) {
    if (!logits || !ids || !w || n_tok < 1 || n_expert < 1 || n_expert > MOE_MAX_EXPERTS || k < 1 || k > n_expert ||
        k > NIB_CUDA_MOE_MAX_K)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_moe_route: bad arguments (%d tokens, %d experts, %d chosen)",
                             n_tok, n_expert, k);
    char what[96];
    snprintf(what, sizeof what, "launch of moe_route (%d tokens, %d experts, %d chosen)", n_tok, n_expert, k);
    return cuda_launch_status(pdl_launch(moe_route, dim3((unsigned)CEIL_DIV(n_tok, ROUTE_WARPS)),
                                         dim3(ROUTE_WARPS * 32), 0, (cudaStream_t)stream, logits, n_tok, n_expert, k,
                                         norm ? 1 : 0, ids, w),
                              what, err);
}

extern "C" nib_status nib_cuda_moe_matmul(const nib_cuda_weight *experts, int n_expert, const int32_t *ids,
                                          int n_slots, int act_div, const void *act, float *y, void *stream,
                                          nib_error *err) {
    if (!experts || !ids || !act || !y || n_expert < 1 || n_slots < 1 || n_slots > 65535 || act_div < 1 ||
        experts->n_out % n_expert != 0 || ((uintptr_t)act & 15) != 0)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_moe_matmul: bad arguments (%d experts, %d slots, act_div %d)",
                             n_expert, n_slots, act_div);
    const moe_row *r = moe_get(experts->type);
    if (!r || experts->t32_g || experts->t32_pair)
        return nib_error_set(err, NIB_ERR_UNSUPPORTED, "nib_cuda_moe_matmul: no expert kernel for %s%s",
                             nib_type_name(experts->type), r ? " in the tiled layout" : "");
    const int64_t rows = experts->n_out / n_expert;
    const int n_rows = CEIL_DIV(n_slots, act_div);
    const cudaError_t e = r->launch(experts, rows, ids, n_slots, cuda_act_view(act, experts->n_in, n_rows), act_div,
                                    y, (cudaStream_t)stream);
    char what[160];
    snprintf(what, sizeof what, "launch of gemv_q8_moe (%s, n_in %lld, %lld rows x %d experts, %d slots)",
             nib_type_name(experts->type), (long long)experts->n_in, (long long)rows, n_expert, n_slots);
    return cuda_launch_status(e, what, err);
}

extern "C" nib_status nib_cuda_glu_rows(const float *g, const float *u, float *h, int64_t n, nib_cuda_glu glu,
                                   void *stream, nib_error *err) {
    if (!g || !u || !h || n < 1 || (glu != NIB_CUDA_GLU_SILU && glu != NIB_CUDA_GLU_GELU_TANH))
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_glu_rows: bad arguments");
    return cuda_glu_rows(g, u, h, n, glu, (cudaStream_t)stream, err);
}

extern "C" nib_status nib_cuda_moe_combine(const float *y, const float *w, int n_tok, int k, int64_t n, float *dst,
                                           bool add, void *stream, nib_error *err) {
    if (!y || !w || !dst || n_tok < 1 || k < 1 || n < 1)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_moe_combine: bad arguments");
    const int64_t total = (int64_t)n_tok * n;
    char what[96];
    snprintf(what, sizeof what, "launch of moe_combine (%d tokens, %d experts, %lld wide)", n_tok, k, (long long)n);
    return cuda_launch_status(pdl_launch(moe_combine, dim3((unsigned)CEIL_DIV(total, 256)), dim3(256), 0,
                                         (cudaStream_t)stream, y, w, k, n, total, dst, add ? 1 : 0),
                              what, err);
}
