#include "ns3/packet-transport.h"

#include "ns3/network-backend.h"
#include "ns3/transfer-owner-tag.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(PacketTransport);

TypeId
PacketTransport::GetTypeId()
{
    static TypeId tid = TypeId("ns3::PacketTransport").SetParent<Object>().SetGroupName("Gpusim");
    return tid;
}

PacketTransport::~PacketTransport() = default;

void
PacketTransport::DoDispose()
{
    m_message = nullptr;
    m_failure = nullptr;
    Object::DoDispose();
}

void
PacketTransport::SetTagOwners(bool on)
{
    m_tagOwners = on;
}

void
PacketTransport::TagOwner(const Ptr<Packet>& p, uint64_t id) const
{
    if (m_tagOwners)
    {
        p->AddByteTag(TransferOwnerTag(NetworkBackend::OwnerOf(id)));
    }
}

void
PacketTransport::SetMessageCallback(MessageCallback cb)
{
    m_message = std::move(cb);
}

void
PacketTransport::SetFailureCallback(FailureCallback cb)
{
    m_failure = std::move(cb);
}

void
PacketTransport::NotifyMessage(uint64_t id) const
{
    if (m_message)
    {
        m_message(id);
    }
}

void
PacketTransport::NotifyFailure(const ConnectionKey& key) const
{
    if (m_failure)
    {
        m_failure(key);
    }
}

void
PacketTransport::Expect(const ConnectionKey&, uint32_t, uint32_t, uint64_t, uint64_t)
{
}

} // namespace ns3
