// `gpusim replay`: Kineto traces through the ns-3 engine, compared with the recorded
// ProfilerStep lengths; what-ifs (dependency ablation, kernel scaling, simulated and
// rescaled collectives); outputs (JSON, simulated Kineto trace); bad input. The fixture tests
// (test/data, expected values derived by hand in test/data/README.md) always run; the tests on
// the real traces of ../shared skip when those are absent.
#include "kineto-test-data.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/gpusim-commands.h"
#include "ns3/kineto-quick-replay.h"
#include "ns3/kineto-trace.h"
#include "ns3/replay-command.h"
#include "ns3/string.h"
#include "test-temp-dir.h"

#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>
#include <simdjson.h>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3::gpusim;
using namespace kineto_test;
namespace fs = std::filesystem;

namespace
{

const std::string kTraceDir = kSharedDir;
const std::string kNcclData = kTraceDir + "hta_nccl_parser_config__nccl_data.json.gz";
const std::string kH100 = kTraceDir + "tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
const std::string kMi300 = kTraceDir + "tracelens_mi300__resnet_act_checkpoint.json.gz";
const std::string kEventSync =
    kTraceDir + "hta_critical_path__cuda_event_sync__event_sync_trace.json.gz";
const std::string kSampled0 = kTraceDir + "hta_trace_filter__sampled_rank-0.json.gz";
const std::string kSampled1 = kTraceDir + "hta_trace_filter__sampled_rank-1.json.gz";

/// Every shared trace with ProfilerStep annotations.
const std::vector<std::string> kProfilerStepTraces = {
    kNcclData, kEventSync, kSampled0, kSampled1, kH100, kMi300,
};

constexpr double kMiB = 1024.0 * 1024;
constexpr double kNicBytesPerUs = 100e9 / 8 / 1e6; //!< a 100 Gb/s NIC, bytes per microsecond

/// n single-GPU servers with one 100 Gb/s NIC each on one switch: collectives are bound by
/// the NIC, so their ring and all-to-all times have closed forms.
std::vector<std::string>
FlatCluster(uint32_t n)
{
    return {"--servers",         std::to_string(n), "--gpus-per-server", "1",
            "--nics-per-server", "1",               "--nic-gbps",        "100",
            "--fabric",          "single-switch"};
}

/// NCCL on an ideal wire (no protocol latencies, full bandwidth) and always the ring, for the
/// closed-form checks; `gpusim replay` has no option for these, so they are set as ns-3
/// attribute defaults for the scope of one test.
class IdealRingNccl
{
  public:
    IdealRingNccl()
    {
        ns3::Config::SetDefault("ns3::NcclWorld::Efficiency", ns3::DoubleValue(1.0));
        ns3::Config::SetDefault("ns3::NcclWorld::Algorithm", ns3::StringValue("ring"));
    }

