/*
 * Training workload generator: a ModelSpec and a TrainingPlan (llm-model.h) become the
 * per-rank Op IR of one Megatron-LM-style training iteration (doc/generate.md):
 *  - kernels with FLOPs / bytes / GEMM shapes (one per fused layer operation) for the kernel
 *    cost model;
 *  - TP AllReduce (AllGather / ReduceScatter with sequence parallelism), PP send/recv grouped as
 *    Megatron's p2p_communication batches them, DP ReduceScatter + AllGather (distributed
 *    optimizer) or AllReduce per gradient bucket on a second stream, overlapped with the last
 *    micro-batch's backward through events;
 *  - device allocations (weights, gradients, optimizer states, each micro-batch's stored
 *    activations) so the device memory model sees the plan's peak, and FindOom names the first
 *    allocation that does not fit.
 */
#ifndef GPUSIM_TRAINING_GENERATOR_H
#define GPUSIM_TRAINING_GENERATOR_H

#include "ns3/llm-model.h"
#include "ns3/op-ir.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// One forward or backward of one micro-batch through one model chunk on a pipeline rank.
struct PipeStep
{
    bool forward = true;
    uint32_t chunk = 0;      //!< virtual stage index on this rank (0 without interleaving)
    uint32_t microBatch = 0;

    bool operator==(const PipeStep& o) const
    {
        return forward == o.forward && chunk == o.chunk && microBatch == o.microBatch;
    }
};

/// The order in which pipeline rank `stage` (of `pp`) runs its forwards and backwards, as
/// Megatron-LM's forward_backward_pipelining_without_interleaving (virtualStages == 1) and
/// _with_interleaving schedule them. pp == 1: forward then backward per micro-batch.
std::vector<PipeStep> PipelineOrder(uint32_t stage,
                                    uint32_t pp,
                                    uint32_t microBatches,
                                    uint32_t virtualStages = 1);
/// The same steps cut where the rank exchanges activations / gradients with its neighbours:
/// one segment per step, except the interleaved schedule's steady-state (forward, backward)
/// pairs, which Megatron follows with one combined send/recv batch.
std::vector<std::vector<PipeStep>> PipelineSegments(uint32_t stage,
                                                    uint32_t pp,
                                                    uint32_t microBatches,
                                                    uint32_t virtualStages = 1);

/// Where a global rank sits: Megatron-Core's default order "tp-cp-ep-dp-pp" (TP fastest, then
/// CP, then DP, then PP; EP is carved out of CP x DP for the expert layers).
struct RankPosition
{
    uint32_t tp = 0;
    uint32_t dp = 0;
    uint32_t stage = 0;
    uint32_t cp = 0;
};

RankPosition PositionOf(const TrainingPlan& p, uint32_t rank);
/// CP rank 0.
uint32_t RankAt(const TrainingPlan& p, uint32_t tp, uint32_t dp, uint32_t stage);
uint32_t RankAt(const TrainingPlan& p, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t stage);

/// Parameters held by one rank (its layers' TP share, embeddings / output layer where present).
struct RankParams
{
    double dense = 0;  //!< reduced over DP
    double expert = 0; //!< MoE experts: reduced over the expert-data-parallel group (DP / EP)
    double Total() const
    {
        return dense + expert;
    }
};

RankParams ParamsOfRank(const ModelSpec& m, const TrainingPlan& p, uint32_t stage);

/// The generated job and what the report needs besides the simulation.
struct GeneratedTraining
{
    std::shared_ptr<JobTrace> job;
    ModelSpec model;
    TrainingPlan plan;
    uint32_t microBatches = 0;
    double modelFlops = 0;    //!< per iteration, ModelFlopsPerIteration
    double hardwareFlops = 0; //!< per iteration: every kernel's FLOPs, recomputation included
};

/// Generates every rank. Throws std::invalid_argument for an invalid plan (ValidatePlan).
/// With `share`, the ranks of a pipeline stage (and CP rank: the ring neighbours differ) share
/// its first rank's op list in memory
/// (RankTrace::opsFrom, their own communicators named in their comm_init lines): a
/// 1,024-GPU GPT-3 job holds 16 op lists instead of 1,024.
GeneratedTraining GenerateTraining(const ModelSpec& m, const TrainingPlan& p, bool share = true);

/// Whether the plan's TP communication runs overlapped with the GEMMs (tpCommOverlap with TP > 1
/// and sequence parallelism, dense layers): then each TP rank's ring neighbours differ, and
/// the ranks of a stage share one program per TP rank only.
bool UsesTpCommOverlap(const ModelSpec& m, const TrainingPlan& p);
/// Whether the plan's PP transfers are overlapped (overlapP2pComm with PP > 1 and the
/// interleaved schedule).
bool UsesP2pOverlap(const TrainingPlan& p);
/// Writes the job as a trace directory (doc/op-ir.md), one rank at a time, every rank's file
/// complete (shared op lists expanded with the rank's own comm_init lines).
void WriteTrainingTrace(const GeneratedTraining& g, const std::string& dir);
/// One rank's ops (GenerateTraining's rank `rank`).
RankTrace GenerateRank(const ModelSpec& m, const TrainingPlan& p, uint32_t rank);

/// Highest sum of live allocations over the rank's malloc/free ops in issue order (the order
/// the engine applies them).
uint64_t PeakMemory(const RankTrace& r);

/// The first allocation (lowest rank, then program order) that does not fit in `capacity`.
struct OomInfo
{
    bool oom = false;
    uint32_t rank = 0;
    std::string allocation; //!< the malloc's name (e.g. "activations chunk 0 micro-batch 3")
    uint64_t bytes = 0;
    uint64_t inUse = 0;     //!< bytes already allocated on the rank
    uint64_t capacity = 0;
    std::string Describe() const;
};

OomInfo FindOom(const JobTrace& job, uint64_t capacity);

/// "TP 8 PP 16 DP 8 1F1B, micro-batch 1, recompute none".
std::string DescribePlan(const TrainingPlan& p);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_TRAINING_GENERATOR_H
