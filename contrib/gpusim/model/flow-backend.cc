#include "ns3/flow-backend.h"

#include "ns3/indexed-heap.h"
#include "ns3/json-writer.h"

#include "ns3/boolean.h"
#include "ns3/global-value.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("FlowBackend");
NS_OBJECT_ENSURE_REGISTERED(FlowBackend);

namespace
{

/// Route cache bound: flow keys are usually few (channels), but never let it grow unbounded.
constexpr size_t kMaxCachedRoutes = 1u << 20;

int64_t
NowNs()
{
    return Simulator::Now().GetNanoSeconds();
}

} // namespace


TypeId
FlowBackend::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::FlowBackend")
            .SetParent<NetworkBackend>()
            .SetGroupName("Gpusim")
            .AddConstructor<FlowBackend>()
            .AddAttribute("RecordRateHistory",
                          "Keep every flow's rate segments in memory (needed for rollback)",
                          BooleanValue(false),
                          MakeBooleanAccessor(&FlowBackend::SetRecordRateHistory,
                                              &FlowBackend::GetRecordRateHistory),
                          MakeBooleanChecker())
            .AddAttribute("IncrementalRates",
                          "Re-rate only the flows on links whose flow set changed plus those "
                          "whose max-min bottleneck condition the new rates break, holding "
                          "the others' rates (false: re-rate the whole connected component, "
                          "the algorithm before 2026-11). "
                          "Same max-min rates up to floating-point rounding.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&FlowBackend::m_incremental),
                          MakeBooleanChecker())
            .AddAttribute("Routing",
                          "Load balancing over equal-cost paths: ecmp, dmodk, adaptive (one "
                          "path per transfer, Route()), spray, spray-rr, flowlet (each transfer "
                          "split into equal sub-flows over all equal-cost paths, the fluid limit "
                          "of per-packet spraying); empty: the topology's routing",
                          StringValue(""),
                          MakeStringAccessor(&FlowBackend::m_routingName),
                          MakeStringChecker())
            .AddTraceSource("TransferStarted",
                            "StartTransfer was called (delivered time unset)",
                            MakeTraceSourceAccessor(&FlowBackend::m_startedTrace),
                            "ns3::FlowBackend::TransferTracedCallback")
            .AddTraceSource("TransferDelivered",
                            "A transfer's last byte arrived at its destination GPU",
                            MakeTraceSourceAccessor(&FlowBackend::m_deliveredTrace),
                            "ns3::FlowBackend::TransferTracedCallback")
            .AddTraceSource("RatesRecomputed",
                            "A water-filling pass ran: (flows, links) it re-rated",
                            MakeTraceSourceAccessor(&FlowBackend::m_recomputeTrace),
                            "ns3::TracedCallback::Uint32Uint32");
    return tid;
}

FlowBackend::FlowBackend()
{
    // The backend re-times its pending events with Simulator::Remove. ns-3 3.37's
    // HeapScheduler::Remove moves the heap's last event into the hole and only sifts it down,
    // never up, so the heap can lose its order: events then run out of time order, and a
    // later Remove of an event already run frees it twice (a crash far from the cause).
    StringValue scheduler;
    if (GlobalValue::GetValueByNameFailSafe("SchedulerType", scheduler) &&
        scheduler.Get() == "ns3::HeapScheduler")
    {
        throw std::invalid_argument(
            "FlowBackend: ns-3's HeapScheduler loses its order when events are removed (its "
            "Remove never sifts up); use the default ns3::MapScheduler, CalendarScheduler or "
            "ListScheduler (SchedulerType)");
    }
}

FlowBackend::~FlowBackend() = default;

void
FlowBackend::DoDispose()
{
    if (m_destroyHookSet)
    {
        Simulator::Remove(m_destroyHook);
        m_destroyHookSet = false;
    }
    Simulator::Cancel(m_drainEvent);
    Simulator::Cancel(m_recomputeEvent);
    Simulator::Cancel(m_deliverEvent);
    m_drainAtNs = m_deliverAtNs = -1;
    m_recomputePending = false;
    m_deliveries.clear();
    m_pending.clear();
    m_freePending.clear();
    m_flows.clear();
    m_hot.clear();
    m_drainHeap.clear();
    m_linkFlows.clear();
    m_routeCache.clear();
    m_lastRoute.clear();
    m_splits.clear();
    m_splitRoutes.clear();
    m_topology = nullptr;
    m_history = nullptr;
    NetworkBackend::DoDispose();
}

void
FlowBackend::EnsureDestroyHook()
{
    if (!m_destroyHookSet)
    {
        m_destroyHookSet = true;
        m_destroyHook = Simulator::ScheduleDestroy(&FlowBackend::OnSimulatorDestroy, this);
    }
}

void
FlowBackend::OnSimulatorDestroy()
{
    // The simulation is over and its events are gone: drop what was in flight so that the
    // backend starts clean under the next simulator (stale EventIds must never be removed).
    NS_LOG_FUNCTION(this << m_nActive << m_deliveries.size());
    m_destroyHookSet = false;
    m_reservedUntil.clear();
    m_drainEvent = EventId();
    m_deliverEvent = EventId();
    m_recomputeEvent = EventId();
    m_drainAtNs = m_deliverAtNs = -1;
    m_recomputePending = false;
    for (const Flow& f : m_flows)
    {
        if (f.active)
        {
            for (uint32_t l : f.route)
            {
                m_linkFlows[l].clear();
            }
        }
    }
    m_flows.clear();
    m_hot.clear();
    m_freeSlots.clear();
    m_stalled.clear();
    m_splits.clear();
    m_nActive = 0;
    m_seedLinks.clear();
    m_drainHeap.clear();
    m_deliveries.clear();
    m_pending.clear();
    m_freePending.clear();
}

size_t
FlowBackend::RouteKeyHash::operator()(const RouteKey& k) const
{
    return ClusterTopology::HashFlow(k.flowKey, k.src, k.dst);
}

