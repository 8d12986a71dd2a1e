#include "ns3/live-job-source.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/host-first-scheduler.h"
#include "ns3/live-ring-layout.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <time.h>
#include <tuple>
#include <unistd.h>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("LiveJobSource");
NS_OBJECT_ENSURE_REGISTERED(LiveJobSource);

using gpusim::Op;

namespace
{
/// Ends a live run early (timeout, interrupt, a program breaking the protocol).
struct LiveRunEnded : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

/// The fields of a /proc/.../stat file after the command name, which may hold spaces and
/// parentheses: "S 1234 ..." (state, parent pid, ...); "" when it cannot be read.
std::string
StatFieldsAfterName(const char* path)
{
    FILE* f = std::fopen(path, "r");
    if (!f)
    {
        return "";
    }
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* close = std::strrchr(buf, ')');
    return close && close[1] == ' ' ? std::string(close + 2) : std::string();
}

/// printf into a string (the messages of the Warning trace source).
__attribute__((format(printf, 1, 2))) std::string
Format(const char* fmt, ...)
{
    char buf[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    return buf;
}

double
WallSeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The shared op ring of a program thread (layout: live-ring-layout.h).
constexpr size_t kRingHeader = gpusim_live_ring::kData;
/// Longest live message line accepted (an op line is a few hundred bytes; kernel names can be
/// long, but not this long).
constexpr size_t kMaxLineBytes = 1 << 20;
uint64_t*
RingHead(char* ring)
{
    return reinterpret_cast<uint64_t*>(ring + gpusim_live_ring::kHead);
}
uint64_t*
RingTail(char* ring)
{
    return reinterpret_cast<uint64_t*>(ring + gpusim_live_ring::kTail);
}
uint32_t*
RingSleeping(char* ring)
{
    return reinterpret_cast<uint32_t*>(ring + gpusim_live_ring::kSleeping);
}
uint32_t
RingCapacity(char* ring)
{
    return *reinterpret_cast<uint32_t*>(ring + gpusim_live_ring::kCapacity);
}
/// Times the simulation stopped waiting for the thread (it tells the thread that the time
/// until its next call was a wait, not host work).
uint32_t*
RingLifts(char* ring)
{
    return reinterpret_cast<uint32_t*>(ring + gpusim_live_ring::kLifts);
}

/// Sends a record to the snapshot with `n` descriptors attached (SCM_RIGHTS).
void
SendRecord(int channel, const std::string& rec, const int* fds, int n)
{
    iovec iov = {const_cast<char*>(rec.data()), rec.size()};
    char control[CMSG_SPACE(2 * sizeof(int))] = {};
    msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(n * sizeof(int));
    std::memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
    (void)!::sendmsg(channel, &msg, 0);
}

uint64_t
ClockNs(clockid_t id)
{
    timespec ts;
    clock_gettime(id, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

} // namespace

std::string
LiveRunStats::ToJson() const
{
    std::ostringstream os;
    os << "{\"ops_received\":" << opsReceived << ",\"answers\":" << answers
       << ",\"wait_for_program_s\":" << waitForProgramS << ",\"late_threads\":" << lateThreads
       << ",\"lifted_waits\":" << liftedWaits << ",\"lifted_spinning\":" << liftedSpinning
       << ",\"late_ops\":" << lateOps << ",\"sync\":\""
       << (optimistic ? "optimistic" : "conservative") << "\",\"snapshots\":" << snapshots
       << ",\"commits\":" << commits << ",\"rollbacks\":" << rollbacks
       << ",\"resimulated_events\":" << resimulatedEvents
       << ",\"max_snapshot_bytes\":" << maxSnapshotBytes << "}";
    return os.str();
}

TypeId
LiveJobSource::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::LiveJobSource")
            .SetParent<OpFeed>()
            .SetGroupName("Gpusim")
            .AddConstructor<LiveJobSource>()
            .AddAttribute("Optimistic",
                          "Optimistic synchronization: run ahead of the programs from fork()ed "
                          "snapshots, rolling back when an op arrives in the simulated past "
                          "(needs SplitCoordinator() after Launch())",
                          BooleanValue(false),
                          MakeBooleanAccessor(&LiveJobSource::m_optimistic),
                          MakeBooleanChecker())
            .AddAttribute("SpeculateAfterS",
                          "Wall time the synchronizer waits for the programs before it "
                          "speculates (optimistic mode)",
                          DoubleValue(0.002),
                          MakeDoubleAccessor(&LiveJobSource::m_speculateAfterS),
                          MakeDoubleChecker<double>(0))
            .AddTraceSource("OpReceived",
                            "A program issued an op (rank, host thread, op)",
                            MakeTraceSourceAccessor(&LiveJobSource::m_opReceived),
                            "ns3::LiveJobSource::OpReceivedCallback")
            .AddTraceSource("Answered",
                            "A program's blocking call returns (rank, host thread, simulated "
                            "time, value: query result or elapsed ns)",
                            MakeTraceSourceAccessor(&LiveJobSource::m_answered),
                            "ns3::LiveJobSource::AnsweredCallback")
            .AddTraceSource("RolledBack",
                            "Optimistic mode: a speculation was undone (events re-simulated)",
                            MakeTraceSourceAccessor(&LiveJobSource::m_rolledBack),
                            "ns3::LiveJobSource::RollbackCallback")
            .AddTraceSource("Warning",
                            "The run goes on, but not quite as asked: GPUs given up, a spinning "
                            "thread lifted, an op or a thread that arrived late (message)",
                            MakeTraceSourceAccessor(&LiveJobSource::m_warning),
                            "ns3::LiveJobSource::WarningCallback")
            .AddAttribute("TimeoutS",
                          "Wall-clock limit of the whole run in seconds (0: none)",
                          DoubleValue(0),
                          MakeDoubleAccessor(&LiveJobSource::m_timeoutS),
                          MakeDoubleChecker<double>(0));
    return tid;
}

LiveJobSource::LiveJobSource() = default;

LiveJobSource::~LiveJobSource()
{
    DoDispose();
}

void
LiveJobSource::DoDispose()
{
    for (auto& [id, c] : m_conns)
    {
        ::close(c.fd);
    }
    m_conns.clear();
    if (m_listenFd >= 0)
    {
        ::close(m_listenFd);
        m_listenFd = -1;
        // The socket and the shared NCCL unique-id files (flat directory of our own).
        if (DIR* d = ::opendir(m_socketDir.c_str()))
        {
            while (dirent* e = ::readdir(d))
            {
                if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
                {
                    ::unlink((m_socketDir + "/" + e->d_name).c_str());
                }
            }
            ::closedir(d);
        }
        ::rmdir(m_socketDir.c_str());
    }
    m_launcher.StopAll(0.5);
    OpFeed::DoDispose();
}

void
LiveJobSource::Launch(const std::vector<std::string>& program,
                      const gpusim::LaunchPlan& plan,
                      const std::string& shimLibDir,
                      const std::map<std::string, std::string>& extraEnv)
{
    if (program.empty())
    {
        throw std::runtime_error("live run: nothing to run");
    }
    plan.Validate();
    m_plan = plan;
    const std::vector<gpusim::LaunchPlan::Process> procs = plan.Processes();
    const uint32_t nranks = plan.ranks;
    m_store.assign(nranks, {});
    m_feeds.assign(nranks, {});
    m_rankOwner.assign(nranks, -1);
    m_rankReleased.assign(nranks, false);
    for (auto& f : m_feeds)
    {
        f[0]; // every rank has a main thread from the start
    }
    m_program = program;

    // In $TMPDIR when its path leaves room for a socket name (108 bytes at most), else /tmp.
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp && std::strlen(tmp) < 60 ? tmp : "/tmp";
    std::string dirTemplate = base + "/gpusim-live-XXXXXX";
    if (!::mkdtemp(&dirTemplate[0]))
    {
        throw std::runtime_error("cannot create a socket directory in " + base + ": " +
                                 std::strerror(errno));
    }
    m_socketDir = dirTemplate;
    m_socketPath = m_socketDir + "/sim.sock";
    m_listenFd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", m_socketPath.c_str());
    if (m_listenFd < 0 || ::bind(m_listenFd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(m_listenFd, 1024) != 0)
    {
        throw std::runtime_error("cannot listen on " + m_socketPath + ": " + std::strerror(errno));
    }

    std::map<std::string, std::string> env = extraEnv;
    // Preloaded: the clock library must come before libc for the program's timers to read
    // simulated time, and the runtime is needed even by a program that loads CUDA late.
    gpusim::AddShimEnvironment(
        env,
        shimLibDir,
        {"libgpusim-clock.so", "libcudart.so.13", "libnccl.so.2", "libcudnn.so.9"},
        m_timeoutS);
    env["GPUSIM_LIVE_SOCKET"] = m_socketPath;
    env["GPUSIM_UNIQUE_ID_FILE"] = m_socketDir + "/nccl-unique-id";
    // One time origin for every process: simulated t = 0 is "now" on the real clocks.
    env["GPUSIM_LIVE_EPOCH_REALTIME_NS"] = std::to_string(ClockNs(CLOCK_REALTIME));
    env["GPUSIM_LIVE_EPOCH_MONOTONIC_NS"] = std::to_string(ClockNs(CLOCK_MONOTONIC));
    env["GPUSIM_LIVE_EPOCH_BOOTTIME_NS"] = std::to_string(ClockNs(CLOCK_BOOTTIME));
    // Spinning briefly for answers beats the wake-up latency, but only with a core to spare:
    // on an oversubscribed machine it would take the CPU from whoever has to answer.
    m_spin = procs.size() + 1 <= std::thread::hardware_concurrency();
    env["GPUSIM_LIVE_SPIN"] = m_spin ? "1" : "0";
    m_startWall = WallSeconds();
    for (size_t launched : plan.Spawn(m_launcher, program, env))
    {
        ProgramProcess pp;
        pp.launched = static_cast<int32_t>(launched);
        pp.pid = m_launcher.Processes().at(launched).pid;
        m_processes.push_back(pp);
    }
    NS_LOG_INFO("live run: " << procs.size() << " processes, " << nranks << " GPUs, socket "
                             << m_socketPath);
}

uint32_t
LiveJobSource::GetNRanks() const
{
    return m_store.size();
}

std::vector<uint32_t>
LiveJobSource::KnownThreads(uint32_t rank) const
{
    std::vector<uint32_t> out;
    for (const auto& kv : m_feeds.at(rank))
    {
        out.push_back(kv.first);
    }
    return out;
}

bool
LiveJobSource::ThreadEnded(uint32_t rank, uint32_t thread) const
{
    const ThreadFeed& f = m_feeds.at(rank).at(thread);
    if (f.ended || (f.conn >= 0 && !m_conns.count(f.conn)))
    {
        return true;
    }
    if (f.conn >= 0)
    {
        return false;
    }
    // Not seen yet. A rank's first thread is the first that used its GPU, so the rank has no
    // owner: it ends when it was given up, or when no process can still claim it (all have
    // exited and everything they sent is read).
    if (m_rankReleased.at(rank))
    {
        return true;
    }
    for (const auto& p : m_launcher.Processes())
    {
        if (!p.done)
        {
            return false;
        }
    }
    return m_conns.empty();
}

std::string
LiveJobSource::DescribeProcess(int32_t process) const
{
    if (process < 0 || static_cast<size_t>(process) >= m_processes.size())
    {
        return "an unknown process";
    }
    const ProgramProcess& p = m_processes[process];
    if (p.launched >= 0)
    {
        return "process " + std::to_string(p.launched) + " (pid " + std::to_string(p.pid) + ")";
    }
    return "process pid " + std::to_string(p.pid);
}

std::string
LiveJobSource::Describe(uint32_t rank, uint32_t thread) const
{
    const int32_t owner = m_rankOwner.at(rank);
    return "rank " + std::to_string(rank) + " (" +
           (owner >= 0 ? DescribeProcess(owner) : std::string("no process has used its GPU")) +
           ") thread " + std::to_string(thread);
}

int32_t
LiveJobSource::ProcessOf(int32_t pid)
{
    for (size_t i = 0; i < m_processes.size(); ++i)
    {
        if (m_processes[i].pid == pid)
        {
            return static_cast<int32_t>(i);
        }
    }
    // Started by one of ours (mpirun's ranks, a wrapper script's program): find which, by the
    // parent chain, so that one counts as a launcher rather than a process yet to call CUDA.
    ProgramProcess p;
    p.pid = pid;
    for (int32_t up = pid, hops = 0; up > 1 && hops < 16; ++hops)
    {
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%d/stat", up);
        int parent = 0;
        if (std::sscanf(StatFieldsAfterName(path).c_str(), "%*c %d", &parent) != 1)
        {
            break;
        }
        auto launcher = std::find_if(m_processes.begin(), m_processes.end(), [parent](const auto& q) {
            return q.launched >= 0 && q.pid == parent;
        });
        if (launcher != m_processes.end())
        {
            launcher->launcher = true;
            break;
        }
        up = parent;
    }
    m_processes.push_back(p);
    return static_cast<int32_t>(m_processes.size() - 1);
}

bool
LiveJobSource::LauncherRunning() const
{
    for (const auto& p : m_processes)
    {
        if (p.launcher && p.launched >= 0 && !m_launcher.Processes().at(p.launched).done)
        {
            return true;
        }
    }
    return false;
}

bool
LiveJobSource::SomeProcessUnseen() const
{
    for (const auto& p : m_processes)
    {
        if (p.launched >= 0 && p.connections == 0 && !p.launcher &&
            !m_launcher.Processes().at(p.launched).done)
        {
            return true;
        }
    }
    return false;
}

bool
LiveJobSource::ReleaseUnclaimedRanks()
{
    std::string released;
    uint32_t count = 0;
    for (uint32_t r = 0; r < m_rankOwner.size(); ++r)
    {
        if (m_rankOwner[r] < 0 && !m_rankReleased[r])
        {
            m_rankReleased[r] = true;
            released += (count++ ? "," : "") + std::to_string(r);
        }
    }
    if (count > 0)
    {
        m_warning(Format("the program waits while %u GPU%s of the job were never used (rank%s "
                         "%s); going on without them (run with as many GPUs as the program uses)",
                         count,
                         count == 1 ? "" : "s",
                         count == 1 ? "" : "s",
                         released.c_str()));
        m_dirty = true;
        WakeParked();
    }
    return count > 0;
}

OpFeed::State
LiveJobSource::Next(uint32_t rank, uint32_t thread, Op*& op)
{
    ThreadFeed& f = m_feeds.at(rank).at(thread);
    if (!f.queue.empty())
    {
        op = f.queue.front();
        f.queue.pop_front();
        return State::Ready;
    }
    if (ThreadEnded(rank, thread))
    {
        f.ended = true;
        return State::Ended;
    }
    return State::Pending;
}

void
LiveJobSource::WhenReady(uint32_t rank,
                         uint32_t thread,
                         Time since,
                         bool holdAt,
                         std::function<void()> ready)
{
    ThreadFeed& f = m_feeds.at(rank).at(thread);
    f.parked = true;
    f.hold = holdAt;
    f.sinceNs = static_cast<uint64_t>(since.GetNanoSeconds());
    f.ready = std::move(ready);
    m_parked.insert({rank, thread});
    m_dirty = true;
}

void
LiveJobSource::WakeParked()
{
    for (auto it = m_parked.begin(); it != m_parked.end();)
    {
        ThreadFeed& f = m_feeds[it->first][it->second];
        if (f.queue.empty() && !ThreadEnded(it->first, it->second))
        {
            ++it;
            continue;
        }
        f.parked = false;
        auto ready = std::move(f.ready);
        f.ready = nullptr;
        it = m_parked.erase(it);
        ready(); // schedules the thread's next step (or finishes it)
    }
}

uint64_t
LiveJobSource::Bound() const
{
    // A thread whose answer is held resumes no earlier than that answer.
    uint64_t bound = BoundExcept(-1);
    for (const auto& [id, c] : m_conns)
    {
        if (c.heldAnswers > 0)
        {
            bound = std::min(bound, c.heldMinNs);
        }
    }
    return bound;
}

uint64_t
LiveJobSource::BoundExcept(int32_t except) const
{
    uint64_t bound = UINT64_MAX;
    for (const auto& [rank, thread] : m_parked)
    {
        const ThreadFeed& f = m_feeds[rank].at(thread);
        if (f.hold)
        {
            bound = std::min(bound, f.sinceNs);
        }
        auto boundBy = [&bound](const Connection& c) {
            if (c.outstanding == 0 && !c.lifted)
            {
                bound = std::min(bound, c.clockNs); // running: its next op is no earlier
            }
        };
        if (f.conn >= 0)
        {
            auto c = m_conns.find(f.conn);
            if (c != m_conns.end() && f.conn != except)
            {
                boundBy(c->second);
            }
            continue;
        }
        // Not seen yet: the rank has no owner, and any running program thread may be the
        // first to use its GPU; so may a process that has not called CUDA yet (from any time).
        if (m_rankReleased[rank])
        {
            continue;
        }
        if (SomeProcessUnseen())
        {
            bound = 0;
            continue;
        }
        // Every program thread, those whose HELLO is still unread too (their clock is still 0).
        for (const auto& [id, c] : m_conns)
        {
            boundBy(c);
        }
    }
    return bound;
}

namespace
{
/// Scheduler state of a program thread: 'R' running or runnable, 'S'/'D' blocked, ... ('?' if
/// unknown).
char
ThreadState(int32_t pid, int32_t tid)
{
    if (pid <= 0 || tid <= 0)
    {
        return '?';
    }
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
    const std::string fields = StatFieldsAfterName(path);
    return fields.empty() ? '?' : fields[0];
}
} // namespace

bool
LiveJobSource::LiftBlockedThreads()
{
    // Off the CPU: only when every program thread that holds the bound is off the CPU (one that
    // computes may still issue an op in the past of what would run next), and only threads
    // whose process has another thread waiting for the simulator: they are waiting for it (a
    // join, a lock); a lone thread that sleeps or reads a file is not, and waiting for it keeps
    // the run exact.
    // On the CPU: a thread that has not called CUDA for kSilentLiftS while every other program
    // thread waits for the simulation is waiting for them outside CUDA (an MPI barrier spins):
    // nothing it could still issue can come before they go on.
    std::vector<Connection*> asleep;
    std::vector<Connection*> silent;
    bool allAsleep = true;
    bool allSilent = true;
    bool someoneWaits = false;
    const double now = WallSeconds();
    for (auto& [id, c] : m_conns)
    {
        someoneWaits = someoneWaits || c.outstanding > 0 || c.heldAnswers > 0;
        if (c.outstanding != 0 || c.lifted || c.process < 0)
        {
            continue;
        }
        allSilent = allSilent && now - c.lastLineWallS >= kSilentLiftS;
        silent.push_back(&c);
        const char st = ThreadState(c.pid, c.tid);
        if (st == 'R' || st == '?')
        {
            allAsleep = false;
            continue;
        }
        bool sibling = false;
        for (const auto& [other, o] : m_conns)
        {
            sibling = sibling || (other != id && o.process == c.process &&
                                  (o.outstanding > 0 || o.heldAnswers > 0));
        }
        if (sibling)
        {
            asleep.push_back(&c);
        }
    }
    std::vector<Connection*> lift = allAsleep ? asleep : std::vector<Connection*>();
    if (!allAsleep && allSilent && someoneWaits)
    {
        lift = silent;
        for (Connection* c : silent)
        {
            if (m_stats.liftedSpinning++ == 0)
            {
                m_warning(Format("%s thread %d has run for %.1f s without a CUDA call while every "
                                 "other program thread waits for the simulation; it is taken to "
                                 "wait for them outside CUDA (e.g. spinning in an MPI barrier) and "
                                 "the simulation goes on without it",
                                 DescribeProcess(c->process).c_str(),
                                 c->tid,
                                 now - c->lastLineWallS));
            }
        }
    }
    for (Connection* c : lift)
    {
        c->lifted = true;
        if (c->ring)
        {
            __atomic_fetch_add(RingLifts(c->ring), 1u, __ATOMIC_RELEASE);
        }
    }
    if (!lift.empty())
    {
        ++m_stats.liftedWaits;
    }
    return !lift.empty();
}

bool
LiveJobSource::Deadlocked()
{
    bool allWaiting = !SomeProcessUnseen();
    for (const auto& [id, c] : m_conns)
    {
        allWaiting = allWaiting && c.outstanding > 0 && c.process >= 0;
    }
    if (!allWaiting)
    {
        m_stuckSince = -1;
        return false;
    }
    if (m_stuckSince < 0)
    {
        m_stuckSince = WallSeconds();
    }
    // A launcher of ours still running (mpirun) may still be starting ranks that will use the
    // GPUs nobody has used yet: give them longer before going on without those GPUs.
    if (WallSeconds() - m_stuckSince <= (LauncherRunning() ? kLauncherStartS : 1.0))
    {
        return false;
    }
    if (ReleaseUnclaimedRanks())
    {
        m_stuckSince = -1;
        return false;
    }
    return true;
}

void
LiveJobSource::NoteProgress()
{
    m_pollsSinceProgress = 0;
    m_progressWallS = -1;
}

void
LiveJobSource::CheckLivelock()
{
    // Programs keep polling while no device work is in flight: what they poll for can never
    // complete (a peer that died, a collective some rank never joins), and their time only
    // advances by the polls' cost. Reported instead of running until memory runs out.
    // Work that can still happen: device work in flight, or a thread that is not polling about
    // to issue its next op (it may be what the polls wait for).
    std::set<uint64_t> pollers;
    for (const auto& [key, what] : m_lastPoll)
    {
        pollers.insert(static_cast<uint64_t>(key.first) << 32 | key.second);
    }
    // ... or a program thread that neither polls nor waits for an answer: it runs outside
    // CUDA (maybe waiting for the pollers, as an MPI barrier does), and may still issue work.
    bool running = false;
    for (const auto& [id, c] : m_conns)
    {
        running = running || (c.process >= 0 && c.outstanding == 0 && !c.polling);
    }
    const bool progressPossible = running || HostFirstScheduler::PendingOtherEvents() > 0 ||
                                  HostFirstScheduler::HostStepPendingExcept(pollers);
    if (m_pollsSinceProgress < kLivelockPolls || progressPossible)
    {
        if (progressPossible)
        {
            m_progressWallS = -1;
        }
        return;
    }
    const double now = WallSeconds();
    if (m_progressWallS < 0)
    {
        m_progressWallS = now;
        return;
    }
    if (now - m_progressWallS < kLivelockWallS)
    {
        return;
    }
    std::ostringstream os;
    os << "the programs keep polling for work that can never complete (" << m_pollsSinceProgress
       << " polls answered \"not ready\" while no device work was in flight, at simulated "
       << Simulator::Now().GetMicroSeconds() << " us):";
    for (const auto& [key, what] : m_lastPoll)
    {
        os << "\n  " << Describe(key.first, key.second) << " polls " << what;
    }
    throw LiveRunEnded(os.str());
}

bool
LiveJobSource::Gate(bool haveEvent, uint64_t ts)
{
    if (InterruptGuard::Received())
    {
        CheckDeadline(); // a signal ends the run at once, even while events run back to back
    }
    if ((++m_gateCalls & 1023) == 0)
    {
        CheckLivelock();
    }
    // Called several times per event: the bound is recomputed only when something changed.
    if (m_dirty)
    {
        WakeParked();
        m_bound = Bound();
        m_dirty = false;
        if (m_spec.active)
        {
            ReleaseHeld();
            if (m_held.empty() && m_bound > m_spec.maxTs)
            {
                Commit(); // nothing the speculation ran can be overtaken any more
            }
        }
    }
    const uint64_t bound = m_bound;
    if (haveEvent && ts < bound)
    {
        m_stuckSince = -1;
        m_heldSince = -1;
        if (m_spec.active)
        {
            m_spec.maxTs = std::max(m_spec.maxTs, ts);
            ++m_spec.events;
        }
        return false; // no program can still send anything that comes before this event
    }
    CheckDeadline();
    if (haveEvent && m_optimistic)
    {
        const double now = WallSeconds();
        if (!m_spec.active && m_heldSince >= 0 && now - m_heldSince > m_speculateAfterS)
        {
            Speculate(); // returns in the speculating child, or in the snapshot after a rollback
            m_heldSince = -1;
            if (!m_spec.active)
            {
                return true; // restored: look again with what the speculation read
            }
        }
        if (m_spec.active)
        {
            // Run on past the bound; keep reading the programs now and then.
            if (now - m_spec.lastPumpS > 0.001)
            {
                m_spec.lastPumpS = now;
                Pump(0);
                m_dirty = true;
                return true;
            }
            m_spec.maxTs = std::max(m_spec.maxTs, ts);
            ++m_spec.events;
            return false;
        }
    }
    if (!haveEvent && bound == UINT64_MAX)
    {
        // Nothing scheduled and nothing parked that bounds time: done, unless a program
        // thread still appears (then it starts, and the simulation goes on).
        m_launcher.Reap();
        if ((m_launcher.Processes().empty() || m_launcher.Reap()) && m_conns.empty())
        {
            Pump(0);
            WakeParked();
            return !m_conns.empty();
        }
        if (Deadlocked())
        {
            return false;
        }
    }
    const double t0 = WallSeconds();
    if (haveEvent || !m_held.empty()) // an event, or a speculative answer, waits for the bound
    {
        if (m_heldSince < 0)
        {
            m_heldSince = t0;
        }
        else if (t0 - m_heldSince > 0.02 && LiftBlockedThreads())
        {
            m_heldSince = -1;
            m_dirty = true;
            return true;
        }
    }
    char what[96];
    std::snprintf(what, sizeof what, "the programs' next calls (simulated time %.3f us)", ts / 1e3);
    m_waitingFor = what;
    Pump(haveEvent ? 10 : 50);
    WakeParked();
    m_stats.waitForProgramS += WallSeconds() - t0;
    return true;
}

void
LiveJobSource::Returned(uint32_t rank, uint32_t thread, const Op& op, int64_t value)
{
    auto it = m_waits.find(&op);
    if (it == m_waits.end())
    {
        return;
    }
    const PendingAnswer a = it->second;
    m_waits.erase(it);
    const uint64_t now = static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
    // A poll answered "not ready" (the engine turned it into the host time it cost).
    const bool notReady = value == 0 && op.kind == gpusim::OpKind::HostWork &&
                          (op.name == "cudaStreamQuery" || op.name == "cudaEventQuery");
    if (auto pc = m_conns.find(a.conn); pc != m_conns.end())
    {
        pc->second.polling = notReady;
    }
    if (notReady)
    {
        ++m_pollsSinceProgress;
        char what[128];
        std::snprintf(what,
                      sizeof what,
                      "%s on %s %lld",
                      op.name.c_str(),
                      op.name == "cudaStreamQuery" ? "stream" : "event",
                      op.name == "cudaStreamQuery" ? static_cast<long long>(op.stream)
                                                   : static_cast<long long>(op.event));
        m_lastPoll[{rank, thread}] = what;
    }
    else
    {
        NoteProgress();
        m_lastPoll.erase({rank, thread});
    }
    auto c = m_conns.find(a.conn);
    if (m_spec.active && now >= m_bound && c != m_conns.end())
    {
        // Computed past the bound: final only once no other program can still send an op
        // before it. Meanwhile the thread still waits, and resumes no earlier than now.
        m_held.push_back({a.conn, rank, thread, a.seq, now, value});
        Connection& held = c->second;
        held.heldMinNs = held.heldAnswers++ == 0 ? now : std::min(held.heldMinNs, now);
        m_dirty = true;
        return;
    }
    Answer(a.conn, rank, thread, a.seq, value, now);
}

void
LiveJobSource::Answer(int32_t conn, uint32_t rank, uint32_t thread, uint64_t seq, int64_t value,
                      uint64_t atNs)
{
    ThreadFeed& f = m_feeds[rank][thread];
    f.lastIssueNs = atNs; // its next op issues relative to the return
    if (f.unanswered > 0)
    {
        --f.unanswered;
    }
    f.lastIssueNs += f.deferredNs; // ops that came after this answer (restored snapshot)
    f.deferredNs = 0;
    auto c = m_conns.find(conn);
    if (c == m_conns.end())
    {
        return; // the thread is gone
    }
    --c->second.outstanding;
    c->second.clockNs = std::max(c->second.clockNs, f.lastIssueNs);
    m_dirty = true;
    ++m_stats.answers;
    m_answered(rank, thread, NanoSeconds(static_cast<int64_t>(atNs)), value);
    Send(conn,
         "A " + std::to_string(seq) + " " + std::to_string(atNs) + " " + std::to_string(value) +
             "\n");
}

void
LiveJobSource::ReleaseHeld()
{
    // In the order they were computed, as the conservative synchronizer would have given them:
    // an answer goes once no program but its own (which waits for it) can still send an op at
    // or before it; the ones computed after it do not count (they come later).
    while (!m_held.empty())
    {
        const HeldAnswer h = m_held.front();
        auto c = m_conns.find(h.conn);
        if (c != m_conns.end() && h.atNs >= BoundExcept(h.conn))
        {
            return;
        }
        m_held.erase(m_held.begin());
        if (c != m_conns.end() && --c->second.heldAnswers == 0)
        {
            c->second.heldMinNs = 0;
        }
        Answer(h.conn, h.rank, h.thread, h.seq, h.value, h.atNs);
    }
}

void
LiveJobSource::Send(int32_t id, const std::string& msg)
{
    auto it = m_conns.find(id);
    if (it == m_conns.end())
    {
        return;
    }
    const char* p = msg.data();
    size_t left = msg.size();
    while (left > 0)
    {
        ssize_t n = ::send(it->second.fd, p, left, MSG_NOSIGNAL);
        if (n > 0)
        {
            p += n;
            left -= static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EINTR))
        {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        {
            // A program that stops reading for a second is not waiting for this answer.
            pollfd pf = {it->second.fd, POLLOUT, 0};
            if (::poll(&pf, 1, 1000) <= 0)
            {
                return;
            }
            continue;
        }
        return; // the program is gone; its end shows when the connection closes
    }
}

void
LiveJobSource::CheckDeadline() const
{
    if (InterruptGuard::Received())
    {
        throw LiveRunEnded(std::string("interrupted by signal ") +
                           std::to_string(InterruptGuard::Received()));
    }
    if (m_timeoutS > 0 && WallSeconds() - m_startWall > m_timeoutS)
    {
        std::ostringstream os;
        os << "timed out after " << m_timeoutS << " s";
        if (!m_waitingFor.empty())
        {
            os << " (the simulator was waiting for " << m_waitingFor << ")";
        }
        throw LiveRunEnded(os.str());
    }
}

void
LiveJobSource::Pump(int timeoutMs, bool checkDeadline)
{
    if (checkDeadline)
    {
        CheckDeadline();
    }
    // Reap before polling the listening socket: a process that connected and exited is then
    // accepted (and read in full) before its end is concluded. Not on every call: it costs a
    // system call per process, and the hot path is one round trip per blocking call.
    const double now = WallSeconds();
    if (timeoutMs == 0 || now - m_lastReapS > 0.02)
    {
        m_launcher.Reap();
        m_lastReapS = now;
    }
    m_pollFds.clear();
    m_pollIds.clear();
    m_pollFds.push_back({m_listenFd, POLLIN, 0});
    m_pollIds.push_back(-1);
    for (const auto& [id, c] : m_conns)
    {
        m_pollFds.push_back({c.fd, POLLIN, 0});
        m_pollIds.push_back(id);
    }
    // What the programs wrote to their rings needs no waiting.
    if (DrainRings() && timeoutMs > 0)
    {
        timeoutMs = 0;
    }
    // The programs usually answer within microseconds: look briefly before sleeping (a sleep
    // costs the machine's process wake-up latency on every round trip).
    int n = 0;
    for (int spin = 0; m_spin && spin < 100 && n == 0 && timeoutMs > 0; ++spin)
    {
        n = ::poll(m_pollFds.data(), m_pollFds.size(), 0);
        if (n == 0 && DrainRings())
        {
            timeoutMs = 0;
        }
    }
    if (n == 0)
    {
        if (timeoutMs > 0 && SleepRings(true))
        {
            timeoutMs = 0; // written just before the flag was seen
        }
        n = ::poll(m_pollFds.data(), m_pollFds.size(), timeoutMs);
        SleepRings(false);
        DrainRings();
    }
    m_dirty = true;
    if (n <= 0)
    {
        m_launcher.Reap();
        m_lastReapS = WallSeconds();
        return;
    }
    if (m_pollFds[0].revents & POLLIN)
    {
        for (int fd; (fd = ::accept4(m_listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;)
        {
            Connection c;
            c.fd = fd;
            if (m_spec.active)
            {
                m_spec.accepted.insert(m_nextConn);
            }
            m_conns.emplace(m_nextConn++, std::move(c));
        }
    }
    for (size_t i = 1; i < m_pollFds.size(); ++i)
    {
        if (m_pollFds[i].revents & (POLLIN | POLLHUP | POLLERR))
        {
            ReadConnection(m_pollIds[i]);
        }
    }
}

void
LiveJobSource::ReadConnection(int32_t id)
{
    char buf[65536];
    while (true)
    {
        auto it = m_conns.find(id);
        if (it == m_conns.end())
        {
            return;
        }
        // The HELLO line brings the thread's op ring; afterwards the socket only carries
        // wake-up bytes (and, without a ring, the op lines themselves).
        iovec iov = {buf, sizeof buf};
        char control[CMSG_SPACE(sizeof(int))];
        msghdr msg = {};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        ssize_t n = ::recvmsg(it->second.fd, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        {
            DrainRing(id);
            return;
        }
        if (n <= 0)
        {
            DrainRing(id); // what the thread wrote before it ended
            const Connection& c = m_conns.at(id);
            if (!c.in.empty())
            {
                throw LiveRunEnded(c.where + " closed its connection in the middle of a line: '" +
                                   c.in.substr(0, 80) + "'");
            }
            if (m_spec.active)
            {
                m_spec.eof.insert(id);
            }
            CloseConnection(id);
            return;
        }
        for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
        {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            {
                int ringFd = -1;
                std::memcpy(&ringFd, CMSG_DATA(cm), sizeof ringFd);
                AttachRing(id, ringFd);
            }
        }
        Ingest(id, buf, static_cast<size_t>(n));
    }
}

void
LiveJobSource::AttachRing(int32_t id, int ringFd)
{
    Connection& c = m_conns.at(id);
    struct stat st;
    if (c.ring || ringFd < 0 || ::fstat(ringFd, &st) != 0 ||
        static_cast<size_t>(st.st_size) <= kRingHeader)
    {
        if (ringFd >= 0 && ringFd != c.ringFd)
        {
            ::close(ringFd);
        }
        return;
    }
    void* p = ::mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, ringFd, 0);
    const uint64_t capacity = p == MAP_FAILED ? 0 : RingCapacity(static_cast<char*>(p));
    if (capacity == 0 || capacity + kRingHeader > static_cast<size_t>(st.st_size))
    {
        if (p != MAP_FAILED)
        {
            ::munmap(p, st.st_size);
        }
        if (ringFd != c.ringFd)
        {
            ::close(ringFd);
        }
        throw LiveRunEnded(c.where + ": cannot map its op ring");
    }
    c.ring = static_cast<char*>(p);
    c.ringBytes = st.st_size;
    c.ringCapacity = capacity;
    c.ringFd = ringFd; // kept: a rolled-back snapshot gets it with the connection
    if (m_spec.active)
    {
        m_spec.rings.insert(id); // the snapshot has not seen this ring: hand it over on rollback
    }
}

bool
LiveJobSource::DrainRing(int32_t id)
{
    auto it = m_conns.find(id);
    if (it == m_conns.end() || !it->second.ring)
    {
        return false;
    }
    char* ring = it->second.ring;
    const uint64_t head = __atomic_load_n(RingHead(ring), __ATOMIC_ACQUIRE);
    const uint64_t tail = __atomic_load_n(RingTail(ring), __ATOMIC_RELAXED);
    if (head == tail)
    {
        return false;
    }
    const uint64_t capacity = it->second.ringCapacity;
    if (head - tail > capacity)
    {
        throw LiveRunEnded(it->second.where + ": its op ring is corrupt (" +
                           std::to_string(head - tail) + " bytes pending in a ring of " +
                           std::to_string(capacity) + ")");
    }
    const uint64_t at = tail % capacity;
    const size_t first = static_cast<size_t>(std::min(head - tail, capacity - at));
    AppendInput(id, ring + kRingHeader + at, first);
    AppendInput(id, ring + kRingHeader, static_cast<size_t>(head - tail) - first);
    // Consumed (and logged, when speculating) before the lines are handled: a rollback while
    // handling them hands the snapshot these bytes, which must not be read again.
    __atomic_store_n(RingTail(ring), head, __ATOMIC_RELEASE);
    HandleInput(id);
    return true;
}

bool
LiveJobSource::DrainRings()
{
    bool any = false;
    m_drainIds.clear();
    for (const auto& [id, c] : m_conns)
    {
        if (c.ring)
        {
            m_drainIds.push_back(id);
        }
    }
    for (int32_t id : m_drainIds)
    {
        any = DrainRing(id) || any;
    }
    return any;
}

bool
LiveJobSource::SleepRings(bool sleeping)
{
    // Before sleeping in poll(): tell every program to wake us (a byte on its socket) when it
    // writes, then look once more (a write that missed the flag is seen here).
    bool data = false;
    for (const auto& [id, c] : m_conns)
    {
        if (c.ring)
        {
            __atomic_store_n(RingSleeping(c.ring), sleeping ? 1u : 0u, __ATOMIC_RELAXED);
        }
    }
    if (!sleeping)
    {
        return false;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (const auto& [id, c] : m_conns)
    {
        data = data || (c.ring && __atomic_load_n(RingHead(c.ring), __ATOMIC_RELAXED) !=
                                      __atomic_load_n(RingTail(c.ring), __ATOMIC_RELAXED));
    }
    return data;
}

void
LiveJobSource::Ingest(int32_t id, const char* data, size_t n)
{
    AppendInput(id, data, n);
    HandleInput(id);
}

void
LiveJobSource::AppendInput(int32_t id, const char* data, size_t n)
{
    if (n == 0)
    {
        return;
    }
    if (m_spec.active)
    {
        m_spec.log[id].append(data, n);
    }
    m_conns.at(id).in.append(data, n);
}

void
LiveJobSource::HandleInput(int32_t id)
{
    size_t start = 0;
    for (size_t nl; m_conns.count(id) && (nl = m_conns.at(id).in.find('\n', start)) != std::string::npos;)
    {
        const std::string& in = m_conns.at(id).in;
        const size_t from = start;
        start = nl + 1;
        HandleLine(id, std::string_view(in.data() + from, nl - from));
    }
    if (m_conns.count(id))
    {
        Connection& c = m_conns.at(id);
        c.in.erase(0, start);
        // A live message is one short line (an op's JSON); a connection that sends more without
        // a newline is broken or hostile: stop before it eats the memory.
        if (c.in.size() > kMaxLineBytes)
        {
            throw LiveRunEnded(c.where + " sent " + std::to_string(c.in.size()) +
                               " bytes without a newline (a live message is one line of at most " +
                               std::to_string(kMaxLineBytes >> 20) + " MiB): '" +
                               c.in.substr(0, 40) + "...'");
        }
    }
}

namespace
{
std::string
BadHello(const std::string& where, std::string_view line)
{
    return where + ": bad hello '" + std::string(line.substr(0, 80)) + "'";
}

std::string
NotLiveMessage(const std::string& where, uint64_t lineNo, std::string_view line)
{
    return where + ", line " + std::to_string(lineNo) + ": not a gpusim live message: '" +
           std::string(line.substr(0, 80)) + "'";
}
} // namespace

LiveLine
ParseLiveLine(std::string_view line, size_t ranks, const std::string& where, uint64_t lineNo)
{
    LiveLine out;
    if (line.rfind("HELLO ", 0) == 0)
    {
        // "HELLO pid tid"
        const std::string hello(line.substr(0, 80));
        if (std::sscanf(hello.c_str() + 6, "%d %d", &out.pid, &out.tid) != 2 || out.pid <= 0)
        {
            throw LiveRunEnded(BadHello(where, line));
        }
        out.kind = 'H';
        return out;
    }
    if (line.size() < 4 || (line[0] != 'O' && line[0] != 'W') || line[1] != ' ')
    {
        throw LiveRunEnded(NotLiveMessage(where, lineNo, line));
    }
    // "O <rank> {...}": the rank's digits, then the op's JSON up to the end of the line.
    size_t pos = 2;
    long rankL = 0;
    while (pos < line.size() && pos < 12 && line[pos] >= '0' && line[pos] <= '9')
    {
        rankL = rankL * 10 + (line[pos++] - '0');
    }
    if (pos == 2 || pos >= line.size() || line[pos] != ' ' || rankL >= static_cast<long>(ranks))
    {
        throw LiveRunEnded(where + ", line " + std::to_string(lineNo) +
                           ": rank out of range in '" + std::string(line.substr(0, 80)) +
                           "' (the job has " + std::to_string(ranks) + " GPUs)");
    }
    out.kind = line[0];
    out.rank = static_cast<uint32_t>(rankL);
    out.json = line.substr(pos + 1);
    return out;
}

void
LiveJobSource::HandleLine(int32_t id, std::string_view line)
{
    if (line.empty())
    {
        return; // a wake-up byte
    }
    Connection& c = m_conns.at(id);
    ++c.lines;
    c.lifted = false; // it runs again
    c.lastLineWallS = WallSeconds();
    const std::string& where = c.where;
    const bool hello = line.rfind("HELLO ", 0) == 0;
    if (hello ? c.process >= 0 : c.process < 0)
    {
        // A second HELLO, or an op before the HELLO.
        throw LiveRunEnded(hello ? BadHello(where, line) : NotLiveMessage(where, c.lines, line));
    }
    const LiveLine msg = ParseLiveLine(line, m_store.size(), where, c.lines);
    if (msg.kind == 'H')
    {
        // The process is found from its pid (launched, or a child of one).
        c.process = ProcessOf(msg.pid);
        ++m_processes[c.process].connections;
        c.pid = msg.pid;
        c.tid = msg.tid;
        c.where = "live " + DescribeProcess(c.process);
        return;
    }
    const std::string_view json = msg.json;
    const uint32_t rank = msg.rank;
    // One GPU, one process (the shim refuses a second one before it sends anything; this
    // guards the protocol).
    if (m_rankOwner[rank] < 0)
    {
        if (m_rankReleased[rank])
        {
            throw LiveRunEnded(where + " used GPU " + std::to_string(rank % m_plan.gpusPerServer) +
                               " of server " + std::to_string(m_plan.ServerOfRank(rank)) +
                               " (rank " + std::to_string(rank) +
                               ") after the simulation had gone on without it");
        }
        m_rankOwner[rank] = c.process;
    }
    else if (m_rankOwner[rank] != c.process)
    {
        throw LiveRunEnded(DescribeProcess(m_rankOwner[rank]) + " and " +
                           DescribeProcess(c.process) + " both issue work on GPU " +
                           std::to_string(rank % m_plan.gpusPerServer) + " of server " +
                           std::to_string(m_plan.ServerOfRank(rank)) + " (rank " +
                           std::to_string(rank) + "); each GPU belongs to one process");
    }
    Op op;
    try
    {
        op = gpusim::ParseOpLine(json.data(), json.size(), where, c.lines);
    }
    catch (const gpusim::TraceFormatError& e)
    {
        throw LiveRunEnded(e.what());
    }
    if (!op.query)
    {
        NoteProgress(); // the program did something other than polling
        c.polling = false;
        m_lastPoll.erase({rank, op.thread}); // no longer a poller
    }
    m_store[rank].push_back(std::move(op));
    Op* stored = &m_store[rank].back();
    ++m_stats.opsReceived;
    m_opReceived(rank, stored->thread, *stored);
    auto& threads = m_feeds[rank];
    const bool isNew = !threads.count(stored->thread);
    ThreadFeed& f = threads[stored->thread];
    f.conn = id;
    f.queue.push_back(stored);
    // The engine will issue it at the previous issue (or answer) time plus its host time;
    // the program thread's clock is at least that from now on.
    const uint64_t cpuNs = static_cast<uint64_t>(std::llround(stored->cpuUs * 1e3));
    const bool afterAnswer = f.unanswered > 0; // sent after an answer not given here yet
    if (afterAnswer)
    {
        f.deferredNs += cpuNs; // its instant is known once the answer is (Answer())
    }
    else
    {
        f.lastIssueNs += cpuNs;
        c.clockNs = std::max(c.clockNs, f.lastIssueNs);
    }
    if (m_spec.active && !afterAnswer && f.lastIssueNs <= m_spec.maxTs)
    {
        RollBack(); // the speculation ran past this op's instant
    }
    c.feeds.insert({rank, stored->thread});
    if (!isNew && !afterAnswer &&
        f.lastIssueNs < static_cast<uint64_t>(Simulator::Now().GetNanoSeconds()))
    {
        // Only after a wait was lifted: it issues now; the replay would issue it on time.
        if (m_stats.lateOps++ == 0)
        {
            m_warning(Format("%s issued an op at simulated %.3f us, after the simulation had "
                             "passed it (%.3f us); late ops issue at once and the replay of the "
                             "recording differs from this run",
                             Describe(rank, stored->thread).c_str(),
                             f.lastIssueNs / 1e3,
                             Simulator::Now().GetNanoSeconds() / 1e3));
        }
    }
    if (line[0] == 'W')
    {
        ++c.outstanding;
        ++f.unanswered;
        m_waits[stored] = PendingAnswer{id, ++c.waitSeq};
    }
    if (isNew)
    {
        // A thread first seen now starts from the time origin; if its first op's instant has
        // passed, it issues late (a replay of the recording would issue it on time).
        const uint64_t now = static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
        if (f.lastIssueNs < now)
        {
            ++m_stats.lateThreads;
            m_warning(Format("%s first called CUDA at simulated %.3f us, after the simulation had "
                             "passed it (%.3f us); it starts late",
                             Describe(rank, stored->thread).c_str(),
                             f.lastIssueNs / 1e3,
                             now / 1e3));
        }
        NotifyNewThread(rank, stored->thread);
    }
    else if (f.parked)
    {
        WakeParked();
    }
}

void
LiveJobSource::CloseConnection(int32_t id)
{
    auto it = m_conns.find(id);
    if (it == m_conns.end())
    {
        return;
    }
    ::close(it->second.fd);
    if (it->second.ring)
    {
        ::munmap(it->second.ring, it->second.ringBytes);
        ::close(it->second.ringFd);
    }
    if (it->second.process >= 0 && m_processes[it->second.process].connections > 0)
    {
        --m_processes[it->second.process].connections;
    }
    m_conns.erase(it);
}

void
LiveJobSource::Speculate()
{
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    {
        return; // no snapshot: stay conservative
    }
    // The snapshot's resident memory (copy-on-write: only what the child then changes is new).
    if (FILE* f = std::fopen("/proc/self/statm", "r"))
    {
        unsigned long long size = 0;
        unsigned long long resident = 0;
        if (std::fscanf(f, "%llu %llu", &size, &resident) == 2)
        {
            m_stats.maxSnapshotBytes =
                std::max<uint64_t>(m_stats.maxSnapshotBytes, resident * ::sysconf(_SC_PAGESIZE));
        }
        std::fclose(f);
    }
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0)
    {
        ::close(sv[0]);
        ::close(sv[1]);
        return;
    }
    ++m_stats.snapshots;
    if (pid == 0)
    {
        ::close(sv[0]);
        m_spec = Speculation();
        m_spec.active = true;
        m_spec.channel = sv[1];
        m_spec.lastPumpS = WallSeconds();
        m_launcher.TakeStatusLog(); // from here on, what the child reads is logged
        return;
    }
    ::close(sv[1]);
    WaitAsSnapshot(sv[0]);
}

void
LiveJobSource::WaitAsSnapshot(int channel)
{
    // Blocks until the speculating child commits (then this snapshot is not needed: exit) or
    // rolls back (then ingest what it read, and go on from this state).
    char rec[4096];
    // Connections the child accepted: (id, socket, op ring or -1); rings it attached to
    // connections this snapshot knows: (id, op ring).
    std::vector<std::tuple<int32_t, int, int>> fds;
    std::vector<std::pair<int32_t, int>> rings;
    while (true)
    {
        iovec iov = {rec, sizeof rec - 1};
        char control[CMSG_SPACE(2 * sizeof(int))];
        msghdr msg = {};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(channel, &msg, 0);
        if (n < 0 && errno == EINTR)
        {
            if (InterruptGuard::Received())
            {
                ::_exit(0); // the active simulator handles the interrupt
            }
            continue;
        }
        if (n <= 0)
        {
            // The child died without handing back: nothing to go on from.
            std::fprintf(stderr, "gpusim run: the speculating simulator died; giving up\n");
            ::_exit(2);
        }
        rec[n] = '\0';
        if (rec[0] == 'C')
        {
            ::_exit(0);
        }
        if (rec[0] == 'F')
        {
            cmsghdr* cm = CMSG_FIRSTHDR(&msg);
            int got[2] = {-1, -1};
            if (cm && cm->cmsg_type == SCM_RIGHTS)
            {
                const size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                std::memcpy(got, CMSG_DATA(cm), std::min<size_t>(n, 2) * sizeof(int));
            }
            fds.emplace_back(std::atoi(rec + 2), got[0], got[1]);
            continue;
        }
        if (rec[0] == 'G')
        {
            cmsghdr* cm = CMSG_FIRSTHDR(&msg);
            int ringFd = -1;
            if (cm && cm->cmsg_type == SCM_RIGHTS)
            {
                std::memcpy(&ringFd, CMSG_DATA(cm), sizeof ringFd);
            }
            rings.emplace_back(std::atoi(rec + 2), ringFd);
            continue;
        }
        if (rec[0] == 'R')
        {
            break;
        }
    }
    ::close(channel);
    // The child's log: "S <len>\n<statuses>" then "B <conn> <eof> <len>\n<bytes>" entries.
    char path[256];
    unsigned long long events = 0;
    std::sscanf(rec + 2, "%255s %llu", path, &events);
    std::string log;
    if (FILE* f = std::fopen(path, "rb"))
    {
        char buf[65536];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
        {
            log.append(buf, n);
        }
        std::fclose(f);
    }
    ::unlink(path);
    ++m_stats.rollbacks;
    m_stats.resimulatedEvents += events;
    m_rolledBack(events);
    for (const auto& [id, fd, ringFd] : fds)
    {
        Connection c;
        c.fd = fd;
        m_conns.emplace(id, std::move(c));
        m_nextConn = std::max(m_nextConn, id + 1);
        AttachRing(id, ringFd);
    }
    for (const auto& [id, ringFd] : rings)
    {
        if (m_conns.count(id))
        {
            AttachRing(id, ringFd);
        }
        else if (ringFd >= 0)
        {
            ::close(ringFd);
        }
    }
    size_t pos = 0;
    while (pos < log.size())
    {
        const size_t nl = log.find('\n', pos);
        if (nl == std::string::npos)
        {
            break;
        }
        const std::string head = log.substr(pos, nl - pos);
        pos = nl + 1;
        int id = -1;
        int eof = 0;
        unsigned long long len = 0;
        if (head[0] == 'S' && std::sscanf(head.c_str(), "S %llu", &len) == 1)
        {
            m_launcher.ApplyStatusLog(log.substr(pos, len));
        }
        else if (std::sscanf(head.c_str(), "B %d %d %llu", &id, &eof, &len) == 3 &&
                 m_conns.count(id))
        {
            Ingest(id, log.data() + pos, len);
            if (eof)
            {
                CloseConnection(id);
            }
        }
        pos += len;
    }
    m_dirty = true;
}

void
LiveJobSource::RollBack()
{
    // Hand the snapshot everything read since it was taken, then vanish: the snapshot
    // re-simulates from its state with those ops in their places.
    const std::string path =
        m_socketDir + "/rollback-" + std::to_string(::getpid()) + ".log";
    if (FILE* f = std::fopen(path.c_str(), "wb"))
    {
        const std::string statuses = m_launcher.TakeStatusLog();
        std::fprintf(f, "S %zu\n", statuses.size());
        std::fwrite(statuses.data(), 1, statuses.size(), f);
        std::set<int32_t> ids(m_spec.eof);
        for (const auto& kv : m_spec.log)
        {
            ids.insert(kv.first);
        }
        for (int32_t id : ids)
        {
            const std::string& bytes = m_spec.log[id];
            std::fprintf(f, "B %d %d %zu\n", id, m_spec.eof.count(id) ? 1 : 0, bytes.size());
            std::fwrite(bytes.data(), 1, bytes.size(), f);
        }
        std::fclose(f);
    }
    for (int32_t id : m_spec.accepted)
    {
        auto it = m_conns.find(id);
        if (it == m_conns.end())
        {
            continue; // accepted and closed since: its bytes and end are in the log
        }
        // The connection's socket and, if it has one, its op ring.
        const int fds[2] = {it->second.fd, it->second.ringFd};
        SendRecord(m_spec.channel, "F " + std::to_string(id), fds, it->second.ringFd >= 0 ? 2 : 1);
    }
    // Rings of connections the snapshot knows, attached since (their HELLO came later).
    for (int32_t id : m_spec.rings)
    {
        auto it = m_conns.find(id);
        if (it == m_conns.end() || m_spec.accepted.count(id) || it->second.ringFd < 0)
        {
            continue;
        }
        SendRecord(m_spec.channel, "G " + std::to_string(id), &it->second.ringFd, 1);
    }
    const std::string rec = "R " + path + " " + std::to_string(m_spec.events);
    (void)!::send(m_spec.channel, rec.data(), rec.size(), 0);
    std::fflush(nullptr);
    ::_exit(0);
}

void
LiveJobSource::Commit()
{
    (void)!::send(m_spec.channel, "C", 1, 0);
    ::close(m_spec.channel);
    ++m_stats.commits;
    m_spec = Speculation();
}

int
LiveJobSource::SplitCoordinator()
{
    return m_launcher.SplitCoordinator();
}

void
LiveJobSource::ReportResult(int code)
{
    m_launcher.ReportResult(code);
}

void
LiveJobSource::FailWaitingCalls(const std::string& why)
{
    for (const auto& [op, a] : m_waits)
    {
        Send(a.conn, "E " + std::to_string(a.seq) + " " + why + "\n");
    }
    m_waits.clear();
}

bool
LiveJobSource::Run()
{
    InterruptGuard guard;
    HostFirstScheduler::SetGate([this](bool have, uint64_t ts) { return Gate(have, ts); });
    m_stats.optimistic = m_optimistic;
    try
    {
        Simulator::Run();
        HostFirstScheduler::SetGate(nullptr);
        if (m_spec.active)
        {
            // Every program is done: nothing can arrive any more, the speculation stands.
            ReleaseHeld();
            Commit();
        }
    }
    catch (const LiveRunEnded& e)
    {
        HostFirstScheduler::SetGate(nullptr);
        m_endReason = e.what();
    }
    catch (...)
    {
        HostFirstScheduler::SetGate(nullptr);
        throw;
    }
    if (!m_launcher.Reap())
    {
        // Programs still wait for answers the simulation cannot give: fail those calls so the
        // programs report the error and exit, then stop whatever is left.
        FailWaitingCalls(m_endReason.empty()
                             ? "the simulation cannot complete this call (see gpusim's report)"
                             : "gpusim run ended: " + m_endReason);
        // Interrupted: the user wants the report within a second.
        const bool interrupted = InterruptGuard::Received() != 0;
        const double until = WallSeconds() + (interrupted ? 0.1 : 3.0);
        while (!m_launcher.Reap() && WallSeconds() < until)
        {
            Pump(interrupted ? 10 : 50, false);
        }
        m_launcher.StopAll(interrupted ? 0.3 : 2.0);
        if (m_endReason.empty())
        {
            m_endReason = "the simulation could not go on while programs still ran";
        }
        return false;
    }
    return m_endReason.empty();
}

gpusim::JobTrace
LiveJobSource::GetRecording() const
{
    gpusim::JobTrace job;
    job.source = "live";
    job.metadata["mode"] = "live";
    std::string prog;
    for (const auto& a : m_program)
    {
        prog += (prog.empty() ? "" : " ") + a;
    }
    job.metadata["program"] = prog;
    job.metadata["processes"] = std::to_string(m_launcher.Processes().size());
    for (uint32_t r = 0; r < m_store.size(); ++r)
    {
        gpusim::RankTrace rt;
        rt.rank = r;
        rt.ops.assign(m_store[r].begin(), m_store[r].end());
        job.ranks.push_back(std::move(rt));
    }
    return job;
}

const LiveRunStats&
LiveJobSource::GetStats() const
{
    return m_stats;
}

const std::vector<ProgramLauncher::Process>&
LiveJobSource::GetProcesses() const
{
    return m_launcher.Processes();
}

const std::string&
LiveJobSource::GetEndReason() const
{
    return m_endReason;
}

} // namespace ns3
