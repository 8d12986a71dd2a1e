/*
 * Benchmark: how the packet backend's cost grows with the cluster (issue 21).
 *
 * Scenario: one AllReduce (default tuner: NVLSTree on dgx-h100) or, with --op=alltoall, one
 * AllToAll (NCCL's point-to-point rounds with PXN) of --bytes on a rail fabric of --servers
 * dgx-h100 servers, packet backend, RDMA + DCQCN (--transport / --cc to change). Each
 * size runs in its own child process so that its peak RSS is its own. Per size it prints the
 * wall time (building the network and the run), the peak RSS, the simulator events, the bytes
 * the transfers carried through the fabric, the packets the fabric links sent, events per GB
 * moved, events per wall second, and the CPU-time ratio to the previous (half) size.
 *
 *   gpusim-bench-packet-scaling --servers=8,16,32,64 --bytes=64M
 *   gpusim-bench-packet-scaling --servers=128
 *   gpusim-bench-packet-scaling --op=alltoall --servers=8,16,32
 *   gpusim-bench-packet-scaling --servers=16,128 --repeat=3
 *
 * With --repeat=N the sizes run N rounds (16, 128, 16, 128, ...: a busy spell of a shared
 * machine then hits every size alike), and each row is the size's run with the least CPU
 * time, the least disturbed one, with the spread of all N. The last line gives the cost per
 * doubling from the first to the last size, from the fastest runs and from the slowest.
 */
#include "ns3/byte-size.h"
#include "ns3/cluster-spec.h"
#include "ns3/command-line.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/packet-backend.h"
#include "ns3/queue-disc.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"
#include "ns3/boolean.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

struct Result
{
    uint32_t servers = 0;
    uint32_t gpus = 0;
    double setupSeconds = 0; //!< cluster, backend Build() and workload install
    double runSeconds = 0;   //!< Simulator::Run
    uint64_t events = 0;
    uint64_t fabricBytes = 0;   //!< bytes of the transfers that crossed the fabric
    uint64_t linkPackets = 0;   //!< packets sent over fabric and NIC links (every hop)
    double simulatedUs = 0;
    bool completed = false;
};

