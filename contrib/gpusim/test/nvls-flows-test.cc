// NVLS and NVLSTree AllReduce with trial loops (NcclWorld Fidelity=collective, RingFlows=true,
// NvlsTrialLoops=64; model/nccl-nvls-flows.cc) against the detailed chunk-level NvlsExecutor:
// every rank's completion as a fraction of the chunk-level duration, on 1 to 16 dgx-h100
// servers and 1 MiB to 1 GiB: identical up to 64 loops, within 1.5 % at 128 (the measured
// 0.4-1.4 %, see the model's comment); contended or skewed instances fall back to chunk level;
// off by default; deterministic.
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

NvlsRun
RunNvls(bool edgeFlows, uint32_t servers, const std::function<void(JobBuilder&)>& build,
        uint32_t trialLoops = 64)
{
    return gpusim_test::RunEdgeFlowCase(
        servers == 1 ? "nvls" : "nvlstree", edgeFlows, servers, build,
        [trialLoops](GpuWorkloadHelper& h) {
            h.SetNcclAttribute("NvlsTrialLoops", UintegerValue(trialLoops));
        });
}

struct NvlsCase
{
    uint32_t servers;
    uint64_t bytes;
};

/// Worst per-rank error of each case; every one must be below `bound` (a fraction).
void
CheckCases(const std::vector<NvlsCase>& cases, double bound)
{
    for (const NvlsCase& c : cases)
    {
        const std::string name =
            std::to_string(c.servers) + " servers " + std::to_string(c.bytes) + " B";
        SCOPED_TRACE(name);
        auto build = Paced(CollKind::AllReduce, c.bytes, 1, 10.0);
        NvlsRun chunk = RunNvls(false, c.servers, build);
        NvlsRun flows = RunNvls(true, c.servers, build);
        const double worst = WorstError(chunk, flows);
        const CollectiveRecord& rec = flows.collectives.front();
        std::printf("nvls flows %-28s %-8s loops %4u: worst rank error %.4f %% (span %.1f us, "
                    "chunk level %.1f us)\n",
                    name.c_str(), rec.plan.algo.c_str(), rec.plan.loops, worst * 100,
                    (rec.End() - rec.FirstJoin()).GetSeconds() * 1e6,
                    (chunk.collectives.front().End() - chunk.collectives.front().FirstJoin())
                            .GetSeconds() *
                        1e6);
        EXPECT_LT(worst, bound);
        EXPECT_EQ(flows.stats.fluid, 1u);
        EXPECT_EQ(flows.stats.detailed, 0u);
        EXPECT_EQ(flows.stats.conflicts, 0u);
        // Connections: per GPU reduce up, reduced shard, multicast up and down; per tree,
        // non-root server and head one edge up and one down. Each sends one transfer per loop,
        // and at most 64 loops run.
        const uint64_t legs = 4ull * rec.nranks + (c.servers > 1 ? 2ull * 2 * (rec.nranks - 8) : 0);
        EXPECT_EQ(chunk.flowsStarted, legs * rec.plan.loops);
        EXPECT_EQ(flows.flowsStarted, legs * std::min<uint64_t>(rec.plan.loops, 64));
    }
}

} // namespace

// Up to 64 loops the trial is the whole run: the chunk level's times to the nanosecond.
TEST(NvlsFlows, ExactUpToTrialLoops)
{
    CheckCases({{2, 1 << 20},
                {2, 16 << 20},
                {4, 1 << 20},
                {4, 64 << 20},
                {1, 1 << 20},
                {1, 64 << 20},
                {2, 1u << 30},
                {4, 256u << 20},
                {16, 64u << 20},
                {1, 1u << 30}},
               1e-9);
}

// 128 loops (1 GiB on 8 and 16 servers): 64 run, 64 extrapolated at the measured period.
// Not exact (the chunk-level pipeline is not periodic, see the model). Measured with NCCL's
// in-order trees: 0.70 % on 8 servers, 2.39 % on 16 (whose chunk-level period still grows
// after the 64 trial loops; 1.35 % and 0.70 % with the heap-numbered trees before). The 8-server
// bound keeps the test able to fail on a wrong period or a lost loop (one loop is 0.8 % of the
// run); the 16-server bound only on a grossly wrong period.
TEST(NvlsFlows, ExtrapolatedLoopsWithinBound)
{
    CheckCases({{8, 1u << 30}}, 0.015);
    CheckCases({{16, 1u << 30}}, 0.03);
}

/// Runs `build` both ways and returns the trial-loop run; every rank within 1.5 %.
NvlsRun
CompareNvls(uint32_t servers, const std::function<void(JobBuilder&)>& build)
{
    NvlsRun chunk = RunNvls(false, servers, build);
    NvlsRun flows = RunNvls(true, servers, build);
    EXPECT_LT(WorstError(chunk, flows), 0.015);
    return flows;
}

// Off by default (NvlsTrialLoops 0): NVLSTree runs chunk by chunk even with RingFlows.
TEST(NvlsFlows, OffByDefault)
{
    auto build = Paced(CollKind::AllReduce, 64 << 20, 1, 10.0);
    NvlsRun chunk = RunNvls(false, 2, build);
    NvlsRun off = RunNvls(true, 2, build, 0);
    EXPECT_EQ(off.stats.fluid, 0u);
    EXPECT_EQ(off.flowsStarted, chunk.flowsStarted);
    EXPECT_EQ(WorstError(chunk, off), 0.0);
}

// Back to back instances: each starts within the skew of the last rank's join, all trial runs.
TEST(NvlsFlows, BackToBack)
{
    NvlsRun flows = CompareNvls(2, [](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < 3; ++i)
        {
            job.AllRanks().Kernel(1, "compute", 40.0).AllReduce(1, "w", 64 << 20);
        }
        job.AllRanks().SyncStream(1);
    });
    EXPECT_EQ(flows.stats.fluid, 3u);
    EXPECT_EQ(flows.stats.conflicts, 0u);
}

// Two communicators over the same GPUs at once: the second finds the first open on its GPUs
// and its links reserved, and runs chunk by chunk.
TEST(NvlsFlows, ContendedRunsInDetail)
{
    NvlsRun flows = CompareNvls(2, [](JobBuilder& job) {
        job.AllRanks().CommInit("w").CommInit("x");
        job.AllRanks().Host(3000.0).AllReduce(1, "w", 16 << 20).AllReduce(2, "x", 16 << 20);
        job.AllRanks().SyncStream(1).SyncStream(2);
    });
    EXPECT_EQ(flows.stats.fluid, 0u);
    EXPECT_EQ(flows.stats.detailed, 2u);
}

// Same inputs, identical outputs, to the nanosecond (extrapolated loops included).
TEST(NvlsFlows, Deterministic)
{
    auto build = Paced(CollKind::AllReduce, 1u << 30, 2, 20000.0);
    NvlsRun a = RunNvls(true, 4, build);
    NvlsRun b = RunNvls(true, 4, build);
    ASSERT_EQ(a.collectives.size(), b.collectives.size());
    for (size_t i = 0; i < a.collectives.size(); ++i)
    {
        EXPECT_EQ(a.collectives[i].rankDone, b.collectives[i].rankDone);
    }
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.stats.fluid, 2u);
}
