/*
 * Scenarios of the routing study (examples/routing-study.cc, doc/routing-study.md), in a header
 * so that test/routing-study-test.cc runs the same code path at a reduced size.
 *
 * Fabric: 8 servers x 2 GPUs, one 100 Gbit/s NIC per GPU, 4 servers (8 NICs) per leaf,
 * 2 leaves, 2:1 oversubscribed: 4 spines, one 100 Gbit/s link from each leaf to each spine.
 *
 * Part 1 (collectives): job A is GPU 0 of every server, job B GPU 1 of every server (the
 * "shared" runs: both at once). Each job runs one ring AllReduce (4 channels: its rings
 * cross from leaf to leaf at servers 3 -> 4 and 7 -> 0, 4 QPs per job and direction on each
 * leaf's 4 uplinks; 8 when shared) or AllToAll (16 QPs per job and direction) on its own
 * communicator.
 *
 * Part 2 (failure): a generated training iteration on all 16 GPUs (TP 2 inside a server,
 * DP 8 over servers placed "spread", so the DP rings cross the spines), flow backend, with
 * a leaf-spine cable or a whole spine down from t = 0 or mid-iteration.
 */
#ifndef GPUSIM_EXAMPLES_ROUTING_STUDY_H
#define GPUSIM_EXAMPLES_ROUTING_STUDY_H

