// gpusim validate-training (doc/validation.md, "Training throughput"): the paper's FLOP count
// against a second derivation, the rows and plans read from the shipped table, bad input, the
// scatter/gather pipeline transfers, and the simulated error on the smallest published rows.
#include "cli-test-util.h"
#include "test-temp-dir.h"

#include "ns3/llm-model.h"
#include "ns3/training-generator.h"
#include "ns3/validate-training-command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

const std::string kTable =
    std::string(GPUSIM_SOURCE_DIR) + "/contrib/gpusim/test/data/megatron-lm-2021-throughput.json";
const std::string kTable2022 = std::string(GPUSIM_SOURCE_DIR) +
                               "/contrib/gpusim/test/data/megatron-lm-2022-iteration-time.json";

/// Each case completes `head` (a table "t" whose one row is open) with the row's last fields;
/// reading it must fail naming the table, the row and the field.
void
ExpectEachRowErrorNamesItsField(const std::string& file, const std::string& head,
                                const std::vector<std::pair<std::string, std::string>>& cases)
{
    for (const auto& [field, name] : cases)
    {
        std::ofstream(file) << head << field << "}]}]}";
        try
        {
            ReadTrainingValidation(file, "");
            ADD_FAILURE() << "no error for " << field;
        }
        catch (const std::runtime_error& e)
        {
            const std::string what = e.what();
            EXPECT_NE(what.find("table t row 1"), std::string::npos) << what;
            EXPECT_NE(what.find(name), std::string::npos) << what;
        }
    }
}

} // namespace

TEST(ValidateTraining, PaperFlopsByHand)
{
    // Narayanan et al. 2021 eq. 3 for Table 1's first row (B 512, s 2048, l 24, h 2304,
    // V 51200), evaluated by hand (Python): 1.5466830067924994e16.
    EXPECT_NEAR(MegatronPaperFlops(512, 2048, 24, 2304, 51200), 1.5466830067924994e16, 1e3);
}

TEST(ValidateTraining, PaperFlopsAreModelFlopsWithRecomputedLayers)
{
    // Second derivation: eq. 3 = the generator's model FLOPs (3 x forward) with the transformer
    // layers' forward counted once more (full recomputation), the logits (6 B s h V) not.
    const ModelSpec m = MegatronGptModel(24, 2304, 24);
    TrainingPlan p = MegatronPlan(m, 1, 1, 32, 512, true);
    const double b = 512, s = 2048, h = 2304, v = 51200;
    const double logits = 6 * b * s * h * v;
    const double model = ModelFlopsPerIteration(m, p);
    const double expected = (model - logits) * 4.0 / 3.0 + logits;
    EXPECT_NEAR(MegatronPaperFlops(b, s, 24, h, v) / expected, 1.0, 1e-9);
}

