/*
 * GpuWorkloadHelper: installs an Op IR job on GPU nodes, ns-3 helper style.
 *
 *   GpuWorkloadHelper workload;
 *   workload.SetBackend(backend);
 *   workload.SetNcclAttribute("Algorithm", StringValue("ring"));
 *   Ptr<GpuWorkload> w = workload.Install(job, gpus);
 *   Simulator::Run();
 *   RunReport r = w->Check();
 */
#ifndef GPUSIM_GPU_WORKLOAD_HELPER_H
#define GPUSIM_GPU_WORKLOAD_HELPER_H

#include "ns3/gpu-workload.h"
#include "ns3/object-factory.h"

#include <memory>
#include <string>

namespace ns3
{

class GpuWorkloadHelper
{
  public:
    GpuWorkloadHelper();

    void SetBackend(Ptr<NetworkBackend> backend);
    Ptr<NetworkBackend> GetBackend() const;
    /// Kernel cost model type (default ns3::RecordedDurationCostModel) and its attributes.
    void SetCostModel(const std::string& type);
    void SetCostModelAttribute(const std::string& name, const AttributeValue& value);
    /// Attributes of ns3::NcclWorld (Algorithm, Protocol, Efficiency, Channels, ...).
    void SetNcclAttribute(const std::string& name, const AttributeValue& value);
    /// Attributes of ns3::GpuWorkload (RecordActivities, RecordTransfers, ...).
    void SetWorkloadAttribute(const std::string& name, const AttributeValue& value);
    /// What-if: scale matching kernels' durations (see KernelCostModel::AddKernelScale).
    void AddKernelScale(const std::string& regex, double factor);

    /// Installs the job and schedules its start at time `start`.
    Ptr<GpuWorkload> Install(std::shared_ptr<const gpusim::JobTrace> job,
                             const NodeContainer& gpus,
                             Time start = Seconds(0),
                             const std::vector<uint32_t>& rankToGpu = {});
    /// Installs a job whose ops arrive while it runs (a LiveJobSource, or a TraceOpFeed
    /// replaying a live run) and schedules its start at `start`.
    Ptr<GpuWorkload> InstallFeed(Ptr<OpFeed> feed,
                                 const NodeContainer& gpus,
                                 Time start = Seconds(0),
                                 const std::vector<uint32_t>& rankToGpu = {});

  private:
    Ptr<KernelCostModel> MakeCostModel() const;

    Ptr<NetworkBackend> m_backend;
    ObjectFactory m_costModel;
    /// Cost-model attributes, set once the model is owned: a setter that throws (a bad kernel
    /// table) would leak an object still under construction in ObjectFactory::Create.
    std::vector<std::pair<std::string, Ptr<AttributeValue>>> m_costModelAttributes;
    ObjectFactory m_world;
    ObjectFactory m_workload;
    std::vector<std::pair<std::string, double>> m_scales;
};

} // namespace ns3

#endif // GPUSIM_GPU_WORKLOAD_HELPER_H