void
FlowBackend::SetTopology(Ptr<ClusterTopology> topology)
{
    NS_LOG_FUNCTION(this << topology);
    if (m_nActive > 0 || !m_deliveries.empty())
    {
        throw std::logic_error("FlowBackend::SetTopology: transfers are in flight");
    }
    m_topology = topology;
    const size_t nLinks = topology ? topology->Links().size() : 0;
    m_capacity.assign(nLinks, 0);
    for (size_t l = 0; l < nLinks; ++l)
    {
        m_capacity[l] = topology->Links()[l].bitsPerSec / 8;
    }
    m_nominal = m_capacity;
    m_upCapacity = m_capacity;
    m_stalled.clear();
    m_splitRoutes.clear();
    m_linkBytes.assign(nLinks, 0);
    m_ownerLinkBytes.clear();
    m_reservedUntil.clear();
    m_linkFlows.assign(nLinks, {});
    m_linkStarts.assign(nLinks, 0);
    m_linkMark.assign(nLinks, 0);
    m_seedMark.assign(nLinks, 0);
    m_linkTouch.assign(nLinks, 0);
    m_heapPos.assign(nLinks, kNotInHeap);
    m_unfrozen.assign(nLinks, 0);
    m_capLeft.assign(nLinks, 0);
    m_routeCache.clear();
    m_lastRoute.assign(topology ? topology->GetNGpus() : 0, nullptr);
    m_seedLinks.clear();
}

Ptr<ClusterTopology>
FlowBackend::GetTopology() const
{
    return m_topology;
}

std::string
FlowBackend::GetName() const
{
    return "flow";
}

uint64_t
FlowBackend::GetDeliveredCount() const
{
    return m_delivered;
}

uint64_t
FlowBackend::GetStartedCount() const
{
    return m_started;
}

uint64_t
FlowBackend::GetRecomputeCount() const
{
    return m_recomputes;
}

uint32_t
FlowBackend::GetNActiveFlows() const
{
    return m_nActive;
}

uint32_t
FlowBackend::GetLinkActiveFlows(uint32_t link) const
{
    return static_cast<uint32_t>(m_linkFlows.at(link).size());
}

uint64_t
FlowBackend::GetLinkFlowStarts(uint32_t link) const
{
    return m_linkStarts.at(link);
}

const std::vector<uint32_t>&
FlowBackend::GetRouteLinks(uint32_t srcGpu, uint32_t dstGpu, uint64_t flowKey)
{
    return LookupRoute(srcGpu, dstGpu, flowKey).links;
}

void
FlowBackend::ReserveLinks(const std::vector<uint32_t>& links, Time until)
{
    if (m_reservedUntil.empty())
    {
        m_reservedUntil.assign(m_topology->Links().size(), Time(0));
        EnsureDestroyHook();
    }
    for (uint32_t l : links)
    {
        m_reservedUntil[l] = until;
    }
}

Time
FlowBackend::GetLinkReservedUntil(uint32_t link) const
{
    return link < m_reservedUntil.size() ? m_reservedUntil[link] : Time(0);
}

std::vector<std::vector<double>>
FlowBackend::GetOwnerLinkBytes() const
{
    if (m_ownerLinkBytes.empty())
    {
        return {m_linkBytes}; // one owner: it keeps no split
    }
    std::vector<std::vector<double>> out = m_ownerLinkBytes;
    for (auto& v : out)
    {
        v.resize(m_linkBytes.size(), 0.0);
    }
    return out;
}

const std::vector<double>&
FlowBackend::GetLinkBytes() const
{
    return m_linkBytes;
}

std::string
FlowBackend::StatsJson() const
{
    gpusim::JsonWriter j;
    j.BeginObject().Key("backend").String(GetName());
    j.Key("transfers").BeginObject();
    j.Key("started").Uint(GetStartedCount()).Key("delivered").Uint(GetDeliveredCount());
    j.Key("in_flight").Uint(InFlight().size()).EndObject();
    j.Key("recomputations").Uint(GetRecomputeCount());
    const Time now = Simulator::Now();
    j.Key("links").BeginArray();
    const auto& links = m_topology ? m_topology->Links() : std::vector<TopoLink>{};
    const auto& vertices = m_topology ? m_topology->Vertices() : std::vector<TopoVertex>{};
    for (uint32_t l = 0; l < m_linkBytes.size() && l < links.size(); ++l)
    {
        if (m_linkBytes[l] <= 0)
        {
            continue; // idle links are left out: a large fabric has tens of thousands
        }
        j.BeginObject().Key("id").Uint(l);
        j.Key("from").String(vertices[links[l].from].name);
        j.Key("to").String(vertices[links[l].to].name);
        j.Key("gbps").Double(links[l].bitsPerSec / 1e9).Key("bytes").Double(m_linkBytes[l]);
        j.Key("mean_utilisation").Double(now.IsStrictlyPositive() ? GetLinkUtilisation(l, now)
                                                                  : 0.0);
        j.EndObject();
    }
    j.EndArray().EndObject();
    return j.Take();
}

double
FlowBackend::GetLinkUtilisation(uint32_t link, Time interval) const
{
    const double cap = m_nominal.at(link) * interval.GetSeconds();
    return cap > 0 ? m_linkBytes.at(link) / cap : 0;
}

double
FlowBackend::GetCurrentRate(uint64_t id) const
{
    double rate = -1;
    for (const Flow& f : m_flows)
    {
        if (f.active && f.rec.id == id)
        {
            if (m_splits.empty())
            {
                return f.rate;
            }
            rate = std::max(rate, 0.0) + f.rate; // a split transfer: its sub-flows' sum
        }
    }
    return rate;
}

std::string
FlowBackend::GetRoutingMode() const
{
    if (!m_routingName.empty())
    {
        return m_routingName;
    }
    return m_topology ? m_topology->GetRouting() : "ecmp";
}

bool
FlowBackend::SplitsTransfers() const
{
    static const std::string kEmpty;
    const std::string& mode =
        !m_routingName.empty() ? m_routingName : (m_topology ? m_topology->GetRouting() : kEmpty);
    return (mode == "spray" || mode == "spray-rr" || mode == "flowlet") && !m_history &&
           !HasFabricEvents();
}

uint64_t
FlowBackend::GetSubFlowCount() const
{
    return m_subFlows;
}

const std::vector<FlowBackend::CachedRoute>&
FlowBackend::SplitRoutes(uint32_t src, uint32_t dst)
{
    const uint64_t key = uint64_t(src) << 32 | dst;
    auto it = m_splitRoutes.find(key);
    if (it == m_splitRoutes.end())
    {
        std::vector<CachedRoute> routes;
        for (auto& links : m_topology->EqualCostRoutes(src, dst))
        {
            CachedRoute r;
            r.latencyNs = std::llround(m_topology->PathLatency(links) * 1e9);
            r.links = std::move(links);
            routes.push_back(std::move(r));
        }
        it = m_splitRoutes.emplace(key, std::move(routes)).first;
    }
    return it->second;
}

