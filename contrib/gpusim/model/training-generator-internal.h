/*
 * RankGenerator, the builder of one rank's op list, shared by the files of the training
 * generator (training-generator.h): training-rank-generator.cc (communicators, op emission,
 * the iteration), training-layers.cc (the ops of each model piece), training-pipeline.cc
 * (pipeline schedules), training-optimizer.cc (gradient buckets, optimizer step) and
 * training-fp8.cc (fp8 GEMMs and Transformer Engine's casts and scaling bookkeeping).
 * Internal: included by relative name from model/ and not staged or installed as an ns3/
 * header.
 */
#ifndef GPUSIM_TRAINING_GENERATOR_INTERNAL_H
#define GPUSIM_TRAINING_GENERATOR_INTERNAL_H

#include "ns3/training-generator.h"

#include "ns3/context-parallel.h"

#include <map>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{
namespace training_internal
{

constexpr int64_t kCompute = 1; //!< compute stream (TP and PP communication stay on it)
constexpr int64_t kGradComm = 2; //!< DP gradient reduction / parameter gather stream
constexpr int64_t kCpComm = 3;   //!< CP ring KV / dKV exchange (NCCL's own stream in TE)
constexpr int64_t kTpComm = 4;   //!< TP communication overlapped with GEMMs (TE userbuffers)
constexpr int64_t kPpForward = 5;  //!< overlapped PP transfers of activations
constexpr int64_t kPpBackward = 6; //!< overlapped PP transfers of gradients

/// One gradient bucket: parameters reduced together once their last gradient is ready.
struct Bucket
{
    double dense = 0;
    double expert = 0;
    double Total() const
    {
        return dense + expert;
    }
};

/// Which bucket (index, -1 none) each unit of a model chunk closes in the backward, and which
/// bucket holds each unit's parameters (the gather its forward waits for).
struct BucketPlan
{
    int atHead = -1;
    std::vector<int> atLayer; //!< by layer index within the chunk
    int atEmbedding = -1;
    int headIn = -1;
    std::vector<int> layerIn;
    int embeddingIn = -1;
    int first = -1; //!< the chunk's buckets are [first, last] (backward order)
    int last = -1;
};

/// Builds one rank's op list.
class RankGenerator
{
  public:
    RankGenerator(const ModelSpec& m, const TrainingPlan& p, uint32_t rank)
        : m_m(m),
          m_p(p),
          m_rank(rank),
          m_pos(PositionOf(p, rank)),
          m_e(DataTypeSize(m.dtype)),
          m_s(SeqLength(m, p)),
          m_tokens(double(m_s) * p.microBatch / p.cp), // the rank's 2 of 2 cp chunks
          m_vocab(PaddedVocab(m, p.tp)),
          m_layersPerChunk(m.layers / (p.pp * p.virtualStages)),
          m_microBatches(MicroBatches(m, p))
    {
        m_trace.rank = rank;
    }

    RankTrace Build();
    /// Only the comm_init lines (a rank sharing its stage representative's op list).
    RankTrace BuildCommInits();

