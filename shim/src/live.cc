// Live mode client (gpusim run): each program thread that calls CUDA has its own connection
// to the simulator (GPUSIM_LIVE_SOCKET); ops go out as they are issued, and the calls whose
// answer depends on simulated time wait for it. Protocol: contrib/gpusim/model/live-job-source.h.
//
// Op lines go through a ring in memory shared with the simulator (created here, handed over
// with the HELLO line), so issuing an op costs no system call; a byte on the socket wakes the
// simulator only when it said it is about to sleep. Answers come back on the socket.
//
// No hang: a wait ends with an error when the simulator closes the connection, when it is no
// longer our parent process (it died), or after GPUSIM_LIVE_TIMEOUT seconds (if set).
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "cudart-internal.h"
#include "live-ring-layout.h"

namespace gpusim {
namespace {

struct LiveConfig {
  bool on = false;
  std::string socket;
  pid_t simulator = 0;  // our parent when gpusim run started us
  double timeoutS = 0;
  bool spin = false;  // GPUSIM_LIVE_SPIN=1: gpusim run saw a core to spare
};

const LiveConfig& Cfg() {
  static const LiveConfig c = [] {
    LiveConfig c;
    const char* s = getenv("GPUSIM_LIVE_SOCKET");
    if (!s || !*s) return c;
    c.on = true;
    c.socket = s;
    if (const char* t = getenv("GPUSIM_LIVE_TIMEOUT")) c.timeoutS = atof(t);
    if (const char* s = getenv("GPUSIM_LIVE_SPIN")) c.spin = strcmp(s, "1") == 0;
    c.simulator = getppid();
    return c;
  }();
  return c;
}

std::atomic<bool> g_dead{false};  // the simulator is gone: every later wait fails at once
bool g_forked = false;            // a forked child is not a rank

void Dead(const char* why) {
  if (!g_dead.exchange(true))
    fprintf(stderr, "gpusim: lost the simulator (%s); CUDA/NCCL calls that need it fail from now on\n", why);
}

// The shared ring (layout shared with the simulator: contrib/gpusim/model/live-ring-layout.h).
namespace lr = gpusim_live_ring;
constexpr size_t kRingHeader = lr::kData;
constexpr uint64_t kRingCapacity = 4u << 20;
struct Ring {
  char* base = nullptr;
  uint64_t* head() const { return (uint64_t*)(base + lr::kHead); }
  uint64_t* tail() const { return (uint64_t*)(base + lr::kTail); }
  uint32_t* sleeping() const { return (uint32_t*)(base + lr::kSleeping); }
  uint32_t* lifts() const { return (uint32_t*)(base + lr::kLifts); }
  char* data() const { return base + kRingHeader; }
};

struct Connection {
  int fd = -1;
  Ring ring;          // null base: op lines go on the socket
  uint64_t sent = 0;  // W lines sent
  std::string in;
  std::map<uint64_t, LiveAnswer> answers;  // received, not yet collected
  std::set<uint64_t> waiting;              // sent, not yet collected (a simulator restored
                                           // from a snapshot may repeat an answer: ignored)
  ~Connection();
};
thread_local Connection t_conn;
// The calling thread's ring's lift counter: a plain pointer, readable in exit handlers after
// the connection itself is gone (then null).
thread_local const uint32_t* t_lifts = nullptr;

Connection::~Connection() {
  t_lifts = nullptr;
  if (fd >= 0) close(fd);
  if (ring.base) munmap(ring.base, kRingHeader + kRingCapacity);
  ring.base = nullptr;
}

// A ring in memory the simulator will map too (nullptr base if it cannot be made: the socket
// carries the ops then). Returns its file descriptor (to hand over) or -1.
int MakeRing(Ring* ring) {
  int fd = memfd_create("gpusim-live-ring", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, (off_t)(kRingHeader + kRingCapacity)) != 0) {
    close(fd);
    return -1;
  }
  void* p = mmap(nullptr, kRingHeader + kRingCapacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return -1;
  }
  ring->base = (char*)p;
  *(uint32_t*)(ring->base + lr::kCapacity) = (uint32_t)kRingCapacity;
  return fd;
}

// Sends the HELLO line with the ring's descriptor attached.
bool SendHello(int fd, const char* hello, size_t n, int ringFd) {
  iovec iov = {(void*)hello, n};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  char control[CMSG_SPACE(sizeof(int))] = {};
  if (ringFd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &ringFd, sizeof(int));
  }
  ssize_t w;
  do {
    w = sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (w < 0 && errno == EINTR);
  return w == (ssize_t)n;
}

// Appends one line to the ring; wakes the simulator if it is about to sleep. False when the
// simulator is gone (a full ring it no longer drains).
bool RingWrite(Connection& c, const char* p, size_t n) {
  const Ring& r = c.ring;
  const uint64_t head = __atomic_load_n(r.head(), __ATOMIC_RELAXED);
  for (int waited = 0; kRingCapacity - (head - __atomic_load_n(r.tail(), __ATOMIC_ACQUIRE)) < n; ++waited) {
    // Full: the simulator drains it whenever it looks at the programs; make sure it looks.
    if (g_dead || (waited % 20000 == 19999 && getppid() != Cfg().simulator)) return false;
    if (send(c.fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EPIPE) return false;
    RealSleepUs(50);
  }
  const uint64_t at = head % kRingCapacity;
  const size_t first = (size_t)std::min<uint64_t>(n, kRingCapacity - at);
  memcpy(r.data() + at, p, first);
  memcpy(r.data(), p + first, n - first);
  __atomic_store_n(r.head(), head + n, __ATOMIC_RELEASE);
  // Pairs with the simulator's flag-then-check before it sleeps: one side sees the other.
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(r.sleeping(), __ATOMIC_RELAXED)) {
    if (send(c.fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EPIPE) return false;
  }
  return true;
}

// Non-blocking polls before a blocking one while waiting for an answer (~20 us).
constexpr int kSpinPolls = 100;

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

Connection* Connect() {
  Connection& c = t_conn;
  if (c.fd >= 0) return &c;
  if (g_dead || g_forked) return nullptr;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", Cfg().socket.c_str());
  if (fd < 0 || connect(fd, (sockaddr*)&addr, sizeof addr) != 0) {
    if (fd >= 0) close(fd);
    Dead(strerror(errno));
    return nullptr;
  }
  char hello[64];
  // The thread id lets the simulator see when this thread is blocked outside CUDA.
  int n = snprintf(hello, sizeof hello, "HELLO %d %d\n", (int)getpid(), (int)syscall(SYS_gettid));
  const int ringFd = MakeRing(&c.ring);
  if (c.ring.base) t_lifts = c.ring.lifts();
  const bool sent = SendHello(fd, hello, (size_t)n, ringFd);
  if (ringFd >= 0) close(ringFd);  // the simulator has its own descriptor now
  if (!sent) {
    close(fd);
    Dead("cannot write to its socket");
    return nullptr;
  }
  c.fd = fd;
  return &c;
}

// Parses complete answer lines in c.in.
void ParseAnswers(Connection& c) {
  size_t start = 0;
  for (size_t nl = c.in.find('\n'); nl != std::string::npos; nl = c.in.find('\n', start)) {
    const char* line = c.in.c_str() + start;
    LiveAnswer a;
    unsigned long long seq = 0;
    if (line[0] == 'A') {
      unsigned long long t = 0;
      long long v = 0;
      if (sscanf(line + 2, "%llu %llu %lld", &seq, &t, &v) == 3) {
        a.ok = true;
        a.timeNs = t;
        a.value = v;
        if (c.waiting.count(seq)) c.answers[seq] = a;
      }
    } else if (line[0] == 'E') {
      int used = 0;
      if (sscanf(line + 2, "%llu %n", &seq, &used) >= 1) {
        a.ok = false;
        a.error.assign(line + 2 + used, nl - start - 2 - used);
        if (c.waiting.count(seq)) c.answers[seq] = a;
      }
    }
    start = nl + 1;
  }
  c.in.erase(0, start);
}

void AtForkChild() { g_forked = true; }

__attribute__((constructor)) void InitLive() {
  if (Cfg().on) pthread_atfork(nullptr, nullptr, AtForkChild);
}

}  // namespace

bool LiveMode() { return Cfg().on && !g_forked; }

uint32_t LiveLifts() { return t_lifts ? __atomic_load_n(t_lifts, __ATOMIC_ACQUIRE) : 0; }

bool LiveLost() { return g_dead.load(std::memory_order_relaxed) && LiveMode(); }

uint64_t LiveSend(int rank, const std::string& json, bool wait) {
  Connection* c = Connect();
  if (!c) return 0;
  std::string msg;
  msg.reserve(json.size() + 16);
  msg += wait ? "W " : "O ";
  msg += std::to_string(rank);
  msg += ' ';
  msg += json;
  msg += '\n';
  if (!(c->ring.base ? RingWrite(*c, msg.data(), msg.size()) : WriteAll(c->fd, msg.data(), msg.size()))) {
    Dead("its socket closed");
    return 0;
  }
  if (!wait) return 0;
  c->waiting.insert(++c->sent);
  return c->sent;
}

bool LiveWait(uint64_t seq, LiveAnswer* out) {
  Connection& c = t_conn;
  if (seq == 0 || c.fd < 0) {
    out->ok = false;
    out->error = "no simulator";
    return false;
  }
  double waited = 0;
  while (true) {
    auto it = c.answers.find(seq);
    if (it != c.answers.end()) {
      *out = it->second;
      c.answers.erase(it);
      c.waiting.erase(seq);
      if (!out->ok) fprintf(stderr, "gpusim: %s\n", out->error.c_str());
      return out->ok;
    }
    // The answer usually comes within microseconds: look for it briefly before sleeping (a
    // sleeping thread costs the machine's wake-up latency on every round trip).
    pollfd pf = {c.fd, POLLIN, 0};
    int n = 0;
    for (int spin = 0; Cfg().spin && spin < kSpinPolls && n == 0; ++spin) n = poll(&pf, 1, 0);
    if (n == 0) n = poll(&pf, 1, 1000);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      waited += 1;
      if (getppid() != Cfg().simulator) {
        Dead("the simulator process exited");
        break;
      }
      if (Cfg().timeoutS > 0 && waited >= Cfg().timeoutS) {
        Dead("no answer within GPUSIM_LIVE_TIMEOUT");
        break;
      }
      continue;
    }
    char buf[4096];
    ssize_t r = recv(c.fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      Dead("connection closed");
      break;
    }
    c.in.append(buf, (size_t)r);
    ParseAnswers(c);
  }
  out->ok = false;
  out->error = "simulator lost";
  return false;
}

}  // namespace gpusim
