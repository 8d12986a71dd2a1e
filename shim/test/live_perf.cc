// A benchmark written the way nccl-tests and ordinary training scripts time themselves, for
// live mode (gpusim run): it knows nothing about gpusim. Built against the shim's stub
// headers, so it runs without the CUDA toolkit.
//
//   live_perf [--mode allreduce|gemm|steps|syncs|launches|nap|hostfunc] [-b MIN] [-e MAX] [-f FACTOR] [-g GPUS] [-n ITERS]
//             [-w WARMUP] [--crash-rank R] [--skip-rank R] [--poll] [--sleep-ms N]
//
// allreduce: nccl-tests' all_reduce_perf loop: per size, warm-up, then ITERS AllReduces timed
//   with std::chrono::steady_clock (after synchronising every stream) and with CUDA events on
//   the first GPU; prints "size time_host_us time_event_us algbw busbw" per size.
// gemm: ITERS cuBLAS SGEMMs of 4096^3 timed both ways; prints "gemm host_us event_us".
// steps: a data-parallel step loop (GEMMs, then an AllReduce of the gradients), printing each
//   step's time from steady_clock.
// syncs: ITERS cudaStreamSynchronize calls on an idle stream (round-trip benchmark).
// launches: ITERS kernel launches and event records back to back, then one synchronize (the cost
//   of the live path per non-blocking op); prints "launches N host_us H".
// nap: sleeps ITERS ms (std::this_thread::sleep_for) between two clock reads; prints "nap host_us H".
// hostfunc: a host function working ITERS ms of CPU, through cudaLaunchHostFunc and its _ptsz
//   form; prints "hostfunc host_us H ptsz_host_us P".
// --crash-rank R: process R aborts in the middle of the run. --skip-rank R: process R returns
// before its first collective. --poll: wait with a cudaStreamQuery loop instead of
// cudaStreamSynchronize (what some benchmarks do). --sleep-ms N: wait N ms of real time in
// poll() (as for I/O: no host time of the program)
// after each AllReduce (CPU-idle time: no simulated host time; makes runs long in real time);
// --sleep-rank R: only process R sleeps. --wait-speculation FILE: instead of sleeping, wait
// (blocked in poll(), as for I/O) until the simulator's speculation log FILE (LiveJobSource's
// SpeculationLog) ends in a new "dry" line: the simulator has speculated past this process and
// run all it can without it, so the next call lands in the speculated past (a rollback, for
// certain and without real-time sleeps). --host-work-ms N (steps mode): N ms of CPU work after
// issuing each step's AllReduce, before waiting for it (overlaps host work with communication).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <string>
#include <thread>
#include <vector>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "nccl.h"

#include "check-macros.h"
#include "program-util.h"

namespace {

// __global__ void tiny_kernel(): registered as nvcc does; launched through cudaLaunchKernel.
void tiny_kernel() {}
__attribute__((constructor)) void RegisterTinyKernel() {
  static const unsigned long long fatbin[4] = {0x466243b1ull, 1, 0, 0};
  void** h = __cudaRegisterFatBinary((void*)fatbin);
  __cudaRegisterFunction(h, (const char*)tiny_kernel, (char*)"_Z11tiny_kernelv", "_Z11tiny_kernelv", -1, nullptr,
                         nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(h);
}

struct Args {
  std::string mode = "allreduce";
  size_t minBytes = 1 << 20, maxBytes = 64 << 20;
  int factor = 2, gpus = 1, iters = 20, warmup = 5;
  int crashRank = -1, skipRank = -1;
  bool poll = false;
  int sleepMs = 0;
  int sleepRank = -1;  // only this rank sleeps (-1: all)
  int hostWorkMs = 0;  // CPU work after issuing each step's AllReduce (steps mode)
  std::string waitSpeculation;  // the simulator's speculation log (see the header)
};

size_t ParseSize(const char* s) {
  char* end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'K':
    case 'k': v *= 1024; break;
    case 'M':
    case 'm': v *= 1024 * 1024; break;
    case 'G':
    case 'g': v *= 1024.0 * 1024 * 1024; break;
  }
  return (size_t)v;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (k == "--mode")
      a.mode = v, ++i;
    else if (k == "-b")
      a.minBytes = ParseSize(v), ++i;
    else if (k == "-e")
      a.maxBytes = ParseSize(v), ++i;
    else if (k == "-f")
      a.factor = atoi(v), ++i;
    else if (k == "-g")
      a.gpus = atoi(v), ++i;
    else if (k == "-n")
      a.iters = atoi(v), ++i;
    else if (k == "-w")
      a.warmup = atoi(v), ++i;
    else if (k == "--crash-rank")
      a.crashRank = atoi(v), ++i;
    else if (k == "--skip-rank")
      a.skipRank = atoi(v), ++i;
    else if (k == "--poll")
      a.poll = true;
    else if (k == "--sleep-ms")
      a.sleepMs = atoi(v), ++i;
    else if (k == "--sleep-rank")
      a.sleepRank = atoi(v), ++i;
    else if (k == "--wait-speculation")
      a.waitSpeculation = v, ++i;
    else if (k == "--host-work-ms")
      a.hostWorkMs = atoi(v), ++i;
    else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      exit(2);
    }
  }
  return a;
}


