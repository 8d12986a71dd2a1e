/*
 * PacketBackend across MPI processes (ns-3's DistributedSimulatorImpl; see
 * doc/packet-backend.md, "Distributed runs (MPI)").
 *
 * Every process builds the whole scenario: all GPUs and the NCCL model above the network run
 * identically everywhere, and every process builds every ns-3 node of the network, each with
 * the system id of the process that owns it (servers' NICs in contiguous blocks of servers,
 * each switch with the process owning most of its NICs, switches without NICs spread to
 * balance). Links between nodes of two processes are ns-3's PointToPointRemoteChannel.
 *
 * A transfer's packets are sent only by the process owning its source NIC; the process owning
 * the destination NIC sees the message arrive and tells every other process when it is
 * delivered (the PCIe hops after the NIC give that notice its lead time), so every process
 * delivers every transfer at the same simulated time, in the same (id) order, and the model
 * above stays identical. Per-link and per-connection counters live where their packets were
 * sent; the statistics sum them over the processes.
 */
#include "ns3/packet-backend.h"

#include "packet-backend-internal.h"

#include "ns3/distributed-run.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#ifdef GPUSIM_HAVE_NS3_MPI
#include "ns3/global-value.h"
#include "ns3/mpi-interface.h"
#include "ns3/mpi-receiver.h"
#include "ns3/simple-net-device.h"
#endif

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE_MASK("GpusimPacketDistributed", LOG_PREFIX_TIME);

using namespace packet_internal;

namespace
{
constexpr uint32_t kNoticeBytes = 16; //!< transfer id, delivery time (ns)
} // namespace

bool
PacketBackend::IsDistributed() const
{
    return m_distributed;
}

std::string
PacketBackend::GetPartitionDescription() const
{
    return m_partition;
}

bool
PacketBackend::IsLocalVertex(uint32_t v) const
{
    return !m_distributed || m_vertexRank[v] == m_rank;
}

