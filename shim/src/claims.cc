// Ownership across the processes of one job: which process drives each GPU of the simulated
// cluster, and which process holds each rank of a communicator.
//
// A GPU's ops form one timeline (one rank of the trace), so the simulated GPUs behave like GPUs
// in CUDA's exclusive-process compute mode: the first process that issues work on one owns it,
// and another process that tries gets cudaErrorDevicesUnavailable (and a message naming both),
// instead of two processes silently writing one rank. A communicator rank claimed twice (eight
// processes that all pass rank 0 to ncclCommInitRank) is refused the same way.
//
// Claims are files created with O_EXCL in the job's directory (the live socket's directory or
// the recording directory), holding "<pid> <process> <what>"; without such a directory (a
// program run by hand) there is nothing to share and every claim succeeds. A claim stays after
// its process exits (a later process on the same GPU would write the same rank); only a claim
// left by an earlier run into the same directory is taken over. Claiming holds the directory's
// lock file, so no one reads a claim half written and two processes never take one over both.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cudart-internal.h"

namespace gpusim {
namespace {

// Leaked on purpose: claims are also made from exit handlers (the recorder's last write), after
// static destructors have run.
const std::string& ClaimDir() {
  static const std::string* dir = [] {
    auto* d = new std::string;
    if (const char* sock = getenv("GPUSIM_LIVE_SOCKET"); sock && *sock) {
      *d = sock;
      size_t slash = d->rfind('/');
      *d = slash == std::string::npos ? "." : d->substr(0, slash);
    } else {
      *d = RecordDir();  // absolute: the program may have changed directory since
    }
    return d;
  }();
  return *dir;
}

// The claim directory's lock, held while one claim is checked and made (blocking: claims are
// few and quick). Without it, the lock is skipped: claims are then only as safe as O_EXCL.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    fd_ = open((dir + "/.claims.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  ~DirLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

// Who this process is, for the other side's message.
std::string Me() {
  std::string me = "pid " + std::to_string(getpid());
  if (JobProcess() >= 0) me = "process " + std::to_string(JobProcess()) + ", " + me;
  return me;
}

// Creates `name` in the claim directory; "" when it is ours now (or there is no directory),
// else a description of the holder.
std::string Claim(const std::string& name, const std::string& what) {
  const std::string dir = ClaimDir();
  if (dir.empty()) return "";
  const std::string path = dir + "/" + name;
  const std::string mine = std::to_string(getpid()) + " " + Me() + " " + what + "\n";
  DirLock lock(dir);
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      bool ok = write(fd, mine.data(), mine.size()) == (ssize_t)mine.size();
      close(fd);
      (void)ok;
      return "";
    }
    if (errno != EEXIST) return "";  // cannot tell: do not refuse what may be fine
    char buf[256] = {};
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
    const pid_t holderPid = n > 0 ? (pid_t)atoi(buf) : 0;
    if (holderPid == getpid()) return "";  // ours (another thread of this process)
    // Left by an earlier run into the same directory (a program run by hand twice): the holder
    // is gone. Within a job gpusim started (fresh directory), a process that already exited
    // still owns what it used.
    if (!getenv("GPUSIM_JOB") && holderPid > 0 && kill(holderPid, 0) != 0 && errno == ESRCH) {
      unlink(path.c_str());
      continue;
    }
    const char* holder = n > 0 ? strchr(buf, ' ') : nullptr;
    return holder ? holder + 1 : "an unknown process";
  }
  return "an unknown process";
}

constexpr int kUnknown = 0, kOurs = 1, kTaken = 2;
std::atomic<int> g_deviceClaim[kMaxDevices];

}  // namespace

bool ClaimDevice(int device, int rank) {
  if (device < 0 || device >= kMaxDevices || rank < 0) return true;
  int state = g_deviceClaim[device].load(std::memory_order_acquire);
  if (state != kUnknown) return state == kOurs;
  const int server = ServerIndex();
  char what[96];
  if (server >= 0)
    snprintf(what, sizeof what, "(GPU %d of server %d, rank %d)", PhysicalDevice(device), server, rank);
  else
    snprintf(what, sizeof what, "(rank %d)", rank);
  const std::string holder = Claim(".gpu-" + std::to_string(rank), what);
  if (!holder.empty()) {
    fprintf(stderr,
            "gpusim: this process (%s) cannot use device %d %s: %s already drives that GPU. Each simulated GPU "
            "belongs to one process (as in exclusive-process compute mode); select the GPU by local rank "
            "(cudaSetDevice(LOCAL_RANK)) or start one process per server for programs that drive all its GPUs "
            "(gpusim run --nproc-per-node 1). Calls on it fail with cudaErrorDevicesUnavailable.\n",
            Me().c_str(), device, what, holder.c_str());
  }
  g_deviceClaim[device].store(holder.empty() ? kOurs : kTaken, std::memory_order_release);
  return holder.empty();
}

bool DeviceUnavailable(int device) {
  return device >= 0 && device < kMaxDevices && g_deviceClaim[device].load(std::memory_order_relaxed) == kTaken;
}

std::string ClaimCommRank(const char* comm, int rank) {
  char what[64];
  snprintf(what, sizeof what, "(rank %d of communicator %s)", rank, comm);
  return Claim(".comm-" + std::string(comm) + "-" + std::to_string(rank), what);
}

cudaError_t ShimStatus(int device) {
  if (DeviceUnavailable(device)) return cudaErrorDevicesUnavailable;
  if (LiveLost()) return cudaErrorUnknown;
  return cudaSuccess;
}

cudaError_t WaitError(int device) {
  const cudaError_t e = ShimStatus(device);
  return e != cudaSuccess ? e : cudaErrorUnknown;
}

}  // namespace gpusim
