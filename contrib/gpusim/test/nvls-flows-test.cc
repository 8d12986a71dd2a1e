// NVLS and NVLSTree AllReduce by one rail (NcclWorld Fidelity=collective with RingFlows, or
// auto; model/nccl-nvls-flows.cc) against the detailed chunk-level NvlsExecutor: where every
// rail's links are its own and alike (dgx-h100 with its adaptive routing), the first GPU of
// each server and its rail run chunk by chunk and stand for the other seven, and every rank
// completes when the chunk level has it complete (1 to 16 servers, 1 MiB to 1 GiB), with an
// eighth of the flows. Where the rails share links (two GPUs per NIC) it does not apply: auto
// runs the chunk level, and the approximate trial loops run only where asked for.
#include "edge-flow-test-util.h"

#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace ns3;
using gpusim::CollKind;

namespace
{

using NvlsRun = gpusim_test::EdgeFlowRun;
using gpusim_test::Paced;
using gpusim_test::WorstError;

/// Symmetry makes the one-rail run the chunk level's; what is left is the order of floating
/// point sums in the max-min rates (a nanosecond here and there): 0.001 % of the duration,
/// a hundredth of auto's documented 0.1 %.
constexpr double kOneRailBound = 1e-5;

/// `fidelity`: "chunk", "collective" (with RingFlows) or "auto".
NvlsRun
RunNvls(const std::string& fidelity, uint32_t servers,
        const std::function<void(JobBuilder&)>& build, uint32_t trialLoops = 0,
        uint32_t nics = 8)
{
    gpusim::ClusterSpec spec;
    gpusim::LookupClusterPreset("dgx-h100", spec);
    spec.servers = servers;
    spec.nicsPerServer = nics;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    JobBuilder job(gpus.GetN());
    build(job);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue(servers == 1 ? "nvls" : "nvlstree"));
    h.SetNcclAttribute("Fidelity", StringValue(fidelity));
    h.SetNcclAttribute("RingFlows", BooleanValue(fidelity == "collective"));
    h.SetNcclAttribute("NvlsTrialLoops", UintegerValue(trialLoops));
    return gpusim_test::FinishEdgeFlowRun(h.Install(job.BuildShared(), gpus), net);
}

struct NvlsCase
{
    uint32_t servers;
    uint64_t bytes;
};

} // namespace

// One rail stands for all: every rank as the chunk level has it, the chunk level's transfer
// count, an eighth of its flows.
TEST(NvlsFlows, OneRailIsTheChunkLevel)
{
    const std::vector<NvlsCase> cases = {{1, 1 << 20},      {1, 64 << 20},  {1, 1u << 30},
                                         {2, 1 << 20},      {2, 16 << 20},  {2, 1u << 30},
                                         {4, 64 << 20},     {4, 256u << 20}, {8, 1u << 30},
                                         {16, 64u << 20},   {16, 1u << 30}};
    for (const NvlsCase& c : cases)
    {
        const std::string name =
            std::to_string(c.servers) + " servers " + std::to_string(c.bytes) + " B";
        SCOPED_TRACE(name);
        auto build = Paced(CollKind::AllReduce, c.bytes, 1, 10.0);
        const NvlsRun chunk = RunNvls("chunk", c.servers, build);
        for (const char* fidelity : {"collective", "auto"})
        {
            SCOPED_TRACE(fidelity);
            const NvlsRun rail = RunNvls(fidelity, c.servers, build);
            const double worst = WorstError(chunk, rail);
            const CollectiveRecord& rec = rail.collectives.front();
            std::printf("nvls one rail %-26s %-10s %-8s loops %4u: worst rank error %.6f %% "
                        "(span %.3f us, chunk level %.3f us)\n",
                        name.c_str(), fidelity, rec.plan.algo.c_str(), rec.plan.loops,
                        worst * 100, (rec.End() - rec.FirstJoin()).GetSeconds() * 1e6,
                        (chunk.collectives.front().End() - chunk.collectives.front().FirstJoin())
                                .GetSeconds() *
                            1e6);
            EXPECT_LT(worst, kOneRailBound);
            EXPECT_EQ(rec.path, CollectivePath::OneRail);
            EXPECT_EQ(rail.stats.oneRail, 1u);
            EXPECT_EQ(rail.stats.fluid, 0u);
            EXPECT_EQ(rail.stats.ChunkTotal(), 0u);
            EXPECT_EQ(rail.stats.conflicts, 0u);
            EXPECT_EQ(rail.flowsStarted * 8, chunk.flowsStarted);
        }
    }
}

