#include "ns3/ecn-marking-queue-disc.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/log.h"
#include "ns3/rdma-header.h"
#include "ns3/simulator.h"
#include "ns3/udp-header.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("EcnMarkingQueueDisc");
NS_OBJECT_ENSURE_REGISTERED(EcnMarkingQueueDisc);

TypeId
EcnMarkingQueueDisc::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::EcnMarkingQueueDisc")
            .SetParent<QueueDisc>()
            .SetGroupName("Gpusim")
            .AddConstructor<EcnMarkingQueueDisc>()
            .AddAttribute("MaxSize",
                          "Buffer of the port; packets beyond it are dropped",
                          QueueSizeValue(QueueSize("4MB")),
                          MakeQueueSizeAccessor(&QueueDisc::SetMaxSize, &QueueDisc::GetMaxSize),
                          MakeQueueSizeChecker())
            .AddAttribute("Kmin",
                          "Queue length (bytes) where marking starts. Default 400 KB: the HPCC "
                          "ns-3 simulator's KMIN_MAP at 100 Gbit/s (mix/config.txt)",
                          DoubleValue(400e3),
                          MakeDoubleAccessor(&EcnMarkingQueueDisc::m_kmin),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("Kmax",
                          "Queue length (bytes) where the probability reaches Pmax; every "
                          "packet is marked above it. Default 1600 KB: KMAX_MAP at 100 Gbit/s",
                          DoubleValue(1600e3),
                          MakeDoubleAccessor(&EcnMarkingQueueDisc::m_kmax),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("Pmax",
                          "Marking probability at Kmax. Default 0.2: PMAX_MAP",
                          DoubleValue(0.2),
                          MakeDoubleAccessor(&EcnMarkingQueueDisc::m_pmax),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("IntStamping",
                          "Stamp INT hops into RDMA data packets that ask for them (HPCC)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&EcnMarkingQueueDisc::m_intStamping),
                          MakeBooleanChecker())
            .AddAttribute("LinkRate",
                          "Rate of the port, written into INT hops",
                          DataRateValue(DataRate("100Gbps")),
                          MakeDataRateAccessor(&EcnMarkingQueueDisc::m_linkRate),
                          MakeDataRateChecker())
            .AddAttribute("LosslessDscp",
                          "DSCP of the lossless (PFC) class (3, RDMA's usual class)",
                          UintegerValue(3),
                          MakeUintegerAccessor(&EcnMarkingQueueDisc::m_losslessDscp),
                          MakeUintegerChecker<uint8_t>(0, 63))
            .AddAttribute("RdmaPort",
                          "UDP destination port of RDMA data (RoCEv2: 4791)",
                          UintegerValue(4791),
                          MakeUintegerAccessor(&EcnMarkingQueueDisc::m_rdmaPort),
                          MakeUintegerChecker<uint16_t>());
    return tid;
}

EcnMarkingQueueDisc::EcnMarkingQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::MULTIPLE_QUEUES, QueueSizeUnit::BYTES),
      m_uniform(CreateObject<UniformRandomVariable>())
{
}

EcnMarkingQueueDisc::~EcnMarkingQueueDisc() = default;

int64_t
EcnMarkingQueueDisc::AssignStreams(int64_t stream)
{
    m_uniform->SetStream(stream);
    return 1;
}

double
EcnMarkingQueueDisc::MarkProbability(uint32_t bytes) const
{
    if (bytes <= m_kmin)
    {
        return 0;
    }
    if (bytes > m_kmax)
    {
        return 1;
    }
    return m_pmax * (bytes - m_kmin) / (m_kmax - m_kmin);
}

uint64_t
EcnMarkingQueueDisc::GetTxBytes() const
{
    return m_txBytes;
}

void
EcnMarkingQueueDisc::SetPfcCallbacks(AdmitCallback admit, ReleaseCallback release)
{
    m_admit = std::move(admit);
    m_release = std::move(release);
}

void
EcnMarkingQueueDisc::SetPaused(bool paused)
{
    m_paused = paused;
    if (!paused)
    {
        Run(); // the lossless class may send again
    }
}

bool
EcnMarkingQueueDisc::IsPaused() const
{
    return m_paused;
}

void
EcnMarkingQueueDisc::EnqueueControl(Ptr<QueueDiscItem> item)
{
    GetInternalQueue(kControl)->Enqueue(item);
    Run();
}

uint32_t
EcnMarkingQueueDisc::GetDataBytes() const
{
    return GetInternalQueue(kLossless)->GetNBytes() + GetInternalQueue(kLossy)->GetNBytes();
}

bool
EcnMarkingQueueDisc::IsLossless(Ptr<const QueueDiscItem> item) const
{
    Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    return ip && uint8_t(ip->GetHeader().GetDscp()) == m_losslessDscp;
}

bool
EcnMarkingQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    const bool lossless = IsLossless(item);
    if (lossless && m_admit)
    {
        // PFC: the switch's shared buffer and headroom decide, not this port's MaxSize.
        if (!m_admit(item))
        {
            DropBeforeEnqueue(item, "PFC headroom exhausted");
            return false;
        }
        return GetInternalQueue(kLossless)->Enqueue(item);
    }
    if (GetCurrentSize() + item > GetMaxSize())
    {
        NS_LOG_INFO("buffer full: lossless " << lossless << ", admission " << bool(m_admit)
                                             << ", " << GetNBytes() << " bytes queued, item "
                                             << *item);
        DropBeforeEnqueue(item, "Buffer full");
        return false;
    }
    return GetInternalQueue(lossless ? kLossless : kLossy)->Enqueue(item);
}

