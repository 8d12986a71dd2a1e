/*
 * Megatron-LM as published runs ran it: the GPT models of Narayanan et al. 2021 and the 2021
 * code's training plan (recomputation, DDP flavour, interleaving), so that scenario scripts and
 * `gpusim validate-training` build the same rows (doc/validation.md, "Training throughput").
 */
#ifndef GPUSIM_MEGATRON_RECIPES_H
#define GPUSIM_MEGATRON_RECIPES_H

#include "ns3/llm-model.h"

#include <cstdint>
#include <string>

namespace ns3
{
namespace gpusim
{

/// Narayanan et al. 2021, section 5.1: the vocabulary and sequence length of every row.
constexpr uint32_t kMegatron2021Vocab = 51200;
constexpr uint32_t kMegatron2021Seq = 2048;

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

/// Model families of today's Megatron-Core / NeMo configs, as the layers they build:
/// - Gpt (NeMo's GPT-3, Megatron-LM's GPT): LayerNorm, GELU MLP, biases, learned absolute
///   positions, dropout 0.1 (Megatron-LM's --hidden-dropout / --attention-dropout defaults);
/// - Llama (Llama 2 / 3): RMSNorm, SwiGLU MLP, RoPE, no biases, no dropout, untied output;
/// - Nemotron (Nemotron-3 / 4): LayerNorm1p (a LayerNorm), squared-ReLU MLP (not gated: one
///   elementwise pass like GELU), RoPE, no biases, no dropout, untied output.
enum class CoreArch : uint8_t
{
    Gpt,
    Llama,
    Nemotron,
};

/// "gpt", "llama" (also "llama2", "llama3"), "nemotron" (also "nemotron3", "nemotron4").
bool ParseCoreArch(const std::string& name, CoreArch& out);

/// A model's dimensions as configs give them.
struct CoreModelDims
{
    uint32_t layers = 0;
    uint32_t hidden = 0;
    uint32_t heads = 0;
    uint32_t kvHeads = 0;   //!< 0: = heads (no GQA)
    uint32_t ffn = 0;       //!< 0: 4 x hidden
    uint32_t vocab = 0;
    uint32_t seqLength = 0;
};

/// The model of a config: `tied` overrides the family's output-layer default (GPT: tied).
ModelSpec MegatronCoreModel(const CoreModelDims& d, CoreArch arch, DataType dtype, bool tied);
ModelSpec MegatronCoreModel(const CoreModelDims& d, CoreArch arch, DataType dtype);

/// Megatron-Core as NVIDIA's performance recipes run it (Megatron-LM's README scaling runs,
/// NeMo / Megatron-Bridge performance configs): sequence parallel when TP > 1, the distributed
/// optimizer with overlapped gradient reduction and parameter gather, Megatron-Core's DDP
/// buckets, Transformer Engine's fused attention, gradient-accumulation fusion, no
/// recomputation, Megatron's default (unfused) cross entropy. Throws std::invalid_argument
/// when the GPUs are not a multiple of TP x PP x CP.
TrainingPlan MegatronCorePlan(uint32_t tp, uint32_t pp, uint32_t cp,
                              uint32_t virtualStages, uint32_t gpus, uint32_t globalBatch,
                              uint32_t microBatch, DataType gradDtype);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_MEGATRON_RECIPES_H
