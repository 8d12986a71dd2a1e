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

/// Slack when comparing recorded times of different events: the sync check's 5 µs (a wrongly
/// inferred stream there was 12.8 ms off, doc/kineto-replay.md); older traces round every time
/// to whole µs. The timeline checks of cross-stream pairs use the same value.
constexpr double kTimelineToleranceUs = 5.0;

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

/// A cudaEventRecord call with the stream it most likely recorded on.
struct EventRecordCall
{
    uint32_t call;
    StreamKey stream;
};

/// Builds the graph in the steps of BuildKinetoGraph(); each step adds one kind of edge (or
/// the indexes later steps query). The order of the steps fixes the order of the edges.
class KinetoGraphBuilder
{
  public:
    KinetoGraphBuilder(const KinetoTrace& trace, const KinetoGraphOptions& options);

    void NestHostOps();
    void AddInterThreadEdges();
    void IndexCorrelations();
    void AddLaunchEdges();
    void BuildLaunchLists();
    void AddStreamOrderEdges();
    void ClassifyCalls();
    void AddCrossStreamEdges();
    void AddSyncEdges();

    KinetoGraph Take();

  private:
    void AddDep(uint32_t from, uint32_t to, DepKind kind, DepDetail detail);

    // Queries over the launch lists.
    int64_t LastLaunchOnStream(StreamKey s, double t) const;
    int64_t FirstLaunchOnStream(StreamKey s, double t) const;
    bool CurrentStream(const KinetoEvent& call, double t, StreamKey& out) const;
    bool NextStream(const KinetoEvent& call, double t, StreamKey& out) const;

    // Cross-stream pairs.
    const KinetoEvent* StreamWaitSyncOf(uint32_t wait) const;
    template <typename Want>
    void FindRecord(uint32_t wait, Want want, int64_t& best, StreamKey& bestStream) const;
    bool PairFromCudaSync(uint32_t wait,
                          const KinetoEvent& cs,
                          StreamKey& waitStream,
                          int64_t& record,
                          StreamKey& recordStream) const;
    bool InferPair(uint32_t wait,
                   StreamKey& waitStream,
                   int64_t& record,
                   StreamKey& recordStream) const;
    bool LinkCrossStream(uint32_t wait, KinetoCrossStreamLink& link) const;
    bool AgreesWithRecording(StreamKey recordStream, double recordTs, int64_t toGpu) const;
    double ReadyUs(uint32_t gpu) const;
    bool HeldOnGpu(uint32_t gpu) const;
    bool StreamThatHeld(const KinetoEvent& w,
                        StreamKey waitStream,
                        int64_t toGpu,
                        StreamKey& out,
                        double& outEndUs) const;

    // Blocking calls.
    const KinetoEvent* CudaSyncOf(const KinetoEvent& call) const;
    bool StreamSyncAwaits(const KinetoEvent& call,
                          const KinetoEvent* cs,
                          int64_t dev,
                          KinetoSyncLink& link) const;
    bool EventSyncAwaits(const KinetoEvent& call,
                         const KinetoEvent* cs,
                         int64_t dev,
                         KinetoSyncLink& link) const;
    void DeviceSyncAwaits(const KinetoEvent& call,
                          const KinetoEvent* cs,
                          int64_t dev,
                          KinetoSyncLink& link) const;
    bool SyncCopyAwaits(uint32_t c, KinetoSyncLink& link) const;
    bool SyncLinkOf(uint32_t c, KinetoSyncLink& link) const;

    const KinetoTrace& m_trace;
    const std::vector<KinetoEvent>& m_ev;
    const KinetoGraphOptions& m_options;
    KinetoGraph m_g;
    int64_t m_defaultDevice;
    std::map<ThreadKey, std::vector<uint32_t>> m_topLevel; //!< top-level host ops per thread
    std::unordered_map<int64_t, uint32_t> m_callByCorrelation; //!< runtime/driver calls
    std::unordered_map<int64_t, uint32_t> m_syncByCorrelation; //!< cuda_sync events
    std::map<StreamKey, std::vector<uint32_t>> m_streamOps;    //!< GPU ops per stream
    std::vector<int64_t> m_prevOnStream; //!< previous GPU op on the same stream, -1 if none
    std::map<StreamKey, LaunchList> m_streamLaunches;
    std::map<ThreadKey, LaunchList> m_threadLaunches;
    std::vector<CallClass> m_cls;
    std::map<ThreadKey, std::vector<EventRecordCall>> m_records; //!< per thread, in time order
    std::unordered_map<uint32_t, std::vector<uint32_t>> m_gpuOfCall; //!< GPU ops per launch call
};

