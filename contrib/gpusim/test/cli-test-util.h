// Runs gpusim commands in-process for tests, capturing stdout, stderr and the exit code.
#ifndef GPUSIM_CLI_TEST_UTIL_H
#define GPUSIM_CLI_TEST_UTIL_H

#include "ns3/gpusim-commands.h"

#include <sstream>
#include <string>
#include <vector>

struct CliResult
{
    int code;
    std::string out;
    std::string err;
};

inline CliResult
Cli(const std::vector<std::string>& args)
{
    std::ostringstream out, err;
    int code = ns3::gpusim::GpusimMain(args, out, err);
    return {code, out.str(), err.str()};
}

#endif // GPUSIM_CLI_TEST_UTIL_H
