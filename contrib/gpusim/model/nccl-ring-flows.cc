/*
 * Ring collectives as edge flows (NcclWorld Fidelity=collective with RingFlows=true;
 * doc/flow-backend.md).
 *
 * The chunk-level ring (PipelineExecutor, depth 1) sends `items` items from every position p
 * of every channel to the next position; item i leaves p once p's item i-1 was delivered and
 * item i-1 from p-1 arrived. With d_p(i) the time one item takes on edge p (its step latency
 * for the first loop's items, its bytes at the edge's rate, the route latency), the delivery
 * of item i from p is the max-plus recurrence
 *     D(p, i) = max(D(p, i-1), D(p-1, i-1)) + d_p(i),    D(., -1) = 0,
 * i.e. the heaviest path through the (position, item) grid. When d_p does not depend on i
 * (apart from the first-loop step latency) the heaviest path stays on the slowest edge k
 * before p for all but the last m = p - k items and then walks k+1..p once each:
 *     D(p, I) = (I + 1 - m) d_k + sum_{j=1..m} d_{k+j}      (plus the step latencies),
 * maximised over the edges k that are slower than every edge between them and p.
 *
 * The edge rates come from the backend: one flow per edge and channel carrying all `items`
 * items' wire bytes, started together, so max-min sharing between channels on common NVLink
 * and NIC links is the backend's. The per-item rate of an edge is its flow's bytes over its
 * drain time. This is exact when each edge keeps one rate throughout (every edge alone on its
 * links, or all sharing edges equally loaded); where edges of different speed share a link
 * the chunk-level run staggers them, which only changes the fast edges' items on the path
 * tail (at most n - 1 of the `items`). Rank r is done when its last send and last receive
 * (D(p, I) and D(p-1, I)) are in, on every channel.
 */
#include "ns3/flow-backend.h"
#include "ns3/nccl-collective.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("NcclRingFlows");

namespace
{

/// Delivery time (after the start) of the last item from every position of one channel.
/// dB: per-edge time of a later-loop item (bytes at the edge rate + route latency); s: the
/// step latency a first-loop item adds; `steps` items form the first loop.
std::vector<double>
LastDeliveries(const std::vector<double>& dB, const std::vector<double>& s, uint32_t items,
               uint32_t steps)
{
    const uint32_t n = dB.size();
    const uint64_t last = items - 1; // I
    // Prefix sums over the ring laid out twice, for sums over k+1..p across the wrap.
    std::vector<double> pb(2 * n + 1, 0.0);
    std::vector<double> ps(2 * n + 1, 0.0);
    for (uint32_t q = 0; q < 2 * n; ++q)
    {
        pb[q + 1] = pb[q] + dB[q % n];
        ps[q + 1] = ps[q] + s[q % n];
    }
    // Rank edges by their per-item time averaged over the items (the path's stays).
    const double firstShare = double(std::min(steps, items)) / items;
    std::vector<double> key(n);
    for (uint32_t q = 0; q < n; ++q)
    {
        key[q] = dB[q] + s[q] * firstShare;
    }
    const double keyMax = *std::max_element(key.begin(), key.end());
    const uint32_t maxWalk = static_cast<uint32_t>(std::min<uint64_t>(n - 1, last));
    std::vector<double> out(n);
    for (uint32_t p = 0; p < n; ++p)
    {
        double best = -1;
        double bestKey = -1;
        for (uint32_t m = 0; m <= maxWalk; ++m)
        {
            const uint32_t k = (p + n - m) % n;
            if (key[k] < bestKey)
            {
                continue; // a faster edge further back never makes a heavier path
            }
            bestKey = key[k];
            // Stays: items 0..I-m on k; then item I-m+j on k+j for j = 1..m.
            const uint64_t stays = last + 1 - m;
            double w = stays * dB[k] + std::min<uint64_t>(stays, steps) * s[k];
            const uint32_t lo = k + 1; // positions k+1..k+m in the doubled layout
            w += pb[lo + m] - pb[lo];
            // Walk items still in the first loop: I - m + j < steps.
            if (steps + m > last)
            {
                const uint64_t jmax = std::min<uint64_t>(m, steps + m - last - 1);
                w += ps[lo + jmax] - ps[lo];
            }
            best = std::max(best, w);
            if (key[k] >= keyMax)
            {
                break; // the slowest edge: any path starting further back is lighter
            }
        }
        out[p] = best;
    }
    return out;
}

} // namespace

bool
Communicator::RingFlowsApply(const MemoEntry& m, const gpusim::Op& op) const
{
    using gpusim::CollKind;
    // Ring connections between servers with chunks in flight (RingNetSlots > 1) put the
    // heaviest path on the NVLink edges, whose rates in the chunk-level run differ from the
    // edge flows' (up to 20 % at 1-32 MiB on 2 x dgx-h100): run those chunk by chunk.
    return m_world->IsRingFlows() && m_world->GetFlowBackend() && m_nranks >= 2 &&
           op.bytes > 0 && !m.ringConflict && m.plan.algo == "ring" &&
           m.plan.pipelineDepth == 1 &&
           (m_world->RingNetSlots(m.plan.proto) == 1 || NumServers() == 1) &&
           (op.coll == CollKind::AllReduce || op.coll == CollKind::AllGather ||
            op.coll == CollKind::ReduceScatter);
}

