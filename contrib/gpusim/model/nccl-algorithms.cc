#include "ns3/nccl-algorithms.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("NcclAlgorithms");

CollectiveExecutor::~CollectiveExecutor() = default;

// ------------------------------------------------------------------ ring and chain

PipelineExecutor::PipelineExecutor(std::vector<std::vector<uint32_t>> orders, bool chain,
                                   uint32_t items, double itemBytes, uint32_t depth,
                                   uint32_t itemsPerLoop, SendFn send,
                                   std::vector<std::vector<RingConn>> conns)
    : m_orders(std::move(orders)),
      m_chain(chain),
      m_items(items),
      m_itemBytes(itemBytes),
      m_depth(std::max<uint32_t>(1, depth)),
      m_itemsPerLoop(itemsPerLoop),
      m_send(std::move(send)),
      m_conns(std::move(conns))
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
    // Several chunks in flight only where bytes go one at a time on a ring connection.
    if (m_chain || m_depth != 1)
    {
        m_conns.clear();
    }
    for (size_t c = 0; c < m_conns.size(); ++c)
    {
        NS_ABORT_MSG_IF(m_conns[c].size() != n, "PipelineExecutor: one RingConn per position");
        for (uint32_t p = 0; p < n; ++p)
        {
            if (m_conns[c][p].slots > 1)
            {
                m_state[c][p].latencyEnd.assign(m_conns[c][p].slots, Time(0));
            }
        }
    }
}

void
PipelineExecutor::Join(uint32_t r)
{
    m_joined[r] = true;
    for (uint32_t c = 0; c < m_orders.size(); ++c)
    {
        uint32_t p = m_posOf[c][r];
        Advance(c, p);
        CheckDone(c, p);
    }
}

uint32_t
PipelineExecutor::N() const
{
    return m_orders.front().size();
}

uint32_t
PipelineExecutor::SendTotal(uint32_t p) const
{
    return m_chain && p == N() - 1 ? 0 : m_items;
}

uint32_t
PipelineExecutor::RecvTotal(uint32_t p) const
{
    return m_chain && p == 0 ? 0 : m_items;
}

uint32_t
PipelineExecutor::NeedRecv(uint32_t p, uint32_t i) const
{
    return m_chain ? (p == 0 ? 0 : i + 1) : i;
}

void
PipelineExecutor::Advance(uint32_t c, uint32_t p)
{
    Pos& s = m_state[c][p];
    const uint32_t rank = m_orders[c][p];
    if (!m_joined[rank])
    {
        return;
    }
    if (!s.latencyEnd.empty())
    {
        // NCCL's sender posts a step once its data is there and one of its connection's
        // slots is free; the step latency (proxy, RDMA, completion) runs from then, alongside
        // the steps before it.
        const RingConn& conn = m_conns[c][p];
        while (s.launched < SendTotal(p) && s.launched - s.sent < conn.slots &&
               s.recvd >= NeedRecv(p, s.launched))
        {
            const uint32_t i = s.launched++;
            s.latencyEnd[i % conn.slots] =
                Simulator::Now() + (i < m_itemsPerLoop ? conn.step : Time(0));
        }
        Pump(c, p);
        return;
    }
    while (s.launched < SendTotal(p) && s.launched - s.sent < m_depth &&
           s.recvd >= NeedRecv(p, s.launched))
    {
        const uint32_t next = (p + 1) % N();
        const bool pipelined = !m_chain && s.launched >= m_itemsPerLoop;
        ++s.launched;
        ++transfers;
        // Captures stay within std::function's small buffer: no allocation per transfer.
        m_send(rank,
               m_orders[c][next],
               m_itemBytes,
               c,
               pipelined ? StepStart::Pipelined : StepStart::Fresh,
               [this, c, p]() { Delivered(c, p); });
    }
}

void
PipelineExecutor::Pump(uint32_t c, uint32_t p)
{
    Pos& s = m_state[c][p];
    const RingConn& conn = m_conns[c][p];
    if (s.started == s.launched || s.started > s.sent || s.waking)
    {
        return; // nothing admitted, bytes of the item before still on the way, or a wake due
    }
    // Item i's bytes follow item i-1's on the wire: delivered at max(T + wire, D(i-1)) + bytes
    // with T its latency end. Item i-1 in before T: it starts at T and pays the wire. Still
    // arriving at T: it streams behind it, from max(D(i-1), T + wire), without the wire again.
    const Time now = Simulator::Now();
    const Time T = s.latencyEnd[s.started % conn.slots];
    const bool follow = s.lastDelivered > T;
    const Time at = follow ? Max(s.lastDelivered, T + conn.wire) : T;
    if (at > now)
    {
        s.waking = true;
        Simulator::Schedule(at - now, &PipelineExecutor::Wake, this, c, p);
        return;
    }
    ++s.started;
    ++transfers;
    const uint32_t next = (p + 1) % N();
    m_send(m_orders[c][p],
           m_orders[c][next],
           m_itemBytes,
           c,
           follow ? StepStart::Streamed : StepStart::Pipelined,
           [this, c, p]() { Delivered(c, p); });
}

