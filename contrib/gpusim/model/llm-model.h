/*
 * LLM training description for workload generation (gpusim generate, doc/generate.md):
 *  - ModelSpec: a decoder-only transformer (GPT / Llama / Mixtral style), built-in presets and
 *    YAML;
 *  - TrainingPlan: Megatron-LM-style parallelism (TP, PP, DP, SP, EP), pipeline schedule,
 *    micro/global batch, activation recomputation, distributed optimizer, gradient buckets;
 *  - closed forms the generator and its tests share: parameter counts, model FLOPs per
 *    iteration (Narayanan et al. 2021), activation bytes per layer (Korthikanti et al. 2022).
 */
#ifndef GPUSIM_LLM_MODEL_H
#define GPUSIM_LLM_MODEL_H

#include "ns3/op-ir.h"

#include <cstdint>
#include <string>

namespace ns3
{
namespace gpusim
{

struct ModelSpec
{
    std::string name;
    uint32_t layers = 0;
    uint32_t hidden = 0;     //!< h (model dimension)
    uint32_t heads = 0;      //!< a (attention heads)
    uint32_t kvHeads = 0;    //!< g (key/value heads; = heads without GQA)
    uint32_t ffn = 0;        //!< f (MLP / expert inner size)
    uint32_t vocab = 0;      //!< V before Megatron's padding
    uint32_t seqLength = 0;  //!< s
    uint32_t experts = 0;    //!< 0 = dense MLP; else MoE experts per layer
    uint32_t topK = 0;       //!< experts per token (MoE)
    bool gatedMlp = false;   //!< SwiGLU (fc1 produces 2f) instead of GELU
    bool tiedEmbeddings = false;
    bool learnedPositions = false; //!< learned absolute positions (GPT) instead of RoPE
    bool biases = false;     //!< linear layers carry biases (GPT)
    bool dropout = false;    //!< dropout layers (their masks are stored for backward)
    bool rmsNorm = false;    //!< RMSNorm (1 weight) instead of LayerNorm (weight + bias)
    DataType dtype = DataType::BF16;
    uint32_t defaultGlobalBatch = 0; //!< sequences per iteration, if the source names one
    std::string source;      //!< where the numbers come from

