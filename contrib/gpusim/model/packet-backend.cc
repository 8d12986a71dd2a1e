#include "ns3/packet-backend.h"

#include "ns3/pfc-controller.h"

#include "ns3/boolean.h"
#include "ns3/channel.h"
#include "ns3/cobalt-queue-disc.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/ecmp-flow-routing.h"
#include "ns3/ecn-marking-queue-disc.h"
#include "ns3/error-model.h"
#include "ns3/flow-monitor-helper.h"
#include "ns3/flow-monitor.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-flow-classifier.h"
#include "ns3/ipv4.h"
#include "ns3/json-writer.h"
#include "ns3/log.h"
#include "ns3/pie-queue-disc.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/pointer.h"
#include "ns3/queue-disc.h"
#include "ns3/queue-size.h"
#include "ns3/rdma-transport.h"
#include "ns3/red-queue-disc.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("PacketBackend");
NS_OBJECT_ENSURE_REGISTERED(PacketBackend);

namespace
{

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kFirstHostAddress = 0x0a000001; // 10.0.0.1
constexpr uint32_t kFirstAuxAddress = 0xac100001;  // 172.16.0.1, non-host interfaces
constexpr double kRefRate = 100e9;                  // thresholds are given at 100 Gbit/s
constexpr double kDefaultBufferAt100G = 4.0 * 1024 * 1024;
constexpr double kDefaultKminAt100G = 400e3; // HPCC / SimAI RED-ECN defaults (FACTS.md)
constexpr double kDefaultKmaxAt100G = 1600e3;

int64_t
NowNs()
{
    return Simulator::Now().GetNanoSeconds();
}

bool
IsPacketVertex(TopoVertexType t)
{
    return t == TopoVertexType::Nic || t == TopoVertexType::Switch;
}

double
ToUs(Time t)
{
    return t.GetNanoSeconds() / 1e3;
}

} // namespace

