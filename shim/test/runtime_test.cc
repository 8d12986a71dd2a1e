// Behaviour of the shim's runtime, NCCL and cuBLAS entry points as a program sees them:
// device properties, memory semantics and the exact error codes of misuse.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <cstdlib>
#include <cstring>
#include <string>

#include "cublasLt.h"
#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "nccl.h"

namespace {

TEST(Device, DefaultPropertiesAreAnH100) {
  if (getenv("GPUSIM_GPU")) GTEST_SKIP() << "GPUSIM_GPU overrides the default";
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_STREQ(p.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.totalGlobalMem, 80ull << 30);
  EXPECT_EQ(p.multiProcessorCount, 132);
  EXPECT_EQ(p.major, 9);
  EXPECT_EQ(p.minor, 0);
  int v = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(v, 132);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  EXPECT_EQ(v, 9);
}

TEST(Device, PresetFromEnvironment) {
  const char* gpu = getenv("GPUSIM_GPU");
  if (!gpu || strcmp(gpu, "a100-sxm") != 0) GTEST_SKIP() << "run with GPUSIM_GPU=a100-sxm";
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_STREQ(p.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(p.multiProcessorCount, 108);
  EXPECT_EQ(p.major, 8);
}

TEST(Device, CountSetAndInvalidOrdinal) {
  int n = 0, d = -1;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  if (getenv("GPUSIM_DEVICES") || getenv("CUDA_VISIBLE_DEVICES")) GTEST_SKIP() << "device count overridden";
  EXPECT_EQ(n, 8);
  ASSERT_EQ(cudaSetDevice(3), cudaSuccess);
  ASSERT_EQ(cudaGetDevice(&d), cudaSuccess);
  EXPECT_EQ(d, 3);
  EXPECT_EQ(cudaSetDevice(n), cudaErrorInvalidDevice);
  cudaDeviceProp p;
  EXPECT_EQ(cudaGetDeviceProperties(&p, -1), cudaErrorInvalidDevice);
  cudaSetDevice(0);
  cudaGetLastError();
}

TEST(Device, Versions) {
  int v = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  EXPECT_EQ(v, 13000);
  ASSERT_EQ(cudaDriverGetVersion(&v), cudaSuccess);
  EXPECT_GE(v, 13000);
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, NCCL_VERSION_CODE);
}

TEST(Errors, LastErrorIsStickyUntilRead) {
  cudaGetLastError();
  EXPECT_EQ(cudaSetDevice(1000), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady");
}

extern "C" cudaError_t cudaIpcGetMemHandle(void* handle, void* devPtr);  // exported as a stub only

TEST(Errors, UnsupportedCallsSayNotSupported) {
  char handle[64];
  EXPECT_EQ(cudaIpcGetMemHandle(handle, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  ncclComm_t split = nullptr;
  EXPECT_EQ(ncclCommSplit(nullptr, 0, 0, &split, nullptr), ncclInvalidArgument);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorNotSupported);
  EXPECT_EQ(cudaGraphLaunch(nullptr, s), cudaErrorNotSupported);
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusNone);
  cudaStreamDestroy(s);
  cudaGetLastError();
}

TEST(Memory, OutOfMemory) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 81ull << 30), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  // Capacity is cumulative: two 50 GiB buffers do not fit in 80 GiB.
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 50ull << 30), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&b, 50ull << 30), cudaErrorMemoryAllocation);
  size_t freeB = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&freeB, &total), cudaSuccess);
  EXPECT_EQ(total, 80ull << 30);
  EXPECT_EQ(freeB, 30ull << 30);
  ASSERT_EQ(cudaFree(a), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 50ull << 30), cudaSuccess) << "freed memory is available again";
  ASSERT_EQ(cudaFree(b), cudaSuccess);
  cudaGetLastError();
}

