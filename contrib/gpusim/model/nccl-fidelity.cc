/*
 * Collective-level fidelity (NcclWorld attribute Fidelity=collective; doc/flow-backend.md).
 *
 * A collective whose ranks all join together and whose links carry nothing else runs the same
 * way every time: its per-rank completion times after the start depend only on the
 * communicator, the op (kind, bytes, dtype, root) and the topology. So each such op is run in
 * detail (chunk level, through the flow backend) until one run is known to have been alone on
 * its links from start to end; later instances under the same conditions replay that run's
 * completion times without starting a transfer. Everything else (skewed joins, busy links,
 * other backends) runs in detail as at Fidelity=chunk.
 *
 *   Learn  first instance: detailed, records the directed links its transfers cross and how
 *          long it ran (its span).
 *   Watch  next instance whose ranks all join within FidelitySkew x span of the first, with its
 *          links idle then: detailed from the last join, links reserved; at the end the flows
 *          started on them must be exactly its own, else it is not replayable.
 *   Fast   later instances under the same conditions: completion events only (last join +
 *          the watched run's per-rank times), links reserved until the last rank is done. If
 *          other flows started on them meanwhile (traffic that began after the replay did),
 *          that is a conflict and the op is never replayed again.
 *
 * Watched and replayed instances start at the last join: a rank that joined up to
 * FidelitySkew x span earlier waits that long. Completion is monotone and non-expansive in
 * the join times (a later join delays no completion by more than its own delay), so each such
 * instance is off by at most that skew, and the errors do not grow along a chain of
 * collectives: at most FidelitySkew (default 0.1 %) of the collective time.
 *
 * Fidelity=auto is this with ring edge flows (RingFlows) and without NVLS trial loops (not
 * exact), and on a backend other than the flow backend the plain chunk path (as
 * Fidelity=chunk, to the event). Every instance records how it ran and, at chunk level, why
 * (CollectiveRecord::path, chunkReason); FidelityStats counts them.
 */
#include "ns3/flow-backend.h"
#include "ns3/json-writer.h"
#include "ns3/nccl-collective.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("NcclFidelity");

// ------------------------------------------------------------------ NcclWorld side

const char*
ToString(CollectivePath p)
{
    switch (p)
    {
    case CollectivePath::Chunk:
        return "chunk";
    case CollectivePath::Replayed:
        return "replayed";
    case CollectivePath::EdgeFlows:
        return "edge-flows";
    case CollectivePath::TrialLoops:
        return "trial-loops";
    case CollectivePath::OneRail:
        return "one-rail";
    }
    return "?";
}

const char*
ToString(ChunkReason r)
{
    switch (r)
    {
    case ChunkReason::None:
        return "none";
    case ChunkReason::Forced:
        return "forced";
    case ChunkReason::Backend:
        return "backend";
    case ChunkReason::Learning:
        return "learning";
    case ChunkReason::Skew:
        return "skew";
    case ChunkReason::Busy:
        return "busy";
    case ChunkReason::Conflict:
        return "conflict";
    case ChunkReason::Count:
        break;
    }
    return "?";
}

const char*
Describe(ChunkReason r)
{
    switch (r)
    {
    case ChunkReason::None:
        return "not chunk level";
    case ChunkReason::Forced:
        return "chunk level requested";
    case ChunkReason::Backend:
        return "not the flow backend";
    case ChunkReason::Learning:
        return "no edge-flow form, learnt for replay";
    case ChunkReason::Skew:
        return "ranks did not join together";
    case ChunkReason::Busy:
        return "links shared with other traffic";
    case ChunkReason::Conflict:
        return "after a conflict";
    case ChunkReason::Count:
        break;
    }
    return "?";
}

uint64_t
NcclWorld::FidelityStats::ChunkTotal() const
{
    uint64_t n = 0;
    for (uint64_t c : chunk)
    {
        n += c;
    }
    return n;
}

void
NcclWorld::FidelityStats::Add(const FidelityStats& o)
{
    replayed += o.replayed;
    watched += o.watched;
    unwatched += o.unwatched;
    detailed += o.detailed;
    conflicts += o.conflicts;
    fluid += o.fluid;
    oneRail += o.oneRail;
    for (size_t i = 0; i < chunk.size(); ++i)
    {
        chunk[i] += o.chunk[i];
    }
}

