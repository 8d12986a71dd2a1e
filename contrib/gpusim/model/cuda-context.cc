#include "ns3/cuda-context.h"

#include "ns3/log.h"
#include "ns3/host-first-scheduler.h"
#include "ns3/nccl-collective.h"
#include "ns3/op-feed.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("CudaContext");
NS_OBJECT_ENSURE_REGISTERED(CudaContext);
NS_OBJECT_ENSURE_REGISTERED(HostThread);

using gpusim::Op;
using gpusim::OpKind;

namespace
{
Time
MicroSecondsToTime(double us)
{
    return NanoSeconds(static_cast<int64_t>(std::llround(us * 1e3)));
}
} // namespace

// ---------------------------------------------------------------- HostThread

TypeId
HostThread::GetTypeId()
{
    static TypeId tid = TypeId("ns3::HostThread")
                            .SetParent<Object>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<HostThread>();
    return tid;
}

HostThread::HostThread() = default;
HostThread::~HostThread() = default;

void
HostThread::DoDispose()
{
    m_context = nullptr;
    m_ops.clear();
    m_feed = nullptr;
    Object::DoDispose();
}

void
HostThread::Setup(CudaContext* context, uint32_t index, std::vector<const Op*> ops)
{
    m_context = context;
    m_index = index;
    m_ops = std::move(ops);
}

void
HostThread::SetupFeed(CudaContext* context, uint32_t index, Ptr<OpFeed> feed)
{
    m_context = context;
    m_index = index;
    m_feed = feed;
}

void
HostThread::Start()
{
    m_started = true;
    if (m_feed)
    {
        FeedNext();
        return;
    }
    Simulator::ScheduleNow(&HostThread::Advance, this);
}

void
HostThread::StartFrom(Time origin)
{
    m_hasOrigin = true;
    m_origin = origin;
    Start();
}

void
HostThread::ScheduleHostStep(Time at, std::function<void()> step)
{
    Time delay = at - Simulator::Now();
    if (delay.IsNegative())
    {
        // Only a thread first seen after its start instant can get here (counted and warned
        // about by the live source); it issues now.
        delay = Seconds(0);
    }
    Ptr<EventImpl> ev(MakeEvent(std::move(step)), false);
    HostFirstScheduler::TagHostEvent(PeekPointer(ev),
                                     (uint64_t(m_context->GetRank()) << 32) | m_index);
    Simulator::Schedule(delay, ev);
}

void
HostThread::FeedNext()
{
    m_readySince = m_hasOrigin ? m_origin : Simulator::Now();
    m_hasOrigin = false;
    Op* op = nullptr;
    OpFeed::State st = m_feed->Next(m_context->GetRank(), m_index, op);
    if (st == OpFeed::State::Pending)
    {
        m_feed->WhenReady(m_context->GetRank(), m_index, m_readySince, !m_group.empty(),
                          [this]() { OnFed(); });
        return;
    }
    PlanNext(static_cast<int>(st), op);
}

void
HostThread::OnFed()
{
    Op* op = nullptr;
    OpFeed::State st = m_feed->Next(m_context->GetRank(), m_index, op);
    NS_ASSERT(st != OpFeed::State::Pending);
    PlanNext(static_cast<int>(st), op);
}

void
HostThread::PlanNext(int state, Op* op)
{
    const bool ended = state == static_cast<int>(OpFeed::State::Ended);
    const bool closesGroup =
        !m_group.empty() &&
        (ended || !(op->kind == OpKind::Collective && op->group == m_group.front()->group));
    auto plan = [this, ended, op]() {
        if (ended)
        {
            FeedFinish();
            return;
        }
        ScheduleHostStep(m_readySince + MicroSecondsToTime(op->cpuUs),
                         [this, op]() { FeedIssue(op); });
    };
    if (closesGroup)
    {
        // The open ncclGroup launches when the thread moves past it, at m_readySince; its own
        // step keeps that launch in the same place whether the op came early or late.
        ScheduleHostStep(m_readySince, [this, plan]() {
            IssueGroup();
            plan();
        });
        return;
    }
    plan();
}

