// Context parallelism (gpusim generate --cp, doc/generate.md "Context parallelism"): rank
// layout and communicators against Megatron-Core's order, the ring's per-step FLOPs and P2P
// bytes against hand formulas, FLOP / byte totals against the non-CP plan, activation memory,
// end-to-end simulation, search enumeration and bad plans.
#include "cli-test-util.h"
#include "search-test-util.h"
#include "test-temp-dir.h"
#include "training-test-util.h"

#include "ns3/chakra-trace.h"
#include "ns3/context-parallel.h"
#include "ns3/llm-model.h"
#include "ns3/plan-search.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <gtest/gtest.h>

#include <iostream>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace ns3;
using namespace ns3::gpusim;
using gpusim_test::DgxH100;
using gpusim_test::OpsOf;
using gpusim_test::Plan;
using gpusim_test::TinyGpt;

namespace
{

TrainingPlan
CpPlan(uint32_t tp, uint32_t cp, uint32_t pp, uint32_t dp, uint32_t globalBatch)
{
    TrainingPlan p = Plan(tp, pp, dp, globalBatch);
    p.cp = cp;
    return p;
}

std::string
ReadAll(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool
StartsWith(const std::string& s, const std::string& prefix)
{
    return s.compare(0, prefix.size(), prefix) == 0;
}

/// Sum of kernel memory bytes over every rank of an unshared job, attention kernels apart.
void
KernelBytes(const JobTrace& job, double& attention, double& other)
{
    attention = other = 0;
    for (uint32_t r = 0; r < job.ranks.size(); ++r)
    {
        for (const Op& op : OpsOf(job, r))
        {
            if (op.kind == OpKind::Kernel && op.name != "optimizer")
            {
                (StartsWith(op.name, "attention") ? attention : other) += op.memBytes;
            }
        }
    }
}

/// comm name -> (members by comm rank) from every rank's comm_init lines.
std::map<std::string, std::map<int32_t, uint32_t>>
Communicators(const JobTrace& job)
{
    std::map<std::string, std::map<int32_t, uint32_t>> comms;
    for (const RankTrace& rt : job.ranks)
    {
        for (const Op& op : rt.ops)
        {
            if (op.kind == OpKind::CommInit)
            {
                comms[op.comm][op.commRank] = rt.rank;
            }
        }
    }
    return comms;
}

/// A Llama-like model whose attention dominates at long sequences (GQA: small KV blocks).
ModelSpec
LongSequenceModel(uint32_t seq)
{
    ModelSpec m;
    m.name = "long";
    m.layers = 2;
    m.hidden = 4096;
    m.heads = 32;
    m.kvHeads = 8;
    m.ffn = 14336;
    m.vocab = 32000;
    m.seqLength = seq;
    m.gatedMlp = true;
    m.rmsNorm = true;
    m.defaultGlobalBatch = 1;
    return m;
}

} // namespace

TEST(ContextParallel, RankLayoutFollowsMegatronCoreOrder)
{
    // Megatron-Core parallel_state order "tp-cp-ep-dp-pp": rank = tp + T (cp + C (dp + D pp)).
    // TP 2 CP 2 DP 2 PP 2 (16 ranks): rank 13 = 1 + 2 (0 + 2 (1 + 2 x 1)).
    const TrainingPlan p = CpPlan(2, 2, 2, 2, 8);
    EXPECT_EQ(p.Gpus(), 16u);
    const RankPosition pos = PositionOf(p, 13);
    EXPECT_EQ(pos.tp, 1u);
    EXPECT_EQ(pos.cp, 0u);
    EXPECT_EQ(pos.dp, 1u);
    EXPECT_EQ(pos.stage, 1u);
    EXPECT_EQ(RankAt(p, 1, 1, 0, 1), 11u); // 1 + 2 (1 + 2 (0 + 2))
    for (uint32_t r = 0; r < 16; ++r)
    {
        const RankPosition q = PositionOf(p, r);
        EXPECT_EQ(RankAt(p, q.tp, q.cp, q.dp, q.stage), r);
    }
    // The groups as Megatron-Core's RankGenerator forms them for this layout (by hand):
    // CP groups pair ranks 2 apart, the DP x CP gradient groups span 4 ranks 2 apart (CP
    // fastest), TP groups are adjacent pairs, PP groups 8 apart.
    const auto comms = Communicators(*GenerateTraining(TinyGpt(2), p).job);
    std::set<std::vector<uint32_t>> cp, dpcp, tp, pp;
    for (const auto& [name, members] : comms)
    {
        std::vector<uint32_t> ranks;
        for (const auto& [commRank, rank] : members)
        {
            ranks.push_back(rank);
        }
        (StartsWith(name, "cp.")   ? cp
         : StartsWith(name, "dp.") ? dpcp
         : StartsWith(name, "tp.") ? tp
         : StartsWith(name, "pp.") ? pp
                                   : tp)
            .insert(ranks);
    }
    EXPECT_EQ(cp, (std::set<std::vector<uint32_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7},
                                                   {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
    EXPECT_EQ(dpcp, (std::set<std::vector<uint32_t>>{{0, 2, 4, 6}, {1, 3, 5, 7},
                                                     {8, 10, 12, 14}, {9, 11, 13, 15}}));
    EXPECT_TRUE(tp.count({4, 5}));
    EXPECT_TRUE(pp.count({3, 11}));
    EXPECT_EQ(pp.size(), 8u);
}

TEST(ContextParallel, ChunksAndStepsBalanceTheCausalWork)
{
    // CP 4: rank r holds chunks r and 7 - r. Chunk j attends to j earlier chunks in full and
    // to itself causally: j + 1/2 chunk pairs, so rank r does (r + 1/2) + (7 - r + 1/2) = 8
    // chunk pairs whatever r. A full chunk pair is 4 c^2 h / t FLOPs (Q K^T and P V).
    ModelSpec m = TinyGpt(2);
    const TrainingPlan p = CpPlan(2, 4, 1, 1, 8);
    const double c = 128.0 / 8, h = 256, t = 2;
    EXPECT_EQ(CpChunksOfRank(1, 4), std::make_pair(1u, 6u));
    const std::vector<CpSection> rank2 = {CpSection::Diagonal, CpSection::LowerTriangle,
                                          CpSection::LowerTriangle, CpSection::UpperTriangle};
    for (uint32_t i = 0; i < 4; ++i)
    {
        EXPECT_EQ(CpStepSection(2, i), rank2[i]) << i;
    }
    for (uint32_t r = 0; r < 4; ++r)
    {
        const auto [a, b] = CpChunksOfRank(r, 4);
        const double pairs = (a + 0.5) + (b + 0.5);
        EXPECT_EQ(pairs, 8.0);
        double flops = 0;
        for (uint32_t i = 0; i < 4; ++i)
        {
            const CpStep st = CpAttentionStep(m, p, r, i);
            // Every step is half of the 2c x 2c block: 8 c^2 h / t.
            EXPECT_DOUBLE_EQ(st.flops, 8 * c * c * h / t) << r << " " << i;
            flops += st.flops;
        }
        EXPECT_DOUBLE_EQ(flops, pairs * 4 * c * c * h / t);
    }
    // Summed over the 4 ranks: the causal attention of the whole sequence, 2 s^2 h / t.
    EXPECT_DOUBLE_EQ(4 * 8 * 4 * c * c * h / t, 2 * 128.0 * 128 * h / t);
}

TEST(ContextParallel, FlopTotalsEqualTheNonCpPlan)
{
    // As Generate.KernelFlopsOfOneIterationByHand: per micro-batch of T = s = 128 tokens a
    // layer's forward is 24 T h^2 (GEMMs) + 2 T s h (causal attention); logits 2 T h Vp; the
    // backward twice the forward. CP splits the tokens, not the work.
    const ModelSpec m = TinyGpt();
    const double T = 128, h = 256, s = 128, L = 4, Vp = 1024;
    const double layer = 24 * T * h * h + 2 * T * s * h;
    const double forward = L * layer + 2 * T * h * Vp;
    for (uint32_t cp : {2u, 4u})
    {
        TrainingPlan p = CpPlan(1, cp, 1, 1, 2);
        EXPECT_DOUBLE_EQ(GenerateTraining(m, p).hardwareFlops, 2 * 3 * forward) << cp;
        // Selective recomputation reruns the CP attention forward (its ring too).
        p.recompute = Recompute::Selective;
        EXPECT_DOUBLE_EQ(GenerateTraining(m, p).hardwareFlops,
                         2 * (3 * forward + L * 2 * T * s * h))
            << cp;
    }
    // TP 2 + SP + CP 2 + PP 2: the same total.
    TrainingPlan p = CpPlan(2, 2, 2, 1, 2);
    p.sequenceParallel = true;
    EXPECT_DOUBLE_EQ(GenerateTraining(m, p).hardwareFlops, 2 * 3 * forward);
}

TEST(ContextParallel, KernelBytesEqualTheNonCpPlanAndAttentionByHand)
{
    // Token-wise kernels (GEMMs, norms, elementwise, cross entropy, embedding) move bytes in
    // proportion to their tokens: summed over the CP 2 ranks they equal the CP 1 plan's (each
    // op rounds to a byte: <= 1 byte each). ZeRO-1 over DP x CP splits the optimizer's passes
    // (38 bytes per parameter for bf16 with fp32 gradients) but every rank zeroes its whole
    // fp32 gradient buffer (4): one rank 42 P, two ranks 2 (38 P / 2 + 4 P) = 46 P.
    const ModelSpec m = TinyGpt();
    TrainingPlan one = CpPlan(1, 1, 1, 1, 2);
    TrainingPlan two = CpPlan(1, 2, 1, 1, 2);
    two.distributedOptimizer = true;
    double att1, other1, att2, other2;
    const GeneratedTraining gen1 = GenerateTraining(m, one, false);
    const GeneratedTraining gen2 = GenerateTraining(m, two, false);
    KernelBytes(*gen1.job, att1, other1);
    KernelBytes(*gen2.job, att2, other2);
    EXPECT_NEAR(other2, other1, 64);
    auto optimizerBytes = [](const JobTrace& job) {
        double sum = 0;
        for (uint32_t r = 0; r < job.ranks.size(); ++r)
        {
            for (const Op& op : OpsOf(job, r))
            {
                // optimizer_grads (the norm pass) and optimizer (Adam, copy, zeroing)
                sum += op.kind == OpKind::Kernel && StartsWith(op.name, "optimizer")
                           ? op.memBytes
                           : 0;
            }
        }
        return sum;
    };
    EXPECT_NEAR(optimizerBytes(*gen2.job) / optimizerBytes(*gen1.job), 46.0 / 42.0, 1e-6);
    // Attention, by hand (e 2, h 256, K+V width 512, c = 32): a step reads Q and writes O
    // (q tokens x h each) and reads K, V (k tokens x 512). Rank 0: diagonal (q = k = 64)
    // 2 (2 x 64 x 256 + 64 x 512) = 131072, upper (q 32, k 64) 98304; rank 1: diagonal and
    // lower (q 64, k 32) 98304. Backward 2x.
    const GeneratedTraining gen = GenerateTraining(m, two, false);
    const JobTrace& job = *gen.job;
    std::map<std::string, double> first0, first1;
    for (const Op& op : job.ranks[0].ops)
    {
        if (op.kind == OpKind::Kernel && StartsWith(op.name, "attention_cp_") &&
            !first0.count(op.name))
        {
            first0[op.name] = op.memBytes;
            const bool step = op.name.find("triangle") != std::string::npos ||
                              op.name.find("diagonal") != std::string::npos;
            EXPECT_EQ(op.flops, step ? 2097152u : 0u) << op.name; // 8 c^2 h = 8 x 32^2 x 256
        }
    }
    for (const Op& op : job.ranks[1].ops)
    {
        if (op.kind == OpKind::Kernel && StartsWith(op.name, "attention_") &&
            !first1.count(op.name))
        {
            first1[op.name] = op.memBytes;
        }
    }
    EXPECT_EQ(first0["attention_cp_diagonal"], 131072);
    EXPECT_EQ(first0["attention_cp_upper-triangle"], 98304);
    EXPECT_EQ(first0.count("attention_cp_lower-triangle"), 0u);
    EXPECT_EQ(first1["attention_cp_lower-triangle"], 98304);
    EXPECT_EQ(first1["attention_bwd_cp_lower-triangle"], 2 * 98304);
    EXPECT_EQ(first1.count("attention"), 0u); // no unsplit attention kernel with CP
    // The CP 1 plan's attention: 2 T (2h + 512) = 2 x 128 x 1024 bytes per forward.
    EXPECT_GT(att2, att1); // each step re-reads its Q and KV blocks
}

TEST(ContextParallel, RingTrafficPerLayerMatchesTheHandFormula)
{
    // KV block = e b (s / cp) (2 g d) / t bytes; per layer and micro-batch a rank sends
    // (cp - 1) blocks forward and 2 (cp - 1) backward (KV + dKV, KV alone at step 0 and dKV
    // alone at the last step); selective recomputation reruns the forward ring.
    const ModelSpec m = TinyGpt(); // 4 layers, s 128, 4 KV heads of 64
    for (uint32_t tp : {1u, 2u})
    {
        for (Recompute rc : {Recompute::None, Recompute::Selective})
        {
            TrainingPlan p = CpPlan(tp, 4, 1, 1, 2); // 2 micro-batches
            p.recompute = rc;
            const double kv = 2.0 * 1 * (128 / 4) * (2 * 4 * 64) / tp;
            const double perLayer = (rc == Recompute::Selective ? 4 : 3) * (4 - 1) * kv;
            const double expected = 4 * 2 * perLayer;
            EXPECT_DOUBLE_EQ(CpKvBytes(m, p), kv);
            const GeneratedTraining gen = GenerateTraining(m, p);
            const JobTrace& job = *gen.job;
            for (uint32_t cpRank = 0; cpRank < 4; ++cpRank)
            {
                const uint32_t r = RankAt(p, 0, cpRank, 0, 0);
                double sent = 0, received = 0;
                uint32_t lossReductions = 0;
                for (const Op& op : OpsOf(job, r))
                {
                    if (op.kind != OpKind::Collective || !StartsWith(op.comm, "cp."))
                    {
                        continue;
                    }
                    if (op.coll == CollKind::AllReduce)
                    {
                        // The loss sum and token count of each micro-batch (2 fp32), on the
                        // compute stream (pretrain_gpt.py's loss_func), on the last stage.
                        EXPECT_EQ(op.stream, 1);
                        EXPECT_EQ(op.bytes, 8u);
                        ++lossReductions;
                        continue;
                    }
                    EXPECT_EQ(op.stream, 3); // the CP stream, overlapping the compute stream
                    if (op.coll == CollKind::Send)
                    {
                        EXPECT_EQ(op.peer, int32_t((cpRank + 1) % 4));
                        sent += op.bytes;
                    }
                    else
                    {
                        ASSERT_EQ(op.coll, CollKind::Recv);
                        EXPECT_EQ(op.peer, int32_t((cpRank + 3) % 4));
                        received += op.bytes;
                    }
                }
                EXPECT_EQ(lossReductions, 2u); // one per micro-batch (one stage: the last)
                EXPECT_DOUBLE_EQ(sent, expected) << "tp " << tp << " cp rank " << cpRank;
                EXPECT_DOUBLE_EQ(received, expected);
            }
        }
    }
}

TEST(ContextParallel, ActivationMemoryPerRankIsOneOverCp)
{
    const ModelSpec m = TinyGpt(4);
    for (Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full})
    {
        for (bool sp : {false, true})
        {
            TrainingPlan one = CpPlan(2, 1, 2, 1, 4);
            one.recompute = rc;
            one.sequenceParallel = sp;
            TrainingPlan two = one;
            two.cp = 2;
            EXPECT_DOUBLE_EQ(LayerActivationBytes(m, two), LayerActivationBytes(m, one) / 2);
            // The generator's per-micro-batch activation buffers (layers, embedding dropout
            // mask, logits) halve; weights do not; ZeRO-1 states halve with CP 2.
            one.distributedOptimizer = two.distributedOptimizer = true;
            one.dp = 2;
            one.globalBatch = 8; // DP x CP = 2 and 4 micro-batches in both
            two.dp = 1;
            for (uint32_t stage = 0; stage < 2; ++stage)
            {
                std::map<std::string, uint64_t> a, b;
                const GeneratedTraining ga = GenerateTraining(m, one);
                const GeneratedTraining gb = GenerateTraining(m, two);
                for (const Op& op : OpsOf(*ga.job, RankAt(one, 0, 0, stage)))
                {
                    if (op.kind == OpKind::Malloc)
                    {
                        a[op.name] = op.bytes;
                    }
                }
                for (const Op& op : OpsOf(*gb.job, RankAt(two, 0, 0, stage)))
                {
                    if (op.kind == OpKind::Malloc)
                    {
                        b[op.name] = op.bytes;
                    }
                }
                ASSERT_EQ(a.size(), b.size());
                EXPECT_EQ(b["weights"], a["weights"]);
                EXPECT_EQ(b["optimizer states"], a["optimizer states"]);
                const uint64_t act1 = a["activations chunk 0 micro-batch 0"];
                EXPECT_GT(act1, 0u);
                EXPECT_NEAR(double(b["activations chunk 0 micro-batch 0"]), act1 / 2.0, 1.0);
                // The search's closed-form peak is the generator's.
                EXPECT_EQ(StagePeakMemory(m, two, stage),
                          PeakMemory(GenerateRank(m, two, RankAt(two, 0, 1, 0, stage))));
            }
        }
    }
}

TEST(ContextParallel, SmallPlansSimulateEndToEnd)
{
    // Grouped ring send/recv must pair up in the engine (a stuck run fails), mirrored or not.
    const ModelSpec m = TinyGpt(4);
    for (bool sp : {false, true})
    {
        for (uint32_t v : {1u, 2u})
        {
            TrainingPlan p = CpPlan(2, 2, 2, 1, 4);
            p.sequenceParallel = sp;
            p.virtualStages = v;
            p.recompute = sp ? Recompute::Selective : Recompute::None;
            GeneratedTraining g = GenerateTraining(m, p);
            ValidateJobTrace(*g.job);
            TrainingReport r = SimulateTraining(g, DgxH100());
            ASSERT_TRUE(r.completed) << DescribePlan(p) << "\n" << r.stuck;
            EXPECT_TRUE(r.errors.empty());
            EXPECT_GT(r.iterationUs, 0);
            EXPECT_EQ(r.gpus, 8u);
            EXPECT_NE(r.plan.find("CP 2"), std::string::npos);
            GeneratedTraining whole = GenerateTraining(m, p, false);
            TrainingReport rw = SimulateTraining(whole, DgxH100());
            EXPECT_EQ(rw.iterationUs, r.iterationUs);
            EXPECT_EQ(rw.peakMemoryBytes, r.peakMemoryBytes);
        }
    }
    // MoE: EP carved out of DP x CP (Megatron-Core's expert rank generator), here EP 2 across
    // the two CP ranks (DP 1) and EP 2 within DP 2 x CP 2; the expert gradients reduce over
    // DP x CP / EP.
    ModelSpec moe = TinyGpt(2);
    moe.experts = 4;
    moe.topK = 2;
    for (uint32_t dp : {1u, 2u})
    {
        TrainingPlan e = CpPlan(1, 2, 1, dp, 4);
        e.ep = 2;
        e.distributedOptimizer = dp > 1;
        GeneratedTraining g = GenerateTraining(moe, e);
        ValidateJobTrace(*g.job);
        const auto comms = Communicators(*GenerateTraining(moe, e, false).job);
        EXPECT_EQ(comms.at("ep.s0.t0.g0").size(), 2u);
        // DP x CP / EP ranks reduce the expert gradients (none with one).
        EXPECT_EQ(comms.count("edp.s0.t0.e0") ? comms.at("edp.s0.t0.e0").size() : 1u, dp);
        TrainingReport r = SimulateTraining(g, DgxH100());
        ASSERT_TRUE(r.completed) << DescribePlan(e) << "\n" << r.stuck;
        EXPECT_TRUE(r.errors.empty());
    }
    // Across servers (DP x CP = 4 reduction over 2 servers), ZeRO-1.
    TrainingPlan p = CpPlan(4, 2, 1, 2, 4);
    p.distributedOptimizer = true;
    TrainingReport r = SimulateTraining(GenerateTraining(m, p), DgxH100(2));
    ASSERT_TRUE(r.completed) << r.stuck;
    EXPECT_EQ(r.gpus, 16u);
}

TEST(ContextParallel, LongSequenceRunsFasterWithCp)
{
    // One 64k-token sequence per iteration: DP cannot use more GPUs, CP can. CP k splits every
    // kernel k ways; the ring's KV blocks (GQA, 8 of 32 heads) travel while the previous step
    // computes, and what does not split (the gradient AllReduce over CP that weight replication
    // needs, the optimizer) is a few percent: the time is above 1/k of one GPU's (a perfect
    // split) and within 1/k + 0.1. TP k on the same GPUs does the same FLOPs but waits for 4
    // AllReduces of the whole activation per layer on the compute stream; they grow with s,
    // the CP gradient reduction does not, so at 64k tokens CP beats TP.
    const ModelSpec m = LongSequenceModel(65536);
    auto run = [&](uint32_t tp, uint32_t cp) {
        const TrainingReport r = SimulateTraining(GenerateTraining(m, CpPlan(tp, cp, 1, 1, 1)),
                                                  DgxH100(1));
        EXPECT_TRUE(r.completed) << r.oomInfo.Describe() << r.stuck;
        std::cout << "# 64k tokens, TP " << tp << " CP " << cp << ": " << r.iterationUs / 1e3
                  << " ms, peak " << r.peakMemoryBytes / double(1ull << 30) << " GiB\n";
        return r;
    };
    const TrainingReport one = run(1, 1);
    const TrainingReport cp2 = run(1, 2);
    const TrainingReport cp4 = run(1, 4);
    const TrainingReport tp2 = run(2, 1);
    const TrainingReport tp4 = run(4, 1);
    EXPECT_GT(cp2.iterationUs, one.iterationUs / 2);
    EXPECT_LT(cp2.iterationUs, 0.6 * one.iterationUs);
    EXPECT_GT(cp4.iterationUs, one.iterationUs / 4);
    EXPECT_LT(cp4.iterationUs, 0.35 * one.iterationUs);
    EXPECT_LT(cp2.iterationUs, tp2.iterationUs);
    EXPECT_LT(cp4.iterationUs, tp4.iterationUs);
    // The CP ranks hold 1/k of the activations (the weights whole).
    EXPECT_LT(cp2.peakMemoryBytes, one.peakMemoryBytes);
    EXPECT_LT(cp4.peakMemoryBytes, cp2.peakMemoryBytes);
}

TEST(ContextParallel, ChakraExportKeepsTheRing)
{
    // The CP job written as Chakra ET and read back: same ops per rank (the ring's send/recv
    // included), and the round trip validates.
    const ModelSpec m = TinyGpt(2);
    const TrainingPlan p = CpPlan(1, 2, 1, 1, 2);
    const GeneratedTraining g = GenerateTraining(m, p, false);
    TestTempDir tmp("cp-chakra");
    const ChakraJob ch = JobTraceToChakra(*g.job);
    size_t sends = 0;
    for (const ChakraNode& n : ch.ranks[0].nodes)
    {
        sends += n.type == ChakraNodeType::CommSend ? 1 : 0;
    }
    // 2 layers x 2 micro-batches x (1 forward + 2 backward) ring steps with a send.
    EXPECT_EQ(sends, 12u);
    WriteChakraJob(ch, tmp.Path() + "/cp");
    const JobTrace back = ImportChakra(tmp.Path() + "/cp");
    ValidateJobTrace(back);
    ASSERT_EQ(back.ranks.size(), 2u);
    size_t backSends = 0;
    for (const Op& op : back.ranks[0].ops)
    {
        backSends += op.kind == OpKind::Collective && op.coll == CollKind::Send ? 1 : 0;
    }
    EXPECT_EQ(backSends, 12u);
}

TEST(ContextParallel, SearchEnumeratesCpOnlyWhenAsked)
{
    ModelSpec m = TinyGpt(4);
    m.seqLength = 128;
    SearchSpace s;
    s.gpus = 8;
    s.gpusPerServer = 4;
    s.globalBatch = 8;
    s.microBatches = {1};
    s.sequenceParallel = {false};
    s.recompute = {Recompute::None};
    s.distributedOptimizer = {false};
    for (const TrainingPlan& p : EnumeratePlans(m, s))
    {
        EXPECT_EQ(p.cp, 1u);
    }
    // CP 2 on 8 GPUs: TP x PP x DP = 4, TP in {1, 2, 4}, PP dividing 4 / TP and 4 layers:
    // by hand (1,1,4) (1,2,2) (1,4,1) (2,1,2) (2,2,1) (4,1,1).
    s.contextParallel = {2};
    std::set<std::tuple<uint32_t, uint32_t, uint32_t>> got;
    for (const TrainingPlan& p : EnumeratePlans(m, s))
    {
        EXPECT_EQ(p.cp, 2u);
        EXPECT_EQ(p.Gpus(), 8u);
        got.insert({p.tp, p.pp, p.dp});
    }
    EXPECT_EQ(got, (std::set<std::tuple<uint32_t, uint32_t, uint32_t>>{
                       {1, 1, 4}, {1, 2, 2}, {1, 4, 1}, {2, 1, 2}, {2, 2, 1}, {4, 1, 1}}));
    // CP 3 does not divide 8 GPUs; a sequence of 102 is not a multiple of 2 x 2.
    s.contextParallel = {3};
    EXPECT_TRUE(EnumeratePlans(m, s).empty());
    s.contextParallel = {2};
    s.seqLength = 102;
    EXPECT_TRUE(EnumeratePlans(m, s).empty());
    CliResult r = Cli({"search", "--model", "llama3-8b", "--servers", "1", "--global-batch", "8",
                       "--cp", "1,2", "--dry-run", "--top", "100"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("cp2"), std::string::npos) << r.out;
}

TEST(ContextParallel, BadPlansGiveClearErrors)
{
    const ModelSpec m = TinyGpt(4); // s 128
    auto error = [&](TrainingPlan p) {
        try
        {
            ValidatePlan(m, p);
        }
        catch (const std::invalid_argument& e)
        {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error(CpPlan(1, 3, 1, 1, 8)).find("sequence 128 to be a multiple of 2 x CP = 6"),
              std::string::npos);
    TrainingPlan p = CpPlan(1, 2, 1, 1, 8);
    p.flashAttention = false;
    EXPECT_NE(error(p).find("fused (flash) attention"), std::string::npos);
    EXPECT_EQ(error(p).find("--"), std::string::npos) << "model errors name no CLI flag";
    p = CpPlan(4, 16, 1, 1, 8); // 128 / 16 = 8 tokens per rank, SP needs 4 | 8: fine
    p.sequenceParallel = true;
    EXPECT_EQ(error(p), "");
    p.cp = 64; // 2 x 64 divides 128, but TP 4 does not divide the 2 tokens per rank
    EXPECT_NE(error(p).find("/ CP 64 = 2"), std::string::npos) << error(p);
    ModelSpec moe;
    ASSERT_TRUE(LookupModelPreset("mixtral-8x7b", moe));
    TrainingPlan e = CpPlan(1, 2, 1, 1, 8);
    e.ep = 4;
    try
    {
        ValidatePlan(moe, e);
        FAIL();
    }
    catch (const std::invalid_argument& x)
    {
        EXPECT_NE(std::string(x.what()).find("EP 4 must divide DP x CP = 2"), std::string::npos)
            << x.what();
    }
    e.ep = 2; // EP carved out of DP x CP
    EXPECT_NO_THROW(ValidatePlan(moe, e));
    CliResult r = Cli({"generate", "--model", "llama3-8b", "--cp", "3", "--global-batch", "1",
                       "--simulate"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("sequence 8192 to be a multiple of 2 x CP = 6"), std::string::npos)
        << r.err;
    r = Cli({"generate", "--model", "llama3-8b", "--cp", "0", "--simulate"});
    EXPECT_NE(r.code, 0);
}

TEST(ContextParallel, SearchBoundHoldsForCpPlans)
{
    // The search's lower bound (GEMMs and TP traffic of the rank's s / CP tokens, ZeRO-1 over
    // DP x CP) against simulated CP plans on one dgx-h100 (every plan simulated).
    TestTempDir tmp("cp-search");
    const CliResult r =
        Cli({"search", "--model", "llama3-8b", "--preset", "dgx-h100", "--servers", "1",
             "--global-batch", "8", "--micro-batches", "1", "--sp", "both", "--zero", "on",
             "--recompute", "selective", "--cp", "2,4", "--jobs", "2", "--exhaustive", "--json",
             tmp.Path("cp.json")});
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const std::string text = ReadAll(tmp.Path("cp.json"));
    const size_t checked = gpusim_test::ExpectBoundsBelowSimulated(text);
    // By hand: TP x PP x DP = 8 / CP with TP | 8 / CP, PP | 32 layers; 8 % DP == 0 always.
    // CP 2: (TP, PP) over divisors of 4 with TP * PP | 4: 6 layouts, SP doubling TP > 1 ones
    // (3): 9 plans; CP 4: divisors of 2: 3 layouts, 1 with TP 2: 4 plans. 13 in all.
    EXPECT_EQ(checked, 13u) << r.out;
    EXPECT_EQ(text.find("\"cp\":1,"), std::string::npos);
}

TEST(ContextParallel, AttentionKernelsCarryTheirGeometry)
{
    // Fused attention kernels carry query and key tokens per sequence, head dim and
    // sequences x local heads in their shape, so the cost model prices each by its length:
    // without CP the whole sequence; with CP 2 (4 chunks of s/4) each ring step its blocks.
    const ModelSpec m = TinyGpt(); // s 128, h 256, 4 heads of 64
    const GeneratedTraining one = GenerateTraining(m, CpPlan(2, 1, 1, 1, 2), false);
    int seen = 0;
    for (const Op& op : OpsOf(*one.job, 0))
    {
        if (op.kind == OpKind::Kernel && (op.name == "attention" || op.name == "attention_bwd"))
        {
            EXPECT_EQ(op.gemm.m, m.seqLength);
            EXPECT_EQ(op.gemm.n, m.seqLength);
            EXPECT_EQ(op.gemm.k, m.HeadDim());
            EXPECT_EQ(op.gemm.batch, 1u * m.heads / 2); // micro-batch 1, TP 2
            ++seen;
        }
    }
    EXPECT_GT(seen, 0);
    const GeneratedTraining two = GenerateTraining(m, CpPlan(1, 2, 1, 1, 2), false);
    std::set<std::pair<uint64_t, uint64_t>> blocks;
    for (const Op& op : OpsOf(*two.job, 0))
    {
        if (op.kind == OpKind::Kernel && op.flops > 0 && StartsWith(op.name, "attention_"))
        {
            blocks.insert({op.gemm.m, op.gemm.n});
            EXPECT_EQ(op.gemm.k, m.HeadDim());
        }
    }
    // Rank 0 of CP 2: the diagonal step (its two chunks, 64 x 64) and the step over the other
    // rank's earlier chunk (its later chunk only, 32 queries x 64 keys).
    EXPECT_EQ(blocks, (std::set<std::pair<uint64_t, uint64_t>>{{64, 64}, {32, 64}}));
}
