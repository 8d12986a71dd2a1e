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

// CUDA: "cudaDeviceSetLimit ... The application can use cudaDeviceGetLimit() to find out exactly
// what the limit has been set to"; limits belong to the device's (primary) context.
TEST(Device, LimitsAreStoredPerDevice) {
  size_t v = 0;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(v, 1024u) << "default stack size";
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitStackSize, 4096), cudaSuccess);
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20), cudaSuccess);
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 4u << 20), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(v, 4096u);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize), cudaSuccess);
  EXPECT_EQ(v, 64u << 20);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitPrintfFifoSize), cudaSuccess);
  EXPECT_EQ(v, 4u << 20);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(v, 1024u) << "device 1 has its own limits";

  // "cudaLimitMaxL2FetchGranularity ... Values can range from 0B to 128B", a power of two.
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 32), cudaSuccess);
  EXPECT_EQ(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 48), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 256), cudaErrorInvalidValue);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitMaxL2FetchGranularity), cudaSuccess);
  EXPECT_EQ(v, 32u) << "a rejected value changes nothing";
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 0), cudaSuccess);

  // The persisting L2 size is a hint "clamped depending on the platform": to the set-aside maximum.
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 1), cudaSuccess);
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1u << 20), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitPersistingL2CacheSize), cudaSuccess);
  EXPECT_EQ(v, 1u << 20);
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)1 << 40), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitPersistingL2CacheSize), cudaSuccess);
  EXPECT_EQ(v, (size_t)p.persistingL2CacheMaxSize);

  // cudaLimitDevRuntimeSyncDepth: "only applicable to devices of compute capability < 9.0 ...
  // on devices of other compute capability ... cudaErrorUnsupportedLimit"; at most 24 levels.
  if (p.major >= 9) {
    EXPECT_EQ(cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, 4), cudaErrorUnsupportedLimit);
    EXPECT_EQ(cudaDeviceGetLimit(&v, cudaLimitDevRuntimeSyncDepth), cudaErrorUnsupportedLimit);
  } else {
    ASSERT_EQ(cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, 4), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitDevRuntimeSyncDepth), cudaSuccess);
    EXPECT_EQ(v, 4u);
    EXPECT_EQ(cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, 25), cudaErrorInvalidValue);
  }
  EXPECT_EQ(cudaDeviceSetLimit((cudaLimit)7, 1), cudaErrorUnsupportedLimit);
  EXPECT_EQ(cudaDeviceGetLimit(&v, (cudaLimit)7), cudaErrorUnsupportedLimit);

  // cudaDeviceReset destroys the context: its limits are the defaults again.
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitStackSize, 8192), cudaSuccess);
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(v, 1024u);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetLimit(&v, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(v, 4096u) << "device 0 was not reset";
  cudaDeviceSetLimit(cudaLimitStackSize, 1024);
  cudaGetLastError();
}

// cudaSetDeviceFlags "records flags as the flags for the current device"; cudaGetDeviceFlags
// returns them, with cudaDeviceMapHost "implicit in runtime API flags".
TEST(Device, FlagsAreStoredPerDevice) {
  unsigned f = 0;
  ASSERT_EQ(cudaSetDevice(2), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceFlags(&f), cudaSuccess);
  EXPECT_EQ(f, (unsigned)cudaDeviceMapHost) << "default: cudaDeviceScheduleAuto";
  ASSERT_EQ(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync | cudaDeviceLmemResizeToMax), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceFlags(&f), cudaSuccess);
  EXPECT_EQ(f, (unsigned)(cudaDeviceScheduleBlockingSync | cudaDeviceLmemResizeToMax | cudaDeviceMapHost));
  // One scheduling policy at a time, and only the documented bits.
  EXPECT_EQ(cudaSetDeviceFlags(cudaDeviceScheduleSpin | cudaDeviceScheduleYield), cudaErrorInvalidValue);
  EXPECT_EQ(cudaSetDeviceFlags(0x100), cudaErrorInvalidValue);
  ASSERT_EQ(cudaGetDeviceFlags(&f), cudaSuccess);
  EXPECT_EQ(f & cudaDeviceScheduleMask, (unsigned)cudaDeviceScheduleBlockingSync) << "rejected flags change nothing";
  ASSERT_EQ(cudaSetDeviceFlags(cudaDeviceMapHost | cudaDeviceScheduleYield), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceFlags(&f), cudaSuccess);
  EXPECT_EQ(f, (unsigned)(cudaDeviceScheduleYield | cudaDeviceMapHost));
  ASSERT_EQ(cudaSetDevice(3), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceFlags(&f), cudaSuccess);
  EXPECT_EQ(f, (unsigned)cudaDeviceMapHost) << "device 3 keeps its own flags";
  EXPECT_EQ(cudaGetDeviceFlags(nullptr), cudaErrorInvalidValue);
  ASSERT_EQ(cudaSetDevice(2), cudaSuccess);
  ASSERT_EQ(cudaSetDeviceFlags(0), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaGetLastError();
}

