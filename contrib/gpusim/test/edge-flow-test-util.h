// Shared by the edge-flow tests (ring-flows-test.cc, nvls-flows-test.cc): one collective
// workload run at chunk level or with edge flows on dgx-h100 servers, and the worst per-rank
// difference between two such runs.
#ifndef GPUSIM_TEST_EDGE_FLOW_TEST_UTIL_H
#define GPUSIM_TEST_EDGE_FLOW_TEST_UTIL_H

#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpusim_test
{

struct EdgeFlowRun
{
    std::vector<ns3::CollectiveRecord> collectives;
    ns3::NcclWorld::FidelityStats stats;
    uint64_t flowsStarted = 0;
    ns3::Time end;
    bool completed = false;
    std::string stuck;
};

/// Runs `build` on `servers` dgx-h100 servers with NCCL algorithm `algorithm`, at chunk level
/// (`edgeFlows` false) or collective fidelity with RingFlows; `configure` sets more attributes.
/// `servers` dgx-h100 servers on the flow backend (the GPUs, and the backend on their topology).
struct DgxH100FlowCluster
{
    ns3::NodeContainer gpus;
    ns3::Ptr<ns3::FlowBackend> net;
};

inline DgxH100FlowCluster
MakeDgxH100FlowCluster(uint32_t servers)
{
    using namespace ns3;
    gpusim::ClusterSpec spec;
    gpusim::LookupClusterPreset("dgx-h100", spec);
    spec.servers = servers;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    DgxH100FlowCluster c;
    c.gpus = cluster.Create();
    c.net = CreateObject<FlowBackend>();
    c.net->SetTopology(cluster.GetTopology());
    return c;
}

/// Runs the installed workload `w` to its end and collects it (with `net`, its flow count),
/// then disposes of it and destroys the simulator.
inline EdgeFlowRun
FinishEdgeFlowRun(ns3::Ptr<ns3::GpuWorkload> w, ns3::Ptr<ns3::FlowBackend> net = nullptr)
{
    using namespace ns3;
    Simulator::Run();
    EdgeFlowRun r;
    RunReport rep = w->Check();
    r.completed = rep.completed;
    r.stuck = rep.stuck;
    r.end = rep.endTime;
    r.collectives = w->GetCollectives();
    r.stats = w->GetNcclWorld()->GetFidelityStats();
    r.flowsStarted = net ? net->GetStartedCount() : 0;
    w->Dispose();
    Simulator::Destroy();
    return r;
}

inline EdgeFlowRun
RunEdgeFlowCase(const std::string& algorithm, bool edgeFlows, uint32_t servers,
                const std::function<void(ns3::JobBuilder&)>& build,
                const std::function<void(ns3::GpuWorkloadHelper&)>& configure = {})
{
    using namespace ns3;
    auto [gpus, net] = MakeDgxH100FlowCluster(servers);
    JobBuilder job(gpus.GetN());
    build(job);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue(algorithm));
    h.SetNcclAttribute("Fidelity", StringValue(edgeFlows ? "collective" : "chunk"));
    h.SetNcclAttribute("RingFlows", BooleanValue(edgeFlows));
    if (configure)
    {
        configure(h);
    }
    return FinishEdgeFlowRun(h.Install(job.BuildShared(), gpus), net);
}

/// Largest |edge-flow - chunk| per-rank completion (from the first join) over all collectives,
/// as a fraction of the chunk-level duration; checks the records match one to one.
inline double
WorstError(const EdgeFlowRun& chunk, const EdgeFlowRun& flows)
{
    EXPECT_TRUE(chunk.completed) << chunk.stuck;
    EXPECT_TRUE(flows.completed) << flows.stuck;
    EXPECT_EQ(chunk.collectives.size(), flows.collectives.size());
    // Records come in completion order, which may differ: match them by (comm, seq).
    std::map<std::pair<std::string, uint64_t>, const ns3::CollectiveRecord*> byKey;
    for (const ns3::CollectiveRecord& b : flows.collectives)
    {
        byKey[{b.comm, b.seq}] = &b;
    }
    double worst = 0;
    for (const ns3::CollectiveRecord& a : chunk.collectives)
    {
        auto it = byKey.find({a.comm, a.seq});
        if (it == byKey.end())
        {
            ADD_FAILURE() << a.comm << " seq " << a.seq << " missing from the edge-flow run";
            continue;
        }
        const ns3::CollectiveRecord& b = *it->second;
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
inline std::function<void(ns3::JobBuilder&)>
Paced(ns3::gpusim::CollKind kind, uint64_t bytes, uint32_t iters, double gapUs)
{
    return [=](ns3::JobBuilder& job) {
        job.AllRanks().CommInit("w");
        for (uint32_t i = 0; i < iters; ++i)
        {
            job.AllRanks().Host(gapUs).Collective(1, kind, "w", bytes,
                                                  ns3::gpusim::DataType::F32, 0);
        }
        job.AllRanks().SyncStream(1);
    };
}

/// Late contention: `iters` AllReduces of 64 MiB on communicator "w" over all ranks (after 40 us
/// of compute each), and in iteration `lateAt` a 2-rank AllReduce over GPUs 0 and 8 (on
/// another stream, after 100 us of its own compute) that lands on the links of "w"'s
/// collective while it runs.
inline void
BuildLateContention(ns3::JobBuilder& job, uint32_t iters, uint32_t lateAt)
{
    job.AllRanks().CommInit("w");
    job.Rank(0).CommInit("x", 2, 0);
    job.Rank(8).CommInit("x", 2, 1);
    for (uint32_t i = 0; i < iters; ++i)
    {
        job.AllRanks().Kernel(1, "compute", 40.0);
        if (i == lateAt)
        {
            for (uint32_t r : {0u, 8u})
            {
                job.Rank(r).RecordEvent(7, 1).WaitEvent(2, 7).Kernel(2, "late", 100.0);
                job.Rank(r).AllReduce(2, "x", 64 << 20);
            }
        }
        job.AllRanks().AllReduce(1, "w", 64 << 20);
    }
    job.AllRanks().SyncStream(1);
    job.Rank(0).SyncStream(2);
    job.Rank(8).SyncStream(2);
}

} // namespace gpusim_test

#endif // GPUSIM_TEST_EDGE_FLOW_TEST_UTIL_H
