#include "ns3/gpu-node.h"

#include "ns3/log.h"
#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("GpuNode");
NS_OBJECT_ENSURE_REGISTERED(GpuNode);

TypeId
GpuNode::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::GpuNode")
            .SetParent<Node>()
            .SetGroupName("Gpusim")
            .AddConstructor<GpuNode>()
            .AddAttribute("GpuIndex",
                          "Global GPU index in the cluster",
                          UintegerValue(0),
                          MakeUintegerAccessor(&GpuNode::m_gpuIndex),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("SlowdownFactor",
                          "Straggler: kernels starting at or after SlowdownStart take this "
                          "many times their modelled duration (a clock drop to 1/factor; "
                          "1 = nominal)",
                          DoubleValue(1.0),
                          MakeDoubleAccessor(&GpuNode::m_slowdown),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("SlowdownStart",
                          "When SlowdownFactor takes effect (simulated time)",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&GpuNode::m_slowdownStart),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("MemoryUsed",
                            "Bytes of device memory allocated",
                            MakeTraceSourceAccessor(&GpuNode::m_memoryUsed),
                            "ns3::TracedValueCallback::Uint64");
    return tid;
}

Time
GpuNode::KernelTime(Time modelled) const
{
    if (m_slowdown == 1.0 || Simulator::Now() < m_slowdownStart)
    {
        return modelled;
    }
    return NanoSeconds(std::llround(double(modelled.GetNanoSeconds()) * m_slowdown));
}

bool
GpuNode::IsStraggler() const
{
    return m_slowdown != 1.0;
}

GpuNode::GpuNode()
    : m_memoryUsed(0)
{
}

GpuNode::~GpuNode() = default;

void
GpuNode::SetSpec(const gpusim::GpuSpec& spec)
{
    m_spec = spec;
}

const gpusim::GpuSpec&
GpuNode::GetSpec() const
{
    return m_spec;
}

uint32_t
GpuNode::GetGpuIndex() const
{
    return m_gpuIndex;
}

void
GpuNode::SetGpuIndex(uint32_t i)
{
    m_gpuIndex = i;
}

uint32_t
GpuNode::GetServer() const
{
    return m_server;
}

void
GpuNode::SetServer(uint32_t s)
{
    m_server = s;
}

uint32_t
GpuNode::GetLocalIndex() const
{
    return m_localIndex;
}

void
GpuNode::SetLocalIndex(uint32_t i)
{
    m_localIndex = i;
}

bool
GpuNode::Allocate(uint64_t bytes)
{
    if (m_memoryUsed.Get() + bytes > m_spec.memoryBytes)
    {
        NS_LOG_INFO("GPU " << m_gpuIndex << ": out of memory allocating " << bytes << " bytes");
        return false;
    }
    m_memoryUsed = m_memoryUsed.Get() + bytes;
    m_peakMemory = std::max<uint64_t>(m_peakMemory, m_memoryUsed.Get());
    return true;
}

void
GpuNode::Release(uint64_t bytes)
{
    m_memoryUsed = bytes > m_memoryUsed.Get() ? 0 : m_memoryUsed.Get() - bytes;
}

uint64_t
GpuNode::GetMemoryUsed() const
{
    return m_memoryUsed.Get();
}

uint64_t
GpuNode::GetPeakMemoryUsed() const
{
    return m_peakMemory;
}

} // namespace ns3