    ~IdealRingNccl()
    {
        ns3::Config::SetDefault("ns3::NcclWorld::Efficiency", ns3::DoubleValue(0.0));
        ns3::Config::SetDefault("ns3::NcclWorld::Algorithm", ns3::StringValue("auto"));
    }
};

/// Closed forms on FlatCluster(n), microseconds.
double
RingAllReduceUs(double bytes, uint32_t n)
{
    return 2.0 * (n - 1) / n * bytes / kNicBytesPerUs;
}

double
RingAllGatherUs(double bytes, uint32_t n) // also ReduceScatter; `bytes` = whole buffer
{
    return double(n - 1) / n * bytes / kNicBytesPerUs;
}

double
AllToAllUs(double bytes, uint32_t n) // each rank sends (n-1)/n of its buffer through its NIC
{
    return double(n - 1) / n * bytes / kNicBytesPerUs;
}

std::string
ReadWhole(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// A scratch directory for the whole test binary run (removed at exit).
TestTempDir&
Scratch()
{
    static TestTempDir dir("gpusim-replay-test");
    return dir;
}

struct ReplayRun
{
    int code = -1;
    std::string out;
    std::string err;
    std::string json; //!< content of --json (empty when not written)
};

/// Runs `gpusim replay` with --json into a scratch file and returns the JSON text too.
ReplayRun
Replay(std::vector<std::string> args)
{
    const std::string json = Scratch().Unique("replay.json");
    args.insert(args.begin(), "replay");
    args.push_back("--json");
    args.push_back(json);
    std::ostringstream out, err;
    ReplayRun r;
    r.code = GpusimMain(args, out, err);
    r.out = out.str();
    r.err = err.str();
    if (fs::exists(json))
    {
        r.json = ReadWhole(json);
    }
    return r;
}

/// args + more.
std::vector<std::string>
With(std::vector<std::string> args, const std::vector<std::string>& more)
{
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

struct IterationResult
{
    uint64_t rank = 0;
    std::string name;
    double recordedUs = -1;
    double simulatedUs = 0;
    double errorPct = 0;
};

std::vector<IterationResult>
Iterations(const std::string& json)
{
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(json);
    std::vector<IterationResult> out;
    for (simdjson::dom::element it : doc["iterations"].get_array())
    {
        IterationResult r;
        r.rank = uint64_t(it["rank"]);
        r.name = std::string(std::string_view(it["name"]));
        r.simulatedUs = double(it["simulated_us"]);
        if (!it["recorded_us"].is_null())
        {
            r.recordedUs = double(it["recorded_us"]);
            r.errorPct = double(it["error_pct"]);
        }
        out.push_back(r);
    }
    return out;
}

/// The one ProfilerStep of a fixture replayed on `rank`.
double
StepUs(const std::string& json, uint64_t rank = 0)
{
    for (const auto& it : Iterations(json))
    {
        if (it.rank == rank)
        {
            return it.simulatedUs;
        }
    }
    ADD_FAILURE() << "no iteration for rank " << rank;
    return -1;
}

double
SumOfSteps(const std::string& json)
{
    double sum = 0;
    for (const auto& it : Iterations(json))
    {
        sum += it.simulatedUs;
    }
    return sum;
}

double
EndUs(const std::string& json)
{
    simdjson::dom::parser parser;
    return double(parser.parse(json)["end_us"]);
}

struct CollectiveResult
{
    std::string op;
    uint64_t bytes = 0;
    uint64_t ranks = 0;
    double timeUs = 0;
};

std::vector<CollectiveResult>
Collectives(const std::string& json)
{
    simdjson::dom::parser parser;
    std::vector<CollectiveResult> out;
    for (simdjson::dom::element c : parser.parse(json)["collectives"].get_array())
    {
        CollectiveResult r;
        r.op = std::string(std::string_view(c["op"]));
        r.bytes = uint64_t(c["bytes"]);
        r.ranks = uint64_t(c["ranks"]);
        r.timeUs = double(c["time_us"]);
        EXPECT_GE(double(c["end_us"]), double(c["start_us"]));
        out.push_back(r);
    }
    return out;
}

/// The collective of kind `op` (each fixture has one of each kind).
CollectiveResult
CollectiveOf(const std::vector<CollectiveResult>& all, const std::string& op)
{
    for (const auto& c : all)
    {
        if (c.op == op)
        {
            return c;
        }
    }
    ADD_FAILURE() << "no " << op << " collective";
    return {};
}

/// The collectives fixture replayed as 8 data-parallel replicas on 8 flat servers, on an ideal
/// ring (run once, shared by the per-kind tests).
const ReplayRun&
CollectivesOnEightReplicas()
{
    static const ReplayRun run = [] {
        IdealRingNccl ideal;
        return Replay(With({kCollectives, "--dp", "8"}, FlatCluster(8)));
    }();
    return run;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Fixtures (test/data): expected values derived by hand from the recorded timelines
// (test/data/README.md) and from closed forms of the network, not from the program's output.
// ---------------------------------------------------------------------------------------------

TEST(ReplayFixture, StepsAsRecordedAndTheJson)
{
    // Recorded durations, every dependency: each step replays to its recorded length.
    for (const auto& [file, us] : {std::make_pair(kEventSyncOld, 700.0),
                                   std::make_pair(kCollectives, 3090.0)})
    {
        SCOPED_TRACE(file);
        ReplayRun r = Replay({file});
        ASSERT_EQ(r.code, 0) << r.err;
        auto its = Iterations(r.json);
        ASSERT_EQ(its.size(), 1u);
        EXPECT_DOUBLE_EQ(its[0].recordedUs, us);
        EXPECT_NEAR(its[0].simulatedUs, us, 1e-3);
        EXPECT_NEAR(EndUs(r.json), us, 1e-3); // the steps close the traces
    }

    ReplayRun r = Replay({kDdpRank0});
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.json);
    EXPECT_EQ(std::string_view(doc["comm"]), "recorded");
    EXPECT_EQ(uint64_t(doc["ranks"]), 1u);
    EXPECT_NEAR(double(doc["end_us"]), 4190, 1e-3);
    simdjson::dom::element it = doc["iterations"].at(0);
    EXPECT_EQ(std::string_view(it["name"]), "ProfilerStep#1");
    EXPECT_DOUBLE_EQ(double(it["recorded_us"]), 4190);
    EXPECT_NEAR(double(it["simulated_us"]), 4190, 1e-3);
    EXPECT_NEAR(double(it["error_pct"]), 0, 1e-6);
    EXPECT_NEAR(double(it["start_us"]), 0, 1e-3);
    EXPECT_NE(r.out.find("ProfilerStep#1"), std::string::npos); // the table names the step

    // Dependencies: 4 + 5 program-order edges and one inter-thread wait; five launches; the
    // final stream sync; three in-stream edges on stream 7 and DDP's two inferred pairs.
    simdjson::dom::element deps = doc["dependencies"];
    EXPECT_EQ(uint64_t(deps["cpu_cpu"]), 10u);
    EXPECT_EQ(uint64_t(deps["inter_thread"]), 1u);
    EXPECT_EQ(uint64_t(deps["cpu_gpu"]), 5u);
    EXPECT_EQ(uint64_t(deps["gpu_cpu"]), 1u);
    EXPECT_EQ(uint64_t(deps["gpu_gpu"]), 5u);
    EXPECT_EQ(uint64_t(deps["cross_stream"]), 2u);
    EXPECT_EQ(simdjson::dom::array(deps["disabled"]).size(), 0u);
    EXPECT_EQ(std::string_view(doc["cross_stream_method"]), "inferred");
    EXPECT_EQ(simdjson::dom::array(doc["collectives"]).size(), 0u); // recorded mode

    // Breakdown of the step (0 to 4190 us): GPU compute 1000 + 1000 + 200 (kernels) + 1.5
    // (the copy), the recorded AllReduce 1500 us (a kernel with a communicator still counts
    // as communication), never both at once; the rest is idle.
    simdjson::dom::element b = doc["breakdown"]["ranks"].at(0)["iterations"].at(0);
    EXPECT_NEAR(double(b["exposed_compute_us"]), 2201.5, 1e-3);
    EXPECT_NEAR(double(b["exposed_comm_us"]), 1500, 1e-3);
    EXPECT_NEAR(double(b["overlap_us"]), 0, 1e-3);
    EXPECT_NEAR(double(b["idle_us"]), 4190 - 2201.5 - 1500, 1e-3);

    // SM busy (kernels only, from 0 to the last kernel's end at 4180 us): forward GEMM from 30,
    // backward GEMM to 2030, AllReduce to 3530, optimizer 3980-4180. Per millisecond:
    // 970/1000, 1, 1, (530 + 20)/1000, 180/180.
    simdjson::dom::element sm = doc["sm_busy"]["ranks"].at(0);
    EXPECT_NEAR(double(sm["busy_us"]), 3700, 1e-3);
    EXPECT_NEAR(double(sm["span_us"]), 4180, 1e-3);
    EXPECT_NEAR(double(sm["busy_fraction"]), 3700.0 / 4180, 1e-6);
    const std::vector<double> timeline = {0.97, 1, 1, 0.55, 1};
    simdjson::dom::array got = sm["timeline"];
    ASSERT_EQ(got.size(), timeline.size());
    for (size_t k = 0; k < timeline.size(); ++k)
    {
        EXPECT_NEAR(double(got.at(k)), timeline[k], 1e-4) << k;
    }
}

TEST(ReplayFixture, TwoRanksReplayTogether)
{
    ReplayRun r = Replay({kDdpRank1, kDdpRank0});
    ASSERT_EQ(r.code, 0) << r.err;
    // Rank 1's autograd thread finished 100 us earlier, and so did its step.
    EXPECT_NEAR(StepUs(r.json, 0), 4190, 1e-3);
    EXPECT_NEAR(StepUs(r.json, 1), 4090, 1e-3);
    // Dependency counts add up over the files (the two graphs are alike).
    simdjson::dom::parser parser;
    simdjson::dom::element deps = parser.parse(r.json)["dependencies"];
    EXPECT_EQ(uint64_t(deps["cpu_cpu"]), 20u);
    EXPECT_EQ(uint64_t(deps["gpu_gpu"]), 10u);
}

TEST(ReplayFixture, EachNoDepKindChangesTheStepAsDerived)
{
    // The engine gives the step lengths derived by hand for each ablation (README).
    struct Case
    {
        std::string kind;
        std::string trace;
        double stepUs;
    };
    const std::vector<Case> cases = {{"cpu_cpu", kDdpRank0, 2240},
                                     {"cpu_gpu", kEventSyncOld, 571},
                                     {"gpu_cpu", kEventSyncOld, 154},
                                     {"gpu_gpu", kEventSyncOld, 586}};
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.kind);
        ReplayRun r = Replay({c.trace, "--no-dep", c.kind});
        ASSERT_EQ(r.code, 0) << r.err;
        EXPECT_NEAR(StepUs(r.json), c.stepUs, 1e-3);
        simdjson::dom::parser parser;
        simdjson::dom::element deps = parser.parse(r.json)["dependencies"];
        EXPECT_EQ(std::string_view(deps["disabled"].at(0)), c.kind);
    }
}

TEST(ReplayFixture, ScaleKernelsShortensTheGpuBoundStep)
{
    // The step waits for its kernels: halving them all gives 400 us instead of 700 (README).
    ReplayRun half = Replay({kEventSyncOld, "--scale-kernels", ".*=0.5"});
    ASSERT_EQ(half.code, 0) << half.err;
    EXPECT_NEAR(StepUs(half.json), 400, 1e-3);

    // Rules given several times multiply: the sgemm matches "gemm" and "sgemm" (x0.25, 50 us),
    // the elementwise kernel x0.8 (80 us), the reduction none; copies and memsets are not
    // kernels. Step: 530 us (README).
    const std::string trace = Scratch().Unique("scaled.trace.json");
    ReplayRun r = Replay({kEventSyncOld, "--scale-kernels", "gemm=0.5", "--scale-kernels",
                          "sgemm=0.5", "--scale-kernels", "elementwise=0.8", "--trace", trace});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NEAR(StepUs(r.json), 530, 1e-3);
    const std::map<std::string, double> expected = {
        {"ampere_sgemm_128x64_nn", 50},
        {"void at::native::vectorized_elementwise_kernel<4>", 80},
        {"void at::native::reduce_kernel<512, 1>", 300},
        {"Memset (Device)", 1},
        {"Memcpy DtoH (Device -> Pageable)", 5}};
    KinetoTrace back = ReadKinetoTrace(trace);
    std::map<std::string, double> got;
    for (const auto& e : back.events)
    {
        if (e.IsGpu())
        {
            got[e.name] = e.durUs;
        }
    }
    ASSERT_EQ(got.size(), expected.size());
    for (const auto& [name, us] : expected)
    {
        EXPECT_NEAR(got[name], us, 1e-3) << name;
    }
}

TEST(ReplayFixture, SimulatedCollectivesMatchClosedForms)
{
    // Rank 0 of a 2-rank job becomes 2 replicas on two single-GPU servers; every collective
    // is bound by the 100 Gb/s NICs (1% covers the per-step latencies).
    IdealRingNccl ideal;
    ReplayRun r = Replay(With({kCollectives, "--comm", "simulated"}, FlatCluster(2)));
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    EXPECT_EQ(uint64_t(parser.parse(r.json)["ranks"]), 2u);
    const auto colls = Collectives(r.json);
    ASSERT_EQ(colls.size(), 4u);
    const double ar = 256 * kMiB; // 64 Mi floats
    const double ag = 128 * kMiB; // receive buffer: 2 x 32 Mi bfloat16
    const double rs = 256 * kMiB; // send buffer: 64 Mi floats
    const double a2a = 128 * kMiB; // send buffer: 64 Mi halves
    const std::vector<std::tuple<std::string, double, double>> expected = {
        {"allreduce", ar, RingAllReduceUs(ar, 2)},
        {"allgather", ag, RingAllGatherUs(ag, 2)},
        {"reducescatter", rs, RingAllGatherUs(rs, 2)},
        {"alltoall", a2a, AllToAllUs(a2a, 2)}};
    double sum = 0;
    for (const auto& [op, bytes, us] : expected)
    {
        SCOPED_TRACE(op);
        const CollectiveResult c = CollectiveOf(colls, op);
        EXPECT_EQ(c.bytes, static_cast<uint64_t>(bytes));
        EXPECT_EQ(c.ranks, 2u);
        EXPECT_NEAR(c.timeUs / us, 1.0, 0.01) << c.timeUs << " vs " << us;
        sum += us;
    }
    // The step is the recorded one with the recorded NCCL kernels (3050 us in all, back to
    // back on one stream, awaited by the final sync) replaced by the simulated ones.
    for (uint64_t rank : {0, 1})
    {
        EXPECT_NEAR(StepUs(r.json, rank) / (3090 - 3050 + sum), 1.0, 0.01);
    }
    EXPECT_NE(r.out.find("collectives simulated over the network: 4"), std::string::npos);
}

TEST(ReplayFixture, SimulatedCommLeavesAHostBoundStep)
{
    // The DDP step is host-bound: the main thread resumes 3950 us into the step, long after
    // any AllReduce of 16 MiB between two GPUs of one server (NVLink) could end (it starts at
    // 2030 us), so both ranks keep their recorded steps.
    ReplayRun r = Replay({kDdpRank0, kDdpRank1, "--comm", "simulated"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NEAR(StepUs(r.json, 0), 4190, 1e-3);
    EXPECT_NEAR(StepUs(r.json, 1), 4090, 1e-3);
    const auto colls = Collectives(r.json);
    ASSERT_EQ(colls.size(), 1u);
    EXPECT_EQ(colls[0].op, "allreduce");
    EXPECT_EQ(colls[0].bytes, 4194304u * 4);
    EXPECT_EQ(colls[0].ranks, 2u);
    // Nothing else runs while it does: all of it is exposed communication.
    simdjson::dom::parser parser;
    simdjson::dom::element b =
        parser.parse(r.json)["breakdown"]["ranks"].at(0)["iterations"].at(0);
    EXPECT_NEAR(double(b["exposed_comm_us"]), colls[0].timeUs, 1e-3);

    // One rank of a 2-rank job alone is expanded into two replicas (world_size 2).
    ReplayRun one = Replay({kDdpRank0, "--comm", "simulated"});
    ASSERT_EQ(one.code, 0) << one.err;
    EXPECT_EQ(Iterations(one.json).size(), 2u);
    EXPECT_NEAR(StepUs(one.json, 1), 4190, 1e-3);
}

// --dp N: a communicator spanning the recorded job (2 ranks here) becomes an N-rank one and
// each rank's piece of the buffer stays what the trace had (issue 12, item 4).

TEST(ReplayFixture, DataParallelAllReduceKeepsItsBuffer)
{
    const ReplayRun& r = CollectivesOnEightReplicas();
    ASSERT_EQ(r.code, 0) << r.err;
    const CollectiveResult c = CollectiveOf(Collectives(r.json), "allreduce");
    EXPECT_EQ(c.ranks, 8u);
    EXPECT_EQ(c.bytes, 268435456u); // the gradient bucket does not shrink with N
    EXPECT_NEAR(c.timeUs / RingAllReduceUs(268435456, 8), 1.0, 0.01);
}

TEST(ReplayFixture, DataParallelAllGatherKeepsPerRankPayload)
{
    // Recorded: 2 ranks x 32 Mi bfloat16 (64 MiB each). With 8 ranks the receive buffer holds
    // 8 pieces of 64 MiB.
    const ReplayRun& r = CollectivesOnEightReplicas();
    ASSERT_EQ(r.code, 0) << r.err;
    const CollectiveResult c = CollectiveOf(Collectives(r.json), "allgather");
    EXPECT_EQ(c.ranks, 8u);
    EXPECT_EQ(c.bytes, 8u * 64 * 1024 * 1024);
    EXPECT_NEAR(c.timeUs / RingAllGatherUs(8.0 * 64 * kMiB, 8), 1.0, 0.01);
}

TEST(ReplayFixture, DataParallelReduceScatterKeepsPerRankPayload)
{
    // Recorded: 64 Mi floats reduced and scattered over 2 ranks (128 MiB out per rank). With
    // 8 ranks the send buffer holds 8 pieces of 128 MiB.
    const ReplayRun& r = CollectivesOnEightReplicas();
    ASSERT_EQ(r.code, 0) << r.err;
    const CollectiveResult c = CollectiveOf(Collectives(r.json), "reducescatter");
    EXPECT_EQ(c.ranks, 8u);
    EXPECT_EQ(c.bytes, 8u * 128 * 1024 * 1024);
    EXPECT_NEAR(c.timeUs / RingAllGatherUs(8.0 * 128 * kMiB, 8), 1.0, 0.01);
}

TEST(ReplayFixture, DataParallelAllToAllKeepsPerRankPayload)
{
    // Recorded: 128 MiB sent, 64 MiB to each of 2 ranks. With 8 ranks: 64 MiB to each of 8.
    const ReplayRun& r = CollectivesOnEightReplicas();
    ASSERT_EQ(r.code, 0) << r.err;
    const CollectiveResult c = CollectiveOf(Collectives(r.json), "alltoall");
    EXPECT_EQ(c.ranks, 8u);
    EXPECT_EQ(c.bytes, 8u * 64 * 1024 * 1024);
    EXPECT_NEAR(c.timeUs / AllToAllUs(8.0 * 64 * kMiB, 8), 1.0, 0.01);
}

TEST(ReplayFixture, DataParallelStepAndUsage)
{
    const ReplayRun& r = CollectivesOnEightReplicas();
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.json);
    EXPECT_EQ(uint64_t(doc["ranks"]), 8u);
    EXPECT_EQ(uint64_t(doc["dp"]), 8u);
    EXPECT_EQ(Iterations(r.json).size(), 8u);
    // Recorded step minus the recorded NCCL kernels plus the four closed forms.
    const double sum = RingAllReduceUs(256 * kMiB, 8) + RingAllGatherUs(512 * kMiB, 8) +
                       RingAllGatherUs(1024 * kMiB, 8) + AllToAllUs(512 * kMiB, 8);
    EXPECT_NEAR(StepUs(r.json, 7) / (3090 - 3050 + sum), 1.0, 0.01);
    // --dp cannot keep the recorded collective times.
    EXPECT_EQ(Replay({kCollectives, "--dp", "8", "--comm", "recorded"}).code, 1);
    EXPECT_EQ(Replay({kCollectives, "--dp", "0"}).code, 1);
}

TEST(ReplayFixture, PrepareReplayJobScalesPayloadPerKind)
{
    // One rank of a 4-rank job with a data-parallel communicator over all 4 ranks and a
    // 2-rank one; --dp 8 doubles the pieces of the first and leaves the second alone.
    JobTrace job;
    RankTrace rank;
    auto init = [](const std::string& comm, int32_t n) {
        Op op;
        op.kind = OpKind::CommInit;
        op.comm = comm;
        op.nranks = n;
        return op;
    };
    std::map<std::string, uint64_t> seq;
    auto coll = [&seq](const std::string& comm, CollKind kind, uint64_t bytes) {
        Op op;
        op.kind = OpKind::Collective;
        op.stream = 1;
        op.comm = comm;
        op.coll = kind;
        op.dtype = DataType::U8;
        op.count = bytes;
        op.bytes = bytes;
        op.seq = seq[comm]++;
        return op;
    };
    rank.ops = {init("dp", 4), init("tp", 2)};
    const std::vector<CollKind> kinds = {CollKind::AllReduce, CollKind::AllGather,
                                         CollKind::ReduceScatter, CollKind::AllToAll,
                                         CollKind::Broadcast};
    for (CollKind k : kinds)
    {
        rank.ops.push_back(coll("dp", k, 4000));
        rank.ops.push_back(coll("tp", k, 2000));
    }
    job.ranks.push_back(rank);
    auto out = PrepareReplayJob(job, ReplayCommMode::Simulated, 8);
    ASSERT_EQ(out->ranks.size(), 8u);
    EXPECT_NO_THROW(ValidateJobTrace(*out));
    const std::map<CollKind, uint64_t> dpBytes = {{CollKind::AllReduce, 4000},
                                                  {CollKind::AllGather, 8000},
                                                  {CollKind::ReduceScatter, 8000},
                                                  {CollKind::AllToAll, 8000},
                                                  {CollKind::Broadcast, 4000}};
    for (const Op& op : out->ranks[5].ops)
    {
        if (op.kind != OpKind::Collective)
        {
            continue;
        }
        SCOPED_TRACE(op.comm + " " + ToString(op.coll));
        if (op.comm == "dp")
        {
            EXPECT_EQ(op.bytes, dpBytes.at(op.coll));
        }
        else
        {
            EXPECT_EQ(op.comm, "tp/group2"); // replica 5 is in the third group of 2
            EXPECT_EQ(op.bytes, 2000u);
        }
    }
}

TEST(ReplayFixture, EngineEndMatchesTheQuickReplay)
{
    // Two replays of the same Op IR, the ns-3 engine and the self-contained quick replay, end
    // at the same time, also with a dependency kind left out.
    for (const auto& file : {kDdpRank0, kDdpRank1, kEventSyncOld, kCollectives})
    {
        for (const std::string noDep : {"", "cpu_cpu", "cpu_gpu", "gpu_cpu", "gpu_gpu"})
        {
            SCOPED_TRACE(file + " " + noDep);
            KinetoGraphOptions o;
            o.cpuCpu = noDep != "cpu_cpu";
            o.cpuGpu = noDep != "cpu_gpu";
            o.gpuCpu = noDep != "gpu_cpu";
            o.gpuGpu = noDep != "gpu_gpu";
            const JobTrace job = ReadKinetoJob({file}, o);
            const QuickReplayResult quick = ReplayRecordedDurations(job.ranks.at(0));
            ASSERT_TRUE(quick.complete) << quick.stuck;
            ReplayRun r = Replay(noDep.empty() ? std::vector<std::string>{file}
                                               : std::vector<std::string>{file, "--no-dep", noDep});
            ASSERT_EQ(r.code, 0) << r.err;
            EXPECT_NEAR(EndUs(r.json), quick.makespanUs, 1e-3);
        }
    }
}

TEST(ReplayFixture, SimulatedTraceIsKinetoCompatible)
{
    const std::string trace = Scratch().Unique("sim.trace.json");
    ReplayRun r = Replay({kEventSyncOld, "--trace", trace});
    ASSERT_EQ(r.code, 0) << r.err;
    // Our own Kineto reader reads it back: the step and every GPU op as recorded.
    KinetoTrace back = ReadKinetoTrace(trace);
    std::map<KinetoCategory, int> gpu;
    for (const auto& e : back.events)
    {
        if (e.category == KinetoCategory::UserAnnotation)
        {
            EXPECT_EQ(e.name, "ProfilerStep#7");
            EXPECT_NEAR(e.durUs, 700, 1e-3);
        }
        if (e.IsGpu())
        {
            ++gpu[e.category];
        }
    }
    EXPECT_EQ(gpu[KinetoCategory::Kernel], 3);
    EXPECT_EQ(gpu[KinetoCategory::Memcpy], 1);
    EXPECT_EQ(gpu[KinetoCategory::Memset], 1);
    // The GEMM (launched 20 us into the step) is where the recording had it.
    simdjson::dom::parser parser;
    for (simdjson::dom::element e : parser.load(trace)["traceEvents"].get_array())
    {
        if (RawStr(e, "name") == "ampere_sgemm_128x64_nn")
        {
            EXPECT_NEAR(double(e["ts"]), 20, 1e-3);
            EXPECT_NEAR(double(e["dur"]), 200, 1e-3);
            EXPECT_NEAR(double(e["args"]["recorded dur"]), 200, 1e-3);
        }
    }
}

TEST(ReplayFixture, SameInputGivesIdenticalJson)
{
    ReplayRun a = Replay({kDdpRank0, kDdpRank1, "--comm", "simulated"});
    ReplayRun b = Replay({kDdpRank0, kDdpRank1, "--comm", "simulated"});
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_FALSE(a.json.empty());
    // The JSON names its inputs, not its output path, so runs compare byte for byte.
    EXPECT_EQ(a.json, b.json);
    EXPECT_EQ(a.out, b.out);
}

TEST(ReplayFixture, BadInputExitsTwoAndWritesNothing)
{
    TestTempDir dir("gpusim-replay-bad");
    const std::string json = dir.Path("out.json");
    auto run = [&](const std::vector<std::string>& args) {
        std::vector<std::string> full = {"replay"};
        full.insert(full.end(), args.begin(), args.end());
        full.push_back("--json");
        full.push_back(json);
        std::ostringstream out, err;
        ReplayRun r;
        r.code = GpusimMain(full, out, err);
        r.err = err.str();
        return r;
    };
    const std::string missing = dir.Path("no-such-trace.json.gz");
    ReplayRun r = run({missing});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(json));

    // Truncated gzip: the first half of a gzipped fixture; the error names file and offset.
    const std::string whole = dir.Path("whole.json.gz");
    {
        const std::string text = ReadWhole(kDdpRank0);
        gzFile gz = gzopen(whole.c_str(), "wb");
        gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
        gzclose(gz);
    }
    const std::string gz = ReadWhole(whole);
    const std::string truncated = dir.Path("truncated.json.gz");
    std::ofstream(truncated, std::ios::binary) << gz.substr(0, gz.size() / 2);
    r = run({truncated});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find(truncated), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("offset"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(json));

    // Usage errors exit 1, say what is wrong with which value, and print the usage.
    const std::pair<std::vector<std::string>, std::string> usage[] = {
        {{}, "gpusim replay: no trace given"},
        {{kDdpRank0, "--no-dep", "gpu"}, "--no-dep must be cpu_cpu, cpu_gpu, gpu_cpu or gpu_gpu"},
        {{kDdpRank0, "--comm", "network"}, "--comm must be recorded or simulated"},
        {{kDdpRank0, "--scale-kernels", "gemm"},
         "--scale-kernels expects REGEX=FACTOR, got 'gemm'"},
        {{kDdpRank0, "--scale-kernels", "gemm=-1"}, "factor must be a number >= 0, got '-1'"},
        {{kDdpRank0, "--scale-kernels", "gemm=x"}, "factor must be a number >= 0, got 'x'"},
        {{kDdpRank0, "--scale-kernels", "(=0.5"}, "bad regular expression '('"},
        {{kDdpRank0, "--gap-us", "-1"}, "--gap-us must be >= 0"},
    };
    for (const auto& [args, message] : usage)
    {
        r = run(args);
        EXPECT_EQ(r.code, 1) << message;
        EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("usage: gpusim replay TRACE..."), std::string::npos) << r.err;
    }
    EXPECT_FALSE(fs::exists(json));
}

