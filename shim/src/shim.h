// Internal interface of the gpusim shim.
//
// All process state (devices, streams, events, allocations, kernels, trace buffers) lives in
// libcudart.so.13; libnccl.so.2 and libcublas*.so.13 reach it through these functions, which
// are exported in the private version node GPUSIM_PRIVATE_1 (see cudart.map). Nothing here
// throws: errors are returned as values and the C entry points translate them.
#ifndef GPUSIM_SHIM_H
#define GPUSIM_SHIM_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <time.h>

#include "cuda_runtime_api.h"

#define GPUSIM_EXPORT __attribute__((visibility("default")))

namespace gpusim {

constexpr int kMaxDevices = 64;

// ---- configuration (state.cc) ----

struct GpuConfig {
  const char* key;   // preset name accepted by GPUSIM_GPU
  const char* name;  // cudaDeviceProp::name
  size_t memBytes;
  int smCount;
  int ccMajor, ccMinor;
  int l2Bytes;
  int memBusWidth;
  int smemPerSmBytes;
  int smemOptinBytes;
  int maxThreadsPerSm;
  int maxBlocksPerSm;
};

GPUSIM_EXPORT const GpuConfig& Gpu();
// Devices this process sees (the GPUs of its server, narrowed by CUDA_VISIBLE_DEVICES).
GPUSIM_EXPORT int DeviceCount();
// Index on its server of the GPU a visible device is (CUDA_VISIBLE_DEVICES renumbers them).
GPUSIM_EXPORT int PhysicalDevice(int device);
// The simulated server this process runs on (GPUSIM_SERVER, or from an MPI launcher's rank);
// -1 when no launcher said (plain runs, gpusim-launch).
GPUSIM_EXPORT int ServerIndex();
// Rank in the cluster of a visible device: server x GPUs per server + physical index; -1 when
// the server is unknown.
GPUSIM_EXPORT int GlobalRank(int device);
// The fake UUID of a visible device (distinct per physical GPU and server).
GPUSIM_EXPORT void DeviceUuid(int device, char out[16]);
// Current device of the calling host thread (cudaSetDevice is per thread, as in CUDA).
GPUSIM_EXPORT int CurrentDevice();
// This process's number in the job: its MPI rank when an MPI launcher started it, else the
// GPUSIM_RANK gpusim gave it; -1 when neither says.
GPUSIM_EXPORT int JobProcess();
// The real monotonic clock in ns (the shim's own measurements never read virtual time).
GPUSIM_EXPORT uint64_t NowNs();
// Sleeps for real, never on the program's clock (the shim's own waiting): the system call,
// past any interposed nanosleep/usleep.
GPUSIM_EXPORT int RealSleep(clockid_t id, int flags, const struct timespec* req, struct timespec* rem);
GPUSIM_EXPORT void RealSleepUs(uint64_t us);
// Prints "gpusim: <what>" to stderr the first time a given string is passed.
GPUSIM_EXPORT void WarnOnce(const char* what);

// ---- streams (streams.cc) ----

struct StreamRef {
  int device;
  int id;  // trace stream id, per device; 0 = legacy default stream
};
// Maps a handle (0, cudaStreamLegacy, cudaStreamPerThread or a created stream) to its device
// and trace id. perThreadDefault: the caller was compiled with per-thread default streams, so
// 0 means cudaStreamPerThread. Returns false for a handle that is not a live stream.
GPUSIM_EXPORT bool ResolveStream(cudaStream_t s, StreamRef* out, bool perThreadDefault = false);

// ---- memory (memory.cc) ----

// `fromPool`: cudaMallocAsync, served from memory the pool has mapped (no per-MiB mapping cost).
GPUSIM_EXPORT cudaError_t DeviceMalloc(void** ptr, size_t bytes, int device, bool record, bool fromPool = false);
GPUSIM_EXPORT cudaError_t DeviceFree(void* ptr, bool record);

// ---- live mode (live.cc, vclock.cc) ----

// What the simulator answered to a blocking call.
struct LiveAnswer {
  bool ok = false;
  uint64_t timeNs = 0;  // simulated time the call returns
  long long value = 0;  // queries: 1 ready / 0 not ready; elapsed time: ns, or -1 not ready
  std::string error;
};
// Running under `gpusim run` (GPUSIM_LIVE_SOCKET set), in a rank process (not a forked child).
GPUSIM_EXPORT bool LiveMode();
// Live mode and the simulator is gone: calls that need it fail (cudaErrorUnknown,
// ncclSystemError) so the program stops instead of running on without a simulation.
GPUSIM_EXPORT bool LiveLost();
// Sends one op line of trace rank `rank`; with `wait`, returns the sequence number to LiveWait
// for (0: not sent, the simulator is gone).
GPUSIM_EXPORT uint64_t LiveSend(int rank, const std::string& json, bool wait);
// How often the simulator stopped waiting for the calling thread (it ran without CUDA calls while
// every other thread waited: a wait outside CUDA such as an MPI barrier).
GPUSIM_EXPORT uint32_t LiveLifts();
// Waits for the answer to a W line; false (with a message printed) when it cannot come.
GPUSIM_EXPORT bool LiveWait(uint64_t seq, LiveAnswer* out);
// ---- host time (vclock.cc, host-cost.cc) ----
//
// Every thread that calls the shim has a virtual clock V: the host time it has spent, which is
// what the program's own time between calls (measured as thread CPU time) plus what the real
// library would have spent inside each call (the host cost table) add up to, or a fixed cost
// per call (GPUSIM_HOST_TIME = measured | api-only | fixed:US). The shim's own work (encoding,
// sockets, emulated memory) is never part of it. In live mode an answer moves V to the
// simulated time the call returned; the program's clocks read V. Ops are stamped with V in
// live mode and in recordings.

// What a call costs the real library on the host (the host cost table's rows).
enum class ApiCost : uint8_t {
  Call,
  Launch,
  MemcpyAsync,
  MemcpyD2D,
  MemsetAsync,
  EventRecord,
  EventQuery,
  StreamQuery,
  StreamWaitEvent,
  EventElapsed,
  StreamSync,
  EventSync,
  DeviceSync,
  SyncWake,
  SyncWakeBlocking,
  Malloc,
  MallocPerMiB,
  Free,
  HostAlloc,
  CublasGemm,
  CublasLtMatmul,
  NcclEnqueue,
  NcclLaunch,
  CudnnExecute,
  ClockRead,
  kCount
};
GPUSIM_EXPORT uint64_t ApiCostNs(ApiCost c);

// Entry and exit of an intercepted call (only the outermost of nested calls counts): at entry
// the thread's V advances by the program's own time since the previous call's exit plus the
// call's cost; the time in between is the shim's.
GPUSIM_EXPORT void ApiEnter(ApiCost c);
GPUSIM_EXPORT void ApiExit();
class ApiScope {
 public:
  explicit ApiScope(ApiCost c) { ApiEnter(c); }
  ~ApiScope() { ApiExit(); }
  ApiScope(const ApiScope&) = delete;
  ApiScope& operator=(const ApiScope&) = delete;
};
// First statement of every exported entry point: GPUSIM_API(Launch);
#define GPUSIM_API(cost) ::gpusim::ApiScope gpusim_api_scope_(::gpusim::ApiCost::cost)
// A further cost inside a call (NCCL's launch per device at group end, cudaMalloc's per MiB),
// `times` times. Only in the modes that model API costs.
GPUSIM_EXPORT void ChargeApi(ApiCost c, double times = 1);
// The program's own host code runs inside a call (a host function cudaLaunchHostFunc runs at
// once): while alive, time counts as the program's.
class GPUSIM_EXPORT ProgramCode {
 public:
  ProgramCode();
  ~ProgramCode();
  ProgramCode(const ProgramCode&) = delete;
  ProgramCode& operator=(const ProgramCode&) = delete;

