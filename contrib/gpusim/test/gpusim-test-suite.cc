/*
 * In-tree builds only (ns-3-dev tree with tests enabled): the ns-3 test suite "gpusim", so that
 * test.py and test-runner run gpusim's GoogleTest suites. They are one program (gpusim-tests,
 * built beside this library); this suite runs it and fails with the names of the failed tests.
 * Standalone builds run gpusim-tests directly through ctest and do not compile this file.
 */
#include "ns3/test.h"

#include <array>
#include <cstdio>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace ns3
{
namespace gpusim
{
namespace
{

class GoogleTestProgramCase : public TestCase
{
  public:
    GoogleTestProgramCase()
        : TestCase("gpusim GoogleTest suites (gpusim-tests)")
    {
    }

  private:
    void DoRun() override
    {
        const std::string command = std::string("'") + GPUSIM_GTEST_PROGRAM + "' --gtest_brief=1 2>&1";
        FILE* pipe = popen(command.c_str(), "r");
        NS_TEST_ASSERT_MSG_NE(pipe, nullptr, "cannot start " << GPUSIM_GTEST_PROGRAM);
        std::string output;
        std::array<char, 4096> buf;
        size_t n;
        while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0)
        {
            output.append(buf.data(), n);
        }
        const int status = pclose(pipe);
        std::istringstream lines(output);
        std::string line;
        std::string failed;
        while (std::getline(lines, line))
        {
            if (line.rfind("[  FAILED  ]", 0) == 0)
            {
                failed += line + "\n";
            }
        }
        const bool passed = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        NS_TEST_ASSERT_MSG_EQ(passed,
                              true,
                              GPUSIM_GTEST_PROGRAM << " failed (status " << status << "):\n"
                                                   << (failed.empty() ? output : failed));
    }
};

class GpusimTestSuite : public TestSuite
{
  public:
    GpusimTestSuite()
        : TestSuite("gpusim", UNIT)
    {
        AddTestCase(new GoogleTestProgramCase, TestCase::QUICK);
    }
};

GpusimTestSuite g_gpusimTestSuite;

} // namespace
} // namespace gpusim
} // namespace ns3
