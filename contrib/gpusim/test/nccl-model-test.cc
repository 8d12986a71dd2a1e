// The NCCL model's latency, protocol and tree terms, with the protocols' real costs on
// (Efficiency = 0). Every expected time below is derived by hand from the model as documented,
// not copied from a run:
//
//  * doc/design.md, "Protocols": bandwidth factor / per-step latency / launch latency
//      Simple 0.95 / 3 us / 8 us, LL128 0.89 / 1.2 us / 6 us, LL 0.5 / 0.6 us / 4 us;
//    wire bytes = payload / factor (rounded up to whole bytes by Communicator::Send).
//    The LL128 factor is 0.890625 in the code (120/128 for the line format x 0.95, like
//    Simple); the doc prints it rounded to 0.89 and explains only the 120/128 part. We use
//    0.890625 (over 16 MiB the doc's 0.89 would move a step by 1 us).
//  * A step: the sender waits the protocol step latency, the flow drains at its max-min fair
//    rate, and is delivered after the route latency (doc/flow-backend.md: finish time =
//    start + llround(bytes / rate) ns, delivery = finish + sum of link latencies). The launch
//    latency is paid once per rank before its first step.
//  * PipelineDepth 1: one transfer in flight per connection; the next starts when the previous
//    one is delivered.
//  * Clusters are FlatSpec below: single-GPU servers on one switch. A GPU-to-GPU route is
//    GPU -PCIe-> NIC -> switch -> NIC -PCIe-> GPU: 4 links of 1 us = 4 us, bottleneck the
//    100 Gb/s NIC links = 12.5 GB/s (PCIe is 64 GB/s). Uplink (NIC -> switch) and downlink
//    (switch -> NIC) are separate directed links; flows share one only when they leave (or
//    enter) the same server.
//  * Channels: one per GPU of a server across servers (= 1 here), trees in mirrored pairs (2).
//  * Times are End - FirstJoin of the collective record: every rank joins at the same instant.
#include "flow-test-topology.h"
#include "ns3/cluster-spec.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/nccl-algorithms.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace ns3;
using gpusim_test::FlatSpec;
using gpusim::CollKind;

