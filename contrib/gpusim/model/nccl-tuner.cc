// The tuner (NCCL's src/graph/tuning.cc and the algorithm choice in src/enqueue.cc): for every
// (algorithm, protocol) a closed-form time = launch latency + dependency depth x per-step
// latency + the busiest link's bytes / (capacity x efficiency) x pipeline fill, from the
// algorithm's real transfers on the real routes and the cluster's calibration, each channel
// at most NCCL's per-channel bandwidth; the candidate NCCL's tuner of the cluster's release
// ranks fastest wins (its latency constants, its caps: model/nccl-version.h). See
// doc/design.md, "Auto selection".
#include "ns3/nccl-algorithms.h"
#include "ns3/nccl-collective.h"
#include "ns3/nccl-version.h"

#include "ns3/log.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("NcclTuner");

using gpusim::CollKind;
using gpusim::NcclAlgo;
using gpusim::NcclCalibration;
using gpusim::NcclHop;
using gpusim::NcclProto;

namespace
{

Time
Us(double us)
{
    return NanoSeconds(static_cast<int64_t>(std::llround(us * 1e3)));
}

/// nccl-tests' bus bandwidth factor: busbw = algbw x factor.
double
BusFactor(CollKind k, uint32_t n)
{
    switch (k)
    {
    case CollKind::AllReduce:
        return 2.0 * (n - 1) / n;
    case CollKind::AllGather:
    case CollKind::ReduceScatter:
    case CollKind::AllToAll:
        return double(n - 1) / n;
    default:
        return 1.0;
    }
}

NcclAlgo
AlgoRow(const std::string& algo)
{
    NcclAlgo a = NcclAlgo::Ring;
    gpusim::ParseNcclAlgo(algo, a);
    return a;
}

NcclProto
ProtoColumn(const std::string& proto)
{
    NcclProto p = NcclProto::Simple;
    gpusim::ParseNcclProto(proto, p);
    return p;
}

/// The least time (algo, proto) takes for `bytes` under NCCL's per-channel bus bandwidth
/// caps (src/graph/tuning.cc: a tree channel at most perChMaxTreeBw, LL at 1/3.8 and
/// LL128 at 120/128 of it and at most perChMaxTreeLL128Bw, a ring's LL128 channel at most
/// perChMaxRingLL128Bw), on the graph's `graphChannels`; 0 where none applies. NCCL turns a
/// tree's bus bandwidth into algorithm bandwidth at 0.5, a ring's at nRanks / nSteps.
double
ChannelCapUs(const gpusim::NcclSelectionModel& sel, CollKind kind, const std::string& algo,
             const std::string& proto, uint64_t bytes, uint32_t ranks, uint32_t servers,
             uint32_t graphChannels)
{
    const int nodes = servers <= 1 ? 0 : servers == 2 ? 1 : 2;
    double busCap = 0;
    if (algo == "tree" && sel.treeChannelGBps[nodes] > 0)
    {
        busCap = sel.treeChannelGBps[nodes];
        if (proto == "ll")
        {
            busCap /= 3.8;
        }
        else if (proto == "ll128")
        {
            busCap *= 120.0 / 128;
            if (sel.treeLl128ChannelGBps[nodes] > 0)
            {
                busCap = std::min(busCap, sel.treeLl128ChannelGBps[nodes]);
            }
        }
    }
    else if (algo == "ring" && proto == "ll128" && sel.ringLl128ChannelGBps[nodes] > 0)
    {
        busCap = sel.ringLl128ChannelGBps[nodes];
    }
    if (busCap <= 0 || graphChannels == 0 || ranks <= 1)
    {
        return 0.0;
    }
    const double steps = kind == CollKind::AllReduce ? 2.0 * (ranks - 1) : double(ranks - 1);
    const double algGBps =
        graphChannels * busCap * (algo == "tree" ? 0.5 : double(ranks) / steps);
    return double(bytes) / (algGBps * 1e3);
}

} // namespace

/// Loads and depths of one algorithm's transfers.
struct NcclWorld::LinkLoads
{
    std::vector<double> bytes; //!< per directed link, wire bytes at protocol factor 1
    double depth = 0;          //!< dependency depth in steps
    double depthInter = 0;     //!< of which steps wait on a connection between servers
    double maxWireUs = 0;      //!< longest route latency among the transfers between servers
    double maxWireIntraUs = 0; //!< among those inside a server (NVLink, NVSwitch)
    /// A ring crossing servers: the network steps in the heaviest window of `depth`
    /// consecutive ring hops (RingInterSteps), which the data's path waits when its
    /// connections keep chunks in flight (RingNetSlots of the protocol); -1 otherwise.
    double ringPathInter = -1;
};