    uint32_t HeadDim() const
    {
        return hidden / heads;
    }
};

enum class PipelineScheduleKind : uint8_t
{
    OneFOneB,    //!< PipeDream-Flush 1F1B (Narayanan et al. 2021, section 2.2.1)
    Interleaved, //!< interleaved 1F1B with virtual stages (section 2.2.2)
};

enum class Recompute : uint8_t
{
    None,
    Selective, //!< recompute the attention core (Korthikanti et al. 2022, section 5)
    Full,      //!< store each layer's input only; recompute the layer before its backward
};

/// How weight gradients of successive micro-batches are summed.
enum class GradAccumulation : uint8_t
{
    /// Inside the weight-gradient GEMM (Megatron-LM's --gradient-accumulation-fusion): free.
    Fused,
    /// A backward hook adds every micro-batch's gradient into its main_grad buffer
    /// (Megatron-LM's contiguous-buffer DDP: param.main_grad.add_(param.grad.data)).
    MainGradHook,
    /// PyTorch autograd's AccumulateGrad: the first micro-batch's gradient becomes .grad as is,
    /// each later one is added in place (torch DDP, and Megatron-LM's local DDP without
    /// contiguous buffers, as in its 2021 SC'21 runs).
    Autograd,
};

/// fp8 training as Megatron-Core runs it through Transformer Engine with --fp8-format hybrid
/// (doc/generate.md "fp8"): the GEMMs of the transformer layers' TE linear modules in fp8
/// (E4M3 forward, E5M2 gradients), attention, embedding and output layer in the model dtype.
enum class Fp8Recipe : uint8_t
{
    None,
    /// TE DelayedScaling (Megatron-Core's --fp8-recipe delayed, its default): each tensor's
    /// scale comes from the amax history; the amaxes are reduced and the scales updated once
    /// per fp8_autocast region and direction.
    Delayed,
    /// TE Float8CurrentScaling (Megatron-Core's --fp8-recipe tensorwise): each quantization
    /// first takes the tensor's own amax (an extra pass), no history.
    CurrentScaling,
};

struct TrainingPlan
{
    uint32_t tp = 1;
    uint32_t pp = 1;
    uint32_t dp = 1;
    /// Context parallel (Megatron-Core / Transformer Engine ring attention, doc/generate.md
    /// "Context parallelism"): each rank holds 2 of the sequence's 2 x cp chunks.
    uint32_t cp = 1;
    uint32_t ep = 1;            //!< expert parallel (MoE): carved out of DP x CP
    uint32_t virtualStages = 1; //!< model chunks per pipeline rank (> 1: interleaved)
    bool sequenceParallel = false;
    uint32_t microBatch = 1;
    uint32_t globalBatch = 0;   //!< sequences; 0 = the model's default
    Recompute recompute = Recompute::None;
    /// Full recomputation of the first N layers of each model chunk only (Megatron's
    /// --recompute-method block --recompute-num-layers N); 0: every layer.
    uint32_t recomputeLayers = 0;
    bool distributedOptimizer = false; //!< ZeRO-1: optimizer states sharded over DP
    /// Distributed optimizer: gather the updated parameters under the next forward
    /// (Megatron-Core's --overlap-param-gather, on in its and NeMo's recipes) instead of after
    /// the optimizer step.
    bool overlapParamGather = true;
    /// With SP: TP communication overlapped with the GEMMs next to it, as Transformer Engine's
    /// userbuffers run it (Megatron-Core's --tp-comm-overlap; off by default there).
    bool tpCommOverlap = false;
    /// Interleaved schedule: PP transfers posted ahead and waited for only where their tensor
    /// is needed, overlapping the steps in between (Megatron-Core's overlap_p2p_comm, on by
    /// default; Megatron turns it off for the non-interleaved schedule, and so does this).
    bool overlapP2pComm = true;
    bool overlapGradReduce = true;     //!< DP reduce per bucket during the last backward
    uint64_t bucketParams = 0;  //!< 0 = Megatron's max(40M, 1M x DP) parameters
    bool flashAttention = true; //!< fused attention: no s^2 activations stored
    DataType gradDtype = DataType::F32; //!< main_grad / gradient reduction dtype
    uint32_t seqLength = 0;     //!< 0 = the model's
    /// Narayanan et al. 2021 section 4.1 scatter/gather: without SP, each TP rank sends 1/t of
    /// the pipeline payload over its own NIC and the receiving stage all-gathers it over NVLink.
    bool scatterGatherP2p = false;
    GradAccumulation gradAccum = GradAccumulation::Fused;
    /// Megatron-LM's --cross-entropy-loss-fusion (one fused pass over the logits, as tuned
    /// recipes run it). false: Megatron-LM's own default, vocab_parallel_cross_entropy, eager
    /// passes over the logits cast to fp32 (and the 2021 code's only choice).
    bool crossEntropyFusion = true;
    Fp8Recipe fp8 = Fp8Recipe::None; //!< fp8 GEMMs in the transformer layers (hybrid format)
    /// Megatron's loss_func all-reduces every micro-batch's loss sum and token count (2 fp32)
    /// over DP on the last stage, for logging, on the compute stream (pretrain_gpt.py).
    bool lossAllReduce = true;
    /// Gradient clipping by the global norm (Megatron's --clip-grad, default 1.0): the local
    /// squared norm (one fp32) is all-reduced over the model-parallel group, or over every
    /// rank with the distributed optimizer, between the gradient pass and Adam.
    bool clipGrad = true;
    /// Host time before each kernel, copy, memset and collective is issued (µs): the
    /// framework's per-op cost in eager mode (Python, the dispatcher, the launch). 0: the host
    /// never waits between ops (CUDA graphs).
    double hostLaunchUs = 16.7;

    uint32_t Gpus() const
    {
        return tp * cp * pp * dp;
    }

    /// Ranks holding the same weights (the gradient-reduction / ZeRO-1 group): DP x CP.
    uint32_t DpCp() const
    {
        return dp * cp;
    }

