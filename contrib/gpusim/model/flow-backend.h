/*
 * FlowBackend: flow-level network model. Every in-flight transfer is a fluid flow on its route
 * (ClusterTopology::Route); rates are max-min fair over the directed links, found by
 * water-filling, and recomputed only when flows arrive or leave (coalesced per instant).
 * A transfer is delivered when its payload has drained plus the route's latency. With the
 * routing spray, spray-rr or flowlet (Routing attribute or the topology's routing) a transfer
 * is split into equal sub-flows over every equal-cost path and delivered when all drained.
 */
#ifndef GPUSIM_FLOW_BACKEND_H
#define GPUSIM_FLOW_BACKEND_H

#include "ns3/event-id.h"
#include "ns3/flow-rate-history.h"
#include "ns3/network-backend.h"
#include "ns3/traced-callback.h"

#include <unordered_map>
#include <vector>

namespace ns3
{

class FlowBackend : public NetworkBackend
{
  public:
    static TypeId GetTypeId();
    FlowBackend();
    ~FlowBackend() override;

    void SetTopology(Ptr<ClusterTopology> topology) override;
    Ptr<ClusterTopology> GetTopology() const override;
    void StartTransfer(uint64_t id,
                       uint32_t srcGpu,
                       uint32_t dstGpu,
                       uint64_t bytes,
                       uint64_t flowKey,
                       DeliveredCallback done) override;
    /// Delivered when drained: the stream's first transfer paid the path's latency.
    void StartStreamedTransfer(uint64_t id,
                               uint32_t srcGpu,
                               uint32_t dstGpu,
                               uint64_t bytes,
                               uint64_t flowKey,
                               DeliveredCallback done) override;
    std::vector<TransferRecord> InFlight() const override;
    std::string GetName() const override;
    uint64_t GetDeliveredCount() const override;
    /// Totals plus, for every link that carried bytes, its bytes and mean utilisation since 0.
    std::string StatsJson() const override;

    /// The routing in effect: the Routing attribute, else the topology's routing name.
    std::string GetRoutingMode() const;
    /// Whether transfers are split over the equal-cost paths (spray, spray-rr, flowlet; not
    /// with a rate history or fabric events, where each transfer keeps one path).
    bool SplitsTransfers() const;
    /// Sub-flows started by split transfers so far.
    uint64_t GetSubFlowCount() const;

    // ---- statistics ----
    uint64_t GetStartedCount() const;
    /// Water-filling passes run so far (one per instant with arrivals/departures).
    uint64_t GetRecomputeCount() const;
    /// Flows currently draining (not counting transfers waiting out their latency).
    uint32_t GetNActiveFlows() const;
    /// Bytes carried per directed link id, counted when a flow finishes draining.
    const std::vector<double>& GetLinkBytes() const;
    /// Mean utilisation of a link over [0, interval]: bytes carried * 8 / (rate * interval).
    double GetLinkUtilisation(uint32_t link, Time interval) const;
    /// Current max-min rate of an in-flight transfer in bytes/s (0 until the pending
    /// recomputation ran; -1 if `id` is not draining).
    double GetCurrentRate(uint64_t id) const;

    // ---- link occupancy (collective-level fidelity, nccl-collective.cc) ----
    /// Flows draining over a directed link now.
    uint32_t GetLinkActiveFlows(uint32_t link) const;
    /// Flows ever started over a directed link (monotone; zero-byte and same-GPU transfers
    /// start none).
    uint64_t GetLinkFlowStarts(uint32_t link) const;
    /// The directed links a transfer src -> dst with `flowKey` crosses (the route StartTransfer
    /// would use; empty for src == dst).
    const std::vector<uint32_t>& GetRouteLinks(uint32_t srcGpu, uint32_t dstGpu,
                                               uint64_t flowKey);
    /// Links held by a replayed collective until `until` (NcclWorld::Reserve): kept here so
    /// that every job on the fabric sees them. Cleared by Simulator::Destroy().
    void ReserveLinks(const std::vector<uint32_t>& links, Time until);
    Time GetLinkReservedUntil(uint32_t link) const;
    /// Bytes carried per directed link by each owner's transfers (NetworkBackend::OwnerOf),
    /// counted when a flow finishes draining (with one owner: GetLinkBytes as owner 0's).
    std::vector<std::vector<double>> GetOwnerLinkBytes() const override;

