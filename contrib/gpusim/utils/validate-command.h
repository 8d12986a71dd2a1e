/*
 * gpusim validate: the NCCL model against published nccl-tests results.
 *
 * Reads a JSON file in the shape of ../shared/data/nccl-tests/published.json
 * ({"tables": [{"id", "op", "hardware", "source", "rows": [{"bytes", "time_us", ...}]}]}),
 * simulates every table's collective on its cluster at its sizes with the default (auto)
 * algorithm selection, and reports the per-size error of the time, with median and worst
 * |error| per table and over all tables. Writes the report as JSON, as a Markdown table
 * (doc/validation.md) and as an SVG plot of measured vs simulated bus bandwidth, one panel per
 * table.
 *
 * A table names its cluster with an optional "cluster" object (the keys of a cluster YAML
 * file: {"preset": "dgx-h100", "servers": 2, ...}); without one the cluster is read from the
 * "hardware" text the way a reader would: the GPU (H100, H200, A100 -> the matching DGX
 * preset), "N nodes", "G x <GPU>" and "K x ... X Gb/s" NICs (K > G NICs, as on AWS p5, become
 * G NICs of K/G x X Gb/s: the same bandwidth per GPU). The same rules apply to every table; the
 * report prints the cluster each table ran on.
 *
 * Each row's simulated time is at least the host time of one iteration of nccl-tests' loop:
 * one NCCL call queued and one kernel launched per GPU that the table's thread drives (its
 * "-g G" in the hardware text), at the costs the shim charges in live mode (nccl-host-cost.h).
 *
 * Ops and sizes follow nccl-tests: "size" is the per-rank buffer of allreduce, broadcast,
 * reduce, sendrecv and alltoall, and the total (gathered / to-be-scattered) buffer of allgather
 * and reducescatter; busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for allgather,
 * reducescatter and alltoall, x 1 otherwise.
 */
#ifndef GPUSIM_VALIDATE_COMMAND_H
#define GPUSIM_VALIDATE_COMMAND_H

#include "ns3/cluster-spec.h"
#include "ns3/op-ir.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

struct ValidationRow
{
    uint64_t bytes = 0;
    double measuredUs = 0;
    double simulatedUs = 0;
    double errorPct = 0; //!< (simulated - measured) / measured x 100
    std::string algo;
    std::string proto;
    uint32_t channels = 0;
    std::string path; //!< how its collective ran (CollectivePath; empty for sendrecv)
    /// Host time one iteration of nccl-tests' loop needs: its thread's NCCL calls for each of
    /// its GPUs (ValidationTable::gpusPerThread). The simulated time is at least this much.
    double hostUs = 0;
    bool hostBound = false; //!< the host, not the GPUs, set the simulated time
};

struct ValidationTable
{
    std::string id;
    std::string op;
    std::string hardware;
    std::string source;
    CollKind kind = CollKind::AllReduce;
    bool sendrecv = false; //!< nccl-tests sendrecv_perf (a ring of send/recv pairs)
    DataType dtype = DataType::F32;
    ClusterSpec spec;
    std::string clusterFrom; //!< "cluster object" or "hardware text"
    /// GPUs one nccl-tests thread drives (its -g option, read from the hardware text: "-g 4";
    /// 1 when not stated). Each iteration that thread enqueues one call per GPU and launches
    /// every GPU's kernel in turn.
    uint32_t gpusPerThread = 1;
    std::vector<ValidationRow> rows;

    uint32_t Ranks() const;
    /// "allreduce", "allgather", ..., or "sendrecv".
    std::string OpLabel() const;
    /// nccl-tests bus bandwidth (GB/s) of `bytes` moved in `us`.
    double BusGBps(uint64_t bytes, double us) const;
    double MedianAbsError() const;
    double WorstAbsError() const;
};

/// Reads the tables of `file` with their rows in [minBytes, maxBytes] (all tables, or the one
/// whose id is `only`). Throws std::runtime_error naming the file and table on bad input.
std::vector<ValidationTable> ReadValidationTables(const std::string& file, uint64_t minBytes,
                                                  uint64_t maxBytes, const std::string& only);

/// The op of a table: gpusim's names (allreduce, allgather, reducescatter, alltoall, broadcast,
/// reduce) or nccl-tests' (all_gather_perf, reduce_scatter, ...), plus sendrecv; false if unknown.
bool ParseValidationOp(const std::string& op, CollKind& kind, bool& sendrecv);

/// The cluster a table's "hardware" text describes (see the header comment); throws
/// std::runtime_error when the GPU or the node count cannot be read.
ClusterSpec ClusterFromHardware(const std::string& hardware, const std::string& id);

/// GPUs one nccl-tests thread drives, as a hardware text states its -g option ("-g 4"); 1 when
/// it does not.
uint32_t GpusPerThreadFromHardware(const std::string& hardware);

/// Host time (us) of one nccl-tests iteration on a thread driving `gpusPerThread` GPUs: per GPU
/// `callsPerGpu` NCCL calls queued and one kernel launched (nccl-host-cost.h; the shim charges
/// the same per call in live mode).
double NcclTestsHostUsPerIteration(uint32_t gpusPerThread, uint32_t callsPerGpu);

/// Median and worst |error| over the rows of all tables.
void OverallErrors(const std::vector<ValidationTable>& tables, double& median, double& worst);

std::string ValidationMarkdown(const std::vector<ValidationTable>& tables,
                               const std::string& command);
/// `fidelityJson` (optional): the run's FidelityJson object, as "fidelity".
std::string ValidationJson(const std::vector<ValidationTable>& tables,
                           const std::string& fidelityJson = "");
/// Measured (points) vs simulated (line) bus bandwidth per size, one panel per table.
std::string ValidationSvg(const std::vector<ValidationTable>& tables);

/// gpusim validate FILE [--table ID] [--min-bytes B] [--max-bytes B] [NCCL options]
///                 [--json FILE] [--markdown FILE] [--svg FILE]
int ValidateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_VALIDATE_COMMAND_H
