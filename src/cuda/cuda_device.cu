/* Probing, device memory and weight upload.
 *
 * The CUDA runtime is linked statically (the Makefile's -lcudart_static), so
 * a nib binary starts on a machine with no NVIDIA driver at all: the runtime
 * looks for libcuda.so when first called, and its absence is an error code
 * here (cudaErrorInsufficientDriver / cudaErrorNoDevice), turned into a
 * one-line reason, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_dequant.h"
#include "cuda/cuda_internal.h"
#include "cuda/gpu_layout.h"
extern "C" {
#include "quant/formats.h" /* nib_tq1_0_to_tq2_0, block_tq2_0 */
}

static void say(char *reason, size_t n, const char *fmt, const char *a, int b, int c) {
    if (reason && n) snprintf(reason, n, fmt, a, b, c);
}

extern "C" bool nib_cuda_compiled(void) { return true; }

extern "C" int nib_cuda_device_count(char *reason, size_t n) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (e == cudaErrorNoDevice) say(reason, n, "no CUDA device found%s", "", 0, 0);
        else if (e == cudaErrorInsufficientDriver)
            say(reason, n, "no NVIDIA driver, or one older than this build's CUDA runtime (%s)", cudaGetErrorName(e), 0, 0);
        else say(reason, n, "CUDA unavailable: %s", cudaGetErrorString(e), 0, 0);
        return 0;
    }
    if (count == 0) say(reason, n, "no CUDA device found%s", "", 0, 0);
    return count;
}

extern "C" bool nib_cuda_device_get(int index, nib_cuda_device_info *info, char *reason, size_t n) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, index);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (reason && n) snprintf(reason, n, "device %d: %s", index, cudaGetErrorString(e));
        return false;
    }
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%.127s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    info->total_bytes = p.totalGlobalMem;
    info->l2_bytes = (size_t)p.l2CacheSize;
    /* free memory needs a context on that device */
    int prev = 0;
    size_t free_b = 0, total_b = 0;
    if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(index) == cudaSuccess &&
        cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
        info->free_bytes = free_b;
        info->total_bytes = total_b;
    }
    (void)cudaGetLastError();
    (void)cudaSetDevice(prev);
    return true;
}

extern "C" bool nib_cuda_probe(char *reason, size_t n) {
    if (nib_cuda_device_count(reason, n) <= 0) return false;
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        say(reason, n, "cannot read device 0's properties%s", "", 0, 0);
        return false;
    }
    if (p.major < NIB_CUDA_MIN_CC_MAJOR) {
        say(reason, n, "device 0 (%s) is compute capability %d.%d; nib's CUDA kernels need 8.0 or newer", p.name,
            p.major, p.minor);
        return false;
    }
    return cuda_gemv_image_ok(reason, n);
}

/* ---- memory -------------------------------------------------------------------- */

static nib_status oom(size_t bytes, const char *what, nib_error *err) {
    size_t free_b = 0, total_b = 0;
    (void)cudaGetLastError();
    cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError();
    return nib_error_set(err, NIB_ERR_NOMEM, "CUDA out of memory: %s needs %zu bytes (%.1f MiB), %zu free of %zu", what,
                         bytes, (double)bytes / 1048576.0, free_b, total_b);
}

extern "C" void *nib_cuda_alloc(size_t bytes, nib_error *err) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaErrorMemoryAllocation) {
        oom(bytes, "nib_cuda_alloc", err);
        return NULL;
    }
    if (!cuda_ok(e, "cudaMalloc", "nib_cuda_alloc", err)) return NULL;
    return p;
}

extern "C" void nib_cuda_free(void *p) {
    if (p) cudaFree(p);
}

extern "C" nib_status nib_cuda_copy_to_device(void *dst, const void *src, size_t bytes, nib_error *err) {
    return CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "nib_cuda_copy_to_device", err)
               ? NIB_OK : err ? err->status : NIB_ERR_IO;
}

extern "C" nib_status nib_cuda_copy_to_host(void *dst, const void *src, size_t bytes, nib_error *err) {
    return CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "nib_cuda_copy_to_host", err)
               ? NIB_OK : err ? err->status : NIB_ERR_IO;
}

