/*
 * Benchmark: simulated packets per wall-clock second of the packet backend's RDMA transport
 * against its TCP transport on the same scenario, and against a hand-written bare ns-3
 * equivalent of the RDMA run.
 *
 * Scenario: ring AllReduce of --bytes on --servers single-GPU servers, one switch, --gbps.
 *  1. tcp:  PacketBackend + TcpTransport (--tcp-cc, red-ecn);
 *  2. rdma: PacketBackend + RdmaTransport (--rdma-cc, the ecn queue disc);
 *  3. bare: plain ns-3 with the same nodes, links and queues (PointToPointHelper,
 *           InternetStackHelper with global routing): per ring edge a UDP socket sends the
 *           bytes the rdma run carried on that edge as MTU packets paced at line rate, and the
 *           receiver answers every packet with a 28-byte ACK; no engine, no congestion
 *           control, no reliability: the floor of what an RDMA-like run costs in ns-3.
 * "packets" counts every frame the hosts sent (data and ACKs). Figure of merit: rdma/bare
 * wall-time ratio (target <= 2) and packets per wall second, rdma vs tcp.
 *
 *   gpusim-bench-rdma-vs-tcp --servers=8 --bytes=64M --gbps=100
 */
#include "ns3/byte-size.h"
#include "ns3/cluster-spec.h"
#include "ns3/command-line.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/internet-module.h"
#include "ns3/job-builder.h"
#include "ns3/packet-backend.h"
#include "ns3/point-to-point-module.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/tcp-transport.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <map>

using namespace ns3;

namespace
{

struct Measure
{
    double simSeconds = 0;
    double wallSeconds = 0;
    uint64_t packets = 0; //!< frames sent by the hosts
    uint64_t events = 0;
};

using EdgeBytes = std::map<std::pair<uint32_t, uint32_t>, uint64_t>;

double
Wall(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Measure
RunEngine(Ptr<PacketBackend> net, const gpusim::ClusterSpec& spec, uint64_t bytes,
          EdgeBytes* edges)
{
    auto t0 = std::chrono::steady_clock::now();
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    net->SetTopology(cluster.GetTopology());
    net->Build();
    JobBuilder job(gpus.GetN());
    job.AllRanks().CommInit("c").AllReduce(1, "c", bytes).SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue("ring"));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    Simulator::Run();
    Measure m;
    m.wallSeconds = Wall(t0);
    m.events = Simulator::GetEventCount();
    if (!w->Check().completed)
    {
        std::fprintf(stderr, "engine run did not complete\n");
    }
    const CollectiveRecord& c = w->GetCollectives().at(0);
    m.simSeconds = (c.End() - c.FirstJoin()).GetSeconds();
    for (const auto& s : net->GetLinkStats())
    {
        m.packets += s.switchEgress ? 0 : s.txPackets;
    }
    for (const TransferRecord& r : net->GetCompletedTransfers())
    {
        if (edges)
        {
            (*edges)[{r.srcGpu, r.dstGpu}] += r.bytes;
        }
    }
    w->Dispose();
    Simulator::Destroy();
    return m;
}

/// One paced UDP sender of the bare run.
struct BareFlow
{
    Ptr<Socket> socket;
    uint64_t left = 0;
    uint32_t payload = 0;
    Time gap; //!< line-rate spacing of full frames
    uint64_t* packets = nullptr;

