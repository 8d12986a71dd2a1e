/*
 * HostFirstScheduler: the event order live mode needs to be reproducible.
 *
 * ns-3 orders events of one instant by insertion (uid). In a live run, a host thread's next op
 * is scheduled when the program sends it, which is later than a replay of the recording would
 * schedule it; with uid order the two runs could break ties differently. This scheduler orders
 * events of one instant as: host-thread steps first, by (rank, thread) key, then every other
 * event by uid. Host steps are tagged (TagHostEvent) before they are scheduled. Inserting a
 * host step later then changes nothing, provided no event of its instant or later has run —
 * which the gate guarantees: before an event is handed out, the gate (live mode's conservative
 * synchronizer, LiveJobSource) may wait for the programs until no op can still arrive before it.
 */
#ifndef GPUSIM_HOST_FIRST_SCHEDULER_H
#define GPUSIM_HOST_FIRST_SCHEDULER_H

#include "ns3/scheduler.h"

#include <functional>
#include <set>
#include <unordered_map>

namespace ns3
{

class HostFirstScheduler : public Scheduler
{
  public:
    static TypeId GetTypeId();
    HostFirstScheduler();
    ~HostFirstScheduler() override;

    /// Marks `ev` (about to be scheduled) as the host step of `key` (rank << 32 | thread).
    static void TagHostEvent(const EventImpl* ev, uint64_t key);

    /// Called before an event is handed out with (true, its time) or, when there is none, with
    /// (false, 0). Returns true if it waited and something may have changed (the scheduler asks
    /// again), false to go on (hand out the event, or report no events).
    using Gate = std::function<bool(bool haveEvent, uint64_t ts)>;
    static void SetGate(Gate gate);
    /// Events other than host steps queued in the scheduler of the running simulation (device
    /// work, the network): 0 means no device work can complete until a program issues more.
    static uint64_t PendingOtherEvents();
    /// A host step of a thread whose key (rank << 32 | thread) is not in `keys` is queued.
    static bool HostStepPendingExcept(const std::set<uint64_t>& keys);

    void Insert(const Event& ev) override;
    bool IsEmpty() const override;
    Event PeekNext() const override;
    Event RemoveNext() override;
    void Remove(const Event& ev) override;

  private:
    struct Entry
    {
        uint64_t ts;
        uint64_t cls; //!< 0: host step, 1: other
        uint64_t key; //!< host key, or uid
        uint32_t uid;
        uint32_t context;
        EventImpl* impl;
        bool operator<(const Entry& o) const
        {
            if (ts != o.ts)
            {
                return ts < o.ts;
            }
            if (cls != o.cls)
            {
                return cls < o.cls;
            }
            if (key != o.key)
            {
                return key < o.key;
            }
            return uid < o.uid;
        }
    };

    Entry MakeEntry(const Event& ev, bool consumeTag);
    void Settle() const;

    static const HostFirstScheduler* s_current;
    uint64_t m_pendingOther = 0; //!< queued events that are not host steps
    std::set<Entry> m_events;
    std::unordered_map<uint32_t, uint64_t> m_hostKeys; //!< uid -> key of queued host steps
};

} // namespace ns3

#endif // GPUSIM_HOST_FIRST_SCHEDULER_H
