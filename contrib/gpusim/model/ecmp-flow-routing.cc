#include "ns3/ecmp-flow-routing.h"

#include "ns3/enum.h"
#include "ns3/ipv4-header.h"
#include "ns3/ipv4.h"
#include "ns3/log.h"
#include "ns3/net-device.h"
#include "ns3/node.h"
#include "ns3/output-stream-wrapper.h"
#include "ns3/packet.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/queue-disc.h"
#include "ns3/queue.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/traffic-control-layer.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EcmpFlowRouting");
NS_OBJECT_ENSURE_REGISTERED(EcmpFlowRouting);

namespace
{

uint64_t
Mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

constexpr uint8_t kTcp = 6;
constexpr uint8_t kUdp = 17;

} // namespace

TypeId
EcmpFlowRouting::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EcmpFlowRouting")
            .SetParent<Ipv4RoutingProtocol>()
            .SetGroupName("Gpusim")
            .AddConstructor<EcmpFlowRouting>()
            .AddAttribute("Mode",
                          "How a packet picks among the equal-cost next hops: ecmp (per-flow "
                          "5-tuple hash), dmodk (destination mod k), spray (per-packet random), "
                          "spray-rr (per-packet round-robin), flowlet (per flowlet, see "
                          "FlowletGap and FlowletPick), adaptive (per packet, fewest queued "
                          "bytes at the egress)",
                          EnumValue(EcmpFlowRouting::ECMP),
                          MakeEnumAccessor(&EcmpFlowRouting::m_mode),
                          MakeEnumChecker(EcmpFlowRouting::ECMP,
                                          "ecmp",
                                          EcmpFlowRouting::DMODK,
                                          "dmodk",
                                          EcmpFlowRouting::SPRAY,
                                          "spray",
                                          EcmpFlowRouting::SPRAY_RR,
                                          "spray-rr",
                                          EcmpFlowRouting::FLOWLET,
                                          "flowlet",
                                          EcmpFlowRouting::ADAPTIVE,
                                          "adaptive"))
            .AddAttribute("FlowletGap",
                          "Flowlet mode: a gap between two packets of a flow at least this "
                          "long starts a new flowlet, which may take another next hop",
                          TimeValue(MicroSeconds(50)),
                          MakeTimeAccessor(&EcmpFlowRouting::m_flowletGap),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("FlowletPick",
                          "Flowlet mode: next hop of a new flowlet, random (LetFlow) or "
                          "least-loaded (fewest queued bytes)",
                          EnumValue(EcmpFlowRouting::FLOWLET_RANDOM),
                          MakeEnumAccessor(&EcmpFlowRouting::m_flowletPick),
                          MakeEnumChecker(EcmpFlowRouting::FLOWLET_RANDOM,
                                          "random",
                                          EcmpFlowRouting::FLOWLET_LEAST_LOADED,
                                          "least-loaded"))
            .AddTraceSource("PathChoice",
                            "A packet was routed: (output interface, IPv4 header, sport, dport)",
                            MakeTraceSourceAccessor(&EcmpFlowRouting::m_pathChoice),
                            "ns3::EcmpFlowRouting::PathChoiceTracedCallback");
    return tid;
}

EcmpFlowRouting::EcmpFlowRouting() = default;

EcmpFlowRouting::~EcmpFlowRouting() = default;

EcmpFlowRouting::Mode
EcmpFlowRouting::ParseMode(const std::string& name)
{
    static const std::pair<const char*, Mode> kModes[] = {{"ecmp", ECMP},
                                                          {"dmodk", DMODK},
                                                          {"spray", SPRAY},
                                                          {"spray-rr", SPRAY_RR},
                                                          {"flowlet", FLOWLET},
                                                          {"adaptive", ADAPTIVE}};
    for (const auto& [n, m] : kModes)
    {
        if (name == n)
        {
            return m;
        }
    }
    throw std::invalid_argument("unknown routing '" + name + "' (known: " + KnownModes() + ")");
}

std::string
EcmpFlowRouting::ModeName(Mode mode)
{
    switch (mode)
    {
    case ECMP:
        return "ecmp";
    case DMODK:
        return "dmodk";
    case SPRAY:
        return "spray";
    case SPRAY_RR:
        return "spray-rr";
    case FLOWLET:
        return "flowlet";
    case ADAPTIVE:
        return "adaptive";
    }
    return "?";
}

std::string
EcmpFlowRouting::KnownModes()
{
    return "ecmp, dmodk, spray, spray-rr, flowlet, adaptive";
}

void
EcmpFlowRouting::SetMode(Mode mode)
{
    m_mode = mode;
}

EcmpFlowRouting::Mode
EcmpFlowRouting::GetMode() const
{
    return m_mode;
}

