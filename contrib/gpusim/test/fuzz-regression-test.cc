// Fuzz regressions (doc/fuzzing.md): every file under test/data/fuzz-regressions/<target>/ is an
// input on which the fuzz target test/fuzz/<target>-fuzz.cc found a crash, hang or runaway
// allocation. Each goes through the same reader entry as the target and must now end in the
// reader's documented error (TraceFormatError or std::runtime_error), not a crash.
#include "ns3/chakra-trace.h"
#include "ns3/cluster-spec.h"
#include "ns3/kineto-trace.h"
#include "ns3/live-job-source.h"
#include "ns3/llm-model.h"
#include "ns3/op-ir.h"
#include "ns3/profile-table-cost-model.h"
#include "ns3/validate-command.h"
#include "ns3/validate-training-command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{

const std::string kRegressions =
    std::string(GPUSIM_SOURCE_DIR) + "/contrib/gpusim/test/data/fuzz-regressions/";

/// The regression inputs of a target, sorted; none when it has no directory.
std::vector<std::string>
Inputs(const std::string& target)
{
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(kRegressions + target, ec))
    {
        if (e.is_regular_file())
        {
            out.push_back(e.path().string());
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string
Bytes(const std::string& file)
{
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Each line of `text` through `parse(line, lineNo)` (lines as the fuzz target splits them).
void
EachLine(const std::string& text, const std::function<void(std::string_view, uint64_t)>& parse)
{
    uint64_t lineNo = 0;
    for (size_t start = 0; start <= text.size();)
    {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos)
        {
            nl = text.size();
        }
        parse(std::string_view(text.data() + start, nl - start), ++lineNo);
        start = nl + 1;
    }
}

/// Runs `read` on every regression input of `target`; each must throw E (and nothing else).
template <typename E>
void
ExpectEachThrows(const std::string& target, const std::function<void(const std::string&)>& read)
{
    for (const std::string& file : Inputs(target))
    {
        SCOPED_TRACE(file);
        bool threw = false;
        try
        {
            read(file);
        }
        catch (const E& e)
        {
            threw = true;
            EXPECT_STRNE(e.what(), "");
        }
        EXPECT_TRUE(threw) << file << " was read without the reader's error";
    }
}

} // namespace

TEST(FuzzRegression, InputsFound)
{
    EXPECT_FALSE(Inputs("op-ir").empty()) << "no regression inputs under " << kRegressions;
}

TEST(FuzzRegression, Kineto)
{
    ExpectEachThrows<TraceFormatError>("kineto", [](const std::string& f) {
        KinetoTrace trace = ParseKinetoJson(Bytes(f), f);
        KinetoGraph graph = BuildKinetoGraph(trace);
        KinetoToRankTrace(trace, graph);
    });
}

TEST(FuzzRegression, Chakra)
{
    ExpectEachThrows<TraceFormatError>("chakra", [](const std::string& f) {
        ChakraJob job;
        job.ranks.push_back(ReadChakraFile(f));
        ChakraToJobTrace(job, ChakraP2p::Eager);
        ChakraToJobTrace(job, ChakraP2p::Rendezvous);
    });
}

TEST(FuzzRegression, OpIr)
{
    ExpectEachThrows<TraceFormatError>("op-ir", [](const std::string& f) {
        EachLine(Bytes(f), [&](std::string_view line, uint64_t n) {
            ParseOpLine(OpToJsonLine(ParseOpLine(line.data(), line.size(), f, n)), f, n);
        });
    });
}

TEST(FuzzRegression, ClusterYaml)
{
    ExpectEachThrows<std::runtime_error>("cluster-yaml", [](const std::string& f) {
        ParseClusterSpecYaml(Bytes(f), f);
    });
}

TEST(FuzzRegression, ModelYaml)
{
    ExpectEachThrows<std::runtime_error>("model-yaml", [](const std::string& f) {
        ParseModelSpecYaml(Bytes(f), f);
    });
}

TEST(FuzzRegression, KernelTable)
{
    ExpectEachThrows<TraceFormatError>("kernel-table",
                                       [](const std::string& f) { LoadKernelTable(f); });
}

TEST(FuzzRegression, LiveLine)
{
    ExpectEachThrows<std::runtime_error>("live-line", [](const std::string& f) {
        EachLine(Bytes(f), [&](std::string_view line, uint64_t n) {
            if (line.empty())
            {
                return;
            }
            const LiveLine msg = ParseLiveLine(line, 16, f, n);
            if (msg.kind != 'H')
            {
                ParseOpLine(msg.json.data(), msg.json.size(), f, n);
            }
        });
    });
}

TEST(FuzzRegression, ValidateTable)
{
    ExpectEachThrows<std::runtime_error>("validate-table", [](const std::string& f) {
        ReadValidationTables(f, 0, std::numeric_limits<uint64_t>::max(), "");
    });
}

TEST(FuzzRegression, ValidateTrainingTable)
{
    ExpectEachThrows<std::runtime_error>("validate-training-table",
                                         [](const std::string& f) { ReadTrainingValidation(f, ""); });
}

// ParseLiveLine is LiveJobSource's line parser, exposed for the live-line target: what it
// reads and the messages it ends a run with (Live.UntrustedInputEndsTheRunNamingTheProcess
// checks them through a real run).
TEST(FuzzRegression, LiveLineParser)
{
    const LiveLine hello = ParseLiveLine("HELLO 12 34", 4, "live", 1);
    EXPECT_EQ(hello.kind, 'H');
    EXPECT_EQ(hello.pid, 12);
    EXPECT_EQ(hello.tid, 34);
    const LiveLine wait = ParseLiveLine("W 3 {\"op\":\"device_sync\"}", 4, "live", 2);
    EXPECT_EQ(wait.kind, 'W');
    EXPECT_EQ(wait.rank, 3u);
    EXPECT_EQ(wait.json, "{\"op\":\"device_sync\"}");
    auto error = [](const std::string& line) {
        try
        {
            ParseLiveLine(line, 4, "live", 7);
        }
        catch (const std::runtime_error& e)
        {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(error("HELLO x"), "live: bad hello 'HELLO x'");
    EXPECT_EQ(error("HELLO 0 1"), "live: bad hello 'HELLO 0 1'");
    EXPECT_EQ(error("garbage"), "live, line 7: not a gpusim live message: 'garbage'");
    EXPECT_EQ(error("O 4 {}"), "live, line 7: rank out of range in 'O 4 {}' (the job has 4 GPUs)");
    EXPECT_EQ(error("O x {}"), "live, line 7: rank out of range in 'O x {}' (the job has 4 GPUs)");
    EXPECT_EQ(error("O 1234567890123 {}"),
              "live, line 7: rank out of range in 'O 1234567890123 {}' (the job has 4 GPUs)");
}
