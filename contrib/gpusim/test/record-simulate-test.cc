// gpusim record -> simulate: the shim's training program recorded and simulated, failing
// programs, collective mismatches by name, deduplication, the kernel table, query syncs.
#include "cli-test-util.h"
#include "ns3/gpusim-commands.h"
#include "ns3/job-builder.h"
#include "ns3/op-stream-dedup.h"
#include "ns3/profile-table-cost-model.h"
#include "ns3/record-command.h"

#include <chrono>
#include <cstdlib>
#include <csignal>
#include <thread>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{


/// Temporary directories, removed when the test process exits (GPUSIM_KEEP_TEMP=1 keeps them).
struct TempDirs
{
    std::vector<std::string> dirs;

    ~TempDirs()
    {
        if (std::getenv("GPUSIM_KEEP_TEMP"))
        {
            return;
        }
        for (const auto& d : dirs)
        {
            std::error_code ec;
            std::filesystem::remove_all(d, ec);
        }
    }
};

std::string
TempDir()
{
    static TempDirs temps;
    char tmpl[] = "/tmp/gpusim-record-XXXXXX";
    temps.dirs.push_back(mkdtemp(tmpl));
    return temps.dirs.back();
}

bool
Exists(const std::string& p)
{
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

const std::string kTrain = std::string(GPUSIM_BIN_DIR) + "/../shim/test/shim_train";

bool
ShimAvailable()
{
    return Exists(kTrain) && !FindShimLibDir().empty();
}

struct Counts
{
    uint64_t kernels = 0, gemms = 0, colls = 0, p2p = 0, syncs = 0;
    std::map<CollKind, uint64_t> byColl;
};

Counts
CountOps(const RankTrace& r)
{
    Counts c;
    for (const auto& op : r.ops)
    {
        if (op.kind == OpKind::Kernel)
        {
            ++c.kernels;
            c.gemms += op.gemm.m ? 1 : 0;
        }
        else if (op.kind == OpKind::Collective)
        {
            (op.coll == CollKind::Send || op.coll == CollKind::Recv ? c.p2p : c.colls)++;
            ++c.byColl[op.coll];
        }
        else if (op.kind == OpKind::StreamSync || op.kind == OpKind::EventSync ||
                 op.kind == OpKind::DeviceSync)
        {
            ++c.syncs;
        }
    }
    return c;
}

void
WriteText(const std::string& path, const std::string& text)
{
    std::ofstream f(path);
    f << text;
}

} // namespace

// ---------------------------------------------------------------- record -> simulate

TEST(RecordSimulate, TrainingLoopRoundTripIsDeterministic)
{
    if (!ShimAvailable())
    {
        GTEST_SKIP() << "shim libraries or shim_train not built (GPUSIM_BUILD_SHIM=OFF?)";
    }
    const std::string dir = TempDir() + "/trace";
    const int iters = 3;
    CliResult rec = Cli({"record", "--gpus", "3", "--out", dir, "--timeout", "120", "--", kTrain,
                         "--iters", std::to_string(iters)});
    ASSERT_EQ(rec.code, 0) << rec.err;
    EXPECT_NE(rec.out.find("3 ranks"), std::string::npos) << rec.out;
    EXPECT_NE(rec.out.find("# trace: " + dir), std::string::npos) << rec.out;
    EXPECT_NE(rec.out.find("distinct op stream"), std::string::npos) << rec.out;
    ASSERT_TRUE(Exists(dir + "/manifest.json"));
    EXPECT_FALSE(Exists(dir + "/.nccl-unique-id")); // staging leftovers are not published

    JobTrace job = ReadJobTrace(dir);
    ASSERT_EQ(job.ranks.size(), 3u);
    ValidateJobTrace(job);
    for (const auto& r : job.ranks)
    {
        // Per iteration: layernorm + sgd_update kernels and 5 GEMMs; AllReduce, ReduceScatter,
        // AllGather, the PreMulSum AllReduce; plus the initial Broadcast.
        Counts c = CountOps(r);
        EXPECT_EQ(c.kernels, 7u * iters) << "rank " << r.rank;
        EXPECT_EQ(c.gemms, 5u * iters) << "rank " << r.rank;
        EXPECT_EQ(c.colls, 1u + 4u * iters) << "rank " << r.rank;
        EXPECT_EQ(c.byColl[CollKind::AllReduce], 2u * iters);
        EXPECT_EQ(c.byColl[CollKind::Broadcast], 1u);
        // Pipeline: the middle rank receives and sends each iteration, the ends do one.
        EXPECT_EQ(c.p2p, (r.rank == 1 ? 2u : 1u) * iters) << "rank " << r.rank;
    }
    // Rank 0 only sends, rank 2 only receives: three different programs.
    EXPECT_EQ(GroupIdenticalRanks(job).structuralGroups.size(), 3u);

    const std::string j1 = dir + "/../m1.json";
    const std::string j2 = dir + "/../m2.json";
    CliResult s1 = Cli({"simulate", dir, "--json", j1});
    ASSERT_EQ(s1.code, 0) << s1.err << s1.out;
    EXPECT_NE(s1.out.find("3 ranks, "), std::string::npos) << s1.out;
    CliResult s2 = Cli({"simulate", dir, "--json", j2});
    ASSERT_EQ(s2.code, 0) << s2.err;
    EXPECT_EQ(s1.out, s2.out);
    const std::string m1 = Slurp(j1);
    EXPECT_FALSE(m1.empty());
    EXPECT_EQ(m1, Slurp(j2));
    // Every collective instance of the job ran: 13 per communicator sequence.
    EXPECT_NE(m1.find("\"collectives\""), std::string::npos);
}

