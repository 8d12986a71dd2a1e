#include "ns3/program-launcher.h"

#include <cerrno>
#include <fstream>
#include <set>
#include <poll.h>
#include <sys/prctl.h>
#include <climits>
#include <sys/mman.h>
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

/// The file execvp would run for `name`: itself if it names a path, else the first executable
/// of that name on PATH; empty when none.
std::string
ResolveOnPath(const std::string& name)
{
    if (name.find('/') != std::string::npos)
    {
        return name;
    }
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size())
    {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos)
        {
            end = dirs.size();
        }
        const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
        const std::string candidate = dir + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0)
        {
            return candidate;
        }
        start = end + 1;
    }
    return "";
}

/// Whether `file` is a program that carries NVIDIA's CUDA runtime inside: nvcc links
/// libcudart_static.a unless told `-cudart shared`, and that runtime talks to the driver
/// (libcuda.so.1) directly, past the shim. Its objects are named libcudart_static_<hash>; a
/// program on the shared runtime names libcudart.so instead.
bool
CarriesStaticCudaRuntime(const std::string& file)
{
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
    {
        return false;
    }
    struct stat st;
    bool found = false;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 4)
    {
        void* map = ::mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED)
        {
            const char* data = static_cast<const char*>(map);
            const size_t size = static_cast<size_t>(st.st_size);
            auto contains = [&](const char* s) {
                return ::memmem(data, size, s, std::strlen(s)) != nullptr;
            };
            found = std::memcmp(data, "\x7f" "ELF", 4) == 0 && contains("libcudart_static_") &&
                    !contains("libcudart.so");
            ::munmap(map, st.st_size);
        }
    }
    ::close(fd);
    return found;
}

void
OnInterrupt(int sig)
{
    g_interrupted = sig;
}
} // namespace

ProgramLauncher::~ProgramLauncher()
{
    if (!m_proxy)
    {
        StopAll(0.5);
    }
}

