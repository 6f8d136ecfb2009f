/* nib info: what this build can use on this machine. */
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "cuda/cuda_gemm.h"

int cmd_info(int argc, char **argv) {
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: nib info\n");
        return 2;
    }
    printf("nib build: C11, %s\n", __VERSION__);
    printf("cpu: %ld online CPUs, SIMD detected %s, in use %s (NIB_SIMD=scalar|avx2 lowers it)\n",
           sysconf(_SC_NPROCESSORS_ONLN), nib_simd_level_name(nib_cpu_detect_simd()),
           nib_simd_level_name(nib_cpu_simd_level()));
    /* CUDA: each device, or the one-line reason there is none (never fatal) */
    char why[256];
    int n_dev = nib_cuda_device_count(why, sizeof why);
    if (!nib_cuda_compiled() || n_dev <= 0) {
        printf("cuda: unavailable: %s\n", why);
    } else {
        bool usable = nib_cuda_probe(why, sizeof why);
        printf("cuda: %d device%s%s%s\n", n_dev, n_dev == 1 ? "" : "s", usable ? "" : "; not usable: ", usable ? "" : why);
        for (int i = 0; i < n_dev; i++) {
            nib_cuda_device_info d;
            if (!nib_cuda_device_get(i, &d, why, sizeof why)) {
                printf("  %d: %s\n", i, why);
                continue;
            }
            printf("  %d: %s, compute capability %d.%d, %d SMs, %.1f / %.1f GiB free\n", i, d.name, d.cc_major,
                   d.cc_minor, d.sm_count, (double)d.free_bytes / (1 << 30), (double)d.total_bytes / (1 << 30));
        }
    }
    if (nib_cuda_compiled()) { /* how prompts will run on a GPU */
        if (nib_cuda_blas_probe(why, sizeof why))
            printf("prompt GEMM: cuBLAS (%s): prompt chunks of 32 tokens or more run as GEMMs\n", why);
        else
            printf("prompt GEMM: off (%s): prompts run through the GEMV kernels\n", why);
    }
    printf("formats: 27 (see nib inspect --types)\n");
    return 0;
}
