/*
 * gpusim chakra: convert between Chakra execution traces (MLCommons / ASTRA-sim) and gpusim
 * trace directories (doc/chakra.md).
 */
#ifndef GPUSIM_CHAKRA_COMMAND_H
#define GPUSIM_CHAKRA_COMMAND_H

#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// gpusim chakra import|export|info ...; returns 0 ok, 1 usage, 2 bad input.
int ChakraCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_CHAKRA_COMMAND_H
