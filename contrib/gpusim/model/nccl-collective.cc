#include "ns3/nccl-collective.h"

#include "ns3/nccl-algorithms.h"
#include "ns3/nccl-p2p.h"

#include "ns3/flow-backend.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("NcclCollective");
NS_OBJECT_ENSURE_REGISTERED(Communicator);
NS_OBJECT_ENSURE_REGISTERED(NcclWorld);
NS_OBJECT_ENSURE_REGISTERED(NcclCollective);

using gpusim::CollKind;
using gpusim::Op;

namespace
{
constexpr uint32_t kNoGpu = std::numeric_limits<uint32_t>::max();

bool
IsP2p(CollKind k)
{
    return k == CollKind::Send || k == CollKind::Recv;
}

} // namespace

Time
CollectiveRecord::FirstJoin() const
{
    return *std::min_element(rankJoin.begin(), rankJoin.end());
}

Time
CollectiveRecord::LastJoin() const
{
    return *std::max_element(rankJoin.begin(), rankJoin.end());
}

Time
CollectiveRecord::End() const
{
    return *std::max_element(rankDone.begin(), rankDone.end());
}

// ------------------------------------------------------------------ Communicator

TypeId
Communicator::GetTypeId()
{
    static TypeId tid = TypeId("ns3::Communicator")
                            .SetParent<Object>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<Communicator>();
    return tid;
}

Communicator::Communicator() = default;
Communicator::~Communicator() = default;

void
Communicator::DoDispose()
{
    m_instances.clear();
    m_spareInstances.clear();
    m_memo.clear();
    m_sends.clear();
    m_recvs.clear();
    m_world = nullptr;
    Object::DoDispose();
}

void
Communicator::Setup(NcclWorld* world, const std::string& id, uint32_t nranks)
{
    m_world = world;
    m_id = id;
    m_nranks = nranks;
    m_gpus.assign(nranks, kNoGpu);
}

const std::string&
Communicator::GetId() const
{
    return m_id;
}

uint32_t
Communicator::GetNRanks() const
{
    return m_nranks;
}

void
Communicator::SetMember(uint32_t commRank, uint32_t gpu)
{
    NS_ABORT_MSG_IF(commRank >= m_nranks, "comm rank out of range");
    m_gpus[commRank] = gpu;
}

bool
Communicator::IsComplete() const
{
    return std::find(m_gpus.begin(), m_gpus.end(), kNoGpu) == m_gpus.end();
}

uint32_t
Communicator::GpuOf(uint32_t commRank) const
{
    return m_gpus[commRank];
}

const std::vector<uint32_t>&
Communicator::Gpus() const
{
    return m_gpus;
}

uint32_t
Communicator::Endpoint(uint32_t node) const
{
    return node < m_nranks ? m_gpus[node] : m_switches.at(node - m_nranks);
}

void
Communicator::Send(const CollectivePlan& plan,
                   uint32_t fromNode,
                   uint32_t toNode,
                   double payloadBytes,
                   uint64_t flowKey,
                   StepStart start,
                   std::function<void()> delivered)
{
    const uint32_t src = Endpoint(fromNode);
    const uint32_t dst = Endpoint(toNode);
    const bool pipelined = start != StepStart::Fresh;
    const bool streamed = start == StepStart::Streamed;
    const uint32_t proxy = plan.pxn ? m_world->GetTopology()->RailPeer(src, dst) : src;
    if (proxy == src)
    {
        const Time delay = StepDelay(plan, src, dst, pipelined);
        if (const uint32_t steps = P2pCopyOutSteps(plan, src, dst, payloadBytes); steps > 0)
        {
            // The receiving warps copy the last step out after it arrived, at the pace the
            // sending warps put the steps in (as many warps each, sendrecv.h): one step's
            // share of the transfer's time after its last byte.
            const Time flowStart = Simulator::Now() + delay;
            delivered = [flowStart, steps, fn = std::move(delivered)]() {
                const Time copyOut = TimeStep((Simulator::Now() - flowStart).GetTimeStep() / steps);
                if (copyOut.IsStrictlyPositive())
                {
                    Simulator::Schedule(copyOut, fn);
                }
                else
                {
                    fn();
                }
            };
        }
        m_world->StartTransfer(delay, src, dst, WireBytes(plan, src, dst, payloadBytes), flowKey,
                               streamed, std::move(delivered));
        return;
    }
    // PXN: over NVLink to the GPU on the peer's rail, then out of its NIC. NCCL pipelines the
    // relay in chunks of 128 KiB (NCCL_P2P_NET_CHUNKSIZE), so both legs carry the bytes at
    // once, each on its own links; the transfer is in when both are.
    auto legs = std::make_shared<std::pair<int, std::function<void()>>>(2, std::move(delivered));
    auto legDone = [legs]() {
        if (--legs->first == 0)
        {
            legs->second();
        }
    };
    m_world->StartTransfer(StepDelay(plan, src, proxy, pipelined), src, proxy,
                           WireBytes(plan, src, proxy, payloadBytes), flowKey, streamed, legDone);
    m_world->StartTransfer(StepDelay(plan, proxy, dst, pipelined), proxy, dst,
                           WireBytes(plan, proxy, dst, payloadBytes), flowKey, streamed, legDone);
}

uint32_t
Communicator::P2pCopyOutSteps(const CollectivePlan& plan, uint32_t src, uint32_t dst,
                              double payloadBytes)
{
    if ((plan.algo != "p2p" && plan.algo != "direct") || plan.oneCopy || !m_world->P2pCopyOut() ||
        ClusterTopology::IsSwitchEndpoint(src) || ClusterTopology::IsSwitchEndpoint(dst))
    {
        return 0;
    }
    const NcclWorld::HopInfo& hop = m_world->Hop(src, dst);
    if (hop.inter)
    {
        // Through the NIC the wire sets the pace; the receiving warps empty a step long before
        // the next one lands, so their copy adds no step of its own.
        return 0;
    }
    const gpusim::NcclP2pSplit split = gpusim::NcclSplitP2p(
        static_cast<uint64_t>(std::llround(payloadBytes)), false, P2pComm());
    return split.ll ? 0 : split.chunksPerPart;
}

