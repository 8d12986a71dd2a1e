/*
 * NVLS and NVLSTree AllReduce shortcuts (NcclWorld Fidelity=collective with RingFlows, or auto;
 * doc/flow-backend.md).
 *
 * One rail for all (exact; "NVLS and NVLSTree by one rail"). Shard h of every loop moves only
 * over GPU h's NVLink and rail h. Where no link is on two rails' routes and every rail's
 * connections cross, hop by hop, links of the same speed and latency as rail 0's, one to one
 * (NvlsLinks: MemoEntry::railsAlike), the rails are copies of one system, so the executor runs
 * with the first GPU of each server as its only member (the loop still cut into a shard per
 * GPU of the server) and every GPU of a server completes when its first does: the chunk level
 * with an eighth of the flows.
 *
 * Trial loops (approximate; only where the rails are not alike, NvlsTrialLoops > 0 and not
 * auto; "NVLS and NVLSTree: edge flows do not fit; trial loops"), written for the executor
 * before it kept NCCL's 8 network chunks in flight per tree connection:
 *
 * The chunk-level NvlsExecutor (nccl-algorithms.cc) runs `loops` identical loops through FIFO
 * connections of one transfer in flight (PipelineDepth 1). Per loop l and server s:
 *   up(r)         GPU r -> switch, the loop's data; all loops queued at the join
 *   reduced(r)    switch -> head r, its shard, once every GPU of s delivered up(., l)
 *   treeUp(t,r)   head r -> the same head of its parent server in tree t (half the shard),
 *                 once r's shard is reduced and every child server's treeUp(t, .) arrived
 *   treeDown(t,r) the parent server's head -> r, once the parent holds the tree's result
 *   mcUp(r)       head r -> switch, once r holds both trees' results (one server: reduced)
 *   mcDown(r)     switch -> GPU r, the loop's result, once every head of s delivered mcUp
 * With D_X(l) the delivery of loop l on connection X, R_X(l) the instant its inputs are there
 * (a max over loop l's deliveries on X's predecessors) and d_X(l) its transfer time (step
 * latency + wire bytes at the rate it gets + route latency), the executor is the max-plus
 * recurrence
 *     D_X(l) = max(D_X(l-1), R_X(l)) + d_X(l),
 * and rank r is done at D_mcDown(r)(loops - 1), the heaviest path through the (connection,
 * loop) grid.
 *
 * One flow per connection carrying all loops (as rings do) cannot give d_X: every transfer
 * pays a step latency (14 us per tree hop, 3.4 us per NVLink stage on dgx-h100) about as long
 * as its bytes take, so a connection is idle half the time and the NIC or NVLink it shares with
 * 2-4 others is not shared as by backlogged flows (measured: edge flows with constant rates
 * and the recurrence above were 2-40 % slower than the chunk level). The loops, though, repeat:
 * once the pipeline is full each loop adds about one period P to every rank's completion. So
 * (attribute NvlsTrialLoops = K > 0) the executor runs min(K, loops) loops of the real loop
 * size chunk by chunk through the backend (every rate, overlap and step latency as in the
 * detailed run), P is the mean over ranks of D_r(b) - D_r(a) over b - a loops (a = 8, b = 12
 * loops before the trial's end), and rank r is done at
 *     D_r(loops - 1) = D_r(K - 1) + (loops - K) P.
 * Exact when loops <= K (the run is the chunk level's). Beyond, not exact: on several servers
 * the chunk-level pipeline is not periodic while the reduce stage (all loops queued at the
 * join) still shares the GPUs' NVLink with the multicast; loop to loop increments scatter by
 * +-25 % and lock to one period only after it finished (8 servers, 128 loops: 57.0 us mean
 * before, 58.6 us after), and the per-server phase at the end depends on that history.
 * Measured at 128 loops (1 GiB): worst rank 0.7 / 1.2 % on 16 / 8 servers
 * (test/nvls-flows-test.cc); collective time 2.0 / 1.5 / 4.2 / 3.3 % short on 64 / 512 / 1,024
 * / 2,048 servers. Hence off by default.
 */
