// Rings and trees over the cluster topology (NCCL's src/graph/rings.cc, trees.cc): which comm
// ranks talk to which, per channel, so that channels leave a server through different NICs.
#include "ns3/nccl-collective.h"

#include "ns3/cluster-topology.h"
#include "ns3/nccl-algorithms.h"

#include <algorithm>
#include <map>

namespace ns3
{

uint32_t
Communicator::NumServers() const
{
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    std::vector<uint32_t> servers;
    for (uint32_t g : m_gpus)
    {
        servers.push_back(topo->ServerOf(g));
    }
    std::sort(servers.begin(), servers.end());
    return std::unique(servers.begin(), servers.end()) - servers.begin();
}

std::vector<std::vector<uint32_t>>
Communicator::ServerGroups(uint32_t rotation) const
{
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    // Comm ranks grouped by server (servers in order of their lowest GPU), GPUs by local index,
    // each server's list rotated so channels start on different GPUs (and NICs).
    std::map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> byServer;
    for (uint32_t r = 0; r < m_nranks; ++r)
    {
        byServer[topo->ServerOf(m_gpus[r])].push_back({topo->LocalIndex(m_gpus[r]), r});
    }
    std::vector<std::vector<uint32_t>> groups;
    for (auto& [server, members] : byServer)
    {
        std::sort(members.begin(), members.end());
        const size_t k = members.size();
        std::vector<uint32_t> g;
        for (size_t i = 0; i < k; ++i)
        {
            g.push_back(members[(i + rotation) % k].second);
        }
        groups.push_back(std::move(g));
    }
    return groups;
}

std::vector<uint32_t>
Communicator::RingOrder(uint32_t channel) const
{
    // Every other server is traversed backwards, so the ring leaves a server and enters the
    // next one on the same local GPU index, i.e. the same rail (what NCCL achieves with PXN):
    // server 0 runs c, c+1, ..., c-1; server 1 runs c-1, ..., c; server 2 runs c, ... again.
    std::vector<std::vector<uint32_t>> groups = ServerGroups(channel);
    std::vector<uint32_t> order;
    order.reserve(m_nranks);
    for (size_t s = 0; s < groups.size(); ++s)
    {
        if (s % 2 == 1)
        {
            std::reverse(groups[s].begin(), groups[s].end());
        }
        order.insert(order.end(), groups[s].begin(), groups[s].end());
    }
    return order;
}

std::vector<CollectiveTree>
Communicator::Trees(uint32_t channels) const
{
    // Between servers the channels alternate between the two trees of NCCL's double binary
    // tree over the servers (DoubleBinaryTree: in order, so tree neighbours are near in server
    // order; a server is interior in at most one tree of a pair). Of P pairs, pair p elects
    // local GPU p x k / P of each server's k members as its leader, so the pairs are spread
    // over the server's GPUs and cross the fabric through different NICs (rails) even when
    // GPUs share NICs. Inside a server the tree is a chain from the leader.
    const uint32_t n = m_nranks;
    std::vector<CollectiveTree> trees(channels);
    const uint32_t pairs = std::max<uint32_t>(1, (channels + 1) / 2);
    size_t k = 1;
    for (const auto& g : ServerGroups(0))
    {
        k = std::max(k, g.size());
    }
    std::vector<CollectiveTree> serverTrees;
    for (uint32_t t = 0; t < channels; ++t)
    {
        const std::vector<std::vector<uint32_t>> servers =
            ServerGroups(static_cast<uint32_t>((t / 2) * k / pairs));
        const size_t ns = servers.size();
        if (serverTrees.size() != 2 || serverTrees[0].parent.size() != ns)
        {
            serverTrees = DoubleBinaryTree(static_cast<uint32_t>(ns));
        }
        const CollectiveTree& between = serverTrees[t % 2];
        CollectiveTree& tree = trees[t];
        tree.parent.assign(n, -1);
        tree.children.assign(n, {});
        auto link = [&tree](uint32_t parent, uint32_t child) {
            tree.parent[child] = static_cast<int32_t>(parent);
            tree.children[parent].push_back(child);
        };
        for (size_t s = 0; s < ns; ++s)
        {
            const auto& chain = servers[s];
            for (size_t i = 1; i < chain.size(); ++i)
            {
                link(chain[i - 1], chain[i]);
            }
            for (uint32_t kid : between.children[s])
            {
                link(chain.front(), servers[kid].front());
            }
        }
    }
    return trees;
}

std::vector<std::vector<uint32_t>>
Communicator::NvlsGroups() const
{
    // NVLS needs every server's members on one NVSwitch, the same number on each server (each
    // GPU heads one shard) and at least two of them.
    std::vector<std::vector<uint32_t>> groups = ServerGroups(0);
    Ptr<ClusterTopology> topo = m_world->GetTopology();
    for (const auto& g : groups)
    {
        if (g.size() < 2 || g.size() != groups.front().size())
        {
            return {};
        }
        uint32_t sw = 0;
        for (uint32_t r : g)
        {
            try
            {
                const uint32_t e = topo->NvSwitchEndpoint(m_gpus[r]);
                if (r != g.front() && e != sw)
                {
                    return {};
                }
                sw = e;
            }
            catch (const std::runtime_error&)
            {
                return {};
            }
        }
    }
    return groups;
}

} // namespace ns3
