// gpusim generate: model FLOPs, per-rank ops, pipeline order, memory and OOM, simulated time
// against hand-derived values (doc/generate.md).
#include "cli-test-util.h"
#include "test-temp-dir.h"
#include "training-test-util.h"

#include "ns3/cluster-spec.h"
#include "ns3/llm-model.h"
#include "ns3/op-stream-dedup.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

using namespace ns3;
using namespace ns3::gpusim;
using gpusim_test::DgxH100;
using gpusim_test::OpsOf;
using gpusim_test::Plan;
using gpusim_test::TinyGpt;

namespace
{

struct OpCounts
{
    std::map<std::string, uint32_t> byKey; // "kernel", "allreduce@tp", "send@pp", ...
    uint32_t Get(const std::string& k) const
    {
        auto it = byKey.find(k);
        return it == byKey.end() ? 0 : it->second;
    }
};

OpCounts
Count(const JobTrace& job, uint32_t r)
{
    OpCounts c;
    for (const Op& op : OpsOf(job, r))
    {
        if (op.kind == OpKind::Kernel)
        {
            ++c.byKey["kernel"];
        }
        else if (op.kind == OpKind::Collective)
        {
            ++c.byKey[std::string(ToString(op.coll)) + "@" + op.comm.substr(0, op.comm.find('.'))];
        }
        else
        {
            ++c.byKey[ToString(op.kind)];
        }
    }
    return c;
}

} // namespace

TEST(Generate, ModelFlopsMatchNarayananFormulaForGpt3)
{
    // Narayanan et al. 2021 (SC21), section 5.1: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
    // with recomputation (4 passes); without it (3 passes): 72 B s l h^2 (1 + s/(6h) +
    // V/(12 l h)).
    ModelSpec m;
    ASSERT_TRUE(LookupModelPreset("gpt3-175b", m));
    TrainingPlan p = Plan(8, 16, 8, 1536);
    const double B = 1536, s = 2048, l = 96, h = 12288, V = 50257;
    const double expected = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    EXPECT_NEAR(ModelFlopsPerIteration(m, p) / expected, 1.0, 1e-12);
    // Parameters: 12 l h^2 (1 + 13/(12h)) + (V + s) h + 2h (final LayerNorm) = 174.6e9.
    const double params = 12 * l * h * h * (1 + 13 / (12 * h)) + (V + s) * h + 2 * h;
    EXPECT_NEAR(TotalParams(m), params, 1.0);
    EXPECT_NEAR(TotalParams(m) / 1e9, 174.6, 0.1);
}

TEST(Generate, ModelFlopsOfGqaGatedModelByHand)
{
    // h 8, 2 heads of 4, 1 KV head, SwiGLU f 16, V 10, s 4, one layer, batch 1. Per token:
    // QKV 8 x (8 + 2 x 4) = 128 weights, projection 64, MLP 8 x 32 + 16 x 8 = 384: 2 x 576 =
    // 1152 FLOPs, attention 4 s h = 128, logits 2 h V = 160 -> 4 tokens x 1440 = 5760 forward,
    // 17280 per iteration.
    ModelSpec m;
    m.name = "toy";
    m.layers = 1;
    m.hidden = 8;
    m.heads = 2;
    m.kvHeads = 1;
    m.ffn = 16;
    m.vocab = 10;
    m.seqLength = 4;
    m.gatedMlp = true;
    m.rmsNorm = true;
    TrainingPlan p = Plan(1, 1, 1, 1);
    EXPECT_DOUBLE_EQ(ModelFlopsPerIteration(m, p), 17280);
    // Llama 3 8B: 8.03e9 parameters (Llama Team 2024, Table 3).
    ASSERT_TRUE(LookupModelPreset("llama3-8b", m));
    EXPECT_NEAR(TotalParams(m), 8030261248.0, 0.5);
}

