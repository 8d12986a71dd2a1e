// libgpusim-clock.so: LD_PRELOADed by `gpusim run` so that the program's clock reads
// (clock_gettime, gettimeofday, time; std::chrono and Python's time module go through them)
// return the rank's virtual time kept by libcudart.so.13 (vclock.cc), and its sleeps
// (nanosleep, clock_nanosleep, usleep, sleep) take their time on that clock too. Built without a
// version script: an unversioned definition here satisfies programs' versioned references to
// libc's.
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

namespace {

using ClockFn = int (*)(clockid_t, struct timespec*);

int SyscallClock(clockid_t id, struct timespec* ts) { return (int)syscall(SYS_clock_gettime, id, ts); }

ClockFn Target() {
  static ClockFn fn = [] {
    // libcudart's virtual clock when it is loaded; the C library's clock otherwise.
    ClockFn f = (ClockFn)dlsym(RTLD_DEFAULT, "gpusim_vclock_gettime");
    if (!f) f = (ClockFn)dlsym(RTLD_NEXT, "clock_gettime");
    return f ? f : &SyscallClock;
  }();
  return fn;
}

using SleepFn = int (*)(clockid_t, int, const struct timespec*, struct timespec*);

int SyscallSleep(clockid_t id, int flags, const struct timespec* req, struct timespec* rem) {
  long r = syscall(SYS_clock_nanosleep, id, flags, req, rem);
  return r < 0 ? (int)-r : (int)r;  // clock_nanosleep returns the error, not -1
}

SleepFn SleepTarget() {
  static SleepFn fn = [] {
    SleepFn f = (SleepFn)dlsym(RTLD_DEFAULT, "gpusim_vclock_sleep");
    if (!f) f = (SleepFn)dlsym(RTLD_NEXT, "clock_nanosleep");
    return f ? f : &SyscallSleep;
  }();
  return fn;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int clock_nanosleep(clockid_t id, int flags, const struct timespec* req,
                                                           struct timespec* rem) {
  return SleepTarget()(id, flags, req, rem);
}

__attribute__((visibility("default"))) int nanosleep(const struct timespec* req, struct timespec* rem) {
  int e = SleepTarget()(CLOCK_REALTIME, 0, req, rem);
  if (e == 0) return 0;
  errno = e;
  return -1;
}

__attribute__((visibility("default"))) int usleep(useconds_t us) {
  struct timespec req = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  int e = SleepTarget()(CLOCK_REALTIME, 0, &req, nullptr);
  if (e == 0) return 0;
  errno = e;
  return -1;
}

__attribute__((visibility("default"))) unsigned int sleep(unsigned int seconds) {
  struct timespec req = {(time_t)seconds, 0}, rem = {0, 0};
  if (SleepTarget()(CLOCK_REALTIME, 0, &req, &rem) == 0) return 0;
  return (unsigned)rem.tv_sec + (rem.tv_nsec > 0 ? 1 : 0);
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec* ts) { return Target()(id, ts); }

__attribute__((visibility("default"))) int gettimeofday(struct timeval* tv, void* tz) {
  if (tz) {
    struct timezone* z = (struct timezone*)tz;
    z->tz_minuteswest = 0;
    z->tz_dsttime = 0;
  }
  struct timespec ts;
  int r = Target()(CLOCK_REALTIME, &ts);
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return r;
}

__attribute__((visibility("default"))) time_t time(time_t* out) {
  struct timespec ts;
  Target()(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}

}  // extern "C"