TEST(ReplayFixture, PrepareReplayJobExpandsDataParallelReplicas)
{
    const JobTrace job = ReadKinetoJob({kDdpRank0});
    auto recorded = PrepareReplayJob(job, ReplayCommMode::Recorded);
    ASSERT_EQ(recorded->ranks.size(), 1u);
    uint64_t ncclKernels = 0;
    for (const auto& op : recorded->ranks[0].ops)
    {
        EXPECT_NE(op.kind, OpKind::Collective);
        EXPECT_NE(op.kind, OpKind::CommInit);
        ncclKernels += op.kind == OpKind::Kernel && !op.comm.empty();
    }
    EXPECT_EQ(ncclKernels, 1u); // the AllReduce, now a kernel with its communicator

    auto replicas = PrepareReplayJob(job, ReplayCommMode::Simulated);
    ASSERT_EQ(replicas->ranks.size(), 2u);
    for (uint32_t r = 0; r < 2; ++r)
    {
        uint64_t inits = 0;
        for (const auto& op : replicas->ranks[r].ops)
        {
            if (op.kind == OpKind::CommInit)
            {
                EXPECT_EQ(op.nranks, 2);
                EXPECT_EQ(op.commRank, static_cast<int32_t>(r));
                ++inits;
            }
        }
        EXPECT_EQ(inits, 1u);
    }
    EXPECT_NO_THROW(ValidateJobTrace(*replicas));
    EXPECT_NO_THROW(ValidateJobTrace(*PrepareReplayJob(job, ReplayCommMode::Simulated, 6)));
}

