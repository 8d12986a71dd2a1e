// The roofline cost model's GEMM shape model (kernel-cost-model.cc, doc/validation.md "GEMM
// shape model"): tile and wave quantization on the GPU's SMs, expected values computed by hand
// from the published measurement each GPU's tile efficiency comes from.
#include "kernel-op-test-util.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/gpu-spec.h"
#include "ns3/kernel-cost-model.h"

#include <gtest/gtest.h>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

Ptr<RooflineCostModel>
ShapeModel(bool on = true)
{
    Ptr<RooflineCostModel> cm = CreateObject<RooflineCostModel>();
    cm->SetAttribute("GemmShapeModel", BooleanValue(on));
    return cm;
}

double
Us(Ptr<RooflineCostModel> cm, const Op& op, const GpuSpec& gpu)
{
    return cm->GetDuration(op, gpu).GetNanoSeconds() / 1e3;
}

} // namespace

TEST(GemmShapeModel, TileEfficienciesComeFromTheMeasuredMatmuls)
{
    // A100: 271.2 TFLOP/s at 1024 x 10240 x 5120 = 4 x 80 = 320 tiles of 256 x 128 on 108 SMs,
    // 3 waves: 271.2 / (312 x 320/324) = 0.88010. H100: 794.5 at 2048 x 2048 x 13312 = 128 tiles
    // on 132 SMs, one wave: 794.5 / (989.5 x 128/132) = 0.82802.
    EXPECT_NEAR(Gpu("a100-sxm").gemmTileEfficiency, 0.88010, 1e-5);
    EXPECT_NEAR(Gpu("h100-sxm").gemmTileEfficiency, 0.82802, 1e-5);
    EXPECT_NEAR(Gpu("h200-sxm").gemmTileEfficiency, 0.82802, 1e-5);
    // ... so the model gives back the measurement at the measured shape.
    const double a100 = 2.0 * 1024 * 10240 * 5120 /
                        KernelCostModel::GemmShapeSeconds(GemmOp(1024, 10240, 5120).gemm,
                                                          Gpu("a100-sxm"));
    EXPECT_NEAR(a100 / 1e12, 271.2, 1e-6);
    const double h100 = 2.0 * 2048 * 2048 * 13312 /
                        KernelCostModel::GemmShapeSeconds(GemmOp(2048, 2048, 13312).gemm,
                                                          Gpu("h100-sxm"));
    EXPECT_NEAR(h100 / 1e12, 794.5, 1e-6);
}

TEST(GemmShapeModel, TilesRelativeThroughputByHand)
{
    // tm tn / (tm + tn) relative to 256 x 128 (85.33): 128 x 128 64 -> 0.75, 128 x 64 -> 0.5,
    // 64 x 64 -> 0.375.
    const auto& tiles = KernelCostModel::GemmTiles();
    ASSERT_EQ(tiles.size(), 6u);
    EXPECT_DOUBLE_EQ(tiles[0].relative, 1.0);
    EXPECT_DOUBLE_EQ(tiles[1].relative, 1.0);
    EXPECT_DOUBLE_EQ(tiles[2].relative, 0.75);
    EXPECT_DOUBLE_EQ(tiles[3].relative, 0.5);
    EXPECT_DOUBLE_EQ(tiles[5].relative, 0.375);
}

TEST(GemmShapeModel, WaveQuantizationOfAMegatronGemmByHand)
{
    // 1.7B GPT's attention projection on an A100, 2048 x 2304 x 2304 bf16. In tile times of
    // 256 x 128: 256 x 128 -> 8 x 18 = 144 tiles, 2 waves of 108 = 2.0; 128 x 128 -> 288
    // tiles, 3 waves x (1/2 the area / 0.75) = 2.0; 128 x 64 -> 576 tiles, 6 waves x 0.5 =
    // 3.0; 64 x 64 -> 1152 tiles, 11 waves x 0.333 = 3.67. Best 2 tile times of
    // 2 x 256 x 128 x 2304 / (312e12 / 108 x 0.880096) = 59.388 us: 118.777 us, i.e. 0.587 of
    // peak where the flat ComputeEfficiency 0.7 gives 99.6 us.
    const GpuSpec a100 = Gpu("a100-sxm");
    const Op op = GemmOp(2048, 2304, 2304);
    EXPECT_NEAR(Us(ShapeModel(), op, a100), 118.777, 0.002);
    EXPECT_NEAR(Us(ShapeModel(false), op, a100), 2.0 * 2048 * 2304 * 2304 / (312e12 * 0.7) * 1e6,
                0.002);
}

TEST(GemmShapeModel, OneMoreWaveCostsAWholeWave)
{
    // 1024 x 10240 x 5120 fills 3 waves (320 tiles); 1024 x 10752 needs 336 tiles = 4 waves
    // (128 x 128 would take 672 tiles = 7 waves x 2/3 = 4.67): 5 % more FLOPs, 4/3 the time.
    const GpuSpec a100 = Gpu("a100-sxm");
    const double t3 = Us(ShapeModel(), GemmOp(1024, 10240, 5120), a100);
    const double t4 = Us(ShapeModel(), GemmOp(1024, 10752, 5120), a100);
    EXPECT_NEAR(t3, 395.923, 0.002); // 3 x 2 x 256 x 128 x 5120 / (312e12 / 108 x 0.880096)
    EXPECT_NEAR(t4 / t3, 4.0 / 3.0, 1e-6);
}

