// fp8 training (doc/generate.md "fp8"): the GEMM price at the FP8 peak, the cast / transpose /
// amax kernels Transformer Engine adds, which ops stay in the model dtype, the cached fp8
// weights, and an iteration's speed-up against values derived by hand.
#include "cli-test-util.h"
#include "kernel-op-test-util.h"
#include "training-test-util.h"

#include "ns3/boolean.h"
#include "ns3/gpu-spec.h"
#include "ns3/kernel-cost-model.h"
#include "ns3/llm-model.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

using namespace ns3;
using namespace ns3::gpusim;
using gpusim_test::DgxH100;
using gpusim_test::OpsOf;
using gpusim_test::Plan;
using gpusim_test::TinyGpt;

namespace
{

double
Seconds(Ptr<RooflineCostModel> cm, const Op& op, const GpuSpec& gpu)
{
    return cm->GetDuration(op, gpu).GetNanoSeconds() * 1e-9;
}

/// Count and summed bytes of the kernels of one name, of collectives by "kind@comm-prefix".
struct Tally
{
    std::map<std::string, uint32_t> count;
    std::map<std::string, double> bytes;
    uint32_t Count(const std::string& k) const
    {
        auto it = count.find(k);
        return it == count.end() ? 0 : it->second;
    }
    double Bytes(const std::string& k) const
    {
        auto it = bytes.find(k);
        return it == bytes.end() ? 0 : it->second;
    }
};

Tally
TallyOf(const JobTrace& job, uint32_t r)
{
    Tally t;
    for (const Op& op : OpsOf(job, r))
    {
        std::string key;
        if (op.kind == OpKind::Kernel)
        {
            key = op.name;
        }
        else if (op.kind == OpKind::Collective)
        {
            key = std::string(ToString(op.coll)) + "@" + op.comm.substr(0, op.comm.find('.')) +
                  "/" + ToString(op.dtype);
        }
        else
        {
            continue;
        }
        ++t.count[key];
        t.bytes[key] += op.kind == OpKind::Kernel ? double(op.memBytes) : double(op.bytes);
    }
    return t;
}

const Op*
FindKernel(const JobTrace& job, uint32_t r, const std::string& name)
{
    for (const Op& op : OpsOf(job, r))
    {
        if (op.kind == OpKind::Kernel && op.name == name)
        {
            return &op;
        }
    }
    return nullptr;
}

TrainingPlan
Fp8Plan(uint32_t tp, uint32_t pp, uint32_t dp, uint32_t globalBatch,
        Fp8Recipe recipe = Fp8Recipe::Delayed)
{
    TrainingPlan p = Plan(tp, pp, dp, globalBatch);
    p.fp8 = recipe;
    return p;
}

} // namespace

