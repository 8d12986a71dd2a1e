// gpusim search: plan enumeration against a hand-listed set, the closed-form memory check
// against hand-derived bytes and against the generator's own allocations, the lower bound
// against simulated times, pruning against an exhaustive run, determinism across --jobs, and
// usage errors (doc/search.md).
#include "cli-test-util.h"
#include "search-test-util.h"
#include "test-temp-dir.h"

#include "ns3/llm-model.h"
#include "ns3/plan-search.h"
#include "ns3/training-generator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

/// A small Llama-like model: 4 layers (so PP 8 does not divide them), 8 heads, sequence 128.
ModelSpec
SmallModel()
{
    ModelSpec m;
    m.name = "small";
    m.layers = 4;
    m.hidden = 512;
    m.heads = 8;
    m.kvHeads = 8;
    m.ffn = 2048;
    m.vocab = 1024;
    m.seqLength = 128;
    m.rmsNorm = true;
    m.defaultGlobalBatch = 8;
    return m;
}

std::string
ReadAll(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string
BestLine(const std::string& out)
{
    const size_t at = out.find("# best: ");
    return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

} // namespace

TEST(SearchTest, EnumeratesTheHandListedPlans)
{
    SearchSpace s;
    s.gpus = 8;
    s.gpusPerServer = 4;
    s.globalBatch = 8;
    s.microBatches = {1, 2};
    s.sequenceParallel = {false};
    s.recompute = {Recompute::None};
    s.distributedOptimizer = {false};
    // By hand: TP in {1, 2, 4} (divides 8, at most 4 per server); PP divides 8 / TP and the 4
    // layers; micro-batch 2 needs 8 % (2 DP) == 0, which drops DP 8.
    const std::set<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>> expected = {
        {1, 1, 8, 1}, {1, 2, 4, 1}, {1, 2, 4, 2}, {1, 4, 2, 1}, {1, 4, 2, 2},
        {2, 1, 4, 1}, {2, 1, 4, 2}, {2, 2, 2, 1}, {2, 2, 2, 2}, {2, 4, 1, 1},
        {2, 4, 1, 2}, {4, 1, 2, 1}, {4, 1, 2, 2}, {4, 2, 1, 1}, {4, 2, 1, 2}};
    std::set<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>> got;
    for (const TrainingPlan& p : EnumeratePlans(SmallModel(), s))
    {
        EXPECT_EQ(p.Gpus(), 8u);
        got.insert({p.tp, p.pp, p.dp, p.microBatch});
    }
    EXPECT_EQ(got, expected);
    EXPECT_EQ(EnumeratePlans(SmallModel(), s).size(), 15u);
    // SP doubles the TP > 1 plans, ZeRO-1 the DP > 1 plans: by hand 2+4+4+8+8+4+8+4 = 42.
    s.sequenceParallel = {false, true};
    s.distributedOptimizer = {false, true};
    EXPECT_EQ(EnumeratePlans(SmallModel(), s).size(), 42u);
    // Interleaving (2 chunks) needs 4 % (2 PP) == 0 and micro-batches % PP == 0: PP 2 only,
    // micro-batches 8/(b DP): TP1 PP2 DP4 (m 2, 1), TP2 PP2 DP2 (m 4, 2), TP4 PP2 DP1 (8, 4).
    s.sequenceParallel = {false};
    s.distributedOptimizer = {false};
    s.virtualStages = {2};
    size_t interleaved = 0;
    for (const TrainingPlan& p : EnumeratePlans(SmallModel(), s))
    {
        EXPECT_EQ(p.pp, 2u);
        ++interleaved;
    }
    EXPECT_EQ(interleaved, 5u); // TP1 PP2 DP4 micro-batch 2 has m = 1, not a multiple of 2
}

TEST(SearchTest, MemoryCheckMatchesHandDerivedBytes)
{
    // Llama 3 8B, TP 1 PP 1 DP 8 with ZeRO-1, micro-batch 1, global batch 16 (2 micro-batches,
    // one live at a time). Hand: P = 8,030,261,248 parameters (vocabulary 128256 is already a
    // multiple of 128); weights 2P + main grads 4P + optimizer 12P/8.
    ModelSpec m;
    ASSERT_TRUE(LookupModelPreset("llama3-8b", m));
    TrainingPlan p;
    p.dp = 8;
    p.distributedOptimizer = true;
    p.globalBatch = 16;
    const double P = 8030261248.0;
    const double fixed = 2 * P + 4 * P + 12 * P / 8;
    // Per layer (e = 2, T = 8192, h = 4096, g d = 1024, f = 14336, a = 32; Korthikanti's table
    // as doc/generate.md generalises it): norm inputs 2eTh, attention and MLP inputs 2eTh,
    // Q/K/V eT(h + 2gd), projection input eTh, SwiGLU fc1 output 2eTf, fc2 input eTf, flash
    // attention's fp32 log-sum-exp 4aT.
    const double T = 8192, h = 4096, f = 14336;
    const double layer = 2 * 2 * T * h + 2 * 2 * T * h + 2 * T * (h + 2 * 1024) + 2 * T * h +
                         2 * 2 * T * f + 2 * T * f + 4 * 32 * T;
    EXPECT_DOUBLE_EQ(layer, 1141899264.0);
    // Last stage: final norm and logits inputs 2eTh, fp32 softmax 4 T V.
    const double acts = 32 * layer + 2 * 2 * T * h + 4 * T * 128256;
    const uint64_t peak = PlanPeakMemory(m, p);
    EXPECT_NEAR(double(peak), fixed + acts, 8.0); // each allocation rounded to bytes
    EXPECT_GT(peak, 80ull << 30);                 // 94.2 GiB: does not fit an H100
    // The search flags it without simulating it (and TP 2 with ZeRO fits).
    TestTempDir tmp("search-test");
    const std::string json = tmp.Path("oom.json");
    CliResult r = Cli({"search", "--model", "llama3-8b", "--preset", "dgx-h100", "--servers",
                       "1", "--global-batch", "16", "--micro-batches", "1", "--sp", "off",
                       "--recompute", "none", "--zero", "on", "--jobs", "1", "--json", json,
                       "--exhaustive"});
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const std::string text = ReadAll(json);
    const std::string plan = "\"plan\":\"TP 1 PP 1 DP 8";
    const size_t at = text.find(plan);
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_NE(text.substr(at, 400).find("\"status\":\"oom\""), std::string::npos);
    EXPECT_NE(text.find("\"peak_memory_bytes\":" + std::to_string(peak)), std::string::npos);
}

TEST(SearchTest, ClosedFormMemoryEqualsTheGeneratedAllocations)
{
    // Second method: the generator's own malloc/free ops replayed by PeakMemory.
    const ModelSpec m = SmallModel();
    std::vector<TrainingPlan> plans;
    TrainingPlan p;
    p.tp = 2;
    p.pp = 2;
    p.dp = 2;
    p.globalBatch = 8;
    plans.push_back(p);
    p.virtualStages = 2;
    p.sequenceParallel = true;
    plans.push_back(p);
    p.virtualStages = 1;
    p.recompute = Recompute::Full;
    p.distributedOptimizer = true;
    p.microBatch = 2;
    plans.push_back(p);
    p.recompute = Recompute::Selective;
    p.pp = 4;
    p.dp = 1;
    p.distributedOptimizer = false;
    plans.push_back(p);
    for (const TrainingPlan& q : plans)
    {
        for (uint32_t stage = 0; stage < q.pp; ++stage)
        {
            const uint32_t rank = RankAt(q, 0, 0, stage);
            EXPECT_EQ(StagePeakMemory(m, q, stage), PeakMemory(GenerateRank(m, q, rank)))
                << DescribePlan(q) << " stage " << stage;
        }
    }
}

TEST(SearchTest, PruneCutIsTheFirstBoundAboveTheBestBeforeIt)
{
    // Bounds 1, 2, 3, 4; times 5, 2.5, ?, ?: position 2's bound 3 > best 2.5 -> cut at 2.
    EXPECT_EQ(PruneCut({1, 2, 3, 4}, {5, 2.5, -1, -1}), 2);
    // Position 1 unknown: no decision yet.
    EXPECT_EQ(PruneCut({1, 2, 3, 4}, {5, -1, -1, -1}), -1);
    // Equal bound and best: not pruned (it could tie).
    EXPECT_EQ(PruneCut({1, 2, 2.5, 4}, {5, 2.5, 3, -1}), 3);
    EXPECT_EQ(PruneCut({1, 2}, {3, 4}), 2);
}

TEST(SearchTest, PruningKeepsTheExhaustiveWinnerLlama8bOn64Gpus)
{
    TestTempDir tmp("search-test");
    const std::vector<std::string> base = {"search", "--model", "llama3-8b", "--preset",
                                           "dgx-h100", "--servers", "8", "--global-batch", "16",
                                           "--micro-batches", "1", "--sp", "off", "--zero",
                                           "off", "--recompute", "none", "--jobs", "2"};
    std::vector<std::string> ex = base;
    ex.insert(ex.end(), {"--exhaustive", "--json", tmp.Path("ex.json")});
    std::vector<std::string> pr = base;
    pr.insert(pr.end(), {"--json", tmp.Path("pr.json")});
    const CliResult e = Cli(ex);
    const CliResult p = Cli(pr);
    ASSERT_EQ(e.code, 0) << e.err << e.out;
    ASSERT_EQ(p.code, 0) << p.err << p.out;
    EXPECT_FALSE(BestLine(e.out).empty());
    EXPECT_EQ(BestLine(e.out), BestLine(p.out));
    // By hand: TP in {1,2,4,8}, PP | 32 layers and 64/TP, DP = 64/(TP PP) | 16: TP 1 with
    // PP 4..32 (4 plans), TP 2 PP 2..32 (5), TP 4 PP 1..16 (5), TP 8 PP 1..8 (4) = 18.
    EXPECT_NE(e.out.find("# plans: 18 enumerated"), std::string::npos) << e.out;
    // The bound is a bound: never above a simulated time.
    const std::string text = ReadAll(tmp.Path("ex.json"));
    const size_t checked = gpusim_test::ExpectBoundsBelowSimulated(text);
    EXPECT_GT(checked, 5u);
    // Pruning simulated fewer plans.
    EXPECT_EQ(ReadAll(tmp.Path("pr.json")).find("\"pruned\":0,"), std::string::npos);
}

TEST(SearchTest, SameResultWithOneOrTwoJobs)
{
    TestTempDir tmp("search-test");
    std::vector<std::string> args = {"search", "--model", "llama3-8b", "--preset", "dgx-h100",
                                     "--servers", "2", "--global-batch", "16",
                                     "--micro-batches", "1,2", "--sp", "both", "--zero", "off",
                                     "--recompute", "none"};
    std::vector<std::string> one = args;
    one.insert(one.end(), {"--jobs", "1", "--json", tmp.Path("1.json")});
    std::vector<std::string> two = args;
    two.insert(two.end(), {"--jobs", "2", "--json", tmp.Path("2.json")});
    ASSERT_EQ(Cli(one).code, 0);
    ASSERT_EQ(Cli(two).code, 0);
    const std::string a = ReadAll(tmp.Path("1.json"));
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, ReadAll(tmp.Path("2.json")));
}

