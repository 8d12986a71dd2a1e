/* gpusim shim stub: cuda_runtime.h — the runtime API plus the C++ conveniences. */
#ifndef GPUSIM_CUDA_RUNTIME_H
#define GPUSIM_CUDA_RUNTIME_H
#include "cuda_runtime_api.h"
#include "cuda_profiler_api.h"

#ifdef __cplusplus
template <class T>
static inline cudaError_t cudaMalloc(T** devPtr, size_t size) {
  return cudaMalloc((void**)(void*)devPtr, size);
}
template <class T>
static inline cudaError_t cudaMallocManaged(T** devPtr, size_t size, unsigned int flags = cudaMemAttachGlobal) {
  return cudaMallocManaged((void**)(void*)devPtr, size, flags);
}
template <class T>
static inline cudaError_t cudaMallocHost(T** ptr, size_t size, unsigned int flags) {
  return cudaHostAlloc((void**)(void*)ptr, size, flags);
}
template <class T>
static inline cudaError_t cudaLaunchKernel(T* func, dim3 grid, dim3 block, void** args, size_t smem = 0,
                                           cudaStream_t stream = 0) {
  return cudaLaunchKernel((const void*)func, grid, block, args, smem, stream);
}
template <class T>
static inline cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, T* entry) {
  return cudaFuncGetAttributes(attr, (const void*)entry);
}
#endif
#endif