Ptr<QueueDiscItem>
EcnMarkingQueueDisc::DequeueData()
{
    const bool losslessReady = !m_paused && GetInternalQueue(kLossless)->GetNPackets() > 0;
    const bool lossyReady = GetInternalQueue(kLossy)->GetNPackets() > 0;
    bool takeLossless = losslessReady && (!lossyReady || !m_lastLossless);
    if (!losslessReady && !lossyReady)
    {
        return nullptr;
    }
    m_lastLossless = takeLossless;
    Ptr<QueueDiscItem> item = GetInternalQueue(takeLossless ? kLossless : kLossy)->Dequeue();
    if (takeLossless && m_release)
    {
        m_release(item);
    }
    return item;
}

Ptr<QueueDiscItem>
EcnMarkingQueueDisc::DoDequeue()
{
    if (Ptr<QueueDiscItem> ctl = GetInternalQueue(kControl)->Dequeue())
    {
        return ctl; // PFC frames go first and are never marked
    }
    Ptr<QueueDiscItem> item = DequeueData();
    if (!item)
    {
        return nullptr;
    }
    const uint32_t left = GetDataBytes();
    const double p = MarkProbability(left);
    if (p > 0 && (p >= 1 || m_uniform->GetValue() < p))
    {
        Mark(item, "Queue above Kmin"); // no effect (and not counted) unless ECN-capable
    }
    m_txBytes += item->GetSize();
    if (m_intStamping)
    {
        StampInt(item);
    }
    return item;
}

void
EcnMarkingQueueDisc::StampInt(Ptr<QueueDiscItem> item) const
{
    Ptr<Ipv4QueueDiscItem> ip = DynamicCast<Ipv4QueueDiscItem>(item);
    if (!ip || ip->GetHeader().GetProtocol() != 17)
    {
        return;
    }
    Ptr<Packet> p = ip->GetPacket();
    UdpHeader udp;
    if (p->GetSize() < udp.GetSerializedSize() + RdmaHeader::kBaseBytes)
    {
        return;
    }
    p->PeekHeader(udp);
    if (udp.GetDestinationPort() != m_rdmaPort)
    {
        return;
    }
    p->RemoveHeader(udp);
    RdmaHeader h;
    p->RemoveHeader(h);
    if ((h.flags & RdmaHeader::WANT_INT) && h.opcode == RdmaHeader::DATA &&
        h.hops.size() < RdmaHeader::kMaxHops)
    {
        IntHop hop;
        hop.bitsPerSec = m_linkRate.GetBitRate();
        hop.tsNs = uint64_t(Simulator::Now().GetNanoSeconds());
        hop.txBytes = m_txBytes;
        hop.qlenBytes = GetDataBytes();
        h.hops.push_back(hop);
    }
    p->AddHeader(h);
    p->AddHeader(udp);
}

bool
EcnMarkingQueueDisc::CheckConfig()
{
    if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0)
    {
        NS_LOG_ERROR("EcnMarkingQueueDisc takes no classes or filters");
        return false;
    }
    if (m_kmax < m_kmin)
    {
        NS_LOG_ERROR("EcnMarkingQueueDisc: Kmax below Kmin");
        return false;
    }
    if (GetNInternalQueues() == 0)
    {
        // Unbounded bands: the admission above enforces MaxSize or the PFC buffer.
        for (int band = 0; band < 3; ++band)
        {
            AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
                "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, 0xffffffffu))));
        }
    }
    return GetNInternalQueues() == 3;
}

void
EcnMarkingQueueDisc::InitializeParams()
{
}

} // namespace ns3