TEST(Generate, KernelFlopsOfOneIterationByHand)
{
    // TP1 PP1 DP1, 2 micro-batches of T = 128 tokens, no recomputation. A layer's forward:
    // GEMMs 2 T (3h h + h h + 4h h + h 4h) = 24 T h^2; a fused causal attention 4 T s h / 2.
    // Logits 2 T h Vp with Vp = 1024 (1000 padded to 128). Backward = 2 x forward.
    const ModelSpec m = TinyGpt();
    TrainingPlan p = Plan(1, 1, 1, 2);
    const double T = 128, h = 256, s = 128, L = 4, Vp = 1024;
    const double layer = 24 * T * h * h + 2 * T * s * h;
    const double forward = L * layer + 2 * T * h * Vp;
    GeneratedTraining g = GenerateTraining(m, p);
    EXPECT_DOUBLE_EQ(g.hardwareFlops, 2 * 3 * forward);
    // Selective recomputation reruns the attention forward, full recomputation each layer.
    p.recompute = Recompute::Selective;
    EXPECT_DOUBLE_EQ(GenerateTraining(m, p).hardwareFlops, 2 * (3 * forward + L * 2 * T * s * h));
    p.recompute = Recompute::Full;
    EXPECT_DOUBLE_EQ(GenerateTraining(m, p).hardwareFlops, 2 * (3 * forward + L * layer));
}

TEST(Generate, OpCountsPerRankForTp2Pp2Dp2)
{
    // 2 layers on PP 2 (one per stage), TP 2, DP 2, global batch 8 -> 4 micro-batches.
    const ModelSpec m = TinyGpt(2);
    const TrainingPlan p = Plan(2, 2, 2, 8);
    GeneratedTraining g = GenerateTraining(m, p);
    ASSERT_EQ(g.job->ranks.size(), 8u);
    ASSERT_EQ(g.microBatches, 4u);
    ValidateJobTrace(*g.job);
    // Stage 0 (rank 0): per micro-batch, forward embedding + 10 layer kernels (norm, qkv,
    // attention, proj, bias-dropout-add, norm, fc1, gelu, fc2, bias-dropout-add), backward 8
    // layer kernels + embedding backward: 20; plus the optimizer's two passes (the gradient
    // norm, then Adam): 82. TP AllReduce: embedding + 2 per layer forward, 2 per layer
    // backward: 5 per micro-batch. PP: 4 activations sent, 4 gradients received. DP: one
    // bucket (< 40M parameters): one AllReduce. Tied embeddings: one AllReduce with the last
    // stage. Gradient clipping: the squared norm over the model-parallel group (TP x PP).
    OpCounts s0 = Count(*g.job, RankAt(p, 0, 0, 0));
    EXPECT_EQ(s0.Get("kernel"), 82u);
    EXPECT_EQ(s0.Get("allreduce@mp"), 1u);
    EXPECT_EQ(s0.Get("allreduce@tp"), 20u);
    EXPECT_EQ(s0.Get("send@pp"), 4u);
    EXPECT_EQ(s0.Get("recv@pp"), 4u);
    EXPECT_EQ(s0.Get("allreduce@dp"), 1u);
    EXPECT_EQ(s0.Get("allreduce@emb"), 1u);
    EXPECT_EQ(s0.Get("malloc"), 3u + 4u);
    EXPECT_EQ(s0.Get("free"), 4u);
    // Stage 1: forward 10 + head (norm, logits, cross entropy), backward head 3 + layer 8: 24
    // per micro-batch, 98 with the optimizer. TP: 2 + cross-entropy AllReduce forward, 2 + 1
    // (logits input gradient) backward: 6 per micro-batch. DP: the bucket and each
    // micro-batch's loss (pretrain_gpt.py's loss_func reduces it for logging).
    OpCounts s1 = Count(*g.job, RankAt(p, 1, 1, 1));
    EXPECT_EQ(s1.Get("kernel"), 98u);
    EXPECT_EQ(s1.Get("allreduce@mp"), 1u);
    EXPECT_EQ(s1.Get("allreduce@tp"), 24u);
    EXPECT_EQ(s1.Get("send@pp"), 4u);
    EXPECT_EQ(s1.Get("recv@pp"), 4u);
    EXPECT_EQ(s1.Get("allreduce@dp"), 1u + 4u);
    EXPECT_EQ(s1.Get("allreduce@emb"), 1u);
}

