#include "ns3/search-command.h"

#include "ns3/double.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-spec.h"
#include "ns3/gpusim-commands.h"
#include "ns3/json-writer.h"
#include "ns3/kernel-cost-model.h"
#include "ns3/plan-search.h"
#include "ns3/simulator.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ns3
{
namespace gpusim
{

namespace
{

enum class PlanStatus
{
    OutOfMemory, //!< closed-form peak above the GPU's memory: not simulated
    Pruned,      //!< lower bound above the best simulated time
    Simulated,
    Failed,      //!< simulated but did not complete (or the worker died)
};

const char*
StatusName(PlanStatus s)
{
    switch (s)
    {
    case PlanStatus::OutOfMemory:
        return "oom";
    case PlanStatus::Pruned:
        return "pruned";
    case PlanStatus::Simulated:
        return "simulated";
    case PlanStatus::Failed:
        return "failed";
    }
    return "?";
}

struct PlanResult
{
    TrainingPlan plan;
    uint64_t peakMemoryBytes = 0; //!< closed form (StagePeakMemory)
    uint32_t peakStage = 0;
    double boundUs = 0;
    PlanStatus status = PlanStatus::Pruned;
    double iterationUs = 0;
    double tflopsPerGpu = 0;
    double mfu = 0;
    double bubbleUs = 0;          //!< highest stage pp_bubble
    uint64_t simPeakMemoryBytes = 0;
};

struct SearchSettings
{
    uint32_t jobs = 1;
    bool exhaustive = false;
};

std::vector<uint32_t>
CountList(const Options& o, const std::string& key, const std::string& def)
{
    std::vector<uint32_t> v;
    std::stringstream ss(o.Get(key, def));
    std::string item;
    while (std::getline(ss, item, ','))
    {
        char* end = nullptr;
        const unsigned long n = std::strtoul(item.c_str(), &end, 10);
        if (item.empty() || *end || n == 0 || n > 1u << 20)
        {
            throw UsageError("--" + key + " takes a comma-separated list of positive integers, "
                             "got '" + o.Get(key, def) + "'");
        }
        v.push_back(static_cast<uint32_t>(n));
    }
    return v;
}

std::vector<bool>
OnOffList(const Options& o, const std::string& key, const std::string& def)
{
    const std::string s = o.Get(key, def);
    if (s == "off")
    {
        return {false};
    }
    if (s == "on")
    {
        return {true};
    }
    if (s == "both")
    {
        return {false, true};
    }
    throw UsageError("--" + key + " must be off, on or both, got '" + s + "'");
}

std::vector<Recompute>
RecomputeList(const Options& o)
{
    std::vector<Recompute> v;
    std::stringstream ss(o.Get("recompute", "none,selective"));
    std::string item;
    while (std::getline(ss, item, ','))
    {
        Recompute r;
        if (!ParseRecompute(item, r))
        {
            throw UsageError("--recompute takes a comma-separated list of none, selective, "
                             "full; got '" + item + "'");
        }
        v.push_back(r);
    }
    return v;
}

/// The roofline cost model's efficiencies (what every worker's kernels run at).
void
CostModelEfficiencies(double& compute, double& memory)
{
    Ptr<RooflineCostModel> cm = CreateObject<RooflineCostModel>();
    DoubleValue v;
    cm->GetAttribute("ComputeEfficiency", v);
    compute = v.Get();
    cm->GetAttribute("MemoryEfficiency", v);
    memory = v.Get();
}

/// Runs one plan in this (forked) process and writes "iteration tflops mfu bubble peak ok".
void
SimulateInChild(const Options& o, const ModelSpec& model, const TrainingPlan& plan, int fd)
{
    char line[256];
    try
    {
        GeneratedTraining g = GenerateTraining(model, plan);
        const ClusterSpec spec = SpecFromOptions(o, plan.Gpus());
        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        NodeContainer gpus = cluster.Create();
        GpuWorkloadHelper helper;
        helper.SetBackend(MakeBackend(o, cluster.GetTopology()));
        ConfigureNccl(o, helper, "flows");
        ConfigureRanks(o, helper, "lockstep"); // ranking many plans: one class per stage
        helper.SetCostModel("ns3::RooflineCostModel");
        TrainingReport r = SimulateTraining(g, helper, gpus);
        double bubble = 0;
        for (const StageReport& s : r.stages)
        {
            bubble = std::max(bubble, s.bubbleUs);
        }
        std::snprintf(line, sizeof(line), "%.17g %.17g %.17g %.17g %llu %d\n", r.iterationUs,
                      r.modelTflopsPerGpu, r.mfu, bubble,
                      static_cast<unsigned long long>(r.peakMemoryBytes),
                      r.completed && !r.oom ? 1 : 0);
    }
    catch (const std::exception& e)
    {
        std::snprintf(line, sizeof(line), "0 0 0 0 0 0\n");
    }
    const ssize_t n = write(fd, line, std::strlen(line));
    (void)n;
}

struct Worker
{
    pid_t pid = 0;
    int fd = -1;
    size_t position = 0; //!< in the bound order
    std::chrono::steady_clock::time_point started;
};

Worker
StartWorker(const Options& o, const ModelSpec& model, const TrainingPlan& plan, size_t position)
{
    int fds[2];
    if (pipe(fds) != 0)
    {
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    std::cout.flush();
    std::cerr.flush();
    const pid_t pid = fork();
    if (pid < 0)
    {
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0)
    {
        // A worker dies with the search (Ctrl-C, a time limit) instead of running on.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
        {
            _exit(1);
        }
        close(fds[0]);
        SimulateInChild(o, model, plan, fds[1]);
        close(fds[1]);
        _exit(0); // no destructors or atexit handlers of the parent's state
    }
    close(fds[1]);
    return Worker{pid, fds[0], position};
}

void
ReadResult(const Worker& w, PlanResult& r)
{
    std::string text;
    char buf[256];
    ssize_t n;
    while ((n = read(w.fd, buf, sizeof(buf))) > 0)
    {
        text.append(buf, static_cast<size_t>(n));
    }
    close(w.fd);
    std::istringstream in(text);
    unsigned long long peak = 0;
    int ok = 0;
    in >> r.iterationUs >> r.tflopsPerGpu >> r.mfu >> r.bubbleUs >> peak >> ok;
    r.simPeakMemoryBytes = peak;
    r.status = in && ok ? PlanStatus::Simulated : PlanStatus::Failed;
}

/// Simulates plans `order[i]` in bound order with up to `jobs` workers until the pruning
/// rule (PruneCut) decides, or all of them (exhaustive). Workers still running on plans past
/// the cut are killed; their plans count as pruned whatever they would have returned, so the
/// outcome does not depend on --jobs or on timing. Returns the speculative runs discarded.
uint32_t
RunWorkers(const Options& o,
           const ModelSpec& model,
           const SearchSettings& set,
           const std::vector<size_t>& order,
           std::vector<PlanResult>& results,
           std::ostream* progress)
{
    std::vector<double> bounds;
    for (size_t idx : order)
    {
        bounds.push_back(results[idx].boundUs);
    }
    std::vector<double> times(order.size(), -1);
    std::map<pid_t, Worker> running;
    size_t next = 0;
    long cut = -1;
    while (true)
    {
        if (!set.exhaustive)
        {
            cut = PruneCut(bounds, times);
            if (cut >= 0)
            {
                break;
            }
        }
        // Start plans while workers are free, unless a finished earlier plan already beats
        // the next bound (then the cut is at or before it).
        double bestKnown = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < next; ++i)
        {
            if (times[i] >= 0)
            {
                bestKnown = std::min(bestKnown, times[i]);
            }
        }
        while (running.size() < set.jobs && next < order.size() &&
               (set.exhaustive || bounds[next] <= bestKnown))
        {
            Worker w = StartWorker(o, model, results[order[next]].plan, next);
            w.started = std::chrono::steady_clock::now();
            running[w.pid] = w;
            ++next;
        }
        if (running.empty())
        {
            break; // exhaustive, all done
        }
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        auto it = running.find(pid);
        if (pid < 0 || it == running.end())
        {
            continue;
        }
        PlanResult& r = results[order[it->second.position]];
        ReadResult(it->second, r);
        times[it->second.position] = r.status == PlanStatus::Simulated
                                         ? r.iterationUs
                                         : std::numeric_limits<double>::infinity();
        if (progress)
        {
            // Wall times vary with the machine: progress goes to stderr, the table to stdout.
            char line[160];
            std::snprintf(line, sizeof(line), "# plan %zu (%s): %s, worker %.1f s\n",
                          it->second.position + 1, DescribePlan(r.plan).c_str(),
                          r.status == PlanStatus::Simulated
                              ? (std::to_string(r.iterationUs / 1e3) + " ms").c_str()
                              : "failed",
                          std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                        it->second.started)
                              .count());
            *progress << line << std::flush;
        }
        running.erase(it);
    }
    uint32_t discarded = 0;
    for (auto& [pid, w] : running)
    {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        close(w.fd);
        ++discarded;
    }
    for (size_t i = cut < 0 ? order.size() : static_cast<size_t>(cut); i < order.size(); ++i)
    {
        PlanResult& r = results[order[i]];
        discarded += times[i] >= 0 ? 1 : 0;
        r = PlanResult{r.plan, r.peakMemoryBytes, r.peakStage, r.boundUs};
        r.status = PlanStatus::Pruned;
    }
    return discarded;
}

std::string
Flags(const TrainingPlan& p)
{
    std::string s = p.sequenceParallel ? "sp" : "-";
    s += p.distributedOptimizer ? ",zero1" : "";
    s += p.cp > 1 ? ",cp" + std::to_string(p.cp) : "";
    return s;
}

/// Simulated plans, fastest first (ties: enumeration order).
std::vector<size_t>
Ranked(const std::vector<PlanResult>& results)
{
    std::vector<size_t> ranked;
    for (size_t i = 0; i < results.size(); ++i)
    {
        if (results[i].status == PlanStatus::Simulated)
        {
            ranked.push_back(i);
        }
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
        return results[a].iterationUs < results[b].iterationUs;
    });
    return ranked;
}

std::string
RankedTable(const std::vector<PlanResult>& results, const std::vector<size_t>& ranked, size_t top)
{
    std::ostringstream os;
    os << "# rank  tp  pp  dp vpp  mb  recompute  flags      iteration_ms  TFLOP/s/GPU   MFU_%  "
          "peak_mem_GiB  bubble_ms  bound_ms\n";
    for (size_t k = 0; k < ranked.size() && k < top; ++k)
    {
        const PlanResult& r = results[ranked[k]];
        char line[256];
        std::snprintf(line, sizeof(line),
                      "%6zu %3u %3u %3u %3u %3u  %-9s  %-9s %13.3f %12.1f %7.2f %13.2f %10.3f "
                      "%9.3f\n",
                      k + 1, r.plan.tp, r.plan.pp, r.plan.dp, r.plan.virtualStages,
                      r.plan.microBatch, ToString(r.plan.recompute), Flags(r.plan).c_str(),
                      r.iterationUs / 1e3, r.tflopsPerGpu, r.mfu * 100,
                      r.peakMemoryBytes / double(1ull << 30), r.bubbleUs / 1e3, r.boundUs / 1e3);
        os << line;
    }
    return os.str();
}

std::string
SearchJson(const std::string& model,
           const ClusterSpec& spec,
           const std::vector<PlanResult>& results,
           const std::vector<size_t>& ranked,
           const std::map<std::string, uint32_t>& counts)
{
    JsonWriter w;
    w.BeginObject().Key("model").String(model).Key("gpus").Uint(spec.TotalGpus());
    w.Key("cluster").String(DescribeCluster(spec));
    for (const auto& [k, v] : counts)
    {
        w.Key(k).Uint(v);
    }
    w.Key("best").Int(ranked.empty() ? -1 : static_cast<int64_t>(ranked.front()));
    w.Key("plans").BeginArray();
    for (const PlanResult& r : results)
    {
        const TrainingPlan& p = r.plan;
        w.BeginObject().Key("plan").String(DescribePlan(p));
        w.Key("tp").Uint(p.tp).Key("pp").Uint(p.pp).Key("dp").Uint(p.dp).Key("cp").Uint(p.cp);
        w.Key("vpp").Uint(p.virtualStages).Key("micro_batch").Uint(p.microBatch);
        w.Key("sp").Bool(p.sequenceParallel).Key("recompute").String(ToString(p.recompute));
        w.Key("distributed_optimizer").Bool(p.distributedOptimizer);
        w.Key("status").String(StatusName(r.status));
        w.Key("peak_memory_bytes").Uint(r.peakMemoryBytes).Key("peak_stage").Uint(r.peakStage);
        w.Key("bound_us").Double(r.boundUs);
        if (r.status == PlanStatus::Simulated)
        {
            w.Key("iteration_us").Double(r.iterationUs);
            w.Key("model_tflops_per_gpu").Double(r.tflopsPerGpu).Key("mfu").Double(r.mfu);
            w.Key("pp_bubble_us").Double(r.bubbleUs);
            w.Key("simulated_peak_memory_bytes").Uint(r.simPeakMemoryBytes);
        }
        w.EndObject();
    }
    w.EndArray().EndObject();
    return w.Take();
}

/// Scatter plot: peak memory (x) against iteration time (y) of every simulated plan, the
/// winner in red; each point's tooltip names the plan.
std::string
SearchSvg(const std::string& title, const std::vector<PlanResult>& results,
          const std::vector<size_t>& ranked, uint64_t capacity)
{
    const int W = 720, H = 440, L = 70, R = 20, T = 40, B = 50;
    double xmax = capacity / double(1ull << 30), ymax = 0;
    for (const PlanResult& r : results)
    {
        if (r.status == PlanStatus::Simulated)
        {
            ymax = std::max(ymax, r.iterationUs / 1e3);
        }
    }
    ymax = ymax > 0 ? ymax * 1.1 : 1;
    auto X = [&](double gib) { return L + (W - L - R) * gib / xmax; };
    auto Y = [&](double ms) { return H - B - (H - T - B) * std::min(ms, ymax) / ymax; };
    std::ostringstream s;
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" "
                  "height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"20\" "
                  "font-size=\"14\">%s</text>\n",
                  W, H, L, title.c_str());
    s << buf;
    std::snprintf(buf, sizeof(buf),
                  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n"
                  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n"
                  "<text x=\"%d\" y=\"%d\">peak memory per GPU (GiB, 0 - %.0f)</text>\n"
                  "<text x=\"10\" y=\"%d\">iteration (ms, 0 - %.0f)</text>\n",
                  L, H - B, W - R, H - B, L, T, L, H - B, L + 150, H - 15, xmax, T - 5, ymax);
    s << buf;
    for (size_t i = 0; i < results.size(); ++i)
    {
        const PlanResult& r = results[i];
        if (r.status != PlanStatus::Simulated)
        {
            continue;
        }
        const bool best = !ranked.empty() && ranked.front() == i;
        std::snprintf(buf, sizeof(buf),
                      "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"><title>%s: %.3f "
                      "ms, MFU %.1f %%</title></circle>\n",
                      X(r.peakMemoryBytes / double(1ull << 30)), Y(r.iterationUs / 1e3),
                      best ? 6 : 4, best ? "red" : "steelblue", DescribePlan(r.plan).c_str(),
                      r.iterationUs / 1e3, r.mfu * 100);
        s << buf;
    }
    s << "</svg>\n";
    return s.str();
}

