// PacketBackend: agreement with the flow backend on an idle fabric, congestion, every TCP
// congestion control, ECN, determinism, per-flow ECMP, framing, stuck runs, CLI and outputs.
#include "ns3/cluster-spec.h"
#include "ns3/double.h"
#include "ns3/ecmp-flow-routing.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/gpusim-commands.h"
#include "ns3/ipv4-header.h"
#include "ns3/job-builder.h"
#include "ns3/packet-backend.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"
#include "ns3/uinteger.h"
#include "test-temp-dir.h"

#include <gtest/gtest.h>
#include <map>
#include <set>
#include <simdjson.h>
#include <sstream>

using namespace ns3;
using gpusim::CollKind;

namespace
{

gpusim::ClusterSpec
Spec(uint32_t servers, double gbps, const std::string& fabric = "single-switch",
     uint32_t gpusPerServer = 1)
{
    gpusim::ClusterSpec s;
    s.servers = servers;
    s.gpusPerServer = gpusPerServer;
    s.nicsPerServer = gpusPerServer;
    s.nicGbps = gbps;
    s.fabric = fabric;
    s.linkLatencyUs = 1.0;
    return s;
}

Ptr<ClusterTopology>
Topology(const gpusim::ClusterSpec& spec)
{
    GpuClusterHelper h;
    h.SetSpec(spec);
    return h.BuildTopology();
}

Ptr<PacketBackend>
MakePacket(Ptr<ClusterTopology> topo, const std::string& cc, const std::string& queue,
           Time sample = Time(0))
{
    Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
    tcp->SetCongestionControl(cc);
    Ptr<PacketBackend> b = CreateObject<PacketBackend>();
    b->SetTransport(tcp);
    b->SetAttribute("QueueDisc", StringValue(queue));
    b->SetAttribute("SampleInterval", TimeValue(sample));
    b->SetTopology(topo);
    return b;
}

/// One collective on every GPU through the engine; returns its duration in us.
double
CollectiveUs(Ptr<NetworkBackend> net, const gpusim::ClusterSpec& spec, CollKind kind,
             uint64_t bytes, RunReport* report = nullptr)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    net->SetTopology(cluster.GetTopology());
    JobBuilder job(gpus.GetN());
    job.AllRanks().CommInit("c").Collective(1, kind, "c", bytes, gpusim::DataType::F32, 0);
    job.SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue("ring"));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    Simulator::Run();
    RunReport rep = w->Check();
    if (report)
    {
        *report = rep;
    }
    if (!rep.completed || w->GetCollectives().empty())
    {
        return -1;
    }
    const CollectiveRecord& c = w->GetCollectives().at(0);
    return (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3;
}

struct Delivery
{
    uint64_t id;
    double us;
};

/// GPUs 1..n-1 each send `bytes` to GPU 0 at t = 0; returns deliveries in callback order.
std::vector<Delivery>
Incast(Ptr<NetworkBackend> net, uint32_t senders, uint64_t bytes)
{
    std::vector<Delivery> out;
    for (uint32_t s = 1; s <= senders; ++s)
    {
        net->StartTransfer(s, s, 0, bytes, 0, [&out](const TransferRecord& r) {
            out.push_back({r.id, r.delivered.GetNanoSeconds() / 1e3});
        });
    }
    Simulator::Run();
    return out;
}