uint64_t
EcmpFlowRouting::GetFlowletCount() const
{
    return m_nFlowlets;
}

uint32_t
EcmpFlowRouting::QueuedBytes(uint32_t interface)
{
    if (interface >= m_egressResolved.size())
    {
        m_egressResolved.resize(interface + 1, false);
        m_egressQdisc.resize(interface + 1);
        m_egressQueue.resize(interface + 1);
    }
    if (!m_egressResolved[interface])
    {
        m_egressResolved[interface] = true;
        Ptr<NetDevice> dev = m_ipv4->GetNetDevice(interface);
        Ptr<TrafficControlLayer> tc = m_ipv4->GetObject<Node>()->GetObject<TrafficControlLayer>();
        if (tc)
        {
            m_egressQdisc[interface] = tc->GetRootQueueDiscOnDevice(dev);
        }
        if (Ptr<PointToPointNetDevice> p2p = DynamicCast<PointToPointNetDevice>(dev))
        {
            m_egressQueue[interface] = p2p->GetQueue();
        }
    }
    uint32_t bytes = 0;
    if (m_egressQdisc[interface])
    {
        bytes += m_egressQdisc[interface]->GetNBytes();
    }
    if (m_egressQueue[interface])
    {
        bytes += m_egressQueue[interface]->GetNBytes();
    }
    return bytes;
}

uint64_t
EcmpFlowRouting::NextRandom()
{
    return Mix64(m_rng++);
}

uint32_t
EcmpFlowRouting::LeastLoaded(const std::vector<uint32_t>& c, uint64_t hash)
{
    const size_t n = c.size();
    const size_t start = hash % n;
    uint32_t best = c[start];
    uint32_t bestBytes = std::numeric_limits<uint32_t>::max();
    for (size_t i = 0; i < n; ++i)
    {
        const uint32_t iface = c[(start + i) % n];
        const uint32_t q = QueuedBytes(iface);
        if (q < bestBytes)
        {
            bestBytes = q;
            best = iface;
        }
    }
    return best;
}

uint32_t
EcmpFlowRouting::ChooseDynamic(const std::vector<uint32_t>& c, uint16_t set, uint64_t flowHash)
{
    switch (m_mode)
    {
    case SPRAY:
        return c[NextRandom() % c.size()];
    case SPRAY_RR: {
        if (set >= m_rr.size())
        {
            m_rr.resize(m_hopSets.size(), 0);
        }
        const uint32_t i = m_rr[set];
        m_rr[set] = (i + 1) % c.size();
        return c[i % c.size()];
    }
    case ADAPTIVE:
        return LeastLoaded(c, flowHash);
    case FLOWLET: {
        const Time now = Simulator::Now();
        auto [it, fresh] = m_flowlets.try_emplace(flowHash);
        Flowlet& f = it->second;
        const bool keep = !fresh && now - f.last < m_flowletGap &&
                          std::find(c.begin(), c.end(), f.interface) != c.end();
        if (!keep)
        {
            ++m_nFlowlets;
            f.interface = m_flowletPick == FLOWLET_RANDOM ? c[NextRandom() % c.size()]
                                                          : LeastLoaded(c, NextRandom());
            NS_LOG_LOGIC("new flowlet of flow " << flowHash << " on interface " << f.interface);
        }
        f.last = now;
        return f.interface;
    }
    default:
        return c[0];
    }
}

void
EcmpFlowRouting::DoDispose()
{
    m_ipv4 = nullptr;
    m_lastInDev = nullptr;
    m_routeCache.clear();
    m_hopSets.clear();
    m_setOf.clear();
    m_flowlets.clear();
    m_egressQdisc.clear();
    m_egressQueue.clear();
    m_egressResolved.clear();
    Ipv4RoutingProtocol::DoDispose();
}

void
EcmpFlowRouting::SetHostAddressing(Ipv4Address first, uint32_t nHosts)
{
    m_firstHost = first.Get();
    m_nHosts = nHosts;
    m_hopSets.assign(1, {});
    m_setOf.assign(nHosts, 0);
}

void
EcmpFlowRouting::SetNextHops(uint32_t host, const std::vector<uint32_t>& interfaces)
{
    if (host >= m_setOf.size())
    {
        throw std::out_of_range("EcmpFlowRouting::SetNextHops: host " + std::to_string(host) +
                                " out of range");
    }
    // Consecutive hosts usually share a set (same downlink, or the uplinks): try the last one
    // used first, then the others.
    const uint16_t last = host > 0 ? m_setOf[host - 1] : 0;
    if (m_hopSets[last] == interfaces)
    {
        m_setOf[host] = last;
        return;
    }
    for (size_t i = 0; i < m_hopSets.size(); ++i)
    {
        if (m_hopSets[i] == interfaces)
        {
            m_setOf[host] = static_cast<uint16_t>(i);
            return;
        }
    }
    if (m_hopSets.size() > std::numeric_limits<uint16_t>::max())
    {
        throw std::length_error("EcmpFlowRouting: more than 65535 distinct next-hop sets");
    }
    m_setOf[host] = static_cast<uint16_t>(m_hopSets.size());
    m_hopSets.push_back(interfaces);
}