TEST(RecordSimulate, ManyRanksOfTheSameProgramDeduplicate)
{
    if (!ShimAvailable())
    {
        GTEST_SKIP() << "shim libraries or shim_train not built (GPUSIM_BUILD_SHIM=OFF?)";
    }
    const std::string dir = TempDir() + "/trace";
    CliResult rec = Cli({"record", "--gpus", "4", "--out", dir, "--timeout", "120", "--", kTrain,
                         "--iters", "1"});
    ASSERT_EQ(rec.code, 0) << rec.err;
    JobTrace job = ReadJobTrace(dir);
    DedupReport d = GroupIdenticalRanks(job);
    // Ranks 1 and 2 run the same program (recv from the previous stage, send to the next);
    // ranks 0 and 3 are the pipeline ends. Host timings are measured, so they differ.
    ASSERT_EQ(d.structuralGroups.size(), 3u);
    EXPECT_EQ(d.structuralGroups[1], (std::vector<uint32_t>{1, 2}));
}

TEST(RecordSimulate, FailingProgramGivesClearErrorAndNoTrace)
{
    if (FindShimLibDir().empty())
    {
        GTEST_SKIP() << "shim libraries not built";
    }
    const std::string dir = TempDir() + "/trace";
    CliResult r = Cli({"record", "--gpus", "2", "--out", dir, "--", "sh", "-c", "exit 3"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("exited with status 3"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no trace written"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(dir + "/manifest.json"));

    r = Cli({"record", "--out", dir, "--", "/nonexistent/program"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("cannot run /nonexistent/program: No such file or directory"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(Exists(dir + "/manifest.json"));

    r = Cli({"record", "--out", dir, "--", "sh", "-c", "kill -SEGV $$"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("killed by signal"), std::string::npos) << r.err;

    // A program that never touches CUDA leaves no trace: an error, not an empty success.
    r = Cli({"record", "--out", dir, "--", "true"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("left no trace"), std::string::npos) << r.err;

    EXPECT_EQ(Cli({"record", "--gpus", "0", "--", "true"}).code, 1);
    EXPECT_EQ(Cli({"record", "--out", dir}).code, 1);
    EXPECT_EQ(Cli({"record", "--preset", "nope", "--", "true"}).code, 1);
}

TEST(RecordSimulate, OneDeadRankStopsTheOthersInsteadOfHanging)
{
    if (FindShimLibDir().empty())
    {
        GTEST_SKIP() << "shim libraries not built";
    }
    const std::string dir = TempDir() + "/trace";
    auto t0 = std::chrono::steady_clock::now();
    CliResult r = Cli({"record", "--gpus", "3", "--out", dir, "--", "sh", "-c",
                       "if [ \"$GPUSIM_RANK\" = 1 ]; then exit 4; fi; sleep 60"});
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("process 1 of 3"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("other processes were stopped"), std::string::npos) << r.err;
    EXPECT_LT(secs, 20);

    t0 = std::chrono::steady_clock::now();
    r = Cli({"record", "--timeout", "0.5", "--out", dir, "--", "sleep", "60"});
    EXPECT_EQ(r.code, 3);
    EXPECT_NE(r.err.find("did not finish within"), std::string::npos) << r.err;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
}

TEST(RecordSimulate, MismatchedCollectivesAreReportedByName)
{
    JobBuilder b(2);
    b.AllRanks().CommInit("dp").CreateStream(1);
    b.Rank(0).Collective(1, CollKind::AllReduce, "dp", 1 << 20);
    b.Rank(1).Collective(1, CollKind::AllGather, "dp", 1 << 20);
    b.AllRanks().SyncStream(1);
    const std::string dir = TempDir() + "/trace";
    WriteJobTrace(b.Build(), dir);
    CliResult r = Cli({"simulate", dir});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("collective mismatch on communicator dp seq 0"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("allreduce"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("allgather"), std::string::npos) << r.err;

    // A rank that skips a collective: named by communicator, sequence number and rank.
    JobBuilder c(3);
    c.AllRanks().CommInit("world").CreateStream(1);
    c.Rank(0).AllReduce(1, "world", 4096);
    c.Rank(2).AllReduce(1, "world", 4096);
    c.AllRanks().SyncStream(1);
    WriteJobTrace(c.Build(), dir);
    r = Cli({"simulate", dir});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("allreduce seq 0 on communicator world: ranks [1] never call it"),
              std::string::npos)
        << r.err;
}

// ---------------------------------------------------------------- deduplication

TEST(OpStreamDedup, RankRelativeFieldsAreNormalised)
{
    const uint32_t n = 8;
    JobBuilder b(n);
    b.AllRanks().CommInit("world").CreateStream(1).Malloc(0x1000, 1 << 20);
    for (uint32_t r = 0; r < n; ++r)
    {
        // Ring exchange: absolute peers differ, relative ones (+1 / -1) do not.
        b.Rank(r)
            .Send(1, "world", (r + 1) % n, 4096, 1)
            .Recv(1, "world", (r + n - 1) % n, 4096, 1);
    }
    b.AllRanks().Gemm(1, 1024, 1024, 1024).AllReduce(1, "world", 1 << 20).SyncStream(1);
    JobTrace job = b.Build();
    DedupReport d = GroupIdenticalRanks(job);
    EXPECT_EQ(d.groups.size(), 1u);
    EXPECT_EQ(d.Summary(), "8 ranks, 1 distinct op stream");
    EXPECT_EQ(d.opsDistinct, job.ranks[0].ops.size());
    EXPECT_EQ(d.opsTotal, n * job.ranks[0].ops.size());

    // Different allocation addresses per process do not matter either.
    for (auto& op : job.ranks[3].ops)
    {
        if (op.kind == OpKind::Malloc)
        {
            op.ptr += 0x7000000;
        }
    }
    EXPECT_EQ(GroupIdenticalRanks(job).groups.size(), 1u);

    // Host timings make a rank different, but not structurally.
    job.ranks[5].ops.back().cpuUs = 12.5;
    d = GroupIdenticalRanks(job);
    EXPECT_EQ(d.groups.size(), 2u);
    EXPECT_EQ(d.structuralGroups.size(), 1u);
    EXPECT_EQ(d.groups[1], (std::vector<uint32_t>{5}));
    EXPECT_EQ(d.Summary(), "8 ranks, 2 distinct op streams (1 ignoring host timings)");

    // A different kernel is a different program.
    for (auto& op : job.ranks[2].ops)
    {
        if (op.kind == OpKind::Kernel)
        {
            op.gemm.k = 2048;
        }
    }
    EXPECT_EQ(GroupIdenticalRanks(job).structuralGroups.size(), 2u);
}

TEST(OpStreamDedup, CommunicatorIdsAreComparedByRoleNotName)
{
    // Two tensor-parallel groups of 2: ranks {0,1} on "tp0", {2,3} on "tp1", all on "dp".
    JobBuilder b(4);
    b.AllRanks().CommInit("dp").CreateStream(1);
    for (uint32_t r = 0; r < 4; ++r)
    {
        b.Rank(r).CommInit(r < 2 ? "tp0" : "tp1", 2, r % 2);
    }
    for (uint32_t r = 0; r < 4; ++r)
    {
        b.Rank(r).AllReduce(1, r < 2 ? "tp0" : "tp1", 1 << 16);
    }
    b.AllRanks().AllReduce(1, "dp", 1 << 20).SyncStream(1);
    EXPECT_EQ(GroupIdenticalRanks(b.Build()).groups.size(), 1u);
}

TEST(OpStreamDedup, SimulatePrintsTheSaving)
{
    JobBuilder b(16);
    b.AllRanks().CommInit("world").CreateStream(1).Gemm(1, 2048, 2048, 2048);
    b.AllReduce(1, "world", 8 << 20).SyncStream(1);
    const std::string dir = TempDir() + "/trace";
    WriteJobTrace(b.Build(), dir);
    CliResult r = Cli({"simulate", dir, "--preset", "dgx-h100"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("# 16 ranks, 1 distinct op stream; 15 share another rank's op list in "
                         "memory\n"),
              std::string::npos)
        << r.out;
    r = Cli({"simulate", dir, "--preset", "dgx-h100", "--no-dedup"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("# 16 ranks, 1 distinct op stream\n"), std::string::npos) << r.out;
}

// ---------------------------------------------------------------- kernel table

TEST(ProfileTable, LookupPrecedenceAndFallback)
{
    const std::string file = TempDir() + "/table.json";
    WriteText(file, R"({"format":"gpusim-kernel-table","version":1,"gpu":"h100-sxm","kernels":[
  {"name":"ln","grid":[512,1,1],"block":[256,1,1],"dur_us":4.5},
  {"name":"ln","dur_us":9},
  {"name":"cublasGemmEx","gemm":{"m":512,"n":1024,"k":4096,"batch":1,"dtype":"bf16"},"dur_us":30},
  {"gemm":{"m":512,"n":1024,"k":4096,"dtype":"bf16"},"dur_us":40}
]})");
    KernelTable t = LoadKernelTable(file);
    EXPECT_EQ(t.Size(), 4u);
    EXPECT_EQ(t.gpu, "h100-sxm");
    Op ln;
    ln.kind = OpKind::Kernel;
    ln.name = "ln";
    ln.grid = {512, 1, 1};
    ln.block = {256, 1, 1};
    EXPECT_DOUBLE_EQ(t.Lookup(ln), 4.5); // exact launch shape
    ln.grid = {1024, 1, 1};
    EXPECT_DOUBLE_EQ(t.Lookup(ln), 9); // any launch of the name
    Op g;
    g.kind = OpKind::Kernel;
    g.name = "cublasGemmEx";
    g.gemm = {512, 1024, 4096, 1, DataType::BF16};
    EXPECT_DOUBLE_EQ(t.Lookup(g), 30); // name + shape
    g.name = "cublasLtMatmul";
    EXPECT_DOUBLE_EQ(t.Lookup(g), 40); // any GEMM of the shape
    g.gemm.dtype = DataType::F16;
    EXPECT_LT(t.Lookup(g), 0); // unknown: fallback

    Ptr<ProfileTableCostModel> m = CreateObject<ProfileTableCostModel>();
    m->LoadTable(file);
    GpuSpec spec;
    ASSERT_TRUE(LookupGpuSpec("h100-sxm", spec));
    ln.grid = {512, 1, 1};
    EXPECT_EQ(m->GetDuration(ln, spec), NanoSeconds(4500));
    Op unknown = ln;
    unknown.name = "other";
    unknown.durUs = 7;
    EXPECT_EQ(m->GetDuration(unknown, spec), MicroSeconds(7)); // recorded duration
    unknown.durUs = -1;
    Ptr<RooflineCostModel> roof = CreateObject<RooflineCostModel>();
    EXPECT_EQ(m->GetDuration(unknown, spec), roof->GetDuration(unknown, spec));
    EXPECT_EQ(m->GetDuration(g, spec), roof->GetDuration(g, spec));
    EXPECT_EQ(m->GetHits(), 1u);
    EXPECT_EQ(m->GetMisses(), 3u);
}

TEST(ProfileTable, BadFilesAreRejectedWithTheEntry)
{
    const std::string dir = TempDir();
    auto expectError = [&](const std::string& text, const std::string& what) {
        const std::string file = dir + "/t.json";
        WriteText(file, text);
        try
        {
            LoadKernelTable(file);
            ADD_FAILURE() << "accepted: " << text;
        }
        catch (const TraceFormatError& e)
        {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
        }
    };
    expectError("{", "cannot read");
    expectError(R"({"format":"x","version":1,"kernels":[]})", "format");
    expectError(R"({"format":"gpusim-kernel-table","version":2,"kernels":[]})", "version");
    expectError(R"({"format":"gpusim-kernel-table","version":1,"kernels":[{"name":"a"}]})",
                "kernels[0]: missing number 'dur_us'");
    const std::string head = R"({"format":"gpusim-kernel-table","version":1,"kernels":)";
    expectError(head + R"([{"name":"a","dur_us":-1}]})", "must not be negative");
    expectError(R"({"format":"gpusim-kernel-table","version":1,"kernels":[{"name":"a","dur_us":1},
                {"name":"a","dur_us":2}]})",
                "kernels[1]: duplicate key");
    expectError(R"({"format":"gpusim-kernel-table","version":1,"kernels":[{"dur_us":1}]})",
                "needs 'name' or 'gemm'");
    expectError(head + R"([{"name":"a","grid":[1,2],"dur_us":1}]})",
                "'grid' must be an array of 3 integers");
    expectError(head + R"([{"gemm":{"m":1,"n":1},"dur_us":1}]})",
                "'gemm' needs positive integer 'k'");
    expectError(head + R"([{"gemm":{"m":1,"n":1,"k":1,"dtype":7},"dur_us":1}]})",
                "dtype must be a string");
}

TEST(ProfileTable, SimulateUsesTheTable)
{
    JobBuilder b(2);
    b.AllRanks().CommInit("world").CreateStream(1);
    b.Gemm(1, 4096, 4096, 4096, DataType::BF16, "cublasGemmEx");
    b.AllReduce(1, "world", 1 << 20).SyncStream(1);
    const std::string tmp = TempDir();
    const std::string dir = tmp + "/trace";
    WriteJobTrace(b.Build(), dir);
    const std::string table = tmp + "/table.json";
    WriteText(table, R"({"format":"gpusim-kernel-table","version":1,"kernels":[
  {"name":"cublasGemmEx","gemm":{"m":4096,"n":4096,"k":4096,"dtype":"bf16"},"dur_us":5000}]})");
    CliResult roof = Cli({"simulate", dir, "--cost-model", "roofline"});
    ASSERT_EQ(roof.code, 0) << roof.err;
    CliResult tab = Cli({"simulate", dir, "--kernel-table", table});
    ASSERT_EQ(tab.code, 0) << tab.err;
    EXPECT_NE(tab.out.find("# kernel table: 2 of 2 kernel launches measured"), std::string::npos)
        << tab.out;
    auto endUs = [](const std::string& out) {
        auto p = out.find("# end of simulation: ");
        return std::stod(out.substr(p + 21));
    };
    // The roofline puts a 4096^3 bf16 GEMM well under a millisecond; the table says 5 ms.
    EXPECT_LT(endUs(roof.out), 2000);
    EXPECT_GT(endUs(tab.out), 5000);

    WriteText(table, "not json");
    CliResult bad = Cli({"simulate", dir, "--kernel-table", table});
    EXPECT_EQ(bad.code, 2);
    EXPECT_NE(bad.err.find(table), std::string::npos) << bad.err;
}

// ---------------------------------------------------------------- query syncs

TEST(QuerySyncs, RoundTripAndPolicies)
{
    // A poll that saw a 3 ms kernel finished, then 1 ms of host work.
    JobBuilder b(1);
    b.AllRanks().CreateStream(1).Kernel(1, "long", 3000).SyncStream(1).Host(1000).Kernel(1, "k", 1);
    JobTrace job = b.Build();
    for (auto& op : job.ranks[0].ops)
    {
        if (op.kind == OpKind::StreamSync)
        {
            op.query = true;
        }
    }
    const std::string dir = TempDir() + "/trace";
    WriteJobTrace(job, dir);
    EXPECT_NE(Slurp(dir + "/rank-0.jsonl").find("\"query\":true"), std::string::npos);
    JobTrace back = ReadJobTrace(dir);
    uint64_t queries = 0;
    for (const auto& op : back.ranks[0].ops)
    {
        queries += op.query ? 1 : 0;
    }
    EXPECT_EQ(queries, 1u);

    JobTrace ignored = back;
    EXPECT_EQ(ApplyQuerySyncPolicy(ignored, QuerySyncPolicy::Ignore), 1u);
    for (const auto& op : ignored.ranks[0].ops)
    {
        EXPECT_NE(op.kind, OpKind::StreamSync);
    }

    auto endUs = [](const std::string& out) {
        auto p = out.find("# end of simulation: ");
        return std::stod(out.substr(p + 21));
    };
    CliResult wait = Cli({"simulate", dir});
    ASSERT_EQ(wait.code, 0) << wait.err;
    CliResult ign = Cli({"simulate", dir, "--query-syncs", "ignore"});
    ASSERT_EQ(ign.code, 0) << ign.err;
    // wait: 3000 (kernel) + 1000 (host) + 1; ignore: the host work overlaps the kernel.
    EXPECT_NEAR(endUs(wait.out), 4001, 5);
    EXPECT_NEAR(endUs(ign.out), 3001, 5);
    EXPECT_EQ(Cli({"simulate", dir, "--query-syncs", "sometimes"}).code, 1);
}

TEST(OpStreamDedup, ManifestEntriesMayShareOneFile)
{
    // Single-GPU jobs without communicators have byte-identical rank files: store one.
    const std::string dir = TempDir();
    WriteText(dir + "/ops.jsonl", "{\"op\":\"stream_create\",\"stream\":1,\"flags\":0}\n"
                                  "{\"op\":\"kernel\",\"name\":\"k\",\"stream\":1,\"dur_us\":5}\n"
                                  "{\"op\":\"stream_sync\",\"stream\":1}\n");
    WriteText(dir + "/manifest.json",
              R"({"format":"gpusim-trace","version":1,"source":"generator","ranks":[
                 {"rank":1,"file":"ops.jsonl"},{"rank":0,"file":"ops.jsonl"},
                 {"rank":2,"file":"ops.jsonl","device":"x"}]})");
    JobTrace job = ReadJobTrace(dir);
    ASSERT_EQ(job.ranks.size(), 3u);
    for (uint32_t r = 0; r < 3; ++r)
    {
        EXPECT_EQ(job.ranks[r].rank, r);
        EXPECT_EQ(job.ranks[r].ops.size(), 3u);
    }
    EXPECT_EQ(job.ranks[2].device, "x");
    EXPECT_EQ(GroupIdenticalRanks(job).groups.size(), 1u);
    CliResult r = Cli({"simulate", dir});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("# 3 ranks, 1 distinct op stream"), std::string::npos) << r.out;
}