/// --dry-run: the plans that fit, in the order they would be simulated, with their bounds.
std::string
DryRunTable(const ModelSpec& model,
            const ClusterSpec& spec,
            const std::vector<PlanResult>& results,
            const std::vector<size_t>& order,
            uint32_t oom,
            size_t top)
{
    std::ostringstream os;
    os << "# gpusim search (dry run): " << model.name << " on " << DescribeCluster(spec) << "\n";
    os << "# plans: " << results.size() << " enumerated, " << oom
       << " infeasible (out of memory), " << order.size() << " to simulate in bound order\n";
    os << "# order  tp  pp  dp vpp  mb  recompute  flags       bound_ms  peak_mem_GiB\n";
    for (size_t k = 0; k < order.size() && k < top; ++k)
    {
        const PlanResult& r = results[order[k]];
        char line[200];
        std::snprintf(line, sizeof(line), "%7zu %3u %3u %3u %3u %3u  %-9s  %-9s %10.3f %13.2f\n",
                      k + 1, r.plan.tp, r.plan.pp, r.plan.dp, r.plan.virtualStages,
                      r.plan.microBatch, ToString(r.plan.recompute), Flags(r.plan).c_str(),
                      r.boundUs / 1e3, r.peakMemoryBytes / double(1ull << 30));
        os << line;
    }
    return os.str();
}

