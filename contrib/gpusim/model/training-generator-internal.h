/*
 * RankGenerator, the builder of one rank's op list, shared by the files of the training
 * generator (training-generator.h): training-rank-generator.cc (communicators, op emission,
 * the iteration), training-layers.cc (the ops of each model piece), training-pipeline.cc
 * (pipeline schedules) and training-optimizer.cc (gradient buckets, optimizer step).
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
    void RingGatherGemm(const std::string& name, double m, double n, double k);
    void PipelinedGemmScatter(const std::string& name, double m, double n, double k);
    void BulkOverlappedBackward(const std::string& name, double m, double n, double k);
    void OverlappedLayerForward();
    void OverlappedLayerBackward();
    void EmbeddingForward();
    void EmbeddingBackward();
    void HeadForward();
    void HeadBackward();
    // Schedule.
    bool FirstChunk(uint32_t chunk) const;
    bool LastChunk(uint32_t chunk) const;
    double ChunkActivationBytes(uint32_t chunk) const;
    uint64_t ActivationPtr(const PipeStep& s) const;
    void Forward(const PipeStep& s);
    void Backward(const PipeStep& s);
    void P2p(const std::vector<PipeStep>* done, const std::vector<PipeStep>* next);
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
