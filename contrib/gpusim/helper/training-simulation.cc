#include "ns3/training-simulation.h"

#include "ns3/boolean.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-node.h"
#include "ns3/json-writer.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TrainingSimulation");

namespace gpusim
{

namespace
{

using Interval = std::pair<int64_t, int64_t>;

/// Compute and communication intervals of the ranks the per-stage breakdown reads.
class ActivityCollector
{
  public:
    void OnActivity(const StreamActivity& a)
    {
        const Interval span = {a.start.GetNanoSeconds(), a.end.GetNanoSeconds()};
        // PP send/recv wait for the neighbour stage: pipeline bubble, not communication (the
        // send/recv of CP rings and of TP ring exchanges are communication); listed as "pp".
        if (a.communication && a.op->kind == OpKind::Collective &&
            (a.op->coll == CollKind::Send || a.op->coll == CollKind::Recv) &&
            (a.op->comm.compare(0, 3, "pp.") == 0 || a.op->comm.compare(0, 4, "ppg.") == 0))
        {
            m_byClass["pp"].push_back(span);
            return;
        }
        (a.communication ? m_comm : m_compute).push_back(span);
        if (a.communication && a.op->kind == OpKind::Collective)
        {
            m_byClass[ClassOf(*a.op)].push_back(span);
        }
    }

    /// Fills the breakdown of the window [lo, hi] (ns).
    void Breakdown(int64_t lo, int64_t hi, StageReport& s) const
    {
        const std::vector<Interval> c = Merge(m_compute, lo, hi);
        const std::vector<Interval> m = Merge(m_comm, lo, hi);
        const int64_t both = IntersectLength(c, m);
        const int64_t cLen = Length(c);
        const int64_t mLen = Length(m);
        s.overlapUs = both / 1e3;
        s.exposedComputeUs = (cLen - both) / 1e3;
        s.exposedCommUs = (mLen - both) / 1e3;
        s.bubbleUs = std::max<int64_t>(0, (hi - lo) - (cLen + mLen - both)) / 1e3;
        for (const auto& [name, spans] : m_byClass)
        {
            const std::vector<Interval> k = Merge(spans, lo, hi);
            s.comm.push_back({name, Length(k) / 1e3, IntersectLength(k, c) / 1e3});
        }
    }

  private:
    /// The generator's communicator names (training-rank-generator.cc) say what a collective
    /// is for; over the DP groups, AllGather gathers parameters, the rest reduces gradients.
    static std::string ClassOf(const Op& op)
    {
        const std::string group = op.comm.substr(0, op.comm.find('.'));
        // The loss's all-reduces run on the compute stream (pretrain_gpt.py's loss_func), the
        // DP group's gradient and parameter traffic on its own.
        if (group == "dploss" || ((group == "dp" || group == "cp") && op.stream == 1 &&
                                  op.coll == CollKind::AllReduce))
        {
            return "loss";
        }
        if (group == "mp" || group == "world")
        {
            return "optimizer-stats"; // gradient norm, fp16's inf check
        }
        if (group == "dp" || group == "edp")
        {
            return op.coll == CollKind::AllGather ? "param-gather" : "grad-reduce";
        }
        if (group == "emb")
        {
            return "embedding";
        }
        return group;
    }

    static std::vector<Interval> Merge(std::vector<Interval> v, int64_t lo, int64_t hi)
    {
        std::vector<Interval> out;
        std::sort(v.begin(), v.end());
        for (auto [a, b] : v)
        {
            a = std::max(a, lo);
            b = std::min(b, hi);
            if (a >= b)
            {
                continue;
            }
            if (!out.empty() && a <= out.back().second)
            {
                out.back().second = std::max(out.back().second, b);
            }
            else
            {
                out.push_back({a, b});
            }
        }
        return out;
    }

    static int64_t Length(const std::vector<Interval>& v)
    {
        int64_t n = 0;
        for (const auto& [a, b] : v)
        {
            n += b - a;
        }
        return n;
    }

    static int64_t IntersectLength(const std::vector<Interval>& x, const std::vector<Interval>& y)
    {
        int64_t n = 0;
        size_t i = 0;
        size_t j = 0;
        while (i < x.size() && j < y.size())
        {
            const int64_t a = std::max(x[i].first, y[j].first);
            const int64_t b = std::min(x[i].second, y[j].second);
            n += std::max<int64_t>(0, b - a);
            (x[i].second < y[j].second) ? ++i : ++j;
        }
        return n;
    }