TEST(Generate, SequenceParallelAndDistributedOptimizerOpCounts)
{
    // SP: per layer forward 2 AllGather + 2 ReduceScatter; backward 4 AllGather (2 for the
    // ReduceScatters' backward, 2 re-gathering inputs for weight gradients) + 2
    // ReduceScatter. Stage 0 adds the embedding's ReduceScatter (forward) and AllGather
    // (backward). Distributed optimizer: DP ReduceScatter of the bucket, AllGather of weights.
    const ModelSpec m = TinyGpt(2);
    TrainingPlan p = Plan(2, 2, 2, 8);
    p.sequenceParallel = true;
    p.distributedOptimizer = true;
    GeneratedTraining g = GenerateTraining(m, p);
    ValidateJobTrace(*g.job);
    OpCounts s0 = Count(*g.job, 0);
    EXPECT_EQ(s0.Get("allgather@tp"), 4u * (2 + 4 + 1));
    EXPECT_EQ(s0.Get("reducescatter@tp"), 4u * (2 + 2 + 1));
    EXPECT_EQ(s0.Get("allreduce@tp"), 0u);
    EXPECT_EQ(s0.Get("reducescatter@dp"), 1u);
    EXPECT_EQ(s0.Get("allgather@dp"), 1u);
    EXPECT_EQ(s0.Get("allreduce@dp"), 0u);
    // Last stage: head forward AllGather + cross-entropy AllReduce, backward ReduceScatter.
    OpCounts s1 = Count(*g.job, RankAt(p, 0, 0, 1));
    EXPECT_EQ(s1.Get("allgather@tp"), 4u * (2 + 4 + 1));
    EXPECT_EQ(s1.Get("reducescatter@tp"), 4u * (2 + 2 + 1));
    EXPECT_EQ(s1.Get("allreduce@tp"), 4u);
}

TEST(Generate, OneFOneBOrder)
{
    // PipeDream-Flush (Narayanan et al. 2021, Fig. 4): stage k of p runs p - k - 1 warm-up
    // forwards, then alternates one forward and one backward, then drains the backwards.
    auto F = [](uint32_t mb) { return PipeStep{true, 0, mb}; };
    auto B = [](uint32_t mb) { return PipeStep{false, 0, mb}; };
    std::vector<PipeStep> stage0 = {F(0), F(1), F(2), F(3), B(0), F(4), B(1), F(5), B(2),
                                    F(6), B(3), F(7), B(4), B(5), B(6), B(7)};
    EXPECT_EQ(PipelineOrder(0, 4, 8), stage0);
    std::vector<PipeStep> stage2 = {F(0), F(1), B(0), F(2), B(1), F(3), B(2), F(4), B(3),
                                    F(5), B(4), F(6), B(5), F(7), B(6), B(7)};
    EXPECT_EQ(PipelineOrder(2, 4, 8), stage2);
    std::vector<PipeStep> last = {F(0), B(0), F(1), B(1), F(2), B(2)};
    EXPECT_EQ(PipelineOrder(3, 4, 3), last);
    // Fewer micro-batches than stages: all forwards, then all backwards.
    std::vector<PipeStep> few = {F(0), F(1), B(0), B(1)};
    EXPECT_EQ(PipelineOrder(0, 4, 2), few);
}