void
FlowBackend::StartSplit(const TransferRecord& rec, uint64_t flowKey, DeliveredCallback done)
{
    const std::vector<CachedRoute>& routes = SplitRoutes(rec.srcGpu, rec.dstGpu);
    const uint64_t k = routes.size();
    SplitTransfer& split = m_splits[rec.id];
    split.rec = rec;
    split.done = std::move(done);
    split.left = 0;
    split.latencyNs = 0;
    // Equal shares; the first (bytes mod k) sub-flows carry one byte more.
    for (uint64_t i = 0; i < k && i < rec.bytes; ++i)
    {
        TransferRecord sub = rec;
        sub.bytes = rec.bytes / k + (i < rec.bytes % k ? 1 : 0);
        ++split.left;
        split.latencyNs = std::max(split.latencyNs, routes[i].latencyNs);
        ++m_subFlows;
        AddFlow(sub, flowKey, routes[i], double(sub.bytes), nullptr);
    }
    NS_LOG_LOGIC("transfer " << rec.id << " split over " << split.left << " paths");
}

void
FlowBackend::SetRateHistory(Ptr<FlowRateHistory> history)
{
    m_history = history;
}

Ptr<FlowRateHistory>
FlowBackend::GetRateHistory() const
{
    return m_history;
}

void
FlowBackend::SetRecordRateHistory(bool on)
{
    if (on && !m_history)
    {
        m_history = CreateObject<InMemoryFlowRateHistory>();
    }
    else if (!on)
    {
        m_history = nullptr;
    }
}

bool
FlowBackend::GetRecordRateHistory() const
{
    return m_history != nullptr;
}

const FlowBackend::CachedRoute&
FlowBackend::LookupRoute(uint32_t src, uint32_t dst, uint64_t flowKey)
{
    const RouteKey key{src, dst, flowKey};
    if (src < m_lastRoute.size() && m_lastRoute[src] && m_lastRoute[src]->first == key)
    {
        return m_lastRoute[src]->second;
    }
    auto it = m_routeCache.find(key);
    if (it == m_routeCache.end())
    {
        if (m_routeCache.size() >= kMaxCachedRoutes)
        {
            // Flows hold copies, so dropping the cache is safe.
            m_routeCache.clear();
            std::fill(m_lastRoute.begin(), m_lastRoute.end(), nullptr);
        }
        CachedRoute r;
        if (AnyRouteDown())
        {
            m_topology->RouteAvoiding(src,
                                      dst,
                                      ClusterTopology::HashFlow(flowKey, src, dst),
                                      RouteDown(),
                                      r.links);
        }
        else
        {
            m_topology->RouteInto(src, dst, ClusterTopology::HashFlow(flowKey, src, dst),
                                  r.links);
        }
        r.latencyNs = std::llround(m_topology->PathLatency(r.links) * 1e9);
        it = m_routeCache.emplace(key, std::move(r)).first;
    }
    // Node-based map: element addresses survive rehashing. NVSwitch endpoints (ids above the
    // GPUs, ClusterTopology::kSwitchEndpoint) have no fast-path slot.
    if (src < m_lastRoute.size())
    {
        m_lastRoute[src] = &*it;
    }
    return it->second;
}

void
FlowBackend::StartTransfer(uint64_t id,
                           uint32_t srcGpu,
                           uint32_t dstGpu,
                           uint64_t bytes,
                           uint64_t flowKey,
                           DeliveredCallback done)
{
    Start(id, srcGpu, dstGpu, bytes, flowKey, false, std::move(done));
}

void
FlowBackend::StartStreamedTransfer(uint64_t id,
                                   uint32_t srcGpu,
                                   uint32_t dstGpu,
                                   uint64_t bytes,
                                   uint64_t flowKey,
                                   DeliveredCallback done)
{
    Start(id, srcGpu, dstGpu, bytes, flowKey, true, std::move(done));
}

void
FlowBackend::Start(uint64_t id,
                   uint32_t srcGpu,
                   uint32_t dstGpu,
                   uint64_t bytes,
                   uint64_t flowKey,
                   bool streamed,
                   DeliveredCallback done)
{
    if (!m_topology)
    {
        throw std::logic_error("FlowBackend::StartTransfer: no topology set");
    }
    EnsureDestroyHook();
    TransferRecord rec;
    rec.id = id;
    rec.srcGpu = srcGpu;
    rec.dstGpu = dstGpu;
    rec.bytes = bytes;
    rec.start = Simulator::Now();
    rec.streamed = streamed;
    if (HasFabricEvents())
    {
        // Links may be down: no path left is a failed transfer, not a programming error.
        const CachedRoute* found = nullptr;
        try
        {
            found = &LookupRoute(srcGpu, dstGpu, flowKey);
        }
        catch (const std::runtime_error& e)
        {
            // No path now: it waits (as a transport retries) and fails after the transport
            // timeout unless a link comes back first.
            ++m_started;
            m_startedTrace(rec);
            if (m_history)
            {
                m_history->OnStart(rec, flowKey);
            }
            m_stalled.push_back({rec, flowKey, double(bytes), std::move(done)});
            NoPathLeft(rec, std::string(e.what()) + "; links down: " + DownLinksText());
            return;
        }
        if (bytes > 0 && CrossesDownLink(found->links))
        {
            // Routed over a dead link the routing does not know about yet: no progress until
            // it converges.
            ++m_started;
            m_startedTrace(rec);
            if (m_history)
            {
                m_history->OnStart(rec, flowKey);
            }
            m_stalled.push_back({rec, flowKey, double(bytes), std::move(done)});
            return;
        }
    }
    const CachedRoute& route = LookupRoute(srcGpu, dstGpu, flowKey); // validates the GPUs
    ++m_started;
    m_startedTrace(rec);
    if (m_history)
    {
        m_history->OnStart(rec, flowKey);
    }
    if (bytes > 0 && route.links.size() > 2 && SplitsTransfers() &&
        SplitRoutes(srcGpu, dstGpu).size() > 1)
    {
        StartSplit(rec, flowKey, std::move(done));
        return;
    }
    if (route.links.empty() || bytes == 0)
    {
        // Nothing to drain: same GPU (delivered now) or an empty message (latency only).
        if (m_history)
        {
            m_history->OnDrained(id, rec.start);
        }
        EnqueueDelivery({NowNs() + (streamed ? 0 : route.latencyNs), rec, std::move(done)});
        return;
    }
    AddFlow(rec, flowKey, route, double(bytes), std::move(done));
}

