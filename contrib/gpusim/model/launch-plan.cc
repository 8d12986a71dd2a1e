#include "ns3/launch-plan.h"

#include "ns3/program-launcher.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <unistd.h>

namespace ns3
{
namespace gpusim
{

namespace
{
std::string
ReplaceAll(std::string s, const std::string& from, const std::string& to)
{
    for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    {
        s.replace(pos, from.size(), to);
    }
    return s;
}

/// torchrun's default port for env:// rendezvous (the job's processes share this machine); a
/// MASTER_PORT in the launcher's environment wins, so that concurrent jobs can use their own.
constexpr int kMasterPort = 29500;
} // namespace

void
LaunchPlan::Validate() const
{
    if (ranks == 0 || gpusPerServer == 0)
    {
        throw std::invalid_argument("a job needs at least one GPU");
    }
    // One GPU is driven by one process (a second one's claim fails), so more processes than a
    // server's GPUs cannot start: refuse rather than start fewer than asked for.
    if (processesPerServer > std::min(ranks, gpusPerServer))
    {
        throw std::invalid_argument(std::to_string(processesPerServer) +
                                    " processes per server need as many GPUs per server; the job "
                                    "has " +
                                    std::to_string(std::min(ranks, gpusPerServer)));
    }
    if (launcher && (processesPerServer > 0 || devicesPerProcess > 0))
    {
        throw std::invalid_argument("a launcher starts the job's processes itself: no processes "
                                    "per server or GPUs per process to give");
    }
    if (launcher && Servers() > 1 && ranks % gpusPerServer != 0)
    {
        // The launcher's ranks fill the servers in equal blocks.
        throw std::invalid_argument("a launcher's job spans whole servers (" +
                                    std::to_string(gpusPerServer) + " GPUs each)");
    }
    if (devicesPerProcess > 0)
    {
        for (uint32_t s = 0; s < Servers(); ++s)
        {
            if (GpusOnServer(s) % devicesPerProcess != 0)
            {
                throw std::invalid_argument(std::to_string(GpusOnServer(s)) + " GPUs on server " +
                                            std::to_string(s) +
                                            " cannot be split into processes of " +
                                            std::to_string(devicesPerProcess) + " GPUs each");
            }
        }
        if (processesPerServer > 0 &&
            processesPerServer * devicesPerProcess != std::min(ranks, gpusPerServer))
        {
            throw std::invalid_argument(
                std::to_string(processesPerServer) + " processes of " +
                std::to_string(devicesPerProcess) + " GPUs each do not make the " +
                std::to_string(std::min(ranks, gpusPerServer)) + " GPUs of a server");
        }
    }
}

uint32_t
LaunchPlan::Servers() const
{
    return (ranks + gpusPerServer - 1) / gpusPerServer;
}

uint32_t
LaunchPlan::GpusOnServer(uint32_t server) const
{
    const uint32_t first = server * gpusPerServer;
    return first >= ranks ? 0 : std::min(gpusPerServer, ranks - first);
}

uint32_t
LaunchPlan::ServerOfRank(uint32_t rank) const
{
    return rank / gpusPerServer;
}

std::vector<LaunchPlan::Process>
LaunchPlan::Processes() const
{
    std::vector<Process> out;
    if (launcher)
    {
        return {Process{0, 0, 0, 1, ""}};
    }
    for (uint32_t s = 0; s < Servers(); ++s)
    {
        const uint32_t gpus = GpusOnServer(s);
        uint32_t count = devicesPerProcess > 0    ? gpus / devicesPerProcess
                         : processesPerServer > 0 ? std::min(processesPerServer, gpus)
                                                  : gpus;
        for (uint32_t l = 0; l < count; ++l)
        {
            Process p;
            p.index = static_cast<uint32_t>(out.size());
            p.server = s;
            p.localRank = l;
            p.localSize = count;
            if (devicesPerProcess > 0)
            {
                for (uint32_t d = 0; d < devicesPerProcess; ++d)
                {
                    p.visible += (d ? "," : "") + std::to_string(l * devicesPerProcess + d);
                }
            }
            out.push_back(p);
        }
    }
    return out;
}

std::map<std::string, std::string>
LaunchPlan::Environment(const Process& p, uint32_t processes) const
{
    std::map<std::string, std::string> env;
    if (!launcher)
    {
        // A launcher's ranks get theirs from it; these would reach every one of them.
        env["RANK"] = env["GPUSIM_RANK"] = std::to_string(p.index);
        env["LOCAL_RANK"] = env["GPUSIM_LOCAL_RANK"] = std::to_string(p.localRank);
        env["WORLD_SIZE"] = env["GPUSIM_WORLD_SIZE"] = std::to_string(processes);
        env["LOCAL_WORLD_SIZE"] = std::to_string(p.localSize);
        env["GPUSIM_SERVER"] = std::to_string(p.server);
    }
    env["MASTER_ADDR"] = "127.0.0.1";
    const char* port = std::getenv("MASTER_PORT");
    env["MASTER_PORT"] = port && *port ? port : std::to_string(kMasterPort);
    // The processes of one job (claims of GPUs and ranks never pass to a later process).
    env["GPUSIM_JOB"] = std::to_string(::getpid());
    env["GPUSIM_SERVERS"] = std::to_string(Servers());
    env["GPUSIM_GPUS_PER_SERVER"] = std::to_string(gpusPerServer);
    // The node's GPUs (CUDA_VISIBLE_DEVICES narrows them to the pinned ones).
    env["GPUSIM_DEVICES"] = std::to_string(GpusOnServer(p.server));
    if (!p.visible.empty())
    {
        env["CUDA_VISIBLE_DEVICES"] = p.visible;
    }
    return env;
}

std::vector<std::string>
LaunchPlan::Unset(const Process& p) const
{
    std::vector<std::string> unset;
    if (p.visible.empty())
    {
        unset.push_back("CUDA_VISIBLE_DEVICES");
    }
    if (launcher)
    {
        // gpusim itself may run inside a job (a Slurm step, torchrun): none of that job's
        // placement may reach the ranks, which find theirs from their MPI rank.
        for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GPUSIM_SERVER",
                              "GPUSIM_RANK", "GPUSIM_LOCAL_RANK", "GPUSIM_WORLD_SIZE"})
        {
            unset.push_back(v);
        }
    }
    return unset;
}