TEST(Generate, InterleavedOrder)
{
    // Megatron-LM's interleaved schedule, p = 2, v = 2, m = 4, stage 0: warm-up (p - 1) x 2 +
    // (v - 1) x p = 4 forwards; virtual micro-batch k runs chunk (k mod pv) / p on micro-batch
    // (k / pv) p + k mod p, backwards in reverse chunk order.
    auto F = [](uint32_t c, uint32_t mb) { return PipeStep{true, c, mb}; };
    auto B = [](uint32_t c, uint32_t mb) { return PipeStep{false, c, mb}; };
    std::vector<PipeStep> expected = {F(0, 0), F(0, 1), F(1, 0), F(1, 1), F(0, 2), B(1, 0),
                                      F(0, 3), B(1, 1), F(1, 2), B(0, 0), F(1, 3), B(0, 1),
                                      B(1, 2), B(1, 3), B(0, 2), B(0, 3)};
    EXPECT_EQ(PipelineOrder(0, 2, 4, 2), expected);
    // Stage 1 warms up with 2 forwards only, then alternates (forward, backward).
    std::vector<PipeStep> s1 = PipelineOrder(1, 2, 4, 2);
    ASSERT_EQ(s1.size(), 16u);
    EXPECT_EQ(s1[2], F(1, 0));
    EXPECT_EQ(s1[3], B(1, 0));
    // Steady-state pairs share one send/recv batch: 4 warm-up singles, 4 pairs, 4 singles.
    const auto segments = PipelineSegments(0, 2, 4, 2);
    ASSERT_EQ(segments.size(), 12u);
    EXPECT_EQ(segments[4], (std::vector<PipeStep>{F(0, 2), B(1, 0)}));
    // Every micro-batch runs forward and backward once through every chunk, the backward after
    // the forward.
    for (uint32_t stage = 0; stage < 4; ++stage)
    {
        std::map<std::pair<uint32_t, uint32_t>, int> seen;
        for (const PipeStep& s : PipelineOrder(stage, 4, 8, 3))
        {
            int& state = seen[{s.chunk, s.microBatch}];
            EXPECT_EQ(state, s.forward ? 0 : 1);
            state = s.forward ? 1 : 2;
        }
        EXPECT_EQ(seen.size(), 24u);
    }
}

TEST(Generate, ActivationBytesMatchKorthikanti)
{
    // Korthikanti et al. 2022, Table 2 (bytes per layer, s b h units, a heads, t TP):
    // no parallelism 34 + 5as/h; TP 10 + 24/t + 5as/(ht); TP+SP (34 + 5as/h)/t; TP+SP with
    // selective recomputation 34/t; full recomputation 2.
    const ModelSpec m = TinyGpt();
    const double s = 128, b = 2, h = 256, a = 4, t = 4;
    const double sbh = s * b * h;
    TrainingPlan p = Plan(1, 1, 1, 8);
    p.microBatch = 2;
    p.flashAttention = false;
    EXPECT_DOUBLE_EQ(LayerActivationBytes(m, p), sbh * (34 + 5 * a * s / h));
    p.tp = 4;
    EXPECT_DOUBLE_EQ(LayerActivationBytes(m, p), sbh * (10 + 24 / t + 5 * a * s / (h * t)));
    p.sequenceParallel = true;
    EXPECT_DOUBLE_EQ(LayerActivationBytes(m, p), sbh * (34 + 5 * a * s / h) / t);
    p.recompute = Recompute::Selective;
    EXPECT_DOUBLE_EQ(LayerActivationBytes(m, p), sbh * 34 / t);
    p.sequenceParallel = false;
    p.recompute = Recompute::Full;
    EXPECT_DOUBLE_EQ(LayerActivationBytes(m, p), 2 * sbh);
}

TEST(Generate, PeakMemoryPerStageByHand)
{
    // TP1 PP2 DP1, 4 layers (2 per stage), 4 micro-batches, unfused attention (Korthikanti's
    // setting). Per parameter: bf16 weight 2 + fp32 gradient 4 + Adam (fp32 master, m, v) 12 =
    // 18 bytes. Stage 0 holds 2 micro-batches' activations at the 1F1B peak (p - 0 in flight),
    // the last stage one.
    const ModelSpec m = TinyGpt();
    TrainingPlan p = Plan(1, 2, 1, 4);
    p.flashAttention = false;
    const double h = 256, s = 128, a = 4, Vp = 1024, sbh = s * h;
    const double layerParams = 12 * h * h + 13 * h;
    const double p0 = 2 * layerParams + Vp * h + s * h;      // layers, word + position embeddings
    const double p1 = 2 * layerParams + 2 * h + Vp * h;      // layers, final norm, tied copy
    const double layerAct = sbh * (34 + 5 * a * s / h);
    const double act0 = 2 * layerAct + sbh;                  // + embedding dropout mask
    const double act1 = 2 * layerAct + 4 * sbh + 4 * s * Vp; // + norm/logits inputs, fp32 softmax
    GeneratedTraining g = GenerateTraining(m, p);
    EXPECT_EQ(PeakMemory(g.job->ranks[0]), static_cast<uint64_t>(18 * p0 + 2 * act0));
    EXPECT_EQ(PeakMemory(g.job->ranks[1]), static_cast<uint64_t>(18 * p1 + act1));
    // The engine's device memory model sees the same peaks.
    TrainingReport r = SimulateTraining(g, DgxH100());
    ASSERT_EQ(r.rankPeakMemoryBytes.size(), 2u);
    EXPECT_EQ(r.rankPeakMemoryBytes[0], static_cast<uint64_t>(18 * p0 + 2 * act0));
    EXPECT_EQ(r.rankPeakMemoryBytes[1], static_cast<uint64_t>(18 * p1 + act1));
    EXPECT_EQ(r.stages[0].peakMemoryBytes, r.rankPeakMemoryBytes[0]);
    // The distributed optimizer shards the 12 optimizer bytes over DP (Megatron-LM's
    // distrib_optimizer.md: 6 + 12/d bytes per parameter).
    p.dp = 2;
    p.globalBatch = 8;
    p.distributedOptimizer = true;
    g = GenerateTraining(m, p);
    EXPECT_EQ(PeakMemory(g.job->ranks[0]), static_cast<uint64_t>((6 + 6) * p0 + 2 * act0));
}