__global__ static void fill_f32(float *p, float v, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

extern "C" nib_status nib_cuda_fill_f32(float *dst, float value, size_t n, nib_error *err) {
    if (n == 0) return NIB_OK;
    fill_f32<<<(unsigned)(n < 256 * 1024 ? CEIL_DIV(n, 256) : 1024), 256>>>(dst, value, n);
    return CUDA_OK(cudaGetLastError(), "fill_f32", err) ? NIB_OK : err ? err->status : NIB_ERR_IO;
}

extern "C" nib_status nib_cuda_sync(nib_error *err) {
    return CUDA_OK(cudaDeviceSynchronize(), "nib_cuda_sync", err) ? NIB_OK : err ? err->status : NIB_ERR_IO;
}

extern "C" double nib_cuda_copy_bandwidth_gbs(nib_error *err) {
    const size_t bytes = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float ms[10];
    double gbs = 0.0;
    if (!CUDA_OK(cudaMalloc(&a, bytes), "copy bandwidth probe", err) ||
        !CUDA_OK(cudaMalloc(&b, bytes), "copy bandwidth probe", err) ||
        !CUDA_OK(cudaMemset(a, 1, bytes), "copy bandwidth probe", err) ||
        !CUDA_OK(cudaEventCreate(&e0), "copy bandwidth probe", err) ||
        !CUDA_OK(cudaEventCreate(&e1), "copy bandwidth probe", err))
        goto done;
    for (int i = -2; i < 10; i++) { /* two warm-ups */
        if (!CUDA_OK(cudaEventRecord(e0), "copy bandwidth probe", err) ||
            !CUDA_OK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "copy bandwidth probe", err) ||
            !CUDA_OK(cudaEventRecord(e1), "copy bandwidth probe", err) ||
            !CUDA_OK(cudaEventSynchronize(e1), "copy bandwidth probe", err))
            goto done;
        if (i >= 0) cudaEventElapsedTime(&ms[i], e0, e1);
    }
    for (int i = 1; i < 10; i++) /* insertion sort for the median */
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
            float t = ms[j];
            ms[j] = ms[j - 1], ms[j - 1] = t;
        }
    gbs = 2.0 * (double)bytes / (0.5 * (ms[4] + ms[5]) * 1e-3) / 1e9;
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(a), cudaFree(b);
    return gbs;
}

/* ---- weights ------------------------------------------------------------------ */

#define WEIGHT_PAD 16 /* zero bytes after the last row: the kernels' word loads may read past a block */

/* The formats the device keeps otherwise than the file (gpu_layout.h): the
 * format its kernels read, its block's bytes there, and the rewrite of n
 * file blocks of `fb` bytes into n device blocks of `db` bytes. */
typedef void (*repack_fn)(const uint8_t *src, uint8_t *dst, size_t n, size_t fb, size_t db);
typedef struct {
    nib_type file, dev;
    size_t dev_block;
    repack_fn repack;
} dev_layout;

/* each block at the start of its slot, the rest zero */
static void repack_slots(const uint8_t *src, uint8_t *dst, size_t n, size_t fb, size_t db) {
    for (size_t i = 0; i < n; i++) {
        memcpy(dst + i * db, src + i * fb, fb);
        memset(dst + i * db + fb, 0, db - fb);
    }
}
static void repack_tq1_0(const uint8_t *src, uint8_t *dst, size_t n, size_t, size_t) {
    nib_tq1_0_to_tq2_0(src, dst, (int64_t)n);
}

static const dev_layout dev_layouts[] = {
    {NIB_TYPE_Q6_K, NIB_TYPE_Q6_K, NIB_CUDA_Q6_K_SLOT, repack_slots},
    {NIB_TYPE_TQ1_0, NIB_TYPE_TQ2_0, sizeof(block_tq2_0), repack_tq1_0},
};

static const dev_layout *layout_of(nib_type t) {
    for (size_t i = 0; i < sizeof dev_layouts / sizeof dev_layouts[0]; i++)
        if (dev_layouts[i].file == t) return &dev_layouts[i];
    return NULL;
}

extern "C" nib_type nib_cuda_device_type(nib_type type) {
    const dev_layout *L = layout_of(type);
    return L ? L->dev : type;
}

extern "C" uint64_t nib_cuda_layout_bytes(nib_type type, uint64_t file_bytes) {
    const dev_layout *L = layout_of(type);
    const size_t bb = nib_type_block_bytes(type);
    return L && bb ? file_bytes / bb * L->dev_block : file_bytes;
}

/* n_blocks file blocks of bb bytes from host to the device in L's form,
 * through a bounded host buffer */
