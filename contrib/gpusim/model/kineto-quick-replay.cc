#include "ns3/kineto-quick-replay.h"

#include "ns3/log.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

namespace ns3
{
namespace gpusim
{

NS_LOG_COMPONENT_DEFINE("GpusimKinetoQuickReplay");

namespace
{

/// The discrete-event loop of ReplayRecordedDurations(): picks the host thread whose next op
/// issues first, runs that op, and repeats until every thread is done or the rest wait forever.
class QuickReplay
{
  public:
    explicit QuickReplay(const RankTrace& rank);
    QuickReplayResult Run();

  private:
    struct Thread
    {
        std::vector<const Op*> ops;
        size_t pos = 0;
        double clock = 0; //!< when the previous op returned
        bool blocked = false;
    };

    struct Range
    {
        double begin = -1;
        double recBegin = -1;
    };

    double Tail(int64_t s) const;
    int64_t PickNext(double& issue, bool& anyLeft) const;
    void ReportStuck();
    double Execute(const Op& op, size_t index, double t);
    double RunDeviceOp(const Op& op, size_t index, double t);
    void Mark(const Op& op, double t);
    void Finish();

    const RankTrace& m_rank;
    QuickReplayResult m_result;
    std::vector<Thread> m_threads;
    std::unordered_map<int64_t, double> m_streamTail;  //!< completion of the last op per stream
    std::unordered_map<uint64_t, double> m_eventTime;  //!< completion of the latest record
    std::unordered_map<uint64_t, double> m_signalTime; //!< cross-thread tokens
    std::map<std::string, Range> m_open;               //!< marker name -> open range
};

QuickReplay::QuickReplay(const RankTrace& rank) :
    m_rank(rank)
{
    // Group ops by host thread, keeping issue order.
    std::map<uint32_t, std::vector<const Op*>> byThread;
    for (const auto& op : rank.ops)
    {
        byThread[op.thread].push_back(&op);
    }
    m_result.startUs.assign(rank.ops.size(), -1);
    m_result.endUs.assign(rank.ops.size(), -1);
    for (auto& [id, ops] : byThread)
    {
        m_threads.push_back(Thread{std::move(ops)});
    }
}

double
QuickReplay::Tail(int64_t s) const
{
    auto it = m_streamTail.find(s);
    return it == m_streamTail.end() ? 0.0 : it->second;
}

/// Next op: the runnable thread whose next op issues first (ties: lower index), so ops reach
/// each stream in simulated issue order. -1 when none can run (or none is left: !anyLeft).
int64_t
QuickReplay::PickNext(double& issue, bool& anyLeft) const
{
    int64_t pick = -1;
    issue = std::numeric_limits<double>::infinity();
    anyLeft = false;
    for (size_t k = 0; k < m_threads.size(); ++k)
    {
        const auto& th = m_threads[k];
        if (th.pos >= th.ops.size())
        {
            continue;
        }
        anyLeft = true;
        const Op& op = *th.ops[th.pos];
        double t = th.clock + std::max(0.0, op.cpuUs);
        if (op.kind == OpKind::ThreadWait)
        {
            auto s = m_signalTime.find(op.token);
            if (s == m_signalTime.end())
            {
                continue; // blocked until another thread signals
            }
            t = std::max(t, s->second);
        }
        if (t < issue)
        {
            issue = t;
            pick = static_cast<int64_t>(k);
        }
    }
    return pick;
}

void
QuickReplay::ReportStuck()
{
    m_result.complete = false;
    for (size_t k = 0; k < m_threads.size(); ++k)
    {
        if (m_threads[k].pos < m_threads[k].ops.size())
        {
            m_result.stuck += "thread " + std::to_string(k) + " waits for token " +
                              std::to_string(m_threads[k].ops[m_threads[k].pos]->token) + "; ";
        }
    }
    NS_LOG_WARN("quick replay stuck: " << m_result.stuck);
}

/// A kernel, copy, memset or collective: starts when issued and its stream is free, lasts
/// its recorded duration. Returns when the host may continue (a blocking copy's end).
double
QuickReplay::RunDeviceOp(const Op& op, size_t index, double t)
{
    double start = std::max(t, Tail(op.stream));
    double end = start + std::max(0.0, op.durUs);
    m_streamTail[op.stream] = end;
    m_result.startUs[index] = start;
    m_result.endUs[index] = end;
    return op.kind == OpKind::Memcpy && !op.async ? end : t;
}

/// A marker: a Begin opens a range, the matching End closes it into an iteration.
void
QuickReplay::Mark(const Op& op, double t)
{
    if (op.phase == MarkerPhase::Begin)
    {
        m_open[op.name] = Range{t, op.recordedUs};
        return;
    }
    auto it = m_open.find(op.name);
    if (op.phase != MarkerPhase::End || it == m_open.end())
    {
        return;
    }
    QuickReplayIteration iteration;
    iteration.name = op.name;
    iteration.beginUs = it->second.begin;
    iteration.simulatedUs = t - it->second.begin;
    iteration.recordedUs = op.recordedUs >= 0 && it->second.recBegin >= 0
                               ? op.recordedUs - it->second.recBegin
                               : -1;
    m_result.iterations.push_back(iteration);
    m_open.erase(it);
}

/// Runs one op issued at t; returns when its host thread may continue.
double
QuickReplay::Execute(const Op& op, size_t index, double t)
{
    double done = t;
    switch (op.kind)
    {
    case OpKind::Kernel:
    case OpKind::Memcpy:
    case OpKind::Memset:
    case OpKind::Collective:
        done = RunDeviceOp(op, index, t);
        break;
    case OpKind::EventRecord:
        m_eventTime[op.event] = std::max(t, Tail(op.stream));
        break;
    case OpKind::StreamWaitEvent: {
        auto e = m_eventTime.find(op.event);
        if (e != m_eventTime.end())
        {
            m_streamTail[op.stream] = std::max(Tail(op.stream), e->second);
        }
        break;
    }
    case OpKind::EventSync: {
        auto e = m_eventTime.find(op.event);
        done = e == m_eventTime.end() ? t : std::max(t, e->second);
        break;
    }
    case OpKind::StreamSync:
        done = std::max(t, Tail(op.stream));
        break;
    case OpKind::DeviceSync:
        for (const auto& [s, end] : m_streamTail)
        {
            done = std::max(done, end);
        }
        break;
    case OpKind::ThreadSignal:
        m_signalTime.emplace(op.token, t);
        break;
    case OpKind::Marker:
        Mark(op, t);
        break;
    default:
        // Host work, waits already resolved by PickNext, stream/comm creation, memory ops.
        break;
    }
    return done;
}

/// The makespan covers the streams' last work; iterations in order of their begin.
void
QuickReplay::Finish()
{
    for (const auto& [s, end] : m_streamTail)
    {
        m_result.makespanUs = std::max(m_result.makespanUs, end);
    }
    std::stable_sort(m_result.iterations.begin(),
                     m_result.iterations.end(),
                     [](const QuickReplayIteration& a, const QuickReplayIteration& b) {
                         return a.beginUs < b.beginUs;
                     });
}

QuickReplayResult
QuickReplay::Run()
{
    while (true)
    {
        double t = 0; // issue time
        bool anyLeft = false;
        const int64_t pick = PickNext(t, anyLeft);
        if (!anyLeft)
        {
            break;
        }
        if (pick < 0)
        {
            ReportStuck();
            break;
        }
        auto& th = m_threads[pick];
        const Op& op = *th.ops[th.pos++];
        size_t index = static_cast<size_t>(&op - m_rank.ops.data());
        m_result.startUs[index] = t;
        const double done = Execute(op, index, t); // when the host thread may continue
        th.clock = done;
        if (m_result.endUs[index] < 0)
        {
            m_result.endUs[index] = done;
        }
        ++m_result.opsExecuted;
        m_result.makespanUs = std::max(m_result.makespanUs, done);
    }
    Finish();
    return std::move(m_result);
}

} // namespace

QuickReplayResult
ReplayRecordedDurations(const RankTrace& rank)
{
    return QuickReplay(rank).Run();
}

} // namespace gpusim
} // namespace ns3