// ---------------------------------------------------------------------------------------------
// The real traces of ../shared (skipped when absent).
// ---------------------------------------------------------------------------------------------

TEST(ReplayRealTrace, EngineMatchesRecordedProfilerStepsWithinTwoPercent)
{
    SKIP_WITHOUT_SHARED_TRACES();
    for (const auto& file : kProfilerStepTraces)
    {
        SCOPED_TRACE(file);
        ReplayRun r = Replay({file});
        ASSERT_EQ(r.code, 0) << r.err;
        auto its = Iterations(r.json);
        ASSERT_FALSE(its.empty());
        for (const auto& it : its)
        {
            SCOPED_TRACE(it.name);
            ASSERT_GT(it.recordedUs, 0);
            EXPECT_LE(std::abs(it.simulatedUs - it.recordedUs), 0.02 * it.recordedUs);
            EXPECT_NEAR(it.errorPct, 100.0 * (it.simulatedUs - it.recordedUs) / it.recordedUs,
                        1e-9);
        }
    }
}

TEST(ReplayRealTrace, NcclDataStepsAsRecorded)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // The recorded lengths are stated in ../shared/data/README.md.
    ReplayRun r = Replay({kNcclData});
    ASSERT_EQ(r.code, 0) << r.err;
    std::map<std::string, IterationResult> byName;
    for (const auto& it : Iterations(r.json))
    {
        byName[it.name] = it;
    }
    ASSERT_TRUE(byName.count("ProfilerStep#5") && byName.count("ProfilerStep#6"));
    EXPECT_NEAR(byName["ProfilerStep#5"].recordedUs, 219727, 1);
    EXPECT_NEAR(byName["ProfilerStep#6"].recordedUs, 224936, 1);
    EXPECT_NEAR(byName["ProfilerStep#5"].simulatedUs, 219727, 0.02 * 219727);
    EXPECT_NEAR(byName["ProfilerStep#6"].simulatedUs, 224936, 0.02 * 224936);
    // The table names the steps too.
    EXPECT_NE(r.out.find("ProfilerStep#5"), std::string::npos);
}

