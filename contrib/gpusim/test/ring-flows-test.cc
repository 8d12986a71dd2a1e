// Ring collectives as edge flows (NcclWorld Fidelity=collective, RingFlows=true) against the
// detailed chunk-level model: every rank's completion of every ring AllReduce, AllGather and
// ReduceScatter within 1 % of the chunk-level duration, on 1 to 16 dgx-h100 servers and 1 MiB
// to 1 GiB; contended or skewed instances fall back to chunk level; deterministic.
#include "edge-flow-test-util.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/uinteger.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace ns3;
using gpusim::CollKind;

namespace
{

using RingRun = gpusim_test::EdgeFlowRun;
using gpusim_test::BuildLateContention;
using gpusim_test::Paced;
using gpusim_test::WorstError;

RingRun
RunRing(bool ringFlows, uint32_t servers, const std::function<void(JobBuilder&)>& build)
{
    return gpusim_test::RunEdgeFlowCase("ring", ringFlows, servers, build);
}

struct RingCase
{
    CollKind kind;
    uint32_t servers;
    uint64_t bytes;
};

void
CheckCases(const std::vector<RingCase>& cases)
{
    for (const RingCase& c : cases)
    {
        const std::string name = std::string(gpusim::ToString(c.kind)) + " " +
                                 std::to_string(c.servers) + " servers " +
                                 std::to_string(c.bytes) + " B";
        SCOPED_TRACE(name);
        auto build = Paced(c.kind, c.bytes, 1, 10.0);
        RingRun chunk = RunRing(false, c.servers, build);
        RingRun flows = RunRing(true, c.servers, build);
        const double worst = WorstError(chunk, flows);
        std::printf("ring flows %-40s worst rank error %.4f %%\n", name.c_str(), worst * 100);
        EXPECT_LT(worst, 0.01);
        EXPECT_EQ(flows.stats.fluid, 1u);
        EXPECT_EQ(flows.stats.detailed, 0u);
        EXPECT_EQ(flows.stats.conflicts, 0u);
        // One flow per ring edge and channel instead of one per item.
        const CollectiveRecord& rec = flows.collectives.front();
        EXPECT_EQ(flows.flowsStarted, uint64_t(rec.plan.channels) * rec.nranks);
    }
}

} // namespace

TEST(RingFlows, MatchesChunkLevelSmall)
{
    // The tuner takes LL at 1 MiB on 2 and 4 servers. LL rings across servers keep NCCL's 8
    // chunks in flight by default (LlRingNetSlots), which the edge flows do not represent
    // (NetSlotsRunChunkByChunk); one slot gives them their edge-flow form, tested here.
    Config::SetDefault("ns3::NcclWorld::LlRingNetSlots", UintegerValue(1));
    CheckCases({
        {CollKind::AllReduce, 1, 1 << 20},
        {CollKind::AllReduce, 1, 256 << 20},
        {CollKind::AllReduce, 2, 1 << 20},
        {CollKind::AllReduce, 2, 64 << 20},
        {CollKind::AllGather, 2, 16 << 20},
        {CollKind::ReduceScatter, 4, 16 << 20},
        {CollKind::AllReduce, 4, 1 << 20},
        {CollKind::AllGather, 1, 1 << 20},
    });
    Config::SetDefault("ns3::NcclWorld::LlRingNetSlots", UintegerValue(8));
}

TEST(RingFlows, MatchesChunkLevelLarge)
{
    CheckCases({
        {CollKind::AllReduce, 1, 1u << 30},
        {CollKind::AllReduce, 8, 1u << 30},
        {CollKind::AllGather, 16, 256u << 20},
        {CollKind::ReduceScatter, 16, 1u << 30},
        {CollKind::AllReduce, 16, 1u << 30},
    });
}

/// Runs `build` both ways and returns the edge-flow run; every rank of every collective within
/// 1 % of the chunk-level duration.
RingRun
CompareRing(uint32_t servers, const std::function<void(JobBuilder&)>& build)
{
    RingRun chunk = RunRing(false, servers, build);
    RingRun flows = RunRing(true, servers, build);
    const double worst = WorstError(chunk, flows);
    EXPECT_LT(worst, 0.01);
    EXPECT_NEAR(flows.end.GetSeconds(), chunk.end.GetSeconds(), 0.01 * chunk.end.GetSeconds());
    std::printf("ring flows: worst rank error %.4f %%, end %.3f vs %.3f us\n", worst * 100,
                flows.end.GetSeconds() * 1e6, chunk.end.GetSeconds() * 1e6);
    return flows;
}

// Back to back (kernel, collective) with no pacing: each instance starts when the last rank
// is out of the previous one, within the allowed skew, and runs as edge flows.
TEST(RingFlows, BackToBack)
{
    RingRun flows = CompareRing(2, [](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < 5; ++i)
        {
            job.AllRanks().Kernel(1, "compute", 40.0).AllReduce(1, "w", 64 << 20);
        }
        job.AllRanks().SyncStream(1);
    });
    EXPECT_EQ(flows.stats.fluid, 5u);
    EXPECT_EQ(flows.stats.conflicts, 0u);
}

