// libgpusim-node.so: LD_PRELOADed by `gpusim run` and `gpusim record`. It gives the ranks an MPI
// launcher started (`gpusim run --launcher -- mpirun ...`) the identity of the simulated node
// their MPI rank places them on (block by block, as mpirun places ranks on nodes; the rule is
// libcudart's gpusim_mpi_placement, shim/src/state.cc). They all run on this one machine, but
// programs find their node the way they do on a real cluster:
//  - by host name: nccl-tests hashes gethostname() to count the ranks of its node and picks its
//    GPU by that count, so gethostname() returns "<this machine>-gpusim<server>";
//  - by the launcher's local-rank variables: Open MPI's OMPI_COMM_WORLD_LOCAL_RANK,
//    _LOCAL_SIZE and _NODE_RANK, MPICH/Hydra's MPI_LOCALRANKID and MPI_LOCALNRANKS are
//    rewritten (where the launcher set them) to the rank's number and count on its server,
//    before main.
// Every other process (one gpusim started itself, or with no MPI rank) is left alone.
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace {

using PlacementFn = int (*)(int*, int*, int*);
using HostnameFn = int (*)(char*, size_t);

int g_server = -1;  // the simulated server of an MPI launcher's rank, -1: none

void Rewrite(const char* name, int value) {
  if (!getenv(name)) return;  // only what this launcher sets
  char v[16];
  snprintf(v, sizeof v, "%d", value);
  setenv(name, v, 1);
}

__attribute__((constructor)) void PlaceOnSimulatedNode() {
  auto placement = (PlacementFn)dlsym(RTLD_DEFAULT, "gpusim_mpi_placement");
  int server = -1, local = 0, localSize = 0;
  if (!placement || !placement(&server, &local, &localSize)) return;
  g_server = server;
  Rewrite("OMPI_COMM_WORLD_LOCAL_RANK", local);
  Rewrite("OMPI_COMM_WORLD_NODE_RANK", local);
  Rewrite("OMPI_COMM_WORLD_LOCAL_SIZE", localSize);
  Rewrite("MPI_LOCALRANKID", local);
  Rewrite("MPI_LOCALNRANKS", localSize);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int gethostname(char* name, size_t len) {
  static HostnameFn real = (HostnameFn)dlsym(RTLD_NEXT, "gethostname");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (g_server < 0) return real(name, len);
  char host[256];
  if (real(host, sizeof host) != 0) return -1;
  host[sizeof host - 1] = '\0';
  char mine[300];
  const int n = snprintf(mine, sizeof mine, "%s-gpusim%d", host, g_server);
  if (n < 0 || (size_t)n >= len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(name, mine, (size_t)n + 1);
  return 0;
}

}  // extern "C"
