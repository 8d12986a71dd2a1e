#include "ns3/rdma-port-demux.h"

#include "ns3/ipv4-interface.h"
#include "ns3/ipv4-l3-protocol.h"
#include "ns3/ipv6-interface.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/udp-l4-protocol.h"

#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaPortDemux");
NS_OBJECT_ENSURE_REGISTERED(RdmaPortDemux);

TypeId
RdmaPortDemux::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaPortDemux")
                            .SetParent<IpL4Protocol>()
                            .SetGroupName("Gpusim");
    return tid;
}

Ptr<RdmaPortDemux>
RdmaPortDemux::Install(Ptr<Node> node, Claim claim)
{
    Ptr<Ipv4L3Protocol> ipv4 = node->GetObject<Ipv4L3Protocol>();
    Ptr<UdpL4Protocol> udp = node->GetObject<UdpL4Protocol>();
    if (!ipv4 || !udp)
    {
        throw std::logic_error("RdmaPortDemux: node " + std::to_string(node->GetId()) +
                               " has no IPv4 and UDP stack");
    }
    Ptr<RdmaPortDemux> demux = CreateObject<RdmaPortDemux>();
    demux->m_udp = udp;
    demux->m_claim = claim;
    ipv4->Insert(demux); // replaces UDP in the protocol-17 slot; UDP itself stays aggregated
    return demux;
}

int
RdmaPortDemux::GetProtocolNumber() const
{
    return UdpL4Protocol::PROT_NUMBER;
}

enum IpL4Protocol::RxStatus
RdmaPortDemux::Receive(Ptr<Packet> p,
                       const Ipv4Header& header,
                       Ptr<Ipv4Interface> incomingInterface)
{
    // The checksum test of UdpL4Protocol::Receive (ns-3 3.37), before any socket sees it.
    UdpHeader udp;
    if (Node::ChecksumEnabled())
    {
        udp.EnableChecksums();
    }
    udp.InitializeChecksum(header.GetSource(), header.GetDestination(), UdpL4Protocol::PROT_NUMBER);
    p->PeekHeader(udp);
    if (!udp.IsChecksumOk())
    {
        return IpL4Protocol::RX_CSUM_FAILED;
    }
    if (!m_claim.IsNull() && m_claim(p, header, udp))
    {
        return IpL4Protocol::RX_OK;
    }
    return m_udp->Receive(p, header, incomingInterface);
}

enum IpL4Protocol::RxStatus
RdmaPortDemux::Receive(Ptr<Packet> p,
                       const Ipv6Header& header,
                       Ptr<Ipv6Interface> incomingInterface)
{
    return m_udp->Receive(p, header, incomingInterface);
}

void
RdmaPortDemux::ReceiveIcmp(Ipv4Address icmpSource,
                           uint8_t icmpTtl,
                           uint8_t icmpType,
                           uint8_t icmpCode,
                           uint32_t icmpInfo,
                           Ipv4Address payloadSource,
                           Ipv4Address payloadDestination,
                           const uint8_t payload[8])
{
    m_udp->ReceiveIcmp(icmpSource, icmpTtl, icmpType, icmpCode, icmpInfo, payloadSource,
                       payloadDestination, payload);
}

void
RdmaPortDemux::SetDownTarget(IpL4Protocol::DownTargetCallback cb)
{
    m_udp->SetDownTarget(cb);
}

void
RdmaPortDemux::SetDownTarget6(IpL4Protocol::DownTargetCallback6 cb)
{
    m_udp->SetDownTarget6(cb);
}

IpL4Protocol::DownTargetCallback
RdmaPortDemux::GetDownTarget() const
{
    return m_udp->GetDownTarget();
}

IpL4Protocol::DownTargetCallback6
RdmaPortDemux::GetDownTarget6() const
{
    return m_udp->GetDownTarget6();
}

void
RdmaPortDemux::DoDispose()
{
    m_udp = nullptr;
    m_claim = Claim();
    IpL4Protocol::DoDispose();
}

} // namespace ns3
