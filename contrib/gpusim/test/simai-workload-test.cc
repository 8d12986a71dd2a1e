// SimAI workload files (test/data/simai/README.md): the parsed layers against the file, the
// Op IR of one layer checked by hand (kernels, collective kinds, bytes, communicator members),
// errors naming file and line for each kind of bad input, simulations whose iteration times
// are derived by hand, and the `gpusim simai` / `gpusim simulate FILE` command lines.
#include "flat-run-test-util.h"
#include "flow-test-topology.h"
#include "ns3/double.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/gpusim-commands.h"
#include "ns3/job-builder.h"
#include "ns3/simai-workload.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include "test-temp-dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace ns3;
using namespace ns3::gpusim;
using gpusim_test::FlatSpec;

namespace
{

std::string
Fixture(const std::string& name)
{
    return GPUSIM_SOURCE_DIR "/contrib/gpusim/test/data/simai/" + name;
}

/// Simulated time of one run and its iterations (us).
struct SimaiRun
{
    double endUs = 0;
    std::vector<double> iterationUs; //!< rank 0's
    bool completed = false;
};

/// Runs a job on FlatSpec (single-GPU servers on one switch, 100 Gb/s NICs) with the flow
/// backend and ring collectives at ideal efficiency.
SimaiRun
Simulate(const JobTrace& job)
{
    Ptr<GpuWorkload> w = gpusim_test::RunRingOnFlatSpec(job);
    const RunReport rep = w->Check();
    SimaiRun r;
    r.completed = rep.completed;
    r.endUs = rep.endTime.GetNanoSeconds() / 1e3;
    for (const auto& it : w->GetIterations())
    {
        if (it.rank == 0)
        {
            r.iterationUs.push_back((it.end - it.start).GetNanoSeconds() / 1e3);
        }
    }
    w->Dispose();
    Simulator::Destroy();
    return r;
}

/// Communicator -> its members (global ranks by communicator rank), from every rank's
/// comm_init lines.
std::map<std::string, std::vector<uint32_t>>
Members(const JobTrace& job)
{
    std::map<std::string, std::map<int32_t, uint32_t>> byCommRank;
    for (const RankTrace& rt : job.ranks)
    {
        for (const Op& op : rt.ops)
        {
            if (op.kind == OpKind::CommInit)
            {
                byCommRank[op.comm][op.commRank] = rt.rank;
            }
        }
    }
    std::map<std::string, std::vector<uint32_t>> out;
    for (const auto& [comm, ranks] : byCommRank)
    {
        for (const auto& [cr, r] : ranks)
        {
            out[comm].push_back(r);
        }
    }
    return out;
}

/// Rank r's own communicator for the list's communicator `comm` (shared op lists: the i-th
/// comm_init of the rank stands for the list's i-th).
std::string
OwnComm(const JobTrace& job, uint32_t r, const std::string& comm)
{
    const RankTrace& rt = job.ranks.at(r);
    if (rt.opsFrom < 0)
    {
        return comm;
    }
    size_t i = 0;
    for (const Op& op : job.ranks.at(rt.opsFrom).ops)
    {
        if (op.kind != OpKind::CommInit)
        {
            continue;
        }
        if (op.comm == comm)
        {
            return rt.ops.at(i).comm;
        }
        ++i;
    }
    return "";
}

/// Ops of rank 0's list from the kernel named `first` up to (not including) the kernel named
/// `stop`.
std::vector<Op>
Span(const JobTrace& job, const std::string& first, const std::string& stop)
{
    std::vector<Op> out;
    bool in = false;
    for (const Op& op : job.ranks.at(0).ops)
    {
        if (op.kind == OpKind::Kernel && op.name == stop && in)
        {
            break;
        }
        if (op.kind == OpKind::Kernel && op.name == first)
        {
            in = true;
        }
        if (in)
        {
            out.push_back(op);
        }
    }
    return out;
}

std::vector<std::string>
KernelNames(const JobTrace& job)
{
    std::vector<std::string> out;
    for (const Op& op : job.ranks.at(0).ops)
    {
        if (op.kind == OpKind::Kernel)
        {
            out.push_back(op.name);
        }
    }
    return out;
}

/// The TraceFormatError that reading `text` (written to a file in `dir`) throws.
TraceFormatError
ErrorOf(const std::string& dir, const std::string& name, const std::string& text)
{
    const std::string file = dir + "/" + name;
    std::ofstream(file) << text;
    try
    {
        ImportSimai(file);
    }
    catch (const TraceFormatError& e)
    {
        return e;
    }
    ADD_FAILURE() << name << ": no error";
    return TraceFormatError("", 0, "");
}

const std::string kHeader = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 "
                            "pp: 1 vpp: 1 ga: 1 all_gpus: 4 checkpoints: 0 "
                            "checkpoint_initiates: 0\n";

} // namespace

