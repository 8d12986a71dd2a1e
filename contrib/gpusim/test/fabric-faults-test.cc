// Failures, degradation and stragglers: links going down (re-routing after the convergence
// delay, or a failed job when no path is left), rate drops and recoveries, slowed GPUs, on the
// flow backend and the packet backend; and the errors bad fault items get.
#include "flow-test-topology.h"
#include "ns3/cli-options.h"
#include "ns3/cluster-spec.h"
#include "ns3/double.h"
#include "ns3/fabric-event.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/packet-backend.h"
#include "ns3/simulator.h"
#include "ns3/straggler.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace ns3;
using gpusim::CollKind;
using gpusim_test::FlatSpec;

namespace
{

class FabricFaults : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        Simulator::Destroy();
    }
};

/// 4 single-GPU servers, 2 per leaf, 2 spines, 100 Gb/s everywhere, 1 us per hop.
gpusim::ClusterSpec
TwoSpines()
{
    gpusim::ClusterSpec s = FlatSpec(4, 100);
    s.fabric = "leaf-spine";
    s.nicsPerLeaf = 2;
    return s;
}

struct RunResult
{
    RunReport report;
    double collectiveUs = -1; //!< first join to end of the first collective
    Time end;                 //!< when the simulation stopped
    std::vector<double> leafUpBytes; //!< bytes over leaf0 -> spine0 / spine1
};

/// A ring AllReduce of `bytes` between GPU 0 (leaf0) and GPU 2 (leaf1) on the flow backend.
RunResult
AllReduceAcross(gpusim::ClusterSpec spec, uint64_t bytes, Time convergence = Time(0))
{
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    net->SetAttribute("RoutingConvergence", TimeValue(convergence));
    JobBuilder job(2);
    job.AllRanks().CommInit("c").Collective(1, CollKind::AllReduce, "c", bytes,
                                            gpusim::DataType::F32, 0);
    job.SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue("ring"));
    h.SetNcclAttribute("Efficiency", DoubleValue(1));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus, Seconds(0), {0, 2});
    Simulator::Run();
    RunResult r;
    r.report = w->Check();
    r.end = Simulator::Now();
    if (r.report.completed && !w->GetCollectives().empty())
    {
        const CollectiveRecord& c = w->GetCollectives().at(0);
        r.collectiveUs = (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3;
    }
    const Ptr<ClusterTopology> topo = cluster.GetTopology();
    for (const char* spine : {"spine0", "spine1"})
    {
        double b = 0;
        for (uint32_t l = 0; l < topo->Links().size(); ++l)
        {
            if (gpusim::LinkName(*topo, l) == std::string("leaf0-") + spine)
            {
                b += net->GetLinkBytes()[l];
            }
        }
        r.leafUpBytes.push_back(b);
    }
    w->Dispose();
    Simulator::Destroy();
    return r;
}

/// One transfer GPU 0 -> GPU 1 of `bytes` on a flat 2-server cluster at 100 Gb/s (flow
/// backend) with `events`; returns its delivery time in us (-1: never).
double
OneTransferUs(const std::vector<gpusim::FabricEventSpec>& events, uint64_t bytes,
              Time convergence = Time(0))
{
    GpuClusterHelper cluster;
    cluster.SetSpec(FlatSpec(2, 100));
    Ptr<ClusterTopology> topo = cluster.BuildTopology();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(topo);
    net->SetAttribute("RoutingConvergence", TimeValue(convergence));
    net->ScheduleFabricEvents(gpusim::ResolveFabricEvents(events, *topo));
    double us = -1;
    net->StartTransfer(1, 0, 1, bytes, 0, [&us](const TransferRecord& r) {
        us = r.delivered.GetNanoSeconds() / 1e3;
    });
    Simulator::Run();
    Simulator::Destroy();
    return us;
}