KinetoGraphBuilder::KinetoGraphBuilder(const KinetoTrace& trace,
                                       const KinetoGraphOptions& options) :
    m_trace(trace),
    m_ev(trace.events),
    m_options(options),
    m_defaultDevice(trace.devices.empty() ? 0 : trace.devices.front().id)
{
    m_g.options = options;
    m_g.parent.assign(m_ev.size(), -1);
    m_g.launchOf.assign(m_ev.size(), -1);
}

void
KinetoGraphBuilder::AddDep(uint32_t from, uint32_t to, DepKind kind, DepDetail detail)
{
    m_g.deps.push_back(KinetoDependency{from, to, kind, detail});
    switch (kind)
    {
    case DepKind::CpuCpu:
        ++m_g.counts.cpuCpu;
        break;
    case DepKind::CpuGpu:
        ++m_g.counts.cpuGpu;
        break;
    case DepKind::GpuCpu:
        ++m_g.counts.gpuCpu;
        break;
    case DepKind::GpuGpu:
        ++m_g.counts.gpuGpu;
        break;
    }
}

/// Host threads: nesting by time containment (parent[]), program order of top-level ops.
void
KinetoGraphBuilder::NestHostOps()
{
    std::map<ThreadKey, std::vector<uint32_t>> threadOps; // host ops (cpu_op/runtime/driver)
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        if (m_ev[i].IsHost())
        {
            threadOps[{m_ev[i].pid, m_ev[i].tid}].push_back(i);
        }
    }
    for (auto& [key, ops] : threadOps)
    {
        std::vector<uint32_t> stack;
        auto& top = m_topLevel[key];
        for (uint32_t i : ops)
        {
            // Events are sorted by start with enclosing ones first, so a stack suffices; an
            // op starting inside another is its child even if clock rounding lets it overhang.
            while (!stack.empty() && m_ev[i].tsUs >= m_ev[stack.back()].EndUs())
            {
                stack.pop_back();
            }
            if (stack.empty())
            {
                if (!top.empty())
                {
                    AddDep(top.back(), i, DepKind::CpuCpu, DepDetail::ProgramOrder);
                }
                top.push_back(i);
            }
            else
            {
                m_g.parent[i] = stack.back();
            }
            stack.push_back(i);
        }
    }
}

/// Inter-thread gap rule (Chakra): a gap above the threshold waits for the latest op of
/// another thread of the same process that ended inside the gap.
void
KinetoGraphBuilder::AddInterThreadEdges()
{
    struct EndEntry
    {
        double end;
        ThreadKey thread;
        uint32_t op;
    };
    std::map<int64_t, std::vector<EndEntry>> byPid;
    for (auto& [key, ops] : m_topLevel)
    {
        for (uint32_t i : ops)
        {
            byPid[key.first].push_back(EndEntry{m_ev[i].EndUs(), key, i});
        }
    }
    for (auto& [pid, ends] : byPid)
    {
        std::stable_sort(ends.begin(), ends.end(), [](const EndEntry& a, const EndEntry& b) {
            return a.end < b.end;
        });
    }
    for (auto& [key, ops] : m_topLevel)
    {
        auto& ends = byPid[key.first];
        double prevEnd = 0; // the trace start counts as the end of "nothing yet"
        for (uint32_t i : ops)
        {
            double start = m_ev[i].tsUs;
            if (start - prevEnd > m_options.gapThresholdUs)
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
                        m_g.threadLinks.push_back(KinetoThreadLink{it->op, i, prevEnd});
                        if (m_options.cpuCpu)
                        {
                            AddDep(it->op, i, DepKind::CpuCpu, DepDetail::InterThread);
                            ++m_g.counts.interThread;
                        }
                        break;
                    }
                }
            }
            prevEnd = std::max(prevEnd, m_ev[i].EndUs());
        }
    }
}

