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
class NcclWorld;
class OpFeed;

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
    /// Takes ops from a feed while running (live mode and its replay) instead of a list.
    void SetupFeed(CudaContext* context, uint32_t index, Ptr<OpFeed> feed);
    /// Starts issuing ops at the current simulated time.
    void Start();
    /// Starts a thread that appears while the simulation runs: its first op's host time counts
    /// from `origin` (the job's time origin), so it issues at the same instant it would had the
    /// thread been known from the start (or now, if that instant has passed).
    void StartFrom(Time origin);
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
    /// Answers a query op (stream/event query, elapsed time) from the current state; a stream
    /// or event query that is not ready becomes host time (the program polled and went on).
    int64_t ResolveQuery(const gpusim::Op& op);
    /// Tells the feed the program's call behind `op` returns now.
    void Return(const gpusim::Op& op, int64_t value);

    CudaContext* m_context = nullptr;
    // Feed mode (live runs and their replays): every op is issued by its own host step, an
    // event tagged for HostFirstScheduler, so the order of events does not depend on when the
    // program sent the op.
    void FeedNext();
    void OnFed();
    void PlanNext(int state, gpusim::Op* op);
    void FeedIssue(const gpusim::Op* op);
    void FeedFinish();
    void ScheduleHostStep(Time at, std::function<void()> step);

    Ptr<OpFeed> m_feed;           //!< live source of ops (null: m_ops is the whole list)
    Time m_readySince;            //!< feed mode: when the thread became ready for its next op
    bool m_hasOrigin = false;     //!< first op's host time counts from m_origin
    Time m_origin;
    const gpusim::Op* m_waitingOp = nullptr; //!< blocking op whose return the feed awaits
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
    /// Adds a host thread fed op by op (live mode); returns it (not started).
    Ptr<HostThread> AddFeedThread(uint32_t index, Ptr<OpFeed> feed);
    void StartThreads();

    /// comm_init handler (live mode): wires the rank into the communicator and returns true
    /// if the host thread must wait (resume() is called when every member has arrived).
    using CommInitHandler = std::function<bool(const gpusim::Op&, std::function<void()> resume)>;
    void SetCommInitHandler(CommInitHandler h);
    /// Runs the handler; false when none is set (membership wired at install time).
    bool OnCommInit(const gpusim::Op& op, std::function<void()> resume);

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
    /// When a recorded version of an event completed; false if it has not (or never will).
    bool EventCompletionTime(uint64_t event, uint64_t version, Time& at) const;
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
    /// This rank's communicators by the names its op list uses.
    const std::map<std::string, Ptr<NcclCollective>>& GetCommunicators() const;
    /// Launches one NCCL item (single op or group); done() runs when all parts finished.
    /// A representative also launches it on each of its mirrors (below), at the same instant.
    void LaunchCollective(const std::vector<const gpusim::Op*>& ops, std::function<void()> done);

    // Mirrored ranks (GpuWorkload MirrorIdenticalRanks, doc/flow-backend.md): a rank that runs
    // the same op list as a representative issues the same ops at the same instants as long as
    // its collectives end when the representative's do. A mirror therefore runs no host threads
    // or streams of its own; it launches each collective its representative launches, on its
    // own communicators, so the network still carries its traffic, and its completions are
    // compared with the representative's (MirrorStats) to show where that assumption fails.
    /// Makes `mirror` launch every collective this rank launches.
    void AddMirror(Ptr<CudaContext> mirror);
    /// The representative this rank mirrors (-1: it runs its own ops).
    int32_t GetMirrorOf() const;
    /// How far mirrors' collective completions fell from their representative's.
    struct MirrorStats
    {
        uint64_t launches = 0;     //!< collective launches mirrored (per mirror)
        uint64_t diverged = 0;     //!< of those, completed at another instant than the rep's
        Time maxDivergence;        //!< largest |mirror completion - representative completion|
    };
    const MirrorStats& GetMirrorStats() const;
    /// Mirror side: communicators (by the shared list's names) that are private twins of the
    /// representative's (same shape on links no other communicator uses; GpuWorkload decides):
    /// their launches are skipped, their completion is the representative's.
    void SetTwinComms(std::set<std::string> comms);

    // Peer-to-peer copies (memcpy kind p2p naming src_rank and dst_rank) are transfers on the
    // network backend between the two ranks' GPUs, like a collective's steps.
    /// Maps a rank of the job to its GPU index; false if there is no such rank.
    using RankGpuMap = std::function<bool(uint32_t rank, uint32_t& gpu)>;
    void SetPeerCopyNetwork(Ptr<NcclWorld> world, RankGpuMap gpuOfRank);
    /// `op` is such a copy and a network is set: the stream runs it with StartPeerCopy.
    bool IsNetworkCopy(const gpusim::Op& op) const;
    /// Moves the copy's bytes from the source rank's GPU to the destination's over the backend,
    /// after the copy engine's setup time; done() runs when the last byte arrived.
    void StartPeerCopy(const gpusim::Op& op, std::function<void()> done);

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
    /// Launches the item on this rank's own communicators only.
    void LaunchOwn(const std::vector<const gpusim::Op*>& ops, std::function<void()> done);
    /// Representative side of LaunchCollective: the item on this rank and its mirrors.
    void LaunchMirrored(const std::vector<const gpusim::Op*>& ops, std::function<void()> done);
    /// Which mirrors launch a communicator's collectives, and the GPUs of those that skip them.
    struct MirrorComm
    {
        std::vector<uint32_t> launch;   //!< indexes into m_mirrors
        std::vector<uint32_t> twinGpus; //!< GPUs of mirrors whose communicator is a twin
    };
    const MirrorComm& MirrorCommFor(const std::string& comm);

    struct EventState
    {
        uint64_t issued = 0;
        std::set<uint64_t> done;
        std::map<uint64_t, Time> doneAt; //!< version -> completion time
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
    Ptr<NcclWorld> m_peerWorld; //!< network of peer copies (null: they use the cost model)
    RankGpuMap m_gpuOfRank;
    std::vector<Ptr<HostThread>> m_threads;
    std::vector<MarkerRecord> m_markers;
    CommInitHandler m_commInitHandler;
    std::vector<Ptr<CudaContext>> m_mirrors; //!< ranks launching this rank's collectives
    int32_t m_mirrorOf = -1;
    std::set<std::string> m_twinComms;                 //!< mirror: launches it skips
    std::map<std::string, MirrorComm> m_mirrorComms;   //!< representative: by list comm name
    MirrorStats m_mirrorStats;
};

} // namespace ns3

#endif // GPUSIM_CUDA_CONTEXT_H
