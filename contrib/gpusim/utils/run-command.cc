/*
 * `gpusim run`: live mode. The program runs on the shim as N processes while the simulator
 * answers its blocking calls with simulated time (LiveJobSource); what the program prints is
 * the simulated cluster's truth. See doc/live-mode.md.
 */
#include "ns3/cli-options.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-spec.h"
#include "ns3/gpusim-commands.h"
#include "ns3/json-writer.h"
#include "ns3/live-job-source.h"
#include "ns3/record-command.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sys/stat.h>
#include <sys/wait.h>

namespace ns3
{
namespace gpusim
{

namespace
{

/// The live run's Warning trace source: it goes on, but not quite as asked.
void
PrintWarning(std::ostream* err, const std::string& message)
{
    *err << "gpusim run: warning: " << message << std::endl;
}

void
PrintRunUsage(std::ostream& os)
{
    os << "usage: gpusim run [--preset NAME | --cluster FILE] [cluster and NCCL options as for\n"
          "       'collective'] [--gpus N] [--nproc-per-node P | --devices-per-process D |\n"
          "       --launcher] [--out DIR]\n"
          "       [--sync conservative|optimistic] [--host-time measured|api-only|fixed:US]\n"
          "       [--api-costs FILE] [--timeout S]\n"
          "       [--cost-model recorded|roofline] [--kernel-table FILE] [--scale-kernels RE=F]\n"
          "       [--json FILE] [--trace FILE] -- PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM on the gpusim shim as the processes of a job on N GPUs of the simulated\n"
          "cluster (default: all of them), P per server (--nproc-per-node, default one per GPU).\n"
          "Each process sees the GPUs of its server, like on a real node; the GPU it selects\n"
          "(cudaSetDevice) decides its rank. --devices-per-process D instead pins D GPUs to each\n"
          "process with CUDA_VISIBLE_DEVICES. --launcher: PROGRAM is an MPI launcher (mpirun)\n"
          "started once for the whole job, as from a login node; each rank it starts runs on the\n"
          "server its MPI rank places it on (in blocks: rank r on server r / ceil(np / servers)),\n"
          "with that server's GPUs, host name and local-rank variables (OMPI_COMM_WORLD_LOCAL_RANK).\n"
          "Synchronising calls return at simulated time and\n"
          "the program's clocks read simulated time. '{rank}', '{local_rank}' and '{world_size}'\n"
          "in ARGS are replaced per process; RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
          "MASTER_ADDR and MASTER_PORT are set as torchrun sets them. --out DIR keeps the run's\n"
          "trace: 'gpusim simulate DIR' with the same options reproduces the run's metrics "
          "exactly.\n"
          "Host time between the program's calls (--host-time): measured = its own CPU time plus\n"
          "what the real CUDA/NCCL/cuBLAS would spend per call (a table per GPU, "
          "doc/live-mode.md;\n"
          "--api-costs FILE overrides entries), api-only = the per-call costs alone (the same on\n"
          "every machine), fixed:US = US per call.\n"
          "Exit: the program's status (first failing process), 3 if the simulation could not\n"
          "complete (stuck, timeout), 1 usage, 2 bad input, 128+signal when interrupted.\n";
}

/// Names every process that failed; returns the first one's status (rank order) as an exit
/// code (128 + signal for a signal), 0 if none failed.
int
ReportProcesses(const LiveJobSource& live,
                const std::vector<LaunchPlan::Process>& plan,
                std::ostream& err)
{
    int exitCode = 0;
    for (size_t p = 0; p < live.GetProcesses().size(); ++p)
    {
        const auto& proc = live.GetProcesses()[p];
        if (proc.status == 0)
        {
            continue;
        }
        err << "gpusim run: process " << p;
        if (p < plan.size())
        {
            err << " (server " << plan[p].server << ", local rank " << plan[p].localRank << ")";
        }
        err << " " << ProgramLauncher::DescribeStatus(proc.status) << "\n";
        if (exitCode == 0)
        {
            exitCode =
                WIFEXITED(proc.status) ? WEXITSTATUS(proc.status) : 128 + WTERMSIG(proc.status);
        }
    }
    return exitCode;
}

/// The simulation of a launched live run and its report; returns the exit code.
int
SimulateLive(const Options& o,
             Ptr<LiveJobSource> live,
             GpuWorkloadHelper& helper,
             NodeContainer& nodes,
             const ClusterSpec& spec,
             const LaunchPlan& plan,
             std::chrono::steady_clock::time_point wall0,
             std::ostream& err)
{
    const auto processes = plan.Processes();
    Ptr<GpuWorkload> w = helper.InstallFeed(live, nodes);
    const bool ended = live->Run();
    const double wallS =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    RunReport rep = w->Check();

    const int exitCode = ReportProcesses(*live, processes, err);
    if (o.Has("out"))
    {
        WriteJobTrace(live->GetRecording(), o.Get("out", ""));
        WriteFileAtomically(o.Get("out", "") + "/live-stats.json",
                            live->GetStats().ToJson() + "\n");
    }
    err << "# gpusim run: " << plan.ranks << " ranks ("
        << (plan.launcher ? std::string("one launcher; its MPI ranks placed on the servers by "
                                        "rank")
                          : std::to_string(processes.size()) + " process" +
                                (processes.size() == 1 ? "" : "es") + ", " +
                                std::to_string(processes.front().localSize) + " per server")
        << (plan.devicesPerProcess
                ? ", " + std::to_string(plan.devicesPerProcess) + " GPUs pinned to each"
                : std::string())
        << ") on " << DescribeCluster(spec) << "\n";
    PrintIterations(err, *w);
    char summary[256];
    std::snprintf(summary, sizeof(summary),
                  "# simulated %.3f us in %.2f s wall; %llu ops, %llu blocking calls "
                  "answered; simulator waited %.2f s for the program\n",
                  rep.endTime.GetNanoSeconds() / 1e3, wallS,
                  static_cast<unsigned long long>(live->GetStats().opsReceived),
                  static_cast<unsigned long long>(live->GetStats().answers),
                  live->GetStats().waitForProgramS);
    err << summary;
    const int sig = InterruptGuard::Received();
    if (!ended && !live->GetEndReason().empty())
    {
        err << "gpusim run: " << live->GetEndReason() << "\n";
    }
    if (FinishSimulation("run", o, w, rep, err) != 0)
    {
        return sig ? 128 + sig : 3;
    }
    if (sig)
    {
        return 128 + sig;
    }
    if (!ended && exitCode == 0)
    {
        return 3;
    }
    return exitCode;
}

} // namespace

int
RunCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::set<std::string> valued = {"gpus",
                                    "out",
                                    "sync",
                                    "timeout",
                                    "json",
                                    "trace",
                                    "cost-model",
                                    "kernel-table",
                                    "scale-kernels"};
    valued.insert(kClusterOptions.begin(), kClusterOptions.end());
    valued.insert(kLaunchOptions.begin(), kLaunchOptions.end());
    valued.insert(kHostTimeOptions.begin(), kHostTimeOptions.end());
    valued.insert(kNcclOptions.begin(), kNcclOptions.end());
    try
    {
        Options o(args, valued, {"help", "launcher"}, true);
        if (o.Has("help"))
        {
            PrintRunUsage(out);
            return 0;
        }
        const std::vector<std::string>& program = o.Program();
        if (program.empty())
        {
            throw UsageError("no program given (gpusim run [options] -- PROGRAM ARGS...)");
        }
        const std::string sync = o.Get("sync", "conservative");
        if (sync != "conservative" && sync != "optimistic")
        {
            throw UsageError("--sync must be conservative or optimistic");
        }
        const bool optimistic = sync == "optimistic";
        const std::map<std::string, std::string> hostTimeEnv = HostTimeEnvironment(o);
        const double timeout = o.Number("timeout", 0);
        if (timeout < 0)
        {
            throw UsageError("--timeout must be >= 0");
        }
        ClusterSpec spec = SpecFromOptions(o, o.Count("gpus", 1));
        const uint32_t gpus = o.Count("gpus", spec.TotalGpus());
        if (gpus > spec.TotalGpus())
        {
            throw UsageError("--gpus " + std::to_string(gpus) + " but the cluster has " +
                             std::to_string(spec.TotalGpus()) + " GPUs");
        }
        const LaunchPlan plan = LaunchPlanFromOptions(o, gpus, spec.gpusPerServer);
        GpuSpec gpuSpec;
        if (!LookupGpuSpec(spec.gpuModel, gpuSpec))
        {
            throw UsageError("unknown GPU model '" + spec.gpuModel + "'");
        }
        std::string tried;
        const std::string libdir = FindShimLibDir(&tried);
        if (libdir.empty())
        {
            err << "gpusim run: error: the shim libraries (libcudart.so.13, libgpusim-clock.so) "
                   "were not found; looked in: "
                << tried << "\n";
            return 2;
        }

        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        NodeContainer nodes = cluster.Create();
        GpuWorkloadHelper helper;
        helper.SetBackend(MakeBackend(o, cluster.GetTopology()));
        ConfigureNccl(o, helper, "chunk");
        ConfigureWorkload(o, helper);

        Ptr<LiveJobSource> live = CreateObject<LiveJobSource>();
        live->SetAttribute("TimeoutS", DoubleValue(timeout));
        live->SetAttribute("Optimistic", BooleanValue(optimistic));
        live->TraceConnectWithoutContext("Warning", MakeBoundCallback(&PrintWarning, &err));
        std::map<std::string, std::string> env;
        env["GPUSIM_GPU"] = spec.gpuModel;
        env.insert(hostTimeEnv.begin(), hostTimeEnv.end());
        const auto wall0 = std::chrono::steady_clock::now();
        InterruptGuard interrupts; // Ctrl-C stops the programs too (own process groups)
        live->Launch(program, plan, libdir, env);
        int code;
        if (optimistic)
        {
            // The coordinator returns here once the run is over; the simulator goes on below.
            code = live->SplitCoordinator();
            if (code >= 0)
            {
                return code;
            }
        }
        code = SimulateLive(o, live, helper, nodes, spec, plan, wall0, err);
        if (optimistic)
        {
            live->ReportResult(code);
        }
        return code;
    }
    catch (const UsageError& e)
    {
        err << "gpusim run: " << e.what() << "\n";
        PrintRunUsage(err);
        Simulator::Destroy();
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim run: error: " << e.what() << "\n";
        Simulator::Destroy();
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
