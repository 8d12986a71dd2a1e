#include "ns3/cluster-topology.h"

#include "ns3/log.h"

#include <functional>
#include <limits>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ClusterTopology");
NS_OBJECT_ENSURE_REGISTERED(ClusterTopology);

namespace
{

constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();

/// splitmix64 finaliser: cheap, well-mixed, stable across platforms.
uint64_t
Mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// Picks one of n equal-cost candidates for this flow at this vertex.
size_t
EcmpPick(uint64_t flowHash, uint32_t vertex, size_t n)
{
    if (n <= 1)
    {
        return 0;
    }
    return Mix64(flowHash ^ Mix64(vertex)) % n;
}

bool
IsFabricVertex(TopoVertexType t)
{
    return t == TopoVertexType::Nic || t == TopoVertexType::Switch;
}

/// Among the ids in `ids` that satisfy `ok`, picks one by the flow hash (two passes, so there is
/// no limit on the fan-out and no allocation). Returns kUnset when none qualifies.
template <typename Pred>
uint32_t
PickAmong(const std::vector<uint32_t>& ids, uint64_t flowHash, uint32_t vertex, Pred ok)
{
    size_t n = 0;
    for (uint32_t id : ids)
    {
        n += ok(id) ? 1 : 0;
    }
    if (n == 0)
    {
        return kUnset;
    }
    size_t k = EcmpPick(flowHash, vertex, n);
    for (uint32_t id : ids)
    {
        if (ok(id) && k-- == 0)
        {
            return id;
        }
    }
    return kUnset;
}

/// The k-th (0-based) id in `ids` that satisfies `ok`, k taken modulo how many do.
template <typename Pred>
uint32_t
PickNth(const std::vector<uint32_t>& ids, uint64_t k, Pred ok)
{
    size_t n = 0;
    for (uint32_t id : ids)
    {
        n += ok(id) ? 1 : 0;
    }
    if (n == 0)
    {
        return kUnset;
    }
    k %= n;
    for (uint32_t id : ids)
    {
        if (ok(id) && k-- == 0)
        {
            return id;
        }
    }
    return kUnset;
}

} // namespace

TypeId
ClusterTopology::GetTypeId()
{
    static TypeId tid = TypeId("ns3::ClusterTopology")
                            .SetParent<Object>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<ClusterTopology>();
    return tid;
}

ClusterTopology::ClusterTopology() = default;

uint32_t
ClusterTopology::AddVertex(const TopoVertex& v)
{
    m_vertices.push_back(v);
    m_out.emplace_back();
    m_in.emplace_back();
    m_distCache.clear();
    return static_cast<uint32_t>(m_vertices.size() - 1);
}

void
ClusterTopology::SetCables(uint32_t link, uint32_t cables)
{
    if (link >= m_links.size() || cables == 0)
    {
        throw std::runtime_error("ClusterTopology::SetCables: bad link or cable count");
    }
    m_links[link].cables = cables;
    m_links[m_links[link].reverse].cables = cables;
}

uint32_t
ClusterTopology::AddDuplexLink(uint32_t a,
                               uint32_t b,
                               double bitsPerSec,
                               double latencySec,
                               TopoLinkKind kind)
{
    if (a >= m_vertices.size() || b >= m_vertices.size() || a == b)
    {
        throw std::runtime_error("ClusterTopology::AddDuplexLink: bad vertices " +
                                 std::to_string(a) + " -> " + std::to_string(b));
    }
    if (!(bitsPerSec > 0) || !(latencySec >= 0))
    {
        throw std::runtime_error("ClusterTopology::AddDuplexLink: link " + m_vertices[a].name +
                                 " <-> " + m_vertices[b].name +
                                 " needs a positive rate and a non-negative latency");
    }
    const auto id = static_cast<uint32_t>(m_links.size());
    TopoLink fwd{a, b, bitsPerSec, latencySec, kind, id + 1};
    TopoLink rev{b, a, bitsPerSec, latencySec, kind, id};
    m_links.push_back(fwd);
    m_links.push_back(rev);
    m_out[a].push_back(id);
    m_out[b].push_back(id + 1);
    m_in[b].push_back(id);
    m_in[a].push_back(id + 1);
    m_distCache.clear();
    return id;
}