size_t
ProgramLauncher::Spawn(const std::vector<std::string>& program,
                       const std::map<std::string, std::string>& env,
                       const std::vector<std::string>& unset)
{
    if (program.empty())
    {
        throw std::runtime_error("no program to run");
    }
    const std::string file = ResolveOnPath(program.front());
    if (!file.empty() && CarriesStaticCudaRuntime(file))
    {
        throw std::runtime_error(
            "cannot run " + program.front() +
            ": it carries NVIDIA's CUDA runtime inside (nvcc links libcudart_static.a by "
            "default), which talks to the GPU driver directly, past the gpusim shim; rebuild it "
            "on the shared runtime: nvcc -cudart shared (CMake: "
            "-DCMAKE_CUDA_RUNTIME_LIBRARY=Shared)");
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
    // The child reports a failed exec through this pipe (closed by a successful exec), so the
    // caller gets the reason as an error instead of the child printing it.
    int execError[2];
    if (::pipe2(execError, O_CLOEXEC) != 0)
    {
        throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    }
    pid_t pid = ::fork();
    if (pid < 0)
    {
        const int e = errno;
        ::close(execError[0]);
        ::close(execError[1]);
        throw std::runtime_error(std::string("fork failed: ") + std::strerror(e));
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
        for (const auto& k : unset)
        {
            ::unsetenv(k.c_str());
        }
        for (const auto& [k, v] : env)
        {
            ::setenv(k.c_str(), v.c_str(), 1);
        }
        ::execvp(argv[0], argv.data());
        const int e = errno;
        ssize_t unused = ::write(execError[1], &e, sizeof e);
        (void)unused;
        ::_exit(127);
    }
    ::close(execError[1]);
    int childErrno = 0;
    ssize_t n;
    do
    {
        n = ::read(execError[0], &childErrno, sizeof childErrno);
    } while (n < 0 && errno == EINTR);
    ::close(execError[0]);
    if (n == static_cast<ssize_t>(sizeof childErrno))
    {
        ::waitpid(pid, nullptr, 0);
        throw std::runtime_error("cannot run " + program.front() + ": " +
                                 std::strerror(childErrno));
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
    if (m_proxy)
    {
        char buf[4096];
        for (ssize_t n; (n = ::read(m_statusFd, buf, sizeof buf)) > 0;)
        {
            m_statusIn.append(buf, static_cast<size_t>(n));
            m_statusLog.append(buf, static_cast<size_t>(n));
        }
        for (size_t nl; (nl = m_statusIn.find('\n')) != std::string::npos;)
        {
            ApplyStatusLine(m_statusIn.substr(0, nl));
            m_statusIn.erase(0, nl + 1);
        }
        for (const auto& p : m_procs)
        {
            if (!p.done)
            {
                return false;
            }
        }
        return true;
    }
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
    if (m_proxy)
    {
        const std::string msg = "SIG " + std::to_string(sig) + "\n";
        (void)!::write(m_controlFd, msg.data(), msg.size());
        return;
    }
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
    if (m_proxy)
    {
        (void)!::write(m_controlFd, "STOP\n", 5);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!Reap() && std::chrono::steady_clock::now() < until)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
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

void
ProgramLauncher::ApplyStatusLine(const std::string& line)
{
    size_t index = 0;
    int status = 0;
    if (std::sscanf(line.c_str(), "X %zu %d", &index, &status) == 2 && index < m_procs.size())
    {
        m_procs[index].done = true;
        m_procs[index].status = status;
    }
}

void
ProgramLauncher::ReportResult(int code)
{
    if (m_proxy)
    {
        const std::string msg = "RESULT " + std::to_string(code) + "\n";
        (void)!::write(m_controlFd, msg.data(), msg.size());
    }
}

std::string
ProgramLauncher::TakeStatusLog()
{
    std::string log;
    log.swap(m_statusLog);
    return log;
}

void
ProgramLauncher::ApplyStatusLog(const std::string& log)
{
    size_t start = 0;
    for (size_t nl; (nl = log.find('\n', start)) != std::string::npos; start = nl + 1)
    {
        ApplyStatusLine(log.substr(start, nl - start));
    }
}

int
ProgramLauncher::SplitCoordinator()
{
    int status[2];
    int control[2];
    if (::pipe2(status, O_CLOEXEC) != 0 || ::pipe2(control, O_CLOEXEC) != 0)
    {
        throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    }
    // Workers forked from workers are re-parented here when their parent exits.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    const pid_t worker = ::fork();
    if (worker < 0)
    {
        throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    }
    if (worker == 0)
    {
        ::close(status[1]);
        ::close(control[0]);
        m_proxy = true;
        m_statusFd = status[0];
        m_controlFd = control[1];
        ::fcntl(m_statusFd, F_SETFL, O_NONBLOCK);
        return -1;
    }
    ::close(status[0]);
    ::close(control[1]);
    m_statusFd = status[1];
    m_controlFd = control[0];
    return Coordinate();
}

int
ProgramLauncher::Coordinate()
{
    int result = -1;
    bool forwarded = false;
    std::string in;
    while (true)
    {
        if (InterruptGuard::Received() && !forwarded)
        {
            forwarded = true;
            ::kill(0, InterruptGuard::Received()); // our process group: the workers, not the programs
        }
        pollfd pf = {m_controlFd, POLLIN, 0};
        if (::poll(&pf, 1, 10) > 0)
        {
            char buf[1024];
            const ssize_t n = ::read(m_controlFd, buf, sizeof buf);
            if (n > 0)
            {
                in.append(buf, static_cast<size_t>(n));
            }
        }
        for (size_t nl; (nl = in.find('\n')) != std::string::npos;)
        {
            const std::string line = in.substr(0, nl);
            in.erase(0, nl + 1);
            int value = 0;
            if (line == "STOP")
            {
                StopAll(2.0);
            }
            else if (std::sscanf(line.c_str(), "SIG %d", &value) == 1)
            {
                SignalAll(value);
            }
            else if (std::sscanf(line.c_str(), "RESULT %d", &value) == 1)
            {
                result = value;
            }
        }
        // Reap everything: programs (their statuses go to the workers) and workers.
        while (true)
        {
            int st = 0;
            const pid_t pid = ::waitpid(-1, &st, WNOHANG);
            if (pid <= 0)
            {
                break;
            }
            for (size_t i = 0; i < m_procs.size(); ++i)
            {
                if (m_procs[i].pid == pid)
                {
                    m_procs[i].done = true;
                    m_procs[i].status = st;
                    const std::string msg =
                        "X " + std::to_string(i) + " " + std::to_string(st) + "\n";
                    (void)!::write(m_statusFd, msg.data(), msg.size());
                }
            }
        }
        bool programsLeft = false;
        std::set<pid_t> programs;
        for (const auto& p : m_procs)
        {
            programsLeft = programsLeft || !p.done;
            programs.insert(p.pid);
        }
        // Workers: our children that are not programs (snapshots re-parented here included).
        bool workersLeft = false;
        std::ifstream children("/proc/self/task/" + std::to_string(::getpid()) + "/children");
        for (pid_t child; children >> child;)
        {
            workersLeft = workersLeft || !programs.count(child);
        }
        if (!workersLeft)
        {
            // No worker left: whatever still runs has no simulator any more.
            if (programsLeft)
            {
                StopAll(1.0);
            }
            return result >= 0 ? result : 2;
        }
    }
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
