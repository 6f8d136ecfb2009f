/* Prompt decoder lab: times the library's whole-matrix decode to fp16
 * (dequant.cu, cuda_dequant_f16: what every prompt GEMM runs before cuBLAS)
 * of one matrix in the file's layout and in the tiled one (gemv_tiled.cuh).
 * A program, not a test: tests/gpu/test_gpu_gemm.c checks that the two
 * decodes agree bit for bit; this file answers "how long, each way".
 *
 * It links the library:
 *
 *   make NIB_CUDA_ARCH=90 build/dev/cuda/dequant_lab     (or make gpu-lab)
 *   build/dev/cuda/dequant_lab [FORMAT...]    (default q4_K q6_K q3_K q2_K iq2_xxs q4_0)
 *
 * Method:
 *  - weights are random bytes (the decode does the same work whatever the
 *    values), two shapes of Llama-3-8B: 4096 x 14336 (gate, up) and
 *    14336 x 4096 (down), n_in x n_out;
 *  - each launch is timed alone with CUDA events, after a 256 MiB memset
 *    that pushes the weights out of L2 (the H200's is 60 MB; a prompt
 *    decodes each matrix once a chunk, from HBM); LAB_WARMUP launches first,
 *    then the median of LAB_RUNS;
 *  - GB/s counts the weight bytes read plus the fp16 written, % is of a
 *    device-to-device copy's (bytes read + written) measured in the same run;
 *  - "tiled" is the matrix tiled alone where the library tiles it alone;
 *    where it does not (14336-wide rows of the formats without the tiled
 *    split kernel, Q4_K, Q4_0 and the IQ4 and Q4_1/Q5_0 ones, keep the
 *    file's layout: gemv_tiled.cu t32_shape), the row says "pair" and times
 *    the gate half of two such matrices tiled as a gate/up pair, every
 *    other row of the tiles. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>

#include "cuda/cuda_internal.h"

#define CK(call)                                                                                          \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1); /* a lab program may exit; the library never does */                                \
        }                                                                                                 \
    } while (0)
#define NIB_OK_OR_DIE(call, err)                                                      \
    do {                                                                              \
        if ((call) != NIB_OK) {                                                       \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, (err).msg); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define LAB_WARMUP 5
#define LAB_RUNS 21
#define LAB_FLUSH_BYTES ((size_t)256 << 20)

static const char *const default_formats[] = {"q4_K", "q6_K", "q3_K", "q2_K", "iq2_xxs", "q4_0"};
static const struct {
    int64_t n_in, n_out;
} shapes[] = {{4096, 14336}, {14336, 4096}};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static void random_bytes(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
        p[i] = (uint8_t)(rng_state >> 24);
    }
}

/* bytes read + written over the time of a 1 GiB device-to-device copy, best of 5 */
static double copy_gbs(void) {
    const size_t n = (size_t)1 << 30;
    void *a, *b;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&b, n));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int r = 0; r < 6; r++) {
        CK(cudaEventRecord(e0, 0));
        CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0 && ms < best) best = ms;
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(a));
    CK(cudaFree(b));
    return 2.0 * (double)n / (best * 1e-3) / 1e9;
}

/* median microseconds of one decode of w into out */
static double time_decode(const nib_cuda_weight *w, __half *out, void *flush) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float us[LAB_RUNS];
    for (int r = 0; r < LAB_WARMUP + LAB_RUNS; r++) {
        nib_error err;
        CK(cudaMemsetAsync(flush, r, LAB_FLUSH_BYTES, 0));
        CK(cudaEventRecord(e0, 0));
        NIB_OK_OR_DIE(cuda_dequant_f16(w, out, 0, &err), err);
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= LAB_WARMUP) us[r - LAB_WARMUP] = 1000.0f * ms;
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(us, us + LAB_RUNS);
    return us[LAB_RUNS / 2];
}

int main(int argc, char **argv) {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const double copy = copy_gbs();
    printf("# prompt decoder (cuda_dequant_f16), %s, copy %.0f GB/s\n\n", prop.name, copy);
    printf("| format | n_in x n_out | file us | tiled us | tiled / file | file GB/s (%%) | tiled GB/s (%%) |\n");
    printf("|---|---|---|---|---|---|---|\n");
    void *flush;
    CK(cudaMalloc(&flush, LAB_FLUSH_BYTES));
    const int n_formats = argc > 1 ? argc - 1 : (int)(sizeof default_formats / sizeof default_formats[0]);
    for (int fi = 0; fi < n_formats; fi++) {
        const char *name = argc > 1 ? argv[fi + 1] : default_formats[fi];
        nib_type t;
        if (!nib_type_parse(name, &t)) {
            fprintf(stderr, "unknown format %s\n", name);
            return 1;
        }
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int64_t n_in = shapes[si].n_in, n_out = shapes[si].n_out;
            nib_error err;
            size_t rb = 0;
            if (!nib_row_bytes(t, n_in, &rb)) {
                fprintf(stderr, "%s: rows of %lld are not whole blocks\n", name, (long long)n_in);
                return 1;
            }
            uint8_t *W = (uint8_t *)malloc(rb * (size_t)n_out);
            random_bytes(W, rb * (size_t)n_out);
            nib_cuda_weight *wf = NULL, *wt = NULL, *wu = NULL;
            NIB_OK_OR_DIE(nib_cuda_weight_upload(t, W, n_in, n_out, &wf, &err), err);
            NIB_OK_OR_DIE(nib_cuda_weight_upload(t, W, n_in, n_out, &wt, &err), err);
            bool tiled = false, pair = false;
            NIB_OK_OR_DIE(nib_cuda_weight_tile(wt, &tiled, &err), err);
            if (!tiled) { /* not tiled alone: the gate half of a pair */
                NIB_OK_OR_DIE(nib_cuda_weight_upload(t, W, n_in, n_out, &wu, &err), err);
                NIB_OK_OR_DIE(nib_cuda_weight_tile_glu(wt, wu, &tiled, &err), err);
                pair = tiled;
            }
            free(W);
            __half *out;
            CK(cudaMalloc(&out, sizeof(__half) * (size_t)(n_in * n_out)));
            const double us_f = time_decode(wf, out, flush), us_t = tiled ? time_decode(wt, out, flush) : 0.0;
            const double bytes = (double)nib_cuda_weight_bytes(wf) + 2.0 * (double)(n_in * n_out);
            const double gbs_f = bytes / (us_f * 1e-6) / 1e9, gbs_t = tiled ? bytes / (us_t * 1e-6) / 1e9 : 0.0;
            char shape[48];
            snprintf(shape, sizeof shape, "%lld x %lld%s", (long long)n_in, (long long)n_out, pair ? " (pair)" : "");
            if (tiled)
                printf("| %s | %s | %.1f | %.1f | %.3f | %.0f (%.0f%%) | %.0f (%.0f%%) |\n", nib_type_name(t), shape, us_f,
                       us_t, us_t / us_f, gbs_f, 100.0 * gbs_f / copy, gbs_t, 100.0 * gbs_t / copy);
            else
                printf("| %s | %s | %.1f | not tiled | | %.0f (%.0f%%) | |\n", nib_type_name(t), shape, us_f, gbs_f,
                       100.0 * gbs_f / copy);
            fflush(stdout);
            CK(cudaFree(out));
            nib_cuda_weight_free(wf);
            nib_cuda_weight_free(wt); /* a pair's gate frees the pair's allocation */
            nib_cuda_weight_free(wu);
        }
    }
    CK(cudaFree(flush));
    return 0;
}
