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
 * A table with "recipe": "megatron-core" holds today's runs (Megatron-Core / NeMo recipes,
 * MegatronCorePlan): each row gives "arch" (gpt | llama | nemotron), "layers", "hidden",
 * "heads", optional "kv_heads" and "ffn", "vocab", "seq_length", "tp", "pp", optional "cp" and
 * "vpp", "gpus", "batch" (global), "micro_batch", "dtype" (bf16 | fp16 | fp8), optional
 * "grad_dtype" (f32 | bf16), "tied_embeddings", "recompute", "sequence_parallel", and the
 * measured "iteration_s"; TFLOP/s are model FLOPs (no recomputation) over time x GPUs.
 *
 * Every row uses the same kernel model: the roofline cost model at the GPU's measured
 * efficiencies (GpuSpec gemmEfficiency / memoryEfficiency, in gpu-spec.cc with their sources);
 * nothing is set per row or fitted on the tables.
 */
#ifndef GPUSIM_VALIDATE_TRAINING_COMMAND_H
#define GPUSIM_VALIDATE_TRAINING_COMMAND_H

#include "ns3/llm-model.h"
#include "ns3/megatron-recipes.h"
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
    /// FLOPs per iteration behind the TFLOP/s: eq. 3 (2021 tables) or the model FLOPs
    /// without recomputation (ModelFlopsPerIteration; "recipe": "megatron-core" tables).
    double flopsPerIteration = 0;
    double measuredTflops = 0; //!< published achieved TFLOP/s per GPU (or from the time)
    double measuredIterationS = 0; //!< published iteration time where given (0: not given)
    bool run = false;          //!< simulated (false: skipped, see note)
    std::string note;          //!< why not run, or what happened
    double iterationMs = 0;
    double simulatedTflops = 0; //!< eq. 3 FLOPs / (simulated time x GPUs)
    double errorPct = 0;        //!< (simulated - measured) / measured x 100
    double wallS = 0;           //!< wall time of the simulation
};

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