namespace
{

struct Proto
{
    const char* name;
    double factor; //!< payload / wire bytes
    double stepNs; //!< per step
    double baseNs; //!< per launch
};

// doc/design.md "Protocols" (LL128: the code's exact 120/128 * 0.95, see the header).
const Proto kSimple{"simple", 0.95, 3000, 8000};
const Proto kLl128{"ll128", 0.9375 * 0.95, 1200, 6000};
const Proto kLl{"ll", 0.5, 600, 4000};

constexpr double kNicBytesPerSec = 100e9 / 8; // 100 Gb/s
constexpr double kPathNs = 4000;              // PCIe + NIC + NIC + PCIe, 1 us each

/// Wire bytes of a step carrying `payload` bytes.
double
WireBytes(double payload, const Proto& p)
{
    return std::ceil(payload / p.factor);
}

/// Drain time (whole ns, as the flow backend rounds) of `payload` at `share` of a NIC link.
double
DrainNs(double payload, const Proto& p, double share = 1.0)
{
    return static_cast<double>(
        std::llround(WireBytes(payload, p) / (kNicBytesPerSec * share) * 1e9));
}

/// One collective on every rank of a FlatSpec cluster with the protocols' real costs.
CollectiveRecord
RunOne(CollKind kind, uint64_t bytes, uint32_t servers, const std::string& algo,
       const std::string& proto, int32_t root = -1)
{
    const gpusim::ClusterSpec spec = FlatSpec(servers);
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Efficiency", DoubleValue(0));
    h.SetNcclAttribute("Algorithm", StringValue(algo));
    h.SetNcclAttribute("Protocol", StringValue(proto));
    JobBuilder job(servers);
    job.AllRanks().CommInit("c").Collective(1, kind, "c", bytes, gpusim::DataType::F32, root);
    job.SyncStream(1);
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    Simulator::Run();
    RunReport report = w->Check();
    EXPECT_TRUE(report.completed) << report.stuck;
    EXPECT_EQ(w->GetCollectives().size(), 1u);
    CollectiveRecord rec = w->GetCollectives().at(0);
    Simulator::Destroy();
    return rec;
}

double
DurationNs(const CollectiveRecord& r)
{
    return static_cast<double>((r.End() - r.FirstJoin()).GetNanoSeconds());
}

class NcclModel : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(NcclModel, SmallRingAllReducePaysEveryProtocolLatency)
{
    // 1 KiB AllReduce, ring, 8 nodes, 1 channel: 2(n-1) = 14 steps of S/n = 128 bytes (one
    // loop: 1 KiB < n x 16 MiB). Every rank sends to its successor over its own uplink into
    // the successor's own downlink, so each flow runs alone at 12.5 GB/s and the steps are in
    // lock step:  T = base + 14 x (step + drain(128 B) + 4 us).
    //   Simple: wire ceil(128/0.95) = 135 B -> 10.8 ns -> 11 ns;
    //           8000 + 14 x (3000 + 11 + 4000) = 106154 ns
    //   LL128:  wire ceil(128/0.890625) = 144 B -> 11.52 -> 12 ns;
    //           6000 + 14 x (1200 + 12 + 4000) = 78968 ns
    //   LL:     wire 256 B -> 20.48 -> 20 ns;  4000 + 14 x (600 + 20 + 4000) = 68680 ns
    const struct
    {
        Proto p;
        double expectNs;
    } cases[] = {{kSimple, 106154}, {kLl128, 78968}, {kLl, 68680}};
    for (const auto& c : cases)
    {
        // The closed form, evaluated from the constants, agrees with the numbers above.
        const double formula = c.p.baseNs + 14 * (c.p.stepNs + DrainNs(128, c.p) + kPathNs);
        EXPECT_NEAR(formula, c.expectNs, 0.5) << c.p.name;
        const CollectiveRecord r = RunOne(CollKind::AllReduce, 1024, 8, "ring", c.p.name);
        EXPECT_EQ(r.plan.algo, "ring");
        EXPECT_EQ(r.plan.proto, c.p.name);
        EXPECT_EQ(r.plan.channels, 1u);
        EXPECT_EQ(r.transfers, 8u * 14);
        EXPECT_NEAR(DurationNs(r), c.expectNs, 2) << c.p.name;
    }
}

TEST_F(NcclModel, EachProtocolsBandwidthFactorOnALargeRing)
{
    // 64 MiB AllReduce, ring, 4 nodes: loops = ceil(64 MiB / (4 x 16 MiB)) = 1, so 6 steps of
    // 16 MiB = 16777216 B, each flow alone on its links (lock step as above):
    //   T = base + 6 x (step + ceil(16777216 / factor) / 12.5 GB/s + 4 us)
    //   Simple: 17660228 B -> 1412818.24 ns -> 1412818;  8000 + 6 x 1419818 = 8526908 ns
    //   LL128:  18837576 B -> 1507006.08 ns -> 1507006;  6000 + 6 x 1512206 = 9079236 ns
    //   LL:     33554432 B -> 2684354.56 ns -> 2684355;  4000 + 6 x 2688955 = 16137730 ns
    // The drain dominates, so the time nails the factor: the factor implied by the run,
    // 6 x 16 MiB / 12.5 GB/s / (T - base - 6 x (step + 4 us)), must be the protocol's.
    const struct
    {
        Proto p;
        double expectNs;
    } cases[] = {{kSimple, 8526908}, {kLl128, 9079236}, {kLl, 16137730}};
    const double item = 16.0 * 1024 * 1024;
    for (const auto& c : cases)
    {
        const double formula = c.p.baseNs + 6 * (c.p.stepNs + DrainNs(item, c.p) + kPathNs);
        EXPECT_NEAR(formula, c.expectNs, 0.5) << c.p.name;
        const CollectiveRecord r = RunOne(CollKind::AllReduce, 64ull << 20, 4, "ring", c.p.name);
        EXPECT_EQ(r.plan.proto, c.p.name);
        EXPECT_NEAR(DurationNs(r), c.expectNs, 2) << c.p.name;
        const double drainNs = DurationNs(r) - c.p.baseNs - 6 * (c.p.stepNs + kPathNs);
        const double impliedFactor = 6 * item / kNicBytesPerSec * 1e9 / drainNs;
        EXPECT_NEAR(impliedFactor, c.p.factor, 1e-6) << c.p.name;
    }
}

TEST(NcclTrees, DoubleBinaryTreeIsNcclsInOrderTreeAndItsMirrorOrShift)
{
    // NCCL's own illustration of ncclGetBtree for 14 ranks (src/graph/trees.cc):
    //   0 -> 8;  8 -> 4, 12;  4 -> 2, 6;  12 -> 10, 13;  2 -> 1, 3;  6 -> 5, 7;  10 -> 9, 11
    const std::vector<int32_t> parent14 = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12};
    const std::vector<CollectiveTree> t14 = DoubleBinaryTree(14);
    ASSERT_EQ(t14.size(), 2u);
    EXPECT_EQ(t14[0].parent, parent14);
    // Even n: the second tree is the mirror image, rank r -> 13 - r.
    for (int32_t r = 0; r < 14; ++r)
    {
        const int32_t p = parent14[13 - r];
        EXPECT_EQ(t14[1].parent[r], p < 0 ? -1 : 13 - p) << "rank " << r;
    }
    EXPECT_EQ(t14[0].children[8], (std::vector<uint32_t>{4, 12}));
    // Odd n: the second tree is the first shifted by one rank (ncclGetDtree); for 5 ranks the
    // first is 0 -> 4, 4 -> 2, 2 -> {1, 3}, the second 1 -> 0, 0 -> 3, 3 -> {2, 4}.
    const std::vector<CollectiveTree> t5 = DoubleBinaryTree(5);
    EXPECT_EQ(t5[0].parent, (std::vector<int32_t>{-1, 2, 4, 2, 0}));
    EXPECT_EQ(t5[1].parent, (std::vector<int32_t>{1, -1, 3, 0, 3}));
}

