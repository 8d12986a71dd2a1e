/*
 * gpusim validate-training: `gpusim generate` against published measured training throughput
 * (doc/validation.md, "Training throughput").
 *
 * Reads a JSON file in the shape of contrib/gpusim/test/data/megatron-lm-2021-throughput.json
 * ({"tables": [{"id", "source", "preset", "interleaved", "rows": [{"heads", "hidden",
 * "layers", "tp", "pp", "gpus", "batch", "tflops_per_gpu" or "iteration_s", optional
 * "micro_batch", "ddp" ("torch" | "local"), "layers_per_virtual_stage", "vpp", and for later
 * Megatron-LM code "recompute" (none | selective | full), "sequence_parallel", "grad_accum"
 * (fused | main_grad | autograd)}]}]}), builds each row's GPT model and Megatron-LM plan
 * (the 2021 code's unless the row says otherwise), simulates one iteration on the table's
 * cluster preset and compares the achieved TFLOP/s per GPU computed with the paper's own FLOP
 * count (Narayanan et al. 2021, eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration).
 *
 * Every row uses the same kernel model: the roofline cost model at the GPU's measured
 * efficiencies (GpuSpec gemmEfficiency / memoryEfficiency, in gpu-spec.cc with their sources);
 * nothing is set per row or fitted on the tables.
 */
#ifndef GPUSIM_VALIDATE_TRAINING_COMMAND_H
#define GPUSIM_VALIDATE_TRAINING_COMMAND_H

#include "ns3/llm-model.h"
#include "ns3/training-simulation.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

struct TrainingValidationRow
{
    std::string table;
    std::string preset;
    double paramsB = 0;      //!< published parameter count (billions)
    ModelSpec model;
    TrainingPlan plan;
    double measuredTflops = 0; //!< published achieved TFLOP/s per GPU (or from the time)
    double measuredIterationS = 0; //!< published iteration time where given (0: not given)
    bool run = false;          //!< simulated (false: skipped, see note)
    std::string note;          //!< why not run, or what happened
    double iterationMs = 0;
    double simulatedTflops = 0; //!< eq. 3 FLOPs / (simulated time x GPUs)
    double errorPct = 0;        //!< (simulated - measured) / measured x 100
    double wallS = 0;           //!< wall time of the simulation
};

/// Narayanan et al. 2021, eq. 3: FLOPs per iteration with full recomputation.
double MegatronPaperFlops(double batch, double seq, double layers, double hidden, double vocab);

/// The GPT model of a row: l layers, hidden h, a heads (MHA), FFN 4h, vocabulary 51200,
/// sequence 2048, fp16, GPT-2 architecture (LayerNorm, GELU, biases, dropout, learned positions,
/// tied embeddings).
ModelSpec MegatronGptModel(uint32_t layers, uint32_t hidden, uint32_t heads);

/// The per-run options of Megatron-LM's SC'21 artifact (examples/academic_paper_scripts/sc21/
/// run_table_1.sh): micro-batch size, --DDP-impl and --num-layers-per-virtual-pipeline-stage.
struct MegatronRunOptions
{
    uint32_t microBatch = 1;
    bool torchDdp = false;              //!< torch DDP (bucketed, overlapped) vs Megatron's local DDP
    uint32_t layersPerVirtualStage = 0; //!< 0: not interleaved
};

/// torch.nn.parallel.DistributedDataParallel's default bucket_cap_mb = 25 MiB of fp16 gradients.
constexpr uint64_t kTorchDdpBucketParams = 25ull * 1024 * 1024 / 2;

/// Megatron-LM as the SC'21 runs ran it: full recomputation, unfused attention, fp16 gradients
/// accumulated by autograd; torch DDP all-reduces them in 25 MiB buckets during the (last)
/// backward, the local DDP after the backward (no distributed optimizer; the 2021 code);
/// interleaved schedule with the scatter/gather optimization when layersPerVirtualStage > 0.
TrainingPlan MegatronPlan(const ModelSpec& m, uint32_t tp, uint32_t pp, uint32_t gpus,
                          uint32_t batch, const MegatronRunOptions& run);
/// As above with micro-batch 1 and the local DDP; `interleaved` (and PP > 1) picks the smallest
/// virtual-stage count > 1 that divides the layers per stage.
TrainingPlan MegatronPlan(const ModelSpec& m, uint32_t tp, uint32_t pp, uint32_t gpus,
                          uint32_t batch, bool interleaved);

/// Reads every row of every table (or of table `only`). Throws std::runtime_error naming the
/// file, table and row on bad input.
std::vector<TrainingValidationRow> ReadTrainingValidation(const std::string& file,
                                                          const std::string& only);

/// `gemmEfficiency` value that prices GEMMs by the shape model (tile and wave quantization)
/// instead of one efficiency.
constexpr double kGemmShapeModel = -1;

/// Simulates one row with the GPU's measured kernel efficiencies (flow backend, default NCCL
/// model). What-ifs: `gemmEfficiency` > 0 runs every GEMM at that fraction of peak instead of
/// the GPU's, kGemmShapeModel by the shape model; `memoryEfficiency` > 0 replaces the GPU's.
/// `speed`: fidelity and rank mirroring (default: the fast path, as `gpusim generate`).
void RunTrainingValidationRow(TrainingValidationRow& row, double gemmEfficiency = 0,
                              double memoryEfficiency = 0,
                              const TrainingSpeed& speed = TrainingSpeed());

/// One transformer layer's forward and backward time as simulated for a row's plan (rank 0,
/// the middle layers of its first stage): forward from one layer's first LayerNorm to the
/// next layer's, backward between successive ends of the QKV weight-gradient GEMM (with
/// recomputation, the recomputed forward included). Compares with per-layer measurements
/// such as Korthikanti et al. 2022, Table 4. Needs at least 3 layers on the first stage and
/// one micro-batch per pipeline; throws std::runtime_error otherwise. `gemmEfficiency` as for
/// RunTrainingValidationRow (> 0: every GEMM at that flat fraction, no shape model).
struct LayerTimes
{
    double forwardMs = 0;
    double backwardMs = 0;
};
LayerTimes SimulatedLayerTimes(const TrainingValidationRow& row, double gemmEfficiency = 0);

std::string TrainingValidationMarkdown(const std::vector<TrainingValidationRow>& rows);
/// Measured vs simulated TFLOP/s per GPU, one column per row.
std::string TrainingValidationSvg(const std::vector<TrainingValidationRow>& rows);

/// gpusim validate-training FILE [--table ID] [--max-gpus N] [--gemm-efficiency E]
///                          [--memory-efficiency E] [--json FILE] [--markdown FILE] [--svg FILE]
int ValidateTrainingCommand(const std::vector<std::string>& args, std::ostream& out,
                            std::ostream& err);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_VALIDATE_TRAINING_COMMAND_H