/// Runtime/driver calls and cuda_sync events by their correlation id.
void
KinetoGraphBuilder::IndexCorrelations()
{
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        if ((m_ev[i].category == KinetoCategory::Runtime ||
             m_ev[i].category == KinetoCategory::Driver) &&
            m_ev[i].correlation >= 0)
        {
            m_callByCorrelation.emplace(m_ev[i].correlation, i);
        }
        else if (m_ev[i].category == KinetoCategory::CudaSync && m_ev[i].correlation >= 0)
        {
            m_syncByCorrelation.emplace(m_ev[i].correlation, i);
        }
    }
}

/// CPU -> GPU by correlation (flow events as a fallback for a missing correlation); also
/// collects the GPU ops of each stream.
void
KinetoGraphBuilder::AddLaunchEdges()
{
    std::map<std::tuple<int64_t, int64_t, double>, int64_t> flowEnds;
    for (const auto& f : m_trace.flows)
    {
        if (!f.start)
        {
            flowEnds.emplace(std::make_tuple(f.pid, f.tid, f.tsUs), f.id);
        }
    }
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        const KinetoEvent& e = m_ev[i];
        if (!e.IsGpu())
        {
            continue;
        }
        m_streamOps[{e.device, e.stream}].push_back(i);
        int64_t corr = e.correlation;
        if (corr < 0)
        {
            auto f = flowEnds.find(std::make_tuple(e.pid, e.tid, e.tsUs));
            if (f != flowEnds.end())
            {
                corr = f->second;
            }
        }
        auto it = m_callByCorrelation.find(corr);
        if (corr < 0 || it == m_callByCorrelation.end())
        {
            ++m_g.orphanGpuOps;
            continue;
        }
        m_g.launchOf[i] = it->second;
        if (m_options.cpuGpu)
        {
            AddDep(it->second, i, DepKind::CpuGpu, DepDetail::Launch);
        }
    }
}

/// Launch lists per stream and per launching thread, ordered by launch time then GPU start.
void
KinetoGraphBuilder::BuildLaunchLists()
{
    std::vector<uint32_t> gpu;
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        if (m_ev[i].IsGpu() && m_g.launchOf[i] >= 0)
        {
            gpu.push_back(i);
        }
    }
    std::stable_sort(gpu.begin(), gpu.end(), [this](uint32_t a, uint32_t b) {
        return m_ev[m_g.launchOf[a]].tsUs < m_ev[m_g.launchOf[b]].tsUs;
    });
    for (uint32_t i : gpu)
    {
        const auto& call = m_ev[m_g.launchOf[i]];
        auto& s = m_streamLaunches[{m_ev[i].device, m_ev[i].stream}];
        s.launchTs.push_back(call.tsUs);
        s.gpu.push_back(i);
        auto& t = m_threadLaunches[{call.pid, call.tid}];
        t.launchTs.push_back(call.tsUs);
        t.gpu.push_back(i);
    }
}

/// GPU -> GPU in stream order.
void
KinetoGraphBuilder::AddStreamOrderEdges()
{
    m_prevOnStream.assign(m_ev.size(), -1);
    for (auto& [key, ops] : m_streamOps)
    {
        for (size_t k = 1; k < ops.size(); ++k)
        {
            AddDep(ops[k - 1], ops[k], DepKind::GpuGpu, DepDetail::InStream);
            m_prevOnStream[ops[k]] = ops[k - 1];
        }
    }
}

int64_t
KinetoGraphBuilder::LastLaunchOnStream(StreamKey s, double t) const
{
    auto it = m_streamLaunches.find(s);
    if (it == m_streamLaunches.end())
    {
        return -1;
    }
    int64_t k = it->second.LastAtOrBefore(t);
    return k < 0 ? int64_t{-1} : static_cast<int64_t>(it->second.gpu[k]);
}

int64_t
KinetoGraphBuilder::FirstLaunchOnStream(StreamKey s, double t) const
{
    auto it = m_streamLaunches.find(s);
    if (it == m_streamLaunches.end())
    {
        return -1;
    }
    int64_t k = it->second.FirstAtOrAfter(t);
    return k < 0 ? int64_t{-1} : static_cast<int64_t>(it->second.gpu[k]);
}

