// The recorder inside one process (ctest runs this with GPUSIM_RECORD_DIR set): thread indices,
// per-thread default streams, flushing on cudaDeviceReset, op fields.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "cublasLt.h"
#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "nccl.h"
#include "trace-reader.h"

using namespace shimtest;

namespace {

void k_stub() {}

void Register() {
  static bool done = [] {
    static const unsigned long long fatbin[2] = {0, 0};
    static void** h = __cudaRegisterFatBinary((void*)fatbin);
    std::atexit([] { __cudaUnregisterFatBinary(h); });  // as nvcc's generated code does
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

namespace {

char g_symbol[256];  // the host shadow of a __device__ variable

// Copies as CUDA's "API synchronization behavior" describes them: a synchronous copy between
// two device buffers does not block the host, an asynchronous host-to-host one does, copies
// with pageable memory do (2-D and symbol copies included); cudaMemcpyDefault is resolved from
// the pointers; a copy between two GPUs is p2p and names both ranks.
TEST(Recorder, CopiesFollowCudaSynchronizationRules) {
  const char* dir = getenv("GPUSIM_RECORD_DIR");
  if (!dir) GTEST_SKIP() << "run with GPUSIM_RECORD_DIR set (ctest does)";
  static const unsigned long long fatbin[2] = {0, 0};
  void** h = __cudaRegisterFatBinary((void*)fatbin);
  __cudaRegisterVar(h, g_symbol, (char*)"g_symbol", "g_symbol", 0, sizeof g_symbol, 0, 0);
  __cudaRegisterFatBinaryEnd(h);
  void *peer, *a, *b;
  ASSERT_EQ(cudaSetDevice(3), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&peer, 4096), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&a, 4096), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 4096), cudaSuccess);
  char* pinned;
  ASSERT_EQ(cudaMallocHost((void**)&pinned, 4096), cudaSuccess);
  static char pageable[4096];
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);

