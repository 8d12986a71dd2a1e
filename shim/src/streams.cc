// Streams, events and device-wide synchronisation.
//
// Emulation mode: no work is ever pending, so queries report completion at once, synchronise
// calls return at once, and an event's timestamp is the host CLOCK_MONOTONIC time at record.
// Every call is still validated and recorded so the simulator can replay the dependencies.
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "cudart-internal.h"

namespace gpusim {
namespace {

struct Stream {
  int device;
  int id;
  unsigned flags;
  int priority;
};

struct Event {
  int device;
  unsigned long long id;
  unsigned flags;
  // Written under the table's shared lock by cudaEventRecord, hence atomic.
  std::atomic<bool> recorded;
  std::atomic<uint64_t> ns;
};

struct Tables {
  std::shared_mutex mu;
  std::unordered_map<const void*, Stream*> streams;
  std::unordered_map<const void*, Event*> events;
  std::atomic<int> nextStream[kMaxDevices] = {};
  std::atomic<unsigned long long> nextEvent{0};
  // Bumped on every destroy so per-thread lookup caches never return a dead handle.
  std::atomic<uint64_t> generation{0};
};

Tables& T() {
  static Tables* t = new Tables;  // handles may be used from exit handlers
  return *t;
}

thread_local int t_ptds[kMaxDevices];

// Per-thread one-entry caches: launch and record loops reuse the same handles.
thread_local const void* t_lastStream = nullptr;
thread_local Stream t_lastStreamVal;
thread_local uint64_t t_lastStreamGen = ~0ull;

bool FindStream(cudaStream_t s, Stream* out) {
  Tables& t = T();
  uint64_t gen = t.generation.load(std::memory_order_acquire);
  if (s == t_lastStream && gen == t_lastStreamGen) {
    *out = t_lastStreamVal;
    return true;
  }
  std::shared_lock<std::shared_mutex> lock(t.mu);
  auto it = t.streams.find(s);
  if (it == t.streams.end()) return false;
  *out = *it->second;
  t_lastStream = s;
  t_lastStreamVal = *out;
  t_lastStreamGen = gen;
  return true;
}

// Looks up an event; the caller holds T().mu (shared for reads, unique for writes).
Event* FindEventLocked(cudaEvent_t e) {
  auto it = T().events.find(e);
  return it == T().events.end() ? nullptr : it->second;
}

void RecordStreamCreate(int device, int id, unsigned flags, int priority) {
  if (Recording())
    Line(device, "stream_create").Int("stream", id).U64("flags", flags).Int("priority", priority).Commit();
}

cudaError_t Record(cudaEvent_t event, cudaStream_t stream, bool ptsz) {
  StreamRef s;
  if (!ResolveStream(stream, &s, ptsz)) return Ret(cudaErrorInvalidResourceHandle);
  unsigned long long id;
  {
    std::shared_lock<std::shared_mutex> lock(T().mu);
    Event* e = FindEventLocked(event);
    if (!e) return Ret(cudaErrorInvalidResourceHandle);
    e->ns.store(NowNs(), std::memory_order_relaxed);
    e->recorded.store(true, std::memory_order_release);
    id = e->id;
  }
  if (Recording()) Line(s.device, "event_record").U64("event", id).Int("stream", s.id).Commit();
  if (cudaError_t e = ShimStatus(s.device)) return Ret(e);
  return cudaSuccess;
}

cudaError_t WaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags, bool ptsz) {
  StreamRef s;
  if (!ResolveStream(stream, &s, ptsz)) return Ret(cudaErrorInvalidResourceHandle);
  if (flags & ~1u) return Ret(cudaErrorInvalidValue);
  unsigned long long id;
  {
    std::shared_lock<std::shared_mutex> lock(T().mu);
    Event* e = FindEventLocked(event);
    if (!e) return Ret(cudaErrorInvalidResourceHandle);
    id = e->id;
  }
  if (Recording()) Line(s.device, "stream_wait_event").Int("stream", s.id).U64("event", id).Commit();
  return cudaSuccess;
}

cudaError_t SyncStream(cudaStream_t stream, bool ptsz, bool query) {
  StreamRef s;
  if (!ResolveStream(stream, &s, ptsz)) return Ret(cudaErrorInvalidResourceHandle);
  if (Recording()) {
    Line l(s.device, "stream_sync");
    l.Int("stream", s.id);
    if (query)
      l.Bool("query", true);  // a completed cudaStreamQuery: the host saw the stream idle
    else
      WakeField(l, s.device);
    if (LiveMode()) {
      // Live: the simulator answers when the stream is done (or, for a query, whether it is).
      LiveAnswer a;
      if (!l.CommitAndWait(&a)) return Ret(WaitError(l.Device()));
      return query && a.value == 0 ? cudaErrorNotReady : cudaSuccess;
    }
    l.Commit();
    return Ret(ShimStatus(l.Device()));  // recording: the GPU may be another process's
  }
  return cudaSuccess;
}

}  // namespace

