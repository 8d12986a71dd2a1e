// One process drives 8 GPUs: communicators initialised with ncclCommInitRank inside a group,
// grouped AllReduce per device, no cudaSetDevice before each call.
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

int main() {
  const int ndev = 8;
  const size_t count = 32 << 20;
  int have = 0;
  CHECK(cudaGetDeviceCount(&have));
  if (have < ndev) return 1;
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  ncclComm_t comms[ndev];
  cudaStream_t streams[ndev];
  float* buf[ndev];
  for (int d = 0; d < ndev; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamCreate(&streams[d]));
    CHECK(cudaMalloc(&buf[d], count * sizeof(float)));
  }
  CHECK(ncclGroupStart());
  for (int d = 0; d < ndev; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(ncclCommInitRank(&comms[d], ndev, id, d));
  }
  CHECK(ncclGroupEnd());
  for (int it = 0; it < 5; ++it) {
    CHECK(ncclGroupStart());
    for (int d = 0; d < ndev; ++d)
      CHECK(ncclAllReduce(buf[d], buf[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
    CHECK(ncclGroupEnd());
  }
  for (int d = 0; d < ndev; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamSynchronize(streams[d]));
    CHECK(cudaFree(buf[d]));
    CHECK(ncclCommDestroy(comms[d]));
  }
  printf("ok: %d ranks x 5 allreduce\n", ndev);
  return 0;
}