std::vector<uint32_t>
EcmpFlowRouting::GetNextHops(uint32_t host) const
{
    return host < m_setOf.size() ? HopsOf(host) : std::vector<uint32_t>();
}

void
EcmpFlowRouting::SetLocalHost(uint32_t host)
{
    m_localHost = host;
}

void
EcmpFlowRouting::SetSalt(uint64_t salt)
{
    m_salt = Mix64(salt);
    m_rng = Mix64(m_salt ^ 0x5eed5eed5eed5eedULL);
}

uint64_t
EcmpFlowRouting::GetForwardedPackets() const
{
    return m_forwarded;
}

uint64_t
EcmpFlowRouting::HashFiveTuple(uint32_t src,
                               uint32_t dst,
                               uint8_t proto,
                               uint16_t sport,
                               uint16_t dport)
{
    return Mix64((uint64_t(src) << 32 | dst) ^
                 Mix64(uint64_t(proto) << 32 | uint64_t(sport) << 16 | dport));
}

uint32_t
EcmpFlowRouting::PickInterface(Ipv4Address src,
                               Ipv4Address dst,
                               uint8_t proto,
                               uint16_t sport,
                               uint16_t dport) const
{
    const uint32_t host = dst.Get() - m_firstHost;
    if (host >= m_nHosts || HopsOf(host).empty())
    {
        return std::numeric_limits<uint32_t>::max();
    }
    const std::vector<uint32_t>& c = HopsOf(host);
    if (c.size() == 1)
    {
        return c[0];
    }
    const uint64_t h = Mix64(HashFiveTuple(src.Get(), dst.Get(), proto, sport, dport) ^ m_salt);
    return c[h % c.size()];
}

uint32_t
EcmpFlowRouting::Choose(uint32_t host,
                        const Ipv4Header& header,
                        Ptr<const Packet> p,
                        Ipv4Address src)
{
    const std::vector<uint32_t>& c = HopsOf(host);
    if (c.size() == 1 && m_pathChoice.IsEmpty())
    {
        return c[0]; // one way on and nobody tracing: the ports are not needed
    }
    uint16_t sport = 0;
    uint16_t dport = 0;
    const uint8_t proto = header.GetProtocol();
    // TCP and UDP both start with the two ports; IP has been stripped on input and the L4
    // header is already on the packet on output. Non-first fragments would lack them: the
    // backend sizes segments to the MTU, so there are none.
    if (p && (proto == kTcp || proto == kUdp) && p->GetSize() >= 4)
    {
        uint8_t b[4];
        p->CopyData(b, 4);
        sport = uint16_t(b[0] << 8 | b[1]);
        dport = uint16_t(b[2] << 8 | b[3]);
    }
    uint32_t iface = c[0];
    if (c.size() > 1)
    {
        const uint64_t h =
            Mix64(HashFiveTuple(src.Get(), header.GetDestination().Get(), proto, sport, dport) ^
                  m_salt);
        if (m_mode == ECMP)
        {
            iface = c[h % c.size()];
        }
        else if (m_mode == DMODK)
        {
            iface = c[host % c.size()];
        }
        else
        {
            iface = ChooseDynamic(c, m_setOf[host], h);
        }
    }
    m_pathChoice(iface, header, sport, dport);
    return iface;
}

Ipv4Address
EcmpFlowRouting::LocalSource()
{
    if (!m_localSourceSet)
    {
        m_localSource = m_ipv4->GetAddress(1, 0).GetLocal();
        m_localSourceSet = true;
    }
    return m_localSource;
}

int32_t
EcmpFlowRouting::InterfaceOf(Ptr<const NetDevice> dev)
{
    if (PeekPointer(dev) != m_lastInDev || !m_lastInDev)
    {
        m_lastInDev = PeekPointer(dev);
        m_lastInIface = m_ipv4->GetInterfaceForDevice(dev);
    }
    return m_lastInIface;
}

