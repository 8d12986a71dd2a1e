#include "ns3/pfc-frame.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(PfcFrameHeader);
NS_OBJECT_ENSURE_REGISTERED(PfcIngressTag);

TypeId
PfcFrameHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::PfcFrameHeader")
                            .SetParent<Header>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<PfcFrameHeader>();
    return tid;
}

TypeId
PfcFrameHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

void
PfcFrameHeader::Print(std::ostream& os) const
{
    os << (pause ? "PAUSE" : "RESUME") << " priority " << int(priority);
}

uint32_t
PfcFrameHeader::GetSerializedSize() const
{
    return 4;
}

void
PfcFrameHeader::Serialize(Buffer::Iterator i) const
{
    i.WriteU8(0x01); // opcode 0x0101: PFC, as in 802.1Qbb
    i.WriteU8(priority);
    i.WriteHtonU16(pause ? 0xffff : 0);
}

uint32_t
PfcFrameHeader::Deserialize(Buffer::Iterator start)
{
    Buffer::Iterator i = start;
    i.ReadU8();
    priority = i.ReadU8();
    pause = i.ReadNtohU16() != 0;
    return 4;
}

TypeId
PfcIngressTag::GetTypeId()
{
    static TypeId tid = TypeId("ns3::PfcIngressTag")
                            .SetParent<Tag>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<PfcIngressTag>();
    return tid;
}

TypeId
PfcIngressTag::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
PfcIngressTag::GetSerializedSize() const
{
    return 4;
}

void
PfcIngressTag::Serialize(TagBuffer i) const
{
    i.WriteU32(port);
}

void
PfcIngressTag::Deserialize(TagBuffer i)
{
    port = i.ReadU32();
}

void
PfcIngressTag::Print(std::ostream& os) const
{
    os << "ingress=" << port;
}

} // namespace ns3
