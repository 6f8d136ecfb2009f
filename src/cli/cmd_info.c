/* nib info: what this build can use on this machine. */
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cpu/cpu.h"

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
    printf("cuda: not compiled into this build (the CUDA backend arrives with a later milestone)\n");
    printf("formats: 27 (see nib inspect --types)\n");
    return 0;
}