const gpusim::NcclP2pComm&
Communicator::P2pComm() const
{
    if (m_p2pComm.nRanks == 0)
    {
        m_p2pComm.nRanks = m_nranks;
        m_p2pComm.nNodes = NumServers();
        m_p2pComm.p2pChannels = m_world->Calibration().p2pChannels;
        m_p2pComm.netGBps = m_world->NetGBps(m_gpus[0]);
    }
    return m_p2pComm;
}

uint64_t
Communicator::WireBytes(const CollectivePlan& plan, uint32_t src, uint32_t dst,
                        double payloadBytes) const
{
    const NcclWorld::HopInfo& hop = m_world->Hop(src, dst);
    const double eff = hop.nvls    ? plan.nvlsEfficiency
                       : hop.inter ? plan.netEfficiency
                                   : plan.nvlinkEfficiency;
    return static_cast<uint64_t>(std::ceil(payloadBytes / (plan.bwFactor * eff)));
}

Time
Communicator::StepDelay(const CollectivePlan& plan, uint32_t src, uint32_t dst,
                        bool pipelined) const
{
    if (pipelined)
    {
        return Time(0); // no step latency, and none of it to take the wire out of
    }
    const NcclWorld::HopInfo& hop = m_world->Hop(src, dst);
    Time step = hop.inter ? plan.stepLatencyInter : plan.stepLatency;
    if (plan.hopIncludesWire)
    {
        // The step latency is measured end to end: the route's wire latency is part of it.
        step = Max(Time(0), step - NanoSeconds(std::llround(hop.wireUs * 1e3)));
    }
    return step;
}

LatencyFn
Communicator::NvlsLatency(const CollectivePlan& plan) const
{
    return [this, plan](uint32_t from, uint32_t to) {
        return StepDelay(plan, Endpoint(from), Endpoint(to), false);
    };
}

RingShape
MakeRingShape(CollKind kind, uint64_t bytes, uint32_t n, const CollectivePlan& plan)
{
    // Each step moves 1/n of a loop's data per channel.
    RingShape r;
    r.steps = kind == CollKind::AllReduce ? 2 * (n - 1) : n - 1;
    const double perChannel = static_cast<double>(bytes) / plan.channels;
    r.loops = static_cast<uint32_t>(
        std::max(1.0, std::ceil(perChannel / (double(n) * plan.chunkBytes))));
    r.itemBytes = perChannel / (double(n) * r.loops);
    return r;
}

void
Communicator::Post(uint32_t commRank, const Op* op, std::function<void()> done,
                   uint32_t peerShift)
{
    if (IsP2p(op->coll))
    {
        if (op->peer < 0 || static_cast<uint32_t>(op->peer) >= m_nranks)
        {
            throw std::runtime_error("communicator " + m_id + ": " + gpusim::ToString(op->coll) +
                                     " from comm rank " + std::to_string(commRank) +
                                     " names peer " + std::to_string(op->peer) + " outside 0.." +
                                     std::to_string(m_nranks - 1));
        }
        const uint32_t peer = (static_cast<uint32_t>(op->peer) + peerShift) % m_nranks;
        if (op->coll == CollKind::Send)
        {
            m_sends[{commRank, peer}].push_back({op, Simulator::Now(), std::move(done)});
            MatchP2p(commRank, peer);
        }
        else
        {
            m_recvs[{peer, commRank}].push_back({op, Simulator::Now(), std::move(done)});
            MatchP2p(peer, commRank);
        }
        return;
    }

    auto it = m_instances.find(op->seq);
    if (it == m_instances.end())
    {
        std::map<uint64_t, Instance>::node_type node;
        Instance fresh;
        if (!m_spareInstances.empty())
        {
            node = std::move(m_spareInstances.back());
            m_spareInstances.pop_back();
            node.key() = op->seq;
        }
        Instance& inst = node ? node.mapped() : fresh;
        CollectiveRecord& rec = inst.record;
        rec.comm = m_id;
        rec.seq = op->seq;
        rec.kind = op->coll;
        rec.bytes = op->bytes;
        rec.dtype = op->dtype;
        rec.nranks = m_nranks;
        rec.gpus = m_gpus;
        rec.rankJoin.assign(m_nranks, Time(-1));
        rec.rankDone.assign(m_nranks, Time(-1));
        inst.doneCbs.resize(m_nranks);

        const uint64_t seq = op->seq;
        if (m_world->IsCollectiveFidelity())
        {
            // The executor waits for the first executor join, where Decide() picks the mode.
            const bool oneCopy = (op->flags & gpusim::kCollOneCopy) != 0;
            const MemoKey key{static_cast<int>(op->coll), op->bytes, static_cast<int>(op->dtype),
                              op->root, oneCopy};
            auto [mit, fresh] = m_memo.try_emplace(key);
            if (fresh)
            {
                mit->second.plan = PlanFor(op->coll, op->bytes);
                mit->second.plan.oneCopy = oneCopy;
            }
            inst.memo = &mit->second;
            inst.op = op;
            inst.mode = Mode::Undecided;
            rec.plan = mit->second.plan;
        }
        else
        {
            rec.path = CollectivePath::Chunk;
            rec.chunkReason = ChunkReason::Forced;
            if (m_world->IsAutoFidelity())
            {
                // Fidelity=auto on another backend: no shortcut applies.
                rec.chunkReason = ChunkReason::Backend;
                ++m_world->MutableFidelityStats().chunk[static_cast<size_t>(rec.chunkReason)];
            }
            rec.plan = PlanFor(op->coll, op->bytes);
            // An AllToAll among ranks of one process: NCCL's direct mode, one copy per peer.
            rec.plan.oneCopy = (op->flags & gpusim::kCollOneCopy) != 0;
            inst.exec = MakeExecutor(*op, rec.plan);
            inst.exec->onRankDone = [this, seq](uint32_t r) { FinishRank(seq, r); };
        }
        it = node ? m_instances.insert(std::move(node)).position
                  : m_instances.emplace(op->seq, std::move(fresh)).first;
    }

    Instance& inst = it->second;
    CollectiveRecord& rec = inst.record;
    if (rec.kind != op->coll || rec.bytes != op->bytes)
    {
        throw std::runtime_error(
            "collective mismatch on communicator " + m_id + " seq " + std::to_string(op->seq) +
            ": comm rank " + std::to_string(commRank) + " calls " + gpusim::ToString(op->coll) +
            " of " + std::to_string(op->bytes) + " bytes but another rank called " +
            gpusim::ToString(rec.kind) + " of " + std::to_string(rec.bytes) + " bytes");
    }
    if (rec.rankJoin[commRank] >= Time(0))
    {
        throw std::runtime_error("communicator " + m_id + ": comm rank " +
                                 std::to_string(commRank) + " launched seq " +
                                 std::to_string(op->seq) + " twice");
    }
    rec.rankJoin[commRank] = Simulator::Now();
    inst.doneCbs[commRank] = std::move(done);
    if (inst.mode != Mode::Chunk)
    {
        m_world->CountOpen(m_gpus[commRank], +1);
    }
    ++inst.joined;
    NS_LOG_INFO("comm " << m_id << " seq " << op->seq << " " << gpusim::ToString(op->coll)
                        << ": rank " << commRank << " joined (" << inst.joined << "/" << m_nranks
                        << ")");
    if (inst.mode != Mode::Chunk)
    {
        const uint64_t seq = op->seq;
        Simulator::Schedule(rec.plan.baseLatency,
                            [this, seq, commRank]() { ExecJoin(seq, commRank); });
        return;
    }
    CollectiveExecutor* exec = inst.exec.get();
    if (rec.plan.baseLatency.IsStrictlyPositive())
    {
        Simulator::Schedule(rec.plan.baseLatency, [exec, commRank]() { exec->Join(commRank); });
    }
    else
    {
        exec->Join(commRank);
    }
}

