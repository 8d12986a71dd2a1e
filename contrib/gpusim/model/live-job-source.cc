/*
 * LiveJobSource (live-job-source.h): construction, attributes, launching the programs and
 * keeping track of their processes, the run loop and its results. The rest of the class:
 * live-gate.cc (the conservative synchronizer), live-connections.cc (sockets, op rings,
 * protocol lines) and live-speculation.cc (optimistic snapshots and rollback).
 */
#include "ns3/live-job-source.h"

#include "live-job-source-internal.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/host-first-scheduler.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <time.h>
#include <unistd.h>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("LiveJobSource");
NS_OBJECT_ENSURE_REGISTERED(LiveJobSource);

using namespace live_internal;

namespace
{

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
            .AddAttribute("SpeculationLog",
                          "Optimistic mode: a file to which every step of a speculation is "
                          "appended as a line \"STEP PID NS\" (speculate, dry: it has run every "
                          "event it can without the programs, commit, rollback, restored); "
                          "empty: none",
                          StringValue(""),
                          MakeStringAccessor(&LiveJobSource::m_speculationLog),
                          MakeStringChecker())
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
            .AddTraceSource("SpeculationStep",
                            "Optimistic mode: a step of a speculation (speculate, dry, commit, "
                            "rollback, restored) at a simulated time",
                            MakeTraceSourceAccessor(&LiveJobSource::m_speculationStep),
                            "ns3::LiveJobSource::SpeculationStepCallback")
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
        {"libgpusim-clock.so", "libgpusim-node.so", "libcudart.so.13", "libnccl.so.2",
         "libcudnn.so.9"},
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