TEST(ReplayRealTrace, TwoRanksReplayTogether)
{
    SKIP_WITHOUT_SHARED_TRACES();
    ReplayRun r = Replay({kSampled0, kSampled1});
    ASSERT_EQ(r.code, 0) << r.err;
    auto its = Iterations(r.json);
    ASSERT_EQ(its.size(), 4u); // two ProfilerSteps in each file
    for (const auto& it : its)
    {
        EXPECT_LE(std::abs(it.errorPct), 2.0) << it.rank << " " << it.name;
    }
}

TEST(ReplayRealTrace, EachNoDepKindChangesTheReplayedTime)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // Where each kind decides the timing (see doc/kineto-replay.md, ablation table).
    struct Case
    {
        std::string kind;
        std::string trace;
        bool useSteps; //!< compare the sum of ProfilerSteps (else the end of the run)
    };
    const std::vector<Case> cases = {{"cpu_cpu", kNcclData, true},
                                     {"cpu_gpu", kH100, true},
                                     {"gpu_cpu", kEventSync, false},
                                     {"gpu_gpu", kMi300, false}};
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.kind);
        ReplayRun all = Replay({c.trace});
        ReplayRun without = Replay({c.trace, "--no-dep", c.kind});
        ASSERT_EQ(all.code, 0) << all.err;
        ASSERT_EQ(without.code, 0) << without.err;
        const double a = c.useSteps ? SumOfSteps(all.json) : EndUs(all.json);
        const double b = c.useSteps ? SumOfSteps(without.json) : EndUs(without.json);
        EXPECT_GT(std::abs(a - b), 0.005 * a) << a << " vs " << b;
        simdjson::dom::parser parser;
        simdjson::dom::element deps = parser.parse(without.json)["dependencies"];
        EXPECT_EQ(std::string_view(deps["disabled"].at(0)), c.kind);
    }
}

