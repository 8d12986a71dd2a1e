/*
 * Benchmark: cost of the packet backend against a bare ns-3 program moving the same bytes.
 *
 * Scenario: ring AllReduce of --bytes on --servers single-GPU servers, one switch, --gbps links.
 *  1. packet: the gpusim engine on PacketBackend (TCP + queue discs + per-flow ECMP routing);
 *  2. bare:   plain ns-3 (PointToPointHelper, InternetStackHelper with global routing,
 *             TrafficControlHelper, BulkSend/PacketSink) over the same nodes and links, with
 *             the same TCP settings, sending each ring edge the bytes the packet run carried;
 *  3. flow:   the gpusim engine on FlowBackend.
 * Prints simulated seconds per wall second and events per second; the figure of merit is
 * the packet/bare wall-time ratio (target <= 2).
 *
 *   gpusim-bench-packet-vs-bare --servers=8 --bytes=64M --gbps=100 --cc=dctcp --queue=red-ecn
 */
#include "ns3/applications-module.h"
#include "ns3/cluster-spec.h"
#include "ns3/command-line.h"
#include "ns3/config.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/byte-size.h"
#include "ns3/internet-module.h"
#include "ns3/job-builder.h"
#include "ns3/packet-backend.h"
#include "ns3/point-to-point-module.h"
#include "ns3/simulator.h"
#include "ns3/tcp-transport.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

using namespace ns3;

namespace
{

struct Measure
{
    double simSeconds = 0; //!< simulated time until the last byte arrived
    double wallSeconds = 0;
    uint64_t events = 0;
};

double
Wall(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The gpusim engine on a backend; fills per-(src,dst) bytes when asked.
Measure
RunEngine(Ptr<NetworkBackend> net, const gpusim::ClusterSpec& spec, uint64_t bytes,
          std::map<std::pair<uint32_t, uint32_t>, uint64_t>* edgeBytes)
{
    auto t0 = std::chrono::steady_clock::now();
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    net->SetTopology(cluster.GetTopology());
    if (auto pkt = DynamicCast<PacketBackend>(net))
    {
        pkt->Build(); // count building the network in the wall time, like the bare program
    }
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
    RunReport rep = w->Check();
    if (!rep.completed)
    {
        std::cerr << "engine run did not complete:\n" << rep.stuck;
    }
    const CollectiveRecord& c = w->GetCollectives().at(0);
    m.simSeconds = (c.End() - c.FirstJoin()).GetSeconds();
    if (edgeBytes)
    {
        for (const TransferRecord& r : DynamicCast<PacketBackend>(net)->GetCompletedTransfers())
        {
            (*edgeBytes)[{r.srcGpu, r.dstGpu}] += r.bytes;
        }
    }
    w->Dispose();
    Simulator::Destroy();
    return m;
}

/// Plain ns-3: same nodes, links, queues and TCP settings; one BulkSend per ring edge.
Measure
RunBare(const gpusim::ClusterSpec& spec, const std::string& cc, const std::string& queue,
        const std::map<std::pair<uint32_t, uint32_t>, uint64_t>& edgeBytes)
{
    auto t0 = std::chrono::steady_clock::now();
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    Ptr<ClusterTopology> topo = cluster.BuildTopology();
    const uint32_t mtu = 9000;
    Config::SetDefault("ns3::TcpL4Protocol::SocketType",
                       TypeIdValue(TcpTransport::ResolveCongestionControl(cc)));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mtu - 40));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MicroSeconds(10)));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MicroSeconds(1)));

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
    for (uint32_t l = 0; l < topo->Links().size(); ++l)
    {
        const TopoLink& L = topo->Links()[l];
        if (L.reverse < l || !node[L.from] || !node[L.to])
        {
            continue;
        }
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(L.bitsPerSec))));
        p2p.SetDeviceAttribute("Mtu", UintegerValue(mtu));
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(L.latencySec)));
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
        NetDeviceContainer d = p2p.Install(node[L.from], node[L.to]);
        const double scale = L.bitsPerSec / 100e9;
        for (int side = 0; side < 2; ++side)
        {
            const uint32_t owner = side == 0 ? L.from : L.to;
            TrafficControlHelper tch;
            if (verts[owner].type == TopoVertexType::Nic)
            {
                tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                                     QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, 64 << 20)));
            }
            else if (queue == "fifo")
            {
                tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                                     QueueSizeValue(QueueSize(QueueSizeUnit::BYTES,
                                                              uint32_t(4194304 * scale))));
            }
            else // red-ecn with the backend's defaults
            {
                const uint32_t buffer = uint32_t(4194304 * scale);
                tch.SetRootQueueDisc(
                    "ns3::RedQueueDisc",
                    "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, buffer)),
                    "MeanPktSize", UintegerValue(mtu), "QW", DoubleValue(1.0),
                    "MinTh", DoubleValue(400e3 * scale), "MaxTh", DoubleValue(1600e3 * scale),
                    "LInterm", DoubleValue(5.0), "UseEcn", BooleanValue(true),
                    "UseHardDrop", BooleanValue(false),
                    "LinkBandwidth", DataRateValue(DataRate(uint64_t(L.bitsPerSec))),
                    "LinkDelay", TimeValue(Seconds(L.latencySec)));
            }
            tch.Install(d.Get(side));
        }
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

    uint16_t port = 9000;
    uint64_t expected = 0;
    uint64_t received = 0;
    Time lastByte;
    std::vector<Ptr<PacketSink>> sinks;
    for (const auto& [edge, bytes] : edgeBytes)
    {
        const uint32_t src = topo->NicOf(edge.first);
        const uint32_t dst = topo->NicOf(edge.second);
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sink.Install(node[dst]);
        s.Get(0)->TraceConnectWithoutContext(
            "Rx", Callback<void, Ptr<const Packet>, const Address&>(
                      [&](Ptr<const Packet> p, const Address&) {
                          received += p->GetSize();
                          lastByte = Simulator::Now();
                      }));
        BulkSendHelper send("ns3::TcpSocketFactory", InetSocketAddress(nicAddr[dst], port));
        send.SetAttribute("MaxBytes", UintegerValue(bytes));
        send.SetAttribute("SendSize", UintegerValue(1 << 16));
        send.Install(node[src]);
        expected += bytes;
        ++port;
    }
    Simulator::Run();
    Measure m;
    m.wallSeconds = Wall(t0);
    m.events = Simulator::GetEventCount();
    m.simSeconds = lastByte.GetSeconds();
    if (received != expected)
    {
        std::cerr << "bare run delivered " << received << " of " << expected << " bytes\n";
    }
    Simulator::Destroy();
    return m;
}

