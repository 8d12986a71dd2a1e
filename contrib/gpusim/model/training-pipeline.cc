/*
 * Pipeline schedules: the order of a stage's forward and backward steps (PipelineSegments:
 * 1F1B, interleaved) and RankGenerator's pipeline steps (chunks, activations, P2P exchanges).
 */
#include "ns3/training-generator.h"

#include "training-generator-internal.h"

#include <algorithm>
#include <cmath>

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

namespace training_internal
{

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
    double bytes = ChunkLayersActivationBytes(m_m, m_p, m_layersPerChunk);
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
    const BucketPlan& bp = m_bucketPlan[s.chunk];
    if (FirstChunk(s.chunk))
    {
        AwaitParams(bp.embeddingIn);
        EmbeddingForward();
    }
    m_castWeights = Fp8() && s.microBatch == 0; // TE's is_first_microbatch (training-fp8.cc)
    for (uint32_t l = 0; l < m_layersPerChunk; ++l)
    {
        AwaitParams(bp.layerIn[l]);
        LayerForward();
    }
    m_castWeights = false;
    Fp8AmaxUpdate(true); // delayed scaling: the chunk's fp8_autocast exits
    if (LastChunk(s.chunk))
    {
        AwaitParams(bp.headIn);
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
        // Megatron's block method recomputes the chunk's first N layers.
        m_recomputeLayer = l < RecomputedLayers(m_p, m_layersPerChunk);
        LayerBackward();
        if (l == 0)
        {
            Fp8AmaxUpdate(false); // delayed scaling: the chunk's first fp8 module's backward
        }
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
RankGenerator::OverlappedPipeline(const std::vector<PipeStep>& order)
{
    // forward_backward_pipelining_with_interleaving with overlap_p2p_comm: after each step the
    // rank sends its output and posts the receive of the next step of the same direction
    // (send_forward_recv_forward, send_backward_recv_backward, asynchronous), and waits for a
    // received tensor only right before the step that needs it. Activations and gradients go
    // on their own streams (PyTorch runs point-to-point ops per peer pair, so a pending
    // receive from one neighbour never holds a send to the other) and their own
    // communicators: NCCL matches a pair's sends and receives in the order they were issued,
    // the engine in the order their streams reach them, and per direction the two agree (with
    // PP 2 one pair of ranks carries both directions).
    auto needsInput = [&](const PipeStep& s) {
        return s.forward ? !FirstChunk(s.chunk) : !LastChunk(s.chunk);
    };
    auto hasOutput = [&](const PipeStep& s) {
        return s.forward ? !LastChunk(s.chunk) : !FirstChunk(s.chunk);
    };
    const int n = static_cast<int>(order.size());
    std::vector<int> nextSame(n, -1);
    int nextForward = -1;
    int nextBackward = -1;
    for (int j = n - 1; j >= 0; --j)
    {
        nextSame[j] = order[j].forward ? nextForward : nextBackward;
        (order[j].forward ? nextForward : nextBackward) = j;
    }
    std::vector<uint64_t> arrived(n, 0);
    // The first step of each direction has no earlier step of its direction to post its
    // receive with: both are posted at the start (Megatron posts the first backward's with the
    // last warm-up forward; its stream reaches it at once either way).
    for (int first : {nextForward, nextBackward})
    {
        if (first >= 0 && needsInput(order[first]))
        {
            arrived[first] = PostP2p(order[first].forward, false, true);
        }
    }
    for (int j = 0; j < n; ++j)
    {
        if (arrived[j])
        {
            WaitEvent(kCompute, arrived[j]);
        }
        order[j].forward ? Forward(order[j]) : Backward(order[j]);
        const int k = nextSame[j];
        const bool send = hasOutput(order[j]);
        const bool recv = k >= 0 && needsInput(order[k]);
        if (send || recv)
        {
            const uint64_t done = PostP2p(order[j].forward, send, recv);
            if (recv)
            {
                arrived[k] = done;
            }
        }
    }
}

uint64_t
RankGenerator::PostP2p(bool forward, bool send, bool recv)
{
    const int64_t stream = forward ? kPpForward : kPpBackward;
    const int32_t nextStage = static_cast<int32_t>((m_pos.stage + 1) % m_p.pp);
    const int32_t prevStage = static_cast<int32_t>((m_pos.stage + m_p.pp - 1) % m_p.pp);
    const double bytes = m_e * LocalTokens() * m_m.hidden;
    if (send)
    {
        WaitEvent(stream, RecordEvent(kCompute)); // the output exists
    }
    const uint64_t group = m_nextGroup++;
    auto p2p = [&](CollKind kind, int32_t peer) {
        Op& op = Push(OpKind::Collective, stream);
        op.coll = kind;
        op.comm = forward ? PpComm() : PpGradComm();
        op.peer = peer;
        op.dtype = m_m.dtype;
        op.bytes = static_cast<uint64_t>(std::llround(bytes));
        op.count = op.bytes / DataTypeSize(op.dtype);
        op.group = group;
    };
    if (send)
    {
        p2p(CollKind::Send, forward ? nextStage : prevStage);
    }
    if (recv)
    {
        p2p(CollKind::Recv, forward ? prevStage : nextStage);
    }
    return RecordEvent(stream);
}

} // namespace training_internal

bool
UsesP2pOverlap(const TrainingPlan& p)
{
    return p.overlapP2pComm && p.pp > 1 && p.virtualStages > 1;
}

} // namespace gpusim
} // namespace ns3
