#include "ns3/mirror-classes.h"

#include "ns3/log.h"
#include "ns3/nccl-collective.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MirrorClasses");

namespace
{

using Colour = uint64_t;

/// Gives equal sequences equal small numbers (one table per refinement round).
class Interner
{
  public:
    Colour Id(const std::vector<Colour>& key)
    {
        auto [it, fresh] = m_ids.try_emplace(key, m_ids.size());
        return it->second;
    }

  private:
    std::map<std::vector<Colour>, Colour> m_ids;
};

/// The point-to-point sends of one op list: (communicator name, peer comm rank), in order of
/// first appearance.
std::vector<std::pair<std::string, uint32_t>>
SendsOf(const gpusim::RankTrace& list)
{
    std::vector<std::pair<std::string, uint32_t>> sends;
    std::set<std::pair<std::string, uint32_t>> seen;
    for (const gpusim::Op& op : list.ops)
    {
        if (op.kind == gpusim::OpKind::Collective && op.coll == gpusim::CollKind::Send &&
            op.peer >= 0 && seen.insert({op.comm, uint32_t(op.peer)}).second)
        {
            sends.emplace_back(op.comm, uint32_t(op.peer));
        }
    }
    return sends;
}

/// The communicators (by the list's names) that one op list runs collectives on (not sends
/// or receives).
std::set<std::string>
CollectiveCommsOf(const gpusim::RankTrace& list)
{
    std::set<std::string> comms;
    for (const gpusim::Op& op : list.ops)
    {
        if (op.kind == gpusim::OpKind::Collective && op.coll != gpusim::CollKind::Send &&
            op.coll != gpusim::CollKind::Recv)
        {
            comms.insert(op.comm);
        }
    }
    return comms;
}

/// What refinement looks at: each rank's send routes (link ids) and its communicators.
struct Neighbourhood
{
    std::vector<std::vector<std::vector<uint32_t>>> routes; //!< rank -> sends -> links
    std::vector<std::vector<uint32_t>> comms;               //!< rank -> communicator indexes
    std::vector<std::vector<uint32_t>> members;             //!< communicator -> member ranks
    std::vector<bool> oneServer;                            //!< communicator on one server
    std::map<uint32_t, std::vector<uint32_t>> linkUsers;    //!< link -> ranks (per route)
    std::vector<uint32_t> block;                            //!< rank -> lowest rank of its block
};

uint32_t
Find(std::vector<uint32_t>& parent, uint32_t r)
{
    while (parent[r] != r)
    {
        parent[r] = parent[parent[r]];
        r = parent[r];
    }
    return r;
}

/// Blocks: ranks joined by one-server communicators whose members all run the same list (a TP
/// group on NVLink). Such ranks meet at every collective of that communicator, so a member
/// that is late holds the others at the next one: the block moves as one, as the lockstep
/// makes it, and blocks rather than single ranks are compared.
void
FindBlocks(Neighbourhood& nb, const std::vector<int32_t>& listOf)
{
    const uint32_t n = listOf.size();
    std::vector<uint32_t> parent(n);
    for (uint32_t r = 0; r < n; ++r)
    {
        parent[r] = r;
    }
    for (size_t c = 0; c < nb.members.size(); ++c)
    {
        const std::vector<uint32_t>& ranks = nb.members[c];
        if (ranks.size() < 2)
        {
            continue;
        }
        bool oneList = listOf[ranks.front()] >= 0;
        for (uint32_t m : ranks)
        {
            oneList = oneList && listOf[m] == listOf[ranks.front()];
        }
        if (!oneList || !nb.oneServer[c])
        {
            continue;
        }
        for (uint32_t m : ranks)
        {
            parent[Find(parent, m)] = Find(parent, ranks.front());
        }
    }
    nb.block.resize(n);
    for (uint32_t r = 0; r < n; ++r)
    {
        nb.block[r] = Find(parent, r);
    }
}

Neighbourhood
Collect(const gpusim::JobTrace& job,
        const std::vector<Ptr<CudaContext>>& contexts,
        Ptr<ClusterTopology> topology,
        uint32_t ringChannels)
{
    const uint32_t n = contexts.size();
    Neighbourhood nb;
    nb.routes.resize(n);
    nb.comms.resize(n);
    std::map<uint32_t, uint32_t> rankOfGpu;
    for (uint32_t r = 0; r < n; ++r)
    {
        rankOfGpu[contexts[r]->GetNode()->GetGpuIndex()] = r;
    }
    std::map<const Communicator*, uint32_t> commIndex;
    std::map<uint32_t, std::vector<std::pair<std::string, uint32_t>>> sendsOfList;
    std::map<uint32_t, std::set<std::string>> collectivesOfList;
    std::set<const Communicator*> ringsDone;
    auto addRoute = [&](uint32_t r, uint32_t src, uint32_t dst, uint64_t flowKey) {
        // The route the flow backend takes (FlowBackend::LookupRoute: the same hash).
        std::vector<uint32_t> links;
        topology->RouteInto(src, dst, ClusterTopology::HashFlow(flowKey, src, dst), links);
        for (uint32_t l : links)
        {
            nb.linkUsers[l].push_back(r);
        }
        nb.routes[r].push_back(std::move(links));
    };
    for (uint32_t r = 0; r < n; ++r)
    {
        // Communicators in name order (the list's names, the same for every sharer).
        for (const auto& [name, app] : contexts[r]->GetCommunicators())
        {
            const Communicator* c = PeekPointer(app->GetCommunicator());
            auto [it, fresh] = commIndex.try_emplace(c, nb.members.size());
            if (fresh)
            {
                std::vector<uint32_t> ranks;
                for (uint32_t gpu : c->Gpus())
                {
                    auto g = rankOfGpu.find(gpu);
                    if (g != rankOfGpu.end())
                    {
                        ranks.push_back(g->second);
                    }
                }
                nb.members.push_back(std::move(ranks));
                nb.oneServer.push_back(c->NumServers() == 1);
            }
            nb.comms[r].push_back(it->second);
        }
        if (!topology)
        {
            continue;
        }
        const int32_t from = job.ranks[r].opsFrom;
        const uint32_t list = from >= 0 ? uint32_t(from) : r;
        auto [sit, fresh] = sendsOfList.try_emplace(list);
        if (fresh)
        {
            sit->second = SendsOf(job.ranks[list]);
        }
        for (const auto& [name, peer] : sit->second)
        {
            Ptr<NcclCollective> app = contexts[r]->GetCommunicator(name);
            if (!app || peer >= app->GetCommunicator()->GetNRanks())
            {
                continue; // reported when the send is launched
            }
            const Ptr<Communicator> c = app->GetCommunicator();
            const uint32_t me = app->GetCommRank();
            gpusim::Op send;
            send.peer = static_cast<int32_t>(peer);
            const uint32_t to = app->PeerOf(send); // the list's offset, from this rank
            addRoute(r, c->GpuOf(me), c->GpuOf(to), Communicator::P2pFlowKey(me, to));
        }
        // Collectives across servers: the edge flows of their rings (channel c's flows use
        // flow key c, as the ring flows of NcclWorld RingFlows do), each the sender's.
        auto [cit, cfresh] = collectivesOfList.try_emplace(list);
        if (cfresh)
        {
            cit->second = CollectiveCommsOf(job.ranks[list]);
        }
        for (const std::string& name : cit->second)
        {
            Ptr<NcclCollective> app = contexts[r]->GetCommunicator(name);
            if (!app || app->GetCommunicator()->NumServers() < 2 ||
                !ringsDone.insert(PeekPointer(app->GetCommunicator())).second)
            {
                continue;
            }
            const Ptr<Communicator> c = app->GetCommunicator();
            uint32_t channels = ringChannels;
            if (channels == 0)
            {
                std::map<uint32_t, uint32_t> perServer;
                for (uint32_t gpu : c->Gpus())
                {
                    channels = std::max(channels, ++perServer[topology->ServerOf(gpu)]);
                }
            }
            for (uint32_t ch = 0; ch < channels; ++ch)
            {
                const std::vector<uint32_t> order = c->RingOrder(ch);
                for (size_t p = 0; p < order.size(); ++p)
                {
                    const uint32_t src = c->GpuOf(order[p]);
                    const uint32_t dst = c->GpuOf(order[(p + 1) % order.size()]);
                    auto sender = rankOfGpu.find(src);
                    if (sender != rankOfGpu.end() && src != dst)
                    {
                        addRoute(sender->second, src, dst, ch);
                    }
                }
            }
        }
    }
    return nb;
}

/// One refinement round: a rank's new colour is its old one plus, hop by hop, the colours of
/// the flows on each link of its sends, plus the colours of each communicator's members.
std::vector<Colour>
Refine(const Neighbourhood& nb, const std::vector<Colour>& colour)
{
    Interner links;
    std::map<uint32_t, Colour> linkColour;
    std::vector<Colour> key;
    for (const auto& [link, users] : nb.linkUsers)
    {
        key.clear();
        for (uint32_t r : users)
        {
            key.push_back(colour[r]);
        }
        std::sort(key.begin(), key.end());
        linkColour[link] = links.Id(key);
    }
    Interner comms;
    std::vector<Colour> commColour(nb.members.size());
    for (size_t c = 0; c < nb.members.size(); ++c)
    {
        key.clear();
        for (uint32_t r : nb.members[c])
        {
            key.push_back(colour[r]);
        }
        std::sort(key.begin(), key.end());
        commColour[c] = comms.Id(key);
    }
    Interner ranks;
    std::vector<Colour> next(colour.size());
    std::vector<std::vector<Colour>> routeKeys;
    const Colour sep = ~Colour(0);
    for (size_t r = 0; r < colour.size(); ++r)
    {
        // The routes as a multiset (ring edges are listed when their communicator is first
        // met, sends in list order): sorted, each hop by hop.
        routeKeys.resize(nb.routes[r].size());
        for (size_t i = 0; i < nb.routes[r].size(); ++i)
        {
            routeKeys[i].clear();
            for (uint32_t l : nb.routes[r][i])
            {
                routeKeys[i].push_back(linkColour[l]);
            }
        }
        std::sort(routeKeys.begin(), routeKeys.end());
        key.assign(1, colour[r]);
        for (const auto& route : routeKeys)
        {
            key.push_back(sep);
            key.insert(key.end(), route.begin(), route.end());
        }
        key.push_back(sep);
        for (uint32_t c : nb.comms[r])
        {
            key.push_back(commColour[c]);
        }
        next[r] = ranks.Id(key);
    }
    // A block's members take one colour: that of the multiset of their own.
    std::map<uint32_t, std::vector<Colour>> perBlock;
    for (size_t r = 0; r < colour.size(); ++r)
    {
        perBlock[nb.block[r]].push_back(next[r]);
    }
    Interner blocks;
    std::map<uint32_t, Colour> blockColour;
    for (auto& [block, ids] : perBlock)
    {
        std::sort(ids.begin(), ids.end());
        blockColour[block] = blocks.Id(ids);
    }
    for (size_t r = 0; r < colour.size(); ++r)
    {
        next[r] = blockColour[nb.block[r]];
    }
    return next;
}

size_t
CountColours(const std::vector<Colour>& colour)
{
    return std::set<Colour>(colour.begin(), colour.end()).size();
}

/// The largest number of classes among the ranks of one list.
size_t
MostClassesOfAList(const std::vector<Colour>& colour, const std::vector<int32_t>& listOf)
{
    std::map<int32_t, std::set<Colour>> perList;
    for (size_t r = 0; r < colour.size(); ++r)
    {
        if (listOf[r] >= 0)
        {
            perList[listOf[r]].insert(colour[r]);
        }
    }
    size_t most = 0;
    for (const auto& [list, colours] : perList)
    {
        most = std::max(most, colours.size());
    }
    return most;
}

} // namespace