uint32_t
FlowBackend::AddFlow(const TransferRecord& rec,
                     uint64_t flowKey,
                     const CachedRoute& route,
                     double remaining,
                     DeliveredCallback done)
{
    uint32_t slot;
    if (!m_freeSlots.empty())
    {
        slot = m_freeSlots.back();
        m_freeSlots.pop_back();
    }
    else
    {
        slot = static_cast<uint32_t>(m_flows.size());
        const Flow* before = m_flows.data();
        m_flows.emplace_back();
        m_hot.emplace_back();
        if (m_flows.data() != before)
        {
            // Reallocated: a Flow that was copied rather than moved has a new route buffer.
            for (size_t i = 0; i < m_flows.size(); ++i)
            {
                m_hot[i].route = m_flows[i].route.data();
            }
        }
    }
    Flow& f = m_flows[slot];
    f.rec = rec;
    f.flowKey = flowKey;
    f.route.assign(route.links.begin(), route.links.end());
    m_hot[slot].route = f.route.data();
    m_hot[slot].hops = static_cast<uint32_t>(f.route.size());
    f.latencyNs = rec.streamed ? 0 : route.latencyNs; // a stream paid its path's latency once
    f.remaining = remaining;
    f.startRemaining = remaining;
    f.resumed = false;
    f.t0Ns = NowNs();
    f.rate = 0;
    m_hot[slot].rate = 0;
    f.finishNs = std::numeric_limits<int64_t>::max();
    f.drainPos = kNotInHeap;
    f.active = true;
    f.done = std::move(done);
    ++m_nActive;
    bool alone = true;
    f.linkPos.resize(f.route.size());
    for (size_t i = 0; i < f.route.size(); ++i)
    {
        const uint32_t l = f.route[i];
        ++m_linkStarts[l];
        f.linkPos[i] = static_cast<uint32_t>(m_linkFlows[l].size());
        m_linkFlows[l].push_back(slot);
        alone = alone && m_linkFlows[l].size() == 1;
    }
    if (alone)
    {
        // Nobody else on its links: its max-min rate is its bottleneck, no pass needed. A
        // flow joining one of its links later (even at this instant) re-rates it.
        double rate = std::numeric_limits<double>::infinity();
        for (uint32_t l : f.route)
        {
            if (m_capacity[l] < rate)
            {
                rate = m_capacity[l];
                m_hot[slot].bottleneck = l;
            }
        }
        SetRate(slot, rate, f.t0Ns);
        ScheduleDrain();
        return slot;
    }
    for (uint32_t l : f.route)
    {
        m_seedLinks.push_back(l);
    }
    MarkDirty();
    return slot;
}

void
FlowBackend::MarkDirty()
{
    // One recomputation per instant, however many arrivals/departures happen at it.
    if (!m_recomputePending)
    {
        m_recomputePending = true;
        m_recomputeEvent = Simulator::ScheduleNow(&FlowBackend::Recompute, this);
    }
}

void
FlowBackend::Recompute()
{
    const int64_t nowNs = NowNs();
    m_recomputePending = false;
    ++m_recomputes;
    if (++m_epoch == 0) // wrapped: clear the marks once every 4G passes
    {
        std::fill(m_linkMark.begin(), m_linkMark.end(), 0);
        std::fill(m_seedMark.begin(), m_seedMark.end(), 0);
        for (FlowHot& h : m_hot)
        {
            h.visitEpoch = 0;
        }
        m_epoch = 1;
    }
    if (m_incremental)
    {
        RateIncrementally();
    }
    else
    {
        CollectComponent();
        if (!m_compFlows.empty())
        {
            WaterFill();
        }
    }
    NS_LOG_LOGIC("pass " << m_recomputes << " at " << nowNs << " ns: " << m_compFlows.size()
                         << " flows on " << m_compLinks.size() << " links");
    m_recomputeTrace(static_cast<uint32_t>(m_compFlows.size()),
                     static_cast<uint32_t>(m_compLinks.size()));
    bool rescheduled = false;
    for (uint32_t slot : m_compFlows)
    {
        if (m_hot[slot].newRate != m_hot[slot].rate)
        {
            SetRate(slot, m_hot[slot].newRate, nowNs);
            rescheduled = true;
        }
    }
    if (rescheduled)
    {
        ScheduleDrain();
    }
}

void
FlowBackend::CollectComponent()
{
    // Only flows connected (through shared links) to an arrival or departure can change rate:
    // collect that component starting from the links whose flow set changed.
    m_compLinks.clear();
    m_compFlows.clear();
    for (uint32_t l : m_seedLinks)
    {
        if (m_linkMark[l] != m_epoch)
        {
            m_linkMark[l] = m_epoch;
            m_compLinks.push_back(l);
        }
    }
    m_seedLinks.clear();
    for (size_t i = 0; i < m_compLinks.size(); ++i)
    {
        for (uint32_t slot : m_linkFlows[m_compLinks[i]])
        {
            if (m_hot[slot].visitEpoch != m_epoch)
            {
                AddToPass(slot);
            }
        }
    }
    // Every flow on these links is re-rated: the whole capacity is shared out.
    for (uint32_t l : m_compLinks)
    {
        m_unfrozen[l] = static_cast<uint32_t>(m_linkFlows[l].size());
        m_capLeft[l] = m_capacity[l];
    }
}

inline void
FlowBackend::AddToPass(uint32_t slot)
{
    FlowHot& h = m_hot[slot];
    h.visitEpoch = m_epoch;
    m_compFlows.push_back(slot);
    for (const uint32_t* r = h.route; r != h.route + h.hops; ++r)
    {
        const uint32_t l = *r;
        if (m_linkMark[l] != m_epoch)
        {
            m_linkMark[l] = m_epoch;
            m_compLinks.push_back(l);
        }
    }
}

void
FlowBackend::RateIncrementally()
{
    // Max-min fairness holds iff every flow has a bottleneck: a saturated link on which no
    // flow is faster. Re-rate the flows on the changed links with the others' rates held
    // (their rates taken off the capacities), then check the held flows whose bottleneck
    // carries a re-rated flow; any whose condition broke joins the pass, which starts over.
    // The set only grows, so this ends; it usually stays a few flows where a full pass
    // would re-rate the whole connected component.
    m_compLinks.clear();
    m_compFlows.clear();
    for (uint32_t l : m_seedLinks)
    {
        // A link is seeded once per flow that started or ended on it at this instant: a
        // thousand flows starting together on one NIC (an AllToAll) must not scan its
        // thousand flows a thousand times. The first visit adds them all.
        if (m_seedMark[l] == m_epoch)
        {
            continue;
        }
        m_seedMark[l] = m_epoch;
        for (uint32_t slot : m_linkFlows[l])
        {
            if (m_hot[slot].visitEpoch != m_epoch)
            {
                AddToPass(slot);
            }
        }
    }
    m_seedLinks.clear();
    while (!m_compFlows.empty())
    {
        InitResidual();
        WaterFill();
        m_grow.clear();
        FindBrokenBottlenecks();
        if (m_grow.empty())
        {
            return;
        }
        for (uint32_t slot : m_grow)
        {
            if (m_hot[slot].visitEpoch != m_epoch)
            {
                AddToPass(slot);
            }
        }
    }
}

