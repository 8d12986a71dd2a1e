/*
 * GPU hardware description used by cost models and GpuNode.
 */
#ifndef GPUSIM_GPU_SPEC_H
#define GPUSIM_GPU_SPEC_H

#include "ns3/op-ir.h"

#include <cstdint>
#include <map>
#include <vector>
#include <string>

namespace ns3
{
namespace gpusim
{

struct GpuSpec
{
    std::string name = "NVIDIA H100 80GB HBM3"; //!< as cudaGetDeviceProperties reports it
    std::string arch = "sm_90";
    int ccMajor = 9;
    int ccMinor = 0;
    uint32_t smCount = 132;
    uint64_t memoryBytes = 80ull << 30;       //!< HBM capacity
    double hbmBytesPerSec = 3.35e12;          //!< HBM bandwidth
    double pcieBytesPerSec = 64e9;            //!< host<->device copy bandwidth (per direction)
    double kernelLaunchUs = 2.0;              //!< fixed device-side cost per kernel
    std::map<DataType, double> peakFlops;     //!< dense tensor-core peak per dtype (FLOP/s)
    /// Measured kernel efficiencies of this GPU, each with its source in gpu-spec.cc (0 = none
    /// published here; the cost model's ComputeEfficiency / MemoryEfficiency attributes then
    /// apply). Used by `gpusim validate-training` (doc/validation.md) for every row alike.
    double gemmEfficiency = 0;   //!< achieved / peak FLOP/s of large training GEMMs
    double memoryEfficiency = 0; //!< achieved / peak HBM bandwidth of streaming kernels
    /// Fused (flash) attention, measured: model FLOP/s (causal forward 2 T s h, backward
    /// twice that) over the 16-bit peak. Unlike the two above, the roofline cost model uses
    /// these by default (attributes AttentionEfficiency / AttentionBackwardEfficiency).
    double attentionEfficiency = 0;
    double attentionBackwardEfficiency = 0;
    /// The same measured at head dims and key lengths; AttentionEfficiency() interpolates it
    /// for kernels that carry their geometry (generated fused attention). Empty: none.
    struct AttentionPoint
    {
        uint32_t headDim;
        uint32_t keys; //!< key tokens per sequence
        double forward;
        double backward;
    };
    std::vector<AttentionPoint> attentionTable;

    /// Fused attention efficiency for a head dim and key length from attentionTable: linear in
    /// log(keys) between measured lengths and in the head dim between measured dims, clamped to
    /// the measured range; 0 when the table is empty.
    double AttentionEfficiency(uint64_t headDim, uint64_t keys, bool backward) const;
    /// 16-bit GEMMs timed on this GPU (cuBLAS through PyTorch): forward shape and achieved
    /// fraction of the 16-bit peak over the summed time of its forward, input-gradient and
    /// weight-gradient layouts.
    /// Empty: none. KernelCostModel's MeasuredGemms prices GEMMs from it.
    struct GemmPoint
    {
        uint32_t m;
        uint32_t n;
        uint32_t k;
        double efficiency;
    };
    std::vector<GemmPoint> gemmTable;
    /// Efficiency of an m x n x k GEMM from gemmTable: the measured shapes within one octave
    /// of it in every dimension, weighted by closeness in log2(m, n, k), blended into the
    /// table's median as the nearest of them lies further (the median alone from one octave
    /// on); 0 when the table is empty.
    double MeasuredGemmEfficiency(double m, double n, double k) const;
    /// Shape-dependent GEMM model (KernelCostModel attribute GemmShapeModel; doc/validation.md
    /// "GEMM shape model"): fraction of the dense 16-bit tensor peak that a 256x128 output
    /// tile reaches on its SM, so that a GEMM whose tiles fill every SM in every wave runs at
    /// this fraction of peak. Derived in gpu-spec.cc from a published measured GEMM; 0 = none.
    double gemmTileEfficiency = 0;
    /// FP8 GEMMs: the fraction of the FP8 peak they reach over the fraction of the 16-bit peak
    /// 16-bit GEMMs reach, both measured the same way (gpu-spec.cc). The cost model prices an
    /// FP8 GEMM at ComputeEfficiency x this of the FP8 peak (shape model: gemmTileEfficiency x
    /// this); 0 = 1 (the 16-bit efficiency).
    double fp8GemmRelativeEfficiency = 0;

    /// Peak for a dtype; falls back to F32 then to the largest entry.
    double PeakFlops(DataType t) const;
    /// Whether the GPU has FP8 tensor cores (an F8E4M3 peak).
    bool HasFp8() const;
};

/// Built-in GPU models: "h100-sxm", "h200-sxm", "a100-sxm" (published datasheet numbers).
bool LookupGpuSpec(const std::string& model, GpuSpec& out);
/// Names accepted by LookupGpuSpec.
std::string KnownGpuModels();

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_GPU_SPEC_H
