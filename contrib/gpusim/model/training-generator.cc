#include "ns3/training-generator.h"

#include "ns3/context-parallel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

std::vector<std::vector<PipeStep>>
PipelineSegments(uint32_t stage, uint32_t pp, uint32_t microBatches, uint32_t virtualStages)
{
    const uint32_t v = std::max<uint32_t>(1, virtualStages);
    const uint32_t total = microBatches * v;
    // Virtual micro-batch k: chunk and micro-batch as Megatron's get_model_chunk_id and
    // get_microbatch_id_in_model_chunk compute them (groups of pp micro-batches per chunk).
    auto step = [&](uint32_t k, bool forward) {
        PipeStep s;
        s.forward = forward;
        const uint32_t inGroup = k % (pp * v);
        s.chunk = inGroup / pp;
        if (!forward)
        {
            s.chunk = v - 1 - s.chunk;
        }
        s.microBatch = (k / (pp * v)) * pp + inGroup % pp;
        return s;
    };
    uint32_t warmup;
    if (v == 1)
    {
        warmup = std::min(pp - stage - 1, microBatches);
    }
    else if (microBatches == pp)
    {
        warmup = total; // Megatron: all forwards first when the pipeline holds every micro-batch
    }
    else
    {
        warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
    }
    std::vector<std::vector<PipeStep>> segments;
    segments.reserve(2 * total);
    for (uint32_t k = 0; k < warmup; ++k)
    {
        segments.push_back({step(k, true)});
    }
    for (uint32_t k = 0; k + warmup < total; ++k)
    {
        if (v == 1)
        {
            // 1F1B: send_forward_recv_backward between the forward and the backward.
            segments.push_back({step(k + warmup, true)});
            segments.push_back({step(k, false)});
        }
        else
        {
            // Interleaved: one send_forward_backward_recv_forward_backward per pair.
            segments.push_back({step(k + warmup, true), step(k, false)});
        }
    }
    for (uint32_t k = total - warmup; k < total; ++k)
    {
        segments.push_back({step(k, false)});
    }
    return segments;
}

std::vector<PipeStep>
PipelineOrder(uint32_t stage, uint32_t pp, uint32_t microBatches, uint32_t virtualStages)
{
    std::vector<PipeStep> order;
    for (const auto& seg : PipelineSegments(stage, pp, microBatches, virtualStages))
    {
        order.insert(order.end(), seg.begin(), seg.end());
    }
    return order;
}

RankPosition
PositionOf(const TrainingPlan& p, uint32_t rank)
{
    RankPosition pos;
    pos.tp = rank % p.tp;
    pos.cp = (rank / p.tp) % p.cp;
    pos.dp = (rank / (p.tp * p.cp)) % p.dp;
    pos.stage = rank / (p.tp * p.cp * p.dp);
    return pos;
}

uint32_t
RankAt(const TrainingPlan& p, uint32_t tp, uint32_t dp, uint32_t stage)
{
    return RankAt(p, tp, 0, dp, stage);
}

uint32_t
RankAt(const TrainingPlan& p, uint32_t tp, uint32_t cp, uint32_t dp, uint32_t stage)
{
    return tp + p.tp * (cp + p.cp * (dp + p.dp * stage));
}

namespace
{

/// Parameters of one transformer layer held by one TP rank.
RankParams
LayerParamsOfRank(const ModelSpec& m, const TrainingPlan& p)
{
    const double h = m.hidden;
    const double f = m.ffn;
    const double t = p.tp;
    const double qkv = h + 2.0 * m.kvHeads * m.HeadDim();
    const double fc1Out = f * (m.gatedMlp ? 2 : 1);
    RankParams r;
    // Column-parallel QKV (weights and biases split), row-parallel projection (bias whole).
    r.dense = (h * qkv + (m.biases ? qkv : 0) + h * h) / t + (m.biases ? h : 0);
    r.dense += 2 * (m.rmsNorm ? h : 2 * h);
    const double mlp = (h * fc1Out + (m.biases ? fc1Out : 0) + f * h) / t + (m.biases ? h : 0);
    if (m.experts)
    {
        r.expert = mlp * m.experts / p.ep;
        r.dense += h * m.experts; // router, replicated
    }
    else
    {
        r.dense += mlp;
    }
    return r;
}

double
EmbeddingParamsOfRank(const ModelSpec& m, const TrainingPlan& p)
{
    const double h = m.hidden;
    return double(PaddedVocab(m, p.tp)) * h / p.tp +
           (m.learnedPositions ? double(SeqLength(m, p)) * h : 0);
}

double
HeadParamsOfRank(const ModelSpec& m, const TrainingPlan& p)
{
    // Final norm plus the output layer (its own weights, or the last stage's copy of tied
    // embeddings, which Megatron keeps in sync by an all-reduce with the first stage).
    const double h = m.hidden;
    const double out = (m.tiedEmbeddings && p.pp == 1) ? 0 : double(PaddedVocab(m, p.tp)) * h / p.tp;
    return (m.rmsNorm ? h : 2 * h) + out;
}

} // namespace

RankParams
ParamsOfRank(const ModelSpec& m, const TrainingPlan& p, uint32_t stage)
{
    const uint32_t layers = m.layers / p.pp;
    RankParams layer = LayerParamsOfRank(m, p);
    RankParams r;
    r.dense = layer.dense * layers;
    r.expert = layer.expert * layers;
    if (stage == 0)
    {
        r.dense += EmbeddingParamsOfRank(m, p);
    }
    if (stage == p.pp - 1)
    {
        r.dense += HeadParamsOfRank(m, p);
    }
    return r;
}