class PacketBackendTest : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(PacketBackendTest, IdleFabricAllReduceMatchesFlowBackendWithin5Percent)
{
    // 64 MiB ring AllReduce, 8 servers x 1 GPU, 100 Gbit/s NICs on one switch.
    const auto spec = Spec(8, 100);
    const uint64_t bytes = 64ull << 20;
    const double flowUs = CollectiveUs(CreateObject<FlowBackend>(), spec, CollKind::AllReduce,
                                       bytes);
    Simulator::Destroy();
    Ptr<PacketBackend> pkt = MakePacket(Topology(spec), "dctcp", "red-ecn");
    RunReport rep;
    const double pktUs = CollectiveUs(pkt, spec, CollKind::AllReduce, bytes, &rep);
    ASSERT_GT(pktUs, 0) << rep.stuck;
    // busbw is proportional to 1 / time for a fixed size.
    const double ratio = flowUs / pktUs;
    EXPECT_GT(ratio, 0.95) << "flow " << flowUs << " us, packet " << pktUs << " us";
    EXPECT_LE(ratio, 1.001) << "packets cannot beat the fluid model here";
    EXPECT_EQ(pkt->GetTotalDrops(), 0u);
    EXPECT_EQ(pkt->GetRetransmissions(), 0u);
    EXPECT_GT(pkt->GetPacketTransferCount(), 0u);
}

TEST_F(PacketBackendTest, IntraServerTransfersStayFlowLevel)
{
    // One 8-GPU server: every transfer is NVLink, so the packet backend equals the flow one.
    const auto spec = Spec(1, 100, "single-switch", 8);
    const double flowUs = CollectiveUs(CreateObject<FlowBackend>(), spec, CollKind::AllReduce,
                                       16 << 20);
    Simulator::Destroy();
    Ptr<PacketBackend> pkt = MakePacket(Topology(spec), "dctcp", "red-ecn");
    const double pktUs = CollectiveUs(pkt, spec, CollKind::AllReduce, 16 << 20);
    EXPECT_DOUBLE_EQ(pktUs, flowUs);
    EXPECT_EQ(pkt->GetPacketTransferCount(), 0u);
    EXPECT_GT(pkt->GetNvlinkTransferCount(), 0u);
}

TEST_F(PacketBackendTest, IncastDiffersFromTheFluidModel)
{
    // 7 -> 1 incast of 2 MiB each at 100 Gbit/s. The fluid model shares the receiver's link
    // exactly: all seven finish together at 7 x 2 MiB / 12.5 GB/s + latency. TCP does not:
    // completions spread out (unequal windows, losses), and the last one is later.
    const auto spec = Spec(8, 100);
    const uint64_t bytes = 2 << 20;
    Ptr<FlowBackend> flow = CreateObject<FlowBackend>();
    flow->SetTopology(Topology(spec));
    auto f = Incast(flow, 7, bytes);
    Simulator::Destroy();
    Ptr<PacketBackend> pkt = MakePacket(Topology(spec), "cubic", "fifo");
    pkt->SetAttribute("BufferBytes", UintegerValue(256 << 10));
    auto p = Incast(pkt, 7, bytes);
    ASSERT_EQ(f.size(), 7u);
    ASSERT_EQ(p.size(), 7u);
    auto span = [](const std::vector<Delivery>& d) {
        double lo = 1e300, hi = 0;
        for (const auto& x : d)
        {
            lo = std::min(lo, x.us);
            hi = std::max(hi, x.us);
        }
        return std::make_pair(lo, hi);
    };
    const auto [flo, fhi] = span(f);
    const auto [plo, phi] = span(p);
    const double ideal = 7.0 * bytes / 12.5e9 * 1e6;
    EXPECT_NEAR(fhi - flo, 0.0, 0.01);
    EXPECT_NEAR(fhi, ideal + 4.0, 1.0); // 4 hops of 1 us
    EXPECT_GT(phi, fhi);                // headers, slow start, losses
    EXPECT_GT(phi - plo, 0.1 * ideal);  // unfair: some senders finish far earlier
    EXPECT_GT(pkt->GetTotalDrops(), 0u);
    EXPECT_GT(pkt->GetRetransmissions(), 0u);
}