    void Send()
    {
        const uint32_t n = uint32_t(std::min<uint64_t>(left, payload));
        socket->Send(Create<Packet>(n));
        ++*packets;
        left -= n;
        if (left > 0)
        {
            Simulator::Schedule(gap, &BareFlow::Send, this);
        }
    }
};

Measure
RunBare(const gpusim::ClusterSpec& spec, const EdgeBytes& edges)
{
    auto t0 = std::chrono::steady_clock::now();
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    Ptr<ClusterTopology> topo = cluster.BuildTopology();
    const uint32_t mtu = 9000;
    const uint32_t payload = mtu - RdmaTransport::kOverheadBytes + 28; // same frame size
    const auto& verts = topo->Vertices();
    std::vector<Ptr<Node>> node(verts.size());
    NodeContainer all;
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        if (verts[v].type == TopoVertexType::Nic || verts[v].type == TopoVertexType::Switch)
        {
            node[v] = CreateObject<Node>();
            all.Add(node[v]);
        }
    }
    InternetStackHelper stack;
    stack.SetIpv6StackInstall(false);
    stack.Install(all);
    Ipv4AddressHelper addr("10.0.0.0", "255.255.255.252");
    std::map<uint32_t, Ipv4Address> nicAddr;
    double rate = 0;
    for (uint32_t l = 0; l < topo->Links().size(); ++l)
    {
        const TopoLink& L = topo->Links()[l];
        if (L.reverse < l || !node[L.from] || !node[L.to])
        {
            continue;
        }
        rate = L.bitsPerSec;
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(L.bitsPerSec))));
        p2p.SetDeviceAttribute("Mtu", UintegerValue(mtu));
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(L.latencySec)));
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
        NetDeviceContainer d = p2p.Install(node[L.from], node[L.to]);
        TrafficControlHelper tch;
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                             QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, 64 << 20)));
        tch.Install(d);
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        addr.NewNetwork();
        if (verts[L.from].type == TopoVertexType::Nic)
        {
            nicAddr[L.from] = ifs.GetAddress(0);
        }
        if (verts[L.to].type == TopoVertexType::Nic)
        {
            nicAddr[L.to] = ifs.GetAddress(1);
        }
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    uint64_t packets = 0;
    Time lastByte;
    std::vector<std::unique_ptr<BareFlow>> flows;
    std::vector<Ptr<Socket>> sinks;
    uint16_t port = 4791;
    for (const auto& [edge, bytes] : edges)
    {
        Ptr<Node> dst = node[topo->NicOf(edge.second)];
        Ptr<Socket> sink = Socket::CreateSocket(dst, UdpSocketFactory::GetTypeId());
        sink->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
        sink->SetRecvCallback(Callback<void, Ptr<Socket>>([&](Ptr<Socket> s) {
            Address from;
            while (s->RecvFrom(from))
            {
                s->SendTo(Create<Packet>(28), 0, from); // per-packet ACK
                ++packets;
                lastByte = Simulator::Now();
            }
        }));
        sinks.push_back(sink);
        auto f = std::make_unique<BareFlow>();
        f->socket = Socket::CreateSocket(node[topo->NicOf(edge.first)],
                                         UdpSocketFactory::GetTypeId());
        f->socket->Bind();
        f->socket->Connect(InetSocketAddress(nicAddr[topo->NicOf(edge.second)], port));
        f->socket->SetRecvCallback(Callback<void, Ptr<Socket>>([](Ptr<Socket> s) {
            while (s->Recv())
            {
            }
        }));
        f->left = bytes;
        f->payload = payload;
        f->gap = PicoSeconds(int64_t((mtu + 2) * 8e12 / rate));
        f->packets = &packets;
        Simulator::ScheduleNow(&BareFlow::Send, f.get());
        flows.push_back(std::move(f));
        ++port;
    }
    Simulator::Run();
    Measure m;
    m.wallSeconds = Wall(t0);
    m.events = Simulator::GetEventCount();
    m.simSeconds = lastByte.GetSeconds();
    m.packets = packets;
    Simulator::Destroy();
    return m;
}

void
Print(const char* name, const Measure& m)
{
    std::printf("%-6s %10.6f %9.3f %12llu %14.0f %12llu %12.0f\n", name, m.simSeconds,
                m.wallSeconds, (unsigned long long)m.packets, m.packets / m.wallSeconds,
                (unsigned long long)m.events, m.events / m.wallSeconds);
}

} // namespace

int
main(int argc, char** argv)
{
    uint32_t servers = 8;
    std::string bytes = "64M";
    double gbps = 100;
    std::string tcpCc = "dctcp";
    std::string rdmaCc = "dcqcn";
    CommandLine cmd(__FILE__);
    cmd.AddValue("servers", "single-GPU servers on one switch", servers);
    cmd.AddValue("bytes", "AllReduce size (K/M/G suffixes)", bytes);
    cmd.AddValue("gbps", "link rate (Gbit/s)", gbps);
    cmd.AddValue("tcp-cc", "TCP congestion control", tcpCc);
    cmd.AddValue("rdma-cc", "RDMA congestion control", rdmaCc);
    cmd.Parse(argc, argv);
    gpusim::ClusterSpec spec;
    spec.servers = servers;
    spec.gpusPerServer = 1;
    spec.nicsPerServer = 1;
    spec.nicGbps = gbps;
    spec.fabric = "single-switch";
    const uint64_t size = gpusim::ParseByteSize(bytes);

    Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
    tcp->SetCongestionControl(tcpCc);
    Ptr<PacketBackend> t = CreateObject<PacketBackend>();
    t->SetTransport(tcp);
    const Measure mt = RunEngine(t, spec, size, nullptr);
    Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
    rdma->SetCongestionControl(rdmaCc);
    Ptr<PacketBackend> r = CreateObject<PacketBackend>();
    r->SetTransport(rdma);
    r->SetAttribute("QueueDisc", StringValue("ecn"));
    EdgeBytes edges;
    const Measure mr = RunEngine(r, spec, size, &edges);
    const Measure mb = RunBare(spec, edges);
    std::printf("# ring AllReduce %llu B on %u x 1 GPU, single switch, %.0f Gbit/s; tcp/%s, "
                "rdma/%s\n",
                (unsigned long long)size, servers, gbps, tcpCc.c_str(), rdmaCc.c_str());
    std::printf("%-6s %10s %9s %12s %14s %12s %12s\n", "run", "sim_s", "wall_s", "packets",
                "packets/wall_s", "events", "events/s");
    Print("tcp", mt);
    Print("rdma", mr);
    Print("bare", mb);
    std::printf("# rdma/tcp packets per wall second: %.2f\n",
                (mr.packets / mr.wallSeconds) / (mt.packets / mt.wallSeconds));
    std::printf("# rdma/bare wall-time ratio: %.2f (target <= 2)\n",
                mr.wallSeconds / mb.wallSeconds);
    return 0;
}
