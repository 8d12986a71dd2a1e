// `gpusim replay`: Kineto traces through the ns-3 engine, compared with the recorded
// ProfilerStep lengths; what-ifs (dependency ablation, kernel scaling, simulated and
// rescaled collectives); outputs (JSON, simulated Kineto trace); bad input.
#include "ns3/gpusim-commands.h"
#include "ns3/kineto-quick-replay.h"
#include "ns3/kineto-trace.h"
#include "ns3/replay-command.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <simdjson.h>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ns3::gpusim;
namespace fs = std::filesystem;

namespace
{

const std::string kTraceDir = GPUSIM_SHARED_DIR "/data/kineto/";
const std::string kNcclData = kTraceDir + "hta_nccl_parser_config__nccl_data.json.gz";
const std::string kH100 = kTraceDir + "tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
const std::string kMi300 = kTraceDir + "tracelens_mi300__resnet_act_checkpoint.json.gz";
const std::string kSimpleAdd =
    kTraceDir + "hta_critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz";
const std::string kSampled0 = kTraceDir + "hta_trace_filter__sampled_rank-0.json.gz";
const std::string kSampled1 = kTraceDir + "hta_trace_filter__sampled_rank-1.json.gz";

/// Every shared trace with ProfilerStep annotations.
const std::vector<std::string> kProfilerStepTraces = {
    kNcclData,
    kTraceDir + "hta_critical_path__cuda_event_sync__event_sync_trace.json.gz",
    kSampled0,
    kSampled1,
    kH100,
    kMi300,
};

class ScratchDir
{
  public:
    ScratchDir()
    {
        static int instances = 0;
        m_path = fs::temp_directory_path() / ("gpusim-replay-test-" + std::to_string(::getpid()) +
                                              "-" + std::to_string(++instances));
        fs::create_directories(m_path);
    }
    ~ScratchDir()
    {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    std::string Path(const std::string& name) const { return (m_path / name).string(); }

  private:
    fs::path m_path;
};

struct ReplayRun
{
    int code = -1;
    std::string out;
    std::string err;
    std::string json; //!< content of --json (empty when not written)
};

std::string
ReadWhole(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// Runs `gpusim replay` with --json into a scratch file and returns the JSON text too.
ReplayRun
Replay(std::vector<std::string> args)
{
    static ScratchDir dir;
    static int counter = 0;
    const std::string json = dir.Path("replay-" + std::to_string(++counter) + ".json");
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

} // namespace

TEST(Replay, EngineMatchesRecordedProfilerStepsWithinTwoPercent)
{
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

TEST(Replay, NcclDataStepsAsRecorded)
{
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

TEST(Replay, TwoRanksReplayTogether)
{
    ReplayRun r = Replay({kSampled0, kSampled1});
    ASSERT_EQ(r.code, 0) << r.err;
    auto its = Iterations(r.json);
    ASSERT_EQ(its.size(), 4u);
    for (const auto& it : its)
    {
        EXPECT_LE(std::abs(it.errorPct), 2.0) << it.rank << " " << it.name;
    }
}

TEST(Replay, EachNoDepKindChangesTheReplayedTime)
{
    // Where each kind decides the timing (see doc/kineto-replay.md, ablation table).
    struct Case
    {
        std::string kind;
        std::string trace;
        bool useSteps; //!< compare the sum of ProfilerSteps (else the end of the run)
    };
    const std::vector<Case> cases = {{"cpu_cpu", kNcclData, true},
                                     {"cpu_gpu", kH100, true},
                                     {"gpu_cpu", kSimpleAdd, false},
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

TEST(Replay, ScaleKernelsMakesMatchingKernelsFasterAndTheStepShorter)
{
    // event_sync's step waits for its GPU work (cudaEventSynchronize), so faster kernels
    // shorten it. (The other shared traces are host-bound between their step markers: there
    // faster kernels shorten the GPU's busy time, not the step; see doc/kineto-replay.md.)
    const std::string eventSync =
        kTraceDir + "hta_critical_path__cuda_event_sync__event_sync_trace.json.gz";
    ReplayRun slow = Replay({eventSync});
    ReplayRun fast = Replay({eventSync, "--scale-kernels", ".*=0.5"});
    ASSERT_EQ(slow.code, 0) << slow.err;
    ASSERT_EQ(fast.code, 0) << fast.err;
    EXPECT_LT(Iterations(fast.json).at(0).simulatedUs,
              Iterations(slow.json).at(0).simulatedUs - 10);

    // In the simulated trace, matching kernels last factor x their recorded time; rules
    // given several times multiply.
    ScratchDir dir;
    const std::string trace = dir.Path("fast.trace.json");
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

TEST(Replay, EngineMakespanMatchesTheQuickReplay)
{
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

TEST(Replay, SimulatedCommOnTwoRankNcclData)
{
    // nccl_data is rank 0 of a 2-rank DDP job: it is expanded into 2 replicas whose
    // collectives run over the network.
    ReplayRun r = Replay({kNcclData, "--comm", "simulated"});
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.json);
    EXPECT_EQ(std::string_view(doc["comm"]), "simulated");
    EXPECT_EQ(uint64_t(doc["ranks"]), 2u);
    simdjson::dom::array colls = doc["collectives"];
    EXPECT_GT(colls.size(), 0u);
    for (simdjson::dom::element c : colls)
    {
        EXPECT_EQ(uint64_t(c["ranks"]), 2u);
        EXPECT_GE(double(c["end_us"]), double(c["start_us"]));
    }
    EXPECT_EQ(Iterations(r.json).size(), 6u); // 3 steps x 2 ranks
    EXPECT_NE(r.out.find("collectives simulated over the network"), std::string::npos);

    // Recorded mode simulates no collective over the network.
    ReplayRun rec = Replay({kNcclData});
    EXPECT_EQ(parser.parse(rec.json)["collectives"].get_array().size(), 0u);
}

TEST(Replay, DataParallelWhatIf)
{
    ReplayRun r = Replay({kNcclData, "--dp", "8"});
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.json);
    EXPECT_EQ(uint64_t(doc["ranks"]), 8u);
    EXPECT_EQ(uint64_t(doc["dp"]), 8u);
    simdjson::dom::array colls = doc["collectives"];
    ASSERT_GT(colls.size(), 0u);
    for (simdjson::dom::element c : colls)
    {
        EXPECT_EQ(uint64_t(c["ranks"]), 8u);
    }
    // --dp cannot keep the recorded collective times.
    EXPECT_EQ(Replay({kNcclData, "--dp", "8", "--comm", "recorded"}).code, 1);
    EXPECT_EQ(Replay({kNcclData, "--dp", "0"}).code, 1);
}

TEST(Replay, JsonHasTheRequiredFields)
{
    ReplayRun r = Replay({kNcclData});
    ASSERT_EQ(r.code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.json);
    for (const char* key : {"iterations", "breakdown", "sm_busy", "dependencies",
                            "cross_stream_method", "collectives", "end_us"})
    {
        EXPECT_FALSE(doc[key].error()) << key;
    }
    simdjson::dom::element it = doc["iterations"].at(0);
    for (const char* key : {"name", "recorded_us", "simulated_us", "error_pct"})
    {
        EXPECT_FALSE(it[key].error()) << key;
    }
    simdjson::dom::element deps = doc["dependencies"];
    EXPECT_EQ(uint64_t(deps["cpu_cpu"]), 3314u);
    EXPECT_EQ(uint64_t(deps["cpu_gpu"]), 3774u);
    EXPECT_EQ(uint64_t(deps["gpu_cpu"]), 18u);
    EXPECT_EQ(uint64_t(deps["gpu_gpu"]), 3856u);
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
    EXPECT_GT(double(sm["busy_fraction"]), 0.05);
    EXPECT_LT(double(sm["busy_fraction"]), 0.95);
}

TEST(Replay, SimulatedTraceIsKinetoCompatible)
{
    ScratchDir dir;
    const std::string trace = dir.Path("sim.trace.json");
    ReplayRun r = Replay({kMi300, "--trace", trace});
    ASSERT_EQ(r.code, 0) << r.err;
    // Our own Kineto reader reads it back; its ProfilerSteps have the simulated lengths.
    KinetoTrace back = ReadKinetoTrace(trace);
    std::map<std::string, double> steps;
    uint64_t kernels = 0;
    for (const auto& e : back.events)
    {
        if (e.category == KinetoCategory::UserAnnotation)
        {
            steps[e.name] = e.durUs;
        }
        kernels += e.category == KinetoCategory::Kernel;
    }
    EXPECT_GT(kernels, 1000u);
    for (const auto& it : Iterations(r.json))
    {
        ASSERT_TRUE(steps.count(it.name)) << it.name;
        EXPECT_NEAR(steps[it.name], it.simulatedUs, 0.01);
    }
}

TEST(Replay, SameInputGivesIdenticalJson)
{
    ReplayRun a = Replay({kNcclData, "--comm", "simulated"});
    ReplayRun b = Replay({kNcclData, "--comm", "simulated"});
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_FALSE(a.json.empty());
    // The JSON names its inputs, not its output path, so runs compare byte for byte.
    EXPECT_EQ(a.json, b.json);
    EXPECT_EQ(a.out, b.out);
}

TEST(Replay, BadInputExitsTwoAndWritesNothing)
{
    ScratchDir dir;
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

    // Truncated gzip: the first half of a real trace; the error names file and offset.
    const std::string gz = ReadWhole(kNcclData);
    const std::string truncated = dir.Path("truncated.json.gz");
    std::ofstream(truncated, std::ios::binary) << gz.substr(0, gz.size() / 2);
    r = run({truncated});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find(truncated), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("offset"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(json));

    // Usage errors exit 1.
    EXPECT_EQ(run({}).code, 1);
    EXPECT_EQ(run({kNcclData, "--no-dep", "gpu"}).code, 1);
    EXPECT_EQ(run({kNcclData, "--comm", "network"}).code, 1);
    EXPECT_EQ(run({kNcclData, "--scale-kernels", "gemm"}).code, 1);
    EXPECT_EQ(run({kNcclData, "--scale-kernels", "(=0.5"}).code, 1);
    EXPECT_EQ(run({kNcclData, "--gap-us", "-1"}).code, 1);
    EXPECT_FALSE(fs::exists(json));
}

TEST(Replay, PrepareReplayJobExpandsDataParallelReplicas)
{
    const JobTrace job = ReadKinetoJob({kNcclData});
    auto recorded = PrepareReplayJob(job, ReplayCommMode::Recorded);
    ASSERT_EQ(recorded->ranks.size(), 1u);
    uint64_t ncclKernels = 0;
    for (const auto& op : recorded->ranks[0].ops)
    {
        EXPECT_NE(op.kind, OpKind::Collective);
        EXPECT_NE(op.kind, OpKind::CommInit);
        ncclKernels += op.kind == OpKind::Kernel && !op.comm.empty();
    }
    EXPECT_GT(ncclKernels, 0u);

    auto replicas = PrepareReplayJob(job, ReplayCommMode::Simulated);
    ASSERT_EQ(replicas->ranks.size(), 2u);
    for (uint32_t r = 0; r < 2; ++r)
    {
        for (const auto& op : replicas->ranks[r].ops)
        {
            if (op.kind == OpKind::CommInit)
            {
                EXPECT_EQ(op.nranks, 2);
                EXPECT_EQ(op.commRank, static_cast<int32_t>(r));
            }
        }
    }
    EXPECT_NO_THROW(ValidateJobTrace(*replicas));
    EXPECT_NO_THROW(ValidateJobTrace(*PrepareReplayJob(job, ReplayCommMode::Simulated, 6)));
}