std::unique_ptr<CollectiveExecutor>
Communicator::MakeExecutor(const Op& op, const CollectivePlan& plan, SentCounts* sent)
{
    SendFn send = [this, plan, sent](uint32_t from, uint32_t to, double bytes, uint64_t key,
                                     StepStart start, std::function<void()> delivered) {
        if (sent && bytes > 0)
        {
            // Both legs of a PXN relay (Send), so the op's links are all known.
            const uint32_t src = Endpoint(from);
            const uint32_t dst = Endpoint(to);
            const uint32_t proxy = plan.pxn ? m_world->GetTopology()->RailPeer(src, dst) : src;
            if (proxy != src)
            {
                ++(*sent)[{src, proxy, key}];
            }
            ++(*sent)[{proxy, dst, key}];
        }
        Send(plan, from, to, bytes, key, start, std::move(delivered));
    };
    const uint32_t n = m_nranks;
    const uint32_t C = plan.channels;
    const double S = static_cast<double>(op.bytes);
    if (n == 1)
    {
        return std::make_unique<DirectExecutor>(1, 0.0, send);
    }
    if (plan.algo == "nvls" || plan.algo == "nvlstree")
    {
        // NVLS inside each server through its NVSwitch, trees between servers for NVLSTree.
        std::vector<std::vector<uint32_t>> groups = NvlsGroups();
        NS_ABORT_MSG_IF(groups.empty(), "NVLS planned on a communicator that cannot run it");
        m_switches.clear();
        Ptr<ClusterTopology> topo = m_world->GetTopology();
        for (const auto& g : groups)
        {
            m_switches.push_back(topo->NvSwitchEndpoint(m_gpus[g.front()]));
        }
        std::vector<CollectiveTree> trees;
        if (groups.size() > 1)
        {
            trees = DoubleBinaryTree(groups.size());
        }
        return std::make_unique<NvlsExecutor>(std::move(groups), std::move(trees), plan.loops,
                                              S / plan.loops, plan.pipelineDepth, kNcclSteps,
                                              NvlsLatency(plan), send);
    }
    if (plan.algo == "tree")
    {
        std::vector<CollectiveTree> trees = Trees(C);
        const double perTree = S / C;
        // LL forwards each 8-byte line as its flag arrives; LL128's threads forward a pass of
        // 120 x 8 bytes each (NCCL_LL128_ELEMS_PER_THREAD, ~560 KiB of payload per channel), as
        // coarse as the Simple chunks TreeChunks already pipelines.
        const bool streamed = plan.proto == "ll";
        const uint32_t chunks =
            streamed ? StreamedTreeChunks(perTree) : TreeChunks(perTree, plan.chunkBytes);
        // Tree connections between servers are NCCL's proxy's too: TreeNetSlots chunks in
        // flight (kNcclSteps, as NCCL). The tuner's tree estimate already charges the step
        // latency once along the depth, not per chunk.
        ConnFn conn;
        if (m_world->TreeNetSlots() > 1)
        {
            conn = [this, plan](uint32_t from, uint32_t to) {
                const uint32_t src = m_gpus[from];
                const uint32_t dst = m_gpus[to];
                const NcclWorld::HopInfo& hop = m_world->Hop(src, dst);
                RingConn k;
                k.slots = hop.inter ? m_world->TreeNetSlots() : 1;
                k.step = StepDelay(plan, src, dst, false);
                k.wire = NanoSeconds(std::llround(hop.wireUs * 1e3));
                return k;
            };
        }
        return std::make_unique<TreeExecutor>(std::move(trees), chunks, perTree / chunks,
                                              plan.pipelineDepth, streamed, send, conn);
    }
    if (op.coll == CollKind::AllToAll)
    {
        return std::make_unique<DirectExecutor>(n, S / n, send);
    }
    if (op.coll == CollKind::Broadcast || op.coll == CollKind::Reduce)
    {
        // Chain through the ring order, rotated so the root is first (broadcast) or last
        // (reduce).
        std::vector<std::vector<uint32_t>> orders;
        for (uint32_t c = 0; c < C; ++c)
        {
            std::vector<uint32_t> ring = RingOrder(c);
            auto rootPos = std::find(ring.begin(), ring.end(), static_cast<uint32_t>(op.root));
            std::rotate(ring.begin(), rootPos, ring.end());
            if (op.coll == CollKind::Reduce)
            {
                std::rotate(ring.begin(), ring.begin() + 1, ring.end());
            }
            orders.push_back(std::move(ring));
        }
        const double perChannel = S / C;
        const uint32_t items =
            static_cast<uint32_t>(std::max(1.0, std::ceil(perChannel / plan.chunkBytes)));
        return std::make_unique<PipelineExecutor>(std::move(orders), true, items,
                                                  perChannel / items, plan.pipelineDepth, items,
                                                  send);
    }
    // Ring: AllReduce = reduce-scatter + all-gather (2(n-1) steps); AllGather and
    // ReduceScatter take n-1 steps. Each step moves 1/n of a loop's data per channel.
    const RingShape shape = MakeRingShape(op.coll, op.bytes, n, plan);
    std::vector<std::vector<uint32_t>> orders;
    for (uint32_t c = 0; c < C; ++c)
    {
        orders.push_back(RingOrder(c));
    }
    return std::make_unique<PipelineExecutor>(std::move(orders), false,
                                              shape.loops * shape.steps, shape.itemBytes,
                                              plan.pipelineDepth, shape.steps, send,
                                              RingConns(plan));
}

