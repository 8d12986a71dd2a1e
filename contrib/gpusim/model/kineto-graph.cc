// Execution graph of a Kineto trace: the four dependency kinds (see doc/kineto-replay.md).
#include "ns3/kineto-trace.h"
#include "ns3/log.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ns3
{
namespace gpusim
{

NS_LOG_COMPONENT_DEFINE("GpusimKinetoGraph");

namespace
{

bool
EndsWith(std::string_view s, std::string_view suffix)
{
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool
Contains(std::string_view s, std::string_view part)
{
    return s.find(part) != std::string_view::npos;
}

using StreamKey = std::pair<int64_t, int64_t>; // (device, stream)
using ThreadKey = std::pair<int64_t, int64_t>; // (pid, tid)

} // namespace

namespace
{

/// What a runtime/driver call does, from its name (CUDA, HIP and driver spellings).
enum class CallClass : uint8_t
{
    Other,
    EventRecord,
    StreamWaitEvent,
    StreamSync,
    EventSync,
    DeviceSync,
    MemcpySync,
    MemcpyAsync,
};

CallClass
ClassifyCall(std::string_view name)
{
    if (EndsWith(name, "EventRecord") || EndsWith(name, "EventRecordWithFlags") ||
        EndsWith(name, "EventRecord_ptsz") || EndsWith(name, "EventRecordWithFlags_ptsz"))
    {
        return CallClass::EventRecord;
    }
    if (EndsWith(name, "StreamWaitEvent") || EndsWith(name, "StreamWaitEvent_ptsz"))
    {
        return CallClass::StreamWaitEvent;
    }
    if (EndsWith(name, "StreamSynchronize") || EndsWith(name, "StreamSynchronize_ptsz"))
    {
        return CallClass::StreamSync;
    }
    if (EndsWith(name, "EventSynchronize"))
    {
        return CallClass::EventSync;
    }
    if (EndsWith(name, "DeviceSynchronize") || EndsWith(name, "ThreadSynchronize") ||
        EndsWith(name, "CtxSynchronize"))
    {
        return CallClass::DeviceSync;
    }
    if (Contains(name, "Memcpy"))
    {
        return Contains(name, "Async") ? CallClass::MemcpyAsync : CallClass::MemcpySync;
    }
    return CallClass::Other;
}

/// GPU ops in the order of their launch calls (launch ts, then GPU start), for queries like
/// "last op launched on stream S before time t".
struct LaunchList
{
    std::vector<double> launchTs;
    std::vector<uint32_t> gpu;

    /// Index of the last entry launched at or before t, -1 if none.
    int64_t LastAtOrBefore(double t) const
    {
        auto it = std::upper_bound(launchTs.begin(), launchTs.end(), t);
        return static_cast<int64_t>(it - launchTs.begin()) - 1;
    }

    /// Index of the first entry launched at or after t, -1 if none.
    int64_t FirstAtOrAfter(double t) const
    {
        auto it = std::lower_bound(launchTs.begin(), launchTs.end(), t);
        return it == launchTs.end() ? -1 : static_cast<int64_t>(it - launchTs.begin());
    }
};

} // namespace

KinetoGraph
BuildKinetoGraph(const KinetoTrace& trace, const KinetoGraphOptions& options)
{
    const auto& ev = trace.events;
    const size_t n = ev.size();
    KinetoGraph g;
    g.options = options;
    g.parent.assign(n, -1);
    g.launchOf.assign(n, -1);
    auto addDep = [&g](uint32_t from, uint32_t to, DepKind kind, DepDetail detail) {
        g.deps.push_back(KinetoDependency{from, to, kind, detail});
        switch (kind)
        {
        case DepKind::CpuCpu:
            ++g.counts.cpuCpu;
            break;
        case DepKind::CpuGpu:
            ++g.counts.cpuGpu;
            break;
        case DepKind::GpuCpu:
            ++g.counts.gpuCpu;
            break;
        case DepKind::GpuGpu:
            ++g.counts.gpuGpu;
            break;
        }
    };

    // ---- Host threads: nesting by time containment, program order of top-level ops. ----
    std::map<ThreadKey, std::vector<uint32_t>> threadOps; // host ops (cpu_op/runtime/driver)
    for (uint32_t i = 0; i < n; ++i)
    {
        if (ev[i].IsHost())
        {
            threadOps[{ev[i].pid, ev[i].tid}].push_back(i);
        }
    }
    std::map<ThreadKey, std::vector<uint32_t>> topLevel;
    for (auto& [key, ops] : threadOps)
    {
        std::vector<uint32_t> stack;
        auto& top = topLevel[key];
        for (uint32_t i : ops)
        {
            // Events are sorted by start with enclosing ones first, so a stack suffices; an
            // op starting inside another is its child even if clock rounding lets it overhang.
            while (!stack.empty() && ev[i].tsUs >= ev[stack.back()].EndUs())
            {
                stack.pop_back();
            }
            if (stack.empty())
            {
                if (!top.empty())
                {
                    addDep(top.back(), i, DepKind::CpuCpu, DepDetail::ProgramOrder);
                }
                top.push_back(i);
            }
            else
            {
                g.parent[i] = stack.back();
            }
            stack.push_back(i);
        }
    }

    // ---- Inter-thread gap rule (Chakra): a gap above the threshold waits for the latest op
    // of another thread of the same process that ended inside the gap. ----
    {
        struct EndEntry
        {
            double end;
            ThreadKey thread;
            uint32_t op;
        };
        std::map<int64_t, std::vector<EndEntry>> byPid;
        for (auto& [key, ops] : topLevel)
        {
            for (uint32_t i : ops)
            {
                byPid[key.first].push_back(EndEntry{ev[i].EndUs(), key, i});
            }
        }
        for (auto& [pid, ends] : byPid)
        {
            std::stable_sort(ends.begin(), ends.end(), [](const EndEntry& a, const EndEntry& b) {
                return a.end < b.end;
            });
        }
        for (auto& [key, ops] : topLevel)
        {
            auto& ends = byPid[key.first];
            double prevEnd = 0; // the trace start counts as the end of "nothing yet"
            for (uint32_t i : ops)
            {
                double start = ev[i].tsUs;
                if (start - prevEnd > options.gapThresholdUs)
                {
                    auto it = std::upper_bound(
                        ends.begin(), ends.end(), start, [](double t, const EndEntry& e) {
                            return t < e.end;
                        });
                    while (it != ends.begin())
                    {
                        --it;
                        if (it->end <= prevEnd)
                        {
                            break;
                        }
                        if (it->thread != key)
                        {
                            g.threadLinks.push_back(KinetoThreadLink{it->op, i, prevEnd});
                            if (options.cpuCpu)
                            {
                                addDep(it->op, i, DepKind::CpuCpu, DepDetail::InterThread);
                                ++g.counts.interThread;
                            }
                            break;
                        }
                    }
                }
                prevEnd = std::max(prevEnd, ev[i].EndUs());
            }
        }
    }

    // ---- CPU -> GPU by correlation (flow events as a fallback for a missing correlation). --
    std::unordered_map<int64_t, uint32_t> callByCorrelation;
    std::unordered_map<int64_t, uint32_t> syncByCorrelation;
    for (uint32_t i = 0; i < n; ++i)
    {
        if ((ev[i].category == KinetoCategory::Runtime ||
             ev[i].category == KinetoCategory::Driver) &&
            ev[i].correlation >= 0)
        {
            callByCorrelation.emplace(ev[i].correlation, i);
        }
        else if (ev[i].category == KinetoCategory::CudaSync && ev[i].correlation >= 0)
        {
            syncByCorrelation.emplace(ev[i].correlation, i);
        }
    }
    std::map<std::tuple<int64_t, int64_t, double>, int64_t> flowEnds;
    for (const auto& f : trace.flows)
    {
        if (!f.start)
        {
            flowEnds.emplace(std::make_tuple(f.pid, f.tid, f.tsUs), f.id);
        }
    }
    std::map<StreamKey, LaunchList> streamLaunches;
    std::map<ThreadKey, LaunchList> threadLaunches;
    std::map<StreamKey, std::vector<uint32_t>> streamOps;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (!ev[i].IsGpu())
        {
            continue;
        }
        streamOps[{ev[i].device, ev[i].stream}].push_back(i);
        int64_t corr = ev[i].correlation;
        if (corr < 0)
        {
            auto f = flowEnds.find(std::make_tuple(ev[i].pid, ev[i].tid, ev[i].tsUs));
            if (f != flowEnds.end())
            {
                corr = f->second;
            }
        }
        auto it = callByCorrelation.find(corr);
        if (corr < 0 || it == callByCorrelation.end())
        {
            ++g.orphanGpuOps;
            continue;
        }
        g.launchOf[i] = it->second;
        if (options.cpuGpu)
        {
            addDep(it->second, i, DepKind::CpuGpu, DepDetail::Launch);
        }
    }
    {
        // Launch lists, ordered by launch time then GPU start.
        std::vector<uint32_t> gpu;
        for (uint32_t i = 0; i < n; ++i)
        {
            if (ev[i].IsGpu() && g.launchOf[i] >= 0)
            {
                gpu.push_back(i);
            }
        }
        std::stable_sort(gpu.begin(), gpu.end(), [&](uint32_t a, uint32_t b) {
            return ev[g.launchOf[a]].tsUs < ev[g.launchOf[b]].tsUs;
        });
        for (uint32_t i : gpu)
        {
            const auto& call = ev[g.launchOf[i]];
            auto& s = streamLaunches[{ev[i].device, ev[i].stream}];
            s.launchTs.push_back(call.tsUs);
            s.gpu.push_back(i);
            auto& t = threadLaunches[{call.pid, call.tid}];
            t.launchTs.push_back(call.tsUs);
            t.gpu.push_back(i);
        }
    }

    // ---- GPU -> GPU in stream order. ----
    for (auto& [key, ops] : streamOps)
    {
        for (size_t k = 1; k < ops.size(); ++k)
        {
            addDep(ops[k - 1], ops[k], DepKind::GpuGpu, DepDetail::InStream);
        }
    }

    // Helpers over the launch lists.
    auto lastLaunchOnStream = [&](StreamKey s, double t) -> int64_t {
        auto it = streamLaunches.find(s);
        if (it == streamLaunches.end())
        {
            return -1;
        }
        int64_t k = it->second.LastAtOrBefore(t);
        return k < 0 ? int64_t{-1} : static_cast<int64_t>(it->second.gpu[k]);
    };
    auto firstLaunchOnStream = [&](StreamKey s, double t) -> int64_t {
        auto it = streamLaunches.find(s);
        if (it == streamLaunches.end())
        {
            return -1;
        }
        int64_t k = it->second.FirstAtOrAfter(t);
        return k < 0 ? int64_t{-1} : static_cast<int64_t>(it->second.gpu[k]);
    };
    // Stream of the last GPU op this thread launched before t: the "current stream" that
    // stream-less runtime calls (record, sync) most likely refer to.
    auto currentStream = [&](const KinetoEvent& call, double t, StreamKey& out) -> bool {
        auto it = threadLaunches.find({call.pid, call.tid});
        if (it == threadLaunches.end())
        {
            return false;
        }
        int64_t k = it->second.LastAtOrBefore(t);
        if (k < 0)
        {
            return false;
        }
        const auto& gpu = ev[it->second.gpu[k]];
        out = {gpu.device, gpu.stream};
        return true;
    };
    auto nextStream = [&](const KinetoEvent& call, double t, StreamKey& out) -> bool {
        auto it = threadLaunches.find({call.pid, call.tid});
        if (it == threadLaunches.end())
        {
            return false;
        }
        int64_t k = it->second.FirstAtOrAfter(t);
        if (k < 0)
        {
            return false;
        }
        const auto& gpu = ev[it->second.gpu[k]];
        out = {gpu.device, gpu.stream};
        return true;
    };

    // Classify runtime calls once; records per thread with their inferred stream.
    std::vector<CallClass> cls(n, CallClass::Other);
    struct Record
    {
        uint32_t call;
        StreamKey stream;
    };
    std::map<ThreadKey, std::vector<Record>> records;
    int64_t defaultDevice = trace.devices.empty() ? 0 : trace.devices.front().id;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (ev[i].category != KinetoCategory::Runtime && ev[i].category != KinetoCategory::Driver)
        {
            continue;
        }
        cls[i] = ClassifyCall(ev[i].name);
        if (cls[i] == CallClass::EventRecord)
        {
            StreamKey s{defaultDevice, -1};
            currentStream(ev[i], ev[i].tsUs, s);
            records[{ev[i].pid, ev[i].tid}].push_back(Record{i, s});
        }
    }
    std::unordered_map<uint32_t, StreamKey> recordStreamOf;
    for (auto& [key, list] : records)
    {
        for (auto& r : list)
        {
            recordStreamOf[r.call] = r.stream;
        }
    }

    // ---- GPU -> GPU across streams: record on A, wait on B. ----
    uint64_t fromSync = 0;
    uint64_t inferred = 0;
    for (uint32_t w = 0; w < n; ++w)
    {
        if (cls[w] != CallClass::StreamWaitEvent)
        {
            continue;
        }
        KinetoCrossStreamLink link;
        link.waitCall = w;
        // The latest cudaEventRecord before the wait (same thread first, then the other
        // threads of the process) whose stream satisfies `want`.
        auto findRecord = [&](auto want, int64_t& best, StreamKey& bestStream) {
            auto search = [&](const std::vector<Record>& list) {
                auto it = std::lower_bound(
                    list.begin(), list.end(), ev[w].tsUs, [&](const Record& r, double t) {
                        return ev[r.call].tsUs < t;
                    });
                // Bounded walk back keeps this linear on traces with many records.
                for (int steps = 0; it != list.begin() && steps < 256; ++steps)
                {
                    --it;
                    if (it->stream.second >= 0 && want(it->stream))
                    {
                        if (best < 0 || ev[it->call].tsUs > ev[best].tsUs)
                        {
                            best = it->call;
                            bestStream = it->stream;
                        }
                        return;
                    }
                }
            };
            ThreadKey own{ev[w].pid, ev[w].tid};
            auto mine = records.find(own);
            if (mine != records.end())
            {
                search(mine->second);
            }
            if (best < 0)
            {
                for (auto& [key, list] : records)
                {
                    if (key.first == ev[w].pid && key != own)
                    {
                        search(list);
                    }
                }
            }
        };
        StreamKey waitStream;
        int64_t best = -1;
        StreamKey bestStream;
        auto sync = ev[w].correlation >= 0 ? syncByCorrelation.find(ev[w].correlation)
                                           : syncByCorrelation.end();
        const KinetoEvent* cs = sync != syncByCorrelation.end() &&
                                        ev[sync->second].syncKind == KinetoSyncKind::StreamWaitEvent
                                    ? &ev[sync->second]
                                    : nullptr;
        if (cs && cs->stream >= 0 && cs->waitOnStream >= 0)
        {
            // cuda_sync names both streams and (newer Kineto) the record call.
            int64_t dev = cs->device >= 0 ? cs->device : cs->pid;
            waitStream = {dev, cs->stream};
            bestStream = {dev, cs->waitOnStream};
            auto rec = callByCorrelation.find(cs->waitOnRecordCorrelation);
            if (cs->waitOnRecordCorrelation >= 0 && rec != callByCorrelation.end())
            {
                best = rec->second;
            }
            else
            {
                // Older Kineto omits the record's correlation: take the latest record on
                // that stream, else place the record at the wait.
                StreamKey want = bestStream;
                findRecord([&want](const StreamKey& k) { return k == want; }, best, bestStream);
                if (best < 0)
                {
                    best = w;
                    bestStream = want;
                }
            }
            link.fromCudaSync = true;
        }
        else
        {
            // Infer: the waiting stream is the one this thread launches on next; the event is
            // the latest record on a different stream.
            if (!nextStream(ev[w], ev[w].EndUs(), waitStream))
            {
                continue;
            }
            StreamKey notThis = waitStream;
            findRecord([&notThis](const StreamKey& k) { return k != notThis; }, best, bestStream);
            if (best < 0)
            {
                // No record call in the trace (ROCm traces omit hipEventRecord): PyTorch
                // records on the current stream right before waiting, so stand in for it.
                StreamKey cur;
                if (currentStream(ev[w], ev[w].tsUs, cur) && cur != waitStream)
                {
                    best = w;
                    bestStream = cur;
                }
            }
            if (best < 0 || waitStream.first != bestStream.first)
            {
                continue;
            }
        }
        link.recordCall = static_cast<uint32_t>(best);
        link.recordStream = bestStream.second;
        link.waitStream = waitStream.second;
        link.fromGpu = lastLaunchOnStream(bestStream, ev[best].tsUs);
        link.toGpu = firstLaunchOnStream(waitStream, ev[w].tsUs);
        if (link.recordStream == link.waitStream || link.fromGpu < 0)
        {
            continue; // same stream (implied by stream order) or nothing recorded yet
        }
        if (link.toGpu >= 0)
        {
            if (options.gpuGpu)
            {
                addDep(static_cast<uint32_t>(link.fromGpu),
                       static_cast<uint32_t>(link.toGpu),
                       DepKind::GpuGpu,
                       DepDetail::CrossStream);
                ++g.counts.crossStream;
                (link.fromCudaSync ? g.counts.crossStreamFromCudaSync
                                   : g.counts.crossStreamInferred)++;
            }
        }
        (link.fromCudaSync ? fromSync : inferred)++;
        g.crossStream.push_back(link);
    }
    g.crossStreamMethod = fromSync == 0 && inferred == 0 ? CrossStreamMethod::None
                          : inferred == 0                ? CrossStreamMethod::CudaSync
                          : fromSync == 0                ? CrossStreamMethod::Inferred
                                                         : CrossStreamMethod::Mixed;

    // ---- GPU -> CPU: blocking calls wait for the GPU work they name. ----
    std::unordered_map<uint32_t, std::vector<uint32_t>> gpuOfCall;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (g.launchOf[i] >= 0)
        {
            gpuOfCall[static_cast<uint32_t>(g.launchOf[i])].push_back(i);
        }
    }
    for (uint32_t c = 0; c < n; ++c)
    {
        KinetoSyncLink link;
        link.call = c;
        const auto& call = ev[c];
        auto sync = call.correlation >= 0 ? syncByCorrelation.find(call.correlation)
                                          : syncByCorrelation.end();
        const KinetoEvent* cs = sync != syncByCorrelation.end() ? &ev[sync->second] : nullptr;
        int64_t dev = cs && cs->device >= 0 ? cs->device : defaultDevice;
        switch (cls[c])
        {
        case CallClass::StreamSync: {
            link.what = DepDetail::StreamSync;
            StreamKey s{dev, -1};
            if (cs && cs->syncKind == KinetoSyncKind::StreamSync && cs->stream >= 0)
            {
                s.second = cs->stream;
            }
            else if (!currentStream(call, call.tsUs, s))
            {
                continue;
            }
            link.stream = s.second;
            int64_t last = lastLaunchOnStream(s, call.tsUs);
            if (last >= 0)
            {
                link.awaited.push_back(static_cast<uint32_t>(last));
            }
            break;
        }
        case CallClass::EventSync: {
            link.what = DepDetail::EventSync;
            int64_t rec = -1;
            StreamKey s{dev, -1};
            if (cs && cs->syncKind == KinetoSyncKind::EventSync && cs->waitOnRecordCorrelation >= 0)
            {
                auto r = callByCorrelation.find(cs->waitOnRecordCorrelation);
                if (r != callByCorrelation.end())
                {
                    rec = r->second;
                    s.second = cs->waitOnStream;
                }
            }
            if (rec < 0)
            {
                auto own = records.find({call.pid, call.tid});
                if (own != records.end())
                {
                    for (auto it = own->second.rbegin(); it != own->second.rend(); ++it)
                    {
                        if (ev[it->call].tsUs <= call.tsUs)
                        {
                            rec = it->call;
                            s = it->stream;
                            break;
                        }
                    }
                }
            }
            if (rec < 0 || s.second < 0)
            {
                continue;
            }
            link.recordCall = rec;
            link.stream = s.second;
            int64_t last = lastLaunchOnStream(s, ev[rec].tsUs);
            if (last >= 0)
            {
                link.awaited.push_back(static_cast<uint32_t>(last));
            }
            break;
        }
        case CallClass::DeviceSync: {
            link.what = DepDetail::DeviceSync;
            for (auto& [key, list] : streamLaunches)
            {
                if (key.first != dev && !(cs == nullptr && trace.devices.size() <= 1))
                {
                    continue;
                }
                int64_t k = list.LastAtOrBefore(call.tsUs);
                if (k >= 0)
                {
                    link.awaited.push_back(list.gpu[k]);
                }
            }
            break;
        }
        case CallClass::MemcpySync:
        case CallClass::MemcpyAsync: {
            auto it = gpuOfCall.find(c);
            if (it == gpuOfCall.end())
            {
                continue;
            }
            bool blocking = cls[c] == CallClass::MemcpySync;
            for (uint32_t gop : it->second)
            {
                // An async copy into pageable host memory returns only when done.
                if (ev[gop].category == KinetoCategory::Memcpy &&
                    (blocking ||
                     (Contains(ev[gop].name, "DtoH") && Contains(ev[gop].name, "Pageable"))))
                {
                    link.awaited.push_back(gop);
                    link.stream = ev[gop].stream;
                }
            }
            if (link.awaited.empty())
            {
                continue;
            }
            link.what = DepDetail::SyncCopy;
            break;
        }
        default:
            continue;
        }
        // The call returned after what it waited for: an awaited op recorded as ending later
        // means the stream (or event) was inferred wrongly; such a call did not wait for it.
        const double toleranceUs = 5.0;
        link.awaited.erase(
            std::remove_if(link.awaited.begin(),
                           link.awaited.end(),
                           [&](uint32_t a) { return ev[a].EndUs() > call.EndUs() + toleranceUs; }),
            link.awaited.end());
        if (link.awaited.empty())
        {
            continue;
        }
        for (uint32_t a : link.awaited)
        {
            link.awaitedEndUs = std::max(link.awaitedEndUs, ev[a].EndUs());
            if (options.gpuCpu)
            {
                addDep(a, c, DepKind::GpuCpu, link.what);
            }
        }
        g.syncs.push_back(std::move(link));
    }
    NS_LOG_INFO("graph " << trace.file << ": cpu_cpu " << g.counts.cpuCpu << " cpu_gpu "
                         << g.counts.cpuGpu << " gpu_cpu " << g.counts.gpuCpu << " gpu_gpu "
                         << g.counts.gpuGpu << " cross-stream " << ToString(g.crossStreamMethod));
    return g;
}

} // namespace gpusim
} // namespace ns3