TEST(SimaiWorkload, ParsesTheHeaderAndEveryColumn)
{
    const SimaiWorkload w = ReadSimaiWorkload(Fixture("tp-dp-ep.txt"));
    EXPECT_EQ(w.policy, SimaiPolicy::HybridTransformerFwdInBckwd);
    EXPECT_EQ(w.tp, 4u);
    EXPECT_EQ(w.ep, 2u);
    EXPECT_EQ(w.allGpus, 16u);
    ASSERT_EQ(w.layers.size(), 3u);
    // attention_layer -1 200000 ALLGATHER 2097152 180000 REDUCESCATTER 2097152 160000
    // ALLREDUCE_DP_EP 8388608 100 (line 4)
    const SimaiLayer& a = w.layers[1];
    EXPECT_EQ(a.line, 4u);
    EXPECT_EQ(a.name, "attention_layer");
    EXPECT_EQ(a.dependency, -1);
    EXPECT_EQ(a.fwdNs, 200000u);
    EXPECT_EQ(a.fwd.coll, SimaiCollective::AllGather);
    EXPECT_EQ(a.fwd.group, SimaiGroup::Tp); // bare forward type: TP
    EXPECT_EQ(a.fwd.bytes, 2097152u);
    EXPECT_EQ(a.igNs, 180000u);
    EXPECT_EQ(a.ig.coll, SimaiCollective::ReduceScatter);
    EXPECT_EQ(a.ig.group, SimaiGroup::Tp);
    EXPECT_EQ(a.wgNs, 160000u);
    EXPECT_EQ(a.wg.coll, SimaiCollective::AllReduce);
    EXPECT_EQ(a.wg.group, SimaiGroup::DpEp);
    EXPECT_EQ(a.wg.bytes, 8388608u);
    EXPECT_EQ(a.updateNs, 100u);
    EXPECT_EQ(w.layers[0].wg.group, SimaiGroup::Dp); // bare weight-gradient type: DP
    EXPECT_EQ(w.layers[2].fwd.group, SimaiGroup::Ep);
    EXPECT_EQ(w.layers[2].fwd.coll, SimaiCollective::AllToAll);

    // SimAI's own example (test/data/simai/README.md): space-separated, trailing blanks.
    const SimaiWorkload ex = ReadSimaiWorkload(Fixture("simai-microAllReduce.txt"));
    EXPECT_EQ(ex.tp, 8u);
    EXPECT_EQ(ex.vpp, 8u);
    EXPECT_EQ(ex.allGpus, 8u);
    ASSERT_EQ(ex.layers.size(), 2u);
    EXPECT_EQ(ex.layers[1].fwd.bytes, 67108864u);
    EXPECT_EQ(ex.layers[1].ig.coll, SimaiCollective::None);
    EXPECT_TRUE(IsSimaiWorkloadFile(Fixture("simai-microAllReduce.txt")));
    EXPECT_FALSE(IsSimaiWorkloadFile(Fixture("README.md")));
    EXPECT_FALSE(IsSimaiWorkloadFile(Fixture("")));
}

