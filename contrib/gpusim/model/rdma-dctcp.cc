#include "ns3/rdma-dctcp.h"

#include "ns3/double.h"
#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaDctcp");
NS_OBJECT_ENSURE_REGISTERED(RdmaDctcp);

TypeId
RdmaDctcp::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaDctcp")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Gpusim")
            .AddConstructor<RdmaDctcp>()
            .AddAttribute("G",
                          "Alpha gain g (DCTCP paper: 1/16)",
                          DoubleValue(1.0 / 16),
                          MakeDoubleAccessor(&RdmaDctcp::m_g),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("Rai",
                          "Additive increase per RTT without marks (bit/s) (HPCC simulator "
                          "DCTCP_RATE_AI: 1000 Mbit/s)",
                          DoubleValue(1e9),
                          MakeDoubleAccessor(&RdmaDctcp::m_rai),
                          MakeDoubleChecker<double>(0));
    return tid;
}

RdmaDctcp::RdmaDctcp() = default;
RdmaDctcp::~RdmaDctcp() = default;

std::string
RdmaDctcp::GetName() const
{
    return "dctcp";
}

double
RdmaDctcp::GetAlpha() const
{
    return m_alpha;
}

void
RdmaDctcp::OnAck(const RdmaAckInfo& ack)
{
    if (ack.nack)
    {
        return;
    }
    ++m_acks;
    m_marked += ack.ecnEcho ? 1 : 0;
    if (ack.ackPsn <= m_lastUpdatePsn)
    {
        return; // the RTT's window is still being acknowledged
    }
    m_lastUpdatePsn = ack.sndNxt;
    const double f = double(m_marked) / m_acks;
    m_alpha = (1 - m_g) * m_alpha + m_g * f;
    if (m_marked > 0)
    {
        SetRate(GetRateBps() * (1 - m_alpha / 2));
    }
    else
    {
        SetRate(GetRateBps() + m_rai);
    }
    m_acks = 0;
    m_marked = 0;
}

} // namespace ns3