namespace
{

constexpr int64_t kCompute = 1; //!< compute stream (TP and PP communication stay on it)
constexpr int64_t kGradComm = 2; //!< DP gradient reduction / parameter gather stream
constexpr int64_t kCpComm = 3;   //!< CP ring KV / dKV exchange (NCCL's own stream in TE)

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

/// Which bucket (index, -1 none) each unit of a model chunk closes in the backward.
struct BucketPlan
{
    int atHead = -1;
    std::vector<int> atLayer; //!< by layer index within the chunk
    int atEmbedding = -1;
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
    void PlanBuckets();
    void ReduceBucket(int b);
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
};

std::string
RankGenerator::TpComm() const
{
    return "tp.s" + std::to_string(m_pos.stage) + ".d" + std::to_string(m_pos.dp) + CpSuffix();
}

std::string
RankGenerator::PpComm() const
{
    return "pp.d" + std::to_string(m_pos.dp) + ".t" + std::to_string(m_pos.tp) + CpSuffix();
}

std::string
RankGenerator::DpComm() const
{
    return "dp.s" + std::to_string(m_pos.stage) + ".t" + std::to_string(m_pos.tp);
}

std::string
RankGenerator::EpComm() const
{
    return "ep.s" + std::to_string(m_pos.stage) + ".t" + std::to_string(m_pos.tp) + ".g" +
           std::to_string(DpCpRank() / m_p.ep);
}

std::string
RankGenerator::EdpComm() const
{
    return "edp.s" + std::to_string(m_pos.stage) + ".t" + std::to_string(m_pos.tp) + ".e" +
           std::to_string(DpCpRank() % m_p.ep);
}

std::string
RankGenerator::EmbComm() const
{
    return "emb.d" + std::to_string(m_pos.dp) + ".t" + std::to_string(m_pos.tp) + CpSuffix();
}

std::string
RankGenerator::CpComm() const
{
    return "cp.s" + std::to_string(m_pos.stage) + ".d" + std::to_string(m_pos.dp) + ".t" +
           std::to_string(m_pos.tp);
}

std::string
RankGenerator::CpSuffix() const
{
    return m_p.cp > 1 ? ".c" + std::to_string(m_pos.cp) : std::string();
}

uint32_t
RankGenerator::DpCpRank() const
{
    // Megatron-Core's "dp-cp" group (and the expert generator's combined index): CP fastest.
    return m_pos.cp + m_p.cp * m_pos.dp;
}

Op&
RankGenerator::Push(OpKind kind, int64_t stream)
{
    m_trace.ops.emplace_back();
    Op& op = m_trace.ops.back();
    op.kind = kind;
    op.stream = stream;
    return op;
}

void
RankGenerator::InitComms()
{
    auto init = [&](const std::string& comm, uint32_t n, uint32_t me) {
        if (n < 2)
        {
            return;
        }
        Op& op = Push(OpKind::CommInit, 0);
        op.comm = comm;
        op.nranks = static_cast<int32_t>(n);
        op.commRank = static_cast<int32_t>(me);
    };
    init(TpComm(), m_p.tp, m_pos.tp);
    init(PpComm(), m_p.pp, m_pos.stage);
    init(DpComm(), m_p.DpCp(), DpCpRank()); // weights are replicated over DP x CP
    init(CpComm(), m_p.cp, m_pos.cp);
    if (m_m.experts)
    {
        init(EpComm(), m_p.ep, DpCpRank() % m_p.ep);
        init(EdpComm(), m_p.DpCp() / m_p.ep, DpCpRank() / m_p.ep);
    }
    if (m_m.tiedEmbeddings && m_p.pp > 1 && (m_pos.stage == 0 || m_pos.stage == m_p.pp - 1))
    {
        init(EmbComm(), 2, m_pos.stage == 0 ? 0 : 1);
    }
}

void
RankGenerator::Kernel(const std::string& name, double flops, double bytes)
{
    Op& op = Push(OpKind::Kernel);
    op.name = name;
    op.flops = std::round(flops);
    op.memBytes = std::round(bytes);
}

void
RankGenerator::AttentionKernel(const std::string& name, double flops, double bytes,
                               double queryTokens, double keyTokens)
{
    Kernel(name, flops, bytes);
    Op& op = m_trace.ops.back();
    op.gemm.m = static_cast<uint64_t>(std::llround(queryTokens));
    op.gemm.n = static_cast<uint64_t>(std::llround(keyTokens));
    op.gemm.k = m_m.HeadDim();
    op.gemm.batch = uint64_t(m_p.microBatch) * (m_m.heads / m_p.tp);
    op.gemm.dtype = m_m.dtype;
}

void
RankGenerator::Gemm(const std::string& name, double m, double n, double k, uint64_t batch)
{
    // A backward GEMM op stands for the data-gradient and weight-gradient GEMMs (batch 2):
    // both have the forward's 2 m n k FLOPs.
    Op& op = Push(OpKind::Kernel);
    op.name = name;
    op.gemm.m = static_cast<uint64_t>(m);
    op.gemm.n = static_cast<uint64_t>(n);
    op.gemm.k = static_cast<uint64_t>(k);
    op.gemm.batch = batch;
    op.gemm.dtype = m_m.dtype;
}

void
RankGenerator::Coll(CollKind kind, const std::string& comm, uint32_t nranks, double bytes,
                    int64_t stream, DataType dtype)
{
    Op& op = Push(OpKind::Collective, stream);
    op.coll = kind;
    op.comm = comm;
    op.dtype = dtype;
    op.bytes = static_cast<uint64_t>(std::llround(bytes));
    const uint64_t elems = op.bytes / DataTypeSize(dtype);
    // NCCL's count: AllGather's send count, ReduceScatter's receive count.
    op.count = (kind == CollKind::AllGather || kind == CollKind::ReduceScatter) ? elems / nranks : elems;
    op.seq = m_seq[comm]++;
}

void
RankGenerator::Malloc(uint64_t ptr, double bytes, const std::string& name)
{
    Op& op = Push(OpKind::Malloc, 0);
    op.ptr = ptr;
    op.bytes = static_cast<uint64_t>(std::llround(bytes));
    op.name = name;
}

void
RankGenerator::Free(uint64_t ptr)
{
    Op& op = Push(OpKind::Free, 0);
    op.ptr = ptr;
}

uint64_t
RankGenerator::RecordEvent(int64_t stream)
{
    Op& op = Push(OpKind::EventRecord, stream);
    op.event = m_nextEvent++;
    return op.event;
}

void
RankGenerator::WaitEvent(int64_t stream, uint64_t event)
{
    Op& op = Push(OpKind::StreamWaitEvent, stream);
    op.event = event;
}

void
RankGenerator::TpForward(bool gather)
{
    // Column-parallel input: the identity forward (backward AllReduce), or with SP the
    // AllGather of the sequence shards (backward ReduceScatter). `gather` false: the backward.
    if (m_p.tp < 2)
    {
        return;
    }
    const double bytes = m_e * m_tokens * m_m.hidden;
    if (gather)
    {
        if (m_p.sequenceParallel)
        {
            Coll(CollKind::AllGather, TpComm(), m_p.tp, bytes);
        }
        return;
    }
    Coll(m_p.sequenceParallel ? CollKind::ReduceScatter : CollKind::AllReduce, TpComm(), m_p.tp,
         bytes);
}

void
RankGenerator::TpReduce()
{
    // Row-parallel output: AllReduce (SP: ReduceScatter); its backward is the identity (SP:
    // AllGather), emitted by the backward code with TpRegather().
    if (m_p.tp < 2)
    {
        return;
    }
    Coll(m_p.sequenceParallel ? CollKind::ReduceScatter : CollKind::AllReduce, TpComm(), m_p.tp,
         m_e * m_tokens * m_m.hidden);
}

void
RankGenerator::TpRegather()
{
    if (m_p.tp > 1 && m_p.sequenceParallel)
    {
        Coll(CollKind::AllGather, TpComm(), m_p.tp, m_e * m_tokens * m_m.hidden);
    }
}

double
RankGenerator::LocalTokens() const
{
    return m_p.sequenceParallel ? m_tokens / m_p.tp : m_tokens;
}

void
RankGenerator::AttentionCore(bool backward)
{
    if (!m_p.flashAttention)
    {
        UnfusedAttentionCore(backward);
        return;
    }
    if (m_p.cp > 1)
    {
        CpRingAttention(backward);
        return;
    }
    const double t = m_p.tp;
    const double h = m_m.hidden;
    const double kv = 2.0 * m_m.kvHeads * m_m.HeadDim();
    // Scores and values: 2 x 2 T s h / t FLOPs; the fused causal kernel skips the masked half.
    const double flops = 2 * m_tokens * m_s * h / t;
    const double bytes = m_e * m_tokens * (2 * h + kv) / t;
    AttentionKernel(backward ? "attention_bwd" : "attention", backward ? 2 * flops : flops,
                    backward ? 2 * bytes : bytes, m_s, m_s);
}

void
RankGenerator::UnfusedAttentionCore(bool backward)
{
    // Megatron-LM's unfused core attention (2021 CoreAttention), one kernel per step, the
    // s x s tensors through HBM between them: per micro-batch and local head a strided-batched
    // GEMM for the scores Q K^T (s x s, K = head dim), the fused scale-mask-softmax (reads the
    // scores, writes the probabilities), dropout on them (reads, writes, and a 1-byte mask),
    // and a batched GEMM probabilities x V (s x head dim, K = s). 4 T s h / t FLOPs forward.
    const double d = m_m.HeadDim();
    const uint64_t batch = uint64_t(m_p.microBatch) * (m_m.heads / m_p.tp);
    const double elems = double(batch) * m_s * m_s;
    if (!backward)
    {
        Gemm("attention_scores", m_s, m_s, d, batch);
        Kernel("softmax", 0, 2 * m_e * elems);
        if (m_m.dropout)
        {
            Kernel("attention_dropout", 0, (2 * m_e + 1) * elems);
        }
        Gemm("attention_values", m_s, d, m_s, batch);
        return;
    }
    // dP = dO V^T (s x s, K = head dim); dropout backward (reads dP and the mask, writes);
    // softmax backward (reads the gradient and the probabilities, writes dS); then dV = P^T dO,
    // dQ = dS K and dK = dS^T Q, each s x head dim with K = s: 8 T s h / t FLOPs in all.
    Gemm("attention_values_bwd", m_s, m_s, d, batch);
    if (m_m.dropout)
    {
        Kernel("attention_dropout_bwd", 0, (2 * m_e + 1) * elems);
    }
    Kernel("softmax_bwd", 0, 3 * m_e * elems);
    Gemm("attention_scores_bwd", m_s, d, m_s, 3 * batch);
}

void
RankGenerator::CpRingAttention(bool backward)
{
    // TE AttnFuncWithCPAndKVP2P (context-parallel.h): cp steps, step i's KV (dKV) exchange with
    // the ring neighbours on the CP stream overlapping step i's kernel on the compute stream.
    const uint32_t me = m_pos.cp;
    const int32_t next = static_cast<int32_t>((me + 1) % m_p.cp);
    const int32_t prev = static_cast<int32_t>((me + m_p.cp - 1) % m_p.cp);
    auto exchange = [&](double bytes) {
        // flash_attn_p2p_communicate: even ranks send first, odd ranks receive first, one
        // batch_isend_irecv group.
        const uint64_t group = m_nextGroup++;
        for (int k = 0; k < 2; ++k)
        {
            const bool send = (k == 0) == (me % 2 == 0);
            Op& op = Push(OpKind::Collective, kCpComm);
            op.coll = send ? CollKind::Send : CollKind::Recv;
            op.comm = CpComm();
            op.peer = send ? next : prev;
            op.dtype = m_m.dtype;
            op.bytes = static_cast<uint64_t>(std::llround(bytes));
            op.count = op.bytes / DataTypeSize(op.dtype);
            op.group = group;
        }
        return RecordEvent(kCpComm);
    };
    // The ring starts once this layer's K and V (forward) or dO (backward) exist.
    WaitEvent(kCpComm, RecordEvent(kCompute));
    for (uint32_t i = 0; i < m_p.cp; ++i)
    {
        const double sendBytes = CpStepSendBytes(m_m, m_p, i, backward);
        const uint64_t received = sendBytes > 0 ? exchange(sendBytes) : 0;
        const CpStep st = CpAttentionStep(m_m, m_p, me, i);
        const std::string name = std::string(backward ? "attention_bwd_cp_" : "attention_cp_") +
                                 ToString(st.section);
        AttentionKernel(name, backward ? 2 * st.flops : st.flops,
                        backward ? 2 * st.bytes : st.bytes, st.queryTokens, st.keyTokens);
        if (received)
        {
            WaitEvent(kCompute, received); // the next step's KV (backward: this step's dKV)
        }
        if (backward)
        {
            Kernel("attention_cp_grad_add", 0, CpGradAddBytes(m_m, m_p, me, i));
            if (i + 1 < m_p.cp)
            {
                WaitEvent(kCpComm, RecordEvent(kCompute)); // the dKV sent next includes it
            }
        }
    }
    if (!backward)
    {
        Kernel("attention_cp_correction", 0, CpForwardCorrectionBytes(m_m, m_p, me));
    }
}

void
RankGenerator::Mlp(bool backward)
{
    const double t = m_p.tp;
    const double h = m_m.hidden;
    const double f = m_m.ffn;
    const double k = m_m.experts ? m_m.topK : 1;
    const double fc1 = f * (m_m.gatedMlp ? 2 : 1) / t;
    const double tokens = m_tokens * k; // tokens through this rank's experts (balanced routing)
    const bool moe = m_m.experts > 0;
    const bool a2a = moe && m_p.ep > 1;
    const double a2aBytes = m_e * m_tokens * k * h / t;
    if (!backward)
    {
        if (moe)
        {
            Gemm("router", m_tokens, m_m.experts, h, 1);
        }
        if (a2a)
        {
            Coll(CollKind::AllToAll, EpComm(), m_p.ep, a2aBytes); // dispatch
        }
        Gemm(moe ? "expert_fc1" : "fc1", tokens, fc1, h, 1);
        Kernel(m_m.gatedMlp ? "swiglu" : "gelu", 0,
               m_e * tokens * f / t * (m_m.gatedMlp ? 3 : 2));
        Gemm(moe ? "expert_fc2" : "fc2", tokens, h, f / t, 1);
        if (a2a)
        {
            Coll(CollKind::AllToAll, EpComm(), m_p.ep, a2aBytes); // combine
        }
        return;
    }
    if (a2a)
    {
        Coll(CollKind::AllToAll, EpComm(), m_p.ep, a2aBytes);
    }
    Gemm(moe ? "expert_fc2_bwd" : "fc2_bwd", tokens, h, f / t, 2);
    Kernel(m_m.gatedMlp ? "swiglu_bwd" : "gelu_bwd", 0,
           m_e * tokens * f / t * (m_m.gatedMlp ? 5 : 3));
    TpRegather(); // SP: the MLP input again, for fc1's weight gradient
    Gemm(moe ? "expert_fc1_bwd" : "fc1_bwd", tokens, fc1, h, 2);
    if (a2a)
    {
        Coll(CollKind::AllToAll, EpComm(), m_p.ep, a2aBytes);
    }
    if (moe)
    {
        Gemm("router_bwd", m_tokens, m_m.experts, h, 2);
    }
}

void
RankGenerator::Norm(bool backward)
{
    const double x = m_e * LocalTokens() * m_m.hidden;
    // Backward: read dy, x and the residual gradient, write dx; the bias-dropout-add's
    // backward (mask multiply) is fused here.
    Kernel(backward ? "norm_bwd" : "norm", 0,
           backward ? 5 * x + (m_m.dropout ? LocalTokens() * m_m.hidden : 0) : 2 * x);
}

void
RankGenerator::BiasDropoutAdd()
{
    const double x = m_e * LocalTokens() * m_m.hidden;
    Kernel("bias_dropout_add", 0, 3 * x + (m_m.dropout ? LocalTokens() * m_m.hidden : 0));
}

void
RankGenerator::AccumulateGrads(double params)
{
    // Without gradient-accumulation fusion: read each new weight gradient and the sum so far,
    // write the sum; a hook does it every micro-batch, autograd from the second one on.
    if (m_p.gradAccum == GradAccumulation::Fused || params <= 0 ||
        (m_p.gradAccum == GradAccumulation::Autograd && m_firstBackward))
    {
        return;
    }
    Kernel("grad_accumulate", 0, params * (m_e + 2 * DataTypeSize(m_p.gradDtype)));
}

void
RankGenerator::LayerForward()
{
    const double h = m_m.hidden;
    const double t = m_p.tp;
    Norm(false);
    TpForward(true);
    Gemm("qkv", m_tokens, (h + 2.0 * m_m.kvHeads * m_m.HeadDim()) / t, h, 1);
    AttentionCore(false);
    Gemm("proj", m_tokens, h, h / t, 1);
    TpReduce();
    BiasDropoutAdd();
    Norm(false);
    TpForward(true);
    Mlp(false);
    TpReduce();
    BiasDropoutAdd();
}

void
RankGenerator::LayerBackward()
{
    const double h = m_m.hidden;
    const double t = m_p.tp;
    if (m_p.recompute == Recompute::Full)
    {
        LayerForward(); // recompute the layer from its stored input
    }
    TpRegather(); // SP: backward of the MLP's ReduceScatter
    Mlp(true);
    TpForward(false);
    Norm(true);
    TpRegather(); // SP: backward of the attention's ReduceScatter
    Gemm("proj_bwd", m_tokens, h, h / t, 2);
    if (m_p.recompute == Recompute::Selective)
    {
        AttentionCore(false);
    }
    AttentionCore(true);
    TpRegather(); // SP: the attention input again, for the QKV weight gradient
    Gemm("qkv_bwd", m_tokens, (h + 2.0 * m_m.kvHeads * m_m.HeadDim()) / t, h, 2);
    TpForward(false);
    Norm(true);
    // This rank's share of the layer (MoE: expert weights split over EP too, taken for all).
    AccumulateGrads(LayerParams(m_m) / t / (m_m.experts > 0 ? m_p.ep : 1));
}

void
RankGenerator::EmbeddingForward()
{
    // Vocabulary-parallel lookup (each TP rank its vocabulary slice, others masked), positions,
    // dropout; the partial sums meet in an AllReduce (SP: ReduceScatter).
    const double x = m_e * m_tokens * m_m.hidden;
    Kernel("embedding", 0, 2 * x + (m_m.learnedPositions ? x : 0));
    TpReduce();
}

void
RankGenerator::EmbeddingBackward()
{
    TpRegather();
    // Read the gradient, read-modify-write the fp32 gradient rows of the looked-up tokens.
    Kernel("embedding_bwd", 0, m_e * m_tokens * m_m.hidden + 8.0 * m_tokens * m_m.hidden);
    // Word embeddings (this rank's vocabulary slice; with tied embeddings and one stage, the
    // logits' gradient is summed into the same parameter first) and learned positions.
    AccumulateGrads((m_vocab / m_p.tp + (m_m.learnedPositions ? m_s : 0)) * m_m.hidden);
}

void
RankGenerator::HeadForward()
{
    const double v = m_vocab / m_p.tp;
    Norm(false);
    TpForward(true);
    Gemm("logits", m_tokens, v, m_m.hidden, 1);
    // Vocabulary-parallel cross entropy; the max, target logit and sum of exponentials meet in
    // AllReduces over TP (one op here). Fused: logits read, fp32 softmax written and read back.
    // Megatron's default (tensor_parallel.vocab_parallel_cross_entropy): the logits cast to
    // fp32 (read e, write 4 B), max (read 4), in-place subtract (8), exp (8), sum (4), divide
    // by the sum (8): e + 36 B per logit.
    Kernel("cross_entropy", 0, m_tokens * v * (m_e + (m_p.crossEntropyFusion ? 8 : 36)));
    if (m_p.tp > 1)
    {
        Coll(CollKind::AllReduce, TpComm(), m_p.tp, 3 * 4 * m_tokens, kCompute, DataType::F32);
    }
}

void
RankGenerator::HeadBackward()
{
    const double v = m_vocab / m_p.tp;
    // Fused: the fp32 softmax read, the gradient written. Default: the softmax scaled by the
    // loss gradient in place (8 B), then cast back to the logits' type (4 + e).
    Kernel("cross_entropy_bwd", 0, m_tokens * v * ((m_p.crossEntropyFusion ? 4 : 12) + m_e));
    Gemm("logits_bwd", m_tokens, v, m_m.hidden, 2);
    TpForward(false);
    Norm(true);
    if (!(m_m.tiedEmbeddings && m_p.pp == 1))
    {
        AccumulateGrads(v * m_m.hidden); // the output layer or the last stage's tied copy
    }
}

bool
RankGenerator::FirstChunk(uint32_t chunk) const
{
    return m_pos.stage == 0 && chunk == 0;
}

bool
RankGenerator::LastChunk(uint32_t chunk) const
{
    return m_pos.stage == m_p.pp - 1 && chunk == m_p.virtualStages - 1;
}

double
RankGenerator::ChunkActivationBytes(uint32_t chunk) const
{
    const double h = m_m.hidden;
    double bytes = m_layersPerChunk * LayerActivationBytes(m_m, m_p);
    if (FirstChunk(chunk) && m_m.dropout)
    {
        bytes += LocalTokens() * h; // embedding dropout mask
    }
    if (LastChunk(chunk))
    {
        // Final norm input, logits GEMM input, fp32 softmax kept by the cross entropy.
        bytes += 2 * m_e * LocalTokens() * h + 4 * m_tokens * m_vocab / m_p.tp;
    }
    return bytes;
}

void
RankGenerator::Forward(const PipeStep& s)
{
    Malloc(ActivationPtr(s), ChunkActivationBytes(s.chunk),
           "activations chunk " + std::to_string(s.chunk) + " micro-batch " +
               std::to_string(s.microBatch));
    if (FirstChunk(s.chunk))
    {
        EmbeddingForward();
    }
    for (uint32_t l = 0; l < m_layersPerChunk; ++l)
    {
        LayerForward();
    }
    if (LastChunk(s.chunk))
    {
        HeadForward();
    }
}

void
RankGenerator::Backward(const PipeStep& s)
{
    // Gradients are reduced once, while the last micro-batch of the chunk runs backward.
    const bool reduce = m_p.overlapGradReduce && s.microBatch == m_microBatches - 1;
    m_firstBackward = s.microBatch == 0;
    const uint64_t work = ActivationPtr(s) + 1;
    if (m_p.recompute == Recompute::Full)
    {
        TrainingPlan none = m_p;
        none.recompute = Recompute::None;
        Malloc(work, LayerActivationBytesNoRecompute(m_m, none),
               "recomputed layer chunk " + std::to_string(s.chunk) + " micro-batch " +
                   std::to_string(s.microBatch));
    }
    const BucketPlan& bp = m_bucketPlan[s.chunk];
    if (LastChunk(s.chunk))
    {
        HeadBackward();
        if (reduce && bp.atHead >= 0)
        {
            ReduceBucket(bp.atHead);
        }
    }
    for (uint32_t l = m_layersPerChunk; l-- > 0;)
    {
        LayerBackward();
        if (reduce && bp.atLayer[l] >= 0)
        {
            ReduceBucket(bp.atLayer[l]);
        }
    }
    if (FirstChunk(s.chunk))
    {
        EmbeddingBackward();
        if (reduce && bp.atEmbedding >= 0)
        {
            ReduceBucket(bp.atEmbedding);
        }
    }
    if (m_p.recompute == Recompute::Full)
    {
        Free(work);
    }
    Free(ActivationPtr(s));
}

uint64_t
RankGenerator::ActivationPtr(const PipeStep& s) const
{
    return 16 + 2 * (uint64_t(s.chunk) * m_microBatches + s.microBatch);
}

void
RankGenerator::P2p(const std::vector<PipeStep>* done, const std::vector<PipeStep>* next)
{
    // Between two segments: send what the finished segment produced and receive what the next
    // one needs, as one batched group (Megatron's p2p_communication batch_isend_irecv).
    if (m_p.pp < 2)
    {
        return;
    }
    const double full = m_e * LocalTokens() * m_m.hidden;
    const bool scatter = m_p.scatterGatherP2p && !m_p.sequenceParallel && m_p.tp > 1;
    const double bytes = scatter ? full / m_p.tp : full;
    uint32_t received = 0;
    const int32_t nextStage = static_cast<int32_t>((m_pos.stage + 1) % m_p.pp);
    const int32_t prevStage = static_cast<int32_t>((m_pos.stage + m_p.pp - 1) % m_p.pp);
    const uint64_t group = m_nextGroup;
    bool any = false;
    auto p2p = [&](CollKind kind, int32_t peer) {
        Op& op = Push(OpKind::Collective);
        op.coll = kind;
        op.comm = PpComm();
        op.peer = peer;
        op.dtype = m_m.dtype;
        op.bytes = static_cast<uint64_t>(std::llround(bytes));
        op.count = op.bytes / DataTypeSize(op.dtype);
        op.group = group;
        any = true;
    };
    for (size_t i = 0; done && i < done->size(); ++i)
    {
        const PipeStep& s = (*done)[i];
        if (s.forward && !LastChunk(s.chunk))
        {
            p2p(CollKind::Send, nextStage);
        }
        if (!s.forward && !FirstChunk(s.chunk))
        {
            p2p(CollKind::Send, prevStage);
        }
    }
    for (size_t i = 0; next && i < next->size(); ++i)
    {
        const PipeStep& s = (*next)[i];
        if (s.forward && !FirstChunk(s.chunk))
        {
            p2p(CollKind::Recv, prevStage);
            ++received;
        }
        if (!s.forward && !LastChunk(s.chunk))
        {
            p2p(CollKind::Recv, nextStage);
            ++received;
        }
    }
    if (any)
    {
        ++m_nextGroup;
    }
    for (uint32_t i = 0; scatter && i < received; ++i)
    {
        Coll(CollKind::AllGather, TpComm(), m_p.tp, full); // the received 1/t slices
    }
}

void
RankGenerator::PlanBuckets()
{
    // Megatron's DDP: per model chunk, parameters in backward order fill buckets of
    // max(40M, 1M x DP) parameters (--ddp-bucket-size); a bucket is reduced when its last
    // gradient is ready. Granularity here: whole layers (head / embedding as units).
    const double size = m_p.bucketParams ? double(m_p.bucketParams)
                                         : std::max(40e6, 1e6 * m_p.dp);
    const RankParams layer = LayerParamsOfRank(m_m, m_p);
    m_bucketPlan.assign(m_p.virtualStages, BucketPlan());
    for (uint32_t c = 0; c < m_p.virtualStages; ++c)
    {
        BucketPlan& bp = m_bucketPlan[c];
        bp.atLayer.assign(m_layersPerChunk, -1);
        Bucket open;
        auto add = [&](double dense, double expert, int& closes, bool last) {
            open.dense += dense;
            open.expert += expert;
            if (open.Total() >= size || last)
            {
                closes = static_cast<int>(m_buckets.size());
                m_buckets.push_back(open);
                open = Bucket();
            }
        };
        if (LastChunk(c))
        {
            add(HeadParamsOfRank(m_m, m_p), 0, bp.atHead, false);
        }
        for (uint32_t l = m_layersPerChunk; l-- > 0;)
        {
            add(layer.dense, layer.expert, bp.atLayer[l], l == 0 && !FirstChunk(c));
        }
        if (FirstChunk(c))
        {
            add(EmbeddingParamsOfRank(m_m, m_p), 0, bp.atEmbedding, true);
        }
    }
}

void
RankGenerator::ReduceBucket(int b)
{
    const Bucket& bucket = m_buckets[b];
    const uint32_t edp = m_p.DpCp() / m_p.ep;
    if (m_p.DpCp() < 2 || (bucket.dense == 0 && edp < 2))
    {
        return;
    }
    WaitEvent(kGradComm, RecordEvent(kCompute));
    const double g = DataTypeSize(m_p.gradDtype);
    const CollKind kind = m_p.distributedOptimizer ? CollKind::ReduceScatter : CollKind::AllReduce;
    if (bucket.dense > 0)
    {
        Coll(kind, DpComm(), m_p.DpCp(), bucket.dense * g, kGradComm, m_p.gradDtype);
    }
    if (bucket.expert > 0 && edp > 1)
    {
        Coll(kind, EdpComm(), edp, bucket.expert * g, kGradComm, m_p.gradDtype);
    }
}

void
RankGenerator::OptimizerStep()
{
    // finish_grad_sync: the compute stream waits for the gradient stream.
    WaitEvent(kCompute, RecordEvent(kGradComm));
    const double g = DataTypeSize(m_p.gradDtype);
    if (m_m.tiedEmbeddings && m_p.pp > 1 && (m_pos.stage == 0 || m_pos.stage == m_p.pp - 1))
    {
        // _allreduce_word_embedding_grads between the first and the last stage.
        Coll(CollKind::AllReduce, EmbComm(), 2, m_vocab / m_p.tp * m_m.hidden * g, kCompute,
             m_p.gradDtype);
    }
    const RankParams params = ParamsOfRank(m_m, m_p, m_pos.stage);
    const uint32_t edp = m_p.DpCp() / m_p.ep;
    const double local = m_p.distributedOptimizer ? params.dense / m_p.DpCp() + params.expert / edp
                                                  : params.Total();
    // Megatron-LM's mixed-precision optimizer step (Float16OptimizerWithFloat16Params, and the
    // distributed optimizer on its shard), one pass each over the local parameters:
    // - main_grad = grad.float() where the gradients are not fp32 (read g, write 4);
    // - fp16 only: unscale and check for inf/NaN (read 4, write 4);
    // - gradient norm for clipping (read 4);
    // - Adam (apex FusedAdam): read fp32 weight, gradient, m, v; write weight, m, v (28);
    // - copy the fp32 weights back to the model's fp16/bf16 weights (read 4, write e);
    // then zero the whole gradient buffer for the next iteration (write g per parameter).
    const double perParam = (g < 4 ? g + 4 : 0) + (m_m.dtype == DataType::F16 ? 8 : 0) + 4 +
                            28 + 4 + m_e;
    Kernel("optimizer", 0, local * perParam + params.Total() * g);
    if (m_p.distributedOptimizer && m_p.DpCp() > 1)
    {
        // Each DP rank updated its shard: gather the updated bf16 weights per bucket.
        WaitEvent(kGradComm, RecordEvent(kCompute));
        for (const Bucket& b : m_buckets)
        {
            if (b.dense > 0)
            {
                Coll(CollKind::AllGather, DpComm(), m_p.DpCp(), b.dense * m_e, kGradComm,
                     m_m.dtype);
            }
            if (b.expert > 0 && edp > 1)
            {
                Coll(CollKind::AllGather, EdpComm(), edp, b.expert * m_e, kGradComm, m_m.dtype);
            }
        }
    }
}

RankTrace
RankGenerator::Build()
{
    // About 20 forward and 20 backward ops per layer and micro-batch (more with SP / MoE):
    // reserving once spares the large list's repeated growth.
    m_trace.ops.reserve(size_t(MicroBatches(m_m, m_p)) * (m_m.layers / m_p.pp + 2) * 48 + 4096);
    InitComms();
    for (int64_t s : {kCompute, kGradComm, kCpComm})
    {
        if (s == kCpComm && m_p.cp < 2)
        {
            continue;
        }
        Op& op = Push(OpKind::StreamCreate, s);
        op.flags = 1; // non-blocking
    }
    const RankParams params = ParamsOfRank(m_m, m_p, m_pos.stage);
    const uint32_t edp = m_p.DpCp() / m_p.ep;
    const double shard = m_p.distributedOptimizer ? params.dense / m_p.DpCp() + params.expert / edp
                                                  : params.Total();
    Malloc(1, params.Total() * m_e, "weights");
    Malloc(2, params.Total() * DataTypeSize(m_p.gradDtype), "gradients");
    Malloc(3, shard * 12, "optimizer states");
    PlanBuckets();
    Op& begin = Push(OpKind::Marker, 0);
    begin.name = "ProfilerStep#0";
    begin.phase = MarkerPhase::Begin;
    const std::vector<std::vector<PipeStep>> segments =
        PipelineSegments(m_pos.stage, m_p.pp, m_microBatches, m_p.virtualStages);
    for (size_t i = 0; i < segments.size(); ++i)
    {
        P2p(i > 0 ? &segments[i - 1] : nullptr, &segments[i]);
        for (const PipeStep& s : segments[i])
        {
            if (s.forward)
            {
                Forward(s);
            }
            else
            {
                Backward(s);
            }
        }
    }
    if (!segments.empty())
    {
        P2p(&segments.back(), nullptr);
    }
    if (!m_p.overlapGradReduce)
    {
        for (size_t b = 0; b < m_buckets.size(); ++b)
        {
            ReduceBucket(static_cast<int>(b));
        }
    }
    OptimizerStep();
    Push(OpKind::DeviceSync, 0);
    Op& end = Push(OpKind::Marker, 0);
    end.name = "ProfilerStep#0";
    end.phase = MarkerPhase::End;
    return std::move(m_trace);
}

RankTrace
RankGenerator::BuildCommInits()
{
    InitComms();
    return std::move(m_trace);
}

double
KernelFlops(const RankTrace& r)
{
    double flops = 0;
    for (const Op& op : r.ops)
    {
        if (op.kind == OpKind::Kernel)
        {
            flops += op.flops > 0 ? op.flops
                                  : 2.0 * op.gemm.m * op.gemm.n * op.gemm.k * op.gemm.batch;
        }
    }
    return flops;
}

} // namespace

