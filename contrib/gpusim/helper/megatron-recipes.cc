#include "ns3/megatron-recipes.h"

#include <stdexcept>
#include <string>

namespace ns3
{
namespace gpusim
{

double
MegatronPaperFlops(double b, double s, double l, double h, double v)
{
    return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
}

ModelSpec
MegatronGptModel(uint32_t layers, uint32_t hidden, uint32_t heads)
{
    ModelSpec m;
    m.name = "gpt-" + std::to_string(layers) + "x" + std::to_string(hidden);
    m.layers = layers;
    m.hidden = hidden;
    m.heads = heads;
    m.kvHeads = heads;
    m.ffn = 4 * hidden;
    m.vocab = kMegatron2021Vocab;
    m.seqLength = kMegatron2021Seq;
    m.tiedEmbeddings = true;
    m.learnedPositions = true;
    m.biases = true;
    m.dropout = true;
    m.dtype = DataType::F16; // "mixed precision" on A100 in 2021: fp16 with loss scaling
    m.source = "Narayanan et al. 2021 (arXiv:2104.04473) section 5.1";
    return m;
}

TrainingPlan
MegatronPlan(const ModelSpec& m, uint32_t tp, uint32_t pp, uint32_t gpus, uint32_t batch,
             const MegatronRunOptions& run)
{
    TrainingPlan p;
    p.tp = tp;
    p.pp = pp;
    p.dp = (tp > 0 && pp > 0) ? gpus / (tp * pp) : 0;
    p.microBatch = run.microBatch;
    p.globalBatch = batch;
    p.recompute = Recompute::Full; // eq. 3 counts the recomputed forward
    p.flashAttention = false;      // 2021: fused scale-mask-softmax, scores stored
    p.crossEntropyFusion = false;  // 2021: vocab_parallel_cross_entropy(output.float(), ...)
    p.distributedOptimizer = false;
    p.gradDtype = DataType::F16; // fp16 grads (no --accumulate-allreduce-grads-in-fp32)
    // No --use-contiguous-buffers-in-ddp in the artifact: autograd accumulates .grad.
    p.gradAccum = GradAccumulation::Autograd;
    // torch DDP: 25 MiB buckets all-reduced as the backward fills them (no_sync on all but the
    // last micro-batch); local DDP: one all-reduce of the gradients after the backward.
    p.overlapGradReduce = run.torchDdp;
    p.bucketParams = run.torchDdp ? kTorchDdpBucketParams : 0;
    if (run.layersPerVirtualStage > 0 && pp > 1 && m.layers % pp == 0)
    {
        const uint32_t perStage = m.layers / pp;
        if (perStage % run.layersPerVirtualStage)
        {
            throw std::invalid_argument(
                "layers per virtual stage " + std::to_string(run.layersPerVirtualStage) +
                " does not divide the " + std::to_string(perStage) + " layers per stage");
        }
        p.virtualStages = perStage / run.layersPerVirtualStage;
    }
    // The scatter/gather optimization is on by default in the 2021 code (an opt-out flag).
    p.scatterGatherP2p = pp > 1;
    return p;
}

TrainingPlan
MegatronPlan(const ModelSpec& m, uint32_t tp, uint32_t pp, uint32_t gpus, uint32_t batch,
             bool interleaved)
{
    MegatronRunOptions run;
    if (interleaved && pp > 1 && m.layers % pp == 0)
    {
        const uint32_t perStage = m.layers / pp;
        for (uint32_t v = 2; v <= perStage; ++v)
        {
            if (perStage % v == 0)
            {
                run.layersPerVirtualStage = perStage / v;
                break;
            }
        }
    }
    TrainingPlan p = MegatronPlan(m, tp, pp, gpus, batch, run);
    p.scatterGatherP2p = p.virtualStages > 1;
    return p;
}

} // namespace gpusim
} // namespace ns3
