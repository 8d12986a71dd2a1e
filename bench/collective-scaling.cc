// Timed benchmark: one AllReduce, then one AllToAll, through the whole engine (HostThread ->
// CudaStream -> NcclCollective -> FlowBackend) on rail-optimised dgx-h100 clusters of growing
// size. Prints wall seconds, transfers and transfers/s per case. An AllToAll of n GPUs is n^2
// transfers that start together and share every NIC with ~n others: the flow model's
// re-rating cost per transfer, not the number of transfers, sets its time.
//
//   gpusim-bench-collective-scaling [--full]      (--full adds 8,192 GPUs, minutes)
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"
#include "ns3/boolean.h"

#include <chrono>
#include <cstdio>
#include <cstring>

using namespace ns3;

namespace
{
void
RunCase(uint32_t servers, const std::string& algo, uint32_t channels, uint64_t bytes,
        gpusim::CollKind kind = gpusim::CollKind::AllReduce)
{
    gpusim::ClusterSpec spec;
    gpusim::LookupClusterPreset("dgx-h100", spec);
    spec.servers = servers;
    auto t0 = std::chrono::steady_clock::now();
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    JobBuilder job(gpus.GetN());
    job.AllRanks().CommInit("world").Collective(1, kind, "world", bytes).SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue(algo));
    h.SetNcclAttribute("Channels", UintegerValue(channels));
    h.SetWorkloadAttribute("RecordActivities", BooleanValue(false));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    auto t1 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t2 = std::chrono::steady_clock::now();
    RunReport rep = w->Check();
    const CollectiveRecord& c = w->GetCollectives().at(0);
    const double build = std::chrono::duration<double>(t1 - t0).count();
    const double run = std::chrono::duration<double>(t2 - t1).count();
    std::printf("%6u GPUs  %-4s  %2u ch  %10llu transfers  setup %6.2f s  run %7.2f s  "
                "%6.2f M transfers/s  simulated %9.1f us  %s\n",
                gpus.GetN(), c.plan.algo.c_str(), c.plan.channels,
                static_cast<unsigned long long>(c.transfers), build, run,
                c.transfers / run / 1e6, (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3,
                rep.completed ? "ok" : "STUCK");
    w->Dispose();
    Simulator::Destroy();
}
} // namespace

int
main(int argc, char** argv)
{
    const bool full = argc > 1 && std::strcmp(argv[1], "--full") == 0;
    std::printf("AllReduce 1 GiB, rail-optimised dgx-h100, flow backend\n");
    RunCase(1, "ring", 0, 1ull << 30);
    RunCase(128, "ring", 1, 1ull << 30);
    RunCase(128, "ring", 0, 1ull << 30);
    RunCase(128, "tree", 0, 1ull << 30);
    if (full)
    {
        RunCase(1024, "ring", 1, 1ull << 30);
    }
    std::printf("AllToAll 64 MiB per GPU, rail-optimised dgx-h100, flow backend\n");
    for (uint32_t servers : {32u, 64u, 128u})
    {
        RunCase(servers, "auto", 0, 64ull << 20, gpusim::CollKind::AllToAll);
    }
    return 0;
}
