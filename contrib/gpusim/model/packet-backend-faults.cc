/*
 * PacketBackend's fabric events (see packet-backend.h): links going down and up, rate changes,
 * and the routing's reaction after the convergence delay.
 */
#include "ns3/packet-backend.h"

#include "packet-backend-internal.h"

#include "ns3/channel.h"
#include "ns3/data-rate.h"
#include "ns3/ecmp-flow-routing.h"
#include "ns3/error-model.h"
#include "ns3/log.h"
#include "ns3/point-to-point-net-device.h"

#include <algorithm>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("PacketBackendFaults");

void
PacketBackend::ScheduleFabricEvents(const std::vector<gpusim::FabricEvent>& events)
{
    EnsureBuilt();
    const auto& links = m_topology->Links();
    std::vector<gpusim::FabricEvent> nvlink;
    for (const gpusim::FabricEvent& e : events)
    {
        bool packet = false;
        gpusim::FabricEvent mine = e;
        mine.links.clear();
        for (uint32_t l : e.links)
        {
            packet = packet || m_linkSlot.at(l) >= 0;
            if (links[l].kind == TopoLinkKind::NvLink)
            {
                mine.links.push_back(l);
            }
        }
        if (!mine.links.empty())
        {
            nvlink.push_back(mine);
        }
        else if (!packet)
        {
            throw std::invalid_argument("fabric event on " + e.what +
                                        ": the packet backend models the GPU-NIC PCIe hop as a "
                                        "fixed latency; fail the NIC or its fabric link instead");
        }
    }
    NetworkBackend::ScheduleFabricEvents(events);
    if (!nvlink.empty())
    {
        m_nvlink->SetAttribute("RoutingConvergence", TimeValue(GetRoutingConvergence()));
        m_nvlink->SetTransferFailedCallback(
            [this](const TransferRecord& r, const std::string& why) { FailTransfer(r, why); });
        m_nvlink->ScheduleFabricEvents(nvlink);
    }
}

void
PacketBackend::ApplyFabricEvent(const gpusim::FabricEvent& event)
{
    NS_LOG_FUNCTION(this << gpusim::ToString(event.kind) << event.what);
    const auto& links = m_topology->Links();
    for (uint32_t l : event.links)
    {
        const int32_t slot = m_linkSlot[l];
        if (slot < 0)
        {
            continue; // NVLink (the embedded flow backend's) or PCIe (a latency here)
        }
        Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(m_linkDev[slot]);
        switch (event.kind)
        {
        case gpusim::FabricEventKind::LinkDown:
        case gpusim::FabricEventKind::LinkUp: {
            // The receiving end loses every frame of this direction (what is queued or on the
            // wire is lost too), like a cut cable; TCP retransmits and RDMA's go-back-N
            // recover once the routing goes around it.
            Ptr<Channel> ch = dev->GetChannel();
            Ptr<NetDevice> peer = ch->GetDevice(0) == dev ? ch->GetDevice(1) : ch->GetDevice(0);
            Ptr<RateErrorModel> em;
            if (event.kind == gpusim::FabricEventKind::LinkDown)
            {
                em = CreateObject<RateErrorModel>();
                em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
                em->SetRate(1.0);
            }
            DynamicCast<PointToPointNetDevice>(peer)->SetReceiveErrorModel(em);
            break;
        }
        case gpusim::FabricEventKind::LinkRate: {
            const double bps = event.rateFraction > 0
                                   ? links[l].bitsPerSec * event.rateFraction
                                   : event.rateBps;
            dev->SetDataRate(DataRate(static_cast<uint64_t>(bps)));
            break;
        }
        }
    }
}

bool
PacketBackend::RoutedAround(uint32_t link) const
{
    return AnyRouteDown() && RouteDown()[link];
}

void
PacketBackend::ConvergeRouting()
{
    NS_LOG_FUNCTION(this);
    BuildRoutes();
    if (!AnyRouteDown())
    {
        return;
    }
    // In-flight transfers between hosts no longer connected wait for a path or time out.
    std::vector<uint64_t> ids;
    for (const auto& [id, p] : m_pending)
    {
        ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    std::vector<uint32_t> route;
    for (uint64_t id : ids)
    {
        const TransferRecord rec = m_pending.at(id).rec;
        try
        {
            m_topology->RouteAvoiding(rec.srcGpu, rec.dstGpu, 0, RouteDown(), route);
        }
        catch (const std::runtime_error& e)
        {
            // The transport keeps retrying; it fails after the transport timeout unless a
            // link comes back first.
            NoPathLeft(rec, std::string(e.what()) + "; links down: " + DownLinksText());
        }
    }
}

} // namespace ns3
