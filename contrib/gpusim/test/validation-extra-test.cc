// gpusim validate beyond AllReduce: the other nccl-tests ops against closed forms, the cluster
// read from the hardware texts of the shipped extra tables, and the model's prediction on
// those tables (published results not used for calibration; doc/validation.md).
#include "ns3/cluster-spec.h"
#include "ns3/validate-command.h"

#include "test-temp-dir.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
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
    // GPU), OCI's 16 x 100 Gb/s RoCE into 8 x 200; the others are read as written.
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
        {"2 nodes (2 of an 8-node cluster), 8 x H100 80GB HBM3 each, 8 x 400 Gb/s InfiniBand per"
         " node (the user confirms an IB 400G network and calls ~400 GB/s busbw its limit); 16 r"
         "anks (busbw/algbw = 1.875); all_reduce_perf -b 1M -e 8G -f 2 -g 1, 8 ranks per node, n"
         "o NCCL_* variables (the command is printed for the 4-node run, mpirun -np 32 -N 8 ... "
         "-x LD_LIBRARY_PATH; the 8- and 2-node runs are described as the same test); NCCL versi"
         "on not printed",
         "dgx-h100", 2, 8, 8, 400},
        {"4 nodes (4 of an 8-node cluster), 8 x H100 80GB HBM3 each, 8 x 400 Gb/s InfiniBand per"
         " node; 32 ranks (busbw/algbw = 1.9375); all_reduce_perf -b 1M -e 8G -f 2 -g 1, 8 ranks"
         " per node, no NCCL_* variables (the command is printed for the 4-node run, mpirun -np "
         "32 -N 8 ... -x LD_LIBRARY_PATH; the 8- and 2-node runs are described as the same test)"
         "; NCCL version not printed",
         "dgx-h100", 4, 8, 8, 400},
        {"8 nodes, 8 x H100 80GB HBM3 each, 8 x 400 Gb/s InfiniBand per node; 64 ranks (busbw/al"
         "gbw = 1.96875); all_reduce_perf -b 1M -e 8G -f 2 -g 1, 8 ranks per node, no NCCL_* var"
         "iables (the command is printed for the 4-node run, mpirun -np 32 -N 8 ... -x LD_LIBRAR"
         "Y_PATH; the 8- and 2-node runs are described as the same test); NCCL version not print"
         "ed",
         "dgx-h100", 8, 8, 8, 400},
        {"2 nodes (OCI bare metal, Kubernetes MPI job), 8 x A100-SXM4-40GB each, 16 x 100 Gb/s R"
         "oCE v2 RDMA per node (16 RDMA virtual functions per node per the README); 16 ranks (bu"
         "sbw/algbw = 1.875); NCCL 2.19.3 (tag of the manifest's nccl-tests image); env NCCL_CRO"
         "SS_NIC=1, NCCL_IB_QPS_PER_CONNECTION=4, NCCL_IB_GID_INDEX=3, NCCL_IB_TC=41, NCCL_IB_SL"
         "=0, NCCL_IB_HCA=mlx5, NCCL_TOPO_FILE; no algorithm, protocol or channel settings",
         "dgx-a100", 2, 8, 8, 200},
        // example-cluster01 (issue 20): 10 nodes, one node, and a 2-node pair.
        {"10 nodes (cnode3-002 ... cnode3-011), 8 x H100 80GB HBM3 each (nvidia-smi name in the l"
         "og), 8 x 400 Gb/s InfiniBand per node assumed: the source does not state the network; o"
         "ne NIC of 400 Gb/s per GPU is the HGX/DGX H100 design, and the same cluster's smoke run"
         " with one GPU on each of two nodes reaches 46.3 GB/s AllReduce busbw, the rate of one N"
         "DR NIC; 80 ranks, 8 per node; NCCL 2.29.2 (nccl-library=22902 in the log, nccl-tests 2."
         "17.8); slurm, 1 GPU per process; the repository's scripts set no NCCL_ALGO, NCCL_PROTO "
         "or channel variables (only NCCL_DEBUG in its debug mode; NCCL_SOCKET_IFNAME/NCCL_IB_HCA"
         " optional from the caller); dtype double",
         "dgx-h100", 10, 8, 8, 400},
        {"1 node (cnode3-002 of the same cluster), 8 x H100 80GB HBM3, NVLink4/NVSwitch; 8 ranks;"
         " NCCL 2.29.2 (nccl-library=22902 in the log, nccl-tests 2.17.8); slurm, 1 GPU per proce"
         "ss; the repository's scripts set no NCCL_ALGO, NCCL_PROTO or channel variables (only NC"
         "CL_DEBUG in its debug mode; NCCL_SOCKET_IFNAME/NCCL_IB_HCA optional from the caller); d"
         "type double",
         "dgx-h100", 1, 8, 8, 400},
        {"2 nodes (cnode3-002 and cnode3-003, the first pair of the repository's pairwise sweep),"
         " 8 x H100 80GB HBM3 each, 8 x 400 Gb/s InfiniBand per node assumed: the source does not"
         " state the network; one NIC of 400 Gb/s per GPU is the HGX/DGX H100 design, and the sam"
         "e cluster's smoke run with one GPU on each of two nodes reaches 46.3 GB/s AllReduce bus"
         "bw, the rate of one NDR NIC; 16 ranks; alltoall_perf -b 4G, so 4 - 16 GiB only; NCCL 2."
         "29.2 (nccl-library=22902 in the log, nccl-tests 2.17.8); slurm, 1 GPU per process; the "
         "repository's scripts set no NCCL_ALGO, NCCL_PROTO or channel variables (only NCCL_DEBUG"
         " in its debug mode; NCCL_SOCKET_IFNAME/NCCL_IB_HCA optional from the caller); dtype dou"
         "ble",
         "dgx-h100", 2, 8, 8, 400},
        // Snellius (issue 20, 7 Dec 2026): 4-GPU NVLink boards without an NVSwitch.
        {"1 node (SURF Snellius, gpu_h100 partition), 4 x H100 each on a 4-GPU NVLink board wi"
         "thout NVSwitch (NCCL logs 'NVLS multicast support is not available' and 0 nvls channe"
         "ls), 4 x 200 Gb/s InfiniBand (NDR200) per node, one per GPU, GPUDirect RDMA; one proce"
         "ss driving the 4 GPUs (-g 4, P2P/direct pointer), 4 ranks; all_reduce_perf -b 4 -e 12"
         "8M -f 2 -g 4; NCCL 2.22.3+cuda12.6 (24 coll channels); only NCCL_DEBUG=INFO set (and t"
         "he site's NCCL_SOCKET_IFNAME), no algorithm, protocol or channel variables",
         "dgx-h100", 1, 4, 4, 200},
        {"2 nodes (SURF Snellius, gpu_h100 partition), 4 x H100 each on a 4-GPU NVLink board w"
         "ithout NVSwitch (NCCL logs 'NVLS multicast support is not available' and 0 nvls chann"
         "els), 4 x 200 Gb/s InfiniBand (NDR200) per node, one per GPU, GPUDirect RDMA; 8 ranks,"
         " one MPI process per GPU (srun -n 8 -N 2 all_reduce_perf_mpi -b 8 -e 8G -f 2 -g 1); NC"
         "CL 2.22.3+cuda12.6 (8 coll channels); only NCCL_DEBUG=INFO set (and the site's NCCL_S"
         "OCKET_IFNAME), no algorithm, protocol or channel variables",
         "dgx-h100", 2, 4, 4, 200},
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
        // NVLS only where the text does not say the GPUs lack an NVSwitch (and the preset has
        // it: A100 has no NVLink SHARP).
        const bool noSwitch = std::string(c.text).find("without NVSwitch") != std::string::npos;
        EXPECT_EQ(s.nccl.nvls, std::string(c.preset) != "dgx-a100" && !noSwitch) << c.text;
    }
    EXPECT_FALSE(gpusim::ClusterFromHardware("1 node, 4 x H100, no nvswitch", "t").nccl.nvls);
    EXPECT_THROW(gpusim::ClusterFromHardware("2 nodes, 8 x H100, 12 x 100 Gb/s", "t"),
                 std::runtime_error);
    // The file itself parses with those clusters (no table carries a "cluster" object).
    const auto tables = gpusim::ReadValidationTables(kExtraFile, 0, ~uint64_t(0), "");
    ASSERT_EQ(tables.size(), 25u);
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
    // others; the sendrecv ring moves S through every NIC. So T = 7/8 S / B for the first three
    // and S / B for sendrecv: in nccl-tests' terms each busbw is B = 12.5 GB/s. Broadcast is a
    // chain pipelined in 16 MiB chunks (NCCL's ChunkBytes default here): S / B plus the fill of
    // the n - 2 hops behind the first, (S + 6 x 16 MiB) / B. "Measured" is the closed form,
    // so each error should be ~0.
    const double S = 1073741824.0, B = 12.5e9;
    const double t78 = 7.0 / 8 * S / B * 1e6, t1 = S / B * 1e6;
    const double tChain = (S + 6 * 16777216.0) / B * 1e6;
    const std::string cluster = "\"cluster\": {\"servers\": 8, \"gpusPerServer\": 1, "
                                "\"nicsPerServer\": 1, \"nicGbps\": 100, \"fabric\": "
                                "\"single-switch\"}";
    const std::map<std::string, double> ops = {{"all_gather_perf", t78},
                                               {"reduce_scatter_perf", t78},
                                               {"alltoall_perf", t78},
                                               {"broadcast_perf", tChain},
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
        const std::string id{std::string_view(t["id"])};
        simdjson::dom::element row = t["rows"].at(0);
        EXPECT_NEAR(double(row["error_pct"]), 0.0, 1.0) << id << "\n" << out.str();
        if (id != "broadcast_perf")
        {
            EXPECT_NEAR(double(row["measured_busbw_GBps"]), 12.5, 0.01) << id;
            EXPECT_NEAR(double(row["simulated_busbw_GBps"]), 12.5, 0.15) << id;
        }
        ++seen;
    }
    EXPECT_EQ(seen, ops.size());
    EXPECT_NE(out.str().find("sendrecv on 8 GPUs"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("allgather on 8 GPUs"), std::string::npos) << out.str();
}

