// CUDA runtime: devices, properties, errors, versions, nvcc's registration ABI and kernel
// launches.
#include <cxxabi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "cuda_profiler_api.h"
#include "cudart-internal.h"

namespace gpusim {
namespace {

thread_local cudaError_t t_lastError = cudaSuccess;

// One registered __global__ function. cudaKernel_t handles are pointers to these.
struct Kernel {
  std::string mangled;
  std::string json;  // ,"name":"<demangled>","mangled":"<mangled>" ready to append
  // Attributes set with cudaFuncSetAttribute (CUDA's defaults until then); atomics because
  // launches read the dynamic shared memory limit without a lock.
  std::atomic<int> maxDynamicSmem{48 << 10};
  std::atomic<int> carveout{-1};
  std::atomic<int> clusterWidth{0}, clusterHeight{0}, clusterDepth{0};
  std::atomic<int> nonPortableCluster{0};
  std::atomic<int> clusterPolicy{0};
};

// A __device__ / __constant__ variable: host shadow address -> emulated storage.
struct DeviceVar {
  void* storage;
  size_t size;
};

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<const void*, Kernel*> kernels;  // host stub -> kernel
  std::unordered_map<const void*, DeviceVar> vars;
};

Registry& Reg() {
  static Registry* r = new Registry;  // kernels may launch from exit handlers
  return *r;
}

Kernel* FindKernel(const void* hostFun) {
  // Launch loops hit the same few kernels: remember the last lookup per thread.
  thread_local const void* lastFun = nullptr;
  thread_local Kernel* lastKernel = nullptr;
  if (hostFun == lastFun && lastKernel) return lastKernel;
  Registry& r = Reg();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.kernels.find(hostFun);
  if (it == r.kernels.end()) return nullptr;
  lastFun = hostFun;
  lastKernel = it->second;
  return it->second;
}

struct CallConfig {
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
};
constexpr int kMaxConfigDepth = 16;
thread_local CallConfig t_config[kMaxConfigDepth];
thread_local int t_configDepth = 0;

cudaError_t Launch(const Kernel* k, dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool ptsz) {
  if (!k) return Ret(cudaErrorInvalidDeviceFunction);
  unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 || threads == 0 || threads > 1024 ||
      block.z > 64)
    return Ret(cudaErrorInvalidConfiguration);
  // Above 48 KiB of dynamic shared memory a kernel must have opted in (cudaFuncSetAttribute).
  if (smem > (size_t)k->maxDynamicSmem.load(std::memory_order_relaxed)) return Ret(cudaErrorInvalidValue);
  StreamRef s;
  if (!ResolveStream(stream, &s, ptsz)) return Ret(cudaErrorInvalidResourceHandle);
  if (Recording())
    Line(s.device, "kernel")
        .Raw(k->json.data(), k->json.size())
        .Int("stream", s.id)
        .Dim("grid", grid.x, grid.y, grid.z)
        .Dim("block", block.x, block.y, block.z)
        .U64("smem", smem)
        .Commit();
  if (cudaError_t e = ShimStatus(s.device)) return Ret(e);
  return cudaSuccess;
}

// PCI address of a visible device: by its physical index, so processes that see one GPU each
// (CUDA_VISIBLE_DEVICES) still see different GPUs, as NCCL's duplicate-GPU check expects.
int PciBus(int device) { return 0x18 + PhysicalDevice(device) % 14 * 0x10; }
int PciDomain(int device) { return PhysicalDevice(device) / 14; }

