// One option parser for every command: repeatable options keep every value, any other option
// given twice is a usage error, and `record`/`run` split their program command line off.
#include "cli-test-util.h"

#include "ns3/cli-options.h"
#include "ns3/job-builder.h"
#include "ns3/op-ir.h"

#include <cstdio>
#include <cstdlib>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace ns3;
using namespace ns3::gpusim;

TEST(CliOptions, RepeatableOptionsKeepEveryValueOthersMustNotRepeat)
{
    Options o({"--scale-kernels", "a=0.5", "--scale-kernels=b=2", "--json", "x"},
              {"scale-kernels", "json"}, {});
    EXPECT_EQ(o.All("scale-kernels"), (std::vector<std::string>{"a=0.5", "b=2"}));
    EXPECT_THROW(Options({"--json", "x", "--json", "y"}, {"json"}, {}), UsageError);
    EXPECT_THROW(Options({"--gpus", "1", "--gpus=2"}, {"gpus"}, {}), UsageError);
}

TEST(CliOptions, ProgramAfterDashDashOrFirstWord)
{
    Options a({"--gpus", "2", "--", "prog", "--gpus", "9"}, {"gpus"}, {"help"}, true);
    EXPECT_EQ(a.Get("gpus", ""), "2");
    EXPECT_EQ(a.Program(), (std::vector<std::string>{"prog", "--gpus", "9"}));
    Options b({"--gpus", "2", "prog", "-x"}, {"gpus"}, {}, true);
    EXPECT_EQ(b.Program(), (std::vector<std::string>{"prog", "-x"}));
    Options c({"--help"}, {"gpus"}, {"help"}, true);
    EXPECT_TRUE(c.Has("help"));
    EXPECT_TRUE(c.Program().empty());
}

TEST(CliOptions, KernelScaleValuesAreChecked)
{
    std::string re;
    double f = 0;
    ParseKernelScale("gemm|conv=0.25", re, f);
    EXPECT_EQ(re, "gemm|conv");
    EXPECT_EQ(f, 0.25);
    EXPECT_THROW(ParseKernelScale("gemm", re, f), UsageError);
    EXPECT_THROW(ParseKernelScale("gemm=-1", re, f), UsageError);
    EXPECT_THROW(ParseKernelScale("gemm=fast", re, f), UsageError);
    EXPECT_THROW(ParseKernelScale("(gemm=0.5", re, f), UsageError);
}

// simulate --scale-kernels given twice applies both (it used to keep only the last). One rank,
// kernels "alpha" and "beta" of 100 us each in sequence: 200 us; both halved: 100 us; only
// beta halved (the old behaviour): 150 us.
TEST(CliOptions, SimulateHonoursEveryScaleKernels)
{
    char tmpl[] = "/tmp/gpusim-cli-opts-XXXXXX";
    const std::string dir = ::mkdtemp(tmpl);
    JobBuilder b(1);
    b.AllRanks().CreateStream(1).Kernel(1, "alpha", 100.0).Kernel(1, "beta", 100.0).SyncStream(1);
    WriteJobTrace(*b.BuildShared(), dir + "/t");
    auto endUs = [](const CliResult& r) {
        auto p = r.out.find("# end of simulation: ");
        return p == std::string::npos ? -1.0 : std::atof(r.out.c_str() + p + 21);
    };
    CliResult one = Cli({"simulate", dir + "/t", "--servers", "1"});
    CliResult both = Cli({"simulate", dir + "/t", "--servers", "1", "--scale-kernels", "alpha=0.5",
                          "--scale-kernels", "beta=0.5"});
    CliResult twice = Cli({"simulate", dir + "/t", "--servers", "1", "--servers", "2"});
    EXPECT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
    ASSERT_EQ(one.code, 0) << one.err;
    ASSERT_EQ(both.code, 0) << both.err;
    EXPECT_NEAR(endUs(one), 200.0, 0.01);
    EXPECT_NEAR(endUs(both), 100.0, 0.01);
    EXPECT_EQ(twice.code, 1);
    EXPECT_NE(twice.err.find("given twice"), std::string::npos) << twice.err;
}

// record and run parse with the same parser: a repeated option is a usage error.
TEST(CliOptions, RecordAndRunRejectRepeatedOptions)
{
    CliResult rec = Cli({"record", "--gpus", "1", "--gpus", "2", "--", "true"});
    EXPECT_EQ(rec.code, 1);
    EXPECT_NE(rec.err.find("given twice"), std::string::npos) << rec.err;
    CliResult run = Cli({"run", "--host-time", "fixed:1", "--host-time", "measured", "--", "true"});
    EXPECT_EQ(run.code, 1);
    EXPECT_NE(run.err.find("given twice"), std::string::npos) << run.err;
}