void
FlowBackend::InitResidual()
{
    for (uint32_t l : m_compLinks)
    {
        double cap = m_capacity[l];
        uint32_t n = 0;
        for (uint32_t slot : m_linkFlows[l])
        {
            if (m_hot[slot].visitEpoch == m_epoch)
            {
                ++n;
            }
            else
            {
                cap -= m_hot[slot].rate; // held
            }
        }
        m_capLeft[l] = cap;
        m_unfrozen[l] = n;
    }
}

void
FlowBackend::FindBrokenBottlenecks()
{
    // Relative slack for rounding: rates re-rated against held ones differ in the last bits.
    constexpr double kEps = 1e-9;
    for (uint32_t l : m_compLinks)
    {
        double load = 0;
        double fastest = 0;
        double slowestBottlenecked = std::numeric_limits<double>::infinity();
        for (uint32_t slot : m_linkFlows[l])
        {
            const FlowHot& h = m_hot[slot];
            const bool rerated = h.visitEpoch == m_epoch;
            const double r = rerated ? h.newRate : h.rate;
            load += r;
            fastest = std::max(fastest, r);
            if (rerated && h.bottleneck == l)
            {
                slowestBottlenecked = std::min(slowestBottlenecked, r);
            }
        }
        const bool saturated = load >= m_capacity[l] * (1 - kEps);
        for (uint32_t slot : m_linkFlows[l])
        {
            const FlowHot& h = m_hot[slot];
            if (h.visitEpoch == m_epoch)
            {
                continue;
            }
            const double r = h.rate;
            // A held flow bottlenecked here needs the link still full and nobody faster; a
            // re-rated flow bottlenecked here needs every held flow on it no faster than it.
            if ((h.bottleneck == l && (!saturated || r < fastest * (1 - kEps))) ||
                r > slowestBottlenecked * (1 + kEps))
            {
                m_grow.push_back(slot);
            }
        }
    }
}

void
FlowBackend::SetRate(uint32_t slot, double rate, int64_t nowNs)
{
    Flow& f = m_flows[slot];
    f.remaining = std::max(0.0, f.remaining - f.rate * double(nowNs - f.t0Ns) * 1e-9);
    f.t0Ns = nowNs;
    f.rate = rate;
    m_hot[slot].rate = rate;
    // A zero rate (a flow on a link brought to a crawl is never 0: rates stay > 0; guard
    // anyway) never finishes.
    f.finishNs = f.rate > 0 ? nowNs + std::llround(f.remaining / f.rate * 1e9)
                            : std::numeric_limits<int64_t>::max();
    const DrainEntry e{f.finishNs, slot};
    if (f.drainPos == kNotInHeap)
    {
        m_drainHeap.push_back(e);
        DrainSiftUp(static_cast<uint32_t>(m_drainHeap.size() - 1), e);
    }
    else if (DrainLess(e, m_drainHeap[f.drainPos]))
    {
        DrainSiftUp(f.drainPos, e);
    }
    else
    {
        DrainSiftDown(f.drainPos, e);
    }
    if (m_history)
    {
        m_history->OnRate(f.rec.id, Simulator::Now(), f.rate, f.remaining);
    }
}

inline bool
FlowBackend::ShareLess(const HeapEntry& a, const HeapEntry& b)
{
    return a.share != b.share ? a.share < b.share : a.link < b.link;
}

inline void
FlowBackend::HeapPlace(uint32_t pos, const HeapEntry& e)
{
    m_heap[pos] = e;
    m_heapPos[e.link] = pos;
}

inline void
FlowBackend::HeapSiftUp(uint32_t pos, HeapEntry e)
{
    gpusim::HeapSiftUp<kHeapArity>(m_heap, pos, e, ShareLess,
                                   [this](uint32_t p, const HeapEntry& x) { HeapPlace(p, x); });
}

inline void
FlowBackend::HeapSiftDown(uint32_t pos, HeapEntry e)
{
    gpusim::HeapSiftDown<kHeapArity>(m_heap, pos, e, ShareLess,
                                     [this](uint32_t p, const HeapEntry& x) { HeapPlace(p, x); });
}

inline void
FlowBackend::HeapRemoveAt(uint32_t pos)
{
    m_heapPos[m_heap[pos].link] = kNotInHeap;
    const HeapEntry last = m_heap.back();
    m_heap.pop_back();
    if (pos < m_heap.size())
    {
        if (ShareLess(last, m_heap[pos]))
        {
            HeapSiftUp(pos, last);
        }
        else
        {
            HeapSiftDown(pos, last);
        }
    }
}

