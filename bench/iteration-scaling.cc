// Timed benchmark: a synthetic Megatron-shaped training iteration (TP x PP x DP) through the
// whole engine on rail-optimised dgx-h100 clusters, at Fidelity=chunk and Fidelity=collective
// (doc/flow-backend.md). Prints wall time (setup = building the job and the cluster; run =
// Simulator::Run), CPU time of both, peak RSS (of the process so far: run one fidelity per
// process to read it per case), the simulated iteration time, and what
// the collective-level fidelity replayed.
//
// Rank r = (dp * PP + pp) * TP + tp, so a TP group is one server. Each rank runs a GPipe-style
// schedule (all forwards, then all backwards) of M micro-batches over L layers per stage: per
// layer and micro-batch 2 kernels and 2 TP AllReduces of the activations forward, the same
// backward (kernels twice as long); activations go to the next stage with NCCL send/recv on a
// PP communicator; then a DP ReduceScatter and AllGather of the stage's bf16 gradients.
// Sizes follow GPT-3 175B (hidden 12288, sequence 2048, micro-batch 1, 96 layers).
//
//   gpusim-bench-iteration-scaling [--gpus=N] [--microbatches=M]
//       [--fidelity=chunk|collective|flows|auto|both]
//   (flows = collective with NcclWorld RingFlows: ring collectives as one flow per edge;
//    both = chunk and collective)
//                                  [--allreduce-bytes=S]   (S > 0: one S-byte AllReduce instead)
#include "ns3/byte-size.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/boolean.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace ns3;

namespace
{

/// "1073741824", "64M", "1G" (ParseByteSize); exits with its message on anything else (a bare
/// strtoull read "1G" as 1 byte).
uint64_t
ParseByteCount(const char* v)
{
    try
    {
        return gpusim::ParseByteSize(v);
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "--allreduce-bytes: %s\n", e.what());
        std::exit(2);
    }
}

constexpr uint32_t kTp = 8;
constexpr uint32_t kPp = 16;
constexpr uint32_t kLayersPerStage = 96 / kPp;
constexpr uint64_t kActBytes = 2048ull * 12288 * 2; // seq x hidden x bf16, micro-batch 1
// Parameters per GPU: 12 h^2 per layer x layers per stage / TP, bf16 gradients.
constexpr uint64_t kGradBytes = 12ull * 12288 * 12288 * kLayersPerStage / kTp * 2;
constexpr double kFwdKernelUs = 750; // half a layer's forward per GPU (see doc/flow-backend.md)

std::string
Name(const char* what, uint32_t a, uint32_t b)
{
    return std::string(what) + "-" + std::to_string(a) + "-" + std::to_string(b);
}

void
AddLayerPass(JobBuilder& job, const std::string& tp, double kernelUs)
{
    for (uint32_t l = 0; l < kLayersPerStage; ++l)
    {
        job.Kernel(1, "attention", kernelUs).AllReduce(1, tp, kActBytes);
        job.Kernel(1, "mlp", kernelUs).AllReduce(1, tp, kActBytes);
    }
}

/// The iteration of one rank.
void
AddRank(JobBuilder& job, uint32_t r, uint32_t dpSize, uint32_t micro)
{
    const uint32_t tp = r % kTp;
    const uint32_t pp = (r / kTp) % kPp;
    const uint32_t dp = r / (kTp * kPp);
    const std::string tpComm = Name("tp", dp, pp);
    const std::string ppComm = Name("pp", dp, tp);
    const std::string dpComm = Name("dp", pp, tp);
    job.Rank(r).CommInit(tpComm, kTp, tp).CommInit(ppComm, kPp, pp).CommInit(dpComm, dpSize, dp);
    for (uint32_t m = 0; m < micro; ++m)
    {
        if (pp > 0)
        {
            job.Recv(1, ppComm, pp - 1, kActBytes);
        }
        AddLayerPass(job, tpComm, kFwdKernelUs);
        if (pp + 1 < kPp)
        {
            job.Send(1, ppComm, pp + 1, kActBytes);
        }
    }
    for (uint32_t m = 0; m < micro; ++m)
    {
        if (pp + 1 < kPp)
        {
            job.Recv(1, ppComm, pp + 1, kActBytes);
        }
        AddLayerPass(job, tpComm, 2 * kFwdKernelUs);
        if (pp > 0)
        {
            job.Send(1, ppComm, pp - 1, kActBytes);
        }
    }
    job.Collective(1, gpusim::CollKind::ReduceScatter, dpComm, kGradBytes, gpusim::DataType::BF16);
    job.Kernel(1, "optimizer", 2000.0);
    job.Collective(1, gpusim::CollKind::AllGather, dpComm, kGradBytes, gpusim::DataType::BF16);
    job.SyncStream(1);
}