void
PacketBackend::BuildPartition()
{
    m_distributed = gpusim::DistributedEnabled();
    m_rank = gpusim::DistributedRank();
    const auto& verts = m_topology->Vertices();
    m_vertexRank.assign(verts.size(), 0);
    if (!m_distributed)
    {
        return;
    }
#ifdef GPUSIM_HAVE_NS3_MPI
    if (m_sampleInterval.IsStrictlyPositive() || m_flowMonitor)
    {
        throw std::invalid_argument("PacketBackend: time series (SampleInterval) and the flow "
                                    "monitor are not supported in distributed runs");
    }
    if (HasFabricEvents())
    {
        throw std::invalid_argument(
            "PacketBackend: fabric events are not supported in distributed runs");
    }
    StringValue impl;
    GlobalValue::GetValueByName("SimulatorImplementationType", impl);
    if (impl.Get() != "ns3::DistributedSimulatorImpl")
    {
        throw std::invalid_argument("PacketBackend: distributed runs need "
                                    "ns3::DistributedSimulatorImpl");
    }
    const uint32_t N = gpusim::DistributedSize();
    const uint32_t S = std::max<uint32_t>(1, m_topology->GetNServers());
    if (S < N)
    {
        throw std::invalid_argument("PacketBackend: " + std::to_string(N) +
                                    " MPI processes for " + std::to_string(S) +
                                    " servers (at least one server per process)");
    }
    // NICs: contiguous blocks of servers.
    std::vector<uint32_t> switchesOf(N, 0);
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        if (verts[v].type == TopoVertexType::Nic)
        {
            m_vertexRank[v] = static_cast<uint32_t>(uint64_t(verts[v].server) * N / S);
        }
    }
    // Switches in vertex order: the process owning most of its NICs, else (a tie, or no NIC:
    // spines) the one with the fewest switches so far.
    const auto& links = m_topology->Links();
    std::vector<std::vector<uint32_t>> nicsOf(verts.size());
    for (const TopoLink& L : links)
    {
        if (L.kind == TopoLinkKind::Nic && verts[L.from].type == TopoVertexType::Nic)
        {
            nicsOf[L.to].push_back(L.from);
        }
    }
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        if (verts[v].type != TopoVertexType::Switch)
        {
            continue;
        }
        std::vector<uint32_t> count(N, 0);
        for (uint32_t nic : nicsOf[v])
        {
            ++count[m_vertexRank[nic]];
        }
        const uint32_t most = *std::max_element(count.begin(), count.end());
        uint32_t best = kNone;
        for (uint32_t r = 0; r < N; ++r)
        {
            if (count[r] == most && (best == kNone || switchesOf[r] < switchesOf[best]))
            {
                best = r;
            }
        }
        m_vertexRank[v] = best;
        ++switchesOf[best];
    }
    // The notice of a delivery leaves the destination's process when the last byte reaches
    // its NIC and must reach every other process before the delivery (one nanosecond early,
    // so that it joins that instant's deliveries in id order). ns-3 grants each process the
    // delay of its links to other processes (the lookahead) beyond the earliest pending
    // event, so the PCIe hops of every packet route (at least one at each end) must outlast
    // every link between processes.
    double minPcie = -1;
    double maxLink = 0;
    for (const TopoLink& L : links)
    {
        if (L.kind == TopoLinkKind::Pcie)
        {
            minPcie = minPcie < 0 ? L.latencySec : std::min(minPcie, L.latencySec);
        }
        else if (IsPacketVertex(verts[L.from].type) && IsPacketVertex(verts[L.to].type) &&
                 m_vertexRank[L.from] != m_vertexRank[L.to])
        {
            maxLink = std::max(maxLink, L.latencySec);
        }
    }
    m_minNoticeLeadNs = minPcie < 0 ? 0 : 2 * std::llround(minPcie * 1e9);
    const int64_t maxLinkNs = std::llround(maxLink * 1e9);
    if (m_minNoticeLeadNs - 1 <= maxLinkNs)
    {
        throw std::invalid_argument(
            "PacketBackend: distributed runs need the GPU<->NIC (PCIe) hops of a route (" +
            std::to_string(m_minNoticeLeadNs) + " ns) to outlast the links between processes (" +
            std::to_string(maxLinkNs) + " ns): the delivery notices need that lead");
    }
    m_maxCrossLinkNs = maxLinkNs;
    gpusim::DistributedPrepareSimulation();

    // What each process got, for the report.
    std::vector<uint32_t> firstServer(N, kNone), lastServer(N, 0), nics(N, 0), sws(N, 0);
    std::vector<std::string> names(N);
    for (uint32_t v = 0; v < verts.size(); ++v)
    {
        const uint32_t r = m_vertexRank[v];
        if (verts[v].type == TopoVertexType::Nic)
        {
            firstServer[r] = std::min(firstServer[r], verts[v].server);
            lastServer[r] = std::max(lastServer[r], verts[v].server);
            ++nics[r];
        }
        else if (verts[v].type == TopoVertexType::Switch)
        {
            ++sws[r];
        }
    }
    std::ostringstream os;
    os << N << " MPI processes (ns-3 DistributedSimulatorImpl)";
    for (uint32_t r = 0; r < N; ++r)
    {
        os << "; process " << r << ": servers " << firstServer[r] << "-" << lastServer[r] << " ("
           << nics[r] << " NICs), " << sws[r] << " switches";
    }
    uint32_t cross = 0;
    for (const TopoLink& L : links)
    {
        if (IsPacketVertex(verts[L.from].type) && IsPacketVertex(verts[L.to].type) &&
            L.reverse > &L - links.data() && m_vertexRank[L.from] != m_vertexRank[L.to])
        {
            ++cross;
        }
    }
    os << "; " << cross << " links between processes";
    m_partition = os.str();
    NS_LOG_INFO(m_partition);
#endif
}

uint32_t
PacketBackend::NodeSystemId(uint32_t vertex) const
{
    return m_distributed ? m_vertexRank[vertex] : 0;
}

void
PacketBackend::BuildNoticeNodes()
{
    if (!m_distributed)
    {
        return;
    }
#ifdef GPUSIM_HAVE_NS3_MPI
    // One node per process (created in the same order everywhere, so with the same ids) whose
    // device receives the delivery notices of the other processes.
    const uint32_t N = gpusim::DistributedSize();
    for (uint32_t r = 0; r < N; ++r)
    {
        Ptr<Node> n = CreateObject<Node>(r);
        Ptr<SimpleNetDevice> dev = CreateObject<SimpleNetDevice>();
        n->AddDevice(dev);
        Ptr<MpiReceiver> rx = CreateObject<MpiReceiver>();
        rx->SetReceiveCallback(MakeCallback(&PacketBackend::OnDeliveryNotice, this));
        dev->AggregateObject(rx);
        m_noticeNodes.push_back(n);
    }
#endif
}

