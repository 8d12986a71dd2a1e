/*
 * ClusterTopology: the directed-link graph of a GPU cluster (GPUs, NVSwitches, NICs,
 * fabric switches). Built once by GpuClusterHelper; read by every network backend.
 */
#ifndef GPUSIM_CLUSTER_TOPOLOGY_H
#define GPUSIM_CLUSTER_TOPOLOGY_H

#include "ns3/fabric-event.h"
#include "ns3/nccl-calibration.h"
#include "ns3/object.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{

enum class TopoVertexType : uint8_t
{
    Gpu,
    NvSwitch,
    Nic,
    Switch,
};

struct TopoVertex
{
    TopoVertexType type = TopoVertexType::Switch;
    uint32_t server = 0; //!< server index (GPU, NvSwitch, Nic); 0 for fabric switches
    uint32_t index = 0;  //!< local index (GPU/NIC within server; switch id within its tier)
    uint16_t tier = 0;   //!< fabric tier for switches: 1 = leaf/edge, 2 = spine/agg, 3 = core
    std::string name;
};

enum class TopoLinkKind : uint8_t
{
    NvLink, //!< GPU <-> NVSwitch inside a server
    Pcie,   //!< GPU <-> NIC
    Nic,    //!< NIC <-> first fabric switch
    Fabric, //!< switch <-> switch
};

/// One direction of a physical link.
struct TopoLink
{
    uint32_t from = 0;
    uint32_t to = 0;
    double bitsPerSec = 0;
    double latencySec = 0;
    TopoLinkKind kind = TopoLinkKind::Fabric;
    uint32_t reverse = 0; //!< id of the opposite direction
    /// Parallel cables this link stands for: adaptive routing's merged spine port of a leaf
    /// (GpuClusterHelper) is one link of nSpines cables; a fault on one cable takes 1/n of it.
    uint32_t cables = 1;
};

class ClusterTopology : public Object
{
  public:
    static TypeId GetTypeId();
    ClusterTopology();

    // ---- construction (used by GpuClusterHelper) ----
    uint32_t AddVertex(const TopoVertex& v);
    /// Adds both directions; returns the id of the from->to direction (reverse = id + 1).
    uint32_t AddDuplexLink(uint32_t a, uint32_t b, double bitsPerSec, double latencySec,
                           TopoLinkKind kind);
    /// Registers GPU number `gpu` (global rank order = server-major) at vertex v on server s.
    /// The local index is the GPU vertex's `index`; nicVertex may be UINT32_MAX (no NIC).
    void SetGpu(uint32_t gpu, uint32_t vertex, uint32_t server, uint32_t nicVertex);
    void SetDescription(const std::string& d);
    /// How a switch picks among equal-cost uplinks: "ecmp" (per-flow hash, Ethernet ECMP) or
    /// "dmodk" (destination-mod-k, InfiniBand's fat-tree routing: the destination NIC's
    /// position under its leaf picks the uplink, so no two destinations under one leaf share a
    /// spine downlink). The load-balancing names "spray", "spray-rr", "flowlet" and "adaptive"
    /// are kept for the backends (GetRouting: per-packet choices in the packet backend,
    /// splitting in the flow backend); Route() itself then hashes per flow as with "ecmp".
    /// Throws std::invalid_argument for anything else.
    void SetRouting(const std::string& routing);
    /// Marks a duplex link (either direction's id) as a bundle of `cables` parallel cables.
    void SetCables(uint32_t link, uint32_t cables);
    /// The name given to SetRouting ("ecmp" by default).
    const std::string& GetRouting() const;
    /// The NCCL model's calibration for this cluster (GpuClusterHelper copies the spec's).
    void SetNcclCalibration(const gpusim::NcclCalibration& c);
    const gpusim::NcclCalibration& GetNcclCalibration() const;

    // ---- queries ----
    uint32_t GetNGpus() const;
    uint32_t GetNServers() const;
    uint32_t GpuVertex(uint32_t gpu) const;
    uint32_t ServerOf(uint32_t gpu) const;
    uint32_t NicOf(uint32_t gpu) const; //!< NIC vertex used by this GPU for inter-server traffic
    uint32_t LocalIndex(uint32_t gpu) const; //!< GPU index inside its server
    /// The GPU of srcGpu's server whose NIC has the local index of dstGpu's NIC (on a rail
    /// fabric: the NIC on dstGpu's rail); srcGpu itself when its own NIC has that index, when
    /// both GPUs share a server or when no GPU of its server uses such a NIC.
    uint32_t RailPeer(uint32_t srcGpu, uint32_t dstGpu) const;
    const std::vector<TopoVertex>& Vertices() const;
    const std::vector<TopoLink>& Links() const;
    const std::vector<uint32_t>& OutLinks(uint32_t vertex) const;
    const std::vector<uint32_t>& InLinks(uint32_t vertex) const; //!< in-link ids per vertex
    const std::string& GetDescription() const;

    /// Endpoint ids at or above this value name an NVSwitch (kSwitchEndpoint + vertex) instead
    /// of a GPU: NVLink SHARP transfers go from a GPU to its NVSwitch (in-switch reduction) and
    /// from the NVSwitch to a GPU (multicast). Route, RouteInto and ServerOf accept them.
    static constexpr uint32_t kSwitchEndpoint = 0x80000000u;
    static bool IsSwitchEndpoint(uint32_t endpoint);
    /// The endpoint of the NVSwitch that GPU `gpu`'s first NVLink reaches; throws
    /// std::runtime_error when the GPU has no NVLink to an NVSwitch.
    uint32_t NvSwitchEndpoint(uint32_t gpu) const;