double
CpuSeconds()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
           u.ru_stime.tv_usec * 1e-6;
}

double
PeakRssMiB()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024.0;
}

void
RunCase(uint32_t gpusN, uint32_t micro, const std::string& fidelity, uint64_t allReduceBytes)
{
    gpusim::ClusterSpec spec;
    gpusim::LookupClusterPreset("dgx-h100", spec);
    spec.servers = gpusN / spec.gpusPerServer;
    auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = CpuSeconds();
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    JobBuilder job(gpus.GetN());
    if (allReduceBytes > 0)
    {
        job.AllRanks().CommInit("world").AllReduce(1, "world", allReduceBytes).SyncStream(1);
    }
    else
    {
        for (uint32_t r = 0; r < gpus.GetN(); ++r)
        {
            AddRank(job, r, gpus.GetN() / (kTp * kPp), micro);
        }
    }
    GpuWorkloadHelper h;
    h.SetBackend(net);
    // "flows": collective fidelity with ring collectives as edge flows (RingFlows); "auto":
    // NcclWorld Fidelity=auto (the exact shortcuts only).
    h.SetNcclAttribute("Fidelity", StringValue(fidelity == "flows" ? "collective" : fidelity));
    h.SetNcclAttribute("RingFlows", BooleanValue(fidelity == "flows"));
    h.SetWorkloadAttribute("RecordActivities", BooleanValue(false));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    auto t1 = std::chrono::steady_clock::now();
    const double cpuSetup = CpuSeconds() - cpu0;
    Simulator::Run();
    auto t2 = std::chrono::steady_clock::now();
    const double cpu = CpuSeconds() - cpu0 - cpuSetup;
    RunReport rep = w->Check();
    const NcclWorld::FidelityStats& st = w->GetNcclWorld()->GetFidelityStats();
    uint64_t transfers = 0;
    for (const CollectiveRecord& c : w->GetCollectives())
    {
        transfers += c.transfers;
    }
    std::printf("%6u GPUs  %-10s  %s  setup %6.2f s (cpu %5.2f)  run %7.2f s (cpu %6.2f)  peak RSS %7.0f MiB  "
                "simulated %10.3f ms  collectives %8zu (replayed %llu, edge flows %llu, conflicts %llu)  "
                "collective transfers %llu (started %llu)  %s\n",
                gpus.GetN(), fidelity.c_str(),
                allReduceBytes ? "1 AllReduce" : ("iteration M=" + std::to_string(micro)).c_str(),
                std::chrono::duration<double>(t1 - t0).count(), cpuSetup,
                std::chrono::duration<double>(t2 - t1).count(), cpu, PeakRssMiB(),
                rep.endTime.GetSeconds() * 1e3, w->GetCollectives().size(),
                static_cast<unsigned long long>(st.replayed),
                static_cast<unsigned long long>(st.fluid),
                static_cast<unsigned long long>(st.conflicts),
                static_cast<unsigned long long>(transfers),
                static_cast<unsigned long long>(net->GetStartedCount()),
                rep.completed ? "ok" : "STUCK");
    std::fflush(stdout);
    w->Dispose();
    Simulator::Destroy();
}

} // namespace

int
main(int argc, char** argv)
{
    uint32_t gpusN = 1024;
    uint32_t micro = 8;
    uint64_t allReduceBytes = 0;
    std::string fidelity = "both";
    for (int i = 1; i < argc; ++i)
    {
        const std::string a = argv[i];
        auto val = [&a](const char* key) -> const char* {
            const size_t n = std::strlen(key);
            return a.compare(0, n, key) == 0 ? a.c_str() + n : nullptr;
        };
        if (const char* v = val("--gpus="))
        {
            gpusN = std::strtoul(v, nullptr, 10);
        }
        else if (const char* v = val("--microbatches="))
        {
            micro = std::strtoul(v, nullptr, 10);
        }
        else if (const char* v = val("--fidelity="))
        {
            fidelity = v;
        }
        else if (const char* v = val("--allreduce-bytes="))
        {
            allReduceBytes = ParseByteCount(v);
        }
        else
        {
            std::fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (gpusN == 0 || gpusN % (kTp * kPp) != 0)
    {
        std::fprintf(stderr, "--gpus must be a multiple of %u (TP %u x PP %u)\n", kTp * kPp,
                     kTp, kPp);
        return 2;
    }
    for (const char* f : {"chunk", "collective", "flows", "auto"})
    {
        const bool extra = std::string(f) == "flows" || std::string(f) == "auto";
        if (fidelity == f || (fidelity == "both" && !extra))
        {
            RunCase(gpusN, micro, f, allReduceBytes);
        }
    }
    return 0;
}