TEST(TrainingFp8, GemmTimeAtFp8AgainstBf16ByHand)
{
    // ml-engineering's maximum achievable matmuls on an H100 SXM, same torch 2.7.0+cu126:
    // BF16 794.5 TFLOP/s of 989.5, FP8 1402.6 of 1979. FP8 keeps 0.70874 / 0.80293 = 0.88269
    // of BF16's efficiency.
    const GpuSpec h100 = Gpu("h100-sxm");
    const double relative = (1402.6 / 1979) / (794.5 / 989.5);
    EXPECT_NEAR(relative, 0.88269, 1e-5);
    EXPECT_NEAR(h100.fp8GemmRelativeEfficiency, relative, 1e-9);
    EXPECT_NEAR(Gpu("h200-sxm").fp8GemmRelativeEfficiency, relative, 1e-9);
    EXPECT_TRUE(h100.HasFp8());
    EXPECT_TRUE(Gpu("h200-sxm").HasFp8());
    EXPECT_FALSE(Gpu("a100-sxm").HasFp8());

    // Roofline (default ComputeEfficiency 0.7): 8192^3 is compute-bound either way.
    Ptr<RooflineCostModel> cm = CreateObject<RooflineCostModel>();
    const double flops = 2.0 * 8192 * 8192 * 8192;
    const double bf16 = flops / (989.5e12 * 0.7);                // 1.5875 ms
    const double fp8 = flops / (1979e12 * 0.7 * relative);       // 0.8992 ms
    EXPECT_NEAR(Seconds(cm, GemmOp(8192, 8192, 8192), h100), bf16, 1e-9);
    EXPECT_NEAR(Seconds(cm, GemmOp(8192, 8192, 8192, 1, DataType::F8E4M3), h100), fp8, 1e-9);
    EXPECT_NEAR(Seconds(cm, GemmOp(8192, 8192, 8192, 1, DataType::F8E5M2), h100), fp8, 1e-9);
    EXPECT_NEAR(bf16 / fp8, 1402.6 / 794.5, 1e-6); // 1.765: the ratio of the two maxima

    // GEMM shape model: 32 x 64 = 2048 tiles of 256 x 128 in 16 waves of 132, each tile
    // 2 x 256 x 128 x 8192 FLOPs at its SM's share of the peak x tile efficiency (BF16's
    // 794.5 / (989.5 x 128/132) = 0.82802), x 0.88269 for FP8.
    cm->SetAttribute("GemmShapeModel", BooleanValue(true));
    const double tile = 794.5 / (989.5 * 128.0 / 132.0);
    const double tileFlops = 2.0 * 256 * 128 * 8192;
    const double bf16Shaped = 16 * tileFlops / (989.5e12 / 132 * tile);
    const double fp8Shaped = 16 * tileFlops / (1979e12 / 132 * tile * relative);
    EXPECT_NEAR(Seconds(cm, GemmOp(8192, 8192, 8192), h100), bf16Shaped, 1e-9);
    EXPECT_NEAR(Seconds(cm, GemmOp(8192, 8192, 8192, 1, DataType::F8E4M3), h100), fp8Shaped,
                1e-9);
    // A small FP8 GEMM is still bounded by its bytes (1-byte operands, read once) or the
    // minimum kernel time: 64 x 64 x 64 takes the 2 us floor.
    EXPECT_NEAR(Seconds(cm, GemmOp(64, 64, 64, 1, DataType::F8E4M3), h100), 2e-6, 1e-9);
}