TypeId
PacketBackend::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::PacketBackend")
            .SetParent<NetworkBackend>()
            .SetGroupName("Gpusim")
            .AddConstructor<PacketBackend>()
            .AddAttribute("Transport",
                          "End-host protocol carrying the inter-server transfers",
                          PointerValue(),
                          MakePointerAccessor(&PacketBackend::SetTransport,
                                              &PacketBackend::GetTransport),
                          MakePointerChecker<PacketTransport>())
            .AddAttribute("TransportProtocol",
                          "End-host protocol by name: tcp (TcpTransport) or rdma "
                          "(RdmaTransport, RoCEv2); setting it installs a default-configured "
                          "transport of that kind",
                          StringValue("tcp"),
                          MakeStringAccessor(&PacketBackend::SetTransportProtocol,
                                             &PacketBackend::GetTransportProtocol),
                          MakeStringChecker())
            .AddAttribute("QueueDisc",
                          "Switch egress queue disc: fifo, red, red-ecn, step-ecn, codel, "
                          "fq-codel, pie, fq-pie, cobalt, ecn (EcnMarkingQueueDisc: "
                          "instantaneous kmin/kmax/pmax marking and HPCC INT, for rdma)",
                          StringValue("red-ecn"),
                          MakeStringAccessor(&PacketBackend::m_queueName),
                          MakeStringChecker())
            .AddAttribute("Pfc",
                          "Priority Flow Control for the lossless class (DSCP 3, RDMA) in every "
                          "switch and NIC (PfcController); needs QueueDisc ecn",
                          BooleanValue(false),
                          MakeBooleanAccessor(&PacketBackend::m_pfc),
                          MakeBooleanChecker())
            .AddAttribute("Mtu",
                          "IP MTU of every fabric link (bytes)",
                          UintegerValue(9000),
                          MakeUintegerAccessor(&PacketBackend::m_mtu),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("BufferBytes",
                          "Buffer of each switch egress port (bytes); 0 = 4 MiB scaled by the "
                          "port rate / 100 Gbit/s",
                          UintegerValue(0),
                          MakeUintegerAccessor(&PacketBackend::m_bufferBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("HostBufferBytes",
                          "FIFO of each host NIC's egress (bytes)",
                          UintegerValue(64 << 20),
                          MakeUintegerAccessor(&PacketBackend::m_hostBufferBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("EcnKminBytes",
                          "red-ecn/red: queue length where marking (dropping) starts; 0 = 400 KB "
                          "scaled by the port rate / 100 Gbit/s",
                          DoubleValue(0),
                          MakeDoubleAccessor(&PacketBackend::m_kminBytes),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("EcnKmaxBytes",
                          "red-ecn/red: queue length where the probability reaches EcnPmax; "
                          "0 = 1600 KB scaled by the port rate / 100 Gbit/s",
                          DoubleValue(0),
                          MakeDoubleAccessor(&PacketBackend::m_kmaxBytes),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("EcnPmax",
                          "red-ecn/red: marking probability at EcnKmaxBytes",
                          DoubleValue(0.2),
                          MakeDoubleAccessor(&PacketBackend::m_pmax),
                          MakeDoubleChecker<double>(1e-6, 1))
            .AddAttribute("StepEcnKBytes",
                          "step-ecn (DCTCP-style): mark every packet above this queue length; "
                          "0 = 400 KB scaled by the port rate / 100 Gbit/s",
                          DoubleValue(0),
                          MakeDoubleAccessor(&PacketBackend::m_stepKBytes),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("SampleInterval",
                          "Period of the per-link utilisation / queue occupancy samples "
                          "(0 = no time series)",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&PacketBackend::m_sampleInterval),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("EnableFlowMonitor",
                          "Install an ns-3 FlowMonitor on the hosts. ns-3's FlowMonitor checks "
                          "for lost packets every second forever, so the run then needs a "
                          "Simulator::Stop",
                          BooleanValue(false),
                          MakeBooleanAccessor(&PacketBackend::m_flowMonitor),
                          MakeBooleanChecker())
            .AddAttribute("RecordTransfers",
                          "Keep every delivered transfer (GetCompletedTransfers, JSON, CSV)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&PacketBackend::m_recordTransfers),
                          MakeBooleanChecker())
            .AddAttribute("EcmpSeed",
                          "Salt of the per-flow ECMP hash",
                          UintegerValue(0),
                          MakeUintegerAccessor(&PacketBackend::m_ecmpSeed),
                          MakeUintegerChecker<uint32_t>())
            .AddTraceSource("TransferStarted",
                            "StartTransfer was called (delivered time unset)",
                            MakeTraceSourceAccessor(&PacketBackend::m_startedTrace),
                            "ns3::PacketBackend::TransferTracedCallback")
            .AddTraceSource("TransferDelivered",
                            "A transfer's last byte arrived at its destination GPU",
                            MakeTraceSourceAccessor(&PacketBackend::m_deliveredTrace),
                            "ns3::PacketBackend::TransferTracedCallback");
    return tid;
}

PacketBackend::PacketBackend()
    : m_streamBase(1000),
      m_transport(CreateObject<TcpTransport>())
{
}

PacketBackend::~PacketBackend() = default;

void
PacketBackend::DoDispose()
{
    Simulator::Cancel(m_sampleEvent);
    for (auto& [t, d] : m_deliveries)
    {
        Simulator::Cancel(d.event);
    }
    m_deliveries.clear();
    m_pending.clear();
    if (m_nvlink)
    {
        m_nvlink->Dispose();
        m_nvlink = nullptr;
    }
    if (m_transport)
    {
        m_transport->Dispose();
        m_transport = nullptr;
    }
    m_monitor = nullptr;
    m_fmHelper.reset();
    m_vertexNode.clear();
    m_hosts.clear();
    m_switches.clear();
    m_linkDev.clear();
    m_linkQdisc.clear();
    m_routing.clear();
    m_pfcCtl.clear();
    m_topology = nullptr;
    NetworkBackend::DoDispose();
}

std::vector<std::string>
PacketBackend::KnownQueueDiscs()
{
    return {"fifo",   "red",    "red-ecn", "step-ecn", "codel", "fq-codel",
            "pie",    "fq-pie", "cobalt",  "ecn"};
}

void
PacketBackend::SetTopology(Ptr<ClusterTopology> topology)
{
    if (m_built)
    {
        throw std::logic_error("PacketBackend::SetTopology: the network is already built");
    }
    m_topology = topology;
}

Ptr<ClusterTopology>
PacketBackend::GetTopology() const
{
    return m_topology;
}

void
PacketBackend::SetTransport(Ptr<PacketTransport> transport)
{
    if (m_built)
    {
        throw std::logic_error("PacketBackend::SetTransport: the network is already built");
    }
    m_transport = transport;
}

Ptr<PacketTransport>
PacketBackend::GetTransport() const
{
    return m_transport;
}

void
PacketBackend::SetTransportProtocol(const std::string& name)
{
    if (name == GetTransportProtocol())
    {
        return;
    }
    if (name == "tcp")
    {
        SetTransport(CreateObject<TcpTransport>());
    }
    else if (name == "rdma")
    {
        SetTransport(CreateObject<RdmaTransport>());
    }
    else
    {
        throw std::invalid_argument("unknown transport '" + name + "' (known: tcp, rdma)");
    }
}

std::string
PacketBackend::GetTransportProtocol() const
{
    if (DynamicCast<RdmaTransport>(m_transport))
    {
        return "rdma";
    }
    return DynamicCast<TcpTransport>(m_transport) ? "tcp" : "";
}

int64_t
PacketBackend::AssignStreams(int64_t stream)
{
    m_streamBase = stream;
    return m_topology ? static_cast<int64_t>(m_topology->Links().size()) : 0;
}

std::string
PacketBackend::GetName() const
{
    return "packet";
}

bool
PacketBackend::IsBuilt() const
{
    return m_built;
}

void
PacketBackend::EnsureBuilt()
{
    if (!m_built)
    {
        Build();
    }
}

void
PacketBackend::Build()
{
    if (m_built)
    {
        return;
    }
    if (!m_topology)
    {
        throw std::logic_error("PacketBackend::Build: no topology set");
    }
    if (!m_transport)
    {
        throw std::logic_error("PacketBackend::Build: no transport set");
    }
    const auto known = KnownQueueDiscs();
    if (std::find(known.begin(), known.end(), m_queueName) == known.end())
    {
        std::string list;
        for (const auto& k : known)
        {
            list += (list.empty() ? "" : ", ") + k;
        }
        throw std::invalid_argument("unknown queue disc '" + m_queueName + "' (known: " + list +
                                    ")");
    }
    if (m_pfc && m_queueName != "ecn")
    {
        throw std::invalid_argument("PacketBackend: PFC needs the 'ecn' queue disc (not '" +
                                    m_queueName + "')");
    }
    if (m_mtu < 576 || m_mtu > 65535)
    {
        throw std::invalid_argument("PacketBackend: MTU " + std::to_string(m_mtu) +
                                    " outside 576..65535");
    }
    const auto& verts = m_topology->Vertices();

    // Nodes: one per NIC (host) and per fabric switch.
    m_vertexNode.assign(verts.size(), nullptr);
    m_vertexHost.assign(verts.size(), kNone);
    m_routing.assign(verts.size(), nullptr);
    m_pfcCtl.assign(verts.size(), nullptr);
    NodeContainer all;
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        if (!IsPacketVertex(verts[v].type))
        {
            continue;
        }
        Ptr<Node> n = CreateObject<Node>();
        m_vertexNode[v] = n;
        all.Add(n);
        if (verts[v].type == TopoVertexType::Nic)
        {
            m_vertexHost[v] = static_cast<uint32_t>(m_hosts.size());
            m_hosts.push_back(n);
            m_hostAddr.emplace_back(kFirstHostAddress + uint32_t(m_hostAddr.size()));
        }
        else
        {
            m_switches.push_back(n);
        }
    }
    InternetStackHelper stack;
    stack.SetIpv6StackInstall(false);
    stack.SetRoutingHelper(EcmpFlowRoutingHelper());
    stack.Install(all);

    BuildLinks();
    SortPacketLinks();
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        if (m_vertexHost[v] != kNone && m_vertexNode[v]->GetObject<Ipv4>()->GetNInterfaces() < 2)
        {
            throw std::invalid_argument("PacketBackend: NIC " + verts[v].name +
                                        " has no link into the fabric");
        }
    }

    AssignQueueStreams();

    BuildRoutes();

    m_transport->SetMessageCallback([this](uint64_t id) { OnMessage(id); });
    m_transport->SetFailureCallback([this](const ConnectionKey& k) { OnConnectionFailed(k); });
    m_transport->Install(m_hosts, m_hostAddr, m_mtu);

    m_nvlink = CreateObject<FlowBackend>();
    m_nvlink->SetTopology(m_topology);

    if (m_flowMonitor)
    {
        m_fmHelper = std::make_unique<FlowMonitorHelper>();
        NodeContainer hosts;
        for (const auto& h : m_hosts)
        {
            hosts.Add(h);
        }
        m_monitor = m_fmHelper->Install(hosts);
    }

    // Nodes would initialise at the next event; a backend built mid-run sends right away, so
    // initialise now (queue discs check their configuration here).
    for (uint32_t i = 0; i < all.GetN(); ++i)
    {
        all.Get(i)->Initialize();
    }
    m_lastSent.assign(m_packetLinks.size(), 0);
    m_utilSeries.assign(m_packetLinks.size(), {});
    m_backlogSeries.assign(m_packetLinks.size(), {});
    m_built = true;
    NS_LOG_INFO("built " << m_hosts.size() << " hosts, " << m_switches.size() << " switches, "
                         << m_packetLinks.size() << " directed links; transport "
                         << m_transport->GetName() << ", queue " << m_queueName);
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
PacketBackend::AssignQueueStreams()
{
    // Random streams of the AQMs: fixed, so that repeated runs in one process match.
    int64_t stream = m_streamBase;
    for (const Ptr<QueueDisc>& q : m_linkQdisc)
    {
        if (auto red = DynamicCast<RedQueueDisc>(q))
        {
            stream += red->AssignStreams(stream);
        }
        else if (auto pie = DynamicCast<PieQueueDisc>(q))
        {
            stream += pie->AssignStreams(stream);
        }
        else if (auto cobalt = DynamicCast<CobaltQueueDisc>(q))
        {
            stream += cobalt->AssignStreams(stream);
        }
        else if (auto ecn = DynamicCast<EcnMarkingQueueDisc>(q))
        {
            stream += ecn->AssignStreams(stream);
        }
    }
}

double
PacketBackend::PortBufferBytes(uint32_t link) const
{
    const double scale = m_topology->Links()[link].bitsPerSec / kRefRate;
    return std::max(m_bufferBytes > 0 ? double(m_bufferBytes) : kDefaultBufferAt100G * scale,
                    4.0 * m_mtu);
}

void
PacketBackend::AddPfcPort(uint32_t link, Ptr<NetDevice> dev)
{
    const TopoLink& L = m_topology->Links()[link];
    Ptr<PfcController>& ctl = m_pfcCtl[L.from];
    if (!ctl)
    {
        ctl = CreateObject<PfcController>();
        // Switches pause their upstream; NICs drain into host memory and only obey.
        const bool sw = m_topology->Vertices()[L.from].type == TopoVertexType::Switch;
        ctl->SetAttribute("Generate", BooleanValue(sw));
    }
    Ptr<EcnMarkingQueueDisc> q = DynamicCast<EcnMarkingQueueDisc>(m_linkQdisc.back());
    const uint64_t buffer = uint64_t(std::min(PortBufferBytes(link), 4e9));
    m_linkPfcPort.back() = int32_t(ctl->AddPort(dev, q, L.bitsPerSec,
                                                NanoSeconds(std::llround(L.latencySec * 1e9)),
                                                m_mtu, buffer));
}

void
PacketBackend::BuildQueueDisc(uint32_t link, Ptr<NetDevice> dev, bool switchEgress)
{
    const TopoLink& L = m_topology->Links()[link];
    const double scale = L.bitsPerSec / kRefRate;
    const double minThr = 2.0 * m_mtu;
    TrafficControlHelper tch;
    if (!switchEgress && m_pfc)
    {
        // A NIC egress PFC can pause: the same three-band queue, never marking.
        tch.SetRootQueueDisc(
            "ns3::EcnMarkingQueueDisc",
            "MaxSize",
            QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, uint32_t(m_hostBufferBytes))),
            "Kmin", DoubleValue(4e9), "Kmax", DoubleValue(4e9),
            "IntStamping", BooleanValue(false));
        m_linkQdisc.back() = tch.Install(dev).Get(0);
        return;
    }
    if (!switchEgress)
    {
        tch.SetRootQueueDisc(
            "ns3::FifoQueueDisc",
            "MaxSize",
            QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, uint32_t(m_hostBufferBytes))));
        m_linkQdisc.back() = tch.Install(dev).Get(0);
        return;
    }
    const double buffer = PortBufferBytes(link);
    const QueueSizeValue maxSize(
        QueueSize(QueueSizeUnit::BYTES, uint32_t(std::min(buffer, 4e9))));
    const bool ecn = m_transport->UsesEcn();
    const std::string& q = m_queueName;
    if (q == "fifo")
    {
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", maxSize);
    }
    else if (q == "ecn")
    {
        const double kmin =
            std::max(m_kminBytes > 0 ? m_kminBytes : kDefaultKminAt100G * scale, minThr);
        const double kmax =
            std::max(m_kmaxBytes > 0 ? m_kmaxBytes : kDefaultKmaxAt100G * scale, kmin);
        tch.SetRootQueueDisc("ns3::EcnMarkingQueueDisc",
                             "MaxSize", maxSize,
                             "Kmin", DoubleValue(kmin),
                             "Kmax", DoubleValue(kmax),
                             "Pmax", DoubleValue(m_pmax),
                             "LinkRate", DataRateValue(DataRate(uint64_t(L.bitsPerSec))));
    }
    else if (q == "red" || q == "red-ecn" || q == "step-ecn")
    {
        double minTh;
        double maxTh;
        if (q == "step-ecn")
        {
            minTh = maxTh =
                std::max(m_stepKBytes > 0 ? m_stepKBytes : kDefaultKminAt100G * scale, minThr);
        }
        else
        {
            minTh = std::max(m_kminBytes > 0 ? m_kminBytes : kDefaultKminAt100G * scale, minThr);
            maxTh = std::max(m_kmaxBytes > 0 ? m_kmaxBytes : kDefaultKmaxAt100G * scale, minTh);
        }
        // Instantaneous queue (QW = 1), as switch ECN marking works; marks instead of drops
        // above the thresholds (UseHardDrop = false), drops only when the buffer is full.
        tch.SetRootQueueDisc("ns3::RedQueueDisc",
                             "MaxSize", maxSize,
                             "MeanPktSize", UintegerValue(m_mtu),
                             "QW", DoubleValue(1.0),
                             "MinTh", DoubleValue(minTh),
                             "MaxTh", DoubleValue(maxTh),
                             "LInterm", DoubleValue(1.0 / m_pmax),
                             "Gentle", BooleanValue(q != "step-ecn"),
                             "UseEcn", BooleanValue(q != "red"),
                             "UseHardDrop", BooleanValue(q == "red"),
                             "LinkBandwidth", DataRateValue(DataRate(uint64_t(L.bitsPerSec))),
                             "LinkDelay", TimeValue(Seconds(L.latencySec)));
    }
    else
    {
        static const std::map<std::string, std::string> aqm = {
            {"codel", "ns3::CoDelQueueDisc"},
            {"fq-codel", "ns3::FqCoDelQueueDisc"},
            {"pie", "ns3::PieQueueDisc"},
            {"fq-pie", "ns3::FqPieQueueDisc"},
            {"cobalt", "ns3::CobaltQueueDisc"}};
        // These mark ECN-capable packets instead of dropping them when UseEcn is set.
        tch.SetRootQueueDisc(aqm.at(q), "MaxSize", maxSize, "UseEcn", BooleanValue(ecn));
    }
    m_linkQdisc.back() = tch.Install(dev).Get(0);
}

void
PacketBackend::BuildRoutes()
{
    const auto& verts = m_topology->Vertices();
    const auto& links = m_topology->Links();
    const uint32_t nHosts = static_cast<uint32_t>(m_hosts.size());
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        if (m_vertexNode[v])
        {
            Ptr<Ipv4> ipv4 = m_vertexNode[v]->GetObject<Ipv4>();
            Ptr<EcmpFlowRouting> r = DynamicCast<EcmpFlowRouting>(ipv4->GetRoutingProtocol());
            r->SetHostAddressing(Ipv4Address(kFirstHostAddress), nHosts);
            r->SetSalt((uint64_t(m_ecmpSeed) << 32) ^ v);
            r->SetLocalHost(m_vertexHost[v]);
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
                if (m_linkSlot[l] >= 0 && dist[u] == kNone)
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
                if (m_linkSlot[l] >= 0 && dist[w] == dist[u] - 1 &&
                    (w == d || verts[w].type == TopoVertexType::Switch))
                {
                    hops.push_back(m_linkIface[m_linkSlot[l]]);
                }
            }
            m_routing[u]->SetNextHops(m_vertexHost[d], hops);
        }
    }
}