RankTrace
GenerateRank(const ModelSpec& m, const TrainingPlan& p, uint32_t rank)
{
    ValidatePlan(m, p);
    if (rank >= p.Gpus())
    {
        throw std::invalid_argument("rank " + std::to_string(rank) + " of a " +
                                    std::to_string(p.Gpus()) + "-GPU plan");
    }
    RankGenerator g(m, p, rank);
    return g.Build();
}

GeneratedTraining
GenerateTraining(const ModelSpec& m, const TrainingPlan& p, bool share)
{
    ValidatePlan(m, p);
    GeneratedTraining out;
    out.model = m;
    out.plan = p;
    out.microBatches = MicroBatches(m, p);
    out.modelFlops = ModelFlopsPerIteration(m, p);
    out.job = std::make_shared<JobTrace>();
    out.job->source = "generator";
    out.job->metadata["model"] = m.name;
    out.job->metadata["plan"] = DescribePlan(p);
    out.job->ranks.resize(p.Gpus());
    // The ranks of a stage run one program (their TP / DP groups differ); with CP, one per CP
    // rank (ring neighbours and attention sections differ). With `share`, each such group's
    // first rank holds the op list and the others keep their comm_init lines only.
    for (uint32_t g = 0; g < p.pp * p.cp; ++g)
    {
        const uint32_t stage = g / p.cp;
        const uint32_t cp = g % p.cp;
        const uint32_t first = RankAt(p, 0, cp, 0, stage);
        out.job->ranks[first] = RankGenerator(m, p, first).Build();
        out.hardwareFlops += KernelFlops(out.job->ranks[first]) * p.tp * p.dp;
        for (uint32_t dp = 0; dp < p.dp; ++dp)
        {
            for (uint32_t tp = 0; tp < p.tp; ++tp)
            {
                const uint32_t r = RankAt(p, tp, cp, dp, stage);
                if (r == first)
                {
                    continue;
                }
                if (share)
                {
                    out.job->ranks[r] = RankGenerator(m, p, r).BuildCommInits();
                    out.job->ranks[r].opsFrom = static_cast<int32_t>(first);
                }
                else
                {
                    out.job->ranks[r] = RankGenerator(m, p, r).Build();
                }
            }
        }
    }
    return out;
}