TEST(ValidateTraining, ReadsThePublishedRowsAndPlans)
{
    auto rows = ReadTrainingValidation(kTable, "");
    ASSERT_EQ(rows.size(), 16u); // Table 1: 10 rows, Table 2 PTD: 6 rows
    // 1.7B, TP 1, PP 1, 32 GPUs, batch 512, 137 TFLOP/s; run_table_1.sh: MBS 16, torch DDP.
    const auto& r0 = rows[0];
    EXPECT_EQ(r0.model.layers, 24u);
    EXPECT_EQ(r0.model.hidden, 2304u);
    EXPECT_EQ(r0.model.ffn, 4u * 2304u);
    EXPECT_EQ(r0.plan.dp, 32u);
    EXPECT_EQ(r0.plan.microBatch, 16u);
    EXPECT_EQ(r0.plan.virtualStages, 1u);
    EXPECT_FALSE(r0.plan.scatterGatherP2p);
    EXPECT_EQ(MicroBatches(r0.model, r0.plan), 1u); // 512 / (16 x 32)
    EXPECT_EQ(r0.plan.recompute, Recompute::Full);
    EXPECT_TRUE(r0.plan.overlapGradReduce);            // torch DDP
    EXPECT_EQ(r0.plan.bucketParams, 13107200u);        // 25 MiB of fp16 gradients
    EXPECT_EQ(r0.plan.gradAccum, GradAccumulation::Autograd);
    EXPECT_DOUBLE_EQ(r0.measuredTflops, 137);
    // 18.4B: MBS 8 on DP 32, batch 1024 -> 4 micro-batches.
    EXPECT_EQ(MicroBatches(rows[3].model, rows[3].plan), 4u);
    // 39.1B: TP 8, PP 2, 512 GPUs -> DP 32; MBS 4, local DDP, not interleaved.
    const auto& r4 = rows[4];
    EXPECT_EQ(r4.plan.dp, 32u);
    EXPECT_EQ(r4.plan.microBatch, 4u);
    EXPECT_EQ(r4.plan.virtualStages, 1u);
    EXPECT_TRUE(r4.plan.scatterGatherP2p);
    EXPECT_FALSE(r4.plan.overlapGradReduce);
    // 76.1B: 60 layers on PP 4 = 15 per stage, 5 per virtual stage -> 3 chunks.
    EXPECT_EQ(rows[5].plan.virtualStages, 3u);
    // 529.6B: 105 layers on PP 35 = 3 per stage, 1 per virtual stage -> 3 chunks.
    const auto& r8 = rows[8];
    EXPECT_EQ(r8.plan.virtualStages, 3u);
    EXPECT_EQ(r8.plan.dp, 9u);
    EXPECT_EQ(rows[9].plan.virtualStages, 1u); // 1T: not interleaved in the artifact
    // Table 2's 175B: 8 layers per stage, 2 per virtual stage -> 4 chunks.
    EXPECT_EQ(rows[10].plan.virtualStages, 4u);
    EXPECT_EQ(ReadTrainingValidation(kTable, "narayanan2021-table2-ptd").size(), 6u);
}

TEST(ValidateTraining, BadInputNamesTheRow)
{
    TestTempDir dir("validate-training");
    const std::string f = dir.Path("bad.json");
    std::ofstream(f) << R"({"tables": [{"id": "t", "rows": [
        {"heads": 24, "hidden": 2304, "layers": 24, "tp": 1, "pp": 1, "gpus": 32, "batch": 512,
         "tflops_per_gpu": 137},
        {"heads": 24, "hidden": 2304, "layers": 24, "tp": 8, "pp": 1, "gpus": 12, "batch": 512,
         "tflops_per_gpu": 137}]}]})";
    try
    {
        ReadTrainingValidation(f, "");
        FAIL() << "no error";
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("table t row 2"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("multiple of tp x pp"), std::string::npos);
    }
    std::ofstream(f) << R"({"tables": [{"id": "t", "rows": [{"heads": 24}]}]})";
    EXPECT_THROW(ReadTrainingValidation(f, ""), std::runtime_error);
    EXPECT_THROW(ReadTrainingValidation(dir.Path("missing.json"), ""), std::runtime_error);
}

TEST(ValidateTraining, ScatterGatherSplitsPipelineTransfersOverTp)
{
    // 2 layers, h 64, TP 2, PP 2, DP 1, 4 micro-batches of 2048 tokens: a full activation is
    // 2048 x 64 x 2 B = 262144 B; with scatter/gather each TP rank sends half, and every
    // received slice is all-gathered over TP (stage 0 receives 4 gradients).
    const ModelSpec m = MegatronGptModel(2, 64, 4);
    TrainingPlan p = MegatronPlan(m, 2, 2, 4, 4, false);
    for (bool sg : {false, true})
    {
        p.scatterGatherP2p = sg;
        GeneratedTraining g = GenerateTraining(m, p, false);
        uint32_t sends = 0, gathers = 0;
        for (const Op& op : g.job->ranks[0].ops)
        {
            if (op.kind == OpKind::Collective && op.coll == CollKind::Send)
            {
                ++sends;
                EXPECT_EQ(op.bytes, sg ? 131072u : 262144u);
            }
            if (op.kind == OpKind::Collective && op.coll == CollKind::AllGather)
            {
                ++gathers;
                EXPECT_EQ(op.bytes, 262144u);
            }
        }
        EXPECT_EQ(sends, 4u);
        EXPECT_EQ(gathers, sg ? 4u : 0u);
    }
}