// Skewed joins (ranks 3 us apart, far beyond the 0.1 % allowance): chunk level throughout.
TEST(RingFlows, SkewedJoinsRunInDetail)
{
    RingRun flows = CompareRing(2, [](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < 3; ++i)
        {
            for (uint32_t r = 0; r < 16; ++r)
            {
                job.Rank(r).Kernel(1, "compute", 20.0 + 3.0 * r);
            }
            job.AllRanks().AllReduce(1, "w", 8 << 20);
        }
        job.AllRanks().SyncStream(1);
    });
    EXPECT_EQ(flows.stats.fluid, 0u);
    EXPECT_EQ(flows.stats.detailed, 3u);
}

// Disjoint per-server communicators at once: each alone on its NVLink links, all edge flows.
TEST(RingFlows, DisjointCommunicatorsTogether)
{
    RingRun flows = CompareRing(4, [](JobBuilder& job) {
        for (uint32_t r = 0; r < 32; ++r)
        {
            job.Rank(r).CommInit("tp" + std::to_string(r / 8), 8, r % 8);
        }
        for (uint32_t i = 0; i < 3; ++i)
        {
            for (uint32_t r = 0; r < 32; ++r)
            {
                job.Rank(r).Kernel(1, "compute", 30.0).AllReduce(1, "tp" + std::to_string(r / 8),
                                                                  24 << 20);
            }
        }
        job.AllRanks().SyncStream(1);
    });
    EXPECT_EQ(flows.stats.fluid, 3u * 4u);
}

// Same inputs, identical outputs, to the nanosecond.
TEST(RingFlows, Deterministic)
{
    auto build = Paced(CollKind::AllReduce, 256 << 20, 3, 20000.0);
    RingRun a = RunRing(true, 4, build);
    RingRun b = RunRing(true, 4, build);
    ASSERT_EQ(a.collectives.size(), b.collectives.size());
    for (size_t i = 0; i < a.collectives.size(); ++i)
    {
        EXPECT_EQ(a.collectives[i].rankDone, b.collectives[i].rankDone);
    }
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.stats.fluid, 3u);
}

// Two communicators over the same GPUs at once: the first runs as edge flows, the second
// finds its links busy and runs chunk by chunk beside them.
TEST(RingFlows, ContendedPaths)
{
    RingRun flows = CompareRing(2, [](JobBuilder& job) {
        job.AllRanks().CommInit("w").CommInit("x");
        for (uint32_t i = 0; i < 3; ++i)
        {
            job.AllRanks().Host(3000.0).AllReduce(1, "w", 16 << 20).AllReduce(2, "x", 16 << 20);
        }
        job.AllRanks().SyncStream(1).SyncStream(2);
    });
    // At each decision the other communicator's launch is open on the same GPUs.
    EXPECT_EQ(flows.stats.fluid, 0u);
    EXPECT_EQ(flows.stats.detailed, 6u);
}

// Traffic that starts on a ring's links while it runs as edge flows (a 2-rank AllReduce over
// GPU 0 and 8 launched 100 us into the third instance): counted as a conflict, and that op runs
// chunk by chunk from then on.
TEST(RingFlows, LateContentionStopsEdgeFlows)
{
    auto build = [](JobBuilder& job) { BuildLateContention(job, 5, 2); };
    RingRun flows = RunRing(true, 2, build);
    ASSERT_TRUE(flows.completed) << flows.stuck;
    EXPECT_EQ(flows.stats.conflicts, 1u);
    // w: instances 1-3 as edge flows, 4-5 chunk by chunk; x: chunk by chunk (links busy).
    EXPECT_EQ(flows.stats.fluid, 3u);
    EXPECT_EQ(flows.stats.detailed, 3u);
}

// Ring connections between servers with NCCL's 8 chunks in flight (RingNetSlots 8) take the
// heaviest path along the NVLink edges, whose chunk-level rates the edge flows do not give
// (up to 20 % apart at 1-32 MiB): those rings run chunk by chunk, with the chunk-level times.
// Inside one server there is no such connection: edge flows as before.
TEST(RingFlows, NetSlotsRunChunkByChunk)
{
    Config::SetDefault("ns3::NcclWorld::RingNetSlots", UintegerValue(8));
    auto build = Paced(CollKind::AllReduce, 32 << 20, 1, 10.0);
    const RingRun chunk = RunRing(false, 2, build);
    const RingRun flows = RunRing(true, 2, build);
    EXPECT_EQ(flows.stats.fluid, 0u);
    EXPECT_EQ(WorstError(chunk, flows), 0.0);
    const RingRun one = RunRing(true, 1, build);
    EXPECT_EQ(one.stats.fluid, 1u);
    Config::SetDefault("ns3::NcclWorld::RingNetSlots", UintegerValue(1));
}
