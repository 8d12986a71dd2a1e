// Chakra execution traces: reading ASTRA-sim's published ET files (when present: they are not
// in the repository, see test/data/chakra/README.md), DAG -> Op IR timing derived by hand,
// Op IR -> Chakra -> Op IR round trips, malformed files and the `gpusim chakra` CLI (on ET
// files the tests write themselves).
#include "flat-run-test-util.h"
#include "flow-test-topology.h"
#include "ns3/chakra-trace.h"
#include "ns3/cluster-spec.h"
#include "ns3/double.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/gpusim-commands.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include "test-temp-dir.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

using namespace ns3;
using gpusim_test::FlatSpec;
using namespace ns3::gpusim;

namespace
{

constexpr double kMiB = 1024.0 * 1024;

/// Where ASTRA-sim's published ET files are (test/data/chakra/README.md lists them): the
/// directory $GPUSIM_CHAKRA_DIR, else ../shared/data/chakra. They are not in the repository.
std::string
AstraSimDir()
{
    const char* env = std::getenv("GPUSIM_CHAKRA_DIR");
    return env && *env ? std::string(env) : std::string(GPUSIM_SHARED_DIR "/data/chakra");
}

/// "" if PREFIX.0.et ... PREFIX.(ranks-1).et all exist, else the first one missing.
std::string
MissingRankFile(const std::string& prefix, uint32_t ranks)
{
    for (uint32_t r = 0; r < ranks; ++r)
    {
        const std::string f = prefix + "." + std::to_string(r) + ".et";
        if (!std::filesystem::is_regular_file(f))
        {
            return f;
        }
    }
    return "";
}

/// Why a test reading ASTRA-sim's traces (prefix under AstraSimDir(), rank count) must skip:
/// "" if every rank file is there.
std::string
AstraSimFilesMissing(const std::vector<std::pair<std::string, uint32_t>>& traces)
{
    for (const auto& [prefix, ranks] : traces)
    {
        const std::string missing = MissingRankFile(AstraSimDir() + "/" + prefix, ranks);
        if (!missing.empty())
        {
            return "ASTRA-sim's published Chakra files are not here (" + missing +
                   " is missing); put them in ../shared/data/chakra or name their directory "
                   "in GPUSIM_CHAKRA_DIR (test/data/chakra/README.md)";
        }
    }
    return "";
}

struct SimRun
{
    Ptr<GpuWorkload> w;
    RunReport report;
    double EndUs() const { return report.endTime.GetNanoSeconds() / 1e3; }
};

/// Simulates a job on FlatSpec with ring collectives at ideal efficiency (closed forms hold).
SimRun
Simulate(const JobTrace& job)
{
    SimRun r;
    r.w = gpusim_test::RunRingOnFlatSpec(job);
    r.report = r.w->Check();
    return r;
}

ChakraNode
Comp(uint64_t id, const std::string& name, uint64_t us, std::vector<uint64_t> deps = {},
     bool cpu = false)
{
    ChakraNode n;
    n.id = id;
    n.name = name;
    n.type = ChakraNodeType::Comp;
    n.durationUs = us;
    n.dataDeps = std::move(deps);
    n.isCpuOp = cpu;
    return n;
}

ChakraNode
Coll(uint64_t id, ChakraCollType t, uint64_t bytes, std::vector<uint64_t> deps = {})
{
    ChakraNode n;
    n.id = id;
    n.name = ToString(t);
    n.type = ChakraNodeType::CommColl;
    n.commType = static_cast<int32_t>(t);
    n.commSize = bytes;
    n.dataDeps = std::move(deps);
    return n;
}

/// The same DAG on every rank.
ChakraJob
Uniform(uint32_t ranks, const std::vector<ChakraNode>& nodes)
{
    ChakraJob job;
    for (uint32_t r = 0; r < ranks; ++r)
    {
        ChakraRankFile f;
        f.file = "rank" + std::to_string(r);
        f.nodes = nodes;
        job.ranks.push_back(f);
    }
    return job;
}

/// An MSCCL-style ring AllReduce of `bytes` on n ranks as point-to-point nodes, the shape of
/// ASTRA-sim's custom ring example: n-1 reduce-scatter steps (send a chunk to rank+1, receive
/// one from rank-1, reduce it in a 7 us COMP node), then n-1 all-gather steps (send, receive);
/// each node depends on the one before. Per rank: 2(n-1) sends and 2(n-1) receives of
/// bytes / n, n-1 COMP nodes, so 5(n-1) nodes and 5(n-1)-1 dependencies.
ChakraJob
RingAllReduceP2p(uint32_t n, uint64_t bytes)
{
    ChakraJob job;
    for (uint32_t r = 0; r < n; ++r)
    {
        ChakraRankFile f;
        f.file = "ring" + std::to_string(r);
        auto add = [&f](ChakraNode c) {
            c.id = f.nodes.size();
            if (c.id > 0)
            {
                c.dataDeps = {c.id - 1};
            }
            f.nodes.push_back(c);
        };
        for (uint32_t step = 0; step < 2 * (n - 1); ++step)
        {
            ChakraNode send;
            send.name = "send_step" + std::to_string(step);
            send.type = ChakraNodeType::CommSend;
            send.commSize = bytes / n;
            send.commSrc = r;
            send.commDst = (r + 1) % n;
            add(send);
            ChakraNode recv = send;
            recv.name = "recv_step" + std::to_string(step);
            recv.type = ChakraNodeType::CommRecv;
            recv.commSrc = (r + n - 1) % n;
            recv.commDst = r;
            add(recv);
            if (step < n - 1)
            {
                add(Comp(0, "reduce_step" + std::to_string(step), 7));
            }
        }
        job.ranks.push_back(f);
    }
    return job;
}

/// ASTRA-sim's all_gather microbenchmark in shape: on each of 4 ranks one ALL_GATHER node of
/// 1 MiB (per-rank input), id = rank, no dependencies.
ChakraJob
AllGatherMicrobenchmark()
{
    ChakraJob job;
    for (uint64_t r = 0; r < 4; ++r)
    {
        ChakraRankFile f;
        f.file = "all_gather" + std::to_string(r);
        f.nodes = {Coll(r, ChakraCollType::AllGather, 1048576)};
        f.nodes[0].name = "all_gather_4npus_1MB";
        job.ranks.push_back(f);
    }
    return job;
}

/// Reads `bytes` corrupted 400 seeded ways (flipped bytes, truncations, inserted junk) as
/// rank 0 of `job` (the other ranks unchanged) and converts the job: each try either works or
/// throws TraceFormatError with a message (anything else fails the test). Returns how many
/// were rejected.
int
RejectedCorruptions(const std::string& orig, ChakraJob job, const std::string& dir)
{
    std::mt19937 rng(12345);
    int rejected = 0;
    for (int k = 0; k < 400; ++k)
    {
        std::string b = orig;
        switch (k % 3)
        {
        case 0:
            for (int j = 0; j < 4; ++j)
            {
                b[rng() % b.size()] = static_cast<char>(rng());
            }
            break;
        case 1:
            b.resize(rng() % b.size());
            break;
        default:
            b.insert(rng() % b.size(), std::string(1 + rng() % 8, static_cast<char>(rng())));
        }
        const std::string file = dir + "/c.0.et";
        std::ofstream(file, std::ios::binary | std::ios::trunc) << b;
        try
        {
            job.ranks[0] = ReadChakraFile(file);
            ValidateJobTrace(ChakraToJobTrace(job));
        }
        catch (const TraceFormatError& e)
        {
            ++rejected;
            EXPECT_GT(std::string(e.what()).size(), 20u);
        }
    }
    return rejected;
}

std::string
FileBytes(const std::string& file)
{
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string>
OpLines(const JobTrace& job)
{
    std::vector<std::string> v;
    for (const auto& r : job.ranks)
    {
        for (const auto& op : r.ops)
        {
            v.push_back(std::to_string(r.rank) + " " + OpToJsonLine(op));
        }
    }
    return v;
}

/// The TraceFormatError message of `f()`, or "" if it did not throw one.
template <typename F>
std::string
ErrorOf(F f)
{
    try
    {
        f();
    }
    catch (const TraceFormatError& e)
    {
        return e.what();
    }
    return "";
}

class Chakra : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(Chakra, ReadsAstraSimMicrobenchmarks)
{
    // examples/workload/microbenchmarks/*/4npus_1MB of astra-sim (MIT). Expected values read
    // with `protoc --decode_raw` on each message: one COMM_COLL_NODE (type 7),
    // id = rank, comm_type 0 / 2 / 7 / 6, comm_size 1048576, no dependencies, version "0.0.4".
    const std::string skip = AstraSimFilesMissing(
        {{"all_reduce", 4}, {"all_gather", 4}, {"reduce_scatter", 4}, {"all_to_all", 4}});
    if (!skip.empty())
    {
        GTEST_SKIP() << skip;
    }
    const std::vector<std::pair<std::string, ChakraCollType>> cases = {
        {"all_reduce", ChakraCollType::AllReduce},
        {"all_gather", ChakraCollType::AllGather},
        {"reduce_scatter", ChakraCollType::ReduceScatter},
        {"all_to_all", ChakraCollType::AllToAll}};
    for (const auto& [name, type] : cases)
    {
        ChakraJob job = ReadChakraJob(AstraSimDir() + "/" + name);
        ASSERT_EQ(job.ranks.size(), 4u) << name;
        for (uint64_t r = 0; r < 4; ++r)
        {
            const ChakraRankFile& f = job.ranks[r];
            EXPECT_EQ(f.version, "0.0.4");
            ASSERT_EQ(f.nodes.size(), 1u);
            const ChakraNode& n = f.nodes[0];
            EXPECT_EQ(n.id, r); // rank r's node has id r (decode_raw: field 1 absent on rank 0)
            EXPECT_EQ(n.name, name + "_4npus_1MB");
            EXPECT_EQ(n.type, ChakraNodeType::CommColl);
            EXPECT_EQ(n.commType, static_cast<int32_t>(type));
            EXPECT_EQ(n.commSize, 1048576u);
            EXPECT_FALSE(n.isCpuOp);
            EXPECT_TRUE(n.dataDeps.empty() && n.ctrlDeps.empty());
        }
        JobTrace ir = ChakraToJobTrace(job);
        ValidateJobTrace(ir);
        const Op* coll = nullptr;
        for (const Op& op : ir.ranks[2].ops)
        {
            coll = op.kind == OpKind::Collective ? &op : coll;
        }
        ASSERT_NE(coll, nullptr);
        EXPECT_EQ(coll->comm, "world");
        // AllGather: Chakra's comm_size is the per-rank input, the Op IR counts the output.
        EXPECT_EQ(coll->bytes, type == ChakraCollType::AllGather ? 4u << 20 : 1u << 20) << name;
    }
}

TEST_F(Chakra, AstraSimAllReduceSimulatesLikeTheSameOpIrWorkload)
{
    // The Chakra workload and the same AllReduce written directly as Op IR take the same time,
    // and that time is the ring closed form 2 (n-1)/n S / B plus link latencies.
    if (const std::string skip = AstraSimFilesMissing({{"all_reduce", 4}}); !skip.empty())
    {
        GTEST_SKIP() << skip;
    }
    SimRun chakra = Simulate(ImportChakra(AstraSimDir() + "/all_reduce"));
    ASSERT_TRUE(chakra.report.completed) << chakra.report.stuck;
    const double tChakra = chakra.EndUs();
    Simulator::Destroy();
    JobBuilder b(4);
    b.AllRanks().CommInit("c").Collective(1, CollKind::AllReduce, "c", 1 << 20, DataType::U8);
    SimRun direct = Simulate(b.Build());
    ASSERT_TRUE(direct.report.completed);
    EXPECT_EQ(tChakra, direct.EndUs());
    const double ideal = 2.0 * 3 / 4 * kMiB / 12.5e9 * 1e6; // 125.8 us
    EXPECT_GT(tChakra, ideal);
    EXPECT_LT(tChakra, ideal * 1.5);
}

TEST_F(Chakra, ReadsAstraSimCustomRingAllReduce)
{
    // examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB (MIT): an MSCCL ring
    // AllReduce as point-to-point nodes. `protoc --decode_raw` on every message of ranks 0
    // and 5: 35 nodes = 14 COMM_SEND_NODE + 14 COMM_RECV_NODE + 7 COMP_NODE of 7 us, each
    // send/recv 131072 bytes (1 MiB / 8), 34 dependencies (one chain); rank 0 sends to 1 and
    // receives from 7, tag 0.
    const std::string skip = AstraSimFilesMissing({{"custom_ring/custom_allreduce", 8}});
    if (!skip.empty())
    {
        GTEST_SKIP() << skip;
    }
    ChakraJob job = ReadChakraJob(AstraSimDir() + "/custom_ring");
    ASSERT_EQ(job.ranks.size(), 8u);
    EXPECT_EQ(job.ranks[0].metadata.at("schema"), "1.0.2-chakra.0.0.4");
    for (uint32_t r : {0u, 5u})
    {
        int sends = 0, recvs = 0, comps = 0, deps = 0;
        for (const ChakraNode& n : job.ranks[r].nodes)
        {
            deps += n.dataDeps.size() + n.ctrlDeps.size();
            if (n.type == ChakraNodeType::CommSend)
            {
                ++sends;
                EXPECT_EQ(n.commSize, 131072u);
                EXPECT_EQ(n.commDst, static_cast<int32_t>((r + 1) % 8));
                EXPECT_EQ(n.commTag, 0);
            }
            else if (n.type == ChakraNodeType::CommRecv)
            {
                ++recvs;
                EXPECT_EQ(n.commSize, 131072u);
                EXPECT_EQ(n.commSrc, static_cast<int32_t>((r + 7) % 8));
            }
            else if (n.type == ChakraNodeType::Comp)
            {
                ++comps;
                EXPECT_EQ(n.durationUs, 7u);
            }
        }
        EXPECT_EQ(job.ranks[r].nodes.size(), 35u);
        EXPECT_EQ(sends, 14);
        EXPECT_EQ(recvs, 14);
        EXPECT_EQ(comps, 7);
        EXPECT_EQ(deps, 34);
    }
    // Chakra's send/recv are eager (ASTRA-sim): every rank sends before it receives, so the
    // ring runs; the same graph with NCCL's rendezvous semantics deadlocks, and the run says so.
    SimRun eager = Simulate(ChakraToJobTrace(job, ChakraP2p::Eager));
    ASSERT_TRUE(eager.report.completed) << eager.report.stuck;
    // Each rank's chain is 14 transfers of 128 KiB (10.5 us each at 12.5 GB/s) and 7 x 7 us
    // of reduction in sequence: at least 14 * 10.49 + 49 = 196 us.
    EXPECT_GT(eager.EndUs(), 14 * 131072 / 12.5e9 * 1e6 + 49);
    EXPECT_LT(eager.EndUs(), 2 * (14 * 131072 / 12.5e9 * 1e6 + 49) + 14 * 5);
    Simulator::Destroy();
    SimRun rendezvous = Simulate(ChakraToJobTrace(job, ChakraP2p::Rendezvous));
    EXPECT_FALSE(rendezvous.report.completed);
}

TEST_F(Chakra, TwoParallelComputeNodesThenAnAllReduce)
{
    // Per rank: A (1000 us) and B (3000 us) with no dependencies, then a 64 MiB AllReduce
    // depending on both. A and B run side by side, so the AllReduce starts at 3000 us and takes
    // the ring closed form 2 (n-1)/n S / B = 1.5 * 64 MiB / 12.5 GB/s = 8053 us on 4 ranks.
    ChakraJob job = Uniform(4, {Comp(10, "A", 1000), Comp(11, "B", 3000),
                                Coll(12, ChakraCollType::AllReduce, 64 << 20, {10, 11})});
    SimRun r = Simulate(ChakraToJobTrace(job));
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    const double expected = 3000 + 1.5 * 64 * kMiB / 12.5e9 * 1e6;
    EXPECT_NEAR(r.EndUs(), expected, 0.01 * expected); // serial A, B would be 1000 us more
    const CollectiveRecord& c = r.w->GetCollectives().at(0);
    EXPECT_EQ(c.FirstJoin(), MicroSeconds(3000));
}

TEST_F(Chakra, HostNodesRunOnHostThreadsAndGateDeviceNodes)
{
    // H1 (cpu, 500) -> K1 (gpu, 200) -> H2 (cpu, 50); K0 (gpu, 100) free; K2 (gpu, 300)
    // after H1 and after H3 (cpu, 700, free): K2 starts at 700, ends 1000. H2 ends at
    // 500 + 200 + 50 = 750. The rank ends at 1000; K0 is not delayed by any host node.
    ChakraJob job = Uniform(1, {Comp(1, "H1", 500, {}, true), Comp(2, "K1", 200, {1}),
                                Comp(3, "H2", 50, {2}, true), Comp(4, "K0", 100),
                                Comp(5, "H3", 700, {}, true), Comp(6, "K2", 300, {1, 5})});
    SimRun r = Simulate(ChakraToJobTrace(job));
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    std::map<std::string, std::pair<double, double>> span;
    for (const auto& a : r.w->GetActivities())
    {
        span[a.op->name] = {a.start.GetNanoSeconds() / 1e3, a.end.GetNanoSeconds() / 1e3};
    }
    EXPECT_EQ(span["K0"], std::make_pair(0.0, 100.0));
    EXPECT_EQ(span["K1"], std::make_pair(500.0, 700.0));
    EXPECT_EQ(span["K2"], std::make_pair(700.0, 1000.0));
    EXPECT_EQ(r.EndUs(), 1000.0);
}

TEST_F(Chakra, NodesWithoutADurationUseTheKernelCostModel)
{
    // H100 SXM datasheet numbers in the GPU spec: 989.5 TFLOP/s dense BF16, 3.35 TB/s HBM,
    // 64 GB/s PCIe; the cost model's defaults reach 70 % of peak FLOP/s and 80 % of HBM, and a
    // copy pays 1 us of setup. In a chain: F with num_ops = 989.5e12 * 0.7 * 1 ms -> 1000 us
    // (its tensor_size of 1.34 GB alone would be 500 us); M with tensor_size
    // 3.35e12 * 0.8 * 2 ms = 5.36 GB -> 2000 us; a MEM_LOAD of 64 MB -> 1 + 1000 us.
    ChakraNode f = Comp(1, "F", 0);
    f.numOps = 989.5e12 * 0.7 * 1e-3;
    f.tensorSize = 1340000000;
    ChakraNode m = Comp(2, "M", 0, {1});
    m.tensorSize = 5360000000;
    ChakraNode load;
    load.id = 3;
    load.name = "L";
    load.type = ChakraNodeType::MemLoad;
    load.tensorSize = 64000000;
    load.dataDeps = {2};
    SimRun r = Simulate(ChakraToJobTrace(Uniform(1, {f, m, load})));
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_NEAR(r.EndUs(), 1000 + 2000 + 1001, 0.01);
}

TEST_F(Chakra, MetadataNodesPassTheirDependenciesOn)
{
    // A (100) -> META -> B (50): B starts at 100.
    ChakraNode meta;
    meta.id = 2;
    meta.type = ChakraNodeType::Metadata;
    meta.dataDeps = {1};
    ChakraJob job = Uniform(1, {Comp(1, "A", 100), meta, Comp(3, "B", 50, {2})});
    SimRun r = Simulate(ChakraToJobTrace(job));
    ASSERT_TRUE(r.report.completed) << r.report.stuck;
    EXPECT_EQ(r.EndUs(), 150.0);
}

TEST_F(Chakra, OpIrToChakraToOpIrIsTheSameTrace)
{
    // A DAG with host nodes, parallel branches, a sub-group collective, send/recv and
    // cross-thread dependencies; its Op IR written as Chakra files and read back is identical.
    ChakraNode send;
    send.id = 7;
    send.name = "send";
    send.type = ChakraNodeType::CommSend;
    send.commSize = 4096;
    send.dataDeps = {5};
    ChakraNode recv = send;
    recv.name = "recv";
    recv.type = ChakraNodeType::CommRecv;
    ChakraJob job;
    for (uint32_t r = 0; r < 4; ++r)
    {
        ChakraNode s = send, v = recv;
        s.commSrc = r;
        s.commDst = (r + 1) % 4;
        v.id = 8;
        v.commSrc = (r + 3) % 4;
        v.commDst = r;
        ChakraNode sub = Coll(6, ChakraCollType::AllGather, 1 << 20, {3});
        sub.pgName = r < 2 ? "5" : "6";
        ChakraRankFile f;
        f.file = "r" + std::to_string(r);
        f.nodes = {Comp(1, "H", 30, {}, true),
                   Comp(2, "K", 100, {1}),
                   Comp(3, "L", 20),
                   Coll(4, ChakraCollType::AllReduce, 1 << 22, {2, 3}),
                   Comp(5, "H2", 10, {4, 2}, true),
                   sub,
                   s,
                   v,
                   Comp(9, "tail", 5, {6, 7, 8})};
        job.ranks.push_back(f);
    }
    const JobTrace x0 = ChakraToJobTrace(job);
    ValidateJobTrace(x0);
    TestTempDir tmp("chakra-roundtrip");
    WriteChakraJob(JobTraceToChakra(x0), tmp.Path() + "/job");
    EXPECT_TRUE(std::filesystem::exists(tmp.Path() + "/job.3.et"));
    EXPECT_TRUE(std::filesystem::exists(tmp.Path() + "/job.comm_groups.json"));
    const JobTrace x1 = ImportChakra(tmp.Path() + "/job");
    EXPECT_EQ(OpLines(x1), OpLines(x0));
    // And once more through the files: a fixed point.
    WriteChakraJob(JobTraceToChakra(x1), tmp.Path() + "/again");
    EXPECT_EQ(OpLines(ImportChakra(tmp.Path() + "/again")), OpLines(x0));
}

TEST_F(Chakra, OpIrWorkloadSimulatesTheSameAfterAChakraRoundTrip)
{
    // A trace in the engine's own terms (host time, two streams, events, syncs, a sub-group
    // collective, send/recv, a host thread signalling another, a grouped send/recv exchange)
    // keeps its simulated time when written as Chakra and read back.
    JobBuilder b(4);
    b.AllRanks().CommInit("dp").CreateStream(1, true).CreateStream(2, true);
    b.Rank(0).CommInit("pp", 2, 0).Rank(1).CommInit("pp", 2, 1).AllRanks();
    b.Host(15).Kernel(1, "fwd", 400).RecordEvent(1, 1).WaitEvent(2, 1);
    b.AllReduce(2, "dp", 16 << 20).Host(5).Kernel(1, "bwd", 800.5).SyncStream(2);
    b.Rank(0).Send(1, "pp", 1, 8 << 20).Rank(1).Recv(1, "pp", 0, 8 << 20).AllRanks();
    b.Kernel(1, "opt", 120).SyncDevice().Host(40);
    b.Thread(1).Host(70).Signal(9).Thread(0).Wait(9).Kernel(2, "late", 30).SyncDevice();
    // A grouped exchange (deadlocks unless both sides launch together, test
    // GroupedSendRecvExchangeDoesNotDeadlock), then a kernel after it.
    b.Rank(2).CommInit("x", 2, 0).Rank(3).CommInit("x", 2, 1);
    b.Rank(2).Send(1, "x", 1, 4 << 20, 7).Recv(1, "x", 1, 4 << 20, 7).Kernel(1, "after", 10);
    b.Rank(3).Send(1, "x", 0, 4 << 20, 7).Recv(1, "x", 0, 4 << 20, 7).Kernel(1, "after", 10);
    b.AllRanks().SyncDevice();
    const JobTrace original = b.Build();
    ValidateJobTrace(original);
    SimRun a = Simulate(original);
    ASSERT_TRUE(a.report.completed) << a.report.stuck;
    const Time tA = a.report.endTime;
    Simulator::Destroy();
    const ChakraJob ch = JobTraceToChakra(original);
    EXPECT_EQ(ch.ranks[0].metadata.at("p2p"), "rendezvous"); // the Op IR's (NCCL) semantics
    TestTempDir tmp("chakra-time");
    WriteChakraJob(ch, tmp.Path() + "/w");
    const JobTrace back = ImportChakra(tmp.Path() + "/w");
    ValidateJobTrace(back);
    SimRun c = Simulate(back);
    ASSERT_TRUE(c.report.completed) << c.report.stuck;
    EXPECT_EQ(c.report.endTime, tA);
}

TEST_F(Chakra, WriterBytesAreTheChakraWireFormat)
{
    // Encoded by hand from the protobuf wire format and the schema's field numbers:
    // GlobalMetadata {version(1) "0.0.4"}, then Node {id(1) 1, name(2) "a", type(3) COMP_NODE
    // = 4, data_deps(5) packed [0], duration_micros(7) 7, attr(10) {name(1) "is_cpu_op",
    // bool_val(27) false}, attr {name "num_ops", int64_val(9) 0}, attr {name "tensor_size",
    // uint64_val(13) 0}}, each behind its varint length. The is_cpu_op bytes are the ones in
    // ASTRA-sim's own files ("R\x0e\n\tis_cpu_op\xd8\x01\x00"); a compute node always carries
    // num_ops and tensor_size, which ASTRA-sim's roofline reads (issue 23).
    const std::string meta = std::string("\x07\x0a\x05" "0.0.4", 8);
    const std::string attr = std::string("\x0a\x09" "is_cpu_op" "\xd8\x01\x00", 14);
    const std::string numOps = std::string("\x0a\x07" "num_ops" "\x48\x00", 11);
    const std::string tensorSize = std::string("\x0a\x0b" "tensor_size" "\x68\x00", 15);
    const std::string node = std::string("\x08\x01\x12\x01" "a" "\x18\x04\x2a\x01\x00\x38\x07", 12) +
                             "\x52\x0e" + attr + "\x52\x0b" + numOps + "\x52\x0f" + tensorSize;
    ASSERT_EQ(node.size(), 58u);
    const std::string expected = meta + "\x3a" + node;
    TestTempDir tmp("chakra-bytes");
    ChakraRankFile f;
    f.nodes = {Comp(1, "a", 7, {0})};
    WriteChakraFile(f, tmp.Path() + "/w.0.et");
    std::ifstream in(tmp.Path() + "/w.0.et", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes, expected);
}

TEST_F(Chakra, ExportedNodesCarryWhatAstraSimReads)
{
    // ASTRA-sim 2.0's workload layer reads, per node type (Workload::issue_comp with its
    // roofline, issue_comm, issue_dep_free_node; ETFeederNode throws "Attribute X not found"):
    //   COMP_NODE: is_cpu_op, num_ops, tensor_size (num_ops > 0 wherever tensor_size > 0, or
    //              the roofline divides 0 by 0)
    //   COMM_COLL_NODE: is_cpu_op, comm_type, comm_size
    //   COMM_SEND/RECV_NODE: is_cpu_op, comm_src, comm_dst, comm_tag, comm_size
    // A generated iteration (GEMMs, memory-bound kernels, collectives, pipeline send/recv)
    // exported through JobTraceToChakra has all of them on every node.
    JobBuilder b(2);
    b.AllRanks().CommInit("dp").CreateStream(1, true);
    b.Rank(0).CommInit("pp", 2, 0).Rank(1).CommInit("pp", 2, 1).AllRanks();
    b.Kernel(1, "gemm", 100).AllReduce(1, "dp", 1 << 20);
    b.Rank(0).Send(1, "pp", 1, 1 << 20).Rank(1).Recv(1, "pp", 0, 1 << 20).AllRanks();
    b.SyncDevice();
    JobTrace job = b.Build();
    for (auto& rank : job.ranks)
    {
        for (auto& op : rank.ops)
        {
            if (op.kind == OpKind::Kernel)
            {
                op.durUs = -1; // priced from its bytes: a memory-bound kernel
                op.memBytes = 64 << 20;
            }
        }
    }
    const ChakraJob ch = JobTraceToChakra(job);
    TestTempDir tmp("chakra-attrs");
    WriteChakraJob(ch, tmp.Path() + "/w");
    size_t comp = 0, coll = 0, p2p = 0;
    for (uint32_t r = 0; r < 2; ++r)
    {
        const ChakraRankFile f = ReadChakraFile(tmp.Path() + "/w." + std::to_string(r) + ".et");
        for (const ChakraNode& n : f.nodes)
        {
            SCOPED_TRACE(n.name);
            std::set<std::string> want = {"is_cpu_op"};
            switch (n.type)
            {
            case ChakraNodeType::Comp:
                want.insert({"num_ops", "tensor_size"});
                ++comp;
                if (n.tensorSize > 0)
                {
                    EXPECT_GT(n.numOps, 0.0);
                }
                break;
            case ChakraNodeType::CommColl:
                want.insert({"comm_type", "comm_size"});
                ++coll;
                break;
            case ChakraNodeType::CommSend:
            case ChakraNodeType::CommRecv:
                want.insert({"comm_src", "comm_dst", "comm_tag", "comm_size"});
                ++p2p;
                break;
            default:
                break;
            }
            for (const std::string& a : want)
            {
                EXPECT_NE(std::find(n.attrNames.begin(), n.attrNames.end(), a),
                          n.attrNames.end())
                    << a;
            }
        }
    }
    EXPECT_GT(comp, 0u);
    EXPECT_GT(coll, 0u);
    EXPECT_EQ(p2p, 2u);
}

TEST_F(Chakra, CommGroupFileSetsMembersAndTheirOrder)
{
    // ASTRA-sim's comm-group file: group "3" = ranks [2, 0]; rank 1 is outside it. Without the
    // file the members would be inferred from pg_name use in rank order ([0, 2]).
    TestTempDir tmp("chakra-groups");
    ChakraNode c = Coll(1, ChakraCollType::AllReduce, 1 << 20);
    c.pgName = "3";
    ChakraJob job = Uniform(3, {c});
    job.ranks[1].nodes = {Comp(1, "idle", 5)};
    WriteChakraJob(job, tmp.Path() + "/g");
    std::ofstream(tmp.Path() + "/groups.json") << "{\"3\": [2, 0]}";
    const JobTrace ir = ImportChakra(tmp.Path() + "/g", {tmp.Path() + "/groups.json"});
    ValidateJobTrace(ir);
    auto init = [&](uint32_t r) {
        for (const Op& op : ir.ranks[r].ops)
        {
            if (op.kind == OpKind::CommInit && op.comm == "pg:3")
            {
                return op.commRank;
            }
        }
        return -1;
    };
    EXPECT_EQ(init(2), 0);
    EXPECT_EQ(init(0), 1);
    EXPECT_EQ(init(1), -1);
    const JobTrace inferred = ImportChakra(tmp.Path() + "/g");
    EXPECT_EQ(inferred.ranks[0].ops[0].commRank, 0);
    // PyTorch's process-group table in a METADATA node (as Chakra's PyTorch converter writes
    // it and ASTRA-sim reads it): group "3" = [2, 0] there too; "0" with no ranks = all.
    ChakraNode pg;
    pg.id = 0;
    pg.name = "## process_group:init ##";
    pg.type = ChakraNodeType::Metadata;
    pg.inputsValues = "['[{\"pg_name\": \"0\", \"ranks\": []}, "
                      "{\"pg_name\": \"3\", \"pg_desc\": \"tp\", \"ranks\": [2, 0]}]']";
    for (auto& f : job.ranks)
    {
        f.nodes.insert(f.nodes.begin(), pg);
    }
    WriteChakraJob(job, tmp.Path() + "/t/g");
    const ChakraJob withTable = ReadChakraJob(tmp.Path() + "/t/g");
    EXPECT_EQ(withTable.commGroups.at("3"), (std::vector<uint32_t>{2, 0}));
    EXPECT_EQ(withTable.commGroups.at("0"), (std::vector<uint32_t>{0, 1, 2}));
    const JobTrace fromTable = ChakraToJobTrace(withTable);
    EXPECT_EQ(OpLines(fromTable), OpLines(ir));
    // A group naming a rank the job does not have.
    std::ofstream(tmp.Path() + "/bad.json") << "{\"3\": [0, 9]}";
    const std::string e =
        ErrorOf([&] { ImportChakra(tmp.Path() + "/g", {tmp.Path() + "/bad.json"}); });
    EXPECT_NE(e.find("group '3' names a rank outside 0..2"), std::string::npos) << e;
}

TEST_F(Chakra, MalformedFilesAreReportedWithFileNodeAndOffset)
{
    TestTempDir tmp("chakra-bad");
    const std::string good = tmp.Path() + "/good.0.et";
    WriteChakraFile(Uniform(1, {Comp(1, "A", 10), Comp(2, "B", 10, {1})}).ranks[0], good);
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto write = [&](const std::string& name, const std::string& b) {
        std::ofstream(tmp.Path() + "/" + name, std::ios::binary) << b;
        return tmp.Path() + "/" + name;
    };
    // Cut inside the last node: its length prefix promises more than is left.
    std::string e = ErrorOf([&] { ReadChakraFile(write("cut.0.et", bytes.substr(0, bytes.size() - 3))); });
    EXPECT_NE(e.find("cut.0.et"), std::string::npos) << e;
    EXPECT_NE(e.find("node 1 at byte offset"), std::string::npos) << e;
    EXPECT_NE(e.find("runs past the end"), std::string::npos) << e;
    // gzip-compressed files (Chakra's protoio reads them too) read the same.
    {
        gzFile z = gzopen((tmp.Path() + "/zipped.0.et").c_str(), "wb");
        gzwrite(z, bytes.data(), static_cast<unsigned>(bytes.size()));
        gzclose(z);
        const ChakraRankFile zf = ReadChakraFile(tmp.Path() + "/zipped.0.et");
        ASSERT_EQ(zf.nodes.size(), 2u);
        EXPECT_EQ(zf.nodes[1].dataDeps, std::vector<uint64_t>{1});
    }
    e = ErrorOf([&] { ReadChakraFile(write("empty.0.et", "")); });
    EXPECT_NE(e.find("empty file"), std::string::npos) << e;
    e = ErrorOf([&] { ReadChakraFile(write("junk.0.et", bytes + std::string("\x05\xff\xff\xff\xff\xff", 6))); });
    EXPECT_NE(e.find("node 2"), std::string::npos) << e;
    EXPECT_NE(e.find("not a valid Chakra Node"), std::string::npos) << e;

    e = ErrorOf([] { ChakraToJobTrace(Uniform(1, {Comp(1, "A", 1, {7})})); });
    EXPECT_NE(e.find("depends on unknown node id 7"), std::string::npos) << e;
    e = ErrorOf([] { ChakraToJobTrace(Uniform(1, {Comp(1, "A", 1, {2}), Comp(2, "B", 1, {1})})); });
    EXPECT_NE(e.find("dependency cycle"), std::string::npos) << e;
    e = ErrorOf([] { ChakraToJobTrace(Uniform(1, {Comp(1, "A", 1), Comp(1, "B", 1)})); });
    EXPECT_NE(e.find("duplicate node id"), std::string::npos) << e;
    e = ErrorOf([] { ChakraToJobTrace(Uniform(2, {Coll(1, ChakraCollType::Gather, 8)})); });
    EXPECT_NE(e.find("GATHER is not supported"), std::string::npos) << e;
    ChakraNode s;
    s.id = 1;
    s.type = ChakraNodeType::CommSend;
    s.commDst = 5;
    e = ErrorOf([&] { ChakraToJobTrace(Uniform(2, {s})); });
    EXPECT_NE(e.find("comm_dst is 5"), std::string::npos) << e;
    // Missing rank file and several traces in one directory.
    std::filesystem::copy_file(good, tmp.Path() + "/gap.0.et");
    std::filesystem::copy_file(good, tmp.Path() + "/gap.2.et");
    e = ErrorOf([&] { FindChakraFiles(tmp.Path() + "/gap"); });
    EXPECT_NE(e.find("rank file 1 is missing"), std::string::npos) << e;
    std::filesystem::create_directory(tmp.Path() + "/two");
    std::filesystem::copy_file(good, tmp.Path() + "/two/a.0.et");
    std::filesystem::copy_file(good, tmp.Path() + "/two/b.0.et");
    e = ErrorOf([&] { FindChakraFiles(tmp.Path() + "/two"); });
    EXPECT_NE(e.find("several Chakra traces"), std::string::npos) << e;
}

TEST_F(Chakra, CorruptedFilesGiveErrorsNeverCrashes)
{
    // 400 seeded corruptions of rank 0's ET file of the 8-rank ring (RingAllReduceP2p: 35
    // nodes), as gpusim's writer wrote it. Truncations cut a message (or leave a whole-message
    // prefix, which is a valid file of fewer nodes); most flips and insertions break a length
    // or a field (or a name's UTF-8); a few only change a value.
    TestTempDir tmp("chakra-corrupt");
    const ChakraJob ring = RingAllReduceP2p(8, 1 << 20);
    WriteChakraJob(ring, tmp.Path() + "/ring");
    const std::string orig = FileBytes(tmp.Path() + "/ring.0.et");
    // Uncorrupted, the file reads back whole and the job converts: rejections are the
    // corruptions' doing.
    ASSERT_EQ(ReadChakraFile(tmp.Path() + "/ring.0.et").nodes.size(), 35u);
    ValidateJobTrace(ChakraToJobTrace(ReadChakraJob(tmp.Path() + "/ring")));
    int rejected = RejectedCorruptions(orig, ring, tmp.Path());
    EXPECT_GT(rejected, 150) << rejected;
    EXPECT_LT(rejected, 400) << rejected;
    // The same on ASTRA-sim's own file (custom ring rank 0: 29,581 bytes, many more attributes
    // than gpusim writes), when it is here.
    const std::string published = AstraSimDir() + "/custom_ring";
    if (MissingRankFile(published + "/custom_allreduce", 8).empty())
    {
        const std::string real = FileBytes(published + "/custom_allreduce.0.et");
        ASSERT_EQ(real.size(), 29581u);
        rejected = RejectedCorruptions(real, ReadChakraJob(published), tmp.Path());
        EXPECT_GT(rejected, 150) << rejected;
        EXPECT_LT(rejected, 400) << rejected;
    }
}

TEST_F(Chakra, CliImportExportAndSimulateDirectly)
{
    // Inputs written by gpusim's writer: the all_gather microbenchmark's shape (4 ranks, one
    // 1 MiB ALL_GATHER each) and the 8-rank send/recv ring (35 nodes per rank: 7 COMP, 14
    // sends, 14 receives).
    TestTempDir tmp("chakra-cli");
    const std::string in = tmp.Path() + "/in";
    WriteChakraJob(AllGatherMicrobenchmark(), in + "/all_gather");
    WriteChakraJob(RingAllReduceP2p(8, 1 << 20), in + "/custom_ring/custom_allreduce");
    std::ostringstream out, err;
    ASSERT_EQ(GpusimMain({"chakra", "import", in + "/all_gather", "--out", tmp.Path() + "/ag"},
                         out, err),
              0)
        << err.str();
    EXPECT_TRUE(std::filesystem::exists(tmp.Path() + "/ag/manifest.json"));
    ASSERT_EQ(GpusimMain({"chakra", "export", tmp.Path() + "/ag", "--out", tmp.Path() + "/x/ag"},
                         out, err),
              0)
        << err.str();
    ChakraJob back = ReadChakraJob(tmp.Path() + "/x/ag");
    ASSERT_EQ(back.ranks.size(), 4u);
    EXPECT_EQ(back.ranks[1].nodes.at(0).commSize, 1048576u); // per-rank input again
    std::ostringstream info;
    ASSERT_EQ(GpusimMain({"chakra", "info", in + "/custom_ring"}, info, err), 0);
    EXPECT_NE(info.str().find("     35     7    0     0    14    14"), std::string::npos)
        << info.str();
    // simulate reads the Chakra prefix itself: same end time as the imported directory.
    auto endLine = [](const std::string& s) { return s.substr(s.find("# end of simulation")); };
    std::ostringstream a, b;
    ASSERT_EQ(GpusimMain({"simulate", in + "/all_gather", "--servers", "4",
                          "--gpus-per-server", "1"},
                         a, err),
              0)
        << err.str();
    Simulator::Destroy();
    ASSERT_EQ(GpusimMain({"simulate", tmp.Path() + "/ag", "--servers", "4", "--gpus-per-server",
                          "1"},
                         b, err),
              0)
        << err.str();
    EXPECT_EQ(endLine(a.str()), endLine(b.str()));
    EXPECT_EQ(GpusimMain({"chakra", "import", in + "/nothing", "--out", tmp.Path() + "/n"},
                         out, err),
              2);
}