void FillProperties(cudaDeviceProp* p, int device) {
  const GpuConfig& g = Gpu();
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", g.name);
  DeviceUuid(device, p->uuid.bytes);
  p->totalGlobalMem = g.memBytes;
  p->sharedMemPerBlock = 48 << 10;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = g.ccMajor;
  p->minor = g.ccMinor;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = g.smCount;
  p->canMapHostMemory = 1;
  p->surfaceAlignment = 512;
  p->concurrentKernels = 1;
  p->ECCEnabled = 1;
  p->pciBusID = PciBus(device);
  p->pciDomainID = PciDomain(device);
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = g.memBusWidth;
  p->l2CacheSize = g.l2Bytes;
  p->persistingL2CacheMaxSize = g.l2Bytes / 4 * 3;  // up to 75% of L2 can be set aside
  p->maxThreadsPerMultiProcessor = g.maxThreadsPerSm;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = g.smemPerSmBytes;
  p->regsPerMultiprocessor = 65536;
  p->managedMemory = 1;
  p->hostNativeAtomicSupported = 0;
  p->concurrentManagedAccess = 1;
  p->computePreemptionSupported = 1;
  p->cooperativeLaunch = 1;
  p->sharedMemPerBlockOptin = g.smemOptinBytes;
  p->maxBlocksPerMultiProcessor = g.maxBlocksPerSm;
  p->accessPolicyMaxWindowSize = 134213632;
  p->reservedSharedMemPerBlock = 1024;
  p->hostRegisterSupported = 1;
  p->memoryPoolsSupported = 0;  // the cudaMemPool* API is not emulated (cudaErrorNotSupported)
  p->gpuDirectRDMASupported = 1;
  p->clusterLaunch = g.ccMajor >= 9;
  p->ipcEventSupported = 0;  // nor is IPC (cudaIpc*)
  p->deviceNumaId = -1;
  p->hostNumaId = -1;
}

// ---- per-device limits and flags ----

constexpr int kLimits = cudaLimitPersistingL2CacheSize + 1;

struct DeviceSettings {
  std::mutex mu;
  bool limitsSet[kMaxDevices] = {};
  size_t limits[kMaxDevices][kLimits];
  std::atomic<unsigned> flags[kMaxDevices] = {};
  // cudaDeviceEnablePeerAccess: bit p of peers[d] = device d may access device p's memory.
  std::atomic<uint64_t> peers[kMaxDevices] = {};
};

DeviceSettings& Settings() {
  static DeviceSettings* d = new DeviceSettings;
  return *d;
}

size_t PersistingL2Max() { return (size_t)Gpu().l2Bytes / 4 * 3; }

// cudaLimitDevRuntimeSyncDepth exists only below compute capability 9.0 (CUDA removed
// device-side cudaDeviceSynchronize there).
bool LimitExists(int limit) {
  if (limit < 0 || limit >= kLimits) return false;
  return limit != cudaLimitDevRuntimeSyncDepth || Gpu().ccMajor < 9;
}

// The device's limits, set to CUDA's defaults on first use. Caller holds Settings().mu.
size_t* LimitsLocked(int device) {
  DeviceSettings& d = Settings();
  if (!d.limitsSet[device]) {
    size_t* l = d.limits[device];
    l[cudaLimitStackSize] = 1024;
    l[cudaLimitPrintfFifoSize] = 1 << 20;
    l[cudaLimitMallocHeapSize] = 8 << 20;
    l[cudaLimitDevRuntimeSyncDepth] = 2;
    l[cudaLimitDevRuntimePendingLaunchCount] = 2048;
    l[cudaLimitMaxL2FetchGranularity] = 64;
    l[cudaLimitPersistingL2CacheSize] = 0;
    d.limitsSet[device] = true;
  }
  return d.limits[device];
}

}  // namespace

bool SyncMemops(int device) {
  return device >= 0 && device < kMaxDevices &&
         (Settings().flags[device].load(std::memory_order_relaxed) & cudaDeviceSyncMemops);
}

bool BlockingSync(int device) {
  return device >= 0 && device < kMaxDevices &&
         (Settings().flags[device].load(std::memory_order_relaxed) & cudaDeviceScheduleMask) ==
             cudaDeviceScheduleBlockingSync;
}

void ResetDeviceLimits(int device) {
  if (device < 0 || device >= kMaxDevices) return;
  std::lock_guard<std::mutex> lock(Settings().mu);
  Settings().limitsSet[device] = false;
  // A reset device's context is gone, and with it its peer mappings and those onto it.
  Settings().peers[device].store(0, std::memory_order_relaxed);
  for (auto& p : Settings().peers) p.fetch_and(~(uint64_t{1} << device), std::memory_order_relaxed);
}

bool PeerAccessEnabled(int a, int b) {
  if (a < 0 || b < 0 || a >= kMaxDevices || b >= kMaxDevices) return false;
  const DeviceSettings& d = Settings();
  return (d.peers[a].load(std::memory_order_relaxed) >> b & 1) ||
         (d.peers[b].load(std::memory_order_relaxed) >> a & 1);
}

cudaError_t Ret(cudaError_t e) {
  if (e != cudaSuccess) t_lastError = e;
  return e;
}

}  // namespace gpusim

