/* Prompt chunks as cuBLAS GEMMs on decoded weights (cuda_gemm.h). cuBLAS
 * comes in by dlopen: its header gives the types, the entry points are
 * looked up by their exported names, and nothing here links against it. */
#include <cuda_fp16.h>
#include <dlfcn.h>
#include <stdio.h>

#include <cublas_api.h>

#include "cuda/cuda_dequant.h"
#include "cuda/cuda_gemm.h"
#include "cuda/cuda_internal.h"

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*set_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*set_workspace_fn)(cublasHandle_t, void *, size_t);
typedef const char *(*status_string_fn)(cublasStatus_t);
typedef cublasStatus_t (*gemm_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                     const void *, const void *, cudaDataType, int, const void *, cudaDataType, int,
                                     const void *, void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

/* Hopper's recommended cuBLAS workspace (its default pool would allocate
 * on first use; this one is made at load) */
#define GEMM_WORKSPACE ((size_t)32 << 20)

struct nib_cuda_blas {
    void *so;
    const char *soname; /* the library loaded */
    create_fn create;
    destroy_fn destroy;
    set_stream_fn set_stream;
    set_workspace_fn set_workspace;
    status_string_fn status_string;
    gemm_ex_fn gemm_ex;
    cublasHandle_t handle;
    cudaStream_t stream; /* the stream the handle is on (with the workspace set after it) */
    void *workspace;
    __half *wh;          /* (max_elems) a decoded matrix */
    __half *xh;          /* (max_act) the activations of a chunk */
    int64_t max_elems, max_act;
};

static const char *const CUBLAS_SONAMES[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};

extern "C" const char *nib_cuda_blas_name(void) {
    return "cuBLAS GEMM, fp16 tensor cores with fp32 accumulation, weights decoded per matrix";
}

/* x to fp16, saturated at fp16's largest finite value (65504): an input
 * beyond it would otherwise become inf and every output it touches NaN. A
 * NaN stays NaN (comparisons, not fminf/fmaxf, which would make it finite
 * and hide it). */
__global__ void to_f16_sat(const float *__restrict__ x, __half *__restrict__ xh, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    xh[i] = __float2half_rn(v > 65504.0f ? 65504.0f : v < -65504.0f ? -65504.0f : v);
}

extern "C" void nib_cuda_blas_free(nib_cuda_blas *g) {
    if (!g) return;
    if (g->handle && g->destroy) g->destroy(g->handle);
    cudaFree(g->workspace);
    cudaFree(g->wh);
    cudaFree(g->xh);
    if (g->so) dlclose(g->so);
    free(g);
}

/* NULL with the reason when cuBLAS cannot be loaded or lacks an entry */
static nib_cuda_blas *load(char *why, size_t why_size) {
    nib_cuda_blas *g = (nib_cuda_blas *)calloc(1, sizeof *g);
    if (!g) {
        snprintf(why, why_size, "out of host memory");
        return NULL;
    }
    for (size_t i = 0; i < sizeof CUBLAS_SONAMES / sizeof CUBLAS_SONAMES[0] && !g->so; i++)
        if ((g->so = dlopen(CUBLAS_SONAMES[i], RTLD_NOW | RTLD_LOCAL))) g->soname = CUBLAS_SONAMES[i];
    if (!g->so) {
        snprintf(why, why_size, "cuBLAS not found (%s)", dlerror());
        free(g);
        return NULL;
    }
    const struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"cublasCreate_v2", (void **)&g->create},
        {"cublasDestroy_v2", (void **)&g->destroy},
        {"cublasSetStream_v2", (void **)&g->set_stream},
        {"cublasSetWorkspace_v2", (void **)&g->set_workspace},
        {"cublasGetStatusString", (void **)&g->status_string},
        {"cublasGemmEx", (void **)&g->gemm_ex},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (!(*syms[i].slot = dlsym(g->so, syms[i].name))) {
            snprintf(why, why_size, "cuBLAS lacks %s", syms[i].name);
            nib_cuda_blas_free(g);
            return NULL;
        }
    return g;
}

extern "C" bool nib_cuda_blas_probe(char *what, size_t what_size) {
    nib_cuda_blas *g = load(what, what_size);
    if (!g) return false;
    snprintf(what, what_size, "%s", g->soname);
    nib_cuda_blas_free(g);
    return true;
}

extern "C" nib_status nib_cuda_blas_new(int64_t max_elems, int64_t max_act, nib_cuda_blas **out, char *why,
                                        size_t why_size, nib_error *err) {
    if (!out || max_elems < 1 || max_act < 1)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_blas_new: bad arguments (%lld weights, %lld activations)",
                             (long long)max_elems, (long long)max_act);
    *out = NULL;
    nib_cuda_blas *g = load(why, why_size);
    if (!g) return NIB_OK;
    g->max_elems = max_elems, g->max_act = max_act;
    const size_t scratch = (size_t)(max_elems + max_act) * sizeof(__half);
    if (cudaMalloc(&g->wh, (size_t)max_elems * sizeof(__half)) != cudaSuccess ||
        cudaMalloc(&g->xh, (size_t)max_act * sizeof(__half)) != cudaSuccess ||
        cudaMalloc(&g->workspace, GEMM_WORKSPACE) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, why_size, "no room on the device for its %.0f MB decode scratch", (scratch + GEMM_WORKSPACE) / 1e6);
        nib_cuda_blas_free(g);
        return NIB_OK;
    }
    const cublasStatus_t cs = g->create(&g->handle);
    if (cs != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, why_size, "cublasCreate: %s", g->status_string(cs));
        g->handle = NULL;
        nib_cuda_blas_free(g);
        return NIB_OK;
    }
    g->stream = (cudaStream_t)-1; /* no stream set yet */
    *out = g;
    return NIB_OK;
}

