/*
 * gpusim jobs: several jobs on one cluster (doc/multi-job.md). A scenario file lists the jobs
 * (a trace directory / Chakra ET / SimAI file, a generated training job or a collective loop),
 * each with its placement and start time; the command runs them together on one fabric and
 * reports each job's iterations and which job's bytes crossed which link.
 */
#ifndef GPUSIM_JOBS_COMMAND_H
#define GPUSIM_JOBS_COMMAND_H

#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// gpusim jobs SCENARIO.yaml ...; returns 0 ok, 1 usage, 2 bad input, 3 a job did not finish.
int JobsCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_JOBS_COMMAND_H