void
FlowBackend::WaterFill()
{
    // Progressive filling: repeatedly take the link with the smallest fair share
    // (capacity left / flows without a rate), give that share to its flows and remove them.
    // An indexed min-heap holds one entry per link with unrated flows (m_heapPos: where);
    // a link's key changes in place when a bottleneck step touches it and the link leaves the
    // heap once all its flows are rated: O((flows x hops + links) log links) per pass with a
    // heap no larger than the component's links. Flows outside the pass (visitEpoch) are
    // held: the caller took their rates off m_capLeft and left them out of m_unfrozen.
    if (++m_freezeEpoch == 0)
    {
        for (FlowHot& h : m_hot)
        {
            h.frozenEpoch = 0;
        }
        m_freezeEpoch = 1;
    }
    if (m_compFlows.size() == 1)
    {
        // A flow alone on its links (e.g. an NVLink hop) simply gets its bottleneck.
        FlowHot& h = m_hot[m_compFlows.front()];
        double rate = std::numeric_limits<double>::infinity();
        for (const uint32_t* r = h.route; r != h.route + h.hops; ++r)
        {
            const double left = std::max(0.0, m_capLeft[*r]);
            if (left < rate)
            {
                rate = left;
                h.bottleneck = *r;
            }
        }
        h.newRate = rate;
        return;
    }
    m_heap.clear();
    for (uint32_t l : m_compLinks)
    {
        const uint32_t n = m_unfrozen[l];
        if (n > 0)
        {
            m_heapPos[l] = static_cast<uint32_t>(m_heap.size());
            m_heap.push_back({std::max(0.0, m_capLeft[l]) / n, l});
        }
        else
        {
            m_heapPos[l] = kNotInHeap;
        }
    }
    if (m_heap.size() > 1)
    {
        for (uint32_t pos = static_cast<uint32_t>((m_heap.size() - 2) / kHeapArity) + 1;
             pos-- > 0;)
        {
            HeapSiftDown(pos, m_heap[pos]);
        }
    }
    double level = 0;
    while (!m_heap.empty())
    {
        const HeapEntry e = m_heap.front();
        HeapRemoveAt(0);
        // Rounding may leave a share a hair below the previous level; the level is monotone.
        const double share = std::max(e.share, level);
        level = share;
        if (++m_touchEpoch == 0)
        {
            std::fill(m_linkTouch.begin(), m_linkTouch.end(), 0);
            m_touchEpoch = 1;
        }
        m_touched.clear();
        for (uint32_t slot : m_linkFlows[e.link])
        {
            FlowHot& h = m_hot[slot];
            if (h.frozenEpoch == m_freezeEpoch || h.visitEpoch != m_epoch)
            {
                continue; // rated already, or held
            }
            h.frozenEpoch = m_freezeEpoch;
            h.newRate = share;
            h.bottleneck = e.link;
            for (const uint32_t* r = h.route; r != h.route + h.hops; ++r)
            {
                const uint32_t l = *r;
                m_capLeft[l] -= share;
                --m_unfrozen[l];
                if (m_linkTouch[l] != m_touchEpoch)
                {
                    m_linkTouch[l] = m_touchEpoch;
                    m_touched.push_back(l);
                }
            }
        }
        for (uint32_t l : m_touched)
        {
            const uint32_t pos = m_heapPos[l];
            if (pos == kNotInHeap)
            {
                continue; // the bottleneck itself: all its flows are rated now
            }
            if (m_unfrozen[l] == 0)
            {
                HeapRemoveAt(pos);
                continue;
            }
            const HeapEntry updated{std::max(0.0, m_capLeft[l]) / m_unfrozen[l], l};
            if (ShareLess(updated, m_heap[pos]))
            {
                HeapSiftUp(pos, updated);
            }
            else
            {
                HeapSiftDown(pos, updated);
            }
        }
    }
}

inline bool
FlowBackend::DrainLess(const DrainEntry& a, const DrainEntry& b)
{
    return a.finishNs != b.finishNs ? a.finishNs < b.finishNs : a.slot < b.slot;
}

inline void
FlowBackend::DrainPlace(uint32_t pos, const DrainEntry& e)
{
    m_drainHeap[pos] = e;
    m_flows[e.slot].drainPos = pos;
}

inline void
FlowBackend::DrainSiftUp(uint32_t pos, DrainEntry e)
{
    gpusim::HeapSiftUp<kHeapArity>(m_drainHeap, pos, e, DrainLess,
                                   [this](uint32_t p, const DrainEntry& x) { DrainPlace(p, x); });
}

inline void
FlowBackend::DrainSiftDown(uint32_t pos, DrainEntry e)
{
    gpusim::HeapSiftDown<kHeapArity>(
        m_drainHeap, pos, e, DrainLess,
        [this](uint32_t p, const DrainEntry& x) { DrainPlace(p, x); });
}

inline void
FlowBackend::DrainPopTop()
{
    m_flows[m_drainHeap.front().slot].drainPos = kNotInHeap;
    const DrainEntry last = m_drainHeap.back();
    m_drainHeap.pop_back();
    if (!m_drainHeap.empty())
    {
        DrainSiftDown(0, last);
    }
}

void
FlowBackend::ScheduleDrain()
{
    if (m_drainHeap.empty())
    {
        return; // a pending wake-up, if any, finds nothing and stops
    }
    const int64_t at = m_drainHeap.front().finishNs;
    if (at == std::numeric_limits<int64_t>::max())
    {
        return; // nothing drains (rate 0)
    }
    if (m_drainAtNs >= 0 && m_drainAtNs <= at)
    {
        return; // an early wake-up is harmless: OnDrain re-arms for the real time
    }
    Simulator::Remove(m_drainEvent);
    m_drainAtNs = at;
    m_drainEvent = Simulator::Schedule(NanoSeconds(std::max<int64_t>(0, at - NowNs())),
                                       &FlowBackend::OnDrain,
                                       this);
}

void
FlowBackend::OnDrain()
{
    const int64_t nowNs = NowNs();
    m_drainAtNs = -1;
    bool any = false;
    while (!m_drainHeap.empty() && m_drainHeap.front().finishNs <= nowNs)
    {
        const uint32_t slot = m_drainHeap.front().slot;
        DrainPopTop();
        CompleteFlow(slot, nowNs);
        any = true;
    }
    // Links emptied by this batch of departures have nobody left to re-rate.
    m_seedLinks.erase(std::remove_if(m_seedLinks.begin(),
                                     m_seedLinks.end(),
                                     [this](uint32_t l) { return m_linkFlows[l].empty(); }),
                      m_seedLinks.end());
    if (any && !m_seedLinks.empty())
    {
        MarkDirty(); // departures free capacity for flows that shared their links
    }
    ScheduleDrain();
}

void
FlowBackend::UnlinkHop(uint32_t slot, size_t hop)
{
    const uint32_t l = m_flows[slot].route[hop];
    const uint32_t pos = m_flows[slot].linkPos[hop];
    std::vector<uint32_t>& on = m_linkFlows[l];
    const uint32_t last = static_cast<uint32_t>(on.size() - 1);
    const uint32_t moved = on[last];
    on[pos] = moved;
    on.pop_back();
    if (pos == last)
    {
        return;
    }
    // The moved flow's entry for this link (a route may cross a link twice: match the index).
    Flow& m = m_flows[moved];
    for (size_t j = 0; j < m.route.size(); ++j)
    {
        if (m.route[j] == l && m.linkPos[j] == last)
        {
            m.linkPos[j] = pos;
            return;
        }
    }
    NS_ASSERT_MSG(false, "FlowBackend: link " << l << " lists a flow that does not cross it");
}