TEST(ValidationExtra, ReadsNcclTestsGpusPerThreadFromTheHardwareText)
{
    EXPECT_EQ(gpusim::GpusPerThreadFromHardware("1 node; all_reduce_perf -b 4 -e 128M -g 4"), 4u);
    EXPECT_EQ(gpusim::GpusPerThreadFromHardware("one process driving 8 GPUs (-g 8)"), 8u);
    EXPECT_EQ(gpusim::GpusPerThreadFromHardware("all_reduce_perf -b 1M -e 8G -f 2 -g 1"), 1u);
    EXPECT_EQ(gpusim::GpusPerThreadFromHardware("8 x H100, 1 GPU per process"), 1u);
    EXPECT_EQ(gpusim::GpusPerThreadFromHardware("cnode3-g 4 x H100"), 1u); // not an option
}

TEST(ValidationExtra, AThreadDrivingSeveralGpusBoundsTheIterationByItsNcclCalls)
{
    // nccl-tests times back-to-back iterations. A thread driving G GPUs (-g G) queues one call
    // per GPU (0.5 us) and launches each GPU's kernel (4.4 us; nccl-host-cost.h) per
    // iteration, so an iteration takes at least G x 4.9 us; sendrecv queues two calls per GPU,
    // G x 5.4 us. 1 KiB on one server of 4 H100 without NVLS: the GPUs need about 8.4 us
    // (ring/LL), so with -g 4 the host sets the time, 19.6 us exactly; with one GPU per
    // process (4.9 us of host time) the GPUs do. "Measured" is set to the expected time.
    const std::string hw4 = "1 node, 4 x H100 without NVSwitch, 4 x 200 Gb/s IB; -g 4";
    const std::string hw1 = "1 node, 4 x H100 without NVSwitch, 4 x 200 Gb/s IB";
    const std::string hw8 = "1 node, 8 x H100, 8 x 400 Gb/s IB; -g 8";
    TestTempDir dir("gpusim-validate-host");
    std::ofstream f(dir.Path("host.json"));
    f << "{\"tables\": ["
      << "{\"id\": \"g4\", \"op\": \"allgather\", \"hardware\": \"" << hw4
      << "\", \"rows\": [{\"bytes\": 1024, \"time_us\": 19.6}]},"
      << "{\"id\": \"g1\", \"op\": \"allgather\", \"hardware\": \"" << hw1
      << "\", \"rows\": [{\"bytes\": 1024, \"time_us\": 19.6}]},"
      << "{\"id\": \"sr8\", \"op\": \"sendrecv\", \"hardware\": \"" << hw8
      << "\", \"rows\": [{\"bytes\": 8, \"time_us\": 43.2}]}]}\n";
    f.close();
    std::ostringstream out, err;
    ASSERT_EQ(gpusim::ValidateCommand({dir.Path("host.json"), "--min-bytes", "1", "--json",
                                       dir.Path("v.json")},
                                      out, err),
              0)
        << err.str();
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.load(dir.Path("v.json"));
    std::map<std::string, simdjson::dom::element> rows;
    for (simdjson::dom::element t : doc["tables"].get_array())
    {
        rows[std::string(std::string_view(t["id"]))] = t["rows"].at(0);
    }
    ASSERT_EQ(rows.size(), 3u) << out.str();
    EXPECT_NEAR(double(rows["g4"]["simulated_us"]), 19.6, 1e-9) << out.str();
    EXPECT_TRUE(bool(rows["g4"]["host_bound"])) << out.str();
    EXPECT_NEAR(double(rows["g1"]["host_us"]), 4.9, 1e-9);
    EXPECT_FALSE(bool(rows["g1"]["host_bound"])) << out.str();
    EXPECT_GT(double(rows["g1"]["simulated_us"]), 4.9) << out.str();
    EXPECT_LT(double(rows["g1"]["simulated_us"]), 15.0) << out.str();
    EXPECT_NEAR(double(rows["sr8"]["simulated_us"]), 43.2, 1e-9) << out.str();
    EXPECT_TRUE(bool(rows["sr8"]["host_bound"])) << out.str();
    EXPECT_NE(out.str().find("(host-bound)"), std::string::npos) << out.str();
}

