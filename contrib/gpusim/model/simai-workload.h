/*
 * SimAI workload files (aliyun/SimAI; written by its generator AICB) -> the gpusim Op IR.
 *
 * A SimAI workload is a text file: a header line naming the parallelism policy and its
 * sizes ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8
 * ga: 1 all_gpus: 32 checkpoints: 0 checkpoint_initiates: 0"), a line with the number of
 * layers, then one line per layer of twelve whitespace-separated columns:
 *
 *   name  dependency  fwd_compute  fwd_comm_type  fwd_comm_bytes
 *         ig_compute  ig_comm_type ig_comm_bytes  wg_compute  wg_comm_type  wg_comm_bytes
 *         update_time
 *
 * (ig = input gradient, wg = weight gradient). Times are nanoseconds, sizes bytes. How each
 * field maps, and what SimAI's own schedule is, is in doc/simai.md and simai-workload.cc.
 *
 * SimaiWorkload is plain data; ReadSimaiWorkload parses and checks a file and
 * SimaiToJobTrace turns it into a job of every rank.
 */
#ifndef GPUSIM_SIMAI_WORKLOAD_H
#define GPUSIM_SIMAI_WORKLOAD_H

#include "ns3/op-ir.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// SimAI's parallelism policies that gpusim runs (the header's first word).
enum class SimaiPolicy : uint8_t
{
    HybridTransformer,          //!< HYBRID_TRANSFORMER
    HybridTransformerFwdInBckwd, //!< HYBRID_TRANSFORMER_FWD_IN_BCKWD (AICB's training files)
    Micro,                      //!< MICRO (AICB's collective micro-benchmarks)
};

/// The collective of one phase of a layer.
enum class SimaiCollective : uint8_t
{
    None,          //!< NONE, or a type SimAI parses but never runs (BROADCAST)
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
};

/// The communication group a collective runs in.
enum class SimaiGroup : uint8_t
{
    None,  //!< no collective
    Tp,    //!< model_parallel_NPU_group consecutive ranks
    Dp,    //!< ranks with the same TP index
    Ep,    //!< ep consecutive members of the DP group
    DpEp,  //!< DP-group members whose DP index is equal modulo ep
    World, //!< every rank (MICRO)
};

const char* ToString(SimaiPolicy p);
const char* ToString(SimaiCollective c);
const char* ToString(SimaiGroup g);

/// One phase's communication as the file gives it.
struct SimaiComm
{
    std::string type;  //!< the column as written (NONE, ALLREDUCE, ALLGATHER_DP_EP, ...)
    SimaiCollective coll = SimaiCollective::None;
    SimaiGroup group = SimaiGroup::None;
    uint64_t bytes = 0;
};

/// One layer line.
struct SimaiLayer
{
    uint64_t line = 0;  //!< 1-based line in the file
    std::string name;
    int64_t dependency = -1; //!< reserved column (SimAI reads and ignores it)
    uint64_t fwdNs = 0;      //!< forward compute
    SimaiComm fwd;
    uint64_t igNs = 0;       //!< input-gradient compute
    SimaiComm ig;
    uint64_t wgNs = 0;       //!< weight-gradient compute
    SimaiComm wg;
    uint64_t updateNs = 0;   //!< delay after each of the layer's collectives completes
    bool checkpoint = false;       //!< listed after checkpoints:
    bool initiatesRecompute = false; //!< listed after checkpoint_initiates:
};

/// A parsed workload file.
struct SimaiWorkload
{
    std::string file;
    std::string policyName; //!< the header's first word
    SimaiPolicy policy = SimaiPolicy::HybridTransformerFwdInBckwd;
    uint32_t tp = 0;      //!< model_parallel_NPU_group; 0 = every rank (SimAI's meaning)
    uint32_t ep = 1;      //!< ep:
    uint32_t pp = 1;      //!< pp: (kept; SimAI's schedule runs one stage)
    uint32_t vpp = 1;     //!< vpp: (kept, not simulated)
    uint32_t ga = 1;      //!< ga: (kept, not simulated)
    uint32_t allGpus = 0; //!< all_gpus:; 0 = not in the header
    uint64_t ppCommBytes = 0; //!< pp_comm (kept, not simulated)
    std::vector<SimaiLayer> layers;
};

/// True if `path` is a regular file whose first word is one of SimAI's parallelism policies
/// (any of them, so a policy gpusim does not run gets ReadSimaiWorkload's error).
bool IsSimaiWorkloadFile(const std::string& path);

/// Parses a workload from `in`; `file` names it in errors. Throws TraceFormatError naming the
/// file, the line and what was wrong (missing or unknown header, bad layer count, wrong column
/// count, non-numeric time or size, unknown communication type, bad checkpoint list).
SimaiWorkload ParseSimaiWorkload(std::istream& in, const std::string& file);
/// Reads and parses a file. Throws TraceFormatError.
SimaiWorkload ReadSimaiWorkload(const std::string& file);

struct SimaiConvertOptions
{
    /// Ranks of the job when the header has no all_gpus (0: the header must give it). When
    /// both are given they must agree.
    uint32_t ranks = 0;
    /// Training passes (SimAI's num_passes; its ns-3 front end runs 1).
    uint32_t passes = 1;
};

/// The global ranks of the group of `g` that `rank` belongs to, in communicator-rank order,
/// for a job of `world` ranks with TP size `tp` (0 = world) and EP size `ep`.
std::vector<uint32_t> SimaiGroupMembers(SimaiGroup g, uint32_t world, uint32_t tp, uint32_t ep,
                                        uint32_t rank);

/// The job of every rank (source "simai"). Throws TraceFormatError (line 1) when the sizes do
/// not divide (all_gpus by the TP size, the DP size by ep) or the job size is unknown.
JobTrace SimaiToJobTrace(const SimaiWorkload& w, const SimaiConvertOptions& opt = {});

/// ReadSimaiWorkload + SimaiToJobTrace.
JobTrace ImportSimai(const std::string& file, const SimaiConvertOptions& opt = {});

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_SIMAI_WORKLOAD_H