TEST_F(NcclModel, SmallTreeAllReduceStepByStep)
{
    // 4 KiB AllReduce, tree, 4 nodes, 2 trees (NCCL's double binary tree over 4 servers, a
    // mirrored pair), each with S/2 = 2 KiB in one chunk (TreeChunks: ceil(2048 / 256 KiB) = 1).
    //   Tree 0 (in order, ncclGetBtree): 0 -> {2}, 2 -> {1, 3}
    //   Tree 1 (mirrored, server 3 - s):  3 -> {1}, 1 -> {2, 0}
    // All ranks join at `base`; every step below waits the step latency, drains and adds 4 us.
    //   1. leaves send up: 1->2, 3->2 (tree 0), 2->1, 0->1 (tree 1): one flow per uplink, two
    //      on downlinks 2 and 1 -> half rate each, d2 = drain at 1/2 share.
    //   2. 2 has its children's chunks -> 2->0 (tree 0); 1 likewise -> 1->3 (tree 1); alone: d1
    //      = drain(2 KiB).
    //   3. roots reduced -> 0->2 (tree 0), 3->1 (tree 1); alone: d1.
    //   4. 2->1, 2->3 (tree 0), 1->2, 1->0 (tree 1) forward down: two flows on uplinks 2 and 1
    //      -> d2.
    //   T = base + 4 x (step + 4 us) + 2 x d1 + 2 x d2
    //   Simple: wire ceil(2048/0.95) = 2156 B; d1 = 172.48 -> 172 ns; d2 = 344.96 -> 345 ns
    //           8000 + 4 x 7000 + 2 x 172 + 2 x 345 = 37034 ns
    //   LL:     wire 4096 B; d1 = 327.68 -> 328 ns; d2 = 655.36 -> 655 ns
    //           4000 + 4 x 4600 + 2 x 328 + 2 x 655 = 24366 ns
    const struct
    {
        Proto p;
        double expectNs;
    } cases[] = {{kSimple, 37034}, {kLl, 24366}};
    for (const auto& c : cases)
    {
        const double formula = c.p.baseNs + 4 * (c.p.stepNs + kPathNs) +
                               2 * DrainNs(2048, c.p) + 2 * DrainNs(2048, c.p, 0.5);
        EXPECT_NEAR(formula, c.expectNs, 0.5) << c.p.name;
        const CollectiveRecord r = RunOne(CollKind::AllReduce, 4096, 4, "tree", c.p.name);
        EXPECT_EQ(r.plan.algo, "tree");
        EXPECT_EQ(r.plan.channels, 2u);
        EXPECT_EQ(r.transfers, 2u * 3 * 2); // 2 trees x 3 edges x (up + down), 1 chunk
        EXPECT_NEAR(DurationNs(r), c.expectNs, 2) << c.p.name;
    }
}

