#include "ns3/rdma-header.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(RdmaHeader);

TypeId
RdmaHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RdmaHeader")
                            .SetParent<Header>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<RdmaHeader>();
    return tid;
}

TypeId
RdmaHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

void
RdmaHeader::Print(std::ostream& os) const
{
    static const char* names[] = {"?", "DATA", "ACK", "NACK", "CNP"};
    os << names[opcode <= CNP ? opcode : 0] << " qp=" << qp << " psn=" << psn
       << " msg=" << msgId << " flags=" << int(flags) << " hops=" << hops.size();
}

uint32_t
RdmaHeader::Slots() const
{
    return (flags & WANT_INT) ? kMaxHops : uint32_t(hops.size());
}

uint32_t
RdmaHeader::GetSerializedSize() const
{
    return kBaseBytes + kHopBytes * Slots();
}

void
RdmaHeader::Serialize(Buffer::Iterator i) const
{
    i.WriteU8(opcode);
    i.WriteU8(flags);
    i.WriteU8(uint8_t(hops.size()));
    i.WriteU8(0);
    i.WriteHtonU32(qp);
    i.WriteHtonU32(psn);
    i.WriteHtonU64(msgId);
    i.WriteHtonU64(tsNs);
    for (const IntHop& h : hops)
    {
        i.WriteHtonU64(h.bitsPerSec);
        i.WriteHtonU64(h.tsNs);
        i.WriteHtonU64(h.txBytes);
        i.WriteHtonU32(h.qlenBytes);
    }
    for (uint32_t k = uint32_t(hops.size()); k < Slots(); ++k)
    {
        i.WriteU8(0, kHopBytes); // reserved, not yet stamped
    }
}

uint32_t
RdmaHeader::Deserialize(Buffer::Iterator start)
{
    Buffer::Iterator i = start;
    opcode = i.ReadU8();
    flags = i.ReadU8();
    const uint8_t n = i.ReadU8();
    i.ReadU8();
    qp = i.ReadNtohU32();
    psn = i.ReadNtohU32();
    msgId = i.ReadNtohU64();
    tsNs = i.ReadNtohU64();
    hops.resize(n);
    for (IntHop& h : hops)
    {
        h.bitsPerSec = i.ReadNtohU64();
        h.tsNs = i.ReadNtohU64();
        h.txBytes = i.ReadNtohU64();
        h.qlenBytes = i.ReadNtohU32();
    }
    for (uint32_t k = n; k < Slots(); ++k)
    {
        i.Next(kHopBytes);
    }
    return i.GetDistanceFrom(start);
}

} // namespace ns3
