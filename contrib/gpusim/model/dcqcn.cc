#include "ns3/dcqcn.h"

#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("Dcqcn");
NS_OBJECT_ENSURE_REGISTERED(Dcqcn);

TypeId
Dcqcn::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::Dcqcn")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Gpusim")
            .AddConstructor<Dcqcn>()
            .AddAttribute("G",
                          "Alpha gain g (paper: 1/256; also the HPCC simulator's EWMA_GAIN)",
                          DoubleValue(1.0 / 256),
                          MakeDoubleAccessor(&Dcqcn::m_g),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("AlphaTimer",
                          "Alpha decays once per this period without a CNP (paper: K = 55 us)",
                          TimeValue(MicroSeconds(55)),
                          MakeTimeAccessor(&Dcqcn::m_alphaTimer),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("RateIncreaseTimer",
                          "Period of the rate increase timer (paper: T = 55 us)",
                          TimeValue(MicroSeconds(55)),
                          MakeTimeAccessor(&Dcqcn::m_increaseTimer),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("ByteCounter",
                          "Bytes sent per byte-counter increase event (paper: B = 10 MB)",
                          UintegerValue(10 * 1000 * 1000),
                          MakeUintegerAccessor(&Dcqcn::m_byteCounter),
                          MakeUintegerChecker<uint64_t>(1))
            .AddAttribute("FastRecoverySteps",
                          "F: increase events of fast recovery (paper: 5)",
                          UintegerValue(5),
                          MakeUintegerAccessor(&Dcqcn::m_f),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("Rai",
                          "Additive increase step (bit/s) (paper: 40 Mbit/s)",
                          DoubleValue(40e6),
                          MakeDoubleAccessor(&Dcqcn::m_rai),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("Rhai",
                          "Hyper increase step (bit/s) (the HPCC simulator's RATE_HAI, "
                          "100 Mbit/s; the paper gives no value)",
                          DoubleValue(100e6),
                          MakeDoubleAccessor(&Dcqcn::m_rhai),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("InitialAlpha",
                          "Alpha before the first CNP (paper: 1)",
                          DoubleValue(1.0),
                          MakeDoubleAccessor(&Dcqcn::m_initialAlpha),
                          MakeDoubleChecker<double>(0, 1));
    return tid;
}

Dcqcn::Dcqcn() = default;
Dcqcn::~Dcqcn() = default;

void
Dcqcn::DoDispose()
{
    Simulator::Cancel(m_alphaEvent);
    Simulator::Cancel(m_increaseEvent);
    RdmaCongestionControl::DoDispose();
}

void
Dcqcn::Start(double lineBps, uint32_t mtuBytes, Time baseRtt)
{
    RdmaCongestionControl::Start(lineBps, mtuBytes, baseRtt);
    m_alpha = m_initialAlpha;
    m_target = lineBps;
}

bool
Dcqcn::UsesCnp() const
{
    return true;
}

std::string
Dcqcn::GetName() const
{
    return "dcqcn";
}

double
Dcqcn::GetAlpha() const
{
    return m_alpha;
}

double
Dcqcn::GetTargetRateBps() const
{
    return m_target;
}

uint64_t
Dcqcn::GetCnpCount() const
{
    return m_cnps;
}

void
Dcqcn::OnCnp()
{
    ++m_cnps;
    m_cut = true;
    m_cnpSinceAlpha = true;
    m_target = GetRateBps();
    SetRate(GetRateBps() * (1 - m_alpha / 2));
    m_alpha = (1 - m_g) * m_alpha + m_g;
    // Restart the increase machinery from fast recovery.
    m_timerCount = 0;
    m_byteCount = 0;
    m_bytesSinceEvent = 0;
    Simulator::Cancel(m_increaseEvent);
    m_increaseEvent = Simulator::Schedule(m_increaseTimer, &Dcqcn::OnIncreaseTimer, this);
    if (!m_alphaEvent.IsRunning())
    {
        m_alphaEvent = Simulator::Schedule(m_alphaTimer, &Dcqcn::OnAlphaTimer, this);
    }
}

void
Dcqcn::OnAlphaTimer()
{
    if (!m_cnpSinceAlpha)
    {
        m_alpha = (1 - m_g) * m_alpha;
    }
    m_cnpSinceAlpha = false;
    // Keep decaying while alpha matters; a quiet flow stops scheduling events.
    if (m_alpha > 1e-6 || GetRateBps() < GetLineBps())
    {
        m_alphaEvent = Simulator::Schedule(m_alphaTimer, &Dcqcn::OnAlphaTimer, this);
    }
}

void
Dcqcn::OnIncreaseTimer()
{
    ++m_timerCount;
    Increase();
    if (GetRateBps() < GetLineBps())
    {
        m_increaseEvent = Simulator::Schedule(m_increaseTimer, &Dcqcn::OnIncreaseTimer, this);
    }
}

void
Dcqcn::OnSend(uint32_t bytes)
{
    if (!m_cut || GetRateBps() >= GetLineBps())
    {
        return;
    }
    m_bytesSinceEvent += bytes;
    if (m_bytesSinceEvent >= m_byteCounter)
    {
        m_bytesSinceEvent = 0;
        ++m_byteCount;
        Increase();
    }
}

void
Dcqcn::Increase()
{
    const uint32_t hi = std::max(m_timerCount, m_byteCount);
    const uint32_t lo = std::min(m_timerCount, m_byteCount);
    if (hi > m_f && lo > m_f)
    {
        m_target += (lo - m_f) * m_rhai; // hyper increase
    }
    else if (hi > m_f)
    {
        m_target += m_rai; // additive increase
    }
    m_target = std::min(m_target, GetLineBps());
    SetRate((m_target + GetRateBps()) / 2);
}

} // namespace ns3
