#include "ns3/kernel-cost-model.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
            .AddAttribute("AttentionEfficiency",
                          "Model FLOP/s of fused attention forward kernels as a fraction of "
                          "peak; 0: the GPU's measured value (GpuSpec::attentionEfficiency), "
                          "else ComputeEfficiency",
                          DoubleValue(0.0),
                          MakeDoubleAccessor(&KernelCostModel::m_attentionEfficiency),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("AttentionBackwardEfficiency",
                          "Model FLOP/s (2 x the forward's FLOPs) of fused attention backward "
                          "kernels as a fraction of peak; 0: the GPU's measured value "
                          "(GpuSpec::attentionBackwardEfficiency), else ComputeEfficiency",
                          DoubleValue(0.0),
                          MakeDoubleAccessor(&KernelCostModel::m_attentionBackwardEfficiency),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("MemoryEfficiency",
                          "Fraction of HBM bandwidth that memory-bound kernels reach",
                          DoubleValue(0.8),
                          MakeDoubleAccessor(&KernelCostModel::m_memoryEfficiency),
                          MakeDoubleChecker<double>(1e-6, 1.0))
            .AddAttribute("MinKernelUs",
                          "Smallest kernel duration in microseconds (launch and tail)",
                          DoubleValue(2.0),
                          MakeDoubleAccessor(&KernelCostModel::m_minKernelUs),
                          MakeDoubleChecker<double>(0.0))
            .AddAttribute("GemmShapeModel",
                          "FP16/BF16/FP8 GEMMs with a shape, on a GPU with a GEMM tile efficiency "
                          "(GpuSpec::gemmTileEfficiency): compute time from output tiles and "
                          "waves over the SMs instead of ComputeEfficiency",
                          BooleanValue(false),
                          MakeBooleanAccessor(&KernelCostModel::m_gemmShapeModel),
                          MakeBooleanChecker())
            .AddAttribute("MeasuredGemms",
                          "FP16/BF16/FP8 GEMMs with a shape, on a GPU with timed GEMMs "
                          "(GpuSpec::gemmTable): the efficiency of the measured shapes near it "
                          "(GpuSpec::MeasuredGemmEfficiency; FP8 times the GPU's FP8 / 16-bit "
                          "ratio) instead of ComputeEfficiency",
                          BooleanValue(false),
                          MakeBooleanAccessor(&KernelCostModel::m_measuredGemms),
                          MakeBooleanChecker());
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

const std::vector<KernelCostModel::GemmTile>&
KernelCostModel::GemmTiles()
{
    // cuBLAS cuts C into thread-block tiles, 256 x 128 the largest for 16-bit data on A100
    // (NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001, sections 2.3 and
    // 3: tile and wave quantization). A tile's main loop streams (tm + tn) tk operands into
    // its SM for tm tn tk multiply-adds, so a smaller tile gets fewer FLOPs per byte fed:
    // throughput relative to 256 x 128 is taken as the ratio of tm tn / (tm + tn), assuming
    // 256 x 128 is just fed at the measured peak (the guide: larger tiles are more efficient,
    // smaller ones fill more SMs).
    static const std::vector<GemmTile> tiles = [] {
        const std::vector<std::pair<uint32_t, uint32_t>> shapes = {
            {256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
        const double big = 256.0 * 128 / (256 + 128);
        std::vector<GemmTile> v;
        for (const auto& [m, n] : shapes)
        {
            v.push_back({m, n, std::min(1.0, double(m) * n / (m + n) / big)});
        }
        return v;
    }();
    return tiles;
}

double
KernelCostModel::GemmShapeSeconds(const gpusim::GemmShape& g, const gpusim::GpuSpec& spec)
{
    if (spec.gemmTileEfficiency <= 0 || spec.smCount == 0 || g.m == 0 || g.n == 0 || g.k == 0)
    {
        return 0;
    }
    const bool fp8 = g.dtype == gpusim::DataType::F8E4M3 || g.dtype == gpusim::DataType::F8E5M2;
    const double relative =
        fp8 && spec.fp8GemmRelativeEfficiency > 0 ? spec.fp8GemmRelativeEfficiency : 1;
    const double smPeak =
        spec.PeakFlops(g.dtype) / spec.smCount * spec.gemmTileEfficiency * relative;
    const uint64_t batch = std::max<uint64_t>(1, g.batch);
    // SMs left to a concurrent kernel (Op::gemm.smMargin): fewer tiles per wave.
    const uint64_t sms = spec.smCount - std::min(g.smMargin, spec.smCount - 1);
    double best = std::numeric_limits<double>::infinity();
    for (const GemmTile& t : GemmTiles())
    {
        const uint64_t tiles = ((g.m + t.m - 1) / t.m) * ((g.n + t.n - 1) / t.n) * batch;
        const uint64_t waves = (tiles + sms - 1) / sms;
        const double tileSeconds = 2.0 * t.m * t.n * double(g.k) / (smPeak * t.relative);
        best = std::min(best, double(waves) * tileSeconds);
    }
    return best;
}

bool
KernelCostModel::IsFusedAttention(const std::string& name, bool& backward)
{
    // The generator's fused kernels (not its unfused attention_scores / attention_values
    // GEMMs), and recorded flash / fmha kernels.
    const bool attention = name == "attention" || name == "attention_bwd" ||
                           name.compare(0, 13, "attention_cp_") == 0 ||
                           name.compare(0, 17, "attention_bwd_cp_") == 0 ||
                           name.find("flash") != std::string::npos ||
                           name.find("fmha") != std::string::npos;
    backward = attention && (name.find("bwd") != std::string::npos ||
                             name.find("backward") != std::string::npos);
    return attention;
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
        case MemcpyKind::PeerToPeer:
            if (op.staged)
            {
                // Out through one GPU's PCIe link into host memory and in through the other's.
                return kCopySetupUs * 1e-6 +
                       op.bytes / (spec.pcieBytesPerSec * kStagedPeerPcieFraction);
            }
            [[fallthrough]];
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
        bool unusedBackward = false;
        if (bytes <= 0 && !IsFusedAttention(op.name, unusedBackward))
        {
            // A GEMM's A, B and C once each (a fused attention's shape is its geometry: it
            // never writes the m x n scores).
            bytes = (double(g.m) * g.k + double(g.k) * g.n + double(g.m) * g.n) * elem * g.batch;
        }
    }
    double t = m_minKernelUs * 1e-6;
    const bool half = dtype == gpusim::DataType::F16 || dtype == gpusim::DataType::BF16;
    const bool fp8 = dtype == gpusim::DataType::F8E4M3 || dtype == gpusim::DataType::F8E5M2;
    // Fused attention carries FLOPs, and from the generator its geometry in the shape (query
    // and key tokens, head dim): not a GEMM.
    bool backward = false;
    const bool attention = flops > 0 && IsFusedAttention(op.name, backward);
    const double shaped = !attention && m_gemmShapeModel && (half || fp8) && op.gemm.m
                              ? GemmShapeSeconds(op.gemm, spec)
                              : 0;
    if (shaped > 0)
    {
        t = std::max(t, shaped);
    }
    else if (flops > 0)
    {
        double efficiency = m_computeEfficiency;
        if (!attention && m_measuredGemms && (half || fp8) && op.gemm.m)
        {
            const double measured = spec.MeasuredGemmEfficiency(op.gemm.m, op.gemm.n, op.gemm.k);
            efficiency = measured > 0 ? measured : efficiency;
        }
        if (attention)
        {
            // The attribute, else the GPU's measurement for this head dim and key length, else
            // its one measured number, else ComputeEfficiency.
            const double own = backward ? m_attentionBackwardEfficiency : m_attentionEfficiency;
            const double byShape =
                op.gemm.n ? spec.AttentionEfficiency(op.gemm.k, op.gemm.n, backward) : 0;
            const double gpu =
                backward ? spec.attentionBackwardEfficiency : spec.attentionEfficiency;
            efficiency = own > 0 ? own : byShape > 0 ? byShape : gpu > 0 ? gpu : efficiency;
        }
        else if (fp8 && op.gemm.m && spec.fp8GemmRelativeEfficiency > 0)
        {
            // An FP8 GEMM: the 16-bit efficiency scaled by the GPU's measured FP8 / 16-bit
            // ratio (gpu-spec.cc), at the FP8 peak.
            efficiency *= spec.fp8GemmRelativeEfficiency;
        }
        // A GEMM that leaves SMs to a concurrent kernel (Op::gemm.smMargin) computes at the
        // share of the peak its SMs have.
        const double smShare =
            op.gemm.smMargin && spec.smCount > 1 && !attention
                ? double(spec.smCount - std::min(op.gemm.smMargin, spec.smCount - 1)) /
                      spec.smCount
                : 1.0;
        t = std::max(t, flops / (spec.PeakFlops(dtype) * efficiency * smShare));
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