using namespace gpusim;

extern "C" {

// ---- devices ----

cudaError_t cudaGetDeviceCount(int* count) {
  GPUSIM_API(Call);
  if (!count) return Ret(cudaErrorInvalidValue);
  *count = DeviceCount();
  return *count > 0 ? cudaSuccess : Ret(cudaErrorNoDevice);  // CUDA_VISIBLE_DEVICES hid them all
}

cudaError_t cudaGetDevice(int* device) {
  GPUSIM_API(Call);
  if (!device) return Ret(cudaErrorInvalidValue);
  *device = CurrentDevice();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  GPUSIM_API(Call);
  if (!DeviceValid(device)) return Ret(cudaErrorInvalidDevice);
  SetCurrentDevice(device);
  return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
  GPUSIM_API(Call);
  return DeviceValid(device) ? cudaSuccess : Ret(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  GPUSIM_API(Call);
  if (!prop) return Ret(cudaErrorInvalidValue);
  if (!DeviceValid(device)) return Ret(cudaErrorInvalidDevice);
  FillProperties(prop, device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  GPUSIM_API(Call);
  if (!value || attr < 1 || attr >= cudaDevAttrMax) return Ret(cudaErrorInvalidValue);
  if (!DeviceValid(device)) return Ret(cudaErrorInvalidDevice);
  cudaDeviceProp p;
  FillProperties(&p, device);
  int v = 0;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: v = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: v = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: v = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: v = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: v = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: v = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: v = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: v = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: v = p.warpSize; break;
    case cudaDevAttrMaxPitch: v = (int)p.memPitch; break;
    case cudaDevAttrMaxRegistersPerBlock: v = p.regsPerBlock; break;
    case cudaDevAttrClockRate: v = Gpu().ccMajor >= 9 ? 1980000 : 1410000; break;
    case cudaDevAttrMemoryClockRate: v = Gpu().ccMajor >= 9 ? 2619000 : 1593000; break;
    case cudaDevAttrTextureAlignment: v = (int)p.textureAlignment; break;
    case cudaDevAttrGpuOverlap: v = 1; break;
    case cudaDevAttrMultiProcessorCount: v = p.multiProcessorCount; break;
    case cudaDevAttrCanMapHostMemory: v = 1; break;
    case cudaDevAttrConcurrentKernels: v = 1; break;
    case cudaDevAttrEccEnabled: v = p.ECCEnabled; break;
    case cudaDevAttrPciBusId: v = p.pciBusID; break;
    case cudaDevAttrGlobalMemoryBusWidth: v = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: v = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrAsyncEngineCount: v = p.asyncEngineCount; break;
    case cudaDevAttrUnifiedAddressing: v = 1; break;
    case cudaDevAttrComputeCapabilityMajor: v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: v = p.minor; break;
    case cudaDevAttrStreamPrioritiesSupported: v = 1; break;
    case cudaDevAttrGlobalL1CacheSupported: v = 1; break;
    case cudaDevAttrLocalL1CacheSupported: v = 1; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: v = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: v = p.regsPerMultiprocessor; break;
    case cudaDevAttrManagedMemory: v = 1; break;
    case cudaDevAttrConcurrentManagedAccess: v = 1; break;
    case cudaDevAttrComputePreemptionSupported: v = 1; break;
    case cudaDevAttrCooperativeLaunch: v = 1; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: v = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: v = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrMaxPersistingL2CacheSize: v = p.persistingL2CacheMaxSize; break;
    case cudaDevAttrMaxAccessPolicyWindowSize: v = p.accessPolicyMaxWindowSize; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: v = (int)p.reservedSharedMemPerBlock; break;
    case cudaDevAttrHostRegisterSupported: v = 1; break;
    case cudaDevAttrMemoryPoolsSupported: v = p.memoryPoolsSupported; break;
    case cudaDevAttrGPUDirectRDMASupported: v = 1; break;
    case cudaDevAttrClusterLaunch: v = p.clusterLaunch; break;
    case cudaDevAttrIpcEventSupport: v = p.ipcEventSupported; break;
    case cudaDevAttrNumaId: v = -1; break;
    case cudaDevAttrHostNumaId: v = -1; break;
    default: v = 0; break;  // capabilities the emulated GPU does not advertise
  }
  *value = v;
  return cudaSuccess;
}

cudaError_t cudaChooseDevice(int* device, const cudaDeviceProp* prop) {
  GPUSIM_API(Call);
  if (!device || !prop) return Ret(cudaErrorInvalidValue);
  *device = 0;  // every emulated device is the same GPU
  return cudaSuccess;
}

cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* pciBusId) {
  GPUSIM_API(Call);
  if (!device || !pciBusId) return Ret(cudaErrorInvalidValue);
  unsigned domain = 0, bus = 0, dev = 0;
  if (sscanf(pciBusId, "%x:%x:%x", &domain, &bus, &dev) != 3 && sscanf(pciBusId, "%x:%x", &bus, &dev) != 2)
    return Ret(cudaErrorInvalidValue);
  for (int d = 0; d < DeviceCount(); ++d)
    if (bus == (unsigned)PciBus(d) && domain == (unsigned)PciDomain(d)) {
      *device = d;
      return cudaSuccess;
    }
  return Ret(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceGetP2PAttribute(int* value, cudaDeviceP2PAttr attr, int srcDevice, int dstDevice) {
  GPUSIM_API(Call);
  if (!value) return Ret(cudaErrorInvalidValue);
  if (!DeviceValid(srcDevice) || !DeviceValid(dstDevice) || srcDevice == dstDevice) return Ret(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevP2PAttrPerformanceRank: *value = 0; break;  // NVLink: every pair equally good
    case cudaDevP2PAttrAccessSupported:
    case cudaDevP2PAttrNativeAtomicSupported:
    case cudaDevP2PAttrCudaArrayAccessSupported: *value = 1; break;
    case cudaDevP2PAttrOnlyPartialNativeAtomicSupported: *value = 0; break;
    default: return Ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaSetValidDevices(int* deviceArr, int len) {
  GPUSIM_API(Call);
  if (len < 0 || (len > 0 && !deviceArr)) return Ret(cudaErrorInvalidValue);
  for (int i = 0; i < len; ++i)
    if (!DeviceValid(deviceArr[i])) return Ret(cudaErrorInvalidDevice);
  return cudaSuccess;
}

cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig) {
  GPUSIM_API(Call);
  return cudaSuccess;
}  // deprecated no-op in CUDA too

cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  GPUSIM_API(Call);
  // One scheduling policy (the three low bits: auto, spin, yield or blocking sync) plus
  // cudaDeviceMapHost, cudaDeviceLmemResizeToMax, cudaDeviceSyncMemops.
  unsigned sched = flags & cudaDeviceScheduleMask;
  if ((flags & ~(unsigned)cudaDeviceMask) ||
      (sched != cudaDeviceScheduleAuto && sched != cudaDeviceScheduleSpin && sched != cudaDeviceScheduleYield &&
       sched != cudaDeviceScheduleBlockingSync))
    return Ret(cudaErrorInvalidValue);
  Settings().flags[CurrentDevice()].store(flags, std::memory_order_relaxed);
  return cudaSuccess;
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  GPUSIM_API(Call);
  if (!flags) return Ret(cudaErrorInvalidValue);
  // cudaDeviceMapHost is implicit in the runtime, so it is always reported.
  *flags = Settings().flags[CurrentDevice()].load(std::memory_order_relaxed) | cudaDeviceMapHost;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  GPUSIM_API(Call);
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = -5;
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  GPUSIM_API(Call);
  if (!canAccessPeer) return Ret(cudaErrorInvalidValue);
  if (!DeviceValid(device) || !DeviceValid(peerDevice)) return Ret(cudaErrorInvalidDevice);
  *canAccessPeer = device != peerDevice;
  return cudaSuccess;
}

// Peer access is per direction: the current device's context maps `peerDevice`'s memory. CUDA's
// errors: a device is not its own peer (cudaDeviceCanAccessPeer says 0), enabling twice and
// disabling what was never enabled are errors. Copies between two GPUs with no mapping either
// way are staged through host memory (memory.cc RecordCopy).
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  GPUSIM_API(Call);
  const int dev = CurrentDevice();
  if (!DeviceValid(peerDevice) || peerDevice == dev) return Ret(cudaErrorInvalidDevice);
  if (flags != 0) return Ret(cudaErrorInvalidValue);
  const uint64_t bit = uint64_t{1} << peerDevice;
  if (Settings().peers[dev].fetch_or(bit, std::memory_order_relaxed) & bit)
    return Ret(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  GPUSIM_API(Call);
  const int dev = CurrentDevice();
  if (!DeviceValid(peerDevice) || peerDevice == dev) return Ret(cudaErrorInvalidDevice);
  const uint64_t bit = uint64_t{1} << peerDevice;
  if (!(Settings().peers[dev].fetch_and(~bit, std::memory_order_relaxed) & bit))
    return Ret(cudaErrorPeerAccessNotEnabled);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  GPUSIM_API(Call);
  if (!pciBusId || len <= 0) return Ret(cudaErrorInvalidValue);
  if (!DeviceValid(device)) return Ret(cudaErrorInvalidDevice);
  snprintf(pciBusId, (size_t)len, "%04x:%02x:00.0", PciDomain(device), PciBus(device));
  return cudaSuccess;
}

// Limits belong to the current device's context: each device keeps its own.
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  GPUSIM_API(Call);
  if (!LimitExists(limit)) return Ret(cudaErrorUnsupportedLimit);
  switch (limit) {
    case cudaLimitDevRuntimeSyncDepth:
      if (value > 24) return Ret(cudaErrorInvalidValue);  // the maximum launch depth
      break;
    case cudaLimitMaxL2FetchGranularity:
      // 0 to 128 bytes, a power of two.
      if (value > 128 || (value & (value - 1)) != 0) return Ret(cudaErrorInvalidValue);
      break;
    case cudaLimitPersistingL2CacheSize:
      if (value > PersistingL2Max()) value = PersistingL2Max();  // a hint, clamped to the set-aside maximum
      break;
    default: break;
  }
  std::lock_guard<std::mutex> lock(Settings().mu);
  LimitsLocked(CurrentDevice())[limit] = value;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t* pValue, cudaLimit limit) {
  GPUSIM_API(Call);
  if (!pValue) return Ret(cudaErrorInvalidValue);
  if (!LimitExists(limit)) return Ret(cudaErrorUnsupportedLimit);
  std::lock_guard<std::mutex> lock(Settings().mu);
  *pValue = LimitsLocked(CurrentDevice())[limit];
  return cudaSuccess;
}

cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) {
  GPUSIM_API(Call);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetCacheConfig(cudaFuncCache* cacheConfig) {
  GPUSIM_API(Call);
  if (!cacheConfig) return Ret(cudaErrorInvalidValue);
  *cacheConfig = cudaFuncCachePreferNone;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  GPUSIM_API(Call);
  if (!runtimeVersion) return Ret(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  GPUSIM_API(Call);
  if (!driverVersion) return Ret(cudaErrorInvalidValue);
  *driverVersion = 13000;
  return cudaSuccess;
}

// ---- errors ----

cudaError_t cudaGetLastError(void) {
  GPUSIM_API(Call);
  cudaError_t e = t_lastError;
  t_lastError = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  GPUSIM_API(Call);
  return t_lastError;
}

const char* cudaGetErrorName(cudaError_t error) {
  GPUSIM_API(Call);
  switch (error) {
#define GPUSIM_ERR(name) \
  case name:             \
    return #name;
#include "cuda-errors.inc"
#undef GPUSIM_ERR
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  GPUSIM_API(Call);
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorUnsupportedLimit: return "limit is not supported on this architecture";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorUnknown: return "unknown error";
    default: return cudaGetErrorName(error);
  }
}

// ---- profiler ----

// Programs bracket the region worth profiling with these; the trace keeps them as markers.
static cudaError_t ProfilerMarker(const char* name) {
  if (Recording())
    Line(CurrentDevice(), "marker").Str("name", name).Str("phase", "instant").Num("rec_us", NowNs() / 1e3).Commit();
  return cudaSuccess;
}

cudaError_t cudaProfilerStart(void) {
  GPUSIM_API(Call);
  return ProfilerMarker("cudaProfilerStart");
}
cudaError_t cudaProfilerStop(void) {
  GPUSIM_API(Call);
  return ProfilerMarker("cudaProfilerStop");
}

// ---- nvcc's registration ABI ----

void** __cudaRegisterFatBinary(void* fatCubin) {
  GPUSIM_API(Call);
  // The handle only needs to be unique and stable; keep the image pointer in it.
  void** handle = new void*;
  *handle = fatCubin;
  return handle;
}

void __cudaRegisterFatBinaryEnd(void**) { GPUSIM_API(Call); }

void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  GPUSIM_API(Call);
  delete fatCubinHandle;
}

char __cudaInitModule(void**) {
  GPUSIM_API(Call);
  return 1;
}

void __cudaRegisterFunction(void**, const char* hostFun, char*, const char* deviceName, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  GPUSIM_API(Call);
  if (!hostFun || !deviceName) return;
  Kernel* k = new Kernel;
  k->mangled = deviceName;
  int status = 0;
  char* demangled = abi::__cxa_demangle(deviceName, nullptr, nullptr, &status);
  k->json = ",\"name\":\"";
  JsonEscape(status == 0 && demangled ? demangled : deviceName, k->json);
  k->json += "\",\"mangled\":\"";
  JsonEscape(deviceName, k->json);
  k->json += "\"";
  free(demangled);
  Registry& r = Reg();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  r.kernels[hostFun] = k;
}

void __cudaRegisterVar(void**, char* hostVar, char*, const char*, int, size_t size, int, int) {
  GPUSIM_API(Call);
  if (!hostVar) return;
  Registry& r = Reg();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  r.vars[hostVar] = DeviceVar{calloc(1, size ? size : 1), size};
}

void __cudaRegisterManagedVar(void**, void** hostVarPtrAddress, char*, const char*, int, size_t size, int, int) {
  GPUSIM_API(Call);
  // Managed variables are host-visible: the shadow pointer is pointed at host storage.
  if (hostVarPtrAddress) *hostVarPtrAddress = calloc(1, size ? size : 1);
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st* stream) {
  GPUSIM_API(Call);
  if (t_configDepth >= kMaxConfigDepth) return 1;
  t_config[t_configDepth++] = CallConfig{gridDim, blockDim, sharedMem, stream};
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
  GPUSIM_API(Call);
  if (t_configDepth == 0) return Ret(cudaErrorMissingConfiguration);
  const CallConfig& c = t_config[--t_configDepth];
  if (gridDim) *gridDim = c.grid;
  if (blockDim) *blockDim = c.block;
  if (sharedMem) *sharedMem = c.smem;
  if (stream) *(cudaStream_t*)stream = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  GPUSIM_API(Call);
  if (!kernel) return Ret(cudaErrorInvalidValue);
  Kernel* k = FindKernel(hostFun);
  if (!k) return Ret(cudaErrorInvalidDeviceFunction);
  *kernel = (cudaKernel_t)k;
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void**, size_t sharedMem,
                               cudaStream_t stream) {
  GPUSIM_API(Launch);
  return Launch((const Kernel*)kernel, gridDim, blockDim, sharedMem, stream, false);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void**, size_t sharedMem,
                                    cudaStream_t stream) {
  GPUSIM_API(Launch);
  return Launch((const Kernel*)kernel, gridDim, blockDim, sharedMem, stream, true);
}

// ---- execution control ----

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void**, size_t sharedMem,
                             cudaStream_t stream) {
  GPUSIM_API(Launch);
  return Launch(FindKernel(func), gridDim, blockDim, sharedMem, stream, false);
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void**, size_t sharedMem,
                                  cudaStream_t stream) {
  GPUSIM_API(Launch);
  return Launch(FindKernel(func), gridDim, blockDim, sharedMem, stream, true);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void**) {
  GPUSIM_API(Launch);
  if (!config) return Ret(cudaErrorInvalidValue);
  return Launch(FindKernel(func), config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream, false);
}

cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void**, size_t sharedMem,
                                        cudaStream_t stream) {
  GPUSIM_API(Launch);
  return Launch(FindKernel(func), gridDim, blockDim, sharedMem, stream, false);
}

