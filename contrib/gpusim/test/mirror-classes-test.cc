// Mirror classes (SplitMirrorClasses, doc/flow-backend.md "Mirrored ranks"): replicas whose
// pipeline sends and DP ring edges take other spine links (ECMP) than the others' run as
// classes of their own; the mirrored iteration is checked against the run with every rank
// simulated (the second method), and against one class per op list (MirrorSplitClasses
// false, every replica in lockstep).
#include "training-test-util.h"

#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/llm-model.h"
#include "ns3/simulator.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace ns3;
using namespace ns3::gpusim;
using gpusim_test::DgxH100;
using gpusim_test::Plan;
using gpusim_test::WideTinyGpt;

namespace
{

/// dgx-h100 servers, two per rail leaf: leaves of servers {0,1}, {2,3}, ... per rail and two
/// spines, so every send between stages on different leaves crosses a spine, and two replicas'
/// sends on one rail take the same spine (and share its links) or not by their ECMP hash.
ClusterSpec
TwoServersPerLeaf(uint32_t servers)
{
    ClusterSpec s = DgxH100(servers);
    s.nicsPerLeaf = 2;
    s.routing = "ecmp"; // per-flow hashing keeps the spines apart (the preset adapts)
    return s;
}

struct MirrorRun
{
    TrainingReport report;
    std::set<uint32_t> representatives;
};

MirrorRun
Simulate(const GeneratedTraining& g, const ClusterSpec& spec, bool mirror, bool split)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> backend = CreateObject<FlowBackend>();
    backend->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper helper;
    helper.SetBackend(backend);
    ConfigureTrainingSpeed(helper, {"flows", mirror});
    helper.SetWorkloadAttribute("MirrorSplitClasses", BooleanValue(split));
    MirrorRun run;
    Ptr<GpuWorkload> w;
    run.report = SimulateTraining(g, helper, gpus, &w);
    for (uint32_t r = 0; r < g.plan.Gpus(); ++r)
    {
        run.representatives.insert(w->RepresentativeOf(r));
    }
    w->Dispose();
    Simulator::Destroy();
    return run;
}

} // namespace

TEST(MirrorClasses, CollidingReplicasRunAsClassesOfTheirOwn)
{
    // TP 8 x PP 2 x DP 4 on 8 servers: stage 0 on servers 0-3 (leaves 0 and 1 of each rail),
    // stage 1 on servers 4-7 (leaves 2 and 3). Each rail's leaf carries two replicas' sends
    // to the next stage over the two spines, and the DP rings cross the spines too.
    const TrainingPlan plan = Plan(8, 2, 4, 16);
    const ClusterSpec spec = TwoServersPerLeaf(8);
    for (const uint32_t seq : {4096u, 2048u})
    {
        SCOPED_TRACE("sequence length " + std::to_string(seq));
        const GeneratedTraining g = GenerateTraining(WideTinyGpt(seq), plan);
        const MirrorRun all = Simulate(g, spec, false, false);
        const MirrorRun lockstep = Simulate(g, spec, true, false);
        const MirrorRun split = Simulate(g, spec, true, true);
        ASSERT_TRUE(all.report.completed) << all.report.stuck;
        ASSERT_TRUE(lockstep.report.completed) << lockstep.report.stuck;
        ASSERT_TRUE(split.report.completed) << split.report.stuck;
        EXPECT_EQ(all.representatives.size(), 64u);
        // One class per stage: the first rank of each stage runs the list.
        EXPECT_EQ(lockstep.representatives, (std::set<uint32_t>{0, 32}));
        EXPECT_GT(lockstep.report.mirrorDiverged, 0u);
        // Split: no two replicas see the same links (their sends and ring edges take other
        // spines), so each replica's TP group (one server, one block) is a class: its first
        // rank represents it, the other 7 mirror it.
        std::set<uint32_t> leaders;
        for (uint32_t r = 0; r < 64; r += 8)
        {
            leaders.insert(r);
        }
        EXPECT_EQ(split.representatives, leaders);
        EXPECT_EQ(split.report.mirroredRanks, 56u);
        EXPECT_EQ(split.report.peakMemoryBytes, all.report.peakMemoryBytes);
        // The iteration: that of every rank simulated, up to what the lockstep inside a TP
        // group leaves (a member that received late holds its group at the next collective).
        EXPECT_NEAR(split.report.iterationUs / all.report.iterationUs, 1.0, 0.005);
        if (seq == 4096)
        {
            EXPECT_EQ(split.report.iterationUs, all.report.iterationUs);
        }
    }
}
