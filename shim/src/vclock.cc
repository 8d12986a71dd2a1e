// Virtual clocks: the host time of every program thread that calls the shim (live mode and
// recordings).
//
// Each thread has a virtual time V (ns since the job's start, which is simulated t = 0). At the
// entry of every intercepted call (ApiEnter; nested calls count once) V advances by
//  - measured: the thread's CPU time since the previous call returned (the program's own work,
//    robust to an oversubscribed machine) plus the call's host cost (host-cost.cc);
//  - api-only: the call's host cost only (runs do not depend on the machine);
//  - fixed:US: US per call (and per clock read).
// What the shim does inside the call (encoding, sockets, waiting, emulated memory) never
// advances V. A sleep of the program (nanosleep, usleep, ...) advances it by the time asked. A blocking call answered
// by the simulator sets V to the simulated time the call returned, plus the wake-up latency when it had to wait for the
// device. The clock_gettime family (interposed by libgpusim-clock.so, which calls gpusim_vclock_gettime) reads epoch +
// V, so the program's own timers measure simulated time. CPU-time clocks stay real.
//
// A thread blocked outside CUDA (joining other threads, waiting on a lock) was waiting for
// another thread of its process: it goes on no earlier than the latest clock among them. It
// counts as blocked when it slept (not just waited for a CPU: the kernel's run delay tells the
// two apart) for more than 2 ms between two calls.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cudart-internal.h"