/// NCCL's constants for one Plan: the executor's release (2.26.2) bounds what a channel
/// moves; the cluster's release is what NCCL's tuner selects by.
struct NcclWorld::ChannelModels
{
    gpusim::NcclSelectionModel hardware;
    gpusim::NcclSelectionModel selection;
    uint32_t graphChannels = 0; //!< NCCL's graph channels, which the caps multiply
};

/// One candidate of the tuner.
struct NcclWorld::Estimate
{
    double us = std::numeric_limits<double>::infinity();
    /// What the NCCL release's tuner compares (us + its constants' differences, its channel
    /// caps); us where it has none. The plugin's reported latency comes on top.
    double selectUs = std::numeric_limits<double>::infinity();
    double bwFactor = 1.0; //!< protocol factor x LL cap ratio
    uint32_t loops = 1;
};

void
NcclWorld::FillCosts(const std::string& algo, const std::string& proto,
                     CollectivePlan& plan) const
{
    const NcclCalibration& cal = Calibration();
    const NcclAlgo a = AlgoRow(algo);
    const NcclProto p = ProtoColumn(proto);
    if (m_efficiency > 0)
    {
        // Closed-form mode: one ideal factor on every link, no latencies.
        plan.bwFactor = m_efficiency;
        plan.nvlinkEfficiency = plan.netEfficiency = plan.nvlsEfficiency = 1.0;
        plan.stepLatency = plan.stepLatencyInter = plan.baseLatency = Time(0);
        plan.hopIncludesWire = false;
        return;
    }
    plan.bwFactor = cal.ProtoFactor(a, p);
    plan.nvlinkEfficiency = cal.nvlinkEfficiency;
    plan.netEfficiency = cal.netEfficiency;
    plan.nvlsEfficiency = cal.nvls ? cal.nvlsEfficiency : 1.0;
    plan.stepLatency = Us(cal.HopUs(NcclHop::Intra, a, p));
    plan.stepLatencyInter = Us(cal.HopUs(NcclHop::Inter, a, p));
    plan.baseLatency = Us(cal.BaseUs(a, p));
    plan.hopIncludesWire = cal.hopIncludesWire;
}

uint32_t
NcclWorld::NvlsLoops(uint64_t bytes, uint32_t servers, uint32_t ppn) const
{
    // NCCL 2.26 calcCollChunking: a loop moves one chunk per (NVLS channel, head); chunks
    // shrink for smaller collectives so that enough loops keep the pipeline busy.
    const NcclCalibration& cal = Calibration();
    const double lanes = double(cal.nvlsChannels) * ppn;
    const double S = double(bytes);
    double chunk = double(cal.nvlsChunkBytes);
    auto shrink = [&](double times, double to) {
        if (S < times * lanes * chunk && chunk > to)
        {
            chunk = to;
        }
    };
    if (servers <= 1)
    {
        shrink(64, 65536);
        shrink(8, 32768);
        shrink(2, 16384);
    }
    else
    {
        if (servers >= 4)
        {
            chunk = std::min(chunk, 65536.0);
        }
        shrink(32, 262144);
        shrink(16, 131072);
        shrink(4, 65536);
        shrink(1, 32768);
    }
    // At most 4096 loops bound the event count (16 GiB on >= 4 servers); beyond that loops
    // grow, and their per-loop step latencies are paid fewer times than NCCL pays them.
    return static_cast<uint32_t>(std::clamp(std::ceil(S / (lanes * chunk)), 1.0, 4096.0));
}

namespace
{

/// Adds transfers' bytes on the links of their routes, as wire bytes of their link class.
class LoadBuilder
{
  public:
    LoadBuilder(const NcclWorld& world, const Communicator& comm, const CollectivePlan& eff,
                std::vector<double>& bytes, double& maxWireUs, double& maxWireIntraUs)
        : m_world(world),
          m_comm(comm),
          m_topo(world.GetTopology()),
          m_eff(eff),
          m_bytes(bytes),
          m_maxWireUs(maxWireUs),
          m_maxWireIntraUs(maxWireIntraUs)
    {
        m_bytes.assign(m_topo->Links().size(), 0.0);
    }

