/*
 * NetworkBackend: the one interface the engine uses to move bytes between GPUs.
 * Implementations: FlowBackend (max-min fair, flow level), PacketBackend (ns-3 packets).
 */
#ifndef GPUSIM_NETWORK_BACKEND_H
#define GPUSIM_NETWORK_BACKEND_H

#include "ns3/cluster-topology.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <functional>
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

  private:
    uint32_t m_owners = 0; //!< AcquireOwner calls in this simulation
};

} // namespace ns3

#endif // GPUSIM_NETWORK_BACKEND_H
