/* The CUDA API of a build without nvcc (NIB_CUDA=0 or no nvcc on PATH): every
 * entry answers "not compiled", so callers need no #ifdef. The Makefile
 * compiles this file only when it compiles no .cu file. */
#include <stdio.h>

#include "core/error.h"
#include "cuda/cuda.h"

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
size_t nib_cuda_weight_bytes(const nib_cuda_weight *w) { (void)w; return 0; }
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