const PacketBackend::PairInfo&
PacketBackend::Pair(uint32_t src, uint32_t dst)
{
    const uint64_t k = uint64_t(src) << 32 | dst;
    auto it = m_pairs.find(k);
    if (it != m_pairs.end())
    {
        return it->second;
    }
    PairInfo info;
    const std::vector<uint32_t> route = m_topology->Route(src, dst, 0); // validates the GPUs
    double pcie = 0;
    for (uint32_t l : route)
    {
        const TopoLink& L = m_topology->Links()[l];
        if (L.kind == TopoLinkKind::Nic || L.kind == TopoLinkKind::Fabric)
        {
            info.packet = true;
        }
        else if (L.kind == TopoLinkKind::Pcie)
        {
            pcie += L.latencySec;
        }
    }
    if (info.packet)
    {
        info.srcHost = m_vertexHost[m_topology->NicOf(src)];
        info.dstHost = m_vertexHost[m_topology->NicOf(dst)];
        info.extraLatencyNs = std::llround(pcie * 1e9);
    }
    return m_pairs.emplace(k, info).first->second;
}

void
PacketBackend::StartTransfer(uint64_t id,
                             uint32_t srcGpu,
                             uint32_t dstGpu,
                             uint64_t bytes,
                             uint64_t flowKey,
                             DeliveredCallback done)
{
    if (!m_topology)
    {
        throw std::logic_error("PacketBackend::StartTransfer: no topology set");
    }
    EnsureBuilt();
    const PairInfo& pair = Pair(srcGpu, dstGpu);
    NS_LOG_FUNCTION(this << id << srcGpu << dstGpu << bytes << flowKey);
    TransferRecord rec;
    rec.id = id;
    rec.srcGpu = srcGpu;
    rec.dstGpu = dstGpu;
    rec.bytes = bytes;
    rec.start = Simulator::Now();
    ++m_started;
    m_startedTrace(rec);
    if (!pair.packet)
    {
        // NVLink / NVSwitch (or the same GPU): flow-level, delivered through our own queue so
        // that simultaneous deliveries of both kinds still run in id order.
        ++m_nvlinkTransfers;
        m_nvlink->StartTransfer(id, srcGpu, dstGpu, bytes, flowKey,
                                [this, done](const TransferRecord& r) {
                                    Pending p;
                                    p.rec = r;
                                    p.done = done;
                                    EnqueueDelivery(NowNs(), std::move(p));
                                });
        return;
    }
    if (m_pending.count(id))
    {
        throw std::invalid_argument("PacketBackend::StartTransfer: transfer id " +
                                    std::to_string(id) + " is already in flight");
    }
    ++m_packetTransfers;
    Pending p;
    p.rec = rec;
    p.done = std::move(done);
    p.key = ConnectionKey{srcGpu, dstGpu, flowKey};
    p.extraLatencyNs = pair.extraLatencyNs;
    const uint32_t srcHost = pair.srcHost;
    const uint32_t dstHost = pair.dstHost;
    m_pending.emplace(id, std::move(p));
    StartSampling();
    m_transport->Send(ConnectionKey{srcGpu, dstGpu, flowKey}, srcHost, dstHost, id, bytes);
}