void
HostThread::FeedIssue(const Op* op)
{
    m_ops.push_back(op); // kept for DescribeState
    m_next = m_ops.size();
    if (op->kind == OpKind::Collective && op->group != 0)
    {
        m_group.push_back(op);
        FeedNext();
        return;
    }
    const bool query =
        op->query && (op->kind == OpKind::StreamSync || op->kind == OpKind::EventSync ||
                      op->kind == OpKind::HostWork);
    const int64_t answer = query ? ResolveQuery(*op) : 0;
    if (Issue(*op))
    {
        m_waitingOp = op;
        return;
    }
    Return(*op, answer);
    FeedNext();
}

void
HostThread::FeedFinish()
{
    m_finished = true;
    m_finishTime = m_readySince; // its last op's return, however late the end was noticed
    NS_LOG_INFO("rank " << m_context->GetRank() << " thread " << m_index << " finished at "
                        << m_finishTime);
}

bool
HostThread::IsFinished() const
{
    return m_finished;
}

Time
HostThread::GetFinishTime() const
{
    return m_finishTime;
}

uint32_t
HostThread::GetIndex() const
{
    return m_index;
}

void
HostThread::Resume()
{
    m_blocked = false;
    m_blockedOn.clear();
    if (m_feed)
    {
        const Op* op = m_waitingOp;
        m_waitingOp = nullptr;
        if (op)
        {
            Return(*op, 0); // first: the program's next op depends on this answer
        }
        FeedNext();
        return;
    }
    Advance();
}

void
HostThread::Return(const Op& op, int64_t value)
{
    if (m_feed)
    {
        m_feed->Returned(m_context->GetRank(), m_index, op, value);
    }
}

int64_t
HostThread::ResolveQuery(const Op& op)
{
    CudaContext* ctx = m_context;
    if (op.kind == OpKind::HostWork)
    {
        // cudaEventElapsedTime(event, token): both events' latest records must be complete.
        Time a;
        Time b;
        if (!ctx->EventCompletionTime(op.event, ctx->LatestEventVersion(op.event), a) ||
            !ctx->EventCompletionTime(op.token, ctx->LatestEventVersion(op.token), b))
        {
            return -1;
        }
        return (b - a).GetNanoSeconds();
    }
    bool ready;
    if (op.kind == OpKind::StreamSync)
    {
        Ptr<CudaStream> s = ctx->GetStream(op.stream);
        ready = s->GetCompletedSeq() >= s->GetEnqueuedSeq();
    }
    else
    {
        ready = ctx->IsEventDone(op.event, ctx->LatestEventVersion(op.event));
    }
    if (!ready)
    {
        // The feed owns its ops: the poll stays in the trace as the host time it cost.
        Op& poll = const_cast<Op&>(op);
        poll.name = op.kind == OpKind::StreamSync ? "cudaStreamQuery" : "cudaEventQuery";
        poll.kind = OpKind::HostWork;
        poll.query = false;
    }
    return ready ? 1 : 0;
}

void
HostThread::Advance()
{
    while (!m_blocked)
    {
        if (m_next == m_ops.size())
        {
            if (!m_group.empty())
            {
                IssueGroup();
                continue;
            }
            m_finished = true;
            m_finishTime = Simulator::Now();
            NS_LOG_INFO("rank " << m_context->GetRank() << " thread " << m_index << " finished at "
                                << m_finishTime);
            return;
        }
        const Op& op = *m_ops[m_next];
        // An open ncclGroup is launched when the next op does not belong to it.
        if (!m_group.empty() &&
            !(op.kind == OpKind::Collective && op.group == m_group.front()->group))
        {
            IssueGroup();
            continue;
        }
        if (!m_cpuPaid && op.cpuUs > 0)
        {
            m_cpuPaid = true;
            Simulator::Schedule(MicroSecondsToTime(op.cpuUs), &HostThread::Advance, this);
            return;
        }
        m_cpuPaid = false;
        ++m_next;
        if (op.kind == OpKind::Collective && op.group != 0)
        {
            m_group.push_back(&op);
            continue;
        }
        if (Issue(op))
        {
            return;
        }
    }
}

