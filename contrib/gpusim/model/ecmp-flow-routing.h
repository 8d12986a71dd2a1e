/*
 * EcmpFlowRouting: load balancing over equal-cost paths for the packet backend's IPv4 fabric.
 *
 * Every node holds, per destination host, the list of equal-cost output interfaces (computed
 * by PacketBackend from the ClusterTopology) and picks one per packet according to its Mode:
 *  - ecmp (default): a hash of the packet's 5-tuple salted with the node: all packets of a
 *    connection take one path, different connections spread like hash-based switch ECMP;
 *  - dmodk: the destination host index mod the number of next hops (static, per destination);
 *  - spray: per-packet random choice (a per-node generator seeded by the salt: deterministic);
 *  - spray-rr: per-packet round-robin over the next hops, one counter per next-hop set;
 *  - flowlet: a flow (5-tuple) keeps its next hop while the gap between its packets stays below
 *    FlowletGap; a new flowlet picks a next hop at random or by least queued bytes;
 *  - adaptive: every packet goes to the next hop whose egress holds the fewest queued bytes
 *    (queue disc + device queue); ties go to the first in the list rotated by the flow hash.
 * Mainline ns-3 only offers per-packet random ECMP (Ipv4GlobalRouting RandomEcmpRouting).
 */
#ifndef GPUSIM_ECMP_FLOW_ROUTING_H
#define GPUSIM_ECMP_FLOW_ROUTING_H

#include "ns3/ipv4-address.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4-routing-helper.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{

class Ipv4;
class NetDevice;
class QueueDisc;
class QueueBase;

class EcmpFlowRouting : public Ipv4RoutingProtocol
{
  public:
    /// How a packet picks among the equal-cost next hops.
    enum Mode
    {
        ECMP,     //!< per-flow 5-tuple hash
        DMODK,    //!< destination host mod k
        SPRAY,    //!< per-packet random
        SPRAY_RR, //!< per-packet round-robin
        FLOWLET,  //!< per flowlet (FlowletGap), FlowletPick
        ADAPTIVE  //!< per packet, least queued bytes
    };

    /// How a new flowlet picks its next hop.
    enum FlowletPick
    {
        FLOWLET_RANDOM,      //!< LetFlow: uniformly at random
        FLOWLET_LEAST_LOADED //!< the egress with the fewest queued bytes
    };

    static TypeId GetTypeId();
    EcmpFlowRouting();
    ~EcmpFlowRouting() override;

    /// Mode by name: ecmp, dmodk, spray, spray-rr, flowlet, adaptive (std::invalid_argument
    /// for anything else).
    static Mode ParseMode(const std::string& name);
    static std::string ModeName(Mode mode);
    /// The names ParseMode accepts, comma separated.
    static std::string KnownModes();
    void SetMode(Mode mode);
    Mode GetMode() const;
    /// Bytes waiting in the egress of an interface: its queue disc plus the device queue.
    uint32_t QueuedBytes(uint32_t interface);
    /// New flowlets started at this node (flowlet mode; a flow's first packet starts one).
    uint64_t GetFlowletCount() const;

    /// Host h (0-based) owns address first + h; only hosts are routable destinations.
    void SetHostAddressing(Ipv4Address first, uint32_t nHosts);
    /// Equal-cost output interfaces (Ipv4 interface indices) towards host h.
    void SetNextHops(uint32_t host, const std::vector<uint32_t>& interfaces);
    /// Equal-cost output interfaces towards host h (empty when unreachable or not set).
    std::vector<uint32_t> GetNextHops(uint32_t host) const;
    /// Marks this node as host h (its own address: delivered locally without a lookup).
    void SetLocalHost(uint32_t host);
    /// Per-node hash salt, so that consecutive switches do not make correlated choices.
    void SetSalt(uint64_t salt);

    /// The 5-tuple hash (before salting); ports are 0 for packets without them.
    static uint64_t HashFiveTuple(uint32_t src, uint32_t dst, uint8_t proto, uint16_t sport,
                                  uint16_t dport);
    /// The output interface this node uses for a 5-tuple, or UINT32_MAX if unroutable.
    uint32_t PickInterface(Ipv4Address src, Ipv4Address dst, uint8_t proto, uint16_t sport,
                           uint16_t dport) const;

    uint64_t GetForwardedPackets() const; //!< packets forwarded (not originated) by this node

    // Ipv4RoutingProtocol
    Ptr<Ipv4Route> RouteOutput(Ptr<Packet> p, const Ipv4Header& header, Ptr<NetDevice> oif,
                               Socket::SocketErrno& sockerr) override;
    bool RouteInput(Ptr<const Packet> p, const Ipv4Header& header, Ptr<const NetDevice> idev,
                    UnicastForwardCallback ucb, MulticastForwardCallback mcb,
                    LocalDeliverCallback lcb, ErrorCallback ecb) override;
    void NotifyInterfaceUp(uint32_t interface) override;
    void NotifyInterfaceDown(uint32_t interface) override;
    void NotifyAddAddress(uint32_t interface, Ipv4InterfaceAddress address) override;
    void NotifyRemoveAddress(uint32_t interface, Ipv4InterfaceAddress address) override;
    void SetIpv4(Ptr<Ipv4> ipv4) override;
    void PrintRoutingTable(Ptr<OutputStreamWrapper> stream,
                           Time::Unit unit = Time::S) const override;

