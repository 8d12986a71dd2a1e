#include "ns3/program-launcher.h"

#include <cerrno>
#include <climits>
#include <sys/stat.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace ns3
{

namespace
{
volatile sig_atomic_t g_interrupted = 0;

void
OnInterrupt(int sig)
{
    g_interrupted = sig;
}
} // namespace

ProgramLauncher::~ProgramLauncher()
{
    StopAll(0.5);
}

size_t
ProgramLauncher::Spawn(const std::vector<std::string>& program,
                       const std::map<std::string, std::string>& env)
{
    if (program.empty())
    {
        throw std::runtime_error("no program to run");
    }
    std::vector<char*> argv;
    for (const auto& a : program)
    {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0)
    {
        throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    }
    if (pid == 0)
    {
        // Own process group, so a failing job's helpers (shells, children) are stopped too.
        ::setpgid(0, 0);
        // A background process group must not read the terminal (it would stop on SIGTTIN).
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0)
        {
            ::dup2(devnull, STDIN_FILENO);
            ::close(devnull);
        }
        for (const auto& [k, v] : env)
        {
            ::setenv(k.c_str(), v.c_str(), 1);
        }
        ::execvp(argv[0], argv.data());
        std::fprintf(stderr, "gpusim: cannot run %s: %s\n", argv[0], std::strerror(errno));
        ::_exit(127);
    }
    ::setpgid(pid, pid); // also from the parent: no race with an early kill
    Process p;
    p.pid = pid;
    m_procs.push_back(p);
    return m_procs.size() - 1;
}

bool
ProgramLauncher::Reap()
{
    bool all = true;
    for (auto& p : m_procs)
    {
        if (p.done)
        {
            continue;
        }
        int status = 0;
        pid_t r = ::waitpid(p.pid, &status, WNOHANG);
        if (r == p.pid || (r < 0 && errno == ECHILD))
        {
            p.done = true;
            p.status = r == p.pid ? status : 0;
        }
        else
        {
            all = false;
        }
    }
    return all;
}

void
ProgramLauncher::SignalAll(int sig)
{
    for (auto& p : m_procs)
    {
        if (!p.done && p.pid > 0)
        {
            ::kill(-p.pid, sig);
        }
    }
}

void
ProgramLauncher::StopAll(double graceS)
{
    if (Reap())
    {
        return;
    }
    SignalAll(SIGTERM);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(graceS);
    while (!Reap() && std::chrono::steady_clock::now() < until)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    SignalAll(SIGKILL);
    while (!Reap())
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

const std::vector<ProgramLauncher::Process>&
ProgramLauncher::Processes() const
{
    return m_procs;
}

std::string
ProgramLauncher::DescribeStatus(int status)
{
    if (WIFEXITED(status))
    {
        const int code = WEXITSTATUS(status);
        if (code == 127)
        {
            return "exited with status 127 (command not found or not executable?)";
        }
        return "exited with status " + std::to_string(code);
    }
    if (WIFSIGNALED(status))
    {
        const int sig = WTERMSIG(status);
        return std::string("was killed by signal ") + std::to_string(sig) + " (" +
               strsignal(sig) + ")";
    }
    return "stopped";
}

InterruptGuard::InterruptGuard()
{
    g_interrupted = 0;
    struct sigaction sa = {};
    sa.sa_handler = OnInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &m_oldInt);
    sigaction(SIGTERM, &sa, &m_oldTerm);
}

InterruptGuard::~InterruptGuard()
{
    sigaction(SIGINT, &m_oldInt, nullptr);
    sigaction(SIGTERM, &m_oldTerm, nullptr);
}

int
InterruptGuard::Received()
{
    return g_interrupted;
}

namespace gpusim
{

std::string
FindShimLibDir(std::string* tried)
{
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("GPUSIM_SHIM_LIBDIR"); env && *env)
    {
        candidates.push_back(env);
    }
    std::string bin = ".";
    char buf[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n > 0)
    {
        const std::string exe(buf, static_cast<size_t>(n));
        const auto slash = exe.rfind('/');
        bin = slash == std::string::npos ? "." : exe.substr(0, slash);
    }
    candidates.push_back(bin + "/../shim/lib");       // build tree: build/bin, build/shim/lib
    candidates.push_back(bin + "/../lib/gpusim-shim"); // install prefix
    auto isFile = [](const std::string& p) {
        struct stat st;
        return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    };
    std::string list;
    for (const auto& c : candidates)
    {
        list += (list.empty() ? "" : ", ") + c;
        if (isFile(c + "/libcudart.so.13") && isFile(c + "/libnccl.so.2"))
        {
            return ::realpath(c.c_str(), buf) ? std::string(buf) : c;
        }
    }
    if (tried)
    {
        *tried = list;
    }
    return "";
}

} // namespace gpusim
} // namespace ns3
