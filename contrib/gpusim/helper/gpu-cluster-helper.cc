#include "ns3/gpu-cluster-helper.h"

#include "ns3/double.h"
#include "ns3/gpu-node.h"
#include "ns3/gpu-spec.h"
#include "ns3/log.h"

#include <cmath>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("GpuClusterHelper");

namespace
{

uint32_t
CeilDiv(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

/// Spines needed so that a leaf with `downlinks` NIC-speed ports has 1/oversubscription of that
/// capacity upwards, one NIC-speed link per spine. No spine layer for a single leaf.
uint32_t
SpineCount(uint32_t leaves, uint32_t downlinks, double oversubscription)
{
    if (leaves <= 1)
    {
        return 0;
    }
    // The epsilon keeps 32 / (32/3) from rounding up to 4 by floating-point noise.
    const double need = double(downlinks) / oversubscription;
    return std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(need - 1e-9)));
}

TopoVertex
MakeSwitch(uint16_t tier, uint32_t index, const std::string& kind)
{
    TopoVertex v;
    v.type = TopoVertexType::Switch;
    v.tier = tier;
    v.index = index;
    v.name = kind + std::to_string(index);
    return v;
}

/// Every server: GPUs on one NVSwitch, each GPU on its NIC over PCIe. Returns the NIC
/// vertices in server-major order.
std::vector<uint32_t>
AddServers(const Ptr<ClusterTopology>& topo, const gpusim::ClusterSpec& s)
{
    const double nvlinkBps = s.nvlinkGBps * 8e9;
    const double pcieBps = s.pcieGBps * 8e9;
    const double nvLat = s.nvlinkLatencyUs * 1e-6;
    const double lat = s.linkLatencyUs * 1e-6;
    const uint32_t G = s.gpusPerServer;
    const uint32_t N = s.nicsPerServer;
    std::vector<uint32_t> nicVertex(s.TotalNics());
    for (uint32_t srv = 0; srv < s.servers; ++srv)
    {
        const std::string prefix = "s" + std::to_string(srv) + "/";
        TopoVertex sw;
        sw.type = TopoVertexType::NvSwitch;
        sw.server = srv;
        sw.name = prefix + "nvswitch";
        const uint32_t nvs = topo->AddVertex(sw);
        for (uint32_t n = 0; n < N; ++n)
        {
            TopoVertex nic;
            nic.type = TopoVertexType::Nic;
            nic.server = srv;
            nic.index = n;
            nic.name = prefix + "nic" + std::to_string(n);
            nicVertex[srv * N + n] = topo->AddVertex(nic);
        }
        for (uint32_t g = 0; g < G; ++g)
        {
            TopoVertex gpu;
            gpu.type = TopoVertexType::Gpu;
            gpu.server = srv;
            gpu.index = g;
            gpu.name = prefix + "gpu" + std::to_string(g);
            const uint32_t gv = topo->AddVertex(gpu);
            const uint32_t nic = nicVertex[srv * N + g * N / G];
            topo->AddDuplexLink(gv, nvs, nvlinkBps, nvLat, TopoLinkKind::NvLink);
            topo->AddDuplexLink(gv, nic, pcieBps, lat, TopoLinkKind::Pcie);
            topo->SetGpu(srv * G + g, gv, srv, nic);
        }
    }
    return nicVertex;
}

/// Every NIC on one switch.
void
AddSingleSwitch(const Ptr<ClusterTopology>& topo, const gpusim::ClusterSpec& s,
                const std::vector<uint32_t>& nicVertex, std::ostringstream& desc)
{
    const double nicBps = s.nicGbps * 1e9;
    const double lat = s.linkLatencyUs * 1e-6;
    const uint32_t sw = topo->AddVertex(MakeSwitch(1, 0, "switch"));
    for (uint32_t nic : nicVertex)
    {
        topo->AddDuplexLink(nic, sw, nicBps, lat, TopoLinkKind::Nic);
    }
    desc << ", 1 switch";
}

