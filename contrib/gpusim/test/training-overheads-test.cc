// Per-iteration overheads of generated training (doc/generate.md, "Per-iteration overheads"):
// each has a hand-derived time, and switching it off changes the iteration time by that much.
#include "training-test-util.h"

#include "ns3/gpu-spec.h"
#include "ns3/kernel-cost-model.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <gtest/gtest.h>

using namespace ns3;
using namespace ns3::gpusim;
using gpusim_test::OpsOf;
using gpusim_test::Plan;
using gpusim_test::TinyGpt;

namespace
{

/// Two dgx-h100 servers with one GPU and one NIC each: a 2-rank collective crosses the network
/// on every step, so an 8-byte AllReduce is NCCL's ring/LL latency: baseLat 6.6 us + 2 steps x
/// network hwLat 2.7 us (the tree costs 6.8 + 2 x 5.0; Collectives.SmallSizesPayNcclsLatency-
/// Constants derives the same constants).
ClusterSpec
TwoSingleGpuServers()
{
    ClusterSpec s = gpusim_test::DgxH100(2);
    s.gpusPerServer = 1;
    s.nicsPerServer = 1;
    return s;
}

constexpr double kScalarAllReduceUs = 6.6 + 2 * 2.7;

/// DP 2 over the two servers, 4 micro-batches, the distributed optimizer (its gradient norm
/// meets over every rank).
TrainingPlan
DpPlan()
{
    TrainingPlan p = Plan(1, 1, 2, 8);
    p.distributedOptimizer = true;
    return p;
}

CommClassTime
ClassOf(const TrainingReport& r, const std::string& name)
{
    for (const CommClassTime& k : r.stages.at(0).comm)
    {
        if (k.name == name)
        {
            return k;
        }
    }
    return CommClassTime();
}

TrainingReport
RunPlan(const TrainingPlan& p)
{
    const TrainingReport r = SimulateTraining(GenerateTraining(TinyGpt(), p), TwoSingleGpuServers());
    EXPECT_TRUE(r.completed) << r.stuck;
    return r;
}

} // namespace

// Megatron's loss_func (pretrain_gpt.py, core_r0.8.0:145) all-reduces each micro-batch's loss
// sum and token count over DP, for logging, on the compute stream: with one stage every one of
// them holds up the next kernel.
TEST(TrainingOverheads, LossAllReducePerMicroBatchOnTheComputeStream)
{
    const TrainingPlan on = DpPlan();
    TrainingPlan off = on;
    off.lossAllReduce = false;
    const GeneratedTraining g = GenerateTraining(TinyGpt(), on);
    uint32_t losses = 0;
    for (const Op& op : OpsOf(*g.job, 0))
    {
        if (op.kind == OpKind::Collective && op.comm.rfind("dp.", 0) == 0 && op.stream == 1)
        {
            EXPECT_EQ(op.coll, CollKind::AllReduce);
            EXPECT_EQ(op.bytes, 8u);
            ++losses;
        }
    }
    EXPECT_EQ(losses, 4u);
    const TrainingReport a = RunPlan(on);
    const TrainingReport b = RunPlan(off);
    const CommClassTime loss = ClassOf(a, "loss");
    EXPECT_NEAR(loss.busyUs, 4 * kScalarAllReduceUs, 0.01);
    EXPECT_NEAR(loss.hiddenUs, 0.0, 0.01);
    EXPECT_EQ(ClassOf(b, "loss").busyUs, 0.0);
    EXPECT_NEAR(a.iterationUs - b.iterationUs, 4 * kScalarAllReduceUs, 0.01);
}

// Gradient clipping (Megatron's --clip-grad 1.0): a pass reading the local fp32 gradients for
// their squared norm, then one fp32 AllReduce over every rank (the distributed optimizer's
// model-parallel group is "the entire world", distrib_optimizer.py:547), before Adam.
TEST(TrainingOverheads, GradientNormPassAndAllReduceBeforeAdam)
{
    const TrainingPlan on = DpPlan();
    TrainingPlan off = on;
    off.clipGrad = false;
    const GeneratedTraining g = GenerateTraining(TinyGpt(), on);
    const std::vector<Op>& ops = OpsOf(*g.job, 0);
    const Op* normPass = nullptr;
    int order = 0; // 1: norm pass seen, 2: its AllReduce seen, 3: Adam after it
    for (const Op& op : ops)
    {
        if (op.kind == OpKind::Kernel && op.name == "optimizer_grads")
        {
            normPass = &op;
            order = 1;
        }
        else if (order == 1 && op.kind == OpKind::Collective && op.comm == "world")
        {
            EXPECT_EQ(op.coll, CollKind::AllReduce);
            EXPECT_EQ(op.bytes, 4u);
            order = 2;
        }
        else if (order == 2 && op.kind == OpKind::Kernel && op.name == "optimizer")
        {
            order = 3;
        }
    }
    ASSERT_NE(normPass, nullptr);
    EXPECT_EQ(order, 3);
    // Without clipping nothing reads the gradients for a norm: bf16 training with fp32
    // gradients has no pass before Adam.
    const GeneratedTraining unclipped = GenerateTraining(TinyGpt(), off);
    for (const Op& op : OpsOf(*unclipped.job, 0))
    {
        EXPECT_NE(op.name, "optimizer_grads");
        EXPECT_NE(op.comm, "world");
    }
    // The rank's shard (half of the parameters) read once as fp32.
    const double shard = ParamsOfRank(TinyGpt(), on, 0).Total() / 2;
    EXPECT_NEAR(double(normPass->memBytes), 4 * shard, 1.0);
    GpuSpec h100;
    ASSERT_TRUE(LookupGpuSpec("h100-sxm", h100));
    const double passUs =
        CreateObject<RecordedDurationCostModel>()->GetDuration(*normPass, h100).GetNanoSeconds() /
        1e3;
    const TrainingReport a = RunPlan(on);
    const TrainingReport b = RunPlan(off);
    const CommClassTime stats = ClassOf(a, "optimizer-stats");
    EXPECT_NEAR(stats.busyUs, kScalarAllReduceUs, 0.01);
    EXPECT_NEAR(stats.hiddenUs, 0.0, 0.01);
    EXPECT_NEAR(a.iterationUs - b.iterationUs, kScalarAllReduceUs + passUs, 0.01);
}

// Without the distributed optimizer the norm meets over the model-parallel group (TP x PP), and
// with TP = PP = 1 there is nothing to meet.
TEST(TrainingOverheads, GradientNormGroupIsModelParallelWithoutTheDistributedOptimizer)
{
    TrainingPlan p = Plan(2, 2, 2, 8);
    const GeneratedTraining g = GenerateTraining(TinyGpt(2), p);
    ValidateJobTrace(*g.job);
    for (uint32_t r = 0; r < g.job->ranks.size(); ++r)
    {
        uint32_t norms = 0;
        for (const Op& op : OpsOf(*g.job, r))
        {
            norms += op.kind == OpKind::Collective && op.comm.rfind("mp.", 0) == 0;
        }
        EXPECT_EQ(norms, 1u) << "rank " << r;
    }
    const GeneratedTraining dpOnly = GenerateTraining(TinyGpt(), Plan(1, 1, 2, 8));
    for (const Op& op : OpsOf(*dpOnly.job, 0))
    {
        EXPECT_FALSE(op.kind == OpKind::Collective && op.comm.rfind("mp.", 0) == 0);
    }
}