double
Since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Result
RunCase(uint32_t servers, gpusim::CollKind op, uint64_t bytes, const std::string& transport,
        const std::string& cc)
{
    Result r;
    r.servers = servers;
    auto t0 = std::chrono::steady_clock::now();
    gpusim::ClusterSpec spec;
    gpusim::LookupClusterPreset("dgx-h100", spec);
    spec.servers = servers;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    r.gpus = gpus.GetN();
    Ptr<PacketBackend> net = CreateObject<PacketBackend>();
    if (transport == "rdma")
    {
        Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
        rdma->SetCongestionControl(cc);
        net->SetTransport(rdma);
        net->SetAttribute("QueueDisc", StringValue("ecn"));
    }
    else
    {
        Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
        tcp->SetCongestionControl(cc);
        net->SetTransport(tcp);
    }
    net->SetAttribute("RecordTransfers", BooleanValue(false));
    net->SetTopology(cluster.GetTopology());
    net->Build();
    JobBuilder job(gpus.GetN());
    job.AllRanks().CommInit("world").CreateStream(1, true).Collective(1, op, "world", bytes)
        .SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetWorkloadAttribute("RecordActivities", BooleanValue(false));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    r.setupSeconds = Since(t0);
    auto t1 = std::chrono::steady_clock::now();
    Simulator::Run();
    r.runSeconds = Since(t1);
    r.events = Simulator::GetEventCount();
    RunReport rep = w->Check();
    r.completed = rep.completed;
    if (!rep.completed)
    {
        std::cerr << rep.stuck;
    }
    else
    {
        const CollectiveRecord& c = w->GetCollectives().at(0);
        r.simulatedUs = (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3;
    }
    for (uint32_t link : net->GetPacketLinks())
    {
        r.linkPackets += net->GetLinkQueueDisc(link)->GetStats().nTotalSentPackets;
    }
    r.fabricBytes = 0;
    for (uint32_t link : net->GetPacketLinks())
    {
        // NIC egress links carry each transfer's bytes (plus headers) exactly once.
        const TopoLink& L = net->GetTopology()->Links()[link];
        if (net->GetTopology()->Vertices()[L.from].type == TopoVertexType::Nic)
        {
            r.fabricBytes += net->GetLinkQueueDisc(link)->GetStats().nTotalSentBytes;
        }
    }
    w->Dispose();
    net->Dispose();
    Simulator::Destroy();
    return r;
}

/// Runs one size in a child process; returns its result and peak RSS (MiB).
bool
RunInChild(uint32_t servers, gpusim::CollKind op, uint64_t bytes, const std::string& transport,
           const std::string& cc, Result& out, double& rssMiB, double& cpuSeconds)
{
    int fd[2];
    if (pipe(fd) != 0)
    {
        return false;
    }
    const pid_t pid = fork();
    if (pid == 0)
    {
        close(fd[0]);
        Result r = RunCase(servers, op, bytes, transport, cc);
        const ssize_t n = write(fd[1], &r, sizeof(r));
        _exit(n == ssize_t(sizeof(r)) ? 0 : 1);
    }
    close(fd[1]);
    const ssize_t n = read(fd[0], &out, sizeof(out));
    close(fd[0]);
    int status = 0;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    rssMiB = ru.ru_maxrss / 1024.0;
    cpuSeconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    return n == ssize_t(sizeof(out)) && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace

int
main(int argc, char** argv)
{
    std::string serverList = "8,16,32,64";
    std::string bytesText = "64M";
    std::string transport = "rdma";
    std::string cc = "dcqcn";
    std::string opName = "allreduce";
    uint32_t repeat = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("op", "allreduce or alltoall", opName);
    cmd.AddValue("servers", "comma-separated cluster sizes (dgx-h100 servers)", serverList);
    cmd.AddValue("bytes", "AllReduce size (K/M/G suffixes)", bytesText);
    cmd.AddValue("transport", "rdma or tcp", transport);
    cmd.AddValue("cc", "congestion control (dcqcn, hpcc, ... with rdma; dctcp, ... with tcp)",
                 cc);
    cmd.AddValue("repeat", "rounds over the sizes; each row is the size's fastest run", repeat);
    cmd.Parse(argc, argv);
    repeat = std::max<uint32_t>(1, repeat);
    const uint64_t bytes = gpusim::ParseByteSize(bytesText);
    gpusim::CollKind op = gpusim::CollKind::AllReduce;
    if (opName == "alltoall")
    {
        op = gpusim::CollKind::AllToAll;
    }
    else if (opName != "allreduce")
    {
        std::cerr << "packet-scaling: --op must be allreduce or alltoall, not '" << opName
                  << "'\n";
        return 2;
    }
    std::vector<uint32_t> sizes;
    std::stringstream ss(serverList);
    for (std::string item; std::getline(ss, item, ',');)
    {
        sizes.push_back(static_cast<uint32_t>(std::stoul(item)));
    }

    std::printf("%s %s, rail-optimised dgx-h100, packet backend, %s + %s\n",
                op == gpusim::CollKind::AllToAll ? "AllToAll" : "AllReduce", bytesText.c_str(),
                transport.c_str(), cc.c_str());
    std::printf("%7s %5s %8s %8s %8s %8s %8s %12s %9s %12s %11s %10s %6s %10s\n", "servers",
                "GPUs", "setup_s", "run_s", "wall_s", "cpu_s", "rss_MiB", "events", "fabric_GB",
                "link_pkts", "events/GB", "events/s", "cpu_x", "sim_us");
    // Rounds over every size, so that a busy spell of the machine falls on all sizes alike.
    struct Runs
    {
        Result best;
        double bestRss = 0;
        double minCpu = 0;
        double maxCpu = 0;
        uint32_t ok = 0;
    };
    std::vector<Runs> runs(sizes.size());
    for (uint32_t round = 0; round < repeat; ++round)
    {
        for (size_t i = 0; i < sizes.size(); ++i)
        {
            Result r;
            double rss = 0;
            double cpu = 0;
            if (!RunInChild(sizes[i], op, bytes, transport, cc, r, rss, cpu))
            {
                continue;
            }
            Runs& k = runs[i];
            if (k.ok == 0 || cpu < k.minCpu)
            {
                k.best = r;
                k.bestRss = rss;
                k.minCpu = cpu;
            }
            k.maxCpu = std::max(k.maxCpu, cpu);
            ++k.ok;
        }
    }
    double prevCpu = 0; // cost ratio per doubling, in CPU time (robust on a shared machine)
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        const Runs& k = runs[i];
        if (k.ok == 0)
        {
            std::printf("%7u  failed\n", sizes[i]);
            prevCpu = 0;
            continue;
        }
        const Result& r = k.best;
        const double cpu = k.minCpu;
        const double wall = r.setupSeconds + r.runSeconds;
        const double gb = r.fabricBytes / 1e9;
        // The ratio to the previous size, per doubling of the servers between them.
        std::string ratio = "-";
        if (prevCpu > 0 && i > 0 && sizes[i] > sizes[i - 1])
        {
            const double doublings = std::log2(double(sizes[i]) / sizes[i - 1]);
            ratio = std::to_string(std::pow(cpu / prevCpu, 1.0 / doublings)).substr(0, 4) + "x";
        }
        std::printf("%7u %5u %8.2f %8.2f %8.2f %8.2f %8.1f %12llu %9.3f %12llu %11.3g %10.3g "
                    "%6s %10.1f%s",
                    r.servers, r.gpus, r.setupSeconds, r.runSeconds, wall, cpu, k.bestRss,
                    static_cast<unsigned long long>(r.events), gb,
                    static_cast<unsigned long long>(r.linkPackets), r.events / gb,
                    r.events / r.runSeconds, ratio.c_str(), r.simulatedUs,
                    r.completed ? "" : "  STUCK");
        if (repeat > 1)
        {
            std::printf("  (%u runs, cpu %.2f - %.2f s)", k.ok, k.minCpu, k.maxCpu);
        }
        std::printf("\n");
        std::fflush(stdout);
        prevCpu = cpu;
    }
    const Runs& first = runs.front();
    const Runs& last = runs.back();
    if (repeat > 1 && sizes.size() > 1 && first.ok > 0 && last.ok > 0 &&
        sizes.back() > sizes.front())
    {
        const double doublings = std::log2(double(sizes.back()) / sizes.front());
        std::printf("cost per doubling, %u -> %u servers: %.2fx (fastest runs), %.2fx (slowest "
                    "runs)\n",
                    sizes.front(), sizes.back(), std::pow(last.minCpu / first.minCpu, 1 / doublings),
                    std::pow(last.maxCpu / first.maxCpu, 1 / doublings));
    }
    return 0;
}