TEST(SimaiWorkload, GroupsFollowSimAIsLayout)
{
    // 16 ranks, TP 4, EP 2: DP 4, DP_EP 2. Rank 5 is DP index 1, TP index 1.
    EXPECT_EQ(SimaiGroupMembers(SimaiGroup::Tp, 16, 4, 2, 5), (std::vector<uint32_t>{4, 5, 6, 7}));
    EXPECT_EQ(SimaiGroupMembers(SimaiGroup::Dp, 16, 4, 2, 5),
              (std::vector<uint32_t>{1, 5, 9, 13}));
    EXPECT_EQ(SimaiGroupMembers(SimaiGroup::Ep, 16, 4, 2, 5), (std::vector<uint32_t>{1, 5}));
    EXPECT_EQ(SimaiGroupMembers(SimaiGroup::DpEp, 16, 4, 2, 5), (std::vector<uint32_t>{5, 13}));
    // Rank 10: DP index 2, TP index 2.
    EXPECT_EQ(SimaiGroupMembers(SimaiGroup::Ep, 16, 4, 2, 10), (std::vector<uint32_t>{10, 14}));
    EXPECT_EQ(SimaiGroupMembers(SimaiGroup::DpEp, 16, 4, 2, 10), (std::vector<uint32_t>{2, 10}));
    // TP 0 is every rank (SimAI's meaning).
    EXPECT_EQ(SimaiGroupMembers(SimaiGroup::Tp, 4, 0, 1, 3).size(), 4u);
}

TEST(SimaiWorkload, OneLayersOpsMatchTheFile)
{
    const JobTrace job = ImportSimai(Fixture("tp-dp-ep.txt"));
    ValidateJobTrace(job);
    ASSERT_EQ(job.ranks.size(), 16u);
    EXPECT_EQ(job.source, "simai");
    const auto members = Members(job);

    // attention_layer's forward: 200 us kernel, AllGather of 2 MiB in the TP group, update
    // 100 ns; then the next layer's forward.
    std::vector<Op> fwd = Span(job, "attention_layer.fwd", "moe_layer.fwd");
    ASSERT_EQ(fwd.size(), 3u);
    EXPECT_EQ(fwd[0].stream, 1);
    EXPECT_DOUBLE_EQ(fwd[0].durUs, 200.0);
    EXPECT_EQ(fwd[1].kind, OpKind::Collective);
    EXPECT_EQ(fwd[1].coll, CollKind::AllGather);
    EXPECT_EQ(fwd[1].bytes, 2097152u);
    EXPECT_EQ(fwd[1].stream, 1); // blocking: in the compute stream's order
    EXPECT_EQ(members.at(fwd[1].comm), (std::vector<uint32_t>{0, 1, 2, 3}));
    EXPECT_EQ(members.at(OwnComm(job, 5, fwd[1].comm)), (std::vector<uint32_t>{4, 5, 6, 7}));
    EXPECT_EQ(fwd[2].name, "attention_layer.fwd.update");
    EXPECT_DOUBLE_EQ(fwd[2].durUs, 0.1);

    // Its backward: input gradient 180 us + ReduceScatter 2 MiB (TP) + update, weight gradient
    // 160 us, then the AllReduce of 8 MiB in the DP_EP group on the other stream, after the
    // compute stream's event, its update there and the event the next pass waits for.
    std::vector<Op> bwd = Span(job, "attention_layer.ig", "embedding_layer.ig");
    ASSERT_EQ(bwd.size(), 9u);
    EXPECT_DOUBLE_EQ(bwd[0].durUs, 180.0);
    EXPECT_EQ(bwd[1].coll, CollKind::ReduceScatter);
    EXPECT_EQ(bwd[1].bytes, 2097152u);
    EXPECT_EQ(members.at(bwd[1].comm), (std::vector<uint32_t>{0, 1, 2, 3}));
    EXPECT_EQ(bwd[2].name, "attention_layer.ig.update");
    EXPECT_EQ(bwd[3].name, "attention_layer.wg");
    EXPECT_DOUBLE_EQ(bwd[3].durUs, 160.0);
    EXPECT_EQ(bwd[4].kind, OpKind::EventRecord);
    EXPECT_EQ(bwd[4].stream, 1);
    EXPECT_EQ(bwd[5].kind, OpKind::StreamWaitEvent);
    EXPECT_EQ(bwd[5].stream, 2);
    EXPECT_EQ(bwd[5].event, bwd[4].event);
    EXPECT_EQ(bwd[6].kind, OpKind::Collective);
    EXPECT_EQ(bwd[6].coll, CollKind::AllReduce);
    EXPECT_EQ(bwd[6].bytes, 8388608u);
    EXPECT_EQ(bwd[6].stream, 2);
    // DP_EP of rank 0 (DP index 0): every EP-th TP group from 0 -> ranks 0 and 8; rank 5's
    // is {5, 13}.
    EXPECT_EQ(members.at(bwd[6].comm), (std::vector<uint32_t>{0, 8}));
    EXPECT_EQ(members.at(OwnComm(job, 5, bwd[6].comm)), (std::vector<uint32_t>{5, 13}));
    EXPECT_EQ(bwd[7].name, "attention_layer.wg.update");
    EXPECT_EQ(bwd[7].stream, 2);
    EXPECT_EQ(bwd[8].kind, OpKind::EventRecord);
    EXPECT_EQ(bwd[8].stream, 2);
    // Backward runs in reverse layer order.
    const std::vector<std::string> names = KernelNames(job);
    const std::vector<std::string> order(names.begin(), names.begin() + 9);
    EXPECT_EQ(order, (std::vector<std::string>{"embedding_layer.fwd",
                                               "embedding_layer.fwd.update",
                                               "attention_layer.fwd",
                                               "attention_layer.fwd.update", "moe_layer.fwd",
                                               "moe_layer.fwd.update", "moe_layer.ig",
                                               "moe_layer.ig.update", "moe_layer.wg"}));
    // The moe layer's EP collectives: ranks {0, 4} for rank 0 (EP 2 consecutive TP groups).
    std::vector<Op> moe = Span(job, "moe_layer.fwd", "moe_layer.ig");
    ASSERT_GE(moe.size(), 2u);
    EXPECT_EQ(moe[1].coll, CollKind::AllToAll);
    EXPECT_EQ(members.at(moe[1].comm), (std::vector<uint32_t>{0, 4}));
    // Embedding's weight gradient: bare ALLREDUCE = DP group {0, 4, 8, 12}.
    std::vector<Op> emb = Span(job, "embedding_layer.wg", "");
    ASSERT_GE(emb.size(), 4u);
    EXPECT_EQ(emb[3].kind, OpKind::Collective);
    EXPECT_EQ(members.at(emb[3].comm), (std::vector<uint32_t>{0, 4, 8, 12}));
    EXPECT_EQ(emb[3].bytes, 4194304u);
}

