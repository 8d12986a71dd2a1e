// libgpusim-clock.so: LD_PRELOADed by `gpusim run` so that the program's clock reads
// (clock_gettime, gettimeofday, time; std::chrono and Python's time module go through them)
// return the rank's virtual time kept by libcudart.so.13 (vclock.cc). Built without a version
// script: an unversioned definition here satisfies programs' versioned references to libc's.
#include <dlfcn.h>
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

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec* ts) {
  return Target()(id, ts);
}

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
