#include "ns3/replay-command.h"

#include "ns3/boolean.h"
#include "ns3/cli-options.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/json-writer.h"
#include "ns3/kineto-trace.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>

namespace ns3
{
namespace gpusim
{

NS_LOG_COMPONENT_DEFINE("GpusimReplay");

namespace
{

constexpr double kSmBucketUs = 1000; //!< SM-busy timeline resolution (1 ms)
constexpr int64_t kHostPidBase = 1000000; //!< host processes after the GPU "processes"

double
ToUs(Time t)
{
    return t.GetNanoSeconds() / 1e3;
}

void
PrintReplayUsage(std::ostream& os)
{
    os << "usage: gpusim replay TRACE... [options]\n"
          "  TRACE                 Kineto trace (.json or .json.gz), one per rank\n"
          "  --json FILE           results as JSON\n"
          "  --trace FILE          simulated trace (Kineto-style Chrome JSON, opens in Perfetto)\n"
          "  --comm recorded|simulated\n"
          "                        recorded (default): NCCL kernels take their recorded time;\n"
          "                        simulated: collectives run over the network (a single-rank\n"
          "                        trace of a W-rank job becomes W data-parallel replicas)\n"
          "  --dp N                what-if: N data-parallel replicas of rank 0 (implies\n"
          "                        --comm simulated)\n"
          "  --scale-kernels REGEX=FACTOR   multiply matching kernels' time (repeatable)\n"
          "  --gap-us X            inter-thread dependency gap threshold (default 1000)\n"
          "  --no-dep cpu_cpu|cpu_gpu|gpu_cpu|gpu_gpu   drop a dependency kind (repeatable)\n"
          "  --preset NAME | --cluster FILE   cluster (default dgx-h100, sized to the ranks)\n"
          "  --servers N --gpus-per-server G --nics-per-server K --nic-gbps X --nvlink-gbps Y\n"
          "  --fabric single-switch|leaf-spine|fat-tree|rail  --oversubscription R  --gpu MODEL\n";
}

/// Communicator size per id, from the CommInit ops of a rank.
std::map<std::string, int32_t>
CommSizes(const RankTrace& rank)
{
    std::map<std::string, int32_t> sizes;
    for (const Op& op : rank.ops)
    {
        if (op.kind == OpKind::CommInit)
        {
            sizes[op.comm] = op.nranks;
        }
    }
    return sizes;
}

/// Rescales a collective of a g-rank communicator that becomes an n-rank one so that each
/// rank still contributes what it did in the trace. `bytes` is the whole per-rank buffer
/// (doc/op-ir.md): for AllReduce, Broadcast and Reduce that is the payload itself; AllGather's
/// receive buffer and ReduceScatter's and AllToAll's send buffers hold one piece per rank, so
/// they grow with the rank count.
void
KeepPerRankPayload(Op& op, uint32_t g, uint32_t n)
{
    // floor(x * n / g) without overflowing x * n.
    auto scale = [g, n](uint64_t x) { return x / g * n + x % g * n / g; };
    switch (op.coll)
    {
    case CollKind::AllGather:
        op.bytes = scale(op.bytes); // count is the per-rank input (NCCL's sendcount)
        break;
    case CollKind::ReduceScatter:
    case CollKind::AllToAll:
        op.bytes = scale(op.bytes); // count, like bytes, covers the whole send buffer
        op.count = scale(op.count);
        break;
    default:
        break;
    }
}

/// Replicates `tmpl` into n data-parallel ranks (see PrepareReplayJob).
JobTrace
ReplicateDataParallel(const RankTrace& tmpl, uint32_t n, const std::string& source)
{
    const auto sizes = CommSizes(tmpl);
    int32_t world = 1;
    for (const auto& [comm, size] : sizes)
    {
        world = std::max(world, size);
    }
    // New (id, size, rank) of a communicator on replica r.
    auto remap = [&](const std::string& comm, uint32_t r, int32_t& size, int32_t& rank) {
        auto it = sizes.find(comm);
        const int32_t g = it == sizes.end() ? world : it->second;
        if (g == world)
        {
            size = static_cast<int32_t>(n);
            rank = static_cast<int32_t>(r);
            return comm;
        }
        if (g <= 0 || n % static_cast<uint32_t>(g) != 0)
        {
            throw std::invalid_argument("communicator " + comm + " has " + std::to_string(g) +
                                        " ranks, which does not divide " + std::to_string(n) +
                                        " replicas");
        }
        size = g;
        rank = static_cast<int32_t>(r % g);
        return comm + "/group" + std::to_string(r / g);
    };
    JobTrace job;
    job.source = source;
    job.metadata["replicas"] = std::to_string(n);
    job.metadata["recorded_world_size"] = std::to_string(world);
    for (uint32_t r = 0; r < n; ++r)
    {
        RankTrace rt = tmpl;
        rt.rank = r;
        for (Op& op : rt.ops)
        {
            if (op.kind == OpKind::CommInit || op.kind == OpKind::Collective)
            {
                int32_t size = 0;
                int32_t rank = 0;
                auto it = sizes.find(op.comm);
                const int32_t recordedSize = it == sizes.end() ? world : it->second;
                op.comm = remap(op.comm, r, size, rank);
                if (op.kind == OpKind::CommInit)
                {
                    op.nranks = size;
                    op.commRank = rank;
                }
                else if (size != recordedSize && recordedSize > 0)
                {
                    KeepPerRankPayload(op, recordedSize, size);
                }
            }
        }
        job.ranks.push_back(std::move(rt));
    }
    return job;
}

/// Merged busy intervals (ns) of kernels (compute and NCCL; copies run on copy engines).
std::vector<std::pair<int64_t, int64_t>>
KernelIntervals(const std::vector<StreamActivity>& acts, uint32_t rank)
{
    std::vector<std::pair<int64_t, int64_t>> v;
    for (const auto& a : acts)
    {
        if (a.rank == rank &&
            (a.op->kind == OpKind::Kernel || a.op->kind == OpKind::Collective) && a.end > a.start)
        {
            v.push_back({a.start.GetNanoSeconds(), a.end.GetNanoSeconds()});
        }
    }
    std::sort(v.begin(), v.end());
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const auto& iv : v)
    {
        if (!out.empty() && iv.first <= out.back().second)
        {
            out.back().second = std::max(out.back().second, iv.second);
        }
        else
        {
            out.push_back(iv);
        }
    }
    return out;
}

/// Busy nanoseconds of merged intervals inside [lo, hi).
int64_t
BusyWithin(const std::vector<std::pair<int64_t, int64_t>>& merged, int64_t lo, int64_t hi)
{
    int64_t busy = 0;
    auto it = std::lower_bound(merged.begin(), merged.end(), std::make_pair(lo, lo),
                               [](const auto& a, const auto& b) { return a.second < b.first; });
    for (; it != merged.end() && it->first < hi; ++it)
    {
        busy += std::max<int64_t>(0, std::min(hi, it->second) - std::max(lo, it->first));
    }
    return busy;
}

const char*
KinetoCategoryOf(const Op& op)
{
    switch (op.kind)
    {
    case OpKind::Memcpy:
        return "gpu_memcpy";
    case OpKind::Memset:
        return "gpu_memset";
    default:
        return "kernel";
    }
}

/// The simulated run as a Kineto-style Chrome trace: GPU work with pid = rank (device),
/// tid = stream and Kineto's categories; iteration markers as user_annotation slices on the
/// host threads; simulated times in place of the recorded ones.
std::string
SimulatedKinetoTrace(const GpuWorkload& w)
{
    JsonWriter j;
    j.BeginObject();
    j.Key("schemaVersion").Int(1);
    j.Key("traceName").String("gpusim replay (simulated times)");
    if (w.GetNRanks() == 1)
    {
        j.Key("distributedInfo").BeginObject().Key("rank").Int(0);
        j.Key("world_size").Int(1).EndObject();
    }
    j.Key("displayTimeUnit").String("ms");
    j.Key("traceEvents").BeginArray();
    auto meta = [&j](const char* what, int64_t pid, int64_t tid, const std::string& name) {
        j.BeginObject().Key("ph").String("M").Key("name").String(what);
        j.Key("pid").Int(pid).Key("tid").Int(tid).Key("ts").Int(0);
        j.Key("args").BeginObject().Key("name").String(name).EndObject().EndObject();
    };
    for (uint32_t r = 0; r < w.GetNRanks(); ++r)
    {
        Ptr<CudaContext> ctx = w.GetContext(r);
        meta("process_name", r, 0, "GPU " + std::to_string(r) + " (simulated)");
        meta("process_name", kHostPidBase + r, 0, "host of rank " + std::to_string(r));
        for (const auto& [id, s] : ctx->GetStreams())
        {
            meta("thread_name", r, id, "stream " + std::to_string(id));
        }
        std::map<std::pair<uint32_t, std::string>, Time> open;
        for (const auto& m : ctx->GetMarkers())
        {
            auto key = std::make_pair(m.thread, m.op->name);
            if (m.op->phase == MarkerPhase::Begin)
            {
                open[key] = m.time;
            }
            else if (m.op->phase == MarkerPhase::End && open.count(key))
            {
                j.BeginObject().Key("ph").String("X").Key("cat").String("user_annotation");
                j.Key("name").String(m.op->name).Key("pid").Int(kHostPidBase + r);
                j.Key("tid").Int(m.thread).Key("ts").Double(ToUs(open[key]));
                j.Key("dur").Double(ToUs(m.time - open[key])).EndObject();
                open.erase(key);
            }
        }
    }
    int64_t correlation = 0;
    for (const auto& a : w.GetActivities())
    {
        const Op& op = *a.op;
        const bool nccl = op.kind == OpKind::Collective || !op.comm.empty();
        std::string name = op.name;
        if (name.empty())
        {
            name = nccl ? std::string("nccl:") + ToString(op.coll) : ToString(op.kind);
        }
        j.BeginObject().Key("ph").String("X").Key("cat").String(KinetoCategoryOf(op));
        j.Key("name").String(name).Key("pid").Uint(a.rank).Key("tid").Int(a.stream);
        j.Key("ts").Double(ToUs(a.start)).Key("dur").Double(ToUs(a.end - a.start));
        j.Key("args").BeginObject();
        j.Key("device").Uint(a.rank).Key("stream").Int(a.stream);
        j.Key("correlation").Int(++correlation);
        if (op.durUs >= 0)
        {
            j.Key("recorded dur").Double(op.durUs);
        }
        if (op.kind == OpKind::Memcpy || op.kind == OpKind::Memset)
        {
            j.Key("bytes").Uint(op.bytes);
        }
        if (nccl)
        {
            j.Key("Collective name").String(ToString(op.coll));
            j.Key("Process Group Name").String(op.comm);
            j.Key("In msg nelems").Uint(op.count);
        }
        j.EndObject().EndObject();
    }
    j.EndArray().EndObject();
    return j.Take() + "\n";
}

} // namespace

std::shared_ptr<JobTrace>
PrepareReplayJob(const JobTrace& job, ReplayCommMode mode, uint32_t dataParallel)
{
    if (job.ranks.empty())
    {
        throw std::invalid_argument("no ranks to replay");
    }
    if (mode == ReplayCommMode::Recorded)
    {
        auto out = std::make_shared<JobTrace>(job);
        for (RankTrace& rank : out->ranks)
        {
            for (Op& op : rank.ops)
            {
                if (op.kind == OpKind::Collective)
                {
                    // Keeps comm, coll, count, bytes and durUs: a kernel that the breakdown
                    // and the trace still see as NCCL work.
                    op.kind = OpKind::Kernel;
                    op.group = 0;
                }
                else if (op.kind == OpKind::CommInit)
                {
                    op.kind = OpKind::HostWork; // keeps its cpuUs
                    op.comm.clear();
                }
            }
        }
        return out;
    }
    if (dataParallel > 0)
    {
        return std::make_shared<JobTrace>(
            ReplicateDataParallel(job.ranks.front(), dataParallel, job.source));
    }
    if (job.ranks.size() == 1)
    {
        int32_t world = 1;
        for (const auto& [comm, size] : CommSizes(job.ranks.front()))
        {
            world = std::max(world, size);
        }
        if (world > 1)
        {
            return std::make_shared<JobTrace>(
                ReplicateDataParallel(job.ranks.front(), world, job.source));
        }
    }
    return std::make_shared<JobTrace>(job);
}

namespace
{

/// What a `gpusim replay` command line asks for, checked.
struct ReplaySettings
{
    ReplayCommMode mode = ReplayCommMode::Recorded;
    std::string modeName;  //!< "recorded" or "simulated"
    uint32_t dp = 0;       //!< --dp replicas (0: none)
    KinetoGraphOptions graph;
    std::vector<std::string> disabled; //!< --no-dep kinds, once each, in command-line order
    std::vector<std::pair<std::string, double>> scales; //!< --scale-kernels REGEX, FACTOR
};

/// --no-dep KIND (repeatable): switches the kind off in `s.graph` and lists it once.
void
ParseDisabledDependencies(const Options& o, ReplaySettings& s)
{
    for (const std::string& kind : o.All("no-dep"))
    {
        if (kind == "cpu_cpu")
        {
            s.graph.cpuCpu = false;
        }
        else if (kind == "cpu_gpu")
        {
            s.graph.cpuGpu = false;
        }
        else if (kind == "gpu_cpu")
        {
            s.graph.gpuCpu = false;
        }
        else if (kind == "gpu_gpu")
        {
            s.graph.gpuGpu = false;
        }
        else
        {
            throw UsageError("--no-dep must be cpu_cpu, cpu_gpu, gpu_cpu or gpu_gpu");
        }
        if (std::find(s.disabled.begin(), s.disabled.end(), kind) == s.disabled.end())
        {
            s.disabled.push_back(kind);
        }
    }
}

/// Checks --comm, --dp, --gap-us, --no-dep and --scale-kernels; throws UsageError.
ReplaySettings
ParseReplaySettings(const Options& o)
{
    ReplaySettings s;
    const std::string commName = o.Get("comm", "recorded");
    if (commName != "recorded" && commName != "simulated")
    {
        throw UsageError("--comm must be recorded or simulated");
    }
    s.dp = o.Count("dp", 0);
    if (o.Has("dp") && s.dp == 0)
    {
        throw UsageError("--dp needs at least 1 rank");
    }
    if (s.dp > 0 && o.Has("comm") && commName == "recorded")
    {
        throw UsageError("--dp re-simulates collectives; it cannot be used with "
                         "--comm recorded");
    }
    s.mode = (commName == "simulated" || s.dp > 0) ? ReplayCommMode::Simulated
                                                   : ReplayCommMode::Recorded;
    s.modeName = s.mode == ReplayCommMode::Simulated ? "simulated" : "recorded";
    s.graph.gapThresholdUs = o.Number("gap-us", s.graph.gapThresholdUs);
    if (s.graph.gapThresholdUs < 0)
    {
        throw UsageError("--gap-us must be >= 0");
    }
    ParseDisabledDependencies(o, s);
    for (const std::string& value : o.All("scale-kernels"))
    {
        std::string regex;
        double factor = 1;
        ParseKernelScale(value, regex, factor);
        s.scales.emplace_back(regex, factor);
    }
    return s;
}

/// The replay on the engine; members stay alive until the results have been read.
struct ReplayEngine
{
    GpuClusterHelper cluster;
    NodeContainer gpus;
    Ptr<FlowBackend> backend;
    GpuWorkloadHelper helper;
    Ptr<GpuWorkload> workload;
};

/// Builds the cluster and the flow network and installs the job with recorded durations
/// (RecordedDurationCostModel) and the --scale-kernels rules.
void
InstallReplay(ReplayEngine& e,
              std::shared_ptr<JobTrace> job,
              const ClusterSpec& spec,
              const ReplaySettings& s)
{
    const uint32_t nRanks = job->ranks.size();
    e.cluster.SetSpec(spec);
    e.gpus = e.cluster.Create();
    if (e.gpus.GetN() < nRanks)
    {
        throw std::invalid_argument("the replay has " + std::to_string(nRanks) +
                                    " ranks but the cluster has " +
                                    std::to_string(e.gpus.GetN()) + " GPUs");
    }
    e.backend = CreateObject<FlowBackend>();
    e.backend->SetTopology(e.cluster.GetTopology());
    e.helper.SetBackend(e.backend);
    e.helper.SetCostModel("ns3::RecordedDurationCostModel");
    for (const auto& [re, factor] : s.scales)
    {
        e.helper.AddKernelScale(re, factor);
    }
    e.workload = e.helper.Install(job, e.gpus);
}

/// Header and one line per rank and iteration: recorded vs simulated, Lumos breakdown.
void
PrintIterationTable(std::ostream& out,
                    const Options& o,
                    const ReplaySettings& s,
                    const ClusterSpec& spec,
                    uint32_t nRanks,
                    const std::vector<IterationRecord>& iterations)
{
    out << "# gpusim replay: " << o.Positional().size() << " trace"
        << (o.Positional().size() == 1 ? "" : "s") << ", " << nRanks << " simulated rank"
        << (nRanks == 1 ? "" : "s") << ", collectives " << s.modeName;
    if (s.dp > 0)
    {
        out << " (--dp " << s.dp << ")";
    }
    out << "\n# cluster: " << DescribeCluster(spec) << "\n";
    out << "#  rank  iteration              recorded_us  simulated_us   error%  "
           "exposed_comp  exposed_comm   overlap      idle\n";
    for (const auto& it : iterations)
    {
        const double sim = ToUs(it.end - it.start);
        char line[320];
        if (it.recordedUs > 0)
        {
            std::snprintf(line, sizeof(line),
                          "%7u  %-21s %12.1f  %12.1f  %+7.2f  %12.1f  %12.1f  %8.1f  %8.1f\n",
                          it.rank, it.name.c_str(), it.recordedUs, sim,
                          100.0 * (sim - it.recordedUs) / it.recordedUs, it.computeOnlyUs,
                          it.commOnlyUs, it.overlapUs, it.idleUs);
        }
        else
        {
            std::snprintf(line, sizeof(line),
                          "%7u  %-21s %12s  %12.1f  %7s  %12.1f  %12.1f  %8.1f  %8.1f\n",
                          it.rank, it.name.c_str(), "-", sim, "-", it.computeOnlyUs,
                          it.commOnlyUs, it.overlapUs, it.idleUs);
        }
        out << line;
    }
}

/// The JSON's run description and its "iterations" array.
void
WriteRunJson(JsonWriter& j,
             const Options& o,
             const ReplaySettings& s,
             const ClusterSpec& spec,
             uint32_t nRanks,
             Time endTime,
             const std::vector<IterationRecord>& iterations)
{
    j.Key("traces").BeginArray();
    for (const auto& f : o.Positional())
    {
        j.String(f);
    }
    j.EndArray();
    j.Key("comm").String(s.modeName);
    if (s.dp > 0)
    {
        j.Key("dp").Uint(s.dp);
    }
    j.Key("ranks").Uint(nRanks);
    j.Key("cluster").String(DescribeCluster(spec));
    j.Key("end_us").Double(ToUs(endTime));
    j.Key("iterations").BeginArray();
    for (const auto& it : iterations)
    {
        const double sim = ToUs(it.end - it.start);
        j.BeginObject().Key("rank").Uint(it.rank).Key("name").String(it.name);
        j.Key("recorded_us");
        it.recordedUs > 0 ? j.Double(it.recordedUs) : j.Null();
        j.Key("simulated_us").Double(sim);
        j.Key("error_pct");
        it.recordedUs > 0 ? j.Double(100.0 * (sim - it.recordedUs) / it.recordedUs) : j.Null();
        j.Key("start_us").Double(ToUs(it.start)).Key("end_us").Double(ToUs(it.end));
        j.EndObject();
    }
    j.EndArray();
}

/// Breakdown per rank and iteration (Lumos), with per-rank totals.
void
WriteBreakdownJson(JsonWriter& j, const std::vector<IterationRecord>& iterations, uint32_t nRanks)
{
    j.Key("breakdown").BeginObject().Key("ranks").BeginArray();
    for (uint32_t r = 0; r < nRanks; ++r)
    {
        IterationRecord total;
        j.BeginObject().Key("rank").Uint(r).Key("iterations").BeginArray();
        for (const auto& it : iterations)
        {
            if (it.rank != r)
            {
                continue;
            }
            j.BeginObject().Key("name").String(it.name);
            j.Key("exposed_compute_us").Double(it.computeOnlyUs);
            j.Key("exposed_comm_us").Double(it.commOnlyUs);
            j.Key("overlap_us").Double(it.overlapUs);
            j.Key("idle_us").Double(it.idleUs).EndObject();
            total.computeOnlyUs += it.computeOnlyUs;
            total.commOnlyUs += it.commOnlyUs;
            total.overlapUs += it.overlapUs;
            total.idleUs += it.idleUs;
        }
        j.EndArray().Key("total").BeginObject();
        j.Key("exposed_compute_us").Double(total.computeOnlyUs);
        j.Key("exposed_comm_us").Double(total.commOnlyUs);
        j.Key("overlap_us").Double(total.overlapUs);
        j.Key("idle_us").Double(total.idleUs).EndObject().EndObject();
    }
    j.EndArray().EndObject();
}

/// One rank's SM busy entry: busy time, per-iteration fractions and the per-bucket timeline
/// over [0, end of its last kernel). Returns the rank's busy and span nanoseconds.
std::pair<int64_t, int64_t>
WriteRankSmBusy(JsonWriter& j,
                const std::vector<StreamActivity>& acts,
                const std::vector<IterationRecord>& iterations,
                uint32_t r)
{
    const auto merged = KernelIntervals(acts, r);
    const int64_t end = merged.empty() ? 0 : merged.back().second;
    const int64_t bucket = static_cast<int64_t>(kSmBucketUs * 1e3);
    const int64_t busy = BusyWithin(merged, 0, end);
    j.BeginObject().Key("rank").Uint(r);
    j.Key("busy_us").Double(busy / 1e3).Key("span_us").Double(end / 1e3);
    j.Key("busy_fraction").Double(end > 0 ? double(busy) / end : 0);
    j.Key("iterations").BeginArray();
    for (const auto& it : iterations)
    {
        if (it.rank != r)
        {
            continue;
        }
        const int64_t lo = it.start.GetNanoSeconds();
        const int64_t hi = it.end.GetNanoSeconds();
        j.BeginObject().Key("name").String(it.name).Key("busy_fraction");
        j.Double(hi > lo ? double(BusyWithin(merged, lo, hi)) / (hi - lo) : 0);
        j.EndObject();
    }
    j.EndArray();
    j.Key("timeline").BeginArray();
    for (int64_t lo = 0; lo < end; lo += bucket)
    {
        const int64_t hi = std::min(end, lo + bucket);
        j.Fixed(double(BusyWithin(merged, lo, hi)) / (hi - lo), 4);
    }
    j.EndArray().EndObject();
    return {busy, end};
}

/// SM busy: fraction of each 1 ms bucket with at least one kernel running (JSON), and the
/// fraction per rank (stdout).
void
ReportSmBusy(std::ostream& out,
             JsonWriter& j,
             const std::vector<StreamActivity>& acts,
             const std::vector<IterationRecord>& iterations,
             uint32_t nRanks)
{
    out << "# SM busy (>= 1 kernel running):";
    j.Key("sm_busy").BeginObject().Key("bucket_us").Double(kSmBucketUs);
    j.Key("ranks").BeginArray();
    double busySum = 0;
    double spanSum = 0;
    for (uint32_t r = 0; r < nRanks; ++r)
    {
        const auto [busy, end] = WriteRankSmBusy(j, acts, iterations, r);
        busySum += busy;
        spanSum += end;
        char line[96];
        std::snprintf(line, sizeof(line), " rank %u %.1f %%", r,
                      end > 0 ? 100.0 * busy / end : 0.0);
        out << line;
    }
    j.EndArray();
    j.Key("busy_fraction").Double(spanSum > 0 ? busySum / spanSum : 0);
    j.EndObject();
    out << "\n";
}

/// Dependencies of the execution graphs (summed over the input files) and how cross-stream
/// pairs were found.
void
ReportDependencies(std::ostream& out,
                   JsonWriter& j,
                   const std::vector<KinetoFileSummary>& files,
                   const std::vector<std::string>& disabled)
{
    KinetoDependencyCounts deps;
    std::set<CrossStreamMethod> methods;
    for (const auto& f : files)
    {
        deps.cpuCpu += f.counts.cpuCpu;
        deps.cpuGpu += f.counts.cpuGpu;
        deps.gpuCpu += f.counts.gpuCpu;
        deps.gpuGpu += f.counts.gpuGpu;
        deps.interThread += f.counts.interThread;
        deps.crossStream += f.counts.crossStream;
        if (f.counts.crossStream > 0)
        {
            methods.insert(f.crossStreamMethod);
        }
    }
    const char* method = methods.empty()        ? ToString(CrossStreamMethod::None)
                         : methods.size() == 1 ? ToString(*methods.begin())
                                                : ToString(CrossStreamMethod::Mixed);
    j.Key("dependencies").BeginObject();
    j.Key("cpu_cpu").Uint(deps.cpuCpu).Key("cpu_gpu").Uint(deps.cpuGpu);
    j.Key("gpu_cpu").Uint(deps.gpuCpu).Key("gpu_gpu").Uint(deps.gpuGpu);
    j.Key("inter_thread").Uint(deps.interThread).Key("cross_stream").Uint(deps.crossStream);
    j.Key("disabled").BeginArray();
    for (const auto& d : disabled)
    {
        j.String(d);
    }
    j.EndArray().EndObject();
    j.Key("cross_stream_method").String(method);
    out << "# dependencies: cpu_cpu " << deps.cpuCpu << " (inter-thread " << deps.interThread
        << "), cpu_gpu " << deps.cpuGpu << ", gpu_cpu " << deps.gpuCpu << ", gpu_gpu "
        << deps.gpuGpu << " (cross-stream " << deps.crossStream << ", " << method << ")";
    if (!disabled.empty())
    {
        out << "; disabled:";
        for (const auto& d : disabled)
        {
            out << " " << d;
        }
    }
    out << "\n";
}

/// Collectives simulated over the network (none with --comm recorded).
void
ReportCollectives(std::ostream& out, JsonWriter& j, const GpuWorkload& w, ReplayCommMode mode)
{
    const auto& colls = w.GetCollectives();
    double collUs = 0;
    j.Key("collectives").BeginArray();
    for (const auto& c : colls)
    {
        const double us = ToUs(c.End() - c.FirstJoin());
        collUs += us;
        j.BeginObject().Key("comm").String(c.comm).Key("seq").Uint(c.seq);
        j.Key("op").String(ToString(c.kind)).Key("bytes").Uint(c.bytes);
        j.Key("ranks").Uint(c.nranks).Key("algo").String(c.plan.algo);
        j.Key("start_us").Double(ToUs(c.FirstJoin())).Key("end_us").Double(ToUs(c.End()));
        j.Key("time_us").Double(us).EndObject();
    }
    j.EndArray();
    if (mode == ReplayCommMode::Simulated)
    {
        char line[128];
        std::snprintf(line, sizeof(line),
                      "# collectives simulated over the network: %zu (%.1f us in all)\n",
                      colls.size(), collUs);
        out << line;
    }
}

/// The results of a completed replay: the table and summary lines on `out`, --json and
/// --trace files.
void
ReportReplay(std::ostream& out,
             const Options& o,
             const ReplaySettings& s,
             const ClusterSpec& spec,
             uint32_t nRanks,
             const std::vector<KinetoFileSummary>& files,
             const GpuWorkload& w,
             const RunReport& rep)
{
    const std::vector<IterationRecord> iterations = w.GetIterations();
    PrintIterationTable(out, o, s, spec, nRanks, iterations);
    JsonWriter j;
    j.BeginObject();
    WriteRunJson(j, o, s, spec, nRanks, rep.endTime, iterations);
    WriteBreakdownJson(j, iterations, nRanks);
    ReportSmBusy(out, j, w.GetActivities(), iterations, nRanks);
    ReportDependencies(out, j, files, s.disabled);
    ReportCollectives(out, j, w, s.mode);
    j.EndObject();
    char endLine[64];
    std::snprintf(endLine, sizeof(endLine), "# end of simulation: %.1f us\n", ToUs(rep.endTime));
    out << endLine;
    if (o.Has("json"))
    {
        WriteFileAtomically(o.Get("json", ""), j.Take() + "\n");
    }
    if (o.Has("trace"))
    {
        WriteFileAtomically(o.Get("trace", ""), SimulatedKinetoTrace(w));
    }
}

} // namespace

int
ReplayCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::set<std::string> valued = {"json", "trace", "comm", "scale-kernels", "dp", "gap-us",
                                     "no-dep"};
    valued.insert(kClusterOptions.begin(), kClusterOptions.end());
    try
    {
        Options o(args, valued, {"help"});
        if (o.Has("help"))
        {
            PrintReplayUsage(out);
            return 0;
        }
        if (o.Positional().empty())
        {
            throw UsageError("no trace given");
        }
        const ReplaySettings s = ParseReplaySettings(o);
        std::vector<KinetoFileSummary> files;
        const JobTrace recorded = ReadKinetoJob(o.Positional(), s.graph, &files);
        std::shared_ptr<JobTrace> job = PrepareReplayJob(recorded, s.mode, s.dp);
        const uint32_t nRanks = job->ranks.size();
        NS_LOG_INFO("replaying " << o.Positional().size() << " trace(s) as " << nRanks
                                 << " rank(s), collectives " << s.modeName);

        const ClusterSpec spec = SpecFromOptions(o, nRanks);
        ReplayEngine engine;
        InstallReplay(engine, job, spec, s);
        Simulator::Run();
        const RunReport rep = engine.workload->Check();
        for (const auto& e : rep.errors)
        {
            err << "gpusim replay: device error: " << e << "\n";
        }
        if (!rep.completed)
        {
            err << "gpusim replay: the simulation stopped with work still waiting:\n"
                << rep.stuck;
        }
        else
        {
            ReportReplay(out, o, s, spec, nRanks, files, *engine.workload, rep);
        }
        engine.workload->Dispose();
        Simulator::Destroy();
        return rep.completed ? 0 : 3;
    }
    catch (const UsageError& e)
    {
        err << "gpusim replay: " << e.what() << "\n";
        PrintReplayUsage(err);
        Simulator::Destroy();
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim replay: error: " << e.what() << "\n";
        Simulator::Destroy();
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