void
PacketBackend::SendDeliveryNotices(uint64_t id, int64_t atNs, int64_t leadNs)
{
#ifdef GPUSIM_HAVE_NS3_MPI
    if (leadNs - 1 <= m_maxCrossLinkNs)
    {
        NS_FATAL_ERROR("PacketBackend: transfer " << id << " has " << leadNs
                                                  << " ns of PCIe hops, not more than the "
                                                     "distributed run's lookahead");
    }
    uint8_t buf[kNoticeBytes];
    for (int b = 0; b < 8; ++b)
    {
        buf[b] = uint8_t(id >> (8 * b));
        buf[8 + b] = uint8_t(uint64_t(atNs) >> (8 * b));
    }
    for (uint32_t r = 0; r < m_noticeNodes.size(); ++r)
    {
        if (r != m_rank)
        {
            MpiInterface::SendPacket(Create<Packet>(buf, kNoticeBytes), NanoSeconds(atNs - 1),
                                     m_noticeNodes[r]->GetId(), 0);
        }
    }
#else
    (void)id;
    (void)atNs;
    (void)leadNs;
#endif
}

void
PacketBackend::OnDeliveryNotice(Ptr<Packet> p)
{
    uint8_t buf[kNoticeBytes];
    p->CopyData(buf, kNoticeBytes);
    uint64_t id = 0;
    uint64_t at = 0;
    for (int b = 0; b < 8; ++b)
    {
        id |= uint64_t(buf[b]) << (8 * b);
        at |= uint64_t(buf[8 + b]) << (8 * b);
    }
    auto it = m_pending.find(id);
    if (it == m_pending.end())
    {
        NS_FATAL_ERROR("PacketBackend: delivery notice for unknown transfer " << id);
    }
    Pending pending = std::move(it->second);
    m_pending.erase(it);
    EnqueueDelivery(int64_t(at), std::move(pending));
}

void
PacketBackend::SumLinkStats(std::vector<LinkStats>& stats) const
{
    if (!m_distributed)
    {
        return;
    }
    // Each link's counters are those of its sending node's process.
    const size_t n = stats.size();
    std::vector<uint64_t> u(7 * n, 0);
    std::vector<double> d(2 * n, 0.0);
    for (size_t k = 0; k < n; ++k)
    {
        const LinkStats& s = stats[k];
        if (!IsLocalVertex(m_topology->Links()[s.link].from))
        {
            continue;
        }
        u[7 * k] = s.txBytes;
        u[7 * k + 1] = s.txPackets;
        u[7 * k + 2] = s.drops;
        u[7 * k + 3] = s.marks;
        u[7 * k + 4] = s.pausesSent;
        u[7 * k + 5] = s.pausesReceived;
        u[7 * k + 6] = s.losslessDrops;
        d[2 * k] = s.pausedUs;
        d[2 * k + 1] = s.meanBacklogBytes;
    }
    gpusim::DistributedSum(u);
    gpusim::DistributedSum(d);
    for (size_t k = 0; k < n; ++k)
    {
        LinkStats& s = stats[k];
        s.txBytes = u[7 * k];
        s.txPackets = u[7 * k + 1];
        s.drops = u[7 * k + 2];
        s.marks = u[7 * k + 3];
        s.pausesSent = u[7 * k + 4];
        s.pausesReceived = u[7 * k + 5];
        s.losslessDrops = u[7 * k + 6];
        s.pausedUs = d[2 * k];
        s.meanBacklogBytes = d[2 * k + 1];
    }
}

uint64_t
PacketBackend::SumOverProcesses(uint64_t local) const
{
    if (!m_distributed)
    {
        return local;
    }
    std::vector<uint64_t> v{local};
    gpusim::DistributedSum(v);
    return v[0];
}

} // namespace ns3
