// Virtual clocks for live mode (gpusim run).
//
// Each program thread has a virtual time V (ns since the job's start, which is simulated
// t = 0). Host time advances it — the thread's CPU time between calls (measured), or a fixed
// cost per API call and per clock read (GPUSIM_HOST_TIME=fixed:US) — and a blocking call
// answered by the simulator sets it to the simulated time the call returned. The clock_gettime
// family (interposed by libgpusim-clock.so, which calls gpusim_vclock_gettime) reads
// epoch + V, so the program's own timers measure simulated time. CPU-time clocks stay real.
// Outside live mode everything here passes through to the real clocks.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
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

struct ClockConfig {
  bool live = false;
  bool fixed = false;
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
  if (!sock || !*sock) return c;
  c.live = true;
  const char* ht = getenv("GPUSIM_HOST_TIME");
  if (ht && strncmp(ht, "fixed:", 6) == 0) {
    c.fixed = true;
    c.fixedNs = (uint64_t)(strtod(ht + 6, nullptr) * 1000.0 + 0.5);
  }
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

struct ThreadClock {
  bool init = false;
  uint64_t v = 0;
  uint64_t cpuLast = 0;
  uint64_t wallLast = 0;  // real monotonic time of the last tick or answer
};

// Real time a thread may spend off the CPU between two calls before it counts as having been
// blocked (in a join, a lock, a condition variable) rather than just descheduled.
constexpr uint64_t kBlockedNs = 2000000;
thread_local ThreadClock t_clock;

ThreadClock& Mine() {
  ThreadClock& c = t_clock;
  if (!c.init) {
    c.init = true;
    c.v = g_latest.load(std::memory_order_relaxed);
    // The main thread's start-up (loading, static constructors) is host time too.
    c.cpuLast = (pid_t)syscall(SYS_gettid) == getpid() ? 0 : ReadNs(CLOCK_THREAD_CPUTIME_ID);
    c.wallLast = ReadNs(CLOCK_MONOTONIC);
  }
  return c;
}

void Publish(uint64_t v) {
  uint64_t seen = g_latest.load(std::memory_order_relaxed);
  while (v > seen && !g_latest.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

bool LiveClock() { return Cfg().live; }

// The shim's own clock: always real, even while the program reads virtual time.
uint64_t NowNs() { return ReadNs(CLOCK_MONOTONIC); }

uint64_t VClockTick() {
  ThreadClock& c = Mine();
  const uint64_t cpu = ReadNs(CLOCK_THREAD_CPUTIME_ID);
  const uint64_t wall = ReadNs(CLOCK_MONOTONIC);
  const uint64_t cpuDelta = cpu > c.cpuLast ? cpu - c.cpuLast : 0;
  // A thread that was blocked outside CUDA (joining threads, waiting on a lock) was waiting for
  // another thread of the process: it goes on no earlier than the latest clock among them.
  if (wall > c.wallLast + cpuDelta + kBlockedNs) {
    const uint64_t latest = g_latest.load(std::memory_order_relaxed);
    if (latest > c.v) c.v = latest;
  }
  c.v += Cfg().fixed ? Cfg().fixedNs : cpuDelta;
  c.cpuLast = cpu;
  c.wallLast = wall;
  Publish(c.v);
  return c.v;
}

void VClockResume(uint64_t t) {
  ThreadClock& c = Mine();
  if (t > c.v) c.v = t;
  c.cpuLast = ReadNs(CLOCK_THREAD_CPUTIME_ID);
  c.wallLast = ReadNs(CLOCK_MONOTONIC);  // waiting for the answer is not being blocked
  Publish(c.v);
}

}  // namespace gpusim

extern "C" GPUSIM_EXPORT int gpusim_vclock_gettime(clockid_t id, struct timespec* ts) {
  using namespace gpusim;
  const ClockConfig& c = Cfg();
  uint64_t epoch;
  switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
      epoch = c.epochReal;
      break;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE:
      epoch = c.epochMono;
      break;
    case CLOCK_BOOTTIME:
      epoch = c.epochBoot;
      break;
    default:
      epoch = 0;  // CPU-time and other clocks stay real
  }
  if (!c.live || epoch == 0) return RealClock()(id, ts);
  if (!ts) return 0;
  uint64_t ns = epoch + VClockTick();
  ts->tv_sec = (time_t)(ns / 1000000000ull);
  ts->tv_nsec = (long)(ns % 1000000000ull);
  return 0;
}
