// Overlaps of communication with compute in generated training (doc/generate.md, "Overlaps"):
// each has a hand-derived time, and switching it off changes the iteration time by what the
// report says it hid.
#include "flow-test-topology.h"
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

#include <map>

using namespace ns3;
using gpusim_test::FlatSpec;
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
    GpuClusterHelper cluster;
    cluster.SetSpec(gpusim_test::FlatSpec(servers, gbps));
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

namespace
{

/// A GEMM-bound GPT for TP 8 (h 8192, 64 heads, FFN 4h, 2 layers, s 4096): its GEMMs take
/// hundreds of microseconds, well above the minimum kernel time, so split GEMMs cost their
/// FLOPs only.
ModelSpec
WideGpt()
{
    ModelSpec m = WideTinyGpt(4096);
    m.layers = 2;
    m.hidden = 8192;
    m.heads = 64;
    m.kvHeads = 64;
    m.ffn = 32768;
    return m;
}

TrainingPlan
Tp8Sp(bool overlap)
{
    TrainingPlan p = Plan(8, 1, 1, 1);
    p.sequenceParallel = true;
    p.tpCommOverlap = overlap;
    return p;
}

} // namespace

// --tp-comm-overlap splits each layer's TP collectives as Transformer Engine's userbuffers do:
// ring exchanges (7 send/recv steps on TP 8) for qkv and fc1 forward and the fc2 and proj data
// gradients, 4 pipelined ReduceScatters for proj and fc2 forward, bulk AllGather +
// ReduceScatter under the qkv and fc1 backward GEMMs. Counted by hand for 2 layers and one
// micro-batch on stage 0 (which also holds the embedding and the head).
TEST(TrainingOverlap, TpCommOverlapSplitsTheCollectivesAsUserbuffers)
{
    const GeneratedTraining g = GenerateTraining(WideGpt(), Tp8Sp(true));
    ValidateJobTrace(*g.job);
    std::map<std::string, uint32_t> n;
    const RankTrace rank3 = UnsharedRank(*g.job, 3); // TP rank 3 runs TP rank 0's list
    for (const Op& op : rank3.ops)
    {
        if (op.kind == OpKind::Collective && op.comm.compare(0, 3, "tp.") == 0)
        {
            ++n[std::string(ToString(op.coll)) + (op.stream == 4 ? "@tpstream" : "@compute")];
            if (op.coll == CollKind::Send)
            {
                EXPECT_EQ(op.peer, 4);
            }
            if (op.coll == CollKind::Recv)
            {
                EXPECT_EQ(op.peer, 2);
            }
        }
        if (op.kind == OpKind::Kernel && op.gemm.smMargin)
        {
            EXPECT_EQ(op.gemm.smMargin, 16u); // TE's num_sm for pipeline and bulk
            ++n["margin_gemm"];
        }
    }
    EXPECT_EQ(n["send@tpstream"], 2u * 4 * 7); // 4 ring GEMMs per layer, 7 steps
    EXPECT_EQ(n["recv@tpstream"], 2u * 4 * 7);
    EXPECT_EQ(n["reducescatter@tpstream"], 2u * (2 * 4 + 2)); // pipelined + bulk
    EXPECT_EQ(n["allgather@tpstream"], 2u * 2);               // bulk
    // Not overlapped: the embedding's ReduceScatter and the head's AllGather (forward), their
    // backwards, and the cross-entropy AllReduce.
    EXPECT_EQ(n["reducescatter@compute"], 2u);
    EXPECT_EQ(n["allgather@compute"], 2u);
    EXPECT_EQ(n["allreduce@compute"], 1u);
    EXPECT_EQ(n["margin_gemm"], 2u * (2 * 4 + 2 * 2));
    // The TP ranks share one program: its ring peers are offsets (+1, -1) from the rank.
    EXPECT_EQ(g.job->ranks.at(3).opsFrom, 0);
}

