// Tests of the Kineto reader, execution graph, Op IR conversion and quick replay: on the
// hand-written fixtures in test/data (expected values derived by hand in test/data/README.md),
// on malformed inputs written to a temp dir, and on the real traces under ../shared/data/kineto
// when they are present (skipped otherwise).
#include "kineto-test-data.h"
#include "ns3/kineto-quick-replay.h"
#include "ns3/kineto-trace.h"
#include "test-temp-dir.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <simdjson.h>
#include <string>
#include <vector>

using namespace ns3::gpusim;
using namespace kineto_test;
namespace fs = std::filesystem;

namespace
{

const std::string kDir = kSharedDir;
const std::string kNccl = kDir + "hta_nccl_parser_config__nccl_data.json.gz";
const std::string kEventSync =
    kDir + "hta_critical_path__cuda_event_sync__event_sync_trace.json.gz";
const std::string kMultiStream =
    kDir + "hta_critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz";
const std::string kAlexnet =
    kDir + "hta_critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz";

std::vector<std::string>
AllTraces()
{
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(kDir))
    {
        if (entry.path().string().size() > 8 &&
            entry.path().string().find(".json") != std::string::npos)
        {
            files.push_back(entry.path().string());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

// Traces with ProfilerStep annotations.
const std::vector<std::string> kStepTraces = {
    kNccl,
    kEventSync,
    kDir + "hta_trace_filter__sampled_rank-0.json.gz",
    kDir + "hta_trace_filter__sampled_rank-1.json.gz",
    kDir + "tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    kDir + "tracelens_mi300__resnet_act_checkpoint.json.gz",
};

// Cached reads: the big traces are parsed once per test binary run.
const KinetoTrace&
Trace(const std::string& file)
{
    static std::map<std::string, KinetoTrace> cache;
    auto it = cache.find(file);
    if (it == cache.end())
    {
        it = cache.emplace(file, ReadKinetoTrace(file)).first;
    }
    return it->second;
}

QuickReplayResult
Replay(const std::string& file, const KinetoGraphOptions& options = {})
{
    const auto& trace = Trace(file);
    return ReplayRecordedDurations(KinetoToRankTrace(trace, BuildKinetoGraph(trace, options)));
}

double
TotalSimulated(const QuickReplayResult& r)
{
    double sum = 0;
    for (const auto& it : r.iterations)
    {
        sum += it.simulatedUs;
    }
    return sum;
}

int64_t
FindByCorrelation(const KinetoTrace& t, KinetoCategory cat, int64_t corr)
{
    for (size_t i = 0; i < t.events.size(); ++i)
    {
        if (t.events[i].category == cat && t.events[i].correlation == corr)
        {
            return static_cast<int64_t>(i);
        }
    }
    return -1;
}

bool
HasEdge(const KinetoGraph& g, int64_t from, int64_t to, DepKind kind, DepDetail detail)
{
    for (const auto& d : g.deps)
    {
        if (d.from == from && d.to == to && d.kind == kind && d.detail == detail)
        {
            return true;
        }
    }
    return false;
}

/// Scratch files for one test, removed with their directory at the end of the test.
class TempDir : public TestTempDir
{
  public:
    TempDir()
        : TestTempDir("gpusim-kineto-test")
    {
    }

    std::string Write(const std::string& name, const std::string& content) const
    {
        std::string p = Path(name);
        std::ofstream(p, std::ios::binary) << content;
        return p;
    }

    std::string WriteGz(const std::string& name, const std::string& content) const
    {
        std::string p = Path(name);
        gzFile gz = gzopen(p.c_str(), "wb");
        gzwrite(gz, content.data(), static_cast<unsigned>(content.size()));
        gzclose(gz);
        return p;
    }
};

int64_t
FindByName(const KinetoTrace& t, KinetoCategory cat, const std::string& name)
{
    for (size_t i = 0; i < t.events.size(); ++i)
    {
        if (t.events[i].category == cat && t.events[i].name == name)
        {
            return static_cast<int64_t>(i);
        }
    }
    return -1;
}

/// Expects a TraceFormatError naming the file; returns it for further checks.
TraceFormatError
ExpectFormatError(const std::string& path)
{
    try
    {
        ReadKinetoTrace(path);
    }
    catch (const TraceFormatError& e)
    {
        EXPECT_EQ(e.File(), path);
        EXPECT_NE(e.Reason().find("offset"), std::string::npos) << e.what();
        return e;
    }
    catch (const std::exception& e)
    {
        ADD_FAILURE() << path << ": wrong exception type: " << e.what();
        return TraceFormatError(path, 0, "wrong type");
    }
    ADD_FAILURE() << path << ": no error";
    return TraceFormatError(path, 0, "no error");
}

const char* kGoodEvent =
    R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":5,"args":{"correlation":1,"stream":7}})";

std::string
Doc(const std::string& events)
{
    return std::string(R"({"schemaVersion":1,"traceEvents":[)") + events + "]}";
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Fixtures (test/data). Every expected value is derived by hand from the fixture's recorded
// timeline (test/data/README.md walks through each), not taken from the program's output.
// ---------------------------------------------------------------------------------------------

TEST(KinetoFixture, ReaderKeepsFieldsInBothTimeFormats)
{
    // Old format: integer microseconds since the Unix epoch, no baseTimeNanoseconds.
    const auto& old = Trace(kEventSyncOld);
    EXPECT_FALSE(old.relativeTime);
    EXPECT_EQ(old.baseTimeNs, -1);
    EXPECT_DOUBLE_EQ(old.startUs, 1700000000000000.0);
    EXPECT_DOUBLE_EQ(old.AbsoluteStartUs(), 1700000000000000.0);
    EXPECT_EQ(old.rank, 0);
    EXPECT_EQ(old.worldSize, 1); // distributedInfo has no world_size
    ASSERT_EQ(old.devices.size(), 1u);
    EXPECT_EQ(old.devices[0].name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(old.devices[0].numSms, 108);
    EXPECT_EQ(old.devices[0].totalGlobalMem, 85198045184u);
    EXPECT_EQ(old.devices[0].computeMajor, 8);
    // 20 "X" events of kept categories; the python_function and the instant event are not kept.
    EXPECT_EQ(old.events.size(), 20u);
    EXPECT_EQ(old.ignoredEvents, 2u);
    EXPECT_EQ(old.flows.size(), 4u);
    for (size_t i = 1; i < old.events.size(); ++i)
    {
        ASSERT_LE(old.events[i - 1].tsUs, old.events[i].tsUs);
    }
    const auto& gemm = old.events.at(FindByCorrelation(old, KinetoCategory::Kernel, 101));
    EXPECT_EQ(gemm.name, "ampere_sgemm_128x64_nn");
    EXPECT_DOUBLE_EQ(gemm.tsUs, 20);
    EXPECT_DOUBLE_EQ(gemm.durUs, 200);
    EXPECT_EQ(gemm.device, 0);
    EXPECT_EQ(gemm.stream, 7);
    EXPECT_TRUE(gemm.hasLaunchShape);
    EXPECT_EQ(gemm.grid, (std::array<uint32_t, 3>{64, 2, 1}));
    EXPECT_EQ(gemm.block, (std::array<uint32_t, 3>{128, 1, 1}));
    const auto& memset = old.events.at(FindByName(old, KinetoCategory::Memset, "Memset (Device)"));
    EXPECT_EQ(memset.correlation, -1); // linked to its launch by the ac2g flow only
    EXPECT_EQ(memset.bytes, 1024u);
    const auto& wait =
        old.events.at(FindByName(old, KinetoCategory::CudaSync, "Stream Wait Event"));
    EXPECT_EQ(wait.syncKind, KinetoSyncKind::StreamWaitEvent);
    EXPECT_EQ(wait.correlation, 104);
    EXPECT_EQ(wait.stream, 13);
    EXPECT_EQ(wait.waitOnStream, 7);
    EXPECT_EQ(wait.waitOnRecordCorrelation, 103);
    EXPECT_EQ(wait.waitOnEventId, 3);
    const auto& esync = old.events.at(FindByName(old, KinetoCategory::CudaSync, "Event Sync"));
    EXPECT_EQ(esync.syncKind, KinetoSyncKind::EventSync);
    EXPECT_EQ(esync.waitOnStream, 13);
    EXPECT_EQ(esync.waitOnRecordCorrelation, 106);

    // New format: float microseconds relative to baseTimeNanoseconds.
    const auto& neu = Trace(kDdpRank0);
    EXPECT_TRUE(neu.relativeTime);
    EXPECT_EQ(neu.baseTimeNs, 1700000000000000000LL);
    EXPECT_DOUBLE_EQ(neu.startUs, 100.0); // the ProfilerStep starts first
    EXPECT_DOUBLE_EQ(neu.AbsoluteStartUs(), 1700000000000000.0 + 100.0);
    EXPECT_EQ(neu.rank, 0);
    EXPECT_EQ(neu.worldSize, 2);
    ASSERT_EQ(neu.devices.size(), 1u);
    EXPECT_EQ(neu.devices[0].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(neu.devices[0].numSms, 132);
    EXPECT_EQ(neu.events.size(), 21u);
    EXPECT_EQ(neu.ignoredEvents, 2u); // the "M" process name and the python_function
    EXPECT_TRUE(neu.flows.empty());
    const auto& step =
        neu.events.at(FindByName(neu, KinetoCategory::UserAnnotation, "ProfilerStep#1"));
    EXPECT_DOUBLE_EQ(step.tsUs, 0);
    EXPECT_DOUBLE_EQ(step.durUs, 4190);
    const auto& copy = neu.events.at(FindByCorrelation(neu, KinetoCategory::Memcpy, 10));
    EXPECT_DOUBLE_EQ(copy.tsUs, 4180);
    EXPECT_DOUBLE_EQ(copy.durUs, 1.5); // sub-microsecond part kept
    EXPECT_EQ(copy.bytes, 4u);
    const auto& nccl = neu.events.at(FindByCorrelation(neu, KinetoCategory::Kernel, 5));
    EXPECT_TRUE(nccl.coll.present);
    EXPECT_EQ(nccl.coll.name, "allreduce");
    EXPECT_EQ(nccl.coll.dtype, "Float");
    EXPECT_EQ(nccl.coll.inNelems, 4194304);
    EXPECT_EQ(nccl.coll.outNelems, 4194304);
    EXPECT_EQ(nccl.coll.groupSize, 2);
    EXPECT_EQ(nccl.coll.pgName, "0");
    EXPECT_EQ(nccl.coll.pgRanks, "[0, 1]");
    EXPECT_EQ(nccl.stream, 20);
}

TEST(KinetoFixture, GraphEdgesOfEachKind)
{
    // DDP rank 0: top-level host ops M2, M4..M7 on the main thread and A1..A6 on the autograd
    // thread give 4 + 5 program-order edges; M4 starts 3,900 us after M2 ended, so it waits
    // for A6, the latest op of the other thread that ended in that gap.
    const auto& t = Trace(kDdpRank0);
    auto g = BuildKinetoGraph(t);
    EXPECT_EQ(g.counts.cpuCpu, 10u);
    EXPECT_EQ(g.counts.interThread, 1u);
    EXPECT_EQ(g.counts.cpuGpu, 5u); // five GPU ops, each with its launch
    EXPECT_EQ(g.counts.gpuCpu, 1u); // the final cudaStreamSynchronize
    EXPECT_EQ(g.counts.gpuGpu, 5u); // 3 in stream 7 (4 ops) + 2 cross-stream
    EXPECT_EQ(g.counts.crossStream, 2u);
    EXPECT_EQ(g.counts.crossStreamInferred, 2u);
    EXPECT_EQ(g.crossStreamMethod, CrossStreamMethod::Inferred);
    EXPECT_EQ(g.orphanGpuOps, 0u);
    const int64_t fwd = FindByCorrelation(t, KinetoCategory::Kernel, 1);
    const int64_t bwd = FindByCorrelation(t, KinetoCategory::Kernel, 2);
    const int64_t nccl = FindByCorrelation(t, KinetoCategory::Kernel, 5);
    const int64_t opt = FindByCorrelation(t, KinetoCategory::Kernel, 9);
    const int64_t copy = FindByCorrelation(t, KinetoCategory::Memcpy, 10);
    const int64_t sync = FindByCorrelation(t, KinetoCategory::Runtime, 11);
    const int64_t wait = FindByCorrelation(t, KinetoCategory::Runtime, 8);
    const int64_t accumulate = FindByName(
        t, KinetoCategory::CpuOp,
        "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
    EXPECT_TRUE(HasEdge(g, fwd, bwd, DepKind::GpuGpu, DepDetail::InStream));
    // DDP's pattern: the NCCL stream waits for the gradient, the optimizer for the NCCL kernel.
    EXPECT_TRUE(HasEdge(g, bwd, nccl, DepKind::GpuGpu, DepDetail::CrossStream));
    EXPECT_TRUE(HasEdge(g, nccl, opt, DepKind::GpuGpu, DepDetail::CrossStream));
    EXPECT_TRUE(HasEdge(g, accumulate, wait, DepKind::CpuCpu, DepDetail::InterThread));
    EXPECT_TRUE(HasEdge(g, copy, sync, DepKind::GpuCpu, DepDetail::StreamSync));
    EXPECT_TRUE(HasEdge(g,
                        FindByCorrelation(t, KinetoCategory::Runtime, 5),
                        nccl,
                        DepKind::CpuGpu,
                        DepDetail::Launch));
    // A launch inside aten::linear is its child, not a top-level op.
    EXPECT_EQ(g.parent[FindByCorrelation(t, KinetoCategory::Runtime, 1)],
              FindByName(t, KinetoCategory::CpuOp, "aten::linear"));
    ASSERT_EQ(g.threadLinks.size(), 1u);
    EXPECT_DOUBLE_EQ(g.threadLinks[0].idleFromUs, 50); // aten::linear ended at 150 - 100

    // Old format with cuda_sync events: 10 top-level host ops in one thread (9 edges), five
    // launches (the memset's through its flow), stream 7's four ops (3 edges) plus the one
    // recorded wait, and four GPU->CPU edges (event sync, blocking copy, device sync x2).
    const auto& o = Trace(kEventSyncOld);
    auto go = BuildKinetoGraph(o);
    EXPECT_EQ(go.counts.cpuCpu, 9u);
    EXPECT_EQ(go.counts.interThread, 0u);
    EXPECT_EQ(go.counts.cpuGpu, 5u);
    EXPECT_EQ(go.counts.gpuGpu, 4u);
    EXPECT_EQ(go.counts.gpuCpu, 4u);
    EXPECT_EQ(go.counts.crossStreamFromCudaSync, 1u);
    EXPECT_EQ(go.crossStreamMethod, CrossStreamMethod::CudaSync);
    const int64_t memset = FindByName(o, KinetoCategory::Memset, "Memset (Device)");
    const int64_t elementwise = FindByCorrelation(o, KinetoCategory::Kernel, 105);
    const int64_t reduce = FindByCorrelation(o, KinetoCategory::Kernel, 109);
    const int64_t d2h = FindByCorrelation(o, KinetoCategory::Memcpy, 108);
    const int64_t devSync = FindByCorrelation(o, KinetoCategory::Runtime, 110);
    EXPECT_TRUE(HasEdge(go,
                        FindByCorrelation(o, KinetoCategory::Runtime, 102),
                        memset,
                        DepKind::CpuGpu,
                        DepDetail::Launch));
    EXPECT_TRUE(HasEdge(go, memset, elementwise, DepKind::GpuGpu, DepDetail::CrossStream));
    EXPECT_TRUE(HasEdge(go,
                        elementwise,
                        FindByCorrelation(o, KinetoCategory::Runtime, 107),
                        DepKind::GpuCpu,
                        DepDetail::EventSync));
    EXPECT_TRUE(HasEdge(go,
                        d2h,
                        FindByCorrelation(o, KinetoCategory::Runtime, 108),
                        DepKind::GpuCpu,
                        DepDetail::SyncCopy));
    EXPECT_TRUE(HasEdge(go, reduce, devSync, DepKind::GpuCpu, DepDetail::DeviceSync));
    EXPECT_TRUE(HasEdge(go, elementwise, devSync, DepKind::GpuCpu, DepDetail::DeviceSync));
    ASSERT_EQ(go.crossStream.size(), 1u);
    EXPECT_EQ(go.crossStream[0].recordStream, 7);
    EXPECT_EQ(go.crossStream[0].waitStream, 13);
    EXPECT_EQ(go.crossStream[0].recordCall,
              static_cast<uint32_t>(FindByCorrelation(o, KinetoCategory::Runtime, 103)));

    // Disabling every kind removes those edges; program order and stream order stay.
    KinetoGraphOptions off;
    off.cpuCpu = off.cpuGpu = off.gpuCpu = off.gpuGpu = false;
    auto g2 = BuildKinetoGraph(t, off);
    EXPECT_EQ(g2.counts.cpuCpu, 9u);
    EXPECT_EQ(g2.counts.interThread, 0u);
    EXPECT_EQ(g2.counts.cpuGpu, 0u);
    EXPECT_EQ(g2.counts.gpuCpu, 0u);
    EXPECT_EQ(g2.counts.gpuGpu, 3u);
    EXPECT_EQ(g2.counts.crossStream, 0u);
}

TEST(KinetoFixture, CollectivesFromKernelArgsAndRecordParamComms)
{
    const auto& t = Trace(kCollectives);
    auto rt = KinetoToRankTrace(t, BuildKinetoGraph(t));
    struct Expected
    {
        CollKind kind;
        DataType dtype;
        uint64_t count;
        uint64_t bytes;
        double durUs;
    };
    // bytes = elements x dtype size, from "In msg nelems" except AllGather ("Out msg nelems").
    // The AllReduce kernel has no metadata: it comes from the enclosing record_param_comms.
    const std::vector<Expected> expected = {
        {CollKind::AllReduce, DataType::F32, 67108864, 67108864ull * 4, 1400},
        {CollKind::AllGather, DataType::BF16, 33554432, 67108864ull * 2, 400},
        {CollKind::ReduceScatter, DataType::F32, 67108864, 67108864ull * 4, 800},
        {CollKind::AllToAll, DataType::F16, 67108864, 67108864ull * 2, 450}};
    size_t k = 0;
    bool sawInit = false;
    for (const auto& op : rt.ops)
    {
        if (op.kind == OpKind::CommInit)
        {
            EXPECT_EQ(k, 0u) << "comm_init must precede the collectives";
            EXPECT_EQ(op.comm, "pg:0");
            EXPECT_EQ(op.nranks, 2);
            EXPECT_EQ(op.commRank, 0);
            sawInit = true;
        }
        if (op.kind != OpKind::Collective)
        {
            continue;
        }
        ASSERT_LT(k, expected.size());
        SCOPED_TRACE(k);
        EXPECT_EQ(op.coll, expected[k].kind);
        EXPECT_EQ(op.dtype, expected[k].dtype);
        EXPECT_EQ(op.count, expected[k].count);
        EXPECT_EQ(op.bytes, expected[k].bytes);
        EXPECT_DOUBLE_EQ(op.durUs, expected[k].durUs);
        EXPECT_EQ(op.comm, "pg:0");
        EXPECT_EQ(op.stream, 20);
        EXPECT_EQ(op.seq, k);
        ++k;
    }
    EXPECT_TRUE(sawInit);
    EXPECT_EQ(k, expected.size());
}

TEST(KinetoFixture, ThreadsMarkersEventsAndTokens)
{
    for (const auto& [file, rank, stepUs] :
         {std::make_tuple(kDdpRank0, 0, 4190.0), std::make_tuple(kDdpRank1, 1, 4090.0)})
    {
        SCOPED_TRACE(file);
        const auto& t = Trace(file);
        auto rt = KinetoToRankTrace(t, BuildKinetoGraph(t));
        EXPECT_EQ(rt.rank, static_cast<uint32_t>(rank));
        EXPECT_EQ(rt.device, "NVIDIA H100 80GB HBM3");
        std::map<OpKind, int> kinds;
        std::map<uint64_t, int64_t> recordStream;
        std::map<uint64_t, int64_t> waitStream;
        std::set<uint32_t> threads;
        uint64_t signal = 0;
        uint64_t waitToken = 0;
        for (size_t i = 0; i < rt.ops.size(); ++i)
        {
            const Op& op = rt.ops[i];
            ++kinds[op.kind];
            threads.insert(op.thread);
            if (i > 0)
            {
                EXPECT_LE(rt.ops[i - 1].thread, op.thread); // grouped by thread
            }
            switch (op.kind)
            {
            case OpKind::EventRecord:
                recordStream[op.event] = op.stream;
                break;
            case OpKind::StreamWaitEvent:
                waitStream[op.event] = op.stream;
                break;
            case OpKind::ThreadSignal:
                signal = op.token;
                EXPECT_EQ(op.thread, 1u); // the autograd thread starts second
                break;
            case OpKind::ThreadWait:
                waitToken = op.token;
                EXPECT_EQ(op.thread, 0u);
                break;
            case OpKind::Marker:
                EXPECT_DOUBLE_EQ(op.recordedUs, op.phase == MarkerPhase::Begin ? 0 : stepUs);
                break;
            case OpKind::CommInit:
                EXPECT_EQ(op.thread, 1u); // the thread that issues the first collective
                EXPECT_EQ(op.nranks, 2);
                EXPECT_EQ(op.commRank, rank);
                break;
            case OpKind::Collective:
                EXPECT_EQ(op.coll, CollKind::AllReduce);
                EXPECT_EQ(op.bytes, 4194304u * 4);
                EXPECT_EQ(op.comm, "pg:0");
                break;
            case OpKind::Memcpy:
                EXPECT_TRUE(op.async); // cudaMemcpyAsync into pinned memory does not block
                EXPECT_EQ(op.copyKind, MemcpyKind::DeviceToHost);
                break;
            default:
                break;
            }
        }
        EXPECT_EQ(threads.size(), 2u);
        EXPECT_EQ(kinds[OpKind::Kernel], 3);
        EXPECT_EQ(kinds[OpKind::Collective], 1);
        EXPECT_EQ(kinds[OpKind::CommInit], 1);
        EXPECT_EQ(kinds[OpKind::Memcpy], 1);
        EXPECT_EQ(kinds[OpKind::StreamSync], 1);
        EXPECT_EQ(kinds[OpKind::Marker], 2);
        EXPECT_EQ(kinds[OpKind::ThreadSignal], 1);
        EXPECT_EQ(kinds[OpKind::ThreadWait], 1);
        EXPECT_NE(signal, 0u);
        EXPECT_EQ(signal, waitToken);
        // Two pairs: compute (7) -> NCCL (20) before the AllReduce, and back after it.
        ASSERT_EQ(recordStream.size(), 2u);
        ASSERT_EQ(waitStream.size(), 2u);
        std::set<std::pair<int64_t, int64_t>> pairs;
        for (const auto& [event, stream] : recordStream)
        {
            ASSERT_TRUE(waitStream.count(event));
            pairs.insert({stream, waitStream[event]});
        }
        EXPECT_EQ(pairs, (std::set<std::pair<int64_t, int64_t>>{{7, 20}, {20, 7}}));
    }
}

TEST(KinetoFixture, QuickReplayReproducesTheRecordedSteps)
{
    // Recorded durations and every dependency: each step replays to its recorded length.
    const std::vector<std::tuple<std::string, std::string, double>> steps = {
        {kDdpRank0, "ProfilerStep#1", 4190},
        {kDdpRank1, "ProfilerStep#1", 4090},
        {kEventSyncOld, "ProfilerStep#7", 700},
        {kCollectives, "ProfilerStep#3", 3090}};
    for (const auto& [file, name, us] : steps)
    {
        SCOPED_TRACE(file);
        auto r = Replay(file);
        ASSERT_TRUE(r.complete) << r.stuck;
        ASSERT_EQ(r.iterations.size(), 1u);
        EXPECT_EQ(r.iterations[0].name, name);
        EXPECT_DOUBLE_EQ(r.iterations[0].recordedUs, us);
        EXPECT_NEAR(r.iterations[0].simulatedUs, us, 1e-6);
    }
    // GPU work lands where it was recorded: the AllReduce waits for the backward GEMM
    // (2030 us after the trace start) and lasts its 1500 us.
    const auto& t = Trace(kDdpRank0);
    auto rt = KinetoToRankTrace(t, BuildKinetoGraph(t));
    auto r = ReplayRecordedDurations(rt);
    bool found = false;
    for (size_t i = 0; i < rt.ops.size(); ++i)
    {
        if (rt.ops[i].kind == OpKind::Collective)
        {
            EXPECT_NEAR(r.startUs.at(i), 2030, 1e-6);
            EXPECT_NEAR(r.endUs.at(i), 3530, 1e-6);
            found = true;
        }
    }
    EXPECT_TRUE(found);
}

TEST(KinetoFixture, EachDependencyKindIsLoadBearing)
{
    // Replayed step lengths with one kind disabled, derived by hand in test/data/README.md.
    auto step = [](const std::string& f, const KinetoGraphOptions& o) {
        auto r = Replay(f, o);
        EXPECT_TRUE(r.complete) << r.stuck;
        return r.iterations.empty() ? -1.0 : r.iterations[0].simulatedUs;
    };
    KinetoGraphOptions o;
    // cpu_cpu: the main thread no longer waits for the autograd thread; its stream wait then
    // comes before the NCCL stream's record, so the optimizer runs right after the backward.
    o.cpuCpu = false;
    EXPECT_NEAR(step(kDdpRank0, o), 2240, 1e-6);
    // cpu_gpu: all GPU work is queued at the start of the thread.
    o = {};
    o.cpuGpu = false;
    EXPECT_NEAR(step(kEventSyncOld, o), 571, 1e-6);
    // gpu_cpu: the syncs and the blocking copy return without waiting.
    o = {};
    o.gpuCpu = false;
    EXPECT_NEAR(step(kEventSyncOld, o), 154, 1e-6);
    // gpu_gpu: stream 13 no longer waits for stream 7.
    o = {};
    o.gpuGpu = false;
    EXPECT_NEAR(step(kEventSyncOld, o), 586, 1e-6);
}

TEST(KinetoFixture, ReadKinetoJobOrdersRanks)
{
    std::vector<KinetoFileSummary> files;
    JobTrace job = ReadKinetoJob({kDdpRank1, kDdpRank0}, {}, &files);
    EXPECT_EQ(job.source, "kineto");
    ASSERT_EQ(job.ranks.size(), 2u);
    EXPECT_EQ(job.ranks[0].rank, 0u); // from distributedInfo, not the file order
    EXPECT_EQ(job.ranks[1].rank, 1u);
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[0].rank, 1);
    EXPECT_EQ(files[0].worldSize, 2);
    EXPECT_EQ(files[0].events, 21u);
    EXPECT_EQ(files[0].counts.cpuCpu, 10u);
    EXPECT_EQ(job.metadata.at("file.0"), kDdpRank0);
    // The same rank twice is an error.
    EXPECT_THROW(ReadKinetoJob({kDdpRank0, kDdpRank0}), TraceFormatError);

    // An NCCL kernel without collective metadata still becomes a collective (kind from its
    // name) on an unknown communicator, with no dtype and no size.
    TempDir dir;
    const std::string bare = dir.Write(
        "bare.json",
        Doc(R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":1}},)"
            R"({"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":9,"ts":5,"dur":20,"args":{"correlation":1,"stream":9}})"));
    JobTrace b = ReadKinetoJob({bare});
    uint64_t colls = 0;
    for (const auto& op : b.ranks.at(0).ops)
    {
        if (op.kind == OpKind::Collective)
        {
            ++colls;
            EXPECT_EQ(op.coll, CollKind::AllReduce);
            EXPECT_EQ(op.comm, "unknown");
            EXPECT_EQ(op.dtype, DataType::U8);
            EXPECT_EQ(op.bytes, 0u);
            EXPECT_DOUBLE_EQ(op.durUs, 20);
        }
    }
    EXPECT_EQ(colls, 1u);
}

TEST(KinetoRealTrace, ReaderParsesEveryTrace)
{
    SKIP_WITHOUT_SHARED_TRACES();
    auto files = AllTraces();
    ASSERT_GE(files.size(), 10u);
    for (const auto& f : files)
    {
        SCOPED_TRACE(f);
        const auto& t = Trace(f);
        EXPECT_GT(t.events.size(), 10u);
        EXPECT_GT(t.jsonBytes, 1000u);
        size_t gpu = std::count_if(
            t.events.begin(), t.events.end(), [](const KinetoEvent& e) { return e.IsGpu(); });
        EXPECT_GT(gpu, 0u);
        for (size_t i = 1; i < t.events.size(); ++i)
        {
            ASSERT_LE(t.events[i - 1].tsUs, t.events[i].tsUs);
        }
        // Conversion and replay finish on every trace.
        auto r = Replay(f);
        EXPECT_TRUE(r.complete) << r.stuck;
    }
}

TEST(KinetoRealTrace, OldAndNewTimeFormats)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // Old format: integer microseconds since the Unix epoch, no baseTimeNanoseconds.
    const auto& old = Trace(kEventSync);
    EXPECT_FALSE(old.relativeTime);
    EXPECT_EQ(old.baseTimeNs, -1);
    EXPECT_DOUBLE_EQ(old.startUs, 1707417525509335.0);
    EXPECT_NEAR(old.AbsoluteStartUs() / 1e6, 1707417525.5, 1.0);
    // New format: float microseconds relative to baseTimeNanoseconds.
    const auto& neu = Trace(kNccl);
    EXPECT_TRUE(neu.relativeTime);
    EXPECT_EQ(neu.baseTimeNs, 1711964646000000000LL);
    EXPECT_NEAR(neu.AbsoluteStartUs() / 1e6, 1711964646.0 + 4458676.0, 100.0);
    EXPECT_EQ(neu.rank, 0);
    EXPECT_EQ(neu.worldSize, 2);
    ASSERT_FALSE(neu.devices.empty());
    EXPECT_EQ(neu.devices[0].name, "NVIDIA A100-PG509-200");
    EXPECT_EQ(neu.devices[0].numSms, 108);
    // Both keep sub-microsecond durations where recorded.
    bool found = false;
    for (const auto& e : neu.events)
    {
        if (e.category == KinetoCategory::UserAnnotation && e.name == "ProfilerStep#5")
        {
            EXPECT_NEAR(e.durUs, 219726.905, 1e-3);
            found = true;
        }
    }
    EXPECT_TRUE(found);
    // ROCm: same categories, hip* runtime names, numeric args written as strings.
    const auto& mi300 = Trace(kDir + "tracelens_mi300__resnet_act_checkpoint.json.gz");
    EXPECT_EQ(mi300.devices.at(0).name, "AMD Instinct MI300X");
    uint64_t hipCopies = 0;
    for (const auto& e : mi300.events)
    {
        hipCopies +=
            e.category == KinetoCategory::Runtime && e.name == "hipMemcpyAsync" && e.bytes > 0;
    }
    EXPECT_GT(hipCopies, 0u);
}

TEST(KinetoRealTrace, DependencyCountsPerKind)
{
    SKIP_WITHOUT_SHARED_TRACES();
    const auto& t = Trace(kNccl);
    auto g = BuildKinetoGraph(t);
    EXPECT_GT(g.counts.cpuCpu, 0u);
    EXPECT_GT(g.counts.interThread, 0u);
    EXPECT_GT(g.counts.cpuGpu, 0u);
    EXPECT_GT(g.counts.gpuCpu, 0u);
    EXPECT_GT(g.counts.gpuGpu, 0u);
    EXPECT_GT(g.counts.crossStream, 0u);
    // nccl_data has no cuda_sync events: cross-stream pairs are inferred.
    EXPECT_EQ(g.crossStreamMethod, CrossStreamMethod::Inferred);
    EXPECT_EQ(g.counts.crossStreamFromCudaSync, 0u);
    // Every kernel/memcpy/memset has its launch: counted from the raw JSON.
    std::set<int64_t> launches;
    ForEachRawEvent(kNccl, [&launches](simdjson::dom::element e) {
        int64_t corr = 0;
        if (RawStr(e, "cat") == "cuda_runtime" && !e["args"]["correlation"].get(corr))
        {
            launches.insert(corr);
        }
    });
    const uint64_t launched = CountRawEvents(kNccl, [&launches](simdjson::dom::element e) {
        const auto cat = RawStr(e, "cat");
        int64_t corr = -1;
        return (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") &&
               !e["args"]["correlation"].get(corr) && launches.count(corr) > 0;
    });
    EXPECT_EQ(g.counts.cpuGpu, launched);
    // The inferred pairs are DDP's: the NCCL stream (40) waits for the compute stream (7)
    // before each collective, and the compute stream waits for the NCCL stream after it.
    uint64_t into = 0;
    uint64_t outOf = 0;
    for (const auto& l : g.crossStream)
    {
        ASSERT_GE(l.fromGpu, 0);
        ASSERT_GE(l.toGpu, 0);
        bool fromNccl = t.events[l.fromGpu].name.find("nccl") != std::string::npos;
        bool toNccl = t.events[l.toGpu].name.find("nccl") != std::string::npos;
        if (l.recordStream == 7 && l.waitStream == 40)
        {
            EXPECT_TRUE(toNccl);
            ++into;
        }
        else if (l.recordStream == 40 && l.waitStream == 7)
        {
            EXPECT_TRUE(fromNccl);
            ++outOf;
        }
        else
        {
            ADD_FAILURE() << "unexpected pair " << l.recordStream << " -> " << l.waitStream;
        }
    }
    // One pair per cudaStreamWaitEvent that the recording shows holding something: every wait
    // before a collective (42), and the 20 after one whose compute op started only once the
    // collective had ended; the other 22 compute ops ran beside the collective (until the
    // pairs were checked against the recording they were serialised after it, and the
    // replayed overlap of communication and compute was 0 instead of the recorded 1.9 ms per
    // step).
    const RawNcclWaits raw = CountRawNcclWaits(kNccl);
    EXPECT_EQ(raw.waits, 84u);
    EXPECT_EQ(into, raw.into);
    EXPECT_EQ(outOf, raw.outOf);
    EXPECT_EQ(raw.into, 42u);
    EXPECT_EQ(raw.outOf, 20u);
    // Disabling a kind removes its edges.
    KinetoGraphOptions off;
    off.cpuCpu = off.cpuGpu = off.gpuCpu = off.gpuGpu = false;
    auto g2 = BuildKinetoGraph(t, off);
    EXPECT_EQ(g2.counts.interThread, 0u);
    EXPECT_EQ(g2.counts.cpuGpu, 0u);
    EXPECT_EQ(g2.counts.gpuCpu, 0u);
    EXPECT_EQ(g2.counts.crossStream, 0u);

    // alexnet records cuda_sync events for most waits.
    auto ga = BuildKinetoGraph(Trace(kAlexnet));
    EXPECT_GT(ga.counts.crossStreamFromCudaSync, 0u);
    EXPECT_NE(ga.crossStreamMethod, CrossStreamMethod::None);
    EXPECT_GT(ga.counts.gpuCpu, 0u);
}

TEST(KinetoRealTrace, CrossStreamEdgesFromCudaSync)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // multi_stream: cudaStreamWaitEvent (corr 1389) makes stream 24 wait for the event
    // recorded by cudaEventRecord (corr 1385) on stream 20, whose last work is the sgemm
    // (corr 27). So sgemm(20) must precede the memset (corr 1411), the first op on stream 24
    // after the wait.
    const auto& t = Trace(kMultiStream);
    auto g = BuildKinetoGraph(t);
    EXPECT_EQ(g.crossStreamMethod, CrossStreamMethod::CudaSync);
    int64_t sgemm = FindByCorrelation(t, KinetoCategory::Kernel, 27);
    int64_t memset = FindByCorrelation(t, KinetoCategory::Memset, 1411);
    ASSERT_GE(sgemm, 0);
    ASSERT_GE(memset, 0);
    EXPECT_EQ(t.events[sgemm].stream, 20);
    EXPECT_EQ(t.events[memset].stream, 24);
    EXPECT_TRUE(HasEdge(g, sgemm, memset, DepKind::GpuGpu, DepDetail::CrossStream));
    ASSERT_EQ(g.crossStream.size(), 1u);
    EXPECT_EQ(g.crossStream[0].recordStream, 20);
    EXPECT_EQ(g.crossStream[0].waitStream, 24);
    EXPECT_TRUE(g.crossStream[0].fromCudaSync);
    // And the Op IR carries it as a record/wait pair on those streams with one event id.
    auto rt = KinetoToRankTrace(t, g);
    const Op* rec = nullptr;
    const Op* wait = nullptr;
    for (const auto& op : rt.ops)
    {
        if (op.kind == OpKind::EventRecord)
        {
            rec = &op;
        }
        if (op.kind == OpKind::StreamWaitEvent)
        {
            wait = &op;
        }
    }
    ASSERT_TRUE(rec && wait);
    EXPECT_EQ(rec->stream, 20);
    EXPECT_EQ(wait->stream, 24);
    EXPECT_EQ(rec->event, wait->event);

    // event_sync: cudaEventSynchronize (corr 1536) waits for the event recorded after the
    // spin kernel (corr 1526) on stream 7: a GPU->CPU edge spin_kernel -> the sync call.
    const auto& es = Trace(kEventSync);
    auto ge = BuildKinetoGraph(es);
    int64_t spin = FindByCorrelation(es, KinetoCategory::Kernel, 1526);
    int64_t sync = FindByCorrelation(es, KinetoCategory::Runtime, 1536);
    ASSERT_GE(spin, 0);
    ASSERT_GE(sync, 0);
    EXPECT_EQ(es.events[sync].name, "cudaEventSynchronize");
    EXPECT_TRUE(HasEdge(ge, spin, sync, DepKind::GpuCpu, DepDetail::EventSync));
    // cudaStreamSynchronize (corr 1512) waits for the D2H copy (corr 1511) on stream 7.
    int64_t copy = FindByCorrelation(es, KinetoCategory::Memcpy, 1511);
    int64_t ssync = FindByCorrelation(es, KinetoCategory::Runtime, 1512);
    EXPECT_TRUE(HasEdge(ge, copy, ssync, DepKind::GpuCpu, DepDetail::StreamSync) ||
                HasEdge(ge,
                        copy,
                        FindByCorrelation(es, KinetoCategory::Runtime, 1511),
                        DepKind::GpuCpu,
                        DepDetail::SyncCopy));

    // alexnet: every cross-stream pair taken from cuda_sync matches that event's streams.
    const auto& a = Trace(kAlexnet);
    auto ga = BuildKinetoGraph(a);
    uint64_t checked = 0;
    for (const auto& l : ga.crossStream)
    {
        if (!l.fromCudaSync)
        {
            continue;
        }
        for (const auto& e : a.events)
        {
            if (e.category == KinetoCategory::CudaSync &&
                e.correlation == a.events[l.waitCall].correlation)
            {
                EXPECT_EQ(e.stream, l.waitStream);
                EXPECT_EQ(e.waitOnStream, l.recordStream);
                EXPECT_EQ(a.events[l.recordCall].correlation, e.waitOnRecordCorrelation);
                ++checked;
            }
        }
        if (l.fromGpu >= 0 && l.toGpu >= 0)
        {
            EXPECT_EQ(a.events[l.fromGpu].stream, l.recordStream);
            EXPECT_EQ(a.events[l.toGpu].stream, l.waitStream);
        }
    }
    EXPECT_GT(checked, 0u);
}

TEST(KinetoRealTrace, NcclKernelsBecomeCollectives)
{
    SKIP_WITHOUT_SHARED_TRACES();
    auto ncclKernels = [](const std::string& file) {
        return CountRawEvents(file, IsRawNcclKernel);
    };
    const auto& t = Trace(kNccl);
    auto rt = KinetoToRankTrace(t, BuildKinetoGraph(t));
    EXPECT_EQ(rt.rank, 0u);
    uint64_t colls = 0;
    uint64_t expectSeq = 0;
    bool sawInit = false;
    bool sawBig = false;
    for (const auto& op : rt.ops)
    {
        if (op.kind == OpKind::CommInit)
        {
            EXPECT_FALSE(sawInit);
            EXPECT_EQ(colls, 0u) << "comm_init must precede the collectives";
            EXPECT_EQ(op.comm, "pg:0");
            EXPECT_EQ(op.nranks, 2);
            EXPECT_EQ(op.commRank, 0);
            sawInit = true;
        }
        if (op.kind != OpKind::Collective)
        {
            continue;
        }
        ++colls;
        EXPECT_EQ(op.comm, "pg:0");
        EXPECT_EQ(op.stream, 40);
        EXPECT_GT(op.durUs, 0);
        // Gradients are Float; a few broadcasts of int64 buffers are Long.
        EXPECT_TRUE(op.dtype == DataType::F32 || op.dtype == DataType::I64);
        EXPECT_EQ(op.bytes, op.count * (op.dtype == DataType::F32 ? 4 : 8));
        EXPECT_TRUE(op.coll == CollKind::AllReduce || op.coll == CollKind::Broadcast);
        if (op.count == 6637568 && std::fabs(op.durUs - 2636.669) < 1e-3)
        {
            EXPECT_EQ(op.coll, CollKind::AllReduce);
            sawBig = true;
        }
        // One thread issues them all here, so seq follows op order.
        EXPECT_EQ(op.seq, expectSeq++);
    }
    EXPECT_TRUE(sawInit);
    EXPECT_TRUE(sawBig);
    EXPECT_EQ(colls, ncclKernels(kNccl));

    // B200: AllGather, bytes from the output size, BFloat16; the kernel name alone would not
    // give the communicator.
    const auto& b = Trace(kDir + "tracelens_b200__eager_trace.json.gz");
    auto rb = KinetoToRankTrace(b, BuildKinetoGraph(b));
    uint64_t gathers = 0;
    for (const auto& op : rb.ops)
    {
        if (op.kind == OpKind::Collective)
        {
            ++gathers;
            EXPECT_EQ(op.coll, CollKind::AllGather);
            EXPECT_EQ(op.comm, "pg:3");
            EXPECT_EQ(op.count, 25136u);
            EXPECT_EQ(op.bytes, 201088u * 2);
            EXPECT_EQ(op.dtype, DataType::BF16);
        }
    }
    EXPECT_EQ(gathers, ncclKernels(kDir + "tracelens_b200__eager_trace.json.gz"));

    // MI300 (RCCL generic kernel): metadata from the enclosing record_param_comms op.
    const auto& m = Trace(kDir + "tracelens_mi300__resnet_act_checkpoint.json.gz");
    auto rm = KinetoToRankTrace(m, BuildKinetoGraph(m));
    uint64_t mcolls = 0;
    for (const auto& op : rm.ops)
    {
        if (op.kind == OpKind::Collective && op.comm == "pg:0")
        {
            ++mcolls;
            if (op.coll == CollKind::AllReduce)
            {
                EXPECT_EQ(op.dtype, DataType::BF16);
                EXPECT_EQ(op.bytes, op.count * 2);
            }
        }
    }
    EXPECT_GT(mcolls, 0u);
}

TEST(KinetoRealTrace, ThreadsMarkersAndTokens)
{
    SKIP_WITHOUT_SHARED_TRACES();
    const auto& t = Trace(kNccl);
    auto rt = KinetoToRankTrace(t, BuildKinetoGraph(t));
    std::set<uint64_t> signals;
    std::set<uint64_t> waits;
    std::set<uint32_t> threads;
    int begins = 0;
    int ends = 0;
    for (const auto& op : rt.ops)
    {
        threads.insert(op.thread);
        EXPECT_GE(op.cpuUs, 0);
        if (op.kind == OpKind::ThreadSignal)
        {
            signals.insert(op.token);
        }
        if (op.kind == OpKind::ThreadWait)
        {
            waits.insert(op.token);
        }
        if (op.kind == OpKind::Marker)
        {
            (op.phase == MarkerPhase::Begin ? begins : ends)++;
            EXPECT_GE(op.recordedUs, 0);
        }
    }
    EXPECT_GE(threads.size(), 2u); // main thread + autograd thread (+ a short-lived one)
    EXPECT_FALSE(waits.empty());
    EXPECT_EQ(signals, waits);
    EXPECT_EQ(begins, 3);
    EXPECT_EQ(ends, 3);
    // Ops are grouped by thread.
    for (size_t i = 1; i < rt.ops.size(); ++i)
    {
        EXPECT_LE(rt.ops[i - 1].thread, rt.ops[i].thread);
    }
}

TEST(KinetoRealTrace, ProfilerStepsWithinTwoPercent)
{
    SKIP_WITHOUT_SHARED_TRACES();
    for (const auto& f : kStepTraces)
    {
        SCOPED_TRACE(f);
        auto r = Replay(f);
        ASSERT_TRUE(r.complete) << r.stuck;
        ASSERT_FALSE(r.iterations.empty());
        for (const auto& it : r.iterations)
        {
            EXPECT_LE(std::fabs(it.ErrorPct()), 2.0)
                << it.name << " recorded " << it.recordedUs << " replayed " << it.simulatedUs;
        }
    }
    // The facts stated for nccl_data.
    auto r = Replay(kNccl);
    ASSERT_EQ(r.iterations.size(), 3u);
    EXPECT_EQ(r.iterations[1].name, "ProfilerStep#5");
    EXPECT_NEAR(r.iterations[1].recordedUs, 219727, 1);
    EXPECT_NEAR(r.iterations[2].recordedUs, 224936, 1);
    EXPECT_NEAR(r.iterations[1].simulatedUs, 219727, 219727 * 0.02);
    EXPECT_NEAR(r.iterations[2].simulatedUs, 224936, 224936 * 0.02);
}

TEST(KinetoRealTrace, EachDependencyKindIsLoadBearing)
{
    SKIP_WITHOUT_SHARED_TRACES();
    // Relative change of the replayed time when one kind is disabled; measured on a trace
    // where that kind decides the timing (numbers in doc/kineto-replay.md).
    auto steps = [](const std::string& f, const KinetoGraphOptions& o) {
        return TotalSimulated(Replay(f, o));
    };
    auto makespan = [](const std::string& f, const KinetoGraphOptions& o) {
        return Replay(f, o).makespanUs;
    };
    auto change = [](double a, double b) {
        return std::fabs(a - b) / b;
    };
    const KinetoGraphOptions all;
    KinetoGraphOptions o;
    // CPU->CPU: the main thread waits for the autograd thread in backward.
    o.cpuCpu = false;
    EXPECT_GT(change(steps(kNccl, o), steps(kNccl, all)), 0.2);
    // CPU->GPU: inference on H100 is launch-bound; without launch edges all GPU work is
    // ready at once and the final syncs wait for a much longer queue.
    o = {};
    o.cpuGpu = false;
    const std::string h100 = kDir + "tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
    EXPECT_GT(change(steps(h100, o), steps(h100, all)), 0.2);
    // GPU->CPU: event_sync's host waits for its spin kernel (cudaEventSynchronize).
    o = {};
    o.gpuCpu = false;
    EXPECT_GT(change(makespan(kEventSync, o), makespan(kEventSync, all)), 0.005);
    // GPU->GPU: on MI300 the RCCL stream waits for the compute stream.
    o = {};
    o.gpuGpu = false;
    const std::string mi300 = kDir + "tracelens_mi300__resnet_act_checkpoint.json.gz";
    EXPECT_GT(change(makespan(mi300, o), makespan(mi300, all)), 0.02);
}

TEST(KinetoReader, PlainJsonAndOutOfOrderEvents)
{
    TempDir dir;
    // The same trace gzipped reads the same.
    std::string text = LoadKinetoText(kEventSyncOld);
    auto a = ReadKinetoTrace(dir.WriteGz("fixture.json.gz", text));
    const auto& b = Trace(kEventSyncOld);
    ASSERT_EQ(a.events.size(), b.events.size());
    EXPECT_EQ(a.flows.size(), b.flows.size());
    for (size_t i = 0; i < a.events.size(); ++i)
    {
        EXPECT_EQ(a.events[i].name, b.events[i].name);
        EXPECT_EQ(a.events[i].tsUs, b.events[i].tsUs);
    }
    // An empty event list is a valid (empty) trace (regression: found by the fuzzer).
    auto none = ReadKinetoTrace(dir.Write("none.json", Doc("")));
    EXPECT_TRUE(none.events.empty());
    auto noneReplay = ReplayRecordedDurations(KinetoToRankTrace(none, BuildKinetoGraph(none)));
    EXPECT_TRUE(noneReplay.complete);
    EXPECT_EQ(noneReplay.opsExecuted, 0u);
    // Events in reverse file order: the reader sorts them, so graph and replay agree.
    std::string events;
    std::vector<std::string> list = {
        R"({"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":34,"dur":16,"args":{"correlation":2,"stream":7}})",
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":30,"dur":25,"args":{"correlation":3}})",
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":2}})",
        R"({"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":14,"dur":20,"args":{"correlation":1,"stream":7}})",
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":4,"args":{"correlation":1}})",
        R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":5,"dur":55})"};
    std::string fwd;
    std::string rev;
    for (size_t i = 0; i < list.size(); ++i)
    {
        rev += (i ? "," : "") + list[i];
        fwd += (i ? "," : "") + list[list.size() - 1 - i];
    }
    auto tf = ReadKinetoTrace(dir.Write("fwd.json", Doc(fwd)));
    auto tr = ReadKinetoTrace(dir.Write("rev.json", Doc(rev)));
    auto gf = BuildKinetoGraph(tf);
    auto gr = BuildKinetoGraph(tr);
    EXPECT_EQ(gf.counts.cpuGpu, 2u);
    EXPECT_EQ(gf.counts.gpuCpu, 1u);
    EXPECT_EQ(gf.counts.cpuGpu, gr.counts.cpuGpu);
    EXPECT_EQ(gf.counts.gpuCpu, gr.counts.gpuCpu);
    EXPECT_EQ(gf.counts.gpuGpu, gr.counts.gpuGpu);
    auto rf = ReplayRecordedDurations(KinetoToRankTrace(tf, gf));
    auto rr = ReplayRecordedDurations(KinetoToRankTrace(tr, gr));
    ASSERT_EQ(rf.iterations.size(), 1u);
    EXPECT_DOUBLE_EQ(rf.iterations[0].simulatedUs, rr.iterations[0].simulatedUs);
    EXPECT_NEAR(rf.iterations[0].simulatedUs, 55, 1e-9);
}

TEST(KinetoReader, BadInputThrowsTraceFormatError)
{
    TempDir dir;
    // Truncated gzip: the first half of a gzipped fixture.
    {
        std::ifstream in(dir.WriteGz("whole.json.gz", LoadKinetoText(kDdpRank0)),
                         std::ios::binary);
        std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto e = ExpectFormatError(dir.Write("truncated.json.gz", gz.substr(0, gz.size() / 2)));
        EXPECT_GT(e.Line(), 0u);
        EXPECT_NE(e.Reason().find("gzip"), std::string::npos) << e.Reason();
        // Garbage after a valid gzip header.
        std::string bad = gz.substr(0, 64) + std::string(256, 'x');
        ExpectFormatError(dir.Write("corrupt.json.gz", bad));
    }
    // Invalid JSON: simdjson's message and the offset of the problem.
    {
        std::string doc = Doc(std::string(kGoodEvent) + ",{\"ph\":\"X\",,}");
        auto e = ExpectFormatError(dir.Write("invalid.json", doc));
        EXPECT_NE(e.Reason().find("invalid JSON"), std::string::npos) << e.Reason();
        EXPECT_GT(e.Line(), doc.find(",{\"ph\"") - 1);
        EXPECT_LE(e.Line(), doc.size());
    }
    // Truncated JSON text (gzip itself fine).
    {
        std::string doc = Doc(std::string(kGoodEvent) + "," + kGoodEvent);
        ExpectFormatError(dir.WriteGz("cut.json.gz", doc.substr(0, doc.size() - 30)));
    }
    // Missing required fields name the event index and the field.
    {
        std::string ev = R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10})";
        std::string doc = Doc(std::string(kGoodEvent) + "," + ev);
        auto e = ExpectFormatError(dir.Write("missing.json", doc));
        EXPECT_NE(e.Reason().find("event 1"), std::string::npos) << e.Reason();
        EXPECT_NE(e.Reason().find("'dur'"), std::string::npos) << e.Reason();
        EXPECT_EQ(e.Line(), doc.find(ev));
    }
    {
        auto e = ExpectFormatError(dir.Write("noph.json", Doc(R"({"name":"x","ts":1})")));
        EXPECT_NE(e.Reason().find("'ph'"), std::string::npos) << e.Reason();
    }
    {
        auto e = ExpectFormatError(dir.Write("noevents.json", R"({"schemaVersion":1})"));
        EXPECT_NE(e.Reason().find("traceEvents"), std::string::npos) << e.Reason();
    }
    // Wrong types: non-numeric ts / dur, object where an array is expected, bad args.
    for (
        const char* ev :
        {R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":"10","dur":5})",
         R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":null})",
         R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":5,"args":{"correlation":"abc"}})",
         R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":5,"args":[1]})",
         R"({"ph":"X","cat":"kernel","name":7,"pid":0,"tid":7,"ts":10,"dur":5})",
         R"({"ph":"X","cat":"kernel","name":"k","pid":[],"tid":7,"ts":10,"dur":5})"})
    {
        SCOPED_TRACE(ev);
        std::string doc = Doc(std::string(kGoodEvent) + "," + ev);
        auto e = ExpectFormatError(dir.Write("types.json", doc));
        EXPECT_NE(e.Reason().find("event 1"), std::string::npos) << e.Reason();
        EXPECT_GE(e.Line(), doc.find(ev));
    }
    {
        auto e = ExpectFormatError(dir.Write("notarray.json", R"({"traceEvents":{"a":1}})"));
        EXPECT_NE(e.Reason().find("traceEvents"), std::string::npos) << e.Reason();
    }
    // Negative duration.
    {
        std::string ev =
            R"({"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":1,"ts":10,"dur":-3})";
        auto e = ExpectFormatError(dir.Write("negative.json", Doc(ev)));
        EXPECT_NE(e.Reason().find("negative"), std::string::npos) << e.Reason();
    }
    // Empty file, binary noise, trailing garbage, top-level scalar.
    ExpectFormatError(dir.Write("empty.json", ""));
    ExpectFormatError(dir.Write("noise.json", std::string("\x01\x02\xff\xfe{[", 6)));
    ExpectFormatError(dir.Write("trailing.json", Doc(kGoodEvent) + " {}"));
    ExpectFormatError(dir.Write("scalar.json", "42"));
    // A missing file is an error too (offset 0).
    EXPECT_THROW(ReadKinetoTrace(dir.Write("x", "") + ".does-not-exist"), TraceFormatError);
}

TEST(KinetoGraph, SyncsAndWaitsBeforeAnyLaunch)
{
    // Regression (found by the fuzzer): a stream sync and a stream wait that name streams with
    // no work launched yet must add no edge (and must not index past the launch lists).
    TempDir dir;
    std::string events =
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":5}},)"
        R"({"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":1,"dur":1,"args":{"correlation":5,"stream":7,"cuda_sync_kind":"Stream Sync"}},)"
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaStreamWaitEvent","pid":1,"tid":1,"ts":4,"dur":1,"args":{"correlation":6}},)"
        R"({"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":9,"ts":4,"dur":1,"args":{"correlation":6,"stream":9,"wait_on_stream":7,"cuda_sync_kind":"Stream Wait Event"}},)"
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":6,"dur":1,"args":{"correlation":8}},)"
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":3,"args":{"correlation":7}},)"
        R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":14,"dur":5,"args":{"correlation":7,"stream":7}})";
    auto t = ReadKinetoTrace(dir.Write("early.json", Doc(events)));
    auto g = BuildKinetoGraph(t);
    EXPECT_EQ(g.counts.gpuCpu, 0u);
    EXPECT_EQ(g.counts.crossStream, 0u);
    EXPECT_EQ(g.counts.cpuGpu, 1u);
    auto r = ReplayRecordedDurations(KinetoToRankTrace(t, g));
    EXPECT_TRUE(r.complete);
    EXPECT_NEAR(r.makespanUs, (13 - 1) + 5, 1e-9); // times count from the first event (ts 1)
}

TEST(KinetoRealTrace, ReadKinetoJobTwoRanks)
{
    SKIP_WITHOUT_SHARED_TRACES();
    const std::string r0 = kDir + "hta_trace_filter__sampled_rank-0.json.gz";
    const std::string r1 = kDir + "hta_trace_filter__sampled_rank-1.json.gz";
    JobTrace job = ReadKinetoJob({r1, r0});
    EXPECT_EQ(job.source, "kineto");
    ASSERT_EQ(job.ranks.size(), 2u);
    EXPECT_EQ(job.ranks[0].rank, 0u);
    EXPECT_EQ(job.ranks[1].rank, 1u);
    EXPECT_FALSE(job.ranks[0].ops.empty());
    // Without collective metadata the NCCL kernels still become collectives, on an unknown
    // communicator, numbered in launch order on each rank.
    for (const auto& rank : job.ranks)
    {
        uint64_t colls = 0;
        for (const auto& op : rank.ops)
        {
            if (op.kind == OpKind::Collective)
            {
                EXPECT_EQ(op.comm, "unknown");
                ++colls;
            }
        }
        EXPECT_GT(colls, 0u);
    }
    // The same rank twice is an error.
    EXPECT_THROW(ReadKinetoJob({r0, r0}), TraceFormatError);
}
