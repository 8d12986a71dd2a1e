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
#include "ns3/drop-tail-queue.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device-queue-interface.h"
#include "ns3/point-to-point-channel.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#ifdef GPUSIM_HAVE_NS3_MPI
#include "ns3/mpi-interface.h"
#include "ns3/mpi-receiver.h"
#include "ns3/point-to-point-remote-channel.h"
#endif

#include <algorithm>
#include <stdexcept>

namespace ns3
{

using namespace packet_internal;

namespace
{

constexpr uint32_t kFirstAuxAddress = 0xac100001; // 172.16.0.1, non-host interfaces

/// Where a link's packets arrive: PacketBackend::ArriveAt (directed link, device, packet, time).
using ArriveFn = std::function<void(uint32_t, Ptr<PointToPointNetDevice>, Ptr<Packet>, Time)>;

/// A point-to-point channel whose packets arrive through the backend's per-instant arrival
/// buckets (PacketBackend::ArriveAt) instead of one receive event each.
class OrderedChannel : public PointToPointChannel
{
  public:
    ArriveFn arrive;
    uint32_t link[2] = {0, 0}; //!< directed link id of each wire (by sending device)

    bool TransmitStart(Ptr<const Packet> p, Ptr<PointToPointNetDevice> src, Time txTime) override
    {
        const uint32_t wire = src == GetSource(0) ? 0 : 1;
        arrive(link[wire], GetDestination(wire), p->Copy(), Simulator::Now() + txTime + GetDelay());
        return true;
    }
};

#ifdef GPUSIM_HAVE_NS3_MPI
/// The same between nodes of two MPI processes (ns-3's remote channel). Its packets are
/// announced one nanosecond early, so that the receiving process files them in their instant's
/// bucket before that instant (its MpiReceiver calls PacketBackend::ArriveAt a nanosecond
/// later). ns-3 takes the channels' Delay attribute as the lookahead, so that attribute is the
/// link's latency less kRemoteSlack: every announcement then lands beyond the receiver's
/// granted time, even for a frame serialised in under a nanosecond.
class OrderedRemoteChannel : public PointToPointRemoteChannel
{
  public:
    static constexpr int64_t kRemoteSlackNs = 2;

