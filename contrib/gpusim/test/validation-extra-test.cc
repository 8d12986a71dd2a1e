// gpusim validate beyond AllReduce: the other nccl-tests ops against closed forms, the cluster
// read from the hardware texts of the shipped extra tables, and the model's prediction on
// those tables (published results not used for calibration; doc/validation.md).
#include "ns3/cluster-spec.h"
#include "ns3/validate-command.h"

#include "test-temp-dir.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace ns3;

namespace
{

const std::string kExtraFile =
    GPUSIM_SOURCE_DIR "/contrib/gpusim/test/data/nccl-tests/published-extra.json";

} // namespace

TEST(ValidationExtra, ParsesNcclTestsOpNames)
{
    gpusim::CollKind k;
    bool sr = true;
    ASSERT_TRUE(gpusim::ParseValidationOp("all_gather_perf", k, sr));
    EXPECT_EQ(k, gpusim::CollKind::AllGather);
    EXPECT_FALSE(sr);
    ASSERT_TRUE(gpusim::ParseValidationOp("reduce_scatter", k, sr));
    EXPECT_EQ(k, gpusim::CollKind::ReduceScatter);
    ASSERT_TRUE(gpusim::ParseValidationOp("alltoall_perf", k, sr));
    EXPECT_EQ(k, gpusim::CollKind::AllToAll);
    ASSERT_TRUE(gpusim::ParseValidationOp("broadcast", k, sr));
    EXPECT_EQ(k, gpusim::CollKind::Broadcast);
    ASSERT_TRUE(gpusim::ParseValidationOp("sendrecv_perf", k, sr));
    EXPECT_TRUE(sr);
    ASSERT_TRUE(gpusim::ParseValidationOp("allreduce", k, sr));
    EXPECT_EQ(k, gpusim::CollKind::AllReduce);
    EXPECT_FALSE(sr);
    EXPECT_FALSE(gpusim::ParseValidationOp("gather", k, sr));
    EXPECT_FALSE(gpusim::ParseValidationOp("send", k, sr)); // half of a pair is no benchmark
}

TEST(ValidationExtra, ClusterFromHardwareReadsTheExtraTables)
{
    // The hardware texts of test/data/nccl-tests/published-extra.json, copied. AWS p5: 32 x
    // 100 Gb/s EFA for 8 GPUs is folded into 8 NICs of 4 x 100 = 400 Gb/s (same bandwidth per
    // GPU); the others are read as written.
    struct Case
    {
        const char* text;
        const char* preset;
        uint32_t servers, gpus, nics;
        double gbps;
    } cases[] = {
        {"1 node (AWS p5.48xlarge), 8 x H100 80GB HBM3, NVLink4/NVSwitch; 8 ranks (busbw/algbw = "
         "1.75 in the output); NCCL version not printed",
         "dgx-h100", 1, 8, 8, 400},
        {"2 nodes (AWS p5.48xlarge), 8 x H100 80GB HBM3 each, 32 x 100 Gb/s EFA per node (4 per "
         "GPU, aws-ofi-nccl); 16 ranks (busbw/algbw = 1.875); NCCL version not printed",
         "dgx-h100", 2, 8, 8, 400},
        {"2 nodes (AWS p5.48xlarge on EKS), 8 x H100 80GB HBM3 each, 32 x 100 Gb/s EFA per node; "
         "NCCL 2.18.5, aws-ofi-nccl v1.7.3-aws, EFA installer 1.28.0; 16 ranks",
         "dgx-h100", 2, 8, 8, 400},
        {"2 nodes (AWS p4de.24xlarge), 8 x A100-SXM4-80GB each, NVLink3/NVSwitch, 4 x 100 Gb/s "
         "EFA per node; 16 ranks (busbw/algbw = 1.875); NCCL version not printed",
         "dgx-a100", 2, 8, 4, 100},
        {"2 nodes (AWS p4d.24xlarge on EKS), 8 x A100-SXM4-40GB each, 4 x 100 Gb/s EFA per node "
         "with GPUDirect RDMA; NCCL 2.8.3+cuda11.2 (8 coll channels); 16 ranks",
         "dgx-a100", 2, 8, 4, 100},
        {"1 node, 8 x A100 with NVLink (NVSwitch; 600 GB/s bidirectional, 300 GB/s each way per "
         "GPU), one process driving 8 GPUs (-g 8); NCCL version not printed",
         "dgx-a100", 1, 8, 8, 200},
        // Folding only applies to whole multiples; 12 NICs for 8 GPUs cannot be shared evenly.
    };
    for (const auto& c : cases)
    {
        const gpusim::ClusterSpec s = gpusim::ClusterFromHardware(c.text, "t");
        EXPECT_EQ(s.preset, c.preset) << c.text;
        EXPECT_EQ(s.servers, c.servers) << c.text;
        EXPECT_EQ(s.gpusPerServer, c.gpus) << c.text;
        EXPECT_EQ(s.nicsPerServer, c.nics) << c.text;
        EXPECT_DOUBLE_EQ(s.nicGbps, c.gbps) << c.text;
    }
    EXPECT_THROW(gpusim::ClusterFromHardware("2 nodes, 8 x H100, 12 x 100 Gb/s", "t"),
                 std::runtime_error);
    // The file itself parses with those clusters (no table carries a "cluster" object).
    const auto tables = gpusim::ReadValidationTables(kExtraFile, 0, ~uint64_t(0), "");
    ASSERT_EQ(tables.size(), 6u);
    for (const auto& t : tables)
    {
        EXPECT_EQ(t.clusterFrom, "hardware text") << t.id;
        EXPECT_FALSE(t.source.empty()) << t.id;
    }
}

