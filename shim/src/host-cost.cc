// What the real CUDA runtime, driver, cuBLAS(Lt) and NCCL spend on the host CPU per call: the
// modelled part of a program's host time (vclock.cc charges it to the calling thread's virtual
// clock). Host cost depends on the CPU, driver and runtime rather than on the GPU, so one table
// serves every GPU preset; GPUSIM_API_COSTS=FILE overrides entries ("name microseconds"
// per line, '#' comments), e.g. with numbers measured on one's own machine.
//
// Sources (details and the measurements behind every number: doc/host-costs.md):
//  [H200] timed on a real H200 host (bench/device/api-costs.cu: Intel Xeon, driver 580.159, CUDA
//         13.0; contrib/gpusim/test/data/h200/api-costs.json): the median wall time per call.
//         A100 systems take the same numbers: the A100 Kineto traces in shared/data (2-10x higher
//         for cheap calls) include CUPTI's instrumentation and older software;
//  [S21] NCCL src/enqueue.cc: per communicator at group end two event records, two stream waits
//        and one cuLaunchKernelEx;
//  [S22] NVIDIA/nccl issue #1984: 100 grouped all-reduces on 4 communicators, 3.5 us per op;
//  [K-A100] the Kineto traces of A100 hosts in shared/data/kineto (hta_*);
//  [D]   derived from related measured calls (stated per entry).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "cudart-internal.h"
#include "nccl-host-cost.h"