TEST(GemmShapeModel, BatchedGemmTilesShareTheWaves)
{
    // Megatron's attention scores for 1.7B (s 2048, head dim 96, 24 heads): 24 batches of
    // 2048 x 2048 x 96 = 24 x 128 = 3072 tiles of 256 x 128, 29 waves on 108 SMs:
    // 29 x 2 x 256 x 128 x 96 / (312e12 / 108 x 0.880096) = 71.76 us. The bytes (Q and K read,
    // the scores written: 220 MB) at 0.8 of 2.039 TB/s take longer: 135.0 us, the kernel's time.
    const GpuSpec a100 = Gpu("a100-sxm");
    const Op op = GemmOp(2048, 2048, 96, 24);
    EXPECT_NEAR(KernelCostModel::GemmShapeSeconds(op.gemm, a100) * 1e6, 71.76, 0.01);
    const double bytes = (2048.0 * 96 * 2 + 2048.0 * 2048) * 2 * 24;
    EXPECT_NEAR(Us(ShapeModel(), op, a100), bytes / (2.039e12 * 0.8) * 1e6, 0.002);
}

TEST(GemmShapeModel, OnlyForHalfPrecisionGemmsOnGpusWithTheData)
{
    const GpuSpec a100 = Gpu("a100-sxm");
    // FP32 on CUDA cores and TF32: the measurement is BF16, so ComputeEfficiency (0.7) applies.
    const Op f32 = GemmOp(4096, 4096, 4096, 1, DataType::F32);
    EXPECT_NEAR(Us(ShapeModel(), f32, a100), 2.0 * 4096 * 4096 * 4096 / (19.5e12 * 0.7) * 1e6,
                0.002);
    const Op tf32 = GemmOp(4096, 4096, 4096, 1, DataType::TF32);
    EXPECT_NEAR(Us(ShapeModel(), tf32, a100), 2.0 * 4096 * 4096 * 4096 / (156e12 * 0.7) * 1e6,
                0.002);
    // A GPU without a tile efficiency (a default GpuSpec) keeps ComputeEfficiency.
    GpuSpec bare;
    bare.peakFlops = {{DataType::BF16, 989.5e12}};
    const Op bf16 = GemmOp(8192, 8192, 8192);
    EXPECT_EQ(KernelCostModel::GemmShapeSeconds(bf16.gemm, bare), 0.0);
    EXPECT_NEAR(Us(ShapeModel(), bf16, bare), 2.0 * 8192 * 8192 * 8192 / (989.5e12 * 0.7) * 1e6,
                0.002);
    // Kernels without a shape keep their FLOP count at ComputeEfficiency.
    Op k;
    k.kind = OpKind::Kernel;
    k.flops = 1e12;
    EXPECT_NEAR(Us(ShapeModel(), k, a100), 1e12 / (312e12 * 0.7) * 1e6, 0.002);
}

TEST(GemmShapeModel, OffByDefaultSoH100RooflineUsersSeeNoChange)
{
    // 8192^3 bf16 on an H100: 2048 tiles of 256 x 128, 16 waves of 132 (0.970 full) -> 0.803
    // of peak by the shape model, but the default cost model stays at 0.7 (1587.4 us).
    Ptr<RooflineCostModel> cm = CreateObject<RooflineCostModel>();
    BooleanValue on;
    cm->GetAttribute("GemmShapeModel", on);
    EXPECT_FALSE(on.Get());
    const GpuSpec h100 = Gpu("h100-sxm");
    const Op op = GemmOp(8192, 8192, 8192);
    EXPECT_NEAR(Us(cm, op, h100), 2.0 * 8192 * 8192 * 8192 / (989.5e12 * 0.7) * 1e6, 0.002);
    const double flops = 2.0 * 8192 * 8192 * 8192;
    EXPECT_NEAR(flops / (Us(ShapeModel(), op, h100) * 1e-6) / 989.5e12,
                0.828022 * 2048 / (16 * 132.0), 1e-5);
}