void
HostThread::IssueGroup()
{
    StreamItem item;
    item.type = StreamItem::Type::Collective;
    item.ops = std::move(m_group);
    m_group.clear();
    int64_t stream = item.ops.front()->stream;
    m_context->Submit(stream, std::move(item));
}

bool
HostThread::Issue(const Op& op)
{
    CudaContext* ctx = m_context;
    auto block = [this](const std::string& why) {
        m_blocked = true;
        m_blockedOn = why;
    };
    // A call that had to wait returns a wake-up latency after the work it waited for.
    const Time wake = MicroSecondsToTime(op.wakeUs);
    auto resume = [this, wake]() {
        if (wake.IsStrictlyPositive())
        {
            Simulator::Schedule(wake, &HostThread::Resume, this);
            return;
        }
        Resume();
    };
    switch (op.kind)
    {
    case OpKind::HostWork:
        return false;
    case OpKind::Kernel:
    case OpKind::Memset:
    case OpKind::Memcpy: {
        StreamItem item;
        item.type = StreamItem::Type::Work;
        item.ops = {&op};
        bool sync = op.kind == OpKind::Memcpy && !op.async;
        if (sync)
        {
            item.onDone = resume;
            block(std::string("synchronous memcpy on stream ") + std::to_string(op.stream));
        }
        ctx->Submit(op.stream, std::move(item));
        return sync;
    }
    case OpKind::EventRecord: {
        StreamItem item;
        item.type = StreamItem::Type::EventRecord;
        item.event = op.event;
        item.version = ctx->IssueEventRecord(op.event);
        ctx->Submit(op.stream, std::move(item));
        return false;
    }
    case OpKind::StreamWaitEvent: {
        uint64_t v = ctx->LatestEventVersion(op.event);
        if (v == 0)
        {
            return false; // waiting on a never-recorded event is a no-op in CUDA
        }
        StreamItem item;
        item.type = StreamItem::Type::WaitEvent;
        item.event = op.event;
        item.version = v;
        ctx->Submit(op.stream, std::move(item));
        return false;
    }
    case OpKind::EventSync: {
        uint64_t v = ctx->LatestEventVersion(op.event);
        if (ctx->IsEventDone(op.event, v))
        {
            return false;
        }
        block("event_sync on event " + std::to_string(op.event) + " version " + std::to_string(v));
        ctx->WhenEventDone(op.event, v, resume);
        return true;
    }
    case OpKind::StreamSync: {
        Ptr<CudaStream> s = ctx->GetStream(op.stream);
        uint64_t target = s->GetEnqueuedSeq();
        if (s->GetCompletedSeq() >= target)
        {
            return false;
        }
        block("stream_sync on stream " + std::to_string(op.stream) + ": " + s->DescribePending());
        s->WhenCompleted(target, resume);
        return true;
    }
    case OpKind::DeviceSync:
        block("device_sync");
        ctx->WhenDeviceIdle(resume);
        return true;
    case OpKind::StreamCreate:
        ctx->CreateStream(op.stream, (op.flags & 1) != 0, op.priority);
        return false;
    case OpKind::Malloc:
        ctx->Malloc(op.ptr, op.bytes);
        return false;
    case OpKind::Free:
        ctx->Free(op.ptr);
        return false;
    case OpKind::CommInit:
        // Live mode: NCCL init returns once every member has joined (a rendezvous); otherwise
        // membership was wired at install time and init costs only host time.
        if (ctx->OnCommInit(op, resume))
        {
            block("comm_init of " + op.comm + " (waiting for the other ranks to join)");
            return true;
        }
        return false;
    case OpKind::Collective: {
        StreamItem item;
        item.type = StreamItem::Type::Collective;
        item.ops = {&op};
        ctx->Submit(op.stream, std::move(item));
        return false;
    }
    case OpKind::ThreadSignal:
        ctx->Signal(op.token);
        return false;
    case OpKind::ThreadWait:
        if (ctx->IsSignalled(op.token))
        {
            return false;
        }
        block("wait for token " + std::to_string(op.token) + " from another thread");
        ctx->WhenSignalled(op.token, resume);
        return true;
    case OpKind::Marker:
        ctx->RecordMarker(m_index, &op);
        return false;
    }
    return false;
}

