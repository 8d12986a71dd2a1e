#include "ns3/nccl-collective.h"

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

Time
Us(double us)
{
    return NanoSeconds(static_cast<int64_t>(std::llround(us * 1e3)));
}

// ------------------------------------------------------------------ executors

using SendFn = std::function<void(uint32_t from, uint32_t to, double bytes, uint64_t flowKey,
                                  std::function<void()> delivered)>;

/// Ring (AllReduce, AllGather, ReduceScatter) and chain (Broadcast, Reduce) pipelines. Each
/// channel has its own order of comm ranks; a position sends items to the next position.
/// Ring: item i may be sent once items < i arrived from the previous position.
/// Chain: position 0 is the source; others forward item i after receiving it.
class PipelineExecutor : public CollectiveExecutor
{
  public:
    PipelineExecutor(std::vector<std::vector<uint32_t>> orders, bool chain, uint32_t items,
                     double itemBytes, uint32_t depth, SendFn send)
        : m_orders(std::move(orders)),
          m_chain(chain),
          m_items(items),
          m_itemBytes(itemBytes),
          m_depth(std::max<uint32_t>(1, depth)),
          m_send(std::move(send))
    {
        const size_t n = m_orders.front().size();
        m_joined.assign(n, false);
        m_channelsDone.assign(n, 0);
        m_state.assign(m_orders.size(), std::vector<Pos>(n));
        m_posOf.assign(m_orders.size(), std::vector<uint32_t>(n));
        for (size_t c = 0; c < m_orders.size(); ++c)
        {
            for (uint32_t p = 0; p < n; ++p)
            {
                m_posOf[c][m_orders[c][p]] = p;
            }
        }
    }

    void Join(uint32_t r) override
    {
        m_joined[r] = true;
        for (uint32_t c = 0; c < m_orders.size(); ++c)
        {
            uint32_t p = m_posOf[c][r];
            Advance(c, p);
            CheckDone(c, p);
        }
    }

  private:
    struct Pos
    {
        uint32_t launched = 0;
        uint32_t sent = 0;  //!< delivered sends
        uint32_t recvd = 0; //!< delivered receives
        bool done = false;
    };

    uint32_t N() const { return m_orders.front().size(); }
    uint32_t SendTotal(uint32_t p) const { return m_chain && p == N() - 1 ? 0 : m_items; }
    uint32_t RecvTotal(uint32_t p) const { return m_chain && p == 0 ? 0 : m_items; }
    uint32_t NeedRecv(uint32_t p, uint32_t i) const
    {
        return m_chain ? (p == 0 ? 0 : i + 1) : i;
    }

    void Advance(uint32_t c, uint32_t p)
    {
        Pos& s = m_state[c][p];
        const uint32_t rank = m_orders[c][p];
        if (!m_joined[rank])
        {
            return;
        }
        while (s.launched < SendTotal(p) && s.launched - s.sent < m_depth &&
               s.recvd >= NeedRecv(p, s.launched))
        {
            const uint32_t next = (p + 1) % N();
            ++s.launched;
            ++transfers;
            // Captures stay within std::function's small buffer: no allocation per transfer.
            m_send(rank, m_orders[c][next], m_itemBytes, c, [this, c, p]() {
                const uint32_t next = (p + 1) % N();
                ++m_state[c][p].sent;
                ++m_state[c][next].recvd;
                Advance(c, next);
                Advance(c, p);
                CheckDone(c, next);
                CheckDone(c, p);
            });
        }
    }

    void CheckDone(uint32_t c, uint32_t p)
    {
        Pos& s = m_state[c][p];
        const uint32_t rank = m_orders[c][p];
        if (s.done || !m_joined[rank] || s.sent < SendTotal(p) || s.recvd < RecvTotal(p))
        {
            return;
        }
        s.done = true;
        if (++m_channelsDone[rank] == m_orders.size())
        {
            onRankDone(rank);
        }
    }

    std::vector<std::vector<uint32_t>> m_orders;
    bool m_chain;
    uint32_t m_items;
    double m_itemBytes;
    uint32_t m_depth;
    SendFn m_send;
    std::vector<bool> m_joined;
    std::vector<uint32_t> m_channelsDone;
    std::vector<std::vector<Pos>> m_state;
    std::vector<std::vector<uint32_t>> m_posOf;
};