/// Stream of the last GPU op this thread launched before t: the "current stream" that
/// stream-less runtime calls (record, sync) most likely refer to.
bool
KinetoGraphBuilder::CurrentStream(const KinetoEvent& call, double t, StreamKey& out) const
{
    auto it = m_threadLaunches.find({call.pid, call.tid});
    if (it == m_threadLaunches.end())
    {
        return false;
    }
    int64_t k = it->second.LastAtOrBefore(t);
    if (k < 0)
    {
        return false;
    }
    const auto& gpu = m_ev[it->second.gpu[k]];
    out = {gpu.device, gpu.stream};
    return true;
}

/// Stream of the first GPU op this thread launches at or after t.
bool
KinetoGraphBuilder::NextStream(const KinetoEvent& call, double t, StreamKey& out) const
{
    auto it = m_threadLaunches.find({call.pid, call.tid});
    if (it == m_threadLaunches.end())
    {
        return false;
    }
    int64_t k = it->second.FirstAtOrAfter(t);
    if (k < 0)
    {
        return false;
    }
    const auto& gpu = m_ev[it->second.gpu[k]];
    out = {gpu.device, gpu.stream};
    return true;
}

/// Classifies the runtime calls once; lists each thread's event records with the stream
/// each most likely recorded on (the thread's current stream).
void
KinetoGraphBuilder::ClassifyCalls()
{
    m_cls.assign(m_ev.size(), CallClass::Other);
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        if (m_ev[i].category != KinetoCategory::Runtime &&
            m_ev[i].category != KinetoCategory::Driver)
        {
            continue;
        }
        m_cls[i] = ClassifyCall(m_ev[i].name);
        if (m_cls[i] == CallClass::EventRecord)
        {
            StreamKey s{m_defaultDevice, -1};
            CurrentStream(m_ev[i], m_ev[i].tsUs, s);
            m_records[{m_ev[i].pid, m_ev[i].tid}].push_back(EventRecordCall{i, s});
        }
    }
}

/// The cuda_sync "Stream Wait Event" event of a cudaStreamWaitEvent call, nullptr if none.
const KinetoEvent*
KinetoGraphBuilder::StreamWaitSyncOf(uint32_t wait) const
{
    if (m_ev[wait].correlation < 0)
    {
        return nullptr;
    }
    auto sync = m_syncByCorrelation.find(m_ev[wait].correlation);
    if (sync == m_syncByCorrelation.end() ||
        m_ev[sync->second].syncKind != KinetoSyncKind::StreamWaitEvent)
    {
        return nullptr;
    }
    return &m_ev[sync->second];
}

/// The latest cudaEventRecord before the wait (same thread first, then the other threads of
/// the process) whose stream satisfies `want`; leaves `best` alone when there is none.
template <typename Want>
void
KinetoGraphBuilder::FindRecord(uint32_t wait,
                               Want want,
                               int64_t& best,
                               StreamKey& bestStream) const
{
    const KinetoEvent& w = m_ev[wait];
    auto search = [&](const std::vector<EventRecordCall>& list) {
        auto it = std::lower_bound(list.begin(),
                                   list.end(),
                                   w.tsUs,
                                   [this](const EventRecordCall& r, double t) {
                                       return m_ev[r.call].tsUs < t;
                                   });
        // Bounded walk back keeps this linear on traces with many records.
        for (int steps = 0; it != list.begin() && steps < 256; ++steps)
        {
            --it;
            if (it->stream.second >= 0 && want(it->stream))
            {
                if (best < 0 || m_ev[it->call].tsUs > m_ev[best].tsUs)
                {
                    best = it->call;
                    bestStream = it->stream;
                }
                return;
            }
        }
    };
    ThreadKey own{w.pid, w.tid};
    auto mine = m_records.find(own);
    if (mine != m_records.end())
    {
        search(mine->second);
    }
    if (best < 0)
    {
        for (auto& [key, list] : m_records)
        {
            if (key.first == w.pid && key != own)
            {
                search(list);
            }
        }
    }
}

