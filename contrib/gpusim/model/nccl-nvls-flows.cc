/*
 * NVLS and NVLSTree AllReduce as edge flows (NcclWorld Fidelity=collective with
 * RingFlows=true; doc/flow-backend.md, "NVLS and NVLSTree as edge flows").
 *
 * The chunk-level NvlsExecutor (nccl-algorithms.cc) runs `loops` identical loops through FIFO
 * connections of one transfer in flight (PipelineDepth 1). Per loop l and server s:
 *   up(r)        GPU r -> switch, the loop's data; all loops queued at the join
 *   reduced(r)   switch -> head r, its shard, once every GPU of s delivered up(., l)
 *   treeUp(t,r)  head r -> the same head of its parent server in tree t (half the shard),
 *                once r's shard is reduced and every child server's treeUp(t, .) arrived
 *   treeDown(t,r) the parent server's head -> r, once the parent holds the tree's result
 *   mcUp(r)      head r -> switch, once r holds both trees' results (one server: reduced)
 *   mcDown(r)    switch -> GPU r, the loop's result, once every head of s delivered mcUp
 * Every transfer pays its step latency, its wire bytes at the connection's rate and the route
 * latency: d_X = s_X + b_X + lat_X. With D_X(l) the delivery of loop l on connection X and
 * R_X(l) the instant its inputs are there, the executor is exactly the max-plus recurrence
 *     D_X(l) = max(D_X(l-1), R_X(l)) + d_X,       D_X(-1) = 0,
 * R_X(l) being a max over the deliveries of loop l on X's predecessors (up: 0). A rank is done
 * at D_mcDown(r)(loops - 1): the heaviest path through the (connection, loop) grid. It is
 * evaluated directly, loop by loop, in topological order (servers leaves-first for treeUp,
 * root-first for treeDown): O(connections x loops) arithmetic, no events.
 *
 * The rates come from the backend: one flow per connection carrying all loops' wire bytes,
 * started together, so max-min sharing on common NVLink, NIC and fabric links is the
 * backend's; b_X = the flow's drain time / loops. This is exact when each connection keeps one
 * rate throughout. It is not exactly what the chunk level does where connections of unequal
 * load share a link (up and mcUp on a GPU's NVLink to the switch; a NIC carrying a tree's up
 * and down edges): there the edge flows hold a fluid share for the whole run, the chunk level
 * interleaves items; the steady-state throughput is the same, the pipeline's fill and drain
 * differ by a fraction of one item per stage (measured in test/nvls-flows-test.cc).
 */
#include "ns3/cluster-topology.h"
#include "ns3/flow-backend.h"
#include "ns3/nccl-algorithms.h"
#include "ns3/nccl-collective.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("NcclNvlsFlows");

namespace
{

/// Servers of a tree root first, every parent before its children.
std::vector<uint32_t>
TopDown(const CollectiveTree& tree)
{
    std::vector<uint32_t> order;
    for (uint32_t s = 0; s < tree.parent.size(); ++s)
    {
        if (tree.parent[s] < 0)
        {
            order.push_back(s);
        }
    }
    for (size_t i = 0; i < order.size(); ++i)
    {
        for (uint32_t k : tree.children[order[i]])
        {
            order.push_back(k);
        }
    }
    return order;
}

/// Executor flow key of a stage's transfers (NvlsExecutor::Pump): stage, tree and head rail.
uint64_t
NvlsKey(uint32_t stage, uint32_t tree, uint32_t head)
{
    return (uint64_t(stage) << 32) | (uint64_t(tree) << 31) | head;
}

} // namespace

bool
Communicator::NvlsFlowsApply(const MemoEntry& m, const gpusim::Op& op) const
{
    return m_world->IsRingFlows() && m_world->GetFlowBackend() && m_nranks >= 2 &&
           op.bytes > 0 && !m.ringConflict && (m.plan.algo == "nvls" || m.plan.algo == "nvlstree") &&
           m.plan.pipelineDepth == 1 && op.coll == gpusim::CollKind::AllReduce;
}