std::vector<std::string>
LaunchPlan::Arguments(const std::vector<std::string>& program, const Process& p, uint32_t processes)
{
    std::vector<std::string> argv;
    for (const auto& a : program)
    {
        argv.push_back(ReplaceAll(ReplaceAll(ReplaceAll(a, "{rank}", std::to_string(p.index)),
                                             "{local_rank}",
                                             std::to_string(p.localRank)),
                                  "{world_size}",
                                  std::to_string(processes)));
    }
    return argv;
}

std::vector<size_t>
LaunchPlan::Spawn(ProgramLauncher& launcher,
                  const std::vector<std::string>& program,
                  const std::map<std::string, std::string>& env) const
{
    const std::vector<Process> procs = Processes();
    std::vector<size_t> started;
    for (const Process& p : procs)
    {
        std::map<std::string, std::string> penv = env;
        for (const auto& [k, v] : Environment(p, procs.size()))
        {
            penv[k] = v;
        }
        // On failure the launcher stops the processes it started.
        started.push_back(launcher.Spawn(Arguments(program, p, procs.size()), penv, Unset(p)));
    }
    return started;
}

void
AddShimEnvironment(std::map<std::string, std::string>& env,
                   const std::string& shimLibDir,
                   const std::vector<std::string>& preload,
                   double timeoutS)
{
    const char* ld = std::getenv("LD_LIBRARY_PATH");
    env["LD_LIBRARY_PATH"] = shimLibDir + (ld && *ld ? ":" + std::string(ld) : "");
    if (!preload.empty())
    {
        std::string list;
        for (const auto& lib : preload)
        {
            list += (list.empty() ? "" : ":") + shimLibDir + "/" + lib;
        }
        const char* pre = std::getenv("LD_PRELOAD");
        env["LD_PRELOAD"] = list + (pre && *pre ? ":" + std::string(pre) : "");
    }
    const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
    const std::string collector = shimLibDir + "/libgpusim-nvtx.so";
    if (!env.count("NVTX_INJECTION64_PATH") && (!nvtx || !*nvtx) &&
        ::access(collector.c_str(), R_OK) == 0)
    {
        env["NVTX_INJECTION64_PATH"] = collector;
    }
    if (timeoutS > 0)
    {
        env["GPUSIM_UNIQUE_ID_TIMEOUT"] = std::to_string(static_cast<int>(std::ceil(timeoutS)));
    }
}

} // namespace gpusim
} // namespace ns3