  ASSERT_EQ(cudaMemcpy(b, a, 4096, cudaMemcpyDeviceToDevice), cudaSuccess);                     // 0
  ASSERT_EQ(cudaMemcpyAsync(pageable, pinned, 64, cudaMemcpyHostToHost, s), cudaSuccess);       // 1
  ASSERT_EQ(cudaMemcpy(a, pinned, 64, cudaMemcpyHostToDevice), cudaSuccess);                    // 2
  ASSERT_EQ(cudaMemcpy2DAsync(pageable, 64, a, 64, 32, 4, cudaMemcpyDefault, s), cudaSuccess);  // 3
  ASSERT_EQ(cudaMemcpy2DAsync(a, 64, pinned, 64, 32, 4, cudaMemcpyDefault, s), cudaSuccess);    // 4
  ASSERT_EQ(cudaMemcpy2D(peer, 64, a, 64, 64, 4, cudaMemcpyDefault), cudaSuccess);              // 5
  ASSERT_EQ(cudaMemcpyPeerAsync(peer, 3, a, 2, 4096, s), cudaSuccess);                          // 6
  ASSERT_EQ(cudaMemcpyPeer(b, 2, peer, 3, 128), cudaSuccess);                                   // 7
  EXPECT_EQ(cudaMemcpyPeer(b, 3, peer, 3, 128), cudaErrorInvalidValue) << "b is on device 2";
  // cudaDeviceSyncMemops: "synchronous memory operations ... will always synchronize".
  ASSERT_EQ(cudaSetDeviceFlags(cudaDeviceSyncMemops), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b, a, 4096, cudaMemcpyDeviceToDevice), cudaSuccess);  // 8
  ASSERT_EQ(cudaSetDeviceFlags(0), cudaSuccess);
  // Symbol copies, on the legacy stream or the given one.
  for (int i = 0; i < 64; ++i) pageable[i] = (char)(i + 1);
  ASSERT_EQ(cudaMemcpyToSymbol(g_symbol, pageable, 64, 0, cudaMemcpyHostToDevice), cudaSuccess);                 // 9
  ASSERT_EQ(cudaMemcpyToSymbolAsync(g_symbol, pinned, 64, 64, cudaMemcpyHostToDevice, s), cudaSuccess);          // 10
  ASSERT_EQ(cudaMemcpyFromSymbolAsync(pageable + 64, g_symbol, 64, 0, cudaMemcpyDeviceToHost, s), cudaSuccess);  // 11
  ASSERT_EQ(cudaMemcpyFromSymbol(b, g_symbol, 64, 0, cudaMemcpyDeviceToDevice), cudaSuccess);                    // 12
  EXPECT_EQ(memcmp(pageable, pageable + 64, 64), 0) << "the variable kept the bytes";
  EXPECT_EQ(cudaMemcpyToSymbol(g_symbol, pinned, 64, 0, cudaMemcpyDeviceToHost), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpyFromSymbol(pinned, g_symbol, 64, 0, cudaMemcpyHostToDevice), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpyToSymbol(g_symbol, pinned, 64, 250, cudaMemcpyHostToDevice), cudaErrorInvalidValue)
      << "past the variable's end";
  // Device 3 learns its rank only now, after the copies naming it were recorded.
  ASSERT_EQ(cudaSetDevice(3), cudaSuccess);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitRank(&comm, 8, id, 7), ncclSuccess);
  ASSERT_EQ(cudaSetDevice(2), cudaSuccess);
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);  // flushes every device's log

  auto ops = ReadRank(std::string(dir) + "/rank-2.jsonl");
  long long stream = -1;  // s, as the trace numbers it
  for (const Op& o : ops)
    if (o.op() == "stream_create" && o.Int("stream") > 0) stream = o.Int("stream");
  auto c = Select(ops, "memcpy");
  ASSERT_EQ(c.size(), 13u);
  auto expect = [&](size_t i, const char* kind, bool async, bool pageableEnd, long long onStream) {
    SCOPED_TRACE("copy " + std::to_string(i) + ": " + c[i].line);
    EXPECT_EQ(c[i].Get("kind"), kind);
    EXPECT_EQ(c[i].Get("async"), async ? "true" : "false");
    EXPECT_EQ(c[i].Has("pageable"), pageableEnd);
    EXPECT_EQ(c[i].Int("stream"), onStream);
  };
  expect(0, "d2d", true, false, 0);  // "no host-side synchronization is performed"
  expect(1, "h2h", false, false, stream);
  expect(2, "h2d", false, false, 0);
  expect(3, "d2h", false, true, stream);
  expect(4, "h2d", true, false, stream);
  EXPECT_EQ(c[3].Int("bytes"), 128);
  expect(5, "p2p", true, false, 0);
  expect(6, "p2p", true, false, stream);
  expect(7, "p2p", true, false, 0);
  expect(8, "d2d", false, false, 0);
  expect(9, "h2d", false, true, 0);
  expect(10, "h2d", true, false, stream);
  expect(11, "d2h", false, true, stream);
  expect(12, "d2d", true, false, 0);
  // Peer copies name both GPUs by trace rank: device 3 is rank 7 (its communicator's).
  EXPECT_EQ(c[5].Int("src_rank"), 2);
  EXPECT_EQ(c[5].Int("dst_rank"), 7);
  EXPECT_EQ(c[6].Int("src_rank"), 2);
  EXPECT_EQ(c[6].Int("dst_rank"), 7);
  EXPECT_EQ(c[7].Int("src_rank"), 7);
  EXPECT_EQ(c[7].Int("dst_rank"), 2);
  EXPECT_FALSE(c[0].Has("src_rank"));
  EXPECT_EQ(Select(ReadRank(std::string(dir) + "/rank-7.jsonl"), "comm_init").size(), 1u);
  ASSERT_EQ(ncclCommDestroy(comm), ncclSuccess);
  __cudaUnregisterFatBinary(h);  // as nvcc's exit handler does
}