    bool TransmitStart(Ptr<const Packet> p, Ptr<PointToPointNetDevice> src, Time txTime) override
    {
        const uint32_t wire = src == GetSource(0) ? 0 : 1;
        Ptr<PointToPointNetDevice> dst = GetDestination(wire);
        const Time latency = GetDelay() + NanoSeconds(kRemoteSlackNs);
        MpiInterface::SendPacket(p->Copy(), Simulator::Now() + txTime + latency - NanoSeconds(1),
                                 dst->GetNode()->GetId(), dst->GetIfIndex());
        return true;
    }
};
#endif

} // namespace

void
PacketBackend::ArriveAt(uint32_t link, Ptr<PointToPointNetDevice> dev, Ptr<Packet> p, Time at)
{
    // Every packet arriving anywhere at one instant is received by one event, in directed-link
    // order: the order of simultaneous arrivals no longer depends on when their receive
    // events were scheduled, which differs between one process and several (remote packets
    // are filed when they come in).
    const int64_t t = at.GetTimeStep();
    auto it = m_arrivals.find(t);
    if (it == m_arrivals.end())
    {
        // A new instant: reuse a bucket (map node and vector capacity) when one is spare.
        if (!m_spareArrivals.empty())
        {
            auto spare = std::move(m_spareArrivals.back());
            m_spareArrivals.pop_back();
            spare.key() = t;
            it = m_arrivals.insert(std::move(spare)).position;
        }
        else
        {
            it = m_arrivals.emplace(t, std::vector<Arrival>()).first;
        }
        Simulator::ScheduleWithContext(dev->GetNode()->GetId(),
                                       at - Simulator::Now(),
                                       &PacketBackend::ReceiveArrivals,
                                       this,
                                       t);
    }
    it->second.push_back(Arrival{link, std::move(dev), std::move(p)});
}

void
PacketBackend::ReceiveArrivals(int64_t t)
{
    auto bucket = m_arrivals.extract(t);
    std::vector<Arrival>& items = bucket.mapped();
    if (items.size() > 1)
    {
        std::sort(items.begin(), items.end(),
                  [](const Arrival& a, const Arrival& b) { return a.link < b.link; });
    }
    for (Arrival& a : items)
    {
        a.dev->Receive(a.p); // may file later arrivals (other instants)
    }
    items.clear();
    m_spareArrivals.push_back(std::move(bucket));
}

void
PacketBackend::InstallLink(uint32_t l, double bitsPerSec, Time delay, Ptr<NetDevice>& devA,
                           Ptr<NetDevice>& devB)
{
    // What PointToPointHelper::Install builds, with the ordered channels above.
    const TopoLink& L = m_topology->Links()[l];
    Ptr<Node> nodes[2] = {m_vertexNode[L.from], m_vertexNode[L.to]};
    Ptr<PointToPointNetDevice> dev[2];
    for (int side = 0; side < 2; ++side)
    {
        dev[side] = CreateObject<PointToPointNetDevice>();
        dev[side]->SetAttribute("DataRate", DataRateValue(DataRate(uint64_t(bitsPerSec))));
        dev[side]->SetAttribute("Mtu", UintegerValue(m_mtu));
        dev[side]->SetAddress(Mac48Address::Allocate());
        nodes[side]->AddDevice(dev[side]);
        // The backlog lives in the queue disc (where AQM/ECN act); the device holds one frame.
        Ptr<Queue<Packet>> q = CreateObject<DropTailQueue<Packet>>();
        q->SetAttribute("MaxSize", QueueSizeValue(QueueSize("1p")));
        dev[side]->SetQueue(q);
        Ptr<NetDeviceQueueInterface> ndqi = CreateObject<NetDeviceQueueInterface>();
        ndqi->GetTxQueue(0)->ConnectQueueTraces(q);
        dev[side]->AggregateObject(ndqi);
    }
    const ArriveFn arrive = [this](uint32_t link, Ptr<PointToPointNetDevice> d, Ptr<Packet> p,
                                   Time at) { ArriveAt(link, d, p, at); };
    Ptr<PointToPointChannel> channel;
    if (!m_distributed || (IsLocalVertex(L.from) && IsLocalVertex(L.to)))
    {
        Ptr<OrderedChannel> c = CreateObject<OrderedChannel>();
        c->arrive = arrive;
        c->link[0] = l;
        c->link[1] = L.reverse;
        channel = c;
    }
    else
    {
#ifdef GPUSIM_HAVE_NS3_MPI
        channel = CreateObject<OrderedRemoteChannel>();
        for (int side = 0; side < 2; ++side)
        {
            // A packet from the other process: over the link towards this side.
            const uint32_t in = side == 0 ? L.reverse : l;
            Ptr<PointToPointNetDevice> d = dev[side];
            Ptr<MpiReceiver> rx = CreateObject<MpiReceiver>();
            rx->SetReceiveCallback(Callback<void, Ptr<Packet>>([this, in, d](Ptr<Packet> p) {
                ArriveAt(in, d, p, Simulator::Now() + NanoSeconds(1));
            }));
            d->AggregateObject(rx);
        }
#endif
    }
    channel->SetAttribute("Delay", TimeValue(delay));
#ifdef GPUSIM_HAVE_NS3_MPI
    if (DynamicCast<OrderedRemoteChannel>(channel))
    {
        if (delay <= NanoSeconds(OrderedRemoteChannel::kRemoteSlackNs))
        {
            throw std::invalid_argument("PacketBackend: distributed runs need links between "
                                        "processes with a latency above 2 ns");
        }
        channel->SetAttribute("Delay",
                              TimeValue(delay - NanoSeconds(OrderedRemoteChannel::kRemoteSlackNs)));
    }
#endif
    dev[0]->Attach(channel);
    dev[1]->Attach(channel);
    devA = dev[0];
    devB = dev[1];
}

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
        Ptr<NetDevice> d[2];
        InstallLink(l, L.bitsPerSec, NanoSeconds(std::llround(L.latencySec * 1e9)), d[0], d[1]);
        for (int side = 0; side < 2; ++side)
        {
            const uint32_t id = side == 0 ? l : L.reverse;
            const uint32_t from = links[id].from;
            Ptr<NetDevice> dev = d[side];
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
