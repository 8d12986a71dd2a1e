// Trace recorder: one buffered JSON-lines log per device of this process, written as
// rank-R.jsonl under GPUSIM_RECORD_DIR (format: doc/op-ir.md), plus a manifest merged across
// the processes of a job.
//
// Which rank a device's ops belong to is learnt lazily: the rank of the first communicator
// initialised on that device (BindRank), else GPUSIM_RANK, else 0 (plus the device index when
// the process drives several devices without NCCL). Until then lines stay in memory.
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cudart-internal.h"

namespace gpusim {
namespace {

constexpr size_t kFlushBytes = 1 << 20;      // write out once a bound log holds this much
constexpr size_t kUnboundLimit = 64u << 20;  // bind to the fallback rank past this size

struct ThreadSlot {
  int index;
  uint64_t lastNs;
};

struct RankLog {
  std::mutex mu;
  int device = 0;
  std::atomic<int> rank{-1};          // -1 until bound
  std::atomic<bool> excluded{false};  // fallback rank collided: written aside, not in the manifest
  std::atomic<bool> taken{false};     // another process of the job writes its rank: ops dropped
  std::string buf;
  // Line::Rank fields in buf: (offset where the number goes, device whose rank it is), in
  // order; filled in by WriteOut.
  std::vector<std::pair<size_t, int>> rankRefs;
  int fd = -1;
  uint64_t ops = 0;
  std::unordered_map<uint64_t, ThreadSlot*> threads;  // thread number -> slot
};

struct Recorder {
  std::string dir;
  int envRank = -1;
  bool rankFromEnv = false;  // GPUSIM_RANK_SOURCE=env: communicators do not decide the rank
  int worldSize = 0;
  std::mutex mu;  // creation of logs, binding, manifest
  std::atomic<RankLog*> logs[kMaxDevices] = {};
};

// Leaked on purpose: lines may still be recorded from other libraries' exit handlers.
Recorder& R() {
  static Recorder* r = new Recorder;
  return *r;
}

bool g_on = false;
bool g_live = false;  // gpusim run: lines go to the simulator, not to files
std::atomic<uint64_t> g_threads{0};
thread_local uint64_t t_id = 0;  // process-unique thread number (TLS addresses get reused)
thread_local ThreadSlot* t_slot[kMaxDevices];
thread_local std::string t_body;  // Line's scratch buffer

void AppendU64(std::string& s, unsigned long long v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  s.append(tmp, r.ptr);
}

// Nanoseconds as microseconds with three decimals, without going through floating point.
void AppendUs(std::string& s, uint64_t ns) {
  AppendU64(s, ns / 1000);
  unsigned frac = (unsigned)(ns % 1000);
  char tmp[4] = {'.', char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10)};
  s.append(tmp, 4);
}

RankLog* GetLog(int device) {
  Recorder& r = R();
  if (device < 0 || device >= kMaxDevices) device = 0;
  RankLog* log = r.logs[device].load(std::memory_order_acquire);
  if (log) return log;
  std::lock_guard<std::mutex> lock(r.mu);
  log = r.logs[device].load(std::memory_order_relaxed);
  if (!log) {
    log = new RankLog;
    log->device = device;
    // Launched by gpusim record/run: the GPU decides the rank (server x GPUs per server + GPU).
    log->rank = GlobalRank(device);
    log->buf.reserve(kFlushBytes + (64 << 10));
    r.logs[device].store(log, std::memory_order_release);
  }
  return log;
}

int CountLogs() {
  int n = 0;
  for (auto& l : R().logs)
    if (l.load()) ++n;
  return n;
}

bool RankTaken(int rank, const RankLog* except) {
  for (auto& l : R().logs) {
    RankLog* o = l.load();
    if (o && o != except && o->rank == rank) return true;
  }
  return false;
}

// Caller holds log->mu (other logs' ranks are read racily; they only ever go from -1 to set).
void BindFallback(RankLog* log) {
  if (log->rank >= 0) return;
  int base = R().envRank >= 0 ? R().envRank : 0;
  int rank = CountLogs() > 1 ? base + log->device : base;
  if (RankTaken(rank, log)) {
    log->excluded = true;
    fprintf(stderr, "gpusim: ops on device %d have no rank of their own; written to rank-%d.dev-%d.jsonl\n",
            log->device, rank, log->device);
  }
  log->rank = rank;
}

// The rank another device's lines are written under: -1 while it has none, and for a device
// written aside (its rank number belongs to another log).
int RankOfDevice(int device) {
  RankLog* o = R().logs[device].load();
  if (!o) return -1;
  int rank = o->rank;  // read before `excluded`: BindFallback sets it last
  return rank >= 0 && !o->excluded ? rank : -1;
}

// Every Line::Rank field of the buffer can be filled in (its device has a rank). Caller holds
// log->mu.
bool RankRefsKnown(const RankLog* log) {
  for (const auto& ref : log->rankRefs) {
    RankLog* o = R().logs[ref.second].load();
    if (!o || o->rank < 0) return false;
  }
  return true;
}

std::string FileName(const RankLog* log) {
  std::string f = "rank-" + std::to_string(log->rank);
  if (log->excluded) f += ".dev-" + std::to_string(log->device);
  return f + ".jsonl";
}

// Caller holds log->mu; log is bound.
void WriteOut(RankLog* log) {
  if (log->fd < 0 && !log->excluded && !ClaimDevice(log->device, log->rank)) {
    // Another process of the job writes this rank: two processes on one rank would interleave
    // one file. Its ops are dropped (the program sees cudaErrorDevicesUnavailable); the
    // process's other devices go on being recorded.
    log->taken = true;
    log->buf.clear();
    log->rankRefs.clear();
    return;
  }
  if (log->fd < 0) {
    std::string path = R().dir + "/" + FileName(log);
    log->fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log->fd < 0) {
      fprintf(stderr, "gpusim: cannot write %s: %s\n", path.c_str(), strerror(errno));
      g_on = false;
      log->buf.clear();
      log->rankRefs.clear();
      return;
    }
  }
  std::string filled;
  if (!log->rankRefs.empty()) {
    // Splice the ranks of the devices named by Line::Rank into the lines.
    filled.reserve(log->buf.size() + 12 * log->rankRefs.size());
    size_t from = 0;
    bool unknown = false;
    for (const auto& ref : log->rankRefs) {
      filled.append(log->buf, from, ref.first - from);
      int rank = RankOfDevice(ref.second);
      unknown |= rank < 0;
      filled += std::to_string(rank);
      from = ref.first;
    }
    filled.append(log->buf, from, std::string::npos);
    log->rankRefs.clear();
    if (unknown) WarnOnce("a peer copy names a device without a rank of its own; written as rank -1 (costed locally)");
  }
  const std::string& out = filled.empty() ? log->buf : filled;
  const char* p = out.data();
  size_t left = out.size();
  while (left > 0) {
    ssize_t n = write(log->fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "gpusim: trace write failed: %s\n", strerror(errno));
      break;
    }
    p += n;
    left -= (size_t)n;
  }
  log->buf.clear();
}