void
ClusterTopology::SetGpu(uint32_t gpu, uint32_t vertex, uint32_t server, uint32_t nicVertex)
{
    if (vertex >= m_vertices.size() || m_vertices[vertex].type != TopoVertexType::Gpu)
    {
        throw std::runtime_error("ClusterTopology::SetGpu: vertex " + std::to_string(vertex) +
                                 " is not a GPU vertex");
    }
    if (nicVertex != kUnset &&
        (nicVertex >= m_vertices.size() || m_vertices[nicVertex].type != TopoVertexType::Nic))
    {
        throw std::runtime_error("ClusterTopology::SetGpu: vertex " + std::to_string(nicVertex) +
                                 " is not a NIC vertex");
    }
    if (gpu >= m_gpuVertex.size())
    {
        m_gpuVertex.resize(gpu + 1, kUnset);
        m_gpuServer.resize(gpu + 1, kUnset);
        m_gpuNic.resize(gpu + 1, kUnset);
        m_gpuLocal.resize(gpu + 1, kUnset);
    }
    m_gpuVertex[gpu] = vertex;
    m_gpuServer[gpu] = server;
    m_gpuNic[gpu] = nicVertex;
    // The GPU vertex carries its index inside the server.
    m_gpuLocal[gpu] = m_vertices[vertex].index;
    m_nServers = std::max(m_nServers, server + 1);
}

void
ClusterTopology::SetDescription(const std::string& d)
{
    m_description = d;
}

void
ClusterTopology::SetRouting(const std::string& routing)
{
    if (routing != "ecmp" && routing != "dmodk" && routing != "spray" && routing != "spray-rr" &&
        routing != "flowlet" && routing != "adaptive")
    {
        throw std::invalid_argument("unknown routing '" + routing +
                                    "' (ecmp, dmodk, spray, spray-rr, flowlet, adaptive)");
    }
    m_dmodk = routing == "dmodk";
    m_routing = routing;
}

const std::string&
ClusterTopology::GetRouting() const
{
    return m_routing;
}

std::vector<std::vector<uint32_t>>
ClusterTopology::EqualCostRoutes(uint32_t srcGpu, uint32_t dstGpu, uint32_t maxPaths) const
{
    std::vector<std::vector<uint32_t>> out(1);
    RouteInto(srcGpu, dstGpu, HashFlow(0, srcGpu, dstGpu), out[0]);
    const std::vector<uint32_t>& base = out[0];
    if (base.empty() || IsSwitchEndpoint(srcGpu) || IsSwitchEndpoint(dstGpu) ||
        m_gpuServer[srcGpu] == m_gpuServer[dstGpu] || maxPaths < 2)
    {
        return out;
    }
    const uint32_t srcNic = m_gpuNic[srcGpu];
    const uint32_t dstNic = m_gpuNic[dstGpu];
    if (srcNic == dstNic)
    {
        return out;
    }
    // The fabric part of the base route: from the link leaving srcNic to the one entering
    // dstNic; its last switch (`entry`) is where every enumerated path ends before dstNic.
    size_t first = base.size();
    size_t last = base.size();
    for (size_t i = 0; i < base.size(); ++i)
    {
        if (first == base.size() && m_links[base[i]].from == srcNic)
        {
            first = i;
        }
        if (m_links[base[i]].to == dstNic)
        {
            last = i;
        }
    }
    if (first == base.size() || last == base.size() || last <= first)
    {
        return out;
    }
    const uint32_t entry = m_links[base[last]].from;
    const std::vector<uint32_t>& dist = DistancesTo(entry);
    const std::vector<uint32_t> prefix(base.begin(), base.begin() + first);
    const std::vector<uint32_t> suffix(base.begin() + last, base.end());
    std::vector<std::vector<uint32_t>> paths;
    std::vector<uint32_t> stack;
    // Depth first over the links one hop closer to `entry` (only switches forward).
    std::function<void(uint32_t)> walk = [&](uint32_t cur) {
        if (paths.size() >= maxPaths)
        {
            return;
        }
        if (cur == entry)
        {
            std::vector<uint32_t> r = prefix;
            r.insert(r.end(), stack.begin(), stack.end());
            r.insert(r.end(), suffix.begin(), suffix.end());
            paths.push_back(std::move(r));
            return;
        }
        for (uint32_t l : m_out[cur])
        {
            const uint32_t v = m_links[l].to;
            const bool forwards = m_vertices[v].type == TopoVertexType::Switch;
            if (forwards && dist[v] != kUnset && dist[v] + 1 == dist[cur])
            {
                stack.push_back(l);
                walk(v);
                stack.pop_back();
            }
        }
    };
    if (dist[srcNic] == kUnset)
    {
        return out;
    }
    walk(srcNic);
    if (paths.empty())
    {
        return out;
    }
    return paths;
}

