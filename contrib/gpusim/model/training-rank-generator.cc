/*
 * RankGenerator (training-generator-internal.h): communicator names, op emission (kernels,
 * GEMMs, collectives, memory, events) and the whole iteration of one rank (Build).
 */
#include "training-generator-internal.h"

#include <cmath>
#include <utility>

namespace ns3
{
namespace gpusim
{
namespace training_internal
{

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
RankGenerator::PpGradComm() const
{
    return "ppg.d" + std::to_string(m_pos.dp) + ".t" + std::to_string(m_pos.tp) + CpSuffix();
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
RankGenerator::LossComm() const
{
    return m_p.cp > 1 ? "dploss.s" + std::to_string(m_pos.stage) + ".t" + std::to_string(m_pos.tp) +
                            CpSuffix()
                      : DpComm();
}

std::string
RankGenerator::OptimizerStatsComm() const
{
    // Megatron-LM core_r0.8.0: clip_grads.py all-reduces the norm over the optimizer's
    // get_model_parallel_group(): parallel_state's model-parallel group (TP x PP), and for the
    // DistributedOptimizer None, "the entire world" (distrib_optimizer.py:547).
    return m_p.distributedOptimizer ? std::string("world")
                                    : "mp.d" + std::to_string(m_pos.dp) + CpSuffix();
}

uint32_t
RankGenerator::OptimizerStatsRanks() const
{
    return m_p.distributedOptimizer ? m_p.Gpus() : m_p.tp * m_p.pp;
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
    if (kind == OpKind::Kernel || kind == OpKind::Memcpy || kind == OpKind::Memset ||
        kind == OpKind::Collective)
    {
        op.cpuUs = m_p.hostLaunchUs; // the host's own time to reach this launch
    }
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
    if (UsesP2pOverlap(m_p))
    {
        init(PpGradComm(), m_p.pp, m_pos.stage);
    }
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
    if (m_p.fp8 == Fp8Recipe::Delayed)
    {
        // The amax reduction group: a stage's TP x CP x DP ranks (training-fp8.cc).
        init(AmaxComm(), m_p.tp * m_p.DpCp(), m_pos.tp + m_p.tp * DpCpRank());
    }
    if (m_p.lossAllReduce && m_p.cp > 1 && m_pos.stage == m_p.pp - 1)
    {
        init(LossComm(), m_p.dp, m_pos.dp);
    }
    if (m_p.clipGrad || m_m.dtype == DataType::F16)
    {
        init(OptimizerStatsComm(), OptimizerStatsRanks(),
             m_p.distributedOptimizer ? m_rank : m_pos.tp + m_p.tp * m_pos.stage);
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
RankGenerator::BlockingPipeline()
{
    // Each segment's steps between batched send/recv groups that the compute stream waits for.
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
}

RankTrace
RankGenerator::Build()
{
    // About 20 forward and 20 backward ops per layer and micro-batch (more with SP / MoE):
    // reserving once spares the large list's repeated growth.
    m_trace.ops.reserve(size_t(MicroBatches(m_m, m_p)) * (m_m.layers / m_p.pp + 2) * 48 + 4096);
    InitComms();
    for (int64_t s : {kCompute, kGradComm, kCpComm, kTpComm, kPpForward, kPpBackward})
    {
        if ((s == kCpComm && m_p.cp < 2) || (s == kTpComm && !TpCommOverlap()) ||
            ((s == kPpForward || s == kPpBackward) && !UsesP2pOverlap(m_p)))
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
    if (Fp8())
    {
        // TE's cached fp8 weights (training-fp8.cc LinearGemm): each fp8 GEMM's weight and its
        // transpose, 1 byte each per parameter, kept between iterations in the module's
        // workspace (module/base.py _fp8_workspaces).
        Malloc(4, 2 * LayerFp8WeightParams(m_m, m_p) * (m_m.layers / m_p.pp),
               "fp8 weight copies");
    }
    PlanBuckets();
    Op& begin = Push(OpKind::Marker, 0);
    begin.name = "ProfilerStep#0";
    begin.phase = MarkerPhase::Begin;
    if (OverlapParamGather())
    {
        StartParamGathers();
    }
    if (UsesP2pOverlap(m_p))
    {
        OverlappedPipeline(PipelineOrder(m_pos.stage, m_p.pp, m_microBatches, m_p.virtualStages));
    }
    else
    {
        BlockingPipeline();
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

} // namespace training_internal
} // namespace gpusim
} // namespace ns3