TEST(ValidationExtra, PublishedResultsNotUsedForCalibration)
{
    // The shipped extra tables (test/data/nccl-tests), 1 MiB - 1 GiB, default tuner, no
    // constant changed for them. The bounds follow from what each cluster is, not from the
    // model's output (doc/validation.md, "Other published results"):
    //  - 1 x p5 is the calibrated hardware (8 x H100 on NVSwitch, no network): issue 9's goal,
    //    median <= 10 %, worst <= 25 %.
    //  - EFA clusters (p5, p4de, p4d): the presets carry InfiniBand latencies and the model has
    //    no EFA/SRD or plugin costs, so it may only be faster than the hardware (error < +15 %
    //    at every size; the 15 % is the spread the shared README gives for clusters of one
    //    shape). Where bandwidth dominates (1 GiB) the NICs run at line rate whatever the
    //    transport, so a current stack (p5, p4de; no NCCL version printed, 2024-25 README)
    //    lands within 10 % there. Old stacks (NCCL 2.18.5 + aws-ofi-nccl 1.7.3; NCCL 2.8.3
    //    with 8 channels) are slower than line rate at every size: only the sign is asserted.
    //  - sendrecv on one A100 node: NCCL's point-to-point over NVLink reaches less than its
    //    collectives (195 of 300 GB/s here); the model runs p2p at the collective efficiency
    //    (A100 cap 235 GB/s), so it is fast by at most 1 - 195/235 = 17 % plus the spread: > -25 %
    //    from 256 MiB (128 MiB is slower than 256 MiB in the measurement itself).
    //  - example-cluster01's single node (8 x H100 on NVSwitch, NCCL 2.29.2): the calibrated
    //    hardware again, and AllGather and ReduceScatter are the two halves of the ring
    //    AllReduce the preset's NVLink efficiency was taken from, AllToAll the same NVLink:
    //    issue 9's goal, median <= 10 %, worst <= 25 %, for each of its four ops (bound set
    //    28 Nov 2026 before these tables were simulated). AllReduce, AllGather and
    //    ReduceScatter meet it; AllToAll does not (median 16.6 %, worst 27.0 %, fast at every
    //    size: the model runs NCCL's point-to-point at the NVLink asymptote from 32 MiB, the
    //    measurement climbs from 235 to 348 GB/s busbw), so its bound is the disabled test
    //    below, not a looser one here. Its 10-node tables assume the network (not stated in
    //    the source) and get no bound of their own; they count towards issue 20's test-only
    //    acceptance, which doc/validation.md reports. The 2-node AllToAll (4 - 16 GiB) lies
    //    outside this window.
    //  - Snellius (1 and 2 nodes of 4 H100 on NVLink without an NVSwitch, 4 x 200 Gb/s IB,
    //    NCCL 2.22.3; added 7 Dec 2026, test-only, decided before they were simulated): a
    //    server shape no preset describes (the model keeps its NVLink star), so no bound of
    //    their own either; they count towards issue 20's test-only acceptance.
    if (!std::filesystem::exists(kExtraFile))
    {
        GTEST_SKIP() << "no " << kExtraFile;
    }
    std::ostringstream out, err;
    TestTempDir dir("gpusim-validate-extra");
    ASSERT_EQ(gpusim::ValidateCommand({kExtraFile, "--json", dir.Path("v.json")}, out, err), 0)
        << err.str();
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.load(dir.Path("v.json"));
    std::map<std::string, simdjson::dom::element> byId;
    for (simdjson::dom::element t : doc["tables"].get_array())
    {
        byId[std::string(std::string_view(t["id"]))] = t;
    }
    ASSERT_EQ(byId.size(), 24u) << out.str();
    auto rowsOf = [&](const std::string& id) {
        std::vector<std::pair<uint64_t, double>> r;
        for (simdjson::dom::element row : byId.at(id)["rows"].get_array())
        {
            r.emplace_back(uint64_t(row["bytes"]), double(row["error_pct"]));
        }
        return r;
    };
    for (const std::string id :
         {"aws-p5-1node-allreduce", "h100-cluster01-1node-allreduce",
          "h100-cluster01-1node-allgather", "h100-cluster01-1node-reducescatter"})
    {
        const auto one = byId.at(id);
        EXPECT_LE(double(one["median_abs_error_pct"]), 10.0) << id << "\n" << out.str();
        EXPECT_LE(double(one["worst_abs_error_pct"]), 25.0) << id << "\n" << out.str();
    }
    for (const std::string id : {"aws-p5-2nodes-allreduce", "aws-p4de-2nodes-allreduce",
                                 "aws-p5-2nodes-allreduce-nccl2.18",
                                 "aws-p4d-2nodes-allreduce-nccl2.8"})
    {
        const bool currentStack = id.find("nccl2.") == std::string::npos;
        for (const auto& [bytes, e] : rowsOf(id))
        {
            EXPECT_LT(e, currentStack ? 15.0 : 0.0) << id << " " << bytes << "\n" << out.str();
            if (currentStack && bytes == (1u << 30))
            {
                EXPECT_LE(std::fabs(e), 10.0) << id << "\n" << out.str();
            }
        }
    }
    for (const auto& [bytes, e] : rowsOf("a100-1node-sendrecv"))
    {
        EXPECT_LT(e, 0.0) << bytes;
        if (bytes >= (256u << 20))
        {
            EXPECT_GT(e, -25.0) << bytes << "\n" << out.str();
        }
    }
}

