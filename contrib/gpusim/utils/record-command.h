/*
 * `gpusim record`: runs an unmodified CUDA/NCCL program on the gpusim shim as N ranks and
 * leaves a gpusim trace directory (doc/record-simulate.md). Also the shim-trace preparation
 * `gpusim simulate` applies (query syncs) and its deduplication summary.
 */
#ifndef GPUSIM_RECORD_COMMAND_H
#define GPUSIM_RECORD_COMMAND_H

#include "ns3/gpu-workload-helper.h"
#include "ns3/op-ir.h"
#include "ns3/program-launcher.h" // FindShimLibDir

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// gpusim record [--preset NAME] [--gpus N] [--out DIR] [--timeout S] -- PROGRAM ARGS...
/// Exit codes: 0 recorded, 1 usage, 2 the program failed (non-zero exit, signal, no trace) or
/// the shim is missing, 3 timed out, 128 + signal when interrupted (SIGINT/SIGTERM).
int RecordCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);


/// How `query: true` syncs (recorded from cudaStreamQuery / cudaEventQuery) are simulated.
enum class QuerySyncPolicy
{
    Wait,   //!< as the synchronize they stand for (default: the program went on as if done)
    Ignore, //!< as host time only (opportunistic polls that did not wait)
};

/// Parses "wait" / "ignore". Returns false on anything else.
bool ParseQuerySyncPolicy(const std::string& s, QuerySyncPolicy& out);

/// Applies the policy to a job; returns how many query syncs it changed or kept (an op list
/// shared by identical ranks counts once).
uint64_t ApplyQuerySyncPolicy(JobTrace& job, QuerySyncPolicy policy);

/// What `gpusim simulate` does to a trace directory before installing it: read it (identical
/// ranks sharing one op list unless `share` is false), validate, apply the query-sync policy
/// and group the ranks. `summary` receives "# N ranks, K distinct op streams[; S share ...]\n".
/// `dir` may also be a Chakra ET trace or a SimAI workload file; `simaiRanks` is the job size
/// for a SimAI file whose header has no all_gpus. Throws TraceFormatError on a bad trace.
std::shared_ptr<JobTrace> LoadJobForSimulation(const std::string& dir,
                                               bool share,
                                               QuerySyncPolicy policy,
                                               std::string& summary,
                                               uint32_t simaiRanks = 0);

/// Makes the helper cost kernels from a measured table (ProfileTableCostModel); with
/// `useRecorded`, kernels missing from it use their recorded dur_us before the roofline.
void UseKernelTable(GpuWorkloadHelper& helper, const std::string& file, bool useRecorded);

/// "# kernel table: H of L kernel launches measured\n" when the workload's cost model is a
/// table, else "".
std::string KernelTableSummary(const GpuWorkload& workload);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_RECORD_COMMAND_H
