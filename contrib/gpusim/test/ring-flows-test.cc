// Ring collectives as edge flows (NcclWorld Fidelity=collective, RingFlows=true) against the
// detailed chunk-level model: every rank's completion of every ring AllReduce, AllGather and
// ReduceScatter within 1 % of the chunk-level duration, on 1 to 16 dgx-h100 servers and 1 MiB
// to 1 GiB; contended or skewed instances fall back to chunk level; deterministic.
#include "ns3/boolean.h"
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

namespace
{

struct RingRun
{
    std::vector<CollectiveRecord> collectives;
    NcclWorld::FidelityStats stats;
    uint64_t flowsStarted = 0;
    Time end;
    bool completed = false;
    std::string stuck;
};

RingRun
RunRing(bool ringFlows, uint32_t servers, const std::function<void(JobBuilder&)>& build)
{
    gpusim::ClusterSpec spec;
    gpusim::LookupClusterPreset("dgx-h100", spec);
    spec.servers = servers;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    JobBuilder job(gpus.GetN());
    build(job);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue("ring"));
    h.SetNcclAttribute("Fidelity", StringValue(ringFlows ? "collective" : "chunk"));
    h.SetNcclAttribute("RingFlows", BooleanValue(ringFlows));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    Simulator::Run();
    RingRun r;
    RunReport rep = w->Check();
    r.completed = rep.completed;
    r.stuck = rep.stuck;
    r.end = rep.endTime;
    r.collectives = w->GetCollectives();
    r.stats = w->GetNcclWorld()->GetFidelityStats();
    r.flowsStarted = net->GetStartedCount();
    w->Dispose();
    Simulator::Destroy();
    return r;
}

/// Largest |edge-flow - chunk| per-rank completion (from the first join) over all collectives,
/// as a fraction of the chunk-level duration; checks the records match one to one.
double
WorstError(const RingRun& chunk, const RingRun& flows)
{
    EXPECT_TRUE(chunk.completed) << chunk.stuck;
    EXPECT_TRUE(flows.completed) << flows.stuck;
    EXPECT_EQ(chunk.collectives.size(), flows.collectives.size());
    double worst = 0;
    for (size_t i = 0; i < std::min(chunk.collectives.size(), flows.collectives.size()); ++i)
    {
        const CollectiveRecord& a = chunk.collectives[i];
        const CollectiveRecord& b = flows.collectives[i];
        EXPECT_EQ(a.comm, b.comm);
        EXPECT_EQ(a.seq, b.seq);
        EXPECT_EQ(a.transfers, b.transfers) << a.comm << " seq " << a.seq;
        const double dur = (a.End() - a.FirstJoin()).GetSeconds();
        for (uint32_t r = 0; r < a.nranks; ++r)
        {
            const double ea = (a.rankDone[r] - a.FirstJoin()).GetSeconds();
            const double eb = (b.rankDone[r] - b.FirstJoin()).GetSeconds();
            worst = std::max(worst, std::abs(eb - ea) / dur);
        }
    }
    return worst;
}

/// `iters` collectives issued by the host every `gapUs`, so every rank joins each one at the
/// same instant.
std::function<void(JobBuilder&)>
Paced(CollKind kind, uint64_t bytes, uint32_t iters, double gapUs)
{
    return [=](JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < iters; ++i)
        {
            job.AllRanks().Host(gapUs).Collective(1, kind, "w", bytes, gpusim::DataType::F32, 0);
        }
        job.AllRanks().SyncStream(1);
    };
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