// Peer access as CUDA keeps it: per direction, enabled once, not onto the device itself, and
// gone with cudaDeviceReset.
TEST(Device, PeerAccessIsTrackedPerDirection) {
  if (getenv("GPUSIM_DEVICES") || getenv("CUDA_VISIBLE_DEVICES")) GTEST_SKIP() << "device count overridden";
  int can = -1;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 4, 4), cudaSuccess);
  EXPECT_EQ(can, 0) << "a device is not its own peer";
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 4, 5), cudaSuccess);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(cudaSetDevice(4), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(4, 0), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(5, 1), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(5), cudaErrorPeerAccessNotEnabled);
  ASSERT_EQ(cudaDeviceEnablePeerAccess(5, 0), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(5, 0), cudaErrorPeerAccessAlreadyEnabled);
  EXPECT_EQ(cudaGetLastError(), cudaErrorPeerAccessAlreadyEnabled) << "the failure is the last error";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "and not sticky";
  // Device 5 has not mapped device 4: that direction is its own.
  ASSERT_EQ(cudaSetDevice(5), cudaSuccess);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(4), cudaErrorPeerAccessNotEnabled);
  ASSERT_EQ(cudaDeviceEnablePeerAccess(4, 0), cudaSuccess);
  // Resetting device 4 drops its mappings and the ones onto it.
  ASSERT_EQ(cudaSetDevice(4), cudaSuccess);
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(5), cudaErrorPeerAccessNotEnabled);
  ASSERT_EQ(cudaSetDevice(5), cudaSuccess);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(4), cudaErrorPeerAccessNotEnabled);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaGetLastError();
}

// Exported by the shim only as not-supported stubs.
extern "C" cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device);
extern "C" cudaError_t cudaIpcGetEventHandle(void* handle, cudaEvent_t event);

// A capability the device reports is one the shim emulates: memory pools and IPC are not.
TEST(Device, AttributesAdvertiseOnlyWhatWorks) {
  int v = -1;
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMemoryPoolsSupported, 0), cudaSuccess);
  EXPECT_EQ(v, 0);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrIpcEventSupport, 0), cudaSuccess);
  EXPECT_EQ(v, 0);
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_EQ(p.memoryPoolsSupported, 0);
  EXPECT_EQ(p.ipcEventSupported, 0);
  cudaMemPool_t pool;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaErrorNotSupported);
  cudaEvent_t e;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  char handle[64];
  EXPECT_EQ(cudaIpcGetEventHandle(handle, e), cudaErrorNotSupported);
  cudaEventDestroy(e);
  // What is advertised works.
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrManagedMemory, 0), cudaSuccess);
  EXPECT_EQ(v, 1);
  void* m = nullptr;
  ASSERT_EQ(cudaMallocManaged(&m, 64), cudaSuccess);
  ASSERT_EQ(cudaFree(m), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrHostRegisterSupported, 0), cudaSuccess);
  EXPECT_EQ(v, 1);
  static char buf[4096];
  ASSERT_EQ(cudaHostRegister(buf, sizeof buf, 0), cudaSuccess);
  ASSERT_EQ(cudaHostUnregister(buf), cudaSuccess);
  cudaGetLastError();
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

static void smem_kernel() {}

// cudaFuncGetAttributes reports what cudaFuncSetAttribute set; CUDA refuses launches with more
// than 48 KiB of dynamic shared memory unless the kernel opted in.
TEST(Launch, FunctionAttributesAreTheOnesSet) {
  static const unsigned long long fatbin[2] = {0, 0};
  void** h = __cudaRegisterFatBinary((void*)fatbin);
  __cudaRegisterFunction(h, (const char*)smem_kernel, (char*)"_Z11smem_kernelv", "_Z11smem_kernelv", -1, nullptr,
                         nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(h);
  const void* k = (const void*)smem_kernel;
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  cudaFuncAttributes a;
  ASSERT_EQ(cudaFuncGetAttributes(&a, k), cudaSuccess);
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, 48 << 10);
  EXPECT_EQ(a.preferredShmemCarveout, -1);
  EXPECT_EQ(a.ptxVersion, p.major * 10 + p.minor) << "built for the emulated GPU";
  EXPECT_EQ(a.binaryVersion, a.ptxVersion);
  EXPECT_EQ(a.numRegs, 0) << "unknown without the cubin, not made up";
  EXPECT_EQ(a.maxThreadsPerBlock, p.maxThreadsPerBlock);

  EXPECT_EQ(cudaLaunchKernel(k, dim3(1), dim3(32), nullptr, 64 << 10, 0), cudaErrorInvalidValue)
      << "64 KiB without opting in";
  ASSERT_EQ(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 << 10), cudaSuccess);
  ASSERT_EQ(cudaFuncGetAttributes(&a, k), cudaSuccess);
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, 100 << 10);
  EXPECT_EQ(cudaLaunchKernel(k, dim3(1), dim3(32), nullptr, 64 << 10, 0), cudaSuccess);
  EXPECT_EQ(cudaLaunchKernel(k, dim3(1), dim3(32), nullptr, (100 << 10) + 1, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p.sharedMemPerBlockOptin + 1),
            cudaErrorInvalidValue);

  ASSERT_EQ(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, 50), cudaSuccess);
  EXPECT_EQ(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, 101), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(k, cudaFuncAttributeClusterDimMustBeSet, 1), cudaErrorInvalidValue) << "read-only";
  if (p.major >= 9) {
    ASSERT_EQ(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), cudaSuccess);
    ASSERT_EQ(cudaFuncSetAttribute(k, cudaFuncAttributeRequiredClusterWidth, 2), cudaSuccess);
  }
  ASSERT_EQ(cudaFuncGetAttributes(&a, k), cudaSuccess);
  EXPECT_EQ(a.preferredShmemCarveout, 50);
  EXPECT_EQ(a.nonPortableClusterSizeAllowed, p.major >= 9 ? 1 : 0);
  EXPECT_EQ(a.requiredClusterWidth, p.major >= 9 ? 2 : 0);
  EXPECT_EQ(cudaFuncSetAttribute((const void*)&p, cudaFuncAttributeMaxDynamicSharedMemorySize, 0),
            cudaErrorInvalidDeviceFunction);
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
