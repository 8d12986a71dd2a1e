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

QuickReplayResult
ReplayRecordedDurations(const RankTrace& rank)
{
    QuickReplayResult result;
    // Group ops by host thread, keeping issue order.
    std::map<uint32_t, std::vector<const Op*>> byThread;
    for (const auto& op : rank.ops)
    {
        byThread[op.thread].push_back(&op);
    }
    result.startUs.assign(rank.ops.size(), -1);
    result.endUs.assign(rank.ops.size(), -1);
    struct Thread
    {
        std::vector<const Op*> ops;
        size_t pos = 0;
        double clock = 0; //!< when the previous op returned
        bool blocked = false;
    };
    std::vector<Thread> threads;
    for (auto& [id, ops] : byThread)
    {
        threads.push_back(Thread{std::move(ops)});
    }

    std::unordered_map<int64_t, double> streamTail;  // completion of the last op per stream
    std::unordered_map<uint64_t, double> eventTime;  // completion of the latest record
    std::unordered_map<uint64_t, double> signalTime; // cross-thread tokens
    struct Range
    {
        double begin = -1;
        double recBegin = -1;
    };
    std::map<std::string, Range> open; // marker name -> open range

    auto tail = [&streamTail](int64_t s) {
        auto it = streamTail.find(s);
        return it == streamTail.end() ? 0.0 : it->second;
    };

    while (true)
    {
        // Next op: the runnable thread whose next op issues first (ties: lower index), so
        // ops reach each stream in simulated issue order.
        int64_t pick = -1;
        double best = std::numeric_limits<double>::infinity();
        bool anyLeft = false;
        for (size_t k = 0; k < threads.size(); ++k)
        {
            auto& th = threads[k];
            if (th.pos >= th.ops.size())
            {
                continue;
            }
            anyLeft = true;
            const Op& op = *th.ops[th.pos];
            double t = th.clock + std::max(0.0, op.cpuUs);
            if (op.kind == OpKind::ThreadWait)
            {
                auto s = signalTime.find(op.token);
                if (s == signalTime.end())
                {
                    continue; // blocked until another thread signals
                }
                t = std::max(t, s->second);
            }
            if (t < best)
            {
                best = t;
                pick = static_cast<int64_t>(k);
            }
        }
        if (!anyLeft)
        {
            break;
        }
        if (pick < 0)
        {
            result.complete = false;
            for (size_t k = 0; k < threads.size(); ++k)
            {
                if (threads[k].pos < threads[k].ops.size())
                {
                    result.stuck += "thread " + std::to_string(k) + " waits for token " +
                                    std::to_string(threads[k].ops[threads[k].pos]->token) + "; ";
                }
            }
            NS_LOG_WARN("quick replay stuck: " << result.stuck);
            break;
        }
        auto& th = threads[pick];
        const Op& op = *th.ops[th.pos++];
        double t = best; // issue time
        double done = t; // when the host thread may continue
        size_t index = static_cast<size_t>(&op - rank.ops.data());
        result.startUs[index] = t;
        switch (op.kind)
        {
        case OpKind::Kernel:
        case OpKind::Memcpy:
        case OpKind::Memset:
        case OpKind::Collective: {
            double start = std::max(t, tail(op.stream));
            double end = start + std::max(0.0, op.durUs);
            streamTail[op.stream] = end;
            result.startUs[index] = start;
            result.endUs[index] = end;
            if (op.kind == OpKind::Memcpy && !op.async)
            {
                done = end;
            }
            break;
        }
        case OpKind::EventRecord:
            eventTime[op.event] = std::max(t, tail(op.stream));
            break;
        case OpKind::StreamWaitEvent: {
            auto e = eventTime.find(op.event);
            if (e != eventTime.end())
            {
                streamTail[op.stream] = std::max(tail(op.stream), e->second);
            }
            break;
        }
        case OpKind::EventSync: {
            auto e = eventTime.find(op.event);
            done = e == eventTime.end() ? t : std::max(t, e->second);
            break;
        }
        case OpKind::StreamSync:
            done = std::max(t, tail(op.stream));
            break;
        case OpKind::DeviceSync:
            for (const auto& [s, end] : streamTail)
            {
                done = std::max(done, end);
            }
            break;
        case OpKind::ThreadSignal:
            signalTime.emplace(op.token, t);
            break;
        case OpKind::Marker:
            if (op.phase == MarkerPhase::Begin)
            {
                open[op.name] = Range{t, op.recordedUs};
            }
            else if (op.phase == MarkerPhase::End)
            {
                auto it = open.find(op.name);
                if (it != open.end())
                {
                    QuickReplayIteration it2;
                    it2.name = op.name;
                    it2.beginUs = it->second.begin;
                    it2.simulatedUs = t - it->second.begin;
                    it2.recordedUs = op.recordedUs >= 0 && it->second.recBegin >= 0
                                         ? op.recordedUs - it->second.recBegin
                                         : -1;
                    result.iterations.push_back(it2);
                    open.erase(it);
                }
            }
            break;
        default:
            // Host work, waits already resolved above, stream/comm creation, memory ops.
            break;
        }
        th.clock = done;
        if (result.endUs[index] < 0)
        {
            result.endUs[index] = done;
        }
        ++result.opsExecuted;
        result.makespanUs = std::max(result.makespanUs, done);
    }
    for (const auto& [s, end] : streamTail)
    {
        result.makespanUs = std::max(result.makespanUs, end);
    }
    std::stable_sort(result.iterations.begin(),
                     result.iterations.end(),
                     [](const QuickReplayIteration& a, const QuickReplayIteration& b) {
                         return a.beginUs < b.beginUs;
                     });
    return result;
}

} // namespace gpusim
} // namespace ns3