/// Double binary tree AllReduce: each tree reduces its half of the data towards the root in
/// pipelined chunks, then broadcasts it back down.
class TreeExecutor : public CollectiveExecutor
{
  public:
    using Tree = CollectiveTree;

    TreeExecutor(std::vector<Tree> trees, uint32_t chunks, double chunkBytes, uint32_t depth,
                 SendFn send)
        : m_trees(std::move(trees)),
          m_chunks(chunks),
          m_chunkBytes(chunkBytes),
          m_depth(std::max<uint32_t>(1, depth)),
          m_send(std::move(send))
    {
        const size_t n = m_trees.front().parent.size();
        m_joined.assign(n, false);
        m_treesDone.assign(n, 0);
        m_state.resize(m_trees.size());
        for (size_t t = 0; t < m_trees.size(); ++t)
        {
            m_state[t].resize(n);
            for (uint32_t r = 0; r < n; ++r)
            {
                Node& s = m_state[t][r];
                s.upFromChild.assign(m_trees[t].children[r].size(), 0);
                s.downLaunched.assign(m_trees[t].children[r].size(), 0);
                s.downSent.assign(m_trees[t].children[r].size(), 0);
            }
        }
    }

    void Join(uint32_t r) override
    {
        m_joined[r] = true;
        for (uint32_t t = 0; t < m_trees.size(); ++t)
        {
            Advance(t, r);
        }
    }

  private:
    struct Node
    {
        std::vector<uint32_t> upFromChild; //!< chunks received from each child
        uint32_t upLaunched = 0;
        uint32_t upSent = 0;
        uint32_t downRecvd = 0;            //!< chunks received from the parent
        std::vector<uint32_t> downLaunched;
        std::vector<uint32_t> downSent;
        bool done = false;
    };

    /// Chunks whose reduction over this node's subtree is complete.
    uint32_t Reduced(uint32_t t, uint32_t r) const
    {
        const Node& s = m_state[t][r];
        uint32_t k = m_chunks;
        for (uint32_t v : s.upFromChild)
        {
            k = std::min(k, v);
        }
        return k;
    }

    /// Chunks of the final result this node holds.
    uint32_t Final(uint32_t t, uint32_t r) const
    {
        return m_trees[t].parent[r] < 0 ? Reduced(t, r) : m_state[t][r].downRecvd;
    }

    void Advance(uint32_t t, uint32_t r)
    {
        if (!m_joined[r])
        {
            return;
        }
        Node& s = m_state[t][r];
        const int32_t parent = m_trees[t].parent[r];
        if (parent >= 0)
        {
            while (s.upLaunched < Reduced(t, r) && s.upLaunched - s.upSent < m_depth)
            {
                ++s.upLaunched;
                ++transfers;
                const uint32_t p = static_cast<uint32_t>(parent);
                m_send(r, p, m_chunkBytes, 2 * t, [this, t, r]() {
                    const uint32_t p = static_cast<uint32_t>(m_trees[t].parent[r]);
                    const size_t idx = ChildIndex(t, p, r);
                    ++m_state[t][r].upSent;
                    ++m_state[t][p].upFromChild[idx];
                    Advance(t, p);
                    Advance(t, r);
                });
            }
        }
        const auto& kids = m_trees[t].children[r];
        for (size_t i = 0; i < kids.size(); ++i)
        {
            while (s.downLaunched[i] < Final(t, r) && s.downLaunched[i] - s.downSent[i] < m_depth)
            {
                ++s.downLaunched[i];
                ++transfers;
                const uint32_t child = kids[i];
                const uint64_t key = (uint64_t(t) << 48) | (uint64_t(i) << 32) | r;
                m_send(r, child, m_chunkBytes, 2 * t + 1, [this, key]() {
                    const uint32_t t = key >> 48;
                    const size_t i = (key >> 32) & 0xffff;
                    const uint32_t r = key & 0xffffffff;
                    const uint32_t child = m_trees[t].children[r][i];
                    ++m_state[t][r].downSent[i];
                    ++m_state[t][child].downRecvd;
                    Advance(t, child);
                    Advance(t, r);
                });
            }
        }
        CheckDone(t, r);
    }

