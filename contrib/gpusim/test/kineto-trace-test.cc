// Tests of the Kineto reader, execution graph, Op IR conversion and quick replay, on the real
// traces under ../shared/data/kineto and on malformed inputs written to a temp dir.
#include "ns3/kineto-quick-replay.h"
#include "ns3/kineto-trace.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace ns3::gpusim;
namespace fs = std::filesystem;

namespace
{

const std::string kDir = GPUSIM_SHARED_DIR "/data/kineto/";
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

class TempDir
{
  public:
    TempDir()
    {
        m_path = fs::temp_directory_path() / ("gpusim-kineto-test-" + std::to_string(::getpid()));
        fs::create_directories(m_path);
    }
    ~TempDir()
    {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    std::string Write(const std::string& name, const std::string& content) const
    {
        std::string p = (m_path / name).string();
        std::ofstream(p, std::ios::binary) << content;
        return p;
    }
    std::string WriteGz(const std::string& name, const std::string& content) const
    {
        std::string p = (m_path / name).string();
        gzFile gz = gzopen(p.c_str(), "wb");
        gzwrite(gz, content.data(), static_cast<unsigned>(content.size()));
        gzclose(gz);
        return p;
    }

  private:
    fs::path m_path;
};

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

TEST(KinetoReader, ParsesEverySharedTrace)
{
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

TEST(KinetoReader, OldAndNewTimeFormats)
{
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

TEST(KinetoGraph, DependencyCountsPerKind)
{
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
    EXPECT_EQ(g.counts.cpuGpu, 3774u); // every kernel/memcpy/memset has its launch
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
    EXPECT_EQ(into, 42u);
    EXPECT_EQ(outOf, 42u);
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

TEST(KinetoGraph, CrossStreamEdgesFromCudaSync)
{
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

TEST(KinetoConvert, NcclKernelsBecomeCollectives)
{
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
    EXPECT_EQ(colls, 21u);

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
    EXPECT_EQ(gathers, 1u);

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

TEST(KinetoConvert, ThreadsMarkersAndTokens)
{
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

TEST(KinetoReplay, ProfilerStepsWithinTwoPercent)
{
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

TEST(KinetoReplay, EachDependencyKindIsLoadBearing)
{
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
    // GPU->CPU: simple_add synchronises after every step.
    o = {};
    o.gpuCpu = false;
    const std::string add =
        kDir + "hta_critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz";
    EXPECT_GT(change(makespan(add, o), makespan(add, all)), 0.005);
    // GPU->GPU: on MI300 the RCCL stream waits for the compute stream.
    o = {};
    o.gpuGpu = false;
    const std::string mi300 = kDir + "tracelens_mi300__resnet_act_checkpoint.json.gz";
    EXPECT_GT(change(makespan(mi300, o), makespan(mi300, all)), 0.02);
}

TEST(KinetoReader, PlainJsonAndOutOfOrderEvents)
{
    TempDir dir;
    std::string text = LoadKinetoText(kEventSync);
    std::string plain = dir.Write("plain.json", text);
    auto a = ReadKinetoTrace(plain);
    const auto& b = Trace(kEventSync);
    EXPECT_EQ(a.events.size(), b.events.size());
    EXPECT_EQ(a.flows.size(), b.flows.size());
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
    // Truncated gzip: the first half of a real trace.
    {
        std::ifstream in(kNccl, std::ios::binary);
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

TEST(KinetoConvert, ReadKinetoJobTwoRanks)
{
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