std::string
NcclWorld::FidelityStats::Json(const std::string& mode) const
{
    gpusim::JsonWriter j;
    j.BeginObject();
    if (!mode.empty())
    {
        j.Key("mode").String(mode);
    }
    j.Key("edge_flows").Uint(fluid).Key("one_rail").Uint(oneRail).Key("replayed").Uint(replayed);
    j.Key("chunk").Uint(ChunkTotal());
    j.Key("chunk_reasons").BeginObject();
    for (size_t i = 0; i < chunk.size(); ++i)
    {
        if (chunk[i] > 0)
        {
            j.Key(ToString(static_cast<ChunkReason>(i))).Uint(chunk[i]);
        }
    }
    j.EndObject();
    j.Key("conflicts").Uint(conflicts);
    j.EndObject();
    return j.Take();
}

bool
NcclWorld::IsAutoFidelity() const
{
    return m_fidelity == "auto";
}

bool
NcclWorld::IsCollectiveFidelity() const
{
    if (m_fabricEvents && (m_fidelity == "collective" || m_fidelity == "auto"))
    {
        // Replays and edge flows assume the links a watched run saw; links that go down or
        // slow down break that: every collective runs chunk by chunk.
        return false;
    }
    if (m_fidelity == "collective")
    {
        return true;
    }
    if (m_fidelity == "auto")
    {
        // Other backends have no shortcut: the chunk path itself, not its collective-level
        // stand-in (which defers each rank's executor join by one event).
        return m_flowNet != nullptr;
    }
    if (m_fidelity != "chunk")
    {
        throw std::invalid_argument("NcclWorld Fidelity must be chunk, collective or auto, not '" +
                                    m_fidelity + "'");
    }
    return false;
}

FlowBackend*
NcclWorld::GetFlowBackend() const
{
    return m_flowNet;
}

double
NcclWorld::GetFidelitySkew() const
{
    // auto allows no skew: a rank that joined earlier than the others would wait for them,
    // and on shared links that is not bounded by the wait (trees on 4 servers: 0.35 % off).
    // Only ranks joining at one instant take a shortcut; the rest run exactly as at chunk.
    return IsAutoFidelity() ? 0.0 : m_fidelitySkew;
}

bool
NcclWorld::LinksFree(const std::vector<uint32_t>& links) const
{
    if (!m_flowNet)
    {
        return false;
    }
    const Time now = Simulator::Now();
    for (uint32_t l : links)
    {
        if (m_flowNet->GetLinkActiveFlows(l) != 0 || m_flowNet->GetLinkReservedUntil(l) > now)
        {
            return false;
        }
    }
    return true;
}

void
NcclWorld::Reserve(const std::vector<uint32_t>& links, Time until)
{
    // On the backend, so that every job sharing the fabric sees the others' replays.
    if (m_flowNet)
    {
        m_flowNet->ReserveLinks(links, until);
    }
}

bool
NcclWorld::IsRingFlows() const
{
    return (m_ringFlows || IsAutoFidelity()) && IsCollectiveFidelity();
}

uint32_t
NcclWorld::GetNvlsTrialLoops() const
{
    // Fewer loops leave no steady-state window between the fill and the drain. Not exact
    // (0.7-4 % off), so never under auto.
    return IsRingFlows() && !IsAutoFidelity() && m_nvlsTrialLoops > 0
               ? std::max<uint32_t>(m_nvlsTrialLoops, 32)
               : 0;
}

void
NcclWorld::CountOpen(uint32_t gpu, int delta)
{
    if (gpu >= m_openOnGpu.size())
    {
        m_openOnGpu.resize(gpu + 1, 0);
    }
    m_openOnGpu[gpu] += delta;
}

uint32_t
NcclWorld::GetOpen(uint32_t gpu) const
{
    return gpu < m_openOnGpu.size() ? m_openOnGpu[gpu] : 0;
}

const NcclWorld::FidelityStats&
NcclWorld::GetFidelityStats() const
{
    return m_fidelityStats;
}

NcclWorld::FidelityStats&
NcclWorld::MutableFidelityStats()
{
    return m_fidelityStats;
}

// ------------------------------------------------------------------ Communicator side

