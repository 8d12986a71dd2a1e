/*
 * Command-line helpers shared by the gpusim subcommands (gpusim-commands.cc,
 * replay-command.cc): "--key value" option parsing and the cluster options every command
 * that builds a cluster accepts.
 */
#ifndef GPUSIM_CLI_OPTIONS_H
#define GPUSIM_CLI_OPTIONS_H

#include "ns3/cluster-spec.h"
#include "ns3/launch-plan.h"

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// Bad command line: the commands print their usage and exit 1.
struct UsageError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

/// "--key value" / "--key=value" options; flags take no value. Only the options in
/// kRepeatableOptions may be given several times (All() returns every value, in order); any
/// other option given twice is a usage error, never silently dropped.
/// With `programAfter`, "--" or the first word that is not an option ends the options and the
/// rest is a program command line (Program()), as `record` and `run` take it.
class Options
{
  public:
    Options(const std::vector<std::string>& args,
            const std::set<std::string>& valued,
            const std::set<std::string>& flags,
            bool programAfter = false);

    bool Has(const std::string& k) const;
    /// The command takes option k (valued or a flag), given or not.
    bool Accepts(const std::string& k) const;
    std::string Get(const std::string& k, const std::string& def) const;
    /// Every value given for k, in command-line order.
    std::vector<std::string> All(const std::string& k) const;
    /// A finite number; throws UsageError otherwise.
    double Number(const std::string& k, double def) const;
    /// A non-negative integer; throws UsageError otherwise.
    uint32_t Count(const std::string& k, uint32_t def) const;
    const std::vector<std::string>& Positional() const;
    /// The program command line (programAfter only; empty if none was given).
    const std::vector<std::string>& Program() const;

  private:
    std::map<std::string, std::vector<std::string>> m_values;
    std::set<std::string> m_accepted; //!< valued options and flags
    std::vector<std::string> m_positional;
    std::vector<std::string> m_program;
};

/// Options that may be given several times (each value counts).
extern const std::set<std::string> kRepeatableOptions;

/// Parses one "--scale-kernels REGEX=FACTOR" value (FACTOR >= 0, REGEX a valid ECMAScript
/// regular expression). Throws UsageError naming what is wrong.
void ParseKernelScale(const std::string& s, std::string& regex, double& factor);

/// Options that SpecFromOptions() reads.
extern const std::set<std::string> kClusterOptions;

/// Builds the cluster spec from --preset / --cluster and the per-field overrides; with no
/// --servers, enough servers for minGpus GPUs. A command that takes --background (repeatable,
/// background-traffic.h items) gets them added to the cluster file's background: section;
/// any other command refuses a cluster file with one (it would not run it).
ClusterSpec SpecFromOptions(const Options& o, uint32_t minGpus);

/// Options that LaunchPlanFromOptions() reads (how `run` and `record` start the processes).
extern const std::set<std::string> kLaunchOptions;

/// The processes of a job on `gpus` GPUs of servers with `gpusPerServer` GPUs each, from
/// --nproc-per-node P (default one per GPU) or --devices-per-process D (D GPUs pinned to each
/// process). Throws UsageError naming what is wrong.
LaunchPlan LaunchPlanFromOptions(const Options& o, uint32_t gpus, uint32_t gpusPerServer);

/// Options that HostTimeEnvironment() reads.
extern const std::set<std::string> kHostTimeOptions;

/// The shim's environment for --host-time measured|api-only|fixed:US (default measured) and
/// --api-costs FILE (host costs per call overriding the built-in table; made absolute).
/// Throws UsageError naming what is wrong.
std::map<std::string, std::string> HostTimeEnvironment(const Options& o);

/// One line describing a cluster ("4 servers x 8 GPUs (H100), ...").
std::string DescribeCluster(const ClusterSpec& s);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_CLI_OPTIONS_H