/// The pair named by a cuda_sync "Stream Wait Event": both streams and (newer Kineto) the
/// record call. False when the event does not name both streams.
bool
KinetoGraphBuilder::PairFromCudaSync(uint32_t wait,
                                     const KinetoEvent& cs,
                                     StreamKey& waitStream,
                                     int64_t& record,
                                     StreamKey& recordStream) const
{
    if (cs.stream < 0 || cs.waitOnStream < 0)
    {
        return false;
    }
    int64_t dev = cs.device >= 0 ? cs.device : cs.pid;
    waitStream = {dev, cs.stream};
    recordStream = {dev, cs.waitOnStream};
    auto rec = m_callByCorrelation.find(cs.waitOnRecordCorrelation);
    if (cs.waitOnRecordCorrelation >= 0 && rec != m_callByCorrelation.end())
    {
        record = rec->second;
        return true;
    }
    // Older Kineto omits the record's correlation: take the latest record on that stream,
    // else place the record at the wait.
    StreamKey want = recordStream;
    FindRecord(wait, [&want](const StreamKey& k) { return k == want; }, record, recordStream);
    if (record < 0)
    {
        record = wait;
        recordStream = want;
    }
    return true;
}

/// Infers the pair without cuda_sync: the waiting stream is the one this thread launches on
/// next; the event is the latest record on a different stream (of the same device), checked
/// against the recorded timeline (doc/kineto-replay.md, GPU->GPU, "Checked against the recorded
/// timeline"). False
/// when no pair can be inferred.
bool
KinetoGraphBuilder::InferPair(uint32_t wait,
                              StreamKey& waitStream,
                              int64_t& record,
                              StreamKey& recordStream) const
{
    const KinetoEvent& w = m_ev[wait];
    if (!NextStream(w, w.EndUs(), waitStream))
    {
        return false;
    }
    const int64_t to = FirstLaunchOnStream(waitStream, w.tsUs);
    StreamKey notThis = waitStream;
    FindRecord(wait, [&notThis](const StreamKey& k) { return k != notThis; }, record, recordStream);
    if (record >= 0 && !AgreesWithRecording(recordStream, m_ev[record].tsUs, to))
    {
        record = -1; // the recording shows the waiting op starting before that record's op ended
    }
    // A waiting op that the recording shows held points at the op it waited for: the one that
    // ended last while it was held. When that op is not the traced record's (a stale record,
    // or none: the trace lacks the record call), a record at the wait on its stream stands in.
    StreamKey src;
    double srcEnd = 0;
    if (to >= 0 && HeldOnGpu(static_cast<uint32_t>(to)) &&
        StreamThatHeld(w, waitStream, to, src, srcEnd) &&
        (record < 0 || srcEnd > m_ev[LastLaunchOnStream(recordStream, m_ev[record].tsUs)].EndUs()))
    {
        record = wait;
        recordStream = src;
    }
    if (record < 0)
    {
        // No record call in the trace (ROCm traces omit hipEventRecord; Kineto of 2021-22
        // filtered cudaEventRecord out): PyTorch records on the current stream right before
        // waiting (event.record(); event.block()), so stand in for it, if the recording agrees.
        StreamKey cur;
        if (CurrentStream(w, w.tsUs, cur) && cur != waitStream &&
            AgreesWithRecording(cur, w.tsUs, to))
        {
            record = wait;
            recordStream = cur;
        }
    }
    return record >= 0 && waitStream.first == recordStream.first;
}

/// True when an edge from the last op launched on recordStream before recordTs to toGpu
/// agrees with the recorded timeline: the awaited op ended before toGpu started.
bool
KinetoGraphBuilder::AgreesWithRecording(StreamKey recordStream,
                                        double recordTs,
                                        int64_t toGpu) const
{
    int64_t from = LastLaunchOnStream(recordStream, recordTs);
    return from >= 0 && toGpu >= 0 &&
           m_ev[from].EndUs() <= m_ev[toGpu].tsUs + kTimelineToleranceUs;
}

/// When a GPU op could have started as far as its own stream and launch go: its launch call's
/// return and the end of the op before it on its stream.
double
KinetoGraphBuilder::ReadyUs(uint32_t gpu) const
{
    double ready = 0;
    if (m_g.launchOf[gpu] >= 0)
    {
        ready = m_ev[m_g.launchOf[gpu]].EndUs();
    }
    if (m_prevOnStream[gpu] >= 0)
    {
        ready = std::max(ready, m_ev[m_prevOnStream[gpu]].EndUs());
    }
    return ready;
}