    /// Directed link ids from srcGpu to dstGpu. Same server: over NVLink/NVSwitch. Otherwise
    /// GPU -> its NIC -> fabric shortest path -> dst NIC -> dst GPU. Among equal-cost next hops
    /// the choice is a deterministic hash of flowHash (per-flow ECMP). Empty if src == dst.
    /// GPUs of one server without an NVLink path between them use the NIC path.
    /// Throws std::runtime_error if no path exists.
    std::vector<uint32_t> Route(uint32_t srcGpu, uint32_t dstGpu, uint64_t flowHash) const;
    /// Same as Route, writing into `route` (reuses its capacity).
    void RouteInto(uint32_t srcGpu,
                   uint32_t dstGpu,
                   uint64_t flowHash,
                   std::vector<uint32_t>& route) const;
    /// Same as RouteInto over the links whose `down` entry (indexed by link id) is 0: shortest
    /// paths of the surviving fabric, ECMP over the surviving next hops (a failed link's
    /// routing after convergence). Not cached; throws std::runtime_error if no path is left.
    void RouteAvoiding(uint32_t srcGpu,
                       uint32_t dstGpu,
                       uint64_t flowHash,
                       const std::vector<uint8_t>& down,
                       std::vector<uint32_t>& route) const;

    /// Every shortest fabric path from srcGpu's NIC to dstGpu's NIC (through the switch by which
    /// Route() enters the destination NIC), as complete routes like Route()'s, at most
    /// `maxPaths` of them, in a deterministic order (depth first, links in id order). One
    /// route (Route()'s) for GPUs of one server, NVSwitch endpoints or a NIC shared by both.
    std::vector<std::vector<uint32_t>> EqualCostRoutes(uint32_t srcGpu,
                                                       uint32_t dstGpu,
                                                       uint32_t maxPaths = 64) const;

    /// The fabric's scheduled failures and degradations (GpuClusterHelper resolves the spec's;
    /// GpuWorkload hands them to its backend). Empty: nothing ever fails.
    void SetFabricEvents(std::vector<gpusim::FabricEvent> events);
    const std::vector<gpusim::FabricEvent>& GetFabricEvents() const;
    /// The routing convergence delay the cluster's faults specify (negative: the backend's
    /// RoutingConvergence attribute applies).
    void SetRoutingConvergence(Time delay);
    Time GetRoutingConvergence() const;

    /// The ECMP hash both backends use for a transfer (mixes flowKey with the GPU pair).
    static uint64_t HashFlow(uint64_t flowKey, uint32_t srcGpu, uint32_t dstGpu);

    /// Sum of link latencies along a route (seconds).
    double PathLatency(const std::vector<uint32_t>& route) const;
    /// Minimum bandwidth along a route (bits/s); +infinity for an empty route.
    double PathBottleneck(const std::vector<uint32_t>& route) const;

  private:
    const std::vector<uint32_t>& DistancesTo(uint32_t dstVertex) const;
    /// Hop distances to dstVertex over the links not marked `down` (null: every link).
    void ReverseBfs(uint32_t dstVertex,
                    const std::vector<uint8_t>* down,
                    std::vector<uint32_t>& dist) const;
    /// One of the (parallel) links from -> to chosen by flowHash, skipping links marked in
    /// `down` (when not null); UINT32_MAX if none.
    uint32_t PickLink(uint32_t from,
                      uint32_t to,
                      uint64_t flowHash,
                      const std::vector<uint8_t>* down = nullptr) const;
    /// RouteInto / RouteAvoiding (down null: every link is up).
    void RouteImpl(uint32_t srcGpu,
                   uint32_t dstGpu,
                   uint64_t flowHash,
                   const std::vector<uint8_t>* down,
                   std::vector<uint32_t>& route) const;
    /// Throws std::runtime_error for an unregistered GPU number (or unknown switch endpoint).
    void CheckGpu(uint32_t gpu) const;
    /// Route to or from an NVSwitch endpoint (one NVLink hop).
    void SwitchRouteInto(uint32_t src, uint32_t dst, uint64_t flowHash,
                         std::vector<uint32_t>& route) const;

    std::vector<TopoVertex> m_vertices;
    std::vector<TopoLink> m_links;
    std::vector<std::vector<uint32_t>> m_out; //!< out-link ids per vertex
    std::vector<std::vector<uint32_t>> m_in;  //!< in-link ids per vertex
    std::vector<uint32_t> m_gpuVertex;
    std::vector<uint32_t> m_gpuServer;
    std::vector<uint32_t> m_gpuNic;
    std::vector<uint32_t> m_gpuLocal;
    uint32_t m_nServers = 0;
    std::string m_description;
    bool m_dmodk = false; //!< SetRouting("dmodk")
    std::string m_routing = "ecmp"; //!< SetRouting's name
    gpusim::NcclCalibration m_nccl;
    std::vector<gpusim::FabricEvent> m_fabricEvents; //!< SetFabricEvents
    Time m_convergence = Time(-1);                    //!< SetRoutingConvergence
    //! BFS hop distances over switches/NICs to a destination vertex, cached lazily. The key is
    //! the destination NIC's only switch when it has one (one entry per leaf), else the NIC.
    mutable std::unordered_map<uint32_t, std::vector<uint32_t>> m_distCache;
};

} // namespace ns3

#endif // GPUSIM_CLUSTER_TOPOLOGY_H