    std::vector<Interval> m_compute;
    std::vector<Interval> m_comm;
    std::map<std::string, std::vector<Interval>> m_byClass;
};

/// The iteration window of a rank: its ProfilerStep#0 begin and end markers (ns).
bool
IterationWindow(Ptr<CudaContext> ctx, int64_t& lo, int64_t& hi)
{
    bool begun = false;
    bool ended = false;
    for (const MarkerRecord& m : ctx->GetMarkers())
    {
        if (m.op->phase == MarkerPhase::Begin)
        {
            lo = m.time.GetNanoSeconds();
            begun = true;
        }
        else if (m.op->phase == MarkerPhase::End)
        {
            hi = m.time.GetNanoSeconds();
            ended = true;
        }
    }
    return begun && ended;
}

TrainingReport
ReportHeader(const GeneratedTraining& g, uint64_t capacity, double peakFlops)
{
    TrainingReport r;
    r.model = g.model.name;
    r.plan = DescribePlan(g.plan);
    r.gpus = g.plan.Gpus();
    r.microBatches = g.microBatches;
    r.modelFlops = g.modelFlops;
    r.hardwareFlops = g.hardwareFlops;
    r.peakFlopsPerGpu = peakFlops;
    r.memoryCapacity = capacity;
    for (const RankTrace& rt : g.job->ranks)
    {
        r.opsTotal += rt.opsFrom >= 0 ? g.job->ranks[rt.opsFrom].ops.size() : rt.ops.size();
        r.opLists += rt.opsFrom < 0 ? 1 : 0;
    }
    return r;
}

void
CollectResults(const GeneratedTraining& g,
               Ptr<GpuWorkload> w,
               const std::vector<ActivityCollector>& collectors,
               TrainingReport& r)
{
    const TrainingPlan& p = g.plan;
    r.stages.assign(p.pp, StageReport());
    for (uint32_t rank = 0; rank < w->GetNRanks(); ++rank)
    {
        // A mirrored rank ran its representative's ops: its memory and window are the rep's.
        Ptr<CudaContext> ctx = w->GetContext(w->RepresentativeOf(rank));
        const uint32_t stage = PositionOf(p, rank).stage;
        StageReport& s = r.stages[stage];
        s.stage = stage;
        const uint64_t peak = ctx->GetNode()->GetPeakMemoryUsed();
        r.rankPeakMemoryBytes.push_back(peak);
        s.peakMemoryBytes = std::max(s.peakMemoryBytes, peak);
        if (peak > r.peakMemoryBytes)
        {
            r.peakMemoryBytes = peak;
            r.peakMemoryRank = rank;
        }
        int64_t lo = 0;
        int64_t hi = 0;
        if (IterationWindow(ctx, lo, hi))
        {
            r.iterationUs = std::max(r.iterationUs, (hi - lo) / 1e3);
        }
    }
    for (uint32_t stage = 0; stage < p.pp; ++stage)
    {
        StageReport& s = r.stages[stage];
        s.rank = RankAt(p, 0, 0, stage);
        int64_t lo = 0;
        int64_t hi = 0;
        if (IterationWindow(w->GetContext(s.rank), lo, hi))
        {
            s.iterationUs = (hi - lo) / 1e3;
            collectors[stage].Breakdown(lo, hi, s);
        }
    }
    const GpuWorkload::MirrorSummary mirrors = w->GetMirrorSummary();
    r.mirroredRanks = mirrors.mirrored;
    r.mirroredLaunches = mirrors.launches;
    r.mirrorDiverged = mirrors.diverged;
    r.mirrorMaxDivergenceUs = mirrors.maxDivergence.GetNanoSeconds() / 1e3;
    if (r.iterationUs > 0)
    {
        const double seconds = r.iterationUs * 1e-6;
        r.modelTflopsPerGpu = r.modelFlops / seconds / r.gpus / 1e12;
        r.hardwareTflopsPerGpu = r.hardwareFlops / seconds / r.gpus / 1e12;
        r.mfu = r.modelTflopsPerGpu * 1e12 / r.peakFlopsPerGpu;
    }
}

} // namespace

TrainingReport
SimulateTraining(const GeneratedTraining& g,
                 GpuWorkloadHelper& helper,
                 const NodeContainer& gpus,
                 Ptr<GpuWorkload>* keep)
{
    Ptr<GpuNode> first = gpus.GetN() ? DynamicCast<GpuNode>(gpus.Get(0)) : nullptr;
    if (!first || gpus.GetN() < g.plan.Gpus())
    {
        throw std::invalid_argument("the plan needs " + std::to_string(g.plan.Gpus()) +
                                    " GPUs but the cluster has " + std::to_string(gpus.GetN()));
    }
    const GpuSpec& spec = first->GetSpec();
    if (g.plan.fp8 != Fp8Recipe::None && !spec.HasFp8())
    {
        throw std::invalid_argument("fp8 training needs FP8 tensor cores, which " + spec.name +
                                    " does not have");
    }
    TrainingReport r = ReportHeader(g, spec.memoryBytes, spec.PeakFlops(g.model.dtype));
    // The device memory model would record the failed allocation and go on as if nothing had
    // been allocated: an infeasible plan is reported here instead, and not simulated.
    r.oomInfo = FindOom(*g.job, spec.memoryBytes);
    if (r.oomInfo.oom)
    {
        r.oom = true;
        return r;
    }
    if (!keep)
    {
        helper.SetWorkloadAttribute("RecordActivities", BooleanValue(false));
        helper.SetWorkloadAttribute("RecordCollectives", BooleanValue(false));
    }
    Ptr<GpuWorkload> w = helper.Install(g.job, gpus);
    std::vector<ActivityCollector> collectors(g.plan.pp);
    for (uint32_t stage = 0; stage < g.plan.pp; ++stage)
    {
        w->GetContext(RankAt(g.plan, 0, 0, stage))
            ->TraceConnectWithoutContext("Activity",
                                         MakeCallback(&ActivityCollector::OnActivity,
                                                      &collectors[stage]));
    }
    Simulator::Run();
    RunReport run = w->Check();
    r.completed = run.completed;
    r.stuck = run.stuck;
    r.errors = run.errors;
    CollectResults(g, w, collectors, r);
    if (keep)
    {
        *keep = w;
    }
    else
    {
        w->Dispose();
    }
    return r;
}

void
ConfigureTrainingSpeed(GpuWorkloadHelper& helper, const TrainingSpeed& speed)
{
    if (speed.fidelity != "auto" && speed.fidelity != "chunk" &&
        speed.fidelity != "collective" && speed.fidelity != "flows")
    {
        throw std::invalid_argument("fidelity '" + speed.fidelity +
                                    "' (auto, chunk, collective or flows)");
    }
    helper.SetNcclAttribute("Fidelity",
                            StringValue(speed.fidelity == "flows" ? "collective" : speed.fidelity));
    helper.SetNcclAttribute("RingFlows", BooleanValue(speed.fidelity == "flows"));
    helper.SetWorkloadAttribute("MirrorIdenticalRanks", BooleanValue(speed.mirrorRanks));
    helper.SetWorkloadAttribute("MirrorSplitClasses", BooleanValue(speed.splitClasses));
}

TrainingReport
SimulateTraining(const GeneratedTraining& g, ClusterSpec spec, const TrainingSpeed& speed)
{
    spec.servers = std::max(spec.servers, (g.plan.Gpus() + spec.gpusPerServer - 1) /
                                              spec.gpusPerServer);
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> backend = CreateObject<FlowBackend>();
    backend->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper helper;
    helper.SetBackend(backend);
    ConfigureTrainingSpeed(helper, speed);
    TrainingReport r;
    try
    {
        r = SimulateTraining(g, helper, gpus);
    }
    catch (...)
    {
        Simulator::Destroy();
        throw;
    }
    Simulator::Destroy();
    return r;
}

std::string
FormatTrainingReport(const TrainingReport& r)
{
    std::ostringstream os;
    char line[256];
    const double gib = 1073741824.0;
    os << "# model " << r.model << ", " << r.plan << ", " << r.gpus << " GPUs, "
       << r.microBatches << " micro-batches per pipeline\n";
    os << "# " << r.opsTotal << " ops over all ranks, " << r.opLists
       << " op lists in memory (ranks that run the same program share one)\n";
    if (r.oom)
    {
        os << "OOM: " << r.oomInfo.Describe() << "\n";
        return os.str();
    }
    if (!r.completed)
    {
        os << "the simulation stopped with work still waiting:\n" << r.stuck;
        return os.str();
    }
    std::snprintf(line, sizeof(line), "iteration time        %.3f ms\n", r.iterationUs / 1e3);
    os << line;
    std::snprintf(line, sizeof(line),
                  "model TFLOP/s per GPU %.1f  (MFU %.1f %% of %.0f TFLOP/s; %.4g FLOP per "
                  "iteration)\n",
                  r.modelTflopsPerGpu, 100 * r.mfu, r.peakFlopsPerGpu / 1e12, r.modelFlops);
    os << line;
    std::snprintf(line, sizeof(line),
                  "hardware TFLOP/s/GPU  %.1f  (with recomputation; %.4g FLOP per iteration)\n",
                  r.hardwareTflopsPerGpu, r.hardwareFlops);
    os << line;
    std::snprintf(line, sizeof(line), "peak memory           %.2f GiB (rank %u) of %.2f GiB\n",
                  r.peakMemoryBytes / gib, r.peakMemoryRank, r.memoryCapacity / gib);
    os << line;
    os << "# stage  rank  iteration_ms  exposed_compute_ms  exposed_comm_ms  overlap_ms  "
          "pp_bubble_ms  peak_mem_GiB\n";
    for (const StageReport& s : r.stages)
    {
        std::snprintf(line, sizeof(line), "%7u %5u %13.3f %19.3f %16.3f %11.3f %13.3f %13.2f\n",
                      s.stage, s.rank, s.iterationUs / 1e3, s.exposedComputeUs / 1e3,
                      s.exposedCommUs / 1e3, s.overlapUs / 1e3, s.bubbleUs / 1e3,
                      s.peakMemoryBytes / gib);
        os << line;
    }
    for (const StageReport& s : r.stages)
    {
        if (s.comm.empty())
        {
            continue;
        }
        os << "# stage " << s.stage << " communication, ms run (ms of it hidden under compute):";
        for (const CommClassTime& k : s.comm)
        {
            std::snprintf(line, sizeof(line), " %s %.3f (%.3f)", k.name.c_str(), k.busyUs / 1e3,
                          k.hiddenUs / 1e3);
            os << line;
        }
        os << "\n";
    }
    if (r.mirroredRanks > 0)
    {
        std::snprintf(line, sizeof(line),
                      "# %u of %u ranks mirrored their stage's representative; %llu of %llu "
                      "mirrored collective launches ended off the representative's instant "
                      "(by up to %.3f us)\n",
                      r.mirroredRanks, r.gpus, static_cast<unsigned long long>(r.mirrorDiverged),
                      static_cast<unsigned long long>(r.mirroredLaunches),
                      r.mirrorMaxDivergenceUs);
        os << line;
        if (r.mirrorDiverged > 0)
        {
            // The class waited for its slowest member each time; with every rank simulated
            // those members drift apart instead (doc/flow-backend.md, "Mirrored ranks").
            os << "# the ranks of a stage did not all see the same network (e.g. ECMP "
                  "collisions): '--ranks all' simulates every rank on its own\n";
        }
    }
    for (const std::string& e : r.errors)
    {
        os << "device error: " << e << "\n";
    }
    return os.str();
}

std::string
TrainingReportJson(const TrainingReport& r)
{
    JsonWriter w;
    w.BeginObject();
    w.Key("model").String(r.model).Key("plan").String(r.plan).Key("gpus").Uint(r.gpus);
    w.Key("micro_batches").Uint(r.microBatches).Key("ops").Uint(r.opsTotal);
    w.Key("op_lists").Uint(r.opLists);
    w.Key("oom").Bool(r.oom);
    if (r.oom)
    {
        w.Key("oom_rank").Uint(r.oomInfo.rank).Key("oom_allocation").String(r.oomInfo.allocation);
        w.Key("oom_bytes").Uint(r.oomInfo.bytes).Key("oom_in_use_bytes").Uint(r.oomInfo.inUse);
    }
    w.Key("completed").Bool(r.completed);
    w.Key("iteration_us").Double(r.iterationUs);
    w.Key("model_flops").Double(r.modelFlops).Key("hardware_flops").Double(r.hardwareFlops);
    w.Key("model_tflops_per_gpu").Double(r.modelTflopsPerGpu);
    w.Key("hardware_tflops_per_gpu").Double(r.hardwareTflopsPerGpu);
    w.Key("mfu").Double(r.mfu).Key("peak_flops_per_gpu").Double(r.peakFlopsPerGpu);
    w.Key("peak_memory_bytes").Uint(r.peakMemoryBytes).Key("peak_memory_rank").Uint(
        r.peakMemoryRank);
    w.Key("memory_capacity_bytes").Uint(r.memoryCapacity);
    w.Key("rank_peak_memory_bytes").BeginArray();
    for (uint64_t b : r.rankPeakMemoryBytes)
    {
        w.Uint(b);
    }
    w.EndArray();
    w.Key("mirrored_ranks").Uint(r.mirroredRanks);
    w.Key("mirrored_launches").Uint(r.mirroredLaunches);
    w.Key("mirror_diverged").Uint(r.mirrorDiverged);
    w.Key("mirror_max_divergence_us").Double(r.mirrorMaxDivergenceUs);
    w.Key("stages").BeginArray();
    for (const StageReport& s : r.stages)
    {
        w.BeginObject().Key("stage").Uint(s.stage).Key("rank").Uint(s.rank);
        w.Key("iteration_us").Double(s.iterationUs);
        w.Key("exposed_compute_us").Double(s.exposedComputeUs);
        w.Key("exposed_comm_us").Double(s.exposedCommUs).Key("overlap_us").Double(s.overlapUs);
        w.Key("pp_bubble_us").Double(s.bubbleUs).Key("peak_memory_bytes").Uint(s.peakMemoryBytes);
        w.Key("comm").BeginArray();
        for (const CommClassTime& k : s.comm)
        {
            w.BeginObject().Key("class").String(k.name).Key("busy_us").Double(k.busyUs);
            w.Key("hidden_us").Double(k.hiddenUs).EndObject();
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndArray().EndObject();
    return w.Take();
}

} // namespace gpusim
} // namespace ns3