void
PipelineExecutor::Wake(uint32_t c, uint32_t p)
{
    m_state[c][p].waking = false;
    Pump(c, p);
}

void
PipelineExecutor::Delivered(uint32_t c, uint32_t p)
{
    const uint32_t next = (p + 1) % N();
    m_state[c][p].lastDelivered = Simulator::Now();
    ++m_state[c][p].sent;
    ++m_state[c][next].recvd;
    Advance(c, next);
    Advance(c, p);
    CheckDone(c, next);
    CheckDone(c, p);
}

void
PipelineExecutor::CheckDone(uint32_t c, uint32_t p)
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

// ------------------------------------------------------------------ double binary tree

TreeExecutor::TreeExecutor(std::vector<CollectiveTree> trees, uint32_t chunks, double chunkBytes,
                           uint32_t depth, bool streamed, SendFn send, ConnFn conn)
    : m_trees(std::move(trees)),
      m_chunks(chunks),
      m_chunkBytes(chunkBytes),
      m_depth(std::max<uint32_t>(1, depth)),
      m_streamed(streamed),
      m_send(std::move(send))
{
    const size_t n = m_trees.front().parent.size();
    m_joined.assign(n, false);
    m_treesDone.assign(n, 0);
    m_state.resize(m_trees.size());
    // Chunks in flight only where a Simple / LL128 connection sends one chunk at a time.
    const bool slots = conn && !m_streamed && m_depth == 1;
    auto init = [&conn](Slots& k, uint32_t from, uint32_t to) {
        k.conn = conn(from, to);
        if (k.conn.slots > 1)
        {
            k.latencyEnd.assign(k.conn.slots, Time(0));
        }
    };
    for (size_t t = 0; t < m_trees.size(); ++t)
    {
        m_state[t].resize(n);
        for (uint32_t r = 0; r < n; ++r)
        {
            Node& s = m_state[t][r];
            const auto& kids = m_trees[t].children[r];
            s.upFromChild.assign(kids.size(), 0);
            s.downLaunched.assign(kids.size(), 0);
            s.downSent.assign(kids.size(), 0);
            s.down.resize(kids.size());
            if (!slots)
            {
                continue;
            }
            if (m_trees[t].parent[r] >= 0)
            {
                init(s.up, r, static_cast<uint32_t>(m_trees[t].parent[r]));
            }
            for (size_t i = 0; i < kids.size(); ++i)
            {
                init(s.down[i], r, kids[i]);
            }
        }
    }
}

TreeExecutor::Slots&
TreeExecutor::ConnSlots(uint32_t t, uint32_t r, int32_t kid)
{
    Node& s = m_state[t][r];
    return kid < 0 ? s.up : s.down[kid];
}

void
TreeExecutor::Pump(uint32_t t, uint32_t r, int32_t kid)
{
    // As PipelineExecutor::Pump: chunk i's bytes follow chunk i-1's on the wire, delivered at
    // max(T + wire, D(i-1)) + bytes with T its latency end.
    Node& s = m_state[t][r];
    Slots& k = ConnSlots(t, r, kid);
    const uint32_t launched = kid < 0 ? s.upLaunched : s.downLaunched[kid];
    const uint32_t sent = kid < 0 ? s.upSent : s.downSent[kid];
    if (k.started == launched || k.started > sent || k.waking)
    {
        return;
    }
    const Time now = Simulator::Now();
    const Time T = k.latencyEnd[k.started % k.conn.slots];
    const bool follow = k.lastDelivered > T;
    const Time at = follow ? Max(k.lastDelivered, T + k.conn.wire) : T;
    if (at > now)
    {
        k.waking = true;
        Simulator::Schedule(at - now, &TreeExecutor::Wake, this, t, r, kid);
        return;
    }
    ++k.started;
    ++transfers;
    const StepStart start = follow ? StepStart::Streamed : StepStart::Pipelined;
    if (kid < 0)
    {
        const uint32_t p = static_cast<uint32_t>(m_trees[t].parent[r]);
        m_send(r, p, m_chunkBytes, 2 * t, start, [this, t, r]() { UpDelivered(t, r); });
        return;
    }
    const uint32_t child = m_trees[t].children[r][kid];
    const uint64_t key = (uint64_t(t) << 48) | (uint64_t(kid) << 32) | r;
    m_send(r, child, m_chunkBytes, 2 * t + 1, start, [this, key]() {
        DownDelivered(key >> 48, key & 0xffffffff, (key >> 32) & 0xffff);
    });
}

