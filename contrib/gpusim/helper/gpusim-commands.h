/*
 * The gpusim command-line front door, as library functions so tests can drive them.
 * Each returns the process exit code: 0 success, 1 usage, 2 bad input, 3 stuck run.
 */
#ifndef GPUSIM_GPUSIM_COMMANDS_H
#define GPUSIM_GPUSIM_COMMANDS_H

#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// argv[0] is the subcommand name's first argument (not the program or subcommand name).
int CollectiveCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int SimulateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// Dispatches `gpusim <command> ...`; args excludes the program name.
int GpusimMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// Parses "64", "4K", "16M", "1G" (binary multiples, as nccl-tests). Throws on bad input.
uint64_t ParseBytes(const std::string& s);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_GPUSIM_COMMANDS_H
