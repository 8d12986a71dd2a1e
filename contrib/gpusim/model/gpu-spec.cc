#include "ns3/gpu-spec.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace ns3
{
namespace gpusim
{

double
GpuSpec::PeakFlops(DataType t) const
{
    auto it = peakFlops.find(t);
    if (it != peakFlops.end())
    {
        return it->second;
    }
    it = peakFlops.find(DataType::F32);
    if (it != peakFlops.end())
    {
        return it->second;
    }
    double best = 0;
    for (const auto& [dtype, flops] : peakFlops)
    {
        best = std::max(best, flops);
    }
    return best;
}

bool
GpuSpec::HasFp8() const
{
    return peakFlops.count(DataType::F8E4M3) > 0;
}

bool
LookupGpuSpec(const std::string& model, GpuSpec& out)
{
    // Dense (no sparsity) peaks from NVIDIA's datasheets: H100 Tensor Core GPU datasheet
    // (SXM5 column; TF32 989 TFLOPS is quoted with sparsity, 494.5 dense), A100 Tensor Core GPU
    // datasheet (TF32 156, 312 with sparsity).
    if (model == "h100-sxm" || model == "h100")
    {
        GpuSpec s;
        s.name = "NVIDIA H100 80GB HBM3";
        s.arch = "sm_90";
        s.ccMajor = 9;
        s.ccMinor = 0;
        s.smCount = 132;
        s.memoryBytes = 80ull << 30;
        s.hbmBytesPerSec = 3.35e12;
        s.pcieBytesPerSec = 64e9; // PCIe Gen5 x16
        s.peakFlops = {{DataType::F64, 67e12},
                       {DataType::F32, 67e12},     // FP32 non-tensor
                       {DataType::TF32, 494.5e12}, // TF32 tensor (datasheet 989 with sparsity)
                       {DataType::F16, 989.5e12},
                       {DataType::BF16, 989.5e12},
                       {DataType::F8E4M3, 1979e12},
                       {DataType::F8E5M2, 1979e12},
                       {DataType::I8, 1979e12}};
        // GEMM shape model (kernel-cost-model.cc, doc/validation.md): the per-tile efficiency
        // that reproduces the measured maximum achievable BF16 matmul, 794.5 TFLOP/s at
        // M x N x K = 2048 x 2048 x 13312 (S. Bekman, ml-engineering, compute/accelerator
        // "Maximum Achievable Matmul FLOPS comparison table", H100 SXM, torch 2.7.0+cu126).
        // That shape is 8 x 16 = 128 tiles of 256 x 128 on 132 SMs: one wave, 128/132 full.
        s.gemmTileEfficiency = 794.5e12 / (989.5e12 * 128.0 / 132.0); // 0.828
        // FP8 GEMMs: the same table's FP8 (float8_e4m3fn) row for the H100 SXM, same torch
        // 2.7.0+cu126: 1402.6 TFLOP/s at 1024 x 9216 x 14336, 0.709 of the 1979 TFLOP/s FP8
        // peak against BF16's 794.5 / 989.5 = 0.803 (ml-engineering at commit 744d01e1,
        // compute/accelerator/README.md). FP8 GEMMs reach 0.883 of BF16's efficiency (1.765 x
        // its throughput): the roofline prices them at ComputeEfficiency x 0.883 of the FP8
        // peak (0.618 with the default 0.7: 1223 TFLOP/s), the shape model at 0.828 x 0.883 =
        // 0.731 per tile. Not derived like gemmTileEfficiency from the FP8 maximum's own shape:
        // 288 tiles of 256 x 128 in 3 waves of 132 (288/396 full) would need 1402.6 / (1979 x
        // 288/396) = 0.975 per tile, and the H200 row of the same table (1453.4 TFLOP/s at
        // 1280 x 4096 x 12032, 160 tiles in 2 waves) 1.21 > 1: the six-tile wave model does
        // not describe cuBLAS's Hopper FP8 kernels at those shapes, so the ratio of the two
        // maxima carries over instead.
        s.fp8GemmRelativeEfficiency = (1402.6e12 / 1979e12) / (794.5e12 / 989.5e12); // 0.883
        // Fused attention as PyTorch runs it (scaled_dot_product_attention, causal, bf16),
        // measured on an H100 80GB HBM3 with torch 2.11.0+cu130 (bench/device/gpt-layer.py;
        // results in contrib/gpusim/test/data/h100/, doc/validation.md "Kernels on a real
        // H100"): head dims 80, 128, 128 at 8192, 4096, 2048 tokens of 2048, two runs. Model
        // FLOP/s over the peak, median of the six: forward 0.341 (0.28 - 0.40), backward
        // 0.217 (0.20 - 0.25). FlashAttention-3's paper (Shah et al. 2024) gives
        // FlashAttention-2 about 35 % of an H100's peak, as here; FlashAttention-3 itself runs
        // about twice as fast (set the cost model's attributes for it). These two price fused
        // attention kernels that carry no geometry; generated ones use attentionTable below.
        s.attentionEfficiency = 0.341;
        s.attentionBackwardEfficiency = 0.217;
        // The same kernel on contiguous q, k, v (as Megatron-Core / Transformer Engine hand
        // them over), 16k tokens or one sequence, causal, bf16, by head dim and length
        // (bench/device/attention-lengths.py, test/data/h100/h100-attention-lengths-2026-11-26.json):
        // the generator's fused attention kernels are priced from this.
        s.attentionTable = {{128, 2048, 0.480, 0.337}, {128, 8192, 0.639, 0.387},
                            {128, 32768, 0.621, 0.445}, {128, 65536, 0.624, 0.434},
                            {64, 2048, 0.365, 0.249},  {64, 8192, 0.462, 0.331},
                            {64, 32768, 0.482, 0.343}, {64, 65536, 0.465, 0.352}};
        // 16-bit GEMMs as cuBLAS runs them under PyTorch (bench/device/megatron-kernels.py,
        // test/data/h100/h100-megatron-kernels-2026-11-26{,-rerun}.json, doc/validation.md
        // "Kernels on a real H100"), by forward shape: 6 x 2 m n k over the summed time of the
        // forward, input-gradient and weight-gradient GEMMs of both runs, over the 989.5
        // TFLOP/s peak (so a layer's three GEMMs, which the generator prices as one of the
        // forward's shape and one of twice its work, take their measured total).
        s.gemmTable = {{8192, 2304, 6144, 0.699},   {8192, 6144, 768, 0.632},
                       {8192, 3072, 6144, 0.730},   {8192, 6144, 3072, 0.708},
                       {2048, 4608, 12288, 0.690},  {2048, 12288, 1536, 0.589},
                       {2048, 6144, 12288, 0.658},  {2048, 12288, 6144, 0.645},
                       {2048, 7680, 20480, 0.683},  {2048, 20480, 2560, 0.614},
                       {2048, 10240, 20480, 0.683}, {2048, 20480, 10240, 0.656},
                       {32768, 6912, 2304, 0.672},  {32768, 2304, 2304, 0.583},
                       {32768, 9216, 2304, 0.661},  {32768, 2304, 9216, 0.647},
                       {2048, 2048, 13312, 0.660},  {8192, 8192, 8192, 0.732}};
        out = s;
        return true;
    }
    if (model == "h200-sxm" || model == "h200")
    {
        // H200 Tensor Core GPU datasheet (SXM column): the H100's compute (same dense peaks)
        // with 141 GB of HBM3e at 4.8 TB/s.
        GpuSpec s;
        LookupGpuSpec("h100-sxm", s);
        s.name = "NVIDIA H200";
        s.memoryBytes = 141000000000ull;
        s.hbmBytesPerSec = 4.8e12;
        out = s;
        return true;
    }
    if (model == "a100-sxm" || model == "a100")
    {
        GpuSpec s;
        s.name = "NVIDIA A100-SXM4-80GB";
        s.arch = "sm_80";
        s.ccMajor = 8;
        s.ccMinor = 0;
        s.smCount = 108;
        s.memoryBytes = 80ull << 30;
        s.hbmBytesPerSec = 2.039e12;
        s.pcieBytesPerSec = 32e9; // PCIe Gen4 x16
        s.peakFlops = {{DataType::F64, 19.5e12},
                       {DataType::F32, 19.5e12}, // FP32 non-tensor
                       {DataType::TF32, 156e12},  // TF32 tensor (datasheet 312 with sparsity)
                       {DataType::F16, 312e12},
                       {DataType::BF16, 312e12},
                       {DataType::I8, 624e12}};
        // Kernel efficiencies for `gpusim validate-training` (doc/validation.md, "Training
        // throughput"), none fitted on the Megatron tables:
        // - GEMMs: an A100 f16 tensor-core GEMM (fp32 accumulate) timed by CUTLASS's profiler
        //   in 2020, 235.1 TFLOP/s at 3456 x 4096 x 8192 (NVIDIA/cutlass media/docs/profiler.md
        //   at commit 6615010cd, 2020-11-19, kernel s16816gemm_f16_256x128_32x3): 0.754 of
        //   the 312 TFLOP/s peak for every GEMM. One efficiency rather than the GEMM shape
        //   model because on a real H100 a flat efficiency tracked 108 cuBLAS GEMMs of
        //   Megatron shapes better than the shape model (doc/validation.md, "Kernels on a real
        //   H100");
        // - GEMM shape model, a what-if (kernel-cost-model.cc): the measured maximum
        //   achievable BF16 matmul of an A100 SXM, 271.2 TFLOP/s at M x N x K = 1024 x 10240 x
        //   5120 (S. Bekman, ml-engineering, compute/accelerator "Maximum Achievable Matmul
        //   FLOPS comparison table", torch 2.6.0+cu126), is 4 x 80 = 320 tiles of 256 x 128 on
        //   108 SMs, 3 waves 320/324 full, so one tile runs at 0.880 of its SM's share;
        // - memory-bound kernels: Megatron-LM's unfused attention core measured on its own.
        //   Korthikanti et al. 2022 (arXiv:2205.05198), Table 4, one layer of their 22B model
        //   on Selene's A100-80GB (TP 8, micro-batch 4, s 2048): selective recomputation,
        //   which re-runs exactly that core, adds 13.2 - 11.9 = 1.3 ms to the backward. Per
        //   TP rank the core moves 1.795 GB: 4 x 8 heads x 2048^2 = 134.2M scores; Q K^T
        //   writes them (with Q, K: 293.6 MB), the fused scale-mask-softmax reads and writes
        //   them (536.9 MB), dropout reads, writes and stores a mask (671.1 MB), P x V reads
        //   them (with V and the output: 293.6 MB). All four are memory-bound in the model,
        //   so 1.795e9 / (1.3e-3 x 2.039e12) = 0.677 of the HBM peak (0.63 - 0.73 for the
        //   table's 0.1 ms rounding). The roofline's default for any GPU stays 0.8; this is
        //   the A100 under Megatron-LM's kernels.
        s.gemmEfficiency = 235.138e12 / 312e12;                       // 0.754
        s.gemmTileEfficiency = 271.2e12 / (312e12 * 320.0 / 324.0);   // 0.880
        s.memoryEfficiency = 1.7952e9 / (1.3e-3 * 2.039e12);           // 0.677
        out = s;
        return true;
    }
    return false;
}

double
GpuSpec::AttentionEfficiency(uint64_t headDim, uint64_t keys, bool backward) const
{
    if (attentionTable.empty() || keys == 0)
    {
        return 0;
    }
    // Per measured head dim: interpolate in log(keys), clamped; then between the two nearest
    // head dims (clamped).
    std::map<uint32_t, std::vector<const AttentionPoint*>> byDim;
    for (const AttentionPoint& p : attentionTable)
    {
        byDim[p.headDim].push_back(&p);
    }
    auto atLength = [&](std::vector<const AttentionPoint*>& pts) {
        std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->keys < b->keys; });
        auto eff = [&](const AttentionPoint* p) { return backward ? p->backward : p->forward; };
        if (keys <= pts.front()->keys)
        {
            return eff(pts.front());
        }
        for (size_t i = 1; i < pts.size(); ++i)
        {
            if (keys <= pts[i]->keys)
            {
                const double x = std::log(double(keys) / pts[i - 1]->keys) /
                                 std::log(double(pts[i]->keys) / pts[i - 1]->keys);
                return eff(pts[i - 1]) + x * (eff(pts[i]) - eff(pts[i - 1]));
            }
        }
        return eff(pts.back());
    };
    auto hi = byDim.lower_bound(static_cast<uint32_t>(std::min<uint64_t>(headDim, UINT32_MAX)));
    if (hi == byDim.begin())
    {
        return atLength(hi->second);
    }
    if (hi == byDim.end())
    {
        return atLength(std::prev(hi)->second);
    }
    auto lo = std::prev(hi);
    const double x = double(headDim - lo->first) / double(hi->first - lo->first);
    return atLength(lo->second) + x * (atLength(hi->second) - atLength(lo->second));
}