TEST(RecordSimulate, OneProcessDrivingFourGpusGivesFourIdenticalPrograms)
{
    if (!ShimAvailable())
    {
        GTEST_SKIP() << "shim libraries or shim_train not built (GPUSIM_BUILD_SHIM=OFF?)";
    }
    const std::string dir = TempDir() + "/trace";
    CliResult rec = Cli({"record", "--gpus", "4", "--nproc-per-node", "1", "--out", dir,
                         "--timeout", "120", "--", kTrain, "--iters", "2", "--devices", "4"});
    ASSERT_EQ(rec.code, 0) << rec.err;
    EXPECT_NE(rec.out.find("as 1 process on 4 h100-sxm GPUs (preset dgx-h100), 4 ranks"),
              std::string::npos)
        << rec.out;
    JobTrace job = ReadJobTrace(dir);
    ASSERT_EQ(job.ranks.size(), 4u);
    // Event ids are per process in the shim (each rank gets its own), yet the programs match.
    EXPECT_EQ(GroupIdenticalRanks(job).structuralGroups.size(), 1u);
    CliResult sim = Cli({"simulate", dir, "--preset", "dgx-a100"});
    ASSERT_EQ(sim.code, 0) << sim.err;
    EXPECT_NE(sim.out.find("(1 ignoring host timings)"), std::string::npos) << sim.out;
}