void
WriteTrainingTrace(const GeneratedTraining& g, const std::string& dir)
{
    // Rank by rank (a 1,024-GPU job does not fit in memory unshared): each sharing rank's
    // file is its stage representative's ops with its own comm_init lines.
    JobTrace job;
    job.source = g.job->source;
    job.metadata = g.job->metadata;
    WriteJobTrace(job, dir, [&](uint32_t r) -> RankTrace {
        const RankTrace& rt = g.job->ranks.at(r);
        if (rt.opsFrom < 0)
        {
            return rt;
        }
        RankTrace full = g.job->ranks[rt.opsFrom];
        full.rank = r;
        full.opsFrom = -1;
        size_t own = 0;
        std::map<std::string, std::string> renamed; // the list's communicator -> this rank's
        for (Op& op : full.ops)
        {
            if (op.kind == OpKind::CommInit)
            {
                renamed[op.comm] = rt.ops.at(own).comm;
                op = rt.ops.at(own++);
            }
            else if (op.kind == OpKind::Collective)
            {
                op.comm = renamed.at(op.comm);
            }
        }
        return full;
    }, static_cast<uint32_t>(g.job->ranks.size()));
}

uint64_t
PeakMemory(const RankTrace& r)
{
    std::map<uint64_t, uint64_t> live;
    uint64_t used = 0;
    uint64_t peak = 0;
    for (const Op& op : r.ops)
    {
        if (op.kind == OpKind::Malloc)
        {
            used += op.bytes;
            live[op.ptr] = op.bytes;
            peak = std::max(peak, used);
        }
        else if (op.kind == OpKind::Free)
        {
            auto it = live.find(op.ptr);
            if (it != live.end())
            {
                used -= it->second;
                live.erase(it);
            }
        }
    }
    return peak;
}