std::vector<gpusim::FabricEventSpec>
Items(std::initializer_list<std::string> downs, std::initializer_list<std::string> rates)
{
    std::vector<gpusim::FabricEventSpec> out;
    for (const auto& d : downs)
    {
        for (const auto& e : gpusim::ParseLinkDown(d))
        {
            out.push_back(e);
        }
    }
    for (const auto& r : rates)
    {
        for (const auto& e : gpusim::ParseLinkRate(r))
        {
            out.push_back(e);
        }
    }
    return out;
}

} // namespace

// (a) A spine link carrying the AllReduce goes down at 2 ms. Its flows stop; after the
// 200 us convergence delay they are re-routed over the other spine. The bottleneck is the
// 100 Gb/s NIC link either way (the surviving spine link is 100 Gb/s too and carries at most
// those same flows), so the flows resume at their old rates: the collective ends exactly
// the convergence delay later.
TEST_F(FabricFaults, SpineLinkDownMidAllReduceReroutesAfterConvergence)
{
    const uint64_t bytes = 100'000'000; // 2 ranks: S per direction, 8 ms at 12.5 GB/s
    const RunResult base = AllReduceAcross(TwoSpines(), bytes);
    ASSERT_TRUE(base.report.completed) << base.report.stuck;
    EXPECT_NEAR(base.collectiveUs, 8000, 80);
    // Fail the spine leaf0 sent through (the ECMP hash chose one).
    const std::string used = base.leafUpBytes[0] > 0 ? "spine0" : "spine1";
    const std::string other = used == "spine0" ? "spine1" : "spine0";
    ASSERT_GT(base.leafUpBytes[used == "spine0" ? 0 : 1], 0);
    gpusim::ClusterSpec spec = TwoSpines();
    spec.fabricEvents = gpusim::ParseLinkDown("leaf0-" + used + "@2ms");
    const RunResult failed = AllReduceAcross(spec, bytes, MicroSeconds(200));
    ASSERT_TRUE(failed.report.completed) << failed.report.stuck;
    EXPECT_TRUE(failed.report.errors.empty());
    EXPECT_NEAR(failed.collectiveUs - base.collectiveUs, 200, 10);
    // After the failure leaf0's traffic went over the other spine.
    EXPECT_GT(failed.leafUpBytes[other == "spine0" ? 0 : 1], 0);
}

// (b) The only NIC link of GPU 1 goes down mid-AllReduce: no path is left. As NCCL's IB
// transport, the transfers keep retrying for the transport timeout (default 8 x 4.096 us x
// 2^20 = 34.36 s, NCCL_IB_RETRY_CNT 7 and NCCL_IB_TIMEOUT 20); then the run stops with an
// NCCL-style error naming the collective, the ranks and the dead link. A link back within the
// timeout resumes the collective instead.
struct NicDownRun
{
    RunReport report;
    Time stopped;
};

NicDownRun
AllReduceWithNicDown(const std::string& item, Time timeout)
{
    gpusim::ClusterSpec spec = FlatSpec(2, 100);
    spec.fabricEvents = gpusim::ParseLinkDown(item);
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    if (!timeout.IsZero())
    {
        net->SetAttribute("TransportTimeout", TimeValue(timeout));
    }
    JobBuilder job(2);
    job.AllRanks().CommInit("world").Collective(1, CollKind::AllReduce, "world", 100'000'000,
                                                gpusim::DataType::F32, 0);
    job.SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    Simulator::Run(); // returns: the failure stops the run
    NicDownRun r{w->Check(), Simulator::Now()};
    w->Dispose();
    Simulator::Destroy();
    return r;
}

