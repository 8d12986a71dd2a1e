/*
 * `gpusim replay` cost: for each trace (default: the largest shared trace, MI300, and the
 * NCCL one) it times, median of N repetitions,
 *   read    = ReadKinetoJob (gunzip + parse + execution graph + Op IR),
 *   engine  = PrepareReplayJob + cluster + install + Simulator::Run + GetIterations,
 * and prints the engine's per-iteration error against the recorded ProfilerSteps.
 *
 *   gpusim-bench-replay [--reps N] [--comm recorded|simulated] [trace.json(.gz) ...]
 */
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/kineto-trace.h"
#include "ns3/replay-command.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

double
Median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

double
Since(std::chrono::steady_clock::time_point a)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

struct EngineRun
{
    std::vector<IterationRecord> iterations;
    uint64_t events = 0;
    uint64_t ops = 0;
};

EngineRun
RunEngine(const JobTrace& recorded, ReplayCommMode mode)
{
    auto job = PrepareReplayJob(recorded, mode);
    EngineRun run;
    for (const auto& r : job->ranks)
    {
        run.ops += r.ops.size();
    }
    ClusterSpec spec;
    LookupClusterPreset("dgx-h100", spec);
    spec.servers = 1;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> backend = CreateObject<FlowBackend>();
    backend->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper helper;
    helper.SetBackend(backend);
    Ptr<GpuWorkload> w = helper.Install(job, gpus);
    Simulator::Run();
    run.events = Simulator::GetEventCount();
    run.iterations = w->GetIterations();
    w->Dispose();
    Simulator::Destroy();
    return run;
}

} // namespace

int
main(int argc, char** argv)
{
    int reps = 5;
    ReplayCommMode mode = ReplayCommMode::Recorded;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i)
    {
        if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
        {
            reps = std::max(1, std::atoi(argv[++i]));
        }
        else if (!std::strcmp(argv[i], "--comm") && i + 1 < argc)
        {
            mode = std::strcmp(argv[++i], "simulated") ? ReplayCommMode::Recorded
                                                        : ReplayCommMode::Simulated;
        }
        else
        {
            files.emplace_back(argv[i]);
        }
    }
    if (files.empty())
    {
        const std::string dir = GPUSIM_SHARED_DIR "/data/kineto/";
        files = {dir + "tracelens_mi300__resnet_act_checkpoint.json.gz",
                 dir + "hta_nccl_parser_config__nccl_data.json.gz"};
    }
    std::printf("# gpusim replay benchmark: median of %d, collectives %s\n", reps,
                mode == ReplayCommMode::Simulated ? "simulated" : "recorded");
    std::printf("%-52s %9s %8s %10s %9s %9s %9s\n", "trace", "JSON MB", "ops", "sim events",
                "read ms", "engine ms", "total ms");
    for (const auto& file : files)
    {
        try
        {
            std::vector<double> readS, engineS;
            JobTrace job;
            std::vector<KinetoFileSummary> summary;
            EngineRun run;
            for (int r = 0; r < reps; ++r)
            {
                summary.clear();
                auto t0 = std::chrono::steady_clock::now();
                job = ReadKinetoJob({file}, {}, &summary);
                readS.push_back(Since(t0));
                auto t1 = std::chrono::steady_clock::now();
                run = RunEngine(job, mode);
                engineS.push_back(Since(t1));
            }
            const std::string name = file.substr(file.find_last_of('/') + 1);
            std::printf("%-52s %9.1f %8llu %10llu %9.1f %9.1f %9.1f\n", name.c_str(),
                        summary.at(0).jsonBytes / 1e6, static_cast<unsigned long long>(run.ops),
                        static_cast<unsigned long long>(run.events), Median(readS) * 1e3,
                        Median(engineS) * 1e3, (Median(readS) + Median(engineS)) * 1e3);
            for (const auto& it : run.iterations)
            {
                const double sim = (it.end - it.start).GetNanoSeconds() / 1e3;
                if (it.recordedUs > 0)
                {
                    std::printf("    rank %u %-20s recorded %12.1f us  engine %12.1f us  %+.3f %%\n",
                                it.rank, it.name.c_str(), it.recordedUs, sim,
                                100.0 * (sim - it.recordedUs) / it.recordedUs);
                }
            }
        }
        catch (const std::exception& e)
        {
            std::fprintf(stderr, "%s: %s\n", file.c_str(), e.what());
            return 2;
        }
    }
    return 0;
}