TEST(SimaiWorkload, BadInputNamesFileLineAndWhatWasWrong)
{
    TestTempDir tmp("simai-bad");
    const std::string good = "a\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t1\n";
    struct Case
    {
        std::string name;
        std::string text;
        uint64_t line;
        std::string reason;
    };
    const std::vector<Case> cases = {
        {"empty.txt", "", 1, "missing header"},
        {"no-header.txt", "2\n" + good + good, 1, "missing header"},
        {"unsupported.txt", "HYBRID_DLRM DLRM_LAST_BOTTOM_LAYER: 1\n1\n" + good, 1,
         "'HYBRID_DLRM' is not supported"},
        {"no-tp.txt", "HYBRID_TRANSFORMER all_gpus: 4\n1\n" + good, 1,
         "model_parallel_NPU_group"},
        {"bad-header-number.txt",
         "HYBRID_TRANSFORMER model_parallel_NPU_group: two all_gpus: 4\n1\n" + good, 1,
         "needs a whole number, got 'two'"},
        {"bad-count.txt", kHeader + "three\n" + good, 2, "expected the number of layers"},
        {"columns.txt", kHeader + "2\n" + good + "b\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\n",
         4, "this one has 11"},
        {"time.txt", kHeader + "1\nb\t-1\t1.5\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t1\n", 3,
         "forward compute time '1.5' is not a whole number"},
        {"update.txt", kHeader + "1\nb\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\tx\n", 3,
         "update time 'x'"},
        {"size.txt", kHeader + "1\nb\t-1\t1\tALLREDUCE\t1MB\t1\tNONE\t0\t1\tNONE\t0\t1\n", 3,
         "forward comm size '1MB'"},
        {"comm-type.txt",
         kHeader + "2\n" + good + "b\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLREDUCE_TP\t8\t1\n", 4,
         "unknown communication type 'ALLREDUCE_TP' in the weight-gradient comm column"},
        {"short.txt", kHeader + "3\n" + good + good, 4, "ends after 2 of the 3 layers"},
        {"long.txt", kHeader + "1\n" + good + good, 4, "more layer lines than the 1"},
        {"checkpoint.txt",
         "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 all_gpus: 4 "
         "checkpoints: 1 5 checkpoint_initiates: 0\n1\n" +
             good,
         1, "'checkpoints:' names layer 5"},
        {"tp-divides.txt",
         "HYBRID_TRANSFORMER model_parallel_NPU_group: 3 all_gpus: 4\n1\n" + good, 1,
         "do not divide into TP groups"},
        {"no-size.txt", "HYBRID_TRANSFORMER model_parallel_NPU_group: 2\n1\n" + good, 1,
         "no all_gpus"},
    };
    for (const Case& c : cases)
    {
        const TraceFormatError e = ErrorOf(tmp.Path(), c.name, c.text);
        EXPECT_EQ(e.File(), tmp.Path() + "/" + c.name) << c.name;
        EXPECT_EQ(e.Line(), c.line) << c.name << ": " << e.what();
        EXPECT_NE(e.Reason().find(c.reason), std::string::npos) << c.name << ": " << e.what();
    }
    // A missing file is named too.
    try
    {
        ReadSimaiWorkload(tmp.Path() + "/absent.txt");
        ADD_FAILURE() << "no error for a missing file";
    }
    catch (const TraceFormatError& e)
    {
        EXPECT_EQ(e.File(), tmp.Path() + "/absent.txt");
    }
}

