#include "ns3/validate-command.h"

#include "ns3/byte-size.h"
#include "ns3/cli-options.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/gpusim-commands.h"
#include "ns3/job-builder.h"
#include "ns3/json-writer.h"
#include "ns3/nccl-version.h"
#include "ns3/nccl-host-cost.h"
#include "ns3/simulator.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <regex>
#include <sstream>

namespace ns3
{
namespace gpusim
{

namespace
{

double
Median(std::vector<double> v)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string
SizeLabel(uint64_t b)
{
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = double(b);
    while (v >= 1024 && u < 4)
    {
        v /= 1024;
        ++u;
    }
    char s[32];
    std::snprintf(s, sizeof(s), v == std::floor(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
    return s;
}

std::string
XmlEscape(const std::string& s)
{
    std::string o;
    for (char c : s)
    {
        switch (c)
        {
        case '&':
            o += "&amp;";
            break;
        case '<':
            o += "&lt;";
            break;
        case '>':
            o += "&gt;";
            break;
        default:
            o += c;
        }
    }
    return o;
}

/// One collective of `bytes` on every GPU of `spec`, auto-selected (or as the NCCL options
/// say); fills the row's simulated time and plan.
void
SimulateRow(const Options& o, const ValidationTable& t, GpuClusterHelper& cluster,
            const NodeContainer& gpus, ValidationRow& row, NcclWorld::FidelityStats& fidelity)
{
    const uint32_t n = gpus.GetN();
    JobBuilder job(n);
    job.AllRanks().CommInit("world").CreateStream(1, true);
    if (t.sendrecv)
    {
        // nccl-tests sendrecv_perf: every rank sends `bytes` to the next rank and receives as
        // many from the previous one, in one group.
        for (uint32_t r = 0; r < n; ++r)
        {
            job.Rank(r)
                .Send(1, "world", (r + 1) % n, row.bytes, 1)
                .Recv(1, "world", (r + n - 1) % n, row.bytes, 1);
        }
        job.AllRanks();
    }
    else
    {
        job.Collective(1, t.kind, "world", row.bytes, t.dtype, 0);
    }
    job.SyncStream(1);
    GpuWorkloadHelper helper;
    ConfigureNccl(o, helper);
    helper.SetBackend(MakeBackend(o, cluster.GetTopology()));
    Ptr<GpuWorkload> w = helper.Install(job.BuildShared(), gpus);
    Simulator::Run();
    const RunReport rep = w->Check();
    if (!rep.completed || (!t.sendrecv && w->GetCollectives().size() != 1))
    {
        const std::string stuck = rep.stuck;
        w->Dispose();
        Simulator::Destroy();
        throw std::runtime_error("table " + t.id + ", " + std::to_string(row.bytes) +
                                 " bytes: the simulation stopped with work waiting:\n" + stuck);
    }
    if (t.sendrecv)
    {
        // Point-to-point has no collective record: first launch to last completion of the
        // communication activities, as `gpusim collective --op sendrecv` measures it.
        double t0 = 1e300, t1 = 0;
        for (const auto& a : w->GetActivities())
        {
            if (a.communication)
            {
                t0 = std::min(t0, a.start.GetNanoSeconds() / 1e3);
                t1 = std::max(t1, a.end.GetNanoSeconds() / 1e3);
            }
        }
        row.simulatedUs = t1 > t0 ? t1 - t0 : 0;
        row.algo = "p2p";
        row.proto = "simple";
        row.channels = 0;
    }
    else
    {
        const CollectiveRecord& rec = w->GetCollectives().front();
        row.path = ToString(rec.path);
        row.simulatedUs = (rec.End() - rec.FirstJoin()).GetNanoSeconds() / 1e3;
        row.algo = rec.plan.algo;
        row.proto = rec.plan.proto;
        row.channels = rec.plan.channels;
    }
    // nccl-tests times back-to-back iterations: when its thread needs longer to queue and launch
    // one iteration's kernels than the GPUs need to run them (several GPUs per thread, tiny
    // sizes), the host sets the pace.
    row.hostUs = NcclTestsHostUsPerIteration(t.gpusPerThread, t.sendrecv ? 2 : 1);
    row.hostBound = row.hostUs > row.simulatedUs;
    row.simulatedUs = std::max(row.simulatedUs, row.hostUs);
    row.errorPct = (row.simulatedUs - row.measuredUs) / row.measuredUs * 100;
    fidelity.Add(w->GetNcclWorld()->GetFidelityStats());
    w->Dispose();
    Simulator::Destroy();
}

void
PrintTable(std::ostream& out, const ValidationTable& t)
{
    out << "# " << t.id << ": " << t.OpLabel() << " on " << t.Ranks() << " GPUs, "
        << DescribeCluster(t.spec) << " (cluster from the " << t.clusterFrom << ")\n";
    out << "#        size   measured(us)  simulated(us)    error  busbw meas/sim (GB/s)"
           "   algo/proto\n";
    for (const auto& r : t.rows)
    {
        char line[256];
        std::snprintf(line, sizeof(line),
                      "%13llu  %13.2f  %13.2f  %+6.1f %%  %9.1f / %-9.1f   %s/%s%s\n",
                      static_cast<unsigned long long>(r.bytes), r.measuredUs, r.simulatedUs,
                      r.errorPct, t.BusGBps(r.bytes, r.measuredUs),
                      t.BusGBps(r.bytes, r.simulatedUs), r.algo.c_str(), r.proto.c_str(),
                      r.hostBound ? " (host-bound)" : "");
        out << line;
    }
    char sum[128];
    std::snprintf(sum, sizeof(sum), "# %s: median |error| %.1f %%, worst %.1f %% (%zu sizes)\n",
                  t.id.c_str(), t.MedianAbsError(), t.WorstAbsError(), t.rows.size());
    out << sum << "#\n";
}

void
PrintUsage(std::ostream& os)
{
    os << "usage: gpusim validate FILE [--table ID] [--min-bytes B] [--max-bytes B]\n"
          "                       [--algo A --proto P --backend flow|packet ...]\n"
          "                       [--json FILE] [--markdown FILE] [--svg FILE]\n"
          "  FILE         published nccl-tests results, in the shape of\n"
          "               ../shared/data/nccl-tests/published.json\n"
          "  --min-bytes, --max-bytes   sizes compared (default 1M to 1G)\n"
          "  --fidelity auto|chunk|...  as for 'collective' (default auto: exact shortcuts\n"
          "               where they apply)\n"
          "  --json, --markdown, --svg  the report as JSON, as a Markdown table, and as a plot\n"
          "               of measured vs simulated bus bandwidth (one panel per table)\n";
}

} // namespace

uint32_t
ValidationTable::Ranks() const
{
    return spec.TotalGpus();
}

double
ValidationTable::BusGBps(uint64_t bytes, double us) const
{
    const uint32_t n = Ranks();
    double f = 1.0; // broadcast, reduce and sendrecv: busbw = algbw (nccl-tests)
    if (sendrecv)
    {
        f = 1.0;
    }
    else if (kind == CollKind::AllReduce)
    {
        f = 2.0 * (n - 1) / n;
    }
    else if (kind == CollKind::AllGather || kind == CollKind::ReduceScatter ||
             kind == CollKind::AllToAll)
    {
        f = double(n - 1) / n;
    }
    return us > 0 ? bytes / (us * 1e-6) / 1e9 * f : 0;
}

std::string
ValidationTable::OpLabel() const
{
    return sendrecv ? "sendrecv" : ToString(kind);
}

bool
ParseValidationOp(const std::string& op, CollKind& kind, bool& sendrecv)
{
    // nccl-tests' binary names (all_gather_perf, reduce_scatter, ...) or gpusim's op names.
    std::string s;
    for (char c : op)
    {
        if (c != '_' && c != '-')
        {
            s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    if (s.size() > 4 && s.compare(s.size() - 4, 4, "perf") == 0)
    {
        s.erase(s.size() - 4);
    }
    sendrecv = s == "sendrecv";
    if (sendrecv)
    {
        kind = CollKind::Send;
        return true;
    }
    return ParseCollKind(s, kind) && kind != CollKind::Send && kind != CollKind::Recv;
}

double
ValidationTable::MedianAbsError() const
{
    std::vector<double> e;
    for (const auto& r : rows)
    {
        e.push_back(std::fabs(r.errorPct));
    }
    return Median(e);
}

double
ValidationTable::WorstAbsError() const
{
    double w = 0;
    for (const auto& r : rows)
    {
        w = std::max(w, std::fabs(r.errorPct));
    }
    return w;
}

void
OverallErrors(const std::vector<ValidationTable>& tables, double& median, double& worst)
{
    std::vector<double> e;
    worst = 0;
    for (const auto& t : tables)
    {
        for (const auto& r : t.rows)
        {
            e.push_back(std::fabs(r.errorPct));
            worst = std::max(worst, std::fabs(r.errorPct));
        }
    }
    median = Median(e);
}

uint32_t
GpusPerThreadFromHardware(const std::string& hardware)
{
    std::smatch m;
    if (std::regex_search(hardware, m, std::regex(R"((?:^|[\s(])-g\s*(\d{1,4})\b)")))
    {
        return std::max<uint32_t>(1, static_cast<uint32_t>(std::stoul(m[1])));
    }
    return 1;
}

double
NcclTestsHostUsPerIteration(uint32_t gpusPerThread, uint32_t callsPerGpu)
{
    return gpusPerThread * (callsPerGpu * gpusim_host_cost::kNcclEnqueueUs +
                            gpusim_host_cost::kNcclLaunchUs);
}

ClusterSpec
ClusterFromHardware(const std::string& hardware, const std::string& id)
{
    auto fail = [&](const std::string& why) {
        throw std::runtime_error("table " + id + ": " + why +
                                 " in its hardware text; give it a \"cluster\" object");
    };
    std::string preset;
    std::string gpu;
    for (const auto& [word, name] : {std::pair<const char*, const char*>{"H200", "dgx-h200"},
                                     {"H100", "dgx-h100"},
                                     {"A100", "dgx-a100"}})
    {
        if (hardware.find(word) != std::string::npos)
        {
            preset = name;
            gpu = word;
            break;
        }
    }
    if (preset.empty())
    {
        fail("no known GPU (H100, H200, A100)");
    }
    // The counts are \d+ matches: only their size can be out of range (std::stoul would throw
    // std::out_of_range).
    auto count = [&](const std::string& digits, const char* what) {
        if (digits.size() > 6)
        {
            fail(std::string(what) + " " +
                 (digits.size() > 20 ? digits.substr(0, 20) + "..." : digits) + " out of range");
        }
        return static_cast<uint32_t>(std::stoul(digits));
    };
    ClusterSpec spec;
    LookupClusterPreset(preset, spec);
    std::smatch m;
    const std::regex nodes(R"((\d+)\s*(?:nodes?|servers?|hosts?)\b)", std::regex::icase);
    if (!std::regex_search(hardware, m, nodes))
    {
        fail("no node count (\"N nodes\")");
    }
    spec.servers = count(m[1], "node count");
    const std::regex gpus("(\\d+)\\s*x\\s*(?:NVIDIA\\s+)?" + gpu, std::regex::icase);
    if (std::regex_search(hardware, m, gpus))
    {
        spec.gpusPerServer = count(m[1], "GPU count");
        spec.nicsPerServer = std::min(spec.nicsPerServer, spec.gpusPerServer);
    }
    const std::regex nics(R"((\d+)\s*x\s*[^,;()]*?(\d+)\s*Gb/s)", std::regex::icase);
    if (std::regex_search(hardware, m, nics))
    {
        spec.nicsPerServer = count(m[1], "NIC count");
        spec.nicGbps = count(m[2], "NIC speed");
        // More NICs than GPUs (AWS p5: 32 x 100 Gb/s EFA for 8 GPUs, 4 behind each GPU's PCIe
        // switch): one NIC per GPU carrying that GPU's share, the same bandwidth per GPU and
        // per server, which is what the model's one-NIC-per-rail servers can hold.
        const uint32_t g = spec.gpusPerServer;
        if (spec.nicsPerServer > g && g > 0 && spec.nicsPerServer % g == 0)
        {
            spec.nicGbps *= double(spec.nicsPerServer / g);
            spec.nicsPerServer = g;
        }
    }
    // AWS EFA (through the aws-ofi-nccl plugin) instead of NCCL's InfiniBand/RoCE transport.
    if (std::regex_search(hardware, std::regex(R"(\bEFA\b)")))
    {
        UseNicStack(spec, "efa");
    }
    // The NCCL release, whose tuner picks the algorithm and protocol (model/nccl-version.h),
    // and the collective channels NCCL logged: twice its graph channels, which NCCL
    // duplicates after the search (src/graph/connect.cc).
    if (std::regex_search(hardware, m, std::regex(R"(\bNCCL\s+(2\.\d{1,2}\.\d{1,2})\b)")))
    {
        uint32_t code = 0;
        if (ParseNcclVersion(m[1], code))
        {
            spec.nccl.ncclVersion = m[1];
        }
    }
    if (std::regex_search(hardware, m, std::regex(R"((\d{1,3})\s+coll\s+channels)")))
    {
        spec.nccl.graphChannels = std::max<uint32_t>(1, count(m[1], "channel count") / 2);
    }
    // GPUs joined by NVLink without an NVSwitch (4-GPU HGX boards): no NVLink SHARP, so NCCL
    // offers neither NVLS nor NVLSTree. The server stays the preset's NVLink star, each GPU
    // with its whole NVLink bandwidth, which NCCL's rings reach by running channels over
    // different GPU pairs (doc/validation.md, "Snellius").
    if (std::regex_search(hardware,
                          std::regex(R"(\b(?:no|without)\s+NVSwitch\b)", std::regex::icase)))
    {
        spec.nccl.nvls = false;
    }
    ValidateClusterSpec(spec);
    return spec;
}

std::vector<ValidationTable>
ReadValidationTables(const std::string& file, uint64_t minBytes, uint64_t maxBytes,
                     const std::string& only)
{
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto err = parser.load(file).get(doc))
    {
        throw std::runtime_error(file + ": " + simdjson::error_message(err));
    }
    simdjson::dom::array tables;
    if (doc["tables"].get(tables))
    {
        throw std::runtime_error(file + ": expected {\"tables\": [...]}");
    }
    std::vector<ValidationTable> out;
    size_t index = 0;
    for (simdjson::dom::element te : tables)
    {
        ValidationTable t;
        std::string_view sv;
        t.id = te["id"].get(sv) ? "table " + std::to_string(index) : std::string(sv);
        ++index;
        if (!only.empty() && t.id != only)
        {
            continue;
        }
        auto bad = [&](const std::string& why) {
            return std::runtime_error(file + ": table " + t.id + ": " + why);
        };
        t.op = te["op"].get(sv) ? "allreduce" : std::string(sv);
        if (!ParseValidationOp(t.op, t.kind, t.sendrecv))
        {
            throw bad("unknown op '" + t.op + "'");
        }
        t.hardware = te["hardware"].get(sv) ? "" : std::string(sv);
        t.source = te["source"].get(sv) ? "" : std::string(sv);
        t.gpusPerThread = GpusPerThreadFromHardware(t.hardware);
        if (!te["dtype"].get(sv) && !ParseDataType(std::string(sv), t.dtype))
        {
            throw bad("unknown dtype '" + std::string(sv) + "'");
        }
        simdjson::dom::element cluster;
        if (!te["cluster"].get(cluster))
        {
            // A JSON object is a YAML flow mapping: the cluster YAML reader takes it as is.
            t.spec = ParseClusterSpecYaml(simdjson::minify(cluster), file + " table " + t.id);
            t.clusterFrom = "cluster object";
        }
        else
        {
            t.spec = ClusterFromHardware(t.hardware, t.id);
            t.clusterFrom = "hardware text";
        }
        simdjson::dom::array rows;
        if (te["rows"].get(rows))
        {
            throw bad("no \"rows\" array");
        }
        for (simdjson::dom::element re : rows)
        {
            ValidationRow r;
            double bytes = 0;
            if (re["bytes"].get(bytes) || re["time_us"].get(r.measuredUs) || bytes <= 0 ||
                !(r.measuredUs > 0))
            {
                throw bad("every row needs positive \"bytes\" and \"time_us\"");
            }
            r.bytes = static_cast<uint64_t>(bytes);
            if (r.bytes >= minBytes && r.bytes <= maxBytes)
            {
                t.rows.push_back(r);
            }
        }
        if (!t.rows.empty())
        {
            out.push_back(std::move(t));
        }
    }
    if (!only.empty() && out.empty())
    {
        throw std::runtime_error(file + ": no table '" + only + "' with sizes in the range");
    }
    return out;
}

std::string
ValidationMarkdown(const std::vector<ValidationTable>& tables, const std::string& command)
{
    std::ostringstream md;
    char buf[512];
    double median, worst;
    OverallErrors(tables, median, worst);
    md << "<!-- written by: " << command << " -->\n\n";
    md << "| table | cluster | sizes | median \\|error\\| | worst \\|error\\| |\n";
    md << "| --- | --- | --- | --- | --- |\n";
    size_t points = 0;
    for (const auto& t : tables)
    {
        std::string shape =
            std::to_string(t.spec.servers) + " x " +
            (t.spec.preset.empty() ? std::to_string(t.spec.gpusPerServer) + " GPUs (custom)"
                                   : t.spec.preset) +
            (t.spec.nicStack == "efa" && t.spec.preset != "aws-p5" ? " + EFA" : "");
        // What the table's servers change from their preset's.
        ClusterSpec preset;
        if (!t.spec.preset.empty() && LookupClusterPreset(t.spec.preset, preset))
        {
            std::ostringstream d;
            if (t.spec.gpusPerServer != preset.gpusPerServer)
            {
                d << ", " << t.spec.gpusPerServer << " GPUs";
            }
            if (t.spec.nicsPerServer != preset.nicsPerServer || t.spec.nicGbps != preset.nicGbps)
            {
                d << ", " << t.spec.nicsPerServer << " x " << t.spec.nicGbps << " Gb/s";
            }
            if (preset.nccl.nvls && !t.spec.nccl.nvls)
            {
                d << ", no NVLS";
            }
            if (!d.str().empty())
            {
                shape += " (" + d.str().substr(2) + ")";
            }
        }
        std::snprintf(buf, sizeof(buf), "| %s | %s | %zu | %.1f %% | %.1f %% |\n", t.id.c_str(),
                      shape.c_str(), t.rows.size(), t.MedianAbsError(), t.WorstAbsError());
        md << buf;
        points += t.rows.size();
    }
    std::snprintf(buf, sizeof(buf), "| **all** | | %zu | **%.1f %%** | **%.1f %%** |\n\n", points,
                  median, worst);
    md << buf;
    for (const auto& t : tables)
    {
        md << "#### " << t.id << "\n\n";
        md << "Hardware: " << t.hardware << "  \nSource: " << t.source << "  \n";
        md << "Simulated on: " << DescribeCluster(t.spec) << " (from the " << t.clusterFrom
           << ").\n\n";
        md << "| size | measured (µs) | simulated (µs) | error | busbw measured (GB/s) | "
              "busbw simulated (GB/s) | algorithm / protocol |\n";
        md << "| ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
        for (const auto& r : t.rows)
        {
            std::snprintf(buf, sizeof(buf),
                          "| %s | %.1f | %.1f | %+.1f %% | %.1f | %.1f | %s / %s%s |\n",
                          SizeLabel(r.bytes).c_str(), r.measuredUs, r.simulatedUs, r.errorPct,
                          t.BusGBps(r.bytes, r.measuredUs), t.BusGBps(r.bytes, r.simulatedUs),
                          r.algo.c_str(), r.proto.c_str(), r.hostBound ? " (host-bound)" : "");
            md << buf;
        }
        std::snprintf(buf, sizeof(buf), "\nMedian |error| %.1f %%, worst %.1f %%.\n\n",
                      t.MedianAbsError(), t.WorstAbsError());
        md << buf;
    }
    return md.str();
}

std::string
ValidationJson(const std::vector<ValidationTable>& tables, const std::string& fidelityJson)
{
    JsonWriter j;
    double median, worst;
    OverallErrors(tables, median, worst);
    j.BeginObject();
    j.Key("median_abs_error_pct").Double(median).Key("worst_abs_error_pct").Double(worst);
    if (!fidelityJson.empty())
    {
        j.Key("fidelity").Raw(fidelityJson);
    }
    j.Key("tables").BeginArray();
    for (const auto& t : tables)
    {
        j.BeginObject();
        j.Key("id").String(t.id).Key("op").String(t.op).Key("cluster").String(
            DescribeCluster(t.spec));
        j.Key("cluster_from").String(t.clusterFrom).Key("ranks").Uint(t.Ranks());
        j.Key("gpus_per_thread").Uint(t.gpusPerThread);
        j.Key("median_abs_error_pct").Double(t.MedianAbsError());
        j.Key("worst_abs_error_pct").Double(t.WorstAbsError());
        j.Key("rows").BeginArray();
        for (const auto& r : t.rows)
        {
            j.BeginObject();
            j.Key("bytes").Uint(r.bytes).Key("measured_us").Double(r.measuredUs);
            j.Key("simulated_us").Double(r.simulatedUs).Key("error_pct").Double(r.errorPct);
            j.Key("measured_busbw_GBps").Double(t.BusGBps(r.bytes, r.measuredUs));
            j.Key("simulated_busbw_GBps").Double(t.BusGBps(r.bytes, r.simulatedUs));
            j.Key("algo").String(r.algo).Key("proto").String(r.proto);
            j.Key("host_us").Double(r.hostUs).Key("host_bound").Bool(r.hostBound);
            j.Key("channels").Uint(r.channels);
            if (!r.path.empty())
            {
                j.Key("path").String(r.path);
            }
            j.EndObject();
        }
        j.EndArray();
        j.EndObject();
    }
    j.EndArray();
    j.EndObject();
    return j.Take() + "\n";
}

std::string
ValidationSvg(const std::vector<ValidationTable>& tables)
{
    // Panels of 360 x 240 in rows of three; x: log2(size), y: bus bandwidth from 0.
    const int pw = 360, ph = 250, cols = std::min<int>(3, std::max<size_t>(1, tables.size()));
    const int rows = (tables.size() + cols - 1) / cols;
    const int ml = 52, mr = 24, mt = 30, mb = 40; // margins inside a panel
    std::ostringstream s;
    char b[512];
    std::snprintf(b, sizeof(b),
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"sans-serif\" font-size=\"11\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                  cols * pw, rows * ph + 24);
    s << b;
    std::snprintf(b, sizeof(b),
                  "<g transform=\"translate(10,16)\"><circle cx=\"5\" cy=\"-4\" r=\"3.5\" "
                  "fill=\"#d62728\"/><text x=\"14\" y=\"0\">measured (nccl-tests)</text>"
                  "<line x1=\"150\" y1=\"-4\" x2=\"170\" y2=\"-4\" stroke=\"#1f77b4\" "
                  "stroke-width=\"2\"/><text x=\"176\" y=\"0\">simulated (gpusim, auto "
                  "algorithm)</text></g>\n");
    s << b;
    for (size_t i = 0; i < tables.size(); ++i)
    {
        const ValidationTable& t = tables[i];
        const int ox = (i % cols) * pw, oy = 24 + (i / cols) * ph;
        const double x0 = std::log2(double(t.rows.front().bytes));
        const double x1 = std::max(x0 + 1, std::log2(double(t.rows.back().bytes)));
        double ymax = 0;
        for (const auto& r : t.rows)
        {
            ymax = std::max({ymax, t.BusGBps(r.bytes, r.measuredUs),
                             t.BusGBps(r.bytes, r.simulatedUs)});
        }
        const double step = ymax > 400 ? 100 : ymax > 100 ? 50 : ymax > 40 ? 10 : 5;
        ymax = std::ceil(ymax / step) * step;
        const double w = pw - ml - mr, h = ph - mt - mb;
        auto X = [&](uint64_t bytes) {
            return ox + ml + (std::log2(double(bytes)) - x0) / (x1 - x0) * w;
        };
        auto Y = [&](double v) { return oy + mt + h - v / ymax * h; };
        std::snprintf(b, sizeof(b),
                      "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n"
                      "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                      "stroke=\"#888\"/>\n",
                      ox + ml, oy + mt - 8, XmlEscape(t.id).c_str(), ox + ml, oy + mt, w, h);
        s << b;
        for (double v = 0; v <= ymax + 1e-9; v += step)
        {
            std::snprintf(b, sizeof(b),
                          "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                          "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n",
                          ox + ml, Y(v), ox + ml + w, Y(v), ox + ml - 4, Y(v) + 4, v);
            s << b;
        }
        for (int e = int(std::ceil(x0)); e <= int(std::floor(x1)); e += 2)
        {
            const double x = ox + ml + (e - x0) / (x1 - x0) * w;
            std::snprintf(b, sizeof(b),
                          "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x,
                          oy + mt + h + 14, SizeLabel(uint64_t(1) << e).c_str());
            s << b;
        }
        std::snprintf(b, sizeof(b),
                      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">size</text>"
                      "<text transform=\"translate(%d,%.0f) rotate(-90)\" "
                      "text-anchor=\"middle\">busbw (GB/s)</text>\n",
                      ox + ml + w / 2, oy + mt + h + 30, ox + 14, oy + mt + h / 2);
        s << b;
        s << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
        for (const auto& r : t.rows)
        {
            std::snprintf(b, sizeof(b), "%.1f,%.1f ", X(r.bytes),
                          Y(t.BusGBps(r.bytes, r.simulatedUs)));
            s << b;
        }
        s << "\"/>\n";
        for (const auto& r : t.rows)
        {
            std::snprintf(b, sizeof(b),
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#d62728\"/>\n",
                          X(r.bytes), Y(t.BusGBps(r.bytes, r.measuredUs)));
            s << b;
        }
    }
    s << "</svg>\n";
    return s.str();
}

int
ValidateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    std::set<std::string> valued = {"table", "min-bytes", "max-bytes", "json", "markdown", "svg"};
    valued.insert(kNcclOptions.begin(), kNcclOptions.end());
    try
    {
        Options o(args, valued, {"help", "quiet"});
        if (o.Has("help"))
        {
            PrintUsage(out);
            return 0;
        }
        if (o.Positional().size() != 1)
        {
            throw UsageError("expected one FILE of published results");
        }
        const uint64_t minBytes = ParseBytes(o.Get("min-bytes", "1M"));
        const uint64_t maxBytes = ParseBytes(o.Get("max-bytes", "1G"));
        if (minBytes > maxBytes)
        {
            throw UsageError("need --min-bytes <= --max-bytes");
        }
        std::vector<ValidationTable> tables =
            ReadValidationTables(o.Positional().front(), minBytes, maxBytes, o.Get("table", ""));
        const std::string fidelityMode = FidelityOption(o, "auto");
        NcclWorld::FidelityStats fidelity;
        for (auto& t : tables)
        {
            GpuClusterHelper cluster;
            cluster.SetSpec(t.spec);
            NodeContainer gpus = cluster.Create();
            for (auto& r : t.rows)
            {
                SimulateRow(o, t, cluster, gpus, r, fidelity);
            }
            PrintTable(out, t);
        }
        double median, worst;
        OverallErrors(tables, median, worst);
        char line[160];
        std::snprintf(line, sizeof(line),
                      "# all tables: median |error| %.1f %%, worst %.1f %% (%s to %s)\n", median,
                      worst, o.Get("min-bytes", "1M").c_str(), o.Get("max-bytes", "1G").c_str());
        out << line << FidelityReportLine(fidelityMode, fidelity);
        WarnFidelityConflicts(fidelity, err);
        std::string command = "gpusim validate";
        for (const auto& a : args)
        {
            command += " " + a;
        }
        if (o.Has("json"))
        {
            WriteFileAtomically(o.Get("json", ""),
                                ValidationJson(tables, FidelityJson(fidelityMode, fidelity)));
        }
        if (o.Has("markdown"))
        {
            WriteFileAtomically(o.Get("markdown", ""), ValidationMarkdown(tables, command));
        }
        if (o.Has("svg"))
        {
            WriteFileAtomically(o.Get("svg", ""), ValidationSvg(tables));
        }
        return 0;
    }
    catch (const UsageError& e)
    {
        err << "gpusim validate: " << e.what() << "\n";
        PrintUsage(err);
        Simulator::Destroy();
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim validate: error: " << e.what() << "\n";
        Simulator::Destroy();
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3