void
ClusterTopology::SetNcclCalibration(const gpusim::NcclCalibration& c)
{
    m_nccl = c;
}

const gpusim::NcclCalibration&
ClusterTopology::GetNcclCalibration() const
{
    return m_nccl;
}

bool
ClusterTopology::IsSwitchEndpoint(uint32_t endpoint)
{
    return endpoint >= kSwitchEndpoint;
}

uint32_t
ClusterTopology::NvSwitchEndpoint(uint32_t gpu) const
{
    CheckGpu(gpu);
    for (uint32_t l : m_out[m_gpuVertex[gpu]])
    {
        const TopoLink& link = m_links[l];
        if (link.kind == TopoLinkKind::NvLink &&
            m_vertices[link.to].type == TopoVertexType::NvSwitch)
        {
            return kSwitchEndpoint + link.to;
        }
    }
    throw std::runtime_error("ClusterTopology: GPU " + std::to_string(gpu) + " (" +
                             m_vertices[m_gpuVertex[gpu]].name +
                             ") has no NVLink to an NVSwitch");
}

uint32_t
ClusterTopology::GetNGpus() const
{
    return static_cast<uint32_t>(m_gpuVertex.size());
}

uint32_t
ClusterTopology::GetNServers() const
{
    return m_nServers;
}

void
ClusterTopology::CheckGpu(uint32_t gpu) const
{
    if (IsSwitchEndpoint(gpu))
    {
        const uint32_t v = gpu - kSwitchEndpoint;
        if (v >= m_vertices.size() || m_vertices[v].type != TopoVertexType::NvSwitch)
        {
            throw std::runtime_error("ClusterTopology: endpoint " + std::to_string(gpu) +
                                     " names no NVSwitch vertex");
        }
        return;
    }
    if (gpu >= m_gpuVertex.size() || m_gpuVertex[gpu] == kUnset)
    {
        throw std::runtime_error("ClusterTopology: GPU " + std::to_string(gpu) +
                                 " is not registered (" + std::to_string(m_gpuVertex.size()) +
                                 " GPU slots)");
    }
}

uint32_t
ClusterTopology::GpuVertex(uint32_t gpu) const
{
    CheckGpu(gpu);
    return m_gpuVertex[gpu];
}

uint32_t
ClusterTopology::ServerOf(uint32_t gpu) const
{
    CheckGpu(gpu);
    if (IsSwitchEndpoint(gpu))
    {
        return m_vertices[gpu - kSwitchEndpoint].server;
    }
    return m_gpuServer[gpu];
}

uint32_t
ClusterTopology::NicOf(uint32_t gpu) const
{
    CheckGpu(gpu);
    return m_gpuNic[gpu];
}

uint32_t
ClusterTopology::LocalIndex(uint32_t gpu) const
{
    CheckGpu(gpu);
    return m_gpuLocal[gpu];
}

