// Overlaps of communication with compute in generated training (doc/generate.md, "Overlaps"):
// each has a hand-derived time, and switching it off changes the iteration time by what the
// report says it hid.
#include "training-test-util.h"

#include "ns3/double.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <gtest/gtest.h>

using namespace ns3;
using namespace ns3::gpusim;
using gpusim_test::Plan;
using gpusim_test::WideTinyGpt;

namespace
{

/// n single-GPU servers on one switch with `gbps` NICs, NCCL at its ideal bandwidth on rings,
/// so a collective's time has a closed form.
TrainingReport
SimulateOnFlatRing(const GeneratedTraining& g, uint32_t servers, double gbps)
{
    ClusterSpec spec;
    spec.servers = servers;
    spec.gpusPerServer = 1;
    spec.nicsPerServer = 1;
    spec.nicGbps = gbps;
    spec.fabric = "single-switch";
    spec.linkLatencyUs = 1.0;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Efficiency", DoubleValue(1));
    h.SetNcclAttribute("Algorithm", StringValue("ring"));
    TrainingReport r = SimulateTraining(g, h, gpus);
    Simulator::Destroy();
    return r;
}

CommClassTime
CommOf(const StageReport& s, const std::string& name)
{
    for (const CommClassTime& k : s.comm)
    {
        if (k.name == name)
        {
            return k;
        }
    }
    return CommClassTime();
}

} // namespace

// --overlap-param-gather: the distributed optimizer's parameter AllGathers run under the next
// forward, each unit's first forward waiting for its bucket. One bucket per unit: head (the
// final norm: tied embeddings, PP 1), 4 layers, embedding. On 8 GPUs with 400 Gb/s rings a
// layer's gather (12h^2 + 13h bf16 parameters: 25.2 MB, 7/8 of it in 441 us) is shorter than
// a layer's forward (24 T h^2 = 4.1e11 FLOPs for T = 4 x 4096 tokens: ~600 us at 70 % of the
// H100's peak), so each layer's forward hides the next layer's gather. Exposed: the embedding's
// gather ((8064 + 4096) x 1024 bf16 parameters), and the first layer's, which runs under the
// embedding's forward (a lookup: a few microseconds).
TEST(TrainingOverlap, ParamGatherHidesAllButTheFirstTwoBuckets)
{
    const ModelSpec m = WideTinyGpt(4096);
    TrainingPlan p = Plan(1, 1, 8, 64);
    p.microBatch = 4;
    p.distributedOptimizer = true;
    p.bucketParams = 1; // every unit closes its own bucket
    const TrainingReport on = SimulateOnFlatRing(GenerateTraining(m, p), 8, 400);
    p.overlapParamGather = false;
    const TrainingReport off = SimulateOnFlatRing(GenerateTraining(m, p), 8, 400);
    ASSERT_TRUE(on.completed) << on.stuck;
    ASSERT_TRUE(off.completed) << off.stuck;
    const CommClassTime gOn = CommOf(on.stages[0], "param-gather");
    const CommClassTime gOff = CommOf(off.stages[0], "param-gather");
    // The same gathers run in both; after the optimizer step nothing hides them.
    const double h = 1024;
    const double params = 4 * (12 * h * h + 13 * h) + (8064 + 4096) * h + 2 * h;
    const double ideal = 7.0 / 8 * params * 2 / 50e9 * 1e6; // us, no latency
    EXPECT_NEAR(gOff.busyUs, gOn.busyUs, 0.01 * gOn.busyUs);
    EXPECT_NEAR(gOff.busyUs / ideal, 1.0, 0.1) << gOff.busyUs << " us vs " << ideal;
    EXPECT_LT(gOff.hiddenUs, 0.01 * gOff.busyUs);
    // Exposed with the overlap: the embedding's gather and the first layer's.
    const double exposedUs = 7.0 / 8 * ((8064 + 4096) * h + 12 * h * h + 13 * h) * 2 / 50e9 * 1e6;
    EXPECT_NEAR((gOn.busyUs - gOn.hiddenUs) / exposedUs, 1.0, 0.05)
        << gOn.busyUs << " us run, " << gOn.hiddenUs << " us hidden";
    // Switching it off costs exactly what it hid.
    EXPECT_NEAR(off.iterationUs - on.iterationUs, gOn.hiddenUs, 0.01 * gOn.hiddenUs + 0.5)
        << off.iterationUs << " vs " << on.iterationUs;
    EXPECT_NE(off.plan.find("no param-gather overlap"), std::string::npos) << off.plan;
}

// Without the distributed optimizer there is nothing to gather: the option changes nothing.
TEST(TrainingOverlap, ParamGatherNeedsTheDistributedOptimizer)
{
    const ModelSpec m = WideTinyGpt(1024);
    TrainingPlan p = Plan(1, 1, 8, 16);
    const TrainingReport on = SimulateOnFlatRing(GenerateTraining(m, p), 8, 400);
    p.overlapParamGather = false;
    const TrainingReport off = SimulateOnFlatRing(GenerateTraining(m, p), 8, 400);
    EXPECT_EQ(on.iterationUs, off.iterationUs);
    EXPECT_EQ(CommOf(on.stages[0], "param-gather").busyUs, 0);
    EXPECT_GT(CommOf(on.stages[0], "grad-reduce").busyUs, 0);
}