    // ---- rate history and rollback (live mode) ----
    /// Records into `history` from now on (null stops recording).
    void SetRateHistory(Ptr<FlowRateHistory> history);
    Ptr<FlowRateHistory> GetRateHistory() const;

    /// Everything in flight at one instant, rebuilt from the rate history.
    struct Checkpoint
    {
        Time time;
        std::vector<FlowHistoryRecord> transfers; //!< truncated to `time`, sorted by id
    };

    /// Returns a new callback for a transfer being restored.
    using Rebind = std::function<DeliveredCallback(const TransferRecord&)>;

    /// State of the backend after all events at t (t <= Now()), from the rate history:
    /// transfers started at or before t and not delivered by t, with the segments up to t.
    /// Throws std::logic_error when no history is recorded.
    Checkpoint CaptureStateAt(Time t) const;

    /// A backend outlives Simulator::Destroy(): transfers still in flight then are dropped
    /// (never delivered) and the next simulation starts with an idle backend.

    /// Continues a captured state in an idle backend (nothing in flight) at Now() == cp.time.
    /// Draining transfers resume with their remaining bytes; drained ones are delivered after
    /// their latency. Rollback recipe: cp = old->CaptureStateAt(t); Simulator::Destroy();
    /// Simulator::Schedule(t, &Simulator::Stop)... Run() (an empty run jumps the clock to t);
    /// fresh->RestoreState(cp, rebind); reschedule the workload's own events; Run().
    void RestoreState(const Checkpoint& cp, Rebind rebind);

    /// Signature of the TransferStarted / TransferDelivered trace sources.
    typedef void (*TransferTracedCallback)(const TransferRecord& transfer);

    /// Transfers waiting for the routing to converge (their route crossed a link that went
    /// down; they make no progress until they are re-routed).
    uint32_t GetNStalledFlows() const;
    /// Current capacity of a directed link in bytes/s (0 while it is down).
    double GetLinkCapacity(uint32_t link) const;

  protected:
    void DoDispose() override;
    /// LinkDown: flows crossing the links stop and wait for the routing; LinkRate: the links'
    /// capacity changes and rates are recomputed; LinkUp: the links carry traffic again.
    void ApplyFabricEvent(const gpusim::FabricEvent& event) override;
    /// Re-routes the stalled flows over the surviving links (ECMP among the surviving equal-cost
    /// next hops); one with no path left fails (FailTransfer).
    void ConvergeRouting() override;

  private:
    /// One draining transfer. Slots are reused; `route` keeps its capacity.
    struct Flow
    {
        TransferRecord rec;
        uint64_t flowKey = 0;
        std::vector<uint32_t> route; //!< directed link ids
        std::vector<uint32_t> linkPos; //!< per hop: index of the slot in m_linkFlows[route[i]]
        int64_t latencyNs = 0;       //!< route latency, added after draining
        double remaining = 0;        //!< bytes left at t0Ns
        int64_t t0Ns = 0;            //!< when `remaining` was last brought up to date
        double rate = 0;             //!< current max-min rate (bytes/s)
        int64_t finishNs = 0;        //!< predicted drain completion
        uint32_t drainPos = kNotInHeap; //!< index in m_drainHeap, or kNotInHeap
        bool active = false;
        bool resumed = false;           //!< re-routed after a link failure
        double startRemaining = 0;      //!< remaining bytes when it was added

        DeliveredCallback done;
    };