/// True when a GPU op started later than it was ready to (ReadyUs): something on another
/// stream held it.
bool
KinetoGraphBuilder::HeldOnGpu(uint32_t gpu) const
{
    return m_ev[gpu].tsUs > ReadyUs(gpu) + kTimelineToleranceUs;
}

/// For a wait whose waiting op (toGpu) was held: the other stream of the device whose last op
/// launched before the wait ended last while toGpu was held, before it started (the thread's
/// current stream on a tie), and when that op ended. work.wait() makes the current stream wait
/// for the NCCL stream this way. False when no such op ended while toGpu was held.
bool
KinetoGraphBuilder::StreamThatHeld(const KinetoEvent& w,
                                   StreamKey waitStream,
                                   int64_t toGpu,
                                   StreamKey& out,
                                   double& outEndUs) const
{
    StreamKey cur{-1, -1};
    CurrentStream(w, w.tsUs, cur);
    const double ready = ReadyUs(static_cast<uint32_t>(toGpu));
    double bestEnd = -1;
    for (const auto& [key, launches] : m_streamLaunches)
    {
        if (key == waitStream || key.first != waitStream.first ||
            !AgreesWithRecording(key, w.tsUs, toGpu))
        {
            continue;
        }
        const double end = m_ev[LastLaunchOnStream(key, w.tsUs)].EndUs();
        if (end > ready && (end > bestEnd || (end == bestEnd && key == cur)))
        {
            bestEnd = end;
            out = key;
        }
    }
    outEndUs = bestEnd;
    return bestEnd >= 0;
}

/// The record -> wait pair of one cudaStreamWaitEvent call; false when there is none or it
/// stays on one stream (implied by stream order) or nothing was recorded yet.
bool
KinetoGraphBuilder::LinkCrossStream(uint32_t wait, KinetoCrossStreamLink& link) const
{
    link.waitCall = wait;
    StreamKey waitStream;
    int64_t best = -1;
    StreamKey bestStream;
    const KinetoEvent* cs = StreamWaitSyncOf(wait);
    if (cs && PairFromCudaSync(wait, *cs, waitStream, best, bestStream))
    {
        link.fromCudaSync = true;
    }
    else if (!InferPair(wait, waitStream, best, bestStream))
    {
        return false;
    }
    link.recordCall = static_cast<uint32_t>(best);
    link.recordStream = bestStream.second;
    link.waitStream = waitStream.second;
    link.fromGpu = LastLaunchOnStream(bestStream, m_ev[best].tsUs);
    link.toGpu = FirstLaunchOnStream(waitStream, m_ev[wait].tsUs);
    return link.recordStream != link.waitStream && link.fromGpu >= 0;
}

/// GPU -> GPU across streams: record on A, wait on B; sets crossStreamMethod.
void
KinetoGraphBuilder::AddCrossStreamEdges()
{
    uint64_t fromSync = 0;
    uint64_t inferred = 0;
    for (uint32_t w = 0; w < m_ev.size(); ++w)
    {
        KinetoCrossStreamLink link;
        if (m_cls[w] != CallClass::StreamWaitEvent || !LinkCrossStream(w, link))
        {
            continue;
        }
        if (link.toGpu >= 0 && m_options.gpuGpu)
        {
            AddDep(static_cast<uint32_t>(link.fromGpu),
                   static_cast<uint32_t>(link.toGpu),
                   DepKind::GpuGpu,
                   DepDetail::CrossStream);
            ++m_g.counts.crossStream;
            (link.fromCudaSync ? m_g.counts.crossStreamFromCudaSync
                               : m_g.counts.crossStreamInferred)++;
        }
        (link.fromCudaSync ? fromSync : inferred)++;
        m_g.crossStream.push_back(link);
    }
    m_g.crossStreamMethod = fromSync == 0 && inferred == 0 ? CrossStreamMethod::None
                            : inferred == 0                ? CrossStreamMethod::CudaSync
                            : fromSync == 0                ? CrossStreamMethod::Inferred
                                                           : CrossStreamMethod::Mixed;
}

/// The cuda_sync event of a runtime call (any kind), nullptr if none.
const KinetoEvent*
KinetoGraphBuilder::CudaSyncOf(const KinetoEvent& call) const
{
    if (call.correlation < 0)
    {
        return nullptr;
    }
    auto sync = m_syncByCorrelation.find(call.correlation);
    return sync != m_syncByCorrelation.end() ? &m_ev[sync->second] : nullptr;
}