TEST(SimaiWorkload, OneLayerWithoutCommunicationTakesTheSumOfItsComputeTimes)
{
    // one-layer-no-comm.txt: forward 100 us, input gradient 200 us, weight gradient 300 us,
    // no collective (so the 100 ns update never applies): one pass is 600 us on every rank.
    const JobTrace job = ImportSimai(Fixture("one-layer-no-comm.txt"));
    ASSERT_EQ(job.ranks.size(), 4u);
    const SimaiRun r = Simulate(job);
    ASSERT_TRUE(r.completed);
    EXPECT_NEAR(r.endUs, 600.0, 1e-3);
    ASSERT_EQ(r.iterationUs.size(), 1u);
    EXPECT_NEAR(r.iterationUs[0], 600.0, 1e-3);
    // Three passes: back to back, 600 us each.
    SimaiConvertOptions three;
    three.passes = 3;
    const SimaiRun r3 = Simulate(ImportSimai(Fixture("one-layer-no-comm.txt"), three));
    ASSERT_TRUE(r3.completed);
    EXPECT_NEAR(r3.endUs, 1800.0, 1e-3);
    ASSERT_EQ(r3.iterationUs.size(), 3u);
    for (double us : r3.iterationUs)
    {
        EXPECT_NEAR(us, 600.0, 1e-3);
    }
}

