// An MPI program the way nccl-tests' and llm.c's MPI builds are written: started by mpirun,
// rank and size from MPI, the NCCL id broadcast with MPI_Bcast, the GPU chosen by the rank's
// number on its node (counted, as nccl-tests counts it, among the ranks with the same host
// name), and MPI barriers between iterations. Built only where MPI is installed (Debian's
// OpenMPI); live-test.cc runs it as `gpusim run --nproc-per-node 1 -- mpirun -np N ...` on one
// server and `gpusim run --launcher -- mpirun -np N ...` across servers.
//
//   mpi_train [ITERS] [BYTES]
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_runtime.h"
#include "nccl.h"

#include "check-macros.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iters = argc > 1 ? atoi(argv[1]) : 3;
  const size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : (size_t)64 << 20;
  // The rank's number on its node: the lower ranks with the same host name (nccl-tests'
  // getHostHash and localRank); its GPU is that number.
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::vector<char> hosts((size_t)size * sizeof host);
  MPI_Allgather(host, sizeof host, MPI_CHAR, hosts.data(), sizeof host, MPI_CHAR, MPI_COMM_WORLD);
  int local = 0;
  for (int p = 0; p < rank; ++p) local += strcmp(&hosts[(size_t)p * sizeof host], host) == 0;
  const char* envLocal = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  printf("rank %d on %s: local rank %d (OMPI_COMM_WORLD_LOCAL_RANK %s)\n", rank, host, local,
         envLocal ? envLocal : "-");
  fflush(stdout);
  CHECK_CUDA(cudaSetDevice(local));

  ncclUniqueId id;
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, size, id, rank));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  void* buf;
  CHECK_CUDA(cudaMalloc(&buf, bytes));
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);  // ranks that arrive first wait (spinning) for the others
    const double t0 = MPI_Wtime();
    CHECK_NCCL(ncclAllReduce(buf, buf, bytes / 4, ncclFloat, ncclSum, comm, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    const double us = (MPI_Wtime() - t0) * 1e6;
    double slowest = 0;
    MPI_Reduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("iteration %d allreduce %zu bytes on %d ranks: %.2f us\n", i, bytes, size, slowest);
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  MPI_Finalize();
  return 0;
}
