/*
 * Context parallelism (CP) as Megatron-Core runs it with Transformer Engine's ring attention
 * (TE AttnFuncWithCPAndKVP2P, "p2p" CP communication type); doc/generate.md "Context
 * parallelism" has the formulas and where each fact comes from.
 *
 *  - the sequence of s tokens is cut into 2 cp chunks of c = s / (2 cp) tokens; CP rank r holds
 *    chunks r and 2 cp - 1 - r (Megatron-Core get_batch_on_this_cp_rank), so every token-wise
 *    kernel works on s / cp tokens and every rank gets the same share of the causal work;
 *  - attention runs cp steps; at step i rank r attends its Q to the KV of rank (r - i) mod cp
 *    while the next KV block travels one hop around the CP ring (P2P send to r + 1, receive from
 *    r - 1, overlapped with the step's kernel). Step 0 is the "diagonal" (causal over the rank's
 *    own 2c tokens), steps 1..r the "lower triangle" (all 2c queries against the first c keys,
 *    no mask), steps r+1..cp-1 the "upper triangle" (the last c queries against all 2c keys, no
 *    mask): each step is 8 c^2 (h / t) FLOPs per sequence forward, half the full 2c x 2c block;
 *  - backward runs the same ring, the KV block travelling with the dK/dV accumulated so far.
 */
#ifndef GPUSIM_CONTEXT_PARALLEL_H
#define GPUSIM_CONTEXT_PARALLEL_H

#include "ns3/llm-model.h"

#include <cstdint>
#include <utility>

namespace ns3
{
namespace gpusim
{

/// Throws std::invalid_argument naming what a CP plan breaks (cp == 1 always passes).
void ValidateContextParallel(const ModelSpec& m, const TrainingPlan& p);

/// The two sequence chunks (of 2 cp) CP rank `rank` holds: rank and 2 cp - 1 - rank.
std::pair<uint32_t, uint32_t> CpChunksOfRank(uint32_t rank, uint32_t cp);

/// Which part of the (query chunk x key chunk) grid a ring step computes (TE's `section`).
enum class CpSection : uint8_t
{
    Diagonal,      //!< step 0: own Q against own KV, causal mask
    LowerTriangle, //!< KV from an earlier rank: all local queries, the first KV chunk
    UpperTriangle, //!< KV from a later rank: the second query chunk, both KV chunks
};

const char* ToString(CpSection s);
CpSection CpStepSection(uint32_t cpRank, uint32_t step);

/// One ring step of one micro-batch on one TP rank.
struct CpStep
{
    CpSection section = CpSection::Diagonal;
    double queryTokens = 0; //!< per sequence
    double keyTokens = 0;   //!< per sequence
    double flops = 0;       //!< forward (the backward is 2x, as the generator's attention_bwd)
    double bytes = 0;       //!< forward HBM traffic: read Q, K, V, write O
};

CpStep CpAttentionStep(const ModelSpec& m, const TrainingPlan& p, uint32_t cpRank,
                       uint32_t step);

/// K and V of the rank's s / cp tokens and TP share of KV heads, one micro-batch: the block a
/// ring step sends.
double CpKvBytes(const ModelSpec& m, const TrainingPlan& p);

/// Bytes one rank sends to its ring successor at `step` of one layer and micro-batch:
/// forward KV for steps 0..cp-2, none at the last; backward KV at step 0, KV and dKV at steps
/// 1..cp-2, dKV alone at step cp-1.
double CpStepSendBytes(const ModelSpec& m, const TrainingPlan& p, uint32_t step,
                       bool backward);

/// Forward output correction after the ring (TE flash_attn_fwd_out_correction and the
/// softmax log-sum-exp corrections), bytes for one micro-batch on CP rank `cpRank`.
double CpForwardCorrectionBytes(const ModelSpec& m, const TrainingPlan& p, uint32_t cpRank);

/// Backward of one step: dQ and dK/dV of the step copied (step 0) or added (later steps) into
/// the rank's dQ and the travelling dKV buffer.
double CpGradAddBytes(const ModelSpec& m, const TrainingPlan& p, uint32_t cpRank,
                      uint32_t step);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_CONTEXT_PARALLEL_H
