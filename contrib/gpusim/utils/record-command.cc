#include "ns3/record-command.h"

#include "ns3/boolean.h"
#include "ns3/chakra-trace.h"
#include "ns3/cli-options.h"
#include "ns3/cluster-spec.h"
#include "ns3/gpu-spec.h"
#include "ns3/json-writer.h"
#include "ns3/log.h"
#include "ns3/op-stream-dedup.h"
#include "ns3/profile-table-cost-model.h"
#include "ns3/program-launcher.h"
#include "ns3/simai-workload.h"
#include "ns3/string.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("GpusimRecord");

namespace gpusim
{

namespace
{

using RecordUsage = UsageError; // bad command line: usage printed, exit 1

void
PrintRecordUsage(std::ostream& os)
{
    os << "usage: gpusim record [options] -- PROGRAM [ARGS...]\n"
          "  --preset NAME    cluster preset whose GPU the shim emulates (dgx-h100, dgx-a100);\n"
          "                   default dgx-h100\n"
          "  --gpu MODEL      GPU model instead of the preset's (h100-sxm, a100-sxm, ...)\n"
          "  --gpus N         GPUs of the job (default 1); one process per GPU unless:\n"
          "  --nproc-per-node P  processes per server (e.g. 1 for a program that drives every\n"
          "                   GPU of its server); each process sees its server's GPUs\n"
          "  --devices-per-process D  pin D GPUs to each process (CUDA_VISIBLE_DEVICES)\n"
          "  --out DIR        trace directory (default ./gpusim-trace); replaced on success\n"
          "  --timeout S      kill the program after S seconds (default: no limit)\n"
          "  --host-time measured|api-only|fixed:US, --api-costs FILE\n"
          "                   host time between calls, as for 'gpusim run' (default measured)\n"
          "  --kernel-table-template FILE\n"
          "                   also write a kernel table to fill in on a real GPU (one entry per\n"
          "                   distinct kernel, roofline estimates; see doc/record-simulate.md)\n"
          "Runs PROGRAM on the gpusim shim (no GPU needed) and writes manifest.json +\n"
          "rank-R.jsonl to DIR. Processes are placed as 'gpusim run' places them: '{rank}',\n"
          "'{local_rank}', '{world_size}' in ARGS are replaced per process, RANK, LOCAL_RANK,\n"
          "WORLD_SIZE, LOCAL_WORLD_SIZE are set, and the GPU a process selects decides its rank.\n"
          "Exit: 0 recorded, 1 usage, 2 program failed, 3 timed out.\n";
}

bool
IsFile(const std::string& p)
{
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool
IsDir(const std::string& p)
{
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string
Absolute(const std::string& p)
{
    if (!p.empty() && p[0] == '/')
    {
        return p;
    }
    char buf[PATH_MAX];
    if (!::getcwd(buf, sizeof(buf)))
    {
        return p;
    }
    return std::string(buf) + "/" + p;
}

std::vector<std::string>
ListDir(const std::string& dir)
{
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir.c_str()))
    {
        while (dirent* e = ::readdir(d))
        {
            std::string n = e->d_name;
            if (n != "." && n != "..")
            {
                names.push_back(n);
            }
        }
        ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
}

/// Files the shim and the launcher leave in a trace directory.
bool
IsTraceFile(const std::string& n)
{
    auto starts = [&](const char* p) { return n.rfind(p, 0) == 0; };
    return n == "manifest.json" || n == ".ranks" || n == ".manifest.lock" ||
           starts(".nccl-unique-id") || (starts("rank-") && n.size() > 6 &&
                                         n.compare(n.size() - 6, 6, ".jsonl") == 0);
}

void
RemoveTree(const std::string& dir)
{
    for (const auto& n : ListDir(dir))
    {
        const std::string p = dir + "/" + n;
        if (IsDir(p))
        {
            RemoveTree(p);
        }
        else
        {
            ::unlink(p.c_str());
        }
    }
    ::rmdir(dir.c_str());
}

/// Moves a finished recording into place: old trace files of `dir` go, rank files come first
/// and the manifest last, so a reader never sees a manifest without its ranks.
void
PublishTrace(const std::string& staging, const std::string& dir)
{
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    {
        throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
    }
    for (const auto& n : ListDir(dir))
    {
        if (IsTraceFile(n))
        {
            ::unlink((dir + "/" + n).c_str());
        }
    }
    std::vector<std::string> names = ListDir(staging);
    std::stable_partition(names.begin(), names.end(),
                          [](const std::string& n) { return n != "manifest.json"; });
    for (const auto& n : names)
    {
        if (n[0] == '.')
        {
            continue; // the shim's lock and merge files, the shared unique ids
        }
        const std::string from = staging + "/" + n;
        const std::string to = dir + "/" + n;
        if (std::rename(from.c_str(), to.c_str()) != 0)
        {
            throw std::runtime_error("cannot move " + from + " to " + to + ": " +
                                     std::strerror(errno));
        }
    }
    RemoveTree(staging);
}

/// What the command line asks of a recording (validated).
struct RecordSettings
{
    uint32_t gpus = 1;
    LaunchPlan plan;
    double timeout = 0;
    std::string preset;
    ClusterSpec spec;
    std::string gpuModel;
    GpuSpec gpuSpec;
    std::map<std::string, std::string> opts; //!< preset, gpu, out, kernel-table-template
};

RecordSettings
ParseRecordSettings(const Options& o)
{
    auto number = [&](const char* key, double def) {
        if (!o.Has(key))
        {
            return def;
        }
        const std::string v = o.Get(key, "");
        char* end = nullptr;
        double d = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || !std::isfinite(d) || d < 0)
        {
            throw RecordUsage(std::string("--") + key + " expects a non-negative number");
        }
        return d;
    };
    std::map<std::string, std::string> opts;
    for (const char* k : {"preset", "gpu", "out", "kernel-table-template"})
    {
        if (o.Has(k))
        {
            opts[k] = o.Get(k, "");
        }
    }
    const double gpusD = number("gpus", 1);
    if (gpusD < 1 || gpusD > 4096 || gpusD != std::floor(gpusD))
    {
        throw RecordUsage("--gpus expects an integer in 1..4096");
    }
    const uint32_t gpus = static_cast<uint32_t>(gpusD);
    const double timeout = number("timeout", 0);

    const std::string preset = opts.count("preset") ? opts["preset"] : "dgx-h100";
    ClusterSpec spec;
    if (!LookupClusterPreset(preset, spec))
    {
        throw RecordUsage("unknown preset '" + preset + "' (known: " + KnownClusterPresets() +
                          ")");
    }
    const std::string gpuModel = opts.count("gpu") ? opts["gpu"] : spec.gpuModel;
    GpuSpec gpuSpec;
    if (!LookupGpuSpec(gpuModel, gpuSpec))
    {
        throw RecordUsage("unknown GPU model '" + gpuModel + "' (known: " + KnownGpuModels() +
                          ")");
    }
    RecordSettings set;
    set.gpus = gpus;
    set.plan = LaunchPlanFromOptions(o, gpus, std::max<uint32_t>(1, spec.gpusPerServer));
    set.timeout = timeout;
    set.preset = preset;
    set.spec = spec;
    set.gpuModel = gpuModel;
    set.gpuSpec = gpuSpec;
    set.opts = opts;
    return set;
}

/// The environment of every rank process of a recording (the rank variables are added per
/// process).
std::map<std::string, std::string>
RecordEnvironment(const std::string& libdir,
                  const std::string& staging,
                  const std::string& gpuModel,
                  double timeout)
{
    std::map<std::string, std::string> env;
    env["GPUSIM_RECORD_DIR"] = staging;
    env["GPUSIM_UNIQUE_ID_FILE"] = staging + "/.nccl-unique-id";
    env["GPUSIM_GPU"] = gpuModel;
    // The clock library, as in a live run: the program's clock reads cost the same host time
    // (its clocks still read real time when recording).
    std::vector<std::string> preload;
    for (const char* lib : {"libgpusim-clock.so", "libgpusim-node.so"})
    {
        if (IsFile(libdir + "/" + lib))
        {
            preload.push_back(lib);
        }
    }
    AddShimEnvironment(env, libdir, preload, timeout);
    return env;
}

/// How the ranks of a recording ended.
struct RanksOutcome
{
    int failedRank = -1; //!< first failing rank (rank order), -1 if none
    int failedStatus = 0;
    bool timedOut = false;
    int signal = 0; //!< SIGINT/SIGTERM received (InterruptGuard)
};

/// Runs the ranks and waits for them; the first failing rank, a timeout or an interrupt stops
/// the others (they could wait forever for it).
RanksOutcome
RunRanks(const std::vector<std::string>& program,
         const std::map<std::string, std::string>& env,
         const LaunchPlan& plan,
         double timeout)
{
    ProgramLauncher procs;
    const auto start = std::chrono::steady_clock::now();
    plan.Spawn(procs, program, env);
    auto failed = [&procs]() {
        for (size_t r = 0; r < procs.Processes().size(); ++r)
        {
            if (procs.Processes()[r].done && procs.Processes()[r].status != 0)
            {
                return static_cast<int>(r);
            }
        }
        return -1;
    };
    RanksOutcome o;
    while (!procs.Reap() && !InterruptGuard::Received())
    {
        o.failedRank = failed();
        if (o.failedRank >= 0)
        {
            break;
        }
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (timeout > 0 && elapsed > timeout)
        {
            o.timedOut = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    o.signal = InterruptGuard::Received();
    if (o.failedRank >= 0 || o.timedOut || o.signal)
    {
        procs.StopAll();
    }
    if (o.failedRank < 0 && !o.timedOut)
    {
        o.failedRank = failed();
    }
    if (o.failedRank >= 0)
    {
        o.failedStatus = procs.Processes()[o.failedRank].status;
    }
    return o;
}

/// Per-rank op counts of a recorded job, and the NCCL operations of rank 0.
void
PrintRankTable(std::ostream& out, const JobTrace& job)
{
    out << "#  rank        ops   kernels  gemms  copies  collectives  p2p  syncs  markers\n";
    std::map<std::string, uint64_t> collCounts;
    std::map<std::string, bool> comms;
    for (const auto& r : job.ranks)
    {
        uint64_t kernels = 0, gemms = 0, copies = 0, colls = 0, p2p = 0, syncs = 0, marks = 0;
        for (const auto& op : r.ops)
        {
            switch (op.kind)
            {
            case OpKind::Kernel:
                ++kernels;
                gemms += op.gemm.m ? 1 : 0;
                break;
            case OpKind::Memcpy:
            case OpKind::Memset:
                ++copies;
                break;
            case OpKind::Collective:
                if (op.coll == CollKind::Send || op.coll == CollKind::Recv)
                {
                    ++p2p;
                }
                else
                {
                    ++colls;
                }
                if (r.rank == 0)
                {
                    ++collCounts[ToString(op.coll)];
                }
                comms[op.comm] = true;
                break;
            case OpKind::StreamSync:
            case OpKind::EventSync:
            case OpKind::DeviceSync:
                ++syncs;
                break;
            case OpKind::Marker:
                ++marks;
                break;
            default:
                break;
            }
        }
        char line[160];
        std::snprintf(line, sizeof(line),
                      "%7u  %9zu  %8llu  %5llu  %6llu  %11llu  %3llu  %5llu  %7llu\n",
                      r.rank, r.ops.size(), (unsigned long long)kernels,
                      (unsigned long long)gemms, (unsigned long long)copies,
                      (unsigned long long)colls, (unsigned long long)p2p,
                      (unsigned long long)syncs, (unsigned long long)marks);
        out << line;
    }
    out << "# NCCL on rank 0:";
    if (collCounts.empty())
    {
        out << " none";
    }
    for (const auto& [name, n] : collCounts)
    {
        out << " " << name << " " << n;
    }
    out << " (" << comms.size() << " communicator" << (comms.size() == 1 ? "" : "s") << ")\n";
}

} // namespace

bool
ParseQuerySyncPolicy(const std::string& s, QuerySyncPolicy& out)
{
    if (s == "wait")
    {
        out = QuerySyncPolicy::Wait;
        return true;
    }
    if (s == "ignore")
    {
        out = QuerySyncPolicy::Ignore;
        return true;
    }
    return false;
}

uint64_t
ApplyQuerySyncPolicy(JobTrace& job, QuerySyncPolicy policy)
{
    uint64_t n = 0;
    for (auto& r : job.ranks)
    {
        for (auto& op : r.ops)
        {
            if (!op.query || (op.kind != OpKind::StreamSync && op.kind != OpKind::EventSync))
            {
                continue;
            }
            ++n;
            if (policy == QuerySyncPolicy::Ignore)
            {
                // Keep the host time the poll took; drop the wait.
                op.name = op.kind == OpKind::StreamSync ? "cudaStreamQuery" : "cudaEventQuery";
                op.kind = OpKind::HostWork;
            }
        }
    }
    return n;
}

std::shared_ptr<JobTrace>
LoadJobForSimulation(const std::string& dir,
                     bool share,
                     QuerySyncPolicy policy,
                     std::string& summary,
                     uint32_t simaiRanks)
{
    uint32_t sharing = 0;
    // Chakra ET files (DIR or PREFIX of NAME.RANK.et) and SimAI workload files simulate
    // directly (doc/chakra.md, doc/simai.md).
    SimaiConvertOptions simai;
    simai.ranks = simaiRanks;
    auto job = std::make_shared<JobTrace>(IsChakraInput(dir)          ? ImportChakra(dir)
                                          : IsSimaiWorkloadFile(dir) ? ImportSimai(dir, simai)
                                          : share ? ReadJobTraceSharing(dir, &sharing)
                                                  : ReadJobTrace(dir));
    ValidateJobTrace(*job);
    ApplyQuerySyncPolicy(*job, policy);
    summary = "# " + GroupIdenticalRanks(*job).Summary();
    if (sharing)
    {
        summary += "; " + std::to_string(sharing) + " share another rank's op list in memory";
    }
    summary += "\n";
    return job;
}

void
UseKernelTable(GpuWorkloadHelper& helper, const std::string& file, bool useRecorded)
{
    helper.SetCostModel("ns3::ProfileTableCostModel");
    helper.SetCostModelAttribute("UseRecorded", BooleanValue(useRecorded));
    helper.SetCostModelAttribute("TableFile", StringValue(file));
}

std::string
KernelTableSummary(const GpuWorkload& workload)
{
    if (workload.GetNRanks() == 0)
    {
        return "";
    }
    auto table = DynamicCast<ProfileTableCostModel>(workload.GetContext(0)->GetCostModel());
    if (!table)
    {
        return "";
    }
    return "# kernel table: " + std::to_string(table->GetHits()) + " of " +
           std::to_string(table->GetHits() + table->GetMisses()) + " kernel launches measured\n";
}

int
RecordCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::string staging;
    try
    {
        std::set<std::string> valued =
            {"preset", "gpu", "gpus", "out", "timeout", "kernel-table-template"};
        valued.insert(kLaunchOptions.begin(), kLaunchOptions.end());
        valued.insert(kHostTimeOptions.begin(), kHostTimeOptions.end());
        Options o(args, valued, {"help"}, true);
        if (o.Has("help"))
        {
            PrintRecordUsage(out);
            return 0;
        }
        const std::vector<std::string>& program = o.Program();
        if (program.empty())
        {
            throw RecordUsage("no program given (gpusim record [options] -- PROGRAM ARGS...)");
        }
        const RecordSettings set = ParseRecordSettings(o);
        const uint32_t gpus = set.gpus;
        const double timeout = set.timeout;
        const std::string& preset = set.preset;
        const std::string& gpuModel = set.gpuModel;
        const GpuSpec& gpuSpec = set.gpuSpec;
        std::map<std::string, std::string> opts = set.opts;
        std::string tried;
        const std::string libdir = FindShimLibDir(&tried);
        if (libdir.empty())
        {
            err << "gpusim record: error: the shim libraries (libcudart.so.13, libnccl.so.2) "
                   "were not found; looked in: "
                << tried << ". Build the shim (GPUSIM_BUILD_SHIM=ON) or set GPUSIM_SHIM_LIBDIR.\n";
            return 2;
        }

        std::string outDir = opts.count("out") ? opts["out"] : "gpusim-trace";
        while (outDir.size() > 1 && outDir.back() == '/')
        {
            outDir.pop_back();
        }
        outDir = Absolute(outDir);
        // Record next to the destination; it replaces the old trace only on success.
        staging = outDir + ".recording-" + std::to_string(::getpid());
        RemoveTree(staging);
        if (::mkdir(staging.c_str(), 0755) != 0)
        {
            throw std::runtime_error("cannot create " + staging + ": " + std::strerror(errno));
        }

        std::map<std::string, std::string> env =
            RecordEnvironment(libdir, staging, gpuModel, timeout);
        for (const auto& [k, v] : HostTimeEnvironment(o))
        {
            env[k] = v;
        }
        InterruptGuard interrupts;
        const auto start = std::chrono::steady_clock::now();
        RanksOutcome ranks = RunRanks(program, env, set.plan, timeout);
        if (ranks.signal)
        {
            err << "gpusim record: interrupted (signal " << ranks.signal
                << "); all ranks were stopped, no trace written\n";
            RemoveTree(staging);
            return 128 + ranks.signal;
        }
        const int failedRank = ranks.failedRank;
        const bool timedOut = ranks.timedOut;
        const std::string prog = program.front();
        if (timedOut)
        {
            err << "gpusim record: error: " << prog << " did not finish within " << timeout
                << " s; all ranks were stopped, no trace written\n";
            RemoveTree(staging);
            return 3;
        }
        if (failedRank >= 0)
        {
            const size_t processes = set.plan.Processes().size();
            err << "gpusim record: error: process " << failedRank << " of " << processes << " ("
                << prog << ") " << ProgramLauncher::DescribeStatus(ranks.failedStatus)
                << (processes > 1 ? "; the other processes were stopped" : "")
                << ", no trace written\n";
            RemoveTree(staging);
            return 2;
        }
        if (!IsFile(staging + "/manifest.json"))
        {
            err << "gpusim record: error: " << prog
                << " finished but left no trace: it never called the CUDA runtime through the "
                   "shim (is it linked with -cudart shared / against libcudart.so.13?)\n";
            RemoveTree(staging);
            return 2;
        }
        JobTrace job;
        try
        {
            job = ReadJobTrace(staging);
        }
        catch (const TraceFormatError& e)
        {
            err << "gpusim record: error: the recorded trace cannot be read: " << e.what()
                << "\n";
            RemoveTree(staging);
            return 2;
        }
        PublishTrace(staging, outDir);
        staging.clear();
        if (opts.count("kernel-table-template"))
        {
            const std::string file = opts["kernel-table-template"];
            WriteFileAtomically(file, KernelTableTemplate(job, gpuSpec, gpuModel));
            out << "# kernel table template: " << file << "\n";
        }

        // Summary.
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const size_t processes = set.plan.Processes().size();
        out << "# gpusim record: " << prog << " as " << processes << " process"
            << (processes == 1 ? "" : "es") << " on " << gpus << " " << gpuModel << " GPU"
            << (gpus == 1 ? "" : "s") << " (preset " << preset << "), " << job.ranks.size()
            << " rank" << (job.ranks.size() == 1 ? "" : "s") << " recorded in " << std::fixed;
        out.precision(2);
        out << wall << " s\n";
        PrintRankTable(out, job);
        out << "# " << GroupIdenticalRanks(job).Summary() << "\n";
        try
        {
            ValidateJobTrace(job);
        }
        catch (const TraceFormatError& e)
        {
            err << "gpusim record: warning: the trace is inconsistent and will not simulate: "
                << e.what() << "\n";
        }
        out << "# trace: " << outDir << " (manifest.json + " << job.ranks.size()
            << " rank file" << (job.ranks.size() == 1 ? "" : "s") << ")\n";
        out << "# next: gpusim simulate " << outDir << " --preset " << preset << "\n";
        return 0;
    }
    catch (const RecordUsage& e)
    {
        err << "gpusim record: " << e.what() << "\n";
        PrintRecordUsage(err);
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim record: error: " << e.what() << "\n";
        if (!staging.empty())
        {
            RemoveTree(staging);
        }
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