void
Print(const char* name, const Measure& m)
{
    std::printf("%-8s %12.6f %10.3f %14.4f %12llu %14.0f\n", name, m.simSeconds, m.wallSeconds,
                m.simSeconds / m.wallSeconds, (unsigned long long)m.events,
                m.events / m.wallSeconds);
}

} // namespace

int
main(int argc, char** argv)
{
    uint32_t servers = 8;
    std::string bytes = "64M";
    double gbps = 100;
    std::string cc = "dctcp";
    std::string queue = "red-ecn";
    CommandLine cmd(__FILE__);
    cmd.AddValue("servers", "single-GPU servers on one switch", servers);
    cmd.AddValue("bytes", "AllReduce size (K/M/G suffixes)", bytes);
    cmd.AddValue("gbps", "link rate (Gbit/s)", gbps);
    cmd.AddValue("cc", "TCP congestion control", cc);
    cmd.AddValue("queue", "switch queue disc: red-ecn or fifo", queue);
    cmd.Parse(argc, argv);

    gpusim::ClusterSpec spec;
    spec.servers = servers;
    spec.gpusPerServer = 1;
    spec.nicsPerServer = 1;
    spec.nicGbps = gbps;
    spec.fabric = "single-switch";
    const uint64_t size = gpusim::ParseByteSize(bytes);

    Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
    tcp->SetCongestionControl(cc);
    Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
    pkt->SetTransport(tcp);
    pkt->SetAttribute("QueueDisc", StringValue(queue));
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> edges;
    const Measure packet = RunEngine(pkt, spec, size, &edges);
    const Measure bare = RunBare(spec, cc, queue, edges);
    const Measure flow = RunEngine(CreateObject<FlowBackend>(), spec, size, nullptr);

    uint64_t total = 0;
    for (const auto& [e, b] : edges)
    {
        total += b;
    }
    std::printf("# ring AllReduce %llu B on %u x 1 GPU, single switch, %.0f Gbit/s, %s + %s; "
                "%llu B over %zu ring edges\n",
                (unsigned long long)size, servers, gbps, cc.c_str(), queue.c_str(),
                (unsigned long long)total, edges.size());
    std::printf("%-8s %12s %10s %14s %12s %14s\n", "variant", "sim_s", "wall_s", "sim_s/wall_s",
                "events", "events/s");
    Print("packet", packet);
    Print("bare", bare);
    Print("flow", flow);
    std::printf("# packet/bare wall-time ratio: %.2f (target <= 2)\n",
                packet.wallSeconds / bare.wallSeconds);
    std::printf("# packet/bare events ratio:    %.2f\n", double(packet.events) / bare.events);
    std::printf("# packet/flow wall-time ratio: %.0f\n", packet.wallSeconds / flow.wallSeconds);
    return 0;
}
