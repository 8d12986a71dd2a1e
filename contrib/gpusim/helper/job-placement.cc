#include "ns3/job-placement.h"

#include <algorithm>
#include <map>
#include <random>
#include <stdexcept>

namespace ns3
{

namespace
{

uint32_t
ParseUint(const std::string& text, const std::string& what)
{
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
        text.size() > 9)
    {
        throw std::invalid_argument("placement: '" + text + "' is not a " + what);
    }
    return static_cast<uint32_t>(std::stoul(text));
}

/// Servers in the order the policy hands them out.
std::vector<uint32_t>
ServerOrder(const ClusterTopology& topo, const JobPlacement& p)
{
    const uint32_t servers = topo.GetNServers();
    std::vector<uint32_t> order(servers);
    for (uint32_t s = 0; s < servers; ++s)
    {
        order[s] = s;
    }
    if (p.policy == JobPlacement::Policy::Spread)
    {
        // The k-th server of every leaf before the (k+1)-th of any: round-robin over leaves.
        const std::vector<uint32_t> leaf = ServerLeafGroups(topo);
        std::map<uint32_t, uint32_t> seen;
        std::vector<std::pair<uint32_t, uint32_t>> key(servers); // (position in leaf, leaf)
        for (uint32_t s = 0; s < servers; ++s)
        {
            key[s] = {seen[leaf[s]]++, leaf[s]};
        }
        std::stable_sort(order.begin(), order.end(),
                         [&key](uint32_t a, uint32_t b) { return key[a] < key[b]; });
    }
    else if (p.policy == JobPlacement::Policy::Random)
    {
        // Fisher-Yates with our own index draw: std::shuffle's use of the engine is not
        // specified, so it would differ between standard libraries.
        std::mt19937_64 rng(p.seed);
        for (uint32_t i = servers; i > 1; --i)
        {
            const uint32_t j = static_cast<uint32_t>(rng() % i);
            std::swap(order[i - 1], order[j]);
        }
    }
    return order;
}

} // namespace

JobPlacement
JobPlacement::Parse(const std::string& text)
{
    JobPlacement p;
    if (text == "packed")
    {
        p.policy = Policy::Packed;
    }
    else if (text == "spread")
    {
        p.policy = Policy::Spread;
    }
    else if (text == "random")
    {
        p.policy = Policy::Random;
    }
    else if (text.rfind("random:", 0) == 0)
    {
        p.policy = Policy::Random;
        p.seed = ParseUint(text.substr(7), "seed");
    }
    else
    {
        p.policy = Policy::Explicit;
        size_t pos = 0;
        while (pos <= text.size())
        {
            const size_t comma = std::min(text.find(',', pos), text.size());
            const std::string item = text.substr(pos, comma - pos);
            const size_t dash = item.find('-');
            if (dash == std::string::npos)
            {
                p.gpus.push_back(ParseUint(item, "GPU number (packed, spread, random[:SEED] "
                                                 "or a list such as 0-7,16)"));
            }
            else
            {
                const uint32_t lo = ParseUint(item.substr(0, dash), "GPU number");
                const uint32_t hi = ParseUint(item.substr(dash + 1), "GPU number");
                if (hi < lo)
                {
                    throw std::invalid_argument("placement: range '" + item + "' runs backwards");
                }
                for (uint32_t g = lo; g <= hi; ++g)
                {
                    p.gpus.push_back(g);
                }
            }
            pos = comma + 1;
        }
    }
    return p;
}

std::string
JobPlacement::ToString() const
{
    switch (policy)
    {
    case Policy::Packed:
        return "packed";
    case Policy::Spread:
        return "spread";
    case Policy::Random:
        return "random:" + std::to_string(seed);
    case Policy::Explicit:
        break;
    }
    std::string s;
    for (size_t i = 0; i < gpus.size(); ++i)
    {
        s += (i ? "," : "") + std::to_string(gpus[i]);
    }
    return s;
}

std::vector<uint32_t>
ServerLeafGroups(const ClusterTopology& topo)
{
    const uint32_t servers = topo.GetNServers();
    std::vector<uint32_t> firstGpu(servers, UINT32_MAX);
    for (uint32_t g = 0; g < topo.GetNGpus(); ++g)
    {
        const uint32_t s = topo.ServerOf(g);
        firstGpu[s] = std::min(firstGpu[s], g);
    }
    std::map<uint32_t, uint32_t> number; // leaf switch vertex -> group
    std::vector<uint32_t> group(servers);
    for (uint32_t s = 0; s < servers; ++s)
    {
        uint32_t leaf = UINT32_MAX - s; // no NIC: a group of its own
        const uint32_t nic = firstGpu[s] == UINT32_MAX ? UINT32_MAX : topo.NicOf(firstGpu[s]);
        if (nic != UINT32_MAX)
        {
            for (uint32_t l : topo.OutLinks(nic))
            {
                if (topo.Links()[l].kind == TopoLinkKind::Nic)
                {
                    leaf = topo.Links()[l].to;
                    break;
                }
            }
        }
        group[s] = number.emplace(leaf, static_cast<uint32_t>(number.size())).first->second;
    }
    return group;
}

std::vector<uint32_t>
PlaceJob(const ClusterTopology& topo,
         const std::string& job,
         uint32_t ranks,
         const JobPlacement& placement,
         std::vector<std::string>& owner)
{
    const uint32_t n = topo.GetNGpus();
    owner.resize(n);
    const std::string who = "job '" + job + "': ";
    if (ranks == 0)
    {
        throw std::runtime_error(who + "has no ranks");
    }
    std::vector<uint32_t> gpus;
    if (placement.policy == JobPlacement::Policy::Explicit)
    {
        if (placement.gpus.size() != ranks)
        {
            throw std::runtime_error(who + "placed on " + std::to_string(placement.gpus.size()) +
                                     " GPUs but it has " + std::to_string(ranks) + " ranks");
        }
        std::vector<bool> listed(n, false);
        for (uint32_t g : placement.gpus)
        {
            if (g >= n)
            {
                throw std::runtime_error(who + "GPU " + std::to_string(g) +
                                         " does not exist (the cluster has " + std::to_string(n) +
                                         " GPUs, 0-" + std::to_string(n - 1) + ")");
            }
            if (listed[g])
            {
                throw std::runtime_error(who + "GPU " + std::to_string(g) + " is listed twice");
            }
            if (!owner[g].empty())
            {
                throw std::runtime_error(who + "GPU " + std::to_string(g) +
                                         " is already used by job '" + owner[g] + "'");
            }
            listed[g] = true;
        }
        gpus = placement.gpus;
    }
    else
    {
        std::vector<std::vector<uint32_t>> byServer(topo.GetNServers());
        for (uint32_t g = 0; g < n; ++g)
        {
            if (owner[g].empty())
            {
                byServer[topo.ServerOf(g)].push_back(g);
            }
        }
        for (uint32_t s : ServerOrder(topo, placement))
        {
            for (uint32_t g : byServer[s])
            {
                if (gpus.size() < ranks)
                {
                    gpus.push_back(g);
                }
            }
        }
        if (gpus.size() < ranks)
        {
            throw std::runtime_error(who + "needs " + std::to_string(ranks) + " GPUs but only " +
                                     std::to_string(gpus.size()) + " of the cluster's " +
                                     std::to_string(n) + " are free");
        }
    }
    for (uint32_t g : gpus)
    {
        owner[g] = job;
    }
    return gpus;
}

} // namespace ns3
