// One host thread per GPU, as some trainers and benchmarks are written: the main thread uses
// GPU 0 first, starts a thread per GPU (each joins the communicator and times its AllReduces
// with steady_clock) and waits in join() — blocked outside CUDA while the others work.
//   live_threads [GPUS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "check-macros.h"
#include "cuda_runtime.h"
#include "nccl.h"

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 2;
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  void* scratch;
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMalloc(&scratch, 1024));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<double> us(n);
  std::vector<std::thread> threads;
  for (int d = 0; d < n; ++d)
    threads.emplace_back([&, d] {
      CHECK_CUDA(cudaSetDevice(d));
      cudaStream_t s;
      CHECK_CUDA(cudaStreamCreate(&s));
      void *a, *b;
      CHECK_CUDA(cudaMalloc(&a, 64 << 20));
      CHECK_CUDA(cudaMalloc(&b, 64 << 20));
      ncclComm_t c;
      CHECK_NCCL(ncclCommInitRank(&c, n, id, d));
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 10; ++i) CHECK_NCCL(ncclAllReduce(a, b, 16 << 20, ncclFloat, ncclSum, c, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      us[d] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 10;
      CHECK_NCCL(ncclCommDestroy(c));
    });
  for (auto& t : threads) t.join();
  for (int d = 0; d < n; ++d) printf("gpu %d: %.2f us per 64 MiB AllReduce\n", d, us[d]);
  CHECK_CUDA(cudaFree(scratch));
  return 0;
}
