// Per-thread-default-stream entry points (what `nvcc --default-stream per-thread` programs
// call): the same operations, with the null stream meaning cudaStreamPerThread. The hottest
// ones (launch, copies, memsets, event record, stream sync/query/wait) are implemented next to
// their legacy versions; these forward.
#include "cudart-internal.h"

namespace {
cudaStream_t PerThread(cudaStream_t s) { return s ? s : cudaStreamPerThread; }
}  // namespace

extern "C" {

cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  GPUSIM_API(EventRecord);
  return cudaEventRecordWithFlags(event, PerThread(stream), flags);
}

cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t stream) {
  GPUSIM_API(Call);
  return cudaMallocAsync(devPtr, size, PerThread(stream));
}

cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream) {
  GPUSIM_API(Call);
  return cudaFreeAsync(devPtr, PerThread(stream));
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                             size_t sharedMem, cudaStream_t stream) {
  GPUSIM_API(Launch);
  return cudaLaunchCooperativeKernel(func, gridDim, blockDim, args, sharedMem, PerThread(stream));
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  GPUSIM_API(Launch);
  if (!config) return gpusim::Ret(cudaErrorInvalidValue);
  cudaLaunchConfig_t c = *config;
  c.stream = PerThread(c.stream);
  return cudaLaunchKernelExC(&c, func, args);
}

cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  GPUSIM_API(Call);
  return cudaLaunchHostFunc(PerThread(stream), fn, userData);
}

cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                                       unsigned int flags) {
  GPUSIM_API(Call);
  return cudaStreamAddCallback(PerThread(stream), callback, userData, flags);
}

cudaError_t cudaMemPrefetchAsync_ptsz(const void* devPtr, size_t count, cudaMemLocation location, unsigned int flags,
                                      cudaStream_t stream) {
  GPUSIM_API(Call);
  return cudaMemPrefetchAsync(devPtr, count, location, flags, PerThread(stream));
}

cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                   size_t height, cudaMemcpyKind kind, cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, PerThread(stream));
}

cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind) {
  GPUSIM_API(MemcpyAsync);
  return gpusim::Memcpy2D(dst, dpitch, src, spitch, width, height, kind, nullptr, false, true);
}

cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t stream, int* device) {
  GPUSIM_API(Call);
  return cudaStreamGetDevice(PerThread(stream), device);
}

cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t stream, unsigned int* flags) {
  GPUSIM_API(Call);
  return cudaStreamGetFlags(PerThread(stream), flags);
}

cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t stream, int* priority) {
  GPUSIM_API(Call);
  return cudaStreamGetPriority(PerThread(stream), priority);
}

cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  GPUSIM_API(Call);
  return cudaStreamIsCapturing(PerThread(stream), status);
}

cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count, size_t offset,
                                         cudaMemcpyKind kind, cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  return cudaMemcpyToSymbolAsync(symbol, src, count, offset, kind, PerThread(stream));
}

cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count, size_t offset,
                                           cudaMemcpyKind kind, cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  return cudaMemcpyFromSymbolAsync(dst, symbol, count, offset, kind, PerThread(stream));
}

cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                                   cudaStream_t stream) {
  GPUSIM_API(MemsetAsync);
  return cudaMemset2DAsync(devPtr, pitch, value, width, height, PerThread(stream));
}

cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  GPUSIM_API(MemsetAsync);
  return cudaMemset2DAsync(devPtr, pitch, value, width, height, cudaStreamPerThread);
}

cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void* devPtr, size_t length, unsigned int flags) {
  GPUSIM_API(Call);
  return cudaStreamAttachMemAsync(PerThread(stream), devPtr, length, flags);
}

cudaError_t cudaStreamGetId_ptsz(cudaStream_t stream, unsigned long long* streamId) {
  GPUSIM_API(Call);
  return cudaStreamGetId(PerThread(stream), streamId);
}

}  // extern "C"
