// In the style of nccl-tests: ncclMemAlloc buffers, a sweep of sizes, warm-up and timed loops,
// completion detected by polling cudaStreamQuery, time from the host clock and from events.
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <nccl.h>

#define CHECK(x)                                                              \
  do {                                                                        \
    if ((x) != 0) {                                                           \
      printf("%s failed at line %d\n", #x, __LINE__);                         \
      return 1;                                                               \
    }                                                                         \
  } while (0)

static int Wait(cudaStream_t s) {
  cudaError_t e;
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
  }
  return e == cudaSuccess ? 0 : 1;
}

int main() {
  const int ndev = 2;
  ncclComm_t comms[ndev];
  CHECK(ncclCommInitAll(comms, ndev, nullptr));
  cudaStream_t streams[ndev];
  void *send[ndev], *recv[ndev];
  const size_t maxBytes = 64 << 20;
  for (int d = 0; d < ndev; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
    CHECK(ncclMemAlloc(&send[d], maxBytes));
    CHECK(ncclMemAlloc(&recv[d], maxBytes));
  }
  cudaEvent_t start, stop;
  CHECK(cudaSetDevice(0));
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  printf("%12s %10s %10s\n", "size", "time(us)", "busbw");
  for (size_t bytes = 1 << 10; bytes <= maxBytes; bytes <<= 4) {
    size_t count = bytes / sizeof(float);
    for (int phase = 0; phase < 2; ++phase) {  // warm-up, then timed
      int iters = phase ? 5 : 1;
      auto t0 = std::chrono::steady_clock::now();
      CHECK(cudaEventRecord(start, streams[0]));
      for (int it = 0; it < iters; ++it) {
        CHECK(ncclGroupStart());
        for (int d = 0; d < ndev; ++d)
          CHECK(ncclAllReduce(send[d], recv[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
        CHECK(ncclGroupEnd());
      }
      CHECK(cudaEventRecord(stop, streams[0]));
      for (int d = 0; d < ndev; ++d) CHECK(Wait(streams[d]));
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (phase) printf("%12zu %10.2f %10.2f\n", bytes, us, us > 0 ? bytes / us / 1e3 : 0.0);
    }
  }
  for (int d = 0; d < ndev; ++d) {
    CHECK(ncclMemFree(send[d]));
    CHECK(ncclMemFree(recv[d]));
    CHECK(ncclCommDestroy(comms[d]));
  }
  printf("ok\n");
  return 0;
}
