/*
 * gpusim simai: SimAI / AICB workload files (doc/simai.md) as gpusim trace directories.
 */
#ifndef GPUSIM_SIMAI_COMMAND_H
#define GPUSIM_SIMAI_COMMAND_H

#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// gpusim simai import|info ...; returns 0 ok, 1 usage, 2 bad input.
int SimaiCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_SIMAI_COMMAND_H