TEST(ValidateTraining, SmallestPublishedRowsStayWithinTheRecordedError)
{
    // The two smallest rows of Table 1 (32 and 64 GPUs) as the paper's artifact ran them
    // (micro-batch 16, torch DDP), both predictions: nothing fitted on the table. Within the
    // goal (10 %): +3.8 % and +5.1 % when written (doc/validation.md).
    auto rows = ReadTrainingValidation(kTable, "narayanan2021-table1");
    ASSERT_GE(rows.size(), 2u);
    RunTrainingValidationRow(rows[0]);
    RunTrainingValidationRow(rows[1]);
    ASSERT_TRUE(rows[0].run) << rows[0].note;
    ASSERT_TRUE(rows[1].run) << rows[1].note;
    EXPECT_NEAR(rows[0].errorPct, 0, 10.0) << rows[0].simulatedTflops;
    EXPECT_NEAR(rows[1].errorPct, 0, 10.0) << rows[1].simulatedTflops;
}

namespace
{

/// Narayanan et al.'s 1.7B GPT (24 layers, h 2304, 24 heads) at TP 1, PP 1 on `gpus` GPUs of
/// `preset`, global batch `batch`, no interleaving.
TrainingValidationRow
Gpt17bRow(const std::string& preset, uint32_t gpus, uint32_t batch, double measuredTflops)
{
    TrainingValidationRow row;
    row.table = "t";
    row.preset = preset;
    row.model = MegatronGptModel(24, 2304, 24);
    row.plan = MegatronPlan(row.model, 1, 1, gpus, batch, false);
    row.flopsPerIteration =
        MegatronPaperFlops(batch, kMegatron2021Seq, 24, 2304, kMegatron2021Vocab);
    row.measuredTflops = measuredTflops;
    return row;
}

} // namespace

TEST(ValidateTraining, GemmShapeModelReachesTheSimulation)
{
    // At micro-batch 1 the 1.7B row's GEMMs leave 2 - 6 waves partly empty (0.59 - 0.88 of
    // peak by the shape model, doc/validation.md): every GEMM at the A100's best measured
    // efficiency (271.2 / 312, the flat what-if) runs more than 5 % faster. Fails if the
    // attribute does not reach the cost model. The default, every GEMM at the 2020 CUTLASS
    // measurement (0.754), is slower than both.
    TrainingValidationRow row = Gpt17bRow("dgx-a100", 32, 512, 137);
    TrainingValidationRow flat = row, measured = row;
    RunTrainingValidationRow(row, kGemmShapeModel);
    RunTrainingValidationRow(flat, 271.2 / 312);
    RunTrainingValidationRow(measured);
    ASSERT_TRUE(row.run && flat.run && measured.run);
    EXPECT_GT(flat.simulatedTflops, row.simulatedTflops * 1.05);
    EXPECT_LT(measured.simulatedTflops, row.simulatedTflops);
}

TEST(ValidateTraining, H100RowsPriceGemmsFromTheTimedShapes)
{
    // On dgx-h100 the rows' GEMMs take the H100's timed efficiencies (GpuSpec::gemmTable,
    // 0.58 - 0.73 of peak; the median 0.66 away from the timed shapes), all below the 0.7 of
    // --gemm-efficiency 0.7: the default is slower, by at most 0.7 / 0.583 - 1. Fails if
    // MeasuredGemms does not reach the cost model.
    TrainingValidationRow row = Gpt17bRow("dgx-h100", 8, 128, 400);
    TrainingValidationRow flat = row;
    RunTrainingValidationRow(row);
    RunTrainingValidationRow(flat, 0.7);
    ASSERT_TRUE(row.run && flat.run);
    EXPECT_LT(row.simulatedTflops, flat.simulatedTflops * 0.99);
    EXPECT_GT(row.simulatedTflops, flat.simulatedTflops * 0.583 / 0.7);
}

