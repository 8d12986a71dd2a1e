// Conversion of a Kineto trace and its execution graph into the gpusim Op IR.
#include "ns3/kineto-trace.h"
#include "ns3/log.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ns3
{
namespace gpusim
{

NS_LOG_COMPONENT_DEFINE("GpusimKinetoConvert");

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

// ---------------------------------------------------------------------------------------------
// Conversion to the Op IR
// ---------------------------------------------------------------------------------------------

bool
ParseKinetoCollective(const std::string& raw, CollKind& out)
{
    std::string s;
    for (char c : raw)
    {
        if (c != '_' && c != ' ')
        {
            s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        }
    }
    // PyTorch variants: _allgather_base, allgather_into_tensor_coalesced, reduce_scatter_tensor…
    for (const char* suffix : {"coalesced", "base", "intotensor", "tensor"})
    {
        std::string_view sv(s);
        if (EndsWith(sv, suffix))
        {
            s.resize(s.size() - std::strlen(suffix));
        }
    }
    auto has = [&s](const char* p) {
        return s.find(p) != std::string::npos;
    };
    // Kernel names: ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_AllGather_RING_LL.
    if (has("allreduce") || s == "barrier")
    {
        out = CollKind::AllReduce;
    }
    else if (has("allgather"))
    {
        out = CollKind::AllGather;
    }
    else if (has("reducescatter"))
    {
        out = CollKind::ReduceScatter;
    }
    else if (has("alltoall"))
    {
        out = CollKind::AllToAll;
    }
    else if (has("broadcast"))
    {
        out = CollKind::Broadcast;
    }
    else if (has("sendrecv") || s == "send" || has("kernelsend"))
    {
        out = CollKind::Send;
    }
    else if (s == "recv" || has("kernelrecv"))
    {
        out = CollKind::Recv;
    }
    else if (s == "reduce" || has("kernelreduce"))
    {
        out = CollKind::Reduce;
    }
    else
    {
        return false;
    }
    return true;
}

bool
ParseKinetoDtype(const std::string& name, DataType& out, uint32_t& size)
{
    struct Entry
    {
        const char* name;
        DataType type;
        uint32_t size;
    };
    static const Entry table[] = {
        {"Float", DataType::F32, 4},
        {"float", DataType::F32, 4},
        {"Half", DataType::F16, 2},
        {"BFloat16", DataType::BF16, 2},
        {"Double", DataType::F64, 8},
        {"Char", DataType::I8, 1},
        {"Byte", DataType::U8, 1},
        {"Bool", DataType::U8, 1},
        {"Int", DataType::I32, 4},
        {"Long", DataType::I64, 8},
        {"UInt32", DataType::U32, 4},
        {"UInt64", DataType::U64, 8},
        {"Float8_e4m3fn", DataType::F8E4M3, 1},
        {"Float8_e4m3fnuz", DataType::F8E4M3, 1},
        {"Float8_e5m2", DataType::F8E5M2, 1},
        {"Float8_e5m2fnuz", DataType::F8E5M2, 1},
    };
    for (const auto& e : table)
    {
        if (name == e.name)
        {
            out = e.type;
            size = e.size;
            return true;
        }
    }
    return false;
}

namespace
{

/// One thing a host thread does, at a recorded time, before conversion into Ops.
struct HostItem
{
    enum Kind : uint8_t
    {
        ThreadWait, // before the op it precedes
        MarkerBegin,
        Call, // launch / record / wait-event / sync
        Signal,
        MarkerEnd,
    };
    double key = 0; // sort time
    Kind kind = Call;
    uint32_t event = 0;
    uint64_t token = 0;
    double otherEndUs = 0; // ThreadWait: end of the signalling op
    double idleFromUs = 0; // ThreadWait: end of this thread's previous top-level op
};

MemcpyKind
CopyKindFromName(std::string_view name)
{
    if (Contains(name, "HtoD"))
    {
        return MemcpyKind::HostToDevice;
    }
    if (Contains(name, "DtoH"))
    {
        return MemcpyKind::DeviceToHost;
    }
    if (Contains(name, "DtoD"))
    {
        return MemcpyKind::DeviceToDevice;
    }
    if (Contains(name, "HtoH"))
    {
        return MemcpyKind::HostToHost;
    }
    if (Contains(name, "PtoP") || Contains(name, "Peer"))
    {
        return MemcpyKind::PeerToPeer;
    }
    return MemcpyKind::Default;
}

bool
IsNcclKernel(const KinetoEvent& e)
{
    return e.category == KinetoCategory::Kernel &&
           (Contains(e.name, "nccl") || Contains(e.name, "rccl") || Contains(e.name, "NCCL"));
}

/// Parses "[0, 1, 2]" into integers.
std::vector<int64_t>
ParseRankList(const std::string& s)
{
    std::vector<int64_t> out;
    int64_t cur = 0;
    bool in = false;
    for (char c : s)
    {
        if (c >= '0' && c <= '9')
        {
            cur = cur * 10 + (c - '0');
            in = true;
        }
        else if (in)
        {
            out.push_back(cur);
            cur = 0;
            in = false;
        }
    }
    if (in)
    {
        out.push_back(cur);
    }
    return out;
}

} // namespace

RankTrace
KinetoToRankTrace(const KinetoTrace& trace, const KinetoGraph& graph)
{
    const auto& ev = trace.events;
    const size_t n = ev.size();
    const auto& opt = graph.options;
    RankTrace rt;
    rt.rank = static_cast<uint32_t>(std::max<int64_t>(0, trace.rank));
    rt.device = trace.devices.empty() ? "" : trace.devices.front().name;

    // Stream ids: raw Kineto stream ids on one device, device-qualified on several.
    std::set<int64_t> gpuDevices;
    for (const auto& e : ev)
    {
        if (e.IsGpu())
        {
            gpuDevices.insert(e.device);
        }
    }
    auto streamId = [&gpuDevices](int64_t device, int64_t stream) -> int64_t {
        // A recorded stream 0 (ROCm's null stream) must not become the IR's legacy default
        // stream: the recording already shows the orderings it imposed as explicit edges, and
        // the engine would add implicit ones (the MI300 trace's compute on stream 0 would wait
        // for every RCCL kernel, +29 % on its makespan).
        if (stream == 0)
        {
            stream = kKinetoNullStreamId;
        }
        // Wrapping unsigned arithmetic: ids from damaged traces may be negative.
        return gpuDevices.size() <= 1 ? stream
                                      : static_cast<int64_t>((static_cast<uint64_t>(device) << 32) +
                                                             static_cast<uint64_t>(stream));
    };
    int64_t device0 = gpuDevices.empty() ? 0 : *gpuDevices.begin();

    // Which calls take part in which GPU-side role.
    std::unordered_map<uint32_t, std::vector<uint32_t>> gpuOfCall;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (graph.launchOf[i] >= 0)
        {
            gpuOfCall[static_cast<uint32_t>(graph.launchOf[i])].push_back(i);
        }
    }
    std::unordered_map<uint32_t, const KinetoSyncLink*> syncOfCall;
    for (const auto& s : graph.syncs)
    {
        syncOfCall[s.call] = &s;
    }
    // Event ids: one per record call that some wait or event sync refers to.
    std::map<uint32_t, uint64_t> eventOfRecord;
    std::unordered_map<uint32_t, int64_t> recordStream;
    std::unordered_map<uint32_t, std::vector<const KinetoCrossStreamLink*>> waitsOfCall;
    if (opt.gpuGpu)
    {
        for (const auto& l : graph.crossStream)
        {
            eventOfRecord.emplace(l.recordCall, 0);
            recordStream[l.recordCall] = l.recordStream;
            waitsOfCall[l.waitCall].push_back(&l);
        }
    }
    if (opt.gpuCpu)
    {
        for (const auto& s : graph.syncs)
        {
            if (s.what == DepDetail::EventSync && s.recordCall >= 0 && !s.awaited.empty())
            {
                eventOfRecord.emplace(static_cast<uint32_t>(s.recordCall), 0);
                recordStream[static_cast<uint32_t>(s.recordCall)] = s.stream;
            }
        }
    }
    {
        uint64_t next = 1;
        for (auto& [call, id] : eventOfRecord)
        {
            id = next++;
        }
    }

    // Host items per thread.
    std::map<ThreadKey, std::vector<HostItem>> items;
    auto add = [&items](const KinetoEvent& e, HostItem item) {
        items[{e.pid, e.tid}].push_back(item);
    };
    ThreadKey firstThread{0, 0};
    bool haveFirst = false;
    for (uint32_t i = 0; i < n; ++i)
    {
        const auto& e = ev[i];
        if (e.IsHost() && !haveFirst)
        {
            firstThread = {e.pid, e.tid};
            haveFirst = true;
        }
        if (e.category == KinetoCategory::UserAnnotation &&
            e.name.compare(0, 12, "ProfilerStep") == 0)
        {
            add(e, HostItem{e.tsUs, HostItem::MarkerBegin, i});
            add(e, HostItem{e.EndUs(), HostItem::MarkerEnd, i});
            continue;
        }
        if (e.category != KinetoCategory::Runtime && e.category != KinetoCategory::Driver)
        {
            continue;
        }
        // Syncs stay items with gpu_cpu off too: their host time before and after the wait
        // must stay host time while the wait itself goes.
        bool relevant = gpuOfCall.count(i) || eventOfRecord.count(i) || waitsOfCall.count(i) ||
                        syncOfCall.count(i);
        if (relevant)
        {
            add(e, HostItem{e.tsUs, HostItem::Call, i});
        }
    }
    // GPU ops without a launch call: issue them from the first thread at their GPU start.
    std::vector<uint32_t> orphans;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (ev[i].IsGpu() && graph.launchOf[i] < 0)
        {
            orphans.push_back(i);
            items[firstThread].push_back(HostItem{ev[i].tsUs, HostItem::Call, i});
        }
    }
    uint64_t nextToken = 1;
    for (const auto& l : graph.threadLinks)
    {
        uint64_t token = nextToken++;
        const auto& from = ev[l.from];
        const auto& to = ev[l.to];
        HostItem s{from.EndUs(), HostItem::Signal, l.from, token};
        add(from, s);
        HostItem w{to.tsUs, HostItem::ThreadWait, l.to, token, from.EndUs(), l.idleFromUs};
        add(to, w);
    }

    // Thread indices: in order of first activity.
    std::vector<std::pair<double, ThreadKey>> threadOrder;
    for (auto& [key, list] : items)
    {
        std::stable_sort(list.begin(), list.end(), [](const HostItem& a, const HostItem& b) {
            if (a.key != b.key)
            {
                return a.key < b.key;
            }
            return a.kind < b.kind;
        });
        threadOrder.emplace_back(list.empty() ? 0.0 : list.front().key, key);
    }
    std::stable_sort(threadOrder.begin(), threadOrder.end(), [](const auto& a, const auto& b) {
        return a.first < b.first;
    });

    // Collective sequence numbers per communicator, in launch order.
    std::unordered_map<int64_t, const KinetoEvent*> paramCommsByExternal;
    for (const auto& e : ev)
    {
        if (e.category == KinetoCategory::CpuOp && e.name == "record_param_comms" &&
            e.coll.present && e.externalId >= 0)
        {
            paramCommsByExternal.emplace(e.externalId, &e);
        }
    }
    auto collArgsOf = [&](uint32_t gpu) -> const KinetoCollectiveArgs* {
        if (ev[gpu].coll.present)
        {
            return &ev[gpu].coll;
        }
        int64_t call = graph.launchOf[gpu];
        if (call < 0)
        {
            return nullptr;
        }
        // The launch happens inside PyTorch's record_param_comms op, which carries the args.
        for (int64_t p = graph.parent[call]; p >= 0; p = graph.parent[p])
        {
            if (ev[p].name == "record_param_comms" && ev[p].coll.present)
            {
                return &ev[p].coll;
            }
        }
        for (int64_t id : {ev[gpu].externalId, ev[call].externalId})
        {
            auto it = paramCommsByExternal.find(id);
            if (id >= 0 && it != paramCommsByExternal.end())
            {
                return &it->second->coll;
            }
        }
        return nullptr;
    };
    std::map<std::string, uint64_t> seqOfComm;
    std::map<std::string, std::pair<int32_t, int32_t>> commInfo; // nranks, commRank
    std::map<std::string, uint32_t> commFirstThread;

    // Builds the Op for one GPU activity.
    auto gpuOp = [&](uint32_t i, uint32_t thread) {
        const auto& e = ev[i];
        Op op;
        op.thread = thread;
        op.stream = streamId(e.device, e.stream);
        op.name = e.name;
        op.durUs = e.durUs;
        if (e.category == KinetoCategory::Memcpy)
        {
            op.kind = OpKind::Memcpy;
            op.copyKind = CopyKindFromName(e.name);
            op.bytes = e.bytes;
            return op;
        }
        if (e.category == KinetoCategory::Memset)
        {
            op.kind = OpKind::Memset;
            op.bytes = e.bytes;
            return op;
        }
        op.kind = OpKind::Kernel;
        if (e.hasLaunchShape)
        {
            op.grid = e.grid;
            op.block = e.block;
        }
        CollKind kind;
        const KinetoCollectiveArgs* args = IsNcclKernel(e) ? collArgsOf(i) : nullptr;
        bool mapped = IsNcclKernel(e) && ((args && ParseKinetoCollective(args->name, kind)) ||
                                          ParseKinetoCollective(e.name, kind));
        if (!mapped)
        {
            return op;
        }
        op.kind = OpKind::Collective;
        op.coll = kind;
        uint32_t size = 1;
        DataType dt = DataType::U8;
        if (args && ParseKinetoDtype(args->dtype, dt, size))
        {
            op.dtype = dt;
        }
        else
        {
            op.dtype = DataType::U8;
            size = 1;
        }
        if (args && !args->pgName.empty())
        {
            op.comm = "pg:" + args->pgName;
        }
        else if (args && !args->pgRanks.empty())
        {
            op.comm = "ranks:" + args->pgRanks;
        }
        else
        {
            op.comm = "unknown";
        }
        if (args)
        {
            op.count = static_cast<uint64_t>(std::max<int64_t>(0, args->inNelems));
            uint64_t elems = kind == CollKind::AllGather
                                 ? static_cast<uint64_t>(std::max<int64_t>(0, args->outNelems))
                                 : op.count;
            op.bytes = elems * size;
        }
        int32_t nranks = static_cast<int32_t>(trace.worldSize);
        int32_t commRank = static_cast<int32_t>(std::max<int64_t>(0, trace.rank));
        if (args && args->groupSize > 0)
        {
            nranks = static_cast<int32_t>(args->groupSize);
        }
        if (args)
        {
            auto ranks = ParseRankList(args->pgRanks);
            auto it = std::find(ranks.begin(), ranks.end(), trace.rank);
            if (it != ranks.end())
            {
                commRank = static_cast<int32_t>(it - ranks.begin());
            }
        }
        if (!commInfo.count(op.comm))
        {
            commInfo[op.comm] = {nranks, commRank};
            commFirstThread[op.comm] = thread;
        }
        if (kind != CollKind::Send && kind != CollKind::Recv)
        {
            op.seq = seqOfComm[op.comm]++;
        }
        return op;
    };

    // Emit each thread's ops; cpu_us is the recorded host time before each op, measured from
    // a cursor that skips time spent blocked (waits, syncs), so replaying with the recorded
    // GPU durations reproduces the timing and removing a dependency removes its wait.
    std::vector<std::vector<Op>> perThread(threadOrder.size());
    for (uint32_t t = 0; t < threadOrder.size(); ++t)
    {
        auto& out = perThread[t];
        auto& list = items[threadOrder[t].second];
        double cursor = 0;
        std::vector<Op> gpuFront; // cpuGpu ablation: GPU-side ops detached from the host
        auto emitHost = [&](double cpu, const std::string& name) {
            if (cpu > 0)
            {
                Op h;
                h.kind = OpKind::HostWork;
                h.thread = t;
                h.cpuUs = cpu;
                h.name = name;
                out.push_back(h);
            }
        };
        // A GPU-side op (launch, record, stream wait): issued when its call returns.
        auto emitGpuSide = [&](Op op, double cpu) {
            if (opt.cpuGpu)
            {
                op.cpuUs = cpu;
                out.push_back(std::move(op));
            }
            else
            {
                emitHost(cpu, op.name);
                op.cpuUs = 0;
                gpuFront.push_back(std::move(op));
            }
        };
        for (const auto& item : list)
        {
            const auto& e = ev[item.event];
            switch (item.kind)
            {
            case HostItem::MarkerBegin:
            case HostItem::MarkerEnd: {
                Op m;
                m.kind = OpKind::Marker;
                m.thread = t;
                m.name = e.name;
                m.phase =
                    item.kind == HostItem::MarkerBegin ? MarkerPhase::Begin : MarkerPhase::End;
                m.recordedUs = item.key;
                m.cpuUs = std::max(0.0, item.key - cursor);
                cursor = std::max(cursor, item.key);
                out.push_back(m);
                break;
            }
            case HostItem::Signal: {
                Op s;
                s.kind = OpKind::ThreadSignal;
                s.thread = t;
                s.token = item.token;
                s.cpuUs = std::max(0.0, item.key - cursor);
                cursor = std::max(cursor, item.key);
                if (opt.cpuCpu)
                {
                    out.push_back(s);
                }
                else
                {
                    emitHost(s.cpuUs, "");
                }
                break;
            }
            case HostItem::ThreadWait: {
                // Busy until the previous top-level op ended; then idle until the other
                // thread's op ended: that idle time is the wait, not CPU work.
                double busy = std::max(0.0, item.idleFromUs - cursor);
                cursor = std::max(cursor, item.idleFromUs);
                Op w;
                w.kind = OpKind::ThreadWait;
                w.thread = t;
                w.token = item.token;
                w.cpuUs = busy;
                if (opt.cpuCpu)
                {
                    out.push_back(w);
                }
                else
                {
                    emitHost(busy, "");
                }
                cursor = std::max(cursor, item.otherEndUs);
                break;
            }
            case HostItem::Call: {
                if (e.IsGpu())
                {
                    // Orphan GPU op: issued at its recorded start.
                    double cpu = std::max(0.0, e.tsUs - cursor);
                    cursor = std::max(cursor, e.tsUs);
                    emitGpuSide(gpuOp(item.event, t), cpu);
                    break;
                }
                auto syncIt = syncOfCall.find(item.event);
                const KinetoSyncLink* sync =
                    syncIt != syncOfCall.end() && !syncIt->second->awaited.empty() ? syncIt->second
                                                                                   : nullptr;
                auto gpuIt = gpuOfCall.find(item.event);
                auto recIt = eventOfRecord.find(item.event);
                auto waitIt = waitsOfCall.find(item.event);
                if (sync)
                {
                    // Blocking call: host time before it, then the wait, then what the call
                    // cost after the awaited GPU work finished.
                    double issue = e.tsUs;
                    if (sync->what == DepDetail::SyncCopy)
                    {
                        // The copy starts some µs into the call (staging, launch); that
                        // part is host time, so issue the copy when it really started.
                        double gpuStart = e.EndUs();
                        for (uint32_t a : sync->awaited)
                        {
                            gpuStart = std::min(gpuStart, ev[a].tsUs);
                        }
                        issue = std::clamp(gpuStart, e.tsUs, e.EndUs());
                    }
                    double pre = std::max(0.0, issue - cursor);
                    cursor = std::max(cursor, issue);
                    double waitedUntil = std::max(issue, sync->awaitedEndUs);
                    double residual = std::clamp(e.EndUs() - waitedUntil, 0.0, e.durUs);
                    if (sync->what == DepDetail::SyncCopy && gpuIt != gpuOfCall.end())
                    {
                        // The copy itself is the blocking op.
                        bool first = true;
                        for (uint32_t gi : gpuIt->second)
                        {
                            Op op = gpuOp(gi, t);
                            bool blocking =
                                std::find(sync->awaited.begin(), sync->awaited.end(), gi) !=
                                sync->awaited.end();
                            op.async = !(blocking && opt.gpuCpu);
                            op.cpuUs = first ? pre : 0;
                            first = false;
                            if (!op.async || opt.cpuGpu)
                            {
                                out.push_back(std::move(op));
                            }
                            else
                            {
                                double c = op.cpuUs;
                                emitGpuSide(std::move(op), c);
                            }
                        }
                    }
                    else if (!opt.gpuCpu)
                    {
                        // gpu_cpu ablation: the call returns without waiting.
                        emitHost(pre, e.name);
                    }
                    else
                    {
                        Op s;
                        s.thread = t;
                        s.cpuUs = pre;
                        s.name = e.name;
                        s.stream = sync->stream >= 0 ? streamId(device0, sync->stream) : 0;
                        if (sync->what == DepDetail::StreamSync)
                        {
                            s.kind = OpKind::StreamSync;
                        }
                        else if (sync->what == DepDetail::DeviceSync)
                        {
                            s.kind = OpKind::DeviceSync;
                        }
                        else
                        {
                            s.kind = OpKind::EventSync;
                            s.event = eventOfRecord[static_cast<uint32_t>(sync->recordCall)];
                        }
                        out.push_back(s);
                    }
                    emitHost(residual, e.name);
                    cursor = std::max(cursor, e.EndUs());
                    break;
                }
                // Non-blocking call: its whole duration is host time, issued at its return.
                double cpu = std::max(0.0, e.EndUs() - cursor);
                cursor = std::max(cursor, e.EndUs());
                if (gpuIt != gpuOfCall.end())
                {
                    for (uint32_t gi : gpuIt->second)
                    {
                        emitGpuSide(gpuOp(gi, t), cpu);
                        cpu = 0;
                    }
                }
                if (recIt != eventOfRecord.end())
                {
                    Op r;
                    r.kind = OpKind::EventRecord;
                    r.thread = t;
                    r.name = e.name;
                    r.event = recIt->second;
                    r.stream = streamId(device0, recordStream[item.event]);
                    emitGpuSide(r, cpu);
                    cpu = 0;
                }
                if (waitIt != waitsOfCall.end())
                {
                    for (const auto* l : waitIt->second)
                    {
                        Op w;
                        w.kind = OpKind::StreamWaitEvent;
                        w.thread = t;
                        w.name = e.name;
                        w.event = eventOfRecord[l->recordCall];
                        w.stream = streamId(device0, l->waitStream);
                        emitGpuSide(w, cpu);
                        cpu = 0;
                    }
                }
                emitHost(cpu, e.name);
                break;
            }
            }
        }
        if (!gpuFront.empty())
        {
            out.insert(out.begin(), gpuFront.begin(), gpuFront.end());
        }
    }

    // Communicators are created before anything else on the thread that first uses them.
    for (const auto& [comm, info] : commInfo)
    {
        Op init;
        init.kind = OpKind::CommInit;
        init.thread = commFirstThread[comm];
        init.comm = comm;
        init.nranks = info.first;
        init.commRank = info.second;
        auto& list = perThread[init.thread];
        list.insert(list.begin(), init);
    }
    for (auto& list : perThread)
    {
        for (auto& op : list)
        {
            rt.ops.push_back(std::move(op));
        }
    }
    NS_LOG_INFO("converted " << trace.file << ": " << rt.ops.size() << " ops on "
                             << perThread.size() << " threads, " << orphans.size()
                             << " orphan GPU ops");
    return rt;
}