void
Communicator::StartNvlsFlows(uint64_t seq, Instance& inst)
{
    MemoEntry& m = *inst.memo;
    FlowBackend* net = m_world->GetFlowBackend();
    const CollectivePlan& plan = m.plan;
    auto fn = std::make_unique<FluidNvls>();
    FluidNvls& f = *fn;
    f.servers = NvlsGroups();
    NS_ABORT_MSG_IF(f.servers.empty(), "NVLS planned on a communicator that cannot run it");
    const uint32_t S = f.servers.size();
    const uint32_t ppn = f.servers.front().size();
    if (S > 1)
    {
        f.trees = DoubleBinaryTree(S);
    }
    f.loops = std::max<uint32_t>(1, plan.loops);
    const double loopBytes = static_cast<double>(inst.op->bytes) / f.loops;
    const double shard = loopBytes / ppn;
    const double part = shard / std::max<size_t>(1, f.trees.size());
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    std::vector<uint32_t> sw(S);
    for (uint32_t s = 0; s < S; ++s)
    {
        sw[s] = topo->NvSwitchEndpoint(m_gpus[f.servers[s].front()]);
    }
    auto leg = [&](uint32_t src, uint32_t dst, uint64_t key, double bytes) {
        FluidNvls::Leg g;
        g.src = src;
        g.dst = dst;
        g.key = key;
        g.wire = WireBytes(plan, src, dst, bytes);
        g.stepNs = static_cast<double>(StepDelay(plan, src, dst, false).GetNanoSeconds());
        g.latNs = std::round(m_world->Hop(src, dst).wireUs * 1e3);
        f.legs.push_back(g);
        return static_cast<uint32_t>(f.legs.size() - 1);
    };
    const uint32_t n = m_nranks;
    f.up.resize(n);
    f.reduced.resize(n);
    f.mcUp.resize(n);
    f.mcDown.resize(n);
    f.treeUp.assign(f.trees.size(), std::vector<int64_t>(n, -1));
    f.treeDown.assign(f.trees.size(), std::vector<int64_t>(n, -1));
    // Stages as NvlsExecutor numbers them: up 0, reduced 1, tree up 2, tree down 3, mc up 4,
    // mc down 5.
    for (uint32_t s = 0; s < S; ++s)
    {
        for (uint32_t h = 0; h < ppn; ++h)
        {
            const uint32_t r = f.servers[s][h];
            const uint32_t g = m_gpus[r];
            f.up[r] = leg(g, sw[s], NvlsKey(0, 0, h), loopBytes);
            f.reduced[r] = leg(sw[s], g, NvlsKey(1, 0, h), shard);
            f.mcUp[r] = leg(g, sw[s], NvlsKey(4, 0, h), shard);
            f.mcDown[r] = leg(sw[s], g, NvlsKey(5, 0, h), loopBytes);
            for (uint32_t t = 0; t < f.trees.size(); ++t)
            {
                const int32_t p = f.trees[t].parent[s];
                if (p >= 0)
                {
                    const uint32_t pg = m_gpus[f.servers[p][h]];
                    f.treeUp[t][r] = leg(g, pg, NvlsKey(2, t, h), part);
                    f.treeDown[t][r] = leg(pg, g, NvlsKey(3, t, h), part);
                }
            }
        }
    }
    if (m.ringLinks.empty())
    {
        std::map<uint32_t, uint64_t> own;
        for (const FluidNvls::Leg& g : f.legs)
        {
            for (uint32_t l : net->GetRouteLinks(g.src, g.dst, g.key))
            {
                ++own[l];
            }
        }
        for (const auto& [l, count] : own)
        {
            m.ringLinks.push_back(l);
            m.ringOwn.push_back(count);
        }
    }
    // As for rings: busy or reserved links, or another collective open on a member GPU,
    // would contend chunk by chunk with the edge flows; run in detail instead.
    bool alone = m_world->LinksFree(m.ringLinks);
    for (uint32_t r = 0; alone && r < n; ++r)
    {
        alone = m_world->GetOpen(m_gpus[r]) == 1;
    }
    if (!alone)
    {
        StartDetailed(seq, inst, Mode::Detailed);
        return;
    }
    inst.snap.resize(m.ringLinks.size());
    for (size_t i = 0; i < m.ringLinks.size(); ++i)
    {
        inst.snap[i] = net->GetLinkFlowStarts(m.ringLinks[i]);
    }
    inst.mode = Mode::Fluid;
    inst.start = Simulator::Now();
    ++m_world->MutableFidelityStats().fluid;
    m_world->Reserve(m.ringLinks, Time::Max());
    f.pending = f.legs.size();
    inst.nvls = std::move(fn);
    const FluidNvls& fl = *inst.nvls;
    for (uint32_t e = 0; e < fl.legs.size(); ++e)
    {
        const FluidNvls::Leg& g = fl.legs[e];
        m_world->StartTransfer(Time(0), g.src, g.dst, g.wire * fl.loops, g.key,
                               [this, seq, e]() { NvlsFlowDelivered(seq, e); });
    }
    NS_LOG_INFO("comm " << m_id << " seq " << seq << ": " << plan.algo << " as "
                        << fl.legs.size() << " edge flows, " << fl.loops << " loops");
}

