#include "ns3/packet-transport.h"

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

} // namespace ns3
