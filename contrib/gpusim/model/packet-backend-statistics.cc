/*
 * PacketBackend's statistics (see packet-backend.h): per-link counters, utilisation and backlog
 * sampling, drops, ECN marks, retransmissions, and the JSON and CSV reports.
 */
#include "ns3/packet-backend.h"
#include "ns3/distributed-run.h"

#include "packet-backend-internal.h"

#include "ns3/pfc-controller.h"

#include "ns3/flow-monitor-helper.h"
#include "ns3/flow-monitor.h"
#include "ns3/ipv4-flow-classifier.h"
#include "ns3/json-writer.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/queue-disc.h"
#include "ns3/queue.h"
#include "ns3/queue-item.h"
#include "ns3/transfer-owner-tag.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ns3
{

using namespace packet_internal;

namespace
{

double
ToUs(Time t)
{
    return t.GetNanoSeconds() / 1e3;
}

} // namespace

uint32_t
PacketBackend::Backlog(uint32_t k) const
{
    uint32_t b = m_linkQdisc[k]->GetNBytes();
    if (auto p2p = DynamicCast<PointToPointNetDevice>(m_linkDev[k]))
    {
        b += p2p->GetQueue()->GetNBytes();
    }
    return b;
}

std::vector<PacketBackend::LinkStats>
PacketBackend::GetLinkStats() const
{
    std::vector<LinkStats> out;
    const auto& verts = m_topology->Vertices();
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        const TopoLink& L = m_topology->Links()[m_packetLinks[k]];
        const QueueDisc::Stats& st = m_linkQdisc[k]->GetStats();
        LinkStats s;
        s.link = m_packetLinks[k];
        s.from = verts[L.from].name;
        s.to = verts[L.to].name;
        s.bitsPerSec = L.bitsPerSec;
        s.switchEgress = m_linkSwitchEgress[k];
        s.txBytes = st.nTotalSentBytes;
        s.txPackets = st.nTotalSentPackets;
        s.drops = st.nTotalDroppedPackets;
        s.marks = st.nTotalMarkedPackets;
        const auto& series = m_backlogSeries[k];
        double sum = 0;
        for (uint32_t b : series)
        {
            s.maxBacklogBytes = std::max(s.maxBacklogBytes, b);
            sum += b;
        }
        s.meanBacklogBytes = series.empty() ? 0 : sum / series.size();
        if (m_linkPfcPort[k] >= 0)
        {
            const PfcController::PortStats& ps =
                m_pfcCtl[L.from]->GetPortStats(uint32_t(m_linkPfcPort[k]));
            s.pausesSent = ps.pausesSent;
            s.pausesReceived = ps.pausesReceived;
            s.pausedUs = ps.pausedTime.GetNanoSeconds() / 1e3;
            s.losslessDrops = ps.losslessDrops;
        }
        out.push_back(s);
    }
    SumLinkStats(out); // distributed runs: each link's counters from its sender's process
    return out;
}

double
PacketBackend::GetLinkUtilisation(uint32_t link, Time interval) const
{
    Ptr<QueueDisc> q = GetLinkQueueDisc(link);
    if (!q || !interval.IsStrictlyPositive())
    {
        return 0;
    }
    return q->GetStats().nTotalSentBytes * 8.0 /
           (m_topology->Links()[link].bitsPerSec * interval.GetSeconds());
}

uint64_t
PacketBackend::GetTotalDrops() const
{
    uint64_t n = 0;
    for (const auto& q : m_linkQdisc)
    {
        n += q->GetStats().nTotalDroppedPackets;
    }
    return SumOverProcesses(n); // other processes' nodes drop nothing here
}

uint64_t
PacketBackend::GetTotalMarks() const
{
    uint64_t n = 0;
    for (const auto& q : m_linkQdisc)
    {
        n += q->GetStats().nTotalMarkedPackets;
    }
    return SumOverProcesses(n);
}

uint64_t
PacketBackend::GetRetransmissions() const
{
    return SumOverProcesses(m_transport ? m_transport->GetRetransmissions() : 0);
}

Ptr<FlowMonitor>
PacketBackend::GetFlowMonitor() const
{
    return m_monitor;
}

