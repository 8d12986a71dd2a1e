/*
 * `gpusim replay`: PyTorch profiler (Kineto) traces replayed on the ns-3 engine, compared
 * with the recorded ProfilerStep lengths, with what-ifs (faster kernels, simulated or
 * rescaled data-parallel collectives, dependency ablations). See doc/kineto-replay.md.
 */
#ifndef GPUSIM_REPLAY_COMMAND_H
#define GPUSIM_REPLAY_COMMAND_H

#include "ns3/op-ir.h"

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// How NCCL collectives of a Kineto trace are replayed.
enum class ReplayCommMode : uint8_t
{
    Recorded,  //!< each NCCL kernel takes its recorded duration on its stream (faithful)
    Simulated, //!< collectives run over the network backend with every member present
};

/// Turns a job read by ReadKinetoJob() into the job the engine runs.
///  - Recorded: every Collective becomes a Kernel with the recorded duration that keeps its
///    `comm` (so the breakdown still counts it as communication); CommInit ops are dropped.
///  - Simulated, dataParallel == 0: a single-rank trace of a W-rank job (W = the largest
///    communicator) is expanded into W identical data-parallel replicas; multi-rank input is
///    used as it is.
///  - Simulated, dataParallel == N > 0: rank 0 is replicated into N ranks; communicators
///    spanning the whole recorded job become N-rank ones with the same per-rank payload
///    (AllGather, ReduceScatter and AllToAll buffers, which hold one piece per rank, scale
///    by N / recorded size; AllReduce, Broadcast and Reduce keep their bytes); smaller ones
///    (G ranks) are replicated per group of G (N must be a multiple of G).
/// Throws std::invalid_argument when the job cannot be expanded.
std::shared_ptr<JobTrace> PrepareReplayJob(const JobTrace& job,
                                           ReplayCommMode mode,
                                           uint32_t dataParallel = 0);

/// `gpusim replay TRACE... [options]`; exit codes: 0 ok, 1 usage, 2 bad input, 3 stuck.
int ReplayCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_REPLAY_COMMAND_H