void
FlowBackend::CompleteFlow(uint32_t slot, int64_t nowNs)
{
    Flow& f = m_flows[slot];
    f.active = false;
    --m_nActive;
    for (size_t i = 0; i < f.route.size(); ++i)
    {
        const uint32_t l = f.route[i];
        UnlinkHop(slot, i);
        m_seedLinks.push_back(l); // the others on this link may speed up
        m_linkBytes[l] += f.resumed ? f.startRemaining : double(f.rec.bytes);
    }
    if (GetNOwners() > 1)
    {
        const uint32_t owner = OwnerOf(f.rec.id);
        if (m_ownerLinkBytes.size() <= owner)
        {
            m_ownerLinkBytes.resize(owner + 1);
        }
        std::vector<double>& mine = m_ownerLinkBytes[owner];
        mine.resize(m_linkBytes.size(), 0.0);
        for (uint32_t l : f.route)
        {
            mine[l] += double(f.rec.bytes);
        }
    }
    if (m_history)
    {
        m_history->OnDrained(f.rec.id, NanoSeconds(nowNs));
    }
    if (!m_splits.empty())
    {
        auto split = m_splits.find(f.rec.id);
        if (split != m_splits.end())
        {
            f.done = nullptr;
            m_freeSlots.push_back(slot);
            if (--split->second.left > 0)
            {
                return;
            }
            SplitTransfer whole = std::move(split->second);
            m_splits.erase(split);
            EnqueueDelivery({nowNs + (whole.rec.streamed ? 0 : whole.latencyNs),
                             whole.rec,
                             std::move(whole.done)});
            return;
        }
    }
    EnqueueDelivery({nowNs + f.latencyNs, f.rec, std::move(f.done)});
    f.done = nullptr;
    m_freeSlots.push_back(slot);
}

void
FlowBackend::EnqueueDelivery(Pending p)
{
    const int64_t at = p.atNs;
    uint32_t index;
    if (!m_freePending.empty())
    {
        index = m_freePending.back();
        m_freePending.pop_back();
        m_pending[index] = std::move(p);
    }
    else
    {
        index = static_cast<uint32_t>(m_pending.size());
        m_pending.push_back(std::move(p));
    }
    m_deliveries.push_back({at, m_pending[index].rec.id, index});
    std::push_heap(m_deliveries.begin(), m_deliveries.end(), DeliverLater());
    // One pending event, for the earliest delivery time (latencies are alike, so new
    // deliveries rarely come before it).
    if (m_deliverAtNs >= 0 && m_deliverAtNs <= at)
    {
        return;
    }
    Simulator::Remove(m_deliverEvent);
    m_deliverAtNs = at;
    m_deliverEvent = Simulator::Schedule(NanoSeconds(std::max<int64_t>(0, at - NowNs())),
                                         &FlowBackend::OnDeliver,
                                         this);
}

void
FlowBackend::OnDeliver()
{
    const int64_t nowNs = NowNs();
    const Time now = Simulator::Now();
    m_deliverAtNs = -1;
    // Callbacks may start transfers; one delivered now (same GPU) joins this batch in id order.
    while (!m_deliveries.empty() && m_deliveries.front().atNs <= nowNs)
    {
        std::pop_heap(m_deliveries.begin(), m_deliveries.end(), DeliverLater());
        const uint32_t index = m_deliveries.back().index;
        m_deliveries.pop_back();
        Pending p = std::move(m_pending[index]);
        m_pending[index].done = nullptr;
        m_freePending.push_back(index);
        p.rec.delivered = now;
        ++m_delivered;
        if (m_history)
        {
            m_history->OnDelivered(p.rec.id, now);
        }
        m_deliveredTrace(p.rec);
        if (p.done)
        {
            p.done(p.rec);
        }
    }
    if (!m_deliveries.empty() && m_deliverAtNs < 0)
    {
        m_deliverAtNs = m_deliveries.front().atNs;
        m_deliverEvent = Simulator::Schedule(NanoSeconds(m_deliverAtNs - nowNs),
                                             &FlowBackend::OnDeliver,
                                             this);
    }
}

std::vector<TransferRecord>
FlowBackend::InFlight() const
{
    std::vector<TransferRecord> out;
    for (const Flow& f : m_flows)
    {
        if (f.active && !m_splits.count(f.rec.id))
        {
            out.push_back(f.rec);
        }
    }
    for (const auto& [id, split] : m_splits)
    {
        out.push_back(split.rec); // once, not per sub-flow
    }
    for (const DeliverEntry& e : m_deliveries)
    {
        out.push_back(m_pending[e.index].rec);
    }
    for (const Stalled& st : m_stalled)
    {
        out.push_back(st.rec);
    }
    std::sort(out.begin(), out.end(), [](const TransferRecord& a, const TransferRecord& b) {
        return a.id < b.id;
    });
    return out;
}

FlowBackend::Checkpoint
FlowBackend::CaptureStateAt(Time t) const
{
    if (!m_history)
    {
        throw std::logic_error("FlowBackend::CaptureStateAt: no rate history is recorded "
                               "(set RecordRateHistory=true or SetRateHistory)");
    }
    if (t > Simulator::Now())
    {
        throw std::logic_error("FlowBackend::CaptureStateAt: time is in the future");
    }
    Checkpoint cp;
    cp.time = t;
    cp.transfers = m_history->AliveAt(t);
    for (FlowHistoryRecord& r : cp.transfers)
    {
        // Forget what happened after t.
        while (r.segments.size() > 1 && r.segments.back().start > t)
        {
            r.segments.pop_back();
        }
        if (r.isDrained && r.drained > t)
        {
            r.isDrained = false;
        }
        r.isDelivered = false;
        r.transfer.delivered = Time();
    }
    return cp;
}

void
FlowBackend::RestoreState(const Checkpoint& cp, Rebind rebind)
{
    NS_LOG_FUNCTION(this << cp.time << cp.transfers.size());
    if (!m_topology)
    {
        throw std::logic_error("FlowBackend::RestoreState: no topology set");
    }
    if (m_nActive > 0 || !m_deliveries.empty())
    {
        throw std::logic_error("FlowBackend::RestoreState: backend is not idle");
    }
    if (Simulator::Now() != cp.time)
    {
        throw std::logic_error("FlowBackend::RestoreState: simulator clock is not at the "
                               "checkpoint time");
    }
    EnsureDestroyHook();
    const int64_t nowNs = NowNs();
    for (const FlowHistoryRecord& r : cp.transfers)
    {
        DeliveredCallback done = rebind ? rebind(r.transfer) : DeliveredCallback();
        const CachedRoute& route = LookupRoute(r.transfer.srcGpu, r.transfer.dstGpu, r.flowKey);
        if (m_history)
        {
            m_history->OnRestore(r);
        }
        ++m_started;
        if (r.isDrained || route.links.empty() || r.transfer.bytes == 0)
        {
            const int64_t drainedNs = r.isDrained ? r.drained.GetNanoSeconds() : nowNs;
            EnqueueDelivery(
                {std::max(nowNs, drainedNs + (r.transfer.streamed ? 0 : route.latencyNs)),
                 r.transfer,
                 std::move(done)});
            continue;
        }
        AddFlow(r.transfer, r.flowKey, route, r.RemainingBytesAt(cp.time), std::move(done));
    }
}

