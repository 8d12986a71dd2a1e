/*
 * Data-parallel training step on a GPU cluster: per layer, backward compute on stream 1 and
 * the gradient AllReduce of the previous layer on stream 2 (bucketed, as DDP does), then an
 * optimizer step. Prints the iteration time with and without overlap and the breakdown.
 *
 *   gpusim-data-parallel-overlap --servers=4 --layers=24 --bucketMiB=25 --iterations=2
 */
#include "ns3/cluster-spec.h"
#include "ns3/command-line.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <iomanip>
#include <iostream>

using namespace ns3;
using gpusim::MarkerPhase;

NS_LOG_COMPONENT_DEFINE("DataParallelOverlap");

namespace
{

/// One rank's training step: GEMMs from the layer shape, costed by the roofline model.
void
AddIterations(JobBuilder& job, uint32_t iterations, uint32_t layers, uint64_t hidden,
              uint64_t tokens, uint64_t bucketBytes, bool overlap)
{
    job.AllRanks().CommInit("dp").CreateStream(1).CreateStream(2);
    for (uint32_t it = 0; it < iterations; ++it)
    {
        const std::string name = "ProfilerStep#" + std::to_string(it);
        job.Marker(name, MarkerPhase::Begin);
        job.Host(50); // data loading, Python overhead
        for (uint32_t l = 0; l < layers; ++l)
        {
            // Forward: two GEMMs per layer (attention projection + MLP, simplified).
            job.Host(8).Gemm(1, tokens, 4 * hidden, hidden, gpusim::DataType::BF16, "fwd_gemm");
            job.Host(8).Gemm(1, tokens, hidden, 4 * hidden, gpusim::DataType::BF16, "fwd_gemm2");
        }
        for (uint32_t l = 0; l < layers; ++l)
        {
            // Backward: twice the forward FLOPs; the layer's gradients become ready after it.
            const uint64_t ev = 1000 + l;
            job.Host(8).Gemm(1, tokens, 8 * hidden, hidden, gpusim::DataType::BF16, "bwd_gemm");
            job.Host(8).Gemm(1, tokens, hidden, 8 * hidden, gpusim::DataType::BF16, "bwd_gemm2");
            job.RecordEvent(ev, 1);
            if (overlap)
            {
                job.WaitEvent(2, ev).AllReduce(2, "dp", bucketBytes);
            }
        }
        if (!overlap)
        {
            job.SyncStream(1);
            for (uint32_t l = 0; l < layers; ++l)
            {
                job.AllReduce(2, "dp", bucketBytes);
            }
        }
        // Optimizer needs all gradients.
        job.RecordEvent(1, 2).WaitEvent(1, 1).Kernel(1, "adam_step", 400).SyncDevice();
        job.Marker(name, MarkerPhase::End);
    }
}

} // namespace

int
main(int argc, char** argv)
{
    std::string preset = "dgx-h100";
    uint32_t servers = 2;
    uint32_t layers = 24;
    uint32_t iterations = 2;
    uint32_t hidden = 4096;
    uint32_t tokens = 8192;
    double bucketMiB = 25;
    std::string algo = "auto";

    CommandLine cmd(__FILE__);
    cmd.AddValue("preset", "Cluster preset (dgx-h100, dgx-a100)", preset);
    cmd.AddValue("servers", "Number of servers", servers);
    cmd.AddValue("layers", "Transformer layers", layers);
    cmd.AddValue("iterations", "Training iterations", iterations);
    cmd.AddValue("hidden", "Hidden size", hidden);
    cmd.AddValue("tokens", "Tokens per GPU per step", tokens);
    cmd.AddValue("bucketMiB", "Gradient bucket per layer, MiB", bucketMiB);
    cmd.AddValue("algo", "NCCL algorithm: auto, ring, tree", algo);
    cmd.Parse(argc, argv);

    gpusim::ClusterSpec spec;
    if (!gpusim::LookupClusterPreset(preset, spec))
    {
        std::cerr << "unknown preset '" << preset << "' (known: " << gpusim::KnownClusterPresets()
                  << ")\n";
        return 2;
    }
    spec.servers = servers;

    std::cout << "Data-parallel step on " << servers << " x " << preset << " ("
              << servers * spec.gpusPerServer << " GPUs), " << layers << " layers, bucket "
              << bucketMiB << " MiB\n";
    for (bool overlap : {false, true})
    {
        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        NodeContainer gpus = cluster.Create();

        Ptr<FlowBackend> network = CreateObject<FlowBackend>();
        network->SetTopology(cluster.GetTopology());

        JobBuilder job(gpus.GetN());
        AddIterations(job, iterations, layers, hidden, tokens,
                      static_cast<uint64_t>(bucketMiB * 1024 * 1024), overlap);

        GpuWorkloadHelper workload;
        workload.SetBackend(network);
        workload.SetCostModel("ns3::RooflineCostModel");
        workload.SetNcclAttribute("Algorithm", StringValue(algo));
        Ptr<GpuWorkload> w = workload.Install(job.BuildShared(), gpus);

        Simulator::Run();
        RunReport report = w->Check();
        if (!report.completed)
        {
            std::cerr << "simulation stuck:\n" << report.stuck;
            return 3;
        }
        std::cout << (overlap ? "\nwith overlap (AllReduce on stream 2 per layer):\n"
                              : "\nwithout overlap (all AllReduces after backward):\n");
        for (const auto& it : w->GetIterations())
        {
            if (it.rank != 0)
            {
                continue;
            }
            std::cout << std::fixed << std::setprecision(1) << "  " << it.name << ": "
                      << (it.end - it.start).GetMicroSeconds() / 1e3 << " ms  (exposed compute "
                      << it.computeOnlyUs / 1e3 << " ms, exposed comm " << it.commOnlyUs / 1e3
                      << " ms, overlap " << it.overlapUs / 1e3 << " ms, idle "
                      << it.idleUs / 1e3 << " ms)\n";
        }
        w->Dispose();
        Simulator::Destroy();
    }
    return 0;
}
