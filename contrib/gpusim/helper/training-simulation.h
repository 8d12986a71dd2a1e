/*
 * Runs a generated training workload (training-generator.h) on a simulated cluster and
 * summarises one iteration: time, model TFLOP/s per GPU and MFU, exposed compute /
 * communication / idle (pipeline bubble) per pipeline stage, peak memory per rank. A plan
 * whose allocations do not fit is reported as OOM (rank and allocation) and not simulated.
 *
 *   GeneratedTraining g = GenerateTraining(model, plan);
 *   TrainingReport r = SimulateTraining(g, clusterSpec);   // flow backend, default NCCL model
 *   std::cout << FormatTrainingReport(r);
 */
#ifndef GPUSIM_TRAINING_SIMULATION_H
#define GPUSIM_TRAINING_SIMULATION_H

#include "ns3/cluster-spec.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/node-container.h"
#include "ns3/training-generator.h"

#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// One kind of communication of a stage's rank: how long it ran (merged intervals in the
/// iteration window) and how much of that ran under compute (what overlapping it hid).
struct CommClassTime
{
    std::string name; //!< tp, cp, ep, grad-reduce, param-gather, embedding, loss,
                      //!< optimizer-stats, pp
    double busyUs = 0;
    double hiddenUs = 0;
};

/// One pipeline stage: the slowest of its ranks' iteration windows and that rank's breakdown.
struct StageReport
{
    uint32_t stage = 0;
    uint32_t rank = 0;           //!< the rank the numbers come from (longest iteration)
    double iterationUs = 0;
    double exposedComputeUs = 0; //!< compute with no TP/DP/EP communication under it
    double exposedCommUs = 0;    //!< TP/DP/EP communication with no compute under it
    double overlapUs = 0;        //!< both
    double bubbleUs = 0;         //!< neither: pipeline send/recv (transfers and waiting for
                                 //!< the neighbour stage) and idle
    uint64_t peakMemoryBytes = 0; //!< highest over the stage's ranks
    std::vector<CommClassTime> comm; //!< per kind of communication that ran (PP excluded)
};

struct TrainingReport
{
    std::string model;
    std::string plan;
    uint32_t gpus = 0;
    uint32_t microBatches = 0;
    bool oom = false;
    OomInfo oomInfo;
    bool completed = false;
    std::string stuck;
    std::vector<std::string> errors;
    double iterationUs = 0;       //!< slowest rank's iteration
    double modelFlops = 0;        //!< per iteration (no recomputation), doc/generate.md
    double hardwareFlops = 0;     //!< per iteration, every kernel (recomputation included)
    double peakFlopsPerGpu = 0;   //!< dense peak of the model's dtype
    double modelTflopsPerGpu = 0; //!< modelFlops / (time x GPUs)
    double hardwareTflopsPerGpu = 0;
    double mfu = 0;               //!< modelTflopsPerGpu / peak
    uint64_t peakMemoryBytes = 0; //!< highest over ranks
    std::vector<uint64_t> rankPeakMemoryBytes; //!< per rank (GpuNode peak)
    uint32_t peakMemoryRank = 0;
    uint64_t memoryCapacity = 0;
    uint64_t opsTotal = 0;        //!< ops over all ranks
    uint32_t opLists = 0;         //!< distinct op lists in memory (ranks of a stage share one)
    std::vector<StageReport> stages;
    // Mirrored ranks (GpuWorkload MirrorIdenticalRanks): how many, and how far their
    // collectives' completions fell from their representatives' (0: the mirrors were exact).
    uint32_t mirroredRanks = 0;
    uint64_t mirroredLaunches = 0;
    uint64_t mirrorDiverged = 0;
    double mirrorMaxDivergenceUs = 0;
};

/// Installs the job on `gpus` with `helper` (backend, NCCL and cost model set by the caller),
/// runs it and fills the report; an OOM plan is reported without running. The workload is
/// returned through `keep` (for JSON / trace output) or disposed; the caller destroys the
/// simulator.
TrainingReport SimulateTraining(const GeneratedTraining& g,
                                GpuWorkloadHelper& helper,
                                const NodeContainer& gpus,
                                Ptr<GpuWorkload>* keep = nullptr);

/// How much of the job SimulateTraining(g, spec, speed) simulates in detail. The defaults
/// are the fast path `gpusim generate` uses; {"chunk", false} is the detailed model.
struct TrainingSpeed
{
    std::string fidelity = "flows"; //!< auto | chunk | collective | flows (NcclWorld Fidelity)
    bool mirrorRanks = true;        //!< the ranks of a stage mirror its first rank
    /// With mirrorRanks: split mirrors into classes that see the same network (exact);
    /// false: one class per op list moving in lockstep (faster, `--ranks lockstep`).
    bool splitClasses = true;
};

/// Builds the cluster (enough servers for the plan if spec.servers is too small), a flow
/// backend and the default cost model, simulates and destroys the simulator.
TrainingReport SimulateTraining(const GeneratedTraining& g,
                                ClusterSpec spec,
                                const TrainingSpeed& speed = TrainingSpeed());
/// Sets the fidelity and mirroring of `speed` on a helper.
void ConfigureTrainingSpeed(GpuWorkloadHelper& helper, const TrainingSpeed& speed);

/// Human-readable report (the lines `gpusim generate --simulate` prints).
std::string FormatTrainingReport(const TrainingReport& r);
/// The report as JSON.
std::string TrainingReportJson(const TrainingReport& r);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_TRAINING_SIMULATION_H