TEST(Memory, CopyRoundTripKeepsData) {
  const size_t n = 1 << 16;
  std::string src(n, 0), dst(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = (char)(i * 7 + 3);
  void *d1, *d2;
  ASSERT_EQ(cudaMalloc(&d1, n), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d2, n), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d1, src.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(d2, d1, n, cudaMemcpyDeviceToDevice, 0), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&dst[0], d2, n, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(src, dst);
  ASSERT_EQ(cudaMemset(d1, 0x5a, 100), cudaSuccess);
  char back[100];
  ASSERT_EQ(cudaMemcpy(back, d1, 100, cudaMemcpyDeviceToHost), cudaSuccess);
  for (char c : back) ASSERT_EQ(c, 0x5a);
  // Past the end of an allocation, or a "device" pointer CUDA never handed out.
  EXPECT_EQ(cudaMemcpy(d1, src.data(), n + 1, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(&dst[0], src.data(), 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d1, d2, 16, (cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, (char*)d1 + 10), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(cudaFree(d1), cudaSuccess);
  EXPECT_EQ(cudaFree(d1), cudaErrorInvalidValue) << "double free";
  EXPECT_EQ(cudaFree(d2), cudaSuccess);
  cudaGetLastError();
}

TEST(Memory, ManagedAndPinnedMemoryAreHostVisible) {
  int* m = nullptr;
  ASSERT_EQ(cudaMallocManaged(&m, 1024 * sizeof(int)), cudaSuccess);
  for (int i = 0; i < 1024; ++i) m[i] = i * i;
  int* d;
  ASSERT_EQ(cudaMalloc(&d, 1024 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d, m, 1024 * sizeof(int), cudaMemcpyDefault), cudaSuccess);
  int* h = nullptr;
  ASSERT_EQ(cudaMallocHost((void**)&h, 1024 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(h, d, 1024 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(h[1023], 1023 * 1023);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, m), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeManaged);
  EXPECT_EQ(cudaFreeHost(m), cudaErrorInvalidValue) << "managed memory is freed with cudaFree";
  EXPECT_EQ(cudaFree(m), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(h), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  cudaGetLastError();
}

TEST(Memory, LargeAllocationsAreAccountedButNotBacked) {
  void* big;
  ASSERT_EQ(cudaMalloc(&big, 8ull << 30), cudaSuccess);
  std::string host(1 << 20, 'x');
  // The copy is accepted (and recorded) although no data lands anywhere.
  EXPECT_EQ(cudaMemcpy(big, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaFree(big), cudaSuccess);
}

TEST(Streams, InvalidHandles) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, 0x10), cudaErrorInvalidValue);
  int x;
  EXPECT_EQ(cudaMemcpyAsync(&x, &x, 4, cudaMemcpyHostToHost, (cudaStream_t)&x), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamSynchronize(0), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  cudaGetLastError();
}

TEST(Events, TimingAndInvalidHandles) {
  cudaEvent_t a, b, notiming;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&notiming, cudaEventDisableTiming), cudaSuccess);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle) << "not recorded yet";
  EXPECT_EQ(cudaEventQuery(a), cudaSuccess);
  // Emulation: the elapsed time is the host time between the two records (no GPU, no
  // simulator), so it must cover a 20 ms sleep between them and no more than the wall time
  // measured around both calls.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaEventRecord(a, 0), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(cudaEventRecord(b, 0), cudaSuccess);
  const double wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(cudaEventRecord(notiming, 0), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 20.0f);
  EXPECT_LE(ms, wallMs + 0.01);
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, notiming), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventCreateWithFlags(&a, cudaEventInterprocess), cudaErrorInvalidValue);
  ASSERT_EQ(cudaEventDestroy(b), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(b, 0), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventQuery(b), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamWaitEvent(0, b, 0), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventDestroy(b), cudaErrorInvalidResourceHandle);
  cudaEventDestroy(a);
  cudaEventDestroy(notiming);
  cudaGetLastError();
}

static void unregistered_kernel() {}

