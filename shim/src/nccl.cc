// NCCL: communicators, groups and collectives (libnccl.so.2).
//
// No data moves between ranks: a collective is validated like NCCL does, recorded with its
// communicator, per-communicator sequence number and sizes, and completes at once. Processes
// never talk to each other; the unique id is only hashed into the communicator id, which is
// what lets the simulator match the ranks of one communicator.
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "nccl.h"
#include "shim.h"

using namespace gpusim;

struct ncclComm {
  char id[17];  // 16 hex digits: hash of the ncclUniqueId
  int nranks;
  int rank;
  int device;
  std::atomic<unsigned long long> seq;  // collectives issued so far
  int nextRedOp;
  std::set<int> redOps;  // live ncclRedOpCreatePreMulSum ops
  bool finalized;
};

namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;

std::shared_mutex g_mu;
std::unordered_set<ncclComm*>& Comms() {
  static auto* s = new std::unordered_set<ncclComm*>;
  return *s;
}

std::atomic<unsigned long long> g_nextGroup{0};
thread_local int t_groupDepth = 0;
thread_local unsigned long long t_group = 0;
thread_local const char* t_lastError = "";
thread_local uint64_t t_groupDevices = 0;  // devices with collectives in the open group
thread_local std::vector<std::pair<const void*, int>> t_groupComms;  // (communicator, device) in it
// Live mode: communicator inits sent to the simulator whose answer (every member joined) is
// still to be collected; collected on return, or at ncclGroupEnd for inits inside a group.
thread_local std::vector<std::pair<int, uint64_t>>* t_pendingInits = nullptr;

ncclResult_t Fail(ncclResult_t r, const char* why) {
  t_lastError = why;
  return r;
}

bool Live(ncclComm* c) {
  std::shared_lock<std::shared_mutex> lock(g_mu);
  return c && Comms().count(c);
}

void HashId(const ncclUniqueId& uid, char out[17]) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bit
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) {
    h ^= (unsigned char)uid.internal[i];
    h *= 1099511628211ull;
  }
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

const char* DtypeName(ncclDataType_t t) {
  static const char* names[] = {"i8",  "u8",  "i32", "u32",  "i64",    "u64",
                                "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
  return names[t];
}

size_t DtypeSize(ncclDataType_t t) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return sizes[t];
}

const char* OpName(ncclRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return (int)op >= 0 && op < ncclNumOps ? names[op] : "premulsum";
}

ncclComm* NewComm(const ncclUniqueId& uid, int nranks, int rank, int device) {
  ncclComm* c = new ncclComm();
  HashId(uid, c->id);
  c->nranks = nranks;
  c->rank = rank;
  c->device = device;
  c->nextRedOp = ncclNumOps;
  c->finalized = false;
  {
    std::unique_lock<std::shared_mutex> lock(g_mu);
    Comms().insert(c);
  }
  BindRank(device, rank, nranks);
  if (Recording()) {
    Line l(device, "comm_init");
    l.Str("comm", c->id).Int("nranks", nranks).Int("rank", rank);
    if (LiveMode()) {
      if (!t_pendingInits) t_pendingInits = new std::vector<std::pair<int, uint64_t>>;
      t_pendingInits->emplace_back(device, l.CommitDeferred());
    } else {
      l.Commit();
    }
  }
  return c;
}

// Live mode: waits until the simulator says every member of the pending inits has joined.
ncclResult_t FinishInits() {
  if (!t_pendingInits) return ncclSuccess;
  bool ok = true;
  bool taken = false;
  for (const auto& [dev, seq] : *t_pendingInits) {
    LiveAnswer a;
    ok = Line::FinishWait(dev, seq, &a) && ok;
    taken = taken || DeviceUnavailable(dev);
  }
  t_pendingInits->clear();
  if (taken) return Fail(ncclInvalidUsage, "the GPU belongs to another process of the job");
  return ok ? ncclSuccess : Fail(ncclSystemError, "the simulator could not complete communicator initialisation");
}

