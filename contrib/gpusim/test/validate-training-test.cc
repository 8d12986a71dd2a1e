// gpusim validate-training (doc/validation.md, "Training throughput"): the paper's FLOP count
// against a second derivation, the rows and plans read from the shipped table, bad input, the
// scatter/gather pipeline transfers, and the simulated error on the smallest published rows.
#include "test-temp-dir.h"

#include "ns3/llm-model.h"
#include "ns3/training-generator.h"
#include "ns3/validate-training-command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

const std::string kTable =
    std::string(GPUSIM_SOURCE_DIR) + "/contrib/gpusim/test/data/megatron-lm-2021-throughput.json";

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
    const auto& r0 = rows[0];    // 1.7B, TP 1, PP 1, 32 GPUs, batch 512, 137 TFLOP/s
    EXPECT_EQ(r0.model.layers, 24u);
    EXPECT_EQ(r0.model.hidden, 2304u);
    EXPECT_EQ(r0.model.ffn, 4u * 2304u);
    EXPECT_EQ(r0.plan.dp, 32u);
    EXPECT_EQ(r0.plan.virtualStages, 1u);
    EXPECT_FALSE(r0.plan.scatterGatherP2p);
    EXPECT_EQ(MicroBatches(r0.model, r0.plan), 16u); // 512 / (1 x 32)
    EXPECT_EQ(r0.plan.recompute, Recompute::Full);
    EXPECT_FALSE(r0.plan.overlapGradReduce);
    EXPECT_DOUBLE_EQ(r0.measuredTflops, 137);
    const auto& r4 = rows[4]; // 39.1B: 48 layers, TP 8, PP 2, 512 GPUs -> DP 32, 24 layers/stage
    EXPECT_EQ(r4.plan.dp, 32u);
    EXPECT_EQ(r4.plan.virtualStages, 2u);
    EXPECT_TRUE(r4.plan.scatterGatherP2p);
    const auto& r8 = rows[8]; // 529.6B: 105 layers on PP 35 -> 3 per stage -> 3 chunks
    EXPECT_EQ(r8.plan.virtualStages, 3u);
    EXPECT_EQ(r8.plan.dp, 9u);
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

TEST(ValidateTraining, SmallestPublishedRowsWithinBound)
{
    // The two smallest rows of Table 1 (32 and 64 GPUs). Row 1 is the one the A100's GEMM
    // efficiency was fitted on (gpu-spec.cc); row 2 is a prediction. Bound: the errors reached
    // (-0.3 % and -5.2 % when written) with margin: 2 % on the fitted row, 8 % on row 2.
    auto rows = ReadTrainingValidation(kTable, "narayanan2021-table1");
    ASSERT_GE(rows.size(), 2u);
    RunTrainingValidationRow(rows[0]);
    RunTrainingValidationRow(rows[1]);
    ASSERT_TRUE(rows[0].run) << rows[0].note;
    ASSERT_TRUE(rows[1].run) << rows[1].note;
    EXPECT_LT(std::fabs(rows[0].errorPct), 2.0) << rows[0].simulatedTflops;
    EXPECT_LT(std::fabs(rows[1].errorPct), 8.0) << rows[1].simulatedTflops;
    // The same rows with the GEMMs at the cost model's default 0.7 instead of 0.54 run faster:
    // the efficiency reaches the simulation.
    auto fast = rows[0];
    RunTrainingValidationRow(fast, 0.7);
    EXPECT_GT(fast.simulatedTflops, rows[0].simulatedTflops * 1.1);
}
