// What the real CUDA runtime, driver, cuBLAS(Lt) and NCCL spend on the host CPU per call: the
// modelled part of a program's host time (vclock.cc charges it to the calling thread's virtual
// clock). One column per GPU system; GPUSIM_API_COSTS=FILE overrides entries ("name microseconds"
// per line, '#' comments), e.g. with numbers measured on one's own machine.
//
// Sources (details and the measurements behind every number: doc/host-costs.md):
//  [K-H100] our Kineto trace of an H100 host (shared/data/kineto/tracelens_h100_*: EPYC 9654,
//           driver 575, CUDA 12.4): medians of the cuda_runtime event durations, minus ~0.5 us of
//           CUPTI instrumentation for launches;
//  [K-A100] the Kineto traces of A100 hosts in shared/data/kineto (hta_*);
//  [S6]  raw cuLaunchKernel 3.0 us without a profiler (GB200);
//  [S12] PaddlePaddle PR #40438: cudaGetDevice 74 ns, cudaSetDevice 120 ns (A100 host, 1M calls);
//  [S17] NVIDIA/raft PR #1736: cuBLAS GEMM ~10 us and memoized cuBLASLt ~5 us from entry to launch;
//  [S21] NCCL src/enqueue.cc: per communicator at group end two event records, two stream waits
//        and one cuLaunchKernelEx;
//  [S22] NVIDIA/nccl issue #1984: 100 grouped all-reduces on 4 communicators, 3.5 us per op;
//  [D]   derived from related measured calls (stated per entry).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cudart-internal.h"