// The overlap hides most of the TP communication, and costs the GEMMs that share the GPU with
// a communication kernel the 16 SMs they leave it: exactly (132 / 116 - 1) of their compute
// time at the roofline's 0.7 of 989.5 TFLOP/s (proj and fc2 forward, qkv and fc1 data and
// weight gradients; T = 4096 tokens, h 8192, f 32768, TP 8, 2 layers).
TEST(TrainingOverlap, TpCommOverlapHidesTheCollectivesAtTheCostOfTheirSms)
{
    const TrainingReport on = SimulateTraining(GenerateTraining(WideGpt(), Tp8Sp(true)),
                                               gpusim_test::DgxH100(1));
    const TrainingReport off = SimulateTraining(GenerateTraining(WideGpt(), Tp8Sp(false)),
                                                gpusim_test::DgxH100(1));
    ASSERT_TRUE(on.completed) << on.stuck;
    ASSERT_TRUE(off.completed) << off.stuck;
    const StageReport& a = on.stages[0];
    const StageReport& b = off.stages[0];
    const double T = 4096, h = 8192, f = 32768, t = 8;
    const double marginFlops = 2 * (2 * T * h * h / t + 2 * T * h * f / t + 2 * 2 * T * 3 * h / t * h +
                                    2 * 2 * T * f / t * h);
    const double extraUs = marginFlops / (989.5e12 * 0.7) * (132.0 / 116 - 1) * 1e6;
    const double computeOn = a.exposedComputeUs + a.overlapUs;
    const double computeOff = b.exposedComputeUs + b.overlapUs;
    EXPECT_NEAR((computeOn - computeOff) / extraUs, 1.0, 0.03)
        << computeOn << " vs " << computeOff << " us of compute";
    const CommClassTime tpOn = CommOf(a, "tp");
    const CommClassTime tpOff = CommOf(b, "tp");
    EXPECT_EQ(tpOff.hiddenUs, 0);
    EXPECT_GT(tpOn.hiddenUs, 0.6 * tpOn.busyUs) << tpOn.busyUs;
    EXPECT_LT(on.iterationUs, off.iterationUs - 0.5 * tpOn.hiddenUs);
    EXPECT_NE(on.plan.find("TP comm overlap"), std::string::npos) << on.plan;
}

// With the overlap the TP ranks share one op list: TP rank 0's ring sends go to comm rank +1
// and its receives come from -1, and every sharer runs them at the same offsets from its own
// rank. Unshared (every rank its own list) gives the same ops, rank by rank, and the same
// iteration to the nanosecond: detailed (every rank, chunk level) and mirrored, on TP 8 x DP 2
// over two servers.
TEST(TrainingOverlap, TpRanksShareOneProgramWithRingPeersAsOffsets)
{
    TrainingPlan p = Plan(8, 1, 2, 4);
    p.sequenceParallel = true;
    p.tpCommOverlap = true;
    const GeneratedTraining shared = GenerateTraining(WideGpt(), p, true);
    const GeneratedTraining own = GenerateTraining(WideGpt(), p, false);
    ValidateJobTrace(*shared.job);
    for (uint32_t r = 0; r < p.Gpus(); ++r)
    {
        EXPECT_EQ(shared.job->ranks[r].opsFrom, r == 0 ? -1 : 0) << "rank " << r;
        const RankTrace a = UnsharedRank(*shared.job, r);
        const RankTrace& b = own.job->ranks[r];
        ASSERT_EQ(a.ops.size(), b.ops.size()) << "rank " << r;
        for (size_t i = 0; i < a.ops.size(); ++i)
        {
            ASSERT_EQ(a.ops[i].peer, b.ops[i].peer) << "rank " << r << " op " << i;
            ASSERT_EQ(a.ops[i].comm, b.ops[i].comm) << "rank " << r << " op " << i;
        }
    }
    for (const TrainingSpeed& speed : {TrainingSpeed{"chunk", false, false}, TrainingSpeed()})
    {
        const TrainingReport a = SimulateTraining(shared, gpusim_test::DgxH100(2), speed);
        const TrainingReport b = SimulateTraining(own, gpusim_test::DgxH100(2), speed);
        ASSERT_TRUE(a.completed) << a.stuck;
        ASSERT_TRUE(b.completed) << b.stuck;
        EXPECT_EQ(a.iterationUs, b.iterationUs) << speed.fidelity;
        EXPECT_EQ(a.opLists, 1u);
        EXPECT_EQ(b.opLists, p.Gpus());
    }
}