TEST(AttentionEfficiency, FusedAttentionRunsAtTheH100sMeasuredRate)
{
    // A fused causal attention of 8192 tokens (s 2048, h 4096): forward 2 T s h = 1.374e11
    // FLOPs at the H100's measured 0.341 of 989.5 TFLOP/s (gpu-spec.cc), 0.407 ms; the backward
    // (twice the FLOPs) at 0.217, 1.280 ms. A flat 0.7 would give 0.198 ms forward.
    Op fwd;
    fwd.kind = OpKind::Kernel;
    fwd.name = "attention";
    fwd.flops = 2.0 * 8192 * 2048 * 4096;
    Op bwd = fwd;
    bwd.name = "attention_bwd";
    bwd.flops = 2 * fwd.flops;
    Ptr<RooflineCostModel> cm = CreateObject<RooflineCostModel>();
    const GpuSpec h100 = Gpu("h100-sxm");
    EXPECT_NEAR(cm->GetDuration(fwd, h100).GetSeconds() * 1e3, fwd.flops / 989.5e12 / 0.341 * 1e3,
                1e-6);
    EXPECT_NEAR(cm->GetDuration(bwd, h100).GetSeconds() * 1e3, bwd.flops / 989.5e12 / 0.217 * 1e3,
                1e-6);
    // Recorded flash kernels are attention too; a GEMM-like kernel keeps ComputeEfficiency.
    Op flash = fwd;
    flash.name = "flash_fwd_kernel";
    EXPECT_EQ(cm->GetDuration(flash, h100), cm->GetDuration(fwd, h100));
    Op other = fwd;
    other.name = "mlp";
    EXPECT_NEAR(cm->GetDuration(other, h100).GetSeconds(), fwd.flops / (989.5e12 * 0.7), 1e-9);
    // The attributes override the GPU's measurement (e.g. FlashAttention-3 at 0.75).
    cm->SetAttribute("AttentionEfficiency", DoubleValue(0.75));
    EXPECT_NEAR(cm->GetDuration(fwd, h100).GetSeconds(), fwd.flops / (989.5e12 * 0.75), 1e-9);
    // A GPU without a measurement falls back to ComputeEfficiency.
    Ptr<RooflineCostModel> plain = CreateObject<RooflineCostModel>();
    EXPECT_NEAR(plain->GetDuration(fwd, Gpu("a100-sxm")).GetSeconds(),
                fwd.flops / (312e12 * 0.7), 1e-9);
}

TEST(AttentionEfficiency, ByHeadDimAndKeyLengthFromTheH100Table)
{
    // gpu-spec.cc's H100 table: exact at measured points, linear in log(keys) between them,
    // linear in the head dim between 64 and 128, clamped outside.
    const GpuSpec h100 = Gpu("h100-sxm");
    EXPECT_DOUBLE_EQ(h100.AttentionEfficiency(128, 2048, false), 0.480);
    EXPECT_DOUBLE_EQ(h100.AttentionEfficiency(128, 32768, true), 0.445);
    EXPECT_NEAR(h100.AttentionEfficiency(128, 4096, false), (0.480 + 0.639) / 2, 1e-12);
    EXPECT_DOUBLE_EQ(h100.AttentionEfficiency(128, 512, false), 0.480);     // clamped
    EXPECT_DOUBLE_EQ(h100.AttentionEfficiency(128, 1 << 20, true), 0.434); // clamped
    EXPECT_NEAR(h100.AttentionEfficiency(96, 2048, false), (0.365 + 0.480) / 2, 1e-12);
    EXPECT_DOUBLE_EQ(h100.AttentionEfficiency(256, 8192, false), 0.639);
    EXPECT_EQ(Gpu("a100-sxm").AttentionEfficiency(128, 2048, false), 0.0);
    // A generated attention kernel with its geometry (32k keys, head dim 128) is priced from
    // the table; without geometry, at the GPU's one number (0.341).
    Op op;
    op.kind = OpKind::Kernel;
    op.name = "attention";
    op.flops = 1e12;
    Ptr<RooflineCostModel> cm = CreateObject<RooflineCostModel>();
    EXPECT_NEAR(cm->GetDuration(op, h100).GetSeconds(), 1e12 / (989.5e12 * 0.341), 1e-9);
    op.gemm.m = op.gemm.n = 32768;
    op.gemm.k = 128;
    op.gemm.batch = 32;
    EXPECT_NEAR(cm->GetDuration(op, h100).GetSeconds(), 1e12 / (989.5e12 * 0.621), 1e-9);
    // ... and not as a GEMM, even with the shape model on.
    cm->SetAttribute("GemmShapeModel", BooleanValue(true));
    EXPECT_NEAR(cm->GetDuration(op, h100).GetSeconds(), 1e12 / (989.5e12 * 0.621), 1e-9);
}

// A GEMM that leaves SMs to an overlapped communication kernel (Op::gemm.smMargin, TE's
// set_sm_margin) computes on the rest: at the roofline 132/116 of its time for a margin of 16
// on an H100; by the shape model its tiles run in waves of 116 (2048 x 2048 x 13312: 128
// tiles of 256 x 128, one wave on 132 SMs, two on 116).
TEST(GemmShapeModel, SmMarginLeavesTheGemmTheRestOfTheSms)
{
    const GpuSpec h100 = Gpu("h100-sxm");
    Op op = GemmOp(2048, 2048, 13312);
    const double all = Us(ShapeModel(false), op, h100);
    const double shapedAll = Us(ShapeModel(), op, h100);
    op.gemm.smMargin = 16;
    EXPECT_NEAR(Us(ShapeModel(false), op, h100) / all, 132.0 / 116, 1e-4);
    EXPECT_NEAR(Us(ShapeModel(), op, h100) / shapedAll, 2.0, 1e-4);
    op.gemm.smMargin = 1000; // more than the GPU has: one SM is left
    EXPECT_NEAR(Us(ShapeModel(false), op, h100) / all, 132.0, 1e-3);
}