OomInfo
FindOom(const JobTrace& job, uint64_t capacity)
{
    OomInfo info;
    info.capacity = capacity;
    for (const RankTrace& r : job.ranks)
    {
        const std::vector<Op>& ops = r.opsFrom >= 0 ? job.ranks[r.opsFrom].ops : r.ops;
        std::map<uint64_t, uint64_t> live;
        uint64_t used = 0;
        for (const Op& op : ops)
        {
            if (op.kind == OpKind::Malloc)
            {
                if (used + op.bytes > capacity)
                {
                    info.oom = true;
                    info.rank = r.rank;
                    info.allocation = op.name;
                    info.bytes = op.bytes;
                    info.inUse = used;
                    return info;
                }
                used += op.bytes;
                live[op.ptr] = op.bytes;
            }
            else if (op.kind == OpKind::Free)
            {
                auto it = live.find(op.ptr);
                if (it != live.end())
                {
                    used -= it->second;
                    live.erase(it);
                }
            }
        }
    }
    return info;
}

std::string
OomInfo::Describe() const
{
    if (!oom)
    {
        return "fits";
    }
    std::ostringstream os;
    os.precision(2);
    os << std::fixed << "out of memory on rank " << rank << ": allocating '" << allocation
       << "' (" << bytes / 1073741824.0 << " GiB) with " << inUse / 1073741824.0 << " GiB of "
       << capacity / 1073741824.0 << " GiB in use";
    return os.str();
}

std::string
DescribePlan(const TrainingPlan& p)
{
    std::ostringstream os;
    os << "TP " << p.tp << " PP " << p.pp << " DP " << p.dp;
    if (p.cp > 1)
    {
        os << " CP " << p.cp;
    }
    if (p.ep > 1)
    {
        os << " EP " << p.ep;
    }
    if (p.virtualStages > 1)
    {
        os << " interleaved x" << p.virtualStages;
    }
    else
    {
        os << " 1F1B";
    }
    os << (p.sequenceParallel ? " SP" : "") << ", micro-batch " << p.microBatch
       << ", recompute " << ToString(p.recompute)
       << (p.distributedOptimizer ? ", distributed optimizer" : "")
       << (p.overlapGradReduce ? "" : ", no grad-reduce overlap")
       << (p.flashAttention ? "" : ", unfused attention")
       << (p.scatterGatherP2p ? ", scatter/gather p2p" : "");
    return os.str();
}

} // namespace gpusim
} // namespace ns3