    /// `b` payload bytes between two endpoints (GPUs or NVSwitches) on the route the backends
    /// take for this flow key.
    void AddEndpoints(uint32_t src, uint32_t dst, uint64_t flowKey, double b)
    {
        const NcclWorld::HopInfo& hop = m_world.Hop(src, dst);
        const double e = hop.nvls    ? m_eff.nvlsEfficiency
                         : hop.inter ? m_eff.netEfficiency
                                     : m_eff.nvlinkEfficiency;
        m_topo->RouteInto(src, dst, ClusterTopology::HashFlow(flowKey, src, dst), m_route);
        for (uint32_t l : m_route)
        {
            m_bytes[l] += b / e;
        }
        double& wire = hop.inter ? m_maxWireUs : m_maxWireIntraUs;
        wire = std::max(wire, hop.wireUs);
        anyInter = anyInter || hop.inter;
    }

    void Add(uint32_t fromRank, uint32_t toRank, uint64_t flowKey, double b)
    {
        AddEndpoints(m_comm.GpuOf(fromRank), m_comm.GpuOf(toRank), flowKey, b);
    }

    /// Point-to-point bytes: through the GPU on the peer's rail when NCCL relays them (PXN).
    void AddP2p(uint32_t fromRank, uint32_t toRank, uint64_t flowKey, double b)
    {
        const uint32_t src = m_comm.GpuOf(fromRank);
        const uint32_t dst = m_comm.GpuOf(toRank);
        const uint32_t proxy = m_world.IsPxn() ? m_topo->RailPeer(src, dst) : src;
        if (proxy != src)
        {
            AddEndpoints(src, proxy, flowKey, b);
        }
        AddEndpoints(proxy, dst, flowKey, b);
    }

    bool Crosses(uint32_t a, uint32_t b) const
    {
        return m_topo->ServerOf(m_comm.GpuOf(a)) != m_topo->ServerOf(m_comm.GpuOf(b));
    }

    Ptr<ClusterTopology> Topology() const
    {
        return m_topo;
    }

    bool anyInter = false; //!< some transfer crosses servers

