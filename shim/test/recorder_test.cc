// The recorder inside one process (ctest runs this with GPUSIM_RECORD_DIR set): thread indices,
// per-thread default streams, flushing on cudaDeviceReset, op fields.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "cuda_runtime.h"
#include "trace-reader.h"

using namespace shimtest;

namespace {

void k_stub() {}

void Register() {
  static bool done = [] {
    static const unsigned long long fatbin[2] = {0, 0};
    void** h = __cudaRegisterFatBinary((void*)fatbin);
    __cudaRegisterFunction(h, (const char*)k_stub, (char*)"_Z6k_stubv", "_Z6k_stubv", -1, nullptr, nullptr, nullptr,
                           nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(h);
    return true;
  }();
  (void)done;
}

TEST(Recorder, ThreadsStreamsAndFlushOnReset) {
  const char* dir = getenv("GPUSIM_RECORD_DIR");
  if (!dir) GTEST_SKIP() << "run with GPUSIM_RECORD_DIR set (ctest does)";
  Register();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  // Two host threads launch on device 0: one on the legacy stream, one on its per-thread stream.
  std::thread a([] {
    for (int i = 0; i < 3; ++i) cudaLaunchKernel((const void*)k_stub, dim3(1), dim3(32), nullptr, 0, 0);
  });
  a.join();
  std::thread b([] {
    for (int i = 0; i < 2; ++i)
      cudaLaunchKernel((const void*)k_stub, dim3(2), dim3(64), nullptr, 0, cudaStreamPerThread);
  });
  b.join();
  void* p;
  ASSERT_EQ(cudaMalloc(&p, 4096), cudaSuccess);
  ASSERT_EQ(cudaMemset(p, 0, 4096), cudaSuccess);
  int host[4];
  ASSERT_EQ(cudaMemcpy(host, p, sizeof host, cudaMemcpyDefault), cudaSuccess);
  int* pinned;
  ASSERT_EQ(cudaMallocHost((void**)&pinned, sizeof host), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, p, sizeof host, cudaMemcpyDeviceToHost, 0), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host, p, sizeof host, cudaMemcpyDeviceToHost, 0), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  ASSERT_EQ(cudaProfilerStart(), cudaSuccess);
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);  // must flush: read the file while still running

  auto ops = ReadRank(std::string(dir) + "/rank-0.jsonl");
  auto kernels = Select(ops, "kernel");
  ASSERT_EQ(kernels.size(), 5u);
  EXPECT_EQ(kernels[0].Int("t"), 0) << "thread a issued the first op";
  EXPECT_EQ(kernels[0].Int("stream"), 0);
  EXPECT_EQ(kernels[3].Int("t"), 1) << "thread b is another thread, although a has exited";
  EXPECT_GT(kernels[3].Int("stream"), 0) << "per-thread default stream has its own id";
  auto ptds = Select(ops, "stream_create");
  ASSERT_EQ(ptds.size(), 1u);
  EXPECT_EQ(ptds[0].Int("stream"), kernels[3].Int("stream"));
  auto mallocs = Select(ops, "malloc"), frees = Select(ops, "free");
  ASSERT_EQ(mallocs.size(), 1u);
  ASSERT_EQ(frees.size(), 1u);
  EXPECT_EQ(mallocs[0].Int("bytes"), 4096);
  EXPECT_EQ(mallocs[0].Int("t"), 2);
  EXPECT_EQ(mallocs[0].Get("ptr"), frees[0].Get("ptr"));
  auto copies = Select(ops, "memcpy");
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(copies[0].Get("kind"), "d2h") << "cudaMemcpyDefault is resolved from the pointers";
  EXPECT_EQ(copies[0].Get("async"), "false");
  EXPECT_EQ(copies[1].Get("async"), "true") << "into pinned memory";
  EXPECT_FALSE(copies[1].Has("pageable"));
  EXPECT_EQ(copies[2].Get("async"), "false") << "into pageable memory the host waits";
  EXPECT_EQ(copies[2].Get("pageable"), "true");
  EXPECT_EQ(Select(ops, "memset").size(), 1u);
  auto markers = Select(ops, "marker");
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].Get("name"), "cudaProfilerStart");
  EXPECT_EQ(markers[0].Get("phase"), "instant");
  std::string m = ReadFile(std::string(dir) + "/manifest.json");
  EXPECT_NE(m.find("\"rank\":0"), std::string::npos) << m;
}

}  // namespace

namespace {

// Several host threads hammer one device concurrently; every op must land exactly once, whole.
TEST(Recorder, ConcurrentThreadsLoseNothing) {
  const char* dir = getenv("GPUSIM_RECORD_DIR");
  if (!dir) GTEST_SKIP() << "run with GPUSIM_RECORD_DIR set (ctest does)";
  Register();
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  const int kThreads = 4, kOps = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([] {
      cudaSetDevice(1);
      cudaStream_t s;
      cudaEvent_t e;
      cudaStreamCreate(&s);
      cudaEventCreate(&e);
      for (int i = 0; i < kOps; ++i) {
        cudaLaunchKernel((const void*)k_stub, dim3(1), dim3(32), nullptr, 0, s);
        cudaEventRecord(e, s);
      }
      cudaStreamDestroy(s);
      cudaEventDestroy(e);
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  // Device 1 has no communicator and this process now uses two devices: rank 0 + 1.
  auto ops = ReadRank(std::string(dir) + "/rank-1.jsonl");
  EXPECT_EQ(Select(ops, "kernel").size(), (size_t)kThreads * kOps);
  EXPECT_EQ(Select(ops, "event_record").size(), (size_t)kThreads * kOps);
  std::set<long long> ts;
  for (const Op& o : ops) {
    ASSERT_EQ(o.line.front(), '{');
    ASSERT_EQ(o.line.back(), '}');
    ts.insert(o.Int("t"));
  }
  EXPECT_EQ(ts.size(), (size_t)kThreads);
}

}  // namespace
