#include "ns3/network-backend.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(NetworkBackend);

TypeId
NetworkBackend::GetTypeId()
{
    static TypeId tid = TypeId("ns3::NetworkBackend").SetParent<Object>().SetGroupName("Gpusim");
    return tid;
}

NetworkBackend::~NetworkBackend() = default;

} // namespace ns3