#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/enum.h"
#include "ns3/fabric-event.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/job-placement.h"
#include "ns3/llm-model.h"
#include "ns3/multi-job-helper.h"
#include "ns3/packet-backend.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/training-generator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{
namespace routingstudy
{

constexpr uint32_t kServers = 8;
constexpr uint32_t kServersPerLeaf = 4;
constexpr double kGbps = 100;
/// Rings per collective (NCCL_MIN_NCHANNELS=4), each its own connection (RDMA QP): NCCL orders
/// a ring by server, so each job's ring leaves a leaf at one server boundary, and 4 channels
/// put 4 QPs per job on each leaf's 4 uplinks.
constexpr uint32_t kChannels = 4;

/// The study's cluster. `packet`: real spines for every routing (the packet backend routes each
/// packet over them); otherwise `adaptive` merges them into one bundle per leaf (flow model).
inline gpusim::ClusterSpec
StudyCluster(const std::string& routing, bool packet, double oversubscription = 2)
{
    gpusim::ClusterSpec s;
    s.servers = kServers;
    s.gpusPerServer = 2;
    s.nicsPerServer = 2;
    s.nicGbps = kGbps;
    s.fabric = "leaf-spine";
    s.nicsPerLeaf = kServersPerLeaf * 2;
    s.oversubscription = oversubscription; // 2: 8 NICs down, 4 x 100 Gbit/s up (4 spines)
    s.linkLatencyUs = 1.0;
    s.routing = routing;
    s.mergeAdaptiveSpines = !packet;
    return s;
}

/// GPU `local` (0 or 1) of every server, in server order.
inline std::vector<uint32_t>
JobGpus(uint32_t local)
{
    std::vector<uint32_t> gpus;
    for (uint32_t s = 0; s < kServers; ++s)
    {
        gpus.push_back(s * 2 + local);
    }
    return gpus;
}

struct CollectiveCase
{
    std::string collective = "allreduce"; //!< allreduce | alltoall
    std::string backend = "packet";       //!< packet | flow
    std::string routing = "ecmp";
    std::string cc = "hpcc";        //!< RDMA congestion control (packet)
    std::string reorder = "tolerant"; //!< gbn | tolerant (packet)
    bool shared = false;            //!< job B runs the same collective at the same time
    uint64_t bytes = 4 << 20;       //!< per rank (the collective's size)
    uint32_t seed = 0;              //!< EcmpSeed (packet: hashes, spraying, flowlets)
    bool pfc = true;
    /// Fabric events ("leaf0-spine1@0", "spine2@1ms", ParseLinkDown items) and the routing
    /// convergence delay.
    std::vector<std::string> linkDown;
    Time convergence = Time(0);
};

struct CollectiveResult
{
    bool completed = false;
    double timeUs = 0;      //!< job A's collective: first join to end
    double otherUs = 0;     //!< job B's (shared runs)
    uint64_t retransmitted = 0; //!< RDMA data packets resent (go-back-N)
    uint64_t nacks = 0;
    uint64_t outOfOrder = 0; //!< packets the receivers discarded (gap or duplicate)
    uint64_t reordered = 0;  //!< packets the tolerant receivers held out of order
    uint64_t timeouts = 0;
    uint64_t drops = 0;
    uint64_t pauses = 0;
    uint64_t cnps = 0;
    /// Leaf -> spine bytes: the busiest uplink over the mean of all leaves' uplinks (1 = even).
    double uplinkImbalance = 0;
    std::vector<double> uplinkBytes; //!< every leaf -> spine cable (UplinkBytes)
};

inline std::shared_ptr<const gpusim::JobTrace>
CollectiveJob(const std::string& collective, uint64_t bytes)
{
    const gpusim::CollKind kind =
        collective == "alltoall" ? gpusim::CollKind::AllToAll : gpusim::CollKind::AllReduce;
    JobBuilder b(kServers);
    b.AllRanks().CommInit("c").Collective(1, kind, "c", bytes / 32 * 32, gpusim::DataType::F32,
                                          0);
    b.SyncStream(1);
    return b.BuildShared();
}

inline Ptr<NetworkBackend>
MakeBackend(const CollectiveCase& c)
{
    if (c.backend == "flow")
    {
        Ptr<FlowBackend> f = CreateObject<FlowBackend>();
        return f;
    }
    Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
    rdma->SetCongestionControl(c.cc);
    rdma->SetAttribute("ReorderMode", EnumValue(c.reorder == "gbn" ? RdmaTransport::GO_BACK_N
                                                                   : RdmaTransport::TOLERANT));
    Ptr<PacketBackend> p = CreateObject<PacketBackend>();
    p->SetTransport(rdma);
    p->SetAttribute("QueueDisc", StringValue("ecn"));
    p->SetAttribute("Pfc", BooleanValue(c.pfc));
    p->SetAttribute("Routing", StringValue(c.routing));
    p->SetAttribute("EcmpSeed", UintegerValue(c.seed));
    return p;
}

inline std::vector<gpusim::FabricEventSpec>
DownEvents(const std::vector<std::string>& items)
{
    std::vector<gpusim::FabricEventSpec> out;
    for (const std::string& item : items)
    {
        for (const auto& e : gpusim::ParseLinkDown(item))
        {
            out.push_back(e);
        }
    }
    return out;
}

/// Bytes each leaf -> spine cable carried (packet: IP bytes sent; flow: the fluid bytes); a
/// merged bundle of n cables (adaptive on the flow backend) counts as n cables of 1/n each.
inline std::vector<double>
UplinkBytes(Ptr<NetworkBackend> net, Ptr<ClusterTopology> topo,
            std::vector<std::string>* names = nullptr)
{
    std::vector<double> out;
    const auto& V = topo->Vertices();
    auto isUplink = [&V, &topo](uint32_t l) {
        const TopoLink& L = topo->Links()[l];
        return L.kind == TopoLinkKind::Fabric && V[L.from].name.rfind("leaf", 0) == 0 &&
               V[L.to].name.rfind("spine", 0) == 0;
    };
    if (auto pkt = DynamicCast<PacketBackend>(net))
    {
        for (const auto& s : pkt->GetLinkStats())
        {
            if (isUplink(s.link))
            {
                out.push_back(s.txBytes);
                if (names)
                {
                    names->push_back(s.from + "-" + s.to);
                }
            }
        }
    }
    else if (auto flow = DynamicCast<FlowBackend>(net))
    {
        const std::vector<double>& b = flow->GetLinkBytes();
        for (uint32_t l = 0; l < topo->Links().size() && l < b.size(); ++l)
        {
            if (isUplink(l))
            {
                const uint32_t n = std::max<uint32_t>(1, topo->Links()[l].cables);
                out.insert(out.end(), n, b[l] / n);
                if (names)
                {
                    names->insert(names->end(), n, gpusim::LinkName(*topo, l));
                }
            }
        }
    }
    return out;
}

/// Runs job A (and job B when shared) once; destroys the simulator afterwards.
inline CollectiveResult
RunCollective(const CollectiveCase& c)
{
    gpusim::ClusterSpec spec = StudyCluster(c.routing, c.backend == "packet");
    spec.fabricEvents = DownEvents(c.linkDown);
    spec.routingConvergence = c.convergence;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<ClusterTopology> topo = cluster.GetTopology();
    Ptr<NetworkBackend> net = MakeBackend(c);
    net->SetTopology(topo);
    GpuWorkloadHelper helper;
    helper.SetBackend(net);
    helper.SetNcclAttribute("Algorithm", StringValue("ring"));
    helper.SetNcclAttribute("Channels", UintegerValue(kChannels));
    helper.SetNcclAttribute("Fidelity", StringValue("chunk"));
    MultiJobHelper jobs(gpus, topo);
    auto trace = CollectiveJob(c.collective, c.bytes);
    JobPlacement a;
    a.policy = JobPlacement::Policy::Explicit;
    a.gpus = JobGpus(0);
    jobs.AddJob("A", trace, a);
    if (c.shared)
    {
        JobPlacement b = a;
        b.gpus = JobGpus(1);
        jobs.AddJob("B", trace, b);
    }
    jobs.Install(helper);
    Simulator::Stop(Seconds(2)); // a run that stalls must not hang the study
    Simulator::Run();
    CollectiveResult r;
    r.completed = true;
    for (uint32_t k = 0; k < jobs.GetNJobs(); ++k)
    {
        Ptr<GpuWorkload> w = jobs.GetWorkload(k);
        const RunReport rep = w->Check();
        if (!rep.completed || w->GetCollectives().empty())
        {
            r.completed = false;
            continue;
        }
        const CollectiveRecord& rec = w->GetCollectives().at(0);
        (k == 0 ? r.timeUs : r.otherUs) = (rec.End() - rec.FirstJoin()).GetNanoSeconds() / 1e3;
    }
    r.uplinkBytes = UplinkBytes(net, topo);
    if (!r.uplinkBytes.empty())
    {
        double sum = 0;
        for (double b : r.uplinkBytes)
        {
            sum += b;
        }
        const double mean = sum / r.uplinkBytes.size();
        r.uplinkImbalance =
            mean > 0 ? *std::max_element(r.uplinkBytes.begin(), r.uplinkBytes.end()) / mean : 0;
    }
    if (auto pkt = DynamicCast<PacketBackend>(net))
    {
        r.drops = pkt->GetTotalDrops();
        r.pauses = pkt->GetTotalPauses();
        if (auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport()))
        {
            const RdmaTransport::Counters& k = rdma->GetCounters();
            r.retransmitted = k.retransmitted;
            r.nacks = k.nackPackets;
            r.outOfOrder = k.outOfOrder;
            r.reordered = k.reordered;
            r.timeouts = k.timeouts;
            r.cnps = k.cnpPackets;
        }
    }
    for (uint32_t k = 0; k < jobs.GetNJobs(); ++k)
    {
        jobs.GetWorkload(k)->Dispose();
    }
    Simulator::Destroy();
    return r;
}

