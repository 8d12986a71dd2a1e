/*
 * FlowRateHistory: per-flow piecewise-constant rate segments recorded by FlowBackend. From it
 * the state of every flow at an earlier time can be rebuilt (remaining bytes), which is what
 * live mode needs to roll the flow backend back to a checkpoint.
 */
#ifndef GPUSIM_FLOW_RATE_HISTORY_H
#define GPUSIM_FLOW_RATE_HISTORY_H

#include "ns3/network-backend.h"
#include "ns3/nstime.h"
#include "ns3/object.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace ns3
{

/// One transfer as the history saw it.
struct FlowHistoryRecord
{
    /// From `start` on the flow drains at `bytesPerSec`; `remainingBytes` is left at `start`.
    struct Segment
    {
        Time start;
        double bytesPerSec = 0;
        double remainingBytes = 0;
    };

    TransferRecord transfer;       //!< delivered is meaningful only when `isDelivered`
    uint64_t flowKey = 0;          //!< ECMP key given to StartTransfer
    std::vector<Segment> segments; //!< in time order; the first starts at transfer.start
    Time drained;                  //!< last byte left the source (valid when isDrained)
    bool isDrained = false;
    bool isDelivered = false;

    /// Bytes not yet sent at time t (full size before the start, 0 once drained).
    double RemainingBytesAt(Time t) const;
};

/// What the backend reports to a history. Implementations may store, stream or summarise.
class FlowRateHistory : public Object
{
  public:
    static TypeId GetTypeId();
    ~FlowRateHistory() override;

    /// A transfer began (at transfer.start, rate 0 until the first OnRate).
    virtual void OnStart(const TransferRecord& transfer, uint64_t flowKey) = 0;
    /// The in-flight transfer `id` drains at `bytesPerSec` from t, with `remainingBytes` left.
    virtual void OnRate(uint64_t id, Time t, double bytesPerSec, double remainingBytes) = 0;
    /// The last byte of `id` left the source at t.
    virtual void OnDrained(uint64_t id, Time t) = 0;
    /// `id` was delivered at t (after this, the id may be reused by a new transfer).
    virtual void OnDelivered(uint64_t id, Time t) = 0;
    /// A backend restored from a checkpoint continues this in-flight transfer (its segments and
    /// drain state as of the checkpoint).
    virtual void OnRestore(const FlowHistoryRecord& record) = 0;

    /// Bytes of transfer `id` not yet sent at t. When ids were reused, the transfer alive at t
    /// (else the latest one started before t) is meant. Throws std::out_of_range if unknown.
    virtual double RemainingBytesAt(uint64_t id, Time t) const = 0;
    /// Transfers started at or before t and not delivered by t, sorted by id.
    virtual std::vector<FlowHistoryRecord> AliveAt(Time t) const = 0;
    /// Drops transfers delivered before t (checkpoints older than t are released).
    virtual void ForgetBefore(Time t) = 0;
    /// Number of transfers held.
    virtual size_t GetNFlows() const = 0;
};

/// Keeps every record in memory, in start order.
class InMemoryFlowRateHistory : public FlowRateHistory
{
  public:
    static TypeId GetTypeId();
    InMemoryFlowRateHistory();

    void OnStart(const TransferRecord& transfer, uint64_t flowKey) override;
    void OnRate(uint64_t id, Time t, double bytesPerSec, double remainingBytes) override;
    void OnDrained(uint64_t id, Time t) override;
    void OnDelivered(uint64_t id, Time t) override;
    void OnRestore(const FlowHistoryRecord& record) override;
    double RemainingBytesAt(uint64_t id, Time t) const override;
    std::vector<FlowHistoryRecord> AliveAt(Time t) const override;
    void ForgetBefore(Time t) override;
    size_t GetNFlows() const override;

    /// The record of an in-flight or past transfer (as RemainingBytesAt picks it).
    const FlowHistoryRecord& Get(uint64_t id, Time t) const;

  private:
    FlowHistoryRecord& Live(uint64_t id);

    std::vector<FlowHistoryRecord> m_records;                      //!< in start order
    std::unordered_map<uint64_t, std::vector<size_t>> m_byId;      //!< id -> record indices
    std::unordered_map<uint64_t, size_t> m_live;                   //!< undelivered id -> index
};

} // namespace ns3

#endif // GPUSIM_FLOW_RATE_HISTORY_H