void
Communicator::ExecJoin(uint64_t seq, uint32_t commRank)
{
    Instance& inst = m_instances.at(seq);
    if (inst.execJoin.empty())
    {
        inst.execJoin.assign(m_nranks, false);
    }
    inst.execJoin[commRank] = true;
    ++inst.execJoined;
    if (inst.mode != Mode::Undecided)
    {
        if (inst.mode != Mode::Fast && inst.mode != Mode::Fluid)
        {
            inst.exec->Join(commRank);
        }
        return;
    }
    if (inst.memo->ringLinks.empty() && m_world->IsRingFlows() && m_world->GetFlowBackend() &&
        (inst.memo->plan.algo == "nvls" || inst.memo->plan.algo == "nvlstree"))
    {
        NvlsLinks(*inst.memo); // whether one rail can stand for all
    }
    const MemoEntry& m = *inst.memo;
    const bool ring = RingFlowsApply(m, *inst.op);
    const bool nvls = NvlsFlowsApply(m, *inst.op);
    const bool edge = ring || nvls;
    if (!m_world->GetFlowBackend())
    {
        StartDetailed(seq, inst, Mode::Detailed, ChunkReason::Backend);
        return;
    }
    if (!edge && m.state == MemoEntry::State::Never)
    {
        StartDetailed(seq, inst, Mode::Detailed, ChunkReason::Conflict);
        return;
    }
    if (!edge && m.state == MemoEntry::State::Learn)
    {
        StartDetailed(seq, inst, Mode::Learn, ChunkReason::Learning);
        return;
    }
    if (inst.execJoined < m_nranks)
    {
        // Watch, replay or edge flows: wait for the last rank, at most the skew allowed (of
        // the op's last run, or before any of the tuner's estimate).
        if (inst.execJoined == 1)
        {
            const double spanNs = m.span.IsStrictlyPositive()
                                      ? static_cast<double>(m.span.GetNanoSeconds())
                                      : m.plan.estimateUs * 1e3;
            const Time wait = NanoSeconds(std::llround(spanNs * m_world->GetFidelitySkew()));
            inst.deadline = Simulator::Schedule(wait, &Communicator::GiveUpWaiting, this, seq);
        }
        return;
    }
    Simulator::Cancel(inst.deadline);
    if (nvls && m.state == MemoEntry::State::Fast && m_world->LinksFree(m.links))
    {
        Decide(seq, inst); // an earlier one-rail run of it, replayed
        return;
    }
    if (ring)
    {
        StartRingFlows(seq, inst);
        return;
    }
    if (nvls)
    {
        StartNvlsFlows(seq, inst);
        return;
    }
    Decide(seq, inst);
}

void
Communicator::GiveUpWaiting(uint64_t seq)
{
    Instance& inst = m_instances.at(seq);
    if (inst.mode == Mode::Undecided)
    {
        StartDetailed(seq, inst, Mode::Detailed, ChunkReason::Skew);
    }
}

void
Communicator::StartDetailed(uint64_t seq, Instance& inst, Mode mode, ChunkReason why)
{
    inst.mode = mode;
    inst.start = Simulator::Now();
    inst.record.path = CollectivePath::Chunk;
    inst.record.chunkReason = why;
    ++m_world->MutableFidelityStats().chunk[static_cast<size_t>(why)];
    if (mode == Mode::Detailed)
    {
        ++m_world->MutableFidelityStats().detailed;
    }
    if (mode == Mode::Watch)
    {
        m_world->Reserve(inst.memo->links, Time::Max());
    }
    const bool record = mode == Mode::Learn || mode == Mode::Watch;
    inst.exec = MakeExecutor(*inst.op, inst.record.plan, record ? &inst.sent : nullptr);
    inst.exec->onRankDone = [this, seq](uint32_t r) { FinishRank(seq, r); };
    for (uint32_t r = 0; r < m_nranks; ++r)
    {
        if (inst.execJoin[r])
        {
            inst.exec->Join(r);
        }
    }
}

void
Communicator::Decide(uint64_t seq, Instance& inst)
{
    MemoEntry& m = *inst.memo;
    FlowBackend* net = m_world->GetFlowBackend();
    if (!m_world->LinksFree(m.links))
    {
        StartDetailed(seq, inst, Mode::Detailed, ChunkReason::Busy);
        return;
    }
    inst.snap.resize(m.links.size());
    for (size_t i = 0; i < m.links.size(); ++i)
    {
        inst.snap[i] = net->GetLinkFlowStarts(m.links[i]);
    }
    if (m.state == MemoEntry::State::Watch)
    {
        StartDetailed(seq, inst, Mode::Watch, ChunkReason::Learning);
        return;
    }
    inst.mode = Mode::Fast;
    inst.start = Simulator::Now();
    inst.record.path = CollectivePath::Replayed;
    inst.record.chunkReason = ChunkReason::None;
    ++m_world->MutableFidelityStats().replayed;
    m_world->Reserve(m.links, inst.start + m.span);
    for (uint32_t r = 0; r < m_nranks; ++r)
    {
        Simulator::Schedule(m.done[r], &Communicator::FinishRank, this, seq, r);
    }
    NS_LOG_INFO("comm " << m_id << " seq " << seq << ": replayed, done in " << m.span);
}