// Megatron-Core requires sequence parallelism for --tp-comm-overlap.
TEST(TrainingOverlap, TpCommOverlapNeedsSequenceParallelism)
{
    TrainingPlan p = Tp8Sp(true);
    p.sequenceParallel = false;
    EXPECT_THROW(ValidatePlan(WideGpt(), p), std::invalid_argument);
}

namespace
{

/// WideTinyGpt (h 1024, s 4096) on 8 layers, PP 2 with 2 model chunks per stage, 8
/// micro-batches, one GPU per server: every PP transfer (8 MiB of activations or gradients)
/// crosses a 100 Gb/s link, about as long as a chunk's compute.
GeneratedTraining
InterleavedPp2(bool overlap)
{
    ModelSpec m = WideTinyGpt(4096);
    m.layers = 8;
    TrainingPlan p = Plan(1, 2, 1, 8);
    p.virtualStages = 2;
    p.overlapP2pComm = overlap;
    return GenerateTraining(m, p);
}

} // namespace

// --overlap-p2p-comm (interleaved schedule): each step sends its output and posts the receive of
// the next step of its direction on that direction's stream and communicator, and waits only
// before the step that needs it. Stage 0 of PP 2 x 2 chunks, 8 micro-batches, by hand: forward
// sends 16 (both chunks feed stage 1), forward receives 8 (chunk 1's inputs), backward sends 8
// (chunk 1's input gradients), backward receives 16.
TEST(TrainingOverlap, P2pOverlapPostsEachDirectionOnItsOwnStream)
{
    const GeneratedTraining g = InterleavedPp2(true);
    ValidateJobTrace(*g.job);
    std::map<std::string, uint32_t> n;
    for (const Op& op : g.job->ranks.at(0).ops)
    {
        if (op.kind == OpKind::Collective && (op.coll == CollKind::Send || op.coll == CollKind::Recv))
        {
            ++n[std::string(ToString(op.coll)) + "@" + op.comm.substr(0, op.comm.find('.')) +
                "/" + std::to_string(op.stream)];
        }
    }
    EXPECT_EQ(n["send@pp/5"], 16u);
    EXPECT_EQ(n["recv@pp/5"], 8u);
    EXPECT_EQ(n["send@ppg/6"], 8u);
    EXPECT_EQ(n["recv@ppg/6"], 16u);
    EXPECT_EQ(n.size(), 4u); // nothing on the compute stream
}

// The overlapped transfers run under the other steps' compute: the iteration is shorter, and
// without the overlap no PP transfer runs under compute. Megatron turns it off for the
// non-interleaved schedule, and so does the generator.
TEST(TrainingOverlap, P2pOverlapHidesTransfersUnderCompute)
{
    const TrainingReport on = SimulateOnFlatRing(InterleavedPp2(true), 2, 100);
    const TrainingReport off = SimulateOnFlatRing(InterleavedPp2(false), 2, 100);
    ASSERT_TRUE(on.completed) << on.stuck;
    ASSERT_TRUE(off.completed) << off.stuck;
    const CommClassTime ppOn = CommOf(on.stages[0], "pp");
    const CommClassTime ppOff = CommOf(off.stages[0], "pp");
    EXPECT_GT(ppOn.hiddenUs, 0.3 * ppOn.busyUs) << ppOn.busyUs;
    EXPECT_LT(ppOff.hiddenUs, 0.01 * ppOff.busyUs);
    EXPECT_LT(on.iterationUs, 0.95 * off.iterationUs) << on.iterationUs << " vs " << off.iterationUs;
    EXPECT_NE(off.plan.find("no PP overlap"), std::string::npos) << off.plan;
    TrainingPlan oneF1B = Plan(1, 2, 1, 8);
    EXPECT_FALSE(UsesP2pOverlap(oneF1B));
    oneF1B.virtualStages = 2;
    EXPECT_TRUE(UsesP2pOverlap(oneF1B));
}