TEST(Launch, UnregisteredFunctionAndBadConfiguration) {
  EXPECT_EQ(cudaLaunchKernel((const void*)unregistered_kernel, dim3(1), dim3(1), nullptr, 0, 0),
            cudaErrorInvalidDeviceFunction);
  static const unsigned long long fatbin[2] = {0, 0};
  void** h = __cudaRegisterFatBinary((void*)fatbin);
  __cudaRegisterFunction(h, (const char*)unregistered_kernel, (char*)"_Z1kv", "_Z1kv", -1, nullptr, nullptr, nullptr,
                         nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(h);
  EXPECT_EQ(cudaLaunchKernel((const void*)unregistered_kernel, dim3(1), dim3(1), nullptr, 0, 0), cudaSuccess);
  EXPECT_EQ(cudaLaunchKernel((const void*)unregistered_kernel, dim3(1), dim3(2048), nullptr, 0, 0),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaLaunchKernel((const void*)unregistered_kernel, dim3(0), dim3(32), nullptr, 0, 0),
            cudaErrorInvalidConfiguration);
  dim3 g, b;
  size_t smem;
  cudaStream_t s;
  EXPECT_EQ(__cudaPopCallConfiguration(&g, &b, &smem, &s), cudaErrorMissingConfiguration);
  cudaFuncAttributes fa;
  EXPECT_EQ(cudaFuncGetAttributes(&fa, (const void*)unregistered_kernel), cudaSuccess);
  __cudaUnregisterFatBinary(h);
  cudaGetLastError();
}

TEST(Nccl, InvalidArgumentsAndHandles) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c;
  EXPECT_EQ(ncclCommInitRank(&c, 2, id, 2), ncclInvalidArgument) << "rank >= nranks";
  EXPECT_EQ(ncclCommInitRank(&c, 0, id, 0), ncclInvalidArgument) << "nranks < 1";
  EXPECT_EQ(ncclCommInitRank(&c, 2, id, -1), ncclInvalidArgument);
  ncclConfig_t bad;
  memset(&bad, 0, sizeof bad);
  EXPECT_EQ(ncclCommInitRankConfig(&c, 1, id, 0, &bad), ncclInvalidArgument) << "config without initializer";
  ASSERT_EQ(ncclCommInitRank(&c, 4, id, 1), ncclSuccess);
  int n = 0, r = -1, dev = -1;
  ASSERT_EQ(ncclCommCount(c, &n), ncclSuccess);
  ASSERT_EQ(ncclCommUserRank(c, &r), ncclSuccess);
  ASSERT_EQ(ncclCommCuDevice(c, &dev), ncclSuccess);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(r, 1);
  EXPECT_EQ(dev, 0);
  void* buf;
  ASSERT_EQ(ncclMemAlloc(&buf, 1 << 20), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, c, 0), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf, buf, 1024, (ncclDataType_t)99, ncclSum, c, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 1024, ncclFloat, (ncclRedOp_t)42, c, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(nullptr, buf, 1024, ncclFloat, ncclSum, c, 0), ncclInvalidArgument) << "null buffer";
  EXPECT_EQ(ncclBroadcast(buf, buf, 16, ncclFloat, 4, c, 0), ncclInvalidArgument) << "root out of range";
  EXPECT_EQ(ncclSend(buf, 16, ncclFloat, 4, c, 0), ncclInvalidArgument) << "peer out of range";
  EXPECT_EQ(ncclRecv(buf, 16, ncclFloat, -1, c, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "GroupEnd without GroupStart";
  EXPECT_EQ(ncclGather(buf, buf, 16, ncclFloat, 0, c, 0), ncclInvalidUsage) << "not supported";
  EXPECT_NE(std::string(ncclGetLastError(c)), "");
  ncclRedOp_t op;
  float scale = 0.5f;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scale, ncclFloat, ncclScalarHostImmediate, c), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf, buf, 1024, ncclFloat, op, c, 0), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(op, c), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(op, c), ncclInvalidArgument);
  ncclResult_t async;
  EXPECT_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  cudaStream_t dead;
  ASSERT_EQ(cudaStreamCreate(&dead), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(dead), cudaSuccess);
  EXPECT_EQ(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, c, dead), ncclUnhandledCudaError);
  ASSERT_EQ(ncclMemFree(buf), ncclSuccess);
  ASSERT_EQ(ncclCommDestroy(c), ncclSuccess);
  EXPECT_EQ(ncclCommCount(c, &n), ncclInvalidArgument) << "destroyed communicator";
  EXPECT_EQ(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, c, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(c), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidArgument), "invalid argument (run with NCCL_DEBUG=WARN for details)");
}

TEST(Nccl, GroupedInitOfSeveralCommunicators) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[4];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int d = 0; d < 4; ++d) {
    ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
    ASSERT_EQ(ncclCommInitRank(&comms[d], 4, id, d), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  cudaSetDevice(0);
  for (int d = 0; d < 4; ++d) {
    int dev = -1;
    ASSERT_EQ(ncclCommCuDevice(comms[d], &dev), ncclSuccess);
    EXPECT_EQ(dev, d) << "a communicator remembers its device";
    EXPECT_EQ(ncclCommDestroy(comms[d]), ncclSuccess);
  }
  ncclComm_t all[8];
  ASSERT_EQ(ncclCommInitAll(all, 8, nullptr), ncclSuccess);
  for (ncclComm_t c : all) EXPECT_EQ(ncclCommFinalize(c), ncclSuccess);
  for (ncclComm_t c : all) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  int bad[2] = {0, 9};
  EXPECT_EQ(ncclCommInitAll(all, 2, bad), ncclInvalidArgument);
}

TEST(Cublas, HandlesAndArguments) {
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  float one = 1, zero = 0;
  float *a, *b, *c;
  cudaMalloc(&a, 64 * 64 * 4);
  cudaMalloc(&b, 64 * 64 * 4);
  cudaMalloc(&c, 64 * 64 * 4);
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, a, 64, b, 64, &zero, c, 64),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 64, 64, &one, a, 64, b, 64, &zero, c, 64),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, a, 32, b, 64, &zero, c, 64),
            CUBLAS_STATUS_INVALID_VALUE)
      << "lda < m";
  EXPECT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, a, CUDA_C_32F, 64, b, CUDA_C_32F, 64, &zero, c,
                         CUDA_C_32F, 64, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_SUPPORTED);
  ASSERT_EQ(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, a, 64, b, 64, &zero, c, 64),
            CUBLAS_STATUS_NOT_INITIALIZED);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