TEST(ReplayRealTrace, ScaleKernelsMakesMatchingKernelsFasterAndTheStepShorter)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // event_sync's step waits for its GPU work (cudaEventSynchronize), so faster kernels
    // shorten it. (The other shared traces are host-bound between their step markers: there
    // faster kernels shorten the GPU's busy time, not the step; see doc/kineto-replay.md.)
    ReplayRun slow = Replay({kEventSync});
    ReplayRun fast = Replay({kEventSync, "--scale-kernels", ".*=0.5"});
    ASSERT_EQ(slow.code, 0) << slow.err;
    ASSERT_EQ(fast.code, 0) << fast.err;
    EXPECT_LT(Iterations(fast.json).at(0).simulatedUs,
              Iterations(slow.json).at(0).simulatedUs - 10);

    // In the simulated trace, matching kernels last factor x their recorded time; rules
    // given several times multiply.
    const std::string trace = Scratch().Unique("fast.trace.json");
    ReplayRun h100 = Replay({kH100, "--scale-kernels", "gemm=0.5", "--scale-kernels",
                             "elementwise=0.8", "--trace", trace});
    ReplayRun h100Base = Replay({kH100});
    ASSERT_EQ(h100.code, 0) << h100.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(trace);
    const std::regex gemm("gemm");
    const std::regex elementwise("elementwise");
    uint64_t scaled = 0;
    uint64_t unscaled = 0;
    for (simdjson::dom::element e : doc["traceEvents"].get_array())
    {
        std::string_view cat;
        double recorded = 0;
        if (e["cat"].get(cat) || cat != "kernel" || e["args"]["recorded dur"].get(recorded))
        {
            continue;
        }
        const std::string name{std::string_view(e["name"])};
        double factor = 1;
        factor *= std::regex_search(name, gemm) ? 0.5 : 1.0;
        factor *= std::regex_search(name, elementwise) ? 0.8 : 1.0;
        EXPECT_NEAR(double(e["dur"]), factor * recorded, 0.002) << name;
        (factor < 1 ? scaled : unscaled)++;
    }
    EXPECT_GT(scaled, 1000u);
    EXPECT_GT(unscaled, 0u);
    // The GPU is busy for less time in the (launch-bound) step.
    simdjson::dom::parser p2;
    const double busyFast = double(parser.parse(h100.json)["sm_busy"]["ranks"].at(0)["busy_us"]);
    const double busyBase = double(p2.parse(h100Base.json)["sm_busy"]["ranks"].at(0)["busy_us"]);
    EXPECT_LT(busyFast, 0.9 * busyBase);
}