std::string
HostThread::DescribeState() const
{
    if (m_finished)
    {
        return "";
    }
    std::ostringstream os;
    os << "thread " << m_index << " at op " << m_next << "/" << m_ops.size();
    if (m_blocked)
    {
        os << " blocked on " << m_blockedOn;
    }
    else if (!m_started)
    {
        os << " never started";
    }
    return os.str();
}

// ---------------------------------------------------------------- CudaContext

TypeId
CudaContext::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::CudaContext")
            .SetParent<Object>()
            .SetGroupName("Gpusim")
            .AddConstructor<CudaContext>()
            .AddTraceSource("Activity",
                            "A kernel, copy, memset or NCCL launch finished on any stream",
                            MakeTraceSourceAccessor(&CudaContext::m_activityTrace),
                            "ns3::CudaStream::ActivityCallback");
    return tid;
}

CudaContext::CudaContext() = default;
CudaContext::~CudaContext() = default;

void
CudaContext::DoDispose()
{
    for (auto& t : m_threads)
    {
        t->Dispose();
    }
    m_threads.clear();
    // Streams and collectives are Applications of the node: the node holds them and they hold
    // the node. Disposing them breaks that cycle (a node that outlives a run, as `gpusim
    // collective` keeps its nodes over a sweep, would keep every run's streams otherwise).
    for (auto& [id, s] : m_streams)
    {
        s->Dispose();
    }
    m_streams.clear();
    for (auto& [name, c] : m_comms)
    {
        c->Dispose();
    }
    m_comms.clear();
    m_mirrors.clear();
    m_mirrorComms.clear();
    m_peerWorld = nullptr;
    m_gpuOfRank = nullptr;
    m_events.clear();
    m_tokenWaiters.clear();
    m_node = nullptr;
    m_costModel = nullptr;
    Object::DoDispose();
}

void
CudaContext::Setup(Ptr<GpuNode> node, uint32_t rank, Ptr<KernelCostModel> costModel)
{
    m_node = node;
    m_rank = rank;
    m_costModel = costModel;
}

Ptr<GpuNode>
CudaContext::GetNode() const
{
    return m_node;
}

uint32_t
CudaContext::GetRank() const
{
    return m_rank;
}

Ptr<KernelCostModel>
CudaContext::GetCostModel() const
{
    return m_costModel;
}

void
CudaContext::Load(const gpusim::RankTrace& trace)
{
    std::map<uint32_t, std::vector<const Op*>> perThread;
    for (const Op& op : trace.ops)
    {
        perThread[op.thread].push_back(&op);
    }
    for (auto& [index, ops] : perThread)
    {
        Ptr<HostThread> t = CreateObject<HostThread>();
        t->Setup(this, index, std::move(ops));
        m_threads.push_back(t);
    }
}

Ptr<HostThread>
CudaContext::AddFeedThread(uint32_t index, Ptr<OpFeed> feed)
{
    Ptr<HostThread> t = CreateObject<HostThread>();
    t->SetupFeed(this, index, feed);
    m_threads.push_back(t);
    return t;
}

void
CudaContext::SetCommInitHandler(CommInitHandler h)
{
    m_commInitHandler = std::move(h);
}

bool
CudaContext::OnCommInit(const Op& op, std::function<void()> resume)
{
    return m_commInitHandler ? m_commInitHandler(op, std::move(resume)) : false;
}

void
CudaContext::StartThreads()
{
    for (auto& t : m_threads)
    {
        t->Start();
    }
}

void
CudaContext::CreateStream(int64_t id, bool nonBlocking, int32_t priority)
{
    auto it = m_streams.find(id);
    if (it != m_streams.end())
    {
        return; // re-creation of a live id (handle reuse) keeps the stream
    }
    Ptr<CudaStream> s = CreateObject<CudaStream>();
    s->Setup(this, id, nonBlocking && id != 0, priority);
    m_node->AddApplication(s);
    m_streams[id] = s;
}

Ptr<CudaStream>
CudaContext::GetStream(int64_t id)
{
    auto it = m_streams.find(id);
    if (it == m_streams.end())
    {
        CreateStream(id, false, 0);
        it = m_streams.find(id);
    }
    return it->second;
}