void
Communicator::StartRingFlows(uint64_t seq, Instance& inst)
{
    MemoEntry& m = *inst.memo;
    FlowBackend* net = m_world->GetFlowBackend();
    const CollectivePlan& plan = m.plan;
    const uint32_t n = m_nranks;
    const uint32_t C = plan.channels;
    auto fr = std::make_unique<FluidRing>();
    for (uint32_t c = 0; c < C; ++c)
    {
        fr->orders.push_back(RingOrder(c));
    }
    if (m.ringLinks.empty())
    {
        std::map<uint32_t, uint64_t> own;
        for (uint32_t c = 0; c < C; ++c)
        {
            for (uint32_t p = 0; p < n; ++p)
            {
                const auto& o = fr->orders[c];
                for (uint32_t l : net->GetRouteLinks(m_gpus[o[p]], m_gpus[o[(p + 1) % n]], c))
                {
                    ++own[l];
                }
            }
        }
        for (const auto& [l, count] : own)
        {
            m.ringLinks.push_back(l);
            m.ringOwn.push_back(count);
        }
    }
    // Another collective open on a member GPU (launched beside this one, e.g. on a second
    // stream) would contend chunk by chunk with the edge flows: run in detail instead.
    bool alone = m_world->LinksFree(m.ringLinks);
    for (uint32_t r = 0; alone && r < n; ++r)
    {
        alone = m_world->GetOpen(m_gpus[r]) == 1;
    }
    if (!alone)
    {
        StartDetailed(seq, inst, Mode::Detailed, ChunkReason::Busy);
        return;
    }
    inst.snap.resize(m.ringLinks.size());
    for (size_t i = 0; i < m.ringLinks.size(); ++i)
    {
        inst.snap[i] = net->GetLinkFlowStarts(m.ringLinks[i]);
    }
    inst.mode = Mode::Fluid;
    inst.start = Simulator::Now();
    inst.record.path = CollectivePath::EdgeFlows;
    inst.record.chunkReason = ChunkReason::None;
    ++m_world->MutableFidelityStats().fluid;
    m_world->Reserve(m.ringLinks, Time::Max());

    const RingShape shape = MakeRingShape(inst.op->coll, inst.op->bytes, n, plan);
    fr->items = shape.loops * shape.steps;
    fr->steps = shape.steps;
    fr->stepNs.resize(C * n);
    fr->latNs.resize(C * n);
    fr->endNs.assign(C * n, 0.0);
    fr->pending = C * n;
    FluidRing& ring = *fr;
    inst.ring = std::move(fr);
    for (uint32_t e = 0; e < C * n; ++e)
    {
        const uint32_t c = e / n;
        const uint32_t p = e % n;
        const uint32_t src = m_gpus[ring.orders[c][p]];
        const uint32_t dst = m_gpus[ring.orders[c][(p + 1) % n]];
        ring.stepNs[e] = static_cast<double>(StepDelay(plan, src, dst, false).GetNanoSeconds());
        ring.latNs[e] = std::round(m_world->Hop(src, dst).wireUs * 1e3);
        const uint64_t wire = WireBytes(plan, src, dst, shape.itemBytes) * ring.items;
        m_world->StartTransfer(Time(0), src, dst, wire, c, false,
                               [this, seq, e]() { RingFlowDelivered(seq, e); });
    }
    NS_LOG_INFO("comm " << m_id << " seq " << seq << ": ring as " << C * n << " edge flows");
}

void
Communicator::RingFlowDelivered(uint64_t seq, uint32_t e)
{
    Instance& inst = m_instances.at(seq);
    FluidRing& ring = *inst.ring;
    ring.endNs[e] = static_cast<double>((Simulator::Now() - inst.start).GetNanoSeconds());
    if (--ring.pending != 0)
    {
        return;
    }
    const uint32_t n = m_nranks;
    const uint32_t C = ring.orders.size();
    std::vector<double> doneNs(n, 0.0);
    for (uint32_t c = 0; c < C; ++c)
    {
        std::vector<double> dB(n);
        std::vector<double> s(n);
        for (uint32_t p = 0; p < n; ++p)
        {
            const uint32_t e = c * n + p;
            // The flow drained all items at the edge's rate, then waited out the latency once.
            const double drain = std::max(0.0, ring.endNs[e] - ring.latNs[e]);
            dB[p] = drain / ring.items + ring.latNs[e];
            s[p] = ring.stepNs[e];
        }
        const std::vector<double> last = LastDeliveries(dB, s, ring.items, ring.steps);
        for (uint32_t p = 0; p < n; ++p)
        {
            const uint32_t r = ring.orders[c][p];
            doneNs[r] = std::max({doneNs[r], last[p], last[(p + n - 1) % n]});
        }
    }
    MemoEntry& m = *inst.memo;
    m.span = Time(0);
    const Time now = Simulator::Now();
    for (uint32_t r = 0; r < n; ++r)
    {
        const Time at = Max(now, inst.start + NanoSeconds(std::llround(doneNs[r])));
        m.span = Max(m.span, at - inst.start);
        Simulator::Schedule(at - now, &Communicator::FinishRank, this, seq, r);
    }
    m_world->Reserve(m.ringLinks, inst.start + m.span);
}

} // namespace ns3
