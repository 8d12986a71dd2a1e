/*
 * LiveJobSource's optimistic synchronization (attribute Optimistic, doc/live-mode.md): the
 * fork()ed snapshot that waits while the child speculates past the bound, answers held until
 * they are final, rollback (the child hands the snapshot what it read) and commit.
 */
#include "ns3/live-job-source.h"

#include "live-job-source-internal.h"

#include "ns3/simulator.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/socket.h>
#include <tuple>
#include <unistd.h>

namespace ns3
{

using namespace live_internal;

namespace
{

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

} // namespace

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
        NoteSpeculation("speculate", Simulator::Now().GetNanoSeconds());
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
            m_warning("the speculating simulator died; giving up");
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
    NoteSpeculation("restored", Simulator::Now().GetNanoSeconds());
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
    NoteSpeculation("rollback", m_spec.maxTs);
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
    NoteSpeculation("commit", m_spec.maxTs);
    (void)!::send(m_spec.channel, "C", 1, 0);
    ::close(m_spec.channel);
    ++m_stats.commits;
    m_spec = Speculation();
}

void
LiveJobSource::NoteSpeculation(const char* step, uint64_t atNs)
{
    m_speculationStep(step, NanoSeconds(static_cast<int64_t>(atNs)));
    if (m_speculationLog.empty())
    {
        return;
    }
    // One append per line: the snapshot and the child write to the same file.
    char line[96];
    const int n = std::snprintf(line,
                                sizeof line,
                                "%s %d %llu\n",
                                step,
                                static_cast<int>(::getpid()),
                                static_cast<unsigned long long>(atNs));
    const int fd = ::open(m_speculationLog.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
    {
        (void)!::write(fd, line, n);
        ::close(fd);
    }
}

} // namespace ns3