const std::map<int64_t, Ptr<CudaStream>>&
CudaContext::GetStreams() const
{
    return m_streams;
}

uint64_t
CudaContext::Submit(int64_t streamId, StreamItem item)
{
    Ptr<CudaStream> target = GetStream(streamId);
    // Legacy default stream semantics: work on stream 0 waits for all blocking streams, and
    // work on a blocking stream waits for stream 0.
    if (!target->IsNonBlocking())
    {
        if (streamId == 0)
        {
            for (auto& [id, s] : m_streams)
            {
                if (id != 0 && !s->IsNonBlocking() && s->GetCompletedSeq() < s->GetEnqueuedSeq())
                {
                    StreamItem w;
                    w.type = StreamItem::Type::WaitStream;
                    w.otherStream = id;
                    w.otherSeq = s->GetEnqueuedSeq();
                    target->Enqueue(std::move(w));
                }
            }
        }
        else
        {
            Ptr<CudaStream> legacy = GetStream(0);
            if (legacy->GetCompletedSeq() < legacy->GetEnqueuedSeq())
            {
                StreamItem w;
                w.type = StreamItem::Type::WaitStream;
                w.otherStream = 0;
                w.otherSeq = legacy->GetEnqueuedSeq();
                target->Enqueue(std::move(w));
            }
        }
    }
    return target->Enqueue(std::move(item));
}

uint64_t
CudaContext::IssueEventRecord(uint64_t event)
{
    return ++m_events[event].issued;
}

uint64_t
CudaContext::LatestEventVersion(uint64_t event) const
{
    auto it = m_events.find(event);
    return it == m_events.end() ? 0 : it->second.issued;
}

bool
CudaContext::IsEventDone(uint64_t event, uint64_t version) const
{
    if (version == 0)
    {
        return true;
    }
    auto it = m_events.find(event);
    return it != m_events.end() && it->second.done.count(version) != 0;
}

void
CudaContext::CompleteEvent(uint64_t event, uint64_t version)
{
    EventState& e = m_events[event];
    e.done.insert(version);
    e.doneAt[version] = Simulator::Now();
    auto range = e.waiters.equal_range(version);
    for (auto it = range.first; it != range.second; ++it)
    {
        Simulator::ScheduleNow(std::move(it->second));
    }
    e.waiters.erase(range.first, range.second);
}

bool
CudaContext::EventCompletionTime(uint64_t event, uint64_t version, Time& at) const
{
    auto it = m_events.find(event);
    if (version == 0 || it == m_events.end())
    {
        return false;
    }
    auto d = it->second.doneAt.find(version);
    if (d == it->second.doneAt.end())
    {
        return false;
    }
    at = d->second;
    return true;
}

void
CudaContext::WhenEventDone(uint64_t event, uint64_t version, std::function<void()> cb)
{
    if (IsEventDone(event, version))
    {
        Simulator::ScheduleNow(std::move(cb));
        return;
    }
    m_events[event].waiters.emplace(version, std::move(cb));
}

void
CudaContext::Signal(uint64_t token)
{
    m_signalled.insert(token);
    auto range = m_tokenWaiters.equal_range(token);
    for (auto it = range.first; it != range.second; ++it)
    {
        Simulator::ScheduleNow(std::move(it->second));
    }
    m_tokenWaiters.erase(range.first, range.second);
}

bool
CudaContext::IsSignalled(uint64_t token) const
{
    return m_signalled.count(token) != 0;
}

void
CudaContext::WhenSignalled(uint64_t token, std::function<void()> cb)
{
    if (IsSignalled(token))
    {
        Simulator::ScheduleNow(std::move(cb));
        return;
    }
    m_tokenWaiters.emplace(token, std::move(cb));
}

bool
CudaContext::Malloc(uint64_t ptr, uint64_t bytes)
{
    if (!m_node->Allocate(bytes))
    {
        std::ostringstream os;
        os << "rank " << m_rank << ": out of memory at " << Simulator::Now().As(Time::US)
           << " allocating " << bytes << " bytes (" << m_node->GetMemoryUsed() << " of "
           << m_node->GetSpec().memoryBytes << " in use)";
        AddError(os.str());
        return false;
    }
    if (ptr != 0)
    {
        m_allocations[ptr] = bytes;
    }
    return true;
}

