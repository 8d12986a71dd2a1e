// Flow backend scaling: ring-AllReduce-like traffic driven directly on FlowBackend over
// rail-optimised DGX-H100 clusters.
//
//   gpusim-bench-flow-scaling [gpus[:steps] ...] [--bytes=S]
//
// Each of the 2(n-1) steps: every GPU sends S/n bytes to its ring successor (rank order);
// GPU g starts step k+1 when its incoming step-k transfer and its own step-k send are
// delivered (one chunk in flight per connection). `steps` bounds the
// number of steps run (default: all 2(n-1)). Default sizes: 8, 1024 (all steps), 8192 (64 steps).
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/simulator.h"

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

/// Ring AllReduce driver. GPU g sends its step-k chunk to g+1 once it has received the
/// step-(k-1) chunk from g-1 and its own step-(k-1) send was delivered (one chunk in flight per
/// connection, like NCCL's flow control; without it fast NVLink hops race ahead and pile
/// hundreds of chunks onto the inter-server links).
struct Ring
{
    Ptr<FlowBackend> backend;
    uint32_t n = 0;
    uint32_t steps = 0;
    uint64_t chunk = 0;
    std::vector<uint32_t> received; //!< per GPU: chunks received so far
    std::vector<uint32_t> sent;     //!< per GPU: own sends delivered so far
    std::vector<uint32_t> issued;   //!< per GPU: own sends started so far

    void Start()
    {
        received.assign(n, 0);
        sent.assign(n, 0);
        issued.assign(n, 0);
        for (uint32_t g = 0; g < n; ++g)
        {
            TryNext(g);
        }
    }

    void Send(uint32_t gpu, uint32_t step)
    {
        const uint32_t next = (gpu + 1) % n;
        backend->StartTransfer(uint64_t(step) * n + gpu,
                               gpu,
                               next,
                               chunk,
                               0,
                               [this, gpu, next](const TransferRecord&) {
                                   ++sent[gpu];
                                   ++received[next];
                                   TryNext(gpu);
                                   TryNext(next);
                               });
    }

    /// GPU g's step k is ready when its k previous sends were delivered and it received k chunks.
    void TryNext(uint32_t gpu)
    {
        const uint32_t step = issued[gpu];
        if (step < steps && sent[gpu] == step && received[gpu] >= step)
        {
            ++issued[gpu];
            Send(gpu, step);
        }
    }
};

void
RunCase(uint32_t gpus, uint32_t stepLimit, uint64_t bytes)
{
    gpusim::ClusterSpec spec;
    gpusim::LookupClusterPreset("dgx-h100", spec);
    spec.servers = gpus / spec.gpusPerServer;
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    GpuClusterHelper helper;
    helper.SetSpec(spec);
    Ptr<ClusterTopology> topo = helper.BuildTopology();
    const double buildS = std::chrono::duration<double>(Clock::now() - t0).count();

    Ring ring;
    ring.backend = CreateObject<FlowBackend>();
    ring.backend->SetTopology(topo);
    ring.n = gpus;
    ring.steps = std::min<uint32_t>(stepLimit ? stepLimit : 2 * (gpus - 1), 2 * (gpus - 1));
    ring.chunk = bytes / gpus;

    const auto t1 = Clock::now();
    const std::clock_t c1 = std::clock();
    ring.Start();
    Simulator::Run();
    const double wallS = std::chrono::duration<double>(Clock::now() - t1).count();
    // CPU time is less sensitive than wall time to other jobs on a shared machine.
    const double cpuS = double(std::clock() - c1) / CLOCKS_PER_SEC;
    const double simS = Simulator::Now().GetSeconds();
    const uint64_t transfers = ring.backend->GetDeliveredCount();
    // Busiest link: tells whether the run is bound by the network or by ring dependencies.
    double maxUtil = 0;
    uint32_t busiest = 0;
    for (uint32_t l = 0; l < topo->Links().size(); ++l)
    {
        const double u = ring.backend->GetLinkUtilisation(l, Simulator::Now());
        if (u > maxUtil)
        {
            maxUtil = u;
            busiest = l;
        }
    }
    const TopoLink& bl = topo->Links()[busiest];
    // Bus bandwidth as nccl-tests reports it, for the steps that ran.
    const double busGBps = double(ring.chunk) * ring.steps / simS / 1e9;
    std::printf("%6u GPUs | %5u/%5u steps | %9llu transfers | wall %8.3f s | cpu %8.3f s | %10.0f "
                "transfers/s | %6llu recomputes | sim %.6f s | busBW %.1f GB/s | topo %.3f s\n"
                "           %s; busiest link %s->%s at %.0f%%\n",
                gpus,
                ring.steps,
                2 * (gpus - 1),
                static_cast<unsigned long long>(transfers),
                wallS,
                cpuS,
                transfers / wallS,
                static_cast<unsigned long long>(ring.backend->GetRecomputeCount()),
                simS,
                busGBps,
                buildS,
                topo->GetDescription().c_str(),
                topo->Vertices()[bl.from].name.c_str(),
                topo->Vertices()[bl.to].name.c_str(),
                100 * maxUtil);
    std::fflush(stdout);
    ring.backend->Dispose();
    Simulator::Destroy();
}

} // namespace

int
main(int argc, char** argv)
{
    uint64_t bytes = 1ull << 30; // 1 GiB AllReduce buffer
    std::vector<std::pair<uint32_t, uint32_t>> cases;
    for (int i = 1; i < argc; ++i)
    {
        const std::string a = argv[i];
        if (a.rfind("--bytes=", 0) == 0)
        {
            bytes = std::strtoull(a.c_str() + 8, nullptr, 10);
            continue;
        }
        const auto colon = a.find(':');
        const auto gpus = static_cast<uint32_t>(std::strtoul(a.c_str(), nullptr, 10));
        const auto steps =
            colon == std::string::npos ? 0u : uint32_t(std::strtoul(a.c_str() + colon + 1, nullptr, 10));
        if (gpus < 8 || gpus % 8 != 0)
        {
            std::fprintf(stderr, "GPU count must be a multiple of 8: %s\n", a.c_str());
            return 2;
        }
        cases.emplace_back(gpus, steps);
    }
    if (cases.empty())
    {
        cases = {{8, 0}, {1024, 0}, {8192, 64}};
    }
    std::printf("ring AllReduce of %llu bytes on FlowBackend (rail-optimised dgx-h100)\n",
                static_cast<unsigned long long>(bytes));
    for (const auto& [gpus, steps] : cases)
    {
        RunCase(gpus, steps, bytes);
    }
    return 0;
}