/// cudaStreamSynchronize: the last op launched on the stream (from cuda_sync "Stream Sync",
/// else the thread's current stream) before the call. False when the stream is unknown.
bool
KinetoGraphBuilder::StreamSyncAwaits(const KinetoEvent& call,
                                     const KinetoEvent* cs,
                                     int64_t dev,
                                     KinetoSyncLink& link) const
{
    link.what = DepDetail::StreamSync;
    StreamKey s{dev, -1};
    if (cs && cs->syncKind == KinetoSyncKind::StreamSync && cs->stream >= 0)
    {
        s.second = cs->stream;
    }
    else if (!CurrentStream(call, call.tsUs, s))
    {
        return false;
    }
    link.stream = s.second;
    int64_t last = LastLaunchOnStream(s, call.tsUs);
    if (last >= 0)
    {
        link.awaited.push_back(static_cast<uint32_t>(last));
    }
    return true;
}

/// cudaEventSynchronize: the last op launched on the recorded stream before the record (from
/// cuda_sync "Event Sync", else the thread's latest cudaEventRecord). False when unknown.
bool
KinetoGraphBuilder::EventSyncAwaits(const KinetoEvent& call,
                                    const KinetoEvent* cs,
                                    int64_t dev,
                                    KinetoSyncLink& link) const
{
    link.what = DepDetail::EventSync;
    int64_t rec = -1;
    StreamKey s{dev, -1};
    if (cs && cs->syncKind == KinetoSyncKind::EventSync && cs->waitOnRecordCorrelation >= 0)
    {
        auto r = m_callByCorrelation.find(cs->waitOnRecordCorrelation);
        if (r != m_callByCorrelation.end())
        {
            rec = r->second;
            s.second = cs->waitOnStream;
        }
    }
    if (rec < 0)
    {
        auto own = m_records.find({call.pid, call.tid});
        if (own != m_records.end())
        {
            for (auto it = own->second.rbegin(); it != own->second.rend(); ++it)
            {
                if (m_ev[it->call].tsUs <= call.tsUs)
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
        return false;
    }
    link.recordCall = rec;
    link.stream = s.second;
    int64_t last = LastLaunchOnStream(s, m_ev[rec].tsUs);
    if (last >= 0)
    {
        link.awaited.push_back(static_cast<uint32_t>(last));
    }
    return true;
}

/// cudaDeviceSynchronize: the last op launched before the call on every stream of the device
/// (of every device when the trace names neither the device nor several devices).
void
KinetoGraphBuilder::DeviceSyncAwaits(const KinetoEvent& call,
                                     const KinetoEvent* cs,
                                     int64_t dev,
                                     KinetoSyncLink& link) const
{
    link.what = DepDetail::DeviceSync;
    for (auto& [key, list] : m_streamLaunches)
    {
        if (key.first != dev && !(cs == nullptr && m_trace.devices.size() <= 1))
        {
            continue;
        }
        int64_t k = list.LastAtOrBefore(call.tsUs);
        if (k >= 0)
        {
            link.awaited.push_back(list.gpu[k]);
        }
    }
}

/// A blocking copy (or an async device->pageable copy, which returns only when done) waits
/// for the copies it launched. False when it launched none of those.
bool
KinetoGraphBuilder::SyncCopyAwaits(uint32_t c, KinetoSyncLink& link) const
{
    auto it = m_gpuOfCall.find(c);
    if (it == m_gpuOfCall.end())
    {
        return false;
    }
    const bool blocking = m_cls[c] == CallClass::MemcpySync;
    for (uint32_t gop : it->second)
    {
        const KinetoEvent& copy = m_ev[gop];
        if (copy.category == KinetoCategory::Memcpy &&
            (blocking || (Contains(copy.name, "DtoH") && Contains(copy.name, "Pageable"))))
        {
            link.awaited.push_back(gop);
            link.stream = copy.stream;
        }
    }
    link.what = DepDetail::SyncCopy;
    return !link.awaited.empty();
}

/// The GPU work call `c` blocks for, if it is a blocking call; false otherwise.
bool
KinetoGraphBuilder::SyncLinkOf(uint32_t c, KinetoSyncLink& link) const
{
    link.call = c;
    const KinetoEvent& call = m_ev[c];
    const KinetoEvent* cs = CudaSyncOf(call);
    const int64_t dev = cs && cs->device >= 0 ? cs->device : m_defaultDevice;
    switch (m_cls[c])
    {
    case CallClass::StreamSync:
        return StreamSyncAwaits(call, cs, dev, link);
    case CallClass::EventSync:
        return EventSyncAwaits(call, cs, dev, link);
    case CallClass::DeviceSync:
        DeviceSyncAwaits(call, cs, dev, link);
        return true;
    case CallClass::MemcpySync:
    case CallClass::MemcpyAsync:
        return SyncCopyAwaits(c, link);
    default:
        return false;
    }
}

/// GPU -> CPU: blocking calls wait for the GPU work they name.
void
KinetoGraphBuilder::AddSyncEdges()
{
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        if (m_g.launchOf[i] >= 0)
        {
            m_gpuOfCall[static_cast<uint32_t>(m_g.launchOf[i])].push_back(i);
        }
    }
    for (uint32_t c = 0; c < m_ev.size(); ++c)
    {
        KinetoSyncLink link;
        if (!SyncLinkOf(c, link))
        {
            continue;
        }
        // The call returned after what it waited for: an awaited op recorded as ending later
        // means the stream (or event) was inferred wrongly; such a call did not wait for it.
        const double toleranceUs = kTimelineToleranceUs;
        const double callEndUs = m_ev[c].EndUs();
        link.awaited.erase(std::remove_if(link.awaited.begin(),
                                          link.awaited.end(),
                                          [&](uint32_t a) {
                                              return m_ev[a].EndUs() > callEndUs + toleranceUs;
                                          }),
                           link.awaited.end());
        if (link.awaited.empty())
        {
            continue;
        }
        for (uint32_t a : link.awaited)
        {
            link.awaitedEndUs = std::max(link.awaitedEndUs, m_ev[a].EndUs());
            if (m_options.gpuCpu)
            {
                AddDep(a, c, DepKind::GpuCpu, link.what);
            }
        }
        m_g.syncs.push_back(std::move(link));
    }
}

KinetoGraph
KinetoGraphBuilder::Take()
{
    return std::move(m_g);
}

} // namespace