#include "ns3/cluster-topology.h"
#include "ns3/flow-backend.h"
#include "ns3/nccl-algorithms.h"
#include "ns3/nccl-collective.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("NcclNvlsFlows");

namespace
{

/// The window the period is read from: from loop 8 (past the fill on up to 16 servers) to 12
/// loops before the trial's end (the drain).
constexpr uint32_t kWindowFrom = 8;
constexpr uint32_t kTailLoops = 12;

/// Executor flow key of a stage's transfers (NvlsExecutor::Pump): stage, tree and head rail.
uint64_t
NvlsKey(uint32_t stage, uint32_t tree, uint32_t head)
{
    return (uint64_t(stage) << 32) | (uint64_t(tree) << 31) | head;
}

/// NvlsExecutor's multicast stage (switch -> GPU, a loop's result).
constexpr uint64_t kMcDownStage = 5;

} // namespace

bool
Communicator::NvlsFlowsApply(const MemoEntry& m, const gpusim::Op& op) const
{
    // One rail for all (exact) wherever the rails are disjoint and alike; trial loops
    // (approximate) only where asked for and the rails are not.
    return (m.railsAlike || m_world->GetNvlsTrialLoops() > 0) && m_world->IsRingFlows() &&
           m_world->GetFlowBackend() && m_nranks >= 2 && op.bytes > 0 && !m.ringConflict &&
           (m.plan.algo == "nvls" || m.plan.algo == "nvlstree") && m.plan.pipelineDepth == 1 &&
           op.coll == gpusim::CollKind::AllReduce;
}

void
Communicator::NvlsLinks(MemoEntry& m)
{
    // Every connection of the executor sends one transfer per loop on the route of its flow
    // key: count them per directed link, for all rails (ringOwn) and for the first (railOwn).
    // The rails are alike when no link carries two rails' connections and the same
    // connection of every rail crosses, hop by hop, links of the same speed and latency that
    // correspond one to one: then every rail's transfers share their links exactly as the
    // first rail's do, and by symmetry run at the same instants.
    FlowBackend* net = m_world->GetFlowBackend();
    const std::vector<std::vector<uint32_t>> servers = NvlsGroups();
    const uint32_t S = servers.size();
    const uint32_t ppn = servers.front().size();
    std::vector<CollectiveTree> trees;
    if (S > 1)
    {
        trees = DoubleBinaryTree(S);
    }
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    // routes[h]: the routes of rail h's connections, in one order for every rail.
    std::vector<std::vector<std::vector<uint32_t>>> routes(ppn);
    auto add = [&](uint32_t h, uint32_t src, uint32_t dst, uint64_t key) {
        routes[h].push_back(net->GetRouteLinks(src, dst, key));
    };
    for (uint32_t h = 0; h < ppn; ++h)
    {
        for (uint32_t s = 0; s < S; ++s)
        {
            const uint32_t sw = topo->NvSwitchEndpoint(m_gpus[servers[s].front()]);
            const uint32_t g = m_gpus[servers[s][h]];
            add(h, g, sw, NvlsKey(0, 0, h));            // reduce up
            add(h, sw, g, NvlsKey(1, 0, h));            // reduced shard
            add(h, g, sw, NvlsKey(4, 0, h));            // multicast up
            add(h, sw, g, NvlsKey(kMcDownStage, 0, h)); // multicast down
            for (uint32_t t = 0; t < trees.size(); ++t)
            {
                const int32_t p = trees[t].parent[s];
                if (p >= 0)
                {
                    const uint32_t pg = m_gpus[servers[p][h]];
                    add(h, g, pg, NvlsKey(2, t, h));
                    add(h, pg, g, NvlsKey(3, t, h));
                }
            }
        }
    }
    std::map<uint32_t, uint64_t> own;
    std::map<uint32_t, uint64_t> first;
    std::map<uint32_t, uint32_t> railOf;
    bool alike = true;
    const auto& links = topo->Links();
    for (uint32_t h = 0; h < ppn; ++h)
    {
        std::map<uint32_t, uint32_t> to;   // first rail's link -> this rail's
        std::map<uint32_t, uint32_t> from; // and back
        for (size_t c = 0; c < routes[h].size(); ++c)
        {
            const auto& r = routes[h][c];
            const auto& r0 = routes[0][c];
            alike = alike && r.size() == r0.size();
            for (size_t i = 0; i < r.size(); ++i)
            {
                const uint32_t l = r[i];
                ++own[l];
                if (h == 0)
                {
                    ++first[l];
                }
                alike = alike && railOf.emplace(l, h).first->second == h;
                if (alike)
                {
                    const uint32_t l0 = r0[i];
                    alike = to.emplace(l0, l).first->second == l &&
                            from.emplace(l, l0).first->second == l0 &&
                            links[l].bitsPerSec == links[l0].bitsPerSec &&
                            links[l].latencySec == links[l0].latencySec;
                }
            }
        }
    }
    m.ringLinks.clear();
    m.ringOwn.clear();
    m.railOwn.clear();
    for (const auto& [l, count] : own)
    {
        m.ringLinks.push_back(l);
        m.ringOwn.push_back(count);
        auto it = first.find(l);
        m.railOwn.push_back(it == first.end() ? 0 : it->second);
    }
    m.railsAlike = alike;
}

