/*
 * RankGenerator's TP communication overlapped with the GEMMs (TrainingPlan::tpCommOverlap,
 * Megatron-Core's --tp-comm-overlap with Transformer Engine's userbuffers; doc/generate.md,
 * "TP communication overlap"). With sequence parallelism every TP collective of a layer sits
 * next to a GEMM; TE splits the pair so that the communication runs under the GEMM, in one of
 * three ways, chosen per GEMM by TE's defaults (transformer_engine/pytorch/module/base.py,
 * initialize_ub: "ring_exchange" for qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad; "pipeline"
 * for proj_fprop, fc2_fprop; "bulk" for qkv_dgrad/wgrad, fc1_dgrad/wgrad):
 *  - ring exchange (AllGather + GEMM): TP steps; each multiplies the token chunk it holds while
 *    the ring passes the next one on through the copy engines (no SMs taken);
 *  - pipeline (GEMM + ReduceScatter): the GEMM in 4 splits of its rows, each split's
 *    ReduceScatter as soon as it is computed, on 16 SMs the GEMM leaves free;
 *  - bulk (backward of a column-parallel GEMM): the AllGather of the input for the weight
 *    gradient under the data-gradient GEMM, the ReduceScatter of the data gradient under the
 *    weight-gradient GEMM, each on 16 SMs the GEMM leaves free.
 * The communication is priced as NCCL collectives and send/recv on the TP communicator
 * (userbuffers moves the same bytes over NVLink), on its own stream.
 */
#include "training-generator-internal.h"

#include <algorithm>
#include <cmath>

