/*
 * LiveJobSource's conservative synchronizer (see live-job-source.h): the feed the engine pulls
 * ops from (a thread with no op yet parks), the bound below which no parked program thread can
 * still issue an op, the gate the scheduler asks before each event, lifting threads blocked
 * outside CUDA, deadlock and livelock, and the answers to blocking calls.
 */
#include "ns3/live-job-source.h"

#include "live-job-source-internal.h"

#include "ns3/host-first-scheduler.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

namespace ns3
{

using gpusim::Op;
using namespace live_internal;

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
    if (m_spec.active && !haveEvent && !m_spec.ranDry)
    {
        m_spec.ranDry = true; // what is left needs the programs
        NoteSpeculation("dry", m_spec.maxTs);
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

} // namespace ns3