TEST_F(PacketBackendTest, EveryCongestionControlCompletes)
{
    const auto names = TcpTransport::AvailableCongestionControls();
    ASSERT_GE(names.size(), 4u);
    for (const char* must : {"NewReno", "Cubic", "Dctcp", "Bbr"})
    {
        EXPECT_NE(std::find(names.begin(), names.end(), must), names.end()) << must;
    }
    for (const std::string& cc : names)
    {
        for (const std::string queue : {"red-ecn", "fifo"})
        {
            Ptr<PacketBackend> pkt = MakePacket(Topology(Spec(4, 10)), cc, queue);
            // A 3 -> 1 incast plus a transfer the other way: congestion and reverse traffic.
            std::vector<uint64_t> ids;
            auto rec = [&ids](const TransferRecord& r) { ids.push_back(r.id); };
            for (uint32_t s = 1; s <= 3; ++s)
            {
                pkt->StartTransfer(s, s, 0, 256 << 10, 0, rec);
            }
            pkt->StartTransfer(9, 0, 3, 300000, 1, rec);
            Simulator::Run();
            EXPECT_EQ(ids.size(), 4u) << cc << " " << queue;
            EXPECT_TRUE(pkt->InFlight().empty()) << cc << " " << queue;
            Simulator::Destroy();
        }
    }
}

TEST_F(PacketBackendTest, DctcpWithRedEcnMarksAndQueuesLessThanCubicWithFifo)
{
    const auto spec = Spec(8, 100);
    auto run = [&](const std::string& cc, const std::string& queue, uint64_t* marks) {
        Ptr<PacketBackend> pkt = MakePacket(Topology(spec), cc, queue, MicroSeconds(5));
        auto d = Incast(pkt, 7, 4 << 20);
        EXPECT_EQ(d.size(), 7u) << cc;
        *marks = pkt->GetTotalMarks();
        const uint32_t hot = pkt->GetHottestQueueLink();
        EXPECT_NE(hot, UINT32_MAX);
        const double mean = pkt->GetBacklogQuantile(hot, 0.5);
        Simulator::Destroy();
        return mean;
    };
    uint64_t dctcpMarks = 0;
    uint64_t cubicMarks = 0;
    const double dctcpQ = run("dctcp", "red-ecn", &dctcpMarks);
    const double cubicQ = run("cubic", "fifo", &cubicMarks);
    EXPECT_GT(dctcpMarks, 0u);
    EXPECT_EQ(cubicMarks, 0u);
    EXPECT_LT(dctcpQ * 2, cubicQ) << "median backlog: dctcp " << dctcpQ << " B, cubic "
                                  << cubicQ << " B";
}

TEST_F(PacketBackendTest, ClassicEcnGetsCubicMarkedInsteadOfDropped)
{
    Ptr<PacketBackend> pkt = MakePacket(Topology(Spec(8, 100)), "cubic", "step-ecn");
    pkt->GetTransport()->SetAttribute("ClassicEcn", BooleanValue(true));
    EXPECT_TRUE(pkt->GetTransport()->UsesEcn());
    auto d = Incast(pkt, 7, 2 << 20);
    EXPECT_EQ(d.size(), 7u);
    EXPECT_GT(pkt->GetTotalMarks(), 0u);
}

TEST_F(PacketBackendTest, SameSeedGivesIdenticalResults)
{
    auto run = [] {
        Ptr<PacketBackend> pkt = MakePacket(Topology(Spec(8, 100)), "dctcp", "red-ecn");
        auto d = Incast(pkt, 7, 1 << 20);
        std::ostringstream os;
        for (const auto& x : d)
        {
            os << x.id << "@" << x.us << " ";
        }
        os << "marks " << pkt->GetTotalMarks() << " retx " << pkt->GetRetransmissions();
        Simulator::Destroy();
        return os.str();
    };
    const std::string a = run();
    const std::string b = run();
    EXPECT_EQ(a, b);
    EXPECT_NE(a.find("marks"), std::string::npos);
}