TEST_F(FabricFaults, OnlyNicLinkDownFailsTheJobAfterTheTransportTimeout)
{
    const NicDownRun dead = AllReduceWithNicDown("s1/nic0-switch0@1ms", Time(0));
    EXPECT_EQ(dead.stopped, MilliSeconds(1) + MicroSeconds(4.096 * 1048576 * 8));
    EXPECT_FALSE(dead.report.completed);
    ASSERT_EQ(dead.report.errors.size(), 1u);
    const std::string& e = dead.report.errors[0];
    EXPECT_NE(e.find("ncclRemoteError"), std::string::npos) << e;
    EXPECT_NE(e.find("s1/nic0-switch0"), std::string::npos) << e;
    EXPECT_NE(e.find("allreduce"), std::string::npos) << e;
    EXPECT_NE(e.find("communicator world"), std::string::npos) << e;
    EXPECT_NE(e.find("(GPU 1)"), std::string::npos) << e;
    EXPECT_NE(e.find("transport timeout of 34.3597"), std::string::npos) << e;
    // A shorter timeout fails sooner.
    EXPECT_EQ(AllReduceWithNicDown("s1/nic0-switch0@1ms", MilliSeconds(2)).stopped,
              MilliSeconds(3));
    // Back at 2.5 ms, within the timeout: the transfers resume and the job completes, 1.5 ms
    // later than without the failure.
    const NicDownRun flap = AllReduceWithNicDown("s1/nic0-switch0@1ms,up@2.5ms", MilliSeconds(2));
    const NicDownRun intact = AllReduceWithNicDown("s1/nic0-switch0@1s,up@2s", Time(0));
    EXPECT_TRUE(flap.report.completed);
    EXPECT_TRUE(intact.report.completed);
    EXPECT_TRUE(flap.report.errors.empty());
    EXPECT_EQ(flap.report.endTime, intact.report.endTime + MicroSeconds(1500));
}

// (c) The bottleneck at half rate from t = 0: 125 MB take 20 ms instead of 10 ms (plus the
// route's 4 us of latency).
TEST_F(FabricFaults, HalfRateDoublesABandwidthBoundTransfer)
{
    const uint64_t bytes = 125'000'000; // 10 ms at 12.5 GB/s
    EXPECT_NEAR(OneTransferUs({}, bytes), 10004, 0.01);
    EXPECT_NEAR(OneTransferUs(Items({}, {"s0/nic0-switch0=50%@0"}), bytes), 20004, 0.01);
    // An absolute rate: 25 Gb/s = a quarter.
    EXPECT_NEAR(OneTransferUs(Items({}, {"s0/nic0-switch0=25Gbps@0"}), bytes), 40004, 0.01);
}

// (d) Recovery. Half rate until 5 ms then full: 31.25 MB by 5 ms, 93.75 MB more at 12.5 GB/s
// = 7.5 ms -> 12.5 ms. The only link down from 2 ms to 2.5 ms with a 1 ms convergence delay:
// the link is back before the routing reacts, the flow stalls 0.5 ms on its unchanged route
// -> 10.5 ms.
TEST_F(FabricFaults, LinkComesBackAndRateIsRestored)
{
    const uint64_t bytes = 125'000'000;
    EXPECT_NEAR(OneTransferUs(Items({}, {"s0/nic0-switch0=50%@0,full@5ms"}), bytes), 12504, 0.01);
    EXPECT_NEAR(OneTransferUs(Items({"s0/nic0-switch0@2ms,up@2.5ms"}, {}), bytes,
                              MilliSeconds(1)),
                10504,
                0.01);
    // Without the recovery the convergence finds no path: never delivered.
    EXPECT_THROW(OneTransferUs(Items({"s0/nic0-switch0@2ms"}, {}), bytes, MilliSeconds(1)),
                 std::runtime_error);
}