// ---------------------------------------------------------------- optional: nvcc programs

namespace
{

const std::string kNvcc = "/usr/local/cuda/bin/nvcc";

/// Compiles shim/nvcc/NAME.cu with -cudart shared against the shim's NCCL; "" on failure.
std::string
CompileCuda(const std::string& name)
{
    const std::string work = std::string(GPUSIM_BIN_DIR) + "/../record-nvcc-work";
    mkdir(work.c_str(), 0755);
    const std::string exe = work + "/" + name;
    const std::string src = std::string(GPUSIM_SOURCE_DIR) + "/shim/nvcc/" + name + ".cu";
    std::string ncclInc;
    if (!Exists("/usr/local/cuda/include/nccl.h"))
    {
        ncclInc = " -idirafter " + work + "/nccl-include";
        mkdir((work + "/nccl-include").c_str(), 0755);
        std::ifstream in(std::string(GPUSIM_SOURCE_DIR) + "/shim/include/nccl.h");
        std::ofstream out(work + "/nccl-include/nccl.h");
        out << in.rdbuf();
    }
    const std::string cmd = kNvcc + " -std=c++17 -cudart shared -arch=sm_90" + ncclInc + " -o " +
                            exe + " " + src + " -L" + FindShimLibDir() + " -lnccl > " + exe +
                            ".log 2>&1";
    if (std::system(cmd.c_str()) != 0)
    {
        ADD_FAILURE() << cmd << "\n" << Slurp(exe + ".log");
        return "";
    }
    return exe;
}

} // namespace

