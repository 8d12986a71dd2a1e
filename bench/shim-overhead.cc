// shim_bench: nanoseconds per call of the shim's hot entry points, with recording off and on.
//
//   shim_bench [--iters N]
//
// Runs the measurements in this process (recording off unless GPUSIM_RECORD_DIR is set), then
// re-runs itself with GPUSIM_RECORD_DIR pointing at a temporary directory to measure recording.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "nccl.h"

namespace {

void kernel_stub() {}

template <class F>
double NsPerCall(long iters, F&& body) {
  for (long i = 0; i < iters / 10; ++i) body();  // warm caches and buffers
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iters; ++i) body();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / (double)iters;
}

void Report(const char* what, double ns) { printf("  %-34s %8.1f ns/call  %8.2f M calls/s\n", what, ns, 1e3 / ns); }

}  // namespace

int main(int argc, char** argv) {
  long iters = 1000000;
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--iters")) iters = atol(argv[i + 1]);

  static const unsigned long long fatbin[2] = {0, 0};
  void** h = __cudaRegisterFatBinary((void*)fatbin);
  __cudaRegisterFunction(h, (const char*)kernel_stub, (char*)"_Z11kernel_stubv", "_Z11kernel_stubv", -1, nullptr,
                         nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(h);
  cudaKernel_t k;
  cudaStream_t s;
  cudaEvent_t e;
  ncclComm_t comm;
  cublasHandle_t blas;
  void* buf;
  ncclUniqueId id;
  if (__cudaGetKernel(&k, (const void*)kernel_stub) || cudaStreamCreate(&s) || cudaEventCreate(&e) ||
      cudaMalloc(&buf, 1 << 20) || ncclGetUniqueId(&id) || ncclCommInitRank(&comm, 1, id, 0) || cublasCreate(&blas) ||
      cublasSetStream(blas, s)) {
    fprintf(stderr, "setup failed\n");
    return 1;
  }
  const char* dir = getenv("GPUSIM_RECORD_DIR");
  printf("recording %s (%ld calls each)\n", dir ? "on" : "off", iters);

  Report("cudaLaunchKernel",
         NsPerCall(iters, [&] { cudaLaunchKernel((const void*)kernel_stub, dim3(128), dim3(256), nullptr, 0, s); }));
  Report("push config + __cudaLaunchKernel", NsPerCall(iters, [&] {
           __cudaPushCallConfiguration(dim3(128), dim3(256), 0, s);
           dim3 g, b;
           size_t smem;
           cudaStream_t st;
           __cudaPopCallConfiguration(&g, &b, &smem, &st);
           __cudaLaunchKernel(k, g, b, nullptr, smem, st);
         }));
  Report("cudaEventRecord", NsPerCall(iters, [&] { cudaEventRecord(e, s); }));
  Report("cudaStreamWaitEvent", NsPerCall(iters, [&] { cudaStreamWaitEvent(s, e, 0); }));
  Report("cudaStreamQuery", NsPerCall(iters, [&] { cudaStreamQuery(s); }));
  Report("cudaMemcpyAsync d2d 256 B",
         NsPerCall(iters, [&] { cudaMemcpyAsync(buf, (char*)buf + 4096, 256, cudaMemcpyDeviceToDevice, s); }));
  Report("ncclAllReduce", NsPerCall(iters, [&] { ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, s); }));
  float one = 1, zero = 0;
  Report("cublasSgemm", NsPerCall(iters, [&] {
           cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &one, (float*)buf, 512, (float*)buf, 512, &zero,
                       (float*)buf, 512);
         }));
  Report("cudaGetDevice (no recording path)", NsPerCall(iters, [&] {
           int d;
           cudaGetDevice(&d);
         }));
  fflush(stdout);

  if (!dir) {
    char tmpl[] = "/tmp/gpusim-bench-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    std::string cmd = "GPUSIM_RECORD_DIR=" + std::string(tmpl) + " /proc/" + std::to_string(getpid()) +
                      "/exe --iters " + std::to_string(iters);
    int rc = system(cmd.c_str());
    std::string file = std::string(tmpl) + "/rank-0.jsonl";
    struct stat st;
    if (stat(file.c_str(), &st) == 0) printf("  trace written: %.1f MB\n", st.st_size / 1e6);
    system(("rm -rf " + std::string(tmpl)).c_str());
    return rc == 0 ? 0 : 1;
  }
  return 0;
}
