#include "ns3/network-backend.h"

#include "ns3/json-writer.h"
#include "ns3/simulator.h"

#include <stdexcept>

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

uint32_t
NetworkBackend::AcquireOwner()
{
    if (m_owners == 0)
    {
        // Owners are per simulation: a backend reused after Simulator::Destroy() starts again
        // at 0 (the Ptr keeps the backend alive until then).
        Ptr<NetworkBackend> self(this);
        Simulator::ScheduleDestroy([self]() { self->m_owners = 0; });
    }
    if (m_owners >= (1u << (64 - kOwnerShift)) - 1)
    {
        throw std::runtime_error("too many jobs on one network backend");
    }
    return m_owners++;
}

uint32_t
NetworkBackend::GetNOwners() const
{
    return m_owners;
}

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