namespace gpusim {
namespace {

struct CostEntry {
  ApiCost cost;
  const char* name;
  double hopperUs;  // H100 / H200 systems
  double ampereUs;  // A100 systems
};

// clang-format off
const CostEntry kCosts[] = {
    // Any call without an entry of its own: cudaGetDevice 0.07, cudaSetDevice 0.12 us [S12].
    {ApiCost::Call,            "call",             0.1,   0.1},
    // cudaLaunchKernel: [K-H100] median 3.2 us - CUPTI; [S6] 3.0 us raw; [K-A100] 4-10 us (older stack).
    {ApiCost::Launch,          "launch",           2.5,   3.0},
    // cudaMemcpyAsync, pinned or device memory: [K-A100] 5-6 us; H100 [D] = A100 ratio to a launch.
    {ApiCost::MemcpyAsync,     "memcpy_async",     4.0,   5.0},
    // cudaMemsetAsync: [K-H100] median 3.6 us; [K-A100] 6 us.
    {ApiCost::MemsetAsync,     "memset_async",     3.5,   6.0},
    // cudaEventRecord: [K-A100] 1-2.4 us; H100 [D].
    {ApiCost::EventRecord,     "event_record",     1.0,   1.5},
    // cudaEventQuery / cudaStreamQuery: [K-A100] < 0.5 us (integer traces); stream query [D] = event query.
    {ApiCost::EventQuery,      "event_query",      0.5,   0.5},
    {ApiCost::StreamQuery,     "stream_query",     0.5,   0.5},
    // cudaStreamWaitEvent: [K-A100] 0.8-1.5 us; B200 trace 0.7 us.
    {ApiCost::StreamWaitEvent, "stream_wait_event", 0.7,  1.0},
    // cudaEventElapsedTime: [K-A100] 3.8 us.
    {ApiCost::EventElapsed,    "event_elapsed",    3.0,   3.5},
    // Synchronize calls, the call itself (work already done): [K-A100] 3 / 2.6 / 8+ us; H100 [D].
    {ApiCost::StreamSync,      "stream_sync",      2.0,   3.0},
    {ApiCost::EventSync,       "event_sync",       2.0,   2.5},
    {ApiCost::DeviceSync,      "device_sync",      8.0,  10.0},
    // GPU done -> a waiting call returns, spinning (cudaDeviceScheduleAuto on a server spins):
    // [K-H100] 3.9-4.5 us between the last kernel's end and the sync's return; [K-A100] 2-7 us.
    {ApiCost::SyncWake,        "sync_wake",        3.0,   4.0},
    // ... with cudaDeviceScheduleBlockingSync (interrupt + futex wake-up) [D]: no measurement found.
    {ApiCost::SyncWakeBlocking, "sync_wake_blocking", 10.0, 10.0},
    // cudaMalloc: [K-A100] smallest calls 6-44 us, tens of MiB 200-284 us [D: base + per MiB].
    {ApiCost::Malloc,          "malloc",          30.0,  30.0},
    {ApiCost::MallocPerMiB,    "malloc_per_mib",   7.0,   7.0},
    // cudaFree (implicitly synchronising; the wait itself is not modelled): [K-A100] 2-5 us smallest.
    {ApiCost::Free,            "free",             5.0,   5.0},
    // cudaHostAlloc / cudaMallocHost (page-locking): [K-A100] 1,965 and 3,498 us.
    {ApiCost::HostAlloc,       "host_alloc",    2500.0, 2500.0},
    // cublasGemmEx / cublasSgemm, its own CUDA calls and launch included: [K-H100] one GEMM's cuBLAS
    // calls (cudaFuncGetAttributes, cudaMemsetAsync, 3x cudaFuncSetAttribute, cudaLaunchKernelExC) take
    // 13.2 us under CUPTI -> 12 us; [S17] ~10 us.
    {ApiCost::CublasGemm,      "cublas_gemm",     12.0,  10.0},
    // cublasLtMatmul with a chosen algorithm: [S17] ~5 us; H100 +1 us for its cluster launch (ExC).
    {ApiCost::CublasLtMatmul,  "cublaslt_matmul",  6.0,   5.0},
    // An NCCL collective / send / recv call: it only queues a task [S22: <= 0.9 us per op and comm].
    {ApiCost::NcclEnqueue,     "nccl_enqueue",     0.5,   0.5},
    // Launching one communicator's kernel at ncclGroupEnd (or at an ungrouped call) [S21]: two event
    // records + two stream waits + one launch, with this table's numbers [D].
    {ApiCost::NcclLaunch,      "nccl_launch",      6.0,   8.0},
    // A cuDNN backend graph execution (descriptor checks, plan lookup, its launches) [D]: a
    // cuBLASLt call's cost, no cuDNN measurement found.
    {ApiCost::CudnnExecute,    "cudnn_execute",    6.0,   5.0},
    // clock_gettime(CLOCK_MONOTONIC) through the vDSO: 21 ns measured on this project's machine (TSC).
    {ApiCost::ClockRead,       "clock_read",       0.02,  0.02},
};
// clang-format on

constexpr int kCount = (int)ApiCost::kCount;

struct CostTable {
  uint64_t ns[kCount] = {};
};

bool HopperSystem() {
  const char* key = Gpu().key;
  return strncmp(key, "h100", 4) == 0 || strncmp(key, "h200", 4) == 0;
}

CostTable Load() {
  CostTable t;
  const bool hopper = HopperSystem();
  for (const CostEntry& e : kCosts) t.ns[(int)e.cost] = (uint64_t)((hopper ? e.hopperUs : e.ampereUs) * 1000.0 + 0.5);
  const char* file = getenv("GPUSIM_API_COSTS");
  if (!file || !*file) return t;
  FILE* f = fopen(file, "r");
  if (!f) {
    fprintf(stderr, "gpusim: cannot read GPUSIM_API_COSTS=%s: %s; using the built-in host costs\n", file,
            strerror(errno));
    return t;
  }
  char line[256];
  for (int lineNo = 1; fgets(line, sizeof line, f); ++lineNo) {
    char* hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char name[64];
    double us = 0;
    int n = sscanf(line, "%63s %lf", name, &us);
    if (n <= 0) continue;  // blank or comment
    const CostEntry* entry = nullptr;
    for (const CostEntry& e : kCosts)
      if (strcmp(e.name, name) == 0) entry = &e;
    if (n != 2 || !entry || !(us >= 0) || us > 1e7) {
      fprintf(stderr,
              "gpusim: %s:%d: expected '<name> <microseconds>' with a known name and 0 <= us, got '%s'; line ignored\n",
              file, lineNo, name);
      continue;
    }
    // A poll answered "not ready" must cost time, or a polling loop would never end.
    if ((entry->cost == ApiCost::EventQuery || entry->cost == ApiCost::StreamQuery) && us <= 0) {
      fprintf(stderr, "gpusim: %s:%d: %s must be > 0 (a polling loop must advance time); line ignored\n", file, lineNo,
              name);
      continue;
    }
    t.ns[(int)entry->cost] = (uint64_t)(us * 1000.0 + 0.5);
  }
  fclose(f);
  return t;
}

}  // namespace

uint64_t ApiCostNs(ApiCost c) {
  static const CostTable table = Load();
  return (int)c < kCount ? table.ns[(int)c] : 0;
}

const char* ApiCostName(ApiCost c) {
  for (const CostEntry& e : kCosts)
    if (e.cost == c) return e.name;
  return "?";
}

}  // namespace gpusim
