// One rank per process (rank/size from the environment, as torchrun-style launchers pass them);
// rank 0 broadcasts the unique id through a file, the way MPI programs broadcast it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <cuda_runtime.h>
#include <nccl.h>

#define CHECK(x)                                                              \
  do {                                                                        \
    if ((x) != 0) {                                                           \
      printf("%s failed at line %d\n", #x, __LINE__);                         \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int rank = atoi(getenv("GPUSIM_RANK")), size = atoi(getenv("GPUSIM_WORLD_SIZE"));
  std::string file = argv[1], tmp = file + ".tmp";
  ncclUniqueId id;
  if (rank == 0) {
    CHECK(ncclGetUniqueId(&id));
    FILE* f = fopen(tmp.c_str(), "wb");
    fwrite(&id, sizeof id, 1, f);
    fclose(f);
    rename(tmp.c_str(), file.c_str());
  } else {
    FILE* f = nullptr;
    for (int i = 0; i < 3000 && !(f = fopen(file.c_str(), "rb")); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!f || fread(&id, sizeof id, 1, f) != 1) return 3;
    fclose(f);
  }
  CHECK(cudaSetDevice(rank));
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, size, id, rank));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  float* buf;
  CHECK(cudaMalloc(&buf, (1 << 20) * sizeof(float)));
  for (int i = 0; i < 4; ++i) {
    CHECK(ncclAllReduce(buf, buf, 1 << 20, ncclFloat, ncclSum, comm, s));
    CHECK(ncclAllGather(buf, buf, (1 << 20) / size, ncclBfloat16, comm, s));
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(ncclCommDestroy(comm));
  printf("rank %d ok\n", rank);
  return 0;
}
