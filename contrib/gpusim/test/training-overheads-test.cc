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
    p.hostLaunchUs = 0; // the host ahead of the GPU: only the scalar collectives differ
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

// Eager mode's host time per launch (TrainingPlan::hostLaunchUs: Python, the dispatcher and
// the launch; 16.7 us, the median gap between consecutive launches in a PyTorch eager trace
// recorded on an H100 host). The host issues every kernel, copy and collective that long after
// the one before. TinyGpt's kernels on one H100 all take less, so the host sets the pace:
// each of the K launches adds exactly the gap, and 200 us more per launch cost K x 200 us.
// GEMM-bound layers hide the same 16.7 us behind their kernels.
TEST(TrainingOverheads, HostLaunchGapsPaceTinyKernelsAndHideBehindLongOnes)
{
    ClusterSpec one = gpusim_test::DgxH100(1);
    one.gpusPerServer = 1;
    one.nicsPerServer = 1;
    TrainingPlan p = Plan(1, 1, 1, 2);
    EXPECT_DOUBLE_EQ(p.hostLaunchUs, 16.7) << "eager mode by default";
    const GeneratedTraining g = GenerateTraining(TinyGpt(), p);
    uint32_t launches = 0;
    for (const Op& op : OpsOf(*g.job, 0))
    {
        const bool launch = op.kind == OpKind::Kernel || op.kind == OpKind::Memcpy ||
                            op.kind == OpKind::Memset || op.kind == OpKind::Collective;
        EXPECT_EQ(op.cpuUs, launch ? 16.7 : 0.0) << ToString(op.kind) << " " << op.name;
        launches += launch;
    }
    ASSERT_GT(launches, 100u);
    auto iterationUs = [&](const ModelSpec& m, double gapUs) {
        TrainingPlan q = p;
        q.hostLaunchUs = gapUs;
        const TrainingReport r = SimulateTraining(GenerateTraining(m, q), one);
        EXPECT_TRUE(r.completed) << r.stuck;
        return r.iterationUs;
    };
    const double at200 = iterationUs(TinyGpt(), 200);
    const double at400 = iterationUs(TinyGpt(), 400);
    EXPECT_NEAR(at400 - at200, launches * 200.0, 0.01 * launches);
    const double graphs = iterationUs(TinyGpt(), 0);
    EXPECT_GT(iterationUs(TinyGpt(), 16.7), graphs + 0.5 * launches * (16.7 - 2.0))
        << "the 2 us kernels wait for the host";
    // A GEMM-bound GPT: its GEMMs take milliseconds, so the host runs ahead after the first
    // launches and the gaps cost next to nothing.
    const ModelSpec wide = gpusim_test::GemmBoundGpt(2);
    const double wideGraphs = iterationUs(wide, 0);
    EXPECT_LT(iterationUs(wide, 16.7) - wideGraphs, 1e-3 * wideGraphs);
}
