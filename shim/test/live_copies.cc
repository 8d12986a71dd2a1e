// Times copies with the host clock the way a program would, to show which calls block the host
// (CUDA's "API synchronization behavior") and how long a peer copy takes. One process, two GPUs.
//   live_copies [MiB]
// Prints per copy: "<kind> return_us R done_us D" — R when the call returned, D when a
// cudaDeviceSynchronize after it returned, both from just before the call.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "check-macros.h"
#include "cuda_runtime.h"

static double Us(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

template <class F>
static void Time(const char* kind, F copy) {
  const auto t0 = std::chrono::steady_clock::now();
  copy();
  const auto t1 = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto t2 = std::chrono::steady_clock::now();
  printf("%s return_us %.3f done_us %.3f\n", kind, Us(t0, t1), Us(t0, t2));
}

int main(int argc, char** argv) {
  const size_t bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 256) << 20;
  void *a0, *b0, *b1, *host;
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaMalloc(&b1, bytes));
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMalloc(&a0, bytes));
  CHECK_CUDA(cudaMalloc(&b0, bytes));
  CHECK_CUDA(cudaMallocHost(&host, bytes));
  CHECK_CUDA(cudaDeviceSynchronize());
  // Device to device: "no host-side synchronization is performed".
  Time("d2d", [&] { CHECK_CUDA(cudaMemcpy(b0, a0, bytes, cudaMemcpyDeviceToDevice)); });
  // GPU 0 to GPU 1: asynchronous with respect to the host. Without peer access the runtime
  // stages the bytes through host memory; with it they cross the NVLink path.
  Time("p2p_staged", [&] { CHECK_CUDA(cudaMemcpyPeer(b1, 1, a0, 0, bytes)); });
  CHECK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
  Time("p2p", [&] { CHECK_CUDA(cudaMemcpyPeer(b1, 1, a0, 0, bytes)); });
  CHECK_CUDA(cudaDeviceDisablePeerAccess(1));
  // Device to host: "returns only once the copy has completed".
  Time("d2h", [&] { CHECK_CUDA(cudaMemcpy(host, a0, bytes, cudaMemcpyDeviceToHost)); });
  CHECK_CUDA(cudaFreeHost(host));
  CHECK_CUDA(cudaFree(a0));
  CHECK_CUDA(cudaFree(b0));
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaFree(b1));
  return 0;
}