namespace
{

/// Connections of one NVLS run by comm rank (see FluidNvls) and the per-item time of each.
struct NvlsGrid
{
    const std::vector<std::vector<uint32_t>>& servers;
    const std::vector<CollectiveTree>& trees;
    const std::vector<uint32_t>& up;
    const std::vector<uint32_t>& reduced;
    const std::vector<uint32_t>& mcUp;
    const std::vector<uint32_t>& mcDown;
    const std::vector<std::vector<int64_t>>& treeUp;
    const std::vector<std::vector<int64_t>>& treeDown;
    const std::vector<double>& d; //!< per leg: step latency + item at its rate + route latency
};

/// Per comm rank: delivery of the last loop's multicast after the start, by the max-plus
/// recurrence D_X(l) = max(D_X(l-1), R_X(l)) + d_X of the file comment, loop by loop. Each
/// array holds D_X of the loop just done (connections indexed by comm rank).
std::vector<double>
NvlsLastDeliveries(const NvlsGrid& g, uint32_t loops)
{
    const uint32_t n = g.up.size();
    const uint32_t T = g.trees.size();
    std::vector<double> up(n, 0.0), red(n, 0.0), mcUp(n, 0.0), mcDown(n, 0.0);
    std::vector<std::vector<double>> tUp(T, std::vector<double>(n, 0.0));
    std::vector<std::vector<double>> tDown(T, std::vector<double>(n, 0.0));
    std::vector<double> ready(n);      // head r: inputs of its next send (this tree)
    std::vector<double> allFinal(n);   // head r: holds the loop's result of every tree
    std::vector<std::vector<uint32_t>> order(T);
    for (uint32_t t = 0; t < T; ++t)
    {
        order[t] = TopDown(g.trees[t]);
    }
    const uint32_t ppn = g.servers.front().size();
    auto step = [&](double& D, double readyAt, uint32_t leg) {
        D = std::max(D, readyAt) + g.d[leg];
    };
    for (uint32_t l = 0; l < loops; ++l)
    {
        for (const auto& grp : g.servers)
        {
            double inSwitch = 0; // every GPU's loop data reduced in the switch
            for (uint32_t r : grp)
            {
                step(up[r], 0.0, g.up[r]);
                inSwitch = std::max(inSwitch, up[r]);
            }
            for (uint32_t r : grp)
            {
                step(red[r], inSwitch, g.reduced[r]);
                allFinal[r] = red[r];
            }
        }
        for (uint32_t t = 0; t < T; ++t)
        {
            const CollectiveTree& tree = g.trees[t];
            const std::vector<uint32_t>& topDown = order[t];
            for (uint32_t h = 0; h < ppn; ++h)
            {
                // Up, leaves first: a head sends once its shard and every child's part are in.
                for (auto it = topDown.rbegin(); it != topDown.rend(); ++it)
                {
                    const uint32_t r = g.servers[*it][h];
                    double at = red[r];
                    for (uint32_t k : tree.children[*it])
                    {
                        at = std::max(at, tUp[t][g.servers[k][h]]);
                    }
                    if (tree.parent[*it] >= 0)
                    {
                        step(tUp[t][r], at, g.treeUp[t][r]);
                    }
                    else
                    {
                        ready[r] = at; // the root holds the tree's result
                    }
                }
                // Down, root first: a head forwards the result to every child.
                for (uint32_t s : topDown)
                {
                    const uint32_t r = g.servers[s][h];
                    for (uint32_t k : tree.children[s])
                    {
                        const uint32_t kr = g.servers[k][h];
                        step(tDown[t][kr], ready[r], g.treeDown[t][kr]);
                        ready[kr] = tDown[t][kr];
                    }
                    allFinal[r] = std::max(allFinal[r], ready[r]);
                }
            }
        }
        for (const auto& grp : g.servers)
        {
            double inSwitch = 0; // every head's final shard in the switch
            for (uint32_t r : grp)
            {
                step(mcUp[r], allFinal[r], g.mcUp[r]);
                inSwitch = std::max(inSwitch, mcUp[r]);
            }
            for (uint32_t r : grp)
            {
                step(mcDown[r], inSwitch, g.mcDown[r]);
            }
        }
    }
    return mcDown;
}

} // namespace

void
Communicator::NvlsFlowDelivered(uint64_t seq, uint32_t e)
{
    Instance& inst = m_instances.at(seq);
    FluidNvls& f = *inst.nvls;
    f.legs[e].endNs = static_cast<double>((Simulator::Now() - inst.start).GetNanoSeconds());
    if (--f.pending != 0)
    {
        return;
    }
    // Per-item time of each connection: the flow drained all loops at its rate, then waited
    // out the route latency once; every item pays the step latency and the route latency.
    std::vector<double> d(f.legs.size());
    for (size_t i = 0; i < f.legs.size(); ++i)
    {
        const FluidNvls::Leg& g = f.legs[i];
        d[i] = g.stepNs + std::max(0.0, g.endNs - g.latNs) / f.loops + g.latNs;
    }
    const NvlsGrid grid{f.servers, f.trees,  f.up,      f.reduced, f.mcUp,
                        f.mcDown,  f.treeUp, f.treeDown, d};
    const std::vector<double> doneNs = NvlsLastDeliveries(grid, f.loops);
    MemoEntry& m = *inst.memo;
    m.span = Time(0);
    const Time now = Simulator::Now();
    for (uint32_t r = 0; r < m_nranks; ++r)
    {
        const Time at = Max(now, inst.start + NanoSeconds(std::llround(doneNs[r])));
        m.span = Max(m.span, at - inst.start);
        Simulator::Schedule(at - now, &Communicator::FinishRank, this, seq, r);
    }
    m_world->Reserve(m.ringLinks, inst.start + m.span);
}

} // namespace ns3
