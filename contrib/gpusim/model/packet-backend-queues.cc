/*
 * PacketBackend's queues (see packet-backend.h): the queue disc of each egress port (RED/ECN,
 * PIE, CoBalt, ...), port buffers, PFC ports and the queues' random streams.
 */
#include "ns3/packet-backend.h"

#include "ns3/pfc-controller.h"

#include "ns3/boolean.h"
#include "ns3/cobalt-queue-disc.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/ecn-marking-queue-disc.h"
#include "ns3/pie-queue-disc.h"
#include "ns3/queue-disc.h"
#include "ns3/queue-size.h"
#include "ns3/red-queue-disc.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

namespace
{

constexpr double kRefRate = 100e9; // thresholds are given at 100 Gbit/s
constexpr double kDefaultBufferAt100G = 4.0 * 1024 * 1024;
constexpr double kDefaultKminAt100G = 400e3; // HPCC / SimAI RED-ECN defaults (FACTS.md)
constexpr double kDefaultKmaxAt100G = 1600e3;

} // namespace

void
PacketBackend::AssignQueueStreams()
{
    // Random streams of the AQMs: fixed, so that repeated runs in one process match.
    int64_t stream = m_streamBase;
    for (const Ptr<QueueDisc>& q : m_linkQdisc)
    {
        if (auto red = DynamicCast<RedQueueDisc>(q))
        {
            stream += red->AssignStreams(stream);
        }
        else if (auto pie = DynamicCast<PieQueueDisc>(q))
        {
            stream += pie->AssignStreams(stream);
        }
        else if (auto cobalt = DynamicCast<CobaltQueueDisc>(q))
        {
            stream += cobalt->AssignStreams(stream);
        }
        else if (auto ecn = DynamicCast<EcnMarkingQueueDisc>(q))
        {
            stream += ecn->AssignStreams(stream);
        }
    }
}

double
PacketBackend::PortBufferBytes(uint32_t link) const
{
    const double scale = m_topology->Links()[link].bitsPerSec / kRefRate;
    return std::max(m_bufferBytes > 0 ? double(m_bufferBytes) : kDefaultBufferAt100G * scale,
                    4.0 * m_mtu);
}

void
PacketBackend::AddPfcPort(uint32_t link, Ptr<NetDevice> dev)
{
    const TopoLink& L = m_topology->Links()[link];
    Ptr<PfcController>& ctl = m_pfcCtl[L.from];
    if (!ctl)
    {
        ctl = CreateObject<PfcController>();
        // Switches pause their upstream; NICs drain into host memory and only obey.
        const bool sw = m_topology->Vertices()[L.from].type == TopoVertexType::Switch;
        ctl->SetAttribute("Generate", BooleanValue(sw));
    }
    Ptr<EcnMarkingQueueDisc> q = DynamicCast<EcnMarkingQueueDisc>(m_linkQdisc.back());
    const uint64_t buffer = uint64_t(std::min(PortBufferBytes(link), 4e9));
    m_linkPfcPort.back() = int32_t(ctl->AddPort(dev, q, L.bitsPerSec,
                                                NanoSeconds(std::llround(L.latencySec * 1e9)),
                                                m_mtu, buffer));
}

void
PacketBackend::BuildQueueDisc(uint32_t link, Ptr<NetDevice> dev, bool switchEgress)
{
    const TopoLink& L = m_topology->Links()[link];
    const double scale = L.bitsPerSec / kRefRate;
    const double minThr = 2.0 * m_mtu;
    TrafficControlHelper tch;
    if (!switchEgress && m_pfc)
    {
        // A NIC egress PFC can pause: the same three-band queue, never marking.
        tch.SetRootQueueDisc(
            "ns3::EcnMarkingQueueDisc",
            "MaxSize",
            QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, uint32_t(m_hostBufferBytes))),
            "Kmin", DoubleValue(4e9), "Kmax", DoubleValue(4e9),
            "IntStamping", BooleanValue(false));
        m_linkQdisc.back() = tch.Install(dev).Get(0);
        return;
    }
    if (!switchEgress)
    {
        tch.SetRootQueueDisc(
            "ns3::FifoQueueDisc",
            "MaxSize",
            QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, uint32_t(m_hostBufferBytes))));
        m_linkQdisc.back() = tch.Install(dev).Get(0);
        return;
    }
    const double buffer = PortBufferBytes(link);
    const QueueSizeValue maxSize(
        QueueSize(QueueSizeUnit::BYTES, uint32_t(std::min(buffer, 4e9))));
    const bool ecn = m_transport->UsesEcn();
    const std::string& q = m_queueName;
    if (q == "fifo")
    {
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", maxSize);
    }
    else if (q == "ecn")
    {
        const double kmin =
            std::max(m_kminBytes > 0 ? m_kminBytes : kDefaultKminAt100G * scale, minThr);
        const double kmax =
            std::max(m_kmaxBytes > 0 ? m_kmaxBytes : kDefaultKmaxAt100G * scale, kmin);
        tch.SetRootQueueDisc("ns3::EcnMarkingQueueDisc",
                             "MaxSize", maxSize,
                             "Kmin", DoubleValue(kmin),
                             "Kmax", DoubleValue(kmax),
                             "Pmax", DoubleValue(m_pmax),
                             "LinkRate", DataRateValue(DataRate(uint64_t(L.bitsPerSec))));
    }
    else if (q == "red" || q == "red-ecn" || q == "step-ecn")
    {
        double minTh;
        double maxTh;
        if (q == "step-ecn")
        {
            minTh = maxTh =
                std::max(m_stepKBytes > 0 ? m_stepKBytes : kDefaultKminAt100G * scale, minThr);
        }
        else
        {
            minTh = std::max(m_kminBytes > 0 ? m_kminBytes : kDefaultKminAt100G * scale, minThr);
            maxTh = std::max(m_kmaxBytes > 0 ? m_kmaxBytes : kDefaultKmaxAt100G * scale, minTh);
        }
        // Instantaneous queue (QW = 1), as switch ECN marking works; marks instead of drops
        // above the thresholds (UseHardDrop = false), drops only when the buffer is full.
        tch.SetRootQueueDisc("ns3::RedQueueDisc",
                             "MaxSize", maxSize,
                             "MeanPktSize", UintegerValue(m_mtu),
                             "QW", DoubleValue(1.0),
                             "MinTh", DoubleValue(minTh),
                             "MaxTh", DoubleValue(maxTh),
                             "LInterm", DoubleValue(1.0 / m_pmax),
                             "Gentle", BooleanValue(q != "step-ecn"),
                             "UseEcn", BooleanValue(q != "red"),
                             "UseHardDrop", BooleanValue(q == "red"),
                             "LinkBandwidth", DataRateValue(DataRate(uint64_t(L.bitsPerSec))),
                             "LinkDelay", TimeValue(Seconds(L.latencySec)));
    }
    else
    {
        static const std::map<std::string, std::string> aqm = {
            {"codel", "ns3::CoDelQueueDisc"},
            {"fq-codel", "ns3::FqCoDelQueueDisc"},
            {"pie", "ns3::PieQueueDisc"},
            {"fq-pie", "ns3::FqPieQueueDisc"},
            {"cobalt", "ns3::CobaltQueueDisc"}};
        // These mark ECN-capable packets instead of dropping them when UseEcn is set.
        tch.SetRootQueueDisc(aqm.at(q), "MaxSize", maxSize, "UseEcn", BooleanValue(ecn));
    }
    m_linkQdisc.back() = tch.Install(dev).Get(0);
}

} // namespace ns3
