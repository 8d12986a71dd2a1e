// The star topology and the flat cluster the flow-backend and NCCL tests share.
#ifndef GPUSIM_FLOW_TEST_TOPOLOGY_H
#define GPUSIM_FLOW_TEST_TOPOLOGY_H

#include "ns3/cluster-spec.h"
#include "ns3/cluster-topology.h"
#include "ns3/gpu-cluster-helper.h"

namespace gpusim_test
{

/// n servers of `gpusPerServer` GPUs (one NIC each) on one switch, NICs at `gbps`, 1 us per
/// link: a GPU-to-GPU route is GPU -PCIe-> NIC -> switch -> NIC -PCIe-> GPU.
inline ns3::gpusim::ClusterSpec
FlatSpec(uint32_t servers, double gbps = 100, uint32_t gpusPerServer = 1)
{
    ns3::gpusim::ClusterSpec s;
    s.servers = servers;
    s.gpusPerServer = gpusPerServer;
    s.nicsPerServer = gpusPerServer;
    s.nicGbps = gbps;
    s.fabric = "single-switch";
    s.linkLatencyUs = 1.0;
    return s;
}

/// 4 single-GPU servers, one 100 Gb/s NIC each, 2 NICs per leaf, oversubscription 2: GPUs 0, 1
/// on leaf 0, GPUs 2, 3 on leaf 1, one spine with one 100 Gb/s link per leaf.
inline ns3::gpusim::ClusterSpec
TwoLeavesSpec()
{
    ns3::gpusim::ClusterSpec s;
    s.servers = 4;
    s.gpusPerServer = 1;
    s.nicsPerServer = 1;
    s.nicGbps = 100;
    s.fabric = "leaf-spine";
    s.nicsPerLeaf = 2;
    s.oversubscription = 2;
    return s;
}

/// n single-GPU servers on one switch; NIC links 8 Gb/s = 1e9 B/s, 1 us per hop, so every
/// route is GPU -> NIC -> switch -> NIC -> GPU with 4 us of latency.
inline ns3::Ptr<ns3::ClusterTopology>
StarTopology(uint32_t n)
{
    ns3::gpusim::ClusterSpec s;
    s.servers = n;
    s.gpusPerServer = 1;
    s.nicsPerServer = 1;
    s.nicGbps = 8;
    s.fabric = "single-switch";
    ns3::GpuClusterHelper h;
    h.SetSpec(s);
    return h.BuildTopology();
}

} // namespace gpusim_test

#endif // GPUSIM_FLOW_TEST_TOPOLOGY_H