TEST(RecordSimulateNvcc, NvtxProfilerStepsBecomeIterations)
{
    if (!Exists(kNvcc) || FindShimLibDir().empty())
    {
        GTEST_SKIP() << "nvcc not found (" << kNvcc << ") or shim not built: optional test skipped";
    }
    const std::string exe = CompileCuda("nvtx_steps");
    ASSERT_FALSE(exe.empty());
    const std::string dir = TempDir() + "/trace";
    CliResult rec = Cli({"record", "--out", dir, "--timeout", "120", "--", exe});
    ASSERT_EQ(rec.code, 0) << rec.err;
    CliResult sim = Cli({"simulate", dir});
    ASSERT_EQ(sim.code, 0) << sim.err;
    for (int it = 0; it < 3; ++it)
    {
        EXPECT_NE(sim.out.find("      0  ProfilerStep#" + std::to_string(it) + " "),
                  std::string::npos)
            << sim.out;
    }
    EXPECT_EQ(sim.out.find("  run  "), std::string::npos) << sim.out;
}

TEST(RecordSimulateNvcc, PollingLoopQueriesWaitForTheCollective)
{
    if (!Exists(kNvcc) || FindShimLibDir().empty())
    {
        GTEST_SKIP() << "nvcc not found (" << kNvcc << ") or shim not built: optional test skipped";
    }
    const std::string exe = CompileCuda("nccl_tests_style");
    ASSERT_FALSE(exe.empty());
    const std::string dir = TempDir() + "/trace";
    // One process driving both GPUs of the job.
    CliResult rec = Cli({"record", "--gpus", "2", "--nproc-per-node", "1", "--out", dir,
                         "--timeout", "120", "--", exe});
    ASSERT_EQ(rec.code, 0) << rec.err;
    JobTrace job = ReadJobTrace(dir);
    ASSERT_EQ(job.ranks.size(), 2u);
    EXPECT_GE(ApplyQuerySyncPolicy(job, QuerySyncPolicy::Wait), 10u);
    auto endUs = [](const std::string& out) {
        auto p = out.find("# end of simulation: ");
        return p == std::string::npos ? -1.0 : std::stod(out.substr(p + 21));
    };
    CliResult wait = Cli({"simulate", dir});
    ASSERT_EQ(wait.code, 0) << wait.err;
    CliResult ign = Cli({"simulate", dir, "--query-syncs", "ignore"});
    ASSERT_EQ(ign.code, 0) << ign.err;
    // Waiting on every poll serialises the sweep: each size's loop ends before the next starts.
    EXPECT_GE(endUs(wait.out), endUs(ign.out));
    EXPECT_GT(endUs(wait.out), 0);
}