void
TreeExecutor::Wake(uint32_t t, uint32_t r, int32_t kid)
{
    ConnSlots(t, r, kid).waking = false;
    Pump(t, r, kid);
}

void
TreeExecutor::UpDelivered(uint32_t t, uint32_t r)
{
    const uint32_t p = static_cast<uint32_t>(m_trees[t].parent[r]);
    const size_t idx = ChildIndex(t, p, r);
    m_state[t][r].up.lastDelivered = Simulator::Now();
    ++m_state[t][r].upSent;
    ++m_state[t][p].upFromChild[idx];
    Advance(t, p);
    Advance(t, r);
}

void
TreeExecutor::DownDelivered(uint32_t t, uint32_t r, size_t i)
{
    const uint32_t child = m_trees[t].children[r][i];
    m_state[t][r].down[i].lastDelivered = Simulator::Now();
    ++m_state[t][r].downSent[i];
    ++m_state[t][child].downRecvd;
    Advance(t, child);
    Advance(t, r);
}

void
TreeExecutor::Join(uint32_t r)
{
    m_joined[r] = true;
    for (uint32_t t = 0; t < m_trees.size(); ++t)
    {
        Advance(t, r);
    }
}

uint32_t
TreeExecutor::Reduced(uint32_t t, uint32_t r) const
{
    // Chunks whose reduction over this node's subtree is complete.
    const Node& s = m_state[t][r];
    uint32_t k = m_chunks;
    for (uint32_t v : s.upFromChild)
    {
        k = std::min(k, v);
    }
    return k;
}

uint32_t
TreeExecutor::Final(uint32_t t, uint32_t r) const
{
    // Chunks of the final result this node holds.
    return m_trees[t].parent[r] < 0 ? Reduced(t, r) : m_state[t][r].downRecvd;
}