 private:
  int depth_;  // the call's nesting it stepped out of (0: none)
};

// The calling thread's V (ns since the job's start).
GPUSIM_EXPORT uint64_t VClockNow();
// V for an op being recorded now (an op outside any intercepted call counts as one call).
GPUSIM_EXPORT uint64_t VClockForOp();
// An answer says the call returns at simulated time t: V moves there.
GPUSIM_EXPORT void VClockResume(uint64_t t);

// ---- ownership across the processes of a job (claims.cc) ----

// Claims the GPU behind visible `device` (trace rank `rank`) for this process, once; false
// (with a message naming the holder) when another process of the job drives it already.
GPUSIM_EXPORT bool ClaimDevice(int device, int rank);
// A claim for `device` failed: its calls return cudaErrorDevicesUnavailable.
GPUSIM_EXPORT bool DeviceUnavailable(int device);
// Claims rank `rank` of communicator `comm` (16 hex digits); "" when it is ours, else who holds it.
GPUSIM_EXPORT std::string ClaimCommRank(const char* comm, int rank);
// What a call on `device` returns after recording its op: cudaErrorDevicesUnavailable when the
// GPU belongs to another process, cudaErrorUnknown when live mode lost the simulator.
GPUSIM_EXPORT cudaError_t ShimStatus(int device);
// What a call on `device` that waited for the simulator returns when no answer came: the
// ShimStatus error, else cudaErrorUnknown.
GPUSIM_EXPORT cudaError_t WaitError(int device);

// ---- recorder (recorder.cc) ----

GPUSIM_EXPORT bool Recording();
// The recording's directory, absolute ("" when not recording).
GPUSIM_EXPORT const std::string& RecordDir();

// Builds one trace line. Fields are appended in call order; Commit() adds the common fields
// ("op", "t", "cpu_us"), stamps the time and hands the line to the device's rank log.
class GPUSIM_EXPORT Line {
 public:
  Line(int device, const char* op);
  Line& Str(const char* key, const char* value);
  Line& Int(const char* key, long long value);
  Line& U64(const char* key, unsigned long long value);
  Line& Num(const char* key, double value);
  Line& Bool(const char* key, bool value);
  Line& Dim(const char* key, unsigned x, unsigned y, unsigned z);
  // Appends an already formatted fragment (it must start with ',').
  Line& Raw(const char* fragment, size_t len);
  // The trace rank of `device` (a GPU of this process, e.g. the other end of a peer copy).
  // Live mode: process * GPUSIM_DEVICES + device. Recording: filled in when the line is
  // written out, once that device's rank is known (-1 if it never gets one of its own).
  // At most two per line.
  Line& Rank(const char* key, int device);
  void Commit();
  int Device() const { return device_; }
  // Live mode: commits the line as a call that waits for the simulator's answer and waits for
  // it (the thread's virtual clock and this device's issue time move to the answer's time).
  // Outside live mode: Commit() and returns false with out->ok = false.
  bool CommitAndWait(LiveAnswer* out);
  // Live mode, for calls that wait for several answers at once (grouped NCCL inits): sends
  // now and returns the sequence number; FinishWait collects it.
  uint64_t CommitDeferred();
  static bool FinishWait(int device, uint64_t seq, LiveAnswer* out);