TEST_F(PacketBackendTest, PerFlowEcmpKeepsEachConnectionOnOnePath)
{
    // 8 servers x 1 GPU, 4 per leaf, 4 spines: leaves have 4 equal-cost uplinks.
    auto spec = Spec(8, 100, "leaf-spine");
    spec.nicsPerLeaf = 4;
    Ptr<ClusterTopology> topo = Topology(spec);
    Ptr<PacketBackend> pkt = MakePacket(topo, "dctcp", "red-ecn");
    pkt->Build();
    // Record every routing decision of the leaf switches.
    std::map<std::string, std::set<uint32_t>> choices; // leaf + 5-tuple -> interfaces
    std::set<uint32_t> uplinksUsed;
    for (uint32_t v = 0; v < topo->Vertices().size(); ++v)
    {
        const TopoVertex& vx = topo->Vertices()[v];
        if (vx.type != TopoVertexType::Switch || vx.tier != 1)
        {
            continue;
        }
        pkt->GetRouting(v)->TraceConnectWithoutContext(
            "PathChoice",
            Callback<void, uint32_t, const Ipv4Header&, uint16_t, uint16_t>(
                [&, v](uint32_t iface, const Ipv4Header& h, uint16_t sp, uint16_t dp) {
                    std::ostringstream k;
                    k << v << " " << h.GetSource() << ":" << sp << ">" << h.GetDestination()
                      << ":" << dp;
                    choices[k.str()].insert(iface);
                    if (h.GetProtocol() == 6)
                    {
                        uplinksUsed.insert(v * 100 + iface);
                    }
                }));
    }
    uint32_t delivered = 0;
    uint64_t id = 0;
    for (uint32_t s = 0; s < 4; ++s)
    {
        for (uint64_t key = 0; key < 4; ++key)
        {
            pkt->StartTransfer(++id, s, 4 + (s + key) % 4, 512 << 10, key,
                               [&delivered](const TransferRecord&) { ++delivered; });
        }
    }
    Simulator::Run();
    EXPECT_EQ(delivered, 16u);
    ASSERT_FALSE(choices.empty());
    for (const auto& [flow, ifaces] : choices)
    {
        EXPECT_EQ(ifaces.size(), 1u) << flow << " took several paths";
    }
    // 16 connections over 4 uplinks: the hash spreads them (not all on one spine).
    EXPECT_GT(uplinksUsed.size(), 2u);
}

TEST(EcmpFlowRoutingTable, SharedNextHopSetsKeepEveryHostsOwnList)
{
    // Tables hold each distinct set once (a 2-byte index per host): hosts that share a set
    // and hosts that do not must both read back what was set, in order.
    Ptr<EcmpFlowRouting> r = CreateObject<EcmpFlowRouting>();
    r->SetHostAddressing(Ipv4Address("10.0.0.1"), 6);
    r->SetNextHops(0, {3});
    r->SetNextHops(1, {1, 2});
    r->SetNextHops(2, {3});
    r->SetNextHops(3, {2, 1});
    r->SetNextHops(4, {1, 2});
    r->SetNextHops(2, {4}); // overwrite
    EXPECT_EQ(r->GetNextHops(0), (std::vector<uint32_t>{3}));
    EXPECT_EQ(r->GetNextHops(1), (std::vector<uint32_t>{1, 2}));
    EXPECT_EQ(r->GetNextHops(2), (std::vector<uint32_t>{4}));
    EXPECT_EQ(r->GetNextHops(3), (std::vector<uint32_t>{2, 1}));
    EXPECT_EQ(r->GetNextHops(4), (std::vector<uint32_t>{1, 2}));
    EXPECT_TRUE(r->GetNextHops(5).empty()); // never set: unreachable
    EXPECT_TRUE(r->GetNextHops(6).empty()); // not a host
    EXPECT_THROW(r->SetNextHops(6, {1}), std::out_of_range);
    const Ipv4Address src("10.0.0.2");
    EXPECT_EQ(r->PickInterface(src, Ipv4Address("10.0.0.1"), 17, 1000, 4791), 3u);
    EXPECT_EQ(r->PickInterface(src, Ipv4Address("10.0.0.6"), 17, 1000, 4791), UINT32_MAX);
    // Two candidates: the choice is one of them and the same for the same 5-tuple.
    const uint32_t a = r->PickInterface(src, Ipv4Address("10.0.0.2"), 17, 1000, 4791);
    EXPECT_TRUE(a == 1 || a == 2);
    EXPECT_EQ(r->PickInterface(src, Ipv4Address("10.0.0.2"), 17, 1000, 4791), a);
    r->Dispose();
}

