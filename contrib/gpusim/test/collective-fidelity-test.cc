// Collective-level fidelity (NcclWorld Fidelity=collective) against the detailed chunk-level
// model: the same jobs run both ways must give every collective's per-rank completion within
// 1 %, replay what can be replayed, never replay skewed or contended instances, report the
// replays that met later traffic, and be deterministic.
#include "edge-flow-test-util.h"

#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace ns3;
using gpusim::CollKind;
using gpusim_test::BuildLateContention;

namespace
{

struct FidelityRun
{
    std::vector<CollectiveRecord> collectives;
    NcclWorld::FidelityStats stats;
    Time end;
    bool completed = false;
    std::string stuck;
};

FidelityRun
RunWith(const std::string& fidelity, uint32_t servers, const std::string& algo,
        const std::function<void(JobBuilder&)>& build)
{
    auto [gpus, net] = gpusim_test::MakeDgxH100FlowCluster(servers);
    JobBuilder job(gpus.GetN());
    build(job);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue(algo));
    h.SetNcclAttribute("Fidelity", StringValue(fidelity));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    Simulator::Run();
    FidelityRun r;
    RunReport rep = w->Check();
    r.completed = rep.completed;
    r.stuck = rep.stuck;
    r.end = rep.endTime;
    r.collectives = w->GetCollectives();
    r.stats = w->GetNcclWorld()->GetFidelityStats();
    w->Dispose();
    Simulator::Destroy();
    return r;
}

/// Runs the job at both fidelities; every collective's per-rank completion (measured from its
/// first join) must agree within 1 % of the detailed duration. Returns the fast run.
FidelityRun
CompareBoth(uint32_t servers, const std::string& algo,
            const std::function<void(JobBuilder&)>& build)
{
    FidelityRun chunk = RunWith("chunk", servers, algo, build);
    FidelityRun fast = RunWith("collective", servers, algo, build);
    EXPECT_TRUE(chunk.completed) << chunk.stuck;
    EXPECT_TRUE(fast.completed) << fast.stuck;
    EXPECT_EQ(chunk.stats.replayed, 0u);
    EXPECT_EQ(chunk.collectives.size(), fast.collectives.size());
    for (size_t i = 0; i < std::min(chunk.collectives.size(), fast.collectives.size()); ++i)
    {
        const CollectiveRecord& a = chunk.collectives[i];
        const CollectiveRecord& b = fast.collectives[i];
        EXPECT_EQ(a.comm, b.comm);
        EXPECT_EQ(a.seq, b.seq);
        EXPECT_EQ(a.transfers, b.transfers) << a.comm << " seq " << a.seq;
        const double dur = (a.End() - a.FirstJoin()).GetSeconds();
        EXPECT_GT(dur, 0);
        for (uint32_t r = 0; r < a.nranks; ++r)
        {
            const double ea = (a.rankDone[r] - a.FirstJoin()).GetSeconds();
            const double eb = (b.rankDone[r] - b.FirstJoin()).GetSeconds();
            EXPECT_NEAR(eb, ea, 0.01 * dur) << a.comm << " seq " << a.seq << " rank " << r;
        }
    }
    const double endA = chunk.end.GetSeconds();
    EXPECT_NEAR(fast.end.GetSeconds(), endA, 0.01 * endA);
    return fast;
}

/// `iters` x (kernel, collective) on every rank, one communicator over all GPUs. Each rank
/// starts its next kernel when its part of the collective is done, so ranks that finish at
/// different times (trees, chains) drift apart.
std::function<void(JobBuilder&)>
Repeated(CollKind kind, uint64_t bytes, uint32_t iters)
{
    return [=](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < iters; ++i)
        {
            job.AllRanks().Kernel(1, "compute", 40.0).Collective(1, kind, "w", bytes,
                                                                 gpusim::DataType::F32, 0);
        }
        job.AllRanks().SyncStream(1);
    };
}

/// `iters` collectives issued by the host every 3 ms (longer than any of them here), so every
/// rank joins each one at the same instant whatever the algorithm.
std::function<void(JobBuilder&)>
Paced(CollKind kind, uint64_t bytes, uint32_t iters)
{
    return [=](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < iters; ++i)
        {
            job.AllRanks().Host(3000.0).Collective(1, kind, "w", bytes, gpusim::DataType::F32,
                                                   0);
        }
        job.AllRanks().SyncStream(1);
    };
}

