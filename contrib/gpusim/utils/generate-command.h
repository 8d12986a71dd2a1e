/*
 * gpusim generate: an LLM training iteration from a model description and a parallelism plan
 * (doc/generate.md). Writes the trace directory `gpusim simulate` runs (--out DIR) and/or
 * simulates it directly (--simulate) and reports iteration time, TFLOP/s per GPU, MFU, the
 * exposed compute / communication / pipeline bubble per stage and peak memory per rank. A plan
 * that does not fit in device memory is reported as OOM (rank and allocation), exit code 4.
 */
#ifndef GPUSIM_GENERATE_COMMAND_H
#define GPUSIM_GENERATE_COMMAND_H

#include "ns3/cli-options.h"
#include "ns3/llm-model.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// Exit code of an infeasible (out-of-memory) plan.
constexpr int kExitOutOfMemory = 4;

/// The valued options and flags ModelAndPlanFromOptions() reads.
extern const std::set<std::string> kPlanOptions;
extern const std::set<std::string> kPlanFlags;

/// The model (--model NAME or --model-file YAML) and plan options of `gpusim generate`.
/// `clusterGpus` is the cluster size (0: unknown), used for DP when --dp is not given.
void ModelAndPlanFromOptions(const Options& o,
                             uint32_t clusterGpus,
                             ModelSpec& model,
                             TrainingPlan& plan);

int GenerateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_GENERATE_COMMAND_H
