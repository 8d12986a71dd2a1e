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

/// One host thread's ops while they are emitted.
struct ThreadOps
{
    uint32_t thread = 0;
    std::vector<Op> ops;
    double cursor = 0;         //!< recorded time up to which host time has been accounted
    std::vector<Op> gpuFront;  //!< cpuGpu ablation: GPU-side ops detached from the host
};

/// Converts one trace in the steps of KinetoToRankTrace(): index which calls play which
/// GPU-side role, collect each host thread's items in recorded order, then emit each thread's
/// ops (the GPU ops among them built on the way, which numbers the collectives in launch order).
class KinetoConverter
{
  public:
    KinetoConverter(const KinetoTrace& trace, const KinetoGraph& graph);

    void IndexCallRoles();
    void NumberEvents();
    void CollectHostItems();
    void OrderThreads();
    void IndexParamComms();
    std::vector<Op> EmitThread(uint32_t t);
    void PrependCommInits(std::vector<std::vector<Op>>& perThread) const;

    uint32_t ThreadCount() const { return static_cast<uint32_t>(m_threadOrder.size()); }
    uint64_t OrphanCount() const { return m_orphans; }

  private:
    int64_t StreamId(int64_t device, int64_t stream) const;
    void AddItem(const KinetoEvent& e, const HostItem& item);

    // GPU ops and collectives.
    Op GpuOp(uint32_t i, uint32_t thread);
    const KinetoCollectiveArgs* CollArgsOf(uint32_t gpu) const;
    void MakeCollective(Op& op, uint32_t i, uint32_t thread);
    void RegisterComm(const std::string& comm, const KinetoCollectiveArgs* args, uint32_t thread);

    // Emission of one thread's items.
    void EmitHost(ThreadOps& out, double cpu, const std::string& name) const;
    void EmitGpuSide(ThreadOps& out, Op op, double cpu) const;
    void EmitMarker(ThreadOps& out, const HostItem& item) const;
    void EmitSignal(ThreadOps& out, const HostItem& item) const;
    void EmitThreadWait(ThreadOps& out, const HostItem& item) const;
    void EmitCall(ThreadOps& out, const HostItem& item);
    void EmitBlockingCall(ThreadOps& out, uint32_t call, const KinetoSyncLink& sync);
    void EmitSyncCopies(ThreadOps& out,
                        const std::vector<uint32_t>& copies,
                        const KinetoSyncLink& sync,
                        double pre);
    Op SyncOp(uint32_t thread, const KinetoEvent& call, const KinetoSyncLink& sync, double pre);
    void EmitNonBlockingCall(ThreadOps& out, uint32_t call);

    const KinetoTrace& m_trace;
    const KinetoGraph& m_graph;
    const std::vector<KinetoEvent>& m_ev;
    const KinetoGraphOptions& m_opt;
    std::set<int64_t> m_gpuDevices; //!< devices with GPU work
    int64_t m_device0 = 0;          //!< the first of them (stream-less sync calls)
    std::unordered_map<uint32_t, std::vector<uint32_t>> m_gpuOfCall;
    std::unordered_map<uint32_t, const KinetoSyncLink*> m_syncOfCall;
    /// Event ids: one per record call that some wait or event sync refers to.
    std::map<uint32_t, uint64_t> m_eventOfRecord;
    std::unordered_map<uint32_t, int64_t> m_recordStream;
    std::unordered_map<uint32_t, std::vector<const KinetoCrossStreamLink*>> m_waitsOfCall;
    std::map<ThreadKey, std::vector<HostItem>> m_items;
    uint64_t m_orphans = 0;
    std::vector<std::pair<double, ThreadKey>> m_threadOrder; //!< by first activity
    std::unordered_map<int64_t, const KinetoEvent*> m_paramCommsByExternal;
    std::map<std::string, uint64_t> m_seqOfComm;
    std::map<std::string, std::pair<int32_t, int32_t>> m_commInfo; //!< nranks, commRank
    std::map<std::string, uint32_t> m_commFirstThread;
};