static bool upload_repacked(uint8_t *dev, const uint8_t *host, size_t n_blocks, size_t bb, const dev_layout *L,
                            nib_error *err) {
    const size_t db = L->dev_block, per = ((size_t)8 << 20) / db; /* blocks a pass: 8 MB */
    uint8_t *buf = (uint8_t *)malloc(per * db);
    if (!buf) {
        nib_error_set(err, NIB_ERR_NOMEM, "CUDA upload: out of host memory for the repack buffer");
        return false;
    }
    bool ok = true;
    for (size_t b0 = 0; b0 < n_blocks && ok; b0 += per) {
        const size_t n = n_blocks - b0 < per ? n_blocks - b0 : per;
        L->repack(host + b0 * bb, buf, n, bb, db);
        ok = CUDA_OK(cudaMemcpy(dev + b0 * db, buf, n * db, cudaMemcpyHostToDevice), "weight upload (repacked)", err);
    }
    free(buf);
    return ok;
}

extern "C" nib_status nib_cuda_weight_upload(nib_type type, const void *host, int64_t n_in, int64_t n_out,
                                             nib_cuda_weight **out, nib_error *err) {
    *out = NULL;
    if (!nib_cuda_has_gemv(type) && !nib_cuda_has_get_rows(type))
        return nib_error_set(err, NIB_ERR_UNSUPPORTED, "CUDA: no kernel for %s", nib_type_name(type) ? nib_type_name(type) : "?");
    size_t row_bytes = 0;
    uint64_t bytes = 0;
    if (n_in <= 0 || n_out <= 0 || n_in > INT32_MAX || n_out > INT32_MAX || !nib_row_bytes(type, n_in, &row_bytes))
        return nib_error_set(err, NIB_ERR_ARG, "CUDA upload %s: bad shape n_in %lld, n_out %lld (n_in must be whole blocks)",
                             nib_type_name(type), (long long)n_in, (long long)n_out);
    /* the quantized kernels read x in blocks of 32 */
    const char *path = nib_cuda_gemv_path(type);
    if (path && path[0] == 'd' && n_in % 32 != 0)
        return nib_error_set(err, NIB_ERR_ARG, "CUDA upload %s: n_in %lld not a multiple of 32", nib_type_name(type),
                             (long long)n_in);
    const size_t file_row = row_bytes, bb = nib_type_block_bytes(type);
    const dev_layout *L = layout_of(type);
    if (L) row_bytes = row_bytes / bb * L->dev_block;
    if (!nib_mul_u64(row_bytes, (uint64_t)n_out, &bytes) || bytes > SIZE_MAX - WEIGHT_PAD)
        return nib_error_set(err, NIB_ERR_ARG, "CUDA upload: size overflow");
    nib_cuda_weight *w = (nib_cuda_weight *)calloc(1, sizeof *w);
    if (!w) return nib_error_set(err, NIB_ERR_NOMEM, "CUDA upload: out of host memory");
    w->type = L ? L->dev : type, w->n_in = n_in, w->n_out = n_out, w->row_bytes = row_bytes, w->bytes = (size_t)bytes;
    cudaError_t e = cudaMalloc(&w->dev, w->bytes + WEIGHT_PAD);
    if (e != cudaSuccess) {
        const size_t need = w->bytes + WEIGHT_PAD;
        free(w);
        if (e == cudaErrorMemoryAllocation) return oom(need, "a weight upload", err);
        cuda_ok(e, "cudaMalloc", "weight upload", err);
        return err ? err->status : NIB_ERR_IO;
    }
    const bool copied = L ? upload_repacked(w->dev, (const uint8_t *)host, file_row / bb * (size_t)n_out, bb, L, err)
                             : CUDA_OK(cudaMemcpy(w->dev, host, w->bytes, cudaMemcpyHostToDevice), "weight upload", err);
    if ((nib_cuda_has_gemv(type) && !cuda_gemv_plan(w, err)) || !copied ||
        !CUDA_OK(cudaMemset(w->dev + w->bytes, 0, WEIGHT_PAD), "weight upload padding", err)) {
        cudaFree(w->dev);
        free(w);
        return err ? err->status : NIB_ERR_IO;
    }
    *out = w;
    return NIB_OK;
}

extern "C" void nib_cuda_weight_free(nib_cuda_weight *w) {
    if (!w) return;
    if (w->t32_pair != 2) cudaFree(w->dev); /* a tiled pair's up shares its gate's allocation */
    free(w);
}

extern "C" size_t nib_cuda_weight_bytes(const nib_cuda_weight *w) { return w ? w->bytes : 0; }
