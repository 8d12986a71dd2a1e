#include "ns3/gpu-workload-helper.h"

#include "ns3/kernel-cost-model.h"

namespace ns3
{

GpuWorkloadHelper::GpuWorkloadHelper()
{
    m_costModel.SetTypeId("ns3::RecordedDurationCostModel");
    m_world.SetTypeId("ns3::NcclWorld");
    m_workload.SetTypeId("ns3::GpuWorkload");
}

void
GpuWorkloadHelper::SetBackend(Ptr<NetworkBackend> backend)
{
    m_backend = backend;
}

Ptr<NetworkBackend>
GpuWorkloadHelper::GetBackend() const
{
    return m_backend;
}

void
GpuWorkloadHelper::SetCostModel(const std::string& type)
{
    TypeId tid;
    // Validate here: Debian's ns-3 has asserts off and an unknown TypeId would crash later.
    if (!TypeId::LookupByNameFailSafe(type, &tid) ||
        !tid.IsChildOf(KernelCostModel::GetTypeId()))
    {
        throw std::invalid_argument("unknown kernel cost model '" + type + "'");
    }
    m_costModel.SetTypeId(tid);
}

void
GpuWorkloadHelper::SetCostModelAttribute(const std::string& name, const AttributeValue& value)
{
    m_costModelAttributes.emplace_back(name, value.Copy());
}

void
GpuWorkloadHelper::SetNcclAttribute(const std::string& name, const AttributeValue& value)
{
    m_world.Set(name, value);
}

void
GpuWorkloadHelper::SetWorkloadAttribute(const std::string& name, const AttributeValue& value)
{
    m_workload.Set(name, value);
}

void
GpuWorkloadHelper::AddKernelScale(const std::string& regex, double factor)
{
    m_scales.push_back({regex, factor});
}

Ptr<GpuWorkload>
GpuWorkloadHelper::Install(std::shared_ptr<const gpusim::JobTrace> job,
                           const NodeContainer& gpus,
                           Time start,
                           const std::vector<uint32_t>& rankToGpu)
{
    Ptr<NcclWorld> world = m_world.Create<NcclWorld>();
    Ptr<GpuWorkload> w = m_workload.Create<GpuWorkload>();
    w->Install(std::move(job), gpus, m_backend, MakeCostModel(), world, rankToGpu);
    w->Start(start);
    return w;
}

Ptr<GpuWorkload>
GpuWorkloadHelper::InstallFeed(Ptr<OpFeed> feed,
                               const NodeContainer& gpus,
                               Time start,
                               const std::vector<uint32_t>& rankToGpu)
{
    Ptr<NcclWorld> world = m_world.Create<NcclWorld>();
    Ptr<GpuWorkload> w = m_workload.Create<GpuWorkload>();
    w->InstallFeed(feed, gpus, m_backend, MakeCostModel(), world, rankToGpu);
    w->Start(start);
    return w;
}

Ptr<KernelCostModel>
GpuWorkloadHelper::MakeCostModel() const
{
    Ptr<KernelCostModel> cost = m_costModel.Create<KernelCostModel>();
    for (const auto& [name, value] : m_costModelAttributes)
    {
        cost->SetAttribute(name, *value);
    }
    for (const auto& [re, f] : m_scales)
    {
        cost->AddKernelScale(re, f);
    }
    return cost;
}

} // namespace ns3
