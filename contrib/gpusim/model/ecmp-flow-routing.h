/*
 * EcmpFlowRouting: per-flow ECMP for the packet backend's IPv4 fabric.
 *
 * Mainline ns-3 only offers per-packet random ECMP (Ipv4GlobalRouting RandomEcmpRouting), which
 * reorders TCP. Here every node holds, per destination host, the list of equal-cost output
 * interfaces (computed by PacketBackend from the ClusterTopology) and picks one by a hash of the
 * packet's 5-tuple salted with the node: all packets of a connection take one path, different
 * connections spread like on a real switch with hash-based ECMP.
 */
#ifndef GPUSIM_ECMP_FLOW_ROUTING_H
#define GPUSIM_ECMP_FLOW_ROUTING_H

#include "ns3/ipv4-address.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4-routing-helper.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <vector>

namespace ns3
{

class Ipv4;

class EcmpFlowRouting : public Ipv4RoutingProtocol
{
  public:
    static TypeId GetTypeId();
    EcmpFlowRouting();
    ~EcmpFlowRouting() override;

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