/// Leaves (by NIC order, or one per rail and group of servers) under a spine layer.
void
AddLeafSpine(const Ptr<ClusterTopology>& topo, const gpusim::ClusterSpec& s,
             const std::vector<uint32_t>& nicVertex, std::ostringstream& desc)
{
    const double nicBps = s.nicGbps * 1e9;
    const double lat = s.linkLatencyUs * 1e-6;
    const uint32_t N = s.nicsPerServer;
    const uint32_t totalNics = s.TotalNics();
    const bool rail = s.fabric == "rail";
    // Rail: one leaf per (group of nicsPerLeaf servers, NIC index).
    const uint32_t groups = rail ? CeilDiv(s.servers, s.nicsPerLeaf) : 0;
    const uint32_t nLeaves = rail ? groups * N : CeilDiv(totalNics, s.nicsPerLeaf);
    const uint32_t downlinks =
        rail ? std::min(s.nicsPerLeaf, s.servers) : std::min(s.nicsPerLeaf, totalNics);
    const uint32_t nSpines = SpineCount(nLeaves, downlinks, s.oversubscription);
    std::vector<uint32_t> leaves(nLeaves);
    for (uint32_t i = 0; i < nLeaves; ++i)
    {
        leaves[i] = topo->AddVertex(MakeSwitch(1, i, "leaf"));
    }
    for (uint32_t srv = 0; srv < s.servers; ++srv)
    {
        for (uint32_t n = 0; n < N; ++n)
        {
            const uint32_t j = srv * N + n;
            const uint32_t leaf = rail ? (srv / s.nicsPerLeaf) * N + n : j / s.nicsPerLeaf;
            topo->AddDuplexLink(nicVertex[j], leaves[leaf], nicBps, lat, TopoLinkKind::Nic);
        }
    }
    if (s.routing == "adaptive" && s.mergeAdaptiveSpines && nSpines > 0)
    {
        // Adaptive routing sends each packet to the least loaded of the equal uplinks, so the
        // spines share every flow: the spine layer acts as one switch whose port to each
        // leaf carries the leaf's whole uplink capacity (nSpines links). Per-flow hashing
        // (ecmp, dmodk) keeps the spines apart and can pile flows onto one link.
        const uint32_t spine = topo->AddVertex(MakeSwitch(2, 0, "spine"));
        for (uint32_t leaf : leaves)
        {
            topo->SetCables(
                topo->AddDuplexLink(leaf, spine, nicBps * nSpines, lat, TopoLinkKind::Fabric),
                nSpines);
        }
    }
    else
    {
        for (uint32_t p = 0; p < nSpines; ++p)
        {
            const uint32_t spine = topo->AddVertex(MakeSwitch(2, p, "spine"));
            for (uint32_t leaf : leaves)
            {
                topo->AddDuplexLink(leaf, spine, nicBps, lat, TopoLinkKind::Fabric);
            }
        }
    }
    desc << ", " << nLeaves << (nLeaves == 1 ? " leaf, " : " leaves, ") << nSpines
         << (nSpines == 1 ? " spine" : " spines");
    if (s.routing != "ecmp" && nSpines > 0)
    {
        desc << " (" << s.routing << " routing)";
    }
}

/// A k-ary fat tree with enough edge ports for every NIC.
void
AddFatTree(const Ptr<ClusterTopology>& topo, const gpusim::ClusterSpec& s,
           const std::vector<uint32_t>& nicVertex, std::ostringstream& desc)
{
    const double nicBps = s.nicGbps * 1e9;
    const double lat = s.linkLatencyUs * 1e-6;
    const uint32_t totalNics = s.TotalNics();
    uint32_t k = 2;
    while (uint64_t(k) * k * k / 4 < totalNics)
    {
        k += 2;
    }
    const uint32_t half = k / 2;
    std::vector<uint32_t> edges(k * half);
    std::vector<uint32_t> aggs(k * half);
    std::vector<uint32_t> cores(half * half);
    for (uint32_t i = 0; i < k * half; ++i)
    {
        edges[i] = topo->AddVertex(MakeSwitch(1, i, "edge"));
    }
    for (uint32_t i = 0; i < k * half; ++i)
    {
        aggs[i] = topo->AddVertex(MakeSwitch(2, i, "agg"));
    }
    for (uint32_t i = 0; i < half * half; ++i)
    {
        cores[i] = topo->AddVertex(MakeSwitch(3, i, "core"));
    }
    for (uint32_t j = 0; j < totalNics; ++j)
    {
        topo->AddDuplexLink(nicVertex[j], edges[j / half], nicBps, lat, TopoLinkKind::Nic);
    }
    for (uint32_t pod = 0; pod < k; ++pod)
    {
        for (uint32_t e = 0; e < half; ++e)
        {
            for (uint32_t a = 0; a < half; ++a)
            {
                topo->AddDuplexLink(edges[pod * half + e],
                                    aggs[pod * half + a],
                                    nicBps,
                                    lat,
                                    TopoLinkKind::Fabric);
            }
        }
        // Aggregation switch a of every pod reaches cores a*half .. a*half+half-1.
        for (uint32_t a = 0; a < half; ++a)
        {
            for (uint32_t c = 0; c < half; ++c)
            {
                topo->AddDuplexLink(aggs[pod * half + a],
                                    cores[a * half + c],
                                    nicBps,
                                    lat,
                                    TopoLinkKind::Fabric);
            }
        }
    }
    desc << ", k=" << k << " (" << edges.size() << " edges, " << aggs.size() << " aggs, "
         << cores.size() << " cores)";
}

} // namespace