void
CudaContext::Free(uint64_t ptr)
{
    auto it = m_allocations.find(ptr);
    if (it != m_allocations.end())
    {
        m_node->Release(it->second);
        m_allocations.erase(it);
    }
}

const std::vector<std::string>&
CudaContext::GetErrors() const
{
    return m_errors;
}

void
CudaContext::AddError(const std::string& e)
{
    NS_LOG_WARN(e);
    m_errors.push_back(e);
}

void
CudaContext::AddCommunicator(const std::string& comm, Ptr<NcclCollective> app)
{
    m_comms[comm] = app;
}

Ptr<NcclCollective>
CudaContext::GetCommunicator(const std::string& comm) const
{
    auto it = m_comms.find(comm);
    return it == m_comms.end() ? nullptr : it->second;
}

void
CudaContext::AddMirror(Ptr<CudaContext> mirror)
{
    mirror->m_mirrorOf = static_cast<int32_t>(m_rank);
    m_mirrors.push_back(mirror);
}

int32_t
CudaContext::GetMirrorOf() const
{
    return m_mirrorOf;
}

const CudaContext::MirrorStats&
CudaContext::GetMirrorStats() const
{
    return m_mirrorStats;
}

void
CudaContext::LaunchCollective(const std::vector<const Op*>& ops, std::function<void()> done)
{
    if (!m_mirrors.empty())
    {
        LaunchMirrored(ops, std::move(done));
        return;
    }
    LaunchOwn(ops, std::move(done));
}

const CudaContext::MirrorComm&
CudaContext::MirrorCommFor(const std::string& comm)
{
    auto [it, fresh] = m_mirrorComms.try_emplace(comm);
    if (fresh)
    {
        for (uint32_t i = 0; i < m_mirrors.size(); ++i)
        {
            const Ptr<CudaContext>& m = m_mirrors[i];
            if (m->m_twinComms.count(comm))
            {
                it->second.twinGpus.push_back(m->m_node->GetGpuIndex());
            }
            else
            {
                it->second.launch.push_back(i);
            }
        }
    }
    return it->second;
}