std::vector<std::vector<RingConn>>
Communicator::RingConns(const CollectivePlan& plan) const
{
    // A connection between servers is NCCL's proxy's: NCCL_STEPS chunks in flight
    // (kNcclSteps) where RingNetSlots says so. Inside a server the GPU's warps post their own
    // steps (prims_simple.h: waitPeer, copy/reduce, postPeer), one at a time, as NVLS's NVLink
    // stages. With one slot everywhere the executor needs none of this.
    const uint32_t slots = m_world->RingNetSlots(plan.proto);
    if (slots == 1)
    {
        return {};
    }
    std::vector<std::vector<RingConn>> conns(plan.channels);
    const uint32_t n = m_nranks;
    for (uint32_t c = 0; c < plan.channels; ++c)
    {
        const std::vector<uint32_t> ring = RingOrder(c);
        conns[c].resize(n);
        for (uint32_t p = 0; p < n; ++p)
        {
            const uint32_t src = m_gpus[ring[p]];
            const uint32_t dst = m_gpus[ring[(p + 1) % n]];
            const NcclWorld::HopInfo& hop = m_world->Hop(src, dst);
            RingConn& k = conns[c][p];
            k.slots = hop.inter ? slots : 1;
            k.step = StepDelay(plan, src, dst, false);
            k.wire = NanoSeconds(std::llround(hop.wireUs * 1e3));
        }
    }
    return conns;
}

void
Communicator::FinishRank(uint64_t seq, uint32_t commRank)
{
    Instance& inst = m_instances.at(seq);
    inst.record.rankDone[commRank] = Simulator::Now();
    ++inst.done;
    if (inst.mode != Mode::Chunk)
    {
        m_world->CountOpen(m_gpus[commRank], -1);
    }
    auto cb = std::move(inst.doneCbs[commRank]);
    if (cb)
    {
        Simulator::ScheduleNow(cb);
    }
    if (inst.done == m_nranks)
    {
        if (inst.mode == Mode::Chunk)
        {
            inst.record.transfers = inst.exec->transfers;
        }
        else
        {
            FinishCollectiveLevel(inst);
        }
        m_world->NotifyCompleted(inst.record);
        // Free the executor after the current callback chain has unwound.
        Simulator::ScheduleNow([this, seq]() { RecycleInstance(seq); });
    }
}

void
Communicator::RecycleInstance(uint64_t seq)
{
    auto it = m_instances.find(seq);
    if (it == m_instances.end())
    {
        return;
    }
    constexpr size_t kMaxSpare = 4; // instances of one communicator overlap little
    if (m_spareInstances.size() >= kMaxSpare)
    {
        m_instances.erase(it);
        return;
    }
    auto node = m_instances.extract(it);
    // A default instance that keeps only the emptied per-rank buffers (their capacity): the
    // next Post fills it exactly as a new one.
    Instance reset;
    reset.record.gpus.swap(node.mapped().record.gpus);
    reset.record.rankJoin.swap(node.mapped().record.rankJoin);
    reset.record.rankDone.swap(node.mapped().record.rankDone);
    reset.doneCbs.swap(node.mapped().doneCbs);
    reset.execJoin.swap(node.mapped().execJoin);
    reset.snap.swap(node.mapped().snap);
    reset.record.gpus.clear();
    reset.record.rankJoin.clear();
    reset.record.rankDone.clear();
    reset.doneCbs.clear();
    reset.execJoin.clear();
    reset.snap.clear();
    node.mapped() = std::move(reset);
    m_spareInstances.push_back(std::move(node));
}