namespace ns3
{
namespace gpusim
{
namespace training_internal
{

namespace
{

/// TE initialize_ub defaults for the "pipeline" and "bulk" methods: num_sm 16 with
/// set_sm_margin (the GEMM runs on the SMs the communication kernel leaves), num_splits 4.
constexpr uint32_t kUbCommSms = 16;
constexpr uint32_t kUbPipelineSplits = 4;

} // namespace

} // namespace training_internal

bool
UsesTpCommOverlap(const ModelSpec& m, const TrainingPlan& p)
{
    // TE's userbuffers overlap needs sequence parallelism (Megatron-Core asserts it); MoE
    // layers' expert GEMMs keep the plain path.
    return p.tpCommOverlap && p.tp > 1 && p.sequenceParallel && m.experts == 0;
}

namespace training_internal
{

bool
RankGenerator::TpCommOverlap() const
{
    return UsesTpCommOverlap(m_m, m_p);
}

void
RankGenerator::SplitGemm(const std::string& name, double m, double n, double k, bool backward,
                         bool first, uint32_t smMargin)
{
    const bool cast = m_castWeights;
    m_castWeights = cast && first && !backward;
    LinearGemm(name, m, n, k, backward, 1, 1);
    m_castWeights = cast;
    m_trace.ops.back().gemm.smMargin = smMargin;
}

void
RankGenerator::RingGatherGemm(const std::string& name, double m, double n, double k, bool backward)
{
    const uint32_t t = m_p.tp;
    const int32_t next = static_cast<int32_t>((m_pos.tp + 1) % t);
    const int32_t prev = static_cast<int32_t>((m_pos.tp + t - 1) % t);
    // In fp8 the exchanged shards are the fp8 tensors (TE's userbuffers fp8 buffers).
    const DataType type = Fp8() ? (backward ? DataType::F8E5M2 : DataType::F8E4M3) : m_m.dtype;
    const double chunkBytes = DataTypeSize(type) * m_tokens / t * m_m.hidden;
    // The ring starts once this rank's shard exists; each step forwards the chunk it received.
    WaitEvent(kTpComm, RecordEvent(kCompute));
    std::vector<uint64_t> arrived(t, 0);
    for (uint32_t step = 1; step < t; ++step)
    {
        const uint64_t group = m_nextGroup++;
        for (bool send : {true, false})
        {
            Op& op = Push(OpKind::Collective, kTpComm);
            op.coll = send ? CollKind::Send : CollKind::Recv;
            op.comm = TpComm();
            op.peer = send ? next : prev;
            op.dtype = type;
            op.bytes = static_cast<uint64_t>(std::llround(chunkBytes));
            op.count = op.bytes / DataTypeSize(op.dtype);
            op.group = group;
            op.flags = kCollOneCopy; // userbuffers: the copy engines write into the peer
        }
        arrived[step] = RecordEvent(kTpComm);
    }
    for (uint32_t step = 0; step < t; ++step)
    {
        if (arrived[step])
        {
            WaitEvent(kCompute, arrived[step]);
        }
        SplitGemm(name, m / t, n, k, backward, step == 0, 0);
    }
}

void
RankGenerator::PipelinedGemmScatter(const std::string& name, double m, double n, double k)
{
    const double splitBytes = m_e * m_tokens * m_m.hidden / kUbPipelineSplits;
    uint64_t scattered = 0;
    for (uint32_t split = 0; split < kUbPipelineSplits; ++split)
    {
        SplitGemm(name, m / kUbPipelineSplits, n, k, false, split == 0, kUbCommSms);
        WaitEvent(kTpComm, RecordEvent(kCompute));
        Coll(CollKind::ReduceScatter, TpComm(), m_p.tp, splitBytes, kTpComm, m_m.dtype);
        scattered = RecordEvent(kTpComm);
    }
    WaitEvent(kCompute, scattered); // the residual add needs the whole output
}

void
RankGenerator::BulkOverlappedBackward(const std::string& name, double m, double n, double k)
{
    const double full = m_tokens * m_m.hidden;
    // The layer input gathered again (for the weight gradient) under the data-gradient GEMM;
    // in fp8 the saved fp8 input, transposed once gathered (NormLinearRegather).
    WaitEvent(kTpComm, RecordEvent(kCompute));
    Coll(CollKind::AllGather, TpComm(), m_p.tp, (Fp8() ? 1 : m_e) * full, kTpComm,
         Fp8() ? DataType::F8E4M3 : m_m.dtype);
    const uint64_t gathered = RecordEvent(kTpComm);
    SplitGemm(name, m, n, k, true, true, kUbCommSms); // data gradient
    // The data gradient reduce-scattered under the weight-gradient GEMM.
    WaitEvent(kTpComm, RecordEvent(kCompute));
    Coll(CollKind::ReduceScatter, TpComm(), m_p.tp, m_e * full, kTpComm, m_m.dtype);
    const uint64_t scattered = RecordEvent(kTpComm);
    WaitEvent(kCompute, gathered);
    if (Fp8())
    {
        Kernel("fp8_transpose", 0, 2 * full);
    }
    SplitGemm(name, m, n, k, true, false, kUbCommSms); // weight gradient
    WaitEvent(kCompute, scattered);
}

void
RankGenerator::OverlappedLayerForward()
{
    const double h = m_m.hidden;
    const double t = m_p.tp;
    NormLinearInput(false); // the norm (fp8: writing fp8); the ring gathers its output
    RingGatherGemm("qkv", m_tokens, (h + 2.0 * m_m.kvHeads * m_m.HeadDim()) / t, h, false);
    AttentionCore(false);
    Fp8CastTranspose(m_tokens * h / t);
    PipelinedGemmScatter("proj", m_tokens, h, h / t);
    BiasDropoutAdd();
    NormLinearInput(false);
    RingGatherGemm("fc1", m_tokens, m_m.ffn * (m_m.gatedMlp ? 2 : 1) / t, h, false);
    MlpActivation(false, m_tokens);
    Fp8CastTranspose(m_tokens * m_m.ffn / t);
    PipelinedGemmScatter("fc2", m_tokens, h, m_m.ffn / t);
    BiasDropoutAdd();
}

void
RankGenerator::OverlappedLayerBackward()
{
    const double h = m_m.hidden;
    const double t = m_p.tp;
    const double qkv = (h + 2.0 * m_m.kvHeads * m_m.HeadDim()) / t;
    const double fc1 = m_m.ffn * (m_m.gatedMlp ? 2 : 1) / t;
    // fc2: the output gradient (fp8: cast) gathered by the ring under the data-gradient GEMM's
    // chunks, then (fp8: transposed) the weight gradient on the gathered gradient.
    RowGradOutput(false);
    RingGatherGemm("fc2_bwd", m_tokens, h, m_m.ffn / t, true);
    if (Fp8())
    {
        Kernel("fp8_transpose", 0, 2 * m_tokens * h);
    }
    SplitGemm("fc2_bwd", m_tokens, h, m_m.ffn / t, true, false, 0);
    MlpActivation(true, m_tokens);
    Fp8CastTranspose(m_tokens * fc1); // fc1's gradient output
    BulkOverlappedBackward("fc1_bwd", m_tokens, fc1, h);
    Norm(true);
    RowGradOutput(false);
    RingGatherGemm("proj_bwd", m_tokens, h, h / t, true);
    if (Fp8())
    {
        Kernel("fp8_transpose", 0, 2 * m_tokens * h);
    }
    SplitGemm("proj_bwd", m_tokens, h, h / t, true, false, 0);
    if (m_p.recompute == Recompute::Selective)
    {
        AttentionCore(false);
    }
    AttentionCore(true);
    Fp8CastTranspose(m_tokens * qkv); // the QKV gradient output
    BulkOverlappedBackward("qkv_bwd", m_tokens, qkv, h);
    Norm(true);
}

} // namespace training_internal
} // namespace gpusim
} // namespace ns3