TEST(OpStreamDedup, IdenticalRanksShareOneOpList)
{
    const uint32_t n = 8;
    JobBuilder b(n);
    b.AllRanks().CommInit("dp").CreateStream(1).Gemm(1, 1024, 1024, 1024);
    b.AllReduce(1, "dp", 1 << 20).SyncStream(1);
    JobTrace job = b.Build();
    const size_t opsPerRank = job.ranks[0].ops.size();
    job.ranks[6].ops[2].cpuUs = 3; // a different host time: not shareable
    EXPECT_EQ(ShareIdenticalRanks(job), n - 2);
    EXPECT_EQ(job.ranks[0].opsFrom, -1);
    EXPECT_EQ(job.ranks[6].opsFrom, -1);
    EXPECT_EQ(job.ranks[6].ops.size(), opsPerRank);
    for (uint32_t r : {1u, 2u, 3u, 4u, 5u, 7u})
    {
        EXPECT_EQ(job.ranks[r].opsFrom, 0);
        ASSERT_EQ(job.ranks[r].ops.size(), 1u); // only its comm_init
        EXPECT_EQ(job.ranks[r].ops[0].kind, OpKind::CommInit);
        EXPECT_EQ(job.ranks[r].ops[0].commRank, static_cast<int32_t>(r));
    }
    // Validation and grouping see every rank whole; writing refuses (engine input only).
    EXPECT_NO_THROW(ValidateJobTrace(job));
    DedupReport d = GroupIdenticalRanks(job);
    EXPECT_EQ(d.opsTotal, n * opsPerRank);
    EXPECT_EQ(d.structuralGroups.size(), 1u);
    EXPECT_THROW(WriteJobTrace(job, TempDir() + "/x"), std::runtime_error);
    // Validation still sees each rank's own comm rank: a clash is reported.
    job.ranks[3].ops[0].commRank = 1;
    EXPECT_THROW(ValidateJobTrace(job), TraceFormatError);

    // Send/recv rings name absolute peers: equivalent (grouped) but not equal (not shared).
    JobBuilder ring(4);
    ring.AllRanks().CommInit("w").CreateStream(1);
    for (uint32_t r = 0; r < 4; ++r)
    {
        ring.Rank(r).Send(1, "w", (r + 1) % 4, 64, 1).Recv(1, "w", (r + 3) % 4, 64, 1);
    }
    JobTrace rj = ring.Build();
    EXPECT_EQ(GroupIdenticalRanks(rj).groups.size(), 1u);
    EXPECT_EQ(ShareIdenticalRanks(rj), 0u);

    // Ranks 1 and 2 both send to rank 0: equal ops, but a sharer reads a list's peers as
    // offsets from its own comm rank (RankTrace::opsFrom), so rank 2 would send to rank 1.
    JobBuilder gather(3);
    gather.AllRanks().CommInit("w").CreateStream(1);
    gather.Rank(0).Recv(1, "w", 1, 64, 1).Recv(1, "w", 2, 64, 1);
    gather.Rank(1).Send(1, "w", 0, 64, 1);
    gather.Rank(2).Send(1, "w", 0, 64, 1);
    JobTrace gj = gather.Build();
    EXPECT_EQ(ShareIdenticalRanks(gj), 0u);
    EXPECT_EQ(gj.ranks[2].opsFrom, -1);
}