const CollectivePlan&
Communicator::PlanFor(CollKind kind, uint64_t bytes)
{
    auto [it, fresh] = m_plans.try_emplace({static_cast<int>(kind), bytes});
    if (fresh)
    {
        it->second = m_world->Plan(kind, bytes, *this);
    }
    return it->second;
}

uint64_t
Communicator::P2pFlowKey(uint32_t src, uint32_t dst)
{
    return src * 7919 + dst;
}

void
Communicator::MatchP2p(uint32_t src, uint32_t dst)
{
    auto& sends = m_sends[{src, dst}];
    auto& recvs = m_recvs[{src, dst}];
    while (!sends.empty() && !recvs.empty())
    {
        P2pPost s = std::move(sends.front());
        P2pPost r = std::move(recvs.front());
        sends.pop_front();
        recvs.pop_front();
        if (s.op->bytes != r.op->bytes)
        {
            throw std::runtime_error("communicator " + m_id + ": send of " +
                                     std::to_string(s.op->bytes) + " bytes from comm rank " +
                                     std::to_string(src) + " matched a recv of " +
                                     std::to_string(r.op->bytes) + " bytes on comm rank " +
                                     std::to_string(dst));
        }
        CollectivePlan plan = PlanFor(CollKind::Send, s.op->bytes);
        plan.oneCopy = ((s.op->flags | r.op->flags) & gpusim::kCollOneCopy) != 0;
        ++m_p2pTransfers;
        auto sDone = std::move(s.done);
        auto rDone = std::move(r.done);
        Send(plan, src, dst, static_cast<double>(s.op->bytes), P2pFlowKey(src, dst),
             StepStart::Fresh,
             [sDone, rDone]() {
                 sDone();
                 rDone();
             });
    }
}

bool
Communicator::HasPending() const
{
    if (!m_instances.empty())
    {
        return true;
    }
    for (const auto& [k, q] : m_sends)
    {
        if (!q.empty())
        {
            return true;
        }
    }
    for (const auto& [k, q] : m_recvs)
    {
        if (!q.empty())
        {
            return true;
        }
    }
    return false;
}

std::string
Communicator::DescribePending() const
{
    std::ostringstream os;
    for (const auto& [seq, inst] : m_instances)
    {
        const auto& rec = inst.record;
        os << "  communicator " << m_id << " seq " << seq << " " << gpusim::ToString(rec.kind)
           << " (" << rec.bytes << " bytes): ";
        std::vector<uint32_t> missing, unfinished;
        for (uint32_t r = 0; r < m_nranks; ++r)
        {
            if (rec.rankJoin[r] < Time(0))
            {
                missing.push_back(r);
            }
            else if (rec.rankDone[r] < Time(0))
            {
                unfinished.push_back(r);
            }
        }
        auto list = [this](const std::vector<uint32_t>& v) {
            std::ostringstream l;
            for (size_t i = 0; i < v.size(); ++i)
            {
                l << (i ? ", " : "") << v[i] << " (GPU " << m_gpus[v[i]] << ")";
            }
            return l.str();
        };
        if (!missing.empty())
        {
            os << "comm ranks never joined: " << list(missing) << "; ";
        }
        if (!unfinished.empty())
        {
            os << "joined but unfinished: " << list(unfinished);
        }
        os << "\n";
    }
    for (const auto& [k, q] : m_sends)
    {
        if (!q.empty())
        {
            os << "  communicator " << m_id << ": " << q.size() << " send(s) from comm rank "
               << k.first << " to " << k.second << " with no matching recv\n";
        }
    }
    for (const auto& [k, q] : m_recvs)
    {
        if (!q.empty())
        {
            os << "  communicator " << m_id << ": " << q.size() << " recv(s) on comm rank "
               << k.second << " from " << k.first << " with no matching send\n";
        }
    }
    return os.str();
}

// ------------------------------------------------------------------ NcclWorld