void
CudaContext::LaunchMirrored(const std::vector<const Op*>& ops, std::function<void()> done)
{
    // The ranks of a class move in lockstep: the launch completes for the representative (and
    // so for the class) when it has completed on the representative and on every mirror. The
    // full run couples them the same way wherever they meet in a collective (a TP group waits
    // for its slowest member), so the slowest member sets the pace; the gap between the
    // representative's own completion and the last one is recorded. (SplitMirrorClasses keeps
    // ranks that would not meet that often, or that see another network, in other classes.)
    //
    // A mirror whose communicator is a private twin of the representative's (SetTwinComms)
    // does not launch it: an isomorphic group on links nobody else uses, joined at the same
    // instant, ends at the same instant as the representative's. It still counts as an open
    // collective on its GPU until then (RingFlows asks whether a GPU has one open).
    //
    // One Watch per launch, and callbacks that capture only it (they fit std::function's
    // local buffer): a class launches millions of these.
    struct Watch
    {
        CudaContext* rep = nullptr;
        size_t outstanding = 0;
        Time repDone;
        Time lo = Time::Max();
        Time hi = Time::Min();
        std::vector<uint32_t> openTwins; //!< GPUs counted open for skipped twin launches
        std::function<void()> done;

        void Settle()
        {
            if (--outstanding > 0)
            {
                return;
            }
            for (uint32_t gpu : openTwins)
            {
                rep->m_peerWorld->CountOpen(gpu, -1);
            }
            MirrorStats& st = rep->m_mirrorStats;
            st.launches += rep->m_mirrors.size();
            if (hi >= lo) // some mirror launched
            {
                const Time off = std::max(hi - repDone, repDone - lo);
                if (off.IsStrictlyPositive())
                {
                    ++st.diverged;
                    st.maxDivergence = std::max(st.maxDivergence, off);
                }
            }
            done();
        }
    };
    auto watch = std::make_shared<Watch>();
    watch->rep = this;
    watch->done = std::move(done);
    bool oneComm = true;
    for (const Op* op : ops)
    {
        oneComm = oneComm && op->comm == ops.front()->comm;
    }
    const MirrorComm* mc = oneComm ? &MirrorCommFor(ops.front()->comm) : nullptr;
    if (mc && m_peerWorld && m_peerWorld->IsCollectiveFidelity() &&
        ops.front()->coll != gpusim::CollKind::Send && ops.front()->coll != gpusim::CollKind::Recv)
    {
        for (uint32_t gpu : mc->twinGpus)
        {
            for (size_t k = 0; k < ops.size(); ++k)
            {
                watch->openTwins.push_back(gpu);
            }
        }
    }
    for (uint32_t gpu : watch->openTwins)
    {
        m_peerWorld->CountOpen(gpu, +1);
    }
    // Mixed groups: each mirror launches the parts that are not twins.
    std::vector<std::pair<uint32_t, std::vector<const Op*>>> mixed;
    if (!mc)
    {
        for (uint32_t i = 0; i < m_mirrors.size(); ++i)
        {
            std::vector<const Op*> own;
            for (const Op* op : ops)
            {
                if (!m_mirrors[i]->m_twinComms.count(op->comm))
                {
                    own.push_back(op);
                }
            }
            if (!own.empty())
            {
                mixed.emplace_back(i, std::move(own));
            }
        }
    }
    watch->outstanding = 1 + (mc ? mc->launch.size() : mixed.size());
    auto mirrorDone = [watch]() {
        const Time now = Simulator::Now();
        watch->lo = std::min(watch->lo, now);
        watch->hi = std::max(watch->hi, now);
        watch->Settle();
    };
    if (mc)
    {
        for (uint32_t i : mc->launch)
        {
            m_mirrors[i]->LaunchOwn(ops, mirrorDone);
        }
    }
    for (auto& [i, own] : mixed)
    {
        m_mirrors[i]->LaunchOwn(own, mirrorDone);
    }
    LaunchOwn(ops, [watch]() {
        watch->repDone = Simulator::Now();
        watch->Settle();
    });
}

const std::map<std::string, Ptr<NcclCollective>>&
CudaContext::GetCommunicators() const
{
    return m_comms;
}

void
CudaContext::SetTwinComms(std::set<std::string> comms)
{
    m_twinComms = std::move(comms);
}

void
CudaContext::LaunchOwn(const std::vector<const Op*>& ops, std::function<void()> done)
{
    if (ops.size() == 1)
    {
        // Most launches are one op: no part counter.
        Ptr<NcclCollective> comm = GetCommunicator(ops.front()->comm);
        if (!comm)
        {
            AddError("rank " + std::to_string(m_rank) + ": " +
                     gpusim::ToString(ops.front()->coll) + " on unknown communicator " +
                     ops.front()->comm);
            return; // the stream stays blocked; the stuck report names it
        }
        comm->Launch(ops.front(), std::move(done));
        return;
    }
    auto remaining = std::make_shared<size_t>(ops.size());
    auto partDone = [remaining, done]() {
        if (--*remaining == 0)
        {
            done();
        }
    };
    for (const Op* op : ops)
    {
        Ptr<NcclCollective> comm = GetCommunicator(op->comm);
        if (!comm)
        {
            AddError("rank " + std::to_string(m_rank) + ": " + gpusim::ToString(op->coll) +
                     " on unknown communicator " + op->comm);
            continue; // the stream stays blocked; the stuck report names it
        }
        comm->Launch(op, partDone);
    }
}

void
CudaContext::SetPeerCopyNetwork(Ptr<NcclWorld> world, RankGpuMap gpuOfRank)
{
    m_peerWorld = world;
    m_gpuOfRank = std::move(gpuOfRank);
}

bool
CudaContext::IsNetworkCopy(const Op& op) const
{
    // A staged copy goes through host memory, not over the GPUs' link (the cost model's).
    return op.kind == OpKind::Memcpy && op.copyKind == gpusim::MemcpyKind::PeerToPeer &&
           !op.staged && op.srcRank >= 0 && op.dstRank >= 0 && m_peerWorld &&
           m_peerWorld->GetBackend();
}