  private:
    // Communicators.
    std::string TpComm() const;
    std::string PpComm() const;
    std::string PpGradComm() const; //!< overlapped PP: the gradients' own communicator
    std::string DpComm() const;
    std::string EdpComm() const;
    std::string EpComm() const;
    std::string EmbComm() const;
    std::string CpComm() const;
    /// Megatron's data-parallel group without CP (the loss all-reduce's): DpComm() with CP 1.
    std::string LossComm() const;
    /// The optimizer's scalar all-reduces (gradient norm, fp16's inf check): Megatron's
    /// model-parallel group (TP x PP), or every rank with the distributed optimizer.
    std::string OptimizerStatsComm() const;
    uint32_t OptimizerStatsRanks() const;
    std::string CpSuffix() const;  //!< ".c<k>" with CP > 1 (names without CP unchanged)
    uint32_t DpCpRank() const;     //!< rank in the DP x CP group: cp + CP x dp
    void InitComms();
    // Op emission.
    Op& Push(OpKind kind, int64_t stream = kCompute);
    void Kernel(const std::string& name, double flops, double bytes);
    /// A fused attention kernel, its geometry in the op's shape (KernelCostModel prices it by
    /// key length and head dim): m = query tokens and n = key tokens per sequence, k = head
    /// dim, batch = sequences x local heads.
    void AttentionKernel(const std::string& name, double flops, double bytes, double queryTokens,
                         double keyTokens);
    void Gemm(const std::string& name, double m, double n, double k, uint64_t batch);
    /// A transformer layer's linear GEMM (batch 1 forward, 2 backward): in fp8 under an fp8
    /// plan (E4M3 forward, E5M2 backward), with the weight's fp8 cast before the first
    /// micro-batch's forward (`experts` weights of n x k: MoE), else as Gemm().
    /// `batch` 0: 1 forward, 2 backward (data and weight gradient); TP overlap splits them.
    void LinearGemm(const std::string& name, double m, double n, double k, bool backward,
                    double experts = 1, uint64_t batch = 0);
    void Coll(CollKind kind, const std::string& comm, uint32_t nranks, double bytes,
              int64_t stream = kCompute, DataType dtype = DataType::BF16);
    void Malloc(uint64_t ptr, double bytes, const std::string& name);
    void Free(uint64_t ptr);
    uint64_t RecordEvent(int64_t stream);
    void WaitEvent(int64_t stream, uint64_t event);
    // Model pieces.
    void TpForward(bool gather);  //!< before a column-parallel GEMM (SP: AllGather)
    void TpReduce();              //!< after a row-parallel GEMM (AllReduce, SP: ReduceScatter)
    void TpRegather();            //!< SP: AllGather in the backward
    double LocalTokens() const;   //!< tokens of elementwise ops (SP: T / TP)
    void Norm(bool backward);
    void BiasDropoutAdd();
    void LayerForward();
    void LayerBackward();
    void AttentionCore(bool backward);
    void UnfusedAttentionCore(bool backward);
    void CpRingAttention(bool backward);
    void AccumulateGrads(double params);
    void Mlp(bool backward);
    void MlpActivation(bool backward, double tokens);
    // TP communication overlapped with the GEMMs (training-tp-overlap.cc).
    bool TpCommOverlap() const;
    void RingGatherGemm(const std::string& name, double m, double n, double k, bool backward);
    void PipelinedGemmScatter(const std::string& name, double m, double n, double k);
    void BulkOverlappedBackward(const std::string& name, double m, double n, double k);
    /// One part of a split linear GEMM (batch 1; the weights cast with the first part only).
    void SplitGemm(const std::string& name, double m, double n, double k, bool backward,
                   bool first, uint32_t smMargin);
    void OverlappedLayerForward();
    void OverlappedLayerBackward();
    void EmbeddingForward();
    void EmbeddingBackward();
    void HeadForward();
    void HeadBackward();
    // fp8 (training-fp8.cc; doc/generate.md "fp8"). Without fp8 each falls back to what the
    // model dtype runs (or nothing).
    bool Fp8() const
    {
        return m_p.fp8 != Fp8Recipe::None;
    }
    /// Current scaling: the amax pass over `elems` values of the model dtype (unless a fused
    /// kernel already took it), its reduction over TP when the quantized tensor is all-gathered
    /// (SP), and the scale computed from it.
    void Fp8CurrentScale(double elems, bool amaxFused, bool tpReduce);
    /// Column-parallel LayerNormLinear input (QKV, dense fc1): the norm writing fp8, with SP
    /// the all-gather in fp8, without it the transpose the weight-gradient GEMM needs.
    /// Without fp8: Norm(false) and TpForward(true). `allGather` false: the caller gathers
    /// (TP overlap's ring exchange).
    void NormLinearInput(bool allGather = true);
    /// Cast (with transpose) of a GEMM operand of `elems` model-dtype values that no kernel
    /// before it wrote in fp8: the input of a row-parallel Linear (projection, fc2, experts)
    /// or a gradient output of a column-parallel one.
    void Fp8CastTranspose(double elems);
    /// The gradient output of a row-parallel Linear (projection, dense fc2), T x h: without SP
    /// cast and transposed; with SP cast, all-gathered in fp8 and transposed. Without fp8:
    /// TpRegather(). `allGather` false: only the local cast; the caller gathers and transposes
    /// (TP overlap's ring exchange).
    void RowGradOutput(bool allGather = true);
    /// SP: the saved fp8 input of a LayerNormLinear all-gathered again and transposed for the
    /// weight-gradient GEMM. Without fp8: TpRegather().
    void NormLinearRegather();
    /// Delayed scaling, at the end of a model chunk's forward (autocast exit) or backward (the
    /// first fp8 module's backward): concatenate the rank's amaxes, all-reduce them over the
    /// amax group (TP x CP x DP), update the amax histories and scales in one fused kernel.
    void Fp8AmaxUpdate(bool forward);
    std::string AmaxComm() const;
    // Schedule.
    bool FirstChunk(uint32_t chunk) const;
    bool LastChunk(uint32_t chunk) const;
    double ChunkActivationBytes(uint32_t chunk) const;
    uint64_t ActivationPtr(const PipeStep& s) const;
    void Forward(const PipeStep& s);
    void Backward(const PipeStep& s);
    void P2p(const std::vector<PipeStep>* done, const std::vector<PipeStep>* next);
    /// The schedule with blocking batched send/recv between segments (1F1B, and interleaved
    /// without overlap_p2p_comm).
    void BlockingPipeline();
    /// Megatron-Core's interleaved schedule with overlap_p2p_comm: each step's transfers run on
    /// the PP stream of their direction while the next steps compute.
    void OverlappedPipeline(const std::vector<PipeStep>& order);
    uint64_t PostP2p(bool forward, bool send, bool recv);
    void PlanBuckets();
    void ReduceBucket(int b);
    void GatherBucket(int b);
    /// Distributed optimizer with --overlap-param-gather: the updated parameters are gathered
    /// at the start of the iteration, bucket by bucket in forward order, and each unit's first
    /// forward waits for its bucket (Megatron-Core's forward pre-hook).
    bool OverlapParamGather() const;
    void StartParamGathers();
    void AwaitParams(int bucket);
    void OptimizerStep();

    const ModelSpec& m_m;
    const TrainingPlan& m_p;
    uint32_t m_rank;
    RankPosition m_pos;
    bool m_firstBackward = false; //!< the backward being emitted is its chunk's first micro-batch
    bool m_recomputeLayer = false; //!< the layer whose backward is emitted is recomputed first
    bool m_castWeights = false;   //!< fp8: the forward being emitted casts the weights (TE's
                                  //!< is_first_microbatch: the chunk's first micro-batch)
    double m_e;
    double m_s;
    double m_tokens;
    double m_vocab;
    uint32_t m_layersPerChunk;
    uint32_t m_microBatches;
    RankTrace m_trace;
    std::map<std::string, uint64_t> m_seq;
    uint64_t m_nextEvent = 1;
    uint64_t m_nextGroup = 1;
    std::vector<Bucket> m_buckets;
    std::vector<BucketPlan> m_bucketPlan; //!< per chunk
    std::vector<uint64_t> m_gathered;     //!< per bucket: event after its parameter gather, 0
                                          //!< once waited for (overlapped gathers)
};

} // namespace training_internal
} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_TRAINING_GENERATOR_INTERNAL_H
