#include "ns3/plan-search.h"

#include "ns3/log.h"
#include "ns3/training-generator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("GpusimPlanSearch");

namespace gpusim
{

namespace
{

std::vector<uint32_t>
Divisors(uint32_t n)
{
    std::vector<uint32_t> d;
    for (uint32_t i = 1; i <= n; ++i)
    {
        if (n % i == 0)
        {
            d.push_back(i);
        }
    }
    return d;
}

uint64_t
Rounded(double bytes)
{
    return static_cast<uint64_t>(std::llround(bytes));
}

} // namespace

namespace
{

/// The plans of one (TP, CP, PP) layout: every schedule / batch / memory option.
void
AddLayoutPlans(const ModelSpec& m,
               const SearchSpace& s,
               uint32_t tp,
               uint32_t cp,
               uint32_t pp,
               std::vector<TrainingPlan>& plans)
{
    for (uint32_t v : s.virtualStages)
    {
        for (uint32_t mb : s.microBatches)
        {
            for (bool sp : s.sequenceParallel)
            {
                if (sp && tp == 1)
                {
                    continue; // SP with TP 1 is the plan without SP
                }
                for (Recompute rc : s.recompute)
                {
                    for (bool zero : s.distributedOptimizer)
                    {
                        TrainingPlan p;
                        p.tp = tp;
                        p.cp = cp;
                        p.pp = pp;
                        p.dp = s.gpus / (tp * cp * pp);
                        p.seqLength = s.seqLength;
                        p.virtualStages = v;
                        p.microBatch = mb;
                        p.globalBatch = s.globalBatch;
                        p.sequenceParallel = sp;
                        p.recompute = rc;
                        p.distributedOptimizer = zero && p.DpCp() > 1;
                        if (zero && p.DpCp() == 1)
                        {
                            continue; // ZeRO-1 over one replica is the plain optimizer
                        }
                        try
                        {
                            ValidatePlan(m, p);
                        }
                        catch (const std::invalid_argument& e)
                        {
                            NS_LOG_LOGIC("skip " << DescribePlan(p) << ": " << e.what());
                            continue;
                        }
                        plans.push_back(p);
                    }
                }
            }
        }
    }
}

} // namespace

std::vector<TrainingPlan>
EnumeratePlans(const ModelSpec& m, const SearchSpace& s)
{
    std::vector<TrainingPlan> plans;
    if (s.gpus == 0)
    {
        return plans;
    }
    for (uint32_t tp : Divisors(s.gpus))
    {
        if (tp > s.gpusPerServer || s.gpusPerServer % tp != 0)
        {
            continue; // TP groups must sit inside one server
        }
        for (uint32_t cp : s.contextParallel)
        {
            if (cp == 0 || (s.gpus / tp) % cp != 0)
            {
                continue;
            }
            for (uint32_t pp : Divisors(s.gpus / (tp * cp)))
            {
                AddLayoutPlans(m, s, tp, cp, pp, plans);
            }
        }
    }
    return plans;
}

uint64_t
StagePeakMemory(const ModelSpec& m, const TrainingPlan& p, uint32_t stage)
{
    const double e = DataTypeSize(m.dtype);
    const double tokens = double(SeqLength(m, p)) * p.microBatch / p.cp; // the rank's tokens
    const double local = p.sequenceParallel ? tokens / p.tp : tokens;
    const double vocab = PaddedVocab(m, p.tp);
    const uint32_t layersPerChunk = m.layers / (p.pp * p.virtualStages);
    const RankParams params = ParamsOfRank(m, p, stage);
    const uint32_t edp = p.DpCp() / p.ep; // ZeRO-1 shards over DP x CP
    const double shard =
        p.distributedOptimizer ? params.dense / p.DpCp() + params.expert / edp : params.Total();
    // Weights, gradients, optimizer states: allocated first, held all iteration.
    const uint64_t fixed = Rounded(params.Total() * e) +
                           Rounded(params.Total() * DataTypeSize(p.gradDtype)) +
                           Rounded(shard * 12);
    std::vector<uint64_t> chunkBytes(p.virtualStages);
    for (uint32_t c = 0; c < p.virtualStages; ++c)
    {
        double bytes = ChunkLayersActivationBytes(m, p, layersPerChunk);
        if (stage == 0 && c == 0 && m.dropout)
        {
            bytes += local * m.hidden; // embedding dropout mask
        }
        if (stage == p.pp - 1 && c == p.virtualStages - 1)
        {
            bytes += 2 * e * local * m.hidden + 4 * tokens * vocab / p.tp;
        }
        chunkBytes[c] = Rounded(bytes);
    }
    uint64_t work = 0; // full recomputation: one layer's activations during each backward
    if (p.recompute == Recompute::Full)
    {
        TrainingPlan none = p;
        none.recompute = Recompute::None;
        work = Rounded(LayerActivationBytesNoRecompute(m, none));
    }
    uint64_t live = fixed;
    uint64_t peak = fixed;
    for (const PipeStep& s : PipelineOrder(stage, p.pp, MicroBatches(m, p), p.virtualStages))
    {
        if (s.forward)
        {
            live += chunkBytes[s.chunk];
            peak = std::max(peak, live);
        }
        else
        {
            peak = std::max(peak, live + work);
            live -= chunkBytes[s.chunk];
        }
    }
    return peak;
}

uint64_t
PlanPeakMemory(const ModelSpec& m, const TrainingPlan& p, uint32_t* stage)
{
    uint64_t best = 0;
    uint32_t at = 0;
    for (uint32_t k = 0; k < p.pp; ++k)
    {
        const uint64_t b = StagePeakMemory(m, p, k);
        if (b > best)
        {
            best = b;
            at = k;
        }
    }
    if (stage)
    {
        *stage = at;
    }
    return best;
}

BoundRates
RatesFor(const GpuSpec& gpu,
         const ClusterSpec& cluster,
         const ModelSpec& m,
         double computeEfficiency,
         double memoryEfficiency)
{
    BoundRates r;
    r.peakFlops = gpu.PeakFlops(m.dtype);
    r.computeEfficiency = computeEfficiency;
    r.hbmBytesPerSec = gpu.hbmBytesPerSec;
    r.memoryEfficiency = memoryEfficiency;
    r.nvlinkBytesPerSec = cluster.nvlinkGBps * 1e9;
    return r;
}

namespace
{

/// One micro-batch through one layer on one TP rank, forward: its GEMMs' time (`gemm`) and
/// the NVLink time of one TP AllReduce / ReduceScatter (`comm`).
void
LayerForwardSeconds(const ModelSpec& m,
                    const TrainingPlan& p,
                    const BoundRates& r,
                    double& gemm,
                    double& comm)
{
    const double t = p.tp;
    const double h = m.hidden;
    const double tokens = double(SeqLength(m, p)) * p.microBatch / p.cp;
    const double kv = 2.0 * m.kvHeads * m.HeadDim();
    const double experts = m.experts > 0 ? m.topK : 1;
    const double mlp = experts * (h * m.ffn * (m.gatedMlp ? 2 : 1) + double(m.ffn) * h);
    const double gemmFlops = 2 * tokens * (h * (h + kv) + h * h + mlp) / t;
    gemm = gemmFlops / (r.peakFlops * r.computeEfficiency);
    comm = 0;
    if (p.tp > 1 && r.nvlinkBytesPerSec > 0)
    {
        // A TP AllReduce or ReduceScatter of T h elements on the compute stream: each GPU
        // sends at least (t-1)/t of the buffer over its NVLink, whatever the algorithm.
        const double bytes = tokens * h * DataTypeSize(m.dtype);
        comm = (t - 1) / t * bytes / r.nvlinkBytesPerSec;
    }
}

} // namespace

double
IterationLowerBoundUs(const ModelSpec& m, const TrainingPlan& p, const BoundRates& r)
{
    double gemm = 0;
    double comm = 0;
    LayerForwardSeconds(m, p, r, gemm, comm);
    // Forward: its GEMMs and two TP collectives (after proj and fc2). Backward: data- and
    // weight-gradient GEMMs (2x) and two TP collectives (after qkv_bwd and fc1_bwd); full
    // recomputation reruns the forward first.
    const double layerF = gemm + 2 * comm;
    const double layerB = 2 * gemm + 2 * comm + (p.recompute == Recompute::Full ? layerF : 0);
    const uint32_t chunks = p.pp * p.virtualStages;
    const double chunkF = layerF * m.layers / chunks;
    const double chunkB = layerB * m.layers / chunks;
    const double tokens = double(SeqLength(m, p)) * p.microBatch / p.cp;
    const double logits = 2 * tokens * double(m.hidden) * m.vocab / p.tp /
                          (r.peakFlops * r.computeEfficiency);
    const uint32_t micro = MicroBatches(m, p);
    double minOpt = std::numeric_limits<double>::infinity();
    for (uint32_t k = 0; k < p.pp; ++k)
    {
        const RankParams params = ParamsOfRank(m, p, k);
        const double shard = p.distributedOptimizer
                                 ? params.dense / p.DpCp() + params.expert / (p.DpCp() / p.ep)
                                 : params.Total();
        // Adam reads and writes the fp32 master weights, m and v: 24 bytes per parameter.
        minOpt = std::min(minOpt, 24 * shard / (r.hbmBytesPerSec * r.memoryEfficiency));
    }
    double best = 0;
    double before = 0; // sum over earlier stages of their first chunk's forward + backward
    for (uint32_t j = 0; j < p.pp; ++j)
    {
        const bool last = j == p.pp - 1;
        const double work =
            micro * (p.virtualStages * (chunkF + chunkB) + (last ? 3 * logits : 0));
        best = std::max(best, before + work + minOpt);
        before += chunkF + chunkB;
    }
    return best * 1e6;
}

long
PruneCut(const std::vector<double>& sortedBoundsUs, const std::vector<double>& timesUs)
{
    double bestUs = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < sortedBoundsUs.size(); ++i)
    {
        if (sortedBoundsUs[i] > bestUs)
        {
            return static_cast<long>(i);
        }
        if (i >= timesUs.size() || std::isnan(timesUs[i]) || timesUs[i] < 0)
        {
            return -1; // the next decision needs this plan's time
        }
        bestUs = std::min(bestUs, timesUs[i]);
    }
    return static_cast<long>(sortedBoundsUs.size());
}

} // namespace gpusim
} // namespace ns3