void
Communicator::BeginNvlsFluid(Instance& inst, const MemoEntry& m, CollectivePath path,
                             uint32_t ownScale)
{
    // What both NVLS shortcuts record before their executor runs: the flows already on the
    // op's links (to tell later contention), the path, and the links held for the op.
    FlowBackend* net = m_world->GetFlowBackend();
    inst.snap.resize(m.ringLinks.size());
    for (size_t i = 0; i < m.ringLinks.size(); ++i)
    {
        inst.snap[i] = net->GetLinkFlowStarts(m.ringLinks[i]);
    }
    inst.mode = Mode::Fluid;
    inst.start = Simulator::Now();
    inst.record.path = path;
    inst.record.chunkReason = ChunkReason::None;
    inst.ownScale = ownScale;
    m_world->Reserve(m.ringLinks, Time::Max());
}

void
Communicator::StartNvlsRail(uint64_t seq, Instance& inst)
{
    MemoEntry& m = *inst.memo;
    // As for rings: busy or reserved links, or another collective open on a member GPU,
    // would share links with some rails and not others; run in detail instead.
    bool alone = m_world->LinksFree(m.ringLinks);
    for (uint32_t r = 0; alone && r < m_nranks; ++r)
    {
        alone = m_world->GetOpen(m_gpus[r]) == 1;
    }
    if (!alone)
    {
        StartDetailed(seq, inst, Mode::Detailed, ChunkReason::Busy);
        return;
    }
    const CollectivePlan& plan = m.plan;
    auto fn = std::make_unique<FluidNvls>();
    FluidNvls& f = *fn;
    f.oneRail = true;
    f.loops = std::max<uint32_t>(1, plan.loops);
    f.groups = NvlsGroups();
    f.pending = f.groups.size();
    inst.nvls = std::move(fn);
    m.span = Time(0);

    BeginNvlsFluid(inst, m, CollectivePath::OneRail, f.loops);
    ++m_world->MutableFidelityStats().oneRail;

    // The executor as MakeExecutor builds it, with the first GPU of every server as its only
    // member and the loop still cut into one shard per GPU of the server.
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    m_switches.clear();
    std::vector<std::vector<uint32_t>> firsts;
    std::vector<uint32_t> serverOf(m_nranks, 0);
    uint32_t execN = 0;
    for (uint32_t s = 0; s < f.groups.size(); ++s)
    {
        const std::vector<uint32_t>& g = f.groups[s];
        m_switches.push_back(topo->NvSwitchEndpoint(m_gpus[g.front()]));
        firsts.push_back({g.front()});
        serverOf[g.front()] = s;
        execN = std::max(execN, g.front() + 1);
    }
    std::vector<CollectiveTree> trees;
    if (f.groups.size() > 1)
    {
        trees = DoubleBinaryTree(f.groups.size());
    }
    // The executor names switch s m + s past its largest member m; the communicator, past
    // all its ranks.
    auto node = [this, execN](uint32_t x) { return x >= execN ? m_nranks + (x - execN) : x; };
    SendFn send = [this, plan, node](uint32_t from, uint32_t to, double bytes, uint64_t key,
                                     StepStart start, std::function<void()> delivered) {
        Send(plan, node(from), node(to), bytes, key, start, std::move(delivered));
    };
    LatencyFn latency = [this, plan, node](uint32_t from, uint32_t to) {
        return StepDelay(plan, Endpoint(node(from)), Endpoint(node(to)), false);
    };
    const uint32_t ppn = f.groups.front().size();
    const double loopBytes = static_cast<double>(inst.op->bytes) / f.loops;
    inst.exec = std::make_unique<NvlsExecutor>(std::move(firsts), std::move(trees), f.loops,
                                               loopBytes, plan.pipelineDepth, kNcclSteps, latency,
                                               send, ppn);
    inst.exec->onRankDone = [this, seq, serverOf](uint32_t first) {
        Instance& in = m_instances.at(seq);
        FluidNvls& fl = *in.nvls;
        MemoEntry& me = *in.memo;
        me.span = Max(me.span, Simulator::Now() - in.start);
        if (--fl.pending == 0)
        {
            // Every rail moved what the first did.
            fl.perLoop = in.exec->transfers * fl.groups.front().size();
        }
        const std::vector<uint32_t> members = fl.groups[serverOf[first]];
        for (uint32_t r : members)
        {
            FinishRank(seq, r);
        }
    };
    for (const auto& g : f.groups)
    {
        inst.exec->Join(g.front());
    }
    NS_LOG_INFO("comm " << m_id << " seq " << seq << ": " << plan.algo << ", one rail of "
                        << ppn << " chunk by chunk");
}