namespace gpusim {
namespace {

using ClockFn = int (*)(clockid_t, struct timespec*);

int SyscallClock(clockid_t id, struct timespec* ts) { return (int)syscall(SYS_clock_gettime, id, ts); }

// The C library's clock_gettime: the next definition after ours (libgpusim-clock.so and this
// library both come before libc in a live run).
ClockFn RealClock() {
  static ClockFn fn = [] {
    ClockFn f = (ClockFn)dlsym(RTLD_NEXT, "clock_gettime");
    return f ? f : &SyscallClock;
  }();
  return fn;
}

enum class Mode { Measured, ApiOnly, Fixed };

struct ClockConfig {
  bool live = false;
  bool active = false;  // live mode or a recording: host time is kept
  Mode mode = Mode::Measured;
  uint64_t fixedNs = 0;
  uint64_t epochReal = 0, epochMono = 0, epochBoot = 0;
};

uint64_t EnvU64(const char* name) {
  const char* v = getenv(name);
  return v ? strtoull(v, nullptr, 10) : 0;
}

uint64_t ReadNs(clockid_t id) {
  timespec ts;
  RealClock()(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

ClockConfig LoadClockConfig() {
  ClockConfig c;
  const char* sock = getenv("GPUSIM_LIVE_SOCKET");
  const char* rec = getenv("GPUSIM_RECORD_DIR");
  c.live = sock && *sock;
  c.active = c.live || (rec && *rec);
  const char* ht = getenv("GPUSIM_HOST_TIME");
  if (ht && strncmp(ht, "fixed:", 6) == 0) {
    c.mode = Mode::Fixed;
    // At least 1 ns: a polling loop must advance time, or it would never end.
    double us = strtod(ht + 6, nullptr);
    c.fixedNs = us > 0 ? (uint64_t)(us * 1000.0 + 0.5) : 0;
    if (c.fixedNs == 0) c.fixedNs = 1;
  } else if (ht && strcmp(ht, "api-only") == 0) {
    c.mode = Mode::ApiOnly;
  } else if (ht && *ht && strcmp(ht, "measured") != 0) {
    fprintf(stderr, "gpusim: unknown GPUSIM_HOST_TIME=%s (measured, api-only or fixed:US); using measured\n", ht);
  }
  if (!c.live) return c;
  c.epochReal = EnvU64("GPUSIM_LIVE_EPOCH_REALTIME_NS");
  c.epochMono = EnvU64("GPUSIM_LIVE_EPOCH_MONOTONIC_NS");
  c.epochBoot = EnvU64("GPUSIM_LIVE_EPOCH_BOOTTIME_NS");
  if (!c.epochReal) c.epochReal = ReadNs(CLOCK_REALTIME);
  if (!c.epochMono) c.epochMono = ReadNs(CLOCK_MONOTONIC);
  if (!c.epochBoot) c.epochBoot = ReadNs(CLOCK_BOOTTIME);
  return c;
}

const ClockConfig& Cfg() {
  static const ClockConfig c = LoadClockConfig();
  return c;
}

std::atomic<uint64_t> g_latest{0};  // largest V of any thread: where a new thread starts

// What one thread-CPU-time reading itself adds between the two readings around the program's
// code (the system call's way out and in): the smallest difference of back-to-back readings.
// Subtracted from every measured interval, so the measurement does not leak into the program.
uint64_t CpuReadOverheadNs() {
  static const uint64_t ns = [] {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 64; ++i) {
      const uint64_t a = ReadNs(CLOCK_THREAD_CPUTIME_ID);
      const uint64_t b = ReadNs(CLOCK_THREAD_CPUTIME_ID);
      if (b >= a && b - a < best) best = b - a;
    }
    return best == UINT64_MAX ? 0 : best;
  }();
  return ns;
}

// Real time a thread may sleep between two calls before it counts as having been blocked (in a
// join, a lock, a condition variable) by another thread of its process.
constexpr uint64_t kBlockedNs = 2000000;

// The kernel's accounting of the calling thread: CPU time and time runnable but waiting for a
// CPU (/proc/.../schedstat; the file stays open for the thread's life).
struct SchedStat {
  int fd = -2;  // -2: not opened yet, -1: not available
  ~SchedStat() { Reset(); }
  // Closed, to be opened again on next use (a forked child's thread is another thread).
  void Reset() {
    if (fd >= 0) close(fd);
    fd = -2;
  }
  bool RunDelay(uint64_t* ns) {
    if (fd == -2) {
      char path[64];
      snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)syscall(SYS_gettid));
      fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    char buf[96];
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) return false;
    buf[n] = '\0';
    unsigned long long onCpu = 0, waiting = 0;
    if (sscanf(buf, "%llu %llu", &onCpu, &waiting) != 2) return false;
    *ns = waiting;
    return true;
  }
};

struct ThreadClock {
  bool init = false;
  int depth = 0;  // nesting of intercepted calls
  uint64_t v = 0;
  uint64_t cpuExit = 0;   // thread CPU time when the last call returned (measured)
  uint64_t wallExit = 0;  // real monotonic time when the last call returned
  // Since when the thread's sleeping is counted (blocked-thread rule).
  uint64_t refWall = 0, refCpu = 0, refRunDelay = 0;
  bool refRunDelayKnown = false;
  bool live = false;  // the process is a live rank (its connection may be lifted)
  // The thread has called CUDA: its clock is on the device's timeline. Only such threads publish
  // their clock for others to catch up to (a monitor thread sleeping in a loop would otherwise
  // drag every blocked CUDA thread toward wall-clock time).
  bool usesCuda = false;
  uint32_t seenLifts = 0;
  SchedStat sched;
};
thread_local ThreadClock t_clock;

// In a forked child the forking thread's schedstat file is still the parent's thread's.
void ResetAfterFork() { t_clock.sched.Reset(); }

// Measured before the program runs, so that a clock read in a signal handler never does the
// one-time setup.
__attribute__((constructor)) void PrepareClock() {
  if (Cfg().active && Cfg().mode == Mode::Measured) CpuReadOverheadNs();
}

void Publish(const ThreadClock& c) {
  if (!c.usesCuda) return;
  const uint64_t v = c.v;
  uint64_t seen = g_latest.load(std::memory_order_relaxed);
  while (v > seen && !g_latest.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
  }
}

void SetRef(ThreadClock& c, uint64_t wall, uint64_t cpu) {
  c.refWall = wall;
  c.refCpu = cpu;
  c.refRunDelayKnown = c.sched.RunDelay(&c.refRunDelay);
}

ThreadClock& Mine() {
  ThreadClock& c = t_clock;
  if (!c.init) {
    static const bool forkHandler = pthread_atfork(nullptr, nullptr, &ResetAfterFork) == 0;
    (void)forkHandler;
    c.init = true;
    c.live = Cfg().live;
    c.v = g_latest.load(std::memory_order_relaxed);
    // The main thread's start-up (loading, static constructors) is host time too.
    const bool main = (pid_t)syscall(SYS_gettid) == getpid();
    c.cpuExit = main ? 0 : ReadNs(CLOCK_THREAD_CPUTIME_ID);
    c.wallExit = main ? 0 : ReadNs(CLOCK_MONOTONIC);
    SetRef(c, c.wallExit ? c.wallExit : ReadNs(CLOCK_MONOTONIC), c.cpuExit);
  }
  return c;
}

// The thread slept (not merely waited for a CPU) for more than kBlockedNs since its last call
// returned: it waited for another thread of its process and resumes no earlier than their
// latest clock. The CPU time and run delay are counted since the reference (the last check),
// which can only make the sleep look shorter: never a catch-up that did not happen.
void CatchUpIfBlocked(ThreadClock& c, uint64_t wall, uint64_t cpu, bool cpuExitKnown) {
  uint64_t runDelay = 0;
  const bool have = c.sched.RunDelay(&runDelay);
  const bool known = have && c.refRunDelayKnown;
  const uint64_t wallSpan = wall > c.wallExit ? wall - c.wallExit : 0;
  const uint64_t cpuFrom = cpuExitKnown ? c.cpuExit : c.refCpu;
  const uint64_t cpuSpan = cpu > cpuFrom ? cpu - cpuFrom : 0;
  const uint64_t waitSpan = known && runDelay > c.refRunDelay ? runDelay - c.refRunDelay : 0;
  const uint64_t slept = wallSpan > cpuSpan + waitSpan ? wallSpan - cpuSpan - waitSpan : 0;
  if (slept > kBlockedNs) {
    const uint64_t latest = g_latest.load(std::memory_order_relaxed);
    if (latest > c.v) c.v = latest;
  }
  c.refWall = wall;
  c.refCpu = cpu;
  c.refRunDelay = runDelay;
  c.refRunDelayKnown = have;
}

}  // namespace