std::string ProgramName() {
  std::string name;
  FILE* f = fopen("/proc/self/cmdline", "r");
  if (f) {
    int c;
    while ((c = fgetc(f)) != EOF && c != 0) name += (char)c;
    fclose(f);
  }
  return name;
}

// Merges this process's ranks into DIR/.ranks under an exclusive lock and rewrites
// manifest.json from it, so concurrent processes of one job never lose each other's entries.
void WriteManifest(const std::vector<std::pair<int, std::string>>& mine) {
  Recorder& r = R();
  std::string lockPath = r.dir + "/.manifest.lock";
  int lfd = open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lfd < 0) return;
  flock(lfd, LOCK_EX);

  std::map<int, std::string> ranks;  // rank -> file
  std::string ranksPath = r.dir + "/.ranks";
  if (FILE* f = fopen(ranksPath.c_str(), "r")) {
    int rank;
    char file[256];
    while (fscanf(f, "%d %255s", &rank, file) == 2) ranks[rank] = file;
    fclose(f);
  }
  for (const auto& m : mine) ranks[m.first] = m.second;
  if (FILE* f = fopen(ranksPath.c_str(), "w")) {
    for (const auto& kv : ranks) fprintf(f, "%d %s\n", kv.first, kv.second.c_str());
    fclose(f);
  }

  std::string devName, prog, tmp;
  JsonEscape(Gpu().name, devName);
  JsonEscape(ProgramName().c_str(), prog);
  std::string m = "{\"format\":\"gpusim-trace\",\"version\":1,\"source\":\"shim\",\"ranks\":[";
  bool first = true;
  for (const auto& kv : ranks) {
    if (!first) m += ",";
    first = false;
    m += "{\"rank\":" + std::to_string(kv.first) + ",\"file\":\"" + kv.second + "\",\"device\":\"" + devName + "\"}";
  }
  m += "],\"metadata\":{\"program\":\"" + prog + "\",\"gpu\":\"" + Gpu().key + "\",\"mode\":\"emulation\"";
  if (r.worldSize > 0) m += ",\"world_size\":\"" + std::to_string(r.worldSize) + "\"";
  m += "}}\n";

  tmp = r.dir + "/.manifest.json." + std::to_string(getpid());
  if (FILE* f = fopen(tmp.c_str(), "w")) {
    fwrite(m.data(), 1, m.size(), f);
    fclose(f);
    rename(tmp.c_str(), (r.dir + "/manifest.json").c_str());
  }
  flock(lfd, LOCK_UN);
  close(lfd);
}

