/*
 * Parameters, gradients and the optimizer: what each rank holds (ParamsOfRank), RankGenerator's
 * data-parallel gradient buckets and their reduction, and the optimizer step.
 */
#include "ns3/training-generator.h"

#include "training-generator-internal.h"

#include <algorithm>

namespace ns3
{
namespace gpusim
{

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

namespace training_internal
{

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
        bp.layerIn.assign(m_layersPerChunk, -1);
        bp.first = static_cast<int>(m_buckets.size());
        Bucket open;
        std::vector<int*> members; // units in the open bucket
        auto add = [&](double dense, double expert, int& closes, int& in, bool last) {
            open.dense += dense;
            open.expert += expert;
            members.push_back(&in);
            if (open.Total() >= size || last)
            {
                closes = static_cast<int>(m_buckets.size());
                for (int* m : members)
                {
                    *m = closes;
                }
                members.clear();
                m_buckets.push_back(open);
                open = Bucket();
            }
        };
        if (LastChunk(c))
        {
            add(HeadParamsOfRank(m_m, m_p), 0, bp.atHead, bp.headIn, false);
        }
        for (uint32_t l = m_layersPerChunk; l-- > 0;)
        {
            add(layer.dense, layer.expert, bp.atLayer[l], bp.layerIn[l], l == 0 && !FirstChunk(c));
        }
        if (FirstChunk(c))
        {
            add(EmbeddingParamsOfRank(m_m, m_p), 0, bp.atEmbedding, bp.embeddingIn, true);
        }
        bp.last = static_cast<int>(m_buckets.size()) - 1;
    }
    m_gathered.assign(m_buckets.size(), 0);
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
    // The passes up to the norm are one kernel, the rest another: between them the scalars
    // meet over the optimizer's group (OptimizerStatsComm): fp16's inf/NaN flag (MAX) and the
    // squared norm (SUM), one fp32 each (core_r0.8.0 optimizer.py
    // _unscale_main_grads_and_check_for_nan, clip_grads.py get_grad_norm_fp32).
    const bool fp16 = m_m.dtype == DataType::F16;
    const double gradPass = (g < 4 ? g + 4 : 0) + (fp16 ? 8 : 0) + (m_p.clipGrad ? 4 : 0);
    if (gradPass > 0)
    {
        Kernel("optimizer_grads", 0, local * gradPass);
    }
    const uint32_t group = OptimizerStatsRanks();
    if (fp16 && group > 1)
    {
        Coll(CollKind::AllReduce, OptimizerStatsComm(), group, 4, kCompute, DataType::F32);
    }
    if (m_p.clipGrad && group > 1)
    {
        Coll(CollKind::AllReduce, OptimizerStatsComm(), group, 4, kCompute, DataType::F32);
    }
    Kernel("optimizer", 0, local * (28 + 4 + m_e) + params.Total() * g);
    if (m_p.distributedOptimizer && m_p.DpCp() > 1 && !OverlapParamGather())
    {
        // Each DP rank updated its shard: gather the updated bf16 weights per bucket, exposed.
        WaitEvent(kGradComm, RecordEvent(kCompute));
        for (size_t b = 0; b < m_buckets.size(); ++b)
        {
            GatherBucket(static_cast<int>(b));
        }
    }
}

void
RankGenerator::GatherBucket(int b)
{
    const Bucket& bucket = m_buckets[b];
    const uint32_t edp = m_p.DpCp() / m_p.ep;
    if (bucket.dense > 0)
    {
        Coll(CollKind::AllGather, DpComm(), m_p.DpCp(), bucket.dense * m_e, kGradComm, m_m.dtype);
    }
    if (bucket.expert > 0 && edp > 1)
    {
        Coll(CollKind::AllGather, EdpComm(), edp, bucket.expert * m_e, kGradComm, m_m.dtype);
    }
}

bool
RankGenerator::OverlapParamGather() const
{
    return m_p.distributedOptimizer && m_p.overlapParamGather && m_p.DpCp() > 1;
}

void
RankGenerator::StartParamGathers()
{
    // The previous iteration's update, gathered in the order the forward needs it (the steady
    // state of one iteration's gathers running under the next one's forward): chunk by chunk,
    // each chunk's buckets from the last built (embedding side) to the first (head side). The
    // host dispatches them ahead of the GPU, so they run back to back on the DP stream.
    for (const BucketPlan& bp : m_bucketPlan)
    {
        for (int b = bp.last; b >= bp.first && b >= 0; --b)
        {
            GatherBucket(b);
            m_gathered[b] = RecordEvent(kGradComm);
        }
    }
}

void
RankGenerator::AwaitParams(int bucket)
{
    if (bucket >= 0 && m_gathered[bucket] != 0)
    {
        WaitEvent(kCompute, m_gathered[bucket]);
        m_gathered[bucket] = 0;
    }
}

} // namespace training_internal
} // namespace gpusim
} // namespace ns3
