// Routing beyond per-flow ECMP: per-packet spraying (random, round-robin), flowlet switching and
// congestion-aware adaptive routing in the packet backend (EcmpFlowRouting modes), the RDMA
// receiver's reorder-tolerant mode, the flow backend's split transfers, and their selection
// from cluster specs, YAML and the CLI.
#include "ns3/cli-options.h"
#include "ns3/cluster-spec.h"
#include "ns3/ecmp-flow-routing.h"
#include "ns3/enum.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/ipv4-header.h"
#include "ns3/packet-backend.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <set>

using namespace ns3;

namespace
{

constexpr double kGbps = 100;
constexpr uint64_t kBytes = 2 << 20; // per flow

/// 4 servers x 1 GPU at 100 Gbit/s, 2 per leaf, 2 leaves, 2 spines (full bisection).
gpusim::ClusterSpec
LeafSpineSpec(const std::string& routing = "ecmp")
{
    gpusim::ClusterSpec s;
    s.servers = 4;
    s.gpusPerServer = 1;
    s.nicsPerServer = 1;
    s.nicGbps = kGbps;
    s.fabric = "leaf-spine";
    s.nicsPerLeaf = 2;
    s.linkLatencyUs = 1.0;
    s.routing = routing;
    s.mergeAdaptiveSpines = false;
    return s;
}

Ptr<ClusterTopology>
Topology(const gpusim::ClusterSpec& spec)
{
    GpuClusterHelper h;
    h.SetSpec(spec);
    return h.BuildTopology();
}

/// The fabric uplinks (leaf -> spine) of the leaf GPU `gpu` hangs off, in link id order.
std::vector<uint32_t>
Uplinks(Ptr<ClusterTopology> topo, uint32_t gpu)
{
    const uint32_t nic = topo->NicOf(gpu);
    uint32_t leaf = UINT32_MAX;
    for (uint32_t l : topo->OutLinks(nic))
    {
        if (topo->Vertices()[topo->Links()[l].to].type == TopoVertexType::Switch)
        {
            leaf = topo->Links()[l].to;
        }
    }
    std::vector<uint32_t> up;
    for (uint32_t l : topo->OutLinks(leaf))
    {
        if (topo->Links()[l].kind == TopoLinkKind::Fabric)
        {
            up.push_back(l);
        }
    }
    return up;
}

uint32_t
LeafOf(Ptr<ClusterTopology> topo, uint32_t gpu)
{
    return topo->Links()[Uplinks(topo, gpu).at(0)].from;
}

Ptr<PacketBackend>
MakeRdma(Ptr<ClusterTopology> topo, const std::string& routing, const std::string& reorder,
         uint32_t seed)
{
    Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
    rdma->SetCongestionControl("none");
    rdma->SetAttribute("ReorderMode", EnumValue(reorder == "tolerant" ? RdmaTransport::TOLERANT
                                                                      : RdmaTransport::GO_BACK_N));
    Ptr<PacketBackend> b = CreateObject<PacketBackend>();
    b->SetTransport(rdma);
    b->SetAttribute("QueueDisc", StringValue("ecn"));
    b->SetAttribute("Routing", StringValue(routing));
    b->SetAttribute("EcmpSeed", UintegerValue(seed));
    b->SetTopology(topo);
    return b;
}

/// One transfer of a run: GPU src -> dst, started at `at`.
struct Flow
{
    uint32_t src;
    uint32_t dst;
    uint64_t bytes;
    double atUs = 0;
};

struct Result
{
    std::vector<double> durationUs;  //!< per flow: delivered - started
    double lastUs = 0;               //!< last delivery
    std::vector<uint64_t> uplinkTx;  //!< bytes sent on the source leaf's uplinks
    RdmaTransport::Counters counters;
    uint64_t drops = 0;
};

/// Runs `flows` on a packet backend; uplinks are those of flow 0's source leaf.
Result
RunFlows(Ptr<PacketBackend> pkt, const std::vector<Flow>& flows)
{
    pkt->Build();
    Result r;
    r.durationUs.assign(flows.size(), -1);
    for (size_t i = 0; i < flows.size(); ++i)
    {
        const Flow f = flows[i];
        Simulator::Schedule(NanoSeconds(int64_t(f.atUs * 1e3)), [pkt, f, i, &r]() {
            pkt->StartTransfer(i + 1, f.src, f.dst, f.bytes, 0, [i, &r](const TransferRecord& t) {
                r.durationUs[i] = (t.delivered - t.start).GetNanoSeconds() / 1e3;
                r.lastUs = std::max(r.lastUs, t.delivered.GetNanoSeconds() / 1e3);
            });
        });
    }
    Simulator::Run();
    Ptr<ClusterTopology> topo = pkt->GetTopology();
    const std::vector<uint32_t> up = Uplinks(topo, flows.at(0).src);
    const auto stats = pkt->GetLinkStats();
    for (uint32_t l : up)
    {
        for (const auto& s : stats)
        {
            if (s.link == l)
            {
                r.uplinkTx.push_back(s.txBytes);
            }
        }
    }
    r.counters = DynamicCast<RdmaTransport>(pkt->GetTransport())->GetCounters();
    r.drops = pkt->GetTotalDrops();
    return r;
}

/// The wire time of `bytes` of RDMA payload at 100 Gbit/s (headers included), in us.
double
WireUs(uint64_t bytes)
{
    const double payload = 9000 - RdmaTransport::kOverheadBytes;
    const double packets = std::ceil(bytes / payload);
    return (bytes + packets * (RdmaTransport::kOverheadBytes + 2)) * 8 / (kGbps * 1e3);
}

/// An ECMP seed under which per-flow ECMP puts GPU 0 -> 2 and GPU 1 -> 3 (QPs of the RDMA
/// transport, one UDP source port each) on the same uplink of leaf 0: found by running the
/// seeds in order (0, 1, 3, 4, 5 spread the two flows; 2 is the first that collides); the
/// tests check that it still collides.
constexpr uint32_t kCollidingSeed = 2;

class PacketRoutingTest : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(PacketRoutingTest, SprayingReachesFullBisectionWhereCollidingEcmpTakesTwice)
{
    const std::vector<Flow> flows = {{0, 2, kBytes}, {1, 3, kBytes}};
    Ptr<ClusterTopology> topo = Topology(LeafSpineSpec());
    ASSERT_EQ(Uplinks(topo, 0).size(), 2u);
    const Result ecmp = RunFlows(MakeRdma(topo, "ecmp", "tolerant", kCollidingSeed), flows);
    Simulator::Destroy();
    // The two flows collide under per-flow ECMP: one uplink carried everything.
    ASSERT_EQ(ecmp.uplinkTx.size(), 2u);
    ASSERT_EQ(std::min(ecmp.uplinkTx[0], ecmp.uplinkTx[1]), 0u) << "ECMP did not collide";
    const double ideal = WireUs(kBytes);
    std::map<std::string, Result> sprayed;
    for (const std::string mode : {"spray", "spray-rr", "adaptive"})
    {
        sprayed[mode] = RunFlows(MakeRdma(Topology(LeafSpineSpec()), mode, "tolerant", kCollidingSeed),
                            flows);
        Simulator::Destroy();
    }
    std::cout << "  ideal " << ideal << " us; ecmp " << ecmp.lastUs << " us";
    for (const auto& [mode, r] : sprayed)
    {
        std::cout << "; " << mode << " " << r.lastUs << " us (uplinks " << r.uplinkTx[0] << "/"
                  << r.uplinkTx[1] << " B, retx " << r.counters.retransmitted << ")";
    }
    std::cout << "\n";
    EXPECT_GT(ecmp.lastUs, 1.8 * ideal);
    for (const auto& [mode, r] : sprayed)
    {
        EXPECT_LT(r.lastUs, 1.15 * ideal) << mode;
        EXPECT_GT(std::min(r.uplinkTx[0], r.uplinkTx[1]), 0.4 * 2 * kBytes) << mode;
        EXPECT_EQ(r.counters.retransmitted, 0u) << mode;
        EXPECT_EQ(r.drops, 0u) << mode;
    }
}

TEST_F(PacketRoutingTest, AdaptiveRoutingAvoidsTheUplinkAnotherFlowCongests)
{
    // A long background flow 0 -> 2 holds one uplink of leaf 0; 50 us later flow 1 -> 3
    // arrives. ECMP (colliding seed) makes it share that uplink; adaptive routing sends its
    // packets to the idle one.
    const std::vector<Flow> flows = {{0, 2, 2 * kBytes}, {1, 3, kBytes, 50}};
    const Result ecmp =
        RunFlows(MakeRdma(Topology(LeafSpineSpec()), "ecmp", "tolerant", kCollidingSeed), flows);
    Simulator::Destroy();
    ASSERT_EQ(std::min(ecmp.uplinkTx[0], ecmp.uplinkTx[1]), 0u) << "ECMP did not collide";
    const Result adaptive =
        RunFlows(MakeRdma(Topology(LeafSpineSpec()), "adaptive", "tolerant", kCollidingSeed), flows);
    const double ideal = WireUs(kBytes);
    std::cout << "  flow 1->3: ideal " << ideal << " us, ecmp " << ecmp.durationUs[1]
              << " us, adaptive " << adaptive.durationUs[1] << " us; background: ecmp "
              << ecmp.durationUs[0] << " us, adaptive " << adaptive.durationUs[0] << " us\n";
    EXPECT_GT(ecmp.durationUs[1], 1.8 * ideal);
    EXPECT_LT(adaptive.durationUs[1], 1.1 * ideal);
    EXPECT_LT(adaptive.durationUs[0], 1.1 * WireUs(2 * kBytes));
    EXPECT_EQ(adaptive.counters.retransmitted, 0u);
}

TEST_F(PacketRoutingTest, AdaptiveRoutingFollowsQueuesWhereSprayingSplitsEvenly)
{
    // One uplink of leaf 0 runs at a quarter rate and two flows leave the leaf (200 Gbit/s of
    // demand on 125 Gbit/s of uplinks). Spraying gives the slow link half the packets, so it
    // becomes the bottleneck (2 MiB at 25 Gbit/s: 4x the line-rate time). Adaptive routing
    // follows the queues: the slow link gets less, but not its rate share (a fifth): equal
    // queued bytes mean a 4x longer drain on it, so with both links saturated it receives
    // 25 + (200 - 125) / 2 = 62.5 of 200 Gbit/s (31 %) and its queue is the tail; the
    // aggregate's 1.6x line-rate time is not reached (a delay-based metric would).
    const std::vector<Flow> flows = {{0, 2, kBytes}, {1, 3, kBytes}};
    auto run = [&](const std::string& mode) {
        Ptr<ClusterTopology> topo = Topology(LeafSpineSpec());
        Ptr<PacketBackend> pkt = MakeRdma(topo, mode, "tolerant", kCollidingSeed);
        pkt->Build();
        const uint32_t slow = Uplinks(topo, 0)[1];
        pkt->GetLinkDevice(slow)->SetAttribute("DataRate", StringValue("25Gbps"));
        Result r = RunFlows(pkt, flows);
        Simulator::Destroy();
        return r;
    };
    const Result spray = run("spray-rr");
    const Result adaptive = run("adaptive");
    const double ideal = WireUs(kBytes);
    std::cout << "  line-rate time " << ideal << " us; spray-rr " << spray.lastUs
              << " us (uplinks " << spray.uplinkTx[0] << "/" << spray.uplinkTx[1]
              << " B); adaptive " << adaptive.lastUs << " us (" << adaptive.uplinkTx[0] << "/"
              << adaptive.uplinkTx[1] << " B)\n";
    EXPECT_GT(spray.lastUs, 3.5 * ideal);
    EXPECT_LT(adaptive.lastUs, 0.7 * spray.lastUs);
    const double slowShare =
        double(adaptive.uplinkTx[1]) / (adaptive.uplinkTx[0] + adaptive.uplinkTx[1]);
    EXPECT_GT(slowShare, 0.2);
    EXPECT_LT(slowShare, 0.35);
    EXPECT_EQ(adaptive.drops, 0u);
}

TEST_F(PacketRoutingTest, SprayingMakesGoBackNRetransmitWhileTheTolerantReceiverDoesNot)
{
    // Two flows sprayed at random over the two uplinks: random imbalance queues one uplink
    // behind the other and packets overtake each other.
    const std::vector<Flow> flows = {{0, 2, kBytes}, {1, 3, kBytes}};
    const Result gbn =
        RunFlows(MakeRdma(Topology(LeafSpineSpec()), "spray", "gbn", kCollidingSeed), flows);
    Simulator::Destroy();
    const Result tolerant =
        RunFlows(MakeRdma(Topology(LeafSpineSpec()), "spray", "tolerant", kCollidingSeed), flows);
    std::cout << "  gbn: " << gbn.lastUs << " us, " << gbn.counters.retransmitted
              << " retransmitted, " << gbn.counters.nackPackets << " NACKs, "
              << gbn.counters.outOfOrder << " discarded; tolerant: " << tolerant.lastUs << " us, "
              << tolerant.counters.retransmitted << " retransmitted, "
              << tolerant.counters.reordered << " held out of order\n";
    EXPECT_GT(gbn.counters.retransmitted, 0u);
    EXPECT_GT(gbn.counters.nackPackets, 0u);
    EXPECT_EQ(tolerant.counters.retransmitted, 0u);
    EXPECT_EQ(tolerant.counters.nackPackets, 0u);
    EXPECT_GT(tolerant.counters.reordered, 0u); // there was reordering to tolerate
    EXPECT_GT(gbn.lastUs, tolerant.lastUs);
}

TEST_F(PacketRoutingTest, FlowletsKeepBackToBackPacketsOnOnePathAndMoveAfterAGap)
{
    // One QP sends 4 messages of 256 KiB (back-to-back packets each) 200 us apart (> the
    // 50 us flowlet gap). Leaf 0's choices for that flow are recorded.
    auto run = [](Time gap, std::vector<std::vector<uint32_t>>& perMessage) {
        Ptr<ClusterTopology> topo = Topology(LeafSpineSpec());
        Ptr<PacketBackend> pkt = MakeRdma(topo, "flowlet", "tolerant", 0);
        pkt->SetAttribute("FlowletGap", TimeValue(gap));
        pkt->Build();
        Ptr<EcmpFlowRouting> leaf = pkt->GetRouting(LeafOf(topo, 0));
        perMessage.assign(4, {});
        uint32_t current = 0;
        const Ipv4Address dst = pkt->GetHostAddress(2);
        leaf->TraceConnectWithoutContext(
            "PathChoice",
            Callback<void, uint32_t, const Ipv4Header&, uint16_t, uint16_t>(
                [&, dst](uint32_t iface, const Ipv4Header& h, uint16_t, uint16_t) {
                    if (h.GetDestination() == dst) // the data, not the ACKs towards GPU 0
                    {
                        perMessage[current].push_back(iface);
                    }
                }));
        for (uint32_t m = 0; m < 4; ++m)
        {
            Simulator::Schedule(MicroSeconds(200 * m), [pkt, m, &current]() {
                current = m;
                pkt->StartTransfer(m + 1, 0, 2, 256 << 10, 0, [](const TransferRecord&) {});
            });
        }
        Simulator::Run();
        const uint64_t flowlets = leaf->GetFlowletCount();
        Simulator::Destroy();
        return flowlets;
    };
    std::vector<std::vector<uint32_t>> perMessage;
    const uint64_t flowlets = run(MicroSeconds(50), perMessage);
    std::set<uint32_t> used;
    for (const auto& choices : perMessage)
    {
        ASSERT_FALSE(choices.empty());
        EXPECT_EQ(std::set<uint32_t>(choices.begin(), choices.end()).size(), 1u)
            << "a back-to-back message changed path";
        used.insert(choices.front());
    }
    std::cout << "  gap 50 us: " << flowlets << " flowlets, " << used.size()
              << " uplinks used;";
    EXPECT_EQ(flowlets, 4u); // one per message: the 200 us pauses end each flowlet
    EXPECT_EQ(used.size(), 2u) << "no flowlet moved to the other uplink";
    // With a gap shorter than a packet's spacing (0.72 us at 100 Gbit/s) every packet is a
    // flowlet of its own and the flow is sprayed.
    std::vector<std::vector<uint32_t>> tiny;
    const uint64_t perPacket = run(NanoSeconds(100), tiny);
    std::cout << " gap 0.1 us: " << perPacket << " flowlets\n";
    EXPECT_GT(perPacket, 100u);
    EXPECT_EQ(std::set<uint32_t>(tiny[0].begin(), tiny[0].end()).size(), 2u);
}

TEST_F(PacketRoutingTest, SameSeedSameResultsDifferentSeedDifferentPaths)
{
    const std::vector<Flow> flows = {{0, 2, kBytes}, {1, 3, kBytes}, {2, 0, kBytes, 20}};
    auto run = [&](const std::string& mode, uint32_t seed) {
        Result r = RunFlows(MakeRdma(Topology(LeafSpineSpec()), mode, "gbn", seed), flows);
        Simulator::Destroy();
        return r;
    };
    for (const std::string mode : {"spray", "flowlet", "adaptive"})
    {
        const Result a = run(mode, 7);
        const Result b = run(mode, 7);
        EXPECT_EQ(a.durationUs, b.durationUs) << mode;
        EXPECT_EQ(a.uplinkTx, b.uplinkTx) << mode;
        EXPECT_EQ(a.counters.retransmitted, b.counters.retransmitted) << mode;
    }
    const Result s7 = run("spray", 7);
    const Result s8 = run("spray", 8);
    EXPECT_NE(s7.uplinkTx, s8.uplinkTx) << "the seed does not drive the random spraying";
}

// ---- flow backend ----

TEST(FlowBackendSpraying, CollidingTransfersFinishAtTheFullBisectionTime)
{
    Ptr<ClusterTopology> topo = Topology(LeafSpineSpec());
    // Flow keys whose ECMP routes share an uplink of leaf 0: checked on Route().
    const std::vector<uint32_t> first = topo->Route(0, 2, ClusterTopology::HashFlow(0, 0, 2));
    uint64_t key = 0;
    for (; key < 64; ++key)
    {
        const auto r = topo->Route(1, 3, ClusterTopology::HashFlow(key, 1, 3));
        if (r.at(2) == first.at(2))
        {
            break;
        }
    }
    ASSERT_LT(key, 64u);
    auto run = [&](const std::string& routing) {
        Ptr<FlowBackend> b = CreateObject<FlowBackend>();
        b->SetAttribute("Routing", StringValue(routing));
        b->SetTopology(Topology(LeafSpineSpec()));
        double last = 0;
        auto done = [&last](const TransferRecord& t) {
            last = std::max(last, t.delivered.GetNanoSeconds() / 1e3);
        };
        b->StartTransfer(1, 0, 2, kBytes, 0, done);
        b->StartTransfer(2, 1, 3, kBytes, key, done);
        Simulator::Run();
        EXPECT_EQ(b->GetDeliveredCount(), 2u);
        const uint64_t subFlows = b->GetSubFlowCount();
        Simulator::Destroy();
        return std::make_pair(last, subFlows);
    };
    const double ideal = kBytes / (kGbps * 1e9 / 8) * 1e6 + 6.0; // + 6 links of 1 us
    const auto ecmp = run("ecmp");
    const auto spray = run("spray");
    std::cout << "  ideal " << ideal << " us; ecmp " << ecmp.first << " us; spray "
              << spray.first << " us (" << spray.second << " sub-flows)\n";
    EXPECT_NEAR(ecmp.first, 2 * ideal - 6.0, 0.5);
    EXPECT_NEAR(spray.first, ideal, 0.5);
    EXPECT_EQ(spray.second, 4u);
    EXPECT_EQ(ecmp.second, 0u);
    // The topology's routing selects it too, and adaptive keeps one path per transfer.
    Ptr<FlowBackend> b = CreateObject<FlowBackend>();
    b->SetTopology(Topology(LeafSpineSpec("spray-rr")));
    EXPECT_TRUE(b->SplitsTransfers());
    b->SetTopology(Topology(LeafSpineSpec("adaptive")));
    EXPECT_FALSE(b->SplitsTransfers());
}

TEST(FlowBackendSpraying, EqualCostRoutesEnumerateEverySpine)
{
    auto spec = LeafSpineSpec();
    spec.servers = 8;
    spec.nicsPerLeaf = 4; // 2 leaves, 4 spines
    Ptr<ClusterTopology> topo = Topology(spec);
    const auto routes = topo->EqualCostRoutes(0, 5);
    ASSERT_EQ(routes.size(), 4u);
    std::set<uint32_t> spines;
    for (const auto& r : routes)
    {
        EXPECT_EQ(r.size(), 6u); // gpu-nic, nic-leaf, leaf-spine, spine-leaf, leaf-nic, nic-gpu
        EXPECT_EQ(r.front(), routes[0].front());
        EXPECT_EQ(r.back(), routes[0].back());
        spines.insert(topo->Links()[r[2]].to);
    }
    EXPECT_EQ(spines.size(), 4u);
    EXPECT_EQ(topo->EqualCostRoutes(0, 1).size(), 1u); // same leaf: one path
}

// ---- selection ----

TEST(RoutingSelection, SpecYamlAndCliCarryTheRoutingToBothBackends)
{
    const gpusim::ClusterSpec y = gpusim::ParseClusterSpecYaml(
        "servers: 4\ngpus_per_server: 1\nnics_per_server: 1\nfabric: leaf-spine\n"
        "nics_per_leaf: 2\nrouting: spray-rr\n",
        "test");
    EXPECT_EQ(y.routing, "spray-rr");
    EXPECT_EQ(Topology(y)->GetRouting(), "spray-rr");
    EXPECT_THROW(gpusim::ParseClusterSpecYaml("routing: teleport\n", "test"), std::runtime_error);

    const std::set<std::string> valued = [] {
        std::set<std::string> v = gpusim::kClusterOptions;
        v.insert("backend");
        return v;
    }();
    const gpusim::Options flowOpts({"--preset", "dgx-h100", "--servers", "64"}, valued, {});
    const gpusim::ClusterSpec flowSpec = gpusim::SpecFromOptions(flowOpts, 0);
    EXPECT_EQ(flowSpec.routing, "adaptive");
    EXPECT_TRUE(flowSpec.mergeAdaptiveSpines);
    const gpusim::Options pktOpts(
        {"--preset", "dgx-h100", "--servers", "64", "--backend", "packet"}, valued, {});
    const gpusim::ClusterSpec pktSpec = gpusim::SpecFromOptions(pktOpts, 0);
    EXPECT_FALSE(pktSpec.mergeAdaptiveSpines);
    // Flow backend: adaptive merges the spines (one spine vertex); packet: the real ones.
    auto spines = [](Ptr<ClusterTopology> t) {
        uint32_t n = 0;
        for (const auto& v : t->Vertices())
        {
            n += v.type == TopoVertexType::Switch && v.tier == 2 ? 1 : 0;
        }
        return n;
    };
    EXPECT_EQ(spines(Topology(flowSpec)), 1u);
    EXPECT_GT(spines(Topology(pktSpec)), 1u);

    const gpusim::Options sprayOpts({"--servers", "4", "--routing", "flowlet"}, valued, {});
    EXPECT_EQ(gpusim::SpecFromOptions(sprayOpts, 0).routing, "flowlet");
    const gpusim::Options bad({"--routing", "teleport"}, valued, {});
    EXPECT_THROW(gpusim::SpecFromOptions(bad, 0), std::runtime_error);

    // The packet backend takes the topology's routing unless its attribute says otherwise.
    Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
    pkt->SetTopology(Topology(LeafSpineSpec("flowlet")));
    EXPECT_EQ(pkt->GetRoutingMode(), "flowlet");
    pkt->SetAttribute("Routing", StringValue("spray"));
    pkt->Build();
    EXPECT_EQ(pkt->GetRouting(LeafOf(pkt->GetTopology(), 0))->GetMode(), EcmpFlowRouting::SPRAY);
    Ptr<PacketBackend> wrong = CreateObject<PacketBackend>();
    wrong->SetTopology(Topology(LeafSpineSpec()));
    wrong->SetAttribute("Routing", StringValue("teleport"));
    EXPECT_THROW(wrong->Build(), std::invalid_argument);
    Simulator::Destroy();
}

TEST_F(PacketRoutingTest, TcpRidesOutSprayingWithSackAndDuplicateAckThresholds)
{
    // TCP (DCTCP, red-ecn) under per-packet spraying: reordered segments raise duplicate ACKs;
    // ns-3's SACK recovery and the 3-dupack threshold absorb small reordering. Measured, not
    // tuned: the numbers are in doc/packet-backend.md.
    auto run = [](const std::string& mode, uint64_t* retx) {
        Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
        Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
        pkt->SetTransport(tcp);
        pkt->SetAttribute("Routing", StringValue(mode));
        pkt->SetAttribute("EcmpSeed", UintegerValue(kCollidingSeed));
        pkt->SetTopology(Topology(LeafSpineSpec()));
        double last = -1;
        uint32_t delivered = 0;
        auto done = [&](const TransferRecord& t) {
            ++delivered;
            last = std::max(last, t.delivered.GetNanoSeconds() / 1e3);
        };
        pkt->StartTransfer(1, 0, 2, kBytes, 0, done);
        pkt->StartTransfer(2, 1, 3, kBytes, 0, done);
        Simulator::Run();
        *retx = pkt->GetRetransmissions();
        Simulator::Destroy();
        return delivered == 2 ? last : -1;
    };
    uint64_t retxEcmp = 0;
    uint64_t retxSpray = 0;
    uint64_t retxRr = 0;
    const double ecmp = run("ecmp", &retxEcmp);
    const double spray = run("spray", &retxSpray);
    const double rr = run("spray-rr", &retxRr);
    std::cout << "  tcp: ecmp " << ecmp << " us (" << retxEcmp << " retx); spray " << spray
              << " us (" << retxSpray << " retx); spray-rr " << rr << " us (" << retxRr
              << " retx)\n";
    EXPECT_GT(spray, 0);
    EXPECT_GT(rr, 0);
    EXPECT_GT(retxSpray, 0u); // random spraying reorders enough for spurious fast retransmits
}