double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The log's size, and whether its last line is a "dry" step.
bool LastLineIsDry(const std::string& path, off_t* size) {
  std::string text;
  if (FILE* f = fopen(path.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    fclose(f);
  }
  *size = (off_t)text.size();
  if (text.empty() || text.back() != '\n') return false;
  const size_t start = text.size() < 2 ? std::string::npos : text.rfind('\n', text.size() - 2);
  return text.compare(start == std::string::npos ? 0 : start + 1, 4, "dry ") == 0;
}

// Waits, off the CPU, until the speculation log has grown since the last wait and ends in "dry".
void WaitForSpeculation(const std::string& path) {
  static off_t seen = 0;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const int fd = inotify_init1(IN_CLOEXEC);
  if (fd < 0 || inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CREATE) < 0) {
    fprintf(stderr, "live_perf: inotify on %s failed\n", dir.c_str());
    exit(1);
  }
  const double t0 = NowUs();
  off_t size = 0;
  while (!(LastLineIsDry(path, &size) && size > seen)) {
    if (NowUs() - t0 > 60e6) {
      fprintf(stderr, "live_perf: no speculation ran dry in %s within 60 s\n", path.c_str());
      exit(1);
    }
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 1000) > 0) {
      char events[4096];
      (void)!read(fd, events, sizeof events);
    }
  }
  seen = size;
  close(fd);
}

struct Gpu {
  int device;
  cudaStream_t stream;
  ncclComm_t comm;
  void *send, *recv;
  cublasHandle_t blas;
  float *a, *b, *c;
};

void Wait(const Args& a, cudaStream_t s) {
  if (!a.poll) {
    CHECK_CUDA(cudaStreamSynchronize(s));
    return;
  }
  while (true) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) CHECK_CUDA(e);
  }
}

void WaitAll(const Args& a, std::vector<Gpu>& gpus) {
  for (auto& g : gpus) {
    CHECK_CUDA(cudaSetDevice(g.device));
    Wait(a, g.stream);
  }
}

void AllReduce(std::vector<Gpu>& gpus, size_t count) {
  CHECK_NCCL(ncclGroupStart());
  for (auto& g : gpus) CHECK_NCCL(ncclAllReduce(g.send, g.recv, count, ncclFloat, ncclSum, g.comm, g.stream));
  CHECK_NCCL(ncclGroupEnd());
}


