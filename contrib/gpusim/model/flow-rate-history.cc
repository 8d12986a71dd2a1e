#include "ns3/flow-rate-history.h"

#include "ns3/log.h"

#include <algorithm>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("FlowRateHistory");
NS_OBJECT_ENSURE_REGISTERED(FlowRateHistory);
NS_OBJECT_ENSURE_REGISTERED(InMemoryFlowRateHistory);

double
FlowHistoryRecord::RemainingBytesAt(Time t) const
{
    if (t < transfer.start || segments.empty())
    {
        return double(transfer.bytes);
    }
    if (isDrained && t >= drained)
    {
        return 0;
    }
    // Last segment starting at or before t.
    auto it = std::upper_bound(segments.begin(),
                               segments.end(),
                               t,
                               [](Time x, const Segment& s) { return x < s.start; });
    const Segment& s = *(it - 1);
    const double left = s.remainingBytes - s.bytesPerSec * (t - s.start).GetSeconds();
    return std::max(0.0, left);
}

TypeId
FlowRateHistory::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::FlowRateHistory").SetParent<Object>().SetGroupName("Gpusim");
    return tid;
}

FlowRateHistory::~FlowRateHistory() = default;

TypeId
InMemoryFlowRateHistory::GetTypeId()
{
    static TypeId tid = TypeId("ns3::InMemoryFlowRateHistory")
                            .SetParent<FlowRateHistory>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<InMemoryFlowRateHistory>();
    return tid;
}

InMemoryFlowRateHistory::InMemoryFlowRateHistory() = default;

FlowHistoryRecord&
InMemoryFlowRateHistory::Live(uint64_t id)
{
    auto it = m_live.find(id);
    if (it == m_live.end())
    {
        throw std::out_of_range("FlowRateHistory: transfer " + std::to_string(id) +
                                " is not in flight");
    }
    return m_records[it->second];
}

void
InMemoryFlowRateHistory::OnStart(const TransferRecord& transfer, uint64_t flowKey)
{
    FlowHistoryRecord r;
    r.transfer = transfer;
    r.flowKey = flowKey;
    r.segments.push_back({transfer.start, 0.0, double(transfer.bytes)});
    const size_t index = m_records.size();
    m_records.push_back(std::move(r));
    m_byId[transfer.id].push_back(index);
    m_live[transfer.id] = index;
}

void
InMemoryFlowRateHistory::OnRate(uint64_t id, Time t, double bytesPerSec, double remainingBytes)
{
    FlowHistoryRecord& r = Live(id);
    if (!r.segments.empty() && r.segments.back().start == t)
    {
        r.segments.back() = {t, bytesPerSec, remainingBytes}; // superseded at the same instant
    }
    else
    {
        r.segments.push_back({t, bytesPerSec, remainingBytes});
    }
}

void
InMemoryFlowRateHistory::OnDrained(uint64_t id, Time t)
{
    FlowHistoryRecord& r = Live(id);
    r.drained = t;
    r.isDrained = true;
}

void
InMemoryFlowRateHistory::OnDelivered(uint64_t id, Time t)
{
    FlowHistoryRecord& r = Live(id);
    if (!r.isDrained)
    {
        r.drained = t;
        r.isDrained = true;
    }
    r.transfer.delivered = t;
    r.isDelivered = true;
    m_live.erase(id);
}

void
InMemoryFlowRateHistory::OnRestore(const FlowHistoryRecord& record)
{
    const size_t index = m_records.size();
    m_records.push_back(record);
    m_records.back().isDelivered = false;
    m_byId[record.transfer.id].push_back(index);
    m_live[record.transfer.id] = index;
}

const FlowHistoryRecord&
InMemoryFlowRateHistory::Get(uint64_t id, Time t) const
{
    auto it = m_byId.find(id);
    if (it == m_byId.end())
    {
        throw std::out_of_range("FlowRateHistory: unknown transfer " + std::to_string(id));
    }
    const FlowHistoryRecord* best = nullptr;
    for (size_t index : it->second) // start order
    {
        const FlowHistoryRecord& r = m_records[index];
        if (r.transfer.start > t)
        {
            break;
        }
        best = &r;
        if (!r.isDelivered || r.transfer.delivered > t)
        {
            return r; // alive at t
        }
    }
    return best ? *best : m_records[it->second.front()];
}

double
InMemoryFlowRateHistory::RemainingBytesAt(uint64_t id, Time t) const
{
    return Get(id, t).RemainingBytesAt(t);
}

std::vector<FlowHistoryRecord>
InMemoryFlowRateHistory::AliveAt(Time t) const
{
    std::vector<FlowHistoryRecord> out;
    for (const FlowHistoryRecord& r : m_records)
    {
        if (r.transfer.start <= t && (!r.isDelivered || r.transfer.delivered > t))
        {
            out.push_back(r);
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.transfer.id < b.transfer.id;
    });
    return out;
}

void
InMemoryFlowRateHistory::ForgetBefore(Time t)
{
    std::vector<FlowHistoryRecord> kept;
    kept.reserve(m_records.size());
    for (FlowHistoryRecord& r : m_records)
    {
        if (!(r.isDelivered && r.transfer.delivered < t))
        {
            kept.push_back(std::move(r));
        }
    }
    m_records = std::move(kept);
    m_byId.clear();
    m_live.clear();
    for (size_t i = 0; i < m_records.size(); ++i)
    {
        m_byId[m_records[i].transfer.id].push_back(i);
        if (!m_records[i].isDelivered)
        {
            m_live[m_records[i].transfer.id] = i;
        }
    }
}

size_t
InMemoryFlowRateHistory::GetNFlows() const
{
    return m_records.size();
}

} // namespace ns3