KinetoConverter::KinetoConverter(const KinetoTrace& trace, const KinetoGraph& graph) :
    m_trace(trace),
    m_graph(graph),
    m_ev(trace.events),
    m_opt(graph.options)
{
    for (const auto& e : m_ev)
    {
        if (e.IsGpu())
        {
            m_gpuDevices.insert(e.device);
        }
    }
    m_device0 = m_gpuDevices.empty() ? 0 : *m_gpuDevices.begin();
}

/// Stream ids: raw Kineto stream ids on one device, device-qualified on several.
int64_t
KinetoConverter::StreamId(int64_t device, int64_t stream) const
{
    // A recorded stream 0 (ROCm's null stream) must not become the IR's legacy default
    // stream: the recording already shows the orderings it imposed as explicit edges, and
    // the engine would add implicit ones (the MI300 trace's compute on stream 0 would wait
    // for every RCCL kernel, +29 % on its makespan).
    if (stream == 0)
    {
        stream = kKinetoNullStreamId;
    }
    // Wrapping unsigned arithmetic: ids from damaged traces may be negative.
    return m_gpuDevices.size() <= 1
               ? stream
               : static_cast<int64_t>((static_cast<uint64_t>(device) << 32) +
                                      static_cast<uint64_t>(stream));
}

/// Which calls take part in which GPU-side role: launches and blocking calls.
void
KinetoConverter::IndexCallRoles()
{
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        if (m_graph.launchOf[i] >= 0)
        {
            m_gpuOfCall[static_cast<uint32_t>(m_graph.launchOf[i])].push_back(i);
        }
    }
    for (const auto& s : m_graph.syncs)
    {
        m_syncOfCall[s.call] = &s;
    }
}

/// Event ids (1, 2, ... in record-call order) for the records that cross-stream waits (with
/// gpu_gpu) and event syncs (with gpu_cpu) refer to.
void
KinetoConverter::NumberEvents()
{
    if (m_opt.gpuGpu)
    {
        for (const auto& l : m_graph.crossStream)
        {
            m_eventOfRecord.emplace(l.recordCall, 0);
            m_recordStream[l.recordCall] = l.recordStream;
            m_waitsOfCall[l.waitCall].push_back(&l);
        }
    }
    if (m_opt.gpuCpu)
    {
        for (const auto& s : m_graph.syncs)
        {
            if (s.what == DepDetail::EventSync && s.recordCall >= 0 && !s.awaited.empty())
            {
                m_eventOfRecord.emplace(static_cast<uint32_t>(s.recordCall), 0);
                m_recordStream[static_cast<uint32_t>(s.recordCall)] = s.stream;
            }
        }
    }
    uint64_t next = 1;
    for (auto& [call, id] : m_eventOfRecord)
    {
        id = next++;
    }
}

void
KinetoConverter::AddItem(const KinetoEvent& e, const HostItem& item)
{
    m_items[{e.pid, e.tid}].push_back(item);
}

/// Host items per thread: ProfilerStep markers, the calls with a GPU-side role, orphan GPU
/// ops (issued from the first thread at their GPU start) and the inter-thread links.
void
KinetoConverter::CollectHostItems()
{
    ThreadKey firstThread{0, 0};
    bool haveFirst = false;
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        const auto& e = m_ev[i];
        if (e.IsHost() && !haveFirst)
        {
            firstThread = {e.pid, e.tid};
            haveFirst = true;
        }
        if (e.category == KinetoCategory::UserAnnotation &&
            e.name.compare(0, 12, "ProfilerStep") == 0)
        {
            AddItem(e, HostItem{e.tsUs, HostItem::MarkerBegin, i});
            AddItem(e, HostItem{e.EndUs(), HostItem::MarkerEnd, i});
            continue;
        }
        if (e.category != KinetoCategory::Runtime && e.category != KinetoCategory::Driver)
        {
            continue;
        }
        // Syncs stay items with gpu_cpu off too: their host time before and after the wait
        // must stay host time while the wait itself goes.
        if (m_gpuOfCall.count(i) || m_eventOfRecord.count(i) || m_waitsOfCall.count(i) ||
            m_syncOfCall.count(i))
        {
            AddItem(e, HostItem{e.tsUs, HostItem::Call, i});
        }
    }
    for (uint32_t i = 0; i < m_ev.size(); ++i)
    {
        if (m_ev[i].IsGpu() && m_graph.launchOf[i] < 0)
        {
            ++m_orphans;
            m_items[firstThread].push_back(HostItem{m_ev[i].tsUs, HostItem::Call, i});
        }
    }
    uint64_t nextToken = 1;
    for (const auto& l : m_graph.threadLinks)
    {
        uint64_t token = nextToken++;
        const auto& from = m_ev[l.from];
        const auto& to = m_ev[l.to];
        AddItem(from, HostItem{from.EndUs(), HostItem::Signal, l.from, token});
        AddItem(to,
                HostItem{to.tsUs, HostItem::ThreadWait, l.to, token, from.EndUs(), l.idleFromUs});
    }
}

