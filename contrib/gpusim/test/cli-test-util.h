// Runs gpusim commands in-process for tests, capturing stdout, stderr and the exit code.
#ifndef GPUSIM_CLI_TEST_UTIL_H
#define GPUSIM_CLI_TEST_UTIL_H

#include "ns3/gpusim-commands.h"

#include <fstream>
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

/// The whole content of a file ("" if it cannot be read).
inline std::string
Slurp(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

#endif // GPUSIM_CLI_TEST_UTIL_H