void
PacketBackend::OnMessage(uint64_t id)
{
    auto it = m_pending.find(id);
    if (it == m_pending.end())
    {
        NS_FATAL_ERROR("PacketBackend: the transport delivered unknown transfer id " << id);
    }
    Pending p = std::move(it->second);
    m_pending.erase(it);
    if (p.failed)
    {
        --m_failedInFlight;
    }
    const int64_t at = NowNs() + p.extraLatencyNs;
    EnqueueDelivery(at, std::move(p));
}

void
PacketBackend::OnConnectionFailed(const ConnectionKey& key)
{
    for (auto& [id, p] : m_pending)
    {
        if (!p.failed && p.key.srcGpu == key.srcGpu && p.key.dstGpu == key.dstGpu &&
            p.key.flowKey == key.flowKey)
        {
            p.failed = true;
            ++m_failedInFlight;
            NS_LOG_WARN("transfer " << id << " lost: its connection gave up");
        }
    }
}

void
PacketBackend::EnqueueDelivery(int64_t atNs, Pending p)
{
    auto [it, inserted] = m_deliveries.try_emplace(atNs);
    it->second.items.push_back(std::move(p));
    if (inserted)
    {
        it->second.event = Simulator::Schedule(NanoSeconds(std::max<int64_t>(0, atNs - NowNs())),
                                               &PacketBackend::OnDeliver,
                                               this,
                                               atNs);
    }
}