  private:
    const NcclWorld& m_world;
    const Communicator& m_comm;
    Ptr<ClusterTopology> m_topo;
    const CollectivePlan& m_eff;
    std::vector<double>& m_bytes;
    double& m_maxWireUs;
    double& m_maxWireIntraUs;
    std::vector<uint32_t> m_route;
};

/// NVLS / NVLSTree: per GPU its data to the switch and the reduced shard back ((1 + 1/ppn) S
/// each way with the multicast); per head and tree edge, half its shard each way. Depth: the
/// four NVLS stages, plus both ways through the trees of servers.
void
AddNvlsLoads(LoadBuilder& lb, const Communicator& comm, double S, double& depth,
             double& depthInter)
{
    const std::vector<std::vector<uint32_t>> groups = comm.NvlsGroups();
    const double ppn = groups.front().size();
    for (const auto& g : groups)
    {
        const uint32_t sw = lb.Topology()->NvSwitchEndpoint(comm.GpuOf(g.front()));
        for (uint32_t r : g)
        {
            lb.AddEndpoints(comm.GpuOf(r), sw, 0, S * (1 + 1 / ppn));
            lb.AddEndpoints(sw, comm.GpuOf(r), 0, S * (1 + 1 / ppn));
        }
    }
    depth = 4; // reduce, reduced shard, multicast up, multicast down
    depthInter = 0;
    if (groups.size() == 1)
    {
        return;
    }
    const std::vector<CollectiveTree> trees = DoubleBinaryTree(groups.size());
    uint32_t treeDepth = 0;
    for (uint32_t t = 0; t < trees.size(); ++t)
    {
        for (uint32_t s = 0; s < groups.size(); ++s)
        {
            uint32_t d = 0;
            for (int32_t a = trees[t].parent[s]; a >= 0; a = trees[t].parent[a])
            {
                ++d;
            }
            treeDepth = std::max(treeDepth, d);
            const int32_t p = trees[t].parent[s];
            for (uint32_t h = 0; p >= 0 && h < groups[s].size(); ++h)
            {
                const uint64_t key = (uint64_t(t) << 31) | h;
                lb.Add(groups[s][h], groups[p][h], key, S / ppn / 2);
                lb.Add(groups[p][h], groups[s][h], key, S / ppn / 2);
            }
        }
    }
    depthInter = 2.0 * treeDepth;
    depth += depthInter;
}

/// Double binary trees: both directions of every edge carry the tree's share; depth is the
/// deepest path up and down, with its hops between servers counted apart.
void
AddTreeLoads(LoadBuilder& lb, const Communicator& comm, double S, uint32_t C, double& depth,
             double& depthInter)
{
    const uint32_t n = comm.GetNRanks();
    const double perTree = S / C;
    const std::vector<CollectiveTree> trees = comm.Trees(C);
    double deepest = -1;
    for (uint32_t t = 0; t < C; ++t)
    {
        for (uint32_t r = 0; r < n; ++r)
        {
            const int32_t p = trees[t].parent[r];
            if (p >= 0)
            {
                lb.Add(r, p, 2 * t, perTree);
                lb.Add(p, r, 2 * t + 1, perTree);
            }
            uint32_t d = 0;
            uint32_t inter = 0;
            for (int32_t c = r, a = p; a >= 0; c = a, a = trees[t].parent[a])
            {
                ++d;
                inter += lb.Crosses(c, a) ? 1 : 0;
            }
            if (d > deepest)
            {
                deepest = d;
                depth = d;
                depthInter = inter;
            }
        }
    }
    depth *= 2; // reduce up, broadcast down
    depthInter *= 2;
}

/// Ring steps that wait on a connection between servers: a ring connection between servers
/// that keeps `slots` > 1 chunks in flight (RingNetSlots; PipelineExecutor with RingConns) no
/// longer gates every step; the latency path is the data's, `depth` consecutive ring hops,
/// and its heaviest window holds the most hops between servers. (A connection's own items
/// still wait for a free slot: EstimateCandidate's slotSteps.)
double
RingInterSteps(const LoadBuilder& lb, const Communicator& comm, uint32_t C, double depth)
{
    const uint32_t n = comm.GetNRanks();
    const uint32_t hops = static_cast<uint32_t>(depth);
    uint32_t most = 0;
    for (uint32_t c = 0; c < C; ++c)
    {
        const std::vector<uint32_t> ring = comm.RingOrder(c);
        std::vector<uint32_t> cross(n);
        for (uint32_t p = 0; p < n; ++p)
        {
            cross[p] = lb.Crosses(ring[p], ring[(p + 1) % n]) ? 1 : 0;
        }
        // Crossings among hops k, k+1, ..., k+hops-1 (around the ring), for every start k.
        const uint32_t full = hops / n;
        uint32_t perLap = 0;
        for (uint32_t v : cross)
        {
            perLap += v;
        }
        const uint32_t rest = hops % n;
        uint32_t window = 0;
        for (uint32_t q = 0; q < rest; ++q)
        {
            window += cross[q];
        }
        uint32_t best = window;
        for (uint32_t k = 1; k < n && rest > 0; ++k)
        {
            window += cross[(k + rest - 1) % n];
            window -= cross[k - 1];
            best = std::max(best, window);
        }
        most = std::max(most, full * perLap + best);
    }
    return std::min<double>(most, depth);
}

/// Rings and chains (every hop of every channel carries its share), all-to-all pairs and P2P.
/// A chain's step waits for its connection's previous step (FIFO connections in lock step):
/// one connection between servers gates them all. A ring's connections between servers keep
/// chunks in flight (RingInterSteps).
void
AddRingLoads(LoadBuilder& lb, const Communicator& comm, CollKind kind, const std::string& algo,
             double S, uint32_t C, double& depth, double& depthInter, double& ringPathInter)
{
    const uint32_t n = comm.GetNRanks();
    if (algo == "direct")
    {
        for (uint32_t i = 0; i < n; ++i)
        {
            for (uint32_t j = 0; j < n; ++j)
            {
                if (i != j)
                {
                    lb.AddP2p(i, j, i, S / n);
                }
            }
        }
        depth = 1;
    }
    else if (algo == "p2p")
    {
        lb.AddP2p(0, n > 1 ? 1 : 0, 0, S);
        depth = 1;
    }
    else
    {
        double perHop = S / C;
        if (kind == CollKind::AllReduce)
        {
            perHop *= 2.0 * (n - 1) / n;
            depth = 2.0 * (n - 1);
        }
        else if (kind == CollKind::AllGather || kind == CollKind::ReduceScatter)
        {
            perHop *= double(n - 1) / n;
            depth = n - 1;
        }
        else
        {
            depth = n - 1;
        }
        for (uint32_t c = 0; c < C; ++c)
        {
            const std::vector<uint32_t> ring = comm.RingOrder(c);
            const uint32_t hops = algo == "chain" ? n - 1 : n;
            for (uint32_t p = 0; p < hops; ++p)
            {
                lb.Add(ring[p], ring[(p + 1) % n], c, perHop);
            }
        }
        if (algo == "ring" && lb.anyInter)
        {
            ringPathInter = RingInterSteps(lb, comm, C, depth);
        }
    }
    // One chunk in flight per connection: the crossing connection gates every step.
    depthInter = lb.anyInter ? depth : 0;
}

} // namespace