TEST(SearchTest, UsageErrors)
{
    const std::vector<std::vector<std::string>> bad = {
        {"search", "--preset", "dgx-h100"},                                      // no model
        {"search", "--model", "gpt-9"},                                          // unknown
        {"search", "--model", "llama3-8b", "--micro-batches", "1,0"},            // zero
        {"search", "--model", "llama3-8b", "--micro-batches", "a"},              // not a number
        {"search", "--model", "llama3-8b", "--sp", "maybe"},                     // not on/off
        {"search", "--model", "llama3-8b", "--recompute", "none,most"},          // unknown
        {"search", "--model", "llama3-8b", "--jobs", "0"},                       // no workers
        {"search", "--model", "llama3-8b", "--tp", "8"},                         // not an option
        {"search", "--model", "llama3-8b", "extra"},                             // positional
    };
    for (const auto& args : bad)
    {
        const CliResult r = Cli(args);
        EXPECT_EQ(r.code, 1) << args.back() << ": " << r.out << r.err;
        EXPECT_NE(r.err.find("usage: gpusim search"), std::string::npos) << r.err;
    }
}

TEST(SearchTest, BoundHoldsForInterleavedSpAndFullRecompute)
{
    // The bound's interleaved pipeline term, SP's collectives and full recomputation's extra
    // forward, against simulated times on one dgx-h100 (every plan that fits is simulated).
    TestTempDir tmp("search-test");
    const CliResult r =
        Cli({"search", "--model", "llama3-8b", "--preset", "dgx-h100", "--servers", "1",
             "--global-batch", "16", "--micro-batches", "1", "--vpp", "2", "--sp", "both",
             "--zero", "off", "--recompute", "none,full", "--jobs", "2", "--exhaustive",
             "--json", tmp.Path("v.json")});
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const std::string text = ReadAll(tmp.Path("v.json"));
    const size_t checked = gpusim_test::ExpectBoundsBelowSimulated(text);
    EXPECT_GE(checked, 4u) << r.out;
    EXPECT_NE(text.find("interleaved x2 SP, micro-batch 1, recompute full"), std::string::npos);
}