    size_t ChildIndex(uint32_t t, uint32_t parent, uint32_t child) const
    {
        const auto& kids = m_trees[t].children[parent];
        return std::find(kids.begin(), kids.end(), child) - kids.begin();
    }

    void CheckDone(uint32_t t, uint32_t r)
    {
        Node& s = m_state[t][r];
        if (s.done || Final(t, r) < m_chunks)
        {
            return;
        }
        if (m_trees[t].parent[r] >= 0 && s.upSent < m_chunks)
        {
            return;
        }
        for (uint32_t sent : s.downSent)
        {
            if (sent < m_chunks)
            {
                return;
            }
        }
        s.done = true;
        if (++m_treesDone[r] == m_trees.size())
        {
            onRankDone(r);
        }
    }

    std::vector<Tree> m_trees;
    uint32_t m_chunks;
    double m_chunkBytes;
    uint32_t m_depth;
    SendFn m_send;
    std::vector<bool> m_joined;
    std::vector<uint32_t> m_treesDone;
    std::vector<std::vector<Node>> m_state;
};

/// AllToAll as direct sends: rank i sends its block to rank j once both have launched.
class DirectExecutor : public CollectiveExecutor
{
  public:
    DirectExecutor(uint32_t n, double blockBytes, SendFn send)
        : m_n(n),
          m_blockBytes(blockBytes),
          m_send(std::move(send)),
          m_joined(n, false),
          m_pending(n, 0)
    {
    }

    void Join(uint32_t r) override
    {
        m_joined[r] = true;
        m_pending[r] += 2 * (m_n - 1); // its sends and its receives
        if (m_n == 1)
        {
            onRankDone(r);
            return;
        }
        // Pair with every rank already joined, in rank order (deterministic).
        for (uint32_t d = 1; d < m_n; ++d)
        {
            const uint32_t j = (r + d) % m_n;
            if (!m_joined[j])
            {
                continue;
            }
            Start(r, j);
            Start(j, r);
        }
    }

  private:
    void Start(uint32_t from, uint32_t to)
    {
        ++transfers;
        m_send(from, to, m_blockBytes, from, [this, from, to]() {
            Finish(from);
            Finish(to);
        });
    }

    void Finish(uint32_t r)
    {
        if (--m_pending[r] == 0)
        {
            onRankDone(r);
        }
    }

    uint32_t m_n;
    double m_blockBytes;
    SendFn m_send;
    std::vector<bool> m_joined;
    std::vector<uint32_t> m_pending;
};

/// Trees pipeline in small chunks (NCCL uses a few hundred KiB) so the fill through the tree
/// depth stays a small fraction; at most 128 chunks to bound the event count.
uint32_t
TreeChunks(double perTreeBytes, uint64_t chunkBytes)
{
    const double chunk = std::min<double>(chunkBytes, 256.0 * 1024);
    return static_cast<uint32_t>(std::clamp(std::ceil(perTreeBytes / chunk), 1.0, 128.0));
}

bool
IsP2p(CollKind k)
{
    return k == CollKind::Send || k == CollKind::Recv;
}

} // namespace

CollectiveExecutor::~CollectiveExecutor() = default;

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
Communicator::NumServers() const
{
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    std::vector<uint32_t> servers;
    for (uint32_t g : m_gpus)
    {
        servers.push_back(topo->ServerOf(g));
    }
    std::sort(servers.begin(), servers.end());
    return std::unique(servers.begin(), servers.end()) - servers.begin();
}