TEST(ValidateTraining, UnfusedAttentionIsMegatronsKernelSequence)
{
    // h 256, 4 heads (head dim 64), TP 2 -> 2 local heads, micro-batch 1, s 2048, fp16, with
    // attention dropout. Forward: scores GEMM 2 batches of 2048 x 2048 x 64, softmax reading
    // and writing 2 x 2048^2 fp16 elements (4 B each), dropout reading, writing and a 1-byte
    // mask (5 B), values GEMM 2048 x 64 x 2048. Backward: dP 2048 x 2048 x 64, dropout and
    // softmax backward (5 and 6 B per element), then dV, dQ, dK as 3 x 2 batches of
    // 2048 x 64 x 2048. FLOPs: 4 T s h / t forward, twice that backward.
    const ModelSpec m = MegatronGptModel(2, 256, 4);
    TrainingPlan p = MegatronPlan(m, 2, 1, 2, 2, false);
    GeneratedTraining g = GenerateTraining(m, p, false);
    std::map<std::string, const Op*> first;
    for (const Op& op : g.job->ranks[0].ops)
    {
        first.emplace(op.name, &op);
    }
    for (const char* name : {"attention_scores", "softmax", "attention_dropout",
                             "attention_values", "attention_values_bwd", "attention_dropout_bwd",
                             "softmax_bwd", "attention_scores_bwd"})
    {
        ASSERT_TRUE(first.count(name)) << name;
    }
    EXPECT_EQ(first.count("attention"), 0u);
    auto shape = [&](const char* name) {
        const GemmShape& s = first[name]->gemm;
        return std::vector<uint64_t>{s.m, s.n, s.k, s.batch};
    };
    EXPECT_EQ(shape("attention_scores"), (std::vector<uint64_t>{2048, 2048, 64, 2}));
    EXPECT_EQ(shape("attention_values"), (std::vector<uint64_t>{2048, 64, 2048, 2}));
    EXPECT_EQ(shape("attention_values_bwd"), (std::vector<uint64_t>{2048, 2048, 64, 2}));
    EXPECT_EQ(shape("attention_scores_bwd"), (std::vector<uint64_t>{2048, 64, 2048, 6}));
    const double elems = 2.0 * 2048 * 2048;
    EXPECT_DOUBLE_EQ(first["softmax"]->memBytes, 4 * elems);
    EXPECT_DOUBLE_EQ(first["attention_dropout"]->memBytes, 5 * elems);
    EXPECT_DOUBLE_EQ(first["attention_dropout_bwd"]->memBytes, 5 * elems);
    EXPECT_DOUBLE_EQ(first["softmax_bwd"]->memBytes, 6 * elems);
    auto flops = [&](const char* name) {
        const GemmShape& s = first[name]->gemm;
        return 2.0 * s.m * s.n * s.k * s.batch;
    };
    const double tsh = 2048.0 * 2048 * 256 / 2;
    EXPECT_DOUBLE_EQ(flops("attention_scores") + flops("attention_values"), 4 * tsh);
    EXPECT_DOUBLE_EQ(flops("attention_values_bwd") + flops("attention_scores_bwd"), 8 * tsh);
}

// The adds of one rank's op list, sorted.
std::vector<double>
GradAccumulateBytes(const ModelSpec& m, const TrainingPlan& p)
{
    std::vector<double> adds;
    const GeneratedTraining g = GenerateTraining(m, p, false);
    for (const Op& op : g.job->ranks[0].ops)
    {
        if (op.name == "grad_accumulate")
        {
            adds.push_back(op.memBytes);
        }
    }
    std::sort(adds.begin(), adds.end());
    return adds;
}

TEST(ValidateTraining, GradientsAccumulateAsAutogradOrAHookDoes)
{
    // Each add reads the new fp16 gradient and the sum, writes the sum: 2 + 2 x 2 = 6 B per
    // local parameter. h 256, FFN 4h, biases, 2 LayerNorms: a layer has 12 h^2 + 13 h =
    // 789760 parameters, 394880 per TP rank (TP 2): 2369280 B. Embeddings: (51200 / 2 + 2048
    // positions) x 256 = 7077888 parameters, 42467328 B; tied embeddings on one stage: no
    // separate output-layer add. 2 layers, 3 micro-batches.
    const ModelSpec m = MegatronGptModel(2, 256, 4);
    TrainingPlan p = MegatronPlan(m, 2, 1, 2, 3, false);
    // PyTorch autograd (the SC'21 runs): the first micro-batch's gradient is taken as is, the
    // second and third are added: 2 x (2 layers + embeddings).
    EXPECT_EQ(p.gradAccum, GradAccumulation::Autograd);
    EXPECT_EQ(GradAccumulateBytes(m, p),
              (std::vector<double>{2369280, 2369280, 2369280, 2369280, 42467328, 42467328}));
    // A main_grad hook (Megatron-LM's contiguous-buffer DDP) adds every micro-batch: 3 x.
    p.gradAccum = GradAccumulation::MainGradHook;
    EXPECT_EQ(GradAccumulateBytes(m, p),
              (std::vector<double>{2369280, 2369280, 2369280, 2369280, 2369280, 2369280,
                                   42467328, 42467328, 42467328}));
    // With the fusion (the generator's default, later Megatron-LM) there is no separate add.
    p.gradAccum = GradAccumulation::Fused;
    EXPECT_TRUE(GradAccumulateBytes(m, p).empty());
}