    /// Signature of the PathChoice trace: (interface, header, source port, destination port).
    typedef void (*PathChoiceTracedCallback)(uint32_t interface, const Ipv4Header& header,
                                             uint16_t sport, uint16_t dport);

  protected:
    void DoDispose() override;

  private:
    /// Route object for an output interface (built once, shared by all packets).
    Ptr<Ipv4Route> RouteVia(uint32_t interface);
    /// Picks among the candidates for `host` by the salted 5-tuple hash of a packet.
    uint32_t Choose(uint32_t host, const Ipv4Header& header, Ptr<const Packet> p,
                    Ipv4Address src);
    /// Equal-cost output interfaces towards host (< m_nHosts).
    const std::vector<uint32_t>& HopsOf(uint32_t host) const
    {
        return m_hopSets[m_setOf[host]];
    }
    /// This node's source address for locally originated packets (interface 1).
    Ipv4Address LocalSource();
    /// Ipv4 interface of an input device (the last one asked is remembered: a host has one).
    int32_t InterfaceOf(Ptr<const NetDevice> dev);

    /// Per-packet choice of the load-balancing modes other than ecmp and dmodk.
    uint32_t ChooseDynamic(const std::vector<uint32_t>& c, uint16_t set, uint64_t flowHash);
    /// The candidate with the fewest queued bytes; ties: first in the list rotated by `hash`.
    uint32_t LeastLoaded(const std::vector<uint32_t>& c, uint64_t hash);
    /// Next value of the node's deterministic generator (splitmix64 seeded by the salt).
    uint64_t NextRandom();

    /// A flow's current flowlet.
    struct Flowlet
    {
        Time last;              //!< arrival of the flow's previous packet
        uint32_t interface = 0; //!< next hop of the current flowlet
    };

    Mode m_mode = ECMP;
    FlowletPick m_flowletPick = FLOWLET_RANDOM;
    Time m_flowletGap;                            //!< FlowletGap attribute
    uint64_t m_rng = 0;                           //!< generator state (spray, flowlets)
    std::vector<uint32_t> m_rr;                   //!< per next-hop set: round-robin position
    std::unordered_map<uint64_t, Flowlet> m_flowlets; //!< by flow hash
    uint64_t m_nFlowlets = 0;
    /// Per interface: its egress queue disc and device queue (resolved on first use).
    std::vector<Ptr<QueueDisc>> m_egressQdisc;
    std::vector<Ptr<QueueBase>> m_egressQueue;
    std::vector<bool> m_egressResolved;

    Ptr<Ipv4> m_ipv4;                           //!< this node's IPv4 stack
    uint32_t m_firstHost = 0;                   //!< address of host 0 (host order)
    uint32_t m_nHosts = 0;                      //!< routable hosts
    // Next hops, per host: an index into the node's distinct interface sets. A node has few
    // distinct sets (one per downlink plus the uplinks), so the per-host table is 2 bytes an
    // entry instead of a vector each: the tables of all nodes grow as nodes x hosts.
    std::vector<std::vector<uint32_t>> m_hopSets; //!< distinct sets; [0] is the empty set
    std::vector<uint16_t> m_setOf;                //!< per host: index in m_hopSets
    Ipv4Address m_localSource;                  //!< address of interface 1 (set on first use)
    bool m_localSourceSet = false;
    const NetDevice* m_lastInDev = nullptr;     //!< InterfaceOf's remembered device
    int32_t m_lastInIface = -1;                 //!< ... and its interface
    std::vector<Ptr<Ipv4Route>> m_routeCache;   //!< per interface: prebuilt route
    uint64_t m_salt = 0;                        //!< per-node hash salt
    uint32_t m_localHost = UINT32_MAX;          //!< host index of this node, if a host
    uint64_t m_forwarded = 0;                   //!< packets forwarded
    TracedCallback<uint32_t, const Ipv4Header&, uint16_t, uint16_t> m_pathChoice; //!< per packet
};

/// Installs EcmpFlowRouting through InternetStackHelper::SetRoutingHelper (tables are filled
/// in afterwards by whoever knows the topology).
class EcmpFlowRoutingHelper : public Ipv4RoutingHelper
{
  public:
    EcmpFlowRoutingHelper* Copy() const override;
    Ptr<Ipv4RoutingProtocol> Create(Ptr<Node> node) const override;
};

} // namespace ns3

#endif // GPUSIM_ECMP_FLOW_ROUTING_H
