/*
 * JobPlacement: which GPUs of a shared cluster a job's ranks run on. Schedulers hand out whole
 * servers, so every policy but an explicit list fills a server's free GPUs before the next
 * server (rank r of a TP group stays on one NVLink domain):
 *   packed   servers in order (a job fills its leaf before the next one)
 *   spread   servers round-robin over the leaf switches (a job crosses the spines)
 *   random   servers in a seeded random order (Fisher-Yates over a 64-bit Mersenne twister)
 *   explicit a list of global GPU numbers, rank r on the r-th
 */
#ifndef GPUSIM_JOB_PLACEMENT_H
#define GPUSIM_JOB_PLACEMENT_H

#include "ns3/cluster-topology.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

struct JobPlacement
{
    enum class Policy
    {
        Packed,
        Spread,
        Random,
        Explicit,
    };
    Policy policy = Policy::Packed;
    uint64_t seed = 1;          //!< Random
    std::vector<uint32_t> gpus; //!< Explicit

    /// "packed", "spread", "random", "random:SEED" or a GPU list "0-7,16,17". Throws
    /// std::invalid_argument saying what was wrong.
    static JobPlacement Parse(const std::string& text);
    /// The policy as Parse reads it back.
    std::string ToString() const;
};

/// The leaf switch each server's first NIC attaches to, numbered 0.. in server order (servers
/// without a NIC form their own group). Rail fabrics: the first rail's leaf.
std::vector<uint32_t> ServerLeafGroups(const ClusterTopology& topo);

/// GPUs for a job of `ranks` ranks (result[r] = GPU of rank r) among the free ones: `owner`
/// holds one job name per GPU, "" when free, and gets `job` on the chosen GPUs. Throws
/// std::runtime_error naming `job` when the placement is impossible: a GPU that does not
/// exist, one listed twice or already another job's (named), a list of the wrong length, or
/// too few free GPUs.
std::vector<uint32_t> PlaceJob(const ClusterTopology& topo,
                               const std::string& job,
                               uint32_t ranks,
                               const JobPlacement& placement,
                               std::vector<std::string>& owner);

} // namespace ns3

#endif // GPUSIM_JOB_PLACEMENT_H
