// Timed benchmark: a generated 64-rank training job (8 x DGX-H100, data parallel over all
// ranks, tensor parallel inside each server) written as a gpusim trace, read back, grouped
// into distinct op streams, identical ranks made to share one op list (unless --no-dedup)
// and simulated. Prints the cost of each step, memory, and what deduplication saves (the
// simulation itself still runs every rank: collectives need every rank's endpoints).
//
//   gpusim-bench-record-dedup [--ranks N] [--layers L] [--iters I] [--jitter] [--no-dedup]
//
// --jitter perturbs every rank's host times slightly, as measured (recorded) traces are.
// Run once with and once without --no-dedup: peak RSS is per process.
#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/op-stream-dedup.h"
#include "ns3/simulator.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

double
Since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Resident set size now, MiB.
double
RssMiB()
{
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

double
PeakRssMiB()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024.0;
}

uint64_t
FileBytes(const std::string& p)
{
    std::ifstream f(p, std::ios::binary | std::ios::ate);
    return f ? static_cast<uint64_t>(f.tellg()) : 0;
}

JobTrace
Generate(uint32_t ranks, uint32_t layers, uint32_t iters, bool jitter)
{
    const uint32_t perServer = 8;
    JobBuilder b(ranks);
    b.AllRanks().CommInit("dp").CreateStream(1).CreateStream(2, true);
    for (uint32_t r = 0; r < ranks; ++r)
    {
        b.Rank(r).CommInit("tp" + std::to_string(r / perServer), perServer, r % perServer);
    }
    for (uint32_t it = 0; it < iters; ++it)
    {
        b.AllRanks().Marker("ProfilerStep#" + std::to_string(it), MarkerPhase::Begin);
        for (uint32_t l = 0; l < layers; ++l)
        {
            for (uint32_t r = 0; r < ranks; ++r)
            {
                const std::string tp = "tp" + std::to_string(r / perServer);
                const double host = jitter ? 8 + 0.001 * ((r * 7919 + l * 31 + it) % 97) : 8;
                b.Rank(r)
                    .Host(host)
                    .Kernel(1, "layernorm", 12)
                    .Gemm(1, 4096, 3 * 4096 / perServer, 4096)
                    .Kernel(1, "flash_attn_fwd", 180)
                    .Gemm(1, 4096, 4096, 4096 / perServer)
                    .AllReduce(1, tp, 4096ull * 4096 * 2)
                    .Gemm(1, 4096, 4 * 4096 / perServer, 4096)
                    .Kernel(1, "gelu", 25)
                    .Gemm(1, 4096, 4096, 4 * 4096 / perServer)
                    .AllReduce(1, tp, 4096ull * 4096 * 2);
            }
        }
        b.AllRanks();
        for (uint32_t l = 0; l < layers; ++l)
        {
            b.Gemm(1, 4096, 4096, 4096, DataType::BF16, "backward_gemm")
                .Gemm(1, 4096, 4096, 4096, DataType::BF16, "backward_gemm");
            if (l % 4 == 3)
            {
                // Gradient bucket: the data-parallel AllReduce overlaps the next layers.
                b.RecordEvent(10 + l, 1).WaitEvent(2, 10 + l).AllReduce(2, "dp", 64ull << 20);
            }
        }
        b.SyncDevice().Marker("ProfilerStep#" + std::to_string(it), MarkerPhase::End);
    }
    return b.Build();
}

} // namespace

