#include "ns3/rdma-congestion-control.h"

#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaCongestionControl");
NS_OBJECT_ENSURE_REGISTERED(RdmaCongestionControl);

TypeId
RdmaCongestionControl::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaCongestionControl")
            .SetParent<Object>()
            .SetGroupName("Gpusim")
            .AddConstructor<RdmaCongestionControl>()
            .AddAttribute("MinRate",
                          "Lowest pacing rate (bit/s). 100 Mbit/s as the HPCC ns-3 simulator's "
                          "DCQCN minimum rate (min_rate in rdma-hw.cc)",
                          DoubleValue(100e6),
                          MakeDoubleAccessor(&RdmaCongestionControl::m_minBps),
                          MakeDoubleChecker<double>(1e3))
            .AddTraceSource("Rate",
                            "Pacing rate of the queue pair (bit/s)",
                            MakeTraceSourceAccessor(&RdmaCongestionControl::m_rate),
                            "ns3::TracedValueCallback::Double");
    return tid;
}

RdmaCongestionControl::RdmaCongestionControl() = default;
RdmaCongestionControl::~RdmaCongestionControl() = default;

void
RdmaCongestionControl::DoDispose()
{
    Object::DoDispose();
}

std::vector<std::string>
RdmaCongestionControl::KnownNames()
{
    return {"none", "dcqcn", "hpcc", "timely", "dctcp"};
}

TypeId
RdmaCongestionControl::Resolve(const std::string& name)
{
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
    static const std::pair<const char*, const char*> types[] = {
        {"none", "ns3::RdmaCongestionControl"},
        {"dcqcn", "ns3::Dcqcn"},
        {"hpcc", "ns3::Hpcc"},
        {"timely", "ns3::Timely"},
        {"dctcp", "ns3::RdmaDctcp"}};
    for (const auto& [shortName, typeName] : types)
    {
        TypeId t;
        if (n == shortName && TypeId::LookupByNameFailSafe(typeName, &t))
        {
            return t;
        }
    }
    std::string known;
    for (const auto& [shortName, typeName] : types)
    {
        TypeId t;
        if (TypeId::LookupByNameFailSafe(typeName, &t))
        {
            known += (known.empty() ? "" : ", ") + std::string(shortName);
        }
    }
    throw std::invalid_argument("unknown RDMA congestion control '" + name + "' (known: " +
                                known + ")");
}

void
RdmaCongestionControl::Start(double lineBps, uint32_t mtuBytes, Time baseRtt)
{
    m_lineBps = lineBps;
    m_mtu = mtuBytes;
    m_baseRtt = baseRtt;
    m_rate = lineBps; // RDMA NICs start every flow at line rate
}

void
RdmaCongestionControl::OnSend(uint32_t /*bytes*/)
{
}

void
RdmaCongestionControl::OnAck(const RdmaAckInfo& /*ack*/)
{
}

void
RdmaCongestionControl::OnCnp()
{
}

bool
RdmaCongestionControl::UsesCnp() const
{
    return false;
}

bool
RdmaCongestionControl::UsesInt() const
{
    return false;
}

std::string
RdmaCongestionControl::GetName() const
{
    return "none";
}

double
RdmaCongestionControl::GetRateBps() const
{
    return m_rate;
}

double
RdmaCongestionControl::GetLineBps() const
{
    return m_lineBps;
}

uint64_t
RdmaCongestionControl::GetWindowBytes() const
{
    return m_window;
}

void
RdmaCongestionControl::SetRate(double bps)
{
    const double r = std::clamp(bps, std::min(m_minBps, m_lineBps), m_lineBps);
    if (r != m_rate.Get())
    {
        m_rate = r;
    }
}

void
RdmaCongestionControl::SetWindow(uint64_t bytes)
{
    m_window = bytes;
}

uint32_t
RdmaCongestionControl::GetMtu() const
{
    return m_mtu;
}

Time
RdmaCongestionControl::GetBaseRtt() const
{
    return m_baseRtt;
}

} // namespace ns3