TEST(TrainingFp8, CastTransposeAndAmaxKernelsPerLayerByHand)
{
    // TinyGpt (h 256, 4 heads, f 1024, s 128, GELU), 2 layers, TP 2 DP 2, 2 micro-batches of
    // one sequence: T = 128 tokens per GEMM, e = 2. Rank 0, delayed scaling, no SP.
    const double T = 128, h = 256, f = 1024, t = 2, e = 2;
    const double qkv = 3 * h / t; // 384: MHA
    ModelSpec m = TinyGpt(2);
    GeneratedTraining g = GenerateTraining(m, Fp8Plan(2, 1, 2, 4));
    const Tally c = TallyOf(*g.job, 0);
    const double L = 2, M = 2; // layers, micro-batches
    const uint32_t l = 2, mb = 2;
    // Forward, per layer and micro-batch: the two LayerNormLinear norms write fp8
    // ((e + 1) T h each), their outputs are transposed (2 T h each); the projection's input
    // (T h/t) and fc2's (T f/t) are cast and transposed ((e + 2) per value). Backward: the
    // gradient outputs of fc2 (T h), fc1 (T f/t), projection (T h) and QKV (T qkv) are cast
    // and transposed. The head's final norm stays 2 e T h per micro-batch.
    EXPECT_EQ(c.Count("fp8_transpose"), l * mb * 2);
    EXPECT_DOUBLE_EQ(c.Bytes("fp8_transpose"), L * M * 2 * (2 * T * h));
    EXPECT_EQ(c.Count("fp8_cast_transpose"), l * mb * (2 + 4));
    EXPECT_DOUBLE_EQ(c.Bytes("fp8_cast_transpose"),
                     L * M * (e + 2) * (T * h / t + T * f / t + T * h + T * f / t + T * h +
                                        T * qkv));
    EXPECT_DOUBLE_EQ(c.Bytes("norm"), L * M * 2 * (e + 1) * T * h + M * 2 * e * T * h);
    // The weights once per iteration (the first micro-batch): QKV h x 384, projection
    // 128 x h, fc1 h x 512, fc2 512 x h; read 2 bytes, write the fp8 copy and its transpose.
    EXPECT_EQ(c.Count("fp8_weight_cast"), l * 4);
    EXPECT_DOUBLE_EQ(c.Bytes("fp8_weight_cast"),
                     L * (e + 2) * (h * qkv + h / t * h + h * f / t + f / t * h));
    // Amax bookkeeping once per micro-batch and direction: the rank holds 2 layers x 4 fp8
    // GEMMs, 24 amaxes forward (3 per GEMM) and 16 backward (2): cat reads and writes 4 bytes
    // each, the all-reduce over the 4 TP x DP ranks carries them, the fused update reads the
    // reduced amax, rolls the one-entry history and rewrites the scale (4 (1 + 2 + 2)).
    EXPECT_EQ(c.Count("fp8_amax_cat"), 2 * mb);
    EXPECT_DOUBLE_EQ(c.Bytes("fp8_amax_cat"), M * (8 * 24 + 8 * 16));
    EXPECT_EQ(c.Count("fp8_amax_scale_update"), 2 * mb);
    EXPECT_DOUBLE_EQ(c.Bytes("fp8_amax_scale_update"), M * (20 * 24 + 20 * 16));
    EXPECT_EQ(c.Count("allreduce@amax/f32"), 2 * mb);
    EXPECT_DOUBLE_EQ(c.Bytes("allreduce@amax/f32"), M * (4 * 24 + 4 * 16));
    bool amaxComm = false;
    for (const Op& op : g.job->ranks[3].ops)
    {
        if (op.kind == OpKind::CommInit && op.comm == "amax.s0")
        {
            amaxComm = true;
            EXPECT_EQ(op.nranks, 4);
            EXPECT_EQ(op.commRank, 3); // tp 1 + TP x dp 1
        }
    }
    EXPECT_TRUE(amaxComm);
    // Delayed scaling takes no amax passes of its own; the TP AllReduces stay in bf16.
    EXPECT_EQ(c.Count("fp8_amax"), 0u);
    EXPECT_EQ(c.Count("fp8_scale"), 0u);
    const Tally bf16 = TallyOf(*GenerateTraining(m, Plan(2, 1, 2, 4)).job, 0);
    EXPECT_EQ(c.Count("allreduce@tp/bf16"), bf16.Count("allreduce@tp/bf16"));
    EXPECT_DOUBLE_EQ(c.Bytes("allreduce@tp/bf16"), bf16.Bytes("allreduce@tp/bf16"));

    // Sequence parallelism: the norms run on T/t tokens, their outputs are all-gathered in
    // fp8 (T h bytes) and transposed in the backward after gathering them again; the
    // row-parallel layers' gradient outputs are cast (T/t tokens), all-gathered in fp8 (E5M2)
    // and transposed. The head's gather and the embedding's stay bf16.
    TrainingPlan sp = Fp8Plan(2, 1, 2, 4);
    sp.sequenceParallel = true;
    const Tally s = TallyOf(*GenerateTraining(m, sp).job, 0);
    EXPECT_EQ(s.Count("allgather@tp/f8e4m3"), l * mb * 4); // 2 forward, 2 re-gathers backward
    EXPECT_DOUBLE_EQ(s.Bytes("allgather@tp/f8e4m3"), L * M * 4 * T * h);
    EXPECT_EQ(s.Count("allgather@tp/f8e5m2"), l * mb * 2);
    EXPECT_DOUBLE_EQ(s.Bytes("allgather@tp/f8e5m2"), L * M * 2 * T * h);
    EXPECT_EQ(s.Count("allgather@tp/bf16"), mb * 2);
    EXPECT_DOUBLE_EQ(s.Bytes("allgather@tp/bf16"), M * 2 * e * T * h);
    EXPECT_EQ(s.Count("fp8_transpose"), l * mb * 4);
    EXPECT_DOUBLE_EQ(s.Bytes("fp8_transpose"), L * M * 4 * 2 * T * h);
    EXPECT_EQ(s.Count("fp8_cast"), l * mb * 2);
    EXPECT_DOUBLE_EQ(s.Bytes("fp8_cast"), L * M * 2 * (e + 1) * T / t * h);
    EXPECT_EQ(s.Count("fp8_cast_transpose"), l * mb * 4); // proj, fc2 inputs; fc1, QKV grads
    EXPECT_DOUBLE_EQ(s.Bytes("norm"), L * M * 2 * (e + 1) * T / t * h + M * 2 * e * T / t * h);

    // Current scaling (no SP): every cast first takes the tensor's amax (a zeroing kernel, a
    // read of the tensor, the scale computed from it); the LayerNormLinear norms write bf16
    // with their amax, then one cast-transpose. No amax history, no amax all-reduce.
    const Tally cur = TallyOf(*GenerateTraining(m, Fp8Plan(2, 1, 2, 4,
                                                           Fp8Recipe::CurrentScaling)).job, 0);
    EXPECT_EQ(cur.Count("fp8_amax_cat"), 0u);
    EXPECT_EQ(cur.Count("allreduce@amax/f32"), 0u);
    EXPECT_EQ(cur.Count("fp8_transpose"), 0u);
    EXPECT_EQ(cur.Count("fp8_cast_transpose"), l * mb * (4 + 4));
    EXPECT_EQ(cur.Count("fp8_scale"), l * mb * 8 + l * 4);
    EXPECT_EQ(cur.Count("fp8_amax"), l * mb * 6 + l * 4);
    EXPECT_EQ(cur.Count("fp8_amax_zero"), cur.Count("fp8_amax"));
    EXPECT_DOUBLE_EQ(cur.Bytes("fp8_amax"),
                     L * M * e * (T * h / t + T * f / t + T * h + T * f / t + T * h + T * qkv) +
                         L * e * (h * qkv + h / t * h + h * f / t + f / t * h));
    EXPECT_DOUBLE_EQ(cur.Bytes("norm"), L * M * 2 * 2 * e * T * h + M * 2 * e * T * h);
}