std::vector<std::vector<uint32_t>>
Communicator::ServerGroups(uint32_t rotation) const
{
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    // Comm ranks grouped by server (servers in order of their lowest GPU), GPUs by local index,
    // each server's list rotated so channels start on different GPUs (and NICs).
    std::map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> byServer;
    for (uint32_t r = 0; r < m_nranks; ++r)
    {
        byServer[topo->ServerOf(m_gpus[r])].push_back({topo->LocalIndex(m_gpus[r]), r});
    }
    std::vector<std::vector<uint32_t>> groups;
    for (auto& [server, members] : byServer)
    {
        std::sort(members.begin(), members.end());
        const size_t k = members.size();
        std::vector<uint32_t> g;
        for (size_t i = 0; i < k; ++i)
        {
            g.push_back(members[(i + rotation) % k].second);
        }
        groups.push_back(std::move(g));
    }
    return groups;
}

std::vector<uint32_t>
Communicator::RingOrder(uint32_t channel) const
{
    // Every other server is traversed backwards, so the ring leaves a server and enters the
    // next one on the same local GPU index, i.e. the same rail (what NCCL achieves with PXN):
    // server 0 runs c, c+1, ..., c-1; server 1 runs c-1, ..., c; server 2 runs c, ... again.
    std::vector<std::vector<uint32_t>> groups = ServerGroups(channel);
    std::vector<uint32_t> order;
    order.reserve(m_nranks);
    for (size_t s = 0; s < groups.size(); ++s)
    {
        if (s % 2 == 1)
        {
            std::reverse(groups[s].begin(), groups[s].end());
        }
        order.insert(order.end(), groups[s].begin(), groups[s].end());
    }
    return order;
}

std::vector<CollectiveTree>
Communicator::Trees(uint32_t channels) const
{
    // Even channels use the heap order of servers, odd ones the mirrored order (a server is
    // interior in at most one tree of a pair); channel pair p elects local GPU p as each
    // server's leader, so different pairs cross the fabric through different NICs (rails).
    // Inside a server the tree is a chain from the leader.
    const uint32_t n = m_nranks;
    std::vector<CollectiveTree> trees(channels);
    for (uint32_t t = 0; t < channels; ++t)
    {
        const std::vector<std::vector<uint32_t>> servers = ServerGroups(t / 2);
        const size_t ns = servers.size();
        CollectiveTree& tree = trees[t];
        tree.parent.assign(n, -1);
        tree.children.assign(n, {});
        auto link = [&tree](uint32_t parent, uint32_t child) {
            tree.parent[child] = static_cast<int32_t>(parent);
            tree.children[parent].push_back(child);
        };
        const bool mirrored = t % 2 == 1;
        for (size_t pos = 0; pos < ns; ++pos)
        {
            const size_t s = mirrored ? ns - 1 - pos : pos; // heap position -> server
            const auto& chain = servers[s];
            for (size_t i = 1; i < chain.size(); ++i)
            {
                link(chain[i - 1], chain[i]);
            }
            for (size_t kid = 2 * pos + 1; kid <= 2 * pos + 2 && kid < ns; ++kid)
            {
                const size_t ks = mirrored ? ns - 1 - kid : kid;
                link(chain.front(), servers[ks].front());
            }
        }
    }
    return trees;
}

void
Communicator::Send(const CollectivePlan& plan,
                   uint32_t fromRank,
                   uint32_t toRank,
                   double payloadBytes,
                   uint64_t flowKey,
                   std::function<void()> delivered)
{
    const uint64_t wire = static_cast<uint64_t>(std::ceil(payloadBytes / plan.bwFactor));
    m_world->StartTransfer(plan.stepLatency, m_gpus[fromRank], m_gpus[toRank], wire, flowKey,
                           std::move(delivered));
}