void
Communicator::FinishCollectiveLevel(Instance& inst)
{
    MemoEntry& m = *inst.memo;
    CollectiveRecord& rec = inst.record;
    FlowBackend* net = m_world->GetFlowBackend();
    NcclWorld::FidelityStats& stats = m_world->MutableFidelityStats();
    // What a run alone on its links leaves for replay: each rank's completion after its start.
    auto rememberForReplay = [&]() {
        m.done.resize(m_nranks);
        m.span = Time(0);
        for (uint32_t r = 0; r < m_nranks; ++r)
        {
            m.done[r] = rec.rankDone[r] - inst.start;
            m.span = Max(m.span, m.done[r]);
        }
        m.transfers = rec.transfers;
        m.state = MemoEntry::State::Fast;
    };
    if (inst.mode == Mode::Fluid)
    {
        // The chunk level's transfers: every edge flow stands for one per item.
        const bool oneRail = inst.nvls && inst.nvls->oneRail;
        rec.transfers = inst.ring    ? uint64_t(inst.ring->items) * inst.ring->endNs.size()
                        : oneRail ? inst.nvls->perLoop
                                  : uint64_t(inst.nvls->loops) * inst.nvls->perLoop;
        const std::vector<uint64_t>& own = oneRail ? m.railOwn : m.ringOwn;
        m_world->Reserve(m.ringLinks, Simulator::Now());
        for (size_t i = 0; i < m.ringLinks.size(); ++i)
        {
            if (net->GetLinkFlowStarts(m.ringLinks[i]) - inst.snap[i] != own[i] * inst.ownScale)
            {
                // Other traffic started on its links while it ran: the edge flows shared
                // with it at fluid rates, not chunk by chunk. Chunk level from now on.
                ++stats.conflicts;
                m.ringConflict = true;
                NS_LOG_WARN("comm " << m_id << " seq " << rec.seq
                                    << ": run as edge flows, met other traffic");
                return;
            }
        }
        if (oneRail &&
            (m.state == MemoEntry::State::Learn || m.state == MemoEntry::State::Watch))
        {
            // One rail ran alone on its links from the instant its last rank joined, chunk by
            // chunk: what a watched chunk-level run records. Later lockstep instances on idle
            // links replay it instead of running the rail's loops again. (Ring edge flows cost
            // one flow per edge and share their links with late traffic at fluid rates, which a
            // replay could not: they run each time.)
            m.links = m.ringLinks;
            rememberForReplay();
        }
        return;
    }
    if (inst.mode == Mode::Fast)
    {
        rec.transfers = m.transfers;
        m_world->Reserve(m.links, Simulator::Now());
        for (size_t i = 0; i < m.links.size(); ++i)
        {
            if (net->GetLinkFlowStarts(m.links[i]) != inst.snap[i])
            {
                // Traffic that started after the replay shared its links: the replay missed
                // that contention. Never replay this op again, nor run its edge flows (it
                // may have replayed one of their runs): chunk level from now on.
                ++stats.conflicts;
                m.state = MemoEntry::State::Never;
                m.ringConflict = true;
                NS_LOG_WARN("comm " << m_id << " seq " << rec.seq
                                    << ": replayed collective met other traffic");
                break;
            }
        }
        return;
    }
    rec.transfers = inst.exec->transfers;
    if (inst.mode != Mode::Learn && inst.mode != Mode::Watch)
    {
        return;
    }
    // The links of every transfer it started, and how many flows it put on each.
    std::map<uint32_t, uint64_t> own;
    for (const auto& [k, count] : inst.sent)
    {
        const std::vector<uint32_t> route =
            net->GetRouteLinks(std::get<0>(k), std::get<1>(k), std::get<2>(k));
        for (uint32_t l : route)
        {
            own[l] += count;
        }
    }
    if (inst.mode == Mode::Learn)
    {
        m.links.clear();
        m.ownStarts.clear();
        for (const auto& [l, c] : own)
        {
            m.links.push_back(l);
            m.ownStarts.push_back(c);
        }
        m.state = MemoEntry::State::Watch;
        m.span = Time(0);
        for (uint32_t r = 0; r < m_nranks; ++r)
        {
            m.span = Max(m.span, rec.rankDone[r] - inst.start);
        }
        ++stats.detailed;
        return;
    }
    m_world->Reserve(m.links, Simulator::Now());
    bool alone = own.size() == m.links.size();
    for (size_t i = 0; alone && i < m.links.size(); ++i)
    {
        auto it = own.find(m.links[i]);
        alone = it != own.end() && it->second == m.ownStarts[i] &&
                net->GetLinkFlowStarts(m.links[i]) - inst.snap[i] == m.ownStarts[i];
    }
    if (!alone)
    {
        ++stats.unwatched;
        return;
    }
    rememberForReplay();
    ++stats.watched;
}

} // namespace ns3
