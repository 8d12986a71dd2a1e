#include "ns3/op-feed.h"

#include <stdexcept>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(OpFeed);
NS_OBJECT_ENSURE_REGISTERED(TraceOpFeed);

TypeId
OpFeed::GetTypeId()
{
    static TypeId tid = TypeId("ns3::OpFeed").SetParent<Object>().SetGroupName("Gpusim");
    return tid;
}

OpFeed::~OpFeed() = default;

void
OpFeed::Returned(uint32_t, uint32_t, const gpusim::Op&, int64_t)
{
}

void
OpFeed::WhenReady(uint32_t rank, uint32_t thread, Time, bool, std::function<void()>)
{
    throw std::logic_error("op feed: rank " + std::to_string(rank) + " thread " +
                           std::to_string(thread) + " parked on a feed that never waits");
}

void
OpFeed::SetNewThreadCallback(NewThreadCallback cb)
{
    m_newThread = std::move(cb);
}

void
OpFeed::NotifyNewThread(uint32_t rank, uint32_t thread)
{
    if (m_newThread)
    {
        m_newThread(rank, thread);
    }
}

void
OpFeed::DoDispose()
{
    m_newThread = nullptr;
    Object::DoDispose();
}

TypeId
TraceOpFeed::GetTypeId()
{
    static TypeId tid = TypeId("ns3::TraceOpFeed")
                            .SetParent<OpFeed>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<TraceOpFeed>();
    return tid;
}

TraceOpFeed::TraceOpFeed() = default;
TraceOpFeed::~TraceOpFeed() = default;

void
TraceOpFeed::SetJob(const gpusim::JobTrace& job)
{
    m_job = job;
    m_threads.assign(m_job.ranks.size(), {});
    for (size_t r = 0; r < m_job.ranks.size(); ++r)
    {
        if (m_job.ranks[r].opsFrom >= 0)
        {
            throw std::invalid_argument("TraceOpFeed: rank " + std::to_string(r) +
                                        " shares another rank's ops; read the trace unshared");
        }
        m_threads[r][0]; // thread 0 exists even for a rank without ops, as in a live run
        for (gpusim::Op& op : m_job.ranks[r].ops)
        {
            m_threads[r][op.thread].ops.push_back(&op);
        }
    }
}

uint32_t
TraceOpFeed::GetNRanks() const
{
    return m_job.ranks.size();
}

std::vector<uint32_t>
TraceOpFeed::KnownThreads(uint32_t rank) const
{
    std::vector<uint32_t> out;
    for (const auto& kv : m_threads.at(rank))
    {
        out.push_back(kv.first);
    }
    return out;
}

OpFeed::State
TraceOpFeed::Next(uint32_t rank, uint32_t thread, gpusim::Op*& op)
{
    ThreadOps& t = m_threads.at(rank).at(thread);
    if (t.next == t.ops.size())
    {
        return State::Ended;
    }
    op = t.ops[t.next++];
    return State::Ready;
}

} // namespace ns3
