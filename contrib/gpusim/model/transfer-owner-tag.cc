#include "ns3/transfer-owner-tag.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(TransferOwnerTag);

TypeId
TransferOwnerTag::GetTypeId()
{
    static TypeId tid = TypeId("ns3::TransferOwnerTag")
                            .SetParent<Tag>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<TransferOwnerTag>();
    return tid;
}

TypeId
TransferOwnerTag::GetInstanceTypeId() const
{
    return GetTypeId();
}

TransferOwnerTag::TransferOwnerTag(uint32_t owner)
    : m_owner(owner)
{
}

uint32_t
TransferOwnerTag::GetOwner() const
{
    return m_owner;
}

uint32_t
TransferOwnerTag::GetSerializedSize() const
{
    return 4;
}

void
TransferOwnerTag::Serialize(TagBuffer buf) const
{
    buf.WriteU32(m_owner);
}

void
TransferOwnerTag::Deserialize(TagBuffer buf)
{
    m_owner = buf.ReadU32();
}

void
TransferOwnerTag::Print(std::ostream& os) const
{
    os << "owner=" << m_owner;
}

} // namespace ns3