void
NcclWorld::AddAlgorithmLoads(CollKind kind, const std::string& algo, uint64_t bytes,
                             const Communicator& comm, uint32_t channels,
                             const CollectivePlan& eff, LinkLoads& L) const
{
    LoadBuilder lb(*this, comm, eff, L.bytes, L.maxWireUs, L.maxWireIntraUs);
    const double S = static_cast<double>(bytes);
    const uint32_t C = std::max<uint32_t>(1, channels);
    L.depth = 0;
    L.depthInter = 0;
    L.ringPathInter = -1;
    if (algo == "nvls" || algo == "nvlstree")
    {
        AddNvlsLoads(lb, comm, S, L.depth, L.depthInter);
    }
    else if (algo == "tree")
    {
        AddTreeLoads(lb, comm, S, C, L.depth, L.depthInter);
    }
    else
    {
        AddRingLoads(lb, comm, kind, algo, S, C, L.depth, L.depthInter, L.ringPathInter);
    }
}

NcclWorld::Estimate
NcclWorld::EstimateCandidate(CollKind kind, const std::string& algo, const std::string& proto,
                             uint64_t bytes, const Communicator& comm, uint32_t channels,
                             const ChannelModels* models, const LinkLoads* loads,
                             LinkLoads* built) const
{
    Estimate e;
    const uint32_t n = comm.GetNRanks();
    CollectivePlan costs;
    FillCosts(algo, proto, costs);
    e.bwFactor = costs.bwFactor;
    if (n <= 1)
    {
        e.us = e.selectUs = costs.baseLatency.GetNanoSeconds() / 1e3;
        return e;
    }
    LinkLoads own;
    LinkLoads* target = built ? built : &own;
    if (!loads)
    {
        AddAlgorithmLoads(kind, algo, bytes, comm, channels, costs, *target);
    }
    const LinkLoads& L = loads ? *loads : *target;
    Ptr<ClusterTopology> topo = GetTopology();
    const auto& links = topo->Links();
    double loadSec = 0;   // busiest link, at protocol factor 1
    double nvlinkSec = 0; // busiest NVLink
    double netSec = 0;    // busiest link outside the servers
    for (uint32_t l = 0; l < L.bytes.size(); ++l)
    {
        if (L.bytes[l] > 0)
        {
            const double sec = L.bytes[l] * 8.0 / links[l].bitsPerSec;
            loadSec = std::max(loadSec, sec);
            double& classSec = links[l].kind == TopoLinkKind::NvLink ? nvlinkSec : netSec;
            classSec = std::max(classSec, sec);
        }
    }
    // LL's bus bandwidth is capped per generation (NCCL's llMaxBws).
    const gpusim::NcclCalibration& cal = Calibration();
    const double cap = m_efficiency > 0 ? 0 : cal.LlMaxBusGBps(comm.NumServers());
    if (proto == "ll" && cap > 0 && loadSec > 0)
    {
        const double busGBps = BusFactor(kind, n) * bytes / (loadSec / e.bwFactor) / 1e9;
        if (busGBps > cap)
        {
            e.bwFactor *= cap / busGBps;
        }
    }
    // A channel is one thread block: NCCL's per-channel bus bandwidth caps (the executor's
    // release) bound what the algorithm's channels move together, as llMaxBws does for LL.
    if (models && loadSec > 0 && (algo == "tree" || algo == "ring"))
    {
        const double capUs = ChannelCapUs(models->hardware, kind, algo, proto, bytes, n,
                                          comm.NumServers(), models->graphChannels);
        const double bwUs = loadSec / e.bwFactor * 1e6;
        if (capUs > bwUs)
        {
            e.bwFactor *= bwUs / capUs;
        }
    }
    // Per-step latency of each link class, with the wire latency of that class's routes on top
    // (or inside): a step inside a server waits the NVLink route's latency, not the network's.
    const bool inside = costs.hopIncludesWire;
    auto stepUs = [&](Time hop, double wireUs) {
        const double h = hop.GetNanoSeconds() / 1e3;
        return inside ? std::max(h, wireUs) : h + wireUs;
    };
    const double intraUs = stepUs(costs.stepLatency, L.maxWireIntraUs);
    const double interUs = stepUs(costs.stepLatencyInter, L.maxWireUs);
    const double baseUs = costs.baseLatency.GetNanoSeconds() / 1e3;
    // A ring whose connections between servers keep K > 1 chunks in flight: the data's path,
    // or items 0, K, 2K, ... of one connection waiting for each other's slot.
    double depthInter = L.depthInter;
    double slotSteps = 0;
    const uint32_t slots = algo == "ring" ? RingNetSlots(proto) : 1;
    if (slots > 1 && L.ringPathInter >= 0)
    {
        depthInter = L.ringPathInter;
        slotSteps = std::ceil(L.depth / slots);
    }
    double latencyUs = (L.depth - depthInter) * intraUs + depthInter * interUs;
    if (slotSteps > 0)
    {
        latencyUs = std::max(latencyUs, slotSteps * interUs + intraUs);
    }
    if (algo == "nvls" || algo == "nvlstree")
    {
        // Loops stream through the stages. Each loop's reduce waits its step latency on the
        // GPU's connection to the switch (NVLink stages go one step at a time); a tree
        // connection keeps NCCL_STEPS chunks in flight (NvlsExecutor), so a busy one pays its
        // network step latency once, in the fill. The last loop then fills the remaining
        // stages: reduced shard, multicast up and down.
        const std::vector<std::vector<uint32_t>> groups = comm.NvlsGroups();
        const double ppn = groups.front().size();
        e.loops = NvlsLoops(bytes, groups.size(), groups.front().size());
        const double loops = e.loops;
        const double perLoopNv = nvlinkSec / e.bwFactor * 1e6 / loops;
        const double perLoopNet = netSec / e.bwFactor * 1e6 / loops;
        const double cycle = std::max(perLoopNv + intraUs, perLoopNet);
        const double fill = perLoopNv * (1 + 2 / ppn) / (2 * (1 + 1 / ppn)) + perLoopNet;
        e.us = baseUs + loops * cycle + fill + latencyUs - intraUs;
        e.selectUs = e.us;
        return e;
    }
    double fill = 1.0;
    if (algo == "tree")
    {
        // Pipeline fill: each of `depth` steps moves one chunk. Most steps are NVLink chain
        // hops, several times faster than the busiest (NIC) link that loadSec measures; a
        // third of the busiest link's chunk time per step matches the executed trees on
        // 4 and 16 x dgx-h100 (doc/design.md).
        // LL streams its lines through the depth (StreamedTreeChunks).
        const double perTree = double(bytes) / channels;
        fill += L.depth /
                (proto == "ll" ? StreamedTreeChunks(perTree) : TreeChunks(perTree, m_chunkBytes)) /
                3.0;
    }
    else if (algo == "chain")
    {
        const double items = std::max(1.0, std::ceil(double(bytes) / channels / m_chunkBytes));
        fill += (n > 2 ? n - 2 : 0) / items;
    }
    const double bandwidthUs = loadSec / e.bwFactor * 1e6 * fill;
    e.us = baseUs + latencyUs + bandwidthUs;
    e.selectUs = e.us;
    if (models && (algo == "tree" || algo == "ring"))
    {
        const gpusim::NcclSelectionModel* selection = &models->selection;
        // The release's own latency constants along the same steps, and its channel caps.
        const int a = int(AlgoRow(algo));
        const int p = int(ProtoColumn(proto));
        const double selIntraUs = intraUs + selection->hopDeltaUs[int(NcclHop::Intra)][a][p];
        const double selInterUs = interUs + selection->hopDeltaUs[int(NcclHop::Inter)][a][p];
        double selLatencyUs = (L.depth - depthInter) * selIntraUs + depthInter * selInterUs;
        if (slotSteps > 0)
        {
            selLatencyUs = std::max(selLatencyUs, slotSteps * selInterUs + selIntraUs);
        }
        e.selectUs = baseUs + selection->baseDeltaUs[a][p] + selLatencyUs +
                     std::max(bandwidthUs, ChannelCapUs(*selection, kind, algo, proto, bytes,
                                                        n, comm.NumServers(),
                                                        models->graphChannels));
    }
    return e;
}