    PipelineScheduleKind Schedule() const
    {
        return virtualStages > 1 ? PipelineScheduleKind::Interleaved
                                 : PipelineScheduleKind::OneFOneB;
    }
};

/// Built-in presets: gpt3-175b, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b.
bool LookupModelPreset(const std::string& name, ModelSpec& out);
std::string KnownModelPresets();
/// YAML mapping of ModelSpec fields (camelCase or snake_case); `preset:` loads a preset first.
/// Throws std::runtime_error naming file:line:column and the key on bad input.
ModelSpec ParseModelSpecYaml(const std::string& text, const std::string& sourceName);
ModelSpec LoadModelSpecYaml(const std::string& file);

/// Throws std::invalid_argument saying what does not divide or is out of range.
void ValidateModel(const ModelSpec& m);
void ValidatePlan(const ModelSpec& m, const TrainingPlan& p);

const char* ToString(Recompute r);
bool ParseRecompute(const std::string& s, Recompute& out);
/// "none", "delayed", "current" (Megatron-Core's "tensorwise" is accepted as "current").
const char* ToString(Fp8Recipe r);
bool ParseFp8Recipe(const std::string& s, Fp8Recipe& out);

/// Resolved numbers of a (model, plan) pair.
uint32_t SeqLength(const ModelSpec& m, const TrainingPlan& p);
uint32_t GlobalBatch(const ModelSpec& m, const TrainingPlan& p);
/// Micro-batches per pipeline per iteration: global batch / (micro-batch x DP).
uint32_t MicroBatches(const ModelSpec& m, const TrainingPlan& p);
/// Vocabulary padded as Megatron does (multiple of 128 x TP).
uint64_t PaddedVocab(const ModelSpec& m, uint32_t tp);

/// Parameters of one transformer layer (whole model width, all experts).
double LayerParams(const ModelSpec& m);
/// Parameters of the whole model (unpadded vocabulary, one copy of tied embeddings).
double TotalParams(const ModelSpec& m);
/// Weights of one transformer layer's fp8 GEMMs held by one TP rank (QKV, projection, fc1,
/// fc2; MoE: the rank's experts' fc1 and fc2, not the router), no biases: what Transformer
/// Engine casts to fp8 (with its transpose) once per iteration and keeps cached.
double LayerFp8WeightParams(const ModelSpec& m, const TrainingPlan& p);
/// fp8 GEMMs per transformer layer on one rank: 4, MoE 2 + 2 x local experts (TE's
/// GroupedLinear runs one GEMM per local expert). Delayed scaling keeps 3 amaxes per GEMM
/// forward (input, weight, output) and 2 backward (gradient output, gradient input).
double LayerFp8Gemms(const ModelSpec& m, const TrainingPlan& p);

/// Model FLOPs of one iteration: 3 x forward (no recomputation), the forward of one token
/// being 2 x (attention and MLP weights it uses) + 4 s h (attention scores and values) per
/// layer + 2 h V (logits). For GPT (f = 4h, MHA, dense) this is Narayanan et al. 2021's
/// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
double ModelFlopsPerIteration(const ModelSpec& m, const TrainingPlan& p);

/// Stored activation bytes of one transformer layer for one micro-batch on one TP rank
/// (Korthikanti et al. 2022, Table 2, generalised to GQA, gated MLPs, MoE, flash attention and
/// no-dropout models); with Full recomputation, the layer input only. With context parallelism
/// every stored tensor covers the rank's s / cp tokens.
double LayerActivationBytes(const ModelSpec& m, const TrainingPlan& p);
/// Layers of a model chunk of `layers` that are fully recomputed (Full: recomputeLayers of
/// them, or all).
uint32_t RecomputedLayers(const TrainingPlan& p, uint32_t layers);
/// Stored activations of a model chunk's `layers` transformer layers for one micro-batch on
/// one TP rank: the recomputed layers' inputs, the others' LayerActivationBytesNoRecompute
/// (or with selective recomputation LayerActivationBytes).
double ChunkLayersActivationBytes(const ModelSpec& m, const TrainingPlan& p, uint32_t layers);
/// One layer's activations as stored without recomputation (the transient working set of a
/// layer recomputed for its backward under Full recomputation).
double LayerActivationBytesNoRecompute(const ModelSpec& m, const TrainingPlan& p);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_LLM_MODEL_H
