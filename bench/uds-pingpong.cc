// The floor under live mode's round trip: a bare Unix-socket ping-pong between two processes
// with the same message sizes and the same poll-then-read pattern, nothing else.
//   gpusim-bench-uds-pingpong [N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char** argv)
{
    const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    {
        return 1;
    }
    char buf[256];
    const char req[] = "W 0 {\"op\":\"stream_sync\",\"t\":0,\"cpu_us\":1.000,\"stream\":1}\n";
    const char ans[] = "A 1 123456789 0\n";
    pid_t pid = fork();
    if (pid == 0)
    {
        for (int i = 0; i < n; ++i)
        {
            pollfd p = {sv[1], POLLIN, 0};
            poll(&p, 1, 1000);
            if (read(sv[1], buf, sizeof buf) <= 0 || write(sv[1], ans, sizeof ans - 1) < 0)
            {
                _exit(1);
            }
        }
        _exit(0);
    }
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
    {
        if (write(sv[0], req, sizeof req - 1) < 0)
        {
            return 1;
        }
        pollfd p = {sv[0], POLLIN, 0};
        poll(&p, 1, 1000);
        if (read(sv[0], buf, sizeof buf) <= 0)
        {
            return 1;
        }
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    waitpid(pid, nullptr, 0);
    std::printf("bare unix-socket round trip: %.2f us (%d round trips)\n", us / n, n);
    return 0;
}
