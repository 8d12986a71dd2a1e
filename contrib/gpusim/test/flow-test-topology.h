// The star topology the flow-backend tests share.
#ifndef GPUSIM_FLOW_TEST_TOPOLOGY_H
#define GPUSIM_FLOW_TEST_TOPOLOGY_H

#include "ns3/cluster-spec.h"
#include "ns3/cluster-topology.h"
#include "ns3/gpu-cluster-helper.h"

namespace gpusim_test
{

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
