/*
 * Parallelism-plan search for LLM training (gpusim search, doc/search.md): the pieces that need
 * no simulation.
 *  - EnumeratePlans: every Megatron-style plan of a search space (TP x PP x DP = GPUs, TP within
 *    one server, the generator's own divisibility rules via ValidatePlan);
 *  - StagePeakMemory / PlanPeakMemory: a pipeline rank's peak device memory in closed form, the
 *    generator's allocations (weights, gradients, optimizer states, one activation buffer per
 *    micro-batch and model chunk, the full-recomputation working set) replayed over the
 *    pipeline order without generating any op;
 *  - IterationLowerBoundUs: a time no simulation of the plan can beat (GEMM FLOPs at the cost
 *    model's compute rate, the pipeline fill and drain, TP traffic over NVLink, the optimizer's
 *    HBM traffic), used to prune plans that cannot beat the best one simulated;
 *  - PruneCut: the deterministic pruning rule (plans in bound order, simulated until a bound
 *    exceeds the best time among the plans before it).
 */
#ifndef GPUSIM_PLAN_SEARCH_H
#define GPUSIM_PLAN_SEARCH_H

#include "ns3/cluster-spec.h"
#include "ns3/gpu-spec.h"
#include "ns3/llm-model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// What `gpusim search` varies. Every combination that ValidatePlan accepts is a plan.
struct SearchSpace
{
    uint32_t gpus = 0;          //!< TP x PP x DP
    uint32_t gpusPerServer = 8; //!< TP stays within one server (NVLink)
    uint32_t globalBatch = 0;   //!< sequences; 0 = the model's default
    std::vector<uint32_t> microBatches = {1, 2, 4};
    std::vector<uint32_t> virtualStages = {1}; //!< > 1: interleaved (PP > 1 only)
    std::vector<bool> sequenceParallel = {false, true}; //!< SP on is tried with TP > 1 only
    std::vector<Recompute> recompute = {Recompute::None, Recompute::Selective};
    std::vector<bool> distributedOptimizer = {false, true};
    /// Context-parallel degrees tried (TP x CP x PP x DP = GPUs); only what the user asks for.
    std::vector<uint32_t> contextParallel = {1};
    uint32_t seqLength = 0; //!< 0 = the model's (CP and SP divisibility depend on it)
};

/// Plans in a fixed order: TP, CP, PP, virtual stages, micro-batch, SP, recompute, ZeRO-1
/// ascending.
std::vector<TrainingPlan> EnumeratePlans(const ModelSpec& m, const SearchSpace& s);

/// Peak bytes of pipeline stage `stage`'s ranks, as the generator allocates them (each
/// allocation rounded to bytes as its malloc op is).
uint64_t StagePeakMemory(const ModelSpec& m, const TrainingPlan& p, uint32_t stage);
/// Highest StagePeakMemory over the stages; `stage` (optional) receives the stage.
uint64_t PlanPeakMemory(const ModelSpec& m, const TrainingPlan& p, uint32_t* stage = nullptr);

/// Rates the bound assumes; each must be at least what the simulation achieves.
struct BoundRates
{
    double peakFlops = 0;         //!< dense peak of the model's dtype, FLOP/s
    double computeEfficiency = 1; //!< the roofline cost model's ComputeEfficiency
    double hbmBytesPerSec = 0;
    double memoryEfficiency = 1;  //!< the roofline cost model's MemoryEfficiency
    double nvlinkBytesPerSec = 0; //!< per GPU per direction
};

BoundRates RatesFor(const GpuSpec& gpu, const ClusterSpec& cluster, const ModelSpec& m,
                    double computeEfficiency, double memoryEfficiency);

/// Lower bound of the iteration time in microseconds (doc/search.md):
/// max over stages j of sum_{k<j} (f_k + b_k) + m * (f_j + b_j) + min_k opt_k, where f and b
/// are the forward / backward time of one micro-batch through a stage's first model chunk
/// (all chunks for j) counting only its GEMMs at the compute rate and its TP collectives at
/// (t-1)/t of their bytes over NVLink, and opt the optimizer's HBM traffic.
double IterationLowerBoundUs(const ModelSpec& m, const TrainingPlan& p, const BoundRates& r);

/// Plans sorted by bound (ascending, ties by index); `timesUs[i]` the simulated time of the
/// i-th plan of that order (or < 0 while unknown). Returns the first position whose bound
/// exceeds the best time among the positions before it (all of which must be known), or
/// `bounds.size()` if none does: the plans at and after it are pruned. -1: not decidable yet.
long PruneCut(const std::vector<double>& sortedBoundsUs, const std::vector<double>& timesUs);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_PLAN_SEARCH_H