// Two GPUs per NIC: rails 2k and 2k+1 share a NIC, so one rail cannot stand for the others.
// auto runs the chunk level (to the nanosecond); Fidelity=collective with NvlsTrialLoops runs
// the approximate trial loops, and without them the chunk level too.
TEST(NvlsFlows, SharedRailsRunInDetail)
{
    auto build = Paced(CollKind::AllReduce, 64 << 20, 1, 10.0);
    const NvlsRun chunk = RunNvls("chunk", 2, build, 0, 4);
    const NvlsRun fast = RunNvls("auto", 2, build, 64, 4);
    EXPECT_EQ(WorstError(chunk, fast), 0.0);
    EXPECT_EQ(fast.stats.oneRail, 0u);
    EXPECT_EQ(fast.collectives.front().path, CollectivePath::Chunk);
    EXPECT_EQ(fast.flowsStarted, chunk.flowsStarted);
    const NvlsRun trial = RunNvls("collective", 2, build, 64, 4);
    EXPECT_EQ(trial.collectives.front().path, CollectivePath::TrialLoops);
    EXPECT_EQ(trial.stats.fluid, 1u);
    EXPECT_LT(WorstError(chunk, trial), 1e-9); // 4 loops: the trial is the whole run
    const NvlsRun off = RunNvls("collective", 2, build, 0, 4);
    EXPECT_EQ(off.stats.fluid + off.stats.oneRail, 0u);
    EXPECT_EQ(WorstError(chunk, off), 0.0);
}

// Back to back on one server: every instance's ranks finish together, so the first runs by one
// rail and the next two replay it.
TEST(NvlsFlows, BackToBack)
{
    auto build = [](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < 3; ++i)
        {
            job.AllRanks().Kernel(1, "compute", 40.0).AllReduce(1, "w", 64 << 20);
        }
        job.AllRanks().SyncStream(1);
    };
    const NvlsRun chunk = RunNvls("chunk", 1, build);
    const NvlsRun rail = RunNvls("auto", 1, build);
    EXPECT_LT(WorstError(chunk, rail), kOneRailBound);
    EXPECT_EQ(rail.stats.oneRail, 1u);
    EXPECT_EQ(rail.stats.replayed, 2u);
    EXPECT_EQ(rail.stats.conflicts, 0u);
    EXPECT_NEAR(rail.end.GetSeconds(), chunk.end.GetSeconds(), 1e-9);
}

// Two communicators over the same GPUs at once: the second finds the first open on its GPUs
// and its links reserved, and both run chunk by chunk.
TEST(NvlsFlows, ContendedRunsInDetail)
{
    auto build = [](JobBuilder& job) {
        job.AllRanks().CommInit("w").CommInit("x");
        job.AllRanks().Host(3000.0).AllReduce(1, "w", 16 << 20).AllReduce(2, "x", 16 << 20);
        job.AllRanks().SyncStream(1).SyncStream(2);
    };
    const NvlsRun chunk = RunNvls("chunk", 2, build);
    const NvlsRun rail = RunNvls("collective", 2, build);
    EXPECT_EQ(WorstError(chunk, rail), 0.0);
    EXPECT_EQ(rail.stats.oneRail, 0u);
    EXPECT_EQ(rail.stats.detailed, 2u);
}

// Same inputs, identical outputs, to the nanosecond.
TEST(NvlsFlows, Deterministic)
{
    auto build = Paced(CollKind::AllReduce, 1u << 30, 2, 20000.0);
    const NvlsRun a = RunNvls("auto", 4, build);
    const NvlsRun b = RunNvls("auto", 4, build);
    ASSERT_EQ(a.collectives.size(), b.collectives.size());
    for (size_t i = 0; i < a.collectives.size(); ++i)
    {
        EXPECT_EQ(a.collectives[i].rankDone, b.collectives[i].rankDone);
    }
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.stats.oneRail, 1u);
    EXPECT_EQ(a.stats.replayed, 1u);
}