void AtExit() { FlushTrace(); }

// A forked child (data-loader workers, subprocess helpers) is not a rank: stop recording there.
void AtForkChild() {
  g_on = false;
  for (auto& l : R().logs) {
    RankLog* log = l.load();
    if (!log) continue;
    new (&log->mu) std::mutex;  // the parent may have held it while forking
    log->buf.clear();
    log->rankRefs.clear();
    if (log->fd >= 0) close(log->fd);
    log->fd = -1;
  }
}

__attribute__((constructor)) void InitRecorder() {
  Recorder& r = R();
  r.envRank = JobProcess();
  if (const char* ws = getenv("GPUSIM_WORLD_SIZE")) r.worldSize = atoi(ws);
  if (const char* src = getenv("GPUSIM_RANK_SOURCE")) r.rankFromEnv = strcmp(src, "env") == 0 && r.envRank >= 0;
  if (LiveMode()) {
    g_on = g_live = true;
    pthread_atfork(nullptr, nullptr, AtForkChild);
    return;
  }
  const char* dir = getenv("GPUSIM_RECORD_DIR");
  if (!dir || !*dir) return;
  mkdir(dir, 0755);  // the launcher creates it; a plain run may not have
  // Absolute, so a program that changes directory still writes where it was asked to.
  char resolved[PATH_MAX];
  r.dir = realpath(dir, resolved) ? resolved : dir;
  g_on = true;
  atexit(AtExit);
  pthread_atfork(nullptr, nullptr, AtForkChild);
}

__attribute__((destructor)) void FiniRecorder() { FlushTrace(); }

}  // namespace

bool Recording() { return g_on; }

const std::string& RecordDir() { return R().dir; }

void JsonEscape(const char* s, std::string& out) {
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c < 0x20) {
      char tmp[8];
      snprintf(tmp, sizeof tmp, "\\u%04x", c);
      out += tmp;
    } else {
      out += (char)c;
    }
  }
}

Line::Line(int device, const char* op) : device_(device), op_(op), body_(&t_body), len_(0), nranks_(0) {
  if (body_->size() < 1024) body_->resize(1024);
}

char* Line::Reserve(size_t n) {
  if (len_ + n > body_->size()) body_->resize(2 * (len_ + n));
  return &(*body_)[len_];
}

void Line::Put(const char* s, size_t n) {
  memcpy(Reserve(n), s, n);
  len_ += n;
}

void Line::Key(const char* key) {
  size_t k = strlen(key);
  char* p = Reserve(k + 4);
  p[0] = ',';
  p[1] = '"';
  memcpy(p + 2, key, k);
  p[k + 2] = '"';
  p[k + 3] = ':';
  len_ += k + 4;
}

Line& Line::Str(const char* key, const char* value) {
  Key(key);
  Put("\"", 1);
  // Trace strings are names and ids: copy runs of plain characters, escape the rest.
  const char* run = value;
  for (const char* c = value;; ++c) {
    unsigned char ch = (unsigned char)*c;
    if (ch != 0 && ch >= 0x20 && ch != '"' && ch != '\\') continue;
    Put(run, (size_t)(c - run));
    if (ch == 0) break;
    char esc[8];
    int n = ch == '"' || ch == '\\' ? snprintf(esc, sizeof esc, "\\%c", ch) : snprintf(esc, sizeof esc, "\\u%04x", ch);
    Put(esc, (size_t)n);
    run = c + 1;
  }
  Put("\"", 1);
  return *this;
}

