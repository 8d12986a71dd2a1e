/*
 * GpuWorkload: a job (Op IR) installed on a cluster: one CudaContext per rank with its host
 * threads and streams, NCCL communicators wired to a network backend. After Simulator::Run()
 * it checks that everything finished (stuck-run report otherwise) and produces metrics JSON
 * and a Chrome/Perfetto trace.
 */
#ifndef GPUSIM_GPU_WORKLOAD_H
#define GPUSIM_GPU_WORKLOAD_H

#include "ns3/cuda-context.h"
#include "ns3/json-writer.h"
#include "ns3/nccl-collective.h"
#include "ns3/network-backend.h"
#include "ns3/node-container.h"
#include "ns3/object.h"
#include "ns3/op-feed.h"
#include "ns3/op-ir.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

/// Outcome of a run.
struct RunReport
{
    bool completed = false;          //!< every thread finished, every stream drained
    Time endTime;                    //!< when the last rank finished
    std::string stuck;               //!< what is still waiting, one line per item
    std::vector<std::string> errors; //!< OOM, other device errors and network failures met
};

/// One iteration (a ProfilerStep#N begin/end pair, or the whole run) of one rank.
struct IterationRecord
{
    uint32_t rank = 0;
    std::string name;
    Time start;
    Time end;
    double recordedUs = -1; //!< recorded length when the source carried it
    // Lumos-style breakdown of the window on the rank's GPU.
    double computeOnlyUs = 0; //!< exposed compute
    double commOnlyUs = 0;    //!< exposed communication
    double overlapUs = 0;     //!< compute and communication at once
    double idleUs = 0;        //!< neither
};

class GpuWorkload : public Object
{
  public:
    static TypeId GetTypeId();
    GpuWorkload();
    ~GpuWorkload() override;

    /// Builds contexts for each rank of the job on gpus.Get(rankToGpu[rank]) (identity if
    /// empty). Throws std::runtime_error on inconsistent input (unknown GPU, bad comm init).
    void Install(std::shared_ptr<const gpusim::JobTrace> job,
                 const NodeContainer& gpus,
                 Ptr<NetworkBackend> backend,
                 Ptr<KernelCostModel> costModel,
                 Ptr<NcclWorld> world,
                 const std::vector<uint32_t>& rankToGpu = {});
    /// Live mode: the ranks' ops come from a feed while the simulation runs. Communicators are
    /// wired when their comm_init is issued, which returns once every member has joined.
    void InstallFeed(Ptr<OpFeed> feed,
                     const NodeContainer& gpus,
                     Ptr<NetworkBackend> backend,
                     Ptr<KernelCostModel> costModel,
                     Ptr<NcclWorld> world,
                     const std::vector<uint32_t>& rankToGpu = {});
    Ptr<OpFeed> GetFeed() const;
    /// Schedules every host thread to start at `at`.
    void Start(Time at = Seconds(0));

    /// After Simulator::Run(): did everything finish, and if not, what is waiting.
    RunReport Check() const;

    uint32_t GetNRanks() const;
    Ptr<CudaContext> GetContext(uint32_t rank) const;
    /// The rank whose ops `rank` runs: itself, or its representative when it is mirrored.
    uint32_t RepresentativeOf(uint32_t rank) const;
    /// Mirrored ranks (MirrorIdenticalRanks), and how far their collectives' completions fell
    /// from their representatives' (all zero when nothing is mirrored).
    struct MirrorSummary
    {
        uint32_t mirrored = 0;       //!< ranks that ran as mirrors
        uint32_t representatives = 0; //!< ranks that ran their ops
        uint64_t launches = 0;
        uint64_t diverged = 0;
        Time maxDivergence;
    };
    MirrorSummary GetMirrorSummary() const;
    Ptr<NcclWorld> GetNcclWorld() const;
    const std::vector<CollectiveRecord>& GetCollectives() const;
    const std::vector<StreamActivity>& GetActivities() const;
    /// Iterations per rank (ProfilerStep-style marker pairs; the whole run if none); mirrored
    /// ranks are left out (their iterations are their representative's).
    std::vector<IterationRecord> GetIterations() const;

    /// Metrics JSON (see doc/outputs.md).
    std::string MetricsJson() const;
    /// Chrome trace JSON: ranks as processes, host threads and streams as tracks, network
    /// transfers as async slices.
    std::string ChromeTraceJson() const;
    /// Appends this workload's trace events to an open "traceEvents" array (used to merge
    /// several runs into one trace).
    void WriteChromeTraceEvents(gpusim::JsonWriter& w) const;

  protected:
    void DoDispose() override;

  private:
    void OnActivity(const StreamActivity& a);
    void OnCollective(const CollectiveRecord& r);
    /// Mirroring is on and ranks sharing rank `owner`'s op list can mirror it (checked once
    /// per list).
    bool Mirrorable(uint32_t owner);
    /// Loads the op list of each rank that runs its own ops and attaches every other rank to
    /// its class's representative (SplitMirrorClasses), then finds the private twins.
    void AssignRepresentatives();
    /// Tells each mirror which of its communicators are private twins of its representative's
    /// (CudaContext::SetTwinComms): one server, nothing else on those GPUs' NVLink ports, the
    /// same local GPUs in comm-rank order.
    void AssignTwinComms();
    void OnTransfer(const TransferRecord& r);
    /// Hands the topology's fabric events to the backend and turns rank mirroring off when a
    /// GPU is a straggler.
    void InstallFaults(const NodeContainer& gpus);
    /// A transfer with no path left: NCCL's ncclRemoteError, the job aborts (Check() reports).
    void OnTransferFailed(const TransferRecord& r, const std::string& why);
    void Breakdown(uint32_t rank, IterationRecord& it) const;
    Ptr<CudaContext> MakeContext(const NodeContainer& gpus,
                                 uint32_t rank,
                                 uint32_t nranks,
                                 const std::vector<uint32_t>& rankToGpu,
                                 Ptr<KernelCostModel> costModel);
    bool LiveCommInit(uint32_t rank, const gpusim::Op& op, std::function<void()> resume);

    /// Members of a communicator still waiting in comm_init (live mode).
    struct InitRendezvous
    {
        uint32_t arrived = 0;
        std::vector<std::function<void()>> waiting;
    };

    std::shared_ptr<const gpusim::JobTrace> m_job;
    std::vector<Ptr<CudaContext>> m_contexts;
    Ptr<NetworkBackend> m_backend;
    Ptr<NcclWorld> m_world;
    Ptr<OpFeed> m_feed;
    Time m_start;
    std::map<std::string, InitRendezvous> m_rendezvous;
    std::vector<StreamActivity> m_activities;
    std::vector<CollectiveRecord> m_collectives;
    std::vector<TransferRecord> m_transfers;
    bool m_recordActivities;
    bool m_recordCollectives;
    bool m_mirrorRanks;
    bool m_splitClasses;   //!< MirrorSplitClasses
    uint32_t m_maxClasses; //!< MirrorMaxClasses
    std::map<uint32_t, bool> m_mirrorable; //!< Mirrorable() by list owner
    bool m_recordTransfers;
    uint32_t m_maxTransfers;
    bool m_networkFailed = false;        //!< OnTransferFailed ran
    std::vector<std::string> m_runErrors; //!< errors of the run itself (network failure)
};

} // namespace ns3

#endif // GPUSIM_GPU_WORKLOAD_H