TEST(TrainingFp8, AttentionLogitsEmbeddingAndRouterStayInTheModelDtype)
{
    // Dense: QKV, projection, fc1, fc2 in fp8 (E4M3 forward, E5M2 backward); the fused
    // attention core, the logits and the embedding lookup keep bf16 and their bf16 costs.
    ModelSpec m = TinyGpt(2);
    GeneratedTraining bf = GenerateTraining(m, Plan(2, 1, 1, 2));
    GeneratedTraining f8 = GenerateTraining(m, Fp8Plan(2, 1, 1, 2));
    for (const char* n : {"qkv", "proj", "fc1", "fc2"})
    {
        ASSERT_NE(FindKernel(*f8.job, 0, n), nullptr) << n;
        EXPECT_EQ(FindKernel(*f8.job, 0, n)->gemm.dtype, DataType::F8E4M3) << n;
        EXPECT_EQ(FindKernel(*f8.job, 0, std::string(n) + "_bwd")->gemm.dtype, DataType::F8E5M2)
            << n;
        EXPECT_EQ(FindKernel(*bf.job, 0, n)->gemm.dtype, DataType::BF16) << n;
    }
    Ptr<RooflineCostModel> cm = CreateObject<RooflineCostModel>();
    const GpuSpec h100 = Gpu("h100-sxm");
    for (const char* n : {"attention", "attention_bwd", "logits", "logits_bwd", "embedding",
                          "embedding_bwd", "cross_entropy"})
    {
        const Op* a = FindKernel(*f8.job, 0, n);
        const Op* b = FindKernel(*bf.job, 0, n);
        ASSERT_NE(a, nullptr) << n;
        ASSERT_NE(b, nullptr) << n;
        EXPECT_EQ(a->gemm.dtype, b->gemm.dtype) << n;
        if (a->gemm.m)
        {
            EXPECT_EQ(a->gemm.dtype, DataType::BF16) << n;
        }
        EXPECT_EQ(Seconds(cm, *a, h100), Seconds(cm, *b, h100)) << n;
    }
    // The unfused attention's GEMMs too.
    TrainingPlan unfused = Fp8Plan(2, 1, 1, 2);
    unfused.flashAttention = false;
    GeneratedTraining u = GenerateTraining(m, unfused);
    for (const char* n : {"attention_scores", "attention_values", "attention_scores_bwd"})
    {
        ASSERT_NE(FindKernel(*u.job, 0, n), nullptr) << n;
        EXPECT_EQ(FindKernel(*u.job, 0, n)->gemm.dtype, DataType::BF16) << n;
    }
    // MoE: the router stays bf16; the experts' GEMMs run in fp8 with their inputs and
    // gradient outputs cast (no LayerNormLinear before them), 2 + 2 x 4 local experts GEMMs per
    // layer for the amax buffer.
    ModelSpec moe = TinyGpt(2);
    moe.experts = 8;
    moe.topK = 2;
    TrainingPlan ep = Fp8Plan(1, 1, 2, 4);
    ep.ep = 2;
    GeneratedTraining mg = GenerateTraining(moe, ep);
    EXPECT_EQ(FindKernel(*mg.job, 0, "router")->gemm.dtype, DataType::BF16);
    EXPECT_EQ(FindKernel(*mg.job, 0, "router_bwd")->gemm.dtype, DataType::BF16);
    EXPECT_EQ(FindKernel(*mg.job, 0, "expert_fc1")->gemm.dtype, DataType::F8E4M3);
    EXPECT_EQ(FindKernel(*mg.job, 0, "expert_fc2_bwd")->gemm.dtype, DataType::F8E5M2);
    EXPECT_DOUBLE_EQ(LayerFp8Gemms(moe, ep), 10);
    const Tally mt = TallyOf(*mg.job, 0);
    // Per layer and micro-batch (2 micro-batches, 2 layers): forward projection, expert fc1
    // (2T tokens x h) and fc2 inputs; backward expert fc2 and fc1, projection, QKV gradients.
    EXPECT_EQ(mt.Count("fp8_cast_transpose"), 2u * 2 * (3 + 4));
    EXPECT_EQ(mt.Count("fp8_transpose"), 2u * 2 * 1); // QKV's norm output only
    // Weights: QKV, projection, 4 local experts x (fc1 + fc2).
    EXPECT_DOUBLE_EQ(LayerFp8WeightParams(moe, ep),
                     256.0 * 768 + 256 * 256 + 4 * (256.0 * 1024 + 1024 * 256));
}