void
CudaContext::StartPeerCopy(const Op& op, std::function<void()> done)
{
    uint32_t src = 0;
    uint32_t dst = 0;
    if (!m_gpuOfRank(op.srcRank, src) || !m_gpuOfRank(op.dstRank, dst))
    {
        AddError("rank " + std::to_string(m_rank) + ": p2p copy between ranks " +
                 std::to_string(op.srcRank) + " and " + std::to_string(op.dstRank) +
                 ", which are not in the job; costed as a local copy");
        Simulator::Schedule(m_costModel->GetDuration(op, m_node->GetSpec()), std::move(done));
        return;
    }
    // The copy engine's setup, then the bytes cross the NVLink (or NIC) path, sharing its links
    // with whatever else is in flight. The flow key spreads a rank's streams over ECMP paths.
    // Inside a server the copy engines reach only part of the NVLink path's rate.
    const uint64_t flowKey =
        (static_cast<uint64_t>(m_rank) << 32) ^ static_cast<uint64_t>(op.stream);
    Ptr<ClusterTopology> topo = m_peerWorld->GetTopology();
    const bool nvlink = topo && topo->ServerOf(src) == topo->ServerOf(dst);
    const uint64_t wireBytes =
        nvlink ? static_cast<uint64_t>(
                     std::ceil(op.bytes / KernelCostModel::kPeerCopyLinkEfficiency))
               : op.bytes;
    m_peerWorld->StartTransfer(MicroSecondsToTime(KernelCostModel::kCopySetupUs),
                               src,
                               dst,
                               wireBytes,
                               flowKey,
                               false,
                               std::move(done));
}

void
CudaContext::WhenDeviceIdle(std::function<void()> cb)
{
    // Wait for the last item of every stream as of now, one stream after another.
    auto targets = std::make_shared<std::vector<std::pair<Ptr<CudaStream>, uint64_t>>>();
    for (auto& [id, s] : m_streams)
    {
        if (s->GetCompletedSeq() < s->GetEnqueuedSeq())
        {
            targets->push_back({s, s->GetEnqueuedSeq()});
        }
    }
    // The step holds itself only weakly: the stream's waiter holds it strongly, so a device
    // that never drains (a job that failed) frees everything when its streams are disposed.
    auto step = std::make_shared<std::function<void(size_t)>>();
    std::weak_ptr<std::function<void(size_t)>> self = step;
    *step = [targets, self, cb](size_t i) {
        if (i == targets->size())
        {
            Simulator::ScheduleNow(cb);
            return;
        }
        auto [s, seq] = (*targets)[i];
        auto next = self.lock(); // alive: our caller holds it
        s->WhenCompleted(seq, [next, i]() { (*next)(i + 1); });
    };
    (*step)(0);
}

void
CudaContext::RecordMarker(uint32_t thread, const Op* op)
{
    m_markers.push_back({m_rank, thread, op, Simulator::Now()});
}

const std::vector<MarkerRecord>&
CudaContext::GetMarkers() const
{
    return m_markers;
}

const std::vector<Ptr<HostThread>>&
CudaContext::GetThreads() const
{
    return m_threads;
}

bool
CudaContext::IsFinished() const
{
    for (const auto& t : m_threads)
    {
        if (!t->IsFinished())
        {
            return false;
        }
    }
    for (const auto& [id, s] : m_streams)
    {
        if (!s->IsIdle())
        {
            return false;
        }
    }
    return true;
}

std::string
CudaContext::DescribeState() const
{
    std::ostringstream os;
    for (const auto& t : m_threads)
    {
        std::string d = t->DescribeState();
        if (!d.empty())
        {
            os << "  rank " << m_rank << " host " << d << "\n";
        }
    }
    for (const auto& [id, s] : m_streams)
    {
        std::string d = s->DescribePending();
        if (!d.empty())
        {
            os << "  rank " << m_rank << " " << d << "\n";
        }
    }
    return os.str();
}

} // namespace ns3