void
Communicator::StartNvlsFlows(uint64_t seq, Instance& inst)
{
    MemoEntry& m = *inst.memo;
    if (m.ringLinks.empty())
    {
        NvlsLinks(m);
    }
    if (m.railsAlike)
    {
        StartNvlsRail(seq, inst);
        return;
    }
    // As for rings: busy or reserved links, or another collective open on a member GPU,
    // would contend chunk by chunk with the trial loops; run in detail instead.
    bool alone = m_world->LinksFree(m.ringLinks);
    for (uint32_t r = 0; alone && r < m_nranks; ++r)
    {
        alone = m_world->GetOpen(m_gpus[r]) == 1;
    }
    if (!alone)
    {
        StartDetailed(seq, inst, Mode::Detailed, ChunkReason::Busy);
        return;
    }
    const CollectivePlan& plan = m.plan;
    auto fn = std::make_unique<FluidNvls>();
    FluidNvls& f = *fn;
    f.loops = std::max<uint32_t>(1, plan.loops);
    f.trial = std::min(f.loops, m_world->GetNvlsTrialLoops());
    f.a = kWindowFrom;
    f.b = f.trial > kWindowFrom + kTailLoops ? f.trial - kTailLoops : f.a;
    f.received.assign(m_nranks, 0);
    f.atA.assign(m_nranks, 0.0);
    f.atB.assign(m_nranks, 0.0);
    f.last.assign(m_nranks, 0.0);
    f.pending = m_nranks;
    inst.nvls = std::move(fn);
    m.span = Time(0);

    BeginNvlsFluid(inst, m, CollectivePath::TrialLoops, f.trial);
    ++m_world->MutableFidelityStats().fluid;

    // The executor as MakeExecutor builds it, with `trial` loops of the op's loop size; every
    // multicast delivery (a loop's result at a GPU) is also reported here.
    std::vector<std::vector<uint32_t>> groups = NvlsGroups();
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    m_switches.clear();
    for (const auto& g : groups)
    {
        m_switches.push_back(topo->NvSwitchEndpoint(m_gpus[g.front()]));
    }
    std::vector<CollectiveTree> trees;
    if (groups.size() > 1)
    {
        trees = DoubleBinaryTree(groups.size());
    }
    SendFn send = [this, plan, seq](uint32_t from, uint32_t to, double bytes, uint64_t key,
                                    StepStart start, std::function<void()> delivered) {
        if ((key >> 32) == kMcDownStage)
        {
            delivered = [this, seq, to, d = std::move(delivered)]() {
                d();
                NvlsLoopDelivered(seq, to);
            };
        }
        Send(plan, from, to, bytes, key, start, std::move(delivered));
    };
    const double loopBytes = static_cast<double>(inst.op->bytes) / f.loops;
    inst.exec = std::make_unique<NvlsExecutor>(std::move(groups), std::move(trees), f.trial,
                                               loopBytes, 1, kNcclSteps, NvlsLatency(plan), send);
    inst.exec->onRankDone = [](uint32_t) {}; // completion comes from NvlsLoopDelivered
    for (uint32_t r = 0; r < m_nranks; ++r)
    {
        inst.exec->Join(r);
    }
    NS_LOG_INFO("comm " << m_id << " seq " << seq << ": " << plan.algo << ", " << inst.nvls->trial
                        << " of " << inst.nvls->loops << " loops chunk by chunk");
}