TEST(TrainingFp8, CachedWeightCopiesAndRecomputationByHand)
{
    // TE keeps each fp8 GEMM weight and its transpose: 2 bytes per parameter of the rank's
    // layers. TinyGpt on TP 2: (h x 768 + h x h + h x f + f x h) / 2 = 393,216 per layer.
    ModelSpec m = TinyGpt(4);
    const TrainingPlan p = Fp8Plan(2, 2, 1, 4);
    EXPECT_DOUBLE_EQ(LayerFp8WeightParams(m, p), (256.0 * 768 + 256 * 256 + 2 * 256 * 1024) / 2);
    GeneratedTraining g = GenerateTraining(m, p);
    GeneratedTraining b = GenerateTraining(m, Plan(2, 2, 1, 4));
    const Op* copies = nullptr;
    for (const Op& op : OpsOf(*g.job, 0))
    {
        if (op.kind == OpKind::Malloc && op.name == "fp8 weight copies")
        {
            copies = &op;
        }
    }
    ASSERT_NE(copies, nullptr);
    EXPECT_EQ(copies->bytes, 2u * 393216 * 2); // 2 layers per stage
    EXPECT_EQ(PeakMemory(g.job->ranks[0]) - PeakMemory(b.job->ranks[0]), copies->bytes);

    // Full recomputation reruns each layer's forward, casts included, but reuses the cached
    // weights: still 4 weight casts per layer, twice the forward casts.
    TrainingPlan full = p;
    full.recompute = Recompute::Full;
    const Tally once = TallyOf(*g.job, 0);
    const Tally twice = TallyOf(*GenerateTraining(m, full).job, 0);
    EXPECT_EQ(twice.Count("fp8_weight_cast"), once.Count("fp8_weight_cast"));
    EXPECT_EQ(once.Count("fp8_weight_cast"), 2u * 4);
    EXPECT_EQ(twice.Count("fp8_transpose"), 2 * once.Count("fp8_transpose"));
    // The amax bookkeeping stays once per micro-batch and direction; PP 2: 2 layers per rank.
    EXPECT_EQ(twice.Count("fp8_amax_cat"), once.Count("fp8_amax_cat"));
    EXPECT_DOUBLE_EQ(once.Bytes("allreduce@amax/f32"), 4 * (4 * 24 + 4 * 16) / 1.0);
}