TypeId
NcclWorld::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::NcclWorld")
            .SetParent<Object>()
            .SetGroupName("Gpusim")
            .AddConstructor<NcclWorld>()
            .AddAttribute("Algorithm",
                          "Collective algorithm: auto, ring, tree, nvls or nvlstree (tree, nvls "
                          "and nvlstree apply to AllReduce; nvls needs one server, nvlstree "
                          "several, both an NVSwitch with NVLink SHARP)",
                          StringValue("auto"),
                          MakeStringAccessor(&NcclWorld::m_algorithm),
                          MakeStringChecker())
            .AddAttribute("Protocol",
                          "NCCL protocol: auto, simple, ll128 or ll",
                          StringValue("auto"),
                          MakeStringAccessor(&NcclWorld::m_protocol),
                          MakeStringChecker())
            .AddAttribute("Efficiency",
                          "If > 0, replaces the protocol bandwidth factors and the link "
                          "efficiencies of the calibration and sets protocol latencies to zero "
                          "(1 = ideal wire, for closed-form checks)",
                          DoubleValue(0.0),
                          MakeDoubleAccessor(&NcclWorld::m_efficiency),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("Channels",
                          "Channels (rings) per collective; 0 = one per member GPU of a server "
                          "when crossing servers (one per NIC on the presets), 1 inside one",
                          UintegerValue(0),
                          MakeUintegerAccessor(&NcclWorld::m_channels),
                          MakeUintegerChecker<uint32_t>(0, 64))
            .AddAttribute("ChunkBytes",
                          "Largest number of bytes one pipeline step moves on one channel",
                          UintegerValue(16u << 20),
                          MakeUintegerAccessor(&NcclWorld::m_chunkBytes),
                          MakeUintegerChecker<uint64_t>(1024))
            .AddAttribute("PipelineDepth",
                          "Transfers in flight per connection. NCCL sends a connection's "
                          "chunks in FIFO order; in a flow model concurrent chunks would share "
                          "the link instead, so 1 is the faithful default",
                          UintegerValue(1),
                          MakeUintegerAccessor(&NcclWorld::m_pipelineDepth),
                          MakeUintegerChecker<uint32_t>(1, 64))
            .AddAttribute("RingNetSlots",
                          "Chunks an LL128 or Simple ring connection between servers keeps in "
                          "flight. NCCL's proxy keeps NCCL_STEPS = 8 (src/include/device.h; "
                          "prims_simple.h, prims_ll*.h wait for a free slot of 8), so a ring's "
                          "network step latency runs alongside earlier chunks and its bytes "
                          "follow each other on the wire. 1 (default) sends one step at a time, "
                          "each waiting the network step latency: with 8 the A100 calibration "
                          "table's 32-128 MiB sizes come out 22-41 % fast (doc/validation.md)",
                          UintegerValue(1),
                          MakeUintegerAccessor(&NcclWorld::m_ringNetSlots),
                          MakeUintegerChecker<uint32_t>(1, 64))
            .AddAttribute("LlRingNetSlots",
                          "The same for LL rings: NCCL's NCCL_STEPS = 8 (default). An LL step is "
                          "one chunk (src/enqueue.cc: chunkSteps 1 for every protocol but "
                          "Simple), and NCCL's own latency model charges a ring a network step "
                          "per crossing of the data's path, not one per ring step "
                          "(src/graph/tuning.cc, nInterSteps). LL runs only at small sizes, "
                          "where the latency is the whole time; the one-slot default of "
                          "RingNetSlots stands for a mid-size cost of LL128 and Simple rings "
                          "(doc/validation.md)",
                          UintegerValue(kNcclSteps),
                          MakeUintegerAccessor(&NcclWorld::m_llRingNetSlots),
                          MakeUintegerChecker<uint32_t>(1, 64))
            .AddAttribute("TreeNetSlots",
                          "Chunks a Simple / LL128 tree connection between servers keeps in "
                          "flight: NCCL_STEPS = 8 (default; as RingNetSlots), so a chunk's "
                          "network step latency runs alongside the chunks before it. 1: one "
                          "chunk at a time, each waiting the network step latency (the model "
                          "before; the calibration tables do not tell them apart)",
                          UintegerValue(kNcclSteps),
                          MakeUintegerAccessor(&NcclWorld::m_treeNetSlots),
                          MakeUintegerChecker<uint32_t>(1, 64))
            .AddAttribute("TreesOnAllNics",
                          "Trees (Channels 0): a mirrored pair of trees per ring channel, i.e. "
                          "per NIC, as NCCL runs the mirrored tree on its duplicated channels "
                          "(src/graph/connect.cc; default). false: one tree per ring channel, "
                          "pairs led by every other GPU, so half the NICs carry no tree "
                          "traffic (the model before 7 Dec 2026, doc/validation.md)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&NcclWorld::m_treesOnAllNics),
                          MakeBooleanChecker())
            .AddAttribute("Pxn",
                          "Point-to-point traffic (AllToAll, Send/Recv) to a GPU of another "
                          "server crosses NVLink to the local GPU on the peer's rail and leaves "
                          "through that GPU's NIC, so it stays under one rail's leaf (NCCL's "
                          "PXN, on by default since NCCL 2.12; NCCL_PXN_DISABLE=1 turns it off)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&NcclWorld::m_pxn),
                          MakeBooleanChecker())
            .AddAttribute("P2pCopyOut",
                          "Point-to-point with the Simple protocol between two GPUs of one "
                          "server (AllToAll, Send/Recv) runs as NCCL's two copies: the sending "
                          "warps put each step of a part into the receiver's FIFO and as many "
                          "receiving warps copy it out to the user buffer (src/device/"
                          "sendrecv.h), so a part of C steps takes (C + 1) / C of its transfer; "
                          "C from NCCL's split of the operation over its p2p channels "
                          "(model/nccl-p2p.h). false: one copy, as NCCL's direct mode of ranks "
                          "in one process",
                          BooleanValue(true),
                          MakeBooleanAccessor(&NcclWorld::m_p2pCopyOut),
                          MakeBooleanChecker())
            .AddAttribute("Fidelity",
                          "chunk: every collective runs chunk by chunk through the backend. "
                          "collective: an op that already ran alone on its links (flow "
                          "backend) and whose ranks all join at one instant with those links "
                          "idle replays that run's per-rank completion times without "
                          "transfers; everything else runs chunk by chunk. auto: collective "
                          "with RingFlows, never NvlsTrialLoops, and the chunk path on other "
                          "backends: each collective takes the exact shortcut that applies to "
                          "it, or runs chunk by chunk (CollectiveRecord::path says which; "
                          "doc/flow-backend.md)",
                          StringValue("chunk"),
                          MakeStringAccessor(&NcclWorld::m_fidelity),
                          MakeStringChecker())
            .AddAttribute("FidelitySkew",
                          "Fidelity=collective: an instance whose ranks join within this "
                          "fraction of the op's run time of each other is watched or replayed "
                          "as if all joined with the last one (the error this allows is at "
                          "most the skew); wider skew runs chunk by chunk",
                          DoubleValue(1e-3),
                          MakeDoubleAccessor(&NcclWorld::m_fidelitySkew),
                          MakeDoubleChecker<double>(0.0, 0.01))
            .AddAttribute("RingFlows",
                          "Fidelity=collective: a ring AllReduce/AllGather/ReduceScatter whose "
                          "ranks join together on idle links runs as one flow per ring edge and "
                          "channel carrying all its items, the per-item latencies and the "
                          "pipeline fill added in closed form (doc/flow-backend.md)",
                          BooleanValue(false),
                          MakeBooleanAccessor(&NcclWorld::m_ringFlows),
                          MakeBooleanChecker())
            .AddAttribute("NvlsTrialLoops",
                          "Fidelity=collective with RingFlows: an NVLS/NVLSTree AllReduce whose "
                          "ranks join together on idle links runs this many of its loops chunk "
                          "by chunk (at least 32) and the rest at the period measured on them "
                          "(model/nccl-nvls-flows.cc; 0.7-4 % off the chunk level at 128 loops, "
                          "doc/flow-backend.md). 0: chunk level, as before",
                          UintegerValue(0),
                          MakeUintegerAccessor(&NcclWorld::m_nvlsTrialLoops),
                          MakeUintegerChecker<uint32_t>(0, 4096))
            .AddTraceSource("TransferDelivered",
                            "A transfer of a collective or P2P operation was delivered",
                            MakeTraceSourceAccessor(&NcclWorld::m_transferDelivered),
                            "ns3::NcclWorld::TransferCallback")
            .AddTraceSource("CollectiveCompleted",
                            "A collective finished on all its ranks",
                            MakeTraceSourceAccessor(&NcclWorld::m_collectiveCompleted),
                            "ns3::NcclWorld::CollectiveCallback");
    return tid;
}