TEST(ReplayRealTrace, EngineMakespanMatchesTheQuickReplay)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // The steps are closed by host markers; this checks the GPU side too: the engine's end of
    // run equals the quick replay's makespan on every shared trace (before kineto-convert
    // renamed ROCm's stream 0, the engine gave MI300's stream 0 legacy-stream semantics and
    // ended 29 % late).
    for (const auto& entry : fs::directory_iterator(kTraceDir))
    {
        const std::string file = entry.path().string();
        if (file.find(".json") == std::string::npos)
        {
            continue;
        }
        SCOPED_TRACE(file);
        const JobTrace job = ReadKinetoJob({file});
        const QuickReplayResult quick = ReplayRecordedDurations(job.ranks.at(0));
        ASSERT_TRUE(quick.complete) << quick.stuck;
        ReplayRun r = Replay({file});
        ASSERT_EQ(r.code, 0) << r.err;
        EXPECT_NEAR(EndUs(r.json), quick.makespanUs, 1e-3 * quick.makespanUs + 2);
    }
}

namespace
{

/// Bytes of every NCCL kernel of a real trace, from its raw args (In msg nelems x dtype size).
std::multiset<uint64_t>
RecordedCollectiveBytes(const std::string& file)
{
    std::multiset<uint64_t> bytes;
    ForEachRawEvent(file, [&bytes](simdjson::dom::element e) {
        if (!IsRawNcclKernel(e))
        {
            return;
        }
        const std::string_view dtype = RawStr(e["args"], "dtype");
        const uint64_t size = dtype == "Float" ? 4 : dtype == "Long" ? 8 : 0;
        EXPECT_NE(size, 0u) << dtype; // nccl_data has only these
        bytes.insert(uint64_t(e["args"]["In msg nelems"]) * size);
    });
    return bytes;
}

std::multiset<uint64_t>
SimulatedCollectiveBytes(const std::string& json, uint64_t ranks)
{
    std::multiset<uint64_t> bytes;
    for (const auto& c : Collectives(json))
    {
        EXPECT_EQ(c.ranks, ranks);
        bytes.insert(c.bytes);
    }
    return bytes;
}

} // namespace