TEST(ValidateTraining, ArtifactOptionsMakeThePlan)
{
    const ModelSpec m = MegatronGptModel(60, 10240, 80);
    MegatronRunOptions run;
    run.microBatch = 2;
    run.layersPerVirtualStage = 5;
    const TrainingPlan p = MegatronPlan(m, 8, 4, 1024, 1792, run);
    EXPECT_EQ(p.virtualStages, 3u); // 15 layers per stage / 5
    EXPECT_EQ(p.microBatch, 2u);
    EXPECT_EQ(MicroBatches(m, p), 28u); // 1792 / (2 x 32)
    EXPECT_FALSE(p.overlapGradReduce);
    run.layersPerVirtualStage = 4; // does not divide 15
    EXPECT_THROW(MegatronPlan(m, 8, 4, 1024, 1792, run), std::invalid_argument);
    TestTempDir dir("validate-training-artifact");
    const std::string f = dir.Path("bad.json");
    std::ofstream(f) << R"({"tables": [{"id": "t", "rows": [
        {"heads": 80, "hidden": 10240, "layers": 60, "tp": 8, "pp": 4, "gpus": 1024,
         "batch": 1792, "tflops_per_gpu": 140, "micro_batch": 2, "ddp": "horovod"}]}]})";
    try
    {
        ReadTrainingValidation(f, "");
        FAIL() << "no error";
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("table t row 1: 'ddp'"), std::string::npos)
            << e.what();
    }
}

TEST(ValidateTraining, SpeedOptionsAreCheckedBeforeAnyRowRuns)
{
    for (const auto& [option, value, message] :
         {std::tuple<std::string, std::string, std::string>{"--fidelity", "bogus",
                                                             "--fidelity must be"},
          {"--ranks", "some", "--ranks must be all, mirrored or lockstep"}})
    {
        const CliResult r = Cli({"validate-training", kTable, option, value});
        EXPECT_EQ(r.code, 1) << option;
        EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
        EXPECT_EQ(r.out.find("TFLOP/s/GPU"), std::string::npos) << "a row ran: " << r.out;
    }
}

TEST(ValidateTraining, ReadsLaterCodeOptionsAndIterationTimes)
{
    // Korthikanti et al. 2022 (arXiv:2205.05198), Tables 3 and 5: iteration times, full
    // recomputation or sequence parallel + selective recomputation, Megatron-LM's 2022
    // defaults (gradient accumulation fused into the weight-gradient GEMM).
    auto rows = ReadTrainingValidation(kTable2022, "");
    ASSERT_EQ(rows.size(), 9u);
    const auto& full = rows[0];
    EXPECT_EQ(full.model.hidden, 6144u);
    EXPECT_EQ(full.plan.tp, 8u);
    EXPECT_EQ(full.plan.dp, 1u);
    EXPECT_EQ(full.plan.microBatch, 4u);
    EXPECT_EQ(full.plan.recompute, Recompute::Full);
    EXPECT_FALSE(full.plan.sequenceParallel);
    EXPECT_EQ(full.plan.gradAccum, GradAccumulation::Fused);
    // 1.42 s for eq. 3's F (B 4, l 48, h 6144) on 8 GPUs, by hand (Python): 133.767 TFLOP/s.
    EXPECT_DOUBLE_EQ(full.measuredIterationS, 1.42);
    EXPECT_NEAR(full.measuredTflops, 133.767, 0.001);
    const auto& sel = rows[1];
    EXPECT_EQ(sel.plan.recompute, Recompute::Selective);
    EXPECT_TRUE(sel.plan.sequenceParallel);
    // 175B: PP 8, 12 layers per stage in 3 interleaved chunks of 4.
    EXPECT_EQ(rows[2].plan.virtualStages, 3u);
    // The 2240-GPU row: 530B with DP 8, the gradient all-reduce after the backward.
    EXPECT_EQ(rows[8].plan.dp, 8u);
    EXPECT_FALSE(rows[8].plan.overlapGradReduce);
}

