// A cuDNN attention recorded by the shim (libcudnn.so.9) is priced as fused attention: the same
// op, and the same time on the dgx-h100's GPU, as the training generator's attention kernels
// of that geometry.
#include "cli-test-util.h"
#include "test-temp-dir.h"
#include "training-test-util.h"

#include "ns3/cluster-spec.h"
#include "ns3/kernel-cost-model.h"
#include "ns3/op-ir.h"
#include "ns3/program-launcher.h"
#include "ns3/training-generator.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

const std::string kSdpa = GPUSIM_SHIM_TEST_DIR "/shim_cudnn_sdpa";

bool
Exists(const std::string& p)
{
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

const Op*
Named(const RankTrace& r, const std::string& name)
{
    for (const Op& op : r.ops)
    {
        if (op.kind == OpKind::Kernel && op.name == name)
        {
            return &op;
        }
    }
    return nullptr;
}

} // namespace

TEST(CudnnAttention, RecordedKernelsArePricedAsTheGeneratorsAttention)
{
    if (!Exists(kSdpa) || FindShimLibDir().empty())
    {
        GTEST_SKIP() << "shim libraries or shim_cudnn_sdpa not built";
    }
    // Llama-style attention: 2 sequences of 4096 tokens, 32 query heads of 128, 8 key/value
    // heads, causal, bf16; forward then backward through cudnnBackendExecute.
    TestTempDir tmp("gpusim-cudnn");
    const std::string dir = tmp.Path() + "/trace";
    CliResult rec = Cli({"record", "--gpus", "1",    "--out", dir,    "--timeout", "120",
                         "--",     kSdpa,    "--b",  "2",     "--hq", "32",        "--hk",
                         "8",      "--s",    "4096", "--d",   "128",  "--causal"});
    ASSERT_EQ(rec.code, 0) << rec.err;
    JobTrace job = ReadJobTrace(dir);
    ASSERT_EQ(job.ranks.size(), 1u);
    const Op* fwd = Named(job.ranks[0], "cudnn_sdpa_flash_fwd");
    const Op* bwd = Named(job.ranks[0], "cudnn_sdpa_flash_bwd");
    ASSERT_TRUE(fwd && bwd);

    // The generator's attention for the same layer: hidden 32 x 128, micro-batch 2, no TP.
    ModelSpec m = gpusim_test::TinyGpt(1);
    m.hidden = 4096;
    m.heads = 32;
    m.kvHeads = 8;
    m.ffn = 14336;
    m.seqLength = 4096;
    TrainingPlan p = gpusim_test::Plan(1, 1, 1, 2);
    p.microBatch = 2;
    RankTrace gen = GenerateRank(m, p, 0);
    const Op* genFwd = Named(gen, "attention");
    const Op* genBwd = Named(gen, "attention_bwd");
    ASSERT_TRUE(genFwd && genBwd);

    ClusterSpec cluster = gpusim_test::DgxH100();
    GpuSpec h100;
    ASSERT_TRUE(LookupGpuSpec(cluster.gpuModel, h100));
    Ptr<RooflineCostModel> cm = CreateObject<RooflineCostModel>();
    for (auto [got, want] : {std::pair{fwd, genFwd}, std::pair{bwd, genBwd}})
    {
        bool backward = false;
        EXPECT_TRUE(KernelCostModel::IsFusedAttention(got->name, backward)) << got->name;
        EXPECT_EQ(backward, got == bwd) << got->name;
        EXPECT_EQ(got->gemm.m, want->gemm.m) << got->name;
        EXPECT_EQ(got->gemm.n, want->gemm.n);
        EXPECT_EQ(got->gemm.k, want->gemm.k);
        EXPECT_EQ(got->gemm.batch, want->gemm.batch);
        EXPECT_EQ(got->gemm.dtype, want->gemm.dtype);
        EXPECT_EQ(got->flops, want->flops) << got->name;
        EXPECT_EQ(got->memBytes, want->memBytes) << got->name;
        // Priced from the H100's measured attention table (head dim 128, 4096 keys), not as a GEMM.
        const double eff = h100.AttentionEfficiency(128, 4096, backward);
        EXPECT_GT(eff, 0);
        EXPECT_NEAR(cm->GetDuration(*got, h100).GetSeconds(),
                    got->flops / (h100.PeakFlops(DataType::BF16) * eff),
                    1e-9);
        EXPECT_EQ(cm->GetDuration(*got, h100), cm->GetDuration(*want, h100)) << got->name;
    }
}
