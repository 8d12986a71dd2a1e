/*
 * MultiJobHelper: several jobs on one cluster and one network backend. Each job (any Op IR:
 * a trace directory, a generated training job, a Chakra ET, a collective loop) is placed on
 * its own GPUs (JobPlacement), starts at its own time and has its own NCCL world, so the jobs
 * meet only on the fabric. After Simulator::Run() each job has its own report, and the fabric
 * report says which job's bytes crossed which link (flow backend).
 */
#ifndef GPUSIM_MULTI_JOB_HELPER_H
#define GPUSIM_MULTI_JOB_HELPER_H

#include "ns3/background-traffic.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-placement.h"

#include <memory>
#include <string>
#include <vector>

namespace ns3
{

/// One iteration of a job (a ProfilerStep-style marker pair, or the whole run), over its ranks.
struct JobIteration
{
    std::string name;
    Time start;              //!< earliest rank's start
    Time end;                //!< latest rank's end
    double exposedCommUs = 0; //!< mean over ranks of communication not hidden under compute
};

struct JobReport
{
    std::string name;
    std::vector<uint32_t> gpus; //!< GPU of each rank
    std::string placement;      //!< JobPlacement::ToString()
    Time start;
    RunReport run;
    std::vector<JobIteration> iterations;
    uint64_t collectives = 0;
};

class MultiJobHelper
{
  public:
    /// `gpus` and `topology` as GpuClusterHelper::Create() and GetTopology() give them.
    MultiJobHelper(const NodeContainer& gpus, Ptr<ClusterTopology> topology);

    /// Places a job now (later jobs see its GPUs as taken) and returns its index. Throws
    /// std::runtime_error naming the job for a bad name (empty or taken) or placement.
    uint32_t AddJob(const std::string& name,
                    std::shared_ptr<const gpusim::JobTrace> job,
                    const JobPlacement& placement,
                    Time start = Seconds(0));
    /// A job whose ops arrive while it runs (a LiveJobSource: a live program on the shim; or a
    /// TraceOpFeed replaying a live run's recording), placed and started the same way.
    uint32_t AddJob(const std::string& name,
                    Ptr<OpFeed> feed,
                    const JobPlacement& placement,
                    Time start = Seconds(0));
    /// Installs every job added with `helper`'s backend, cost model and NCCL settings, then
    /// the background traffic not installed yet on the same backend (after the jobs: job k
    /// keeps owner k).
    void Install(GpuWorkloadHelper& helper);

    /// Background traffic on the jobs' fabric (background-traffic.h): its generators' flow
    /// completion times appear in ReportJson under "background" and their bytes in the
    /// per-link report. Throws std::invalid_argument for a generator name that an earlier
    /// set already uses.
    void AddBackground(Ptr<BackgroundTraffic> traffic);
    const std::vector<Ptr<BackgroundTraffic>>& GetBackground() const;

    uint32_t GetNJobs() const;
    Ptr<GpuWorkload> GetWorkload(uint32_t job) const;
    const std::vector<uint32_t>& GetGpus(uint32_t job) const;

    /// After Simulator::Run().
    std::vector<JobReport> Reports() const;
    /// Per link that carried bytes: which job's and how many (flow backend; other backends
    /// report no per-job split). Links are named "from->to" by their vertex names.
    struct LinkUse
    {
        uint32_t link = 0;
        std::string name;
        double gbps = 0;
        std::vector<double> bytes; //!< per job
        /// Per background generator, the AddBackground sets' generators in order.
        std::vector<double> background;
        uint32_t Jobs() const;     //!< jobs with bytes on it
    };
    std::vector<LinkUse> FabricUse(Ptr<NetworkBackend> backend, bool fabricOnly = true) const;
    /// Reports and fabric use as one JSON object (doc/multi-job.md).
    std::string ReportJson(Ptr<NetworkBackend> backend) const;

  private:
    struct Job
    {
        std::string name;
        std::shared_ptr<const gpusim::JobTrace> trace; //!< or
        Ptr<OpFeed> feed;
        JobPlacement placement;
        std::vector<uint32_t> gpus;
        Time start;
        Ptr<GpuWorkload> workload;
    };
    uint32_t Add(Job j,
                 const std::string& name,
                 uint32_t ranks,
                 const JobPlacement& placement,
                 Time start);

    NodeContainer m_gpus;
    Ptr<ClusterTopology> m_topology;
    std::vector<std::string> m_owner; //!< job name per GPU, "" when free
    std::vector<Job> m_jobs;
    std::vector<Ptr<BackgroundTraffic>> m_background;
};

} // namespace ns3

#endif // GPUSIM_MULTI_JOB_HELPER_H