TEST(Generate, OomPlanNamesRankAndAllocation)
{
    // Llama 3 8B on 8 GPUs (DP 8, distributed optimizer), one micro-batch of 8192 tokens:
    // 8,030,261,248 parameters x (2 + 4 + 12/8) bytes = 60.2 GB in use; the activations of one
    // micro-batch then need 32 layers x 139,392 T bytes (replicated 8 T h; Q/K/V 2 T (4096 +
    // 2048); projection input 2 T h; SwiGLU input 4 T f; fc2 input 2 T f; log-sum-exp 4 T a)
    // + norm/logits inputs 4 T h + fp32 softmax 4 T V = 40.9 GB: past 80 GiB on rank 0.
    ModelSpec m;
    ASSERT_TRUE(LookupModelPreset("llama3-8b", m));
    TrainingPlan p = Plan(1, 1, 8, 8);
    p.distributedOptimizer = true;
    GeneratedTraining g = GenerateTraining(m, p);
    const double P = 8030261248.0, T = 8192, h = 4096, V = 128256;
    const OomInfo oom = FindOom(*g.job, 80ull << 30);
    ASSERT_TRUE(oom.oom);
    EXPECT_EQ(oom.rank, 0u);
    EXPECT_EQ(oom.allocation, "activations chunk 0 micro-batch 0");
    EXPECT_EQ(oom.inUse, static_cast<uint64_t>(7.5 * P));
    EXPECT_EQ(oom.bytes, static_cast<uint64_t>(32 * 139392 * T + 4 * T * h + 4 * T * V));
    // The CLI reports it and does not simulate (exit code 4).
    CliResult r = Cli({"generate", "--model", "llama3-8b", "--dp", "8", "--global-batch", "8",
                       "--distributed-optimizer", "--simulate", "--quiet"});
    EXPECT_EQ(r.code, 4) << r.out << r.err;
    EXPECT_NE(r.out.find("OOM: out of memory on rank 0: allocating 'activations chunk 0 "
                         "micro-batch 0'"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("iteration time"), std::string::npos);
    // Full recomputation keeps each layer's input only (2 T h): it fits.
    p.recompute = Recompute::Full;
    EXPECT_FALSE(FindOom(*GenerateTraining(m, p).job, 80ull << 30).oom);
}

TEST(Generate, PipelineIterationTimeWithinHandBound)
{
    // GEMM-bound model (h 4096, f 16384, s 2048) on PP 4, 2 layers per stage, 8 micro-batches:
    // 1F1B takes (m + p - 1)(f + b). Per layer forward: GEMMs 24 T h^2 FLOPs at 70 % of
    // 989.5 TFLOP/s (the roofline's default), fused causal attention 2 T s h at the H100's
    // measured 48.0 % for head dim 128 and 2048 keys (gpu-spec.cc), elementwise kernels (2
    // norms 2eTh, 2 bias-dropout-adds 3eTh + Th, GELU 2eTf) at 80 % of 3.35 TB/s; backward:
    // 2x the FLOPs (attention at the measured 33.7 %), 2 norm backwards 5eTh + Th, GELU
    // backward 3eTf. The head, the embedding and PP transfers add a few percent.
    const ModelSpec m = gpusim_test::GemmBoundGpt(8);
    TrainingPlan p = Plan(1, 4, 1, 8);
    const double T = 2048, h = 4096, s = 2048, F = 16384, e = 2;
    const double peak = 989.5e12 * 0.7, hbm = 3.35e12 * 0.8;
    const double attention = 2 * T * s * h / (989.5e12 * 0.480);
    const double attentionBackward = 2 * 2 * T * s * h / (989.5e12 * 0.337);
    const double flops = 24 * T * h * h;
    const double fwdBytes = 2 * 2 * e * T * h + 2 * (3 * e * T * h + T * h) + 2 * e * T * F;
    const double bwdBytes = 2 * (5 * e * T * h + T * h) + 3 * e * T * F;
    const double f = 2 * (flops / peak + attention + fwdBytes / hbm);
    const double b = 2 * (2 * flops / peak + attentionBackward + bwdBytes / hbm);
    // After the pipeline drains, stage 0's optimizer step: 42 bytes per parameter (bf16 with
    // fp32 gradients: gradient norm 4, Adam 28, fp32 weights to bf16 4 + 2, zeroing the fp32
    // gradient 4) of 2 layers (12h^2 + 13h each), word (1024 x h) and position (s x h)
    // embeddings.
    const double params0 = 2 * (12 * h * h + 13 * h) + 1024 * h + s * h;
    const double bound = (8 + 4 - 1) * (f + b) + 42 * params0 / hbm;
    TrainingReport r = SimulateTraining(GenerateTraining(m, p), DgxH100());
    ASSERT_TRUE(r.completed) << r.stuck;
    EXPECT_GE(r.iterationUs * 1e-6, bound);
    EXPECT_LE(r.iterationUs * 1e-6, 1.05 * bound);
    // Stage 0 waits (p - 1)(f + b) in all (the pipeline bubble), the others at least that.
    EXPECT_NEAR(r.stages[0].bubbleUs * 1e-6 / (3 * (f + b)), 1.0, 0.1);
    // MFU: model FLOPs over time x 4 GPUs x peak, at most 70 % x the busy fraction m/(m+p-1).
    EXPECT_LT(r.mfu, 0.7 * 8 / 11);
    EXPECT_GT(r.mfu, 0.55 * 8 / 11); // attention at a third to half of peak pulls it down
}

TEST(Generate, SchedulesCompleteWithoutDeadlock)
{
    // Every schedule's grouped send/recv pairs must match in the engine (a stuck run fails).
    const ModelSpec m = TinyGpt(8);
    for (uint32_t pp : {2u, 4u})
    {
        for (uint32_t v : {1u, 2u})
        {
            for (uint32_t mult : {1u, 2u, 3u})
            {
                for (bool sp : {false, true})
                {
                    TrainingPlan p = Plan(2, pp, 1, pp * mult);
                    p.virtualStages = v;
                    p.sequenceParallel = sp;
                    p.distributedOptimizer = sp;
                    GeneratedTraining g = GenerateTraining(m, p);
                    ValidateJobTrace(*g.job);
                    TrainingReport r = SimulateTraining(g, DgxH100());
                    EXPECT_TRUE(r.completed) << DescribePlan(p) << "\n" << r.stuck;
                    EXPECT_TRUE(r.errors.empty());
                }
            }
        }
    }
}

TEST(Generate, DeterministicAndDedupGroupsStages)
{
    const ModelSpec m = TinyGpt(8);
    TrainingPlan p = Plan(2, 4, 2, 16);
    GeneratedTraining a = GenerateTraining(m, p, false);
    GeneratedTraining b = GenerateTraining(m, p, false);
    ASSERT_EQ(a.job->ranks.size(), b.job->ranks.size());
    for (size_t r = 0; r < a.job->ranks.size(); ++r)
    {
        ASSERT_EQ(a.job->ranks[r].ops.size(), b.job->ranks[r].ops.size());
        for (size_t i = 0; i < a.job->ranks[r].ops.size(); ++i)
        {
            ASSERT_EQ(OpToJsonLine(a.job->ranks[r].ops[i]), OpToJsonLine(b.job->ranks[r].ops[i]));
        }
    }
    // The TP and DP ranks of a stage run the same program; stages differ (1F1B warm-up
    // length p - k - 1): 4 distinct op streams out of 16.
    const DedupReport d = GroupIdenticalRanks(*a.job);
    ASSERT_EQ(d.structuralGroups.size(), 4u);
    EXPECT_EQ(d.structuralGroups[1], (std::vector<uint32_t>{4, 5, 6, 7}));
    TrainingReport ra = SimulateTraining(a, DgxH100());
    TrainingReport rb = SimulateTraining(b, DgxH100());
    EXPECT_EQ(ra.iterationUs, rb.iterationUs);
    EXPECT_EQ(ra.peakMemoryBytes, rb.peakMemoryBytes);
    // The shared form (the ranks of a stage run their first rank's list on their own
    // communicators) simulates the same iteration.
    GeneratedTraining shared = GenerateTraining(m, p);
    EXPECT_EQ(shared.job->ranks[1].opsFrom, 0);
    ValidateJobTrace(*shared.job);
    TrainingReport rs = SimulateTraining(shared, DgxH100());
    EXPECT_EQ(rs.iterationUs, ra.iterationUs);
    EXPECT_EQ(rs.peakMemoryBytes, ra.peakMemoryBytes);
}

TEST(Generate, TraceDirectoryRunsInSimulate)
{
    TestTempDir dir("gpusim-generate");
    const std::string out = dir.Path() + "/trace";
    CliResult g = Cli({"generate", "--model", "llama3-8b", "--tp", "8", "--pp", "2", "--dp", "1",
                       "--global-batch", "4", "--seq-length", "2048", "--recompute", "selective",
                       "--sp", "--out", out, "--simulate"});
    ASSERT_EQ(g.code, 0) << g.out << g.err;
    EXPECT_NE(g.out.find("iteration time"), std::string::npos);
    EXPECT_NE(g.out.find("MFU"), std::string::npos);
    EXPECT_NE(g.out.find("peak memory"), std::string::npos);
    CliResult s = Cli({"simulate", out});
    EXPECT_EQ(s.code, 0) << s.out << s.err;
    EXPECT_NE(s.out.find("16 ranks"), std::string::npos) << s.out;
}

TEST(Generate, SharedTraceWritesEveryRankWhole)
{
    // Writing the shared form rank by rank gives the same files as writing the unshared job.
    TestTempDir dir("gpusim-generate");
    const ModelSpec m = TinyGpt(4);
    TrainingPlan p = Plan(2, 2, 2, 8);
    p.sequenceParallel = true;
    WriteTrainingTrace(GenerateTraining(m, p), dir.Path() + "/shared");
    WriteJobTrace(*GenerateTraining(m, p, false).job, dir.Path() + "/whole");
    auto slurp = [](const std::string& f) {
        std::ifstream in(f);
        std::ostringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    for (uint32_t r = 0; r < 8; ++r)
    {
        const std::string name = "/rank-" + std::to_string(r) + ".jsonl";
        const std::string shared = slurp(dir.Path() + "/shared" + name);
        EXPECT_FALSE(shared.empty());
        EXPECT_EQ(shared, slurp(dir.Path() + "/whole" + name)) << name;
    }
    JobTrace back = ReadJobTrace(dir.Path() + "/shared");
    EXPECT_EQ(back.ranks.size(), 8u);
    ValidateJobTrace(back);
}

TEST(Generate, BadInputIsReported)
{
    CliResult r = Cli({"generate", "--model", "gpt3-175b", "--tp", "7", "--simulate"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("TP 7 must divide heads 96"), std::string::npos) << r.err;
    r = Cli({"generate", "--model", "nope", "--simulate"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("unknown model 'nope'"), std::string::npos);
    r = Cli({"generate", "--model", "gpt3-175b"});
    EXPECT_EQ(r.code, 1);
    EXPECT_THROW(ParseModelSpecYaml("layers: 2\nhidden: 64\nheads: 3\nvocab: 10\nseq_length: 8\n",
                                    "m.yaml"),
                 std::runtime_error);
    try
    {
        ParseModelSpecYaml("preset: llama3-8b\nlayers: 2\nwidth: 64\n", "m.yaml");
        FAIL();
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("m.yaml:3:1: unknown key 'width'"),
                  std::string::npos)
            << e.what();
    }
    ModelSpec y = ParseModelSpecYaml("preset: llama3-8b\nlayers: 4\n", "m.yaml");
    EXPECT_EQ(y.layers, 4u);
    EXPECT_EQ(y.kvHeads, 8u);
}

TEST(Generate, CrossEntropyBytesFusedOrMegatronsDefault)
{
    // Tiny GPT: vocabulary 1000 padded to a multiple of 128 x TP = 256 -> 1024, 512 per TP
    // rank; one micro-batch of 128 tokens, bf16 logits (2 B). Megatron's default loss
    // (vocab_parallel_cross_entropy on the logits cast to fp32): cast 2 + 4, max 4, subtract
    // 8, exp 8, sum 4, divide 8 = 38 B per logit forward; scale 8 and cast back 4 + 2 = 14 B
    // backward. Fused (--cross-entropy-loss-fusion): 2 + 8 and 4 + 2.
    const ModelSpec m = TinyGpt(2);
    TrainingPlan p = Plan(2, 1, 1, 1);
    EXPECT_TRUE(p.crossEntropyFusion); // the generator's default
    p.crossEntropyFusion = false;
    auto bytes = [&](const char* name) {
        const GeneratedTraining g = GenerateTraining(m, p, false);
        for (const Op& op : OpsOf(*g.job, 0))
        {
            if (op.name == name)
            {
                return op.memBytes;
            }
        }
        return -1.0;
    };
    const double logits = 128.0 * 512;
    EXPECT_DOUBLE_EQ(bytes("cross_entropy"), logits * 38);
    EXPECT_DOUBLE_EQ(bytes("cross_entropy_bwd"), logits * 14);
    p.crossEntropyFusion = true;
    EXPECT_DOUBLE_EQ(bytes("cross_entropy"), logits * 10);
    EXPECT_DOUBLE_EQ(bytes("cross_entropy_bwd"), logits * 6);
}

// Megatron's --recompute-method block --recompute-num-layers N: the first N layers of each
// model chunk store their input only and rerun their forward before the backward; the others
// store everything. TinyGpt, 4 layers, PP 1, one micro-batch: 4 + 1 qkv forwards with N = 1,
// and the chunk's activations are 1 layer input + 3 full layers.
TEST(Generate, BlockRecomputationRecomputesTheFirstLayersOnly)
{
    const ModelSpec m = TinyGpt(4);
    TrainingPlan p = Plan(1, 1, 1, 1);
    p.recompute = Recompute::Full;
    p.recomputeLayers = 1;
    ValidatePlan(m, p);
    auto qkvForwards = [](const JobTrace& job) {
        uint32_t n = 0;
        for (const Op& op : OpsOf(job, 0))
        {
            n += op.kind == OpKind::Kernel && op.name == "qkv";
        }
        return n;
    };
    EXPECT_EQ(qkvForwards(*GenerateTraining(m, p).job), 5u);
    TrainingPlan all = p;
    all.recomputeLayers = 0;
    EXPECT_EQ(qkvForwards(*GenerateTraining(m, all).job), 8u);
    TrainingPlan none = p;
    none.recompute = Recompute::None;
    none.recomputeLayers = 0;
    const double input = LayerActivationBytes(m, all);
    const double full = LayerActivationBytes(m, none);
    EXPECT_GT(full, 10 * input);
    EXPECT_DOUBLE_EQ(ChunkLayersActivationBytes(m, p, 4), input + 3 * full);
    EXPECT_DOUBLE_EQ(ChunkLayersActivationBytes(m, all, 4), 4 * input);
    EXPECT_NE(DescribePlan(p).find("recompute full (1 layers per chunk)"), std::string::npos);
    TrainingPlan bad = p;
    bad.recomputeLayers = 5; // more than the chunk's 4 layers
    EXPECT_THROW(ValidatePlan(m, bad), std::invalid_argument);
    bad = none;
    bad.recomputeLayers = 1; // needs full recomputation
    EXPECT_THROW(ValidatePlan(m, bad), std::invalid_argument);
}