// The shim's own clock: always real, even while the program reads virtual time.
uint64_t NowNs() { return ReadNs(CLOCK_MONOTONIC); }

int RealSleep(clockid_t id, int flags, const struct timespec* req, struct timespec* rem) {
  long e = syscall(SYS_clock_nanosleep, id, flags, req, rem);
  return e < 0 ? (int)-e : (int)e;  // clock_nanosleep returns the error, not -1
}

void RealSleepUs(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (RealSleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
  }
}

// Enters an intercepted call; `cuda`: one of CUDA's or its libraries' (not a clock read or a
// sleep).
static void EnterScope(ApiCost cost, bool cuda) {
  if (!Cfg().active) return;  // nothing is kept: no per-thread state either
  ThreadClock& c = Mine();
  if (c.depth++ > 0) return;
  c.usesCuda = c.usesCuda || cuda;
  const Mode mode = Cfg().mode;
  const uint64_t wall = ReadNs(CLOCK_MONOTONIC);
  uint64_t cpu = 0;
  if (mode == Mode::Measured) {
    cpu = ReadNs(CLOCK_THREAD_CPUTIME_ID);
    // The program's own work since the last call. Never more than the real time that passed:
    // the kernel hands a thread CPU time it was owed (steal and interrupt time on a virtual
    // machine) in bursts, which would otherwise land on whatever interval comes next.
    uint64_t spent = cpu > c.cpuExit ? cpu - c.cpuExit : 0;
    const uint64_t wallSpan = wall > c.wallExit ? wall - c.wallExit : 0;
    if (spent > wallSpan) spent = wallSpan;
    // The simulation stopped waiting for this thread since its last call: it spun waiting for
    // other processes outside CUDA (an MPI barrier), which is no host work of its own.
    const uint32_t lifts = c.live ? LiveLifts() : 0;
    if (lifts != c.seenLifts) {
      c.seenLifts = lifts;
      spent = 0;
    }
    c.v += spent > CpuReadOverheadNs() ? spent - CpuReadOverheadNs() : 0;
  }
  if (wall > c.wallExit + kBlockedNs) {
    if (mode != Mode::Measured) cpu = ReadNs(CLOCK_THREAD_CPUTIME_ID);
    CatchUpIfBlocked(c, wall, cpu, mode == Mode::Measured);
  }
  c.v += mode == Mode::Fixed ? Cfg().fixedNs : ApiCostNs(cost);
  Publish(c);
}

void ApiEnter(ApiCost cost) { EnterScope(cost, cost != ApiCost::ClockRead); }

void ApiExit() {
  if (!Cfg().active) return;
  ThreadClock& c = t_clock;
  if (c.depth <= 0) return;  // (a scope opened before the clock existed cannot happen)
  if (--c.depth > 0) return;
  c.wallExit = ReadNs(CLOCK_MONOTONIC);
  if (Cfg().mode == Mode::Measured) c.cpuExit = ReadNs(CLOCK_THREAD_CPUTIME_ID);
}

void ChargeApi(ApiCost cost, double times) {
  if (!Cfg().active || Cfg().mode == Mode::Fixed || times <= 0) return;
  ThreadClock& c = Mine();
  c.v += (uint64_t)(ApiCostNs(cost) * times + 0.5);
  Publish(c);
}

ProgramCode::ProgramCode() : depth_(0) {
  // Leave the call as if it had returned, however deeply it was entered (a _ptsz wrapper around
  // cudaLaunchHostFunc is two scopes): what runs now is the program's.
  if (!Cfg().active) return;
  ThreadClock& c = Mine();
  if (c.depth >= 1) {
    depth_ = c.depth;
    c.depth = 1;
    ApiExit();
  }
}

ProgramCode::~ProgramCode() {
  if (depth_ == 0) return;
  ApiEnter(ApiCost::Call);  // back in the call
  t_clock.depth = depth_;
}

