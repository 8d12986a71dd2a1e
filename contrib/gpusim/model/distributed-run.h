/*
 * Distributed runs: ns-3's own distributed simulator (DistributedSimulatorImpl, ns-3's mpi
 * module) across MPI processes. Only when gpusim is built against an ns-3 with MPI
 * (scripts/bootstrap.sh --mpi defines GPUSIM_HAVE_NS3_MPI); otherwise every function here
 * reports one process and does nothing.
 *
 * A program launched by mpirun calls DistributedInit first and DistributedFinalize last. The
 * PacketBackend then partitions its ns-3 network over the processes (see
 * doc/packet-backend.md, "Distributed runs (MPI)"); everything above the network (GPUs,
 * streams, NCCL step graphs) runs identically in every process.
 */
#ifndef GPUSIM_DISTRIBUTED_RUN_H
#define GPUSIM_DISTRIBUTED_RUN_H

#include <cstdint>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// gpusim was built against an ns-3 with its mpi module.
bool DistributedSupported();
/// Starts MPI and ns-3's distributed simulator when the program runs under an MPI launcher
/// with more than one process; returns whether it did. Call before any simulation.
bool DistributedInit(int* argc, char*** argv);
/// Ends what DistributedInit started (no-op otherwise).
void DistributedFinalize();
/// Several MPI processes share the simulation.
bool DistributedEnabled();
uint32_t DistributedRank(); //!< this process (0 when not distributed)
uint32_t DistributedSize(); //!< processes (1 when not distributed)
/// Before every simulation (GpuWorkload and PacketBackend call it): ns-3 3.37's MPI interface
/// frees its receive buffers when a simulator is destroyed; this sets it up again.
void DistributedPrepareSimulation();
/// Element-wise sums over all processes (every process must call with the same size).
void DistributedSum(std::vector<uint64_t>& v);
void DistributedSum(std::vector<double>& v);
/// The largest value over all processes.
int64_t DistributedMax(int64_t v);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_DISTRIBUTED_RUN_H
