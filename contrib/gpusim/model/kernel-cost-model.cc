#include "ns3/kernel-cost-model.h"

#include "ns3/double.h"
#include "ns3/log.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("KernelCostModel");
NS_OBJECT_ENSURE_REGISTERED(KernelCostModel);
NS_OBJECT_ENSURE_REGISTERED(RecordedDurationCostModel);
NS_OBJECT_ENSURE_REGISTERED(RooflineCostModel);

using gpusim::MemcpyKind;
using gpusim::Op;
using gpusim::OpKind;

TypeId
KernelCostModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::KernelCostModel")
            .SetParent<Object>()
            .SetGroupName("Gpusim")
            .AddAttribute("ComputeEfficiency",
                          "Fraction of peak FLOP/s that GEMM-like kernels reach",
                          DoubleValue(0.7),
                          MakeDoubleAccessor(&KernelCostModel::m_computeEfficiency),
                          MakeDoubleChecker<double>(1e-6, 1.0))
            .AddAttribute("MemoryEfficiency",
                          "Fraction of HBM bandwidth that memory-bound kernels reach",
                          DoubleValue(0.8),
                          MakeDoubleAccessor(&KernelCostModel::m_memoryEfficiency),
                          MakeDoubleChecker<double>(1e-6, 1.0))
            .AddAttribute("MinKernelUs",
                          "Smallest kernel duration in microseconds (launch and tail)",
                          DoubleValue(2.0),
                          MakeDoubleAccessor(&KernelCostModel::m_minKernelUs),
                          MakeDoubleChecker<double>(0.0));
    return tid;
}

KernelCostModel::KernelCostModel() = default;
KernelCostModel::~KernelCostModel() = default;

void
KernelCostModel::AddKernelScale(const std::string& regex, double factor)
{
    m_scales.push_back({std::regex(regex), factor});
    m_scaleByName.clear();
}

Time
KernelCostModel::GetDuration(const Op& op, const gpusim::GpuSpec& spec) const
{
    double s = DoGetSeconds(op, spec);
    if (op.kind == OpKind::Kernel && !m_scales.empty())
    {
        auto it = m_scaleByName.find(op.name);
        if (it == m_scaleByName.end())
        {
            double factor = 1;
            for (const auto& rule : m_scales)
            {
                if (std::regex_search(op.name, rule.re))
                {
                    factor *= rule.factor;
                }
            }
            it = m_scaleByName.emplace(op.name, factor).first;
        }
        s *= it->second;
    }
    return NanoSeconds(static_cast<int64_t>(std::llround(std::max(0.0, s) * 1e9)));
}

double
KernelCostModel::RooflineSeconds(const Op& op, const gpusim::GpuSpec& spec) const
{
    const double hbm = spec.hbmBytesPerSec * m_memoryEfficiency;
    switch (op.kind)
    {
    case OpKind::Memcpy:
        switch (op.copyKind)
        {
        case MemcpyKind::HostToDevice:
        case MemcpyKind::DeviceToHost:
        case MemcpyKind::HostToHost:
        case MemcpyKind::Default:
            return kCopySetupUs * 1e-6 + op.bytes / spec.pcieBytesPerSec;
        default:
            // d2d, and p2p copies without their ranks (or without a network): read + write
            // through HBM. Peer copies with ranks cross the network (CudaContext::StartPeerCopy).
            return kCopySetupUs * 1e-6 + 2.0 * op.bytes / hbm;
        }
    case OpKind::Memset:
        return kCopySetupUs * 1e-6 + op.bytes / hbm;
    default:
        break;
    }
    double flops = op.flops;
    double bytes = op.memBytes;
    gpusim::DataType dtype = gpusim::DataType::BF16;
    if (op.gemm.m)
    {
        const auto& g = op.gemm;
        dtype = g.dtype;
        const double elem = gpusim::DataTypeSize(g.dtype);
        if (flops <= 0)
        {
            flops = 2.0 * g.m * g.n * g.k * g.batch;
        }
        if (bytes <= 0)
        {
            bytes = (double(g.m) * g.k + double(g.k) * g.n + double(g.m) * g.n) * elem * g.batch;
        }
    }
    double t = m_minKernelUs * 1e-6;
    if (flops > 0)
    {
        t = std::max(t, flops / (spec.PeakFlops(dtype) * m_computeEfficiency));
    }
    if (bytes > 0)
    {
        t = std::max(t, bytes / hbm);
    }
    return t;
}

TypeId
RecordedDurationCostModel::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RecordedDurationCostModel")
                            .SetParent<KernelCostModel>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<RecordedDurationCostModel>();
    return tid;
}

double
RecordedDurationCostModel::DoGetSeconds(const Op& op, const gpusim::GpuSpec& spec) const
{
    if (op.durUs >= 0)
    {
        return op.durUs * 1e-6;
    }
    return RooflineSeconds(op, spec);
}

TypeId
RooflineCostModel::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RooflineCostModel")
                            .SetParent<KernelCostModel>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<RooflineCostModel>();
    return tid;
}

double
RooflineCostModel::DoGetSeconds(const Op& op, const gpusim::GpuSpec& spec) const
{
    return RooflineSeconds(op, spec);
}

} // namespace ns3