void
PacketBackend::OnDeliver(int64_t atNs)
{
    auto node = m_deliveries.extract(atNs);
    if (node.empty())
    {
        return;
    }
    std::vector<Pending>& items = node.mapped().items;
    std::sort(items.begin(), items.end(), [](const Pending& a, const Pending& b) {
        return a.rec.id < b.rec.id;
    });
    const Time now = Simulator::Now();
    for (Pending& p : items)
    {
        p.rec.delivered = now;
        ++m_delivered;
        if (m_recordTransfers)
        {
            m_completed.push_back(p.rec);
        }
        m_deliveredTrace(p.rec);
        if (p.done)
        {
            p.done(p.rec); // may start new transfers (re-entrant)
        }
    }
}

std::vector<TransferRecord>
PacketBackend::InFlight() const
{
    std::vector<TransferRecord> out;
    for (const auto& [id, p] : m_pending)
    {
        out.push_back(p.rec);
    }
    for (const auto& [t, d] : m_deliveries)
    {
        for (const Pending& p : d.items)
        {
            out.push_back(p.rec);
        }
    }
    if (m_nvlink)
    {
        for (const TransferRecord& r : m_nvlink->InFlight())
        {
            out.push_back(r);
        }
    }
    std::sort(out.begin(), out.end(), [](const TransferRecord& a, const TransferRecord& b) {
        return a.id < b.id;
    });
    return out;
}

