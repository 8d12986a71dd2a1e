#include "ns3/timely.h"

#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("Timely");
NS_OBJECT_ENSURE_REGISTERED(Timely);

TypeId
Timely::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::Timely")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Gpusim")
            .AddConstructor<Timely>()
            .AddAttribute("Alpha",
                          "EWMA weight of the RTT difference (HPCC simulator TimelyAlpha 0.875)",
                          DoubleValue(0.875),
                          MakeDoubleAccessor(&Timely::m_alpha),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("Beta",
                          "Multiplicative decrease factor (paper and simulator: 0.8)",
                          DoubleValue(0.8),
                          MakeDoubleAccessor(&Timely::m_beta),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("Tlow",
                          "Below this RTT always increase (paper and simulator: 50 us)",
                          TimeValue(MicroSeconds(50)),
                          MakeTimeAccessor(&Timely::m_tLow),
                          MakeTimeChecker())
            .AddAttribute("Thigh",
                          "Above this RTT always decrease (paper and simulator: 500 us)",
                          TimeValue(MicroSeconds(500)),
                          MakeTimeAccessor(&Timely::m_tHigh),
                          MakeTimeChecker())
            .AddAttribute("MinRtt",
                          "Normalisation of the gradient (simulator TimelyMinRtt: 20 us)",
                          TimeValue(MicroSeconds(20)),
                          MakeTimeAccessor(&Timely::m_minRtt),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("Delta",
                          "Additive increase step (bit/s) (paper: 10 Mbit/s)",
                          DoubleValue(10e6),
                          MakeDoubleAccessor(&Timely::m_delta),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("HaiAfter",
                          "Consecutive increases before hyper-active increase, N = 5 (paper)",
                          UintegerValue(5),
                          MakeUintegerAccessor(&Timely::m_haiAfter),
                          MakeUintegerChecker<uint32_t>(1));
    return tid;
}

Timely::Timely() = default;
Timely::~Timely() = default;

std::string
Timely::GetName() const
{
    return "timely";
}

void
Timely::OnAck(const RdmaAckInfo& ack)
{
    if (ack.nack || ack.ackPsn <= m_lastUpdatePsn)
    {
        return; // one update per RTT
    }
    m_lastUpdatePsn = ack.sndNxt;
    const double rtt = double(ack.rtt.GetNanoSeconds());
    if (m_prevRttNs < 0)
    {
        m_prevRttNs = rtt;
        return;
    }
    m_rttDiffNs = (1 - m_alpha) * m_rttDiffNs + m_alpha * (rtt - m_prevRttNs);
    m_prevRttNs = rtt;
    const double gradient = m_rttDiffNs / double(m_minRtt.GetNanoSeconds());
    const double r = GetRateBps();
    if (rtt < m_tLow.GetNanoSeconds())
    {
        ++m_increases;
        SetRate(r + m_delta);
    }
    else if (rtt > m_tHigh.GetNanoSeconds())
    {
        m_increases = 0;
        SetRate(r * (1 - m_beta * (1 - m_tHigh.GetNanoSeconds() / rtt)));
    }
    else if (gradient <= 0)
    {
        ++m_increases;
        SetRate(r + (m_increases >= m_haiAfter ? 5 : 1) * m_delta);
    }
    else
    {
        m_increases = 0;
        SetRate(r * std::max(0.0, 1 - m_beta * gradient));
    }
}

} // namespace ns3
