// gpusim simai import | info (doc/simai.md).
#include "ns3/simai-command.h"

#include "ns3/cli-options.h"
#include "ns3/op-ir.h"
#include "ns3/simai-workload.h"

#include <cstdio>
#include <iostream>
#include <map>

namespace ns3
{
namespace gpusim
{

namespace
{

void
PrintSimaiUsage(std::ostream& os)
{
    os << "usage: gpusim simai import FILE --out TRACE_DIR [--ranks N] [--passes P]\n"
          "       gpusim simai info FILE          (header and layers as gpusim reads them)\n"
          "  FILE is a SimAI workload (written by AICB): a parallelism header, the number of\n"
          "  layers, one line per layer. --ranks: the job size when the header has no\n"
          "  all_gpus; --passes: training passes (default 1, as SimAI's ns-3 front end).\n"
          "  'gpusim simulate FILE' also reads it directly (one pass; without all_gpus the\n"
          "  job takes every GPU of the cluster).\n";
}

std::string
CommText(const SimaiComm& c)
{
    if (c.coll == SimaiCollective::None)
    {
        return c.type == "NONE" ? "-" : c.type + "(not run)";
    }
    return std::string(ToString(c.coll)) + "@" + ToString(c.group) + ":" +
           std::to_string(c.bytes);
}

void
PrintInfo(const SimaiWorkload& w, std::ostream& out)
{
    out << "# " << w.file << ": " << w.policyName << ", " << w.layers.size() << " layers\n";
    out << "# tp " << (w.tp ? std::to_string(w.tp) : std::string("all")) << "  ep " << w.ep
        << "  pp " << w.pp << "  vpp " << w.vpp << "  ga " << w.ga << "  all_gpus "
        << (w.allGpus ? std::to_string(w.allGpus) : std::string("-")) << "  pp_comm "
        << w.ppCommBytes << "\n";
    out << "#  line  layer                     fwd_us  ig_us  wg_us  update_us  fwd_comm  "
           "ig_comm  wg_comm\n";
    for (const SimaiLayer& l : w.layers)
    {
        char line[160];
        std::snprintf(line, sizeof(line), "%7llu  %-22s %9.3f %6.3f %6.3f %10.3f  ",
                      static_cast<unsigned long long>(l.line), l.name.c_str(), l.fwdNs / 1e3,
                      l.igNs / 1e3, l.wgNs / 1e3, l.updateNs / 1e3);
        out << line << CommText(l.fwd) << "  " << CommText(l.ig) << "  " << CommText(l.wg)
            << (l.checkpoint ? "  checkpoint" : "")
            << (l.initiatesRecompute ? "  recompute" : "") << "\n";
    }
}

} // namespace

int
SimaiCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    try
    {
        Options o(args, {"out", "ranks", "passes"}, {"help"});
        const auto& pos = o.Positional();
        if (o.Has("help") || pos.size() != 2)
        {
            PrintSimaiUsage(o.Has("help") ? out : err);
            return o.Has("help") ? 0 : 1;
        }
        const std::string& sub = pos[0];
        if (sub == "info")
        {
            PrintInfo(ReadSimaiWorkload(pos[1]), out);
            return 0;
        }
        if (sub != "import")
        {
            throw UsageError("unknown simai subcommand '" + sub + "'");
        }
        if (!o.Has("out"))
        {
            throw UsageError("simai import needs --out");
        }
        SimaiConvertOptions opt;
        opt.ranks = o.Count("ranks", 0);
        opt.passes = o.Count("passes", 1);
        if (opt.passes == 0)
        {
            throw UsageError("--passes must be at least 1");
        }
        const SimaiWorkload w = ReadSimaiWorkload(pos[1]);
        if (w.allGpus == 0 && opt.ranks == 0)
        {
            throw UsageError(pos[1] + " has no all_gpus in its header: give the job size "
                                      "with --ranks N");
        }
        const JobTrace job = SimaiToJobTrace(w, opt);
        ValidateJobTrace(job);
        const std::string dir = o.Get("out", "");
        const uint32_t n = static_cast<uint32_t>(job.ranks.size());
        WriteJobTrace(job, dir, [&job](uint32_t r) { return UnsharedRank(job, r); }, n);
        out << "# gpusim simai import: " << w.policyName << ", " << w.layers.size()
            << " layers, " << n << " ranks (tp " << job.metadata.at("simai_tp") << ", dp "
            << job.metadata.at("simai_dp") << ", ep " << job.metadata.at("simai_ep") << "), "
            << opt.passes << " pass" << (opt.passes == 1 ? "" : "es") << ", "
            << job.ranks[0].ops.size() << " ops per rank -> " << dir << "\n";
        return 0;
    }
    catch (const UsageError& e)
    {
        err << "gpusim simai: " << e.what() << "\n";
        PrintSimaiUsage(err);
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim simai: error: " << e.what() << "\n";
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
