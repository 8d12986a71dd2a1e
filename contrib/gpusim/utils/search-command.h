/*
 * gpusim search: the best Megatron-style parallelism plan for a model, a cluster and a global
 * batch (doc/search.md). Enumerates plans (helper/plan-search.h), drops those that do not fit
 * in device memory (closed form), sorts the rest by a lower bound of their iteration time,
 * simulates them in forked worker processes (--jobs) until a bound exceeds the best time found
 * (--exhaustive: all), and prints a ranked table, --json and an --svg plot.
 */
#ifndef GPUSIM_SEARCH_COMMAND_H
#define GPUSIM_SEARCH_COMMAND_H

#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

int SearchCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_SEARCH_COMMAND_H