std::vector<uint32_t>
SplitMirrorClasses(const gpusim::JobTrace& job,
                   const std::vector<Ptr<CudaContext>>& contexts,
                   const std::vector<int32_t>& listOf,
                   Ptr<ClusterTopology> topology,
                   uint32_t ringChannels,
                   uint32_t maxClasses)
{
    const uint32_t n = contexts.size();
    // Start from the lists: ranks sharing a mirrorable list, everyone else alone.
    std::vector<Colour> colour(n);
    for (uint32_t r = 0; r < n; ++r)
    {
        colour[r] = listOf[r] >= 0 ? Colour(listOf[r]) : Colour(n) + r;
    }
    Neighbourhood nb = Collect(job, contexts, topology, ringChannels);
    FindBlocks(nb, listOf);
    size_t classes = CountColours(colour);
    // Each round only splits classes (the old colour is part of the new), so at most n rounds.
    // Round k tells apart ranks whose neighbourhoods differ within k steps; a round that would
    // give some list more than maxClasses classes is not taken (the classes stay those of the
    // round before: equal as far as the budget looks).
    for (uint32_t round = 0; round < n; ++round)
    {
        std::vector<Colour> next = Refine(nb, colour);
        const size_t count = CountColours(next);
        if (count == classes)
        {
            break;
        }
        if (maxClasses > 0 && MostClassesOfAList(next, listOf) > maxClasses)
        {
            NS_LOG_INFO("round " << round << " would give a list more than " << maxClasses
                                 << " classes; stopping at " << classes);
            break;
        }
        colour = std::move(next);
        classes = count;
    }
    std::map<Colour, uint32_t> lowest;
    std::vector<uint32_t> rep(n);
    for (uint32_t r = 0; r < n; ++r)
    {
        rep[r] = listOf[r] >= 0 ? lowest.try_emplace(colour[r], r).first->second : r;
    }
    NS_LOG_INFO(classes << " classes over " << n << " ranks");
    return rep;
}

} // namespace ns3
