/*
 * A live program in a scenario script: runs an unmodified CUDA/NCCL program on the gpusim
 * shim as the workload of a simulated cluster (LiveJobSource), on the flow or the packet
 * network, and prints what the simulation saw. The program's own printout (its timers) comes
 * from the simulated cluster.
 *
 *   gpusim-live-program --program=build/shim/test/shim_live_perf --args="-b 1M -e 8M" \
 *       --servers=2 --gpusPerServer=1 --backend=packet --cc=dctcp
 *
 * Needs the shim libraries: --shimLibDir, else $GPUSIM_SHIM_LIBDIR, else BIN/../shim/lib.
 */
#include "ns3/cluster-spec.h"
#include "ns3/command-line.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/live-job-source.h"
#include "ns3/packet-backend.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"
#include "ns3/uinteger.h"

#include <iostream>
#include <sstream>

using namespace ns3;

NS_LOG_COMPONENT_DEFINE("LiveProgram");

/// LiveJobSource "Answered" trace sink: keeps the latest return time.
static void
NoteAnswer(Time* last, uint32_t rank, uint32_t thread, Time at, int64_t value)
{
    *last = Max(*last, at);
}

int
main(int argc, char* argv[])
{
    std::string program = "shim_live_perf";
    std::string args = "-b 1M -e 8M -n 5";
    std::string preset = "dgx-h100";
    std::string backend = "flow";
    std::string cc = "dctcp";
    std::string hostTime = "fixed:1";
    std::string shimLibDir;
    uint32_t servers = 2;
    uint32_t gpusPerServer = 1;

    CommandLine cmd(__FILE__);
    cmd.AddValue("program", "CUDA/NCCL program to run (one process per GPU)", program);
    cmd.AddValue("args", "its arguments (space separated; {rank} is replaced)", args);
    cmd.AddValue("preset", "cluster preset (dgx-h100, dgx-a100)", preset);
    cmd.AddValue("servers", "servers", servers);
    cmd.AddValue("gpusPerServer", "GPUs per server", gpusPerServer);
    cmd.AddValue("backend", "network backend: flow or packet", backend);
    cmd.AddValue("cc", "TCP congestion control (packet backend)", cc);
    cmd.AddValue("hostTime", "host time between calls: measured, api-only or fixed:US", hostTime);
    cmd.AddValue("shimLibDir", "directory of the shim libraries", shimLibDir);
    cmd.Parse(argc, argv);

    gpusim::ClusterSpec spec;
    if (!gpusim::LookupClusterPreset(preset, spec))
    {
        std::cerr << "unknown preset " << preset << "\n";
        return 1;
    }
    spec.servers = servers;
    spec.gpusPerServer = gpusPerServer;
    spec.nicsPerServer = std::min(spec.nicsPerServer, gpusPerServer);
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();

    Ptr<NetworkBackend> network;
    if (backend == "packet")
    {
        Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
        tcp->SetCongestionControl(cc);
        Ptr<PacketBackend> p = CreateObject<PacketBackend>();
        p->SetTransport(tcp);
        p->SetTopology(cluster.GetTopology());
        p->Build();
        network = p;
    }
    else
    {
        Ptr<FlowBackend> f = CreateObject<FlowBackend>();
        f->SetTopology(cluster.GetTopology());
        network = f;
    }

    if (shimLibDir.empty())
    {
        shimLibDir = gpusim::FindShimLibDir();
    }
    std::vector<std::string> argv2 = {program};
    std::istringstream words(args);
    for (std::string w; words >> w;)
    {
        argv2.push_back(w);
    }

    // The live source: one process per GPU, each seeing the GPUs of its server (as torchrun
    // starts them); its ops drive the engine as they are issued.
    gpusim::LaunchPlan plan;
    plan.ranks = gpus.GetN();
    plan.gpusPerServer = gpusPerServer;
    Ptr<LiveJobSource> live = CreateObject<LiveJobSource>();
    live->Launch(argv2, plan, shimLibDir, {{"GPUSIM_HOST_TIME", hostTime}});

    GpuWorkloadHelper workload;
    workload.SetBackend(network);
    workload.SetCostModel("ns3::RooflineCostModel");
    Ptr<GpuWorkload> w = workload.InstallFeed(live, gpus);
    // Trace sources: when the program's blocking calls returned, in simulated time.
    Time lastAnswer;
    live->TraceConnectWithoutContext(
        "Answered",
        MakeBoundCallback(&NoteAnswer, &lastAnswer));
    const bool ok = live->Run();
    RunReport report = w->Check();

    std::cout << "# live program on " << gpus.GetN() << " GPUs, " << network->GetName()
              << " backend: simulated " << report.endTime.GetMicroSeconds() << " us, "
              << live->GetStats().opsReceived << " ops, " << live->GetStats().answers
              << " blocking calls answered, collectives: " << w->GetCollectives().size()
              << (ok && report.completed ? "" : " (did not complete)") << "; last blocking call "
              << "returned at " << lastAnswer.GetMicroSeconds() << " us\n";
    if (!report.completed)
    {
        std::cout << report.stuck;
    }
    w->Dispose();
    Simulator::Destroy();
    return ok && report.completed ? 0 : 3;
}