uint32_t
ClusterTopology::RailPeer(uint32_t srcGpu, uint32_t dstGpu) const
{
    CheckGpu(srcGpu);
    CheckGpu(dstGpu);
    const uint32_t server = m_gpuServer[srcGpu];
    if (server == m_gpuServer[dstGpu] || m_gpuNic[dstGpu] == UINT32_MAX)
    {
        return srcGpu;
    }
    const uint32_t rail = m_vertices[m_gpuNic[dstGpu]].index;
    auto onRail = [&](uint32_t g) {
        return m_gpuNic[g] != UINT32_MAX && m_vertices[m_gpuNic[g]].index == rail;
    };
    if (onRail(srcGpu))
    {
        return srcGpu;
    }
    // GPU numbers are server-major: the server's GPUs follow its first.
    for (uint32_t g = srcGpu - m_gpuLocal[srcGpu]; g < m_gpuServer.size() && m_gpuServer[g] == server;
         ++g)
    {
        if (onRail(g))
        {
            return g;
        }
    }
    return srcGpu;
}

const std::vector<TopoVertex>&
ClusterTopology::Vertices() const
{
    return m_vertices;
}

const std::vector<TopoLink>&
ClusterTopology::Links() const
{
    return m_links;
}

const std::vector<uint32_t>&
ClusterTopology::OutLinks(uint32_t vertex) const
{
    return m_out.at(vertex);
}

const std::vector<uint32_t>&
ClusterTopology::InLinks(uint32_t vertex) const
{
    return m_in.at(vertex);
}

const std::string&
ClusterTopology::GetDescription() const
{
    return m_description;
}

const std::vector<uint32_t>&
ClusterTopology::DistancesTo(uint32_t dstVertex) const
{
    auto it = m_distCache.find(dstVertex);
    if (it != m_distCache.end())
    {
        return it->second;
    }
    std::vector<uint32_t> dist;
    ReverseBfs(dstVertex, nullptr, dist);
    return m_distCache.emplace(dstVertex, std::move(dist)).first->second;
}

uint32_t
ClusterTopology::PickLink(uint32_t from,
                          uint32_t to,
                          uint64_t flowHash,
                          const std::vector<uint8_t>* down) const
{
    // Parallel links between the same pair are ECMP candidates too.
    return PickAmong(m_out[from], flowHash, from, [&](uint32_t l) {
        return m_links[l].to == to && !(down && (*down)[l]);
    });
}

void
ClusterTopology::ReverseBfs(uint32_t dstVertex,
                            const std::vector<uint8_t>* down,
                            std::vector<uint32_t>& dist) const
{
    // Reverse BFS over incoming links (those not marked down). Only switches (and the
    // destination itself) forward: a NIC gets a distance (it may be a source) but is never
    // expanded.
    dist.assign(m_vertices.size(), kUnset);
    std::vector<uint32_t> queue;
    queue.reserve(64);
    dist[dstVertex] = 0;
    queue.push_back(dstVertex);
    for (size_t head = 0; head < queue.size(); ++head)
    {
        const uint32_t v = queue[head];
        if (v != dstVertex && m_vertices[v].type != TopoVertexType::Switch)
        {
            continue;
        }
        for (uint32_t l : m_in[v])
        {
            const uint32_t u = m_links[l].from;
            if (!(down && (*down)[l]) && dist[u] == kUnset && IsFabricVertex(m_vertices[u].type))
            {
                dist[u] = dist[v] + 1;
                queue.push_back(u);
            }
        }
    }
}

void
ClusterTopology::SetFabricEvents(std::vector<gpusim::FabricEvent> events)
{
    m_fabricEvents = std::move(events);
}

const std::vector<gpusim::FabricEvent>&
ClusterTopology::GetFabricEvents() const
{
    return m_fabricEvents;
}

void
ClusterTopology::SetRoutingConvergence(Time delay)
{
    m_convergence = delay;
}

Time
ClusterTopology::GetRoutingConvergence() const
{
    return m_convergence;
}

std::vector<uint32_t>
ClusterTopology::Route(uint32_t srcGpu, uint32_t dstGpu, uint64_t flowHash) const
{
    std::vector<uint32_t> route;
    RouteInto(srcGpu, dstGpu, flowHash, route);
    return route;
}

void
ClusterTopology::RouteInto(uint32_t srcGpu,
                           uint32_t dstGpu,
                           uint64_t flowHash,
                           std::vector<uint32_t>& route) const
{
    RouteImpl(srcGpu, dstGpu, flowHash, nullptr, route);
}

