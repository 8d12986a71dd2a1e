/*
 * The gpusim command-line front door, as library functions so tests can drive them.
 * Each returns the process exit code: 0 success, 1 usage, 2 bad input, 3 stuck run.
 */
#ifndef GPUSIM_GPUSIM_COMMANDS_H
#define GPUSIM_GPUSIM_COMMANDS_H

#include "ns3/background-traffic.h"
#include "ns3/byte-size.h"
#include "ns3/cli-options.h"
#include "ns3/cluster-topology.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/network-backend.h"

#include <iosfwd>
#include <set>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// Options MakeBackend() and ConfigureNccl() read.
extern const std::set<std::string> kNcclOptions;
/// The network backend chosen by --backend (flow | packet, with --cc, --queue, --mtu ...).
Ptr<NetworkBackend> MakeBackend(const Options& o, Ptr<ClusterTopology> topo);
/// "# distributed: ..." (how a packet network was partitioned over MPI processes), or "".
std::string DistributedLine(Ptr<NetworkBackend> backend);
/// NCCL attributes from --algo, --proto, --channels, --efficiency, --chunk-bytes and
/// --fidelity (`defaultFidelity` when not given: auto, chunk, collective or flows).
void ConfigureNccl(const Options& o, GpuWorkloadHelper& h,
                   const std::string& defaultFidelity = "auto");
/// --ranks all|mirrored|lockstep (`defaultRanks` when not given): mirrored runs ranks that share
/// a representative's op list as its mirrors (GpuWorkload MirrorIdenticalRanks), in classes
/// that see the same network; lockstep in one class per list (MirrorSplitClasses off).
void ConfigureRanks(const Options& o, GpuWorkloadHelper& h, const std::string& defaultRanks);
/// The checked value of --fidelity (auto | chunk | collective | flows); throws UsageError.
std::string FidelityOption(const Options& o, const std::string& defaultFidelity);
/// The "# fidelity: ..." report line (with its newline) of a run at --fidelity `fidelity`:
/// how many collectives ran as edge flows, replayed or chunk by chunk, and why chunk by chunk.
std::string FidelityReportLine(const std::string& fidelity, const NcclWorld::FidelityStats& s);
/// The same as a JSON object: {"mode", "edge_flows", "replayed", "chunk", "chunk_reasons",
/// "conflicts"}.
std::string FidelityJson(const std::string& fidelity, const NcclWorld::FidelityStats& s);
/// A warning on err when shortcuts met traffic that started after them (nothing otherwise).
void WarnFidelityConflicts(const NcclWorld::FidelityStats& s, std::ostream& err);
/// The checked value of --ranks (all | mirrored | lockstep): true unless all; throws UsageError.
bool MirroredRanksOption(const Options& o, const std::string& defaultRanks);
/// The FidelityReportLine on out (with --fidelity collective or flows also the older
/// "# collective fidelity: ..." line), and a warning on err if a shortcut met later traffic.
void PrintFidelityStats(const Options& o, const std::string& defaultFidelity,
                        const GpuWorkload& w, std::ostream& out, std::ostream& err);
/// Cost model and what-ifs from --cost-model, --kernel-table, --scale-kernels; --trace keeps
/// network transfers for the trace.
void ConfigureWorkload(const Options& o, GpuWorkloadHelper& helper);
/// After Simulator::Run(): reports device errors and, for a stuck run, what still waits
/// (returns 3); otherwise writes --json / --trace (returns 0). Disposes the workload and
/// destroys the simulator either way.
/// `extraJson` ("\"key\":value,...") is added to the --json metrics object.
int FinishSimulation(const std::string& command,
                     const Options& o,
                     Ptr<GpuWorkload> w,
                     const RunReport& rep,
                     std::ostream& err,
                     const std::string& extraJson = "");
/// The cluster spec's background traffic (--background, the cluster file's background:
/// section), checked on a cluster of nGpus GPUs; null when there is none. Throws UsageError
/// naming the bad item.
Ptr<BackgroundTraffic> MakeBackgroundTraffic(const ClusterSpec& spec, uint32_t nGpus);
/// The "# background traffic" table: per generator flows, bytes, FCT mean/p50/p99/max.
void PrintBackgroundSummary(std::ostream& out,
                            const std::vector<BackgroundSummary>& summaries,
                            const std::string& title = "background traffic");
/// The per-rank iteration table `simulate` and `run` print.
void PrintIterations(std::ostream& out, const GpuWorkload& w);

/// argv[0] is the subcommand name's first argument (not the program or subcommand name).
int CollectiveCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int SimulateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// gpusim run (live mode, doc/live-mode.md).
int RunCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// Dispatches `gpusim <command> ...`; args excludes the program name.
int GpusimMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// ParseByteSize for the command line: throws UsageError on bad input.
uint64_t ParseBytes(const std::string& s);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_GPUSIM_COMMANDS_H