TEST(SimaiWorkload, BlockingAndOverlappedCollectivesTimeAsSimAISchedulesThem)
{
    // What one 4 MiB AllReduce between 2 ranks takes alone on this cluster.
    JobBuilder b(2);
    b.AllRanks().CommInit("c").AllReduce(1, "c", 4u << 20);
    const SimaiRun alone = Simulate(b.Build());
    ASSERT_TRUE(alone.completed);
    const double c = alone.endUs;
    ASSERT_GT(c, 100.0); // each rank sends 4 MiB at 12.5 GB/s: ~340 us

    TestTempDir tmp("simai-timing");
    auto job = [&](const std::string& name, const std::string& text) {
        std::ofstream(tmp.Path() + "/" + name) << text;
        return ImportSimai(tmp.Path() + "/" + name);
    };
    // Blocking (TP 2): forward 100 us, its AllReduce, update 10 us, then input gradient 50 us
    // and weight gradient 50 us: 100 + c + 10 + 100.
    const SimaiRun blocking = Simulate(
        job("blocking.txt",
            "HYBRID_TRANSFORMER model_parallel_NPU_group: 2 all_gpus: 2\n1\n"
            "l -1 100000 ALLREDUCE 4194304 50000 NONE 0 50000 NONE 0 10000\n"));
    ASSERT_TRUE(blocking.completed);
    EXPECT_NEAR(blocking.endUs, 210.0 + c, 0.01 * c);

    // Not blocking (TP 1, DP 2): layer 1's weight-gradient AllReduce starts after its
    // backward (forward 2 x 100, then 100 + 100) at 400 us and overlaps layer 0's backward
    // (200 us): the pass ends at max(600, 400 + c + update 10).
    const SimaiRun overlapped = Simulate(
        job("overlapped.txt",
            "HYBRID_TRANSFORMER model_parallel_NPU_group: 1 all_gpus: 2\n2\n"
            "l0 -1 100000 NONE 0 100000 NONE 0 100000 NONE 0 10000\n"
            "l1 -1 100000 NONE 0 100000 NONE 0 100000 ALLREDUCE 4194304 10000\n"));
    ASSERT_TRUE(overlapped.completed);
    EXPECT_NEAR(overlapped.endUs, std::max(600.0, 410.0 + c), 0.01 * c);
    EXPECT_LT(overlapped.endUs, 600.0 + c); // the collective did overlap compute
}

TEST(SimaiWorkload, RecomputationReRunsTheForwardFromTheCheckpoint)
{
    TestTempDir tmp("simai-recompute");
    const std::string file = tmp.Path() + "/recompute.txt";
    std::ofstream(file) << "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 "
                           "all_gpus: 1 checkpoints: 1 1 checkpoint_initiates: 1 3\n4\n"
                           "a -1 1 NONE 0 1 NONE 0 1 NONE 0 0\n"
                           "b -1 1 NONE 0 1 NONE 0 1 NONE 0 0\n"
                           "c -1 1 NONE 0 1 NONE 0 1 NONE 0 0\n"
                           "d -1 1 NONE 0 1 NONE 0 1 NONE 0 0\n";
    const std::vector<std::string> names = KernelNames(ImportSimai(file));
    EXPECT_EQ(names, (std::vector<std::string>{"a.fwd", "b.fwd", "c.fwd", "d.fwd", "b.fwd",
                                               "c.fwd", "d.ig", "d.wg", "c.ig", "c.wg", "b.ig",
                                               "b.wg", "a.ig", "a.wg"}));
}

TEST(SimaiWorkload, MicroRunsEveryLinesCollectiveOnAllRanks)
{
    TestTempDir tmp("simai-micro");
    const std::string file = tmp.Path() + "/micro.txt";
    std::ofstream(file) << "MICRO\n2\n"
                           "m -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 4096 1\n"
                           "m -1 1 NONE 0 1 NONE 0 1 ALLGATHER 8192 1\n";
    SimaiConvertOptions opt;
    opt.ranks = 4;
    const JobTrace job = ImportSimai(file, opt);
    ValidateJobTrace(job);
    std::vector<Op> colls;
    for (const Op& op : job.ranks[0].ops)
    {
        if (op.kind == OpKind::Collective)
        {
            colls.push_back(op);
        }
    }
    ASSERT_EQ(colls.size(), 2u);
    EXPECT_EQ(colls[0].coll, CollKind::AllReduce);
    EXPECT_EQ(colls[1].coll, CollKind::AllGather);
    EXPECT_EQ(colls[1].bytes, 8192u);
    EXPECT_EQ(Members(job).at(colls[0].comm), (std::vector<uint32_t>{0, 1, 2, 3}));
    EXPECT_THROW(ImportSimai(file), TraceFormatError); // no all_gpus, no ranks given
    EXPECT_TRUE(Simulate(job).completed);
}

