// Peer-to-peer copies (cudaMemcpyPeer*, cross-device cudaMemcpy: memcpy kind p2p with
// src_rank/dst_rank) move over the network backend between the two GPUs: their time follows
// the NVLink or NIC path, and they share its links with collectives running at the same time.
#include "ns3/cluster-spec.h"
#include "ns3/double.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace ns3;

namespace
{

constexpr double kBytes = 256.0 * 1024 * 1024; // every copy below moves 256 MiB
/// What a copy engine puts on the NVLink path for kBytes: it reaches 376 of NVLink4's 450 GB/s
/// (KernelCostModel::kPeerCopyLinkEfficiency, measured on an HGX H100).
const double kCopyWireBytes = std::ceil(kBytes * 450.0 / 376.0);

/// `servers` servers of `gpus` GPUs on one switch: NVLink 450 GB/s per direction and 0.5 us
/// per hop inside a server; PCIe 64 GB/s, 100 Gb/s NICs and 1 us per hop between servers.
gpusim::ClusterSpec
Spec(uint32_t servers, uint32_t gpus)
{
    gpusim::ClusterSpec s;
    s.servers = servers;
    s.gpusPerServer = gpus;
    s.nicsPerServer = gpus;
    s.nicGbps = 100;
    s.nvlinkGBps = 450;
    s.nvlinkLatencyUs = 0.5;
    s.pcieGBps = 64;
    s.fabric = "single-switch";
    s.linkLatencyUs = 1.0;
    return s;
}

struct SimRun
{
    Ptr<GpuWorkload> w;
    RunReport report;
};

SimRun
Simulate(std::shared_ptr<const gpusim::JobTrace> job, const gpusim::ClusterSpec& spec,
         bool network = true)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    GpuWorkloadHelper h;
    if (network)
    {
        Ptr<FlowBackend> net = CreateObject<FlowBackend>();
        net->SetTopology(cluster.GetTopology());
        h.SetBackend(net);
    }
    h.SetNcclAttribute("Efficiency", DoubleValue(1)); // NCCL at wire speed, no latencies
    h.SetCostModel("ns3::RooflineCostModel");
    SimRun r;
    r.w = h.Install(job, gpus);
    Simulator::Run();
    r.report = r.w->Check();
    return r;
}

SimRun
Simulate(const JobBuilder& job, const gpusim::ClusterSpec& spec, bool network = true)
{
    return Simulate(job.BuildShared(), spec, network);
}

/// Duration (us) of the single p2p copy of the run.
double
CopyUs(const SimRun& r)
{
    double us = -1;
    for (const auto& a : r.w->GetActivities())
    {
        if (a.op->kind == gpusim::OpKind::Memcpy)
        {
            EXPECT_LT(us, 0) << "one copy expected";
            us = (a.end - a.start).GetNanoSeconds() / 1e3;
        }
    }
    return us;
}

/// End (us) of rank 0's NCCL work (send/recv are not collectives in GetCollectives).
double
CommEndUs(const SimRun& r)
{
    for (const auto& a : r.w->GetActivities())
    {
        if (a.communication && a.rank == 0)
        {
            return a.end.GetNanoSeconds() / 1e3;
        }
    }
    ADD_FAILURE() << "no NCCL activity on rank 0";
    return -1;
}