TEST(ValidateTraining, BadLaterCodeOptionsNameTheRowAndField)
{
    TestTempDir dir("validate-training-2022");
    const std::string f = dir.Path("bad.json");
    const std::string head = R"({"tables": [{"id": "t", "rows": [{"heads": 64, "hidden": 6144,
        "layers": 48, "tp": 8, "pp": 1, "gpus": 8, "batch": 4, "micro_batch": 4, "ddp": "local", )";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"("iteration_s": 1.42, "recompute": "partial")", "'recompute'"},
        {R"("iteration_s": 1.42, "sequence_parallel": "yes")", "'sequence_parallel'"},
        {R"("iteration_s": 1.42, "grad_accum": "hook")", "'grad_accum'"},
        {R"("iteration_s": -1)", "'iteration_s'"},
    };
    ExpectEachRowErrorNamesItsField(f, head, cases);
}

TEST(ValidateTraining, Korthikanti22BRowsStayWithinTheRecordedError)
{
    // The 22B rows of Korthikanti et al. 2022 Table 5 (8 GPUs, TP 8): full recomputation and
    // sequence parallel + selective recomputation. Predictions (the A100's memory-bound
    // kernel efficiency comes from the same paper's Table 4, not from these rows): -2.4 % and
    // -1.7 % when written (doc/validation.md); the bound catches a change that moves them
    // more than 5 % slower or 7 % faster than measured.
    auto rows = ReadTrainingValidation(kTable2022, "korthikanti2022-table5");
    ASSERT_GE(rows.size(), 2u);
    for (int i = 0; i < 2; ++i)
    {
        RunTrainingValidationRow(rows[i]);
        ASSERT_TRUE(rows[i].run) << rows[i].note;
        EXPECT_GT(rows[i].errorPct, -5.0) << i;
        EXPECT_LT(rows[i].errorPct, 7.0) << i;
    }
    // Selective recomputation with sequence parallelism is faster, as measured (1.10 vs 1.42 s).
    EXPECT_LT(rows[1].iterationMs, rows[0].iterationMs * 0.85);
}