TEST_F(NcclModel, LargeTreeAllReducePipelines256KiBChunks)
{
    // 64 MiB AllReduce, tree, Simple, 2 nodes: tree 0 is 0 -> 1, tree 1 (mirrored) 1 -> 0,
    // each with S/2 = 32 MiB in chunks of at most 256 KiB: 128 chunks of 262144 B
    // (wire ceil(262144/0.95) = 275942 B, alone d = 22075.36 -> 22075 ns).
    // Link 0->1 carries tree 1's up chunks and tree 0's down chunks, link 1->0 the mirror.
    //   cycle 1:        up chunk 1 of each tree, alone on its link:      step + d + 4 us
    //   cycles 2..128:  up chunk k and down chunk k-1 start together on each link (both wait
    //                   for the same delivery), half rate each:       step + 2d' + 4 us with
    //                   2d' = 275942 B / 6.25 GB/s = 44150.72 -> 44151 ns
    //   cycle 129:      the last down chunk alone:                       step + d + 4 us
    //   T = 8000 + 129 x 7000 + 2 x 22075 + 127 x 44151 = 6562327 ns
    // (256 chunk-drains at full rate per link: the pipeline keeps both links busy except for
    // the 129 latency gaps). That is one chunk at a time per connection (TreeNetSlots 1).
    // With NCCL's 8 chunks in flight (TreeNetSlots 8, the default since the trees' chunks in
    // flight) a chunk's step latency runs from its admission, alongside the chunks before it,
    // and its bytes follow the chunk before on the wire without a second path latency: only
    // the first cycle's gap remains, 128 x 7000 ns less:
    //   T = 8000 + 1 x 7000 + 2 x 22075 + 127 x 44151 = 5666327 ns
    const Proto& p = kSimple;
    const double chunk = 256.0 * 1024;
    const double formula = p.baseNs + 129 * (p.stepNs + kPathNs) + 2 * DrainNs(chunk, p) +
                           127 * DrainNs(chunk, p, 0.5);
    EXPECT_NEAR(formula, 6562327, 0.5);
    Config::SetDefault("ns3::NcclWorld::TreeNetSlots", UintegerValue(1));
    const CollectiveRecord r = RunOne(CollKind::AllReduce, 64ull << 20, 2, "tree", "simple");
    Config::SetDefault("ns3::NcclWorld::TreeNetSlots", UintegerValue(8));
    EXPECT_EQ(r.plan.algo, "tree");
    EXPECT_EQ(r.plan.channels, 2u);
    EXPECT_EQ(r.transfers, 2u * 128 * 2); // 2 trees x 128 chunks x (up + down)
    EXPECT_NEAR(DurationNs(r), 6562327, 5);
    Simulator::Destroy();
    const double inFlight = p.baseNs + (p.stepNs + kPathNs) + 2 * DrainNs(chunk, p) +
                            127 * DrainNs(chunk, p, 0.5);
    EXPECT_NEAR(inFlight, 5666327, 0.5);
    const CollectiveRecord k = RunOne(CollKind::AllReduce, 64ull << 20, 2, "tree", "simple");
    EXPECT_EQ(k.transfers, 2u * 128 * 2);
    EXPECT_NEAR(DurationNs(k), 5666327, 5);
}

TEST_F(NcclModel, ChainBroadcastAndReducePipelineThroughTheChain)
{
    // Chain over the ring order 0, 1, ..., 7 (Reduce: 1, ..., 7, 0), 1 channel, items of at
    // most 16 MiB; every hop on its own uplink/downlink, so each stage takes the same
    // T1 = step + drain(item) + 4 us and item i leaves position p at (i + p) x T1:
    //   T = base + (items + n - 2) x T1
    // 64 MiB Simple: 4 items of 16 MiB, drain 1412818 ns (as in the ring above):
    //   8000 + (4 + 6) x (3000 + 1412818 + 4000) = 14206180 ns
    // 1 KiB LL: 1 item, wire 2048 B -> 163.84 -> 164 ns:
    //   4000 + (1 + 6) x (600 + 164 + 4000) = 37348 ns
    const double item = 16.0 * 1024 * 1024;
    EXPECT_NEAR(kSimple.baseNs + 10 * (kSimple.stepNs + DrainNs(item, kSimple) + kPathNs),
                14206180, 0.5);
    EXPECT_NEAR(kLl.baseNs + 7 * (kLl.stepNs + DrainNs(1024, kLl) + kPathNs), 37348, 0.5);

    CollectiveRecord r = RunOne(CollKind::Broadcast, 64ull << 20, 8, "auto", "simple", 0);
    EXPECT_EQ(r.plan.algo, "chain");
    EXPECT_EQ(r.transfers, 7u * 4);
    EXPECT_NEAR(DurationNs(r), 14206180, 2);
    r = RunOne(CollKind::Reduce, 64ull << 20, 8, "auto", "simple", 0);
    EXPECT_NEAR(DurationNs(r), 14206180, 2);
    r = RunOne(CollKind::Broadcast, 1024, 8, "auto", "ll", 0);
    EXPECT_EQ(r.transfers, 7u);
    EXPECT_NEAR(DurationNs(r), 37348, 2);
}

