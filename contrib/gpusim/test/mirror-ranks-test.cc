// Mirrored ranks (GpuWorkload MirrorIdenticalRanks, doc/flow-backend.md): ranks that share a
// representative's op list launch its collectives on their own communicators instead of
// running host threads and streams, and the class moves in lockstep with its slowest member.
// Checked against the same jobs with every rank simulated (the second method), and on a
// hand-built job whose mirror is slower than its representative.
#include "cli-test-util.h"
#include "training-test-util.h"

#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/llm-model.h"
#include "ns3/simulator.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <gtest/gtest.h>

#include <string>

using namespace ns3;
using namespace ns3::gpusim;
using gpusim_test::DgxH100;
using gpusim_test::Plan;
using gpusim_test::WideTinyGpt;

namespace
{

void
ExpectSameReport(const TrainingReport& mirrored, const TrainingReport& all)
{
    ASSERT_TRUE(mirrored.completed) << mirrored.stuck;
    ASSERT_TRUE(all.completed) << all.stuck;
    EXPECT_GT(all.iterationUs, 0);
    EXPECT_EQ(mirrored.iterationUs, all.iterationUs);
    EXPECT_EQ(mirrored.peakMemoryBytes, all.peakMemoryBytes);
    EXPECT_EQ(mirrored.rankPeakMemoryBytes, all.rankPeakMemoryBytes);
    ASSERT_EQ(mirrored.stages.size(), all.stages.size());
    for (size_t s = 0; s < all.stages.size(); ++s)
    {
        EXPECT_EQ(mirrored.stages[s].iterationUs, all.stages[s].iterationUs) << "stage " << s;
        EXPECT_EQ(mirrored.stages[s].exposedCommUs, all.stages[s].exposedCommUs) << "stage " << s;
        EXPECT_EQ(mirrored.stages[s].bubbleUs, all.stages[s].bubbleUs) << "stage " << s;
    }
}

} // namespace

TEST(MirrorRanks, GeneratedPlansMatchEveryRankSimulated)
{
    // Symmetric placements (no ECMP choice between ranks of a class): mirroring must give the
    // same iteration to the nanosecond as simulating every rank, at both fidelities.
    struct Case
    {
        TrainingPlan plan;
        uint32_t servers;
    };
    const Case cases[] = {{Plan(2, 2, 2, 8), 1}, {Plan(4, 2, 2, 8), 2}, {Plan(8, 2, 2, 8), 4}};
    for (const Case& c : cases)
    {
        const GeneratedTraining g = GenerateTraining(WideTinyGpt(), c.plan);
        for (const std::string fidelity : {"chunk", "flows"})
        {
            SCOPED_TRACE(DescribePlan(c.plan) + " at " + fidelity);
            const TrainingReport all = SimulateTraining(g, DgxH100(c.servers), {fidelity, false});
            const TrainingReport mirrored =
                SimulateTraining(g, DgxH100(c.servers), {fidelity, true});
            ExpectSameReport(mirrored, all);
            EXPECT_EQ(all.mirroredRanks, 0u);
            EXPECT_EQ(mirrored.mirroredRanks, c.plan.Gpus() - c.plan.pp);
            EXPECT_GT(mirrored.mirroredLaunches, 0u);
            EXPECT_EQ(mirrored.mirrorDiverged, 0u);
        }
    }
}

TEST(MirrorRanks, FastPathWithinOnePercentOfDetailedModel)
{
    // The default TrainingSpeed (flows + mirrored) against the detailed model (chunk, every
    // rank) on a plan with TP AllReduces on NVLink, PP across servers and a DP ring.
    const TrainingPlan p = Plan(4, 2, 2, 16);
    const GeneratedTraining g = GenerateTraining(WideTinyGpt(), p);
    const TrainingReport detailed = SimulateTraining(g, DgxH100(2), {"chunk", false});
    const TrainingReport fast = SimulateTraining(g, DgxH100(2));
    ASSERT_TRUE(detailed.completed) << detailed.stuck;
    ASSERT_TRUE(fast.completed) << fast.stuck;
    EXPECT_NEAR(fast.iterationUs / detailed.iterationUs, 1.0, 0.01);
    EXPECT_EQ(fast.mirroredRanks, 14u);
}