TEST(OpStreamDedup, SharingDoesNotChangeTheSimulation)
{
    // 16 ranks: data parallel over all, tensor parallel in groups of 8, an overlapped bucket.
    JobBuilder b(16);
    b.AllRanks().CommInit("dp").CreateStream(1).CreateStream(2, true);
    for (uint32_t r = 0; r < 16; ++r)
    {
        b.Rank(r).CommInit(r < 8 ? "tp0" : "tp1", 8, r % 8);
    }
    for (int it = 0; it < 2; ++it)
    {
        b.AllRanks().Marker("ProfilerStep#" + std::to_string(it), MarkerPhase::Begin);
        for (uint32_t r = 0; r < 16; ++r)
        {
            const std::string tp = r < 8 ? "tp0" : "tp1";
            b.Rank(r).Host(5).Gemm(1, 4096, 4096, 1024).AllReduce(1, tp, 8 << 20);
        }
        b.AllRanks().Gemm(1, 4096, 4096, 4096).RecordEvent(1, 1).WaitEvent(2, 1);
        b.AllReduce(2, "dp", 64 << 20).Gemm(1, 4096, 4096, 4096).SyncDevice();
        b.Marker("ProfilerStep#" + std::to_string(it), MarkerPhase::End);
    }
    const std::string tmp = TempDir();
    WriteJobTrace(b.Build(), tmp + "/trace");
    CliResult shared = Cli({"simulate", tmp + "/trace", "--json", tmp + "/a.json", "--trace",
                            tmp + "/a.trace.json"});
    ASSERT_EQ(shared.code, 0) << shared.err;
    // Ranks 1..7 share rank 0's list, 9..15 rank 8's (their collectives name tp1).
    EXPECT_NE(shared.out.find("# 16 ranks, 1 distinct op stream; 14 share"), std::string::npos)
        << shared.out;
    CliResult full = Cli({"simulate", tmp + "/trace", "--no-dedup", "--json", tmp + "/b.json",
                          "--trace", tmp + "/b.trace.json"});
    ASSERT_EQ(full.code, 0) << full.err;
    EXPECT_EQ(Slurp(tmp + "/a.json"), Slurp(tmp + "/b.json"));
    EXPECT_EQ(Slurp(tmp + "/a.trace.json"), Slurp(tmp + "/b.trace.json"));
    auto body = [](const std::string& out) { return out.substr(out.find("# cluster:")); };
    EXPECT_EQ(body(shared.out), body(full.out));
}