    /// What the component search and water-filling read per flow, packed apart from Flow
    /// (m_hot[slot]) so that the passes over thousands of flows stay in cache.
    struct FlowHot
    {
        const uint32_t* route = nullptr; //!< Flow::route data
        uint32_t hops = 0;               //!< Flow::route size
        uint32_t visitEpoch = 0;         //!< component search mark
        uint32_t frozenEpoch = 0;        //!< water-filling mark
        uint32_t bottleneck = 0;         //!< link that fixed the current rate
        double newRate = 0;              //!< scratch for the recomputation
        double rate = 0;                 //!< Flow::rate (read by incremental passes)
    };

    /// A drained transfer waiting out its latency.
    struct Pending
    {
        int64_t atNs; //!< delivery time
        TransferRecord rec;
        DeliveredCallback done;
    };

    struct DrainEntry
    {
        int64_t finishNs;
        uint32_t slot;
    };

    /// A link in the water-filling heap, keyed by (share, link id).
    struct HeapEntry
    {
        double share; //!< fair share of the remaining capacity (bytes/s)
        uint32_t link;
    };

    static constexpr uint32_t kNotInHeap = 0xffffffffu; //!< m_heapPos of a link not in m_heap
    static constexpr uint32_t kHeapArity = 4;           //!< children per heap node (both heaps)

    struct RouteKey
    {
        uint32_t src;
        uint32_t dst;
        uint64_t flowKey;

        bool operator==(const RouteKey& o) const
        {
            return src == o.src && dst == o.dst && flowKey == o.flowKey;
        }
    };

    struct RouteKeyHash
    {
        size_t operator()(const RouteKey& k) const;
    };

    struct CachedRoute
    {
        std::vector<uint32_t> links;
        int64_t latencyNs = 0;
    };

    // Min-heap orders (std heaps are max-heaps); ties broken by ids for reproducible runs.


    /// Heap entry for a Pending kept in m_pending (the heap moves only these 24 bytes).
    struct DeliverEntry
    {
        int64_t atNs;
        uint64_t id;
        uint32_t index; //!< into m_pending
    };

    /// Deliveries at the same instant run in increasing transfer id.
    struct DeliverLater
    {
        bool operator()(const DeliverEntry& a, const DeliverEntry& b) const
        {
            return a.atNs != b.atNs ? a.atNs > b.atNs : a.id > b.id;
        }
    };

    const CachedRoute& LookupRoute(uint32_t src, uint32_t dst, uint64_t flowKey);
    void Start(uint64_t id,
               uint32_t srcGpu,
               uint32_t dstGpu,
               uint64_t bytes,
               uint64_t flowKey,
               bool streamed,
               DeliveredCallback done);
    /// Returns the flow's slot.
    uint32_t AddFlow(const TransferRecord& rec,
                     uint64_t flowKey,
                     const CachedRoute& route,
                     double remaining,
                     DeliveredCallback done);

    /// A transfer whose route crossed a failed link, waiting for the routing to converge.
    struct Stalled
    {
        TransferRecord rec;
        uint64_t flowKey = 0;
        double remaining = 0;
        DeliveredCallback done;
    };