void
TreeExecutor::Advance(uint32_t t, uint32_t r)
{
    if (!m_joined[r])
    {
        return;
    }
    Node& s = m_state[t][r];
    const int32_t parent = m_trees[t].parent[r];
    const Time now = Simulator::Now();
    if (parent >= 0 && s.up.conn.slots > 1)
    {
        // NCCL's sender posts a chunk once it is reduced and a slot is free; its step latency
        // runs from then, alongside the chunks before it.
        const uint32_t K = s.up.conn.slots;
        while (s.upLaunched < Reduced(t, r) && s.upLaunched - s.upSent < K)
        {
            s.up.latencyEnd[s.upLaunched++ % K] = now + s.up.conn.step;
        }
        Pump(t, r, -1);
    }
    else if (parent >= 0)
    {
        while (s.upLaunched < Reduced(t, r) && s.upLaunched - s.upSent < m_depth)
        {
            const StepStart start =
                m_streamed && s.upLaunched > 0 ? StepStart::Streamed : StepStart::Fresh;
            ++s.upLaunched;
            ++transfers;
            const uint32_t p = static_cast<uint32_t>(parent);
            m_send(r, p, m_chunkBytes, 2 * t, start, [this, t, r]() {
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
        if (s.down[i].conn.slots > 1)
        {
            const uint32_t K = s.down[i].conn.slots;
            while (s.downLaunched[i] < Final(t, r) && s.downLaunched[i] - s.downSent[i] < K)
            {
                s.down[i].latencyEnd[s.downLaunched[i]++ % K] = now + s.down[i].conn.step;
            }
            Pump(t, r, static_cast<int32_t>(i));
            continue;
        }
        while (s.downLaunched[i] < Final(t, r) && s.downLaunched[i] - s.downSent[i] < m_depth)
        {
            const StepStart start =
                m_streamed && s.downLaunched[i] > 0 ? StepStart::Streamed : StepStart::Fresh;
            ++s.downLaunched[i];
            ++transfers;
            const uint32_t child = kids[i];
            const uint64_t key = (uint64_t(t) << 48) | (uint64_t(i) << 32) | r;
            m_send(r, child, m_chunkBytes, 2 * t + 1, start, [this, key]() {
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

size_t
TreeExecutor::ChildIndex(uint32_t t, uint32_t parent, uint32_t child) const
{
    const auto& kids = m_trees[t].children[parent];
    return std::find(kids.begin(), kids.end(), child) - kids.begin();
}

void
TreeExecutor::CheckDone(uint32_t t, uint32_t r)
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

// ------------------------------------------------------------------ all-to-all

DirectExecutor::DirectExecutor(uint32_t n, double blockBytes, SendFn send)
    : m_n(n),
      m_blockBytes(blockBytes),
      m_send(std::move(send)),
      m_joined(n, false),
      m_pending(n, 0)
{
}

void
DirectExecutor::Join(uint32_t r)
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

void
DirectExecutor::Start(uint32_t from, uint32_t to)
{
    ++transfers;
    m_send(from, to, m_blockBytes, from, StepStart::Fresh, [this, from, to]() {
        Finish(from);
        Finish(to);
    });
}

void
DirectExecutor::Finish(uint32_t r)
{
    if (--m_pending[r] == 0)
    {
        onRankDone(r);
    }
}

// ------------------------------------------------------------------ NVLS and NVLSTree

NvlsExecutor::NvlsExecutor(std::vector<std::vector<uint32_t>> servers,
                           std::vector<CollectiveTree> trees, uint32_t loops, double loopBytes,
                           uint32_t depth, uint32_t slots, LatencyFn latency, SendFn send,
                           uint32_t shards)
    : m_servers(std::move(servers)),
      m_trees(std::move(trees)),
      m_loops(std::max<uint32_t>(1, loops)),
      m_loopBytes(loopBytes),
      m_depth(std::max<uint32_t>(1, depth)),
      m_slots(std::max(m_depth, slots)),
      m_latency(std::move(latency)),
      m_send(std::move(send))
{
    // Comm ranks are 0..m_n-1 and switch s is node m_n + s; with one member per server (a
    // rail standing for all) the members are a subset and m_n is past the largest.
    m_ppn = m_servers.front().size();
    for (const auto& g : m_servers)
    {
        NS_ABORT_MSG_IF(g.size() != m_ppn, "NVLS needs the same number of GPUs on every server");
        for (uint32_t r : g)
        {
            m_n = std::max(m_n, r + 1);
        }
    }
    m_shards = shards > 0 ? shards : m_ppn;
    m_serverOf.assign(m_n, 0);
    m_headOf.assign(m_n, 0);
    for (uint32_t s = 0; s < m_servers.size(); ++s)
    {
        for (uint32_t h = 0; h < m_ppn; ++h)
        {
            m_serverOf[m_servers[s][h]] = s;
            m_headOf[m_servers[s][h]] = h;
        }
    }
    m_joined.assign(m_n, false);
    m_upQueued.assign(m_n, 0);
    m_loopsReceived.assign(m_n, 0);
    m_upArrived.assign(size_t(m_loops) * NServers(), 0);
    m_mcArrived.assign(size_t(m_loops) * NServers(), 0);
    m_heads.resize(size_t(m_loops) * NServers() * m_ppn);
}

uint32_t
NvlsExecutor::NServers() const
{
    return m_servers.size();
}

uint32_t
NvlsExecutor::Switch(uint32_t s) const
{
    return m_n + s;
}

NvlsExecutor::Head&
NvlsExecutor::HeadState(uint32_t loop, uint32_t s, uint32_t h)
{
    return m_heads[(size_t(loop) * NServers() + s) * m_ppn + h];
}

void
NvlsExecutor::Join(uint32_t r)
{
    m_joined[r] = true;
    TryUp(r);
}

void
NvlsExecutor::TryUp(uint32_t r)
{
    // A GPU queues its contribution to every loop at once; its FIFO connection to the switch
    // sends them one after another.
    const uint32_t s = m_serverOf[r];
    while (m_upQueued[r] < m_loops)
    {
        const uint32_t loop = m_upQueued[r]++;
        Queue(kUp, loop, s, m_headOf[r], 0, r, Switch(s), m_loopBytes);
    }
}

void
NvlsExecutor::Queue(Stage st, uint32_t loop, uint32_t s, uint32_t h, uint32_t t, uint32_t from,
                    uint32_t to, double bytes)
{
    const uint64_t conn = (uint64_t(st) << 56) | (uint64_t(t) << 55) |
                          (uint64_t(from & 0x7ffffff) << 27) | (to & 0x7ffffff);
    Conn* c = &m_conns[conn]; // elements of an unordered_map stay where they are
    const uint32_t id = m_sends.size();
    m_sends.push_back(Send{st, loop, s, h, t, from, to, bytes, c, Time(0)});
    c->queue.push_back(id);
    Pump(c);
}

void
NvlsExecutor::Pump(Conn* c)
{
    const Time now = Simulator::Now();
    // Ready transfers take free slots in order; each starts its step latency on admission.
    // Slots: a network connection (a tree edge between servers) is served by NCCL's proxy
    // thread, which keeps up to NCCL_STEPS of its steps in flight, so their latencies overlap;
    // an NVLink stage is moved by the GPU's own warps, which wait for, copy and post one step
    // after another (prims_simple.h genericOp: waitPeer, reduce/copy, postPeer), so its step's
    // synchronisation stays on its path: one at a time, latency then bytes, loop after loop.
    auto slots = [this](const Send& snd) {
        return snd.stage == kTreeUp || snd.stage == kTreeDown ? m_slots : 1u;
    };
    while (c->admitted < c->queue.size() && c->open < slots(m_sends[c->queue[c->admitted]]))
    {
        Send& snd = m_sends[c->queue[c->admitted]];
        if (c->latency.IsNegative())
        {
            c->latency = m_latency(snd.from, snd.to);
        }
        snd.latencyEnd = now + c->latency;
        ++c->admitted;
        ++c->open;
    }
    // Bytes go in FIFO order once the head's latency is over.
    while (c->inFlight < m_depth && c->admitted > 0)
    {
        const uint32_t id = c->queue.front();
        const Send& snd = m_sends[id];
        if (snd.latencyEnd > now)
        {
            if (!c->waking)
            {
                c->waking = true;
                Simulator::Schedule(snd.latencyEnd - now, &NvlsExecutor::Wake, this, c);
            }
            break;
        }
        // A network connection that is delivering a loop now, with the next one ready, keeps
        // its bytes flowing: the next loop streams behind it.
        const StepStart start = slots(snd) > 1 && c->lastDelivered == now ? StepStart::Streamed
                                                                           : StepStart::Pipelined;
        c->queue.pop_front();
        --c->admitted;
        ++c->inFlight;
        ++transfers;
        // Flow keys: the stage and the head's rail (and tree), for ECMP and the route cache.
        const uint64_t key = (uint64_t(snd.stage) << 32) | (uint64_t(snd.tree) << 31) | snd.head;
        m_send(snd.from, snd.to, snd.bytes, key, start, [this, id]() { Delivered(id); });
    }
}

void
NvlsExecutor::Wake(Conn* c)
{
    c->waking = false;
    Pump(c);
}

void
NvlsExecutor::Delivered(uint32_t id)
{
    const Send snd = m_sends[id];
    --snd.conn->inFlight;
    --snd.conn->open;
    snd.conn->lastDelivered = Simulator::Now();
    Pump(snd.conn);
    const size_t ls = size_t(snd.loop) * NServers() + snd.server;
    switch (snd.stage)
    {
    case kUp:
        if (++m_upArrived[ls] == m_ppn)
        {
            // In-switch reduction complete: reduced shard h to head h.
            for (uint32_t h = 0; h < m_ppn; ++h)
            {
                Queue(kReduced, snd.loop, snd.server, h, 0, Switch(snd.server),
                      m_servers[snd.server][h], m_loopBytes / m_shards);
            }
        }
        break;
    case kReduced:
        HeadState(snd.loop, snd.server, snd.head).reduced = true;
        Progress(snd.loop, snd.server, snd.head);
        break;
    case kTreeUp:
        // Arrived at the parent server's head (snd.server is the parent).
        ++HeadState(snd.loop, snd.server, snd.head).childUp[snd.tree];
        Progress(snd.loop, snd.server, snd.head);
        break;
    case kTreeDown:
        HeadState(snd.loop, snd.server, snd.head).final[snd.tree] = true;
        Progress(snd.loop, snd.server, snd.head);
        break;
    case kMcUp:
        if (++m_mcArrived[ls] == m_ppn)
        {
            for (uint32_t r : m_servers[snd.server])
            {
                Queue(kMcDown, snd.loop, snd.server, m_headOf[r], 0, Switch(snd.server), r,
                      m_loopBytes);
            }
        }
        break;
    case kMcDown: {
        const uint32_t r = snd.to;
        if (++m_loopsReceived[r] == m_loops)
        {
            onRankDone(r);
        }
        break;
    }
    }
}

void
NvlsExecutor::Progress(uint32_t loop, uint32_t s, uint32_t h)
{
    Head& hs = HeadState(loop, s, h);
    if (!hs.reduced)
    {
        return;
    }
    const uint32_t me = m_servers[s][h];
    const double part = m_loopBytes / m_shards / std::max<size_t>(1, m_trees.size());
    bool allFinal = true;
    for (uint32_t t = 0; t < m_trees.size(); ++t)
    {
        const CollectiveTree& tree = m_trees[t];
        const auto& kids = tree.children[s];
        if (!hs.upDone[t] && hs.childUp[t] == kids.size())
        {
            hs.upDone[t] = true;
            if (tree.parent[s] < 0)
            {
                hs.final[t] = true; // the root holds the reduction over all servers
            }
            else
            {
                const uint32_t p = static_cast<uint32_t>(tree.parent[s]);
                Queue(kTreeUp, loop, p, h, t, me, m_servers[p][h], part);
            }
        }
        if (hs.final[t] && !hs.downSent[t])
        {
            hs.downSent[t] = true;
            for (uint32_t k : kids)
            {
                Queue(kTreeDown, loop, k, h, t, me, m_servers[k][h], part);
            }
        }
        allFinal = allFinal && hs.final[t];
    }
    if (allFinal && !hs.mcSent)
    {
        hs.mcSent = true;
        Queue(kMcUp, loop, s, h, 0, me, Switch(s), m_loopBytes / m_shards);
    }
}

// ------------------------------------------------------------------ helpers

uint32_t
TreeChunks(double perTreeBytes, uint64_t chunkBytes)
{
    const double chunk = std::min<double>(chunkBytes, 256.0 * 1024);
    return static_cast<uint32_t>(std::clamp(std::ceil(perTreeBytes / chunk), 1.0, 128.0));
}

uint32_t
StreamedTreeChunks(double perTreeBytes)
{
    const double passBytes = 512.0 * 8; // NCCL_LL_MAX_NTHREADS x 8 payload bytes per line
    return static_cast<uint32_t>(std::clamp(std::ceil(perTreeBytes / passBytes), 1.0, 128.0));
}

namespace
{

/// NCCL's binary tree over ranks 0..n-1 (src/graph/trees.cc, ncclGetBtree): in order, rank
/// 0 the root; a rank's parent clears its lowest set bit and sets the next one up (or only
/// clears it past the end), so neighbours in the tree are near in rank order.
int32_t
BtreeParent(uint32_t n, uint32_t rank)
{
    if (rank == 0)
    {
        return -1;
    }
    uint32_t bit = 1;
    while (bit < n && !(bit & rank))
    {
        bit <<= 1;
    }
    uint32_t up = (rank ^ bit) | (bit << 1);
    if (up >= n)
    {
        up = rank ^ bit;
    }
    return static_cast<int32_t>(up);
}

} // namespace

std::vector<CollectiveTree>
DoubleBinaryTree(uint32_t n)
{
    // NCCL's double binary tree (ncclGetDtree): the in-order binary tree, and as the second
    // tree its mirror image (rank n-1-r) for an even n or the tree shifted by one rank for an
    // odd n, so a rank is interior in at most one of them.
    std::vector<CollectiveTree> trees(2);
    for (uint32_t t = 0; t < 2; ++t)
    {
        CollectiveTree& tree = trees[t];
        tree.parent.assign(n, -1);
        tree.children.assign(n, {});
        for (uint32_t r = 0; r < n; ++r)
        {
            int32_t parent;
            if (t == 0)
            {
                parent = BtreeParent(n, r);
            }
            else if (n % 2 == 0)
            {
                const int32_t p = BtreeParent(n, n - 1 - r);
                parent = p < 0 ? -1 : static_cast<int32_t>(n - 1) - p;
            }
            else
            {
                const int32_t p = BtreeParent(n, (r + n - 1) % n);
                parent = p < 0 ? -1 : static_cast<int32_t>((p + 1) % n);
            }
            tree.parent[r] = parent;
        }
        for (uint32_t r = 0; r < n; ++r)
        {
            if (tree.parent[r] >= 0)
            {
                tree.children[tree.parent[r]].push_back(r);
            }
        }
    }
    return trees;
}

} // namespace ns3