/// The study's training model: a ~190M-parameter Llama-style decoder (8 layers, hidden 1024,
/// GQA 16/8 heads, SwiGLU 4096, 32k vocabulary, 2048 tokens), small enough that an iteration
/// of the flow backend takes about a second of wall time.
inline gpusim::ModelSpec
StudyModel(uint32_t layers = 8)
{
    gpusim::ModelSpec m;
    gpusim::LookupModelPreset("llama3-8b", m);
    m.name = "llama-190m";
    m.layers = layers;
    m.hidden = 1024;
    m.heads = 16;
    m.kvHeads = 8;
    m.ffn = 4096;
    m.vocab = 32000;
    m.seqLength = 2048;
    m.source = "routing study: a small Llama-style model";
    return m;
}

/// TP 2 x DP 8 over the 16 GPUs; `globalBatch` sequences per iteration.
inline std::shared_ptr<const gpusim::JobTrace>
StudyTraining(const gpusim::ModelSpec& m, uint32_t globalBatch)
{
    gpusim::TrainingPlan plan;
    plan.tp = 2;
    plan.dp = kServers;
    plan.globalBatch = globalBatch;
    return gpusim::GenerateTraining(m, plan).job;
}

struct TrainingCase
{
    std::string routing = "ecmp"; //!< ecmp | adaptive (merged spines, flow backend)
    double oversubscription = 2;  //!< 2: 4 spines; 4: 2 spines
    std::vector<std::string> linkDown;
    Time convergence = Time(0);
};

struct TrainingResult
{
    bool completed = false;
    double iterationUs = 0;   //!< the job's (longest) iteration
    double exposedCommUs = 0; //!< mean over ranks of communication not under compute
    std::vector<double> uplinkBytes;
    std::vector<std::string> uplinkNames; //!< "leafX-spineK" of each entry of uplinkBytes
};

/// One training iteration of `job` on the flow backend with `c`'s faults.
inline TrainingResult
RunTraining(std::shared_ptr<const gpusim::JobTrace> job, const TrainingCase& c)
{
    gpusim::ClusterSpec spec = StudyCluster(c.routing, false, c.oversubscription);
    spec.fabricEvents = DownEvents(c.linkDown);
    spec.routingConvergence = c.convergence;
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<ClusterTopology> topo = cluster.GetTopology();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(topo);
    GpuWorkloadHelper helper;
    helper.SetBackend(net);
    helper.SetNcclAttribute("Fidelity", StringValue("chunk"));
    MultiJobHelper jobs(gpus, topo);
    jobs.AddJob("train", job, JobPlacement::Parse("spread"));
    jobs.Install(helper);
    Simulator::Stop(Seconds(30));
    Simulator::Run();
    TrainingResult r;
    const std::vector<JobReport> reports = jobs.Reports();
    r.completed = reports.at(0).run.completed;
    for (const JobIteration& it : reports.at(0).iterations)
    {
        r.iterationUs = std::max(r.iterationUs, (it.end - it.start).GetNanoSeconds() / 1e3);
        r.exposedCommUs = std::max(r.exposedCommUs, it.exposedCommUs);
    }
    r.uplinkBytes = UplinkBytes(net, topo, &r.uplinkNames);
    jobs.GetWorkload(0)->Dispose();
    Simulator::Destroy();
    return r;
}

} // namespace routingstudy
} // namespace ns3

#endif // GPUSIM_EXAMPLES_ROUTING_STUDY_H
