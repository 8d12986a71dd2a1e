/*
 * PacketBackend's network (see packet-backend.h): the point-to-point links of the topology,
 * their order, the per-flow ECMP routes, the accessors of what was built, and link failure.
 */
#include "ns3/packet-backend.h"

#include "packet-backend-internal.h"

#include "ns3/pfc-controller.h"

#include "ns3/channel.h"
#include "ns3/data-rate.h"
#include "ns3/ecmp-flow-routing.h"
#include "ns3/enum.h"
#include "ns3/error-model.h"
#include "ns3/ipv4.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/queue-disc.h"
#include "ns3/queue-size.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <stdexcept>

namespace ns3
{

using namespace packet_internal;

namespace
{

constexpr uint32_t kFirstAuxAddress = 0xac100001; // 172.16.0.1, non-host interfaces

} // namespace

void
PacketBackend::BuildLinks()
{
    const auto& verts = m_topology->Vertices();
    const auto& links = m_topology->Links();
    // Links: one PointToPoint link per duplex pair between packet vertices.
    m_linkSlot.assign(links.size(), -1);
    uint32_t aux = kFirstAuxAddress;
    auto addInterface = [&](uint32_t v, Ptr<NetDevice> dev) {
        Ptr<Ipv4> ipv4 = m_vertexNode[v]->GetObject<Ipv4>();
        const uint32_t iface = ipv4->AddInterface(dev);
        const bool hostAddress = m_vertexHost[v] != kNone && iface == 1;
        const Ipv4Address a = hostAddress ? m_hostAddr[m_vertexHost[v]] : Ipv4Address(aux++);
        ipv4->AddAddress(iface, Ipv4InterfaceAddress(a, Ipv4Mask::GetOnes()));
        ipv4->SetUp(iface);
        if (m_vertexHost[v] != kNone)
        {
            ipv4->SetForwarding(iface, false); // hosts are endpoints, never transit
        }
        return iface;
    };
    for (uint32_t l = 0; l < links.size(); ++l)
    {
        const TopoLink& L = links[l];
        if (L.reverse < l || !IsPacketVertex(verts[L.from].type) ||
            !IsPacketVertex(verts[L.to].type))
        {
            continue;
        }
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(L.bitsPerSec))));
        p2p.SetDeviceAttribute("Mtu", UintegerValue(m_mtu));
        p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(std::llround(L.latencySec * 1e9))));
        // The backlog lives in the queue disc (where AQM/ECN act); the device holds one frame.
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
        NetDeviceContainer d = p2p.Install(m_vertexNode[L.from], m_vertexNode[L.to]);
        for (int side = 0; side < 2; ++side)
        {
            const uint32_t id = side == 0 ? l : L.reverse;
            const uint32_t from = links[id].from;
            Ptr<NetDevice> dev = d.Get(side);
            m_linkSlot[id] = static_cast<int32_t>(m_packetLinks.size());
            m_packetLinks.push_back(id);
            m_linkDev.push_back(dev);
            const bool sw = verts[from].type == TopoVertexType::Switch;
            m_linkSwitchEgress.push_back(sw);
            m_linkQdisc.push_back(nullptr);
            BuildQueueDisc(id, dev, sw);
            m_linkPfcPort.push_back(-1);
            if (m_pfc)
            {
                AddPfcPort(id, dev); // its receive handler must precede IPv4's
            }
            m_linkIface.push_back(addInterface(from, dev));
        }
    }
}

void
PacketBackend::SortPacketLinks()
{
    // m_packetLinks was filled pairwise; keep the accessor's promise of ascending ids.
    std::vector<uint32_t> order(m_packetLinks.size());
    for (uint32_t i = 0; i < order.size(); ++i)
    {
        order[i] = i;
    }
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return m_packetLinks[a] < m_packetLinks[b];
    });
    auto permute = [&](auto& v) {
        auto copy = v;
        for (uint32_t i = 0; i < order.size(); ++i)
        {
            v[i] = copy[order[i]];
        }
    };
    permute(m_packetLinks);
    permute(m_linkDev);
    permute(m_linkQdisc);
    permute(m_linkIface);
    permute(m_linkSwitchEgress);
    permute(m_linkPfcPort);
    for (uint32_t i = 0; i < m_packetLinks.size(); ++i)
    {
        m_linkSlot[m_packetLinks[i]] = static_cast<int32_t>(i);
    }
}