TEST(SimaiWorkload, CliImportsAndSimulatesTheFileDirectly)
{
    TestTempDir tmp("simai-cli");
    std::ostringstream out, err;
    ASSERT_EQ(GpusimMain({"simai", "import", Fixture("tp-dp-ep.txt"), "--out",
                          tmp.Path() + "/t"},
                         out, err),
              0)
        << err.str();
    const JobTrace written = ReadJobTrace(tmp.Path() + "/t");
    ASSERT_EQ(written.ranks.size(), 16u);
    EXPECT_EQ(written.source, "simai");
    ValidateJobTrace(written);
    EXPECT_EQ(Members(written), Members(ImportSimai(Fixture("tp-dp-ep.txt"))));

    std::ostringstream info;
    ASSERT_EQ(GpusimMain({"simai", "info", Fixture("tp-dp-ep.txt")}, info, err), 0);
    EXPECT_NE(info.str().find("allreduce@dp_ep:8388608"), std::string::npos) << info.str();

    // simulate reads the file itself: the same end as the imported directory.
    auto endLine = [](const std::string& s) { return s.substr(s.find("# end of simulation")); };
    std::ostringstream a, b;
    ASSERT_EQ(GpusimMain({"simulate", Fixture("tp-dp-ep.txt"), "--preset", "dgx-h100",
                          "--servers", "2"},
                         a, err),
              0)
        << err.str();
    ASSERT_EQ(GpusimMain({"simulate", tmp.Path() + "/t", "--preset", "dgx-h100", "--servers",
                          "2"},
                         b, err),
              0)
        << err.str();
    EXPECT_EQ(endLine(a.str()), endLine(b.str()));
    EXPECT_NE(a.str().find("(simai)"), std::string::npos) << a.str();

    // SimAI's own example: 8 ranks, TP 8, on one DGX.
    std::ostringstream ex;
    ASSERT_EQ(GpusimMain({"simulate", Fixture("simai-microAllReduce.txt"), "--preset",
                          "dgx-h100", "--servers", "1"},
                         ex, err),
              0)
        << err.str();

    // Errors: a bad file (2), --ranks disagreeing with all_gpus (2), no --out (1).
    std::ofstream(tmp.Path() + "/bad.txt") << kHeader << "1\nx -1 1 NONE 0\n";
    std::ostringstream e1, e2, e3;
    EXPECT_EQ(GpusimMain({"simai", "import", tmp.Path() + "/bad.txt", "--out", tmp.Path() + "/b"},
                         out, e1),
              2);
    EXPECT_NE(e1.str().find("bad.txt:3:"), std::string::npos) << e1.str();
    EXPECT_EQ(GpusimMain({"simai", "import", Fixture("tp-dp-ep.txt"), "--ranks", "8", "--out",
                          tmp.Path() + "/b"},
                         out, e2),
              2);
    EXPECT_EQ(GpusimMain({"simai", "import", Fixture("tp-dp-ep.txt")}, out, e3), 1);
    std::ostringstream e4;
    EXPECT_EQ(GpusimMain({"simulate", tmp.Path() + "/bad.txt"}, out, e4), 2);
    EXPECT_NE(e4.str().find("bad.txt:3:"), std::string::npos) << e4.str();
}

TEST(SimaiWorkload, PublishedAnalyticalWorkloadConverts)
{
    // SimAI's example/workload_analytical.txt (1,789 layers, 9,216 GPUs, TP 2, EP 16) when a
    // copy is in ../shared/data/simai; it is not in the repository (test/data/simai/README.md).
    const std::string file = GPUSIM_SHARED_DIR "/data/simai/workload_analytical.txt";
    if (!std::filesystem::is_regular_file(file))
    {
        GTEST_SKIP() << "SimAI's example/workload_analytical.txt is not at " << file
                     << " (test/data/simai/README.md)";
    }
    const SimaiWorkload w = ReadSimaiWorkload(file);
    EXPECT_EQ(w.layers.size(), 1789u);
    EXPECT_EQ(w.allGpus, 9216u);
    EXPECT_EQ(w.ppCommBytes, 50331648u);
    const JobTrace job = SimaiToJobTrace(w);
    EXPECT_EQ(job.ranks.size(), 9216u);
    EXPECT_EQ(job.ranks[1].opsFrom, 0);
    ValidateJobTrace(job);
}