// Adaptive routing's merged spine port: on 4 single-GPU servers, 2 per leaf, 2 spines, each
// leaf has one 200 Gb/s link of 2 cables to "spine0". Two 125 MB transfers 0 -> 2 and 1 -> 3
// share leaf0's uplink bundle: NIC-bound at 100 Gb/s each, 10 ms + 6 us of route latency. A
// fault on one cable takes its share of the bundle, not the bundle: one cable down leaves
// 100 Gb/s for both (20 ms); one cable at 50 % leaves 150 Gb/s, 75 each (13.333 ms); spine 1
// failing takes cable 1 of every bundle; both cables down is the bundle down (no path).
TEST_F(FabricFaults, AdaptiveSpineBundleLosesOneCableAtATime)
{
    auto twoTransfersUs = [](std::initializer_list<std::string> downs,
                             std::initializer_list<std::string> rates) {
        gpusim::ClusterSpec spec = TwoSpines();
        spec.routing = "adaptive";
        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        Ptr<ClusterTopology> topo = cluster.BuildTopology();
        Ptr<FlowBackend> net = CreateObject<FlowBackend>();
        net->SetTopology(topo);
        net->ScheduleFabricEvents(gpusim::ResolveFabricEvents(Items(downs, rates), *topo));
        double last = -1;
        for (uint32_t src : {0u, 1u})
        {
            net->StartTransfer(src + 1, src, src + 2, 125'000'000, 0,
                               [&last](const TransferRecord& r) {
                                   last = std::max(last, r.delivered.GetNanoSeconds() / 1e3);
                               });
        }
        Simulator::Run();
        Simulator::Destroy();
        return last;
    };
    EXPECT_NEAR(twoTransfersUs({}, {}), 10006, 0.01);
    EXPECT_NEAR(twoTransfersUs({"leaf0-spine1@0"}, {}), 20006, 0.01);
    EXPECT_NEAR(twoTransfersUs({"leaf0-spine0@0"}, {}), 20006, 0.01);
    EXPECT_NEAR(twoTransfersUs({"spine1@0"}, {}), 20006, 0.01);
    EXPECT_NEAR(twoTransfersUs({}, {"leaf0-spine1=50%@0"}), 125e6 / 9.375e3 + 6, 0.01);
    // Cable 1 back at 5 ms: 5 ms at 50 Gb/s (31.25 MB each), then 93.75 MB at 100 -> 12.5 ms.
    EXPECT_NEAR(twoTransfersUs({"leaf0-spine1@0,up@5ms"}, {}), 12506, 0.01);
    EXPECT_THROW(twoTransfersUs({"leaf0-spine0@0", "leaf0-spine1@0"}, {}), std::runtime_error);
    EXPECT_THROW(twoTransfersUs({"leaf0-spine2@0"}, {}), std::runtime_error); // 2 cables only
}

// (e) A straggler: GPU 0's kernels starting at or after 50 us take twice as long. Rank 0 runs
// two 100 us kernels back to back: the first starts before 50 us, the second after, so the
// run grows by exactly 100 us.
TEST_F(FabricFaults, StragglerKernelsAfterItsTimeTakeTwice)
{
    auto endUs = [](bool straggle) {
        gpusim::ClusterSpec spec = FlatSpec(2, 100);
        if (straggle)
        {
            spec.stragglers.push_back(gpusim::ParseStraggler("0=2x@50us"));
        }
        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        NodeContainer gpus = cluster.Create();
        Ptr<FlowBackend> net = CreateObject<FlowBackend>();
        net->SetTopology(cluster.GetTopology());
        JobBuilder job(2);
        job.AllRanks().Kernel(1, "k1", 100.0).Kernel(1, "k2", 100.0).SyncStream(1);
        GpuWorkloadHelper h;
        h.SetBackend(net);
        Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
        Simulator::Run();
        const RunReport rep = w->Check();
        EXPECT_TRUE(rep.completed) << rep.stuck;
        double rank0 = 0;
        for (const auto& a : w->GetActivities())
        {
            if (a.rank == 0)
            {
                rank0 = std::max(rank0, a.end.GetNanoSeconds() / 1e3);
            }
        }
        w->Dispose();
        Simulator::Destroy();
        return rank0;
    };
    const double base = endUs(false);
    EXPECT_NEAR(endUs(true) - base, 100, 1e-3);
    // 50 % clock is the same as 2x.
    EXPECT_DOUBLE_EQ(gpusim::ParseStraggler("3=50%@1ms").factor, 2.0);
}

