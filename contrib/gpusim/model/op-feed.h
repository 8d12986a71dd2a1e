/*
 * OpFeed: hands host threads their ops one at a time while the simulation runs, instead of a
 * whole trace loaded up front. Live mode (LiveJobSource) feeds ops as a running program issues
 * them; TraceOpFeed feeds a recorded live run back from its trace, through the same engine
 * path, so the offline replay of a live run reproduces it exactly.
 *
 * The engine calls Next() when a host thread needs its next op (if the program has not sent it
 * yet, the thread parks until WhenReady's callback), and Returned() when an op the program
 * waits on returns (blocking calls at the simulated time they complete, queries with their
 * answer).
 */
#ifndef GPUSIM_OP_FEED_H
#define GPUSIM_OP_FEED_H

#include "ns3/object.h"
#include "ns3/nstime.h"
#include "ns3/op-ir.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace ns3
{

class OpFeed : public Object
{
  public:
    static TypeId GetTypeId();
    ~OpFeed() override;

    /// Number of ranks the feed serves.
    virtual uint32_t GetNRanks() const = 0;
    /// Host threads of a rank known now (the engine creates them at install; thread 0 always).
    virtual std::vector<uint32_t> KnownThreads(uint32_t rank) const = 0;
    /// Whether a host thread's next op is there.
    enum class State
    {
        Ready,   //!< `op` is set
        Pending, //!< not sent yet: the thread parks (WhenReady)
        Ended,   //!< the thread has no more ops
    };
    /// Next op of (rank, thread). The op stays valid (at the same address) for the feed's
    /// lifetime; the engine may rewrite a query the program saw not ready (see HostThread).
    virtual State Next(uint32_t rank, uint32_t thread, gpusim::Op*& op) = 0;
    /// After Next() said Pending: the thread parks, ready for its next op since `since`;
    /// `ready` is called once Next() would no longer say Pending. `holdAt` (an open NCCL group
    /// must be launched then): no event at or after `since` may run before that.
    virtual void WhenReady(uint32_t rank,
                           uint32_t thread,
                           Time since,
                           bool holdAt,
                           std::function<void()> ready);
    /// The program's call behind `op` returns now, with `value` (queries: 1 ready / 0 not
    /// ready; elapsed-time queries: nanoseconds, or -1 not ready; other ops: 0).
    virtual void Returned(uint32_t rank, uint32_t thread, const gpusim::Op& op, int64_t value);

    /// Called when a rank gains a host thread after install (set by GpuWorkload).
    using NewThreadCallback = std::function<void(uint32_t rank, uint32_t thread)>;
    void SetNewThreadCallback(NewThreadCallback cb);

  protected:
    void DoDispose() override;
    void NotifyNewThread(uint32_t rank, uint32_t thread);

  private:
    NewThreadCallback m_newThread;
};

/// Feeds a job's ops (per rank, per thread, in order) through the OpFeed path.
class TraceOpFeed : public OpFeed
{
  public:
    static TypeId GetTypeId();
    TraceOpFeed();
    ~TraceOpFeed() override;

    /// Takes a copy of the job (ranks sharing another's op list are not supported).
    void SetJob(const gpusim::JobTrace& job);

    uint32_t GetNRanks() const override;
    std::vector<uint32_t> KnownThreads(uint32_t rank) const override;
    State Next(uint32_t rank, uint32_t thread, gpusim::Op*& op) override;

  private:
    struct ThreadOps
    {
        std::vector<gpusim::Op*> ops;
        size_t next = 0;
    };

    gpusim::JobTrace m_job;
    std::vector<std::map<uint32_t, ThreadOps>> m_threads; //!< by rank, then thread
};

} // namespace ns3

#endif // GPUSIM_OP_FEED_H
