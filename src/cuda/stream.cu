/* Streams, CUDA graphs and pinned host memory: what the forward step runs on.
 * A decode step is captured once per context bucket and replayed; its only
 * host traffic is a pinned staging area (the token id and position in, the
 * sampled id out) that the captured copies read and write at replay. */
#include "cuda/cuda_internal.h"
#include "cuda/cuda_ops.h"

#define ERR_STATUS(err) ((err) ? (err)->status : NIB_ERR_IO)

extern "C" void *nib_cuda_stream_new(nib_error *err) {
    cudaStream_t s = NULL;
    if (!CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "create the step's stream", err)) return NULL;
    return (void *)s;
}

extern "C" void nib_cuda_stream_free(void *stream) {
    if (stream) cudaStreamDestroy((cudaStream_t)stream);
}

extern "C" nib_status nib_cuda_stream_sync(void *stream, nib_error *err) {
    if (!CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream), "wait for the step", err)) return ERR_STATUS(err);
    return NIB_OK;
}

extern "C" nib_status nib_cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream, nib_error *err) {
    if (!CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream), "copy on the step's stream",
                 err))
        return ERR_STATUS(err);
    return NIB_OK;
}

extern "C" void *nib_cuda_host_alloc(size_t bytes, nib_error *err) {
    void *p = NULL;
    if (!CUDA_OK(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault), "allocate pinned host memory", err))
        return NULL;
    return p;
}

extern "C" void nib_cuda_host_free(void *p) {
    if (p) cudaFreeHost(p);
}

extern "C" nib_status nib_cuda_graph_begin(void *stream, nib_error *err) {
    /* thread-local mode: other threads' CUDA calls (none in nib today) do not
     * break this capture */
    if (!CUDA_OK(cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal), "begin graph capture",
                 err))
        return ERR_STATUS(err);
    return NIB_OK;
}

extern "C" nib_status nib_cuda_graph_end(void *stream, void **graph, nib_error *err) {
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    *graph = NULL;
    if (!CUDA_OK(cudaStreamEndCapture((cudaStream_t)stream, &g), "end graph capture", err)) return ERR_STATUS(err);
    bool ok = CUDA_OK(cudaGraphInstantiate(&exec, g, 0), "instantiate the step's graph", err);
    cudaGraphDestroy(g);
    if (!ok) return ERR_STATUS(err);
    *graph = (void *)exec;
    return NIB_OK;
}

extern "C" nib_status nib_cuda_graph_launch(void *graph, void *stream, nib_error *err) {
    if (!CUDA_OK(cudaGraphLaunch((cudaGraphExec_t)graph, (cudaStream_t)stream), "launch the step's graph", err))
        return ERR_STATUS(err);
    return NIB_OK;
}

extern "C" void nib_cuda_graph_free(void *graph) {
    if (graph) cudaGraphExecDestroy((cudaGraphExec_t)graph);
}
