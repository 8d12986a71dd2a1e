#include "ns3/hpcc.h"

#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("Hpcc");
NS_OBJECT_ENSURE_REGISTERED(Hpcc);

TypeId
Hpcc::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::Hpcc")
            .SetParent<RdmaCongestionControl>()
            .SetGroupName("Gpusim")
            .AddConstructor<Hpcc>()
            .AddAttribute("Eta",
                          "Target utilisation eta (paper: 95 %; HPCC simulator U_TARGET 0.95)",
                          DoubleValue(0.95),
                          MakeDoubleAccessor(&Hpcc::m_eta),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("MaxStage",
                          "Additive steps before a multiplicative update (paper: maxStage = 5; "
                          "the simulator's MiThresh default)",
                          UintegerValue(5),
                          MakeUintegerAccessor(&Hpcc::m_maxStage),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("Rai",
                          "Additive increase W_AI expressed as a rate, W_AI = Rai x T (bit/s) "
                          "(HPCC simulator RATE_AI, 50 Mbit/s)",
                          DoubleValue(50e6),
                          MakeDoubleAccessor(&Hpcc::m_rai),
                          MakeDoubleChecker<double>(0));
    return tid;
}

Hpcc::Hpcc() = default;
Hpcc::~Hpcc() = default;

bool
Hpcc::UsesInt() const
{
    return true;
}

std::string
Hpcc::GetName() const
{
    return "hpcc";
}

double
Hpcc::GetUtilisation() const
{
    return m_u;
}

double
Hpcc::GetWindowReference() const
{
    return m_wc;
}

void
Hpcc::Start(double lineBps, uint32_t mtuBytes, Time baseRtt)
{
    RdmaCongestionControl::Start(lineBps, mtuBytes, baseRtt);
    m_t = double(baseRtt.GetNanoSeconds());
    if (m_t > 0)
    {
        m_wc = lineBps * m_t / 8e9; // W_init = B x T
        ApplyWindow(m_wc);
    }
}

void
Hpcc::ApplyWindow(double w)
{
    const double line = GetLineBps();
    const double minW = double(GetMtu()); // at least a packet in flight
    w = std::clamp(w, minW, line * m_t / 8e9);
    SetWindow(uint64_t(w));
    SetRate(w * 8e9 / m_t);
}

double
Hpcc::MeasureInflight(const std::vector<IntHop>& hops, double* tauNs) const
{
    double u = 0;
    *tauNs = m_t;
    for (size_t i = 0; i < hops.size() && i < m_prev.size(); ++i)
    {
        const IntHop& now = hops[i];
        const IntHop& before = m_prev[i];
        if (now.tsNs <= before.tsNs || now.bitsPerSec == 0)
        {
            continue;
        }
        const double dt = double(now.tsNs - before.tsNs);
        const double txRate = double(now.txBytes - before.txBytes) * 8e9 / dt;
        const double bdp = now.bitsPerSec * m_t / 8e9; // B_j T in bytes
        const double uj = std::min(now.qlenBytes, before.qlenBytes) / bdp +
                          txRate / double(now.bitsPerSec);
        if (uj > u)
        {
            u = uj;
            *tauNs = dt;
        }
    }
    return u;
}

double
Hpcc::ComputeWindow(double u, bool updateWc)
{
    const double wai = m_rai * m_t / 8e9;
    double w;
    if (u >= m_eta || m_incStage >= m_maxStage)
    {
        w = m_wc / (u / m_eta) + wai;
        if (updateWc)
        {
            m_incStage = 0;
            m_wc = w;
        }
    }
    else
    {
        w = m_wc + wai;
        if (updateWc)
        {
            ++m_incStage;
            m_wc = w;
        }
    }
    return w;
}

void
Hpcc::OnAck(const RdmaAckInfo& ack)
{
    if (ack.nack || !ack.hops || ack.hops->empty())
    {
        return;
    }
    if (m_t <= 0)
    {
        // No base RTT configured: the first RTT sample (an idle path) stands for T.
        m_t = double(ack.rtt.GetNanoSeconds());
        m_wc = GetLineBps() * m_t / 8e9;
    }
    if (!m_started)
    {
        m_prev = *ack.hops;
        m_lastUpdatePsn = ack.sndNxt;
        m_started = true;
        return;
    }
    double tau = 0;
    const double u = MeasureInflight(*ack.hops, &tau);
    tau = std::min(tau, m_t);
    m_u = (1 - tau / m_t) * m_u + (tau / m_t) * u;
    m_prev = *ack.hops;
    const bool updateWc = ack.ackPsn > m_lastUpdatePsn;
    const double w = ComputeWindow(m_u, updateWc);
    if (updateWc)
    {
        m_lastUpdatePsn = ack.sndNxt;
    }
    ApplyWindow(w);
}

} // namespace ns3