const char*
ToString(CrossStreamMethod m)
{
    switch (m)
    {
    case CrossStreamMethod::None:
        return "none";
    case CrossStreamMethod::CudaSync:
        return "cuda_sync";
    case CrossStreamMethod::Inferred:
        return "inferred";
    case CrossStreamMethod::Mixed:
        return "mixed";
    }
    return "?";
}

const char*
ToString(DepKind k)
{
    switch (k)
    {
    case DepKind::CpuCpu:
        return "cpu_cpu";
    case DepKind::CpuGpu:
        return "cpu_gpu";
    case DepKind::GpuCpu:
        return "gpu_cpu";
    case DepKind::GpuGpu:
        return "gpu_gpu";
    }
    return "?";
}

KinetoGraph
BuildKinetoGraph(const KinetoTrace& trace, const KinetoGraphOptions& options)
{
    KinetoGraphBuilder b(trace, options);
    b.NestHostOps();         // CPU -> CPU: program order per thread
    b.AddInterThreadEdges(); // CPU -> CPU: the gap rule
    b.IndexCorrelations();
    b.AddLaunchEdges(); // CPU -> GPU
    b.BuildLaunchLists();
    b.AddStreamOrderEdges(); // GPU -> GPU in a stream
    b.ClassifyCalls();
    b.AddCrossStreamEdges(); // GPU -> GPU across streams
    b.AddSyncEdges();        // GPU -> CPU
    KinetoGraph g = b.Take();
    NS_LOG_INFO("graph " << trace.file << ": cpu_cpu " << g.counts.cpuCpu << " cpu_gpu "
                         << g.counts.cpuGpu << " gpu_cpu " << g.counts.gpuCpu << " gpu_gpu "
                         << g.counts.gpuGpu << " cross-stream " << ToString(g.crossStreamMethod));
    return g;
}

} // namespace gpusim
} // namespace ns3