bool
PacketBackend::PacketWorkPending() const
{
    return m_pending.size() > m_failedInFlight;
}

void
PacketBackend::StartSampling()
{
    if (!m_sampleInterval.IsStrictlyPositive() || m_sampleEvent.IsRunning())
    {
        return;
    }
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        m_lastSent[k] = m_linkQdisc[k]->GetStats().nTotalSentBytes;
    }
    m_lastSampleTime = Simulator::Now();
    m_sampleEvent = Simulator::Schedule(m_sampleInterval, &PacketBackend::Sample, this);
}

void
PacketBackend::Sample()
{
    const Time now = Simulator::Now();
    const double dt = (now - m_lastSampleTime).GetSeconds();
    m_sampleTimes.push_back(now);
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        const uint64_t sent = m_linkQdisc[k]->GetStats().nTotalSentBytes;
        const double rate = m_topology->Links()[m_packetLinks[k]].bitsPerSec;
        m_utilSeries[k].push_back(dt > 0 ? float((sent - m_lastSent[k]) * 8.0 / (rate * dt)) : 0);
        m_backlogSeries[k].push_back(Backlog(k));
        m_lastSent[k] = sent;
    }
    SampleQpRates();
    m_lastSampleTime = now;
    // Sample only while packet transfers are alive, so an idle backend leaves no events.
    if (PacketWorkPending())
    {
        m_sampleEvent = Simulator::Schedule(m_sampleInterval, &PacketBackend::Sample, this);
    }
}

const std::vector<Time>&
PacketBackend::GetSampleTimes() const
{
    return m_sampleTimes;
}

std::vector<double>
PacketBackend::GetUtilisationSeries(uint32_t link) const
{
    if (link >= m_linkSlot.size() || m_linkSlot[link] < 0)
    {
        return {};
    }
    const auto& s = m_utilSeries[m_linkSlot[link]];
    return std::vector<double>(s.begin(), s.end());
}

std::vector<uint32_t>
PacketBackend::GetBacklogSeries(uint32_t link) const
{
    if (link >= m_linkSlot.size() || m_linkSlot[link] < 0)
    {
        return {};
    }
    return m_backlogSeries[m_linkSlot[link]];
}

double
PacketBackend::GetBacklogQuantile(uint32_t link, double q) const
{
    std::vector<uint32_t> s = GetBacklogSeries(link);
    if (s.empty())
    {
        return 0;
    }
    std::sort(s.begin(), s.end());
    const double pos = std::clamp(q, 0.0, 1.0) * (s.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (pos - lo) * (double(s[hi]) - s[lo]);
}

uint32_t
PacketBackend::GetHottestQueueLink() const
{
    uint32_t best = kNone;
    double bestMean = -1;
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        if (!m_linkSwitchEgress[k] || m_backlogSeries[k].empty())
        {
            continue;
        }
        double sum = 0;
        for (uint32_t b : m_backlogSeries[k])
        {
            sum += b;
        }
        const double mean = sum / m_backlogSeries[k].size();
        if (mean > bestMean)
        {
            bestMean = mean;
            best = m_packetLinks[k];
        }
    }
    return best;
}