double
NcclWorld::SelectionBiasUs(CollKind kind, const std::string& algo, const std::string& proto,
                           const Communicator& comm) const
{
    // What NCCL's tuner adds for the latency a network plugin reports: on each network step
    // it counts (NCCL 2.26.2 src/graph/tuning.cc:300-340), twice for Simple ("the flush extra
    // latency"). The steps NCCL counts, not the executor's depth: ring AllReduce 2 (S - 1),
    // other rings S - 1, tree and NVLSTree AllReduce 2 log2 S, NVLS one.
    const double reported = m_efficiency > 0 ? 0.0 : Calibration().netSelectionUs;
    const uint32_t servers = comm.NumServers();
    if (reported <= 0 || servers <= 1)
    {
        return 0.0;
    }
    const double log2Servers = std::floor(std::log2(double(servers)));
    double steps = 0;
    if (algo == "ring")
    {
        steps = kind == CollKind::AllReduce ? 2.0 * (servers - 1) : servers - 1.0;
    }
    else if (algo == "tree" || algo == "nvlstree")
    {
        steps = 2.0 * log2Servers;
    }
    else if (algo == "nvls")
    {
        steps = 1;
    }
    return steps * reported * (proto == "simple" ? 2.0 : 1.0);
}

std::vector<std::string>
NcclWorld::CandidateAlgorithms(CollKind kind, const Communicator& comm) const
{
    if (kind == CollKind::Send || kind == CollKind::Recv)
    {
        return {"p2p"};
    }
    if (kind == CollKind::AllToAll)
    {
        return {"direct"};
    }
    if (kind == CollKind::Broadcast || kind == CollKind::Reduce)
    {
        return {"chain"};
    }
    if (kind != CollKind::AllReduce)
    {
        return {"ring"};
    }
    const uint32_t servers = comm.NumServers();
    // NVLS needs NVLink SHARP (the calibration says whether the NVSwitch has it) and the same
    // number (>= 2) of members on one NVSwitch in every server; NCCL runs it alone inside one
    // server and as NVLSTree across servers (NVLS alone across servers needs CollNet).
    const bool nvls = Calibration().nvls && comm.GetNRanks() > 1 && !comm.NvlsGroups().empty();
    if (m_algorithm != "auto")
    {
        if (m_algorithm != "ring" && m_algorithm != "tree" && m_algorithm != "nvls" &&
            m_algorithm != "nvlstree")
        {
            throw std::invalid_argument("unknown NCCL algorithm '" + m_algorithm +
                                        "' (auto, ring, tree, nvls, nvlstree)");
        }
        if ((m_algorithm == "nvls" || m_algorithm == "nvlstree") &&
            (!nvls || (m_algorithm == "nvls") != (servers == 1)))
        {
            throw std::runtime_error(
                "algorithm " + m_algorithm + " is not available on communicator " +
                comm.GetId() + ": " +
                (!Calibration().nvls ? "the cluster's NVSwitch has no NVLink SHARP"
                 : comm.NvlsGroups().empty()
                     ? "NVLS needs the same number (>= 2) of member GPUs on one NVSwitch per "
                       "server"
                 : servers == 1 ? "nvlstree needs several servers (use nvls)"
                                : "nvls runs inside one server (use nvlstree)"));
        }
        return {m_algorithm};
    }
    std::vector<std::string> algos = {"ring"};
    if (servers > 1)
    {
        algos.push_back("tree");
    }
    if (nvls)
    {
        algos.push_back(servers == 1 ? "nvls" : "nvlstree");
    }
    return algos;
}

