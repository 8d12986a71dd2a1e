/*
 * LLM training iteration from a description (doc/generate.md): a model preset and a
 * Megatron-style plan become per-rank Op IR (GenerateTraining), which runs on a DGX cluster
 * (SimulateTraining); prints the report, or the OOM allocation for a plan that does not fit.
 *
 *   gpusim-llm-training --model=llama3-8b --tp=8 --pp=2 --dp=2 --globalBatch=32 --sp=true
 */
#include "ns3/cluster-spec.h"
#include "ns3/command-line.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <iostream>

using namespace ns3;

NS_LOG_COMPONENT_DEFINE("LlmTraining");

int
main(int argc, char* argv[])
{
    std::string model = "llama3-8b";
    std::string preset = "dgx-h100";
    std::string recompute = "none";
    gpusim::TrainingPlan plan;
    plan.tp = 8;
    plan.pp = 2;
    plan.dp = 1;
    plan.globalBatch = 16;
    CommandLine cmd(__FILE__);
    cmd.AddValue("model", "model preset (" + gpusim::KnownModelPresets() + ")", model);
    cmd.AddValue("preset", "cluster preset", preset);
    cmd.AddValue("tp", "tensor parallel size", plan.tp);
    cmd.AddValue("pp", "pipeline parallel size", plan.pp);
    cmd.AddValue("dp", "data parallel size", plan.dp);
    cmd.AddValue("cp", "context parallel size (ring attention)", plan.cp);
    cmd.AddValue("vpp", "model chunks per pipeline rank (interleaved 1F1B if > 1)",
                 plan.virtualStages);
    cmd.AddValue("sp", "sequence parallelism", plan.sequenceParallel);
    cmd.AddValue("globalBatch", "sequences per iteration", plan.globalBatch);
    cmd.AddValue("microBatch", "sequences per micro-batch", plan.microBatch);
    cmd.AddValue("recompute", "activation recomputation: none, selective, full", recompute);
    cmd.AddValue("distributedOptimizer", "ZeRO-1 optimizer sharding", plan.distributedOptimizer);
    cmd.Parse(argc, argv);

    gpusim::ModelSpec m;
    gpusim::ClusterSpec spec;
    if (!gpusim::LookupModelPreset(model, m) || !gpusim::LookupClusterPreset(preset, spec) ||
        !gpusim::ParseRecompute(recompute, plan.recompute))
    {
        std::cerr << "unknown model, cluster preset or recompute mode\n";
        return 1;
    }
    try
    {
        gpusim::GeneratedTraining g = gpusim::GenerateTraining(m, plan);
        gpusim::TrainingReport r = gpusim::SimulateTraining(g, spec);
        std::cout << gpusim::FormatTrainingReport(r);
        return r.oom ? 4 : 0;
    }
    catch (const std::invalid_argument& e)
    {
        std::cerr << "invalid plan: " << e.what() << "\n";
        return 2;
    }
}