// The bound set before example-cluster01's one-node AllToAll was simulated (issue 9's goal, as
// for the other ops of that node; see PublishedResultsNotUsedForCalibration). It failed (16.6 %
// median, 27.0 % worst over 32 MiB - 1 GiB, the model fast at every size) until the model ran
// NCCL's point-to-point split and its receiver's copy out of the FIFO (model/nccl-p2p.h,
// NcclWorld P2pCopyOut; doc/validation.md): 5.1 % / 12.6 %. The bound is the one set before.
TEST(ValidationExtra, OneH100NodeAllToAllMeetsIssue9Goal)
{
    if (!std::filesystem::exists(kExtraFile))
    {
        GTEST_SKIP() << "no " << kExtraFile;
    }
    std::ostringstream out, err;
    TestTempDir dir("gpusim-validate-extra-a2a");
    ASSERT_EQ(gpusim::ValidateCommand({kExtraFile, "--table", "h100-cluster01-1node-alltoall",
                                       "--json", dir.Path("v.json")},
                                      out, err),
              0)
        << err.str();
    simdjson::dom::parser p;
    simdjson::dom::element t = p.load(dir.Path("v.json"))["tables"].at(0);
    EXPECT_LE(double(t["median_abs_error_pct"]), 10.0) << out.str();
    EXPECT_LE(double(t["worst_abs_error_pct"]), 25.0) << out.str();
}