/// Duration (us) of the run's only collective, from first join to end.
double
CollectiveUs(const SimRun& r)
{
    EXPECT_EQ(r.w->GetCollectives().size(), 1u);
    const CollectiveRecord& c = r.w->GetCollectives().at(0);
    return (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3;
}

class PeerCopy : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(PeerCopy, InsideAServerItTakesTheNvlinkTime)
{
    // 1 us copy setup + 2 NVLink hops (GPU -> NVSwitch -> GPU, 0.5 us each) + bytes at the
    // copy engines' 376 of the link's 450 GB/s. (Costed as local HBM traffic, it took
    // 1 + 2 * S / (3.35e12 * 0.8) = 201 us; at the link's full rate 598.5 us.)
    const double expected = 1.0 + 2 * 0.5 + kCopyWireBytes / 450e9 * 1e6;
    EXPECT_NEAR(expected, 1.0 + 2 * 0.5 + kBytes / 376e9 * 1e6, 0.01);
    JobBuilder job(2);
    job.Rank(0).PeerCopy(1, 0, 1, kBytes).SyncStream(1);
    SimRun r = Simulate(job, Spec(1, 2));
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_NEAR(CopyUs(r), expected, 0.01) << "expected " << expected << " us";
    EXPECT_NEAR(r.report.endTime.GetNanoSeconds(), expected * 1e3, 1.0);
}

TEST_F(PeerCopy, WithoutPeerAccessItIsStagedThroughHostMemory)
{
    // No peer mapping either way (the shim marks the copy `staged`): out of one GPU over PCIe
    // into host memory and into the other, at 37 of the PCIe link's 64 GB/s (HGX H100,
    // p2pBandwidthLatencyTest with P2P disabled); no NVLink bytes, so nothing on the network.
    const double expected = 1.0 + kBytes / 37e9 * 1e6;
    JobBuilder job(2);
    job.Rank(0).PeerCopy(1, 0, 1, kBytes).SyncStream(1);
    auto staged = std::make_shared<gpusim::JobTrace>(job.Build());
    for (auto& op : staged->ranks[0].ops)
    {
        op.staged = op.kind == gpusim::OpKind::Memcpy;
    }
    SimRun r = Simulate(staged, Spec(1, 2));
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_NEAR(CopyUs(r), expected, 0.01) << "expected " << expected << " us";
    // The same copy with the peer mapping is ten times as fast.
    EXPECT_GT(CopyUs(r), 10 * (2.0 + kCopyWireBytes / 450e9 * 1e6));
}

TEST_F(PeerCopy, BetweenServersItTakesTheNicPath)
{
    // Rank 0 (server 0) -> rank 2 (server 1): GPU -> NIC -> switch -> NIC -> GPU, four 1 us
    // hops, bottleneck the 100 Gb/s NIC links (12.5 GB/s; PCIe is 64 GB/s).
    const double expected = 1.0 + 4 * 1.0 + kBytes / 12.5e9 * 1e6;
    JobBuilder job(4);
    job.Rank(2).PeerCopy(3, 0, 2, kBytes).SyncStream(3); // issued from the destination's stream
    SimRun r = Simulate(job, Spec(2, 2));
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_NEAR(CopyUs(r), expected, 0.01) << "expected " << expected << " us";
}

TEST_F(PeerCopy, WithoutANetworkItFallsBackToTheCostModel)
{
    // No backend (a scenario without a cluster network): read + write through HBM.
    const double expected = 1.0 + 2 * kBytes / (3.35e12 * 0.8) * 1e6;
    JobBuilder job(2);
    job.Rank(0).PeerCopy(1, 0, 1, kBytes).SyncStream(1);
    SimRun r = Simulate(job, Spec(1, 2), false);
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_NEAR(CopyUs(r), expected, 0.01);
}

TEST_F(PeerCopy, SharesTheLinkWithAConcurrentNcclSend)
{
    // Rank 0 sends 256 MiB to rank 1 through NCCL (one transfer, t = 0) while a p2p copy of
    // 256 MiB goes the same way (after its 1 us setup). Both use GPU0 -> NVSwitch -> GPU1;
    // max-min fairness splits the 450 GB/s while both flow, and the link never idles, so the
    // copy's last byte (its engine puts kCopyWireBytes on the link) leaves at (S + W) / B and
    // arrives 1 us (two hops) later.
    const double B = 450e9;
    const double expected = (kBytes + kCopyWireBytes) / B * 1e6 + 2 * 0.5;
    JobBuilder job(2);
    job.AllRanks().CommInit("c");
    job.Rank(0).Send(2, "c", 1, kBytes).PeerCopy(1, 0, 1, kBytes).SyncDevice();
    job.Rank(1).Recv(2, "c", 0, kBytes).SyncDevice();
    SimRun r = Simulate(job, Spec(1, 2));
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_NEAR(CopyUs(r), expected, 0.01) << "expected " << expected << " us";
    // The send's bytes were in before the copy's: 1 us alone at B, then B/2 until drained.
    // NCCL cuts 256 MiB to one peer into 16 parts of 32 steps of 512 KiB (model/nccl-p2p.h),
    // and the receiver copies the last step out of its FIFO after it arrived: 1/32 of the
    // transfer's time later.
    const double sendDrained = 1.0 + 2 * (kBytes - B * 1e-6) / B * 1e6;
    EXPECT_NEAR(CommEndUs(r), (sendDrained + 2 * 0.5) * 33 / 32, 0.01);
}

TEST_F(PeerCopy, OneCopySendRecvSkipsNcclsCopyOutOfItsFifo)
{
    // The 256 MiB Send/Recv above, alone: S / B plus two 0.5 us hops on the wire. Through
    // NCCL's FIFO the receiver copies the last of 32 steps out after it arrived, 1/32 of the
    // transfer later; in one copy into the peer's buffer (gpusim::kCollOneCopy: Transformer
    // Engine's userbuffers, NCCL's direct mode) it does not.
    JobBuilder job(2);
    job.AllRanks().CommInit("c");
    job.Rank(0).Send(2, "c", 1, kBytes).SyncDevice();
    job.Rank(1).Recv(2, "c", 0, kBytes).SyncDevice();
    const double transfer = kBytes / 450e9 * 1e6 + 2 * 0.5;
    SimRun fifo = Simulate(job, Spec(1, 2));
    ASSERT_TRUE(fifo.report.completed) << fifo.report.stuck;
    EXPECT_NEAR(CommEndUs(fifo), transfer * 33 / 32, 0.01);
    Simulator::Destroy();
    auto oneCopy = std::make_shared<gpusim::JobTrace>(job.Build());
    for (auto& rank : oneCopy->ranks)
    {
        for (auto& op : rank.ops)
        {
            if (op.kind == gpusim::OpKind::Collective)
            {
                op.flags = gpusim::kCollOneCopy;
            }
        }
    }
    SimRun direct = Simulate(oneCopy, Spec(1, 2));
    ASSERT_TRUE(direct.report.completed) << direct.report.stuck;
    EXPECT_NEAR(CommEndUs(direct), transfer, 0.01);
}

TEST_F(PeerCopy, ContendsWithAConcurrentAllReduce)
{
    // A 2-rank AllReduce of 256 MiB inside one server sends S bytes out of each GPU over its
    // NVLink; a concurrent copy from GPU 0 to GPU 1 competes for GPU 0's uplink. Both get
    // slower than alone, and the copy still ends no later than when the link would have
    // carried both loads back to back.
    const double B = 450e9;
    auto run = [](bool copy, bool allreduce) {
        JobBuilder job(2);
        job.AllRanks().CommInit("c");
        if (allreduce)
        {
            job.AllRanks().AllReduce(2, "c", kBytes);
        }
        if (copy)
        {
            job.Rank(0).PeerCopy(1, 0, 1, kBytes);
        }
        job.AllRanks().SyncDevice();
        SimRun r = Simulate(job, Spec(1, 2));
        EXPECT_TRUE(r.report.completed) << r.report.stuck;
        std::pair<double, double> t{copy ? CopyUs(r) : 0, allreduce ? CollectiveUs(r) : 0};
        Simulator::Destroy();
        return t;
    };
    const double copyAlone = run(true, false).first;
    const double arAlone = run(false, true).second;
    const auto [copyShared, arShared] = run(true, true);
    EXPECT_NEAR(copyAlone, 1.0 + 1.0 + kCopyWireBytes / B * 1e6, 0.01);
    EXPECT_GT(copyShared, 1.3 * copyAlone) << "the copy did not feel the AllReduce";
    EXPECT_GT(arShared, arAlone + 100) << "the AllReduce did not feel the copy";
    EXPECT_LE(copyShared, (kBytes + kCopyWireBytes) / B * 1e6 + 1.0 + 1.0 + 0.01);
}