Line& Line::Int(const char* key, long long value) {
  Key(key);
  char* p = Reserve(24);
  len_ += (size_t)(std::to_chars(p, p + 24, value).ptr - p);
  return *this;
}

Line& Line::U64(const char* key, unsigned long long value) {
  Key(key);
  char* p = Reserve(24);
  len_ += (size_t)(std::to_chars(p, p + 24, value).ptr - p);
  return *this;
}

Line& Line::Num(const char* key, double value) {
  Key(key);
  char* p = Reserve(32);
  len_ += (size_t)(std::to_chars(p, p + 32, value).ptr - p);  // shortest round-trip form
  return *this;
}

Line& Line::Bool(const char* key, bool value) {
  Key(key);
  if (value)
    Put("true", 4);
  else
    Put("false", 5);
  return *this;
}

Line& Line::Dim(const char* key, unsigned x, unsigned y, unsigned z) {
  Key(key);
  char* p = Reserve(40);
  char* e = p + 40;
  *p++ = '[';
  p = std::to_chars(p, e, x).ptr;
  *p++ = ',';
  p = std::to_chars(p, e, y).ptr;
  *p++ = ',';
  p = std::to_chars(p, e, z).ptr;
  *p++ = ']';
  len_ = (size_t)(p - body_->data());
  return *this;
}

Line& Line::Raw(const char* fragment, size_t len) {
  Put(fragment, len);
  return *this;
}

// Trace rank of `device` in live mode: its GPU's rank in the cluster (gpusim run always says
// which server this process is on); a process started without one numbers its devices from
// its process number x devices.
static int LiveRankOf(int device) {
  const int global = GlobalRank(device);
  if (global >= 0) return global;
  return std::max(JobProcess(), 0) * DeviceCount() + device;
}

Line& Line::Rank(const char* key, int device) {
  if (device < 0 || device >= kMaxDevices) return Int(key, -1);
  if (g_live) return Int(key, LiveRankOf(device));
  if (nranks_ == 2) return Int(key, -1);
  Key(key);
  ranks_[nranks_++] = RankRef{len_, device};  // the number is inserted here when written out
  GetLog(device);  // the device becomes a rank of the trace even if it records nothing itself
  return *this;
}

// The calling thread's slot in a device's log (its host-thread index there). Caller holds
// log->mu. lastNs is the thread's virtual time at its latest op on the device: every slot starts
// at the job's origin (a thread's first op issues at its virtual time from the start).
static ThreadSlot* SlotFor(RankLog* log, int dev) {
  ThreadSlot* slot = t_slot[dev];
  if (!slot) {
    if (t_id == 0) t_id = g_threads.fetch_add(1) + 1;
    auto it = log->threads.find(t_id);
    if (it == log->threads.end()) {
      slot = new ThreadSlot{(int)log->threads.size(), 0};
      log->threads.emplace(t_id, slot);
    } else {
      slot = it->second;
    }
    t_slot[dev] = slot;
  }
  return slot;
}

void Line::Commit() {
  if (!g_on) return;
  if (g_live) {
    CommitLive(false);
    return;
  }
  int dev = device_ >= 0 && device_ < kMaxDevices ? device_ : 0;
  RankLog* log = GetLog(dev);
  if (log->taken || (GlobalRank(dev) >= 0 && !ClaimDevice(dev, GlobalRank(dev)))) return;
  const uint64_t v = VClockForOp();
  std::lock_guard<std::mutex> lock(log->mu);
  ThreadSlot* slot = SlotFor(log, dev);
  // The op issues this much host time after the thread's previous op on the device.
  uint64_t gap = v > slot->lastNs ? v - slot->lastNs : 0;
  slot->lastNs = v;

  std::string& b = log->buf;
  b += "{\"op\":\"";
  b += op_;
  b += "\",\"t\":";
  AppendU64(b, (unsigned)slot->index);
  b += ",\"cpu_us\":";
  AppendUs(b, gap);
  for (int i = 0; i < nranks_; ++i) log->rankRefs.emplace_back(b.size() + ranks_[i].pos, ranks_[i].device);
  b.append(body_->data(), len_);
  b += "}\n";
  ++log->ops;
  if (b.size() >= kFlushBytes) {
    if (log->rank < 0 && b.size() >= kUnboundLimit) BindFallback(log);
    // Lines naming a device whose rank is still unknown wait for it, up to the same limit.
    if (log->rank >= 0 && (RankRefsKnown(log) || b.size() >= kUnboundLimit)) WriteOut(log);
  }
}