void
Communicator::Post(uint32_t commRank, const Op* op, std::function<void()> done)
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
        const uint32_t peer = static_cast<uint32_t>(op->peer);
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
        Instance inst;
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
        rec.plan = m_world->Plan(op->coll, op->bytes, *this);
        inst.doneCbs.resize(m_nranks);

        const CollectivePlan plan = rec.plan;
        const uint64_t seq = op->seq;
        SendFn send = [this, plan](uint32_t from, uint32_t to, double bytes, uint64_t key,
                                   std::function<void()> delivered) {
            Send(plan, from, to, bytes, key, std::move(delivered));
        };
        const uint32_t n = m_nranks;
        const uint32_t C = plan.channels;
        const double S = static_cast<double>(op->bytes);
        if (n == 1)
        {
            inst.exec = std::make_unique<DirectExecutor>(1, 0.0, send);
        }
        else if (plan.algo == "tree")
        {
            std::vector<TreeExecutor::Tree> trees = Trees(C);
            const double perTree = S / C;
            const uint32_t chunks = TreeChunks(perTree, plan.chunkBytes);
            inst.exec = std::make_unique<TreeExecutor>(std::move(trees), chunks,
                                                        perTree / chunks, plan.pipelineDepth, send);
        }
        else if (op->coll == CollKind::AllToAll)
        {
            inst.exec = std::make_unique<DirectExecutor>(n, S / n, send);
        }
        else if (op->coll == CollKind::Broadcast || op->coll == CollKind::Reduce)
        {
            // Chain through the ring order, rotated so the root is first (broadcast) or last
            // (reduce).
            std::vector<std::vector<uint32_t>> orders;
            for (uint32_t c = 0; c < C; ++c)
            {
                std::vector<uint32_t> ring = RingOrder(c);
                auto rootPos = std::find(ring.begin(), ring.end(), static_cast<uint32_t>(op->root));
                std::rotate(ring.begin(), rootPos, ring.end());
                if (op->coll == CollKind::Reduce)
                {
                    std::rotate(ring.begin(), ring.begin() + 1, ring.end());
                }
                orders.push_back(std::move(ring));
            }
            const double perChannel = S / C;
            const uint32_t items = static_cast<uint32_t>(
                std::max(1.0, std::ceil(perChannel / plan.chunkBytes)));
            inst.exec = std::make_unique<PipelineExecutor>(std::move(orders), true, items,
                                                           perChannel / items, plan.pipelineDepth,
                                                           send);
        }
        else
        {
            // Ring: AllReduce = reduce-scatter + all-gather (2(n-1) steps); AllGather and
            // ReduceScatter take n-1 steps. Each step moves 1/n of a loop's data per channel.
            const uint32_t steps = op->coll == CollKind::AllReduce ? 2 * (n - 1) : n - 1;
            const double perChannel = S / C;
            const uint32_t loops = static_cast<uint32_t>(
                std::max(1.0, std::ceil(perChannel / (double(n) * plan.chunkBytes))));
            std::vector<std::vector<uint32_t>> orders;
            for (uint32_t c = 0; c < C; ++c)
            {
                orders.push_back(RingOrder(c));
            }
            inst.exec = std::make_unique<PipelineExecutor>(std::move(orders), false,
                                                           loops * steps,
                                                           perChannel / (double(n) * loops),
                                                           plan.pipelineDepth, send);
        }
        inst.exec->onRankDone = [this, seq](uint32_t r) { FinishRank(seq, r); };
        it = m_instances.emplace(op->seq, std::move(inst)).first;
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
    ++inst.joined;
    NS_LOG_INFO("comm " << m_id << " seq " << op->seq << " " << gpusim::ToString(op->coll)
                        << ": rank " << commRank << " joined (" << inst.joined << "/" << m_nranks
                        << ")");
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

