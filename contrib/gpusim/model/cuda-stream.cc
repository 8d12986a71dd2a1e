#include "ns3/cuda-stream.h"

#include "ns3/cuda-context.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("CudaStream");
NS_OBJECT_ENSURE_REGISTERED(CudaStream);

TypeId
CudaStream::GetTypeId()
{
    static TypeId tid = TypeId("ns3::CudaStream")
                            .SetParent<Application>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<CudaStream>()
                            .AddTraceSource("Activity",
                                            "A kernel, copy, memset or NCCL launch finished",
                                            MakeTraceSourceAccessor(&CudaStream::m_activityTrace),
                                            "ns3::CudaStream::ActivityCallback");
    return tid;
}

CudaStream::CudaStream() = default;
CudaStream::~CudaStream() = default;

void
CudaStream::DoDispose()
{
    m_queue.clear();
    m_waiters.clear();
    m_context = nullptr;
    Application::DoDispose();
}

void
CudaStream::StartApplication()
{
}

void
CudaStream::StopApplication()
{
}

void
CudaStream::Setup(CudaContext* context, int64_t id, bool nonBlocking, int32_t priority)
{
    m_context = context;
    m_id = id;
    m_nonBlocking = nonBlocking;
    m_priority = priority;
}

int64_t
CudaStream::GetStreamId() const
{
    return m_id;
}

bool
CudaStream::IsNonBlocking() const
{
    return m_nonBlocking;
}

uint64_t
CudaStream::Enqueue(StreamItem item)
{
    item.seq = ++m_enqueued;
    m_queue.push_back(std::move(item));
    Pump();
    return m_enqueued;
}

uint64_t
CudaStream::GetEnqueuedSeq() const
{
    return m_enqueued;
}

uint64_t
CudaStream::GetCompletedSeq() const
{
    return m_completed;
}

bool
CudaStream::IsIdle() const
{
    return m_queue.empty();
}

void
CudaStream::WhenCompleted(uint64_t seq, std::function<void()> cb)
{
    if (seq <= m_completed)
    {
        Simulator::ScheduleNow(std::move(cb));
        return;
    }
    m_waiters.emplace(seq, std::move(cb));
}

void
CudaStream::WakeWaiters()
{
    while (!m_waiters.empty() && m_waiters.begin()->first <= m_completed)
    {
        Simulator::ScheduleNow(std::move(m_waiters.begin()->second));
        m_waiters.erase(m_waiters.begin());
    }
}

void
CudaStream::Pump()
{
    if (m_pumping)
    {
        return;
    }
    m_pumping = true;
    while (!m_busy && !m_queue.empty())
    {
        StreamItem& head = m_queue.front();
        switch (head.type)
        {
        case StreamItem::Type::Work: {
            m_busy = true;
            m_headStart = Simulator::Now();
            const gpusim::Op& op = *head.ops.front();
            if (m_context->IsNetworkCopy(op))
            {
                // A copy between two GPUs moves over their link on the network backend.
                m_context->StartPeerCopy(op, [this]() { FinishHead(); });
                break;
            }
            Time d = m_context->GetCostModel()->GetDuration(op, m_context->GetNode()->GetSpec());
            if (op.kind == gpusim::OpKind::Kernel)
            {
                d = m_context->GetNode()->KernelTime(d); // a straggler's clock drop
            }
            NS_LOG_LOGIC("rank " << m_context->GetRank() << " stream " << m_id << " runs "
                                 << gpusim::ToString(op.kind) << " " << op.name << " for " << d);
            Simulator::Schedule(d, &CudaStream::FinishHead, this);
            break;
        }
        case StreamItem::Type::EventRecord:
            m_context->CompleteEvent(head.event, head.version);
            m_busy = true;
            FinishHead();
            break;
        case StreamItem::Type::WaitEvent:
            m_busy = true;
            if (m_context->IsEventDone(head.event, head.version))
            {
                FinishHead();
            }
            else
            {
                m_context->WhenEventDone(head.event, head.version, [this]() { FinishHead(); });
            }
            break;
        case StreamItem::Type::WaitStream: {
            m_busy = true;
            Ptr<CudaStream> other = m_context->GetStream(head.otherStream);
            if (other->GetCompletedSeq() >= head.otherSeq)
            {
                FinishHead();
            }
            else
            {
                other->WhenCompleted(head.otherSeq, [this]() { FinishHead(); });
            }
            break;
        }
        case StreamItem::Type::Collective:
            m_busy = true;
            m_headStart = Simulator::Now();
            m_context->LaunchCollective(head.ops, [this]() { FinishHead(); });
            break;
        }
    }
    m_pumping = false;
}

void
CudaStream::FinishHead()
{
    NS_ASSERT(m_busy && !m_queue.empty());
    StreamItem item = std::move(m_queue.front());
    m_queue.pop_front();
    m_busy = false;
    m_completed = item.seq;
    if (item.type == StreamItem::Type::Work || item.type == StreamItem::Type::Collective)
    {
        StreamActivity a;
        a.rank = m_context->GetRank();
        a.stream = m_id;
        a.op = item.ops.front();
        // A kernel carrying a communicator id is an NCCL kernel replayed at its recorded
        // duration (gpusim replay --comm recorded): still communication for the breakdown.
        a.communication = item.type == StreamItem::Type::Collective ||
                          (a.op->kind == gpusim::OpKind::Kernel && !a.op->comm.empty());
        a.start = m_headStart;
        a.end = Simulator::Now();
        m_activityTrace(a);
        m_context->m_activityTrace(a);
    }
    if (item.onDone)
    {
        Simulator::ScheduleNow(std::move(item.onDone));
    }
    WakeWaiters();
    Pump();
}

std::string
CudaStream::DescribePending() const
{
    if (m_queue.empty())
    {
        return "";
    }
    std::ostringstream os;
    const StreamItem& h = m_queue.front();
    os << "stream " << m_id << " (" << m_queue.size() << " items queued) blocked on ";
    switch (h.type)
    {
    case StreamItem::Type::Work:
        os << gpusim::ToString(h.ops.front()->kind) << " " << h.ops.front()->name;
        break;
    case StreamItem::Type::EventRecord:
        os << "event_record " << h.event;
        break;
    case StreamItem::Type::WaitEvent:
        os << "wait for event " << h.event << " version " << h.version;
        break;
    case StreamItem::Type::WaitStream:
        os << "legacy-stream ordering behind stream " << h.otherStream << " item " << h.otherSeq;
        break;
    case StreamItem::Type::Collective: {
        const gpusim::Op* op = h.ops.front();
        os << gpusim::ToString(op->coll) << " on communicator " << op->comm << " seq " << op->seq;
        if (h.ops.size() > 1)
        {
            os << " (group of " << h.ops.size() << ")";
        }
        break;
    }
    }
    return os.str();
}

} // namespace ns3