namespace gpusim {
namespace {

struct CostEntry {
  ApiCost cost;
  const char* name;
  double us;
};

// clang-format off
const CostEntry kCosts[] = {
    // Any call without an entry of its own: cudaGetDevice 0.035, cudaSetDevice 0.077,
    // cudaStreamIsCapturing 0.05, cudaGetLastError 0.02 us [H200].
    {ApiCost::Call,            "call",             0.05},
    // cudaLaunchKernel / <<<>>> of an empty kernel [H200] (3.5-4.6 us over three runs).
    {ApiCost::Launch,          "launch",           3.8},
    // cudaMemcpyAsync of 4 KiB, pinned host to device 1.39, device to host 1.31 us [H200].
    {ApiCost::MemcpyAsync,     "memcpy_async",     1.35},
    // ... device to device (the runtime launches a copy kernel): 4.05 us [H200], the extra part.
    {ApiCost::MemcpyD2D,       "memcpy_d2d_extra", 2.7},
    // cudaMemsetAsync of 4 KiB [H200].
    {ApiCost::MemsetAsync,     "memset_async",     0.83},
    // cudaEventRecord [H200].
    {ApiCost::EventRecord,     "event_record",     0.15},
    // cudaEventQuery / cudaStreamQuery on finished work [H200].
    {ApiCost::EventQuery,      "event_query",      0.17},
    {ApiCost::StreamQuery,     "stream_query",     0.2},
    // cudaStreamWaitEvent [H200].
    {ApiCost::StreamWaitEvent, "stream_wait_event", 0.14},
    // cudaEventElapsedTime [H200].
    {ApiCost::EventElapsed,    "event_elapsed",    0.07},
    // Synchronize calls on finished work, the call itself [H200].
    {ApiCost::StreamSync,      "stream_sync",      0.23},
    {ApiCost::EventSync,       "event_sync",       0.18},
    {ApiCost::DeviceSync,      "device_sync",      0.37},
    // GPU done -> a waiting cudaStreamSynchronize returns, with the default scheduling (spinning on
    // a server): from a kernel's last write reaching host memory to the call's return [H200].
    {ApiCost::SyncWake,        "sync_wake",        1.9},
    // ... after cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync): 39 us [H200].
    {ApiCost::SyncWakeBlocking, "sync_wake_blocking", 39.0},
    // cudaMalloc: 35 us for 1 MiB, 39 for 32 MiB, 56 for 256 MiB [H200].
    {ApiCost::Malloc,          "malloc",          35.0},
    {ApiCost::MallocPerMiB,    "malloc_per_mib",   0.08},
    // cudaFree of 1 MiB on an idle device (it synchronises) [H200].
    {ApiCost::Free,            "free",            27.0},
    // cudaHostAlloc / cudaMallocHost, a first allocation (page-locking): [K-A100] 1,965 and 3,498 us
    // (a re-allocation of a size just freed is 1.3 us on the H200 host: the driver caches it).
    {ApiCost::HostAlloc,       "host_alloc",    2500.0},
    // cublasGemmEx (bf16) 8.1, cublasSgemm 8.6 us per call, its own CUDA calls included [H200].
    {ApiCost::CublasGemm,      "cublas_gemm",      8.3},
    // cublasLtMatmul with a chosen algorithm [H200].
    {ApiCost::CublasLtMatmul,  "cublaslt_matmul",  6.5},
    // An NCCL collective / send / recv call: it only queues a task [S22: <= 0.9 us per op and comm].
    // Shared with the model (nccl-host-cost.h), as the next one.
    {ApiCost::NcclEnqueue,     "nccl_enqueue",     gpusim_host_cost::kNcclEnqueueUs},
    // Launching one communicator's kernel at ncclGroupEnd (or at an ungrouped call) [S21]: two event
    // records, two stream waits and one launch, timed on the H200 host: 2 x (0.15 + 0.14) + 3.8 [D].
    {ApiCost::NcclLaunch,      "nccl_launch",      gpusim_host_cost::kNcclLaunchUs},
    // A cuDNN backend graph execution (descriptor checks, plan lookup, its launches) [D]: a
    // cuBLASLt call's cost, no cuDNN measurement.
    {ApiCost::CudnnExecute,    "cudnn_execute",    6.5},
    // clock_gettime(CLOCK_MONOTONIC) through the vDSO [H200].
    {ApiCost::ClockRead,       "clock_read",       0.03},
};
// clang-format on

constexpr int kCount = (int)ApiCost::kCount;

struct CostTable {
  uint64_t ns[kCount] = {};
};

// A malformed override file ends the program at its first CUDA call, before any work: running on
// with the built-in costs would give other numbers than the user asked for, with only a warning.
[[noreturn]] void RefuseCostFile(const char* file) {
  fprintf(stderr, "gpusim: GPUSIM_API_COSTS=%s: not used, fix the lines above (the names are in doc/host-costs.md)\n",
          file);
  _exit(2);
}

CostTable Load() {
  CostTable t;
  for (const CostEntry& e : kCosts) t.ns[(int)e.cost] = (uint64_t)(e.us * 1000.0 + 0.5);
  const char* file = getenv("GPUSIM_API_COSTS");
  if (!file || !*file) return t;
  FILE* f = fopen(file, "r");
  if (!f) {
    fprintf(stderr, "gpusim: cannot read GPUSIM_API_COSTS=%s: %s\n", file, strerror(errno));
    RefuseCostFile(file);
  }
  bool bad = false;
  char line[256];
  for (int lineNo = 1; fgets(line, sizeof line, f); ++lineNo) {
    char* hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char name[64];
    char extra[8];
    double us = 0;
    int n = sscanf(line, "%63s %lf %7s", name, &us, extra);
    if (n <= 0) continue;  // blank or comment
    const CostEntry* entry = nullptr;
    for (const CostEntry& e : kCosts)
      if (strcmp(e.name, name) == 0) entry = &e;
    const char* why = nullptr;
    if (!entry)
      why = "unknown name";
    else if (n < 2 || !(us >= 0) || us > 1e7)
      why = "expected a number of microseconds, 0 to 1e7";
    else if (n > 2)
      why = "text after the number";
    // A poll answered "not ready" must cost time, or a polling loop would never end.
    else if ((entry->cost == ApiCost::EventQuery || entry->cost == ApiCost::StreamQuery) && us <= 0)
      why = "must be > 0 (a polling loop must advance time)";
    if (why) {
      fprintf(stderr, "gpusim: %s:%d: '%s': %s\n", file, lineNo, name, why);
      bad = true;
      continue;
    }
    t.ns[(int)entry->cost] = (uint64_t)(us * 1000.0 + 0.5);
  }
  fclose(f);
  if (bad) RefuseCostFile(file);
  return t;
}

}  // namespace

uint64_t ApiCostNs(ApiCost c) {
  static const CostTable table = Load();
  return (int)c < kCount ? table.ns[(int)c] : 0;
}

}  // namespace gpusim
