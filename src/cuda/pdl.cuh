/* Programmatic dependent launch (PDL, sm_90+): the decode step is a chain of
 * ~300-400 short kernels, and between two kernels in a CUDA graph the GPU
 * otherwise drains the first, then launches and ramps up the second (a
 * microsecond or more each time). Launched with the programmatic-serialization
 * attribute, the next kernel's blocks are scheduled as soon as every block of
 * the running one has called pdl_launch_dependents(); they then wait in
 * pdl_wait() until the running kernel has finished and its writes are
 * visible. So every kernel of the step calls pdl_launch_dependents() first.
 * Before pdl_wait() a kernel may read only what no kernel of the step writes
 * (weights, norm and RoPE tables, the io block's position: it is copied in
 * before the step's first kernel) and compute from it; that work then
 * overlaps the kernel before, which is worth more than it looks: a cold load
 * after the wait puts a whole memory round trip on the step's chain
 * (bench/gpu-decode-notes.md, v11-v12). Anything an earlier kernel of the
 * step writes is read after the wait.
 *
 * Below sm_90 (and when a kernel is launched without the attribute) both
 * calls are no-ops, and the launch attribute is ignored by older devices. */
#ifndef NIB_CUDA_PDL_CUH
#define NIB_CUDA_PDL_CUH

#include <cuda_runtime.h>

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

/* kernel<<<grid, block, smem, stream>>>(args...) with the PDL attribute. */
template <typename... KArgs, typename... Args>
static inline cudaError_t pdl_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                     cudaStream_t stream, Args &&...args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

/* The same with thread block clusters of cluster_x CTAs along x (sm_90+;
 * grid.x must be a multiple of cluster_x). */
template <typename... KArgs, typename... Args>
static inline cudaError_t pdl_launch_cluster(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                             cudaStream_t stream, int cluster_x, Args &&...args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    attr[1].id = cudaLaunchAttributeClusterDimension;
    attr[1].val.clusterDim.x = (unsigned)cluster_x;
    attr[1].val.clusterDim.y = 1;
    attr[1].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

#endif