    /// Takes a draining flow off its links (its progress kept) into m_stalled.
    void Stall(uint32_t slot, int64_t nowNs);
    /// The route crosses a link that is down now.
    bool CrossesDownLink(const std::vector<uint32_t>& links) const;
    /// Removes a flow from the drain heap.
    void DrainRemove(uint32_t slot);
    void MarkDirty();
    void Recompute();
    /// Full pass: the connected component of the seed links into m_compFlows/m_compLinks,
    /// with m_capLeft / m_unfrozen set for water-filling it.
    void CollectComponent();
    /// Incremental pass: re-rates only the flows on the seed links plus those whose
    /// bottleneck condition the new rates break, the others' rates held (IncrementalRates).
    void RateIncrementally();
    /// Adds an unrated flow to m_compFlows and its new links to m_compLinks.
    void AddToPass(uint32_t slot);
    /// Residual capacity and member count of every link in m_compLinks for m_compFlows.
    void InitResidual();
    /// Appends to m_grow the held flows whose max-min bottleneck condition no longer holds.
    void FindBrokenBottlenecks();
    /// Water-fills m_compFlows over m_compLinks from m_capLeft / m_unfrozen as prepared.
    void WaterFill();
    /// Water-filling heap order: smaller share first, ties by link id (reproducible runs).
    static bool ShareLess(const HeapEntry& a, const HeapEntry& b);
    void HeapPlace(uint32_t pos, const HeapEntry& e);
    void HeapSiftUp(uint32_t pos, HeapEntry e);
    void HeapSiftDown(uint32_t pos, HeapEntry e);
    void HeapRemoveAt(uint32_t pos);
    /// Drain heap order: earlier finish first, ties by slot (reproducible runs).
    static bool DrainLess(const DrainEntry& a, const DrainEntry& b);
    void DrainPlace(uint32_t pos, const DrainEntry& e);
    void DrainSiftUp(uint32_t pos, DrainEntry e);
    void DrainSiftDown(uint32_t pos, DrainEntry e);
    /// Removes the earliest drain completion (the heap must not be empty).
    void DrainPopTop();
    /// Brings the flow's remaining bytes up to now and gives it a new rate and finish time.
    void SetRate(uint32_t slot, double rate, int64_t nowNs);
    void OnDrain();
    /// Takes a flow off the flow list of its route's hop `hop` in O(hops): the list's last
    /// flow moves into its place (an AllToAll puts ~1,000 flows on a NIC).
    void UnlinkHop(uint32_t slot, size_t hop);
    void CompleteFlow(uint32_t slot, int64_t nowNs);
    void ScheduleDrain();
    void EnqueueDelivery(Pending p);
    void OnDeliver();
    /// Registers OnSimulatorDestroy with the current simulator (once per simulator).
    void EnsureDestroyHook();
    /// Simulator::Destroy(): forget in-flight transfers and event ids of that simulation.
    void OnSimulatorDestroy();
    void SetRecordRateHistory(bool on);
    bool GetRecordRateHistory() const;

    bool m_incremental = true;           //!< IncrementalRates attribute
    std::string m_routingName;           //!< Routing attribute ("" = the topology's)

    /// A transfer split into sub-flows (same id, a share of the bytes each) over the
    /// equal-cost paths; delivered when the last sub-flow drained.
    struct SplitTransfer
    {
        TransferRecord rec;      //!< the whole transfer
        DeliveredCallback done;
        uint32_t left = 0;       //!< sub-flows still draining
        int64_t latencyNs = 0;   //!< the longest path's latency
    };
    /// Starts the sub-flows of a split transfer (already counted as started).
    void StartSplit(const TransferRecord& rec, uint64_t flowKey, DeliveredCallback done);
    /// Equal-cost routes between two GPUs (cached; ClusterTopology::EqualCostRoutes).
    const std::vector<CachedRoute>& SplitRoutes(uint32_t src, uint32_t dst);
    std::unordered_map<uint64_t, SplitTransfer> m_splits;            //!< by transfer id
    std::unordered_map<uint64_t, std::vector<CachedRoute>> m_splitRoutes; //!< src << 32 | dst
    uint64_t m_subFlows = 0;

    Ptr<ClusterTopology> m_topology;
    Ptr<FlowRateHistory> m_history;      //!< null: no recording
    std::vector<double> m_capacity;      //!< per directed link, bytes/s (now)
    std::vector<double> m_nominal;       //!< per directed link, bytes/s (the topology's)
    std::vector<double> m_upCapacity;    //!< per directed link: capacity when up (rate events)
    std::vector<Stalled> m_stalled;      //!< waiting for the routing to converge
    std::vector<double> m_linkBytes;     //!< per directed link, bytes carried
    std::vector<std::vector<double>> m_ownerLinkBytes; //!< per owner, per link (several jobs)
    std::vector<Time> m_reservedUntil;   //!< per directed link (ReserveLinks)