// Exported by the shim only as a not-supported stub (not declared in our headers).
extern "C" cublasStatus_t cublasSgemv_v2(cublasHandle_t, cublasOperation_t, int, int, const float*, const float*, int,
                                         const float*, int, const float*, float*, int);

TEST(Cublas, BatchedAnd64BitGemmsAndStubs) {
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  float one = 1;
  const void* arr[2] = {nullptr, nullptr};
  void* out[2] = {nullptr, nullptr};
  EXPECT_EQ(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, arr, CUDA_R_16BF, 16, arr, CUDA_R_16BF,
                                16, &one, out, CUDA_R_16BF, 16, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(
      cublasGemmEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 1ll << 33, 16, 16, &one, nullptr, CUDA_R_16F, 1ll << 33, nullptr,
                      CUDA_R_16F, 16, &one, nullptr, CUDA_R_16F, 1ll << 33, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_SUCCESS)
      << "sizes beyond 32 bits";
  EXPECT_EQ(cublasSgemv_v2(h, CUBLAS_OP_N, 4, 4, &one, nullptr, 4, nullptr, 1, &one, nullptr, 1),
            CUBLAS_STATUS_NOT_SUPPORTED);
  cublasDestroy(h);
}

TEST(CublasLt, HeuristicReturnsAnAlgorithm) {
  cublasLtHandle_t lt;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t d;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulPreference_t p;
  ASSERT_EQ(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, 128, 64, 128), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, 64, 256, 64), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, 128, 256, 128), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&p), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t res[8];
  int found = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(lt, d, a, b, c, c, p, 8, res, &found), CUBLAS_STATUS_SUCCESS);
  EXPECT_GE(found, 1);
  EXPECT_EQ(res[0].state, CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmul(lt, d, nullptr, nullptr, a, nullptr, b, nullptr, nullptr, c, nullptr, c, &res[0].algo,
                           nullptr, 0, 0),
            CUBLAS_STATUS_SUCCESS);
  // k mismatch: A is 128x64 but B has 32 rows.
  cublasLtMatrixLayout_t b2;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&b2, CUDA_R_16BF, 32, 256, 32), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmul(lt, d, nullptr, nullptr, a, nullptr, b2, nullptr, nullptr, c, nullptr, c, &res[0].algo,
                           nullptr, 0, 0),
            CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(b2);
  cublasLtMatrixLayoutDestroy(c);
  cublasLtMatmulDescDestroy(d);
  cublasLtMatmulPreferenceDestroy(p);
  // Descriptors initialised in caller-owned storage behave like created ones.
  cublasLtMatrixLayoutOpaque_t stackLayout;
  ASSERT_EQ(cublasLtMatrixLayoutInit(&stackLayout, CUDA_R_16F, 64, 32, 64), CUBLAS_STATUS_SUCCESS);
  int32_t batch = 4;
  ASSERT_EQ(cublasLtMatrixLayoutSetAttribute(&stackLayout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch),
            CUBLAS_STATUS_SUCCESS);
  uint64_t rows = 0;
  size_t written = 0;
  ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(&stackLayout, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(rows, 64u);
  EXPECT_EQ(written, sizeof rows);
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(&stackLayout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 2),
            CUBLAS_STATUS_INVALID_VALUE)
      << "wrong attribute size";
  cublasLtMatmulDescOpaque_t stackDesc;
  ASSERT_EQ(cublasLtMatmulDescInit(&stackDesc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  int32_t compute = 0;
  ASSERT_EQ(
      cublasLtMatmulDescGetAttribute(&stackDesc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute, sizeof compute, &written),
      CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(compute, CUBLAS_COMPUTE_32F);
  ASSERT_EQ(cublasLtDestroy(lt), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtDestroy(lt), CUBLAS_STATUS_NOT_INITIALIZED);
}

}  // namespace
