/*
 * LiveJobSource's connections to the programs: the socket loop (Pump), sending answers, each
 * program thread's shared-memory op ring, and the protocol's lines (ParseLiveLine, HandleLine).
 */
#include "ns3/live-job-source.h"

#include "live-job-source-internal.h"

#include "ns3/simulator.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ns3
{

using gpusim::Op;
using namespace live_internal;

namespace
{

/// Longest live message line accepted (an op line is a few hundred bytes; kernel names can be
/// long, but not this long).
constexpr size_t kMaxLineBytes = 1 << 20;

} // namespace

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
        const uint64_t before = c.clockNs;
        c.clockNs = std::max(c.clockNs, f.lastIssueNs);
        c.opsAtClock = c.clockNs == before ? c.opsAtClock + 1 : 0;
        if (c.opsAtClock >= kOpsWithoutTime)
        {
            throw LiveRunEnded(Format("%s issued %llu ops in a row without its clock moving from "
                                      "simulated %.3f us (calls that cost no host time?); "
                                      "stopped before they fill the memory",
                                      c.where.c_str(),
                                      static_cast<unsigned long long>(c.opsAtClock),
                                      c.clockNs / 1e3));
        }
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

} // namespace ns3