TEST_F(NcclModel, PlannerPicksTheCheapestPlanOnEitherSideOfEachCrossover)
{
    // NcclWorld::Plan on 8 nodes (doc/design.md, "Auto selection"):
    //   estimate = base + depth x (step + path) + busiest link load / (12.5 GB/s x factor)
    //              x fill, in us, path = 4 us.
    // Ring: depth 2(n-1) = 14, each uplink carries 2(n-1)/n x S = 1.75 S, fill 1:
    //   ring(p) = base + 14 (step + 4) + 1.75 S / (12500 factor)          [S in bytes]
    //   Simple 106 + 1.75 S / 11875, LL128 78.8 + 1.75 S / 11132.8125, LL 68.4 + 1.75 S / 6250
    // Tree: 2 trees. Tree 0: 0->{1,2}, 1->{3,4}, 2->{5,6}, 3->{7}; tree 1 mirrored (s -> 7-s).
    //   Depth 3 each way -> 6. Every tree edge carries S/2 both ways; a node's uplink carries
    //   one flow per incident edge: degrees (tree 0 + tree 1) are 3,4,4,3,3,4,4,3 -> busiest
    //   link 4 x S/2 = 2 S. Fill = 1 + 6 / chunks / 3: Simple and LL128 pipeline chunks of
    //   256 KiB, chunks = ceil(S/2 / 256 KiB) (1 below 512 KiB -> fill 3); LL streams passes of
    //   4 KiB, chunks = ceil(S/2 / 4 KiB) = ceil(S / 8192):
    //   tree(p) = base + 6 (step + 4) + 2 S / (12500 factor) x fill
    //   Simple 50 + ..., LL128 37.2 + 6 S / 11132.8125 (below 512 KiB),
    //   LL 31.6 + 2 S / 6250 x (1 + 2 / ceil(S / 8192))
    // Crossovers (solving the pieces):
    //   tree/LL is below tree/LL128 at every size (at S <= 8192 31.6 + 0.00096 S against
    //   37.2 + 0.000539 S; above, LL's fill falls towards 1).
    //   tree/LL = ring/LL128 where 31.6 + 0.00032 S (1 + 2/c) = 78.8 + 1.75 S / 11132.8125 with
    //   c = ceil(S / 8192) = 32                                           -> S = 258196
    //   ring/LL128 = ring/Simple: 78.8 + 1.75 S/11132.8125 = 106 + 1.75 S/11875
    //                                                                     -> S = 2768571.4
    //   (tree/Simple, ring/LL and the other pairs are never the cheapest in between.)
    // Sizes ~3 % either side of the crossovers, with the winner's estimate:
    const double a = 12500 * kLl128.factor; // 11132.8125
    const struct
    {
        uint64_t bytes;
        const char* algo;
        const char* proto;
        double estimateUs;
    } cases[] = {
        {12900, "tree", "ll", 31.6 + 2 * 12900 / 6250.0 * 2},                // 39.856, c = 2
        {200000, "tree", "ll", 31.6 + 2 * 200000 / 6250.0 * (1 + 2 / 25.0)}, // 100.72
        {250000, "tree", "ll", 31.6 + 2 * 250000 / 6250.0 * (1 + 2 / 31.0)}, // 116.761
        {266000, "ring", "ll128", 78.8 + 1.75 * 266000 / a},                 // 120.613
        {2690000, "ring", "ll128", 78.8 + 1.75 * 2690000 / a},               // 501.649
        {2850000, "ring", "simple", 106 + 1.75 * 2850000 / 11875.0},         // 526.0
    };
    for (const auto& c : cases)
    {
        const CollectiveRecord r = RunOne(CollKind::AllReduce, c.bytes, 8, "auto", "auto");
        EXPECT_EQ(r.plan.algo, c.algo) << c.bytes << " bytes";
        EXPECT_EQ(r.plan.proto, c.proto) << c.bytes << " bytes";
        EXPECT_NEAR(r.plan.estimateUs, c.estimateUs, 1e-6 * c.estimateUs) << c.bytes << " bytes";
    }
    // The crossovers themselves, from the constants (guards the arithmetic above).
    const double treeLlRingLl128 = 47.2 / (2 / 6250.0 * (1 + 2 / 32.0) - 1.75 / a);
    EXPECT_NEAR(treeLlRingLl128, 258196, 1);
    EXPECT_EQ(std::ceil(treeLlRingLl128 / 8192), 32);
    EXPECT_NEAR(27.2 / (1.75 / a - 1.75 / 11875), 2768571.43, 1e-2);
}
