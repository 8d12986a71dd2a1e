#include "ns3/context-parallel.h"

#include <stdexcept>
#include <string>

namespace ns3
{
namespace gpusim
{

namespace
{

std::string
Str(uint64_t x)
{
    return std::to_string(x);
}

/// Tokens of one sequence chunk: c = s / (2 cp).
double
ChunkTokens(const ModelSpec& m, const TrainingPlan& p)
{
    return double(SeqLength(m, p)) / (2.0 * p.cp);
}

} // namespace

void
ValidateContextParallel(const ModelSpec& m, const TrainingPlan& p)
{
    if (p.cp <= 1)
    {
        return;
    }
    const uint32_t s = SeqLength(m, p);
    // get_batch_on_this_cp_rank views the sequence as 2 cp equal chunks.
    if (s % (2 * p.cp) != 0)
    {
        throw std::invalid_argument("context parallelism CP " + Str(p.cp) +
                                    " needs the sequence " + Str(s) +
                                    " to be a multiple of 2 x CP = " + Str(2 * p.cp));
    }
    // TE's CP attention runs on its fused / flash kernels only (no unfused path).
    if (!p.flashAttention)
    {
        throw std::invalid_argument("context parallelism needs fused (flash) attention: turn "
                                    "flash attention on or use CP 1");
    }
}

std::pair<uint32_t, uint32_t>
CpChunksOfRank(uint32_t rank, uint32_t cp)
{
    return {rank, 2 * cp - 1 - rank};
}

const char*
ToString(CpSection s)
{
    switch (s)
    {
    case CpSection::Diagonal:
        return "diagonal";
    case CpSection::LowerTriangle:
        return "lower-triangle";
    case CpSection::UpperTriangle:
        return "upper-triangle";
    }
    return "?";
}

CpSection
CpStepSection(uint32_t cpRank, uint32_t step)
{
    // TE AttnFuncWithCPAndKVP2P.forward: i == 0 diagonal, i <= rank lower, else upper.
    if (step == 0)
    {
        return CpSection::Diagonal;
    }
    return step <= cpRank ? CpSection::LowerTriangle : CpSection::UpperTriangle;
}

CpStep
CpAttentionStep(const ModelSpec& m, const TrainingPlan& p, uint32_t cpRank, uint32_t step)
{
    const double c = ChunkTokens(m, p);
    const double b = p.microBatch;
    const double t = p.tp;
    const double h = m.hidden;
    const double kv = 2.0 * m.kvHeads * m.HeadDim();
    CpStep st;
    st.section = CpStepSection(cpRank, step);
    double unmasked = 1; // share of the query x key pairs computed
    switch (st.section)
    {
    case CpSection::Diagonal:
        st.queryTokens = 2 * c;
        st.keyTokens = 2 * c;
        unmasked = 0.5; // causal: the generator's s^2 / 2 convention, as without CP
        break;
    case CpSection::LowerTriangle:
        st.queryTokens = 2 * c;
        st.keyTokens = c;
        break;
    case CpSection::UpperTriangle:
        st.queryTokens = c;
        st.keyTokens = 2 * c;
        break;
    }
    // Q K^T and P V: 2 q k d FLOPs each per head, h / t head dimensions on this TP rank.
    st.flops = 4 * b * st.queryTokens * st.keyTokens * unmasked * h / t;
    st.bytes = DataTypeSize(m.dtype) * b * (2 * st.queryTokens * h + st.keyTokens * kv) / t;
    return st;
}

double
CpKvBytes(const ModelSpec& m, const TrainingPlan& p)
{
    const double kv = 2.0 * m.kvHeads * m.HeadDim();
    return DataTypeSize(m.dtype) * p.microBatch * (2 * ChunkTokens(m, p)) * kv / p.tp;
}

double
CpStepSendBytes(const ModelSpec& m, const TrainingPlan& p, uint32_t step, bool backward)
{
    if (p.cp < 2 || step >= p.cp)
    {
        return 0;
    }
    const double kv = CpKvBytes(m, p);
    if (!backward)
    {
        return step + 1 < p.cp ? kv : 0;
    }
    // TE backward: p2p_comm_buffers hold (kv, dkv); step 0 sends kv only, the last step dkv
    // only, the others both.
    return (step == 0 || step + 1 == p.cp) ? kv : 2 * kv;
}

double
CpForwardCorrectionBytes(const ModelSpec& m, const TrainingPlan& p, uint32_t cpRank)
{
    const double e = DataTypeSize(m.dtype);
    const double o = double(p.microBatch) * m.hidden / p.tp;    // O elements per token
    const double lse = double(p.microBatch) * m.heads / p.tp;   // fp32 LSE per token
    const double local = 2 * ChunkTokens(m, p);
    // Step 0 initialises the fp32 output (read O_0, write), each later step rescales and adds
    // its O into it (read O_i, read and write the fp32 sum) and corrects the LSE (read the
    // step's, read and write the running one); the sum is cast back to the model dtype.
    double bytes = (e + 4) * local * o + (4 + e) * local * o;
    for (uint32_t i = 1; i < p.cp; ++i)
    {
        const double q = CpAttentionStep(m, p, cpRank, i).queryTokens;
        bytes += (e + 8) * q * o + 12 * q * lse;
    }
    return bytes;
}

double
CpGradAddBytes(const ModelSpec& m, const TrainingPlan& p, uint32_t cpRank, uint32_t step)
{
    const double e = DataTypeSize(m.dtype);
    const CpStep st = CpAttentionStep(m, p, cpRank, step);
    const double kv = 2.0 * m.kvHeads * m.HeadDim();
    const double elems =
        double(p.microBatch) * (st.queryTokens * m.hidden + st.keyTokens * kv) / p.tp;
    // Step 0 copies dQ / dKV (read, write); later steps add (read both, write).
    return (step == 0 ? 2 : 3) * e * elems;
}

} // namespace gpusim
} // namespace ns3
