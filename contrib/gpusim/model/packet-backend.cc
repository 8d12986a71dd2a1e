/*
 * PacketBackend (packet-backend.h): attributes, building the packet network (Build(); the
 * links, routes and queues it sets up are in packet-backend-network.cc and
 * packet-backend-queues.cc) and the transfers through it. Statistics and reports:
 * packet-backend-statistics.cc and packet-backend-observability.cc (RDMA, PFC).
 */
#include "ns3/packet-backend.h"

#include "packet-backend-internal.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/ecmp-flow-routing.h"
#include "ns3/flow-monitor-helper.h"
#include "ns3/flow-monitor.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4.h"
#include "ns3/log.h"
#include "ns3/pfc-controller.h"
#include "ns3/pointer.h"
#include "ns3/queue-disc.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("PacketBackend");
NS_OBJECT_ENSURE_REGISTERED(PacketBackend);

using namespace packet_internal;

namespace
{

int64_t
NowNs()
{
    return Simulator::Now().GetNanoSeconds();
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
                          "Salt of the per-flow ECMP hash and seed of the per-node generators "
                          "of random spraying and flowlets",
                          UintegerValue(0),
                          MakeUintegerAccessor(&PacketBackend::m_ecmpSeed),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("Routing",
                          "Load balancing over equal-cost next hops at every node: ecmp, "
                          "dmodk, spray, spray-rr, flowlet, adaptive (EcmpFlowRouting::Mode); "
                          "empty: the topology's routing (ClusterTopology::GetRouting)",
                          StringValue(""),
                          MakeStringAccessor(&PacketBackend::m_routingName),
                          MakeStringChecker())
            .AddAttribute("FlowletGap",
                          "Flowlet routing: inactivity gap that ends a flowlet (CONGA uses "
                          "500 us at 10 Gbit/s; scaled to microsecond RTTs at 100+ Gbit/s)",
                          TimeValue(MicroSeconds(50)),
                          MakeTimeAccessor(&PacketBackend::m_flowletGap),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("FlowletPick",
                          "Flowlet routing: next hop of a new flowlet, random (LetFlow) or "
                          "least-loaded",
                          StringValue("random"),
                          MakeStringAccessor(&PacketBackend::m_flowletPick),
                          MakeStringChecker())
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
    m_toFile.clear();
    m_arrivals.clear();
    m_spareArrivals.clear();
    m_noticeNodes.clear();
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

std::string
PacketBackend::GetRoutingMode() const
{
    if (!m_routingName.empty())
    {
        return m_routingName;
    }
    return m_topology ? m_topology->GetRouting() : "ecmp";
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
    EcmpFlowRouting::ParseMode(GetRoutingMode()); // throws for an unknown name
    if (m_flowletPick != "random" && m_flowletPick != "least-loaded")
    {
        throw std::invalid_argument("PacketBackend: unknown FlowletPick '" + m_flowletPick +
                                    "' (random, least-loaded)");
    }
    if (m_mtu < 576 || m_mtu > 65535)
    {
        throw std::invalid_argument("PacketBackend: MTU " + std::to_string(m_mtu) +
                                    " outside 576..65535");
    }
    const auto& verts = m_topology->Vertices();
    BuildPartition(); // which MPI process owns each node (one process: all of them)

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
        Ptr<Node> n = CreateObject<Node>(NodeSystemId(v));
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

    BuildNoticeNodes(); // distributed runs only

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
    if (!m_ownerTagging && GetNOwners() > 1)
    {
        StartOwnerTagging();
    }
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
    if (pair.packet && AnyRouteDown())
    {
        std::vector<uint32_t> route;
        try
        {
            m_topology->RouteAvoiding(srcGpu, dstGpu, 0, RouteDown(), route);
        }
        catch (const std::runtime_error& e)
        {
            // Started all the same: the transport retries into the void until a link comes
            // back or the transport timeout fails it.
            NoPathLeft(rec, std::string(e.what()) + "; links down: " + DownLinksText());
        }
    }
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
    if (m_distributed && !IsLocalVertex(m_topology->NicOf(srcGpu)))
    {
        // Another process sends it; keep the transport's bookkeeping (ids) the same.
        m_transport->Expect(ConnectionKey{srcGpu, dstGpu, flowKey}, srcHost, dstHost, id, bytes);
        return;
    }
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
    if (m_distributed)
    {
        SendDeliveryNotices(id, at, p.extraLatencyNs);
    }
    if (p.extraLatencyNs < 2)
    {
        EnqueueDelivery(at, std::move(p));
        return;
    }
    // The delivery event of an instant is filed one nanosecond before it, here as in the
    // processes a delivery notice reaches then (SendDeliveryNotices): events of the model at
    // that instant scheduled earlier run before it in every process, those scheduled later
    // after it, so each process starts the same transfers with the same ids.
    auto [slot, first] = m_toFile.try_emplace(at);
    slot->second.push_back(std::move(p));
    if (first)
    {
        Simulator::Schedule(NanoSeconds(at - 1 - NowNs()), &PacketBackend::FileDeliveries, this,
                            at);
    }
}

void
PacketBackend::FileDeliveries(int64_t atNs)
{
    auto node = m_toFile.extract(atNs);
    for (Pending& p : node.mapped())
    {
        EnqueueDelivery(atNs, std::move(p));
    }
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

} // namespace ns3