void RandomId(ncclUniqueId* uid) {
  memset(uid, 0, sizeof *uid);
  if (LiveMode()) {
    // Live runs are reproducible: the ids (hence communicator names in the results) depend on
    // the process and the call, not on chance. They only need to be unique within the job.
    static std::atomic<unsigned> calls{0};
    snprintf(uid->internal, sizeof uid->internal, "gpusim-live-%d-%u", std::max(JobProcess(), 0), calls.fetch_add(1));
    return;
  }
  ssize_t n = getrandom(uid->internal, sizeof uid->internal, 0);
  if (n != (ssize_t)sizeof uid->internal) {
    // Fall back to something unique per process and call.
    static std::atomic<unsigned> k{0};
    snprintf(uid->internal, sizeof uid->internal, "gpusim-%d-%llu-%u", (int)getpid(), (unsigned long long)NowNs(),
             k.fetch_add(1));
  }
}

// GPUSIM_UNIQUE_ID_FILE lets the processes of a gpusim-launch job agree on ids without the
// program's own broadcast: the k-th ncclGetUniqueId of rank 0 is written to FILE (k = 0) or
// FILE.k, and the same call on another rank reads it.
bool SharedId(ncclUniqueId* uid) {
  const char* file = getenv("GPUSIM_UNIQUE_ID_FILE");
  if (!file || !*file) return false;
  static std::atomic<int> calls{0};
  int k = calls.fetch_add(1);
  std::string path = file;
  if (k > 0) path += "." + std::to_string(k);
  const char* rankEnv = getenv("GPUSIM_RANK");
  int rank = rankEnv ? atoi(rankEnv) : 0;
  if (rank == 0) {
    RandomId(uid);
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return true;
    bool ok = write(fd, uid->internal, sizeof uid->internal) == (ssize_t)sizeof uid->internal;
    close(fd);
    if (ok) rename(tmp.c_str(), path.c_str());
    return true;
  }
  int timeoutS = 120;
  if (const char* t = getenv("GPUSIM_UNIQUE_ID_TIMEOUT")) timeoutS = atoi(t);
  for (long waited = 0; waited <= timeoutS * 1000L; waited += 10) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = read(fd, uid->internal, sizeof uid->internal);
      close(fd);
      if (n == (ssize_t)sizeof uid->internal) return true;
    }
    RealSleepUs(10000);
  }
  fprintf(stderr, "gpusim: rank %d timed out waiting for %s; using a private unique id\n", rank, path.c_str());
  RandomId(uid);
  return true;
}

constexpr int kNone = INT_MIN;

enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, Send, Recv };
const char* kCollNames[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                            "reduce",    "alltoall",  "send",          "recv"};

struct CollArgs {
  Coll kind;
  const void* send;
  const void* recv;
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  bool reduces;
  int root;  // kNone: no root
  int peer;  // kNone: no peer
};