JobTrace
ReadKinetoJob(const std::vector<std::string>& files,
              const KinetoGraphOptions& options,
              std::vector<KinetoFileSummary>* summaries)
{
    JobTrace job;
    job.source = "kineto";
    std::set<uint32_t> seen;
    for (size_t k = 0; k < files.size(); ++k)
    {
        KinetoTrace trace = ReadKinetoTrace(files[k]);
        if (trace.rank < 0)
        {
            trace.rank = static_cast<int64_t>(k);
        }
        if (!seen.insert(static_cast<uint32_t>(trace.rank)).second)
        {
            throw TraceFormatError(files[k],
                                   0,
                                   "rank " + std::to_string(trace.rank) +
                                       " appears in more than one file");
        }
        KinetoGraph graph = BuildKinetoGraph(trace, options);
        job.ranks.push_back(KinetoToRankTrace(trace, graph));
        if (summaries)
        {
            KinetoFileSummary s;
            s.file = files[k];
            s.rank = trace.rank;
            s.worldSize = trace.worldSize;
            s.jsonBytes = trace.jsonBytes;
            s.events = trace.events.size();
            s.counts = graph.counts;
            s.crossStreamMethod = graph.crossStreamMethod;
            s.orphanGpuOps = graph.orphanGpuOps;
            summaries->push_back(s);
        }
        job.metadata["file." + std::to_string(trace.rank)] = files[k];
    }
    std::sort(job.ranks.begin(), job.ranks.end(), [](const RankTrace& a, const RankTrace& b) {
        return a.rank < b.rank;
    });
    return job;
}

} // namespace gpusim
} // namespace ns3