uint64_t
PacketBackend::GetDeliveredCount() const
{
    return m_delivered;
}

uint64_t
PacketBackend::GetStartedCount() const
{
    return m_started;
}

uint64_t
PacketBackend::GetPacketTransferCount() const
{
    return m_packetTransfers;
}

uint64_t
PacketBackend::GetNvlinkTransferCount() const
{
    return m_nvlinkTransfers;
}

const std::vector<TransferRecord>&
PacketBackend::GetCompletedTransfers() const
{
    return m_completed;
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
    return n;
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

// ---- statistics ----

uint32_t
PacketBackend::Backlog(uint32_t k) const
{
    uint32_t b = m_linkQdisc[k]->GetNBytes();
    if (auto p2p = DynamicCast<PointToPointNetDevice>(m_linkDev[k]))
    {
        b += p2p->GetQueue()->GetNBytes();
    }
    return b;
}

std::vector<PacketBackend::LinkStats>
PacketBackend::GetLinkStats() const
{
    std::vector<LinkStats> out;
    const auto& verts = m_topology->Vertices();
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        const TopoLink& L = m_topology->Links()[m_packetLinks[k]];
        const QueueDisc::Stats& st = m_linkQdisc[k]->GetStats();
        LinkStats s;
        s.link = m_packetLinks[k];
        s.from = verts[L.from].name;
        s.to = verts[L.to].name;
        s.bitsPerSec = L.bitsPerSec;
        s.switchEgress = m_linkSwitchEgress[k];
        s.txBytes = st.nTotalSentBytes;
        s.txPackets = st.nTotalSentPackets;
        s.drops = st.nTotalDroppedPackets;
        s.marks = st.nTotalMarkedPackets;
        const auto& series = m_backlogSeries[k];
        double sum = 0;
        for (uint32_t b : series)
        {
            s.maxBacklogBytes = std::max(s.maxBacklogBytes, b);
            sum += b;
        }
        s.meanBacklogBytes = series.empty() ? 0 : sum / series.size();
        if (m_linkPfcPort[k] >= 0)
        {
            const PfcController::PortStats& ps =
                m_pfcCtl[L.from]->GetPortStats(uint32_t(m_linkPfcPort[k]));
            s.pausesSent = ps.pausesSent;
            s.pausesReceived = ps.pausesReceived;
            s.pausedUs = ps.pausedTime.GetNanoSeconds() / 1e3;
            s.losslessDrops = ps.losslessDrops;
        }
        out.push_back(s);
    }
    return out;
}

double
PacketBackend::GetLinkUtilisation(uint32_t link, Time interval) const
{
    Ptr<QueueDisc> q = GetLinkQueueDisc(link);
    if (!q || !interval.IsStrictlyPositive())
    {
        return 0;
    }
    return q->GetStats().nTotalSentBytes * 8.0 /
           (m_topology->Links()[link].bitsPerSec * interval.GetSeconds());
}

uint64_t
PacketBackend::GetTotalDrops() const
{
    uint64_t n = 0;
    for (const auto& q : m_linkQdisc)
    {
        n += q->GetStats().nTotalDroppedPackets;
    }
    return n;
}