void
ClusterTopology::RouteAvoiding(uint32_t srcGpu,
                               uint32_t dstGpu,
                               uint64_t flowHash,
                               const std::vector<uint8_t>& down,
                               std::vector<uint32_t>& route) const
{
    if (down.size() != m_links.size())
    {
        throw std::invalid_argument("ClusterTopology::RouteAvoiding: one entry per link needed");
    }
    RouteImpl(srcGpu, dstGpu, flowHash, &down, route);
}

void
ClusterTopology::RouteImpl(uint32_t srcGpu,
                           uint32_t dstGpu,
                           uint64_t flowHash,
                           const std::vector<uint8_t>* down,
                           std::vector<uint32_t>& route) const
{
    route.clear();
    CheckGpu(srcGpu);
    CheckGpu(dstGpu);
    if (srcGpu == dstGpu)
    {
        return;
    }
    if (IsSwitchEndpoint(srcGpu) || IsSwitchEndpoint(dstGpu))
    {
        SwitchRouteInto(srcGpu, dstGpu, flowHash, route);
        if (down && (*down)[route.front()])
        {
            throw std::runtime_error("ClusterTopology::Route: the NVLink of endpoint " +
                                     std::to_string(IsSwitchEndpoint(srcGpu) ? dstGpu : srcGpu) +
                                     " is down");
        }
        return;
    }
    const uint32_t sv = m_gpuVertex[srcGpu];
    const uint32_t dv = m_gpuVertex[dstGpu];
    auto noPath = [&](const std::string& why) {
        return std::runtime_error("ClusterTopology::Route: no path from GPU " +
                                  std::to_string(srcGpu) + " (" + m_vertices[sv].name +
                                  ") to GPU " + std::to_string(dstGpu) + " (" +
                                  m_vertices[dv].name + "): " + why);
    };

    if (m_gpuServer[srcGpu] == m_gpuServer[dstGpu])
    {
        // GPU -> NVSwitch -> GPU; a direct NVLink between the two GPUs also counts.
        const uint32_t first = PickAmong(m_out[sv], flowHash, sv, [&](uint32_t l) {
            const TopoLink& link = m_links[l];
            return link.kind == TopoLinkKind::NvLink && !(down && (*down)[l]) &&
                   (link.to == dv || (m_vertices[link.to].type == TopoVertexType::NvSwitch &&
                                      PickLink(link.to, dv, flowHash, down) != kUnset));
        });
        if (first != kUnset)
        {
            route.push_back(first);
            if (m_links[first].to != dv)
            {
                route.push_back(PickLink(m_links[first].to, dv, flowHash, down));
            }
            return;
        }
        // No NVLink between them: fall through to the NIC path (PCIe-only servers).
    }

    const uint32_t srcNic = m_gpuNic[srcGpu];
    const uint32_t dstNic = m_gpuNic[dstGpu];
    if (srcNic == kUnset || dstNic == kUnset)
    {
        throw noPath("GPU has no NIC");
    }
    const uint32_t up = PickLink(sv, srcNic, flowHash, down);
    const uint32_t last = PickLink(dstNic, dv, flowHash, down);
    if (up == kUnset || last == kUnset)
    {
        throw noPath("GPU is not linked to its NIC");
    }
    route.push_back(up);
    if (srcNic != dstNic)
    {
        // Shortest paths into a NIC all end on one of its switches; when it has exactly one
        // switch neighbour (the usual case) aim at that switch, so the distance cache holds
        // one entry per leaf instead of one per NIC.
        uint32_t target = dstNic;
        uint32_t attach = kUnset;
        bool single = true;
        for (uint32_t l : m_in[dstNic])
        {
            const uint32_t u = m_links[l].from;
            if (down && (*down)[l])
            {
                continue; // a failed attachment is no way in
            }
            if (m_vertices[u].type == TopoVertexType::Gpu)
            {
                continue;
            }
            if (m_vertices[u].type != TopoVertexType::Switch || (attach != kUnset && attach != u))
            {
                single = false;
                break;
            }
            attach = u;
        }
        if (single && attach != kUnset)
        {
            target = attach;
        }
        std::vector<uint32_t> avoiding;
        if (down)
        {
            ReverseBfs(target, down, avoiding);
        }
        const std::vector<uint32_t>& dist = down ? avoiding : DistancesTo(target);
        if (dist[srcNic] == kUnset)
        {
            throw noPath("fabric does not connect " + m_vertices[srcNic].name + " and " +
                         m_vertices[dstNic].name);
        }
        // D-mod-K: the destination's key is its NIC's position among its leaf's NICs, offset
        // by the leaf's index; each level of uplinks takes the next digit (mod its fan-out).
        uint64_t dstKey = 0;
        uint64_t divisor = 1;
        if (m_dmodk && attach != kUnset && single)
        {
            uint64_t pos = 0;
            uint64_t nDown = 0;
            for (uint32_t l : m_out[attach])
            {
                const uint32_t v = m_links[l].to;
                if (m_vertices[v].type == TopoVertexType::Nic)
                {
                    if (v == dstNic)
                    {
                        pos = nDown;
                    }
                    ++nDown;
                }
            }
            dstKey = pos + uint64_t(m_vertices[attach].index) * nDown;
        }
        uint32_t cur = srcNic;
        while (cur != target)
        {
            const uint32_t want = dist[cur] - 1;
            auto ok = [&](uint32_t id) {
                const uint32_t v = m_links[id].to;
                const bool forwards = m_vertices[v].type == TopoVertexType::Switch || v == target;
                return forwards && dist[v] == want && !(down && (*down)[id]);
            };
            uint32_t l;
            if (m_dmodk && single && m_vertices[cur].type == TopoVertexType::Switch)
            {
                size_t n = 0;
                for (uint32_t id : m_out[cur])
                {
                    n += ok(id) ? 1 : 0;
                }
                l = PickNth(m_out[cur], dstKey / divisor, ok);
                divisor *= std::max<size_t>(1, n);
            }
            else
            {
                l = PickAmong(m_out[cur], flowHash, cur, ok);
            }
            if (l == kUnset)
            {
                throw noPath("routing dead end at " + m_vertices[cur].name);
            }
            route.push_back(l);
            cur = m_links[l].to;
        }
        if (target != dstNic)
        {
            route.push_back(PickLink(target, dstNic, flowHash, down));
        }
    }
    route.push_back(last);
}

