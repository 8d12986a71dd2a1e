#include "ns3/pfc-controller.h"

#include "ns3/double.h"
#include "ns3/ecn-marking-queue-disc.h"
#include "ns3/ipv4-header.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/pfc-frame.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("PfcController");
NS_OBJECT_ENSURE_REGISTERED(PfcController);

TypeId
PfcController::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::PfcController")
            .SetParent<Object>()
            .SetGroupName("Gpusim")
            .AddConstructor<PfcController>()
            .AddAttribute("Generate",
                          "Send PAUSE when an ingress port crosses the threshold (switches); "
                          "false: only obey PAUSE (NICs)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&PfcController::m_generate),
                          MakeBooleanChecker())
            .AddAttribute("DtAlpha",
                          "Dynamic threshold factor: XOFF at DtAlpha x free shared buffer per "
                          "ingress port. 1/8: the HPCC ns-3 simulator's pfc_a_shift = 3",
                          DoubleValue(1.0 / 8),
                          MakeDoubleAccessor(&PfcController::m_alpha),
                          MakeDoubleChecker<double>(1e-6))
            .AddAttribute("BufferBytes",
                          "Shared buffer of the node (bytes); 0 = the sum of its ports' buffers",
                          UintegerValue(0),
                          MakeUintegerAccessor(&PfcController::m_bufferBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("HeadroomBytes",
                          "Headroom per ingress port (bytes); 0 = 2 x bandwidth-delay product "
                          "of the port's link + 4 x MTU: what arrives during the PAUSE's round "
                          "trip, plus the frames ahead of the PAUSE here (one in transmission, "
                          "one in the device queue) and those the peer cannot recall (the same "
                          "two); the HPCC simulator derivatives use 2 x BDP + 2 x MTU with "
                          "no device queue",
                          UintegerValue(0),
                          MakeUintegerAccessor(&PfcController::m_headroomBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("ResumeOffsetBytes",
                          "XON = XOFF threshold - this (bytes); 0 = 2 x MTU",
                          UintegerValue(0),
                          MakeUintegerAccessor(&PfcController::m_resumeOffset),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("Priority",
                          "Priority named in the PAUSE frames (the lossless class)",
                          UintegerValue(3),
                          MakeUintegerAccessor(&PfcController::m_priority),
                          MakeUintegerChecker<uint8_t>(0, 7));
    return tid;
}

PfcController::PfcController() = default;
PfcController::~PfcController() = default;

void
PfcController::DoDispose()
{
    for (Port& p : m_ports)
    {
        if (p.egress)
        {
            p.egress->SetPfcCallbacks(nullptr, nullptr);
        }
    }
    m_ports.clear();
    Object::DoDispose();
}

uint32_t
PfcController::AddPort(Ptr<NetDevice> dev, Ptr<EcnMarkingQueueDisc> egress, double bitsPerSec,
                       Time delay, uint32_t mtu, uint64_t portBufferBytes)
{
    const uint32_t index = static_cast<uint32_t>(m_ports.size());
    Port p;
    p.dev = dev;
    p.egress = egress;
    const double bdp = bitsPerSec * delay.GetSeconds() / 8;
    p.headroom = m_headroomBytes > 0 ? m_headroomBytes : uint64_t(2 * bdp + 4.0 * mtu);
    m_headroomTotal += p.headroom;
    m_portBuffers += portBufferBytes;
    m_mtu = std::max(m_mtu, mtu);
    m_ports.push_back(p);
    dev->GetNode()->RegisterProtocolHandler(MakeCallback(&PfcController::OnReceive, this),
                                            0x0800, dev, false);
    if (m_generate)
    {
        egress->SetPfcCallbacks([this](Ptr<const QueueDiscItem> i) { return Admit(i); },
                                [this](Ptr<const QueueDiscItem> i) { Release(i); });
    }
    return index;
}

uint32_t
PfcController::GetNPorts() const
{
    return static_cast<uint32_t>(m_ports.size());
}

const PfcController::PortStats&
PfcController::GetPortStats(uint32_t port) const
{
    return m_ports.at(port).stats;
}

Ptr<NetDevice>
PfcController::GetPortDevice(uint32_t port) const
{
    return m_ports.at(port).dev;
}

uint64_t
PfcController::GetIngressBytes(uint32_t port) const
{
    return m_ports.at(port).ingressBytes;
}

bool
PfcController::IsPausingUpstream(uint32_t port) const
{
    return m_ports.at(port).pausingUpstream;
}

bool
PfcController::IsEgressPaused(uint32_t port) const
{
    return m_ports.at(port).egressPaused;
}

uint64_t
PfcController::GetHeadroom(uint32_t port) const
{
    return m_ports.at(port).headroom;
}

uint64_t
PfcController::GetBufferBytes() const
{
    return m_bufferBytes > 0 ? m_bufferBytes : m_portBuffers;
}

double
PfcController::GetThreshold() const
{
    // Shared pool: the buffer less every port's headroom, less what is buffered now.
    uint64_t buffered = 0;
    for (const Port& p : m_ports)
    {
        buffered += p.egress->GetNBytes();
    }
    const double free = double(GetBufferBytes()) - double(m_headroomTotal) - double(buffered);
    return std::max(0.0, m_alpha * free);
}

void
PfcController::OnReceive(Ptr<NetDevice> dev, Ptr<const Packet> p, uint16_t /*protocol*/,
                         const Address& /*from*/, const Address& /*to*/,
                         NetDevice::PacketType /*type*/)
{
    uint32_t port = 0;
    while (port < m_ports.size() && m_ports[port].dev != dev)
    {
        ++port;
    }
    if (port == m_ports.size())
    {
        return;
    }
    Ipv4Header ip;
    p->PeekHeader(ip);
    if (ip.GetProtocol() == PfcFrameHeader::kIpProtocol)
    {
        Ptr<Packet> copy = p->Copy();
        copy->RemoveHeader(ip);
        PfcFrameHeader f;
        copy->RemoveHeader(f);
        OnFrame(port, f.pause);
        return;
    }
    // Tag the ingress port; the tag travels with the packet to the egress queue. Tags of
    // earlier hops stay behind it: a peek finds the newest (packet tags are a stack).
    PfcIngressTag tag;
    tag.port = port;
    p->AddPacketTag(tag);
}

void
PfcController::OnFrame(uint32_t port, bool pause)
{
    Port& p = m_ports[port];
    const Time now = Simulator::Now();
    if (pause)
    {
        ++p.stats.pausesReceived;
        if (!p.egressPaused)
        {
            p.egressPaused = true;
            p.pausedSince = now;
            p.egress->SetPaused(true);
        }
        return;
    }
    ++p.stats.resumesReceived;
    if (p.egressPaused)
    {
        p.egressPaused = false;
        p.stats.pausedTime += now - p.pausedSince;
        p.egress->SetPaused(false);
    }
}

bool
PfcController::Admit(Ptr<const QueueDiscItem> item)
{
    PfcIngressTag tag;
    if (!item->GetPacket()->PeekPacketTag(tag) || tag.port >= m_ports.size())
    {
        return true; // originated here (none in this model): nothing to account
    }
    Port& p = m_ports[tag.port];
    const uint32_t size = item->GetSize();
    uint64_t buffered = 0;
    for (const Port& q : m_ports)
    {
        buffered += q.egress->GetNBytes();
    }
    // A paused port lives on its headroom (a pool apart from the shared buffer); an unpaused
    // one on the shared buffer.
    const bool overflow = p.pausingUpstream ? p.ingressBytes + size > p.xoffLevel + p.headroom
                                            : buffered + size > GetBufferBytes();
    if (overflow)
    {
        NS_LOG_INFO("lossless drop at ingress port " << tag.port << ": paused "
                                                     << p.pausingUpstream << ", ingress "
                                                     << p.ingressBytes << ", buffered " << buffered
                                                     << " of " << GetBufferBytes());
        ++p.stats.losslessDrops;
        return false;
    }
    p.ingressBytes += size;
    m_used += size;
    p.stats.maxIngressBytes = std::max(p.stats.maxIngressBytes, p.ingressBytes);
    if (!p.pausingUpstream && double(p.ingressBytes) > GetThreshold())
    {
        p.pausingUpstream = true;
        p.xoffLevel = p.ingressBytes;
        ++p.stats.pausesSent;
        SendFrame(tag.port, true);
    }
    return true;
}

void
PfcController::Release(Ptr<const QueueDiscItem> item)
{
    PfcIngressTag tag;
    if (!item->GetPacket()->PeekPacketTag(tag) || tag.port >= m_ports.size())
    {
        return;
    }
    Port& p = m_ports[tag.port];
    const uint32_t size = item->GetSize();
    p.ingressBytes -= std::min<uint64_t>(p.ingressBytes, size);
    m_used -= std::min<uint64_t>(m_used, size);
    CheckXon();
}

void
PfcController::CheckXon()
{
    // The threshold moves with the shared occupancy, so every pausing port is re-checked.
    const double offset = m_resumeOffset > 0 ? double(m_resumeOffset) : 2.0 * m_mtu;
    double threshold = -1;
    for (uint32_t i = 0; i < m_ports.size(); ++i)
    {
        Port& p = m_ports[i];
        if (!p.pausingUpstream)
        {
            continue;
        }
        if (threshold < 0)
        {
            threshold = GetThreshold();
        }
        if (double(p.ingressBytes) <= std::max(0.0, threshold - offset))
        {
            p.pausingUpstream = false;
            ++p.stats.resumesSent;
            SendFrame(i, false);
        }
    }
}

void
PfcController::SendFrame(uint32_t port, bool pause)
{
    Port& p = m_ports[port];
    PfcFrameHeader f;
    f.priority = m_priority;
    f.pause = pause;
    Ptr<Packet> pkt = Create<Packet>(PfcFrameHeader::kPayloadBytes - f.GetSerializedSize());
    pkt->AddHeader(f);
    Ipv4Header ip;
    ip.SetSource(Ipv4Address::GetAny());
    ip.SetDestination(Ipv4Address::GetBroadcast());
    ip.SetProtocol(PfcFrameHeader::kIpProtocol);
    ip.SetPayloadSize(pkt->GetSize());
    ip.SetTtl(1);
    NS_LOG_INFO((pause ? "PAUSE" : "RESUME") << " out of port " << port << " of node "
                                             << p.dev->GetNode()->GetId());
    p.egress->EnqueueControl(
        Create<Ipv4QueueDiscItem>(pkt, p.dev->GetBroadcast(), 0x0800, ip));
}

} // namespace ns3