uint64_t
PacketBackend::GetTotalMarks() const
{
    uint64_t n = 0;
    for (const auto& q : m_linkQdisc)
    {
        n += q->GetStats().nTotalMarkedPackets;
    }
    return n;
}

uint64_t
PacketBackend::GetRetransmissions() const
{
    return m_transport ? m_transport->GetRetransmissions() : 0;
}

Ptr<FlowMonitor>
PacketBackend::GetFlowMonitor() const
{
    return m_monitor;
}

bool
PacketBackend::PacketWorkPending() const
{
    return m_pending.size() > m_failedInFlight;
}

void
PacketBackend::StartSampling()
{
    if (!m_sampleInterval.IsStrictlyPositive() || m_sampleEvent.IsRunning())
    {
        return;
    }
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        m_lastSent[k] = m_linkQdisc[k]->GetStats().nTotalSentBytes;
    }
    m_lastSampleTime = Simulator::Now();
    m_sampleEvent = Simulator::Schedule(m_sampleInterval, &PacketBackend::Sample, this);
}

void
PacketBackend::Sample()
{
    const Time now = Simulator::Now();
    const double dt = (now - m_lastSampleTime).GetSeconds();
    m_sampleTimes.push_back(now);
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        const uint64_t sent = m_linkQdisc[k]->GetStats().nTotalSentBytes;
        const double rate = m_topology->Links()[m_packetLinks[k]].bitsPerSec;
        m_utilSeries[k].push_back(dt > 0 ? float((sent - m_lastSent[k]) * 8.0 / (rate * dt)) : 0);
        m_backlogSeries[k].push_back(Backlog(k));
        m_lastSent[k] = sent;
    }
    SampleQpRates();
    m_lastSampleTime = now;
    // Sample only while packet transfers are alive, so an idle backend leaves no events.
    if (PacketWorkPending())
    {
        m_sampleEvent = Simulator::Schedule(m_sampleInterval, &PacketBackend::Sample, this);
    }
}

const std::vector<Time>&
PacketBackend::GetSampleTimes() const
{
    return m_sampleTimes;
}

std::vector<double>
PacketBackend::GetUtilisationSeries(uint32_t link) const
{
    if (link >= m_linkSlot.size() || m_linkSlot[link] < 0)
    {
        return {};
    }
    const auto& s = m_utilSeries[m_linkSlot[link]];
    return std::vector<double>(s.begin(), s.end());
}

std::vector<uint32_t>
PacketBackend::GetBacklogSeries(uint32_t link) const
{
    if (link >= m_linkSlot.size() || m_linkSlot[link] < 0)
    {
        return {};
    }
    return m_backlogSeries[m_linkSlot[link]];
}

double
PacketBackend::GetBacklogQuantile(uint32_t link, double q) const
{
    std::vector<uint32_t> s = GetBacklogSeries(link);
    if (s.empty())
    {
        return 0;
    }
    std::sort(s.begin(), s.end());
    const double pos = std::clamp(q, 0.0, 1.0) * (s.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (pos - lo) * (double(s[hi]) - s[lo]);
}

uint32_t
PacketBackend::GetHottestQueueLink() const
{
    uint32_t best = kNone;
    double bestMean = -1;
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        if (!m_linkSwitchEgress[k] || m_backlogSeries[k].empty())
        {
            continue;
        }
        double sum = 0;
        for (uint32_t b : m_backlogSeries[k])
        {
            sum += b;
        }
        const double mean = sum / m_backlogSeries[k].size();
        if (mean > bestMean)
        {
            bestMean = mean;
            best = m_packetLinks[k];
        }
    }
    return best;
}

