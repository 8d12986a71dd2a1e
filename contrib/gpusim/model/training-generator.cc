/*
 * The training generator's entry points (training-generator.h): rank placement, whole jobs and
 * single ranks, writing a trace, memory and OOM checks, plan descriptions. One rank's op list
 * is built by RankGenerator (training-generator-internal.h).
 */
#include "ns3/training-generator.h"

#include "training-generator-internal.h"

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

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

using training_internal::RankGenerator;

namespace
{

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
    // rank (ring neighbours and attention sections differ). TP communication overlap's ring
    // exchanges send to the next TP rank and receive from the previous one: peers at the same
    // offsets, which a shared list keeps (RankTrace::opsFrom), so the TP ranks share it too.
    // With `share`, each such group's first rank holds the op list and the others keep their
    // comm_init lines only.
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
    WriteJobTrace(
        job, dir, [&g](uint32_t r) { return UnsharedRank(*g.job, r); },
        static_cast<uint32_t>(g.job->ranks.size()));
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
       << (p.recomputeLayers ? " (" + std::to_string(p.recomputeLayers) + " layers per chunk)"
                             : std::string())
       << (p.distributedOptimizer ? ", distributed optimizer" : "")
       << (p.distributedOptimizer && !p.overlapParamGather ? " (no param-gather overlap)" : "")
       << (p.tpCommOverlap ? ", TP comm overlap" : "")
       << (p.virtualStages > 1 && !p.overlapP2pComm ? ", no PP overlap" : "")
       << (p.overlapGradReduce ? "" : ", no grad-reduce overlap")
       << (p.flashAttention ? "" : ", unfused attention")
       << (p.fp8 == Fp8Recipe::Delayed ? ", fp8 hybrid (delayed scaling)" : "")
       << (p.fp8 == Fp8Recipe::CurrentScaling ? ", fp8 hybrid (current scaling)" : "")
       << (p.scatterGatherP2p ? ", scatter/gather p2p" : "")
       << (p.lossAllReduce ? "" : ", no loss all-reduce")
       << (p.clipGrad ? "" : ", no gradient clipping");
    return os.str();
}

} // namespace gpusim
} // namespace ns3