double
GpuSpec::MeasuredGemmEfficiency(double m, double n, double k) const
{
    if (gemmTable.empty() || m <= 0 || n <= 0 || k <= 0)
    {
        return 0;
    }
    std::vector<double> all;
    double weighted = 0;
    double weights = 0;
    double nearest = std::numeric_limits<double>::infinity();
    for (const GemmPoint& p : gemmTable)
    {
        all.push_back(p.efficiency);
        const double dm = std::log2(m / p.m);
        const double dn = std::log2(n / p.n);
        const double dk = std::log2(k / p.k);
        const double octaves = std::max({std::abs(dm), std::abs(dn), std::abs(dk)});
        if (octaves >= 1)
        {
            continue;
        }
        nearest = std::min(nearest, octaves);
        const double w = 1.0 / (dm * dm + dn * dn + dk * dk + 1e-6);
        weighted += w * p.efficiency;
        weights += w;
    }
    std::sort(all.begin(), all.end());
    const size_t h = all.size() / 2;
    const double median = all.size() % 2 ? all[h] : 0.5 * (all[h - 1] + all[h]);
    if (weights == 0)
    {
        return median;
    }
    const double near = weighted / weights;
    return near + nearest * (median - near);
}

std::string
KnownGpuModels()
{
    return "h100-sxm, h200-sxm, a100-sxm";
}

} // namespace gpusim
} // namespace ns3