void
ClusterTopology::SwitchRouteInto(uint32_t src,
                                 uint32_t dst,
                                 uint64_t flowHash,
                                 std::vector<uint32_t>& route) const
{
    auto vertexOf = [this](uint32_t e) {
        return IsSwitchEndpoint(e) ? e - kSwitchEndpoint : m_gpuVertex[e];
    };
    const uint32_t sv = vertexOf(src);
    const uint32_t dv = vertexOf(dst);
    const uint32_t l = IsSwitchEndpoint(src) && IsSwitchEndpoint(dst)
                           ? kUnset
                           : PickLink(sv, dv, flowHash);
    if (l == kUnset || m_links[l].kind != TopoLinkKind::NvLink)
    {
        throw std::runtime_error("ClusterTopology::Route: no NVLink between " +
                                 m_vertices[sv].name + " and " + m_vertices[dv].name);
    }
    route.push_back(l);
}

uint64_t
ClusterTopology::HashFlow(uint64_t flowKey, uint32_t srcGpu, uint32_t dstGpu)
{
    return Mix64(flowKey ^ Mix64((uint64_t(srcGpu) << 32) | dstGpu));
}

double
ClusterTopology::PathLatency(const std::vector<uint32_t>& route) const
{
    double s = 0;
    for (uint32_t l : route)
    {
        s += m_links.at(l).latencySec;
    }
    return s;
}

double
ClusterTopology::PathBottleneck(const std::vector<uint32_t>& route) const
{
    double b = std::numeric_limits<double>::infinity();
    for (uint32_t l : route)
    {
        b = std::min(b, m_links.at(l).bitsPerSec);
    }
    return b;
}

} // namespace ns3
