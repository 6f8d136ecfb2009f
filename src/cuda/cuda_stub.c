/* The CUDA API of a build without nvcc (NIB_CUDA=0 or no nvcc on PATH): every
 * entry answers "not compiled", so callers need no #ifdef. The Makefile
 * compiles this file only when it compiles no .cu file. */
#include <stdio.h>

#include "core/error.h"
#include "cuda/cuda.h"
#include "cuda/cuda_gemm.h"
#include "cuda/cuda_moe.h"
#include "cuda/cuda_ops.h"

#define NOT_BUILT "CUDA not compiled into this build (no nvcc at build time, or NIB_CUDA=0)"

static void say(char *reason, size_t n) {
    if (reason && n) snprintf(reason, n, "%s", NOT_BUILT);
}

bool nib_cuda_compiled(void) { return false; }
bool nib_cuda_probe(char *reason, size_t n) { say(reason, n); return false; }
int nib_cuda_device_count(char *reason, size_t n) { say(reason, n); return 0; }
bool nib_cuda_device_get(int index, nib_cuda_device_info *info, char *reason, size_t n) {
    (void)index, (void)info;
    say(reason, n);
    return false;
}
void *nib_cuda_alloc(size_t bytes, nib_error *err) {
    (void)bytes;
    nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
    return NULL;
}
void nib_cuda_free(void *p) { (void)p; }
nib_status nib_cuda_copy_to_device(void *dst, const void *src, size_t bytes, nib_error *err) {
    (void)dst, (void)src, (void)bytes;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_copy_to_host(void *dst, const void *src, size_t bytes, nib_error *err) {
    (void)dst, (void)src, (void)bytes;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_fill_f32(float *dst, float value, size_t n, nib_error *err) {
    (void)dst, (void)value, (void)n;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_sync(nib_error *err) { return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT); }
nib_status nib_cuda_weight_upload(nib_type type, const void *host, int64_t n_in, int64_t n_out,
                                  nib_cuda_weight **out, nib_error *err) {
    (void)type, (void)host, (void)n_in, (void)n_out;
    if (out) *out = NULL;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
void nib_cuda_weight_free(nib_cuda_weight *w) { (void)w; }
nib_status nib_cuda_weight_tile(nib_cuda_weight *w, bool *tiled, nib_error *err) {
    (void)w;
    *tiled = false;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_weight_tile_qkv(nib_cuda_weight *w, bool *tiled, nib_error *err) {
    (void)w;
    *tiled = false;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_weight_tile_qkv_pair(nib_cuda_weight *qk, nib_cuda_weight *v, bool *tiled, nib_error *err) {
    (void)qk, (void)v;
    *tiled = false;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_weight_tile_glu(nib_cuda_weight *gate, nib_cuda_weight *up, bool *tiled, nib_error *err) {
    (void)gate, (void)up;
    *tiled = false;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
size_t nib_cuda_weight_bytes(const nib_cuda_weight *w) { (void)w; return 0; }
uint64_t nib_cuda_layout_bytes(nib_type type, uint64_t file_bytes) { (void)type; return file_bytes; }
nib_type nib_cuda_device_type(nib_type type) { return type; }
bool nib_cuda_has_gemv(nib_type type) { (void)type; return false; }
const char *nib_cuda_gemv_path(nib_type type) { (void)type; return NULL; }
size_t nib_cuda_gemv_scratch_bytes(const nib_cuda_weight *w) { (void)w; return 0; }
nib_status nib_cuda_gemv(const nib_cuda_weight *w, const float *x, float *y, void *scratch, void *stream,
                         nib_error *err) {
    (void)w, (void)x, (void)y, (void)scratch, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_gemv_scratch_read(const nib_cuda_weight *w, const void *scratch, int8_t *qs, float *ds,
                                      nib_error *err) {
    (void)w, (void)scratch, (void)qs, (void)ds;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
size_t nib_cuda_act_bytes(int64_t n, int n_tok) { (void)n, (void)n_tok; return 0; }
double nib_cuda_copy_bandwidth_gbs(nib_error *err) {
    nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
    return 0.0;
}
nib_status nib_cuda_add_norm(const nib_cuda_norm_args *a, void *stream, nib_error *err) {
    (void)a, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_qkv_rope(const nib_cuda_qkv_args *a, void *stream, nib_error *err) {
    (void)a, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
bool nib_cuda_matmul_qkv_rope_ok(const struct nib_cuda_weight *w, const struct nib_cuda_weight *wv,
                                 const nib_cuda_qkv_args *a) {
    (void)w, (void)wv, (void)a;
    return false;
}
nib_status nib_cuda_matmul_qkv_rope(const struct nib_cuda_weight *w, const struct nib_cuda_weight *wv, const void *act,
                                    const nib_cuda_qkv_args *a, void *stream, nib_error *err) {
    (void)w, (void)wv, (void)act, (void)a, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_softcap(float *x, int64_t n, float c, void *stream, nib_error *err) {
    (void)x, (void)n, (void)c, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_argmax(const float *x, int64_t n, uint64_t *out, void *stream, nib_error *err) {
    (void)x, (void)n, (void)out, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
void *nib_cuda_stream_new(nib_error *err) {
    nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
    return NULL;
}
void nib_cuda_stream_free(void *stream) { (void)stream; }
nib_status nib_cuda_stream_sync(void *stream, nib_error *err) {
    (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream, nib_error *err) {
    (void)dst, (void)src, (void)bytes, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
void *nib_cuda_host_alloc(size_t bytes, nib_error *err) {
    (void)bytes;
    nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
    return NULL;
}
void nib_cuda_host_free(void *p) { (void)p; }
nib_status nib_cuda_graph_begin(void *stream, nib_error *err) {
    (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_graph_end(void *stream, void **graph, nib_error *err) {
    (void)stream;
    if (graph) *graph = NULL;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_graph_launch(void *graph, void *stream, nib_error *err) {
    (void)graph, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
void nib_cuda_graph_free(void *graph) { (void)graph; }
nib_status nib_cuda_act_quantize(const float *x, int64_t n, int n_tok, void *act, void *stream, nib_error *err) {
    (void)x, (void)n, (void)n_tok, (void)act, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_matmul(const nib_cuda_weight *w, const float *x, const void *act, int n_tok, float *y, bool add,
                           void *stream, nib_error *err) {
    (void)w, (void)x, (void)act, (void)n_tok, (void)y, (void)add, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
bool nib_cuda_matmul_norm_ok(const nib_cuda_weight *w) {
    (void)w;
    return false;
}
bool nib_cuda_glu_takes_norm(const nib_cuda_weight *gate) {
    (void)gate;
    return false;
}
nib_status nib_cuda_matmul_norm(const nib_cuda_weight *w, const void *act, float *y, const float *norm_w, float eps,
                                void *act_out, void *stream, nib_error *err) {
    (void)w, (void)act, (void)y, (void)norm_w, (void)eps, (void)act_out, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_matmul_argmax(const nib_cuda_weight *w, const float *x, const void *act, float *y,
                                  uint64_t *best, void *stream, nib_error *err) {
    (void)w, (void)x, (void)act, (void)y, (void)best, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_matmul_pair(const nib_cuda_weight *a, const nib_cuda_weight *b, const float *x, const void *act,
                                int n_tok, float *ya, float *yb, void *stream, nib_error *err) {
    (void)a, (void)b, (void)x, (void)act, (void)n_tok, (void)ya, (void)yb, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}

const char *nib_cuda_pair_kernel(const nib_cuda_weight *a, const nib_cuda_weight *b, int n_tok) {
    (void)a, (void)b, (void)n_tok;
    return NULL;
}

nib_status nib_cuda_matmul_glu(const nib_cuda_weight *gate, const nib_cuda_weight *up, const float *x,
                               const void *act, int n_tok, nib_cuda_glu glu, float *h, float *tmp, void *stream,
                               nib_error *err) {
    (void)gate, (void)up, (void)x, (void)act, (void)n_tok, (void)glu, (void)h, (void)tmp, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}

/* cuda_dequant.h (dequant.cu) */
#include "cuda/cuda_dequant.h"
bool nib_cuda_has_get_rows(nib_type type) { (void)type; return false; }
nib_status nib_cuda_get_rows(const nib_cuda_weight *w, const int32_t *ids, int n_tok, float scale, float *out,
                             void *stream, nib_error *err) {
    (void)w, (void)ids, (void)n_tok, (void)scale, (void)out, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}

/* cuda_attention.h (attention.cu) */
#include "cuda/cuda_attention.h"

size_t nib_cuda_attention_scratch_bytes(int n_tok, int n_head, int hd_v, int max_len) {
    (void)n_tok, (void)n_head, (void)hd_v, (void)max_len;
    return 0;
}
nib_status nib_cuda_attention(const nib_cuda_attn *a, void *stream, nib_error *err) {
    (void)a, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}

/* cuda_sample.h (sample.cu) */
#include "cuda/cuda_sample.h"

size_t nib_cuda_sample_scratch_bytes(int n_vocab, int top_k_max) {
    (void)n_vocab, (void)top_k_max;
    return 0;
}
nib_status nib_cuda_sample(const float *logits, int n_vocab, const nib_cuda_sample_params *params_dev,
                           const double *u_dev, void *scratch, int top_k_max, int32_t *out_id, void *stream,
                           nib_error *err) {
    (void)logits, (void)n_vocab, (void)params_dev, (void)u_dev, (void)scratch, (void)top_k_max, (void)out_id,
        (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}

nib_status nib_cuda_blas_new(int64_t max_elems, int64_t max_act, nib_cuda_blas **out, char *why, size_t why_size,
                             nib_error *err) {
    (void)max_elems, (void)max_act, (void)err;
    if (out) *out = NULL;
    say(why, why_size);
    return NIB_OK;
}
void nib_cuda_blas_free(nib_cuda_blas *g) { (void)g; }
bool nib_cuda_blas_probe(char *what, size_t what_size) {
    say(what, what_size);
    return false;
}
bool nib_cuda_blas_takes(const nib_cuda_blas *g, const nib_cuda_weight *w) { (void)g, (void)w; return false; }
nib_status nib_cuda_gemm(nib_cuda_blas *g, const nib_cuda_weight *w, const float *x, int n_tok, float *y, bool add,
                         void *stream, nib_error *err) {
    (void)g, (void)w, (void)x, (void)n_tok, (void)y, (void)add, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_gemm_glu(nib_cuda_blas *g, const nib_cuda_weight *gate, const nib_cuda_weight *up, const float *x,
                             int n_tok, nib_cuda_glu glu, float *h, float *tmp, void *stream, nib_error *err) {
    (void)g, (void)gate, (void)up, (void)x, (void)n_tok, (void)glu, (void)h, (void)tmp, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
const char *nib_cuda_blas_name(void) { return NOT_BUILT; }

bool nib_cuda_moe_has(nib_type type) { (void)type; return false; }
nib_status nib_cuda_moe_route(const float *logits, int n_tok, int n_expert, int k, bool norm, int32_t *ids, float *w,
                              void *stream, nib_error *err) {
    (void)logits, (void)n_tok, (void)n_expert, (void)k, (void)norm, (void)ids, (void)w, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_moe_matmul(const nib_cuda_weight *experts, int n_expert, const int32_t *ids, int n_slots,
                               int act_div, const void *act, float *y, void *stream, nib_error *err) {
    (void)experts, (void)n_expert, (void)ids, (void)n_slots, (void)act_div, (void)act, (void)y, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_glu_rows(const float *g, const float *u, float *h, int64_t n, nib_cuda_glu glu, void *stream,
                             nib_error *err) {
    (void)g, (void)u, (void)h, (void)n, (void)glu, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
nib_status nib_cuda_moe_combine(const float *y, const float *w, int n_tok, int k, int64_t n, float *dst, bool add,
                                void *stream, nib_error *err) {
    (void)y, (void)w, (void)n_tok, (void)k, (void)n, (void)dst, (void)add, (void)stream;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED, NOT_BUILT);
}
