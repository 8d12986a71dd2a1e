/*
 * KernelCostModel: how long a kernel, copy or memset takes on a GPU.
 *  - RecordedDurationCostModel: the duration recorded in the op (trace replay); falls back to
 *    a roofline estimate when the op carries none;
 *  - RooflineCostModel: max(FLOPs / (peak * eff), bytes / (HBM * eff)) from the GpuSpec.
 * With the attribute GemmShapeModel, the compute time of a 16-bit or FP8 GEMM on a GPU that
 * has the data (GpuSpec::gemmTileEfficiency) comes from its output tiles and the waves they run
 * in over the SMs (GemmShapeSeconds; doc/validation.md, "GEMM shape model"). FP8 GEMMs run at
 * the FP8 peak times the 16-bit efficiency times GpuSpec::fp8GemmRelativeEfficiency.
 */
#ifndef GPUSIM_KERNEL_COST_MODEL_H
#define GPUSIM_KERNEL_COST_MODEL_H

#include "ns3/gpu-spec.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/op-ir.h"

#include <map>
#include <regex>
#include <string>
#include <vector>

namespace ns3
{

class KernelCostModel : public Object
{
  public:
    static TypeId GetTypeId();
    KernelCostModel();
    ~KernelCostModel() override;

    /// Device time of a Kernel, Memcpy or Memset op on a GPU with this spec.
    Time GetDuration(const gpusim::Op& op, const gpusim::GpuSpec& spec) const;

    /// Fixed cost of every copy and memset (copy-engine setup), microseconds; peer copies on
    /// the network pay it before their transfer starts.
    static constexpr double kCopySetupUs = 1.0;
    /// Copy engines between two GPUs of a server reach this fraction of the NVLink path's rate:
    /// 376 GB/s of NVLink4's 450 GB/s per direction on an HGX H100 (cudaMemcpyPeerAsync with peer
    /// access, CUDA samples' p2pBandwidthLatencyTest, unidirectional P2P writes, median of GPU
    /// 0's row: NVIDIA/nccl issue 1264). No A100 figure was found; the fraction carries over.
    static constexpr double kPeerCopyLinkEfficiency = 376.0 / 450.0;
    /// Peer copies without a peer mapping (no cudaDeviceEnablePeerAccess either way) are staged
    /// through host memory: 37 GB/s on the same HGX H100 (p2pBandwidthLatencyTest, P2P=Disabled,
    /// 36.3 - 38.1 GB/s off the diagonal), this fraction of its PCIe Gen5 x16 rate (64 GB/s);
    /// other GPUs take the same fraction of their PCIe rate.
    static constexpr double kStagedPeerPcieFraction = 37.0 / 64.0;

    /// What-if: multiply the time of kernels whose name matches `regex` by `factor`
    /// (e.g. 0.5 makes matching GEMMs twice as fast). Rules apply in the order added.
    void AddKernelScale(const std::string& regex, double factor);

    /// One output tile shape a GEMM kernel may use, and its throughput relative to 256 x 128.
    struct GemmTile
    {
        uint32_t m;
        uint32_t n;
        double relative;
    };
    /// The tiles the shape model chooses from (kernel-cost-model.cc says why these).
    static const std::vector<GemmTile>& GemmTiles();

    /// Compute time in seconds of GEMM `g` by the shape model: for each tile, waves =
    /// ceil(tiles x batch / SMs), time = waves x 2 tm tn k / (SM peak x gemmTileEfficiency x
    /// relative); the fastest tile is taken (cuBLAS's heuristics choose among its kernels).
    /// FP8: the FP8 peak, the tile efficiency times fp8GemmRelativeEfficiency.
    /// Returns 0 when the spec has no gemmTileEfficiency.
    static double GemmShapeSeconds(const gpusim::GemmShape& g, const gpusim::GpuSpec& spec);

    /// Whether a kernel is fused attention (the generator's "attention", "attention_bwd",
    /// "attention_cp_*", "attention_bwd_cp_*", or recorded "flash" / "fmha" kernels), and
    /// whether it is a backward.
    static bool IsFusedAttention(const std::string& name, bool& backward);

  protected:
    /// Unscaled duration in seconds.
    virtual double DoGetSeconds(const gpusim::Op& op, const gpusim::GpuSpec& spec) const = 0;

    /// Roofline estimate shared by the models (seconds).
    double RooflineSeconds(const gpusim::Op& op, const gpusim::GpuSpec& spec) const;

    double m_computeEfficiency; //!< fraction of peak FLOP/s reached by GEMM-like kernels
    double m_attentionEfficiency;         //!< fused attention forward (0: the GPU's, else compute)
    double m_attentionBackwardEfficiency; //!< fused attention backward (0: as above)
    double m_memoryEfficiency;  //!< fraction of HBM bandwidth reached by memory-bound kernels
    double m_minKernelUs;       //!< smallest kernel time (launch + tail), microseconds
    bool m_gemmShapeModel;      //!< 16-bit / FP8 GEMMs with a shape: tile and wave quantization
    bool m_measuredGemms;       //!< 16-bit / FP8 GEMMs with a shape: the GPU's timed GEMMs

  private:
    struct ScaleRule
    {
        std::regex re;
        double factor;
    };
    std::vector<ScaleRule> m_scales;
    /// Combined factor per kernel name: std::regex is slow, and a trace repeats its names.
    mutable std::map<std::string, double> m_scaleByName;
};

/// Uses Op::durUs when recorded (>= 0), else the roofline estimate.
class RecordedDurationCostModel : public KernelCostModel
{
  public:
    static TypeId GetTypeId();

  protected:
    double DoGetSeconds(const gpusim::Op& op, const gpusim::GpuSpec& spec) const override;
};

/// Always estimates from the GPU spec (ignores recorded durations).
class RooflineCostModel : public KernelCostModel
{
  public:
    static TypeId GetTypeId();

  protected:
    double DoGetSeconds(const gpusim::Op& op, const gpusim::GpuSpec& spec) const override;
};

} // namespace ns3

#endif // GPUSIM_KERNEL_COST_MODEL_H