void
Communicator::FinishRank(uint64_t seq, uint32_t commRank)
{
    Instance& inst = m_instances.at(seq);
    inst.record.rankDone[commRank] = Simulator::Now();
    ++inst.done;
    auto cb = std::move(inst.doneCbs[commRank]);
    if (cb)
    {
        Simulator::ScheduleNow(cb);
    }
    if (inst.done == m_nranks)
    {
        inst.record.transfers = inst.exec->transfers;
        m_world->NotifyCompleted(inst.record);
        // Free the executor after the current callback chain has unwound.
        Simulator::ScheduleNow([this, seq]() { m_instances.erase(seq); });
    }
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
        CollectivePlan plan = m_world->Plan(CollKind::Send, s.op->bytes, *this);
        ++m_p2pTransfers;
        auto sDone = std::move(s.done);
        auto rDone = std::move(r.done);
        Send(plan, src, dst, static_cast<double>(s.op->bytes), src * 7919 + dst,
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
                          "Collective algorithm: auto, ring or tree (tree applies to AllReduce)",
                          StringValue("auto"),
                          MakeStringAccessor(&NcclWorld::m_algorithm),
                          MakeStringChecker())
            .AddAttribute("Protocol",
                          "NCCL protocol: auto, simple, ll128 or ll",
                          StringValue("auto"),
                          MakeStringAccessor(&NcclWorld::m_protocol),
                          MakeStringChecker())
            .AddAttribute("Efficiency",
                          "If > 0, replaces the protocol bandwidth factors and sets protocol "
                          "latencies to zero (1 = ideal wire, for closed-form checks)",
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
    m_backend = nullptr;
    Object::DoDispose();
}

void
NcclWorld::SetBackend(Ptr<NetworkBackend> backend)
{
    m_backend = backend;
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

uint64_t
NcclWorld::NextTransferId()
{
    return m_nextTransferId++;
}

void
NcclWorld::StartTransfer(Time delay, uint32_t srcGpu, uint32_t dstGpu, uint64_t wireBytes,
                         uint64_t flowKey, std::function<void()> delivered)
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
    m_backend->StartTransfer(t.id, t.src, t.dst, t.bytes, t.flowKey,
                             [this, slot](const TransferRecord& r) { Delivered(slot, r); });
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

void
NcclWorld::ProtocolCosts(const std::string& proto, double& bwFactor, double& stepUs,
                         double& baseUs) const
{
    // Bandwidth factors follow the protocols' wire formats (LL: 4 data bytes per 8-byte line;
    // LL128: 120 of 128 bytes); latencies are of the order NCCL's tuning tables use.
    if (proto == "ll")
    {
        bwFactor = 0.5;
        stepUs = 0.6;
        baseUs = 4.0;
    }
    else if (proto == "ll128")
    {
        bwFactor = 0.9375 * 0.95;
        stepUs = 1.2;
        baseUs = 6.0;
    }
    else
    {
        bwFactor = 0.95;
        stepUs = 3.0;
        baseUs = 8.0;
    }
    if (m_efficiency > 0)
    {
        bwFactor = m_efficiency;
        stepUs = 0;
        baseUs = 0;
    }
}

double
NcclWorld::LinkLoadSeconds(CollKind kind, const std::string& algo, uint64_t bytes,
                           const Communicator& comm, uint32_t channels, double& depth,
                           double& maxPathLatencyUs) const
{
    Ptr<ClusterTopology> topo = GetTopology();
    const uint32_t n = comm.GetNRanks();
    const uint32_t C = std::max<uint32_t>(1, channels);
    const double S = static_cast<double>(bytes);
    std::vector<double> load(topo->Links().size(), 0.0);
    std::vector<uint32_t> route;
    maxPathLatencyUs = 0;
    // Adds `b` bytes on every link of the route the backends take for this transfer.
    auto add = [&](uint32_t fromRank, uint32_t toRank, uint64_t flowKey, double b) {
        const uint32_t src = comm.GpuOf(fromRank);
        const uint32_t dst = comm.GpuOf(toRank);
        topo->RouteInto(src, dst, ClusterTopology::HashFlow(flowKey, src, dst), route);
        for (uint32_t l : route)
        {
            load[l] += b;
        }
        maxPathLatencyUs = std::max(maxPathLatencyUs, topo->PathLatency(route) * 1e6);
    };
    depth = 0;
    if (algo == "tree")
    {
        const double perTree = S / C;
        std::vector<CollectiveTree> trees = comm.Trees(C);
        for (uint32_t t = 0; t < C; ++t)
        {
            for (uint32_t r = 0; r < n; ++r)
            {
                const int32_t p = trees[t].parent[r];
                if (p >= 0)
                {
                    add(r, p, 2 * t, perTree);
                    add(p, r, 2 * t + 1, perTree);
                }
                uint32_t d = 0;
                for (int32_t a = p; a >= 0; a = trees[t].parent[a])
                {
                    ++d;
                }
                depth = std::max<double>(depth, d);
            }
        }
        depth *= 2; // reduce up, broadcast down
    }
    else if (algo == "direct")
    {
        for (uint32_t i = 0; i < n; ++i)
        {
            for (uint32_t j = 0; j < n; ++j)
            {
                if (i != j)
                {
                    add(i, j, i, S / n);
                }
            }
        }
        depth = 1;
    }
    else if (algo == "p2p")
    {
        add(0, n > 1 ? 1 : 0, 0, S);
        depth = 1;
    }
    else
    {
        // Ring and chain: every hop of every channel carries its share.
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
                add(ring[p], ring[(p + 1) % n], c, perHop);
            }
        }
    }
    double worst = 0;
    const auto& links = topo->Links();
    for (uint32_t l = 0; l < load.size(); ++l)
    {
        if (load[l] > 0)
        {
            worst = std::max(worst, load[l] * 8.0 / links[l].bitsPerSec);
        }
    }
    return worst;
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
    std::vector<std::string> algos;
    if (kind == CollKind::Send || kind == CollKind::Recv)
    {
        algos = {"p2p"};
        plan.channels = 1;
    }
    else if (kind == CollKind::AllToAll)
    {
        algos = {"direct"};
        plan.channels = 1;
    }
    else if (kind == CollKind::Broadcast || kind == CollKind::Reduce)
    {
        algos = {"chain"};
    }
    else if (kind == CollKind::AllReduce)
    {
        if (m_algorithm == "ring" || m_algorithm == "tree")
        {
            algos = {m_algorithm};
        }
        else
        {
            algos = servers > 1 ? std::vector<std::string>{"ring", "tree"}
                                : std::vector<std::string>{"ring"};
        }
    }
    else
    {
        algos = {"ring"};
    }
    std::vector<std::string> protos;
    if (m_protocol == "auto")
    {
        protos = {"simple", "ll128", "ll"};
    }
    else
    {
        protos = {m_protocol};
    }
    // Closed-form estimate per (algorithm, protocol): launch latency + dependency depth x
    // (protocol step latency + path latency) + the busiest link's bytes / (capacity x protocol
    // bandwidth factor), with the pipeline fill of chunked trees and chains.
    double best = std::numeric_limits<double>::infinity();
    const uint32_t n = comm.GetNRanks();
    for (const auto& a : algos)
    {
        uint32_t ch = a == "tree" || a == "ring" || a == "chain" ? plan.channels : 1;
        if (a == "tree" && ch % 2 == 1)
        {
            ++ch; // trees come in mirrored pairs
        }
        double depth = 0, pathUs = 0;
        const double loadSec = n > 1 ? LinkLoadSeconds(kind, a, bytes, comm, ch, depth, pathUs)
                                     : 0.0;
        double fill = 1.0;
        if (a == "tree")
        {
            // Pipeline fill: each of `depth` steps moves one chunk. Most steps are NVLink chain
            // hops, several times faster than the busiest (NIC) link that loadSec measures; a
            // third of the busiest link's chunk time per step matches the executed trees on
            // 4 and 16 x dgx-h100 (doc/design.md).
            fill += depth / TreeChunks(double(bytes) / ch, m_chunkBytes) / 3.0;
        }
        else if (a == "chain")
        {
            const double items = std::max(1.0, std::ceil(double(bytes) / ch / m_chunkBytes));
            fill += (n > 2 ? n - 2 : 0) / items;
        }
        for (const auto& p : protos)
        {
            double bwFactor, stepUs, baseUs;
            ProtocolCosts(p, bwFactor, stepUs, baseUs);
            const double t = baseUs + depth * (stepUs + pathUs) + loadSec / bwFactor * 1e6 * fill;
            if (t < best)
            {
                best = t;
                plan.algo = a;
                plan.proto = p;
            }
        }
    }
    if (plan.algo == "tree" && plan.channels % 2 == 1)
    {
        plan.channels += 1; // trees come in mirrored pairs
    }
    double stepUs, baseUs;
    ProtocolCosts(plan.proto, plan.bwFactor, stepUs, baseUs);
    plan.stepLatency = Us(stepUs);
    plan.baseLatency = Us(baseUs);
    plan.estimateUs = best;
    return plan;
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
NcclCollective::Launch(const Op* op, std::function<void()> done)
{
    ++m_launched;
    m_comm->Post(m_commRank, op, std::move(done));
}

} // namespace ns3
