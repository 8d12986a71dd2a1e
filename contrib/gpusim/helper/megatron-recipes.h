/*
 * Megatron-LM as published runs ran it: the GPT models of Narayanan et al. 2021 and the 2021
 * code's training plan (recomputation, DDP flavour, interleaving), so that scenario scripts and
 * `gpusim validate-training` build the same rows (doc/validation.md, "Training throughput").
 */
#ifndef GPUSIM_MEGATRON_RECIPES_H
#define GPUSIM_MEGATRON_RECIPES_H

#include "ns3/llm-model.h"

#include <cstdint>

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

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_MEGATRON_RECIPES_H