TEST(TrainingFp8, GemmBoundIterationFasterByTheHandDerivedAmount)
{
    // One H100, TinyGpt widened to h 4096, f 16384 (GELU), s 2048, 2 layers, 4 micro-batches
    // of one sequence: the GEMMs dominate. On one stream the iteration is the sum of its
    // kernels, so fp8's gain is what the GEMMs save minus the kernels it adds, by hand:
    // per layer and micro-batch the linear GEMMs' 72 T h^2 FLOPs (forward + backward) go from
    // 0.7 x 989.5 to 0.7 x 0.88269 x 1979 TFLOP/s; two norms write 1 byte instead of 2; added:
    // two fp8 transposes (2 T h), casts with transpose of the projection and fc2 inputs and of
    // four gradient outputs ((e + 2) per value), and per micro-batch four amax kernels (2 us
    // floor each, no all-reduce on one GPU); per layer once the four weight casts. Memory-bound
    // kernels at 0.8 x 3.35 TB/s, at least 2 us.
    const ModelSpec m = gpusim_test::GemmBoundGpt(2);
    const double T = 2048, h = 4096, F = 16384, e = 2, L = 2, M = 4;
    const double hbm = 3.35e12 * 0.8;
    auto K = [&](double bytes) { return std::max(2e-6, bytes / hbm); };
    const double relative = (1402.6 / 1979) / (794.5 / 989.5);
    const double gemms = 72 * T * h * h * (1 / (989.5e12 * 0.7) - 1 / (1979e12 * 0.7 * relative));
    const double norms = 2 * (K(2 * e * T * h) - K((e + 1) * T * h));
    const double added = 2 * K(2 * T * h) + K((e + 2) * T * h) + K((e + 2) * T * F) +
                         K((e + 2) * T * h) + K((e + 2) * T * F) + K((e + 2) * T * h) +
                         K((e + 2) * T * 3 * h);
    const double weights = K((e + 2) * 3 * h * h) + K((e + 2) * h * h) + 2 * K((e + 2) * h * F);
    const double gain = L * M * (gemms + norms - added) - L * weights - M * 4 * 2e-6;
    // The host ahead of the GPU (CUDA graphs): eager mode's launch gaps would hold up the
    // 2 us kernels, which the sum of kernels does not count.
    TrainingPlan bf16Plan = Plan(1, 1, 1, 4);
    TrainingPlan fp8Plan = Fp8Plan(1, 1, 1, 4);
    bf16Plan.hostLaunchUs = fp8Plan.hostLaunchUs = 0;
    TrainingReport bf16 = SimulateTraining(GenerateTraining(m, bf16Plan), DgxH100(1));
    TrainingReport fp8 = SimulateTraining(GenerateTraining(m, fp8Plan), DgxH100(1));
    ASSERT_TRUE(bf16.completed);
    ASSERT_TRUE(fp8.completed);
    const double measured = (bf16.iterationUs - fp8.iterationUs) * 1e-6;
    EXPECT_GT(gain, 0.2 * bf16.iterationUs * 1e-6); // about 10 ms of ~40 ms
    EXPECT_NEAR(measured / gain, 1.0, 1e-4) << measured << " s vs " << gain << " s";
    // The GEMMs alone could not save more than 1 - 1/1.765 of the iteration.
    EXPECT_LT(measured, (1 - 794.5 / 1402.6) * bf16.iterationUs * 1e-6);
    // Model FLOPs are the same; MFU stays over the bf16 peak.
    EXPECT_DOUBLE_EQ(fp8.modelFlops, bf16.modelFlops);
    EXPECT_DOUBLE_EQ(fp8.peakFlopsPerGpu, 989.5e12);
}