// (f) Packet backend, TCP: the leaf0 uplink a 20 MB transfer uses goes down at 0.5 ms; the
// packets on it are lost, the routing moves the flow to the other spine after 100 us and
// TCP's retransmissions recover; it completes, later than without the failure.
TEST_F(FabricFaults, PacketBackendTcpRecoversFromSpineLinkDown)
{
    auto run = [](const std::string& down, std::string* usedSpine) {
        GpuClusterHelper cluster;
        cluster.SetSpec(TwoSpines());
        Ptr<ClusterTopology> topo = cluster.BuildTopology();
        Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
        Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
        pkt->SetTransport(tcp);
        pkt->SetTopology(topo);
        pkt->SetAttribute("RoutingConvergence", TimeValue(MicroSeconds(100)));
        pkt->Build();
        if (!down.empty())
        {
            pkt->ScheduleFabricEvents(
                gpusim::ResolveFabricEvents(gpusim::ParseLinkDown(down), *topo));
        }
        double us = -1;
        pkt->StartTransfer(1, 0, 2, 20'000'000, 0, [&us](const TransferRecord& r) {
            us = r.delivered.GetNanoSeconds() / 1e3;
        });
        Simulator::Stop(Seconds(1));
        Simulator::Run();
        if (usedSpine)
        {
            for (const auto& s : pkt->GetLinkStats())
            {
                if (s.from == "leaf0" && s.txBytes > 1'000'000)
                {
                    *usedSpine = s.to;
                }
            }
        }
        Simulator::Destroy();
        return us;
    };
    std::string used;
    const double base = run("", &used);
    ASSERT_GT(base, 0);
    ASSERT_FALSE(used.empty());
    const double failed = run("leaf0-" + used + "@0.5ms", nullptr);
    EXPECT_GT(failed, base + 100); // at least the convergence delay
    EXPECT_LT(failed, base + 20000);
}