uint32_t
NcclWorld::TreeChannels(uint32_t channels) const
{
    // NCCL duplicates its channels and runs the double binary tree's mirror on the copy: graph
    // channel c (one NIC, its chain inside the server) carries tree 0 and channel c +
    // nChannels tree 1 (NCCL 2.29.2 src/graph/connect.cc:69-72 copies the channels,
    // :147-163 sets t0 on channel0 and t1 on channel1 = channel0 + nChannels; :452 doubles
    // nChannels), and the tree graph has as many channels as the ring graph
    // (src/init.cc:1068-1069). So with TreesOnAllNics a mirrored pair per ring channel (per
    // NIC). Otherwise, and with forced Channels, the ring's channels are the trees
    // themselves, rounded up to pairs: half the NICs lead none.
    if (m_treesOnAllNics && m_channels == 0)
    {
        return 2 * channels;
    }
    return channels + channels % 2;
}

CollectivePlan
NcclWorld::Plan(CollKind kind, uint64_t bytes, const Communicator& comm) const
{
    CollectivePlan plan;
    plan.chunkBytes = m_chunkBytes;
    plan.pipelineDepth = m_pipelineDepth;
    Ptr<ClusterTopology> topo = GetTopology();
    const uint32_t servers = comm.NumServers();
    if (m_channels > 0)
    {
        plan.channels = m_channels;
    }
    else
    {
        // One ring per member GPU of a server when crossing servers (each leaves through its
        // GPU's NIC; fewer NICs are shared, as NCCL's channels share them); a server's GPUs
        // all reach the NVSwitch, so a single-server ring needs one channel in a flow model.
        uint32_t perServer = 1;
        if (servers > 1 && topo->GetNServers() > 0)
        {
            perServer = std::max<uint32_t>(1, comm.GetNRanks() / servers);
        }
        plan.channels = perServer;
    }
    const bool p2p =
        kind == CollKind::Send || kind == CollKind::Recv || kind == CollKind::AllToAll;
    if (p2p)
    {
        plan.channels = 1;
        plan.pxn = m_pxn;
    }
    const std::vector<std::string> algos = CandidateAlgorithms(kind, comm);
    std::vector<std::string> protos;
    if (m_protocol == "auto" && p2p)
    {
        // NCCL's tuner does not choose for point-to-point: each peer's operation runs LL when
        // its parts hold at most NCCL_P2P_LL_THRESHOLD, else Simple; never LL128
        // (src/enqueue.cc addP2pToPlan; model/nccl-p2p.h).
        const uint64_t perPeer = kind == CollKind::AllToAll
                                     ? bytes / std::max<uint32_t>(1, comm.GetNRanks())
                                     : bytes;
        protos = {gpusim::NcclSplitP2p(perPeer, false, comm.P2pComm()).ll ? "ll" : "simple"};
    }
    else if (m_protocol == "auto")
    {
        protos = {"simple", "ll128", "ll"};
    }
    else if (m_protocol == "simple" || m_protocol == "ll128" || m_protocol == "ll")
    {
        protos = {m_protocol};
    }
    else
    {
        throw std::invalid_argument("unknown NCCL protocol '" + m_protocol +
                                    "' (auto, simple, ll128, ll)");
    }
    // NCCL's channel caps and the tuner of the cluster's release (closed-form mode has
    // neither), on NCCL's graph channels where the calibration knows them, else one per GPU of
    // a server (the rings between servers; one server's flow model needs only one ring, NCCL
    // still runs a channel per GPU or more).
    const gpusim::NcclCalibration& cal = Calibration();
    ChannelModels models;
    models.hardware = gpusim::NcclSelectionFor("", cal.arch);
    models.selection = gpusim::NcclSelectionFor(cal.ncclVersion, cal.arch);
    models.graphChannels =
        cal.graphChannels > 0
            ? cal.graphChannels
            : std::max<uint32_t>(1, comm.GetNRanks() / std::max<uint32_t>(1, servers));
    const ChannelModels* sel = m_efficiency > 0 ? nullptr : &models;
    Estimate best;
    double bestSelectUs = std::numeric_limits<double>::infinity();
    for (const auto& a : algos)
    {
        LinkLoads loads; // the algorithm's, shared by its protocols
        bool haveLoads = false;
        const bool nvls = a == "nvls" || a == "nvlstree";
        uint32_t ch = a == "tree" || a == "ring" || a == "chain" ? plan.channels : 1;
        if (a == "tree")
        {
            ch = TreeChannels(plan.channels);
        }
        for (const auto& p : protos)
        {
            if (nvls && p != "simple" && protos.size() > 1)
            {
                continue; // NVLS and NVLSTree run the Simple protocol only
            }
            const Estimate e = EstimateCandidate(kind, a, nvls ? "simple" : p, bytes, comm, ch,
                                                 sel, haveLoads ? &loads : nullptr,
                                                 haveLoads ? nullptr : &loads);
            haveLoads = true;
            const double selectUs =
                e.selectUs + SelectionBiasUs(kind, a, nvls ? "simple" : p, comm);
            NS_LOG_LOGIC(a << "/" << p << " " << bytes << " B: " << e.us << " us (selected on "
                           << selectUs << ")");
            if (selectUs < bestSelectUs)
            {
                bestSelectUs = selectUs;
                best = e;
                plan.algo = a;
                plan.proto = nvls ? "simple" : p;
            }
        }
    }
    if (plan.algo == "tree")
    {
        plan.channels = TreeChannels(plan.channels);
    }
    FillCosts(plan.algo, plan.proto, plan);
    plan.bwFactor = best.bwFactor;
    plan.estimateUs = best.us;
    plan.selectionUs = bestSelectUs;
    if (plan.algo == "nvls" || plan.algo == "nvlstree")
    {
        plan.loops = best.loops;
        plan.channels = Calibration().nvlsChannels;
    }
    return plan;
}

} // namespace ns3