cudaError_t cudaFuncGetName(const char** name, const void* func) {
  GPUSIM_API(Call);
  if (!name) return Ret(cudaErrorInvalidValue);
  const Kernel* k = FindKernel(func);
  if (!k) return Ret(cudaErrorInvalidDeviceFunction);
  *name = k->mangled.c_str();
  return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  GPUSIM_API(Call);
  if (!attr) return Ret(cudaErrorInvalidValue);
  const Kernel* k = FindKernel(func);
  if (!k) return Ret(cudaErrorInvalidDeviceFunction);
  memset(attr, 0, sizeof *attr);
  // What the shim knows: the attributes set through cudaFuncSetAttribute and the GPU the code
  // is built for (the preset's compute capability). What only the cubin knows (registers,
  // static shared/constant/local memory, a register-limited maxThreadsPerBlock,
  // compile-time cluster dimensions) is not read: those fields are 0, maxThreadsPerBlock is
  // the device's limit, and nothing is launched differently because of them (doc/shim.md).
  attr->maxThreadsPerBlock = 1024;
  attr->ptxVersion = Gpu().ccMajor * 10 + Gpu().ccMinor;
  attr->binaryVersion = attr->ptxVersion;
  attr->maxDynamicSharedSizeBytes = k->maxDynamicSmem.load();
  attr->preferredShmemCarveout = k->carveout.load();
  attr->requiredClusterWidth = k->clusterWidth.load();
  attr->requiredClusterHeight = k->clusterHeight.load();
  attr->requiredClusterDepth = k->clusterDepth.load();
  attr->nonPortableClusterSizeAllowed = k->nonPortableCluster.load();
  attr->clusterSchedulingPolicyPreference = k->clusterPolicy.load();
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  GPUSIM_API(Call);
  Kernel* k = FindKernel(func);
  if (!k) return Ret(cudaErrorInvalidDeviceFunction);
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      // The static shared memory is unknown (0), so the whole opt-in maximum is available.
      if (value < 0 || value > Gpu().smemOptinBytes) return Ret(cudaErrorInvalidValue);
      k->maxDynamicSmem.store(value);
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      if (value < -1 || value > 100) return Ret(cudaErrorInvalidValue);  // -1 = no preference, else a percentage
      k->carveout.store(value);
      return cudaSuccess;
    case cudaFuncAttributeRequiredClusterWidth:
    case cudaFuncAttributeRequiredClusterHeight:
    case cudaFuncAttributeRequiredClusterDepth:
      if (Gpu().ccMajor < 9) return Ret(cudaErrorNotSupported);  // thread block clusters need sm_90
      if (value < 0) return Ret(cudaErrorInvalidValue);
      (attr == cudaFuncAttributeRequiredClusterWidth    ? k->clusterWidth
       : attr == cudaFuncAttributeRequiredClusterHeight ? k->clusterHeight
                                                        : k->clusterDepth)
          .store(value);
      return cudaSuccess;
    case cudaFuncAttributeNonPortableClusterSizeAllowed:
      if (Gpu().ccMajor < 9) return Ret(cudaErrorNotSupported);
      if (value != 0 && value != 1) return Ret(cudaErrorInvalidValue);
      k->nonPortableCluster.store(value);
      return cudaSuccess;
    case cudaFuncAttributeClusterSchedulingPolicyPreference:
      if (Gpu().ccMajor < 9) return Ret(cudaErrorNotSupported);
      if (value < 0 || value > 2) return Ret(cudaErrorInvalidValue);  // default, spread, load balancing
      k->clusterPolicy.store(value);
      return cudaSuccess;
    default:
      // cudaFuncAttributeClusterDimMustBeSet is read-only; anything else is not an attribute.
      return Ret(cudaErrorInvalidValue);
  }
}