TEST(ValidateTraining, LayerTimesFollowKorthikantiTable4)
{
    // Korthikanti et al. 2022 (arXiv:2205.05198), Table 4: one transformer layer of the 22B
    // model (h 6144, 64 heads, TP 8, micro-batch 4, s 2048) on A100s, forward / backward ms.
    // The model has 4 of its 48 layers here (the per-layer times do not depend on the count).
    // When written the simulated forward was within 0.4 - 2.1 % and the backward 2.9 - 5.6 %
    // slower (doc/validation.md); the bound is 8 %. The effects of each technique are checked against the measurement
    // too: sequence parallelism saves about 0.5 ms of forward, full recomputation costs about
    // one forward. Selective recomputation's 1.3 ms is where the A100's memory-bound kernel
    // efficiency comes from (gpu-spec.cc), so it holds by construction: this guards that
    // derivation.
    struct Experiment
    {
        const char* name;
        Recompute recompute;
        bool sp;
        double forwardMs, backwardMs;
    };
    const std::vector<Experiment> table4 = {
        {"baseline no recompute", Recompute::None, false, 7.7, 11.9},
        {"sequence parallelism", Recompute::None, true, 7.2, 11.8},
        {"baseline with recompute", Recompute::Full, false, 7.7, 19.5},
        {"selective recompute", Recompute::Selective, false, 7.7, 13.2},
        {"selective + sequence", Recompute::Selective, true, 7.2, 13.1},
    };
    std::map<std::string, LayerTimes> sim;
    for (const Experiment& x : table4)
    {
        TrainingValidationRow row;
        row.table = "korthikanti2022-table4";
        row.preset = "dgx-a100";
        row.model = MegatronGptModel(4, 6144, 64);
        MegatronRunOptions run;
        run.microBatch = 4;
        row.plan = MegatronPlan(row.model, 8, 1, 8, 4, run);
        row.plan.recompute = x.recompute;
        row.plan.sequenceParallel = x.sp;
        row.plan.gradAccum = GradAccumulation::Fused;
        const LayerTimes t = SimulatedLayerTimes(row);
        sim[x.name] = t;
        EXPECT_NEAR(t.forwardMs / x.forwardMs, 1.0, 0.08) << x.name << ": " << t.forwardMs;
        EXPECT_NEAR(t.backwardMs / x.backwardMs, 1.0, 0.08) << x.name << ": " << t.backwardMs;
    }
    const double spSaving =
        sim["baseline no recompute"].forwardMs - sim["sequence parallelism"].forwardMs;
    EXPECT_GT(spSaving, 0.25);
    EXPECT_LT(spSaving, 1.0);
    const double selectiveCost =
        sim["selective recompute"].backwardMs - sim["baseline no recompute"].backwardMs;
    EXPECT_NEAR(selectiveCost, 1.3, 0.05);
    EXPECT_NEAR(sim["baseline with recompute"].backwardMs - sim["baseline no recompute"].backwardMs,
                sim["baseline no recompute"].forwardMs, 0.05);
}