// (g) Bad items name what is wrong.
TEST_F(FabricFaults, BadInputIsRejectedNamingTheItem)
{
    auto message = [](auto f) {
        try
        {
            f();
        }
        catch (const std::exception& e)
        {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    GpuClusterHelper cluster;
    cluster.SetSpec(TwoSpines());
    Ptr<ClusterTopology> topo = cluster.BuildTopology();
    auto resolve = [&](const std::string& item) {
        gpusim::ResolveFabricEvents(gpusim::ParseLinkDown(item), *topo);
    };
    EXPECT_NE(message([&] { resolve("leaf9-spine0@1ms"); }).find("unknown vertex 'leaf9'"),
              std::string::npos);
    EXPECT_NE(message([&] { resolve("leaf0-leaf1@1ms"); }).find("no link between leaf0 and leaf1"),
              std::string::npos);
    EXPECT_NE(message([&] { resolve("nowhere@1ms"); }).find("'nowhere@1ms'"), std::string::npos);
    EXPECT_NE(message([&] { resolve("s0/gpu0@1ms"); }).find("is a GPU"), std::string::npos);
    EXPECT_NE(message([] { gpusim::ParseLinkDown("leaf0-spine0@3ms,up@1ms"); })
                  .find("not after the event's time"),
              std::string::npos);
    EXPECT_NE(message([] { gpusim::ParseLinkDown("leaf0-spine0@-1ms"); }).find("negative"),
              std::string::npos);
    EXPECT_NE(message([] { gpusim::ParseLinkDown("leaf0-spine0@soon"); }).find("bad time"),
              std::string::npos);
    EXPECT_NE(message([] { gpusim::ParseLinkRate("leaf0-spine0=-50%@1ms"); }).find("> 0"),
              std::string::npos);
    EXPECT_NE(message([] { gpusim::ParseLinkRate("leaf0-spine0=fast@1ms"); }).find("bad rate"),
              std::string::npos);
    EXPECT_NE(message([] { gpusim::ParseStraggler("0=-2x@1ms"); }).find("factor must be > 0"),
              std::string::npos);
    EXPECT_NE(message([] { gpusim::ParseStraggler("0=2@1ms"); }).find("needs a unit"),
              std::string::npos);
    // A straggler outside the cluster.
    gpusim::ClusterSpec spec = TwoSpines();
    spec.stragglers.push_back(gpusim::ParseStraggler("9=2x@0"));
    EXPECT_NE(message([&] { gpusim::ValidateClusterSpec(spec); }).find("'9=2x@0'"),
              std::string::npos);
    // YAML and the command line use the same items.
    const gpusim::ClusterSpec yaml = gpusim::ParseClusterSpecYaml(
        "servers: 4\ngpus_per_server: 1\nnics_per_server: 1\nfabric: leaf-spine\n"
        "nics_per_leaf: 2\nfaults:\n  - link-down: leaf0-spine1@1ms,up@3ms\n"
        "  - link-rate: leaf1-spine0=50%@0\n  - straggler: 2=1.5x@2ms\n"
        "  - convergence: 150ms\n",
        "t.yaml");
    ASSERT_EQ(yaml.fabricEvents.size(), 3u);
    EXPECT_EQ(yaml.fabricEvents[1].kind, gpusim::FabricEventKind::LinkUp);
    EXPECT_EQ(yaml.fabricEvents[1].at, MilliSeconds(3));
    EXPECT_DOUBLE_EQ(yaml.fabricEvents[2].rateFraction, 0.5);
    ASSERT_EQ(yaml.stragglers.size(), 1u);
    EXPECT_EQ(yaml.routingConvergence, MilliSeconds(150));
    EXPECT_NE(message([] {
                  gpusim::ParseClusterSpecYaml("faults:\n  - link-down: leaf0@later\n", "f.yaml");
              }).find("f.yaml:2"),
              std::string::npos);
    const gpusim::Options o({"--preset", "dgx-h100", "--link-down", "leaf0-spine0@1ms",
                             "--link-down", "leaf0-spine1@2ms", "--straggler", "1=2x@0"},
                            gpusim::kClusterOptions,
                            {});
    const gpusim::ClusterSpec cli = gpusim::SpecFromOptions(o, 16);
    EXPECT_EQ(cli.fabricEvents.size(), 2u);
    EXPECT_EQ(cli.stragglers.size(), 1u);
    const gpusim::Options bad({"--link-rate", "leaf0-spine0=0%@1ms"}, gpusim::kClusterOptions, {});
    EXPECT_NE(message([&] { gpusim::SpecFromOptions(bad, 16); }).find("--link-rate"),
              std::string::npos);
    // --nic-stack, like the other cluster options, overrides the preset.
    const gpusim::Options efa({"--preset", "dgx-a100", "--nic-stack", "efa"},
                              gpusim::kClusterOptions,
                              {});
    const gpusim::ClusterSpec onEfa = gpusim::SpecFromOptions(efa, 16);
    EXPECT_EQ(onEfa.nicStack, "efa");
    EXPECT_DOUBLE_EQ(onEfa.nccl.netSelectionUs, 75.0);
    EXPECT_NE(gpusim::DescribeCluster(onEfa).find("200 Gb/s EFA NICs"), std::string::npos);
    const gpusim::Options badStack({"--nic-stack", "ib"}, gpusim::kClusterOptions, {});
    EXPECT_NE(message([&] { gpusim::SpecFromOptions(badStack, 16); })
                  .find("--nic-stack: unknown NIC stack 'ib' (verbs, efa)"),
              std::string::npos);
}

// No fault configured: nothing changes (the same delivery time to the nanosecond as the
// closed form), and a backend without events reports none.
TEST_F(FabricFaults, NoFaultsNoChange)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(FlatSpec(2, 100));
    Ptr<ClusterTopology> topo = cluster.BuildTopology();
    EXPECT_TRUE(topo->GetFabricEvents().empty());
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(topo);
    EXPECT_FALSE(net->HasFabricEvents());
    EXPECT_EQ(net->DownLinksText(), "");
}
