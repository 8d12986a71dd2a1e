// The gpusim command line: tables, JSON, traces, determinism and bad input.
#include "cli-test-util.h"
#include "ns3/gpusim-commands.h"
#include "ns3/job-builder.h"
#include "test-temp-dir.h"

#include <fstream>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sstream>
#include <sys/stat.h>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

/// A fresh path in this run's temp dir, which is removed when the test binary exits.
std::string
TempPath(const std::string& name)
{
    static TestTempDir dir("gpusim-cli");
    return dir.Unique(name);
}

bool
Exists(const std::string& p)
{
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

} // namespace

TEST(Cli, CollectivePrintsAnNcclTestsTable)
{
    CliResult r = Cli({"collective", "--servers", "2", "--min-bytes", "1M", "--max-bytes", "64M",
                       "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("allreduce on 16 GPUs"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("algbw"), std::string::npos);
    EXPECT_NE(r.out.find("# Avg bus bandwidth    :"), std::string::npos);
    EXPECT_NE(r.out.find("    67108864      16777216     float"), std::string::npos) << r.out;
}

TEST(Cli, P2pCopyOutOptionReachesTheNcclModel)
{
    // One dgx-h100 server, 32 MiB AllToAll (4 MiB per peer, 4 parts of 2 steps of 512 KiB):
    // NCCL's two copies through its FIFO take 3/2 of the one copy's bytes time (91.15 ->
    // 131.13 us, doc/validation.md "Point-to-point as NCCL splits it").
    auto timeUs = [](const std::string& copyOut) {
        CliResult r = Cli({"collective", "--servers", "1", "--op", "alltoall", "--bytes", "32M",
                           "--p2p-copy-out", copyOut, "--quiet"});
        EXPECT_EQ(r.code, 0) << r.err;
        std::istringstream in(r.out.substr(r.out.find("    33554432")));
        std::string field;
        for (int i = 0; i < 9; ++i)
        {
            in >> field;
        }
        return std::stod(field);
    };
    EXPECT_NEAR(timeUs("true"), 131.13, 0.01);
    EXPECT_NEAR(timeUs("false"), 91.15, 0.01);
}

TEST(Cli, LlRingNetSlotsOptionReachesTheNcclModel)
{
    // 8-byte ring/LL AllReduce on 2 x dgx-h100 (16 ranks, 30 steps, 4 of the data's path across
    // servers): NCCL's 8 steps in flight by default, 6.6 + 26 x 0.6 + 4 x 2.7 = 33.0 us; one at
    // a time, the crossing connection pays the network step on all 30: 6.6 + 30 x 2.7 = 87.6.
    auto timeUs = [](const std::vector<std::string>& extra) {
        std::vector<std::string> args = {"collective", "--servers", "2", "--algo", "ring",
                                         "--proto", "ll", "--bytes", "8", "--quiet"};
        args.insert(args.end(), extra.begin(), extra.end());
        CliResult r = Cli(args);
        EXPECT_EQ(r.code, 0) << r.err;
        std::istringstream in(r.out.substr(r.out.find("\n           8 ") + 1));
        std::string field;
        for (int i = 0; i < 9; ++i)
        {
            in >> field;
        }
        return std::stod(field);
    };
    EXPECT_NEAR(timeUs({}), 33.0, 0.01);
    EXPECT_NEAR(timeUs({"--ll-ring-net-slots", "1"}), 87.6, 0.01);
    // --ring-net-slots is LL128's and Simple's: LL keeps its 8.
    EXPECT_NEAR(timeUs({"--ring-net-slots", "1"}), 33.0, 0.01);
    CliResult bad = Cli({"collective", "--ll-ring-net-slots", "0"});
    EXPECT_EQ(bad.code, 1);
    EXPECT_NE(bad.err.find("--ll-ring-net-slots must be 1 to 64"), std::string::npos) << bad.err;
}

TEST(Cli, CollectiveJsonIsValidAndDeterministic)
{
    const std::string a = TempPath("a.json");
    const std::string b = TempPath("b.json");
    for (const auto& path : {a, b})
    {
        CliResult r = Cli({"collective", "--servers", "2", "--op", "allgather", "--min-bytes",
                           "64K", "--max-bytes", "16M", "--json", path, "--quiet"});
        ASSERT_EQ(r.code, 0) << r.err;
    }
    const std::string text = Slurp(a);
    EXPECT_EQ(text, Slurp(b));
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
    simdjson::dom::array results;
    ASSERT_EQ(doc["results"].get_array().get(results), simdjson::SUCCESS);
    EXPECT_EQ(results.size(), 5u);
    for (auto res : results)
    {
        for (const char* key : {"op", "bytes", "ranks", "algo", "time_us", "algbw_GBps",
                                "busbw_GBps"})
        {
            simdjson::dom::element e;
            EXPECT_EQ(res[key].get(e), simdjson::SUCCESS) << key;
        }
        EXPECT_EQ(std::string_view(res["op"].get_string().value()), "allgather");
        EXPECT_EQ(uint64_t(res["ranks"].get_uint64().value()), 16u);
    }
}

TEST(Cli, EveryOperationRuns)
{
    for (const char* op : {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                           "alltoall", "sendrecv"})
    {
        CliResult r = Cli({"collective", "--servers", "2", "--op", op, "--bytes", "4M", "--quiet"});
        EXPECT_EQ(r.code, 0) << op << ": " << r.err;
        EXPECT_NE(r.out.find("4194304"), std::string::npos) << op;
    }
}

TEST(Cli, TraceIsChromeJsonWithTransfers)
{
    const std::string path = TempPath("t.json");
    CliResult r = Cli({"collective", "--servers", "2", "--gpus-per-server", "2", "--bytes", "1M",
                       "--trace", path, "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string text = Slurp(path);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
    EXPECT_NE(text.find("\"cat\":\"transfer\""), std::string::npos);
    EXPECT_NE(text.find("\"cat\":\"nccl\""), std::string::npos);
    EXPECT_NE(text.find("\"process_name\""), std::string::npos);
}

TEST(Cli, UnknownPresetFailsWithoutOutputFile)
{
    const std::string path = TempPath("x.json");
    CliResult r = Cli({"collective", "--preset", "dgx-z9000", "--json", path});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("unknown preset 'dgx-z9000'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("dgx-h100"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(path));
}

TEST(Cli, ImpossibleTopologyFailsWithoutOutputFile)
{
    const std::string path = TempPath("x.json");
    CliResult r = Cli({"collective", "--gpus-per-server", "8", "--nics-per-server", "3",
                       "--json", path});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("impossible topology"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(path));
    r = Cli({"collective", "--servers", "0", "--json", path});
    EXPECT_EQ(r.code, 2);
    EXPECT_FALSE(Exists(path));
}

// Each bad command line is refused before anything runs (nothing on stdout), with the exit
// code of its kind (1 usage, 2 bad input) and a message naming the offending option or value;
// usage errors print the command's usage.
TEST(Cli, BadOptionsAreUsageErrors)
{
    struct Case
    {
        std::vector<std::string> args;
        int code;
        std::string message;
        std::string usage; //!< usage header expected after the message ("" for exit 2)
    };
    const Case cases[] = {
        {{"collective", "--frobnicate", "1"},
         1,
         "gpusim collective: unknown option --frobnicate",
         "usage: gpusim collective"},
        {{"collective", "--op", "allsmash"},
         1,
         "unknown --op 'allsmash'",
         "usage: gpusim collective"},
        {{"collective", "--min-bytes", "12Q"}, 1, "bad size '12Q'", "usage: gpusim collective"},
        {{"collective", "--efficiency", "1.5"},
         1,
         "--efficiency must be in (0, 1]",
         "usage: gpusim collective"},
        {{"collective", "--backend", "carrier-pigeon"},
         2,
         "unknown backend 'carrier-pigeon' (known: flow, packet)",
         ""},
        {{"collective", "--p2p-copy-out", "maybe"},
         1,
         "--p2p-copy-out must be true or false",
         "usage: gpusim collective"},
        {{"teleport"}, 1, "gpusim: unknown command 'teleport'", "usage: gpusim <command>"},
    };
    for (const Case& c : cases)
    {
        CliResult r = Cli(c.args);
        EXPECT_EQ(r.code, c.code) << c.message;
        EXPECT_EQ(r.out, "") << c.message;
        const size_t at = r.err.find(c.message);
        EXPECT_NE(at, std::string::npos) << r.err;
        if (!c.usage.empty())
        {
            EXPECT_NE(r.err.find(c.usage, at), std::string::npos) << r.err;
        }
        else
        {
            EXPECT_EQ(r.err.find("usage:"), std::string::npos) << r.err;
        }
    }
}

TEST(Cli, SimulateRunsATraceDirectory)
{
    JobBuilder b(4);
    b.AllRanks().CommInit("dp");
    for (int it = 0; it < 2; ++it)
    {
        const std::string name = "ProfilerStep#" + std::to_string(it);
        b.Marker(name, MarkerPhase::Begin).Kernel(1, "fwd", 300).AllReduce(1, "dp", 8 << 20);
        b.SyncDevice().Marker(name, MarkerPhase::End);
    }
    const std::string dir = TempPath("trace");
    WriteJobTrace(b.Build(), dir);
    const std::string json = TempPath("m.json");
    CliResult r = Cli({"simulate", dir, "--json", json});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("ProfilerStep#1"), std::string::npos) << r.out;
    const std::string text = Slurp(json);
    EXPECT_NE(text.find("\"iterations\""), std::string::npos);
    EXPECT_NE(text.find("\"exposed_comm_us\""), std::string::npos);
}

// --fidelity collective replays the repeated AllReduce (6 iterations on 16 GPUs: 1 learnt,
// 1 watched, 4 replayed) and ends within 1 % of --fidelity chunk; a bad value is a usage error.
TEST(Cli, SimulateFidelityCollective)
{
    JobBuilder b(16);
    b.AllRanks().CommInit("dp");
    for (int it = 0; it < 6; ++it)
    {
        b.AllRanks().Kernel(1, "fwd", 300).AllReduce(1, "dp", 32 << 20);
    }
    b.AllRanks().SyncDevice();
    const std::string dir = TempPath("fidelity");
    WriteJobTrace(b.Build(), dir);
    auto endUs = [](const std::string& out) {
        const std::string key = "# end of simulation: ";
        const size_t at = out.find(key);
        return at == std::string::npos ? -1.0 : std::stod(out.substr(at + key.size()));
    };
    CliResult chunk = Cli({"simulate", dir, "--fidelity", "chunk"});
    ASSERT_EQ(chunk.code, 0) << chunk.err;
    EXPECT_EQ(chunk.out.find("collective fidelity"), std::string::npos);
    EXPECT_NE(chunk.out.find("# fidelity: chunk: every collective chunk by chunk"),
              std::string::npos)
        << chunk.out;
    CliResult fast = Cli({"simulate", dir, "--fidelity", "collective"});
    ASSERT_EQ(fast.code, 0) << fast.err;
    EXPECT_NE(fast.out.find("# collective fidelity: 4 collectives replayed, 2 run chunk by "
                            "chunk, 0 conflicts"),
              std::string::npos)
        << fast.out;
    const double a = endUs(chunk.out);
    ASSERT_GT(a, 0);
    EXPECT_NEAR(endUs(fast.out), a, 0.01 * a);
    // flows with ring AllReduces: all 6 run as edge flows, same end within 1 % of chunk.
    CliResult ringChunk = Cli({"simulate", dir, "--algo", "ring", "--fidelity", "chunk"});
    ASSERT_EQ(ringChunk.code, 0) << ringChunk.err;
    CliResult flows = Cli({"simulate", dir, "--algo", "ring", "--fidelity", "flows"});
    ASSERT_EQ(flows.code, 0) << flows.err;
    EXPECT_NE(flows.out.find(", 6 rings run as edge flows"), std::string::npos) << flows.out;
    const double ringEnd = endUs(ringChunk.out);
    ASSERT_GT(ringEnd, 0);
    EXPECT_NEAR(endUs(flows.out), ringEnd, 0.01 * ringEnd);
    CliResult bad = Cli({"simulate", dir, "--fidelity", "fast"});
    EXPECT_EQ(bad.code, 1);
    EXPECT_NE(bad.err.find("--fidelity must be auto, chunk, collective or flows"),
              std::string::npos)
        << bad.err;
}

// The default fidelity is auto: each collective takes the exact shortcut that applies to it
// and the report says which; --fidelity chunk forces the detailed model, and the times agree
// within auto's documented tolerance (0.1 %).
TEST(Cli, FidelityAutoIsTheDefaultAndSaysWhatItUsed)
{
    auto timeUs = [](const std::string& out, const std::string& size) {
        const size_t at = out.find("\n" + size + " ");
        if (at == std::string::npos)
        {
            return -1.0;
        }
        std::istringstream line(out.substr(at + 1, out.find('\n', at + 1) - at - 1));
        std::string word;
        std::vector<std::string> words;
        while (line >> word)
        {
            words.push_back(word);
        }
        return words.size() >= 9 ? std::stod(words[8]) : -1.0;
    };
    // A ring AllReduce as edge flows.
    CliResult fast =
        Cli({"collective", "--servers", "2", "--bytes", "64M", "--algo", "ring", "--quiet"});
    ASSERT_EQ(fast.code, 0) << fast.err;
    EXPECT_NE(fast.out.find("# fidelity: auto: 1 collective as edge flows, 0 replayed, 0 chunk "
                            "by chunk; shortcuts only where exact (within 0.1 % of --fidelity "
                            "chunk)\n"),
              std::string::npos)
        << fast.out;
    CliResult chunk = Cli({"collective", "--servers", "2", "--bytes", "64M", "--algo", "ring",
                           "--quiet", "--fidelity", "chunk"});
    ASSERT_EQ(chunk.code, 0) << chunk.err;
    EXPECT_NE(chunk.out.find("# fidelity: chunk: every collective chunk by chunk (the detailed "
                             "model)\n"),
              std::string::npos)
        << chunk.out;
    const double a = timeUs(chunk.out, "    67108864");
    ASSERT_GT(a, 0) << chunk.out;
    EXPECT_NEAR(timeUs(fast.out, "    67108864"), a, 1e-3 * a);

    // A tree has no edge-flow form and one instance is never replayed: chunk level, and why.
    const std::string json = TempPath("fidelity.json");
    CliResult tree = Cli({"collective", "--servers", "2", "--min-bytes", "1M", "--max-bytes",
                          "4M", "--algo", "tree", "--json", json, "--quiet"});
    ASSERT_EQ(tree.code, 0) << tree.err;
    EXPECT_NE(tree.out.find("# fidelity: auto: 0 collectives as edge flows, 0 replayed, 2 chunk "
                            "by chunk (2 no edge-flow form, learnt for replay)"),
              std::string::npos)
        << tree.out;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(Slurp(json)).get(doc), simdjson::SUCCESS);
    EXPECT_EQ(std::string_view(doc["fidelity"]["mode"].get_string().value()), "auto");
    EXPECT_EQ(uint64_t(doc["fidelity"]["chunk"].get_uint64().value()), 2u);
    EXPECT_EQ(uint64_t(doc["fidelity"]["chunk_reasons"]["learning"].get_uint64().value()), 2u);
    EXPECT_EQ(uint64_t(doc["fidelity"]["edge_flows"].get_uint64().value()), 0u);
    simdjson::dom::array results;
    ASSERT_EQ(doc["results"].get_array().get(results), simdjson::SUCCESS);
    EXPECT_EQ(results.size(), 2u);
    for (auto res : results)
    {
        EXPECT_EQ(std::string_view(res["path"].get_string().value()), "chunk");
    }

    // NVLSTree (the tuner's choice for 256 MiB on 2 dgx-h100 servers) runs by one rail.
    const std::string railJson = TempPath("fidelity-rail.json");
    CliResult rail = Cli({"collective", "--servers", "2", "--bytes", "256M", "--json", railJson,
                          "--quiet"});
    ASSERT_EQ(rail.code, 0) << rail.err;
    EXPECT_NE(rail.out.find("# fidelity: auto: 0 collectives as edge flows, 1 by one rail "
                            "(NVLS/NVLSTree), 0 replayed, 0 chunk by chunk;"),
              std::string::npos)
        << rail.out;
    simdjson::dom::element railDoc;
    ASSERT_EQ(parser.parse(Slurp(railJson)).get(railDoc), simdjson::SUCCESS);
    EXPECT_EQ(uint64_t(railDoc["fidelity"]["one_rail"].get_uint64().value()), 1u);
    simdjson::dom::array railResults;
    ASSERT_EQ(railDoc["results"].get_array().get(railResults), simdjson::SUCCESS);
    for (auto res : railResults)
    {
        EXPECT_EQ(std::string_view(res["path"].get_string().value()), "one-rail");
    }

    // The packet backend has no shortcut: chunk level, "not the flow backend".
    CliResult packet = Cli({"collective", "--servers", "2", "--gpus-per-server", "2",
                            "--backend", "packet", "--bytes", "1M", "--quiet"});
    ASSERT_EQ(packet.code, 0) << packet.err;
    EXPECT_NE(packet.out.find("# fidelity: auto: 0 collectives as edge flows, 0 replayed, 1 "
                              "chunk by chunk (1 not the flow backend)"),
              std::string::npos)
        << packet.out;

    // simulate: repeated ring AllReduces (the first of each op as edge flows, then the same).
    JobBuilder b(16);
    b.AllRanks().CommInit("dp");
    for (int it = 0; it < 4; ++it)
    {
        b.AllRanks().Kernel(1, "fwd", 300).AllReduce(1, "dp", 32 << 20);
    }
    b.AllRanks().SyncDevice();
    const std::string dir = TempPath("auto");
    WriteJobTrace(b.Build(), dir);
    const std::string metrics = TempPath("auto-metrics.json");
    CliResult sim = Cli({"simulate", dir, "--algo", "ring", "--json", metrics});
    ASSERT_EQ(sim.code, 0) << sim.err;
    simdjson::dom::element m;
    ASSERT_EQ(parser.parse(Slurp(metrics)).get(m), simdjson::SUCCESS);
    EXPECT_EQ(uint64_t(m["fidelity"]["edge_flows"].get_uint64().value()), 4u);
    simdjson::dom::array colls;
    ASSERT_EQ(m["collectives"].get_array().get(colls), simdjson::SUCCESS);
    EXPECT_EQ(colls.size(), 4u);
    for (auto c : colls)
    {
        EXPECT_EQ(std::string_view(c["path"].get_string().value()), "edge-flows");
    }
    EXPECT_NE(sim.out.find("# fidelity: auto: 4 collectives as edge flows, 0 replayed, 0 chunk "
                           "by chunk"),
              std::string::npos)
        << sim.out;
    EXPECT_EQ(sim.out.find("# collective fidelity:"), std::string::npos) << sim.out;
}

TEST(Cli, SimulateReportsMalformedTraceByFileAndLine)
{
    const std::string dir = TempPath("bad");
    ::mkdir(dir.c_str(), 0755);
    std::ofstream(dir + "/manifest.json")
        << R"({"format":"gpusim-trace","version":1,"ranks":[{"rank":0,"file":"rank-0.jsonl"}]})";
    std::ofstream(dir + "/rank-0.jsonl") << "{\"op\":\"kernel\"}\n{\"op\":\"kernel\",\"dur_us\":}\n";
    const std::string json = TempPath("m.json");
    CliResult r = Cli({"simulate", dir, "--json", json});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("rank-0.jsonl:2: invalid JSON"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(json));
}

TEST(Cli, SimulateStuckJobExitsNonZeroAndNamesTheWait)
{
    JobBuilder b(2);
    b.Rank(0).Thread(0).Wait(9);
    b.Rank(1).Kernel(1, "k", 5);
    const std::string dir = TempPath("stuck");
    WriteJobTrace(b.Build(), dir);
    const std::string json = TempPath("m.json");
    CliResult r = Cli({"simulate", dir, "--json", json});
    EXPECT_EQ(r.code, 3);
    EXPECT_NE(r.err.find("wait for token 9"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(json));
}

TEST(Cli, JsonCarriesNetworkStatisticsForBothBackends)
{
    const std::string flowJson = TempPath("flow.json");
    CliResult r = Cli({"collective", "--servers", "2", "--bytes", "4M", "--json", flowJson,
                       "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    std::string text = Slurp(flowJson);
    EXPECT_NE(text.find("\"network\":{\"backend\":\"flow\""), std::string::npos);
    EXPECT_NE(text.find("\"mean_utilisation\""), std::string::npos);

    const std::string packetJson = TempPath("packet.json");
    const std::string csv = TempPath("net");
    r = Cli({"collective", "--servers", "4", "--gpus-per-server", "1", "--nic-gbps", "100",
             "--bytes", "4M", "--backend", "packet", "--sample-us", "50", "--net-csv", csv,
             "--json", packetJson, "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    text = Slurp(packetJson);
    EXPECT_NE(text.find("\"ecn_marks\""), std::string::npos);
    EXPECT_NE(text.find("\"retransmissions\""), std::string::npos);
    EXPECT_NE(text.find("\"samples\""), std::string::npos);
    EXPECT_TRUE(Exists(csv + "-4194304B-links.csv"));
    EXPECT_TRUE(Exists(csv + "-4194304B-transfers.csv"));
    // Packet-only options are refused with the flow backend.
    EXPECT_EQ(Cli({"collective", "--net-csv", csv}).code, 1);
}

TEST(Cli, SimulateMetricsIncludeTheNetwork)
{
    JobBuilder b(2);
    b.AllRanks().CommInit("c").AllReduce(1, "c", 1 << 20).SyncDevice();
    const std::string dir = TempPath("net-trace");
    WriteJobTrace(b.Build(), dir);
    const std::string json = TempPath("m.json");
    CliResult r = Cli({"simulate", dir, "--json", json});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(Slurp(json).find("\"network\":{\"backend\":\"flow\""), std::string::npos);
}

TEST(Cli, NoCommandPrintsHelpAndSucceeds)
{
    // An ns-3 tree runs every program without arguments (ctest-gpusim); that is a help request.
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(ns3::gpusim::GpusimMain({}, out, err), 0);
    EXPECT_NE(out.str().find("usage: gpusim <command>"), std::string::npos);
    EXPECT_EQ(err.str(), "");
    std::ostringstream out2;
    std::ostringstream err2;
    EXPECT_EQ(ns3::gpusim::GpusimMain({"no-such-command"}, out2, err2), 1);
    EXPECT_NE(err2.str().find("unknown command 'no-such-command'"), std::string::npos);
}