int NewStreamId(int device) { return T().nextStream[device].fetch_add(1) + 1; }

int PerThreadStreamId(int device) {
  int& id = t_ptds[device];
  if (id == 0) {
    id = NewStreamId(device);
    RecordStreamCreate(device, id, 0, 0);  // per-thread default streams synchronise with stream 0
  }
  return id;
}

bool ResolveStream(cudaStream_t s, StreamRef* out, bool perThreadDefault) {
  if (s == nullptr && perThreadDefault) s = cudaStreamPerThread;
  if (s == nullptr || s == cudaStreamLegacy) {
    out->device = CurrentDevice();
    out->id = 0;
    return true;
  }
  if (s == cudaStreamPerThread) {
    out->device = CurrentDevice();
    out->id = PerThreadStreamId(out->device);
    return true;
  }
  Stream st;
  if (!FindStream(s, &st)) return false;
  out->device = st.device;
  out->id = st.id;
  return true;
}

// Drops the streams and events of a device being reset; their handles become invalid.
void ResetDeviceHandles(int device) {
  Tables& t = T();
  std::unique_lock<std::shared_mutex> lock(t.mu);
  for (auto it = t.streams.begin(); it != t.streams.end();) {
    if (it->second->device == device) {
      delete it->second;
      it = t.streams.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = t.events.begin(); it != t.events.end();) {
    if (it->second->device == device) {
      delete it->second;
      it = t.events.erase(it);
    } else {
      ++it;
    }
  }
  t.generation.fetch_add(1, std::memory_order_release);
}

}  // namespace gpusim

using namespace gpusim;

namespace gpusim {
void ReleaseDeviceMemory(int device);  // memory.cc
}

