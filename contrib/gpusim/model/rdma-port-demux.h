/*
 * RdmaPortDemux: IP protocol 17 on a host that runs RoCEv2 queue pairs. The transport's UDP
 * datagrams go straight to it by destination port; everything else goes to ns-3's UDP.
 */
#ifndef GPUSIM_RDMA_PORT_DEMUX_H
#define GPUSIM_RDMA_PORT_DEMUX_H

#include "ns3/callback.h"
#include "ns3/ip-l4-protocol.h"
#include "ns3/udp-header.h"

namespace ns3
{

class Node;
class UdpL4Protocol;

/**
 * \ingroup gpusim
 * Why: ns-3's UDP finds a datagram's socket by scanning every socket of the node
 * (Ipv4EndPointDemux::Lookup is a list walk). RoCEv2 gives each queue pair its own UDP source
 * port, i.e. its own socket, so an all-to-all paid that scan, which grows with the number of
 * peers, on every packet and every ACK. This demux takes the node's protocol-17 slot, peeks the
 * UDP header (checking its checksum as ns-3's UDP does) and asks the transport whether it owns
 * the destination port; the transport then consumes the datagram exactly as its socket
 * callbacks did. Datagrams nobody claims go to ns-3's UdpL4Protocol unchanged.
 */
class RdmaPortDemux : public IpL4Protocol
{
  public:
    /// Offered every datagram with its UDP header still on; returns true if it consumed it.
    using Claim = Callback<bool, Ptr<Packet>, const Ipv4Header&, const UdpHeader&>;

    static TypeId GetTypeId();

    /// Puts a demux in `node`'s protocol-17 slot, in front of its UdpL4Protocol.
    static Ptr<RdmaPortDemux> Install(Ptr<Node> node, Claim claim);

    int GetProtocolNumber() const override;
    enum IpL4Protocol::RxStatus Receive(Ptr<Packet> p,
                                        const Ipv4Header& header,
                                        Ptr<Ipv4Interface> incomingInterface) override;
    enum IpL4Protocol::RxStatus Receive(Ptr<Packet> p,
                                        const Ipv6Header& header,
                                        Ptr<Ipv6Interface> incomingInterface) override;
    void ReceiveIcmp(Ipv4Address icmpSource,
                     uint8_t icmpTtl,
                     uint8_t icmpType,
                     uint8_t icmpCode,
                     uint32_t icmpInfo,
                     Ipv4Address payloadSource,
                     Ipv4Address payloadDestination,
                     const uint8_t payload[8]) override;
    void SetDownTarget(IpL4Protocol::DownTargetCallback cb) override;
    void SetDownTarget6(IpL4Protocol::DownTargetCallback6 cb) override;
    IpL4Protocol::DownTargetCallback GetDownTarget() const override;
    IpL4Protocol::DownTargetCallback6 GetDownTarget6() const override;

  protected:
    void DoDispose() override;

  private:
    Ptr<UdpL4Protocol> m_udp; //!< the node's own UDP: every datagram not claimed
    Claim m_claim;
};

} // namespace ns3

#endif // GPUSIM_RDMA_PORT_DEMUX_H
