// An MPI program the way nccl-tests' and llm.c's MPI builds are written: started by mpirun,
// rank and size from MPI, the NCCL id broadcast with MPI_Bcast, the GPU chosen by the rank on
// its node, and MPI barriers between iterations. Built only where MPI is installed (Debian's
// OpenMPI); live-test.cc runs it as `gpusim run --nproc-per-node 1 -- mpirun -np N ...`.
//
//   mpi_train [ITERS] [BYTES]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

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
  // The rank on this node (the ranks that share memory with this one), as MPI programs find it.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  CHECK_CUDA(cudaSetDevice(local % ndev));

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