void
PrintSearchUsage(std::ostream& os)
{
    os << "usage: gpusim search --model NAME | --model-file FILE.yaml\n"
          "         [--preset NAME | --cluster FILE] [--servers N] [cluster/NCCL options]\n"
          "         [--global-batch G] [--micro-batches 1,2,4] [--vpp 1[,2,...]]\n"
          "         [--sp off|on|both] [--recompute none,selective[,full]]\n"
          "         [--zero off|on|both] [--cp 1[,2,4,...]] [--jobs N] [--exhaustive] [--top N]\n"
          "         [--json FILE] [--svg FILE] [--dry-run] [--progress]\n"
          "  Plans: TP x CP x PP x DP = the cluster's GPUs, TP within a server; CP (context\n"
          "  parallel) only as --cp lists it (default 1). Plans whose closed-form\n"
          "  peak memory exceeds the GPU's are dropped; the rest are simulated in bound order\n"
          "  until a lower bound exceeds the best time (--exhaustive: all), --jobs at a time\n"
          "  (default: the number of CPUs). Defaults: --sp both, --zero both.\n"
          "  --dry-run: list the plans that fit, in bound order, without simulating.\n"
          "  --progress: a line on stderr as each plan's simulation ends.\n"
          "  Each plan runs as 'gpusim generate' does, with --fidelity flows and --ranks\n"
          "  lockstep (one mirror class per stage; mirrored|all on request) by default.\n";
}