namespace
{

struct LockstepRun
{
    RunReport report;
    std::vector<CollectiveRecord> collectives;
    GpuWorkload::MirrorSummary mirrors;
};

/// Ranks 0 and 1 all-reduce over NVLink (communicator "a", server 0); ranks 2 and 8 run the
/// same program on communicator "b", which crosses to server 1 (slower). Then a kernel.
/// With `share`, ranks 1, 2 and 8 share rank 0's op list (their own comm_init lines only).
LockstepRun
RunLockstepJob(bool share, bool mirror, bool split = false)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(DgxH100(2));
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    JobBuilder b(16);
    const uint64_t bytes = 64ull << 20;
    b.Rank(0).CommInit("a", 2, 0).AllReduce(1, "a", bytes).Kernel(1, "k", 100);
    b.Rank(1).CommInit("a", 2, 1).AllReduce(1, "a", bytes).Kernel(1, "k", 100);
    b.Rank(2).CommInit("b", 2, 0).AllReduce(1, "b", bytes).Kernel(1, "k", 100);
    b.Rank(8).CommInit("b", 2, 1).AllReduce(1, "b", bytes).Kernel(1, "k", 100);
    auto job = std::make_shared<JobTrace>(b.Build());
    if (share)
    {
        for (uint32_t r : {1u, 2u, 8u})
        {
            RankTrace& rt = job->ranks[r];
            std::vector<Op> inits;
            for (const Op& op : rt.ops)
            {
                if (op.kind == OpKind::CommInit)
                {
                    inits.push_back(op);
                }
            }
            rt.ops = inits;
            rt.opsFrom = 0;
        }
    }
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetWorkloadAttribute("MirrorIdenticalRanks", BooleanValue(mirror));
    h.SetWorkloadAttribute("MirrorSplitClasses", BooleanValue(split));
    Ptr<GpuWorkload> w = h.Install(job, gpus);
    Simulator::Run();
    LockstepRun r;
    r.report = w->Check();
    r.collectives = w->GetCollectives();
    r.mirrors = w->GetMirrorSummary();
    w->Dispose();
    Simulator::Destroy();
    return r;
}

} // namespace

TEST(MirrorRanks, LockstepWaitsForTheSlowestMirror)
{
    const LockstepRun full = RunLockstepJob(false, false);
    const LockstepRun shared = RunLockstepJob(true, false);
    const LockstepRun mirrored = RunLockstepJob(true, true);
    ASSERT_TRUE(full.report.completed) << full.report.stuck;
    ASSERT_TRUE(shared.report.completed) << shared.report.stuck;
    ASSERT_TRUE(mirrored.report.completed) << mirrored.report.stuck;
    // Every rank simulated: "b" (across servers) ends after "a" (NVLink).
    ASSERT_EQ(full.collectives.size(), 2u);
    Time endA;
    Time endB;
    for (const CollectiveRecord& c : full.collectives)
    {
        (c.comm == "a" ? endA : endB) = c.End();
    }
    ASSERT_GT(endB, endA);
    // Sharing the list without mirroring changes nothing.
    EXPECT_EQ(shared.report.endTime, full.report.endTime);
    EXPECT_EQ(shared.mirrors.mirrored, 0u);
    // Mirrored: both collectives still run on the network, at the same instants; the class
    // ends when its slowest member does, so the run ends with the slowest rank's kernel.
    EXPECT_EQ(mirrored.report.endTime, full.report.endTime);
    EXPECT_EQ(mirrored.report.endTime, endB + MicroSeconds(100));
    ASSERT_EQ(mirrored.collectives.size(), 2u);
    for (const CollectiveRecord& c : mirrored.collectives)
    {
        EXPECT_EQ(c.End(), c.comm == "a" ? endA : endB) << c.comm;
    }
    EXPECT_EQ(mirrored.mirrors.mirrored, 3u);
    EXPECT_EQ(mirrored.mirrors.representatives, 13u);
    EXPECT_EQ(mirrored.mirrors.launches, 3u);
    EXPECT_EQ(mirrored.mirrors.diverged, 1u);
    EXPECT_EQ(mirrored.mirrors.maxDivergence, endB - endA);
    // Split classes (the default): "a" lies on one server and binds ranks 0 and 1 into a
    // block; ranks 2 and 8 ("b", across servers) are another class, so nobody waits for a
    // member that is not its own.
    const LockstepRun split = RunLockstepJob(true, true, true);
    ASSERT_TRUE(split.report.completed) << split.report.stuck;
    EXPECT_EQ(split.report.endTime, full.report.endTime);
    EXPECT_EQ(split.mirrors.mirrored, 2u);
    EXPECT_EQ(split.mirrors.diverged, 0u);
}

