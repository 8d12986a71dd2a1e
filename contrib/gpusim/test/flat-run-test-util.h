// Runs a job on the flat test cluster, as the importer tests (Chakra, SimAI) compare their
// conversions with closed forms.
#ifndef GPUSIM_TEST_FLAT_RUN_TEST_UTIL_H
#define GPUSIM_TEST_FLAT_RUN_TEST_UTIL_H

#include "flow-test-topology.h"
#include "ns3/double.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <memory>

namespace gpusim_test
{

/// Runs `job` to its end on FlatSpec (single-GPU servers on one switch, 100 Gb/s NICs) with the
/// flow backend and ring collectives at ideal efficiency, so closed forms hold. The workload is
/// the caller's (Check(), Dispose()); the simulator is not destroyed.
inline ns3::Ptr<ns3::GpuWorkload>
RunRingOnFlatSpec(const ns3::gpusim::JobTrace& job)
{
    using namespace ns3;
    GpuClusterHelper cluster;
    cluster.SetSpec(FlatSpec(job.ranks.size()));
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Efficiency", DoubleValue(1));
    h.SetNcclAttribute("Algorithm", StringValue("ring"));
    Ptr<GpuWorkload> w = h.Install(std::make_shared<gpusim::JobTrace>(job), gpus);
    Simulator::Run();
    return w;
}

} // namespace gpusim_test

#endif // GPUSIM_TEST_FLAT_RUN_TEST_UTIL_H
