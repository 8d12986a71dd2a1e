// Host time per CUDA / cuBLAS(Lt) call on a real GPU host: the numbers behind the shim's host
// cost table (shim/src/host-cost.cc, doc/host-costs.md). Run on a machine with a GPU:
//   nvcc -O2 -std=c++17 -arch=sm_90 -o api-costs bench/device/api-costs.cu -lcublas -lcublasLt
//   ./api-costs [--blocking-sync] > costs.json
// Each figure is the median over batches of the wall time per call, measured with
// steady_clock on an otherwise idle machine (the calling thread is on the CPU throughout).
// The wake-up is the time from a kernel's last write reaching host memory (seen by a second
// thread spinning on it) to the return of the cudaStreamSynchronize that waited for it.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

using Clock = std::chrono::steady_clock;

static double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

__global__ void empty_kernel() {}

__device__ unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins for `ns` nanoseconds, then writes 1 to host-mapped memory.
__global__ void spin_then_flag(unsigned long long ns, volatile int* flag) {
  const unsigned long long start = GlobalNs();
  while (GlobalNs() - start < ns) {
  }
  __threadfence_system();
  *flag = 1;
  __threadfence_system();
}

// Median over `batches` batches of `per` calls of the wall time per call; `after` runs after each
// batch, outside the timing (to drain queues).
static double PerCall(const std::function<void()>& call, int per = 200, int batches = 25,
                      const std::function<void()>& after = [] {}) {
  for (int i = 0; i < per; ++i) call();
  after();
  std::vector<double> v;
  for (int b = 0; b < batches; ++b) {
    auto t0 = Clock::now();
    for (int i = 0; i < per; ++i) call();
    auto t1 = Clock::now();
    v.push_back(Us(t0, t1) / per);
    after();
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median of single timed calls (for expensive ones).
static double Single(const std::function<void()>& call, int reps, const std::function<void()>& after = [] {}) {
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    call();
    auto t1 = Clock::now();
    v.push_back(Us(t0, t1));
    after();
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const bool blocking = argc > 1 && !strcmp(argv[1], "--blocking-sync");
  if (blocking) CK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaStream_t s2;
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t ev, ev2, t0e, t1e;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&ev2, cudaEventDisableTiming));
  CK(cudaEventCreate(&t0e));
  CK(cudaEventCreate(&t1e));
  void *d, *d2, *h;
  CK(cudaMalloc(&d, 1 << 20));
  CK(cudaMalloc(&d2, 1 << 20));
  CK(cudaMallocHost(&h, 1 << 20));
  auto sync = [&] { CK(cudaStreamSynchronize(s)); };

  std::vector<std::pair<std::string, double>> r;
  auto put = [&](const char* k, double us) { r.emplace_back(k, us); };

  put("launch", PerCall([&] { empty_kernel<<<1, 32, 0, s>>>(); }, 200, 25, sync));
  put("memcpy_async_h2d", PerCall([&] { CK(cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s)); }, 200, 25, sync));
  put("memcpy_async_d2h", PerCall([&] { CK(cudaMemcpyAsync(h, d, 4096, cudaMemcpyDeviceToHost, s)); }, 200, 25, sync));
  put("memcpy_async_d2d", PerCall([&] { CK(cudaMemcpyAsync(d2, d, 4096, cudaMemcpyDeviceToDevice, s)); }, 200, 25, sync));
  put("memset_async", PerCall([&] { CK(cudaMemsetAsync(d, 0, 4096, s)); }, 200, 25, sync));
  put("event_record", PerCall([&] { CK(cudaEventRecord(ev, s)); }, 200, 25, sync));
  sync();
  put("event_query", PerCall([&] { CK(cudaEventQuery(ev)); }));
  put("stream_query", PerCall([&] { CK(cudaStreamQuery(s)); }));
  CK(cudaEventRecord(ev, s));
  put("stream_wait_event", PerCall([&] { CK(cudaStreamWaitEvent(s2, ev, 0)); }, 200, 25,
                                   [&] { CK(cudaStreamSynchronize(s2)); }));
  CK(cudaEventRecord(t0e, s));
  CK(cudaEventRecord(t1e, s));
  sync();
  float ms = 0;
  put("event_elapsed", PerCall([&] { CK(cudaEventElapsedTime(&ms, t0e, t1e)); }));
  put("stream_sync", PerCall([&] { CK(cudaStreamSynchronize(s)); }));
  put("event_sync", PerCall([&] { CK(cudaEventSynchronize(ev)); }));
  put("device_sync", PerCall([&] { CK(cudaDeviceSynchronize()); }, 50, 21));
  put("get_device", PerCall([&] {
        int dev;
        CK(cudaGetDevice(&dev));
      }));
  put("set_device", PerCall([&] { CK(cudaSetDevice(0)); }));
  put("get_last_error", PerCall([&] { (void)cudaGetLastError(); }));
  put("stream_is_capturing", PerCall([&] {
        cudaStreamCaptureStatus st;
        CK(cudaStreamIsCapturing(s, &st));
      }));
  timespec ts;
  put("clock_read", PerCall([&] { clock_gettime(CLOCK_MONOTONIC, &ts); }, 10000, 25));

  // Memory.
  void* p = nullptr;
  put("malloc_1mib", Single([&] { CK(cudaMalloc(&p, 1 << 20)); }, 21, [&] { CK(cudaFree(p)); }));
  put("malloc_32mib", Single([&] { CK(cudaMalloc(&p, 32 << 20)); }, 21, [&] { CK(cudaFree(p)); }));
  put("malloc_256mib", Single([&] { CK(cudaMalloc(&p, 256 << 20)); }, 11, [&] { CK(cudaFree(p)); }));
  CK(cudaMalloc(&p, 1 << 20));
  put("free_1mib", Single([&] { CK(cudaFree(p)); }, 21, [&] { CK(cudaMalloc(&p, 1 << 20)); }));
  CK(cudaFree(p));
  put("host_alloc_1mib", Single([&] { CK(cudaHostAlloc(&p, 1 << 20, 0)); }, 11, [&] { CK(cudaFreeHost(p)); }));

  // cuBLAS and cuBLASLt: small GEMMs, so the GPU keeps up and the host's cost is what is timed.
  cublasHandle_t blas;
  cublasCreate(&blas);
  cublasSetStream(blas, s);
  const int n = 64;
  const float one = 1, zero = 0;
  put("cublas_gemm_ex_bf16", PerCall([&] {
        cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, d, CUDA_R_16BF, n, d, CUDA_R_16BF, n, &zero, d2,
                     CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      }, 100, 25, sync));
  put("cublas_sgemm", PerCall([&] {
        cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (float*)d, n, (float*)d, n, &zero, (float*)d2, n);
      }, 100, 25, sync));
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, n, n);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, n, n, n);
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, n, n);
  cublasLtMatmulPreferenceCreate(&pref);
  size_t ws = 0;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  put("cublaslt_heuristic", PerCall([&] { cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heur, &found); }, 20, 11));
  if (found > 0)
    put("cublaslt_matmul", PerCall([&] {
          cublasLtMatmul(lt, desc, &one, d, la, d, lb, &zero, d2, lc, d2, lc, &heur.algo, nullptr, 0, s);
        }, 100, 25, sync));

  // Wake-up: a kernel spins ~100 us, then writes a flag in mapped host memory; a second thread
  // notes when the flag lands, the main thread when cudaStreamSynchronize returns.
  int* flag;
  CK(cudaHostAlloc((void**)&flag, sizeof(int), cudaHostAllocMapped));
  int* dflag;
  CK(cudaHostGetDevicePointer((void**)&dflag, flag, 0));
  std::vector<double> wake;
  for (int rep = 0; rep < 41; ++rep) {
    *(volatile int*)flag = 0;
    std::atomic<bool> go{false};
    Clock::time_point seen;
    std::thread watcher([&] {
      go = true;
      while (*(volatile int*)flag == 0) {
      }
      seen = Clock::now();
    });
    while (!go) {
    }
    spin_then_flag<<<1, 1, 0, s>>>(100000ull, dflag);
    CK(cudaStreamSynchronize(s));
    auto back = Clock::now();
    watcher.join();
    wake.push_back(Us(seen, back));
  }
  std::sort(wake.begin(), wake.end());
  put(blocking ? "sync_wake_blocking" : "sync_wake", wake[wake.size() / 2]);

  printf("{\"gpu\": \"%s\", \"driver\": %d, \"runtime\": %d, \"scheduling\": \"%s\", \"us_per_call\": {", prop.name,
         driver, runtime, blocking ? "blocking-sync" : "auto");
  for (size_t i = 0; i < r.size(); ++i) printf("%s\"%s\": %.3f", i ? ", " : "", r[i].first.c_str(), r[i].second);
  printf("}}\n");
  return 0;
}