std::string
PacketBackend::ToJson() const
{
    gpusim::JsonWriter j;
    j.BeginObject();
    j.Key("backend").String("packet");
    j.Key("transport").String(m_transport ? m_transport->GetName() : "");
    j.Key("queue_disc").String(m_queueName).Key("mtu").Uint(m_mtu);
    j.Key("transfers").BeginObject();
    j.Key("started").Uint(m_started).Key("delivered").Uint(m_delivered);
    j.Key("packet").Uint(m_packetTransfers).Key("nvlink").Uint(m_nvlinkTransfers);
    j.Key("in_flight").Uint(InFlight().size());
    j.EndObject();
    j.Key("totals").BeginObject();
    j.Key("drops").Uint(m_built ? GetTotalDrops() : 0);
    j.Key("ecn_marks").Uint(m_built ? GetTotalMarks() : 0);
    j.Key("retransmissions").Uint(GetRetransmissions());
    j.Key("connections").Uint(m_transport ? m_transport->GetNConnections() : 0);
    j.EndObject();
    WriteRdmaJson(j); // "rdma" with that transport only
    WritePfcJson(j);  // "pfc" with PFC on only
    // The run's end: the last event of any process when distributed.
    const Time now = m_distributed ? TimeStep(gpusim::DistributedMax(Simulator::Now().GetTimeStep()))
                                   : Simulator::Now();
    j.Key("links").BeginArray();
    for (const LinkStats& s : GetLinkStats())
    {
        j.BeginObject();
        j.Key("id").Uint(s.link).Key("from").String(s.from).Key("to").String(s.to);
        j.Key("gbps").Double(s.bitsPerSec / 1e9).Key("switch_egress").Bool(s.switchEgress);
        j.Key("tx_bytes").Uint(s.txBytes).Key("tx_packets").Uint(s.txPackets);
        j.Key("drops").Uint(s.drops).Key("ecn_marks").Uint(s.marks);
        // GetLinkUtilisation from the (summed, when distributed) byte counter.
        j.Key("mean_utilisation")
            .Double(now.IsStrictlyPositive() ? s.txBytes * 8.0 / (s.bitsPerSec * now.GetSeconds())
                                             : 0.0);
        j.Key("mean_backlog_bytes").Double(s.meanBacklogBytes);
        j.Key("max_backlog_bytes").Uint(s.maxBacklogBytes);
        j.EndObject();
    }
    j.EndArray();
    j.Key("samples").BeginObject();
    j.Key("interval_us").Double(ToUs(m_sampleInterval));
    j.Key("t_us").BeginArray();
    for (Time t : m_sampleTimes)
    {
        j.Double(ToUs(t));
    }
    j.EndArray();
    j.Key("links").BeginArray();
    for (uint32_t k = 0; k < m_packetLinks.size() && !m_sampleTimes.empty(); ++k)
    {
        j.BeginObject().Key("id").Uint(m_packetLinks[k]);
        j.Key("utilisation").BeginArray();
        for (float u : m_utilSeries[k])
        {
            j.Fixed(u, 4);
        }
        j.EndArray().Key("backlog_bytes").BeginArray();
        for (uint32_t b : m_backlogSeries[k])
        {
            j.Uint(b);
        }
        j.EndArray().EndObject();
    }
    j.EndArray().EndObject();
    j.Key("completions").BeginArray();
    for (const TransferRecord& r : m_completed)
    {
        j.BeginObject();
        j.Key("id").Uint(r.id).Key("src").Uint(r.srcGpu).Key("dst").Uint(r.dstGpu);
        j.Key("bytes").Uint(r.bytes).Key("start_us").Double(ToUs(r.start));
        j.Key("delivered_us").Double(ToUs(r.delivered));
        j.EndObject();
    }
    j.EndArray();
    j.Key("flow_monitor").BeginArray();
    if (m_monitor)
    {
        m_monitor->CheckForLostPackets();
        Ptr<Ipv4FlowClassifier> cls = DynamicCast<Ipv4FlowClassifier>(m_fmHelper->GetClassifier());
        for (const auto& [fid, st] : m_monitor->GetFlowStats())
        {
            const Ipv4FlowClassifier::FiveTuple t = cls->FindFlow(fid);
            std::ostringstream src;
            std::ostringstream dst;
            src << t.sourceAddress;
            dst << t.destinationAddress;
            j.BeginObject();
            j.Key("flow").Uint(fid).Key("src").String(src.str()).Key("dst").String(dst.str());
            j.Key("sport").Uint(t.sourcePort).Key("dport").Uint(t.destinationPort);
            j.Key("tx_packets").Uint(st.txPackets).Key("rx_packets").Uint(st.rxPackets);
            j.Key("lost_packets").Uint(st.lostPackets);
            j.Key("tx_bytes").Uint(st.txBytes).Key("rx_bytes").Uint(st.rxBytes);
            j.Key("mean_delay_us")
                .Double(st.rxPackets ? ToUs(st.delaySum) / st.rxPackets : 0.0);
            j.EndObject();
        }
    }
    j.EndArray();
    j.EndObject();
    return j.Take();
}