 private:
  uint64_t CommitLive(bool wait);
  char* Reserve(size_t n);  // room for n more bytes; returns the write position
  void Put(const char* s, size_t n);
  void Key(const char* key);

  int device_;
  const char* op_;
  std::string* body_;  // thread-local scratch, used as a growable char buffer
  size_t len_;
  struct RankRef {
    size_t pos;  // where in body_ the number goes
    int device;
  };
  RankRef ranks_[2];
  int nranks_;
};

// Adds "wake_us" to a blocking call's line: how long after the awaited work ends the call
// returns when it had to wait (the runtime's wake-up for `device`'s scheduling policy; none
// with fixed host time). The simulator applies it, so recordings and live runs agree.
GPUSIM_EXPORT void WakeField(Line& l, int device);

// Tells the recorder which trace rank the ops of `device` belong to (first call wins) and the
// job's world size, learnt from the first communicator initialised on that device.
GPUSIM_EXPORT void BindRank(int device, int rank, int worldSize);
// Writes all buffered lines and the manifest (called at exit and by cudaDeviceReset).
GPUSIM_EXPORT void FlushTrace();

// Appends s to out as a JSON string body (without quotes).
GPUSIM_EXPORT void JsonEscape(const char* s, std::string& out);

}  // namespace gpusim

#endif
