#include "ns3/network-backend.h"

#include "ns3/json-writer.h"

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

void
NetworkBackend::StartStreamedTransfer(uint64_t id, uint32_t srcGpu, uint32_t dstGpu,
                                      uint64_t bytes, uint64_t flowKey, DeliveredCallback done)
{
    StartTransfer(id, srcGpu, dstGpu, bytes, flowKey, std::move(done));
}

std::string
NetworkBackend::StatsJson() const
{
    gpusim::JsonWriter j;
    j.BeginObject().Key("backend").String(GetName());
    j.Key("delivered").Uint(GetDeliveredCount()).Key("in_flight").Uint(InFlight().size());
    j.EndObject();
    return j.Take();
}

void
NetworkBackend::WriteTraceCounters(gpusim::JsonWriter& /*w*/) const
{
}

} // namespace ns3
