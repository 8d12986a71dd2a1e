#include "ns3/background-traffic.h"

#include "ns3/byte-size.h"
#include "ns3/fabric-event.h"
#include "ns3/json-writer.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("BackgroundTraffic");

NS_OBJECT_ENSURE_REGISTERED(BackgroundTraffic);

namespace gpusim
{

namespace
{

[[noreturn]] void
Bad(const std::string& item, const std::string& what)
{
    throw std::invalid_argument("background '" + item + "': " + what);
}

/// A non-negative integer making up all of `text`, or false.
bool
ParseUnsigned(const std::string& text, uint64_t& out)
{
    if (text.empty() || text.size() > 19 ||
        text.find_first_not_of("0123456789") != std::string::npos)
    {
        return false;
    }
    out = std::strtoull(text.c_str(), nullptr, 10);
    return true;
}

std::vector<std::string>
Split(const std::string& s, char sep)
{
    std::vector<std::string> out;
    size_t b = 0;
    while (true)
    {
        const size_t e = s.find(sep, b);
        out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
        if (e == std::string::npos)
        {
            return out;
        }
        b = e + 1;
    }
}

std::vector<uint32_t>
ParseGpuList(const std::string& item, const std::string& key, const std::string& value)
{
    std::vector<uint32_t> out;
    std::set<uint32_t> seen;
    for (const std::string& part : Split(value, ','))
    {
        const size_t dash = part.find('-');
        uint64_t a = 0;
        uint64_t b = 0;
        const std::string first = part.substr(0, dash);
        const std::string last = dash == std::string::npos ? first : part.substr(dash + 1);
        if (!ParseUnsigned(first, a) || a > UINT32_MAX)
        {
            Bad(item, key + ": '" + first + "' is not a GPU number");
        }
        if (!ParseUnsigned(last, b) || b > UINT32_MAX)
        {
            Bad(item, key + ": '" + last + "' is not a GPU number");
        }
        if (b < a)
        {
            Bad(item, key + ": range '" + part + "' runs backwards");
        }
        for (uint64_t g = a; g <= b; ++g)
        {
            if (!seen.insert(static_cast<uint32_t>(g)).second)
            {
                Bad(item, key + ": GPU " + std::to_string(g) + " is listed twice");
            }
            out.push_back(static_cast<uint32_t>(g));
        }
    }
    return out;
}

uint64_t
ParseSize(const std::string& item, const std::string& key, const std::string& text)
{
    uint64_t v = 0;
    try
    {
        v = ParseByteSize(text);
    }
    catch (const std::invalid_argument& e)
    {
        Bad(item, key + ": " + e.what());
    }
    if (v == 0)
    {
        Bad(item, key + ": '" + text + "' must be > 0 bytes");
    }
    return v;
}

double
ParseRate(const std::string& item, const std::string& text)
{
    static const std::pair<const char*, double> units[] = {
        {"Tbps", 1e12}, {"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3},
        {"Tb/s", 1e12}, {"Gb/s", 1e9}, {"Mb/s", 1e6}, {"Kb/s", 1e3}};
    for (const auto& [unit, scale] : units)
    {
        const std::string u = unit;
        if (text.size() > u.size() && text.compare(text.size() - u.size(), u.size(), u) == 0)
        {
            const std::string num = text.substr(0, text.size() - u.size());
            char* end = nullptr;
            const double v = std::strtod(num.c_str(), &end);
            if (*end != '\0' || !std::isfinite(v))
            {
                break;
            }
            if (v <= 0)
            {
                Bad(item, "rate '" + text + "' must be > 0");
            }
            return v * scale;
        }
    }
    Bad(item, "bad rate '" + text + "' (a number with unit Gbps, Mbps, Tbps or Kbps, e.g. 25Gbps)");
}

std::string
GpuListText(const std::vector<uint32_t>& gpus)
{
    std::string out;
    for (size_t i = 0; i < gpus.size();)
    {
        size_t j = i;
        while (j + 1 < gpus.size() && gpus[j + 1] == gpus[j] + 1)
        {
            ++j;
        }
        out += (out.empty() ? "" : ",") + std::to_string(gpus[i]);
        if (j > i)
        {
            out += "-" + std::to_string(gpus[j]);
        }
        i = j + 1;
    }
    return out;
}

std::string
SizeText(uint64_t b)
{
    static const std::pair<uint64_t, const char*> units[] = {
        {1ull << 30, "G"}, {1ull << 20, "M"}, {1ull << 10, "K"}};
    for (const auto& [scale, unit] : units)
    {
        if (b % scale == 0)
        {
            return std::to_string(b / scale) + unit;
        }
    }
    return std::to_string(b);
}

std::string
TimeText(Time t)
{
    const int64_t ns = t.GetNanoSeconds();
    if (ns == 0)
    {
        return "0";
    }
    if (ns % 1000000 == 0)
    {
        return std::to_string(ns / 1000000) + "ms";
    }
    if (ns % 1000 == 0)
    {
        return std::to_string(ns / 1000) + "us";
    }
    return std::to_string(ns) + "ns";
}

std::string
RateText(double bps)
{
    static const std::pair<double, const char*> units[] = {
        {1e12, "Tbps"}, {1e9, "Gbps"}, {1e6, "Mbps"}, {1e3, "Kbps"}};
    char buf[64];
    for (const auto& [scale, unit] : units)
    {
        const double v = bps / scale;
        if (v >= 1 && v == std::floor(v) && v < 1e15)
        {
            std::snprintf(buf, sizeof(buf), "%.0f%s", v, unit);
            return buf;
        }
    }
    std::snprintf(buf, sizeof(buf), "%.17gGbps", bps / 1e9);
    return buf;
}

/// Uniform in [0, 1) from the top 53 bits of one 64-bit draw.
double
Uniform01(std::mt19937_64& rng)
{
    return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

} // namespace

std::string
ToString(BackgroundPattern p)
{
    switch (p)
    {
    case BackgroundPattern::Bulk:
        return "bulk";
    case BackgroundPattern::Incast:
        return "incast";
    case BackgroundPattern::Poisson:
        return "poisson";
    }
    return "?";
}

BackgroundSpec
ParseBackgroundSpec(const std::string& item)
{
    BackgroundSpec spec;
    spec.text = item;
    const size_t colon = item.find(':');
    if (colon == std::string::npos)
    {
        Bad(item, "expected KIND:key=value,... (KIND bulk, incast or poisson)");
    }
    const std::string kind = item.substr(0, colon);
    if (kind == "bulk")
    {
        spec.pattern = BackgroundPattern::Bulk;
    }
    else if (kind == "incast")
    {
        spec.pattern = BackgroundPattern::Incast;
    }
    else if (kind == "poisson")
    {
        spec.pattern = BackgroundPattern::Poisson;
    }
    else
    {
        Bad(item, "unknown kind '" + kind + "' (bulk, incast or poisson)");
    }
    // key=value parts; a part without '=' continues the previous key's list.
    std::vector<std::pair<std::string, std::string>> kv;
    for (const std::string& part : Split(item.substr(colon + 1), ','))
    {
        if (part.empty())
        {
            Bad(item, "empty part (two commas in a row, or a trailing comma)");
        }
        const size_t eq = part.find('=');
        if (eq == std::string::npos)
        {
            if (kv.empty())
            {
                Bad(item, "'" + part + "' is not key=value");
            }
            kv.back().second += "," + part;
            continue;
        }
        if (eq == 0 || eq + 1 == part.size())
        {
            Bad(item, "'" + part + "' is not key=value");
        }
        kv.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    }
    std::set<std::string> allowed = {"name", "src", "dst", "bytes", "start"};
    switch (spec.pattern)
    {
    case BackgroundPattern::Bulk:
        allowed.insert({"rate", "chunk", "period", "count"});
        break;
    case BackgroundPattern::Incast:
        allowed.insert({"period", "count"});
        break;
    case BackgroundPattern::Poisson:
        allowed.insert({"interval", "count", "stop", "seed"});
        break;
    }
    std::map<std::string, std::string> values;
    for (const auto& [key, value] : kv)
    {
        if (!allowed.count(key))
        {
            std::string known;
            for (const std::string& k : allowed)
            {
                known += (known.empty() ? "" : ", ") + k;
            }
            Bad(item, "unknown key '" + key + "' for " + kind + " (known: " + known + ")");
        }
        if (!values.emplace(key, value).second)
        {
            Bad(item, "key '" + key + "' is given twice");
        }
    }
    for (const char* required : {"src", "dst", "bytes"})
    {
        if (!values.count(required))
        {
            Bad(item, std::string("missing ") + required + "=");
        }
    }
    auto has = [&values](const char* k) { return values.count(k) > 0; };
    auto time = [&](const char* k) {
        return ParseEventTime(values.at(k), "background '" + item + "': " + k);
    };
    if (has("name"))
    {
        spec.name = values.at("name");
    }
    spec.src = ParseGpuList(item, "src", values.at("src"));
    spec.dst = ParseGpuList(item, "dst", values.at("dst"));
    for (const std::string& s : Split(values.at("bytes"), ','))
    {
        spec.bytes.push_back(ParseSize(item, "bytes", s));
    }
    if (spec.bytes.size() > 1 && spec.pattern != BackgroundPattern::Poisson)
    {
        Bad(item, "bytes: one size per flow (a list of sizes is for poisson)");
    }
    if (has("start"))
    {
        spec.start = time("start");
    }
    if (has("rate"))
    {
        spec.rateBps = ParseRate(item, values.at("rate"));
    }
    if (has("chunk"))
    {
        if (!has("rate"))
        {
            Bad(item, "chunk= paces a flow: it needs rate=");
        }
        spec.chunkBytes = ParseSize(item, "chunk", values.at("chunk"));
    }
    if (has("count"))
    {
        uint64_t c = 0;
        if (!ParseUnsigned(values.at("count"), c) || c == 0 || c > UINT32_MAX)
        {
            Bad(item, "count: '" + values.at("count") + "' is not a whole number >= 1");
        }
        spec.count = static_cast<uint32_t>(c);
    }
    if (has("period"))
    {
        spec.period = time("period");
    }
    if (has("seed"))
    {
        if (!ParseUnsigned(values.at("seed"), spec.seed))
        {
            Bad(item, "seed: '" + values.at("seed") + "' is not a whole number");
        }
    }
    if (spec.pattern == BackgroundPattern::Poisson)
    {
        if (!has("interval"))
        {
            Bad(item, "missing interval= (the mean time between flows)");
        }
        spec.interval = time("interval");
        if (!spec.interval.IsStrictlyPositive())
        {
            Bad(item, "interval must be > 0");
        }
        if (has("stop"))
        {
            spec.stop = time("stop");
            if (spec.stop <= spec.start)
            {
                Bad(item, "stop must be after start");
            }
        }
        if (!has("count"))
        {
            if (!has("stop"))
            {
                Bad(item, "missing count= or stop= (how many flows, or until when)");
            }
            spec.count = 0;
        }
    }
    else
    {
        if (spec.count > 1 && !spec.period.IsStrictlyPositive())
        {
            Bad(item, "count=" + std::to_string(spec.count) + " needs period= > 0");
        }
        if (has("period") && spec.count == 1)
        {
            Bad(item, "period= needs count= > 1 (the number of rounds)");
        }
    }
    if (spec.pattern == BackgroundPattern::Incast && spec.dst.size() != 1)
    {
        Bad(item, "incast has one receiver: dst= is one GPU, not " +
                      std::to_string(spec.dst.size()));
    }
    return spec;
}

std::string
ToText(const BackgroundSpec& spec)
{
    std::string out = ToString(spec.pattern) + ":";
    if (!spec.name.empty())
    {
        out += "name=" + spec.name + ",";
    }
    out += "src=" + GpuListText(spec.src) + ",dst=" + GpuListText(spec.dst) + ",bytes=";
    for (size_t i = 0; i < spec.bytes.size(); ++i)
    {
        out += (i ? "," : "") + SizeText(spec.bytes[i]);
    }
    out += ",start=" + TimeText(spec.start);
    if (spec.rateBps > 0)
    {
        out += ",rate=" + RateText(spec.rateBps) + ",chunk=" + SizeText(spec.chunkBytes);
    }
    if (spec.pattern == BackgroundPattern::Poisson)
    {
        out += ",interval=" + TimeText(spec.interval);
        if (spec.count > 0)
        {
            out += ",count=" + std::to_string(spec.count);
        }
        if (spec.stop.IsStrictlyPositive())
        {
            out += ",stop=" + TimeText(spec.stop);
        }
        out += ",seed=" + std::to_string(spec.seed);
    }
    else if (spec.count > 1)
    {
        out += ",period=" + TimeText(spec.period) + ",count=" + std::to_string(spec.count);
    }
    return out;
}

double
BackgroundFlow::Gbps() const
{
    const double s = Fct().GetSeconds();
    return completed && s > 0 ? bytes * 8.0 / s / 1e9 : 0.0;
}

void
WriteSummaryFields(JsonWriter& w, const BackgroundSummary& s)
{
    w.Key("name").String(s.name).Key("kind").String(s.kind);
    w.Key("spec").String(s.text).Key("owner").Uint(s.owner);
    w.Key("flows").Uint(s.flows).Key("completed").Uint(s.completed);
    w.Key("bytes").Uint(s.bytes);
    w.Key("fct_us").BeginObject();
    w.Key("mean").Double(s.meanFct.GetNanoSeconds() / 1e3);
    w.Key("p50").Double(s.p50Fct.GetNanoSeconds() / 1e3);
    w.Key("p99").Double(s.p99Fct.GetNanoSeconds() / 1e3);
    w.Key("max").Double(s.maxFct.GetNanoSeconds() / 1e3);
    w.EndObject();
    w.Key("mean_gbps").Double(s.meanGbps);
}

} // namespace gpusim

using gpusim::BackgroundFlow;
using gpusim::BackgroundPattern;
using gpusim::BackgroundSpec;
using gpusim::BackgroundSummary;

TypeId
BackgroundTraffic::GetTypeId()
{
    static TypeId tid = TypeId("ns3::BackgroundTraffic")
                            .SetParent<Object>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<BackgroundTraffic>();
    return tid;
}

BackgroundTraffic::BackgroundTraffic() = default;

BackgroundTraffic::~BackgroundTraffic() = default;

void
BackgroundTraffic::DoDispose()
{
    m_backend = nullptr;
    Object::DoDispose();
}

uint32_t
BackgroundTraffic::Add(BackgroundSpec spec)
{
    const uint32_t index = static_cast<uint32_t>(m_generators.size());
    if (spec.name.empty())
    {
        spec.name = gpusim::ToString(spec.pattern) + std::to_string(index);
    }
    for (const Generator& g : m_generators)
    {
        if (g.spec.name == spec.name)
        {
            throw std::invalid_argument("background '" + spec.text + "': the name '" +
                                        spec.name + "' is used twice");
        }
    }
    if (spec.text.empty())
    {
        spec.text = gpusim::ToText(spec);
    }
    Generator g;
    g.spec = std::move(spec);
    m_generators.push_back(std::move(g));
    return index;
}

uint32_t
BackgroundTraffic::Add(const std::string& item)
{
    return Add(gpusim::ParseBackgroundSpec(item));
}

uint32_t
BackgroundTraffic::GetNGenerators() const
{
    return static_cast<uint32_t>(m_generators.size());
}

const BackgroundSpec&
BackgroundTraffic::GetSpec(uint32_t generator) const
{
    return m_generators.at(generator).spec;
}

void
BackgroundTraffic::Validate(uint32_t nGpus) const
{
    for (const Generator& g : m_generators)
    {
        const BackgroundSpec& s = g.spec;
        auto bad = [&s](const std::string& what) {
            throw std::invalid_argument("background '" + s.name + "' (" + s.text + "): " + what);
        };
        for (const auto* list : {&s.src, &s.dst})
        {
            for (uint32_t gpu : *list)
            {
                if (gpu >= nGpus)
                {
                    bad("GPU " + std::to_string(gpu) + " does not exist (the cluster has " +
                        std::to_string(nGpus) + " GPUs, 0-" + std::to_string(nGpus - 1) + ")");
                }
            }
        }
        if (s.src.empty() || s.dst.empty() || s.bytes.empty())
        {
            bad("needs sources, destinations and a size");
        }
        if (s.pattern == BackgroundPattern::Incast)
        {
            if (s.dst.size() != 1)
            {
                bad("incast has one receiver");
            }
            if (std::find(s.src.begin(), s.src.end(), s.dst[0]) != s.src.end())
            {
                bad("the receiver GPU " + std::to_string(s.dst[0]) + " is also a sender");
            }
        }
        else if (s.src.size() == 1 && s.dst.size() == 1 && s.src[0] == s.dst[0])
        {
            bad("no pair of distinct GPUs (src and dst are both GPU " +
                std::to_string(s.src[0]) + ")");
        }
        if (s.count > 1 && s.pattern != BackgroundPattern::Poisson &&
            !s.period.IsStrictlyPositive())
        {
            bad("several rounds need a period > 0");
        }
        if (s.pattern == BackgroundPattern::Poisson &&
            (!s.interval.IsStrictlyPositive() || (s.count == 0 && !s.stop.IsStrictlyPositive())))
        {
            bad("poisson needs an interval > 0 and a count or a stop time");
        }
        if (s.rateBps < 0 || (s.rateBps > 0 && s.chunkBytes == 0))
        {
            bad("a paced flow needs a rate > 0 and a chunk > 0");
        }
    }
}

void
BackgroundTraffic::Install(Ptr<NetworkBackend> backend, Time offset)
{
    NS_ASSERT(backend);
    if (!backend->GetTopology())
    {
        throw std::logic_error("BackgroundTraffic::Install: the backend has no topology");
    }
    Validate(backend->GetTopology()->GetNGpus());
    m_backend = backend;
    m_flows.clear();
    m_installed = true;
    Ptr<BackgroundTraffic> self(this);
    for (uint32_t gi = 0; gi < m_generators.size(); ++gi)
    {
        Generator& g = m_generators[gi];
        g.owner = backend->AcquireOwner();
        g.nextId = NetworkBackend::FirstTransferId(g.owner);
        // A flow that loses every path (fabric faults) just never completes: it counts as
        // started but not completed in the summary, and no job aborts over it.
        backend->SetTransferFailedCallback(
            g.owner, [name = g.spec.name](const TransferRecord& r, const std::string& why) {
                NS_LOG_WARN("background " << name << ": transfer " << r.id << " GPU " << r.srcGpu
                                          << " -> GPU " << r.dstGpu << " failed: " << why);
            });
        const BackgroundSpec& s = g.spec;
        const Time base = offset + s.start - Simulator::Now();
        NS_LOG_INFO("background " << s.name << ": owner " << g.owner << ", " << s.text);
        if (s.pattern != BackgroundPattern::Poisson)
        {
            for (uint32_t r = 0; r < s.count; ++r)
            {
                const Time at = Max(base + s.period * r, Time(0));
                Simulator::Schedule(at, [self, gi, r]() { self->StartRound(gi, r); });
            }
            continue;
        }
        // Poisson: arrival times, pairs and sizes drawn now (one generator, one stream).
        std::vector<std::pair<uint32_t, uint32_t>> pairs;
        for (uint32_t a : s.src)
        {
            for (uint32_t b : s.dst)
            {
                if (a != b)
                {
                    pairs.emplace_back(a, b);
                }
            }
        }
        std::mt19937_64 rng(s.seed);
        const double meanNs = static_cast<double>(s.interval.GetNanoSeconds());
        int64_t tNs = 0;
        for (uint32_t k = 0; s.count == 0 || k < s.count; ++k)
        {
            // Exponential by inversion: -mean * ln(1 - U), U uniform in [0, 1).
            tNs += std::llround(-meanNs * std::log1p(-gpusim::Uniform01(rng)));
            if (s.stop.IsStrictlyPositive() && s.start + NanoSeconds(tNs) > s.stop)
            {
                break;
            }
            const auto pair = pairs[rng() % pairs.size()];
            const uint64_t bytes = s.bytes[rng() % s.bytes.size()];
            const Time at = Max(base + NanoSeconds(tNs), Time(0));
            Simulator::Schedule(at, [self, gi, k, pair, bytes]() {
                self->StartFlow(gi, k, pair.first, pair.second, bytes);
            });
        }
    }
}

bool
BackgroundTraffic::IsInstalled() const
{
    return m_installed;
}

uint32_t
BackgroundTraffic::GetOwner(uint32_t generator) const
{
    return m_generators.at(generator).owner;
}

void
BackgroundTraffic::StartRound(uint32_t generator, uint32_t round)
{
    const BackgroundSpec& s = m_generators[generator].spec;
    for (uint32_t a : s.src)
    {
        for (uint32_t b : s.dst)
        {
            if (a != b)
            {
                StartFlow(generator, round, a, b, s.bytes[0]);
            }
        }
    }
}

void
BackgroundTraffic::StartFlow(uint32_t generator,
                             uint32_t round,
                             uint32_t src,
                             uint32_t dst,
                             uint64_t bytes)
{
    if (!m_backend)
    {
        return; // disposed
    }
    const BackgroundSpec& s = m_generators[generator].spec;
    BackgroundFlow f;
    f.generator = generator;
    f.round = round;
    f.src = src;
    f.dst = dst;
    f.bytes = bytes;
    f.start = Simulator::Now();
    const bool paced = s.rateBps > 0 && bytes > s.chunkBytes;
    f.chunks = paced ? static_cast<uint32_t>((bytes + s.chunkBytes - 1) / s.chunkBytes) : 1;
    m_flows.push_back(f);
    const size_t index = m_flows.size() - 1;
    NS_LOG_DEBUG("background " << s.name << " flow " << index << ": " << src << " -> " << dst
                               << ", " << bytes << " B" << (paced ? " paced" : ""));
    if (paced)
    {
        SendChunk(index, 0);
    }
    else
    {
        Transfer(index, bytes);
    }
}

void
BackgroundTraffic::SendChunk(size_t flow, uint32_t chunk)
{
    if (!m_backend)
    {
        return;
    }
    const BackgroundFlow& f = m_flows[flow];
    const BackgroundSpec& s = m_generators[f.generator].spec;
    const uint64_t sent = static_cast<uint64_t>(chunk) * s.chunkBytes;
    Transfer(flow, std::min(s.chunkBytes, f.bytes - sent));
}

void
BackgroundTraffic::Transfer(size_t flow, uint64_t bytes)
{
    const BackgroundFlow& f = m_flows[flow];
    Generator& g = m_generators[f.generator];
    Ptr<BackgroundTraffic> self(this);
    // Every chunk of a flow has the same key: one ECMP path, and on the packet backend one
    // connection (it keeps one per src, dst and key). The owner in the top bits keeps the
    // keys apart from a job's (channel numbers) between the same GPUs.
    const uint64_t flowKey =
        (static_cast<uint64_t>(g.owner) << NetworkBackend::kOwnerShift) | flow;
    m_backend->StartTransfer(g.nextId++, f.src, f.dst, bytes, flowKey,
                             [self, flow](const TransferRecord& rec) {
                                 self->OnDelivered(flow, rec);
                             });
}

void
BackgroundTraffic::OnDelivered(size_t flow, const TransferRecord& rec)
{
    BackgroundFlow& f = m_flows[flow];
    f.end = std::max(f.end, rec.delivered);
    if (++f.delivered == f.chunks)
    {
        f.completed = true;
        NS_LOG_DEBUG("background flow " << flow << " done: FCT " << f.Fct().GetMicroSeconds()
                                        << " us");
        return;
    }
    // Paced: the next chunk starts at its slot k x chunk / rate after the flow's start (no
    // drift from rounding), or now if the network delivered this one later than that.
    const BackgroundSpec& s = m_generators[f.generator].spec;
    const uint32_t next = f.delivered;
    const double secs = next * static_cast<double>(s.chunkBytes) * 8.0 / s.rateBps;
    const Time at = f.start + NanoSeconds(std::llround(secs * 1e9));
    if (at <= Simulator::Now())
    {
        SendChunk(flow, next);
        return;
    }
    Ptr<BackgroundTraffic> self(this);
    Simulator::Schedule(at - Simulator::Now(),
                        [self, flow, next]() { self->SendChunk(flow, next); });
}

const std::vector<BackgroundFlow>&
BackgroundTraffic::GetFlows() const
{
    return m_flows;
}

BackgroundSummary
BackgroundTraffic::Summary(uint32_t generator) const
{
    const Generator& g = m_generators.at(generator);
    BackgroundSummary out;
    out.name = g.spec.name;
    out.kind = gpusim::ToString(g.spec.pattern);
    out.text = gpusim::ToText(g.spec);
    out.owner = g.owner;
    std::vector<int64_t> fct;
    double gbps = 0;
    for (const BackgroundFlow& f : m_flows)
    {
        if (f.generator != generator)
        {
            continue;
        }
        ++out.flows;
        if (!f.completed)
        {
            continue;
        }
        ++out.completed;
        out.bytes += f.bytes;
        fct.push_back(f.Fct().GetNanoSeconds());
        gbps += f.Gbps();
    }
    if (fct.empty())
    {
        return out;
    }
    std::sort(fct.begin(), fct.end());
    auto rank = [&fct](double p) {
        const size_t k = static_cast<size_t>(std::ceil(p * fct.size()));
        return NanoSeconds(fct[std::max<size_t>(k, 1) - 1]);
    };
    double sum = 0;
    for (int64_t v : fct)
    {
        sum += static_cast<double>(v);
    }
    out.meanFct = NanoSeconds(std::llround(sum / fct.size()));
    out.p50Fct = rank(0.5);
    out.p99Fct = rank(0.99);
    out.maxFct = NanoSeconds(fct.back());
    out.meanGbps = gbps / fct.size();
    return out;
}

std::vector<BackgroundSummary>
BackgroundTraffic::Summaries() const
{
    std::vector<BackgroundSummary> out;
    for (uint32_t g = 0; g < m_generators.size(); ++g)
    {
        out.push_back(Summary(g));
    }
    return out;
}

void
BackgroundTraffic::WriteJson(gpusim::JsonWriter& w) const
{
    w.BeginArray();
    for (const BackgroundSummary& s : Summaries())
    {
        w.BeginObject();
        gpusim::WriteSummaryFields(w, s);
        w.EndObject();
    }
    w.EndArray();
}

std::string
BackgroundTraffic::SummaryJson() const
{
    gpusim::JsonWriter w;
    WriteJson(w);
    return w.Take();
}

} // namespace ns3
