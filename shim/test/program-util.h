// What the shim's test programs do the way real training programs do it: read the launcher's
// environment, and share the NCCL unique id through a file (llm.c's `-pi fs`; MPI or a TCP
// store elsewhere). Header-only; needs check-macros.h and nccl.h before it.
#ifndef GPUSIM_SHIM_TEST_PROGRAM_UTIL_H
#define GPUSIM_SHIM_TEST_PROGRAM_UTIL_H

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <time.h>

// An integer from the environment (RANK, LOCAL_RANK, ...), or `dflt`.
inline int EnvInt(const char* name, int dflt) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

// Rank 0 creates the id and writes it to `file`; the others wait for it (up to two minutes).
// Without a file every rank asks ncclGetUniqueId and the shim's launcher shares the result
// (GPUSIM_UNIQUE_ID_FILE).
inline void ShareId(ncclUniqueId* id, int rank, const char* file) {
  if (!file) {
    CHECK_NCCL(ncclGetUniqueId(id));
    return;
  }
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(id));
    std::string tmp = std::string(file) + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f || fwrite(id, sizeof *id, 1, f) != 1) exit(1);
    fclose(f);
    rename(tmp.c_str(), file);
    return;
  }
  for (int i = 0; i < 12000; ++i) {
    if (FILE* f = fopen(file, "rb")) {
      const bool ok = fread(id, sizeof *id, 1, f) == 1;
      fclose(f);
      if (ok) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  fprintf(stderr, "rank %d: no NCCL id in %s\n", rank, file);
  exit(1);
}

// Burns `us` microseconds of this thread's CPU time: the program's own work between CUDA calls
// (data loading, preprocessing, logging), which the live mode must count on its clock.
inline void BurnCpu(double us) {
  if (us <= 0) return;
  timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  volatile double x = 1;
  do {
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) / 1e3 < us);
}

#endif