TEST(ValidationExtra, OtherOpsAgainstClosedForms)
{
    // 8 single-GPU servers on one switch, 100 Gb/s NICs (12.5 GB/s each way), ideal wire
    // (--efficiency 1), 1 GiB, nccl-tests' size conventions. Ring AllGather and ReduceScatter
    // move (n-1)/n S through every NIC; AllToAll sends (n-1)/n of each rank's S buffer to the
    // others; a pipelined ring Broadcast and the sendrecv ring move S through every NIC. So
    // T = 7/8 S / B for the first three and S / B for the last two; in nccl-tests' terms every
    // busbw equals B = 12.5 GB/s. "Measured" is that closed form, so each error should be ~0.
    const double S = 1073741824.0, B = 12.5e9;
    const double t78 = 7.0 / 8 * S / B * 1e6, t1 = S / B * 1e6;
    const std::string cluster = "\"cluster\": {\"servers\": 8, \"gpusPerServer\": 1, "
                                "\"nicsPerServer\": 1, \"nicGbps\": 100, \"fabric\": "
                                "\"single-switch\"}";
    const std::map<std::string, double> ops = {{"all_gather_perf", t78},
                                               {"reduce_scatter_perf", t78},
                                               {"alltoall_perf", t78},
                                               {"broadcast_perf", t1},
                                               {"sendrecv_perf", t1}};
    TestTempDir dir("gpusim-validate-ops");
    std::ofstream f(dir.Path("ops.json"));
    f << "{\"tables\": [";
    bool first = true;
    for (const auto& [op, us] : ops)
    {
        f << (first ? "" : ",") << "{\"id\": \"" << op << "\", \"op\": \"" << op
          << "\", \"hardware\": \"x\", " << cluster << ", \"rows\": [{\"bytes\": 1073741824, "
          << "\"time_us\": " << us << "}]}";
        first = false;
    }
    f << "]}\n";
    f.close();
    std::ostringstream out, err;
    ASSERT_EQ(gpusim::ValidateCommand({dir.Path("ops.json"), "--algo", "ring", "--efficiency", "1",
                                       "--json", dir.Path("v.json")},
                                      out, err),
              0)
        << err.str();
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.load(dir.Path("v.json"));
    size_t seen = 0;
    for (simdjson::dom::element t : doc["tables"].get_array())
    {
        const std::string id(std::string_view(t["id"]));
        simdjson::dom::element row = t["rows"].at(0);
        EXPECT_NEAR(double(row["error_pct"]), 0.0, 1.0) << id << "\n" << out.str();
        EXPECT_NEAR(double(row["measured_busbw_GBps"]), 12.5, 0.01)
            << id;
        EXPECT_NEAR(double(row["simulated_busbw_GBps"]), 12.5, 0.15) << id;
        ++seen;
    }
    EXPECT_EQ(seen, ops.size());
    EXPECT_NE(out.str().find("sendrecv on 8 GPUs"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("allgather on 8 GPUs"), std::string::npos) << out.str();
}
