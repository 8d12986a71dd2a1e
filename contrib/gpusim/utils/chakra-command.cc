// gpusim chakra import | export | info (doc/chakra.md).
#include "ns3/chakra-command.h"

#include "ns3/chakra-trace.h"
#include "ns3/cli-options.h"
#include "ns3/op-ir.h"

#include <iostream>
#include <map>

namespace ns3
{
namespace gpusim
{

namespace
{

void
PrintChakraUsage(std::ostream& os)
{
    os << "usage: gpusim chakra import DIR|PREFIX --out TRACE_DIR [--comm-groups FILE]\n"
          "                            [--p2p auto|eager|rendezvous]\n"
          "       gpusim chakra export TRACE_DIR --out PREFIX   (writes PREFIX.RANK.et)\n"
          "       gpusim chakra info DIR|PREFIX                 (node counts per rank)\n"
          "  Chakra ET files are NAME.0.et ... NAME.N-1.et; 'gpusim simulate' also reads them\n"
          "  directly (DIR or PREFIX in place of a trace directory).\n";
}

ChakraP2p
ParseP2p(const std::string& s)
{
    if (s == "auto")
    {
        return ChakraP2p::Auto;
    }
    if (s == "eager")
    {
        return ChakraP2p::Eager;
    }
    if (s == "rendezvous")
    {
        return ChakraP2p::Rendezvous;
    }
    throw UsageError("--p2p must be auto, eager or rendezvous");
}

void
PrintInfo(const ChakraJob& job, std::ostream& out)
{
    out << "#  rank  nodes  comp  cpu  coll  send  recv  mem  other  collectives\n";
    for (size_t r = 0; r < job.ranks.size(); ++r)
    {
        std::map<std::string, int> colls;
        int comp = 0, cpu = 0, coll = 0, send = 0, recv = 0, mem = 0, other = 0;
        for (const ChakraNode& c : job.ranks[r].nodes)
        {
            switch (c.type)
            {
            case ChakraNodeType::Comp:
                ++(c.isCpuOp ? cpu : comp);
                break;
            case ChakraNodeType::CommColl:
                ++coll;
                ++colls[c.commType >= 0 && c.commType <= 9
                            ? ToString(static_cast<ChakraCollType>(c.commType))
                            : "?"];
                break;
            case ChakraNodeType::CommSend:
                ++send;
                break;
            case ChakraNodeType::CommRecv:
                ++recv;
                break;
            case ChakraNodeType::MemLoad:
            case ChakraNodeType::MemStore:
                ++mem;
                break;
            default:
                ++other;
            }
        }
        char line[160];
        std::snprintf(line, sizeof(line), "%7zu %6zu %5d %4d %5d %5d %5d %4d %6d  ", r,
                      job.ranks[r].nodes.size(), comp, cpu, coll, send, recv, mem, other);
        out << line;
        for (const auto& [k, v] : colls)
        {
            out << k << "x" << v << " ";
        }
        out << "\n";
    }
}

} // namespace

int
ChakraCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    try
    {
        Options o(args, {"out", "comm-groups", "p2p"}, {"help"});
        const auto& pos = o.Positional();
        if (o.Has("help") || pos.size() != 2)
        {
            PrintChakraUsage(o.Has("help") ? out : err);
            return o.Has("help") ? 0 : 1;
        }
        const std::string& sub = pos[0];
        if (sub == "info")
        {
            PrintInfo(ReadChakraJob(pos[1], o.Get("comm-groups", "")), out);
            return 0;
        }
        if (!o.Has("out"))
        {
            throw UsageError("chakra " + sub + " needs --out");
        }
        if (sub == "import")
        {
            ChakraImportOptions opt;
            opt.commGroupsFile = o.Get("comm-groups", "");
            opt.p2p = ParseP2p(o.Get("p2p", "auto"));
            JobTrace job = ImportChakra(pos[1], opt);
            ValidateJobTrace(job);
            WriteJobTrace(job, o.Get("out", ""));
            size_t ops = 0;
            for (const auto& r : job.ranks)
            {
                ops += r.ops.size();
            }
            out << "# gpusim chakra import: " << job.ranks.size() << " ranks, " << ops
                << " ops -> " << o.Get("out", "") << " (p2p "
                << job.metadata.at("chakra_p2p") << ")\n";
            return 0;
        }
        if (sub == "export")
        {
            const JobTrace job = ReadJobTrace(pos[1]);
            ValidateJobTrace(job);
            const ChakraJob ch = JobTraceToChakra(job);
            WriteChakraJob(ch, o.Get("out", ""));
            size_t nodes = 0;
            for (const auto& r : ch.ranks)
            {
                nodes += r.nodes.size();
            }
            out << "# gpusim chakra export: " << ch.ranks.size() << " ranks, " << nodes
                << " nodes -> " << o.Get("out", "") << ".{0.." << ch.ranks.size() - 1
                << "}.et" << (ch.commGroups.empty() ? "" : " + .comm_groups.json") << "\n";
            return 0;
        }
        throw UsageError("unknown chakra subcommand '" + sub + "'");
    }
    catch (const UsageError& e)
    {
        err << "gpusim chakra: " << e.what() << "\n";
        PrintChakraUsage(err);
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim chakra: error: " << e.what() << "\n";
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