NcclWorld::NcclWorld() = default;
NcclWorld::~NcclWorld() = default;

void
NcclWorld::DoDispose()
{
    for (auto& [id, c] : m_comms)
    {
        c->Dispose();
    }
    m_comms.clear();
    m_hops.clear();
    m_backend = nullptr;
    m_flowNet = nullptr;
    Object::DoDispose();
}

void
NcclWorld::SetBackend(Ptr<NetworkBackend> backend)
{
    m_backend = backend;
    m_flowNet = backend ? PeekPointer(DynamicCast<FlowBackend>(backend)) : nullptr;
    m_fabricEvents = backend && backend->HasFabricEvents();
    m_hops.clear();
    if (backend && !m_ownerTaken)
    {
        // One id space per job on a shared fabric (NetworkBackend::AcquireOwner).
        m_owner = backend->AcquireOwner();
        m_nextTransferId = NetworkBackend::FirstTransferId(m_owner);
        m_ownerTaken = true;
    }
}

Ptr<NetworkBackend>
NcclWorld::GetBackend() const
{
    return m_backend;
}

Ptr<ClusterTopology>
NcclWorld::GetTopology() const
{
    return m_backend->GetTopology();
}

Ptr<Communicator>
NcclWorld::Join(const std::string& comm, uint32_t nranks, uint32_t commRank, uint32_t gpu)
{
    Ptr<Communicator> c = Find(comm);
    if (!c)
    {
        c = CreateObject<Communicator>();
        c->Setup(this, comm, nranks);
        m_comms[comm] = c;
    }
    if (c->GetNRanks() != nranks)
    {
        throw std::runtime_error("communicator " + comm + " initialised with " +
                                 std::to_string(nranks) + " ranks by GPU " + std::to_string(gpu) +
                                 " but " + std::to_string(c->GetNRanks()) + " elsewhere");
    }
    c->SetMember(commRank, gpu);
    return c;
}

Ptr<Communicator>
NcclWorld::Find(const std::string& comm) const
{
    auto it = m_comms.find(comm);
    return it == m_comms.end() ? nullptr : it->second;
}

const std::map<std::string, Ptr<Communicator>>&
NcclWorld::GetCommunicators() const
{
    return m_comms;
}

uint32_t
NcclWorld::GetOwner() const
{
    return m_owner;
}

uint64_t
NcclWorld::NextTransferId()
{
    return m_nextTransferId++;
}

void
NcclWorld::StartTransfer(Time delay, uint32_t srcGpu, uint32_t dstGpu, uint64_t wireBytes,
                         uint64_t flowKey, bool streamed, std::function<void()> delivered)
{
    uint32_t slot;
    if (m_freeSlots.empty())
    {
        slot = m_slots.size();
        m_slots.emplace_back();
    }
    else
    {
        slot = m_freeSlots.back();
        m_freeSlots.pop_back();
    }
    PendingTransfer& t = m_slots[slot];
    t.id = NextTransferId();
    t.src = srcGpu;
    t.dst = dstGpu;
    t.bytes = wireBytes;
    t.flowKey = flowKey;
    t.streamed = streamed;
    t.delivered = std::move(delivered);
    if (!delay.IsStrictlyPositive())
    {
        Launch(slot);
        return;
    }
    // Transfers deferred to the same instant (a ring step on every rank) share one event.
    const int64_t at = (Simulator::Now() + delay).GetTimeStep();
    std::vector<uint32_t>& batch = m_deferred[at];
    if (batch.empty())
    {
        Simulator::Schedule(delay, &NcclWorld::LaunchDeferred, this, at);
    }
    batch.push_back(slot);
}

bool
NcclWorld::IsPxn() const
{
    return m_pxn;
}

bool
NcclWorld::P2pCopyOut() const
{
    return m_p2pCopyOut;
}

