// Live mode client (gpusim run): each program thread that calls CUDA has its own connection
// to the simulator (GPUSIM_LIVE_SOCKET); ops go out as they are issued, and the calls whose
// answer depends on simulated time wait for it. Protocol: contrib/gpusim/model/live-job-source.h.
//
// No hang: a wait ends with an error when the simulator closes the connection, when it is no
// longer our parent process (it died), or after GPUSIM_LIVE_TIMEOUT seconds (if set).
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "cudart-internal.h"

namespace gpusim {
namespace {

struct LiveConfig {
  bool on = false;
  std::string socket;
  int process = 0;
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
    if (const char* p = getenv("GPUSIM_LIVE_PROCESS")) c.process = atoi(p);
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

struct Connection {
  int fd = -1;
  uint64_t sent = 0;  // W lines sent
  std::string in;
  std::map<uint64_t, LiveAnswer> answers;  // received, not yet collected
  std::set<uint64_t> waiting;               // sent, not yet collected (a simulator restored
                                            // from a snapshot may repeat an answer: ignored)
  ~Connection() {
    if (fd >= 0) close(fd);
  }
};
thread_local Connection t_conn;

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
  int n = snprintf(hello, sizeof hello, "HELLO %d %d %d\n", Cfg().process, (int)getpid(),
                   (int)syscall(SYS_gettid));
  if (!WriteAll(fd, hello, (size_t)n)) {
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
  if (!WriteAll(c->fd, msg.data(), msg.size())) {
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