cudaError_t cudaFuncSetSharedMemConfig(const void* func, cudaSharedMemConfig) {
  GPUSIM_API(Call);
  return FindKernel(func) ? cudaSuccess : Ret(cudaErrorInvalidDeviceFunction);
}

cudaError_t cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
  GPUSIM_API(Call);
  return __cudaGetKernel(kernelPtr, entryFuncAddr);
}

cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, const void* func, int numBlocks,
                                                      int blockSize) {
  GPUSIM_API(Call);
  if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0) return Ret(cudaErrorInvalidValue);
  if (!FindKernel(func)) return Ret(cudaErrorInvalidDeviceFunction);
  const GpuConfig& g = Gpu();
  if (numBlocks > g.maxBlocksPerSm || numBlocks * blockSize > g.maxThreadsPerSm) {
    *dynamicSmemSize = 0;
    return cudaSuccess;
  }
  size_t perBlock = (size_t)g.smemPerSmBytes / (size_t)numBlocks;
  perBlock = perBlock > 1024 ? perBlock - 1024 : 0;  // the driver reserves 1 KiB per block
  *dynamicSmemSize = perBlock < (size_t)g.smemOptinBytes ? perBlock : (size_t)g.smemOptinBytes;
  return cudaSuccess;
}

cudaError_t cudaFuncSetCacheConfig(const void* func, cudaFuncCache) {
  GPUSIM_API(Call);
  return FindKernel(func) ? cudaSuccess : Ret(cudaErrorInvalidDeviceFunction);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func, int blockSize,
                                                                   size_t dynamicSMemSize, unsigned int) {
  GPUSIM_API(Call);
  if (!numBlocks || blockSize <= 0) return Ret(cudaErrorInvalidValue);
  if (!FindKernel(func)) return Ret(cudaErrorInvalidDeviceFunction);
  const GpuConfig& g = Gpu();
  int byThreads = g.maxThreadsPerSm / blockSize;
  int bySmem = dynamicSMemSize ? (int)(g.smemPerSmBytes / (dynamicSMemSize + 1024)) : g.maxBlocksPerSm;
  int n = byThreads < bySmem ? byThreads : bySmem;
  *numBlocks = n < g.maxBlocksPerSm ? n : g.maxBlocksPerSm;
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func, int blockSize,
                                                          size_t dynamicSMemSize) {
  GPUSIM_API(Call);
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

// ---- symbols ----

// The variable's storage at `offset` for a copy of `count` bytes, or an error.
static cudaError_t SymbolAt(const void* symbol, size_t count, size_t offset, char** at) {
  Registry& r = Reg();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.vars.find(symbol);
  if (it == r.vars.end()) return Ret(cudaErrorInvalidSymbol);
  if (offset > it->second.size || count > it->second.size - offset) return Ret(cudaErrorInvalidValue);
  *at = (char*)it->second.storage + offset;  // storage is never freed
  return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  GPUSIM_API(MemcpyAsync);
  char* at = nullptr;
  cudaError_t e = SymbolAt(symbol, count, offset, &at);
  return e ? e : SymbolCopy(at, (void*)src, count, true, kind, nullptr, false, false);
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  GPUSIM_API(MemcpyAsync);
  char* at = nullptr;
  cudaError_t e = SymbolAt(symbol, count, offset, &at);
  return e ? e : SymbolCopy(at, dst, count, false, kind, nullptr, false, false);
}

cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  char* at = nullptr;
  cudaError_t e = SymbolAt(symbol, count, offset, &at);
  return e ? e : SymbolCopy(at, (void*)src, count, true, kind, stream, true, false);
}

cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  char* at = nullptr;
  cudaError_t e = SymbolAt(symbol, count, offset, &at);
  return e ? e : SymbolCopy(at, dst, count, false, kind, stream, true, false);
}

cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind) {
  GPUSIM_API(MemcpyAsync);
  char* at = nullptr;
  cudaError_t e = SymbolAt(symbol, count, offset, &at);
  return e ? e : SymbolCopy(at, (void*)src, count, true, kind, nullptr, false, true);
}

cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  GPUSIM_API(MemcpyAsync);
  char* at = nullptr;
  cudaError_t e = SymbolAt(symbol, count, offset, &at);
  return e ? e : SymbolCopy(at, dst, count, false, kind, nullptr, false, true);
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  GPUSIM_API(Call);
  if (!devPtr) return Ret(cudaErrorInvalidValue);
  Registry& r = Reg();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.vars.find(symbol);
  if (it == r.vars.end()) return Ret(cudaErrorInvalidSymbol);
  *devPtr = it->second.storage;
  return cudaSuccess;
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  GPUSIM_API(Call);
  if (!size) return Ret(cudaErrorInvalidValue);
  Registry& r = Reg();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.vars.find(symbol);
  if (it == r.vars.end()) return Ret(cudaErrorInvalidSymbol);
  *size = it->second.size;
  return cudaSuccess;
}

// nvcc registers __host__ __device__ variables with this; nothing to emulate.
void __cudaRegisterHostVar() { GPUSIM_API(Call); }

// ---- graphs: no emulation yet ----

cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) {
  GPUSIM_UNSUPPORTED(cudaGraphLaunch);
}
cudaError_t cudaGraphDestroy(cudaGraph_t) {
  GPUSIM_UNSUPPORTED(cudaGraphDestroy);
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) {
  GPUSIM_UNSUPPORTED(cudaGraphExecDestroy);
}

}  // extern "C"