TEST_F(PacketBackendTest, FramingReportsEveryMessageByIdInOrder)
{
    Ptr<PacketBackend> pkt = MakePacket(Topology(Spec(2, 100)), "cubic", "fifo");
    // Many messages of awkward sizes on one connection (same GPUs, same flow key).
    const std::vector<uint64_t> sizes = {0, 1, 15, 16, 17, 8959, 8960, 8961, 100000, 3, 1 << 20};
    std::vector<uint64_t> got;
    std::vector<Time> at;
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        pkt->StartTransfer(100 + i, 0, 1, sizes[i], 7, [&](const TransferRecord& r) {
            got.push_back(r.id);
            at.push_back(r.delivered);
            EXPECT_EQ(r.bytes, sizes[r.id - 100]);
        });
    }
    Simulator::Run();
    ASSERT_EQ(got.size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        EXPECT_EQ(got[i], 100 + i);
        if (i > 0)
        {
            EXPECT_GE(at[i], at[i - 1]);
        }
    }
    // One persistent connection carried them all.
    EXPECT_EQ(pkt->GetTransport()->GetNConnections(), 1u);
}

TEST_F(PacketBackendTest, SimultaneousDeliveriesRunInIdOrder)
{
    // Equal NVLink transfers on disjoint GPU pairs are delivered at the same instant.
    Ptr<PacketBackend> pkt = MakePacket(Topology(Spec(1, 100, "single-switch", 8)), "dctcp",
                                        "red-ecn");
    std::vector<uint64_t> order;
    std::vector<Time> at;
    auto rec = [&](const TransferRecord& r) {
        order.push_back(r.id);
        at.push_back(r.delivered);
    };
    pkt->StartTransfer(5, 0, 1, 1 << 20, 0, rec);
    pkt->StartTransfer(3, 2, 3, 1 << 20, 0, rec);
    pkt->StartTransfer(4, 4, 5, 1 << 20, 0, rec);
    Simulator::Run();
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(order, (std::vector<uint64_t>{3, 4, 5}));
    EXPECT_EQ(at[0], at[2]);
}

TEST_F(PacketBackendTest, LostTransferIsReportedAsStuckNotAHang)
{
    const auto spec = Spec(2, 100);
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<ClusterTopology> topo = cluster.GetTopology();
    Ptr<PacketBackend> pkt = MakePacket(topo, "dctcp", "red-ecn", MicroSeconds(10));
    pkt->Build();
    // Cut GPU 1's NIC uplink: nothing it sends reaches the switch.
    const uint32_t nic1 = topo->NicOf(1);
    for (uint32_t l : topo->OutLinks(nic1))
    {
        if (topo->Links()[l].kind == TopoLinkKind::Nic)
        {
            pkt->FailLink(l);
        }
    }
    JobBuilder job(2);
    job.AllRanks().CommInit("c").AllReduce(1, "c", 1 << 20).SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(pkt);
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    Simulator::Run(); // returns: TCP gives up, sampling stops
    RunReport rep = w->Check();
    EXPECT_FALSE(rep.completed);
    EXPECT_NE(rep.stuck.find("never delivered"), std::string::npos) << rep.stuck;
    bool fromCutGpu = false;
    for (const TransferRecord& t : pkt->InFlight())
    {
        fromCutGpu = fromCutGpu || t.srcGpu == 1;
    }
    EXPECT_TRUE(fromCutGpu);
    EXPECT_LT(Simulator::Now(), Seconds(10));
}