// cuBLAS/cuBLASLt GEMMs on FP32 data record the math they run in: TF32 with
// CUBLAS_TF32_TENSOR_OP_MATH or CUBLAS_COMPUTE_32F_FAST_TF32, FP32 otherwise.
TEST(Recorder, Fp32GemmsRecordTheirMath) {
  const char* dir = getenv("GPUSIM_RECORD_DIR");
  if (!dir) GTEST_SKIP() << "run with GPUSIM_RECORD_DIR set (ctest does)";
  ASSERT_EQ(cudaSetDevice(4), cudaSuccess);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  float one = 1, zero = 0;
  auto sgemm = [&] {
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, nullptr, 64, nullptr, 64, &zero, nullptr, 64);
  };
  auto gemmEx = [&](cublasComputeType_t compute) {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, nullptr, CUDA_R_32F, 64, nullptr, CUDA_R_32F, 64,
                        &zero, nullptr, CUDA_R_32F, 64, compute, CUBLAS_GEMM_DEFAULT);
  };
  ASSERT_EQ(sgemm(), CUBLAS_STATUS_SUCCESS);                               // f32: default math
  ASSERT_EQ(gemmEx(CUBLAS_COMPUTE_32F_FAST_TF32), CUBLAS_STATUS_SUCCESS);  // tf32
  ASSERT_EQ(gemmEx(CUBLAS_COMPUTE_32F_FAST_16BF), CUBLAS_STATUS_SUCCESS);  // bf16
  ASSERT_EQ(cublasSetMathMode(
                h, (cublasMath_t)(CUBLAS_TF32_TENSOR_OP_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(sgemm(), CUBLAS_STATUS_SUCCESS);                              // tf32
  ASSERT_EQ(gemmEx(CUBLAS_COMPUTE_32F), CUBLAS_STATUS_SUCCESS);           // tf32
  ASSERT_EQ(gemmEx(CUBLAS_COMPUTE_32F_PEDANTIC), CUBLAS_STATUS_SUCCESS);  // f32
  ASSERT_EQ(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(sgemm(), CUBLAS_STATUS_SUCCESS);  // f32
  cublasDestroy(h);

  cublasLtHandle_t lt;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t l;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 64, 64, 64), CUBLAS_STATUS_SUCCESS);
  for (cublasComputeType_t compute : {CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F}) {  // tf32, f32
    cublasLtMatmulDesc_t d;
    ASSERT_EQ(cublasLtMatmulDescCreate(&d, compute, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(
        cublasLtMatmul(lt, d, &one, nullptr, l, nullptr, l, &zero, nullptr, l, nullptr, l, nullptr, nullptr, 0, 0),
        CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulDescDestroy(d);
  }
  cublasLtMatrixLayoutDestroy(l);
  cublasLtDestroy(lt);
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);

  auto k = Select(ReadRank(std::string(dir) + "/rank-4.jsonl"), "kernel");
  const char* want[] = {"f32", "tf32", "bf16", "tf32", "tf32", "f32", "f32", "tf32", "f32"};
  ASSERT_EQ(k.size(), sizeof want / sizeof *want);
  for (size_t i = 0; i < k.size(); ++i) {
    EXPECT_EQ(k[i].Get("dtype"), want[i]) << k[i].line;
    EXPECT_EQ(k[i].Int("mem_bytes"), 3 * 64 * 64 * 4) << "FP32 storage whatever the math";
  }
}

}  // namespace

namespace {

// Send/Recv between two GPUs of this process (ncclCommInitAll, as nccl-tests -g N), and an
// AllToAll whose every rank it holds: NCCL's direct mode writes into the peer's buffer in one
// copy, so the ops carry flags 1 (gpusim::kCollOneCopy); the NCCL model then skips its
// receiver's copy out of the FIFO.
TEST(Recorder, SendRecvToAPeerOfThisProcessIsOneCopy) {
  const char* dir = getenv("GPUSIM_RECORD_DIR");
  if (!dir) GTEST_SKIP() << "run with GPUSIM_RECORD_DIR set (ctest does)";
  ncclComm_t comms[2];
  int devs[2] = {6, 7};
  ASSERT_EQ(ncclCommInitAll(comms, 2, devs), ncclSuccess);
  void* buf[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(cudaSetDevice(devs[i]), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buf[i], 4096), cudaSuccess);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclSend(buf[0], 1024, ncclFloat, 1, comms[0], 0), ncclSuccess);
  ASSERT_EQ(ncclRecv(buf[1], 1024, ncclFloat, 0, comms[1], 0), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  // An AllToAll whose every rank this process holds.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(ncclAlltoAll(buf[i], buf[i], 256, ncclFloat, comms[i], 0), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(ncclCommDestroy(comms[i]), ncclSuccess);
    ASSERT_EQ(cudaSetDevice(devs[i]), cudaSuccess);
    ASSERT_EQ(cudaDeviceReset(), cudaSuccess);  // flushes the device's file
  }
  // Which file a device's ops land in depends on the ranks the earlier tests bound: read all.
  std::vector<Op> sends, recvs, alltoalls;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".jsonl") continue;
    for (const Op& o : Select(ReadRank(e.path().string()), "coll")) {
      const std::string kind = o.Get("coll");
      (kind == "send" ? sends : kind == "recv" ? recvs : alltoalls).push_back(o);
    }
  }
  ASSERT_EQ(sends.size(), 1u);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(sends[0].Int("flags"), 1) << sends[0].line;
  EXPECT_EQ(recvs[0].Int("flags"), 1) << recvs[0].line;
  ASSERT_EQ(alltoalls.size(), 2u);
  for (const Op& o : alltoalls) EXPECT_EQ(o.Int("flags"), 1) << o.line;
}

}  // namespace