struct MatrixCase
{
    CollKind kind;
    const char* algo;
    uint32_t servers;
    uint64_t bytes;
};

} // namespace

// Idle paths: the matrix of algorithms, ops, sizes and server counts. Of 5 lockstep instances
// the first learns its links, the second is watched, the last three are replayed.
TEST(CollectiveFidelity, MatchesChunkLevelOnIdlePaths)
{
    const std::vector<MatrixCase> cases = {
        {CollKind::AllReduce, "ring", 1, 4 << 20},      {CollKind::AllReduce, "ring", 2, 64 << 20},
        {CollKind::AllReduce, "ring", 4, 1 << 20},      {CollKind::AllGather, "ring", 2, 16 << 20},
        {CollKind::ReduceScatter, "ring", 4, 16 << 20}, {CollKind::AllToAll, "auto", 2, 8 << 20},
        {CollKind::AllToAll, "auto", 1, 1 << 20},       {CollKind::AllReduce, "tree", 2, 32 << 20},
        {CollKind::AllReduce, "tree", 4, 4 << 20},      {CollKind::AllReduce, "nvls", 1, 64 << 20},
        {CollKind::AllReduce, "nvlstree", 2, 32 << 20}, {CollKind::Broadcast, "ring", 2, 8 << 20},
    };
    for (const MatrixCase& c : cases)
    {
        SCOPED_TRACE(std::string(gpusim::ToString(c.kind)) + " " + c.algo + " " + std::to_string(c.servers) +
                     " servers " + std::to_string(c.bytes) + " B");
        FidelityRun fast = CompareBoth(c.servers, c.algo, Paced(c.kind, c.bytes, 5));
        EXPECT_EQ(fast.stats.replayed, 3u);
        EXPECT_EQ(fast.stats.watched, 1u);
        EXPECT_EQ(fast.stats.conflicts, 0u);
    }
}

// Back to back (kernel, collective) with no pacing: ring ranks finish within the allowed skew
// of each other, so the chain of collectives replays; trees and chains finish rank by rank
// and drift apart further, so they run in detail. Either way within 1 %.
TEST(CollectiveFidelity, BackToBackCollectives)
{
    FidelityRun ring = CompareBoth(2, "ring", Repeated(CollKind::AllReduce, 64 << 20, 5));
    EXPECT_EQ(ring.stats.replayed, 3u);
    FidelityRun ag = CompareBoth(4, "ring", Repeated(CollKind::AllGather, 8 << 20, 5));
    EXPECT_EQ(ag.stats.replayed, 3u);
    CompareBoth(4, "tree", Repeated(CollKind::AllReduce, 4 << 20, 5));
    CompareBoth(2, "ring", Repeated(CollKind::Broadcast, 8 << 20, 5));
    CompareBoth(2, "auto", Repeated(CollKind::AllToAll, 8 << 20, 5));
}

// Skewed joins: ranks reach the collective at different times, which only the detailed model
// captures, so nothing is replayed.
TEST(CollectiveFidelity, SkewedJoinsRunInDetail)
{
    auto build = [](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < 4; ++i)
        {
            for (uint32_t r = 0; r < 16; ++r)
            {
                job.Rank(r).Kernel(1, "compute", 20.0 + 3.0 * r);
            }
            job.AllRanks().AllReduce(1, "w", 8 << 20);
        }
        job.AllRanks().SyncStream(1);
    };
    FidelityRun fast = CompareBoth(2, "ring", build);
    EXPECT_EQ(fast.stats.replayed, 0u);
    EXPECT_EQ(fast.stats.watched, 0u);
}

// Contended paths: a second communicator over the same GPUs runs on a second stream at the
// same time as the first, every iteration, on the same links; neither is ever alone, so no
// instance is replayed and the results are the detailed ones.
TEST(CollectiveFidelity, ContendedPathsRunInDetail)
{
    auto build = [](JobBuilder& job) {
        job.AllRanks().CommInit("w").CommInit("x");
        for (uint32_t i = 0; i < 5; ++i)
        {
            job.AllRanks().Host(3000.0).AllReduce(1, "w", 16 << 20).AllReduce(2, "x", 16 << 20);
        }
        job.AllRanks().SyncStream(1).SyncStream(2);
    };
    FidelityRun fast = CompareBoth(2, "ring", build);
    EXPECT_EQ(fast.stats.replayed, 0u);
    EXPECT_EQ(fast.stats.conflicts, 0u);
    EXPECT_GE(fast.stats.unwatched + fast.stats.detailed, 8u);
}