double
NcclWorld::NetGBps(uint32_t gpu) const
{
    Ptr<ClusterTopology> topo = GetTopology();
    const uint32_t nic = topo->NicOf(gpu);
    if (nic == UINT32_MAX)
    {
        return 0;
    }
    double bps = std::numeric_limits<double>::infinity();
    for (uint32_t l : topo->OutLinks(topo->GpuVertex(gpu)))
    {
        if (topo->Links()[l].to == nic)
        {
            bps = std::min(bps, topo->Links()[l].bitsPerSec);
        }
    }
    for (uint32_t l : topo->OutLinks(nic))
    {
        if (topo->Links()[l].kind == TopoLinkKind::Nic)
        {
            bps = std::min(bps, topo->Links()[l].bitsPerSec);
        }
    }
    return std::isfinite(bps) ? bps / 8e9 : 0;
}

uint32_t
NcclWorld::RingNetSlots(const std::string& proto) const
{
    return proto == "ll" ? m_llRingNetSlots : m_ringNetSlots;
}

uint32_t
NcclWorld::TreeNetSlots() const
{
    return m_treeNetSlots;
}

const gpusim::NcclCalibration&
NcclWorld::Calibration() const
{
    return GetTopology()->GetNcclCalibration();
}

const NcclWorld::HopInfo&
NcclWorld::Hop(uint32_t srcEndpoint, uint32_t dstEndpoint) const
{
    const uint64_t key = (uint64_t(srcEndpoint) << 32) | dstEndpoint;
    auto it = m_hops.find(key);
    if (it != m_hops.end())
    {
        return it->second;
    }
    Ptr<ClusterTopology> topo = GetTopology();
    const std::vector<uint32_t> route = topo->Route(srcEndpoint, dstEndpoint, 0);
    HopInfo h;
    h.wireUs = topo->PathLatency(route) * 1e6;
    h.nvls = ClusterTopology::IsSwitchEndpoint(srcEndpoint) ||
             ClusterTopology::IsSwitchEndpoint(dstEndpoint);
    for (uint32_t l : route)
    {
        const TopoLinkKind k = topo->Links()[l].kind;
        h.inter = h.inter || k == TopoLinkKind::Nic || k == TopoLinkKind::Fabric;
    }
    return m_hops.emplace(key, h).first->second;
}

void
NcclWorld::LaunchDeferred(int64_t at)
{
    auto it = m_deferred.find(at);
    std::vector<uint32_t> batch = std::move(it->second);
    m_deferred.erase(it);
    for (uint32_t slot : batch)
    {
        Launch(slot);
    }
}

void
NcclWorld::Launch(uint32_t slot)
{
    const PendingTransfer& t = m_slots[slot];
    auto done = [this, slot](const TransferRecord& r) { Delivered(slot, r); };
    if (t.streamed)
    {
        m_backend->StartStreamedTransfer(t.id, t.src, t.dst, t.bytes, t.flowKey, done);
    }
    else
    {
        m_backend->StartTransfer(t.id, t.src, t.dst, t.bytes, t.flowKey, done);
    }
}

void
NcclWorld::Delivered(uint32_t slot, const TransferRecord& r)
{
    std::function<void()> fn = std::move(m_slots[slot].delivered);
    m_freeSlots.push_back(slot);
    m_transferDelivered(r);
    fn();
}

void
NcclWorld::NotifyCompleted(const CollectiveRecord& r)
{
    m_collectiveCompleted(r);
}

bool
NcclWorld::HasPending() const
{
    for (const auto& [id, c] : m_comms)
    {
        if (c->HasPending())
        {
            return true;
        }
    }
    return false;
}

std::string
NcclWorld::DescribePending() const
{
    std::string s;
    for (const auto& [id, c] : m_comms)
    {
        s += c->DescribePending();
    }
    return s;
}

std::string
NcclWorld::DescribePendingFor(uint32_t gpuA, uint32_t gpuB) const
{
    std::string s;
    for (const auto& [id, c] : m_comms)
    {
        const std::vector<uint32_t>& g = c->Gpus();
        if (std::find(g.begin(), g.end(), gpuA) == g.end() ||
            std::find(g.begin(), g.end(), gpuB) == g.end())
        {
            continue;
        }
        std::string d = c->DescribePending();
        d.erase(0, d.find_first_not_of(' '));
        while (!d.empty() && (d.back() == '\n' || d.back() == ' '))
        {
            d.pop_back();
        }
        for (char& ch : d)
        {
            ch = ch == '\n' ? ';' : ch;
        }
        if (!d.empty())
        {
            s += (s.empty() ? "" : "; ") + d;
        }
    }
    return s;
}

// ------------------------------------------------------------------ NcclCollective

TypeId
NcclCollective::GetTypeId()
{
    static TypeId tid = TypeId("ns3::NcclCollective")
                            .SetParent<Application>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<NcclCollective>();
    return tid;
}

NcclCollective::NcclCollective() = default;
NcclCollective::~NcclCollective() = default;

void
NcclCollective::DoDispose()
{
    m_comm = nullptr;
    Application::DoDispose();
}

void
NcclCollective::StartApplication()
{
}

void
NcclCollective::StopApplication()
{
}

void
NcclCollective::Setup(Ptr<Communicator> comm, uint32_t commRank)
{
    m_comm = comm;
    m_commRank = commRank;
}

Ptr<Communicator>
NcclCollective::GetCommunicator() const
{
    return m_comm;
}

uint32_t
NcclCollective::GetCommRank() const
{
    return m_commRank;
}

void
NcclCollective::SetPeerShift(uint32_t shift)
{
    m_peerShift = m_comm && m_comm->GetNRanks() ? shift % m_comm->GetNRanks() : shift;
}

uint32_t
NcclCollective::PeerOf(const Op& op) const
{
    const uint32_t n = m_comm->GetNRanks();
    return (static_cast<uint32_t>(op.peer) + m_peerShift) % n;
}

void
NcclCollective::Launch(const Op* op, std::function<void()> done)
{
    ++m_launched;
    m_comm->Post(m_commRank, op, std::move(done), m_peerShift);
}

} // namespace ns3
