// gpusim jobs SCENARIO.yaml: several jobs on one fabric (doc/multi-job.md).
#include "ns3/jobs-command.h"

#include "ns3/byte-size.h"
#include "ns3/cli-options.h"
#include "ns3/fabric-event.h"
#include "ns3/flow-backend.h"
#include "ns3/json-writer.h"
#include "ns3/generate-command.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpusim-commands.h"
#include "ns3/job-builder.h"
#include "ns3/live-job-source.h"
#include "ns3/multi-job-helper.h"
#include "ns3/record-command.h"
#include "ns3/simulator.h"
#include "ns3/training-generator.h"
#include "ns3/yaml-fields.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <sys/wait.h>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

namespace ns3
{
namespace gpusim
{

namespace
{

void
PrintJobsUsage(std::ostream& os)
{
    os << "usage: gpusim jobs SCENARIO.yaml [--preset NAME | --cluster FILE] [cluster and NCCL\n"
          "       options as for 'collective'] [--background ITEM]... [--json FILE]\n"
          "       [--host-time MODE] [--api-costs FILE] [--timeout S]   (a run: job, as 'run')\n"
          "  SCENARIO.yaml:\n"
          "    cluster: FILE.yaml        # optional, relative to the scenario; else the options\n"
          "    jobs:\n"
          "      - name: train\n"
          "        generate: --model llama3-8b --tp 8 --dp 2 --global-batch 16\n"
          "        placement: spread     # packed (default) | spread | random[:SEED] | 0-7,16\n"
          "        start: 0              # s, ms, us or ns\n"
          "      - name: bench\n"
          "        collective: allreduce # with bytes, ranks, iterations (default 1)\n"
          "        bytes: 256M\n"
          "        ranks: 16\n"
          "      - name: replay\n"
          "        trace: DIR            # trace directory, Chakra ET or SimAI workload file\n"
          "      - name: live\n"
          "        run: ./my_cuda_program --args   # on the shim, as 'gpusim run' (one per\n"
          "        ranks: 8                        # scenario; nproc_per_node: N optional)\n"
          "    background:               # optional; items as for --background\n"
          "      - bulk:src=0-7,dst=15,bytes=1G,rate=100Gbps\n"
          "  --fidelity defaults to chunk: shortcuts assume a collective's links are its own,\n"
          "  and another job's traffic starting mid-collective is what they cannot price\n"
          "  (doc/multi-job.md). Exit code 3: a job did not finish.\n";
}

struct ScenarioJob
{
    std::string name;
    JobPlacement placement;
    Time start;
    std::shared_ptr<const JobTrace> trace;
    std::vector<std::string> program; //!< a live program (run:), or empty
    uint32_t ranks = 0;               //!< run: its GPUs
    uint32_t nprocPerNode = 0;        //!< run: processes per server (0: one per GPU)
    std::string what; //!< one line: what the job runs
};

/// "--model x --tp 8" -> an Options of the generate command's model and plan options.
std::shared_ptr<const JobTrace>
GenerateJob(const std::string& text, std::string& what)
{
    std::vector<std::string> args;
    std::istringstream words(text);
    for (std::string w; words >> w;)
    {
        args.push_back(w);
    }
    Options o(args, kPlanOptions, kPlanFlags);
    if (!o.Positional().empty())
    {
        throw UsageError("unexpected '" + o.Positional().front() + "'");
    }
    ModelSpec model;
    TrainingPlan plan;
    ModelAndPlanFromOptions(o, 0, model, plan);
    GeneratedTraining g = GenerateTraining(model, plan);
    what = "generated " + model.name + ", " + std::to_string(plan.Gpus()) + " GPUs";
    return g.job;
}

std::shared_ptr<const JobTrace>
CollectiveJob(const YamlFieldReader& r, const YAML::Node& node, std::string& what)
{
    CollKind kind;
    const std::string op = r.Scalar(node["collective"], "collective");
    if (!ParseCollKind(op, kind) || kind == CollKind::Send || kind == CollKind::Recv)
    {
        r.Fail(node["collective"].Mark(),
               "key 'collective': '" + op +
                   "' is not a collective (allreduce, allgather, reducescatter, alltoall, "
                   "broadcast, reduce)");
    }
    if (!node["bytes"] || !node["ranks"])
    {
        r.Fail(node.Mark(), "a collective job needs 'bytes' and 'ranks'");
    }
    uint64_t bytes = 0;
    try
    {
        bytes = ParseByteSize(r.Scalar(node["bytes"], "bytes"));
    }
    catch (const std::exception& e)
    {
        r.Fail(node["bytes"].Mark(), std::string("key 'bytes': ") + e.what());
    }
    const uint32_t ranks = r.Unsigned(node["ranks"], "ranks");
    const uint32_t iters = node["iterations"] ? r.Unsigned(node["iterations"], "iterations") : 1;
    if (ranks < 1 || iters < 1)
    {
        r.Fail(node.Mark(), "'ranks' and 'iterations' must be at least 1");
    }
    JobBuilder b(ranks);
    b.AllRanks().CommInit("world");
    for (uint32_t i = 0; i < iters; ++i)
    {
        const std::string it = "iteration#" + std::to_string(i);
        b.Marker(it, MarkerPhase::Begin).Collective(0, kind, "world", bytes).SyncDevice();
        b.Marker(it, MarkerPhase::End);
    }
    what = op + " of " + FormatByteSize(bytes) + " x " + std::to_string(iters);
    return b.BuildShared();
}

/// The directory part of `file` ("" or ending in '/').
std::string
DirOf(const std::string& file)
{
    const size_t slash = file.rfind('/');
    return slash == std::string::npos ? "" : file.substr(0, slash + 1);
}

std::string
Resolve(const std::string& base, const std::string& path)
{
    return path.empty() || path[0] == '/' ? path : base + path;
}

std::vector<ScenarioJob>
ReadScenario(const std::string& file, std::string& clusterFile, std::vector<std::string>& background)
{
    YamlFieldReader r(file);
    const YAML::Node root = r.Load(ReadYamlFile(file, "scenario"));
    if (!root.IsMap())
    {
        r.Fail(root.Mark(), "a scenario is a mapping with 'jobs' (and optionally 'cluster')");
    }
    const std::string base = DirOf(file);
    for (const auto& kv : root)
    {
        const std::string key = kv.first.as<std::string>();
        if (key != "jobs" && key != "cluster" && key != "background")
        {
            r.Fail(kv.first.Mark(), "unknown key '" + key + "' (jobs, cluster, background)");
        }
    }
    if (root["cluster"])
    {
        clusterFile = Resolve(base, r.Scalar(root["cluster"], "cluster"));
    }
    if (root["background"])
    {
        const YAML::Node bg = root["background"];
        if (!bg.IsSequence())
        {
            r.Fail(bg.Mark(), "key 'background': a list of items such as "
                              "'bulk:src=0-7,dst=15,bytes=1G'");
        }
        for (const YAML::Node& item : bg)
        {
            background.push_back(r.Scalar(item, "background"));
        }
    }
    const YAML::Node jobs = root["jobs"];
    if (!jobs || !jobs.IsSequence() || jobs.size() == 0)
    {
        r.Fail(jobs ? jobs.Mark() : root.Mark(), "key 'jobs': a list of at least one job");
    }
    std::vector<ScenarioJob> out;
    const std::set<std::string> keys = {"name",       "placement", "start",  "trace",
                                        "generate",   "collective", "bytes", "ranks",
                                        "iterations", "run",        "nproc_per_node"};
    for (const YAML::Node& node : jobs)
    {
        if (!node.IsMap())
        {
            r.Fail(node.Mark(), "a job is a mapping (name, placement, start and one of trace, "
                                "generate, collective)");
        }
        for (const auto& kv : node)
        {
            const std::string key = kv.first.as<std::string>();
            if (!keys.count(key))
            {
                r.Fail(kv.first.Mark(), "unknown key '" + key + "' in a job");
            }
        }
        ScenarioJob j;
        if (!node["name"])
        {
            r.Fail(node.Mark(), "a job needs a 'name'");
        }
        j.name = r.Scalar(node["name"], "name");
        const int sources = int(bool(node["trace"])) + int(bool(node["generate"])) +
                            int(bool(node["collective"])) + int(bool(node["run"]));
        if (sources != 1)
        {
            r.Fail(node.Mark(), "job '" + j.name +
                                    "': give exactly one of trace, generate, collective, run");
        }
        try
        {
            j.placement = JobPlacement::Parse(
                node["placement"] ? r.Scalar(node["placement"], "placement") : "packed");
        }
        catch (const std::invalid_argument& e)
        {
            r.Fail(node["placement"].Mark(), "job '" + j.name + "': " + e.what());
        }
        try
        {
            j.start = node["start"] ? ParseEventTime(r.Scalar(node["start"], "start"), "start")
                                    : Time(0);
        }
        catch (const std::invalid_argument& e)
        {
            r.Fail(node["start"].Mark(), "job '" + j.name + "': " + e.what());
        }
        if (node["trace"])
        {
            const std::string dir = Resolve(base, r.Scalar(node["trace"], "trace"));
            std::string summary;
            j.trace = LoadJobForSimulation(dir, true, QuerySyncPolicy::Wait, summary);
            j.what = "trace " + dir;
        }
        else if (node["generate"])
        {
            try
            {
                j.trace = GenerateJob(r.Scalar(node["generate"], "generate"), j.what);
            }
            catch (const std::exception& e)
            {
                r.Fail(node["generate"].Mark(), "job '" + j.name + "': " + e.what());
            }
        }
        else if (node["run"])
        {
            // A live program on the shim, as `gpusim run` starts it (doc/live-mode.md).
            std::istringstream words(r.Scalar(node["run"], "run"));
            for (std::string w; words >> w;)
            {
                j.program.push_back(w);
            }
            if (j.program.empty() || !node["ranks"])
            {
                r.Fail(node.Mark(), "job '" + j.name + "': a run job needs a program and 'ranks'");
            }
            j.ranks = r.Unsigned(node["ranks"], "ranks");
            j.nprocPerNode =
                node["nproc_per_node"] ? r.Unsigned(node["nproc_per_node"], "nproc_per_node") : 0;
            if (j.ranks < 1)
            {
                r.Fail(node["ranks"].Mark(), "job '" + j.name + "': 'ranks' must be at least 1");
            }
            j.what = "live program " + r.Scalar(node["run"], "run");
        }
        else
        {
            j.trace = CollectiveJob(r, node, j.what);
        }
        out.push_back(std::move(j));
    }
    return out;
}

void
PrintReports(std::ostream& out, const std::vector<JobReport>& reports,
             const std::vector<ScenarioJob>& jobs)
{
    out << "# job            ranks  placement     start_us  iterations  mean_iter_us   "
           "max_iter_us  exposed_comm_us        end_us  status\n";
    for (size_t k = 0; k < reports.size(); ++k)
    {
        const JobReport& r = reports[k];
        double sum = 0;
        double worst = 0;
        double comm = 0;
        for (const JobIteration& it : r.iterations)
        {
            const double us = (it.end - it.start).GetNanoSeconds() / 1e3;
            sum += us;
            worst = std::max(worst, us);
            comm += it.exposedCommUs;
        }
        const size_t n = std::max<size_t>(1, r.iterations.size());
        char line[320];
        std::snprintf(line, sizeof(line),
                      "%-16s %6zu  %-12s %9.1f  %10zu  %12.1f  %12.1f  %15.1f  %12.1f  %s\n",
                      r.name.c_str(), r.gpus.size(), r.placement.substr(0, 12).c_str(),
                      r.start.GetNanoSeconds() / 1e3, r.iterations.size(), sum / n, worst,
                      comm / n, r.run.endTime.GetNanoSeconds() / 1e3,
                      r.run.completed ? "done" : "NOT FINISHED");
        out << line;
        out << "#   " << r.name << ": " << jobs[k].what << "\n";
    }
}

} // namespace

int
JobsCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::set<std::string> valued = {"json", "background", "timeout"};
    valued.insert(kHostTimeOptions.begin(), kHostTimeOptions.end());
    valued.insert(kClusterOptions.begin(), kClusterOptions.end());
    valued.insert(kNcclOptions.begin(), kNcclOptions.end());
    try
    {
        Options o(args, valued, {"help"});
        if (o.Has("help") || o.Positional().size() != 1)
        {
            PrintJobsUsage(o.Has("help") ? out : err);
            return o.Has("help") ? 0 : 1;
        }
        const std::string file = o.Positional().front();
        std::string clusterFile;
        std::vector<std::string> background;
        const std::vector<ScenarioJob> jobs = ReadScenario(file, clusterFile, background);
        uint32_t ranks = 0;
        uint32_t live = 0;
        for (const ScenarioJob& j : jobs)
        {
            ranks += j.trace ? static_cast<uint32_t>(j.trace->ranks.size()) : j.ranks;
            live += j.trace ? 0 : 1;
        }
        if (live > 1)
        {
            throw UsageError("at most one live program (run:) per scenario");
        }
        Options withCluster = o;
        if (!clusterFile.empty() && !o.Has("cluster") && !o.Has("preset"))
        {
            std::vector<std::string> a = args;
            a.push_back("--cluster");
            a.push_back(clusterFile);
            withCluster = Options(a, valued, {"help"});
        }
        // The cluster as described (a fabric larger than the jobs leaves room to place them),
        // grown to hold every job only when no server count was given.
        ClusterSpec spec = SpecFromOptions(withCluster, 0);
        if (!withCluster.Has("servers") && spec.TotalGpus() < ranks)
        {
            spec = SpecFromOptions(withCluster, ranks);
        }
        spec.background.insert(spec.background.end(), background.begin(), background.end());
        GpuClusterHelper cluster;
        cluster.SetSpec(spec);
        NodeContainer gpus = cluster.Create();
        Ptr<NetworkBackend> backend = MakeBackend(o, cluster.GetTopology());
        Ptr<BackgroundTraffic> bg = MakeBackgroundTraffic(spec, gpus.GetN());
        GpuWorkloadHelper helper;
        helper.SetBackend(backend);
        ConfigureNccl(o, helper, "chunk");
        MultiJobHelper scenario(gpus, cluster.GetTopology());
        Ptr<LiveJobSource> liveJob;
        std::vector<LaunchPlan::Process> processes;
        for (const ScenarioJob& j : jobs)
        {
            if (j.trace)
            {
                scenario.AddJob(j.name, j.trace, j.placement, j.start);
                continue;
            }
            std::vector<std::string> launchArgs;
            if (j.nprocPerNode)
            {
                launchArgs = {"--nproc-per-node", std::to_string(j.nprocPerNode)};
            }
            const LaunchPlan plan = LaunchPlanFromOptions(
                Options(launchArgs, kLaunchOptions, {}), j.ranks, spec.gpusPerServer);
            std::string tried;
            const std::string libdir = FindShimLibDir(&tried);
            if (libdir.empty())
            {
                throw std::runtime_error("job '" + j.name + "': the shim libraries were not " +
                                         "found; looked in: " + tried);
            }
            liveJob = CreateObject<LiveJobSource>();
            liveJob->SetAttribute("TimeoutS", DoubleValue(o.Number("timeout", 0)));
            std::map<std::string, std::string> env = HostTimeEnvironment(o);
            env["GPUSIM_GPU"] = spec.gpuModel;
            liveJob->Launch(j.program, plan, libdir, env);
            processes = plan.Processes();
            // A placement error now ends gpusim, and the programs with it (the shim exits
            // when its simulator is gone).
            scenario.AddJob(j.name, Ptr<OpFeed>(liveJob), j.placement, j.start);
        }
        if (bg)
        {
            scenario.AddBackground(bg);
        }
        scenario.Install(helper);
        if (liveJob)
        {
            liveJob->Run(); // the simulation, gated on the program's progress
        }
        else
        {
            Simulator::Run();
        }
        const std::vector<JobReport> reports = scenario.Reports();
        out << "# gpusim jobs: " << jobs.size() << " jobs, " << ranks << " ranks from " << file
            << "\n# cluster: " << DescribeCluster(spec) << "\n";
        PrintReports(out, reports, jobs);
        if (bg)
        {
            PrintBackgroundSummary(out, bg->Summaries());
        }
        const std::vector<MultiJobHelper::LinkUse> use = scenario.FabricUse(backend);
        uint32_t shared = 0;
        const MultiJobHelper::LinkUse* busiest = nullptr;
        double busiestBytes = 0;
        for (const auto& u : use)
        {
            if (u.Jobs() < 2)
            {
                continue;
            }
            ++shared;
            double total = 0;
            for (double b : u.bytes)
            {
                total += b;
            }
            if (total > busiestBytes)
            {
                busiestBytes = total;
                busiest = &u;
            }
        }
        {
            out << "# fabric: " << use.size() << " NIC and switch links carried bytes, "
                << shared << " of them for more than one job";
            if (busiest)
            {
                out << "; the busiest shared: " << busiest->name << " (";
                bool first = true;
                for (size_t k = 0; k < busiest->bytes.size(); ++k)
                {
                    if (busiest->bytes[k] > 0)
                    {
                        out << (first ? "" : ", ") << reports[k].name << " "
                            << FormatByteSize(static_cast<uint64_t>(busiest->bytes[k]));
                        first = false;
                    }
                }
                out << ")";
            }
            out << "\n";
        }
        int code = 0;
        if (liveJob)
        {
            for (size_t p = 0; p < liveJob->GetProcesses().size(); ++p)
            {
                const int status = liveJob->GetProcesses()[p].status;
                if (status != 0)
                {
                    err << "gpusim jobs: live program process " << p << " "
                        << ProgramLauncher::DescribeStatus(status) << "\n";
                    code = 3;
                }
            }
            if (!liveJob->GetEndReason().empty())
            {
                err << "gpusim jobs: " << liveJob->GetEndReason() << "\n";
            }
        }
        for (const JobReport& r : reports)
        {
            for (const std::string& e : r.run.errors)
            {
                err << "gpusim jobs: job '" << r.name << "': device error: " << e << "\n";
            }
            if (!r.run.completed)
            {
                err << "gpusim jobs: job '" << r.name
                    << "' stopped with work still waiting:\n"
                    << r.run.stuck;
                code = 3;
            }
        }
        if (o.Has("json"))
        {
            WriteFileAtomically(o.Get("json", ""), scenario.ReportJson(backend) + "\n");
        }
        for (uint32_t k = 0; k < scenario.GetNJobs(); ++k)
        {
            scenario.GetWorkload(k)->Dispose();
        }
        Simulator::Destroy();
        return code;
    }
    catch (const UsageError& e)
    {
        err << "gpusim jobs: " << e.what() << "\n";
        PrintJobsUsage(err);
        Simulator::Destroy();
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim jobs: error: " << e.what() << "\n";
        Simulator::Destroy();
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
