#include "ns3/fabric-event.h"

#include "ns3/cluster-topology.h"
#include "ns3/log.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("FabricEvent");

namespace gpusim
{

namespace
{

[[noreturn]] void
Bad(const std::string& item, const std::string& what)
{
    throw std::invalid_argument("fabric event '" + item + "': " + what);
}

/// A finite number making up all of `text`, or false.
bool
ParseNumber(const std::string& text, double& out)
{
    if (text.empty())
    {
        return false;
    }
    char* end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return *end == '\0' && std::isfinite(out);
}

bool
EndsWith(const std::string& s, const std::string& suffix, std::string& head)
{
    if (s.size() <= suffix.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix))
    {
        return false;
    }
    head = s.substr(0, s.size() - suffix.size());
    return true;
}

/// Splits "X@T" at its last '@'.
void
SplitAt(const std::string& part, const std::string& item, std::string& head, Time& at)
{
    const auto pos = part.rfind('@');
    if (pos == std::string::npos || pos == 0)
    {
        Bad(item, "expected '...@TIME' in '" + part + "'");
    }
    head = part.substr(0, pos);
    at = ParseEventTime(part.substr(pos + 1), "fabric event '" + item + "'");
}

/// The one or two comma-separated parts of an item.
std::vector<std::string>
Parts(const std::string& item)
{
    std::vector<std::string> parts;
    size_t start = 0;
    while (true)
    {
        const auto comma = item.find(',', start);
        parts.push_back(item.substr(start, comma - start));
        if (comma == std::string::npos)
        {
            break;
        }
        start = comma + 1;
    }
    if (parts.size() > 2)
    {
        Bad(item, "at most one ',' (the recovery) is allowed");
    }
    return parts;
}

/// The recovery part "WORD@T" (T after `from`), or false when there is none.
bool
Recovery(const std::vector<std::string>& parts,
         const std::string& word,
         const std::string& item,
         Time from,
         Time& at)
{
    if (parts.size() < 2)
    {
        return false;
    }
    std::string head;
    SplitAt(parts[1], item, head, at);
    if (head != word)
    {
        Bad(item, "the part after ',' must be '" + word + "@TIME', not '" + parts[1] + "'");
    }
    if (at <= from)
    {
        Bad(item, word + " time " + std::to_string(at.GetSeconds() * 1e3) +
                      " ms is not after the event's time " +
                      std::to_string(from.GetSeconds() * 1e3) + " ms");
    }
    return true;
}

} // namespace

std::string
ToString(FabricEventKind k)
{
    switch (k)
    {
    case FabricEventKind::LinkDown:
        return "down";
    case FabricEventKind::LinkUp:
        return "up";
    case FabricEventKind::LinkRate:
        return "rate";
    }
    return "?";
}