ncclResult_t Issue(ncclComm* comm, const CollArgs& a, cudaStream_t stream) {
  StreamRef s;
  int dev;
  unsigned long long seq = 0;
  size_t bytes;
  bool oneCopy = false;
  {
    std::shared_lock<std::shared_mutex> lock(g_mu);
    if (!comm || !Comms().count(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
    if (comm->finalized) return Fail(ncclInvalidUsage, "communicator is finalized");
    if ((int)a.dtype < 0 || a.dtype >= ncclNumTypes) return Fail(ncclInvalidArgument, "invalid data type");
    if (a.reduces && ((int)a.op < 0 || (a.op >= ncclNumOps && !comm->redOps.count((int)a.op))))
      return Fail(ncclInvalidArgument, "invalid reduction operation");
    if (a.root != kNone && (a.root < 0 || a.root >= comm->nranks)) return Fail(ncclInvalidArgument, "invalid root");
    if (a.peer != kNone && (a.peer < 0 || a.peer >= comm->nranks)) return Fail(ncclInvalidArgument, "invalid peer");
    if (a.count > 0 && ((a.kind != Coll::Recv && !a.send) || (a.kind != Coll::Send && !a.recv)))
      return Fail(ncclInvalidArgument, "null buffer");
    if (!ResolveStream(stream, &s)) return Fail(ncclUnhandledCudaError, "invalid stream");
    dev = comm->device;
    size_t elt = DtypeSize(a.dtype);
    switch (a.kind) {
      // bytes: the per-rank send buffer, except AllGather's receive buffer (nccl-tests' size).
      case Coll::AllGather:
      case Coll::ReduceScatter:
      case Coll::AllToAll: bytes = a.count * elt * (size_t)comm->nranks; break;
      default: bytes = a.count * elt; break;
    }
    if (a.kind != Coll::Send && a.kind != Coll::Recv) seq = comm->seq.fetch_add(1, std::memory_order_relaxed);
    // A peer held by this process (ncclCommInitAll, nccl-tests -g N): NCCL connects the two
    // ranks in its direct mode and the sender writes into the receiver's buffer in one copy.
    // An AllToAll is marked so when the process holds every rank of the communicator.
    if (a.peer != kNone && a.peer != comm->rank) {
      for (const ncclComm* c : Comms())
        if (c != comm && !c->finalized && c->rank == a.peer && std::strcmp(c->id, comm->id) == 0) {
          oneCopy = true;
          break;
        }
    } else if (a.kind == Coll::AllToAll && comm->nranks > 1) {
      int held = 0;
      for (const ncclComm* c : Comms())
        if (!c->finalized && std::strcmp(c->id, comm->id) == 0) ++held;
      oneCopy = held == comm->nranks;
    }
  }
  if (!Recording()) return ncclSuccess;
  Line l(dev, "coll");
  l.Str("coll", kCollNames[(int)a.kind]).Str("comm", comm->id);
  if (a.kind != Coll::Send && a.kind != Coll::Recv) l.U64("seq", seq);
  l.U64("count", a.count).Str("dtype", DtypeName(a.dtype)).U64("bytes", bytes);
  if (a.root != kNone) l.Int("root", a.root);
  if (a.peer != kNone) l.Int("peer", a.peer);
  if (a.reduces) l.Str("redop", OpName(a.op));
  if (t_group) l.U64("group", t_group);
  if (oneCopy) l.U64("flags", 1);  // gpusim::kCollOneCopy
  if (!t_group) ChargeApi(ApiCost::NcclLaunch);  // an ungrouped call launches its kernel at once
  l.Int("stream", s.id).Commit();
  if (t_group && dev >= 0 && dev < 64) t_groupDevices |= 1ull << dev;
  if (t_group && std::find(t_groupComms.begin(), t_groupComms.end(), std::make_pair((const void*)comm, dev)) ==
                     t_groupComms.end())
    t_groupComms.emplace_back(comm, dev);
  if (DeviceUnavailable(dev)) return Fail(ncclInvalidUsage, "the GPU belongs to another process of the job");
  if (LiveLost()) return Fail(ncclSystemError, "lost the simulator (gpusim run)");
  return ncclSuccess;
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  GPUSIM_API(Call);
  if (!version) return Fail(ncclInvalidArgument, "null version");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  GPUSIM_API(Call);
  if (!uniqueId) return Fail(ncclInvalidArgument, "null unique id");
  if (!SharedId(uniqueId)) RandomId(uniqueId);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config) {
  GPUSIM_API(Call);
  if (!comm) return Fail(ncclInvalidArgument, "null comm pointer");
  if (nranks < 1) return Fail(ncclInvalidArgument, "invalid nranks");
  if (rank < 0 || rank >= nranks) return Fail(ncclInvalidArgument, "invalid rank");
  if (config && config->magic != kConfigMagic)
    return Fail(ncclInvalidArgument, "config not initialised with NCCL_CONFIG_INITIALIZER");
  int dev;
  cudaGetDevice(&dev);
  // Two processes passing the same rank (a launcher's RANK not read, say) would make one rank
  // of two programs: refuse it as NCCL refuses inconsistent ranks.
  char id[17];
  HashId(commId, id);
  const std::string holder = ClaimCommRank(id, rank);
  if (!holder.empty()) {
    fprintf(stderr,
            "gpusim: ncclCommInitRank: rank %d of communicator %s (%d ranks) is already held by %s; every "
            "process must pass its own rank (e.g. RANK / OMPI_COMM_WORLD_RANK from the launcher)\n",
            rank, id, nranks, holder.c_str());
    return Fail(ncclInvalidUsage, "this rank of the communicator is already held by another process");
  }
  // Initialisation needs no rendezvous here, so it is complete on return even inside a group
  // or with config->blocking = 0 (ncclCommGetAsyncError then reports ncclSuccess).
  *comm = NewComm(commId, nranks, rank, dev);
  // Live mode: init returns once every rank has joined (inside a group: at ncclGroupEnd).
  if (LiveMode() && t_groupDepth == 0) return FinishInits();
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  GPUSIM_API(Call);
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  GPUSIM_API(Call);
  if (!comms || ndev < 1) return Fail(ncclInvalidArgument, "invalid arguments");
  int count = 0;
  cudaGetDeviceCount(&count);
  for (int i = 0; i < ndev; ++i) {
    int d = devlist ? devlist[i] : i;
    if (d < 0 || d >= count) return Fail(ncclInvalidArgument, "invalid device in devlist");
  }
  ncclUniqueId uid;
  RandomId(&uid);
  for (int i = 0; i < ndev; ++i) comms[i] = NewComm(uid, ndev, i, devlist ? devlist[i] : i);
  if (LiveMode() && t_groupDepth == 0) return FinishInits();
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  GPUSIM_API(Call);
  std::unique_lock<std::shared_mutex> lock(g_mu);
  if (!comm || !Comms().count(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  comm->finalized = true;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  GPUSIM_API(Call);
  if (!comm) return ncclSuccess;  // NCCL accepts a null communicator here
  std::unique_lock<std::shared_mutex> lock(g_mu);
  if (!Comms().erase(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  GPUSIM_API(Call);
  return ncclCommDestroy(comm);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config) {
  GPUSIM_API(Call);
  // Several ids only spread NCCL's bootstrap load; the first one names the communicator.
  if (nId < 1 || !commIds) return Fail(ncclInvalidArgument, "no unique ids");
  return ncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
}

static ncclResult_t Unsupported(const char* what) {
  WarnOnce(what);
  return Fail(ncclInvalidUsage, what);
}

ncclResult_t ncclCommShrink(ncclComm_t, int*, int, ncclComm_t* newcomm, ncclConfig_t*, int) {
  GPUSIM_API(Call);
  if (newcomm) *newcomm = nullptr;
  return Unsupported("ncclCommShrink is not supported (returns ncclInvalidUsage)");
}

ncclResult_t ncclCommRevoke(ncclComm_t, int) {
  GPUSIM_API(Call);
  return Unsupported("ncclCommRevoke is not supported (returns ncclInvalidUsage)");
}

ncclResult_t ncclGather(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  GPUSIM_API(Call);
  return Unsupported("ncclGather is not supported: the trace format has no gather (returns ncclInvalidUsage)");
}

ncclResult_t ncclScatter(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  GPUSIM_API(Call);
  return Unsupported("ncclScatter is not supported: the trace format has no scatter (returns ncclInvalidUsage)");
}

ncclResult_t ncclCommWindowRegister(ncclComm_t, void*, size_t, ncclWindow_t* win, int) {
  GPUSIM_API(Call);
  if (win) *win = nullptr;
  return Unsupported(
      "ncclCommWindowRegister is not supported: symmetric windows are not emulated (returns ncclInvalidUsage)");
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t, ncclWindow_t) {
  GPUSIM_API(Call);
  return Unsupported("ncclCommWindowDeregister is not supported (returns ncclInvalidUsage)");
}

// The device API and the group simulator: exported so programs load,
// not emulated. Arguments are ignored, so these are defined without parameters.
#define GPUSIM_NCCL_STUB(fn) \
  ncclResult_t fn() {          \
    GPUSIM_API(Call);          \
    return Unsupported(#fn " is not supported (returns ncclInvalidUsage)"); \
  }
GPUSIM_NCCL_STUB(ncclGroupSimulateEnd)
GPUSIM_NCCL_STUB(ncclDevCommCreate)
GPUSIM_NCCL_STUB(ncclDevCommDestroy)
GPUSIM_NCCL_STUB(ncclGinBarrierCreateRequirement)
GPUSIM_NCCL_STUB(ncclLsaBarrierCreateRequirement)
GPUSIM_NCCL_STUB(ncclLLA2ACreateRequirement)
#undef GPUSIM_NCCL_STUB

ncclResult_t ncclCommSplit(ncclComm_t comm, int, int, ncclComm_t* newcomm, ncclConfig_t*) {
  GPUSIM_API(Call);
  // The new rank and size depend on every rank's color and key: that needs the cross-process
  // exchange the shim does not have yet (live mode).
  if (!Live(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  if (newcomm) *newcomm = nullptr;
  return Unsupported("ncclCommSplit is not supported (returns ncclInvalidUsage)");
}

const char* ncclGetErrorString(ncclResult_t result) {
  GPUSIM_API(Call);
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) {
  GPUSIM_API(Call);
  return t_lastError;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  GPUSIM_API(Call);
  if (!asyncError) return Fail(ncclInvalidArgument, "null result pointer");
  if (!Live(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  *asyncError = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  GPUSIM_API(Call);
  if (!count) return Fail(ncclInvalidArgument, "null count");
  if (!Live(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  GPUSIM_API(Call);
  if (!device) return Fail(ncclInvalidArgument, "null device");
  if (!Live(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  GPUSIM_API(Call);
  if (!rank) return Fail(ncclInvalidArgument, "null rank");
  if (!Live(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t, void** handle) {
  GPUSIM_API(Call);
  if (!Live(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  if (!handle) return Fail(ncclInvalidArgument, "null handle");
  *handle = buff;
  return ncclSuccess;
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void*) {
  GPUSIM_API(Call);
  return Live(comm) ? ncclSuccess : Fail(ncclInvalidArgument, "invalid communicator");
}

ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  GPUSIM_API(Malloc);
  if (!ptr) return Fail(ncclInvalidArgument, "null pointer");
  int dev;
  cudaGetDevice(&dev);
  cudaError_t e = DeviceMalloc(ptr, size, dev, true);
  return e == cudaSuccess ? ncclSuccess : Fail(ncclUnhandledCudaError, "device allocation failed");
}

ncclResult_t ncclMemFree(void* ptr) {
  GPUSIM_API(Free);
  return DeviceFree(ptr, true) == cudaSuccess ? ncclSuccess : Fail(ncclInvalidArgument, "not an NCCL allocation");
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  GPUSIM_API(Call);
  if (!op || !scalar) return Fail(ncclInvalidArgument, "null argument");
  if ((int)datatype < 0 || datatype >= ncclNumTypes) return Fail(ncclInvalidArgument, "invalid data type");
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
    return Fail(ncclInvalidArgument, "invalid scalar residence");
  std::unique_lock<std::shared_mutex> lock(g_mu);
  if (!comm || !Comms().count(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  int id = comm->nextRedOp++;
  comm->redOps.insert(id);
  *op = (ncclRedOp_t)id;
  return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  GPUSIM_API(Call);
  std::unique_lock<std::shared_mutex> lock(g_mu);
  if (!comm || !Comms().count(comm)) return Fail(ncclInvalidArgument, "invalid communicator");
  if (!comm->redOps.erase((int)op)) return Fail(ncclInvalidArgument, "not a user-created reduction operation");
  return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
  GPUSIM_API(Call);
  if (t_groupDepth++ == 0) t_group = g_nextGroup.fetch_add(1) + 1;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  GPUSIM_API(Call);
  if (t_groupDepth == 0) return Fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  // Everything issued inside the group, communicator inits included, is already complete.
  if (--t_groupDepth == 0) {
    t_group = 0;
    // NCCL launches one kernel per communicator of the group, one after the other, device by
    // device.
    for (int d = 0; d < 64; ++d) {
      if (!(t_groupDevices & (1ull << d))) continue;
      ChargeApi(ApiCost::NcclLaunch,
                (double)std::count_if(t_groupComms.begin(), t_groupComms.end(),
                                      [d](const std::pair<const void*, int>& c) { return c.second == d; }));
      // Live: say where the group ends, so the simulator launches it without waiting for the
      // program's next call on that device (which may come only after other answers).
      if (LiveMode()) Line(d, "host").Str("name", "ncclGroupEnd").Commit();
    }
    t_groupDevices = 0;
    t_groupComms.clear();
    if (LiveMode()) return FinishInits();
  }
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  return Issue(comm, {Coll::AllReduce, sendbuff, recvbuff, count, datatype, op, true, kNone, kNone}, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  return Issue(comm, {Coll::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, true, kNone, kNone}, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  return Issue(comm, {Coll::AllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, false, kNone, kNone}, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  // Only the root reads sendbuff; other ranks may pass null.
  const void* send = sendbuff ? sendbuff : recvbuff;
  return Issue(comm, {Coll::Broadcast, send, recvbuff, count, datatype, ncclSum, false, root, kNone}, stream);
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  // Only the root writes recvbuff; other ranks may pass null.
  const void* recv = recvbuff ? recvbuff : sendbuff;
  return Issue(comm, {Coll::Reduce, sendbuff, recv, count, datatype, op, true, root, kNone}, stream);
}

ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  return Issue(comm, {Coll::AllToAll, sendbuff, recvbuff, count, datatype, ncclSum, false, kNone, kNone}, stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  return Issue(comm, {Coll::Send, sendbuff, nullptr, count, datatype, ncclSum, false, kNone, peer}, stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  GPUSIM_API(NcclEnqueue);
  return Issue(comm, {Coll::Recv, nullptr, recvbuff, count, datatype, ncclSum, false, kNone, peer}, stream);
}

}  // extern "C"