    std::vector<Flow> m_flows;                       //!< flow slots
    std::vector<FlowHot> m_hot;                      //!< per flow slot, hot fields
    std::vector<uint32_t> m_freeSlots;               //!< reusable slots (LIFO)
    uint32_t m_nActive = 0;                          //!< active flow slots
    std::vector<std::vector<uint32_t>> m_linkFlows; //!< per link: active slots crossing it
    std::vector<uint64_t> m_linkStarts;             //!< per link: flows ever started over it

    // Recomputation scratch (allocated once, reused).
    std::vector<uint32_t> m_seedLinks;  //!< links whose flow set changed since the last pass
    std::vector<uint32_t> m_compLinks;  //!< links of the flows being re-rated
    std::vector<uint32_t> m_compFlows;  //!< slots being re-rated
    std::vector<uint32_t> m_linkMark;   //!< per link: epoch of the last visit
    std::vector<uint32_t> m_seedMark;   //!< per link: epoch its flows last joined a pass
    std::vector<uint32_t> m_linkTouch;  //!< per link: bottleneck step of the last update
    std::vector<uint32_t> m_heapPos;    //!< per link: index in m_heap, or kNotInHeap
    std::vector<uint32_t> m_unfrozen;   //!< per link: flows without a rate yet
    std::vector<double> m_capLeft;      //!< per link: capacity not yet handed out
    std::vector<uint32_t> m_touched;    //!< links updated by one bottleneck step
    std::vector<uint32_t> m_grow;       //!< held flows an incremental pass must re-rate
    uint32_t m_freezeEpoch = 0;         //!< FlowHot::frozenEpoch of one WaterFill call
    std::vector<HeapEntry> m_heap;      //!< indexed min-heap of link fair shares (one per link)
    uint32_t m_epoch = 0;
    uint32_t m_touchEpoch = 0;

    std::vector<DrainEntry> m_drainHeap; //!< indexed min-heap: one entry per rated flow
    EventId m_drainEvent;                //!< fires at the earliest drain completion
    int64_t m_drainAtNs = -1;            //!< when m_drainEvent fires
    EventId m_recomputeEvent;            //!< zero-delay, pending while rates are stale
    bool m_recomputePending = false;     //!< m_recomputeEvent is scheduled
    EventId m_destroyHook;               //!< OnSimulatorDestroy, run by Simulator::Destroy()
    bool m_destroyHookSet = false;       //!< m_destroyHook is registered

    std::vector<Pending> m_pending;         //!< drained transfers waiting out their latency
    std::vector<uint32_t> m_freePending;    //!< reusable m_pending entries
    std::vector<DeliverEntry> m_deliveries; //!< min-heap over m_pending by (time, id)
    EventId m_deliverEvent;            //!< fires at the earliest delivery time
    int64_t m_deliverAtNs = -1;        //!< when m_deliverEvent fires

    using RouteCache = std::unordered_map<RouteKey, CachedRoute, RouteKeyHash>;
    RouteCache m_routeCache;
    //! Per source GPU, its last looked-up route (collectives repeat the same peer).
    std::vector<const RouteCache::value_type*> m_lastRoute;

    uint64_t m_started = 0;
    uint64_t m_delivered = 0;
    uint64_t m_recomputes = 0;

    TracedCallback<const TransferRecord&> m_startedTrace;   //!< StartTransfer was called
    TracedCallback<const TransferRecord&> m_deliveredTrace; //!< a transfer was delivered
    TracedCallback<uint32_t, uint32_t> m_recomputeTrace;    //!< flows, links re-rated
};

} // namespace ns3

#endif // GPUSIM_FLOW_BACKEND_H