uint64_t Line::CommitLive(bool wait) {
  int dev = device_ >= 0 && device_ < kMaxDevices ? device_ : 0;
  const int rank = LiveRankOf(dev);
  if (!ClaimDevice(dev, rank)) return 0;
  RankLog* log = GetLog(dev);
  const uint64_t v = VClockForOp();
  std::string line;
  {
    std::lock_guard<std::mutex> lock(log->mu);
    ThreadSlot* slot = SlotFor(log, dev);
    // The op issues v - lastNs after this device's previous op of this thread: the engine
    // replays exactly the virtual timeline the program saw.
    uint64_t gap = v > slot->lastNs ? v - slot->lastNs : 0;
    slot->lastNs = v;
    line.reserve(len_ + 64);
    line += "{\"op\":\"";
    line += op_;
    line += "\",\"t\":";
    AppendU64(line, (unsigned)slot->index);
    line += ",\"cpu_us\":";
    AppendUs(line, gap);
    line.append(body_->data(), len_);
    line += "}";
    ++log->ops;
  }
  return LiveSend(rank, line, wait);
}

uint64_t Line::CommitDeferred() {
  if (!g_on) return 0;
  if (!g_live) {
    Commit();
    return 0;
  }
  return CommitLive(true);
}

bool Line::FinishWait(int device, uint64_t seq, LiveAnswer* out) {
  if (!g_live) {
    out->ok = false;
    return false;
  }
  if (!LiveWait(seq, out)) return false;
  int dev = device >= 0 && device < kMaxDevices ? device : 0;
  VClockResume(out->timeNs);
  // This thread's next op on the device issues relative to the time the call returned.
  if (ThreadSlot* slot = t_slot[dev]) {
    std::lock_guard<std::mutex> lock(GetLog(dev)->mu);
    slot->lastNs = out->timeNs;
  }
  return true;
}

bool Line::CommitAndWait(LiveAnswer* out) {
  int dev = device_;
  uint64_t seq = CommitDeferred();
  return FinishWait(dev, seq, out);
}

void BindRank(int device, int rank, int worldSize) {
  if (device < 0 || device >= kMaxDevices) return;
  Recorder& r = R();
  RankLog* log = GetLog(device);
  std::lock_guard<std::mutex> rlock(r.mu);
  std::lock_guard<std::mutex> lock(log->mu);
  if (log->rank < 0 && !r.rankFromEnv && !RankTaken(rank, log)) log->rank = rank;  // (set already when launched)
  if (worldSize > r.worldSize) r.worldSize = worldSize;
}

void FlushTrace() {
  Recorder& r = R();
  if (!g_on || g_live) return;
  std::lock_guard<std::mutex> rlock(r.mu);
  std::vector<std::pair<int, std::string>> mine;
  // Every log gets its rank before any is written: lines may name other devices' ranks.
  for (auto& l : r.logs) {
    RankLog* log = l.load();
    if (!log) continue;
    std::lock_guard<std::mutex> lock(log->mu);
    BindFallback(log);
  }
  for (auto& l : r.logs) {
    RankLog* log = l.load();
    if (!log) continue;
    std::lock_guard<std::mutex> lock(log->mu);
    WriteOut(log);
    if (!log->excluded) mine.emplace_back(log->rank, FileName(log));
  }
  // A rank that issued no device op still owes the job its (empty) file.
  if (mine.empty() && r.envRank >= 0 && ServerIndex() < 0) {
    std::string name = "rank-" + std::to_string(r.envRank) + ".jsonl";
    int fd = open((r.dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    mine.emplace_back(r.envRank, name);
  }
  WriteManifest(mine);
}

}  // namespace gpusim