// Partly shared links (a 2-rank communicator on GPU 0 of each server next to one over all
// GPUs, not in step): replays happen only while the links are really idle (no conflict),
// and the results stay within 1 %.
TEST(CollectiveFidelity, PartlySharedLinks)
{
    auto build = [](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        job.Rank(0).CommInit("x", 2, 0);
        job.Rank(8).CommInit("x", 2, 1);
        for (uint32_t i = 0; i < 5; ++i)
        {
            job.AllRanks().Kernel(1, "compute", 40.0);
            for (uint32_t r : {0u, 8u})
            {
                job.Rank(r).RecordEvent(100 + i, 1).WaitEvent(2, 100 + i).AllReduce(2, "x",
                                                                                  32 << 20);
            }
            job.AllRanks().AllReduce(1, "w", 16 << 20);
        }
        job.AllRanks().SyncStream(1);
        job.Rank(0).SyncStream(2);
        job.Rank(8).SyncStream(2);
    };
    FidelityRun fast = CompareBoth(2, "ring", build);
    EXPECT_EQ(fast.stats.conflicts, 0u);
}

// Disjoint communicators (one per server, NVLink only) do not interact: each is replayed
// while the others run, and the results stay within 1 %.
TEST(CollectiveFidelity, DisjointCommunicatorsReplayTogether)
{
    auto build = [](JobBuilder& job) {
        for (uint32_t r = 0; r < 32; ++r)
        {
            job.Rank(r).CommInit("tp" + std::to_string(r / 8), 8, r % 8);
        }
        for (uint32_t i = 0; i < 6; ++i)
        {
            for (uint32_t r = 0; r < 32; ++r)
            {
                job.Rank(r).Kernel(1, "compute", 30.0).AllReduce(1, "tp" + std::to_string(r / 8),
                                                                  24 << 20);
            }
        }
        job.AllRanks().SyncStream(1);
    };
    FidelityRun fast = CompareBoth(4, "ring", build);
    EXPECT_EQ(fast.stats.replayed, 4u * 4u);
    EXPECT_EQ(fast.stats.conflicts, 0u);
}

// Traffic that starts after a replay began on the replay's links is contention the replay
// could not see: it is counted as a conflict and that op is never replayed again.
TEST(CollectiveFidelity, LateContentionIsReportedAndStopsReplays)
{
    // The late AllReduce starts ~100 us into iteration 4's replayed AllReduce, on GPU 0's NIC.
    auto build = [](JobBuilder& job) { BuildLateContention(job, 6, 3); };
    FidelityRun fast = RunWith("collective", 2, "ring", build);
    ASSERT_TRUE(fast.completed) << fast.stuck;
    EXPECT_EQ(fast.stats.conflicts, 1u);
    // Iterations 3 and 4 replayed; 5 and 6 run in detail after the conflict.
    EXPECT_EQ(fast.stats.replayed, 2u);
}

// Same inputs, identical outputs: two runs at collective fidelity agree to the nanosecond.
TEST(CollectiveFidelity, Deterministic)
{
    auto a = RunWith("collective", 2, "ring", Repeated(CollKind::AllReduce, 16 << 20, 6));
    auto b = RunWith("collective", 2, "ring", Repeated(CollKind::AllReduce, 16 << 20, 6));
    ASSERT_EQ(a.collectives.size(), b.collectives.size());
    for (size_t i = 0; i < a.collectives.size(); ++i)
    {
        EXPECT_EQ(a.collectives[i].rankJoin, b.collectives[i].rankJoin);
        EXPECT_EQ(a.collectives[i].rankDone, b.collectives[i].rankDone);
    }
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.stats.replayed, 4u);
}

TEST(CollectiveFidelity, UnknownFidelityIsAnError)
{
    bool threw = false;
    try
    {
        RunWith("fast", 1, "ring", Repeated(CollKind::AllReduce, 1 << 20, 1));
    }
    catch (const std::invalid_argument& e)
    {
        threw = std::string(e.what()).find("'fast'") != std::string::npos;
        Simulator::Destroy();
    }
    EXPECT_TRUE(threw);
}