extern "C" bool nib_cuda_blas_takes(const nib_cuda_blas *g, const nib_cuda_weight *w) {
    return g && w && w->n_in * w->n_out <= g->max_elems && nib_cuda_has_get_rows(w->type);
}

static nib_status on_stream(nib_cuda_blas *g, cudaStream_t st, nib_error *err) {
    if (st == g->stream) return NIB_OK;
    /* setting the stream puts the handle back on its default workspace */
    cublasStatus_t cs = g->set_stream(g->handle, st);
    if (cs == CUBLAS_STATUS_SUCCESS) cs = g->set_workspace(g->handle, g->workspace, GEMM_WORKSPACE);
    if (cs != CUBLAS_STATUS_SUCCESS)
        return nib_error_set(err, NIB_ERR_IO, "cuBLAS: setting the stream and workspace failed: %s",
                             g->status_string(cs));
    g->stream = st;
    return NIB_OK;
}

extern "C" nib_status nib_cuda_gemm(nib_cuda_blas *g, const nib_cuda_weight *w, const float *x, int n_tok, float *y,
                                    bool add, void *stream, nib_error *err) {
    if (!g || !w || !x || !y || n_tok < 1)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_gemm: NULL argument or %d tokens", n_tok);
    if (!nib_cuda_blas_takes(g, w) || w->n_in * n_tok > g->max_act)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_gemm: %s %lld x %lld over %d tokens does not fit the scratch",
                             nib_type_name(w->type), (long long)w->n_in, (long long)w->n_out, n_tok);
    cudaStream_t st = (cudaStream_t)stream;
    const int64_t n_x = w->n_in * n_tok;
    /* fp16 weights are used where they are: rows of 2 n_in bytes, back to back */
    const __half *wh = w->type == NIB_TYPE_F16 ? (const __half *)w->dev : g->wh;
    nib_status s = w->type == NIB_TYPE_F16 ? NIB_OK : cuda_dequant_f16(w, g->wh, st, err);
    if (s != NIB_OK) return s;
    to_f16_sat<<<(unsigned)CEIL_DIV(n_x, 256), 256, 0, st>>>(x, g->xh, n_x);
    char what[96];
    snprintf(what, sizeof what, "launch of to_f16_sat (%lld values)", (long long)n_x);
    if ((s = cuda_launch_status(cudaSuccess, what, err)) != NIB_OK || (s = on_stream(g, st, err)) != NIB_OK) return s;
    /* column-major terms: Y (n_out x n_tok, ld n_out) = Wh^T (Wh is n_in x n_out, ld n_in) Xh (n_in x n_tok) */
    const float alpha = 1.0f, beta = add ? 1.0f : 0.0f;
    const int m = (int)w->n_out, k = (int)w->n_in;
    const cublasStatus_t cs =
        g->gemm_ex(g->handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n_tok, k, &alpha, wh, CUDA_R_16F, k, g->xh, CUDA_R_16F, k,
                   &beta, y, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (cs != CUBLAS_STATUS_SUCCESS)
        return nib_error_set(err, NIB_ERR_IO, "cuBLAS: cublasGemmEx failed for %s %lld x %lld, %d tokens: %s",
                             nib_type_name(w->type), (long long)w->n_in, (long long)w->n_out, n_tok,
                             g->status_string(cs));
    return NIB_OK;
}

extern "C" nib_status nib_cuda_gemm_glu(nib_cuda_blas *g, const nib_cuda_weight *gate, const nib_cuda_weight *up,
                                        const float *x, int n_tok, nib_cuda_glu glu, float *h, float *tmp,
                                        void *stream, nib_error *err) {
    if (!gate || !up || !tmp || gate->n_in != up->n_in || gate->n_out != up->n_out ||
        (glu != NIB_CUDA_GLU_SILU && glu != NIB_CUDA_GLU_GELU_TANH))
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_gemm_glu: NULL or mismatched gate/up, no tmp, or unknown "
                             "activation");
    nib_status s = nib_cuda_gemm(g, gate, x, n_tok, h, false, stream, err);
    if (s == NIB_OK) s = nib_cuda_gemm(g, up, x, n_tok, tmp, false, stream, err);
    if (s != NIB_OK) return s;
    return cuda_glu_rows(h, tmp, h, gate->n_out * n_tok, glu, (cudaStream_t)stream, err);
}
