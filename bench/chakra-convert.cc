// Timed benchmark: a generated data-parallel training job (per rank and layer: forward and
// backward kernels on a compute stream, a gradient AllReduce on a communication stream after
// an event, host time between launches) written as Chakra ET files and read back.
// Prints the time of each step, node counts and bytes on disk.
//
//   gpusim-bench-chakra-convert [--ranks N] [--layers L] [--iters I] [--simulate 1]
//
// --simulate 1 also simulates the job and its Chakra round trip (N x dgx-h100 GPUs, flow
// backend) and prints both end times: they must be equal.
#include "ns3/chakra-trace.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

double
Since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// End of the simulation (us) of `job` on ranks/8 x dgx-h100 (flow backend), and its wall time.
double
SimulateUs(const JobTrace& job, double& wall)
{
    const auto t0 = std::chrono::steady_clock::now();
    ClusterSpec spec;
    LookupClusterPreset("dgx-h100", spec);
    spec.servers = (static_cast<uint32_t>(job.ranks.size()) + 7) / 8;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper h;
    h.SetBackend(net);
    Ptr<GpuWorkload> w = h.Install(std::make_shared<JobTrace>(job), gpus);
    Simulator::Run();
    const RunReport rep = w->Check();
    const double us = rep.completed ? rep.endTime.GetNanoSeconds() / 1e3 : -1;
    w->Dispose();
    Simulator::Destroy();
    wall = Since(t0);
    return us;
}

} // namespace

int
main(int argc, char** argv)
{
    uint32_t ranks = 64, layers = 48, iters = 2, simulate = 0;
    for (int i = 1; i + 1 < argc; i += 2)
    {
        const uint32_t v = static_cast<uint32_t>(std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--ranks"))
        {
            ranks = v;
        }
        else if (!std::strcmp(argv[i], "--layers"))
        {
            layers = v;
        }
        else if (!std::strcmp(argv[i], "--iters"))
        {
            iters = v;
        }
        else if (!std::strcmp(argv[i], "--simulate"))
        {
            simulate = v;
        }
    }
    JobBuilder b(ranks);
    b.AllRanks().CommInit("dp").CreateStream(1, true).CreateStream(2, true);
    uint64_t event = 1;
    for (uint32_t it = 0; it < iters; ++it)
    {
        for (uint32_t l = 0; l < layers; ++l)
        {
            b.Host(4).Kernel(1, "fwd", 300 + l);
        }
        for (uint32_t l = 0; l < layers; ++l)
        {
            b.Host(4).Kernel(1, "bwd", 600 + l).RecordEvent(event, 1).WaitEvent(2, event);
            b.AllReduce(2, "dp", 32 << 20);
            ++event;
        }
        b.SyncDevice();
    }
    const JobTrace job = b.Build();
    size_t ops = 0;
    for (const auto& r : job.ranks)
    {
        ops += r.ops.size();
    }
    const std::string dir = std::filesystem::temp_directory_path() / "gpusim-bench-chakra";
    std::filesystem::remove_all(dir);
    auto t0 = std::chrono::steady_clock::now();
    const ChakraJob ch = JobTraceToChakra(job);
    const double tConvert = Since(t0);
    t0 = std::chrono::steady_clock::now();
    WriteChakraJob(ch, dir + "/job");
    const double tWrite = Since(t0);
    t0 = std::chrono::steady_clock::now();
    const ChakraJob read = ReadChakraJob(dir + "/job");
    const double tRead = Since(t0);
    t0 = std::chrono::steady_clock::now();
    const JobTrace back = ChakraToJobTrace(read);
    const double tImport = Since(t0);
    size_t nodes = 0, bytes = 0, opsBack = 0;
    for (const auto& r : ch.ranks)
    {
        nodes += r.nodes.size();
    }
    for (const auto& e : std::filesystem::directory_iterator(dir))
    {
        bytes += std::filesystem::file_size(e.path());
    }
    for (const auto& r : back.ranks)
    {
        opsBack += r.ops.size();
    }
    std::printf("# %u ranks x %u layers x %u iterations: %zu Op IR ops -> %zu Chakra nodes, "
                "%.1f MB on disk -> %zu ops\n",
                ranks, layers, iters, ops, nodes, bytes / 1e6, opsBack);
    std::printf("op-ir->dag %.3f s  write %.3f s  read %.3f s  dag->op-ir %.3f s  "
                "(%.0f k nodes/s end to end)\n",
                tConvert, tWrite, tRead, tImport,
                nodes / (tConvert + tWrite + tRead + tImport) / 1e3);
    std::filesystem::remove_all(dir);
    if (simulate)
    {
        double wallA, wallB;
        const double a = SimulateUs(job, wallA);
        const double b2 = SimulateUs(back, wallB);
        std::printf("simulated: Op IR %.3f us (%.2f s wall), after Chakra round trip %.3f us "
                    "(%.2f s wall): %s\n",
                    a, wallA, b2, wallB, a == b2 && a > 0 ? "equal" : "DIFFERENT");
        return a == b2 && a > 0 ? 0 : 1;
    }
    return 0;
}
