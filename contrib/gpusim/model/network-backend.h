/*
 * NetworkBackend: the one interface the engine uses to move bytes between GPUs.
 * Implementations: FlowBackend (max-min fair, flow level), PacketBackend (ns-3 packets).
 */
#ifndef GPUSIM_NETWORK_BACKEND_H
#define GPUSIM_NETWORK_BACKEND_H

#include "ns3/cluster-topology.h"
#include "ns3/fabric-event.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace ns3
{
namespace gpusim
{
class JsonWriter;
}

/// What a backend reports when a transfer is delivered.
struct TransferRecord
{
    uint64_t id = 0;
    uint32_t srcGpu = 0;
    uint32_t dstGpu = 0;
    uint64_t bytes = 0;
    Time start;     //!< when StartTransfer was called
    Time delivered;        //!< when the last byte arrived at dstGpu
    bool streamed = false; //!< started by StartStreamedTransfer
};

class NetworkBackend : public Object
{
  public:
    using DeliveredCallback = std::function<void(const TransferRecord&)>;
    /// A transfer that can never be delivered (no path left between its GPUs) and why.
    using TransferFailedCallback =
        std::function<void(const TransferRecord&, const std::string& why)>;

    static TypeId GetTypeId();
    ~NetworkBackend() override;

    virtual void SetTopology(Ptr<ClusterTopology> topology) = 0;
    virtual Ptr<ClusterTopology> GetTopology() const = 0;

    /// Starts moving `bytes` from srcGpu to dstGpu now. `id` is chosen by the caller and must be
    /// unique among transfers in flight; `flowKey` feeds the ECMP hash (e.g. channel number).
    /// `done` is called exactly once, at delivery time. When several transfers are delivered
    /// at the same simulated time, callbacks run in increasing id order.
    virtual void StartTransfer(uint64_t id, uint32_t srcGpu, uint32_t dstGpu, uint64_t bytes,
                               uint64_t flowKey, DeliveredCallback done) = 0;

    /// Like StartTransfer, for bytes that continue a stream on the same path whose earlier
    /// transfer has just been delivered (LL lines following each other): the stream paid the
    /// path's latency once, so a backend that models latency as a delay may deliver these when
    /// drained. The base version is StartTransfer (packets pay their own latency).
    virtual void StartStreamedTransfer(uint64_t id, uint32_t srcGpu, uint32_t dstGpu,
                                       uint64_t bytes, uint64_t flowKey, DeliveredCallback done);

    /// Several jobs on one fabric: each NcclWorld using this backend takes an owner number
    /// (0, 1, ... in the order they attach, per simulation) and puts it in the top bits of its
    /// transfer ids, so ids stay unique across jobs and every transfer names its job
    /// (OwnerOf). The first owner is 0: a single job's ids are unchanged.
    uint32_t AcquireOwner();
    /// Owners taken in this simulation.
    uint32_t GetNOwners() const;
    static constexpr uint32_t kOwnerShift = 48;
    static uint32_t OwnerOf(uint64_t transferId)
    {
        return static_cast<uint32_t>(transferId >> kOwnerShift);
    }
    static uint64_t FirstTransferId(uint32_t owner)
    {
        return (static_cast<uint64_t>(owner) << kOwnerShift) + 1;
    }

    /// Bytes each owner's transfers carried over each directed link so far: [owner][link]
    /// (links the backend models as flows or packets; a backend that keeps no split returns
    /// all of a link's bytes as owner 0's while it has one owner). The base keeps none.
    virtual std::vector<std::vector<double>> GetOwnerLinkBytes() const;

    /// Transfers started but not yet delivered (for stuck-run reports).
    virtual std::vector<TransferRecord> InFlight() const = 0;

    virtual std::string GetName() const = 0;

    /// Number of transfers delivered so far.
    virtual uint64_t GetDeliveredCount() const = 0;

    /// Statistics of the run so far as one JSON object (links, queues, totals); embedded as
    /// "network" in the metrics JSON. The base version reports the backend and its counts.
    virtual std::string StatsJson() const;

    /// Appends Chrome/Perfetto counter events ("ph": "C") of the network's time series (queue
    /// occupancy, rates) to an open "traceEvents" array. The base version writes none.
    virtual void WriteTraceCounters(gpusim::JsonWriter& w) const;

    // ---- failures and degradation (fabric-event.h) ----
    /// Schedules the fabric events (times on the simulator's clock; one already past applies
    /// now). At a LinkDown the links stop carrying traffic at once; RoutingConvergence later
    /// the routing avoids them (and routes over them again after a LinkUp). The backend must
    /// have its topology. The base version schedules the events and calls ApplyFabricEvent /
    /// ConvergeRouting; a backend that does not override those throws std::logic_error.
    virtual void ScheduleFabricEvents(const std::vector<gpusim::FabricEvent>& events);
    /// Fabric events were scheduled on this backend.
    bool HasFabricEvents() const;
    /// Called for a transfer that cannot be delivered because no path is left (NCCL's
    /// ncclRemoteError); without one such a transfer throws std::runtime_error.
    void SetTransferFailedCallback(TransferFailedCallback cb);
    /// The same for one owner's transfers (AcquireOwner: a job, a background generator),
    /// called instead of the general one: on a shared fabric each job learns of its own.
    void SetTransferFailedCallback(uint32_t owner, TransferFailedCallback cb);
    /// The directed link is up (physically) now.
    bool IsLinkUp(uint32_t link) const;
    /// "A-B, C-D": the cables down now (both directions named once), "" when none.
    std::string DownLinksText() const;

    /// Signature of the FabricEvent trace source: what happened ("down leaf0-spine1",
    /// "routing converged: 2 links down").
    typedef void (*FabricEventTracedCallback)(const std::string& what);

  protected:
    /// Applies one event at its time; m_linkDown already reflects a down/up.
    virtual void ApplyFabricEvent(const gpusim::FabricEvent& event);
    /// The routing has converged on the links down now (m_routeDown == m_linkDown).
    virtual void ConvergeRouting();
    /// Reports a transfer that cannot complete (the callback, or std::runtime_error).
    void FailTransfer(const TransferRecord& rec, const std::string& why);
    /// A transfer found no path (links down): it fails after TransportTimeout unless by then
    /// it was delivered or a path is back (the backend keeps it waiting meanwhile).
    void NoPathLeft(const TransferRecord& rec, const std::string& why);
    /// Routes avoid these links (per directed link; empty until events are scheduled).
    const std::vector<uint8_t>& RouteDown() const;
    /// Some link is down in the routing's view.
    bool AnyRouteDown() const;
    Time GetRoutingConvergence() const;

  private:
    void OnFabricEvent(size_t index);
    void CheckNoPath(TransferRecord rec, std::string why);
    Time m_transportTimeout;            //!< TransportTimeout attribute
    std::set<uint64_t> m_watched;       //!< transfers whose NoPathLeft timeout runs
    uint32_t m_owners = 0; //!< AcquireOwner calls in this simulation
    void OnConverged();

    Time m_convergence;                       //!< RoutingConvergence attribute
    std::vector<gpusim::FabricEvent> m_events; //!< ScheduleFabricEvents
    std::vector<uint8_t> m_linkDown;          //!< per directed link: physically down now
    std::vector<uint8_t> m_routeDown;         //!< per directed link: routing avoids it
    uint32_t m_nRouteDown = 0;                //!< entries set in m_routeDown
    TransferFailedCallback m_failed;
    std::map<uint32_t, TransferFailedCallback> m_ownerFailed; //!< per owner
    TracedCallback<const std::string&> m_fabricTrace; //!< FabricEvent trace source
};

} // namespace ns3

#endif // GPUSIM_NETWORK_BACKEND_H
