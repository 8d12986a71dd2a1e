/*
 * RankGenerator's model pieces (training-generator-internal.h): the forward and backward ops
 * of a transformer layer (TP/SP communication, attention: fused, unfused, CP ring; MLP and
 * MoE, norms), of the embedding and of the output head.
 */
#include "training-generator-internal.h"

#include <cmath>

namespace ns3
{
namespace gpusim
{
namespace training_internal
{

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
    // fp8 (training-fp8.cc): the router stays in the model dtype (Megatron-Core's TopKRouter
    // is not a TE module); the experts' GEMMs are TE GEMMs (TEGroupedLinear), their inputs
    // cast here. The activation is Megatron-Core's own (MLP with TE linear layers, no
    // use_te_activation_func), so it reads and writes the model dtype and fc2 casts its input.
    const double experts = moe ? double(m_m.experts) / m_p.ep : 1;
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
        if (moe)
        {
            Fp8CastTranspose(tokens * h);
        }
        LinearGemm(moe ? "expert_fc1" : "fc1", tokens, fc1, h, false, experts);
        MlpActivation(false, tokens);
        Fp8CastTranspose(tokens * f / t);
        LinearGemm(moe ? "expert_fc2" : "fc2", tokens, h, f / t, false, experts);
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
    if (moe)
    {
        Fp8CastTranspose(tokens * h); // the dense fc2's is RowGradOutput (LayerBackward)
    }
    LinearGemm(moe ? "expert_fc2_bwd" : "fc2_bwd", tokens, h, f / t, true, experts);
    MlpActivation(true, tokens);
    Fp8CastTranspose(tokens * fc1); // fc1's gradient output
    // SP: the MLP input again, for fc1's weight gradient (dense fp8: in fp8).
    if (moe)
    {
        TpRegather();
    }
    else
    {
        NormLinearRegather();
    }
    LinearGemm(moe ? "expert_fc1_bwd" : "fc1_bwd", tokens, fc1, h, true, experts);
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
RankGenerator::MlpActivation(bool backward, double tokens)
{
    // GELU (also squared ReLU: one elementwise pass) reads and writes the fc1 output; SwiGLU
    // reads both halves. Backward: also the forward's input.
    const double elems = tokens * m_m.ffn / m_p.tp;
    if (!backward)
    {
        Kernel(m_m.gatedMlp ? "swiglu" : "gelu", 0, m_e * elems * (m_m.gatedMlp ? 3 : 2));
        return;
    }
    Kernel(m_m.gatedMlp ? "swiglu_bwd" : "gelu_bwd", 0, m_e * elems * (m_m.gatedMlp ? 5 : 3));
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
    if (TpCommOverlap())
    {
        OverlappedLayerForward();
        return;
    }
    // With fp8 (training-fp8.cc) the four linear layers are Transformer Engine modules under
    // fp8_autocast: QKV and dense fc1 LayerNormLinear (the norm writes fp8), projection and
    // fc2 Linear (their inputs cast); the attention core stays in the model dtype (TE's
    // DelayedScaling / Float8CurrentScaling fp8_dpa = False, Megatron-Core's
    // --fp8-dot-product-attention off by default).
    const double h = m_m.hidden;
    const double t = m_p.tp;
    const double qkv = (h + 2.0 * m_m.kvHeads * m_m.HeadDim()) / t;
    NormLinearInput();
    LinearGemm("qkv", m_tokens, qkv, h, false);
    AttentionCore(false);
    Fp8CastTranspose(m_tokens * h / t);
    LinearGemm("proj", m_tokens, h, h / t, false);
    TpReduce();
    BiasDropoutAdd();
    if (m_m.experts)
    {
        Norm(false); // a separate norm: the router reads its output
        TpForward(true);
    }
    else
    {
        NormLinearInput();
    }
    Mlp(false);
    TpReduce();
    BiasDropoutAdd();
}

void
RankGenerator::LayerBackward()
{
    const double h = m_m.hidden;
    const double t = m_p.tp;
    const double qkv = (h + 2.0 * m_m.kvHeads * m_m.HeadDim()) / t;
    if (m_p.recompute == Recompute::Full && m_recomputeLayer)
    {
        // Recompute the layer from its stored input; TE reuses the cached fp8 weights.
        const bool cast = m_castWeights;
        m_castWeights = false;
        LayerForward();
        m_castWeights = cast;
    }
    if (TpCommOverlap())
    {
        OverlappedLayerBackward();
        AccumulateGrads(LayerParams(m_m) / t);
        return;
    }
    if (m_m.experts)
    {
        TpRegather(); // SP: backward of the MLP's ReduceScatter
    }
    else
    {
        RowGradOutput(); // the same, fc2's gradient output (fp8: cast, in fp8)
    }
    Mlp(true);
    TpForward(false);
    Norm(true);
    RowGradOutput(); // SP: backward of the attention's ReduceScatter; fp8: proj's gradient
    LinearGemm("proj_bwd", m_tokens, h, h / t, true);
    if (m_p.recompute == Recompute::Selective)
    {
        AttentionCore(false);
    }
    AttentionCore(true);
    Fp8CastTranspose(m_tokens * qkv); // the QKV gradient output
    NormLinearRegather(); // SP: the attention input again, for the QKV weight gradient
    LinearGemm("qkv_bwd", m_tokens, qkv, h, true);
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
    // Megatron-LM core_r0.8.0 pretrain_gpt.py loss_func: the masked loss sum and the token
    // count (2 fp32) all-reduced over CP (:133, part of the loss), then over DP for logging
    // (:145), every micro-batch, on the compute stream.
    if (m_p.cp > 1)
    {
        Coll(CollKind::AllReduce, CpComm(), m_p.cp, 8, kCompute, DataType::F32);
    }
    if (m_p.lossAllReduce && m_p.dp > 1)
    {
        Coll(CollKind::AllReduce, LossComm(), m_p.dp, 8, kCompute, DataType::F32);
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

} // namespace training_internal
} // namespace gpusim
} // namespace ns3