uint64_t VClockNow() { return Mine().v; }

uint64_t VClockForOp() {
  ThreadClock& c = Mine();
  if (c.depth == 0) {
    // An op recorded outside any intercepted call (a library's exit handler): count it as one.
    ApiEnter(ApiCost::Call);
    ApiExit();
  }
  return c.v;
}

void VClockResume(uint64_t t) {
  ThreadClock& c = Mine();
  if (t > c.v) c.v = t;
  // Waiting for the answer is not being blocked by another thread.
  SetRef(c, ReadNs(CLOCK_MONOTONIC), ReadNs(CLOCK_THREAD_CPUTIME_ID));
  Publish(c);
}

void WakeField(Line& l, int device) {
  if (!Cfg().active || Cfg().mode == Mode::Fixed) return;
  const uint64_t ns = ApiCostNs(BlockingSync(device) ? ApiCost::SyncWakeBlocking : ApiCost::SyncWake);
  if (ns > 0) l.Num("wake_us", ns / 1000.0);
}

}  // namespace gpusim

extern "C" GPUSIM_EXPORT int gpusim_vclock_gettime(clockid_t id, struct timespec* ts) {
  using namespace gpusim;
  const ClockConfig& c = Cfg();
  uint64_t epoch;
  switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE: epoch = c.epochReal; break;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE: epoch = c.epochMono; break;
    case CLOCK_BOOTTIME: epoch = c.epochBoot; break;
    default: return RealClock()(id, ts);  // CPU-time and other clocks stay real
  }
  if (!c.active) return RealClock()(id, ts);
  if (!c.live) {
    // Recording: the program's clocks read real time, but a read costs what it costs in a
    // live run, so the recording and the live run agree.
    ApiEnter(ApiCost::ClockRead);
    const int r = RealClock()(id, ts);
    ApiExit();
    return r;
  }
  if (!ts) return 0;
  ApiEnter(ApiCost::ClockRead);
  uint64_t ns = epoch + VClockNow();
  ApiExit();
  ts->tv_sec = (time_t)(ns / 1000000000ull);
  ts->tv_nsec = (long)(ns % 1000000000ull);
  return 0;
}

// A sleep of the program (interposed by libgpusim-clock.so): host time the program chose to
// spend, so its clock moves on by the time asked (an absolute deadline on a virtual clock is
// the time left until it); the thread also really sleeps that long, since other threads and
// processes may be what it waits for. The shim's own sleeps (inside a call) stay real only.
extern "C" GPUSIM_EXPORT int gpusim_vclock_sleep(clockid_t id, int flags, const struct timespec* req,
                                                 struct timespec* rem) {
  using namespace gpusim;
  const ClockConfig& c = Cfg();
  const bool wall = id == CLOCK_REALTIME || id == CLOCK_MONOTONIC || id == CLOCK_BOOTTIME;
  if (!c.active || !wall || !req || t_clock.depth > 0) return RealSleep(id, flags, req, rem);
  if (req->tv_nsec < 0 || req->tv_nsec >= 1000000000 || req->tv_sec < 0) return EINVAL;
  EnterScope(ApiCost::Call, false);  // the program's time up to here, and the call
  ThreadClock& t = Mine();
  uint64_t ns = (uint64_t)req->tv_sec * 1000000000ull + (uint64_t)req->tv_nsec;
  if (flags & TIMER_ABSTIME) {
    // A deadline on the virtual clock the program reads (live) or on the real one (recording).
    const uint64_t epoch = !c.live                 ? 0
                           : id == CLOCK_REALTIME  ? c.epochReal
                           : id == CLOCK_MONOTONIC ? c.epochMono
                                                   : c.epochBoot;
    const uint64_t now = c.live ? epoch + t.v : ReadNs(id);
    ns = ns > now ? ns - now : 0;
  }
  const uint64_t start = ReadNs(CLOCK_MONOTONIC);
  struct timespec rel = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  const int e = RealSleep(CLOCK_MONOTONIC, 0, &rel, nullptr);
  // Interrupted by a signal: only the part slept counts, and the rest is reported.
  const uint64_t slept = e == 0 ? ns : std::min<uint64_t>(ns, ReadNs(CLOCK_MONOTONIC) - start);
  if (e != 0 && rem && !(flags & TIMER_ABSTIME)) {
    rem->tv_sec = (time_t)((ns - slept) / 1000000000ull);
    rem->tv_nsec = (long)((ns - slept) % 1000000000ull);
  }
  t.v += slept;
  Publish(t);
  SetRef(t, ReadNs(CLOCK_MONOTONIC), ReadNs(CLOCK_THREAD_CPUTIME_ID));  // asked for, not blocked
  ApiExit();
  return e;
}
