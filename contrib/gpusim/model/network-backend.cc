#include "ns3/network-backend.h"

#include "ns3/json-writer.h"
#include "ns3/simulator.h"

#include <stdexcept>

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("NetworkBackend");
NS_OBJECT_ENSURE_REGISTERED(NetworkBackend);

TypeId
NetworkBackend::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::NetworkBackend")
            .SetParent<Object>()
            .SetGroupName("Gpusim")
            .AddAttribute("TransportTimeout",
                          "How long a transfer with no path left keeps retrying before it "
                          "fails (the job then aborts, as NCCL does on ncclRemoteError). "
                          "Default: NCCL's InfiniBand transport with its defaults "
                          "NCCL_IB_TIMEOUT=20 and NCCL_IB_RETRY_CNT=7: the queue pair gives up "
                          "after 7 retries of 4.096 us x 2^20 = 4.29 s each, 8 x 4.29 s = "
                          "34.4 s. A path back within it (a link that comes up again) resumes "
                          "the transfer.",
                          TimeValue(MicroSeconds(4.096 * 1048576 * 8)),
                          MakeTimeAccessor(&NetworkBackend::m_transportTimeout),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("RoutingConvergence",
                          "After a link goes down (or comes back up), how long until routing "
                          "avoids it (uses it again); transfers routed over a dead link make "
                          "no progress meanwhile. 0: the switches prune the dead member from "
                          "their ECMP groups at once (hardware fast failover on loss of "
                          "signal); a BGP fabric with BFD takes about the BFD detection time, "
                          "3 x the interval (RFC 5880 section 6.8.4), e.g. 150 ms at 50 ms.",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&NetworkBackend::m_convergence),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("FabricEvent",
                            "A fabric event applied or the routing converged (a description)",
                            MakeTraceSourceAccessor(&NetworkBackend::m_fabricTrace),
                            "ns3::NetworkBackend::FabricEventTracedCallback");
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

std::vector<std::vector<double>>
NetworkBackend::GetOwnerLinkBytes() const
{
    return {};
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

void
NetworkBackend::ScheduleFabricEvents(const std::vector<gpusim::FabricEvent>& events)
{
    NS_LOG_FUNCTION(this << events.size());
    Ptr<ClusterTopology> topo = GetTopology();
    if (!topo)
    {
        throw std::logic_error("NetworkBackend::ScheduleFabricEvents: no topology set");
    }
    if (!m_events.empty())
    {
        throw std::logic_error("NetworkBackend::ScheduleFabricEvents: events already scheduled");
    }
    const size_t nLinks = topo->Links().size();
    for (const gpusim::FabricEvent& e : events)
    {
        for (uint32_t l : e.links)
        {
            if (l >= nLinks)
            {
                throw std::invalid_argument("fabric event on " + e.what + ": link id " +
                                            std::to_string(l) + " is not in the topology");
            }
        }
    }
    m_events = events;
    m_linkDown.assign(nLinks, 0);
    m_routeDown.assign(nLinks, 0);
    m_nRouteDown = 0;
    const Time now = Simulator::Now();
    for (size_t i = 0; i < m_events.size(); ++i)
    {
        Simulator::Schedule(std::max(Time(0), m_events[i].at - now),
                            &NetworkBackend::OnFabricEvent,
                            this,
                            i);
    }
}

bool
NetworkBackend::HasFabricEvents() const
{
    return !m_events.empty();
}

void
NetworkBackend::SetTransferFailedCallback(TransferFailedCallback cb)
{
    m_failed = std::move(cb);
}

void
NetworkBackend::SetTransferFailedCallback(uint32_t owner, TransferFailedCallback cb)
{
    m_ownerFailed[owner] = std::move(cb);
}

bool
NetworkBackend::IsLinkUp(uint32_t link) const
{
    return link >= m_linkDown.size() || !m_linkDown[link];
}

std::string
NetworkBackend::DownLinksText() const
{
    Ptr<ClusterTopology> topo = GetTopology();
    std::string s;
    for (uint32_t l = 0; topo && l < m_linkDown.size(); ++l)
    {
        const uint32_t rev = topo->Links()[l].reverse;
        if (!m_linkDown[l] || (rev < l && m_linkDown[rev]))
        {
            continue; // up, or named by its other direction
        }
        s += (s.empty() ? "" : ", ") + gpusim::LinkName(*topo, l);
    }
    return s;
}

void
NetworkBackend::OnFabricEvent(size_t index)
{
    const gpusim::FabricEvent& e = m_events[index];
    NS_LOG_FUNCTION(this << gpusim::ToString(e.kind) << e.what);
    if (e.kind != gpusim::FabricEventKind::LinkRate)
    {
        const uint8_t down = e.kind == gpusim::FabricEventKind::LinkDown ? 1 : 0;
        for (uint32_t l : e.links)
        {
            m_linkDown[l] = down;
        }
    }
    m_fabricTrace(gpusim::ToString(e.kind) + " " + e.what);
    ApplyFabricEvent(e);
    if (e.kind != gpusim::FabricEventKind::LinkRate)
    {
        Simulator::Schedule(m_convergence, &NetworkBackend::OnConverged, this);
    }
}

void
NetworkBackend::OnConverged()
{
    m_routeDown = m_linkDown;
    m_nRouteDown = static_cast<uint32_t>(std::count(m_routeDown.begin(), m_routeDown.end(), 1));
    NS_LOG_FUNCTION(this << m_nRouteDown);
    m_fabricTrace("routing converged: " + std::to_string(m_nRouteDown) + " directed links down");
    ConvergeRouting();
}

void
NetworkBackend::ApplyFabricEvent(const gpusim::FabricEvent& event)
{
    throw std::logic_error("the " + GetName() + " backend does not model fabric events (" +
                           gpusim::ToString(event.kind) + " " + event.what + ")");
}

void
NetworkBackend::ConvergeRouting()
{
}

void
NetworkBackend::FailTransfer(const TransferRecord& rec, const std::string& why)
{
    NS_LOG_FUNCTION(this << rec.id << why);
    auto own = m_ownerFailed.find(OwnerOf(rec.id));
    if (own != m_ownerFailed.end() && own->second)
    {
        own->second(rec, why);
        return;
    }
    if (!m_failed)
    {
        throw std::runtime_error("transfer " + std::to_string(rec.id) + " GPU " +
                                 std::to_string(rec.srcGpu) + " -> GPU " +
                                 std::to_string(rec.dstGpu) + " failed: " + why);
    }
    m_failed(rec, why);
}

void
NetworkBackend::NoPathLeft(const TransferRecord& rec, const std::string& why)
{
    NS_LOG_FUNCTION(this << rec.id << why);
    if (m_watched.empty())
    {
        Ptr<NetworkBackend> self(this);
        Simulator::ScheduleDestroy([self]() { self->m_watched.clear(); });
    }
    if (!m_watched.insert(rec.id).second)
    {
        return; // its timeout is already running
    }
    Simulator::Schedule(m_transportTimeout, &NetworkBackend::CheckNoPath, this, rec, why);
}

void
NetworkBackend::CheckNoPath(TransferRecord rec, std::string why)
{
    m_watched.erase(rec.id);
    bool inFlight = false;
    for (const TransferRecord& r : InFlight())
    {
        inFlight = inFlight || r.id == rec.id;
    }
    if (!inFlight)
    {
        return; // delivered after all
    }
    std::vector<uint32_t> route;
    try
    {
        GetTopology()->RouteAvoiding(rec.srcGpu, rec.dstGpu, 0, RouteDown(), route);
        // A path is back; the routing (or its convergence, still to come) moves it on.
        return;
    }
    catch (const std::runtime_error&)
    {
    }
    FailTransfer(rec, why + "; no path for the transport timeout of " +
                          std::to_string(m_transportTimeout.GetSeconds()) + " s");
}

const std::vector<uint8_t>&
NetworkBackend::RouteDown() const
{
    return m_routeDown;
}

bool
NetworkBackend::AnyRouteDown() const
{
    return m_nRouteDown > 0;
}

Time
NetworkBackend::GetRoutingConvergence() const
{
    return m_convergence;
}

} // namespace ns3