// ---------------------------------------------------------------- failures and degradation

uint32_t
FlowBackend::GetNStalledFlows() const
{
    return static_cast<uint32_t>(m_stalled.size());
}

double
FlowBackend::GetLinkCapacity(uint32_t link) const
{
    return IsLinkUp(link) ? m_capacity.at(link) : 0.0;
}

bool
FlowBackend::CrossesDownLink(const std::vector<uint32_t>& links) const
{
    for (uint32_t l : links)
    {
        if (!IsLinkUp(l))
        {
            return true;
        }
    }
    return false;
}

void
FlowBackend::DrainRemove(uint32_t slot)
{
    const uint32_t pos = m_flows[slot].drainPos;
    if (pos == kNotInHeap)
    {
        return;
    }
    m_flows[slot].drainPos = kNotInHeap;
    const DrainEntry last = m_drainHeap.back();
    m_drainHeap.pop_back();
    if (pos < m_drainHeap.size())
    {
        if (DrainLess(last, m_drainHeap[pos]))
        {
            DrainSiftUp(pos, last);
        }
        else
        {
            DrainSiftDown(pos, last);
        }
    }
}

void
FlowBackend::Stall(uint32_t slot, int64_t nowNs)
{
    Flow& f = m_flows[slot];
    f.remaining = std::max(0.0, f.remaining - f.rate * double(nowNs - f.t0Ns) * 1e-9);
    f.t0Ns = nowNs;
    NS_LOG_LOGIC("transfer " << f.rec.id << " stalls with " << f.remaining << " bytes left");
    DrainRemove(slot);
    f.active = false;
    --m_nActive;
    const double carried = f.startRemaining - f.remaining;
    for (size_t i = 0; i < f.route.size(); ++i)
    {
        const uint32_t l = f.route[i];
        UnlinkHop(slot, i);
        m_seedLinks.push_back(l); // the others on this link may speed up
        m_linkBytes[l] += carried;
    }
    f.rate = 0;
    m_hot[slot].rate = 0;
    if (m_history)
    {
        m_history->OnRate(f.rec.id, NanoSeconds(nowNs), 0, f.remaining);
    }
    m_stalled.push_back({f.rec, f.flowKey, f.remaining, std::move(f.done)});
    f.done = nullptr;
    m_freeSlots.push_back(slot);
}

void
FlowBackend::ApplyFabricEvent(const gpusim::FabricEvent& event)
{
    NS_LOG_FUNCTION(this << gpusim::ToString(event.kind) << event.what);
    const int64_t nowNs = NowNs();
    switch (event.kind)
    {
    case gpusim::FabricEventKind::LinkDown: {
        // The flows on a dead link stop where they are (a flow whose last byte left exactly
        // now still completes).
        std::vector<uint32_t> hit;
        for (uint32_t l : event.links)
        {
            for (uint32_t slot : m_linkFlows[l])
            {
                if (m_flows[slot].finishNs > nowNs)
                {
                    hit.push_back(slot);
                }
            }
        }
        std::sort(hit.begin(), hit.end());
        hit.erase(std::unique(hit.begin(), hit.end()), hit.end());
        // Stall in transfer id order (reproducible m_stalled).
        std::sort(hit.begin(), hit.end(), [this](uint32_t a, uint32_t b) {
            return m_flows[a].rec.id < m_flows[b].rec.id;
        });
        for (uint32_t slot : hit)
        {
            Stall(slot, nowNs);
        }
        break;
    }
    case gpusim::FabricEventKind::LinkUp: {
        // Stalled flows whose (unchanged) route is whole again go on at once; new routes may
        // use the link once the routing converges.
        std::vector<Stalled> waiting;
        waiting.swap(m_stalled);
        for (Stalled& st : waiting)
        {
            const CachedRoute* route = nullptr;
            try
            {
                route = &LookupRoute(st.rec.srcGpu, st.rec.dstGpu, st.flowKey);
            }
            catch (const std::runtime_error&)
            {
                // Still no path in the routing's view: the convergence after this event
                // finds one (its transport timeout is running meanwhile).
                m_stalled.push_back(std::move(st));
                continue;
            }
            if (CrossesDownLink(route->links))
            {
                m_stalled.push_back(std::move(st));
                continue;
            }
            const uint32_t slot =
                AddFlow(st.rec, st.flowKey, *route, st.remaining, std::move(st.done));
            m_flows[slot].resumed = true;
        }
        break;
    }
    case gpusim::FabricEventKind::LinkRate:
        for (uint32_t l : event.links)
        {
            m_upCapacity[l] =
                event.rateFraction > 0 ? m_nominal[l] * event.rateFraction : event.rateBps / 8;
            m_capacity[l] = m_upCapacity[l];
            if (!m_linkFlows[l].empty())
            {
                m_seedLinks.push_back(l); // its flows get new max-min rates
            }
        }
        break;
    }
    m_seedLinks.erase(std::remove_if(m_seedLinks.begin(),
                                     m_seedLinks.end(),
                                     [this](uint32_t l) { return m_linkFlows[l].empty(); }),
                      m_seedLinks.end());
    if (!m_seedLinks.empty())
    {
        MarkDirty();
    }
    ScheduleDrain();
}

void
FlowBackend::ConvergeRouting()
{
    NS_LOG_FUNCTION(this << m_stalled.size());
    // Routes computed before are stale (they may cross a dead link, or avoid a revived one).
    m_routeCache.clear();
    std::fill(m_lastRoute.begin(), m_lastRoute.end(), nullptr);
    std::vector<Stalled> waiting;
    waiting.swap(m_stalled);
    for (size_t i = 0; i < waiting.size(); ++i)
    {
        Stalled& st = waiting[i];
        const CachedRoute* route = nullptr;
        try
        {
            route = &LookupRoute(st.rec.srcGpu, st.rec.dstGpu, st.flowKey);
        }
        catch (const std::runtime_error& e)
        {
            // No path: it keeps waiting until a link comes back or the transport gives up.
            NoPathLeft(st.rec, std::string(e.what()) + "; links down: " + DownLinksText());
            m_stalled.push_back(std::move(st));
            continue;
        }
        if (CrossesDownLink(route->links))
        {
            m_stalled.push_back(std::move(st)); // a later failure: wait for its convergence
            continue;
        }
        const uint32_t slot = AddFlow(st.rec, st.flowKey, *route, st.remaining, std::move(st.done));
        m_flows[slot].resumed = true;
    }
}

} // namespace ns3