TEST_F(PacketBackendTest, BadNamesAreClearErrors)
{
    Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
    try
    {
        tcp->SetCongestionControl("warp-drive");
        FAIL() << "no exception";
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_NE(std::string(e.what()).find("warp-drive"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("Dctcp"), std::string::npos);
    }
    EXPECT_EQ(TcpTransport::ResolveCongestionControl("cubic").GetName(), "ns3::TcpCubic");
    EXPECT_EQ(TcpTransport::ResolveCongestionControl("ns3::TcpBbr").GetName(), "ns3::TcpBbr");
    EXPECT_EQ(TcpTransport::ResolveCongestionControl("NEWRENO").GetName(), "ns3::TcpNewReno");
    Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
    pkt->SetAttribute("QueueDisc", StringValue("bottomless"));
    pkt->SetTopology(Topology(Spec(2, 100)));
    EXPECT_THROW(pkt->Build(), std::invalid_argument);
}

TEST_F(PacketBackendTest, JsonAndCsvCarryLinksSamplesAndCompletions)
{
    Ptr<PacketBackend> pkt = MakePacket(Topology(Spec(4, 100)), "dctcp", "red-ecn",
                                        MicroSeconds(20));
    pkt->SetAttribute("EnableFlowMonitor", BooleanValue(true));
    // FlowMonitor checks for lost packets every second forever: bound the run.
    Simulator::Stop(MilliSeconds(20));
    auto d = Incast(pkt, 3, 1 << 20);
    ASSERT_EQ(d.size(), 3u);
    const std::string json = pkt->ToJson();
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(json);
    EXPECT_EQ(std::string_view(doc["backend"]), "packet");
    EXPECT_EQ(std::string_view(doc["transport"]), "tcp/Dctcp");
    EXPECT_EQ(uint64_t(doc["transfers"]["delivered"]), 3u);
    EXPECT_GT(simdjson::dom::array(doc["links"]).size(), 0u);
    EXPECT_GT(simdjson::dom::array(doc["samples"]["t_us"]).size(), 2u);
    EXPECT_EQ(simdjson::dom::array(doc["completions"]).size(), 3u);
    EXPECT_GE(simdjson::dom::array(doc["flow_monitor"]).size(), 3u);
    // The receiver's link carried all the payload.
    bool found = false;
    for (const auto& s : pkt->GetLinkStats())
    {
        if (s.to == "s0/nic0")
        {
            EXPECT_GE(s.txBytes, 3u << 20);
            found = true;
        }
    }
    EXPECT_TRUE(found);
    TestTempDir dir("gpusim-packet");
    const std::string prefix = dir.Path("run");
    pkt->WriteCsv(prefix);
    for (const char* f : {"-links.csv", "-samples.csv", "-transfers.csv"})
    {
        std::ifstream in(prefix + f);
        std::string header;
        EXPECT_TRUE(std::getline(in, header)) << f;
    }
}

TEST_F(PacketBackendTest, CliRunsThePacketBackend)
{
    std::ostringstream out, err;
    int code = gpusim::GpusimMain({"collective", "--backend", "packet", "--cc", "dctcp", "--queue",
                                   "red-ecn", "--mtu", "9000", "--servers", "4",
                                   "--gpus-per-server", "2", "--nic-gbps", "100", "--fabric",
                                   "single-switch", "--bytes", "4M", "--quiet"},
                                  out, err);
    EXPECT_EQ(code, 0) << err.str();
    EXPECT_NE(out.str().find("# backend: packet"), std::string::npos) << out.str();
    std::ostringstream out2, err2;
    code = gpusim::GpusimMain({"collective", "--backend", "packet", "--cc", "warp", "--bytes",
                               "1M", "--quiet"},
                              out2, err2);
    EXPECT_EQ(code, 2);
    EXPECT_NE(err2.str().find("Cubic"), std::string::npos) << err2.str();
    std::ostringstream out3, err3;
    code = gpusim::GpusimMain({"collective", "--cc", "cubic", "--bytes", "1M", "--quiet"}, out3,
                              err3);
    EXPECT_EQ(code, 1) << "--cc without --backend packet is a usage error";
}