extern "C" {

// ---- streams ----

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  GPUSIM_API(Call);
  if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking)) return Ret(cudaErrorInvalidValue);
  // Out-of-range priorities are clamped, as CUDA does ([greatest, least] = [-5, 0]).
  if (priority < -5) priority = -5;
  if (priority > 0) priority = 0;
  int dev = CurrentDevice();
  Stream* s = new Stream{dev, NewStreamId(dev), flags, priority};
  {
    std::unique_lock<std::shared_mutex> lock(T().mu);
    T().streams[s] = s;
  }
  *pStream = (cudaStream_t)s;
  RecordStreamCreate(dev, s->id, flags, priority);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  GPUSIM_API(Call);
  return cudaStreamCreateWithPriority(pStream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  GPUSIM_API(Call);
  return cudaStreamCreateWithPriority(pStream, 0, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  GPUSIM_API(Call);
  Tables& t = T();
  std::unique_lock<std::shared_mutex> lock(t.mu);
  auto it = t.streams.find(stream);
  if (it == t.streams.end()) return Ret(cudaErrorInvalidResourceHandle);
  delete it->second;
  t.streams.erase(it);
  t.generation.fetch_add(1, std::memory_order_release);
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  GPUSIM_API(StreamQuery);
  return SyncStream(stream, false, true);
}
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  GPUSIM_API(StreamQuery);
  return SyncStream(stream, true, true);
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  GPUSIM_API(StreamSync);
  return SyncStream(stream, false, false);
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  GPUSIM_API(StreamSync);
  return SyncStream(stream, true, false);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  GPUSIM_API(StreamWaitEvent);
  return WaitEvent(stream, event, flags, false);
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  GPUSIM_API(StreamWaitEvent);
  return WaitEvent(stream, event, flags, true);
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  GPUSIM_API(Call);
  if (!priority) return Ret(cudaErrorInvalidValue);
  StreamRef r;
  if (!ResolveStream(hStream, &r)) return Ret(cudaErrorInvalidResourceHandle);
  Stream s{0, 0, 0, 0};
  if (r.id != 0) FindStream(hStream, &s);
  *priority = s.priority;
  return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  GPUSIM_API(Call);
  if (!flags) return Ret(cudaErrorInvalidValue);
  StreamRef r;
  if (!ResolveStream(hStream, &r)) return Ret(cudaErrorInvalidResourceHandle);
  Stream s{0, 0, 0, 0};
  if (r.id != 0) FindStream(hStream, &s);
  *flags = s.flags;
  return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  GPUSIM_API(Call);
  if (!device) return Ret(cudaErrorInvalidValue);
  StreamRef r;
  if (!ResolveStream(hStream, &r)) return Ret(cudaErrorInvalidResourceHandle);
  *device = r.device;
  return cudaSuccess;
}

cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  GPUSIM_API(Call);
  if (!streamId) return Ret(cudaErrorInvalidValue);
  StreamRef r;
  if (!ResolveStream(hStream, &r)) return Ret(cudaErrorInvalidResourceHandle);
  *streamId = (unsigned long long)r.device << 32 | (unsigned)r.id;  // unique in the process
  return cudaSuccess;
}

// Host callbacks run at once on the calling thread: in emulation the stream is always idle.
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  GPUSIM_API(Call);
  StreamRef r;
  if (!fn) return Ret(cudaErrorInvalidValue);
  if (!ResolveStream(stream, &r)) return Ret(cudaErrorInvalidResourceHandle);
  {
    ProgramCode program;  // the function is the program's host work
    fn(userData);
  }
  return cudaSuccess;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                                  unsigned int flags) {
  GPUSIM_API(Call);
  StreamRef r;
  if (!callback || flags != 0) return Ret(cudaErrorInvalidValue);
  if (!ResolveStream(stream, &r)) return Ret(cudaErrorInvalidResourceHandle);
  {
    ProgramCode program;
    callback(stream, cudaSuccess, userData);
  }
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus) {
  GPUSIM_API(Call);
  StreamRef r;
  if (!pCaptureStatus) return Ret(cudaErrorInvalidValue);
  if (!ResolveStream(stream, &r)) return Ret(cudaErrorInvalidResourceHandle);
  *pCaptureStatus = cudaStreamCaptureStatusNone;  // capture is never started (see BeginCapture)
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  GPUSIM_UNSUPPORTED(cudaStreamBeginCapture);
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t*) {
  GPUSIM_UNSUPPORTED(cudaStreamEndCapture);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  GPUSIM_API(Call);
  if (!mode || (unsigned)*mode > cudaStreamCaptureModeRelaxed) return Ret(cudaErrorInvalidValue);
  thread_local cudaStreamCaptureMode current = cudaStreamCaptureModeGlobal;
  cudaStreamCaptureMode previous = current;
  current = *mode;
  *mode = previous;
  return cudaSuccess;
}