// "recipe": "megatron-core" tables: the row's model family and dimensions, and Megatron-Core's
// plan as NVIDIA's performance recipes run it.
TEST(ValidateTraining, MegatronCoreRowsBuildTodaysModelAndPlan)
{
    TestTempDir dir("validate-training-core");
    const std::string f = dir.Path("core.json");
    std::ofstream(f) << R"({"tables": [{"id": "c", "recipe": "megatron-core", "preset": "dgx-h100",
        "rows": [
        {"arch": "llama3", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8,
         "ffn": 14336, "vocab": 128256, "seq_length": 8192, "tp": 2, "pp": 2, "cp": 2,
         "vpp": 2, "gpus": 64, "batch": 128, "micro_batch": 1, "dtype": "bf16",
         "grad_dtype": "bf16", "iteration_s": 4.0},
        {"layers": 24, "hidden": 2048, "heads": 16, "vocab": 131072, "seq_length": 4096,
         "tp": 1, "pp": 1, "gpus": 48, "batch": 192, "micro_batch": 1,
         "tied_embeddings": false, "recompute": "selective", "iteration_s": 0.45},
        {"arch": "nemotron", "layers": 32, "hidden": 4096, "heads": 32, "vocab": 256000,
         "seq_length": 4096, "tp": 2, "pp": 1, "gpus": 64, "batch": 256, "micro_batch": 4,
         "dtype": "fp8", "tp_comm_overlap": true, "overlap_p2p_comm": false,
         "iteration_s": 1.31},
        {"arch": "llama", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8,
         "vocab": 128256, "seq_length": 8192, "tp": 1, "pp": 1, "gpus": 8, "batch": 128,
         "micro_batch": 1, "dtype": "fp8", "fp8_recipe": "current", "iteration_s": 9.07}]}]})";
    const auto rows = ReadTrainingValidation(f, "");
    ASSERT_EQ(rows.size(), 4u);
    const TrainingValidationRow& llama = rows[0];
    EXPECT_EQ(llama.model.kvHeads, 8u);
    EXPECT_EQ(llama.model.ffn, 14336u);
    EXPECT_EQ(llama.model.vocab, 128256u);
    EXPECT_EQ(llama.model.seqLength, 8192u);
    EXPECT_TRUE(llama.model.gatedMlp && llama.model.rmsNorm);
    EXPECT_FALSE(llama.model.biases || llama.model.learnedPositions || llama.model.dropout ||
                 llama.model.tiedEmbeddings);
    EXPECT_EQ(llama.model.dtype, DataType::BF16);
    EXPECT_EQ(llama.plan.dp, 8u); // 64 / (2 x 2 x 2)
    EXPECT_EQ(llama.plan.cp, 2u);
    EXPECT_EQ(llama.plan.virtualStages, 2u);
    EXPECT_TRUE(llama.plan.sequenceParallel);
    EXPECT_TRUE(llama.plan.distributedOptimizer && llama.plan.overlapParamGather &&
                llama.plan.overlapGradReduce && llama.plan.flashAttention);
    EXPECT_EQ(llama.plan.gradDtype, DataType::BF16);
    EXPECT_EQ(llama.plan.recompute, Recompute::None);
    EXPECT_EQ(llama.plan.gradAccum, GradAccumulation::Fused);
    // TFLOP/s are model FLOPs (no recomputation) over time x GPUs.
    EXPECT_DOUBLE_EQ(llama.flopsPerIteration, ModelFlopsPerIteration(llama.model, llama.plan));
    EXPECT_DOUBLE_EQ(llama.measuredTflops, llama.flopsPerIteration / (4.0 * 64) / 1e12);
    const TrainingValidationRow& gpt = rows[1];
    EXPECT_TRUE(gpt.model.biases && gpt.model.learnedPositions && gpt.model.dropout);
    EXPECT_FALSE(gpt.model.tiedEmbeddings || gpt.model.gatedMlp || gpt.model.rmsNorm);
    EXPECT_EQ(gpt.model.ffn, 4u * 2048);
    EXPECT_EQ(gpt.model.kvHeads, 16u);
    EXPECT_FALSE(gpt.plan.sequenceParallel); // TP 1
    EXPECT_EQ(gpt.plan.dp, 48u);
    EXPECT_EQ(gpt.plan.gradDtype, DataType::F32);
    EXPECT_EQ(gpt.plan.recompute, Recompute::Selective);
    EXPECT_EQ(gpt.plan.fp8, Fp8Recipe::None);
    EXPECT_FALSE(gpt.plan.tpCommOverlap);
    const TrainingValidationRow& nemotron = rows[2];
    EXPECT_FALSE(nemotron.model.gatedMlp || nemotron.model.rmsNorm || nemotron.model.biases ||
                 nemotron.model.tiedEmbeddings || nemotron.model.learnedPositions);
    EXPECT_EQ(nemotron.model.dtype, DataType::BF16);
    EXPECT_EQ(nemotron.plan.fp8, Fp8Recipe::Delayed); // Megatron-Core's default recipe
    EXPECT_TRUE(nemotron.plan.tpCommOverlap && nemotron.plan.sequenceParallel);
    EXPECT_FALSE(nemotron.plan.overlapP2pComm);
    EXPECT_EQ(rows[3].plan.fp8, Fp8Recipe::CurrentScaling);
    EXPECT_TRUE(rows[3].plan.overlapP2pComm); // the default (used only when interleaved)
}

TEST(ValidateTraining, BadMegatronCoreRowsNameTheRowAndField)
{
    TestTempDir dir("validate-training-core-bad");
    const std::string f = dir.Path("bad.json");
    const std::string head = R"({"tables": [{"id": "t", "recipe": "megatron-core", "rows": [
        {"layers": 24, "hidden": 2048, "heads": 16, "vocab": 131072, "seq_length": 4096,
         "tp": 2, "pp": 1, "batch": 192, "micro_batch": 1, "iteration_s": 0.45, )";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"("gpus": 48, "arch": "mamba")", "'arch'"},
        {R"("gpus": 47)", "not a multiple of tp x pp x cp"},
        {R"("gpus": 48, "cp": 0)", "'cp'"},
        {R"("gpus": 48, "dtype": "int4")", "'dtype'"},
        {R"("gpus": 48, "dtype": "fp8", "fp8_recipe": "mxfp8")", "'fp8_recipe'"},
        {R"("gpus": 48, "grad_dtype": "fp8")", "'grad_dtype'"},
        {R"("gpus": 48, "tied_embeddings": 1)", "'tied_embeddings'"},
    };
    ExpectEachRowErrorNamesItsField(f, head, cases);
    std::ofstream(f) << R"({"tables": [{"id": "t", "recipe": "megatron-2025", "rows": []}]})";
    EXPECT_THROW(ReadTrainingValidation(f, ""), std::runtime_error);
}