TEST(ReplayRealTrace, SimulatedCommOnTwoRankNcclData)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // nccl_data is rank 0 of a 2-rank DDP job: it is expanded into 2 replicas whose
    // collectives, the trace's NCCL kernels with their recorded sizes, run over the network.
    ReplayRun r = Replay({kNcclData, "--comm", "simulated"});
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.json);
    EXPECT_EQ(std::string_view(doc["comm"]), "simulated");
    EXPECT_EQ(uint64_t(doc["ranks"]), 2u);
    EXPECT_EQ(SimulatedCollectiveBytes(r.json, 2), RecordedCollectiveBytes(kNcclData));
    // 3 steps x 2 ranks; the steps are host-bound (doc/kineto-replay.md), so faster
    // collectives leave them within 2 % of the recording.
    auto its = Iterations(r.json);
    EXPECT_EQ(its.size(), 6u);
    for (const auto& it : its)
    {
        EXPECT_LE(std::abs(it.errorPct), 2.0) << it.rank << " " << it.name;
    }
    EXPECT_NE(r.out.find("collectives simulated over the network"), std::string::npos);

    // Recorded mode simulates no collective over the network.
    ReplayRun rec = Replay({kNcclData});
    EXPECT_EQ(parser.parse(rec.json)["collectives"].get_array().size(), 0u);
}

TEST(ReplayRealTrace, DataParallelWhatIfKeepsAllReduceAndBroadcastBuffers)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // nccl_data has only AllReduce and Broadcast: with 8 replicas each rank still sends its
    // whole recorded buffer.
    ReplayRun r = Replay({kNcclData, "--dp", "8"});
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.json);
    EXPECT_EQ(uint64_t(doc["ranks"]), 8u);
    EXPECT_EQ(uint64_t(doc["dp"]), 8u);
    EXPECT_EQ(SimulatedCollectiveBytes(r.json, 8), RecordedCollectiveBytes(kNcclData));
}

TEST(ReplayRealTrace, JsonOnNcclData)
{
    SKIP_WITHOUT_SHARED_TRACES();
    ReplayRun r = Replay({kNcclData});
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.json);
    for (const char* key : {"iterations", "breakdown", "sm_busy", "dependencies",
                            "cross_stream_method", "collectives", "end_us"})
    {
        EXPECT_FALSE(doc[key].error()) << key;
    }
    // Counts a second reading of the file gives: every GPU op has its launch (cpu_gpu); the
    // GPU->GPU edges are each stream's ops minus one, plus one per cudaStreamWaitEvent that
    // the recording shows holding something (CountRawNcclWaits).
    uint64_t gpuOps = 0;
    uint64_t waits = 0;
    std::set<std::pair<int64_t, int64_t>> streams;
    ForEachRawEvent(kNcclData, [&](simdjson::dom::element e) {
        const std::string_view cat = RawStr(e, "cat");
        if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset")
        {
            ++gpuOps;
            streams.insert({int64_t(e["args"]["device"]), int64_t(e["args"]["stream"])});
        }
        waits += RawStr(e, "name") == "cudaStreamWaitEvent";
    });
    simdjson::dom::element deps = doc["dependencies"];
    EXPECT_EQ(uint64_t(deps["cpu_gpu"]), gpuOps);
    const RawNcclWaits raw = CountRawNcclWaits(kNcclData);
    EXPECT_EQ(raw.waits, waits);
    EXPECT_EQ(uint64_t(deps["gpu_gpu"]), gpuOps - streams.size() + raw.into + raw.outOf);
    EXPECT_EQ(uint64_t(deps["cross_stream"]), raw.into + raw.outOf);
    EXPECT_EQ(std::string_view(doc["cross_stream_method"]), "inferred");

    // Breakdown: the four parts add up to each step; NCCL kernels replayed at their
    // recorded time still count as communication.
    simdjson::dom::element rank0 = doc["breakdown"]["ranks"].at(0);
    double comm = 0;
    size_t k = 0;
    for (simdjson::dom::element b : rank0["iterations"].get_array())
    {
        const double sum = double(b["exposed_compute_us"]) + double(b["exposed_comm_us"]) +
                           double(b["overlap_us"]) + double(b["idle_us"]);
        EXPECT_NEAR(sum, double(doc["iterations"].at(k++)["simulated_us"]), 0.01);
        comm += double(b["exposed_comm_us"]) + double(b["overlap_us"]);
    }
    EXPECT_GT(comm, 1000);
    // NCCL kernels overlap compute as recorded (1.9, 1.9, 3.9 ms; 0 before the cross-stream
    // pairs were checked against the recording), within 2 %.
    auto recorded = RecordedStepOverlaps(kNcclData);
    ASSERT_EQ(recorded.size(), rank0["iterations"].get_array().size());
    for (size_t i = 0; i < recorded.size(); ++i)
    {
        EXPECT_GT(recorded[i].overlapUs, 1000);
        EXPECT_NEAR(double(rank0["iterations"].at(i)["overlap_us"]),
                    recorded[i].overlapUs,
                    0.02 * recorded[i].overlapUs);
    }

    // SM busy: one fraction per millisecond, each in [0, 1]; the summary agrees with it.
    simdjson::dom::element sm = doc["sm_busy"]["ranks"].at(0);
    simdjson::dom::array timeline = sm["timeline"];
    const double span = double(sm["span_us"]);
    EXPECT_EQ(timeline.size(), static_cast<size_t>(std::ceil(span / 1000)));
    double busy = 0;
    for (simdjson::dom::element f : timeline)
    {
        EXPECT_GE(double(f), 0.0);
        EXPECT_LE(double(f), 1.0);
        busy += double(f) * 1000;
    }
    EXPECT_NEAR(busy, double(sm["busy_us"]), 0.01 * double(sm["busy_us"]) + 1000);
}

TEST(ReplayRealTrace, SimulatedTraceIsKinetoCompatible)
{
    SKIP_WITHOUT_SHARED_TRACES();
    const std::string trace = Scratch().Unique("mi300.trace.json");
    ReplayRun r = Replay({kMi300, "--trace", trace});
    ASSERT_EQ(r.code, 0) << r.err;
    // Our own Kineto reader reads it back; its ProfilerSteps have the simulated lengths.
    KinetoTrace back = ReadKinetoTrace(trace);
    std::map<std::string, double> steps;
    for (const auto& e : back.events)
    {
        if (e.category == KinetoCategory::UserAnnotation)
        {
            steps[e.name] = e.durUs;
        }
    }
    for (const auto& it : Iterations(r.json))
    {
        ASSERT_TRUE(steps.count(it.name)) << it.name;
        EXPECT_NEAR(steps[it.name], it.simulatedUs, 0.01);
    }
}
