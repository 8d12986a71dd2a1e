/*
 * CudaContext: the device-side state of one rank (one GPU): its streams, CUDA events with
 * versions, host threads, cross-thread tokens, allocations and NCCL communicators.
 * HostThread: replays one host thread's ops in order, paying host time, blocking on syncs.
 */
#ifndef GPUSIM_CUDA_CONTEXT_H
#define GPUSIM_CUDA_CONTEXT_H

#include "ns3/cuda-stream.h"
#include "ns3/gpu-node.h"
#include "ns3/kernel-cost-model.h"
#include "ns3/object.h"
#include "ns3/op-ir.h"
#include "ns3/ptr.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ns3
{

class CudaContext;
class NcclCollective;

/// A marker seen by a host thread (iteration boundaries and annotations).
struct MarkerRecord
{
    uint32_t rank = 0;
    uint32_t thread = 0;
    const gpusim::Op* op = nullptr;
    Time time;
};

class HostThread : public Object
{
  public:
    static TypeId GetTypeId();
    HostThread();
    ~HostThread() override;

    void Setup(CudaContext* context, uint32_t index, std::vector<const gpusim::Op*> ops);
    /// Starts issuing ops at the current simulated time.
    void Start();
    bool IsFinished() const;
    Time GetFinishTime() const;
    uint32_t GetIndex() const;
    /// "thread 0 blocked at op 12 (stream_sync stream 7)" or "" when finished.
    std::string DescribeState() const;

  protected:
    void DoDispose() override;

  private:
    void Advance();
    /// Issues one op; returns true if the thread must block until Resume().
    bool Issue(const gpusim::Op& op);
    void IssueGroup();
    void Resume();

    CudaContext* m_context = nullptr;
    uint32_t m_index = 0;
    std::vector<const gpusim::Op*> m_ops;
    size_t m_next = 0;
    bool m_cpuPaid = false; //!< cpuUs of m_ops[m_next] already elapsed
    bool m_blocked = false;
    bool m_finished = false;
    bool m_started = false;
    Time m_finishTime;
    std::string m_blockedOn;
    std::vector<const gpusim::Op*> m_group; //!< collectives of the open ncclGroup
};

class CudaContext : public Object
{
  public:
    static TypeId GetTypeId();
    CudaContext();
    ~CudaContext() override;

    void Setup(Ptr<GpuNode> node, uint32_t rank, Ptr<KernelCostModel> costModel);
    Ptr<GpuNode> GetNode() const;
    uint32_t GetRank() const;
    Ptr<KernelCostModel> GetCostModel() const;

    /// Creates host threads from the rank's ops (grouped by Op::thread) and starts them.
    void Load(const gpusim::RankTrace& trace);
    void StartThreads();

    /// The stream with this id, created (blocking, priority 0) on first use.
    Ptr<CudaStream> GetStream(int64_t id);
    void CreateStream(int64_t id, bool nonBlocking, int32_t priority);
    const std::map<int64_t, Ptr<CudaStream>>& GetStreams() const;
    /// Enqueues work honouring legacy-default-stream ordering against blocking streams.
    uint64_t Submit(int64_t stream, StreamItem item);

    // CUDA events with versions: a record issues version v; waits capture the latest version.
    uint64_t IssueEventRecord(uint64_t event);
    uint64_t LatestEventVersion(uint64_t event) const;
    bool IsEventDone(uint64_t event, uint64_t version) const;
    void CompleteEvent(uint64_t event, uint64_t version);
    void WhenEventDone(uint64_t event, uint64_t version, std::function<void()> cb);

    // Cross-thread dependencies.
    void Signal(uint64_t token);
    bool IsSignalled(uint64_t token) const;
    void WhenSignalled(uint64_t token, std::function<void()> cb);

    // Device memory accounting (returns false on OOM and records the failure).
    bool Malloc(uint64_t ptr, uint64_t bytes);
    void Free(uint64_t ptr);
    const std::vector<std::string>& GetErrors() const;
    void AddError(const std::string& e);

    // NCCL.
    void AddCommunicator(const std::string& comm, Ptr<NcclCollective> app);
    Ptr<NcclCollective> GetCommunicator(const std::string& comm) const;
    /// Launches one NCCL item (single op or group); done() runs when all parts finished.
    void LaunchCollective(const std::vector<const gpusim::Op*>& ops, std::function<void()> done);

    /// All streams idle now? (device synchronize)
    void WhenDeviceIdle(std::function<void()> cb);

    void RecordMarker(uint32_t thread, const gpusim::Op* op);
    const std::vector<MarkerRecord>& GetMarkers() const;
    const std::vector<Ptr<HostThread>>& GetThreads() const;
    bool IsFinished() const; //!< all threads done and all streams idle
    std::string DescribeState() const;

    TracedCallback<const StreamActivity&> m_activityTrace; //!< forwarded from every stream

  protected:
    void DoDispose() override;

  private:
    struct EventState
    {
        uint64_t issued = 0;
        std::set<uint64_t> done;
        std::multimap<uint64_t, std::function<void()>> waiters;
    };

    Ptr<GpuNode> m_node;
    uint32_t m_rank = 0;
    Ptr<KernelCostModel> m_costModel;
    std::map<int64_t, Ptr<CudaStream>> m_streams;
    std::map<uint64_t, EventState> m_events;
    std::set<uint64_t> m_signalled;
    std::multimap<uint64_t, std::function<void()>> m_tokenWaiters;
    std::map<uint64_t, uint64_t> m_allocations; //!< ptr -> bytes
    std::vector<std::string> m_errors;
    std::map<std::string, Ptr<NcclCollective>> m_comms;
    std::vector<Ptr<HostThread>> m_threads;
    std::vector<MarkerRecord> m_markers;
};

} // namespace ns3

#endif // GPUSIM_CUDA_CONTEXT_H