int
main(int argc, char** argv)
{
    uint32_t ranks = 64, layers = 24, iters = 2;
    bool jitter = false;
    bool share = true;
    for (int i = 1; i < argc; ++i)
    {
        if (!std::strcmp(argv[i], "--ranks") && i + 1 < argc)
        {
            ranks = std::atoi(argv[++i]);
        }
        else if (!std::strcmp(argv[i], "--layers") && i + 1 < argc)
        {
            layers = std::atoi(argv[++i]);
        }
        else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc)
        {
            iters = std::atoi(argv[++i]);
        }
        else if (!std::strcmp(argv[i], "--jitter"))
        {
            jitter = true;
        }
        else if (!std::strcmp(argv[i], "--no-dedup"))
        {
            share = false;
        }
        else
        {
            std::fprintf(stderr, "usage: %s [--ranks N] [--layers L] [--iters I] [--jitter]\n",
                         argv[0]);
            return 1;
        }
    }
    if (ranks == 0 || ranks % 8 != 0)
    {
        std::fprintf(stderr, "--ranks must be a positive multiple of 8\n");
        return 1;
    }
    char tmpl[] = "/tmp/gpusim-bench-dedup-XXXXXX";
    const std::string dir = std::string(mkdtemp(tmpl)) + "/trace";

    // Generate and write in a child, so this process's peak RSS is reading + simulating only.
    auto t = std::chrono::steady_clock::now();
    const pid_t child = fork();
    if (child == 0)
    {
        WriteJobTrace(Generate(ranks, layers, iters, jitter), dir);
        _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
    {
        std::fprintf(stderr, "generating the trace failed\n");
        return 2;
    }
    const double writeS = Since(t);
    uint64_t bytesAll = 0;
    for (uint32_t r = 0; r < ranks; ++r)
    {
        bytesAll += FileBytes(dir + "/rank-" + std::to_string(r) + ".jsonl");
    }

    // With dedup, identical ranks share one op list from the moment they are read (what
    // `gpusim simulate` does); without, every rank keeps its own.
    const double rss0 = RssMiB();
    t = std::chrono::steady_clock::now();
    uint32_t sharing = 0;
    auto job = std::make_shared<JobTrace>(share ? ReadJobTraceSharing(dir, &sharing)
                                                : ReadJobTrace(dir));
    const double readS = Since(t);
    const double rssJob = RssMiB() - rss0;

    t = std::chrono::steady_clock::now();
    DedupReport d = GroupIdenticalRanks(*job);
    const double hashS = Since(t);

    // What storage dedup would read: one file per group of identical ranks.
    t = std::chrono::steady_clock::now();
    uint64_t bytesDistinct = 0;
    for (const auto& g : d.groups)
    {
        const std::string f = dir + "/rank-" + std::to_string(g.front()) + ".jsonl";
        bytesDistinct += FileBytes(f);
        ReadRankTrace(f, g.front());
    }
    const double readDistinctS = Since(t);

    ClusterSpec spec;
    LookupClusterPreset("dgx-h100", spec);
    spec.servers = ranks / 8;
    t = std::chrono::steady_clock::now();
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetCostModel("ns3::RooflineCostModel");
    Ptr<GpuWorkload> w = h.Install(job, gpus);
    const double installS = Since(t);
    t = std::chrono::steady_clock::now();
    Simulator::Run();
    const double runS = Since(t);
    RunReport rep = w->Check();

    std::printf("job: %u ranks, %u layers, %u iterations%s, %llu ops (%.1f MiB of JSON lines)\n",
                ranks, layers, iters, jitter ? ", jittered host times" : "",
                static_cast<unsigned long long>(d.opsTotal), bytesAll / 1048576.0);
    std::printf("dedup: %s\n", d.Summary().c_str());
    std::printf("generate + write      %8.3f s\n", writeS);
    std::printf("read all ranks        %8.3f s   ops in memory ~%.1f MiB (RSS delta), %u ranks "
                "share another's op list\n",
                readS, rssJob, sharing);
    std::printf("group (hash) ranks    %8.3f s\n", hashS);
    std::printf("read distinct only    %8.3f s   %.1f MiB of JSON lines (%.1fx less)\n",
                readDistinctS, bytesDistinct / 1048576.0,
                bytesDistinct ? double(bytesAll) / bytesDistinct : 0.0);
    std::printf("simulate: install     %8.3f s\n", installS);
    std::printf("simulate: run         %8.3f s   simulated %.1f us, %s\n", runS,
                rep.endTime.GetNanoSeconds() / 1e3, rep.completed ? "completed" : "STUCK");
    std::printf("peak RSS (read + simulate) %5.1f MiB\n", PeakRssMiB());
    w->Dispose();
    Simulator::Destroy();
    std::error_code ec;
    std::filesystem::remove_all(dir.substr(0, dir.rfind('/')), ec);
    return rep.completed ? 0 : 3;
}
