#include "ns3/generate-command.h"

#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-spec.h"
#include "ns3/context-parallel.h"
#include "ns3/gpusim-commands.h"
#include "ns3/json-writer.h"
#include "ns3/simulator.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <chrono>
#include <cstdio>
#include <iostream>

namespace ns3
{
namespace gpusim
{

const std::set<std::string> kPlanOptions = {"model", "model-file", "tp", "pp", "dp", "cp", "ep",
                                            "vpp", "micro-batch", "global-batch", "seq-length",
                                            "recompute", "recompute-layers", "bucket-params",
                                            "grad-dtype",
                                            "fp8-recipe", "host-launch-us"};
const std::set<std::string> kPlanFlags = {"sp", "distributed-optimizer",
                                          "no-overlap-grad-reduce", "no-overlap-param-gather",
                                          "tp-comm-overlap", "no-overlap-p2p-comm",
                                          "no-flash-attn",
                                          "no-cross-entropy-fusion", "fp8",
                                          "no-loss-allreduce", "no-clip-grad"};

namespace
{

void
PrintGenerateUsage(std::ostream& os)
{
    os << "usage: gpusim generate --model NAME | --model-file FILE.yaml\n"
          "         [--tp N] [--pp N] [--dp N] [--cp N] [--ep N] [--vpp V] [--sp]\n"
          "         [--micro-batch B] [--global-batch G] [--seq-length S]\n"
          "         [--recompute none|selective|full] [--recompute-layers N]\n"
          "         [--distributed-optimizer]\n"
          "         [--no-overlap-grad-reduce] [--no-overlap-param-gather] [--tp-comm-overlap]\n"
          "         [--no-overlap-p2p-comm]\n"
          "         [--bucket-params P] [--grad-dtype f32|bf16]\n"
          "         [--no-flash-attn] [--no-cross-entropy-fusion]\n"
          "         [--no-loss-allreduce] [--no-clip-grad] [--host-launch-us US]\n"
          "         [--fp8 [--fp8-recipe delayed|current]]\n"
          "         [--preset NAME | --cluster FILE] [cluster and NCCL options as for "
          "'collective']\n"
          "         [--cost-model recorded|roofline] [--scale-kernels REGEX=FACTOR]\n"
          "         (--out DIR | --simulate) [--json FILE] [--trace FILE]\n"
          "  models: "
       << KnownModelPresets()
       << "\n"
          "  --vpp V: interleaved 1F1B with V model chunks per pipeline rank\n"
          "  --cp N: context parallelism (ring attention, sequence in 2N chunks; doc/generate.md)\n"
          "  --fp8: the transformer layers' GEMMs in fp8 as Megatron-Core with Transformer\n"
          "  Engine runs --fp8-format hybrid (H100/H200); --fp8-recipe delayed (default) or\n"
          "  current (Megatron's tensorwise) scaling (doc/generate.md \"fp8\")\n"
          "  --host-launch-us US: host time before each kernel, copy and collective (default\n"
          "  16.7, PyTorch eager mode on an H100 host; 0: CUDA graphs, the host always ahead)\n"
          "  --dp defaults to the cluster's GPUs / (TP x CP x PP) when --servers or --cluster is\n"
          "  given, else 1. Exit code 4: the plan does not fit in device memory.\n"
          "  Speed: --fidelity flows (default; auto|chunk|collective|flows as for\n"
          "  'collective') and --ranks mirrored (default: the ranks of a stage mirror one\n"
          "  representative per class of ranks that see the same network) | lockstep (one\n"
          "  class per stage: faster, exact only where the replicas see the same network) |\n"
          "  all. '--fidelity chunk --ranks all' is the detailed model.\n";
}

/// The CP ring's traffic in the report (doc/generate.md "Context parallelism").
std::string
ContextParallelLine(const ModelSpec& m, const TrainingPlan& p)
{
    if (p.cp < 2)
    {
        return "";
    }
    char line[256];
    const double kv = CpKvBytes(m, p);
    std::snprintf(line, sizeof(line),
                  "# context parallel: CP %u ring attention, %u tokens per rank, KV block %.2f "
                  "MiB, %.2f MiB sent per layer and micro-batch (3 x (CP-1) blocks)\n",
                  p.cp, SeqLength(m, p) / p.cp * p.microBatch, kv / 1048576.0,
                  3.0 * (p.cp - 1) * kv / 1048576.0);
    return line;
}

} // namespace

void
ModelAndPlanFromOptions(const Options& o, uint32_t clusterGpus, ModelSpec& model, TrainingPlan& plan)
{
    if (o.Has("model") == o.Has("model-file"))
    {
        throw UsageError("give one of --model NAME (" + KnownModelPresets() +
                         ") or --model-file FILE");
    }
    if (o.Has("model"))
    {
        const std::string name = o.Get("model", "");
        if (!LookupModelPreset(name, model))
        {
            throw UsageError("unknown model '" + name + "' (known: " + KnownModelPresets() + ")");
        }
    }
    else
    {
        model = LoadModelSpecYaml(o.Get("model-file", ""));
    }
    plan.tp = o.Count("tp", 1);
    plan.pp = o.Count("pp", 1);
    plan.cp = o.Count("cp", 1);
    const uint32_t mp = plan.tp * plan.pp * plan.cp;
    plan.dp = o.Count("dp", clusterGpus && mp && clusterGpus % mp == 0 ? clusterGpus / mp : 1);
    plan.ep = o.Count("ep", 1);
    plan.virtualStages = o.Count("vpp", 1);
    plan.sequenceParallel = o.Has("sp");
    plan.microBatch = o.Count("micro-batch", 1);
    plan.globalBatch = o.Count("global-batch", 0);
    plan.seqLength = o.Count("seq-length", 0);
    if (!ParseRecompute(o.Get("recompute", "none"), plan.recompute))
    {
        throw UsageError("--recompute must be none, selective or full");
    }
    plan.recomputeLayers = o.Count("recompute-layers", 0);
    if (o.Has("recompute-layers") && plan.recompute != Recompute::Full)
    {
        throw UsageError("--recompute-layers needs --recompute full");
    }
    plan.distributedOptimizer = o.Has("distributed-optimizer");
    plan.overlapGradReduce = !o.Has("no-overlap-grad-reduce");
    plan.overlapParamGather = !o.Has("no-overlap-param-gather");
    plan.tpCommOverlap = o.Has("tp-comm-overlap");
    plan.overlapP2pComm = !o.Has("no-overlap-p2p-comm");
    plan.bucketParams = o.Count("bucket-params", 0);
    plan.flashAttention = !o.Has("no-flash-attn");
    plan.crossEntropyFusion = !o.Has("no-cross-entropy-fusion");
    plan.lossAllReduce = !o.Has("no-loss-allreduce");
    plan.clipGrad = !o.Has("no-clip-grad");
    plan.hostLaunchUs = o.Number("host-launch-us", plan.hostLaunchUs);
    if (!(plan.hostLaunchUs >= 0 && plan.hostLaunchUs <= 1e6))
    {
        throw UsageError("--host-launch-us must be 0 to 1000000");
    }
    const std::string g = o.Get("grad-dtype", "f32");
    if (g != "f32" && g != "bf16")
    {
        throw UsageError("--grad-dtype must be f32 or bf16");
    }
    plan.gradDtype = g == "f32" ? DataType::F32 : DataType::BF16;
    if (o.Has("fp8-recipe") && !o.Has("fp8"))
    {
        throw UsageError("--fp8-recipe needs --fp8");
    }
    if (o.Has("fp8"))
    {
        plan.fp8 = Fp8Recipe::Delayed;
        const std::string r = o.Get("fp8-recipe", "delayed");
        if (!ParseFp8Recipe(r, plan.fp8) || plan.fp8 == Fp8Recipe::None)
        {
            throw UsageError("--fp8-recipe must be delayed or current");
        }
    }
}

int
GenerateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::set<std::string> valued = {"out", "json", "trace", "cost-model", "scale-kernels",
                                     "kernel-table", "ranks"};
    valued.insert(kPlanOptions.begin(), kPlanOptions.end());
    valued.insert(kClusterOptions.begin(), kClusterOptions.end());
    valued.insert(kNcclOptions.begin(), kNcclOptions.end());
    std::set<std::string> flags = {"help", "simulate", "quiet"};
    flags.insert(kPlanFlags.begin(), kPlanFlags.end());
    try
    {
        Options o(args, valued, flags);
        if (o.Has("help"))
        {
            PrintGenerateUsage(out);
            return 0;
        }
        if (!o.Positional().empty())
        {
            throw UsageError("unexpected argument '" + o.Positional().front() + "'");
        }
        if (!o.Has("out") && !o.Has("simulate"))
        {
            throw UsageError("give --out DIR, --simulate or both");
        }
        ModelSpec model;
        TrainingPlan plan;
        const bool sized = o.Has("servers") || o.Has("cluster");
        ModelAndPlanFromOptions(o, sized ? SpecFromOptions(o, 1).TotalGpus() : 0, model, plan);
        const auto t0 = std::chrono::steady_clock::now();
        GeneratedTraining g = GenerateTraining(model, plan);
        const ClusterSpec spec = SpecFromOptions(o, plan.Gpus());
        g.job->metadata["preset"] = spec.preset;
        GpuSpec gpuSpec;
        if (plan.fp8 != Fp8Recipe::None && LookupGpuSpec(spec.gpuModel, gpuSpec) &&
            !gpuSpec.HasFp8())
        {
            throw UsageError("--fp8 needs a GPU with FP8 tensor cores (H100, H200), not " +
                             gpuSpec.name);
        }
        const double genS =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (o.Has("out"))
        {
            WriteTrainingTrace(g, o.Get("out", ""));
            out << "# wrote " << g.job->ranks.size() << " ranks to " << o.Get("out", "") << "\n";
        }
        if (!o.Has("simulate"))
        {
            GpuSpec gpu;
            LookupGpuSpec(spec.gpuModel, gpu);
            const OomInfo oom = FindOom(*g.job, gpu.memoryBytes);
            out << "# " << model.name << ", " << DescribePlan(plan) << ": "
                << (oom.oom ? oom.Describe() : "fits in memory") << "\n"
                << ContextParallelLine(model, plan);
            return oom.oom ? kExitOutOfMemory : 0;
        }
        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        NodeContainer gpus = cluster.Create();
        GpuWorkloadHelper helper;
        Ptr<NetworkBackend> backend = MakeBackend(o, cluster.GetTopology());
        helper.SetBackend(backend);
        ConfigureNccl(o, helper, "flows");
        ConfigureWorkload(o, helper);
        ConfigureRanks(o, helper, "mirrored");
        Ptr<GpuWorkload> w;
        const auto t1 = std::chrono::steady_clock::now();
        TrainingReport r = SimulateTraining(g, helper, gpus, o.Has("trace") ? &w : nullptr);
        const double simS =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        out << "# cluster: " << DescribeCluster(spec) << "\n"
            << DistributedLine(backend) << ContextParallelLine(model, plan)
            << FormatTrainingReport(r);
        char line[128];
        std::snprintf(line, sizeof(line), "# wall time: generate %.2f s, simulate %.2f s\n", genS,
                      simS);
        out << line;
        if (o.Has("json"))
        {
            WriteFileAtomically(o.Get("json", ""), TrainingReportJson(r) + "\n");
        }
        if (w)
        {
            if (r.completed && o.Has("trace"))
            {
                WriteFileAtomically(o.Get("trace", ""), w->ChromeTraceJson());
            }
            w->Dispose();
        }
        Simulator::Destroy();
        if (r.oom)
        {
            return kExitOutOfMemory;
        }
        return r.completed ? 0 : 3;
    }
    catch (const UsageError& e)
    {
        err << "gpusim generate: " << e.what() << "\n";
        PrintGenerateUsage(err);
        Simulator::Destroy();
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim generate: error: " << e.what() << "\n";
        Simulator::Destroy();
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