// ---- events ----

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  GPUSIM_API(Call);
  if (!event || (flags & ~7u)) return Ret(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return Ret(cudaErrorInvalidValue);
  Event* e = new Event{CurrentDevice(), T().nextEvent.fetch_add(1) + 1, flags, {false}, {0}};
  {
    std::unique_lock<std::shared_mutex> lock(T().mu);
    T().events[e] = e;
  }
  *event = (cudaEvent_t)e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  GPUSIM_API(Call);
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  GPUSIM_API(Call);
  Tables& t = T();
  std::unique_lock<std::shared_mutex> lock(t.mu);
  auto it = t.events.find(event);
  if (it == t.events.end()) return Ret(cudaErrorInvalidResourceHandle);
  delete it->second;
  t.events.erase(it);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  GPUSIM_API(EventRecord);
  return Record(event, stream, false);
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  GPUSIM_API(EventRecord);
  return Record(event, stream, true);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  GPUSIM_API(EventRecord);
  if (flags & ~1u) return Ret(cudaErrorInvalidValue);
  return Record(event, stream, false);
}

static cudaError_t SyncEvent(cudaEvent_t event, bool query) {
  int device;
  unsigned long long id;
  bool recorded;
  {
    std::shared_lock<std::shared_mutex> lock(T().mu);
    Event* e = FindEventLocked(event);
    if (!e) return Ret(cudaErrorInvalidResourceHandle);
    device = e->device;
    id = e->id;
    recorded = e->recorded;
  }
  // An event never recorded is complete; there is nothing for the host to wait on.
  if (recorded && Recording()) {
    Line l(device, "event_sync");
    l.U64("event", id);
    if (query)
      l.Bool("query", true);
    else
      WakeField(l, device);
    if (LiveMode()) {
      LiveAnswer a;
      if (!l.CommitAndWait(&a)) return Ret(WaitError(l.Device()));
      return query && a.value == 0 ? cudaErrorNotReady : cudaSuccess;
    }
    l.Commit();
    return Ret(ShimStatus(l.Device()));  // recording: the GPU may be another process's
  }
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  GPUSIM_API(EventQuery);
  return SyncEvent(event, true);
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  GPUSIM_API(EventSync);
  return SyncEvent(event, false);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  GPUSIM_API(EventElapsed);
  if (!ms) return Ret(cudaErrorInvalidValue);
  std::shared_lock<std::shared_mutex> lock(T().mu);
  Event* a = FindEventLocked(start);
  Event* b = FindEventLocked(end);
  if (!a || !b) return Ret(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return Ret(cudaErrorInvalidResourceHandle);
  if (!a->recorded || !b->recorded) return Ret(cudaErrorInvalidResourceHandle);
  if (LiveMode()) {
    // Live: the simulated completion times of the two records, asked at this instant.
    if (a->device != b->device) return Ret(cudaErrorInvalidResourceHandle);
    Line l(a->device, "host");
    l.Str("name", "cudaEventElapsedTime").Bool("query", true).U64("event", a->id).U64("end_event", b->id);
    lock.unlock();
    LiveAnswer ans;
    if (!l.CommitAndWait(&ans)) return Ret(WaitError(l.Device()));
    if (ans.value < 0) return Ret(cudaErrorNotReady);
    *ms = (float)((double)ans.value / 1e6);
    return cudaSuccess;
  }
  // Emulation: host time between the two records.
  *ms = (float)((double)((int64_t)(b->ns - a->ns)) / 1e6);
  return cudaSuccess;
}

// ---- device-wide ----

cudaError_t cudaDeviceSynchronize(void) {
  GPUSIM_API(DeviceSync);
  if (!Recording()) return cudaSuccess;
  Line l(CurrentDevice(), "device_sync");
  WakeField(l, CurrentDevice());
  if (LiveMode()) {
    LiveAnswer a;
    return l.CommitAndWait(&a) ? cudaSuccess : Ret(WaitError(l.Device()));
  }
  l.Commit();
  return Ret(ShimStatus(l.Device()));
}

cudaError_t cudaDeviceReset(void) {
  GPUSIM_API(Call);
  int dev = CurrentDevice();
  ResetDeviceHandles(dev);
  ReleaseDeviceMemory(dev);
  ResetDeviceLimits(dev);
  FlushTrace();
  return cudaSuccess;
}

}  // extern "C"