int
SearchMain(const Options& o, std::ostream& out, std::ostream* progress)
{
    const auto t0 = std::chrono::steady_clock::now();
    if (o.Has("model") == o.Has("model-file"))
    {
        throw UsageError("give one of --model NAME (" + KnownModelPresets() +
                         ") or --model-file FILE");
    }
    ModelSpec model;
    if (o.Has("model-file"))
    {
        model = LoadModelSpecYaml(o.Get("model-file", ""));
    }
    else if (!LookupModelPreset(o.Get("model", ""), model))
    {
        throw UsageError("unknown model '" + o.Get("model", "") + "' (known: " +
                         KnownModelPresets() + ")");
    }
    const ClusterSpec spec = SpecFromOptions(o, 1);
    GpuSpec gpu;
    if (!LookupGpuSpec(spec.gpuModel, gpu))
    {
        throw UsageError("unknown GPU model '" + spec.gpuModel + "'");
    }
    SearchSpace space;
    space.gpus = spec.TotalGpus();
    space.gpusPerServer = spec.gpusPerServer;
    space.globalBatch = o.Count("global-batch", 0);
    space.microBatches = CountList(o, "micro-batches", "1,2,4");
    space.virtualStages = CountList(o, "vpp", "1");
    space.sequenceParallel = OnOffList(o, "sp", "both");
    space.recompute = RecomputeList(o);
    space.distributedOptimizer = OnOffList(o, "zero", "both");
    space.contextParallel = CountList(o, "cp", "1");
    space.seqLength = o.Count("seq-length", 0);
    SearchSettings set;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    set.jobs = o.Count("jobs", cpus > 0 ? static_cast<uint32_t>(cpus) : 1);
    if (set.jobs == 0)
    {
        throw UsageError("--jobs must be at least 1");
    }
    set.exhaustive = o.Has("exhaustive");
    if (space.globalBatch == 0 && model.defaultGlobalBatch == 0)
    {
        throw UsageError("give --global-batch (the model has no default)");
    }
    std::vector<PlanResult> results;
    for (TrainingPlan p : EnumeratePlans(model, space))
    {
        p.seqLength = o.Count("seq-length", 0);
        PlanResult r;
        r.plan = p;
        results.push_back(r);
    }
    double ce = 1, me = 1;
    CostModelEfficiencies(ce, me);
    const BoundRates rates = RatesFor(gpu, spec, model, ce, me);
    std::vector<size_t> order;
    uint32_t oom = 0;
    for (size_t i = 0; i < results.size(); ++i)
    {
        PlanResult& r = results[i];
        r.peakMemoryBytes = PlanPeakMemory(model, r.plan, &r.peakStage);
        r.boundUs = IterationLowerBoundUs(model, r.plan, rates);
        if (r.peakMemoryBytes > gpu.memoryBytes)
        {
            r.status = PlanStatus::OutOfMemory;
            ++oom;
            continue;
        }
        order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return results[a].boundUs < results[b].boundUs; });
    if (o.Has("dry-run"))
    {
        out << DryRunTable(model, spec, results, order, oom, o.Count("top", 10));
        return 0;
    }
    const uint32_t discarded = RunWorkers(o, model, set, order, results, progress);
    std::map<std::string, uint32_t> counts = {{"enumerated", results.size()}, {"oom", oom}};
    for (const PlanResult& r : results)
    {
        counts[StatusName(r.status)] += r.status == PlanStatus::OutOfMemory ? 0 : 1;
    }
    const std::vector<size_t> ranked = Ranked(results);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out << "# gpusim search: " << model.name << " on " << DescribeCluster(spec) << "\n";
    out << "# plans: " << counts["enumerated"] << " enumerated, " << oom
        << " infeasible (out of memory), " << counts["pruned"] << " pruned, "
        << counts["simulated"] << " simulated, " << counts["failed"] << " failed"
        << (set.exhaustive ? " (exhaustive)" : "") << "\n";
    out << RankedTable(results, ranked, o.Count("top", 10));
    if (!ranked.empty())
    {
        out << "# best: " << DescribePlan(results[ranked.front()].plan) << "\n";
    }
    char line[160];
    std::snprintf(line, sizeof(line),
                  "# wall time %.1f s, %u jobs, %u speculative runs discarded\n", wall,
                  set.jobs, discarded);
    out << line;
    if (o.Has("json"))
    {
        WriteFileAtomically(o.Get("json", ""),
                            SearchJson(model.name, spec, results, ranked, counts) + "\n");
    }
    if (o.Has("svg"))
    {
        WriteFileAtomically(o.Get("svg", ""),
                            SearchSvg("gpusim search: " + model.name + " on " +
                                          std::to_string(spec.TotalGpus()) + " GPUs",
                                      results, ranked, gpu.memoryBytes));
    }
    return ranked.empty() ? 3 : 0;
}

} // namespace

int
SearchCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::set<std::string> valued = {"ranks", "model", "model-file", "global-batch", "seq-length",
                                    "micro-batches", "vpp", "sp", "recompute", "zero", "jobs", "cp",
                                    "top", "json", "svg"};
    valued.insert(kClusterOptions.begin(), kClusterOptions.end());
    valued.insert(kNcclOptions.begin(), kNcclOptions.end());
    try
    {
        Options o(args, valued, {"help", "exhaustive", "dry-run", "progress"});
        if (o.Has("help"))
        {
            PrintSearchUsage(out);
            return 0;
        }
        if (!o.Positional().empty())
        {
            throw UsageError("unexpected argument '" + o.Positional().front() + "'");
        }
        return SearchMain(o, out, o.Has("progress") ? &err : nullptr);
    }
    catch (const UsageError& e)
    {
        err << "gpusim search: " << e.what() << "\n";
        PrintSearchUsage(err);
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim search: error: " << e.what() << "\n";
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
