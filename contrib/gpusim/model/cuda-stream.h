/*
 * CudaStream: an in-order queue of device work on one GPU (kernels, copies, memsets, event
 * records, cross-stream waits, NCCL launches). Installed as an Application on the GpuNode.
 */
#ifndef GPUSIM_CUDA_STREAM_H
#define GPUSIM_CUDA_STREAM_H

#include "ns3/application.h"
#include "ns3/nstime.h"
#include "ns3/op-ir.h"
#include "ns3/traced-callback.h"

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ns3
{

class CudaContext;

/// One unit of stream work.
struct StreamItem
{
    enum class Type : uint8_t
    {
        Work,        //!< kernel / memcpy / memset: occupies the stream for its duration
        EventRecord, //!< completes (event, version) when reached
        WaitEvent,   //!< blocks the stream until (event, version) completes
        WaitStream,  //!< blocks until another stream completes item `otherSeq` (legacy stream)
        Collective,  //!< NCCL launch (one op or one ncclGroupStart/End group)
    };

    Type type = Type::Work;
    std::vector<const gpusim::Op*> ops; //!< Work: one op; Collective: the group's ops
    uint64_t event = 0;
    uint64_t version = 0;
    int64_t otherStream = 0;
    uint64_t otherSeq = 0;
    std::function<void()> onDone; //!< called when the item completes (e.g. a blocked host)
    uint64_t seq = 0;             //!< 1-based position in this stream, assigned by Enqueue
};

/// What a stream reports for each finished piece of work (for metrics and traces).
struct StreamActivity
{
    uint32_t rank = 0;
    int64_t stream = 0;
    const gpusim::Op* op = nullptr;
    bool communication = false; //!< NCCL work (vs compute / copy)
    Time start;
    Time end;
};

class CudaStream : public Application
{
  public:
    static TypeId GetTypeId();
    CudaStream();
    ~CudaStream() override;

    void Setup(CudaContext* context, int64_t id, bool nonBlocking, int32_t priority);
    int64_t GetStreamId() const;
    bool IsNonBlocking() const;

    /// Appends an item; returns its sequence number.
    uint64_t Enqueue(StreamItem item);
    uint64_t GetEnqueuedSeq() const;
    uint64_t GetCompletedSeq() const;
    /// Calls cb (in a fresh event) once item `seq` has completed (at once if it has).
    void WhenCompleted(uint64_t seq, std::function<void()> cb);
    bool IsIdle() const;
    /// Human-readable description of the blocked head item ("" if idle).
    std::string DescribePending() const;

    /// Fired when a Work or Collective item finishes.
    TracedCallback<const StreamActivity&> m_activityTrace;

  protected:
    void DoDispose() override;

  private:
    void StartApplication() override;
    void StopApplication() override;
    void Pump();
    void FinishHead();
    void WakeWaiters();

    CudaContext* m_context = nullptr; //!< owner (outlives the stream)
    int64_t m_id = 0;
    bool m_nonBlocking = false;
    int32_t m_priority = 0;
    std::deque<StreamItem> m_queue;
    bool m_busy = false;     //!< head item started and not finished
    bool m_pumping = false;  //!< re-entrancy guard for Pump
    Time m_headStart;
    uint64_t m_enqueued = 0;
    uint64_t m_completed = 0;
    std::multimap<uint64_t, std::function<void()>> m_waiters; //!< seq -> callbacks
};

} // namespace ns3

#endif // GPUSIM_CUDA_STREAM_H