Time
ParseEventTime(const std::string& text, const std::string& context)
{
    auto bad = [&](const std::string& what) {
        return std::invalid_argument(context + ": " + what);
    };
    static const std::pair<const char*, double> units[] = {
        {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
    double v = 0;
    if (text == "0" || (ParseNumber(text, v) && v == 0))
    {
        return Time(0);
    }
    for (const auto& [unit, scale] : units)
    {
        std::string head;
        if (EndsWith(text, unit, head) && ParseNumber(head, v))
        {
            if (v < 0)
            {
                throw bad("time '" + text + "' is negative");
            }
            return NanoSeconds(std::llround(v * scale * 1e9));
        }
    }
    throw bad("bad time '" + text + "' (a number with unit s, ms, us or ns, e.g. 1.5ms)");
}

std::vector<FabricEventSpec>
ParseLinkDown(const std::string& item)
{
    const std::vector<std::string> parts = Parts(item);
    FabricEventSpec down;
    down.kind = FabricEventKind::LinkDown;
    down.item = item;
    SplitAt(parts[0], item, down.target, down.at);
    std::vector<FabricEventSpec> out{down};
    Time upAt;
    if (Recovery(parts, "up", item, down.at, upAt))
    {
        FabricEventSpec up = down;
        up.kind = FabricEventKind::LinkUp;
        up.at = upAt;
        out.push_back(up);
    }
    return out;
}

std::vector<FabricEventSpec>
ParseLinkRate(const std::string& item)
{
    const std::vector<std::string> parts = Parts(item);
    FabricEventSpec rate;
    rate.kind = FabricEventKind::LinkRate;
    rate.item = item;
    std::string head;
    SplitAt(parts[0], item, head, rate.at);
    const auto eq = head.rfind('=');
    if (eq == std::string::npos || eq == 0)
    {
        Bad(item, "expected TARGET=RATE@TIME (RATE like 50% or 100Gbps)");
    }
    rate.target = head.substr(0, eq);
    const std::string r = head.substr(eq + 1);
    std::string num;
    double v = 0;
    static const std::pair<const char*, double> units[] = {
        {"Tbps", 1e12}, {"Gbps", 1e9}, {"Mbps", 1e6}};
    bool parsed = false;
    if (EndsWith(r, "%", num) && ParseNumber(num, v))
    {
        rate.rateFraction = v / 100;
        parsed = true;
    }
    for (const auto& [unit, scale] : units)
    {
        if (!parsed && EndsWith(r, unit, num) && ParseNumber(num, v))
        {
            rate.rateBps = v * scale;
            parsed = true;
        }
    }
    if (!parsed)
    {
        Bad(item, "bad rate '" + r + "' (a percentage of the nominal rate like 50%, or "
                                     "100Gbps / 800Mbps)");
    }
    if (v <= 0)
    {
        Bad(item, "rate '" + r + "' must be > 0 (use a link-down event for 0)");
    }
    std::vector<FabricEventSpec> out{rate};
    Time fullAt;
    if (Recovery(parts, "full", item, rate.at, fullAt))
    {
        FabricEventSpec full = rate;
        full.at = fullAt;
        full.rateFraction = 1;
        full.rateBps = 0;
        out.push_back(full);
    }
    return out;
}

std::string
LinkName(const ClusterTopology& topology, uint32_t link)
{
    const TopoLink& l = topology.Links().at(link);
    return topology.Vertices()[l.from].name + "-" + topology.Vertices()[l.to].name;
}

std::vector<FabricEvent>
ResolveFabricEvents(const std::vector<FabricEventSpec>& specs, const ClusterTopology& topology)
{
    const auto& verts = topology.Vertices();
    const auto& links = topology.Links();
    std::unordered_map<std::string, uint32_t> byName;
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        byName.emplace(verts[v].name, v);
    }
    auto fail = [](const FabricEventSpec& s, const std::string& what) {
        throw std::runtime_error("fabric event '" + s.item + "': " + what);
    };
    // Adaptive routing merges a leaf's spine ports into one link of n cables to "spine0":
    // "spineK" (K < n) names cable K of those bundles.
    auto lookup = [&](const std::string& name, int32_t& cable) -> uint32_t {
        cable = -1;
        auto it = byName.find(name);
        if (it != byName.end())
        {
            return it->second;
        }
        const size_t digits = name.find_last_not_of("0123456789") + 1;
        if (digits == 0 || digits == name.size() || name.size() - digits > 6)
        {
            return UINT32_MAX;
        }
        auto base = byName.find(name.substr(0, digits) + "0");
        const uint32_t k = static_cast<uint32_t>(std::stoul(name.substr(digits)));
        if (base == byName.end() || topology.OutLinks(base->second).empty())
        {
            return UINT32_MAX;
        }
        for (uint32_t l : topology.OutLinks(base->second))
        {
            if (links[l].cables <= k)
            {
                return UINT32_MAX;
            }
        }
        cable = static_cast<int32_t>(k);
        return base->second;
    };
    struct CableEvent
    {
        FabricEvent event; //!< as written, on the bundles' links
        uint32_t cable = 0;
    };
    std::vector<CableEvent> cableEvents;
    const std::string naming = " (vertices are named like s0/gpu0, s0/nic0, leaf0, spine0, "
                               "core0 or switch0)";
    std::vector<FabricEvent> out;
    for (const FabricEventSpec& s : specs)
    {
        if (s.at.IsStrictlyNegative())
        {
            fail(s, "time is negative");
        }
        if (s.kind == FabricEventKind::LinkRate && s.rateFraction <= 0 && s.rateBps <= 0)
        {
            fail(s, "rate must be > 0");
        }
        FabricEvent e;
        e.kind = s.kind;
        e.at = s.at;
        e.rateFraction = s.rateFraction;
        e.rateBps = s.rateBps;
        e.what = s.target;
        // "A-B": try every '-' (names may contain one) for two known vertices.
        uint32_t a = UINT32_MAX;
        uint32_t b = UINT32_MAX;
        std::string unknown;
        int32_t cable = -1;
        for (size_t dash = s.target.find('-'); dash != std::string::npos;
             dash = s.target.find('-', dash + 1))
        {
            int32_t ca = -1;
            int32_t cb = -1;
            const uint32_t ia = lookup(s.target.substr(0, dash), ca);
            const uint32_t ib = lookup(s.target.substr(dash + 1), cb);
            if (ia != UINT32_MAX && ib != UINT32_MAX)
            {
                a = ia;
                b = ib;
                cable = std::max(ca, cb);
                break;
            }
            if (unknown.empty())
            {
                unknown = ia == UINT32_MAX ? s.target.substr(0, dash) : s.target.substr(dash + 1);
            }
        }
        if (a != UINT32_MAX)
        {
            for (uint32_t l : topology.OutLinks(a))
            {
                if (links[l].to == b)
                {
                    e.links.push_back(l);
                    e.links.push_back(links[l].reverse);
                }
            }
            if (e.links.empty())
            {
                fail(s, "no link between " + verts[a].name + " and " + verts[b].name);
            }
            if (links[e.links.front()].cables > 1)
            {
                cable = std::max(cable, 0); // "leaf0-spine0" on a bundle: its cable 0
            }
        }
        else
        {
            const uint32_t v = lookup(s.target, cable);
            if (v == UINT32_MAX)
            {
                fail(s, "unknown vertex '" + (unknown.empty() ? s.target : unknown) + "'" +
                            naming);
            }
            const TopoVertexType t = verts[v].type;
            if (t != TopoVertexType::Nic && t != TopoVertexType::Switch)
            {
                fail(s, "'" + s.target + "' is a GPU or NVSwitch; name a link A-B, a NIC or a "
                                         "switch");
            }
            for (uint32_t l : topology.OutLinks(v))
            {
                e.links.push_back(l);
                e.links.push_back(links[l].reverse);
            }
            if (cable < 0 && !e.links.empty() && links[e.links.front()].cables > 1 &&
                std::all_of(e.links.begin(), e.links.end(),
                            [&links](uint32_t l) { return links[l].cables > 1; }))
            {
                cable = 0; // "spine0" on bundles only: the first spine of each
            }
        }
        std::sort(e.links.begin(), e.links.end());
        e.links.erase(std::unique(e.links.begin(), e.links.end()), e.links.end());
        if (cable >= 0)
        {
            cableEvents.push_back({std::move(e), static_cast<uint32_t>(cable)});
            continue;
        }
        out.push_back(std::move(e));
    }
    // Cable events become changes of their bundles: a bundle of n cables runs at the sum of
    // its live cables' rates over n of its nominal rate, and is down with none left.
    std::stable_sort(cableEvents.begin(), cableEvents.end(),
                     [](const CableEvent& x, const CableEvent& y) {
                         return x.event.at < y.event.at;
                     });
    struct CableState
    {
        bool up = true;
        double fraction = 1; //!< of one cable's nominal rate
    };
    std::map<uint32_t, std::vector<CableState>> bundles;
    for (const CableEvent& ce : cableEvents)
    {
        for (uint32_t l : ce.event.links)
        {
            const uint32_t n = links[l].cables;
            std::vector<CableState>& cables = bundles[l];
            cables.resize(n);
            auto sum = [&cables]() {
                double f = 0;
                for (const CableState& c : cables)
                {
                    f += c.up ? c.fraction : 0.0;
                }
                return f;
            };
            const bool wasDown = sum() <= 0;
            CableState& c = cables[ce.cable];
            switch (ce.event.kind)
            {
            case FabricEventKind::LinkDown:
                c.up = false;
                break;
            case FabricEventKind::LinkUp:
                c.up = true;
                break;
            case FabricEventKind::LinkRate:
                c.fraction = ce.event.rateFraction > 0
                                 ? ce.event.rateFraction
                                 : ce.event.rateBps / (links[l].bitsPerSec / n);
                break;
            }
            const double now = sum() / n;
            FabricEvent out1 = ce.event;
            out1.links = {l};
            out1.what = ce.event.what + " (cable " + std::to_string(ce.cable) + " of " +
                        std::to_string(n) + ")";
            out1.rateBps = 0;
            if (now <= 0)
            {
                if (!wasDown)
                {
                    out1.kind = FabricEventKind::LinkDown;
                    out.push_back(out1);
                }
                continue;
            }
            if (wasDown)
            {
                out1.kind = FabricEventKind::LinkUp;
                out.push_back(out1);
            }
            out1.kind = FabricEventKind::LinkRate;
            out1.rateFraction = now;
            out.push_back(out1);
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const FabricEvent& x, const FabricEvent& y) {
        return x.at < y.at;
    });
    return out;
}

} // namespace gpusim
} // namespace ns3