/// Sorts each thread's items by time (then kind) and numbers the threads in order of first
/// activity.
void
KinetoConverter::OrderThreads()
{
    for (auto& [key, list] : m_items)
    {
        std::stable_sort(list.begin(), list.end(), [](const HostItem& a, const HostItem& b) {
            if (a.key != b.key)
            {
                return a.key < b.key;
            }
            return a.kind < b.kind;
        });
        m_threadOrder.emplace_back(list.empty() ? 0.0 : list.front().key, key);
    }
    std::stable_sort(m_threadOrder.begin(),
                     m_threadOrder.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
}

/// record_param_comms ops with collective metadata, by External id.
void
KinetoConverter::IndexParamComms()
{
    for (const auto& e : m_ev)
    {
        if (e.category == KinetoCategory::CpuOp && e.name == "record_param_comms" &&
            e.coll.present && e.externalId >= 0)
        {
            m_paramCommsByExternal.emplace(e.externalId, &e);
        }
    }
}

/// Collective metadata of an NCCL kernel: its own args, else the record_param_comms op its
/// launch is nested in, else the record_param_comms with the same External id.
const KinetoCollectiveArgs*
KinetoConverter::CollArgsOf(uint32_t gpu) const
{
    if (m_ev[gpu].coll.present)
    {
        return &m_ev[gpu].coll;
    }
    int64_t call = m_graph.launchOf[gpu];
    if (call < 0)
    {
        return nullptr;
    }
    // The launch happens inside PyTorch's record_param_comms op, which carries the args.
    for (int64_t p = m_graph.parent[call]; p >= 0; p = m_graph.parent[p])
    {
        if (m_ev[p].name == "record_param_comms" && m_ev[p].coll.present)
        {
            return &m_ev[p].coll;
        }
    }
    for (int64_t id : {m_ev[gpu].externalId, m_ev[call].externalId})
    {
        auto it = m_paramCommsByExternal.find(id);
        if (id >= 0 && it != m_paramCommsByExternal.end())
        {
            return &it->second->coll;
        }
    }
    return nullptr;
}

/// The Op for one GPU activity.
Op
KinetoConverter::GpuOp(uint32_t i, uint32_t thread)
{
    const auto& e = m_ev[i];
    Op op;
    op.thread = thread;
    op.stream = StreamId(e.device, e.stream);
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
    if (IsNcclKernel(e))
    {
        MakeCollective(op, i, thread);
    }
    return op;
}

/// Turns an NCCL kernel's Op into a Collective when its kind is known (from the metadata,
/// else the kernel name): payload, communicator and per-communicator sequence number.
void
KinetoConverter::MakeCollective(Op& op, uint32_t i, uint32_t thread)
{
    const KinetoCollectiveArgs* args = CollArgsOf(i);
    CollKind kind;
    if (!((args && ParseKinetoCollective(args->name, kind)) ||
          ParseKinetoCollective(m_ev[i].name, kind)))
    {
        return;
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
    RegisterComm(op.comm, args, thread);
    if (kind != CollKind::Send && kind != CollKind::Recv)
    {
        op.seq = m_seqOfComm[op.comm]++;
    }
}

/// Size and this rank's index of a communicator at its first collective, and the thread that
/// will create it.
void
KinetoConverter::RegisterComm(const std::string& comm,
                              const KinetoCollectiveArgs* args,
                              uint32_t thread)
{
    if (m_commInfo.count(comm))
    {
        return;
    }
    int32_t nranks = static_cast<int32_t>(m_trace.worldSize);
    int32_t commRank = static_cast<int32_t>(std::max<int64_t>(0, m_trace.rank));
    if (args && args->groupSize > 0)
    {
        nranks = static_cast<int32_t>(args->groupSize);
    }
    if (args)
    {
        auto ranks = ParseRankList(args->pgRanks);
        auto it = std::find(ranks.begin(), ranks.end(), m_trace.rank);
        if (it != ranks.end())
        {
            commRank = static_cast<int32_t>(it - ranks.begin());
        }
    }
    m_commInfo[comm] = {nranks, commRank};
    m_commFirstThread[comm] = thread;
}

void
KinetoConverter::EmitHost(ThreadOps& out, double cpu, const std::string& name) const
{
    if (cpu > 0)
    {
        Op h;
        h.kind = OpKind::HostWork;
        h.thread = out.thread;
        h.cpuUs = cpu;
        h.name = name;
        out.ops.push_back(h);
    }
}

/// A GPU-side op (launch, record, stream wait): issued when its call returns; with cpu_gpu
/// off it is detached from the host (issued at the thread's start) and its cost stays host
/// work.
void
KinetoConverter::EmitGpuSide(ThreadOps& out, Op op, double cpu) const
{
    if (m_opt.cpuGpu)
    {
        op.cpuUs = cpu;
        out.ops.push_back(std::move(op));
    }
    else
    {
        EmitHost(out, cpu, op.name);
        op.cpuUs = 0;
        out.gpuFront.push_back(std::move(op));
    }
}

void
KinetoConverter::EmitMarker(ThreadOps& out, const HostItem& item) const
{
    Op m;
    m.kind = OpKind::Marker;
    m.thread = out.thread;
    m.name = m_ev[item.event].name;
    m.phase = item.kind == HostItem::MarkerBegin ? MarkerPhase::Begin : MarkerPhase::End;
    m.recordedUs = item.key;
    m.cpuUs = std::max(0.0, item.key - out.cursor);
    out.cursor = std::max(out.cursor, item.key);
    out.ops.push_back(m);
}

void
KinetoConverter::EmitSignal(ThreadOps& out, const HostItem& item) const
{
    Op s;
    s.kind = OpKind::ThreadSignal;
    s.thread = out.thread;
    s.token = item.token;
    s.cpuUs = std::max(0.0, item.key - out.cursor);
    out.cursor = std::max(out.cursor, item.key);
    if (m_opt.cpuCpu)
    {
        out.ops.push_back(s);
    }
    else
    {
        EmitHost(out, s.cpuUs, "");
    }
}

/// Busy until the previous top-level op ended; then idle until the other thread's op ended:
/// that idle time is the wait, not CPU work.
void
KinetoConverter::EmitThreadWait(ThreadOps& out, const HostItem& item) const
{
    double busy = std::max(0.0, item.idleFromUs - out.cursor);
    out.cursor = std::max(out.cursor, item.idleFromUs);
    Op w;
    w.kind = OpKind::ThreadWait;
    w.thread = out.thread;
    w.token = item.token;
    w.cpuUs = busy;
    if (m_opt.cpuCpu)
    {
        out.ops.push_back(w);
    }
    else
    {
        EmitHost(out, busy, "");
    }
    out.cursor = std::max(out.cursor, item.otherEndUs);
}

void
KinetoConverter::EmitCall(ThreadOps& out, const HostItem& item)
{
    const auto& e = m_ev[item.event];
    if (e.IsGpu())
    {
        // Orphan GPU op: issued at its recorded start.
        double cpu = std::max(0.0, e.tsUs - out.cursor);
        out.cursor = std::max(out.cursor, e.tsUs);
        EmitGpuSide(out, GpuOp(item.event, out.thread), cpu);
        return;
    }
    auto syncIt = m_syncOfCall.find(item.event);
    if (syncIt != m_syncOfCall.end() && !syncIt->second->awaited.empty())
    {
        EmitBlockingCall(out, item.event, *syncIt->second);
    }
    else
    {
        EmitNonBlockingCall(out, item.event);
    }
}

/// Blocking call: host time before it, then the wait, then what the call cost after the
/// awaited GPU work finished.
void
KinetoConverter::EmitBlockingCall(ThreadOps& out, uint32_t call, const KinetoSyncLink& sync)
{
    const auto& e = m_ev[call];
    double issue = e.tsUs;
    if (sync.what == DepDetail::SyncCopy)
    {
        // The copy starts some µs into the call (staging, launch); that part is host time,
        // so issue the copy when it really started.
        double gpuStart = e.EndUs();
        for (uint32_t a : sync.awaited)
        {
            gpuStart = std::min(gpuStart, m_ev[a].tsUs);
        }
        issue = std::clamp(gpuStart, e.tsUs, e.EndUs());
    }
    double pre = std::max(0.0, issue - out.cursor);
    out.cursor = std::max(out.cursor, issue);
    double waitedUntil = std::max(issue, sync.awaitedEndUs);
    double residual = std::clamp(e.EndUs() - waitedUntil, 0.0, e.durUs);
    auto gpuIt = m_gpuOfCall.find(call);
    if (sync.what == DepDetail::SyncCopy && gpuIt != m_gpuOfCall.end())
    {
        EmitSyncCopies(out, gpuIt->second, sync, pre);
    }
    else if (!m_opt.gpuCpu)
    {
        // gpu_cpu ablation: the call returns without waiting.
        EmitHost(out, pre, e.name);
    }
    else
    {
        out.ops.push_back(SyncOp(out.thread, e, sync, pre));
    }
    EmitHost(out, residual, e.name);
    out.cursor = std::max(out.cursor, e.EndUs());
}

/// The copies of a blocking copy call: the awaited ones block the host (with gpu_cpu).
void
KinetoConverter::EmitSyncCopies(ThreadOps& out,
                                const std::vector<uint32_t>& copies,
                                const KinetoSyncLink& sync,
                                double pre)
{
    bool first = true;
    for (uint32_t gi : copies)
    {
        Op op = GpuOp(gi, out.thread);
        bool blocking =
            std::find(sync.awaited.begin(), sync.awaited.end(), gi) != sync.awaited.end();
        op.async = !(blocking && m_opt.gpuCpu);
        op.cpuUs = first ? pre : 0;
        first = false;
        if (!op.async || m_opt.cpuGpu)
        {
            out.ops.push_back(std::move(op));
        }
        else
        {
            double c = op.cpuUs;
            EmitGpuSide(out, std::move(op), c);
        }
    }
}

/// The StreamSync / DeviceSync / EventSync op of a synchronising call.
Op
KinetoConverter::SyncOp(uint32_t thread,
                        const KinetoEvent& call,
                        const KinetoSyncLink& sync,
                        double pre)
{
    Op s;
    s.thread = thread;
    s.cpuUs = pre;
    s.name = call.name;
    s.stream = sync.stream >= 0 ? StreamId(m_device0, sync.stream) : 0;
    if (sync.what == DepDetail::StreamSync)
    {
        s.kind = OpKind::StreamSync;
    }
    else if (sync.what == DepDetail::DeviceSync)
    {
        s.kind = OpKind::DeviceSync;
    }
    else
    {
        s.kind = OpKind::EventSync;
        s.event = m_eventOfRecord[static_cast<uint32_t>(sync.recordCall)];
    }
    return s;
}

/// Non-blocking call: its whole duration is host time, issued at its return; then what it
/// launched, the event it recorded and the waits it placed.
void
KinetoConverter::EmitNonBlockingCall(ThreadOps& out, uint32_t call)
{
    const auto& e = m_ev[call];
    double cpu = std::max(0.0, e.EndUs() - out.cursor);
    out.cursor = std::max(out.cursor, e.EndUs());
    auto gpuIt = m_gpuOfCall.find(call);
    if (gpuIt != m_gpuOfCall.end())
    {
        for (uint32_t gi : gpuIt->second)
        {
            EmitGpuSide(out, GpuOp(gi, out.thread), cpu);
            cpu = 0;
        }
    }
    auto recIt = m_eventOfRecord.find(call);
    if (recIt != m_eventOfRecord.end())
    {
        Op r;
        r.kind = OpKind::EventRecord;
        r.thread = out.thread;
        r.name = e.name;
        r.event = recIt->second;
        r.stream = StreamId(m_device0, m_recordStream[call]);
        EmitGpuSide(out, r, cpu);
        cpu = 0;
    }
    auto waitIt = m_waitsOfCall.find(call);
    if (waitIt != m_waitsOfCall.end())
    {
        for (const auto* l : waitIt->second)
        {
            Op w;
            w.kind = OpKind::StreamWaitEvent;
            w.thread = out.thread;
            w.name = e.name;
            w.event = m_eventOfRecord[l->recordCall];
            w.stream = StreamId(m_device0, l->waitStream);
            EmitGpuSide(out, w, cpu);
            cpu = 0;
        }
    }
    EmitHost(out, cpu, e.name);
}

/// Thread t's ops. cpu_us is the recorded host time before each op, measured from a cursor
/// that skips time spent blocked (waits, syncs), so replaying with the recorded GPU durations
/// reproduces the timing and removing a dependency removes its wait.
std::vector<Op>
KinetoConverter::EmitThread(uint32_t t)
{
    ThreadOps out;
    out.thread = t;
    for (const auto& item : m_items[m_threadOrder[t].second])
    {
        switch (item.kind)
        {
        case HostItem::MarkerBegin:
        case HostItem::MarkerEnd:
            EmitMarker(out, item);
            break;
        case HostItem::Signal:
            EmitSignal(out, item);
            break;
        case HostItem::ThreadWait:
            EmitThreadWait(out, item);
            break;
        case HostItem::Call:
            EmitCall(out, item);
            break;
        }
    }
    if (!out.gpuFront.empty())
    {
        out.ops.insert(out.ops.begin(), out.gpuFront.begin(), out.gpuFront.end());
    }
    return std::move(out.ops);
}

/// Communicators are created before anything else on the thread that first uses them.
void
KinetoConverter::PrependCommInits(std::vector<std::vector<Op>>& perThread) const
{
    for (const auto& [comm, info] : m_commInfo)
    {
        Op init;
        init.kind = OpKind::CommInit;
        init.thread = m_commFirstThread.at(comm);
        init.comm = comm;
        init.nranks = info.first;
        init.commRank = info.second;
        auto& list = perThread[init.thread];
        list.insert(list.begin(), init);
    }
}

} // namespace

RankTrace
KinetoToRankTrace(const KinetoTrace& trace, const KinetoGraph& graph)
{
    KinetoConverter c(trace, graph);
    c.IndexCallRoles();
    c.NumberEvents();
    c.CollectHostItems();
    c.OrderThreads();
    c.IndexParamComms();
    std::vector<std::vector<Op>> perThread;
    for (uint32_t t = 0; t < c.ThreadCount(); ++t)
    {
        perThread.push_back(c.EmitThread(t));
    }
    c.PrependCommInits(perThread);

    RankTrace rt;
    rt.rank = static_cast<uint32_t>(std::max<int64_t>(0, trace.rank));
    rt.device = trace.devices.empty() ? "" : trace.devices.front().name;
    for (auto& list : perThread)
    {
        for (auto& op : list)
        {
            rt.ops.push_back(std::move(op));
        }
    }
    NS_LOG_INFO("converted " << trace.file << ": " << rt.ops.size() << " ops on "
                             << perThread.size() << " threads, " << c.OrphanCount()
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