GpuClusterHelper::GpuClusterHelper() = default;

void
GpuClusterHelper::SetSpec(const gpusim::ClusterSpec& spec)
{
    m_spec = spec;
}

const gpusim::ClusterSpec&
GpuClusterHelper::GetSpec() const
{
    return m_spec;
}

Ptr<ClusterTopology>
GpuClusterHelper::BuildTopology() const
{
    const gpusim::ClusterSpec& s = m_spec;
    gpusim::ValidateClusterSpec(s);
    auto topo = CreateObject<ClusterTopology>();
    const std::vector<uint32_t> nicVertex = AddServers(topo, s);
    std::ostringstream desc;
    desc << s.servers << " servers x " << s.gpusPerServer << " GPUs (" << s.gpuModel << "), "
         << s.fabric << " fabric, " << s.TotalNics() << " NICs @ " << s.nicGbps << " Gb/s";
    if (s.fabric == "single-switch")
    {
        AddSingleSwitch(topo, s, nicVertex, desc);
    }
    else if (s.fabric == "leaf-spine" || s.fabric == "rail")
    {
        AddLeafSpine(topo, s, nicVertex, desc);
    }
    else
    {
        AddFatTree(topo, s, nicVertex, desc);
    }
    topo->SetDescription(desc.str());
    topo->SetRouting(s.routing);
    topo->SetNcclCalibration(s.nccl);
    if (!s.fabricEvents.empty())
    {
        topo->SetFabricEvents(gpusim::ResolveFabricEvents(s.fabricEvents, *topo));
    }
    topo->SetRoutingConvergence(s.routingConvergence);
    NS_LOG_INFO("built " << desc.str() << ": " << topo->Vertices().size() << " vertices, "
                         << topo->Links().size() << " directed links");
    return topo;
}

NodeContainer
GpuClusterHelper::Create()
{
    Ptr<ClusterTopology> topo = BuildTopology();
    gpusim::GpuSpec gpu;
    gpusim::LookupGpuSpec(m_spec.gpuModel, gpu); // known: BuildTopology validated it
    NodeContainer nodes;
    for (uint32_t i = 0; i < topo->GetNGpus(); ++i)
    {
        auto node = CreateObject<GpuNode>();
        node->SetSpec(gpu);
        node->SetGpuIndex(i);
        node->SetServer(topo->ServerOf(i));
        node->SetLocalIndex(topo->LocalIndex(i));
        nodes.Add(node);
    }
    for (const gpusim::StragglerSpec& st : m_spec.stragglers)
    {
        // ValidateClusterSpec (BuildTopology) checked the index.
        Ptr<Node> node = nodes.Get(st.gpu);
        node->SetAttribute("SlowdownFactor", DoubleValue(st.factor));
        node->SetAttribute("SlowdownStart", TimeValue(st.at));
    }
    m_topology = topo;
    return nodes;
}

Ptr<ClusterTopology>
GpuClusterHelper::GetTopology() const
{
    return m_topology;
}

} // namespace ns3