TEST(MirrorRanks, PeerCopiesKeepRanksOnTheirOwn)
{
    // A peer copy names absolute ranks, which a mirror cannot re-target: no mirroring.
    GpuClusterHelper cluster;
    cluster.SetSpec(DgxH100(1));
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    JobBuilder b(8);
    b.AllRanks().Kernel(1, "k", 10);
    b.Rank(0).PeerCopy(1, 0, 1, 1 << 20);
    b.Rank(1).PeerCopy(1, 0, 1, 1 << 20);
    auto job = std::make_shared<JobTrace>(b.Build());
    job->ranks[1].ops.clear();
    job->ranks[1].opsFrom = 0;
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetWorkloadAttribute("MirrorIdenticalRanks", BooleanValue(true));
    Ptr<GpuWorkload> w = h.Install(job, gpus);
    Simulator::Run();
    EXPECT_TRUE(w->Check().completed);
    EXPECT_EQ(w->GetMirrorSummary().mirrored, 0u);
    EXPECT_EQ(w->RepresentativeOf(1), 1u);
    w->Dispose();
    Simulator::Destroy();
}

TEST(MirrorRanks, CommandLineChoosesRanks)
{
    const std::vector<std::string> base = {"generate", "--model", "llama3-8b", "--tp", "8",
                                           "--pp", "2", "--dp", "2", "--global-batch", "4",
                                           "--preset", "dgx-h100", "--simulate"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        return Cli(args);
    };
    const CliResult bad = with({"--ranks", "some"});
    EXPECT_EQ(bad.code, 1);
    EXPECT_NE(bad.err.find("--ranks must be all, mirrored or lockstep"), std::string::npos) << bad.err;
    const CliResult mirrored = with({});
    const CliResult all = with({"--ranks", "all"});
    ASSERT_EQ(mirrored.code, 0) << mirrored.err;
    ASSERT_EQ(all.code, 0) << all.err;
    EXPECT_NE(mirrored.out.find("# 30 of 32 ranks mirrored"), std::string::npos) << mirrored.out;
    EXPECT_EQ(all.out.find("mirrored their stage"), std::string::npos) << all.out;
    auto iterationLine = [](const std::string& out) {
        const size_t at = out.find("iteration time");
        return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
    };
    EXPECT_FALSE(iterationLine(all.out).empty()) << all.out;
    EXPECT_EQ(iterationLine(mirrored.out), iterationLine(all.out));
    // One class per stage (what search uses): on one leaf the replicas see the same network.
    const CliResult lockstep = with({"--ranks", "lockstep"});
    ASSERT_EQ(lockstep.code, 0) << lockstep.err;
    EXPECT_NE(lockstep.out.find("# 30 of 32 ranks mirrored"), std::string::npos) << lockstep.out;
    EXPECT_EQ(iterationLine(lockstep.out), iterationLine(all.out));
}