void
PacketBackend::WriteCsv(const std::string& prefix) const
{
    const Time now = m_distributed ? TimeStep(gpusim::DistributedMax(Simulator::Now().GetTimeStep()))
                                   : Simulator::Now();
    std::ostringstream links;
    links << "link,from,to,gbps,switch_egress,tx_bytes,tx_packets,drops,ecn_marks,"
             "mean_utilisation,mean_backlog_bytes,max_backlog_bytes\n";
    for (const LinkStats& s : GetLinkStats())
    {
        links << s.link << "," << s.from << "," << s.to << "," << s.bitsPerSec / 1e9 << ","
              << (s.switchEgress ? 1 : 0) << "," << s.txBytes << "," << s.txPackets << ","
              << s.drops << "," << s.marks << ","
              << (now.IsStrictlyPositive() ? s.txBytes * 8.0 / (s.bitsPerSec * now.GetSeconds())
                                           : 0.0)
              << ","
              << s.meanBacklogBytes << "," << s.maxBacklogBytes << "\n";
    }
    gpusim::WriteFileAtomically(prefix + "-links.csv", links.str());
    std::ostringstream samples;
    samples << "t_us,link,utilisation,backlog_bytes\n";
    for (size_t i = 0; i < m_sampleTimes.size(); ++i)
    {
        for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
        {
            samples << ToUs(m_sampleTimes[i]) << "," << m_packetLinks[k] << ","
                    << m_utilSeries[k][i] << "," << m_backlogSeries[k][i] << "\n";
        }
    }
    gpusim::WriteFileAtomically(prefix + "-samples.csv", samples.str());
    std::ostringstream tr;
    tr << "id,src,dst,bytes,start_us,delivered_us\n";
    for (const TransferRecord& r : m_completed)
    {
        tr << r.id << "," << r.srcGpu << "," << r.dstGpu << "," << r.bytes << ","
           << ToUs(r.start) << "," << ToUs(r.delivered) << "\n";
    }
    gpusim::WriteFileAtomically(prefix + "-transfers.csv", tr.str());
    WriteRdmaCsv(prefix);
}

void
PacketBackend::StartOwnerTagging()
{
    m_ownerTagging = true;
    m_transport->SetTagOwners(true);
    for (size_t k = 0; k < m_linkQdisc.size(); ++k)
    {
        if (m_linkQdisc[k])
        {
            m_linkQdisc[k]->TraceConnectWithoutContext(
                "Dequeue",
                MakeCallback(&PacketBackend::OnOwnerDequeue, this).Bind(m_packetLinks[k]));
        }
    }
}

void
PacketBackend::OnOwnerDequeue(uint32_t link, Ptr<const QueueDiscItem> item)
{
    TransferOwnerTag tag;
    if (!item->GetPacket()->FindFirstMatchingByteTag(tag))
    {
        return; // acknowledgements, control frames
    }
    const uint32_t owner = tag.GetOwner();
    if (m_ownerLinkBytes.size() <= owner)
    {
        m_ownerLinkBytes.resize(owner + 1);
    }
    std::vector<double>& bytes = m_ownerLinkBytes[owner];
    if (bytes.size() <= link)
    {
        bytes.resize(m_topology->Links().size(), 0.0);
    }
    bytes[link] += item->GetSize();
}

std::vector<std::vector<double>>
PacketBackend::GetOwnerLinkBytes() const
{
    const size_t nLinks = m_topology ? m_topology->Links().size() : 0;
    if (!m_ownerTagging)
    {
        // One owner: every byte its links sent is its.
        std::vector<double> all(nLinks, 0.0);
        for (size_t k = 0; k < m_linkQdisc.size(); ++k)
        {
            if (m_linkQdisc[k])
            {
                all[m_packetLinks[k]] = m_linkQdisc[k]->GetStats().nTotalSentBytes;
            }
        }
        return {all};
    }
    std::vector<std::vector<double>> out = m_ownerLinkBytes;
    for (auto& v : out)
    {
        v.resize(nLinks, 0.0);
    }
    return out;
}

} // namespace ns3
