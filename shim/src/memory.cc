// Device, managed and pinned memory; copies and memsets.
//
// Device allocations are accounted against the emulated GPU's capacity (OOM is reported as
// cudaErrorMemoryAllocation). Each gets its own address range from mmap: small ones are
// backed by real (lazily committed) host pages so data survives a copy round-trip; beyond
// GPUSIM_BACKING_MAX_BYTES per allocation or GPUSIM_BACKING_TOTAL_BYTES in all, the range is
// reserved PROT_NONE and copies to or from it move no data. Managed and pinned host memory is
// always real host memory, since programs read and write it directly.
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "cudart-internal.h"

namespace gpusim {
namespace {

enum class Kind { Device, Managed, Host, Registered };

struct Alloc {
  size_t size;
  size_t mapped;  // bytes of the mapping we own (0 for registered host memory)
  int device;
  Kind kind;
  bool backed;
};

size_t EnvBytes(const char* name, size_t dflt) {
  const char* v = getenv(name);
  return v && *v ? (size_t)strtoull(v, nullptr, 10) : dflt;
}

struct MemTable {
  std::mutex mu;
  std::map<uintptr_t, Alloc> allocs;  // start address -> allocation
  size_t used[kMaxDevices] = {};
  size_t backedTotal = 0;
  size_t backMax = EnvBytes("GPUSIM_BACKING_MAX_BYTES", 64u << 20);
  size_t backTotalMax = EnvBytes("GPUSIM_BACKING_TOTAL_BYTES", 1u << 30);
};

MemTable& M() {
  static MemTable* m = new MemTable;  // frees may come from exit handlers
  return *m;
}

size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

// The allocation containing [p, p+len), or null. Caller holds M().mu.
const Alloc* FindLocked(const void* p, size_t len, uintptr_t* start) {
  auto& allocs = M().allocs;
  uintptr_t a = (uintptr_t)p;
  auto it = allocs.upper_bound(a);
  if (it == allocs.begin()) return nullptr;
  --it;
  if (a >= it->first + it->second.size && !(it->second.size == 0 && a == it->first)) return nullptr;
  if (len > it->first + it->second.size - a) return nullptr;
  if (start) *start = it->first;
  return &it->second;
}

bool ContainsLocked(const void* p) { return FindLocked(p, 0, nullptr) || FindLocked(p, 1, nullptr); }

void* MapMemory(size_t bytes, bool accessible) {
  void* p = mmap(nullptr, bytes, accessible ? PROT_READ | PROT_WRITE : PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

cudaError_t HostMalloc(void** ptr, size_t size, Kind kind, int device) {
  if (!ptr) return Ret(cudaErrorInvalidValue);
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  size_t mapped = RoundUp(size, 4096);
  void* p = MapMemory(mapped, true);
  if (!p) return Ret(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(M().mu);
  M().allocs[(uintptr_t)p] = Alloc{size, mapped, device, kind, true};
  *ptr = p;
  return cudaSuccess;
}

// What the copy engine sees at one end of a transfer.
struct End {
  const Alloc* alloc;  // null: pageable host memory unknown to CUDA
  bool accessible;     // host code may touch the bytes
  bool device;         // lives on a GPU (device or managed memory)
  int dev;
};

End Classify(const void* p, size_t len, bool* outOfBounds) {
  uintptr_t start;
  const Alloc* a = FindLocked(p, len, &start);
  if (!a) {
    // Inside a known allocation but running past its end is an invalid copy.
    if (len > 0 && FindLocked(p, 1, nullptr)) *outOfBounds = true;
    return End{nullptr, true, false, -1};
  }
  bool dev = a->kind == Kind::Device || a->kind == Kind::Managed;
  return End{a, a->backed, dev, a->device};
}

const char* KindName(bool srcDev, bool dstDev) {
  if (srcDev && dstDev) return "d2d";
  if (srcDev) return "d2h";
  if (dstDev) return "h2d";
  return "h2h";
}

// How one copy appears in the trace and to the host.
struct CopyShape {
  const char* kind;  // h2h, h2d, d2h, d2d, p2p
  bool pageable;     // one end is pageable host memory, the other a GPU
  bool blocksHost;   // the call returns once the copy is done
  int srcDev, dstDev;
};

// CUDA's "API synchronization behavior": a synchronous copy (cudaMemcpy, 2D, symbol, peer)
// blocks the host unless it is device-to-device (then it is only ordered on its stream) or the
// device has cudaDeviceSyncMemops; an asynchronous one blocks only between a GPU and pageable
// memory, or host-to-host. The same rule decides the trace's "async" and, in live mode,
// whether the call waits for the simulator. Caller holds M().mu (r, d point into the table).
// `kind` has been checked against the pointers by CheckDeclared.
CopyShape ShapeOf(const End& r, const End& d, cudaMemcpyKind kind, bool async, int device) {
  CopyShape c;
  bool srcDev =
      kind == cudaMemcpyDefault ? r.device : kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  bool dstDev =
      kind == cudaMemcpyDefault ? d.device : kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  c.srcDev = r.dev;
  c.dstDev = d.dev;
  bool p2p = r.device && d.device && r.dev != d.dev;
  if (p2p) srcDev = dstDev = true;
  c.kind = p2p ? "p2p" : KindName(srcDev, dstDev);
  c.pageable = (!r.alloc && dstDev) || (!d.alloc && srcDev);
  if (srcDev && dstDev)
    c.blocksHost = !async && SyncMemops(device);
  else if (!srcDev && !dstDev)
    c.blocksHost = true;
  else
    c.blocksHost = !async || c.pageable;
  return c;
}

// A side the program declares to be device memory must be memory CUDA knows about.
bool CheckDeclared(const End& r, const End& d, cudaMemcpyKind kind) {
  bool srcSaysDev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  bool dstSaysDev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  return !((srcSaysDev && !r.alloc) || (dstSaysDev && !d.alloc));
}

cudaError_t RecordCopy(const StreamRef& s, const CopyShape& c, size_t bytes) {
  if (!Recording()) return cudaSuccess;
  Line l(s.device, "memcpy");
  l.Str("kind", c.kind).U64("bytes", bytes).Int("stream", s.id).Bool("async", !c.blocksHost);
  // A peer copy crosses between two GPUs (ranks): the simulator moves it over their link.
  if (c.kind[0] == 'p') {
    l.Rank("src_rank", c.srcDev).Rank("dst_rank", c.dstDev);
    // Without a peer mapping either way the runtime stages the bytes through host memory
    // (CUDA Programming Guide, "Peer-to-Peer Memory Copy").
    if (!PeerAccessEnabled(c.srcDev, c.dstDev)) l.Bool("staged", true);
  }
  // The runtime copies between device buffers with a kernel it launches.
  if (c.kind[0] == 'p' || !strcmp(c.kind, "d2d")) ChargeApi(ApiCost::MemcpyD2D);
  if (c.pageable) l.Bool("pageable", true);
  if (c.blocksHost) WakeField(l, s.device);
  if (LiveMode() && c.blocksHost) {
    // The host waits for this copy: it returns at the simulated time the copy is done.
    LiveAnswer a;
    return l.CommitAndWait(&a) ? cudaSuccess : Ret(WaitError(l.Device()));
  }
  l.Commit();
  if (cudaError_t e = ShimStatus(s.device)) return Ret(e);
  return cudaSuccess;
}

// srcDevice/dstDevice >= 0: cudaMemcpyPeer*, whose pointers must be device memory of those devices.
cudaError_t Copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                 bool ptsz, int srcDevice = -1, int dstDevice = -1) {
  if ((unsigned)kind > cudaMemcpyDefault) return Ret(cudaErrorInvalidMemcpyDirection);
  StreamRef s;
  if (!ResolveStream(stream, &s, ptsz)) return Ret(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (!dst || !src) return Ret(cudaErrorInvalidValue);
  CopyShape c;
  {
    std::lock_guard<std::mutex> lock(M().mu);
    bool oob = false;
    End d = Classify(dst, count, &oob);
    End r = Classify(src, count, &oob);
    if (oob || !CheckDeclared(r, d, kind)) return Ret(cudaErrorInvalidValue);
    if (srcDevice >= 0 && (!r.device || r.dev != srcDevice || !d.device || d.dev != dstDevice))
      return Ret(cudaErrorInvalidValue);
    if (d.accessible && r.accessible) memmove(dst, src, count);
    c = ShapeOf(r, d, kind, async, s.device);
  }
  return RecordCopy(s, c, count);
}

cudaError_t Set(void* ptr, int value, size_t count, cudaStream_t stream, bool async, bool ptsz) {
  StreamRef s;
  if (!ResolveStream(stream, &s, ptsz)) return Ret(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(M().mu);
    const Alloc* a = FindLocked(ptr, count, nullptr);
    if (!a) return Ret(cudaErrorInvalidValue);
    if (a->backed) memset(ptr, value, count);
  }
  if (Recording()) Line(s.device, "memset").U64("bytes", count).Int("stream", s.id).Bool("async", async).Commit();
  if (cudaError_t e = ShimStatus(s.device)) return Ret(e);
  return cudaSuccess;
}

}  // namespace

cudaError_t DeviceMalloc(void** ptr, size_t bytes, int device, bool record, bool fromPool) {
  if (!ptr) return Ret(cudaErrorInvalidValue);
  if (!DeviceValid(device)) return Ret(cudaErrorInvalidDevice);
  if (bytes == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  MemTable& m = M();
  size_t mapped = RoundUp(bytes, 4096);
  void* p;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    // Capacity is charged in 2 MiB pages, like the CUDA allocator's granularity.
    size_t charge = RoundUp(bytes, 2u << 20);
    if (charge > Gpu().memBytes - m.used[device]) return Ret(cudaErrorMemoryAllocation);
    bool backed = mapped <= m.backMax && m.backedTotal + mapped <= m.backTotalMax;
    p = MapMemory(mapped, backed);
    if (!p) return Ret(cudaErrorMemoryAllocation);
    m.used[device] += charge;
    if (backed) m.backedTotal += mapped;
    m.allocs[(uintptr_t)p] = Alloc{bytes, mapped, device, Kind::Device, backed};
  }
  *ptr = p;
  if (!fromPool) ChargeApi(ApiCost::MallocPerMiB, (double)bytes / (1 << 20));  // the driver maps what it hands out
  if (record && Recording()) Line(device, "malloc").U64("bytes", bytes).U64("ptr", (uintptr_t)p).Commit();
  return cudaSuccess;
}

cudaError_t DeviceFree(void* ptr, bool record) {
  if (!ptr) return cudaSuccess;
  MemTable& m = M();
  int device;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.allocs.find((uintptr_t)ptr);
    if (it == m.allocs.end() || (it->second.kind != Kind::Device && it->second.kind != Kind::Managed))
      return Ret(cudaErrorInvalidValue);
    const Alloc& a = it->second;
    device = a.device;
    if (a.kind == Kind::Device) {
      m.used[device] -= RoundUp(a.size, 2u << 20);
      if (a.backed) m.backedTotal -= a.mapped;
    }
    munmap(ptr, a.mapped);
    m.allocs.erase(it);
  }
  if (record && Recording()) Line(device, "free").U64("ptr", (uintptr_t)ptr).Commit();
  return cudaSuccess;
}

cudaError_t Memcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                     cudaMemcpyKind kind, cudaStream_t stream, bool async, bool ptsz) {
  if (width > dpitch || width > spitch) return Ret(cudaErrorInvalidPitchValue);
  if ((unsigned)kind > cudaMemcpyDefault) return Ret(cudaErrorInvalidMemcpyDirection);
  StreamRef s;
  if (!ResolveStream(stream, &s, ptsz)) return Ret(cudaErrorInvalidResourceHandle);
  if (width == 0 || height == 0) return cudaSuccess;
  if (!dst || !src) return Ret(cudaErrorInvalidValue);
  CopyShape c;
  {
    std::lock_guard<std::mutex> lock(M().mu);
    bool oob = false;
    size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
    End d = Classify(dst, dspan, &oob);
    End r = Classify(src, sspan, &oob);
    if (oob || !CheckDeclared(r, d, kind)) return Ret(cudaErrorInvalidValue);
    if (d.accessible && r.accessible)
      for (size_t row = 0; row < height; ++row)
        memmove((char*)dst + row * dpitch, (const char*)src + row * spitch, width);
    c = ShapeOf(r, d, kind, async, s.device);
  }
  return RecordCopy(s, c, width * height);
}

cudaError_t SymbolCopy(void* symbol, void* other, size_t count, bool toSymbol, cudaMemcpyKind kind, cudaStream_t stream,
                       bool async, bool ptsz) {
  // The symbol end is device memory, so the kind may only say where the other end is.
  cudaMemcpyKind hostSide = toSymbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  if (kind != hostSide && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return Ret(cudaErrorInvalidMemcpyDirection);
  StreamRef s;
  if (!ResolveStream(stream, &s, ptsz)) return Ret(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (!other) return Ret(cudaErrorInvalidValue);
  CopyShape c;
  {
    std::lock_guard<std::mutex> lock(M().mu);
    bool oob = false;
    End o = Classify(other, count, &oob);
    // A module variable exists on every device; the copy uses the instance of the device it runs on.
    static const Alloc kSymbolStorage{0, 0, 0, Kind::Device, true};
    End sym{&kSymbolStorage, true, true, s.device};
    const End& r = toSymbol ? o : sym;
    const End& d = toSymbol ? sym : o;
    if (oob || !CheckDeclared(r, d, kind)) return Ret(cudaErrorInvalidValue);
    if (o.accessible) memcpy(toSymbol ? symbol : other, toSymbol ? other : symbol, count);
    c = ShapeOf(r, d, kind, async, s.device);
  }
  return RecordCopy(s, c, count);
}

void ReleaseDeviceMemory(int device) {
  MemTable& m = M();
  std::lock_guard<std::mutex> lock(m.mu);
  for (auto it = m.allocs.begin(); it != m.allocs.end();) {
    const Alloc& a = it->second;
    if (a.device == device && (a.kind == Kind::Device || a.kind == Kind::Managed)) {
      munmap((void*)it->first, a.mapped);
      if (a.kind == Kind::Device && a.backed) m.backedTotal -= a.mapped;
      it = m.allocs.erase(it);
    } else {
      ++it;
    }
  }
  m.used[device] = 0;
}

}  // namespace gpusim

using namespace gpusim;

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  GPUSIM_API(Malloc);
  return DeviceMalloc(devPtr, size, CurrentDevice(), true);
}

cudaError_t cudaFree(void* devPtr) {
  GPUSIM_API(Free);
  return DeviceFree(devPtr, true);
}

cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  GPUSIM_API(Malloc);
  if (!pitch) return Ret(cudaErrorInvalidValue);
  *pitch = RoundUp(width ? width : 1, 512);  // every row starts on a 512-byte boundary
  return DeviceMalloc(devPtr, *pitch * height, CurrentDevice(), true);
}

cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count, cudaMemLocation, unsigned int, cudaStream_t stream) {
  GPUSIM_API(Call);
  StreamRef s;
  if (!ResolveStream(stream, &s)) return Ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(M().mu);
  return count && FindLocked(devPtr, count, nullptr) ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaMemAdvise(const void* devPtr, size_t count, cudaMemoryAdvise advice, cudaMemLocation) {
  GPUSIM_API(Call);
  if (advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy) return Ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(M().mu);
  return count && FindLocked(devPtr, count, nullptr) ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  GPUSIM_API(Call);
  StreamRef s;
  if (!ResolveStream(hStream, &s)) return Ret(cudaErrorInvalidResourceHandle);
  return DeviceMalloc(devPtr, size, s.device, true, /*fromPool=*/true);
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  GPUSIM_API(Call);
  StreamRef s;
  if (!ResolveStream(hStream, &s)) return Ret(cudaErrorInvalidResourceHandle);
  return DeviceFree(devPtr, true);
}

cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  GPUSIM_API(Malloc);
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return Ret(cudaErrorInvalidValue);
  int dev = CurrentDevice();
  cudaError_t e = HostMalloc(devPtr, size, Kind::Managed, dev);
  if (e == cudaSuccess && size && Recording())
    Line(dev, "malloc").U64("bytes", size).U64("ptr", (uintptr_t)*devPtr).Bool("managed", true).Commit();
  return e;
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  GPUSIM_API(HostAlloc);
  if (flags & ~0xfu) return Ret(cudaErrorInvalidValue);
  return HostMalloc(pHost, size, Kind::Host, CurrentDevice());
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  GPUSIM_API(HostAlloc);
  return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

cudaError_t cudaFreeHost(void* ptr) {
  GPUSIM_API(Free);
  if (!ptr) return cudaSuccess;
  MemTable& m = M();
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.allocs.find((uintptr_t)ptr);
  if (it == m.allocs.end() || it->second.kind != Kind::Host) return Ret(cudaErrorInvalidValue);
  munmap(ptr, it->second.mapped);
  m.allocs.erase(it);
  return cudaSuccess;
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int) {
  GPUSIM_API(HostAlloc);
  if (!ptr || size == 0) return Ret(cudaErrorInvalidValue);
  MemTable& m = M();
  std::lock_guard<std::mutex> lock(m.mu);
  if (ContainsLocked(ptr)) return Ret(cudaErrorHostMemoryAlreadyRegistered);
  m.allocs[(uintptr_t)ptr] = Alloc{size, 0, CurrentDevice(), Kind::Registered, true};
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void* ptr) {
  GPUSIM_API(Call);
  MemTable& m = M();
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.allocs.find((uintptr_t)ptr);
  if (it == m.allocs.end() || it->second.kind != Kind::Registered) return Ret(cudaErrorHostMemoryNotRegistered);
  m.allocs.erase(it);
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  GPUSIM_API(Call);
  if (!pDevice || flags != 0) return Ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(M().mu);
  const Alloc* a = FindLocked(pHost, 1, nullptr);
  if (!a || (a->kind != Kind::Host && a->kind != Kind::Registered)) return Ret(cudaErrorInvalidValue);
  *pDevice = pHost;  // unified addressing: the device sees pinned memory at the same address
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  GPUSIM_API(Call);
  if (!free || !total) return Ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(M().mu);
  *total = Gpu().memBytes;
  *free = Gpu().memBytes - M().used[CurrentDevice()];
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  GPUSIM_API(Call);
  if (!attributes) return Ret(cudaErrorInvalidValue);
  memset(attributes, 0, sizeof *attributes);
  std::lock_guard<std::mutex> lock(M().mu);
  const Alloc* a = FindLocked(ptr, 1, nullptr);
  if (!a) {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    attributes->hostPointer = (void*)ptr;
    return cudaSuccess;
  }
  attributes->device = a->device;
  switch (a->kind) {
    case Kind::Device:
      attributes->type = cudaMemoryTypeDevice;
      attributes->devicePointer = (void*)ptr;
      break;
    case Kind::Managed:
      attributes->type = cudaMemoryTypeManaged;
      attributes->devicePointer = attributes->hostPointer = (void*)ptr;
      break;
    default:
      attributes->type = cudaMemoryTypeHost;
      attributes->devicePointer = attributes->hostPointer = (void*)ptr;
      break;
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  GPUSIM_API(MemcpyAsync);
  return Copy(dst, src, count, kind, nullptr, false, false);
}

cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  GPUSIM_API(MemcpyAsync);
  return Copy(dst, src, count, kind, nullptr, false, true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  return Copy(dst, src, count, kind, stream, true, false);
}

cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  return Copy(dst, src, count, kind, stream, true, true);
}

cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  GPUSIM_API(MemcpyAsync);
  if (!DeviceValid(dstDevice) || !DeviceValid(srcDevice)) return Ret(cudaErrorInvalidDevice);
  return Copy(dst, src, count, cudaMemcpyDefault, nullptr, false, false, srcDevice, dstDevice);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t count,
                                cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  if (!DeviceValid(dstDevice) || !DeviceValid(srcDevice)) return Ret(cudaErrorInvalidDevice);
  return Copy(dst, src, count, cudaMemcpyDefault, stream, true, false, srcDevice, dstDevice);
}

cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  GPUSIM_API(MemsetAsync);
  if (width > pitch) return Ret(cudaErrorInvalidPitchValue);
  StreamRef s;
  if (!ResolveStream(stream, &s)) return Ret(cudaErrorInvalidResourceHandle);
  if (width == 0 || height == 0) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(M().mu);
    const Alloc* a = FindLocked(devPtr, pitch * (height - 1) + width, nullptr);
    if (!a) return Ret(cudaErrorInvalidValue);
    if (a->backed)
      for (size_t row = 0; row < height; ++row) memset((char*)devPtr + row * pitch, value, width);
  }
  if (Recording())
    Line(s.device, "memset").U64("bytes", width * height).Int("stream", s.id).Bool("async", true).Commit();
  return cudaSuccess;
}

cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  GPUSIM_API(MemsetAsync);
  return cudaMemset2DAsync(devPtr, pitch, value, width, height, nullptr);
}

cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  GPUSIM_API(Call);
  if (!pFlags) return Ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(M().mu);
  const Alloc* a = FindLocked(pHost, 1, nullptr);
  if (!a || (a->kind != Kind::Host && a->kind != Kind::Registered)) return Ret(cudaErrorInvalidValue);
  *pFlags = cudaHostAllocMapped;  // unified addressing maps all pinned memory
  return cudaSuccess;
}

cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void* devPtr, size_t, unsigned int flags) {
  GPUSIM_API(Call);
  StreamRef s;
  if (!ResolveStream(stream, &s)) return Ret(cudaErrorInvalidResourceHandle);
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
    return Ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(M().mu);
  const Alloc* a = FindLocked(devPtr, 1, nullptr);
  return a && a->kind == Kind::Managed ? cudaSuccess : Ret(cudaErrorInvalidValue);
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  GPUSIM_API(MemcpyAsync);
  return Memcpy2D(dst, dpitch, src, spitch, width, height, kind, nullptr, false, false);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  GPUSIM_API(MemcpyAsync);
  return Memcpy2D(dst, dpitch, src, spitch, width, height, kind, stream, true, false);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  GPUSIM_API(MemsetAsync);
  return Set(devPtr, value, count, nullptr, false, false);
}
cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  GPUSIM_API(MemsetAsync);
  return Set(devPtr, value, count, nullptr, false, true);
}
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  GPUSIM_API(MemsetAsync);
  return Set(devPtr, value, count, stream, true, false);
}
cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  GPUSIM_API(MemsetAsync);
  return Set(devPtr, value, count, stream, true, true);
}

}  // extern "C"