void Gemm(Gpu& g) {
  const int n = 4096;
  const float one = 1, zero = 0;
  CHECK_CUDA(cudaSetDevice(g.device));
  if (cublasSgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, g.a, n, g.b, n, &zero, g.c, n) !=
      CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasSgemm failed\n");
    exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  const int rank = EnvInt("RANK", 0), world = EnvInt("WORLD_SIZE", 1);
  const int nranks = world * a.gpus;
  // As nccl-tests does: the process's GPUs follow its rank on the node.
  const int firstDevice = EnvInt("LOCAL_RANK", 0) * a.gpus;

  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));  // shared across processes by the launcher's id file
  std::vector<Gpu> gpus(a.gpus);
  CHECK_NCCL(ncclGroupStart());
  for (int i = 0; i < a.gpus; ++i) {
    Gpu& g = gpus[i];
    g.device = firstDevice + i;
    CHECK_CUDA(cudaSetDevice(g.device));
    CHECK_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&g.send, a.maxBytes));
    CHECK_CUDA(cudaMalloc(&g.recv, a.maxBytes));
    CHECK_NCCL(ncclCommInitRank(&g.comm, nranks, id, rank * a.gpus + i));
  }
  CHECK_NCCL(ncclGroupEnd());
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaSetDevice(firstDevice));
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));

  if (rank == a.skipRank) {
    printf("rank %d: leaving before the first collective\n", rank);
    return 0;
  }

  if (a.mode == "allreduce") {
    if (rank == 0) printf("#%11s %12s %12s %9s %9s\n", "size(B)", "host_us", "event_us", "algbw", "busbw");
    for (size_t bytes = a.minBytes; bytes <= a.maxBytes; bytes *= a.factor) {
      const size_t count = bytes / sizeof(float);
      // Warm-up runs every call of the timed loop once (the dynamic linker binds each on its
      // first call: program time that must not land in the measurement).
      CHECK_CUDA(cudaEventRecord(start, gpus[0].stream));
      CHECK_CUDA(cudaEventRecord(stop, gpus[0].stream));
      for (int i = 0; i < a.warmup; ++i) AllReduce(gpus, count);
      WaitAll(a, gpus);
      const double t0 = NowUs();
      CHECK_CUDA(cudaEventRecord(start, gpus[0].stream));
      for (int i = 0; i < a.iters; ++i) {
        if (rank == a.crashRank && bytes > a.minBytes) abort();
        AllReduce(gpus, count);
        if (a.sleepMs && (a.sleepRank < 0 || a.sleepRank == rank)) poll(nullptr, 0, a.sleepMs);
        if (!a.waitSpeculation.empty() && (a.sleepRank < 0 || a.sleepRank == rank))
          WaitForSpeculation(a.waitSpeculation);
      }
      CHECK_CUDA(cudaSetDevice(firstDevice));
      CHECK_CUDA(cudaEventRecord(stop, gpus[0].stream));
      WaitAll(a, gpus);
      const double hostUs = (NowUs() - t0) / a.iters;
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      const double eventUs = ms * 1e3 / a.iters;
      const double algbw = bytes / hostUs / 1e3;
      const double busbw = algbw * 2.0 * (nranks - 1) / nranks;
      if (rank == 0) printf("%12zu %12.2f %12.2f %9.2f %9.2f\n", bytes, hostUs, eventUs, algbw, busbw);
      if (bytes * a.factor <= bytes) break;
    }
  } else if (a.mode == "gemm" || a.mode == "steps") {
    for (auto& g : gpus) {
      CHECK_CUDA(cudaSetDevice(g.device));
      const size_t sz = (size_t)4096 * 4096 * sizeof(float);
      CHECK_CUDA(cudaMalloc((void**)&g.a, sz));
      CHECK_CUDA(cudaMalloc((void**)&g.b, sz));
      CHECK_CUDA(cudaMalloc((void**)&g.c, sz));
      if (cublasCreate(&g.blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(g.blas, g.stream) != CUBLAS_STATUS_SUCCESS)
        exit(1);
    }
    if (a.mode == "gemm") {
      WaitAll(a, gpus);
      const double t0 = NowUs();
      CHECK_CUDA(cudaEventRecord(start, gpus[0].stream));
      for (int i = 0; i < a.iters; ++i) Gemm(gpus[0]);
      CHECK_CUDA(cudaEventRecord(stop, gpus[0].stream));
      Wait(a, gpus[0].stream);
      const double hostUs = NowUs() - t0;
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      printf("gemm x%d host_us %.3f event_us %.3f\n", a.iters, hostUs, ms * 1e3);
    } else {
      for (int step = 0; step < a.iters; ++step) {
        const double t0 = NowUs();
        for (auto& g : gpus)
          for (int l = 0; l < 4; ++l) Gemm(g);
        if (rank == a.crashRank && step == a.iters / 2) abort();
        AllReduce(gpus, a.maxBytes / sizeof(float));
        if (a.hostWorkMs) BurnCpu(a.hostWorkMs * 1000.0);  // e.g. the next batch's preprocessing
        if (a.sleepMs && (a.sleepRank < 0 || a.sleepRank == rank)) poll(nullptr, 0, a.sleepMs);
        WaitAll(a, gpus);
        if (rank == 0) printf("step %d %.3f ms\n", step, (NowUs() - t0) / 1e3);
      }
    }
  } else if (a.mode == "launches") {
    CHECK_CUDA(cudaSetDevice(firstDevice));
    const double t0 = NowUs();
    for (int i = 0; i < a.iters; ++i) {
      CHECK_CUDA(cudaLaunchKernel((const void*)tiny_kernel, dim3(1), dim3(32), nullptr, 0, gpus[0].stream));
      if (i % 8 == 7) CHECK_CUDA(cudaEventRecord(start, gpus[0].stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(gpus[0].stream));
    if (rank == 0) printf("launches %d host_us %.3f\n", a.iters, NowUs() - t0);
  } else if (a.mode == "hostfunc") {
    // A host function that works ITERS ms on the CPU, launched as programs built with and
    // without --default-stream per-thread launch it: the program's own time, on its clock.
    CHECK_CUDA(cudaSetDevice(firstDevice));
    auto work = [](void* ms) { BurnCpu(*static_cast<int*>(ms) * 1000.0); };
    double t0 = NowUs();
    CHECK_CUDA(cudaLaunchHostFunc(gpus[0].stream, work, &a.iters));
    const double plain = NowUs() - t0;
    t0 = NowUs();
    CHECK_CUDA(cudaLaunchHostFunc_ptsz(gpus[0].stream, work, &a.iters));
    printf("hostfunc host_us %.3f ptsz_host_us %.3f\n", plain, NowUs() - t0);
  } else if (a.mode == "nap") {
    const double t0 = NowUs();
    std::this_thread::sleep_for(std::chrono::milliseconds(a.iters));
    printf("nap host_us %.3f\n", NowUs() - t0);
  } else if (a.mode == "syncs") {
    // ITERS synchronisations of an idle stream: in live mode, one round trip each.
    CHECK_CUDA(cudaSetDevice(firstDevice));
    for (int i = 0; i < a.iters; ++i) CHECK_CUDA(cudaStreamSynchronize(gpus[0].stream));
    if (rank == 0) printf("syncs %d\n", a.iters);
  } else {
    fprintf(stderr, "unknown mode %s\n", a.mode.c_str());
    return 2;
  }
  fflush(stdout);
  for (auto& g : gpus) CHECK_NCCL(ncclCommDestroy(g.comm));
  return 0;
}