std::string
PacketBackend::ToJson() const
{
    gpusim::JsonWriter j;
    j.BeginObject();
    j.Key("backend").String("packet");
    j.Key("transport").String(m_transport ? m_transport->GetName() : "");
    j.Key("queue_disc").String(m_queueName).Key("mtu").Uint(m_mtu);
    j.Key("transfers").BeginObject();
    j.Key("started").Uint(m_started).Key("delivered").Uint(m_delivered);
    j.Key("packet").Uint(m_packetTransfers).Key("nvlink").Uint(m_nvlinkTransfers);
    j.Key("in_flight").Uint(InFlight().size());
    j.EndObject();
    j.Key("totals").BeginObject();
    j.Key("drops").Uint(m_built ? GetTotalDrops() : 0);
    j.Key("ecn_marks").Uint(m_built ? GetTotalMarks() : 0);
    j.Key("retransmissions").Uint(GetRetransmissions());
    j.Key("connections").Uint(m_transport ? m_transport->GetNConnections() : 0);
    j.EndObject();
    WriteRdmaJson(j); // "rdma" with that transport only
    WritePfcJson(j);  // "pfc" with PFC on only
    const Time now = Simulator::Now();
    j.Key("links").BeginArray();
    for (const LinkStats& s : GetLinkStats())
    {
        j.BeginObject();
        j.Key("id").Uint(s.link).Key("from").String(s.from).Key("to").String(s.to);
        j.Key("gbps").Double(s.bitsPerSec / 1e9).Key("switch_egress").Bool(s.switchEgress);
        j.Key("tx_bytes").Uint(s.txBytes).Key("tx_packets").Uint(s.txPackets);
        j.Key("drops").Uint(s.drops).Key("ecn_marks").Uint(s.marks);
        j.Key("mean_utilisation").Double(GetLinkUtilisation(s.link, now));
        j.Key("mean_backlog_bytes").Double(s.meanBacklogBytes);
        j.Key("max_backlog_bytes").Uint(s.maxBacklogBytes);
        j.EndObject();
    }
    j.EndArray();
    j.Key("samples").BeginObject();
    j.Key("interval_us").Double(ToUs(m_sampleInterval));
    j.Key("t_us").BeginArray();
    for (Time t : m_sampleTimes)
    {
        j.Double(ToUs(t));
    }
    j.EndArray();
    j.Key("links").BeginArray();
    for (uint32_t k = 0; k < m_packetLinks.size() && !m_sampleTimes.empty(); ++k)
    {
        j.BeginObject().Key("id").Uint(m_packetLinks[k]);
        j.Key("utilisation").BeginArray();
        for (float u : m_utilSeries[k])
        {
            j.Fixed(u, 4);
        }
        j.EndArray().Key("backlog_bytes").BeginArray();
        for (uint32_t b : m_backlogSeries[k])
        {
            j.Uint(b);
        }
        j.EndArray().EndObject();
    }
    j.EndArray().EndObject();
    j.Key("completions").BeginArray();
    for (const TransferRecord& r : m_completed)
    {
        j.BeginObject();
        j.Key("id").Uint(r.id).Key("src").Uint(r.srcGpu).Key("dst").Uint(r.dstGpu);
        j.Key("bytes").Uint(r.bytes).Key("start_us").Double(ToUs(r.start));
        j.Key("delivered_us").Double(ToUs(r.delivered));
        j.EndObject();
    }
    j.EndArray();
    j.Key("flow_monitor").BeginArray();
    if (m_monitor)
    {
        m_monitor->CheckForLostPackets();
        Ptr<Ipv4FlowClassifier> cls = DynamicCast<Ipv4FlowClassifier>(m_fmHelper->GetClassifier());
        for (const auto& [fid, st] : m_monitor->GetFlowStats())
        {
            const Ipv4FlowClassifier::FiveTuple t = cls->FindFlow(fid);
            std::ostringstream src;
            std::ostringstream dst;
            src << t.sourceAddress;
            dst << t.destinationAddress;
            j.BeginObject();
            j.Key("flow").Uint(fid).Key("src").String(src.str()).Key("dst").String(dst.str());
            j.Key("sport").Uint(t.sourcePort).Key("dport").Uint(t.destinationPort);
            j.Key("tx_packets").Uint(st.txPackets).Key("rx_packets").Uint(st.rxPackets);
            j.Key("lost_packets").Uint(st.lostPackets);
            j.Key("tx_bytes").Uint(st.txBytes).Key("rx_bytes").Uint(st.rxBytes);
            j.Key("mean_delay_us")
                .Double(st.rxPackets ? ToUs(st.delaySum) / st.rxPackets : 0.0);
            j.EndObject();
        }
    }
    j.EndArray();
    j.EndObject();
    return j.Take();
}

void
PacketBackend::WriteCsv(const std::string& prefix) const
{
    const Time now = Simulator::Now();
    std::ostringstream links;
    links << "link,from,to,gbps,switch_egress,tx_bytes,tx_packets,drops,ecn_marks,"
             "mean_utilisation,mean_backlog_bytes,max_backlog_bytes\n";
    for (const LinkStats& s : GetLinkStats())
    {
        links << s.link << "," << s.from << "," << s.to << "," << s.bitsPerSec / 1e9 << ","
              << (s.switchEgress ? 1 : 0) << "," << s.txBytes << "," << s.txPackets << ","
              << s.drops << "," << s.marks << "," << GetLinkUtilisation(s.link, now) << ","
              << s.meanBacklogBytes << "," << s.maxBacklogBytes << "\n";
    }
    gpusim::WriteFileAtomically(prefix + "-links.csv", links.str());
    std::ostringstream samples;
    samples << "t_us,link,utilisation,backlog_bytes\n";
    for (size_t i = 0; i < m_sampleTimes.size(); ++i)
    {
        for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
        {
            samples << ToUs(m_sampleTimes[i]) << "," << m_packetLinks[k] << ","
                    << m_utilSeries[k][i] << "," << m_backlogSeries[k][i] << "\n";
        }
    }
    gpusim::WriteFileAtomically(prefix + "-samples.csv", samples.str());
    std::ostringstream tr;
    tr << "id,src,dst,bytes,start_us,delivered_us\n";
    for (const TransferRecord& r : m_completed)
    {
        tr << r.id << "," << r.srcGpu << "," << r.dstGpu << "," << r.bytes << ","
           << ToUs(r.start) << "," << ToUs(r.delivered) << "\n";
    }
    gpusim::WriteFileAtomically(prefix + "-transfers.csv", tr.str());
    WriteRdmaCsv(prefix);
}

} // namespace ns3
