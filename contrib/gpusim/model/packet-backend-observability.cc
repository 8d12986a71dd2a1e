// PacketBackend outputs of the RDMA transport and PFC: per-QP rates and counters, pauses per
// port, in the JSON, the CSV tables and Perfetto counter tracks. Without RDMA/PFC these add
// nothing, so the TCP outputs stay as they were (apart from the queue counter tracks).
#include "ns3/packet-backend.h"
#include "ns3/distributed-run.h"
#include "ns3/pfc-controller.h"
#include "ns3/rdma-transport.h"

#include <sstream>

namespace ns3
{

namespace
{

double
Us(Time t)
{
    return t.GetNanoSeconds() / 1e3;
}

} // namespace

void
PacketBackend::SampleQpRates()
{
    auto rdma = DynamicCast<RdmaTransport>(m_transport);
    if (!rdma)
    {
        return;
    }
    std::vector<float> rates;
    for (const RdmaQueuePair* qp : rdma->GetQueuePairs())
    {
        rates.push_back(float(qp->cc->GetRateBps()));
    }
    m_qpRateSeries.push_back(std::move(rates));
}

const std::vector<std::vector<float>>&
PacketBackend::GetQpRateSeries() const
{
    return m_qpRateSeries;
}

void
PacketBackend::WriteRdmaJson(gpusim::JsonWriter& j) const
{
    auto rdma = DynamicCast<RdmaTransport>(m_transport);
    if (!rdma)
    {
        return;
    }
    RdmaTransport::Counters c = rdma->GetCounters();
    const auto qps = rdma->GetQueuePairs();
    // Distributed runs: counters from every process; a queue pair's from its sender's.
    std::vector<uint64_t> sums{c.dataPackets, c.ackPackets, c.nackPackets, c.cnpPackets,
                               c.cePackets,   c.timeouts,   c.retransmitted, c.outOfOrder,
                               c.reordered};
    std::vector<double> qpRates(qps.size(), 0.0);
    for (size_t i = 0; i < qps.size(); ++i)
    {
        const bool local = !m_distributed || qps[i]->endPoint != nullptr;
        sums.push_back(local ? qps[i]->txPackets : 0);
        sums.push_back(local ? qps[i]->ackedBytes : 0);
        sums.push_back(local && qps[i]->failed ? 1 : 0);
        qpRates[i] = local ? qps[i]->cc->GetRateBps() : 0.0;
    }
    if (m_distributed)
    {
        gpusim::DistributedSum(sums);
        gpusim::DistributedSum(qpRates);
    }
    c.dataPackets = sums[0];
    c.ackPackets = sums[1];
    c.nackPackets = sums[2];
    c.cnpPackets = sums[3];
    c.cePackets = sums[4];
    c.timeouts = sums[5];
    c.retransmitted = sums[6];
    c.outOfOrder = sums[7];
    c.reordered = sums[8];
    j.Key("rdma").BeginObject();
    j.Key("congestion_control").String(rdma->GetCongestionControl());
    j.Key("data_packets").Uint(c.dataPackets).Key("acks").Uint(c.ackPackets);
    j.Key("nacks").Uint(c.nackPackets).Key("cnps").Uint(c.cnpPackets);
    j.Key("ce_marked_packets").Uint(c.cePackets).Key("timeouts").Uint(c.timeouts);
    j.Key("retransmitted_packets").Uint(c.retransmitted);
    j.Key("out_of_order_packets").Uint(c.outOfOrder);
    j.Key("reordered_packets").Uint(c.reordered);
    j.Key("queue_pairs").BeginArray();
    for (size_t i = 0; i < qps.size(); ++i)
    {
        const RdmaQueuePair* qp = qps[i];
        j.BeginObject().Key("id").Uint(qp->Id());
        j.Key("src_gpu").Uint(qp->Key().srcGpu).Key("dst_gpu").Uint(qp->Key().dstGpu);
        j.Key("flow_key").Uint(qp->Key().flowKey);
        j.Key("tx_packets").Uint(sums[9 + 3 * i]).Key("acked_bytes").Uint(sums[10 + 3 * i]);
        j.Key("rate_gbps").Double(qpRates[i] / 1e9);
        j.Key("failed").Bool(sums[11 + 3 * i] != 0);
        j.Key("rate_gbps_samples").BeginArray();
        for (const auto& sample : m_qpRateSeries)
        {
            j.Fixed(i < sample.size() ? sample[i] / 1e9 : 0.0, 3);
        }
        j.EndArray().EndObject();
    }
    j.EndArray().EndObject();
}

void
PacketBackend::WritePfcJson(gpusim::JsonWriter& j) const
{
    if (!m_pfc || !m_built)
    {
        return;
    }
    j.Key("pfc").BeginObject();
    j.Key("pauses_sent").Uint(GetTotalPauses());
    j.Key("ports").BeginArray();
    for (const LinkStats& s : GetLinkStats())
    {
        j.BeginObject().Key("link").Uint(s.link).Key("from").String(s.from).Key("to").String(s.to);
        j.Key("pauses_sent").Uint(s.pausesSent).Key("pauses_received").Uint(s.pausesReceived);
        j.Key("paused_us").Double(s.pausedUs).Key("lossless_drops").Uint(s.losslessDrops);
        j.EndObject();
    }
    j.EndArray().EndObject();
}

void
PacketBackend::WriteRdmaCsv(const std::string& prefix) const
{
    if (auto rdma = DynamicCast<RdmaTransport>(m_transport))
    {
        std::ostringstream q;
        q << "t_us,qp,src_gpu,dst_gpu,rate_gbps\n";
        const auto qps = rdma->GetQueuePairs();
        for (size_t i = 0; i < m_qpRateSeries.size() && i < m_sampleTimes.size(); ++i)
        {
            for (size_t k = 0; k < m_qpRateSeries[i].size(); ++k)
            {
                q << Us(m_sampleTimes[i]) << "," << k << "," << qps[k]->Key().srcGpu << ","
                  << qps[k]->Key().dstGpu << "," << m_qpRateSeries[i][k] / 1e9 << "\n";
            }
        }
        gpusim::WriteFileAtomically(prefix + "-qps.csv", q.str());
    }
    if (m_pfc && m_built)
    {
        std::ostringstream p;
        p << "link,from,to,pauses_sent,pauses_received,paused_us,lossless_drops\n";
        for (const LinkStats& s : GetLinkStats())
        {
            p << s.link << "," << s.from << "," << s.to << "," << s.pausesSent << ","
              << s.pausesReceived << "," << s.pausedUs << "," << s.losslessDrops << "\n";
        }
        gpusim::WriteFileAtomically(prefix + "-pfc.csv", p.str());
    }
}

void
PacketBackend::WriteTraceCounters(gpusim::JsonWriter& w) const
{
    if (m_sampleTimes.empty())
    {
        return;
    }
    const uint32_t pid = 1u << 20; // a "network" process after the ranks
    w.BeginObject().Key("ph").String("M").Key("name").String("process_name");
    w.Key("pid").Uint(pid).Key("tid").Int(0);
    w.Key("args").BeginObject().Key("name").String("network").EndObject().EndObject();
    const auto& verts = m_topology->Vertices();
    auto counter = [&](const std::string& name, double ts, const char* arg, double v) {
        w.BeginObject().Key("ph").String("C").Key("name").String(name);
        w.Key("pid").Uint(pid).Key("ts").Double(ts);
        w.Key("args").BeginObject().Key(arg).Double(v).EndObject().EndObject();
    };
    for (uint32_t k = 0; k < m_packetLinks.size(); ++k)
    {
        const TopoLink& L = m_topology->Links()[m_packetLinks[k]];
        const std::string name = "queue " + verts[L.from].name + "->" + verts[L.to].name;
        for (size_t i = 0; i < m_sampleTimes.size(); ++i)
        {
            counter(name, Us(m_sampleTimes[i]), "bytes", m_backlogSeries[k][i]);
        }
    }
    if (auto rdma = DynamicCast<RdmaTransport>(m_transport))
    {
        const auto qps = rdma->GetQueuePairs();
        for (size_t q = 0; q < qps.size(); ++q)
        {
            const std::string name = "rate qp" + std::to_string(q) + " GPU " +
                                     std::to_string(qps[q]->Key().srcGpu) + "->" +
                                     std::to_string(qps[q]->Key().dstGpu);
            for (size_t i = 0; i < m_qpRateSeries.size() && i < m_sampleTimes.size(); ++i)
            {
                if (q < m_qpRateSeries[i].size())
                {
                    counter(name, Us(m_sampleTimes[i]), "gbps", m_qpRateSeries[i][q] / 1e9);
                }
            }
        }
    }
}

} // namespace ns3