TEST(OpStreamDedup, ReadingSharesAsItGoes)
{
    const uint32_t n = 8;
    JobBuilder b(n);
    b.AllRanks().CommInit("dp").CreateStream(1).Gemm(1, 1024, 1024, 1024);
    b.AllReduce(1, "dp", 1 << 20).SyncStream(1);
    const std::string dir = TempDir() + "/trace";
    WriteJobTrace(b.Build(), dir);
    uint32_t shared = 0;
    JobTrace job = ReadJobTraceSharing(dir, &shared);
    EXPECT_EQ(shared, n - 1);
    ValidateJobTrace(job);
    for (uint32_t r = 1; r < n; ++r)
    {
        EXPECT_EQ(job.ranks[r].opsFrom, 0);
        EXPECT_EQ(job.ranks[r].ops.front().commRank, static_cast<int32_t>(r));
    }
    EXPECT_EQ(GroupIdenticalRanks(job).Summary(), "8 ranks, 1 distinct op stream");
}

TEST(RecordSimulate, InterruptStopsEveryRank)
{
    if (FindShimLibDir().empty())
    {
        GTEST_SKIP() << "shim libraries not built";
    }
    // SIGINT to ourselves while the ranks sleep: they run in their own process groups, so
    // record must stop them and report, not leave them running.
    const std::string dir = TempDir() + "/trace";
    const std::string staging = dir + ".recording-" + std::to_string(getpid());
    std::thread interrupter([staging] {
        // Once the staging directory exists the handler is about to be installed.
        for (int i = 0; i < 1000 && !Exists(staging); ++i)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        kill(getpid(), SIGINT);
    });
    auto t0 = std::chrono::steady_clock::now();
    CliResult r = Cli({"record", "--gpus", "2", "--out", dir, "--", "sleep", "60"});
    interrupter.join();
    EXPECT_EQ(r.code, 128 + SIGINT);
    EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
    EXPECT_FALSE(Exists(staging));
}

TEST(ProfileTable, RecordWritesATemplateThatReproducesTheRoofline)
{
    if (!ShimAvailable())
    {
        GTEST_SKIP() << "shim libraries or shim_train not built (GPUSIM_BUILD_SHIM=OFF?)";
    }
    const std::string tmp = TempDir();
    const std::string dir = tmp + "/trace";
    const std::string table = tmp + "/kernels.json";
    CliResult rec = Cli({"record", "--gpus", "2", "--out", dir, "--kernel-table-template", table,
                         "--", kTrain, "--iters", "2"});
    ASSERT_EQ(rec.code, 0) << rec.err;
    EXPECT_NE(rec.out.find("# kernel table template: " + table), std::string::npos) << rec.out;
    KernelTable t = LoadKernelTable(table);
    // layernorm and sgd_update launches, five GEMM shapes (cuBLAS and cuBLASLt).
    EXPECT_EQ(t.byLaunch.size(), 2u);
    EXPECT_EQ(t.byNamedGemm.size(), 5u);
    EXPECT_EQ(t.gpu, "h100-sxm");
    const std::string text = Slurp(table);
    EXPECT_NE(text.find("\"estimated\":true"), std::string::npos);
    EXPECT_NE(text.find("\"launches\":4"), std::string::npos) << text; // 2 ranks x 2 iterations

    CliResult roof = Cli({"simulate", dir, "--cost-model", "roofline"});
    ASSERT_EQ(roof.code, 0) << roof.err;
    CliResult tab = Cli({"simulate", dir, "--kernel-table", table});
    ASSERT_EQ(tab.code, 0) << tab.err;
    EXPECT_NE(tab.out.find("# kernel table: 28 of 28 kernel launches measured"),
              std::string::npos)
        << tab.out;
    auto endLine = [](const std::string& out) { return out.substr(out.find("# end of")); };
    EXPECT_EQ(endLine(roof.out), endLine(tab.out));
}

TEST(QuerySyncs, ReaderChecksTheField)
{
    const std::string dir = TempDir();
    WriteText(dir + "/r.jsonl", "{\"op\":\"stream_sync\",\"stream\":1,\"query\":1}\n");
    try
    {
        ReadRankTrace(dir + "/r.jsonl", 0);
        ADD_FAILURE() << "accepted a non-boolean query";
    }
    catch (const TraceFormatError& e)
    {
        EXPECT_EQ(e.Line(), 1u);
        EXPECT_NE(e.Reason().find("'query' must be true or false"), std::string::npos) << e.what();
    }
    // Absent means a synchronize call; on other kinds the field is ignored (unknown field).
    WriteText(dir + "/r.jsonl", "{\"op\":\"event_sync\",\"event\":3}\n"
                                "{\"op\":\"device_sync\",\"query\":true}\n");
    RankTrace r = ReadRankTrace(dir + "/r.jsonl", 0);
    EXPECT_FALSE(r.ops[0].query);
    EXPECT_FALSE(r.ops[1].query);
}