TEST(TrainingFp8, PlanValidationAndCommandLine)
{
    // TE's assert_dim_for_fp8_exec: GEMM tokens a multiple of 8, widths of 16.
    ModelSpec m = TinyGpt(2);
    TrainingPlan p = Fp8Plan(1, 1, 1, 2);
    p.seqLength = 100;
    EXPECT_THROW(GenerateTraining(m, p), std::invalid_argument);
    p.seqLength = 128;
    EXPECT_NO_THROW(GenerateTraining(m, p));
    ModelSpec odd = m;
    odd.hidden = 264; // 4 heads of 66
    odd.heads = 4;
    odd.kvHeads = 4;
    EXPECT_THROW(GenerateTraining(odd, p), std::invalid_argument);

    Fp8Recipe r = Fp8Recipe::None;
    EXPECT_TRUE(ParseFp8Recipe("tensorwise", r));
    EXPECT_EQ(r, Fp8Recipe::CurrentScaling);
    EXPECT_FALSE(ParseFp8Recipe("mxfp8", r));
    EXPECT_NE(DescribePlan(Fp8Plan(1, 1, 1, 2)).find("fp8 hybrid (delayed scaling)"),
              std::string::npos);
    EXPECT_EQ(DescribePlan(Plan(1, 1, 1, 2)).find("fp8"), std::string::npos);

    CliResult f8 = Cli({"generate", "--model", "llama3-8b", "--tp", "8", "--pp", "2",
                        "--global-batch", "2", "--preset", "dgx-h100", "--servers", "2", "--fp8",
                        "--simulate"});
    EXPECT_EQ(f8.code, 0) << f8.err;
    EXPECT_NE(f8.out.find("fp8 hybrid (delayed scaling)"), std::string::npos) << f8.out;
    CliResult cur = Cli({"generate", "--model", "llama3-8b", "--tp", "8", "--pp", "2",
                         "--global-batch", "2", "--preset", "dgx-h100", "--servers", "2", "--fp8",
                         "--fp8-recipe", "current", "--simulate"});
    EXPECT_EQ(cur.code, 0) << cur.err;
    EXPECT_NE(cur.out.find("fp8 hybrid (current scaling)"), std::string::npos) << cur.out;
    CliResult mx = Cli({"generate", "--model", "llama3-8b", "--fp8", "--fp8-recipe", "mxfp8",
                        "--simulate"});
    EXPECT_EQ(mx.code, 1);
    EXPECT_NE(mx.err.find("--fp8-recipe must be delayed or current"), std::string::npos);
    CliResult bad = Cli({"generate", "--model", "llama3-8b", "--fp8-recipe", "current",
                         "--simulate"});
    EXPECT_EQ(bad.code, 1);
    EXPECT_NE(bad.err.find("--fp8-recipe needs --fp8"), std::string::npos) << bad.err;
    CliResult a100 = Cli({"generate", "--model", "llama3-8b", "--tp", "8", "--pp", "2",
                          "--global-batch", "2", "--preset", "dgx-a100", "--servers", "2",
                          "--fp8", "--simulate"});
    EXPECT_EQ(a100.code, 1);
    EXPECT_NE(a100.err.find("FP8 tensor cores"), std::string::npos) << a100.err;
}

TEST(TrainingFp8, EveryParallelismCompletesWithTheAmaxGroup)
{
    // The amax all-reduce spans a stage's TP x CP x DP ranks: interleaved pipelines, SP,
    // context parallelism, MoE with EP, full recomputation and the distributed optimizer all
    // still match their collectives and finish, with both recipes.
    ModelSpec m = TinyGpt(4);
    ModelSpec moe = TinyGpt(4);
    moe.experts = 4;
    moe.topK = 2;
    struct Case
    {
        const ModelSpec* model;
        TrainingPlan plan;
    };
    std::vector<Case> cases;
    TrainingPlan p = Fp8Plan(2, 2, 2, 8);
    p.virtualStages = 2;
    p.sequenceParallel = true;
    cases.push_back({&m, p});
    p = Fp8Plan(2, 1, 2, 4);
    p.cp = 2;
    cases.push_back({&m, p});
    p = Fp8Plan(1, 2, 4, 8);
    p.ep = 2;
    p.distributedOptimizer = true;
    cases.push_back({&moe, p});
    p = Fp8Plan(2, 2, 2, 4, Fp8Recipe::CurrentScaling);
    p.sequenceParallel = true;
    p.recompute = Recompute::Full;
    cases.push_back({&m, p});
    for (const Case& c : cases)
    {
        TrainingReport r = SimulateTraining(GenerateTraining(*c.model, c.plan), DgxH100(1));
        EXPECT_TRUE(r.completed) << DescribePlan(c.plan) << ": " << r.stuck;
        EXPECT_TRUE(r.errors.empty()) << DescribePlan(c.plan);
        EXPECT_GT(r.iterationUs, 0) << DescribePlan(c.plan);
    }
}
