// A process that speaks the live protocol badly, for live-mode robustness tests
// (contrib/gpusim/test/live-test.cc, "untrusted input"). It does not use CUDA: it connects to
// $GPUSIM_LIVE_SOCKET itself, says HELLO like the shim and then, by mode:
//   garbage    a line that is no live message
//   truncated  half an op line, then closes the connection
//   huge       2 MiB without a newline
//   foreign    an op for GPU rank argv[2] (another process's)
//   badrank    an op for a rank the job does not have
//   frozen     kernel launches that cost no host time, 1.2 million of them, never waiting
// and waits (up to 60 s) for the simulator to close the connection, printing nothing.
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* sock = getenv("GPUSIM_LIVE_SOCKET");
  if (argc < 2 || !sock) {
    fprintf(stderr, "usage: GPUSIM_LIVE_SOCKET=... live_rogue MODE [RANK]\n");
    return 2;
  }
  const std::string mode = argv[1];
  signal(SIGPIPE, SIG_IGN);  // a simulator that hung up makes write() fail, not kill us
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    perror("connect");
    return 2;
  }
  const std::string op = "{\"op\":\"kernel\",\"t\":0,\"cpu_us\":1,\"stream\":0,\"name\":\"k\",\"dur_us\":5}";
  std::string msg = "HELLO " + std::to_string(getpid()) + " " +
                    std::to_string(static_cast<long>(syscall(SYS_gettid))) + "\n";
  if (mode == "garbage") {
    msg += "this is not a live message\n";
  } else if (mode == "truncated") {
    msg += "O 0 {\"op\":\"lau";
  } else if (mode == "huge") {
    msg += "O 0 " + std::string(2 << 20, 'x');
  } else if (mode == "foreign") {
    msg += "O " + std::string(argc > 2 ? argv[2] : "0") + " " + op + "\n";
  } else if (mode == "badrank") {
    msg += "O 999 " + op + "\n";
  } else if (mode == "frozen") {
    const std::string free = "O 0 {\"op\":\"kernel\",\"t\":0,\"cpu_us\":0,\"stream\":0,"
                             "\"name\":\"k\",\"dur_us\":5}\n";
    if (!WriteAll(fd, msg)) return 0;
    msg.clear();
    for (int batch = 0; batch < 1200; ++batch) {
      std::string lines;
      for (int i = 0; i < 1000; ++i) lines += free;
      if (!WriteAll(fd, lines)) return 0;  // the simulator hung up: done
    }
  } else {
    fprintf(stderr, "live_rogue: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  if (!WriteAll(fd, msg)) return 0;  // the simulator already hung up: fine
  if (mode == "truncated") {
    close(fd);
    return 0;
  }
  // Wait for the simulator to hang up (it must, on every mode).
  char buf[256];
  for (int i = 0; i < 600; ++i) {
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return 0;
    usleep(100000);
  }
  return 0;
}