void
PacketBackend::BuildRoutes()
{
    const auto& verts = m_topology->Vertices();
    const auto& links = m_topology->Links();
    const uint32_t nHosts = static_cast<uint32_t>(m_hosts.size());
    const EcmpFlowRouting::Mode mode = EcmpFlowRouting::ParseMode(GetRoutingMode());
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        if (m_vertexNode[v])
        {
            Ptr<Ipv4> ipv4 = m_vertexNode[v]->GetObject<Ipv4>();
            Ptr<EcmpFlowRouting> r = DynamicCast<EcmpFlowRouting>(ipv4->GetRoutingProtocol());
            r->SetHostAddressing(Ipv4Address(kFirstHostAddress), nHosts);
            r->SetSalt((uint64_t(m_ecmpSeed) << 32) ^ v);
            r->SetLocalHost(m_vertexHost[v]);
            r->SetMode(mode);
            r->SetAttribute("FlowletGap", TimeValue(m_flowletGap));
            r->SetAttribute("FlowletPick", EnumValue(m_flowletPick == "least-loaded"
                                                         ? EcmpFlowRouting::FLOWLET_LEAST_LOADED
                                                         : EcmpFlowRouting::FLOWLET_RANDOM));
            m_routing[v] = r;
        }
    }
    // Per destination host: hop distances by reverse BFS (only switches forward), then every
    // node's equal-cost next hops are its links one hop closer.
    std::vector<uint32_t> dist(verts.size());
    std::vector<uint32_t> queue;
    std::vector<uint32_t> hops;
    for (uint32_t d = 0; d < verts.size(); ++d)
    {
        if (m_vertexHost[d] == kNone)
        {
            continue;
        }
        std::fill(dist.begin(), dist.end(), kNone);
        queue.clear();
        dist[d] = 0;
        queue.push_back(d);
        for (size_t head = 0; head < queue.size(); ++head)
        {
            const uint32_t v = queue[head];
            if (v != d && verts[v].type != TopoVertexType::Switch)
            {
                continue;
            }
            for (uint32_t l : m_topology->InLinks(v))
            {
                const uint32_t u = links[l].from;
                if (m_linkSlot[l] >= 0 && dist[u] == kNone && !RoutedAround(l))
                {
                    dist[u] = dist[v] + 1;
                    queue.push_back(u);
                }
            }
        }
        for (uint32_t u = 0; u < verts.size(); ++u)
        {
            if (!m_vertexNode[u] || u == d || dist[u] == kNone)
            {
                continue;
            }
            hops.clear();
            for (uint32_t l : m_topology->OutLinks(u))
            {
                const uint32_t w = links[l].to;
                if (m_linkSlot[l] >= 0 && !RoutedAround(l) && dist[w] == dist[u] - 1 &&
                    (w == d || verts[w].type == TopoVertexType::Switch))
                {
                    hops.push_back(m_linkIface[m_linkSlot[l]]);
                }
            }
            m_routing[u]->SetNextHops(m_vertexHost[d], hops);
        }
    }
}

// ---- the network ----

Ptr<Node>
PacketBackend::GetHostNode(uint32_t gpu) const
{
    const uint32_t nic = m_topology->NicOf(gpu);
    return nic == kNone ? nullptr : m_vertexNode.at(nic);
}

Ipv4Address
PacketBackend::GetHostAddress(uint32_t gpu) const
{
    const uint32_t nic = m_topology->NicOf(gpu);
    if (nic == kNone || m_vertexHost.at(nic) == kNone)
    {
        throw std::invalid_argument("PacketBackend: GPU " + std::to_string(gpu) +
                                    " has no NIC in the packet network");
    }
    return m_hostAddr[m_vertexHost[nic]];
}

NodeContainer
PacketBackend::GetHostNodes() const
{
    NodeContainer c;
    for (const auto& n : m_hosts)
    {
        c.Add(n);
    }
    return c;
}

NodeContainer
PacketBackend::GetSwitchNodes() const
{
    NodeContainer c;
    for (const auto& n : m_switches)
    {
        c.Add(n);
    }
    return c;
}

Ptr<Node>
PacketBackend::GetVertexNode(uint32_t vertex) const
{
    return vertex < m_vertexNode.size() ? m_vertexNode[vertex] : nullptr;
}

const std::vector<uint32_t>&
PacketBackend::GetPacketLinks() const
{
    return m_packetLinks;
}

Ptr<NetDevice>
PacketBackend::GetLinkDevice(uint32_t link) const
{
    return link < m_linkSlot.size() && m_linkSlot[link] >= 0 ? m_linkDev[m_linkSlot[link]]
                                                             : nullptr;
}

Ptr<QueueDisc>
PacketBackend::GetLinkQueueDisc(uint32_t link) const
{
    return link < m_linkSlot.size() && m_linkSlot[link] >= 0 ? m_linkQdisc[m_linkSlot[link]]
                                                             : nullptr;
}

Ptr<EcmpFlowRouting>
PacketBackend::GetRouting(uint32_t vertex) const
{
    return vertex < m_routing.size() ? m_routing[vertex] : nullptr;
}

Ptr<PfcController>
PacketBackend::GetPfcController(uint32_t vertex) const
{
    return vertex < m_pfcCtl.size() ? m_pfcCtl[vertex] : nullptr;
}

bool
PacketBackend::IsPfcEnabled() const
{
    return m_pfc;
}

uint64_t
PacketBackend::GetTotalPauses() const
{
    uint64_t n = 0;
    for (const auto& c : m_pfcCtl)
    {
        for (uint32_t p = 0; c && p < c->GetNPorts(); ++p)
        {
            n += c->GetPortStats(p).pausesSent;
        }
    }
    return SumOverProcesses(n);
}

void
PacketBackend::FailLink(uint32_t link)
{
    EnsureBuilt();
    Ptr<NetDevice> dev = GetLinkDevice(link);
    if (!dev)
    {
        throw std::invalid_argument("PacketBackend::FailLink: link " + std::to_string(link) +
                                    " is not a packet link");
    }
    Ptr<Channel> ch = dev->GetChannel();
    Ptr<NetDevice> peer = ch->GetDevice(0) == dev ? ch->GetDevice(1) : ch->GetDevice(0);
    Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
    em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
    em->SetRate(1.0);
    DynamicCast<PointToPointNetDevice>(peer)->SetReceiveErrorModel(em);
}

} // namespace ns3
