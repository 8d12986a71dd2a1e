// NCCL collectives on the flow backend: closed forms, algorithm orderings, skew, overlap,
// P2P and stuck-run reports.
#include "ns3/cluster-spec.h"
#include "ns3/double.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

using namespace ns3;
using gpusim::CollKind;

namespace
{

/// n single-GPU servers on one switch, NICs at `gbps`.
gpusim::ClusterSpec
FlatSpec(uint32_t servers, double gbps, uint32_t gpusPerServer = 1)
{
    gpusim::ClusterSpec s;
    s.servers = servers;
    s.gpusPerServer = gpusPerServer;
    s.nicsPerServer = gpusPerServer;
    s.nicGbps = gbps;
    s.fabric = "single-switch";
    s.linkLatencyUs = 1.0;
    return s;
}

struct Result
{
    Ptr<GpuWorkload> w;
    RunReport report;
};

Result
RunJob(const JobBuilder& job, const gpusim::ClusterSpec& spec, double efficiency = 0,
       const std::string& algo = "auto", const std::string& proto = "auto")
{
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Efficiency", DoubleValue(efficiency));
    h.SetNcclAttribute("Algorithm", StringValue(algo));
    h.SetNcclAttribute("Protocol", StringValue(proto));
    Result r;
    r.w = h.Install(job.BuildShared(), gpus);
    Simulator::Run();
    r.report = r.w->Check();
    return r;
}

/// Simulated time (us) of one collective of `bytes` on all ranks.
double
CollectiveUs(CollKind kind, uint64_t bytes, const gpusim::ClusterSpec& spec,
             double efficiency = 1, const std::string& algo = "auto",
             const std::string& proto = "auto", std::string* chosen = nullptr)
{
    JobBuilder job(spec.servers * spec.gpusPerServer);
    job.AllRanks().CommInit("c").Collective(1, kind, "c", bytes, gpusim::DataType::F32, 0);
    job.SyncStream(1);
    Result r = RunJob(job, spec, efficiency, algo, proto);
    EXPECT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(r.w->GetCollectives().size(), 1u);
    const CollectiveRecord& c = r.w->GetCollectives().at(0);
    if (chosen)
    {
        *chosen = c.plan.algo;
    }
    double us = (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3;
    Simulator::Destroy();
    return us;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

class Collectives : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(Collectives, RingAllReduceMatchesClosedForm)
{
    // 1 GiB over 8 single-GPU servers on 100 Gbit/s NICs: 2(n-1)/n * S / B.
    const double ideal = 2.0 * 7 / 8 * kGiB / 12.5e9 * 1e6;
    const double us = CollectiveUs(CollKind::AllReduce, 1ull << 30, FlatSpec(8, 100), 1, "ring");
    EXPECT_NEAR(us / ideal, 1.0, 0.01) << us << " us vs " << ideal;
}

TEST_F(Collectives, RingAllGatherAndReduceScatterMatchClosedForm)
{
    const double ideal = 7.0 / 8 * kGiB / 12.5e9 * 1e6;
    EXPECT_NEAR(CollectiveUs(CollKind::AllGather, 1ull << 30, FlatSpec(8, 100)) / ideal, 1, 0.01);
    EXPECT_NEAR(CollectiveUs(CollKind::ReduceScatter, 1ull << 30, FlatSpec(8, 100)) / ideal, 1,
                0.01);
}

TEST_F(Collectives, AllToAllMatchesClosedForm)
{
    // Each rank sends (n-1)/n of its buffer through its NIC.
    const double ideal = 7.0 / 8 * kGiB / 12.5e9 * 1e6;
    EXPECT_NEAR(CollectiveUs(CollKind::AllToAll, 1ull << 30, FlatSpec(8, 100)) / ideal, 1, 0.01);
}

TEST_F(Collectives, BroadcastPipelinesThroughTheChain)
{
    // Chain of 8 with 16 MiB chunks: (S + (n-2) * chunk) / B, far below (n-1) * S / B.
    const double chunks = kGiB / (16 << 20);
    const double ideal = (chunks + 6) / chunks * kGiB / 12.5e9 * 1e6;
    const double us = CollectiveUs(CollKind::Broadcast, 1ull << 30, FlatSpec(8, 100));
    EXPECT_NEAR(us / ideal, 1.0, 0.01) << us << " vs " << ideal;
    EXPECT_NEAR(CollectiveUs(CollKind::Reduce, 1ull << 30, FlatSpec(8, 100)) / ideal, 1, 0.01);
}

TEST_F(Collectives, TreeBeatsRingWhenSmallAndRingBeatsTreeWhenLarge)
{
    const auto spec = FlatSpec(8, 100);
    // With protocol latencies on (default efficiency), 2 log n steps beat 2(n-1) steps.
    const double ringSmall = CollectiveUs(CollKind::AllReduce, 4096, spec, 0, "ring", "simple");
    const double treeSmall = CollectiveUs(CollKind::AllReduce, 4096, spec, 0, "tree", "simple");
    EXPECT_LT(treeSmall, ringSmall);
    const double ringLarge = CollectiveUs(CollKind::AllReduce, 1ull << 30, spec, 0, "ring",
                                          "simple");
    const double treeLarge = CollectiveUs(CollKind::AllReduce, 1ull << 30, spec, 0, "tree",
                                          "simple");
    EXPECT_LT(ringLarge, treeLarge);
    // And auto selection follows the same ordering.
    std::string algo;
    CollectiveUs(CollKind::AllReduce, 4096, spec, 0, "auto", "auto", &algo);
    EXPECT_EQ(algo, "tree");
    CollectiveUs(CollKind::AllReduce, 1ull << 30, spec, 0, "auto", "auto", &algo);
    EXPECT_EQ(algo, "ring");
}

TEST_F(Collectives, ProtocolsTradeLatencyForBandwidth)
{
    const auto spec = FlatSpec(8, 100);
    const double llSmall = CollectiveUs(CollKind::AllReduce, 1024, spec, 0, "ring", "ll");
    const double simpleSmall = CollectiveUs(CollKind::AllReduce, 1024, spec, 0, "ring", "simple");
    EXPECT_LT(llSmall, simpleSmall);
    const double llLarge = CollectiveUs(CollKind::AllReduce, 256 << 20, spec, 0, "ring", "ll");
    const double simpleLarge = CollectiveUs(CollKind::AllReduce, 256 << 20, spec, 0, "ring",
                                            "simple");
    EXPECT_LT(simpleLarge, llLarge);
}

TEST_F(Collectives, NvlinkRingInsideAServerIsFasterThanTheNetwork)
{
    // 8 GPUs in one server (450 GB/s NVLink) vs 8 servers (400 Gb/s NICs).
    gpusim::ClusterSpec one = FlatSpec(1, 400, 8);
    gpusim::ClusterSpec many = FlatSpec(8, 400, 1);
    EXPECT_LT(CollectiveUs(CollKind::AllReduce, 256 << 20, one) * 5,
              CollectiveUs(CollKind::AllReduce, 256 << 20, many));
}

TEST_F(Collectives, LateRankDelaysItsPeersByItsLateness)
{
    const auto spec = FlatSpec(4, 100);
    auto finish = [&](double lateUs) {
        JobBuilder job(4);
        job.AllRanks().CommInit("c");
        job.Rank(3).Host(lateUs);
        job.AllRanks().AllReduce(1, "c", 64 << 20).SyncStream(1);
        Result r = RunJob(job, spec, 1);
        EXPECT_TRUE(r.report.completed) << r.report.stuck;
        std::vector<double> done;
        for (Time t : r.w->GetCollectives().at(0).rankDone)
        {
            done.push_back(t.GetNanoSeconds() / 1e3);
        }
        Simulator::Destroy();
        return done;
    };
    const auto onTime = finish(0);
    const auto late = finish(500);
    for (size_t r = 0; r < 4; ++r)
    {
        // Every rank (not only the late one) finishes 500 us later: the ring waits for it.
        EXPECT_NEAR(late[r] - onTime[r], 500.0, 0.5) << "rank " << r;
    }
}

TEST_F(Collectives, ComputeAndCommunicationOverlapOnTwoStreams)
{
    // Per rank: a 2 ms compute kernel on stream 1 while a 64 MiB AllReduce runs on stream 2.
    const auto spec = FlatSpec(4, 100);
    auto build = [](bool overlap) {
        JobBuilder job(4);
        job.AllRanks().CommInit("c");
        job.Kernel(1, "compute", 2000);
        if (!overlap)
        {
            job.SyncStream(1);
        }
        job.AllReduce(2, "c", 64 << 20).SyncDevice();
        return job;
    };
    Result serial = RunJob(build(false), spec, 1);
    const double tSerial = serial.report.endTime.GetNanoSeconds() / 1e3;
    const double comm = (serial.w->GetCollectives()[0].End() -
                         serial.w->GetCollectives()[0].FirstJoin())
                            .GetNanoSeconds() /
                        1e3;
    Simulator::Destroy();
    Result overlapped = RunJob(build(true), spec, 1);
    const double tOverlap = overlapped.report.endTime.GetNanoSeconds() / 1e3;
    EXPECT_NEAR(tSerial, 2000 + comm, 1.0);
    EXPECT_NEAR(tOverlap, std::max(2000.0, comm), 1.0);
    auto it = overlapped.w->GetIterations().at(0);
    EXPECT_NEAR(it.overlapUs, std::min(2000.0, comm), 1.0);
}

TEST_F(Collectives, SendRecvPipelineInsideGroups)
{
    // Pipeline stages 0 -> 1 -> 2: stage 1 forwards after receiving; sizes match; 1 GiB at
    // 12.5 GB/s takes 85.9 ms per hop.
    JobBuilder job(3);
    job.AllRanks().CommInit("pp");
    job.Rank(0).Send(1, "pp", 1, 1ull << 30).SyncStream(1);
    job.Rank(1).Recv(1, "pp", 0, 1ull << 30).SyncStream(1).Send(1, "pp", 2, 1ull << 30);
    job.SyncStream(1);
    job.Rank(2).Recv(1, "pp", 1, 1ull << 30).SyncStream(1);
    Result r = RunJob(job, FlatSpec(3, 100), 1);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_NEAR(r.report.endTime.GetNanoSeconds() / 1e3, 2 * kGiB / 12.5e9 * 1e6, 200);
}

TEST_F(Collectives, GroupedSendRecvExchangeDoesNotDeadlock)
{
    // Both ranks send to each other inside one group: legal in NCCL, deadlocks without groups.
    JobBuilder job(2);
    job.AllRanks().CommInit("c");
    job.Rank(0).Send(1, "c", 1, 1 << 20, 5).Recv(1, "c", 1, 1 << 20, 5).SyncStream(1);
    job.Rank(1).Send(1, "c", 0, 1 << 20, 5).Recv(1, "c", 0, 1 << 20, 5).SyncStream(1);
    Result r = RunJob(job, FlatSpec(2, 100), 1);
    EXPECT_TRUE(r.report.completed) << r.report.stuck;
}

TEST_F(Collectives, MissingRankIsReportedByCommunicatorSequenceAndRank)
{
    JobBuilder job(4);
    job.AllRanks().CommInit("dp").AllReduce(1, "dp", 1 << 20).SyncStream(1);
    job.Rank(0).AllReduce(1, "dp", 1 << 20).SyncStream(1); // only rank 0 calls seq 1
    Result r = RunJob(job, FlatSpec(4, 100), 1);
    EXPECT_FALSE(r.report.completed);
    EXPECT_NE(r.report.stuck.find("communicator dp seq 1 allreduce"), std::string::npos)
        << r.report.stuck;
    EXPECT_NE(r.report.stuck.find("comm ranks never joined: 1 (GPU 1), 2 (GPU 2), 3 (GPU 3)"),
              std::string::npos)
        << r.report.stuck;
    EXPECT_NE(r.report.stuck.find("rank 0 host thread 0"), std::string::npos) << r.report.stuck;
}

TEST_F(Collectives, UnmatchedSendIsReported)
{
    JobBuilder job(2);
    job.AllRanks().CommInit("c");
    job.Rank(0).Send(1, "c", 1, 4096).SyncStream(1);
    Result r = RunJob(job, FlatSpec(2, 100), 1);
    EXPECT_FALSE(r.report.completed);
    EXPECT_NE(r.report.stuck.find("send(s) from comm rank 0 to 1 with no matching recv"),
              std::string::npos)
        << r.report.stuck;
}

TEST_F(Collectives, SubCommunicatorsRunConcurrently)
{
    // Two data-parallel groups {0,1} and {2,3} on disjoint links finish together.
    JobBuilder job(4);
    job.Rank(0).CommInit("a", 2, 0).Rank(1).CommInit("a", 2, 1);
    job.Rank(2).CommInit("b", 2, 0).Rank(3).CommInit("b", 2, 1);
    job.Rank(0).AllReduce(1, "a", 256 << 20).Rank(1).AllReduce(1, "a", 256 << 20);
    job.Rank(2).AllReduce(1, "b", 256 << 20).Rank(3).AllReduce(1, "b", 256 << 20);
    job.AllRanks().SyncStream(1);
    Result r = RunJob(job, FlatSpec(4, 100), 1);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    const auto& c = r.w->GetCollectives();
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].End(), c[1].End());
    EXPECT_NEAR((c[0].End() - c[0].FirstJoin()).GetNanoSeconds() / 1e3,
                (256 << 20) / 12.5e9 * 1e6, 0.005 * (256 << 20) / 12.5e9 * 1e6);
}

TEST_F(Collectives, SameRunTwiceGivesIdenticalMetrics)
{
    auto run = []() {
        JobBuilder job(16);
        job.AllRanks().CommInit("w").Kernel(1, "k", 10).AllReduce(2, "w", 32 << 20);
        job.Collective(2, CollKind::AllToAll, "w", 16 << 20).SyncDevice();
        gpusim::ClusterSpec spec;
        spec.servers = 2;
        spec.fabric = "rail";
        Result r = RunJob(job, spec);
        std::string m = r.w->MetricsJson() + r.w->ChromeTraceJson();
        Simulator::Destroy();
        return m;
    };
    EXPECT_EQ(run(), run());
}