void
Communicator::NvlsLoopDelivered(uint64_t seq, uint32_t r)
{
    Instance& inst = m_instances.at(seq);
    FluidNvls& f = *inst.nvls;
    const double t = static_cast<double>((Simulator::Now() - inst.start).GetNanoSeconds());
    const uint32_t loop = f.received[r]++;
    if (loop == f.a)
    {
        f.atA[r] = t;
    }
    if (loop == f.b)
    {
        f.atB[r] = t;
    }
    if (loop + 1 != f.trial)
    {
        return;
    }
    MemoEntry& m = *inst.memo;
    f.perLoop = inst.exec->transfers / f.trial; // all started once a rank has its last loop
    if (f.trial == f.loops)
    {
        // The trial ran every loop: this is the chunk level's completion.
        m.span = Max(m.span, Simulator::Now() - inst.start);
        FinishRank(seq, r);
    }
    f.last[r] = t;
    if (--f.pending != 0)
    {
        return;
    }
    if (f.trial < f.loops)
    {
        // The remaining loops at the steady state's period, one for all ranks (the servers
        // are coupled through the trees): the mean over ranks of their mean period on
        // loops a..b.
        double sum = 0;
        for (uint32_t q = 0; q < m_nranks; ++q)
        {
            sum += (f.atB[q] - f.atA[q]) / (f.b - f.a);
        }
        const double period = sum / m_nranks;
        const double more = f.loops - f.trial;
        const Time now = Simulator::Now();
        for (uint32_t q = 0; q < m_nranks; ++q)
        {
            const Time done = NanoSeconds(std::llround(f.last[q] + more * period));
            const Time at = Max(now, inst.start + done);
            m.span = Max(m.span, at - inst.start);
            Simulator::Schedule(at - now, &Communicator::FinishRank, this, seq, q);
        }
    }
    m_world->Reserve(m.ringLinks, inst.start + m.span);
}

} // namespace ns3
