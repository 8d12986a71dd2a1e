/*
 * Mirror classes (GpuWorkload MirrorIdenticalRanks, doc/flow-backend.md "Mirrored ranks"):
 * which ranks may stand in for one another. Ranks running one op list are split until the
 * members of a class see the same network: the same flows on the links of their sends and
 * ring edges (ECMP choices included) and communicators whose members are themselves in equal
 * classes. A replica whose flows share a spine link differently from another's, with every
 * rank coupled to it through a communicator (its TP group, its pipeline), then runs its own
 * copy of the list instead of moving in lockstep with replicas that would drift apart.
 */
#ifndef GPUSIM_MIRROR_CLASSES_H
#define GPUSIM_MIRROR_CLASSES_H

#include "ns3/cluster-topology.h"
#include "ns3/cuda-context.h"
#include "ns3/op-ir.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <vector>

namespace ns3
{

/// The representative of each rank: itself when it runs its own ops, else the lowest rank of
/// its class (which runs them). `listOf[r]` is the owner of the op list rank r may mirror, or
/// -1 when it must run on its own; only ranks with the same owner can share a class. Classes
/// are refined (colour refinement over ranks, links and communicators) until stable: two
/// ranks stay together only if their flows cross links carrying the same classes of flows,
/// hop by hop, and each of their communicators (by the list's names) has members of the same
/// classes. Flows: point-to-point sends and the edge flows of rings across servers
/// (`ringChannels` rings, 0: as many as a server's most members). The ranks of a one-server
/// communicator of one list (a TP group) form a block that is compared, and kept, as a whole.
/// `topology` null: only the list and the communicators decide. Refinement stops before a
/// round that would give one list more than `maxClasses` classes (0: no limit), so the number
/// of representatives, and the cost, stay bounded.
std::vector<uint32_t> SplitMirrorClasses(const gpusim::JobTrace& job,
                                         const std::vector<Ptr<CudaContext>>& contexts,
                                         const std::vector<int32_t>& listOf,
                                         Ptr<ClusterTopology> topology,
                                         uint32_t ringChannels = 0,
                                         uint32_t maxClasses = 0);

} // namespace ns3

#endif // GPUSIM_MIRROR_CLASSES_H