Ptr<Ipv4Route>
EcmpFlowRouting::RouteVia(uint32_t interface)
{
    if (interface >= m_routeCache.size())
    {
        m_routeCache.resize(interface + 1);
    }
    Ptr<Ipv4Route>& r = m_routeCache[interface];
    if (!r)
    {
        r = Create<Ipv4Route>();
        r->SetOutputDevice(m_ipv4->GetNetDevice(interface));
        // Hosts source everything from their address (interface 1); on switches the source
        // of a forwarding route is unused.
        r->SetSource(LocalSource());
        // Point-to-point links need no next-hop address (no ARP): 0.0.0.0 means "on link".
        r->SetGateway(Ipv4Address::GetZero());
    }
    // Shared by all packets: Ipv4L3Protocol reads only the device, gateway and source.
    return r;
}

Ptr<Ipv4Route>
EcmpFlowRouting::RouteOutput(Ptr<Packet> p,
                             const Ipv4Header& header,
                             Ptr<NetDevice> oif,
                             Socket::SocketErrno& sockerr)
{
    const Ipv4Address dst = header.GetDestination();
    const uint32_t host = dst.Get() - m_firstHost;
    if (host >= m_nHosts || HopsOf(host).empty())
    {
        NS_LOG_LOGIC("no route to " << dst);
        sockerr = Socket::ERROR_NOROUTETOHOST;
        return nullptr;
    }
    // Locally originated: the source is this host's address (interface 1, the first uplink).
    const Ipv4Address src = LocalSource();
    uint32_t iface = Choose(host, header, p, src);
    if (oif)
    {
        const int32_t forced = m_ipv4->GetInterfaceForDevice(oif);
        if (forced >= 0)
        {
            iface = static_cast<uint32_t>(forced);
        }
    }
    sockerr = Socket::ERROR_NOTERROR;
    return RouteVia(iface);
}

bool
EcmpFlowRouting::RouteInput(Ptr<const Packet> p,
                            const Ipv4Header& header,
                            Ptr<const NetDevice> idev,
                            UnicastForwardCallback ucb,
                            MulticastForwardCallback mcb,
                            LocalDeliverCallback lcb,
                            ErrorCallback ecb)
{
    const Ipv4Address dst = header.GetDestination();
    const uint32_t host = dst.Get() - m_firstHost;
    // Fast path for the usual case, a host address: forward unless it is ours. Anything else
    // (interface addresses, broadcast) goes through the generic interface check.
    const bool hostAddress = host < m_nHosts;
    if ((hostAddress && host == m_localHost) ||
        (!hostAddress && m_ipv4->IsDestinationAddress(dst, InterfaceOf(idev))))
    {
        const int32_t iif = InterfaceOf(idev);
        if (!lcb.IsNull())
        {
            lcb(p, header, iif);
            return true;
        }
        return false;
    }
    if (!hostAddress || HopsOf(host).empty())
    {
        NS_LOG_LOGIC("cannot forward to " << dst);
        return false;
    }
    const uint32_t iface = Choose(host, header, p, header.GetSource());
    ++m_forwarded;
    ucb(RouteVia(iface), p, header);
    return true;
}

void
EcmpFlowRouting::NotifyInterfaceUp(uint32_t)
{
    m_lastInDev = nullptr; // interfaces may have been added
}

void
EcmpFlowRouting::NotifyInterfaceDown(uint32_t)
{
    m_lastInDev = nullptr;
}

void
EcmpFlowRouting::NotifyAddAddress(uint32_t, Ipv4InterfaceAddress)
{
    m_routeCache.clear(); // sources may change
    m_localSourceSet = false;
    m_lastInDev = nullptr;
}

void
EcmpFlowRouting::NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress)
{
    m_routeCache.clear();
    m_localSourceSet = false;
    m_lastInDev = nullptr;
}

void
EcmpFlowRouting::SetIpv4(Ptr<Ipv4> ipv4)
{
    m_ipv4 = ipv4;
}

void
EcmpFlowRouting::PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const
{
    std::ostream& os = *stream->GetStream();
    os << "EcmpFlowRouting";
    if (m_ipv4)
    {
        os << " node " << m_ipv4->GetObject<Node>()->GetId();
    }
    os << ": " << m_nHosts << " hosts from " << Ipv4Address(m_firstHost) << "\n";
    for (uint32_t h = 0; h < m_nHosts; ++h)
    {
        os << "  " << Ipv4Address(m_firstHost + h) << " via interfaces";
        for (uint32_t i : HopsOf(h))
        {
            os << " " << i;
        }
        os << "\n";
    }
}

EcmpFlowRoutingHelper*
EcmpFlowRoutingHelper::Copy() const
{
    return new EcmpFlowRoutingHelper(*this);
}

Ptr<Ipv4RoutingProtocol>
EcmpFlowRoutingHelper::Create(Ptr<Node>) const
{
    return CreateObject<EcmpFlowRouting>();
}

} // namespace ns3
