#include "ns3/rdma-queue-pair.h"

#include <algorithm>
#include <stdexcept>

namespace ns3
{

RdmaQueuePair::RdmaQueuePair(uint32_t id, const ConnectionKey& key, uint32_t srcHost,
                             uint32_t dstHost, uint32_t payloadPerPacket)
    : m_id(id),
      m_key(key),
      m_srcHost(srcHost),
      m_dstHost(dstHost),
      m_payload(payloadPerPacket)
{
    if (m_payload == 0)
    {
        throw std::invalid_argument("RdmaQueuePair: zero payload per packet");
    }
}

void
RdmaQueuePair::Post(uint64_t msgId, uint64_t bytes)
{
    Message m;
    m.id = msgId;
    m.bytes = bytes;
    m.firstPsn = m_endPsn;
    const uint64_t n = std::max<uint64_t>(1, (bytes + m_payload - 1) / m_payload);
    if (n > UINT32_MAX - m_endPsn)
    {
        throw std::overflow_error("RdmaQueuePair: PSN space exhausted");
    }
    m.nPkts = uint32_t(n);
    const bool allSent = m_sndNxt == m_endPsn;
    m_endPsn += m.nPkts;
    m_msgs.push_back(m);
    if (allSent)
    {
        m_cursor = m_msgs.size() - 1; // the cursor's message (if any) is fully sent
    }
}

uint32_t
RdmaQueuePair::PayloadOf(const Message& m, uint32_t psn) const
{
    const uint64_t offset = uint64_t(psn - m.firstPsn) * m_payload;
    return uint32_t(std::min<uint64_t>(m_payload, m.bytes - std::min(m.bytes, offset)));
}

size_t
RdmaQueuePair::Find(uint32_t psn) const
{
    auto it = std::upper_bound(m_msgs.begin() + m_head, m_msgs.end(), psn,
                               [](uint32_t p, const Message& m) { return p < m.firstPsn; });
    return size_t(it - m_msgs.begin()) - 1;
}

RdmaQueuePair::Segment
RdmaQueuePair::Next() const
{
    const Message& m = m_msgs[m_cursor];
    Segment s;
    s.msgId = m.id;
    s.psn = m_sndNxt;
    s.payload = PayloadOf(m, m_sndNxt);
    s.last = m_sndNxt == m.firstPsn + m.nPkts - 1;
    return s;
}

void
RdmaQueuePair::Advance()
{
    const Message& m = m_msgs[m_cursor];
    ++m_sndNxt;
    if (m_sndNxt == m.firstPsn + m.nPkts && m_cursor + 1 < m_msgs.size())
    {
        ++m_cursor;
    }
}

uint64_t
RdmaQueuePair::Acknowledge(uint32_t nextExpected)
{
    if (nextExpected <= m_sndUna || nextExpected > m_sndNxt)
    {
        return 0; // duplicate, or beyond what was sent (stale after a go-back)
    }
    uint64_t bytes = 0;
    for (size_t i = Find(m_sndUna); i < m_msgs.size(); ++i)
    {
        const Message& m = m_msgs[i];
        const uint32_t from = std::max(m_sndUna, m.firstPsn);
        const uint32_t to = std::min(nextExpected, m.firstPsn + m.nPkts);
        if (from >= to)
        {
            break;
        }
        const uint64_t lo = std::min(m.bytes, uint64_t(from - m.firstPsn) * m_payload);
        const uint64_t hi = std::min(m.bytes, uint64_t(to - m.firstPsn) * m_payload);
        bytes += hi - lo;
    }
    m_sndUna = nextExpected;
    while (m_head < m_msgs.size() && m_msgs[m_head].firstPsn + m_msgs[m_head].nPkts <= m_sndUna)
    {
        ++m_head;
        m_cursor = std::max(m_cursor, m_head);
    }
    if (m_head == m_msgs.size())
    {
        m_msgs.clear();
        m_head = 0;
        m_cursor = 0;
    }
    else if (m_head >= 64 && 2 * m_head >= m_msgs.size())
    {
        m_msgs.erase(m_msgs.begin(), m_msgs.begin() + m_head);
        m_cursor -= m_head;
        m_head = 0;
    }
    return bytes;
}

uint32_t
RdmaQueuePair::GoBackTo(uint32_t psn)
{
    if (psn < m_sndUna || psn >= m_sndNxt)
    {
        return 0;
    }
    const uint32_t n = m_sndNxt - psn;
    m_sndNxt = psn;
    m_cursor = Find(psn);
    return n;
}

uint64_t
RdmaQueuePair::BytesInFlight() const
{
    return uint64_t(m_sndNxt - m_sndUna) * m_payload;
}

} // namespace ns3
