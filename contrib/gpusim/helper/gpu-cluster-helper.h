/*
 * GpuClusterHelper: builds a GPU cluster from a ClusterSpec: one GpuNode per GPU and the
 * ClusterTopology (NVSwitch per server, NICs, fabric) that the network backends read.
 */
#ifndef GPUSIM_GPU_CLUSTER_HELPER_H
#define GPUSIM_GPU_CLUSTER_HELPER_H

#include "ns3/cluster-spec.h"
#include "ns3/cluster-topology.h"
#include "ns3/node-container.h"
#include "ns3/ptr.h"

namespace ns3
{

/**
 * Fabrics (all fabric links run at the NIC speed):
 *  - single-switch: every NIC on one switch;
 *  - leaf-spine: leaves of nicsPerLeaf NICs (server-major NIC order), each leaf linked once to
 *    every spine; spines = ceil(nicsPerLeaf / oversubscription), none when there is one leaf;
 *  - fat-tree: 3-tier k-ary fat-tree, smallest even k with k^3/4 >= NICs;
 *  - rail: NIC i of every server goes to the rail-i leaf of its group of nicsPerLeaf servers;
 *    the leaves share a spine layer sized like leaf-spine.
 * GPU numbering is server-major (gpu = server * gpusPerServer + local); GPU g of a server uses
 * NIC g * nicsPerServer / gpusPerServer over its own PCIe link.
 */
class GpuClusterHelper
{
  public:
    GpuClusterHelper();

    void SetSpec(const gpusim::ClusterSpec& spec);
    const gpusim::ClusterSpec& GetSpec() const;

    /// Validates the spec and builds the topology only (no ns-3 nodes).
    /// Throws std::runtime_error("impossible topology: ...") for a bad spec.
    Ptr<ClusterTopology> BuildTopology() const;

    /// Creates one GpuNode per GPU (server-major order) and builds the topology.
    NodeContainer Create();

    /// The topology built by the last Create() (null before).
    Ptr<ClusterTopology> GetTopology() const;

  private:
    gpusim::ClusterSpec m_spec;       //!< what to build
    Ptr<ClusterTopology> m_topology; //!< built by Create()
};

} // namespace ns3

#endif // GPUSIM_GPU_CLUSTER_HELPER_H
