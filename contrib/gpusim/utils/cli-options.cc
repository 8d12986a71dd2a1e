#include "ns3/cli-options.h"

#include "ns3/background-traffic.h"
#include "ns3/gpu-spec.h"
#include "ns3/nccl-version.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace ns3
{
namespace gpusim
{

const std::set<std::string> kRepeatableOptions = {"scale-kernels", "no-dep", "link-down",
                                                   "link-rate", "straggler", "background"};

Options::Options(const std::vector<std::string>& args,
                 const std::set<std::string>& valued,
                 const std::set<std::string>& flags,
                 bool programAfter)
    : m_accepted(valued)
{
    m_accepted.insert(flags.begin(), flags.end());
    for (size_t i = 0; i < args.size(); ++i)
    {
        const std::string& a = args[i];
        if (programAfter && (a == "--" || a.rfind("--", 0) != 0))
        {
            m_program.assign(args.begin() + i + (a == "--" ? 1 : 0), args.end());
            break;
        }
        if (a.rfind("--", 0) != 0)
        {
            m_positional.push_back(a);
            continue;
        }
        std::string key = a.substr(2);
        std::string value;
        bool hasValue = false;
        auto eq = key.find('=');
        if (eq != std::string::npos)
        {
            value = key.substr(eq + 1);
            key = key.substr(0, eq);
            hasValue = true;
        }
        if (flags.count(key))
        {
            m_values[key] = {"1"};
            continue;
        }
        if (!valued.count(key))
        {
            throw UsageError("unknown option --" + key);
        }
        if (!hasValue)
        {
            if (i + 1 >= args.size())
            {
                throw UsageError("option --" + key + " needs a value");
            }
            value = args[++i];
        }
        if (m_values.count(key) && !kRepeatableOptions.count(key))
        {
            throw UsageError("option --" + key + " given twice ('" + m_values[key].back() +
                             "' and '" + value + "')");
        }
        m_values[key].push_back(value);
    }
}

const std::vector<std::string>&
Options::Program() const
{
    return m_program;
}

void
ParseKernelScale(const std::string& s, std::string& regex, double& factor)
{
    const auto eq = s.rfind('=');
    if (eq == std::string::npos || eq == 0)
    {
        throw UsageError("--scale-kernels expects REGEX=FACTOR, got '" + s + "'");
    }
    regex = s.substr(0, eq);
    const std::string f = s.substr(eq + 1);
    char* end = nullptr;
    factor = std::strtod(f.c_str(), &end);
    if (f.empty() || *end != '\0' || !std::isfinite(factor) || factor < 0)
    {
        throw UsageError("--scale-kernels factor must be a number >= 0, got '" + f + "'");
    }
    try
    {
        std::regex check(regex);
    }
    catch (const std::regex_error& e)
    {
        throw UsageError("--scale-kernels: bad regular expression '" + regex + "': " + e.what());
    }
}

bool
Options::Has(const std::string& k) const
{
    return m_values.count(k) != 0;
}

bool
Options::Accepts(const std::string& k) const
{
    return m_accepted.count(k) != 0;
}

std::string
Options::Get(const std::string& k, const std::string& def) const
{
    auto it = m_values.find(k);
    return it == m_values.end() ? def : it->second.back();
}

std::vector<std::string>
Options::All(const std::string& k) const
{
    auto it = m_values.find(k);
    return it == m_values.end() ? std::vector<std::string>{} : it->second;
}

double
Options::Number(const std::string& k, double def) const
{
    if (!Has(k))
    {
        return def;
    }
    const std::string v = Get(k, "");
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(d))
    {
        throw UsageError("option --" + k + " expects a number, got '" + v + "'");
    }
    return d;
}

uint32_t
Options::Count(const std::string& k, uint32_t def) const
{
    double d = Number(k, def);
    if (d < 0 || d != std::floor(d) || d > 1e9)
    {
        throw UsageError("option --" + k + " expects a non-negative integer");
    }
    return static_cast<uint32_t>(d);
}

const std::vector<std::string>&
Options::Positional() const
{
    return m_positional;
}

const std::set<std::string> kLaunchOptions = {"nproc-per-node", "devices-per-process"};

LaunchPlan
LaunchPlanFromOptions(const Options& o, uint32_t gpus, uint32_t gpusPerServer)
{
    if (o.Has("nproc-per-node") && o.Has("devices-per-process"))
    {
        throw UsageError("give --nproc-per-node or --devices-per-process, not both");
    }
    LaunchPlan plan;
    plan.ranks = gpus;
    plan.gpusPerServer = gpusPerServer;
    plan.processesPerServer = o.Count("nproc-per-node", 0);
    plan.devicesPerProcess = o.Count("devices-per-process", 0);
    plan.launcher = o.Has("launcher");
    if (plan.launcher && (o.Has("nproc-per-node") || o.Has("devices-per-process")))
    {
        throw UsageError("--launcher starts one process (the launcher, which starts the ranks): "
                         "give no --nproc-per-node or --devices-per-process");
    }
    if ((o.Has("nproc-per-node") && plan.processesPerServer == 0) ||
        (o.Has("devices-per-process") &&
         (plan.devicesPerProcess == 0 || plan.devicesPerProcess > 64)))
    {
        throw UsageError(
            "--nproc-per-node and --devices-per-process must be positive (at most 64 devices)");
    }
    try
    {
        plan.Validate();
    }
    catch (const std::invalid_argument& e)
    {
        throw UsageError(std::string("--gpus ") + std::to_string(gpus) + ": " + e.what());
    }
    return plan;
}

const std::set<std::string> kHostTimeOptions = {"host-time", "api-costs"};

std::map<std::string, std::string>
HostTimeEnvironment(const Options& o)
{
    std::map<std::string, std::string> env;
    const std::string mode = o.Get("host-time", "measured");
    if (mode != "measured" && mode != "api-only")
    {
        if (mode.rfind("fixed:", 0) != 0)
        {
            throw UsageError("--host-time must be measured, api-only or fixed:US (e.g. fixed:2)");
        }
        char* end = nullptr;
        const double us = std::strtod(mode.c_str() + 6, &end);
        if (!end || *end != '\0' || !std::isfinite(us) || us < 0)
        {
            throw UsageError("--host-time fixed:US needs a number of microseconds");
        }
        if (us < 0.001)
        {
            // Every poll must cost time, or a loop of cudaStreamQuery never sees the GPU finish.
            throw UsageError("--host-time fixed:US needs US >= 0.001: at zero cost per call a "
                             "polling loop would run forever at one instant");
        }
    }
    env["GPUSIM_HOST_TIME"] = mode;
    if (o.Has("api-costs"))
    {
        std::string file = o.Get("api-costs", "");
        if (::access(file.c_str(), R_OK) != 0)
        {
            throw UsageError("--api-costs " + file + ": cannot read it");
        }
        char buf[PATH_MAX];
        if (::realpath(file.c_str(), buf))
        {
            file = buf; // the program may change directory
        }
        env["GPUSIM_API_COSTS"] = file;
    }
    return env;
}

const std::set<std::string> kClusterOptions = {"preset", "cluster", "servers", "gpus-per-server",
                                               "nics-per-server", "nic-gbps", "nvlink-gbps",
                                               "fabric", "oversubscription", "gpu",
                                               "link-down", "link-rate", "straggler",
                                               "convergence", "routing", "nic-stack",
                                               "nccl-version"};

ClusterSpec
SpecFromOptions(const Options& o, uint32_t minGpus)
{
    ClusterSpec spec;
    if (o.Has("cluster"))
    {
        spec = LoadClusterSpecYaml(o.Get("cluster", ""));
    }
    else
    {
        const std::string preset = o.Get("preset", "dgx-h100");
        if (!LookupClusterPreset(preset, spec))
        {
            throw std::invalid_argument("unknown preset '" + preset +
                                        "' (known: " + KnownClusterPresets() + ")");
        }
    }
    spec.gpusPerServer = o.Count("gpus-per-server", spec.gpusPerServer);
    spec.nicsPerServer = o.Count("nics-per-server",
                                 o.Has("gpus-per-server") && !o.Has("nics-per-server")
                                     ? spec.gpusPerServer
                                     : spec.nicsPerServer);
    if (o.Has("servers"))
    {
        spec.servers = o.Count("servers", spec.servers);
    }
    else if (minGpus > 0 && spec.gpusPerServer > 0)
    {
        spec.servers = (minGpus + spec.gpusPerServer - 1) / spec.gpusPerServer;
    }
    spec.nicGbps = o.Number("nic-gbps", spec.nicGbps);
    spec.nvlinkGBps = o.Number("nvlink-gbps", spec.nvlinkGBps);
    spec.fabric = o.Get("fabric", spec.fabric);
    spec.oversubscription = o.Number("oversubscription", spec.oversubscription);
    spec.gpuModel = o.Get("gpu", spec.gpuModel);
    spec.routing = o.Get("routing", spec.routing);
    if (o.Has("nic-stack"))
    {
        try
        {
            UseNicStack(spec, o.Get("nic-stack", ""));
        }
        catch (const std::invalid_argument& e)
        {
            throw UsageError(std::string("--nic-stack: ") + e.what());
        }
    }
    if (o.Has("nccl-version"))
    {
        const std::string version = o.Get("nccl-version", "");
        uint32_t code = 0;
        if (!ParseNcclVersion(version, code))
        {
            throw UsageError("--nccl-version: unknown NCCL version '" + version +
                             "' (modelled: " + ModelledNcclVersions() + ")");
        }
        spec.nccl.ncclVersion = version;
    }
    // The packet backend routes each packet over the real spines; the flow backend models
    // adaptive routing by merging them (ClusterSpec::mergeAdaptiveSpines).
    spec.mergeAdaptiveSpines = o.Get("backend", "flow") != "packet";
    // Faults add to the cluster file's faults: section.
    for (const char* key : {"link-down", "link-rate", "straggler", "convergence"})
    {
        for (const std::string& item : o.All(key))
        {
            try
            {
                const std::string k = key;
                if (k == "link-down" || k == "link-rate")
                {
                    const auto events = k == "link-down" ? ParseLinkDown(item) : ParseLinkRate(item);
                    spec.fabricEvents.insert(spec.fabricEvents.end(), events.begin(), events.end());
                }
                else if (k == "straggler")
                {
                    spec.stragglers.push_back(ParseStraggler(item));
                }
                else
                {
                    spec.routingConvergence =
                        ParseEventTime(item, "routing convergence '" + item + "'");
                }
            }
            catch (const std::invalid_argument& e)
            {
                throw UsageError(std::string("--") + key + ": " + e.what());
            }
        }
    }
    for (const std::string& item : o.All("background"))
    {
        try
        {
            ParseBackgroundSpec(item); // syntax now; GPUs once the cluster is built
        }
        catch (const std::invalid_argument& e)
        {
            throw UsageError(std::string("--background: ") + e.what());
        }
        spec.background.push_back(item);
    }
    if (!spec.background.empty() && !o.Accepts("background"))
    {
        throw UsageError("the cluster file has a background: section, which this command "
                         "does not run (collective and simulate do)");
    }
    GpuSpec gpu;
    if (!LookupGpuSpec(spec.gpuModel, gpu))
    {
        throw std::invalid_argument("unknown GPU model '" + spec.gpuModel +
                                    "' (known: " + KnownGpuModels() + ")");
    }
    ValidateClusterSpec(spec);
    return spec;
}

std::string
DescribeCluster(const ClusterSpec& s)
{
    std::ostringstream os;
    os << s.servers << " server" << (s.servers == 1 ? "" : "s") << " x " << s.gpusPerServer
       << " GPUs (" << s.gpuModel << "), " << s.nicsPerServer << " x " << s.nicGbps
       << " Gb/s " << (s.nicStack == "efa" ? "EFA " : "") << "NICs per server, NVLink " << s.nvlinkGBps << " GB/s, " << s.fabric << " fabric";
    if (s.oversubscription > 1)
    {
        os << " " << s.oversubscription << ":1 oversubscribed";
    }
    if (!s.nccl.ncclVersion.empty())
    {
        os << ", NCCL " << s.nccl.ncclVersion << "'s tuner";
    }
    return os.str();
}

} // namespace gpusim
} // namespace ns3
