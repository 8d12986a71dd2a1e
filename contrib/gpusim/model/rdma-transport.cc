#include "ns3/rdma-transport.h"

#include "ns3/rdma-port-demux.h"

#include "ns3/data-rate.h"
#include "ns3/enum.h"
#include "ns3/ipv4-header.h"
#include "ns3/ipv4.h"
#include "ns3/log.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/queue-disc.h"
#include "ns3/rdma-header.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/traffic-control-layer.h"
#include "ns3/udp-header.h"
#include "ns3/ipv4-end-point.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/socket.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaTransport");
NS_OBJECT_ENSURE_REGISTERED(RdmaTransport);

namespace
{
constexpr uint8_t kEct0 = 0x02; // ECN-capable transport, ECT(0)
constexpr uint8_t kCe = 0x03;   // congestion experienced
} // namespace

TypeId
RdmaTransport::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RdmaTransport")
            .SetParent<PacketTransport>()
            .SetGroupName("Gpusim")
            .AddConstructor<RdmaTransport>()
            .AddAttribute("CongestionControl",
                          "Per-queue-pair congestion control: none, dcqcn, hpcc, timely, dctcp",
                          StringValue("none"),
                          MakeStringAccessor(&RdmaTransport::SetCongestionControl,
                                             &RdmaTransport::GetCongestionControl),
                          MakeStringChecker())
            .AddAttribute("AckInterval",
                          "In-order data packets per ACK (the last packet of a message is "
                          "always ACKed). 1 as the HPCC ns-3 simulator's default "
                          "(L2_ACK_INTERVAL 1), which HPCC's per-packet INT needs",
                          UintegerValue(1),
                          MakeUintegerAccessor(&RdmaTransport::m_ackInterval),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("RetransmitTimeout",
                          "Go-back-N timer: resend from the oldest unacknowledged packet when "
                          "no ACK advanced for this long",
                          TimeValue(MilliSeconds(1)),
                          MakeTimeAccessor(&RdmaTransport::m_rto),
                          MakeTimeChecker(MicroSeconds(1)))
            .AddAttribute("RetryCount",
                          "Timeouts without progress before the queue pair gives up (7, the "
                          "largest InfiniBand retry_cnt)",
                          UintegerValue(7),
                          MakeUintegerAccessor(&RdmaTransport::m_retryCount),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("CnpInterval",
                          "Receiver: at most one CNP per queue pair per interval (DCQCN's N = "
                          "50 us, Zhu et al. SIGCOMM 2015, section 3)",
                          TimeValue(MicroSeconds(50)),
                          MakeTimeAccessor(&RdmaTransport::m_cnpInterval),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("Dscp",
                          "DSCP of RDMA packets (3: the usual RoCE lossless class)",
                          UintegerValue(3),
                          MakeUintegerAccessor(&RdmaTransport::m_dscp),
                          MakeUintegerChecker<uint8_t>(0, 63))
            .AddAttribute("NicQueuePackets",
                          "The NIC hands a packet to its egress queue only while that queue "
                          "holds fewer packets than this (hardware schedulers keep it short)",
                          UintegerValue(2),
                          MakeUintegerAccessor(&RdmaTransport::m_maxEgressPackets),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("BaseRtt",
                          "Base round-trip time given to the congestion controls (HPCC's T, "
                          "TIMELY's minimum RTT); 0 = each queue pair uses its first RTT sample",
                          TimeValue(Time(0)),
                          MakeTimeAccessor(&RdmaTransport::m_baseRtt),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("ReorderMode",
                          "Receiver on a packet beyond the expected PSN: gbn (discard and NACK: "
                          "go-back-N, as classic RoCE NICs) or tolerant (keep it within "
                          "ReorderWindow and acknowledge once the gap fills, as NICs built for "
                          "adaptive routing and packet spraying)",
                          EnumValue(RdmaTransport::GO_BACK_N),
                          MakeEnumAccessor(&RdmaTransport::m_reorderMode),
                          MakeEnumChecker(RdmaTransport::GO_BACK_N,
                                          "gbn",
                                          RdmaTransport::TOLERANT,
                                          "tolerant"))
            .AddAttribute("ReorderWindow",
                          "Tolerant mode: PSNs above the expected one the receiver keeps (512 "
                          "jumbo frames exceed a 4 MiB switch port buffer, the most one path "
                          "can lag another); beyond it a packet is discarded and NACKed",
                          UintegerValue(512),
                          MakeUintegerAccessor(&RdmaTransport::m_reorderWindow),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("Port",
                          "UDP destination port (RoCEv2: 4791)",
                          UintegerValue(4791),
                          MakeUintegerAccessor(&RdmaTransport::m_port),
                          MakeUintegerChecker<uint16_t>(1))
            .AddTraceSource("QpRate",
                            "A queue pair's pacing rate changed: (qp, bit/s)",
                            MakeTraceSourceAccessor(&RdmaTransport::m_qpRateTrace),
                            "ns3::RdmaTransport::QpRateCallback")
            .AddTraceSource("QpCompletion",
                            "A message of a queue pair fully arrived: (qp, message id)",
                            MakeTraceSourceAccessor(&RdmaTransport::m_qpCompletionTrace),
                            "ns3::RdmaTransport::QpCompletionCallback");
    return tid;
}

RdmaTransport::RdmaTransport()
{
    m_ccFactory.SetTypeId(RdmaCongestionControl::Resolve("none"));
}

RdmaTransport::~RdmaTransport() = default;

void
RdmaTransport::DoDispose()
{
    for (auto& [key, qp] : m_qps)
    {
        Simulator::Cancel(qp->rto);
        if (qp->cc)
        {
            qp->cc->Dispose();
        }
    }
    for (Nic& nic : m_nics)
    {
        Simulator::Cancel(nic.wake);
    }
    m_qps.clear();
    m_qpById.clear();
    m_qpByPort.clear();
    m_receivers.clear();
    m_nics.clear();
    m_hosts.clear();
    PacketTransport::DoDispose();
}

void
RdmaTransport::SetCongestionControl(const std::string& name)
{
    if (!m_hosts.empty())
    {
        throw std::logic_error("RdmaTransport: congestion control set after Install");
    }
    const TypeId t = RdmaCongestionControl::Resolve(name);
    if (t != m_ccFactory.GetTypeId())
    {
        m_ccFactory = ObjectFactory();
        m_ccFactory.SetTypeId(t);
    }
}

std::string
RdmaTransport::GetCongestionControl() const
{
    return m_ccFactory.Create<RdmaCongestionControl>()->GetName();
}

void
RdmaTransport::SetCcAttribute(const std::string& name, const AttributeValue& value)
{
    m_ccFactory.Set(name, value);
}

bool
RdmaTransport::UsesEcn() const
{
    return true; // RoCEv2 NICs send every packet ECN-capable; marks matter to DCQCN/DCTCP
}

std::string
RdmaTransport::GetName() const
{
    return "rdma/" + GetCongestionControl();
}

uint32_t
RdmaTransport::GetNConnections() const
{
    return static_cast<uint32_t>(m_qps.size());
}

uint64_t
RdmaTransport::GetRetransmissions() const
{
    return m_counters.retransmitted;
}

const RdmaTransport::Counters&
RdmaTransport::GetCounters() const
{
    return m_counters;
}

std::vector<const RdmaQueuePair*>
RdmaTransport::GetQueuePairs() const
{
    return std::vector<const RdmaQueuePair*>(m_qpById.begin(), m_qpById.end());
}

uint32_t
RdmaTransport::GetPayloadPerPacket() const
{
    return m_payload;
}

void
RdmaTransport::Install(const std::vector<Ptr<Node>>& hosts,
                       const std::vector<Ipv4Address>& addresses,
                       uint32_t mtu)
{
    if (!m_hosts.empty())
    {
        throw std::logic_error("RdmaTransport::Install called twice");
    }
    Ptr<RdmaCongestionControl> probe = m_ccFactory.Create<RdmaCongestionControl>();
    const uint32_t maxInt = probe->UsesInt() ? RdmaHeader::kMaxHops * RdmaHeader::kHopBytes : 0;
    if (mtu < kOverheadBytes + maxInt + 64)
    {
        throw std::invalid_argument("RdmaTransport: MTU " + std::to_string(mtu) + " too small");
    }
    m_usesCnp = probe->UsesCnp();
    m_hosts = hosts;
    m_addresses = addresses;
    m_mtu = mtu;
    // Room for the INT hops the switches may add, so stamped packets still fit the MTU.
    m_payload = mtu - kOverheadBytes - maxInt;
    m_nics.resize(hosts.size());
    for (uint32_t h = 0; h < hosts.size(); ++h)
    {
        Nic& nic = m_nics[h];
        Ptr<Ipv4> ipv4 = hosts[h]->GetObject<Ipv4>();
        nic.ipv4 = ipv4;
        nic.udp = hosts[h]->GetObject<UdpL4Protocol>();
        Ptr<NetDevice> dev = ipv4->GetNetDevice(1); // the host's fabric interface
        DataRateValue rate;
        dev->GetAttribute("DataRate", rate);
        nic.lineBps = double(rate.Get().GetBitRate());
        nic.egress = hosts[h]->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(dev);
        if (!nic.egress)
        {
            throw std::logic_error("RdmaTransport: host without an egress queue disc");
        }
        nic.egress->TraceConnectWithoutContext(
            "Dequeue", MakeCallback(&RdmaTransport::OnEgressDequeue, this, h));
        nic.listener = Socket::CreateSocket(hosts[h], UdpSocketFactory::GetTypeId());
        nic.listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        nic.listener->SetIpTos(uint8_t(m_dscp << 2) | kEct0);
        nic.listener->SetIpRecvTos(true);
        nic.listener->SetRecvCallback(MakeCallback(&RdmaTransport::OnDataRecv, this, h));
        RdmaPortDemux::Install(hosts[h], MakeCallback(&RdmaTransport::OnDatagram, this, h));
    }
}

RdmaQueuePair&
RdmaTransport::Open(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost,
                    bool localSender)
{
    auto it = m_qps.find(key);
    if (it != m_qps.end())
    {
        return *it->second;
    }
    const uint32_t id = static_cast<uint32_t>(m_qpById.size());
    auto qp = std::make_unique<RdmaQueuePair>(id, key, srcHost, dstHost, m_payload);
    if (!localSender)
    {
        qp->cc = m_ccFactory.Create<RdmaCongestionControl>();
        RdmaQueuePair* raw = qp.get();
        m_qpById.push_back(raw);
        m_qps.emplace(key, std::move(qp));
        return *raw;
    }
    // The next ephemeral port of the host, as a bound UDP socket would take it (ns-3 3.37's
    // UdpSocketImpl::Bind -> UdpL4Protocol::Allocate), without the socket: ~1 KiB less per QP,
    // which an AllToAll opens n^2 of. ACKs for the port come through RdmaPortDemux.
    qp->endPoint = m_nics[srcHost].udp->Allocate();
    if (!qp->endPoint)
    {
        throw std::runtime_error("RdmaTransport: host " + std::to_string(srcHost) +
                                 " has no free UDP port for another queue pair");
    }
    qp->cc = m_ccFactory.Create<RdmaCongestionControl>();
    qp->cc->TraceConnectWithoutContext("Rate",
                                       MakeCallback(&RdmaTransport::OnQpRate, this, id));
    qp->cc->Start(m_nics[srcHost].lineBps, m_mtu, m_baseRtt);
    qp->nextAvail = Simulator::Now();
    RdmaQueuePair* raw = qp.get();
    m_qpByPort[(uint64_t(srcHost) << 16) | qp->endPoint->GetLocalPort()] = raw;
    m_qpById.push_back(raw);
    m_nics[srcHost].qps.push_back(raw);
    m_qps.emplace(key, std::move(qp));
    NS_LOG_INFO("QP " << id << ": GPU " << key.srcGpu << " -> " << key.dstGpu << " key "
                      << key.flowKey);
    return *raw;
}

void
RdmaTransport::OnQpRate(uint32_t qp, double /*oldBps*/, double newBps)
{
    m_qpRateTrace(qp, newBps);
}

void
RdmaTransport::Send(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost, uint64_t id,
                    uint64_t bytes)
{
    if (srcHost >= m_hosts.size() || dstHost >= m_hosts.size())
    {
        throw std::out_of_range("RdmaTransport::Send: host index out of range");
    }
    RdmaQueuePair& qp = Open(key, srcHost, dstHost);
    if (qp.failed)
    {
        NS_LOG_WARN("message " << id << " posted on a failed queue pair");
        return;
    }
    qp.Post(id, bytes);
    SchedulePump(srcHost);
}

void
RdmaTransport::Expect(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost,
                      uint64_t /*id*/, uint64_t /*bytes*/)
{
    if (srcHost >= m_hosts.size() || dstHost >= m_hosts.size())
    {
        throw std::out_of_range("RdmaTransport::Expect: host index out of range");
    }
    Open(key, srcHost, dstHost, false);
}

// ---- the NIC scheduler ----

void
RdmaTransport::SchedulePump(uint32_t host)
{
    Nic& nic = m_nics[host];
    if (!nic.pumpPending)
    {
        nic.pumpPending = true;
        Simulator::ScheduleNow(&RdmaTransport::Pump, this, host);
    }
}

void
RdmaTransport::OnEgressDequeue(uint32_t host, Ptr<const QueueDiscItem> /*item*/)
{
    Nic& nic = m_nics[host];
    if (nic.blocked && nic.egress->GetNPackets() < m_maxEgressPackets)
    {
        nic.blocked = false;
        SchedulePump(host);
    }
}

RdmaQueuePair*
RdmaTransport::PickQp(Nic& nic, Time now, Time* earliest)
{
    const size_t n = nic.qps.size();
    for (size_t i = 0; i < n; ++i)
    {
        const size_t k = (nic.rr + i) % n;
        RdmaQueuePair* qp = nic.qps[k];
        if (qp->failed || !qp->HasUnsent())
        {
            continue;
        }
        const uint64_t window = qp->cc->GetWindowBytes();
        if (window > 0 && qp->BytesInFlight() >= window)
        {
            continue; // an ACK reopens it
        }
        if (qp->nextAvail > now)
        {
            *earliest = std::min(*earliest, qp->nextAvail);
            continue;
        }
        nic.rr = (k + 1) % n;
        return qp;
    }
    return nullptr;
}

void
RdmaTransport::Pump(uint32_t host)
{
    Nic& nic = m_nics[host];
    nic.pumpPending = false;
    const Time now = Simulator::Now();
    while (true)
    {
        if (nic.egress->GetNPackets() >= m_maxEgressPackets)
        {
            nic.blocked = true; // the egress queue's next dequeue wakes us
            return;
        }
        Time earliest = Time::Max();
        RdmaQueuePair* qp = PickQp(nic, now, &earliest);
        if (!qp)
        {
            if (earliest != Time::Max() && (!nic.wake.IsRunning() || nic.wakeAt > earliest))
            {
                Simulator::Cancel(nic.wake);
                nic.wakeAt = earliest;
                nic.wake = Simulator::Schedule(earliest - now, &RdmaTransport::Pump, this, host);
            }
            return;
        }
        SendData(*qp);
    }
}

void
RdmaTransport::SendData(RdmaQueuePair& qp)
{
    const RdmaQueuePair::Segment seg = qp.Next();
    const Time now = Simulator::Now();
    RdmaHeader h;
    h.opcode = RdmaHeader::DATA;
    h.flags = (seg.last ? RdmaHeader::LAST : 0) | (qp.cc->UsesInt() ? RdmaHeader::WANT_INT : 0);
    h.qp = qp.Id();
    h.psn = seg.psn;
    h.msgId = seg.msgId;
    h.tsNs = uint64_t(now.GetNanoSeconds());
    Ptr<Packet> p = Create<Packet>(seg.payload);
    TagOwner(p, seg.msgId);
    p->AddHeader(h);
    qp.Advance();
    ++qp.txPackets;
    ++m_counters.dataPackets;
    const uint32_t wire = p->GetSize() + 20 + 8; // + IPv4 and UDP headers
    qp.cc->OnSend(wire);
    // Hardware rate limiter: the next packet of this QP no earlier than size / rate from now.
    qp.nextAvail = now + PicoSeconds(int64_t(wire * 8e12 / qp.cc->GetRateBps()));
    if (!qp.rto.IsRunning())
    {
        ArmRto(qp);
    }
    SendDatagram(qp, p);
}

void
RdmaTransport::SendDatagram(RdmaQueuePair& qp, Ptr<Packet> p)
{
    // What ns-3 3.37's UdpSocketImpl::DoSendTo does for a socket bound to any address,
    // connected to the peer's RDMA port, with IP_TOS set: the same packet tags (the ToS, the
    // priority it maps to, do-not-fragment off), the same RouteOutput call and the same
    // UdpL4Protocol::Send, so the packets, ports and routes are those the socket sent.
    const uint8_t tos = uint8_t(m_dscp << 2) | kEct0;
    SocketIpTosTag tosTag;
    tosTag.SetTos(tos);
    p->ReplacePacketTag(tosTag);
    if (const uint8_t priority = Socket::IpTos2Priority(tos))
    {
        SocketPriorityTag priorityTag;
        priorityTag.SetPriority(priority);
        p->ReplacePacketTag(priorityTag);
    }
    SocketSetDontFragmentTag dontFragment;
    dontFragment.Disable();
    p->AddPacketTag(dontFragment);
    Nic& nic = m_nics[qp.SrcHost()];
    const Ipv4Address dst = m_addresses[qp.DstHost()];
    Ipv4Header header;
    header.SetDestination(dst);
    header.SetProtocol(UdpL4Protocol::PROT_NUMBER);
    Socket::SocketErrno err;
    Ptr<Ipv4Route> route = nic.ipv4->GetRoutingProtocol()->RouteOutput(p, header, nullptr, err);
    if (!route)
    {
        NS_LOG_LOGIC("QP " << qp.Id() << ": no route to " << dst << ", packet not sent");
        return; // as the socket's Send failing: go-back-N resends it after the timeout
    }
    nic.udp->Send(p, route->GetSource(), dst, qp.endPoint->GetLocalPort(), m_port, route);
}

// ---- reliability ----

void
RdmaTransport::ArmRto(RdmaQueuePair& qp)
{
    qp.lastProgress = Simulator::Now();
    qp.rto = Simulator::Schedule(m_rto, &RdmaTransport::OnRto, this, &qp);
}

void
RdmaTransport::OnRto(RdmaQueuePair* qp)
{
    if (!qp->HasOutstanding())
    {
        return; // everything acknowledged; the next send re-arms
    }
    const Time now = Simulator::Now();
    if (now - qp->lastProgress < m_rto)
    {
        // ACKs advanced since the timer was set: wait the rest of the timeout.
        qp->rto = Simulator::Schedule(qp->lastProgress + m_rto - now, &RdmaTransport::OnRto,
                                      this, qp);
        return;
    }
    ++m_counters.timeouts;
    if (++qp->retries > m_retryCount)
    {
        qp->failed = true;
        NS_LOG_WARN("QP " << qp->Id() << " gave up after " << m_retryCount << " timeouts");
        NotifyFailure(qp->Key());
        return;
    }
    m_counters.retransmitted += qp->GoBackTo(qp->SndUna());
    qp->nextAvail = now;
    ArmRto(*qp);
    SchedulePump(qp->SrcHost());
}

void
RdmaTransport::OnAckPacket(RdmaQueuePair& qp, Ptr<Packet> p)
{
    RdmaHeader h;
    p->RemoveHeader(h);
    if (qp.failed)
    {
        return;
    }
    if (h.opcode == RdmaHeader::CNP)
    {
        qp.cc->OnCnp();
    }
    else if (h.opcode == RdmaHeader::ACK || h.opcode == RdmaHeader::NACK)
    {
        HandleAck(qp, h);
    }
}

void
RdmaTransport::HandleAck(RdmaQueuePair& qp, const RdmaHeader& h)
{
    const Time now = Simulator::Now();
    RdmaAckInfo info;
    info.nack = h.opcode == RdmaHeader::NACK;
    info.ecnEcho = h.flags & RdmaHeader::ECN_ECHO;
    info.rtt = now - NanoSeconds(int64_t(h.tsNs));
    info.hops = &h.hops;
    info.ackPsn = h.psn;
    info.sndNxt = qp.SndNxt();
    info.newlyAckedBytes = qp.Acknowledge(h.psn);
    qp.ackedBytes += info.newlyAckedBytes;
    if (info.newlyAckedBytes > 0 || (info.nack && h.psn > qp.SndUna()))
    {
        qp.retries = 0;
        qp.lastProgress = now;
    }
    bool resend = false;
    if (info.nack)
    {
        const uint32_t n = qp.GoBackTo(h.psn);
        m_counters.retransmitted += n;
        resend = n > 0;
    }
    qp.cc->OnAck(info);
    if (resend || qp.cc->GetWindowBytes() > 0)
    {
        SchedulePump(qp.SrcHost());
    }
}

// ---- the receiver ----

bool
RdmaTransport::OnDatagram(uint32_t host, Ptr<Packet> p, const Ipv4Header& ip, const UdpHeader& udp)
{
    // What ns-3's UdpSocketImpl::ForwardUp would hand the socket callbacks, without its scan
    // over every socket of the node (RdmaPortDemux).
    if (udp.GetDestinationPort() == m_port)
    {
        UdpHeader removed;
        p->RemoveHeader(removed);
        OnDataPacket(m_nics[host].listener, InetSocketAddress(ip.GetSource(), udp.GetSourcePort()),
                     p, (ip.GetTos() & kCe) == kCe);
        return true;
    }
    auto it = m_qpByPort.find((uint64_t(host) << 16) | udp.GetDestinationPort());
    if (it == m_qpByPort.end())
    {
        return false;
    }
    UdpHeader removed;
    p->RemoveHeader(removed);
    OnAckPacket(*it->second, p);
    return true;
}

void
RdmaTransport::OnDataRecv(uint32_t /*host*/, Ptr<Socket> s)
{
    Address from;
    while (Ptr<Packet> p = s->RecvFrom(from))
    {
        SocketIpTosTag tos;
        const bool ce = p->RemovePacketTag(tos) && (tos.GetTos() & kCe) == kCe;
        OnDataPacket(s, from, p, ce);
    }
}

void
RdmaTransport::OnDataPacket(Ptr<Socket> listener, const Address& from, Ptr<Packet> p, bool ce)
{
    RdmaHeader h;
    p->RemoveHeader(h);
    if (h.opcode == RdmaHeader::DATA)
    {
        HandleData(listener, from, h, ce);
    }
}

void
RdmaTransport::HandleData(Ptr<Socket> s, const Address& from, const RdmaHeader& h, bool ce)
{
    if (h.qp >= m_receivers.size())
    {
        m_receivers.resize(std::max<size_t>(h.qp + 1, m_qpById.size()));
    }
    Receiver& r = m_receivers[h.qp];
    const Time now = Simulator::Now();
    if (ce)
    {
        ++m_counters.cePackets;
        if (m_usesCnp && (r.lastCnp == Time::Min() || now - r.lastCnp >= m_cnpInterval))
        {
            r.lastCnp = now;
            Reply(s, from, RdmaHeader::CNP, h, r.expected, false);
        }
    }
    if (h.psn == r.expected && r.held.empty())
    {
        ++r.expected;
        r.nacked = false;
        const bool last = h.flags & RdmaHeader::LAST;
        if (++r.sinceAck >= m_ackInterval || last)
        {
            r.sinceAck = 0;
            Reply(s, from, RdmaHeader::ACK, h, r.expected, ce);
        }
        if (last)
        {
            m_qpCompletionTrace(h.qp, h.msgId);
            NotifyMessage(h.msgId);
        }
        return;
    }
    if (h.psn == r.expected)
    {
        // Tolerant mode: this packet fills the gap; the packets held behind it follow in
        // order, then one cumulative ACK covers them all.
        r.nacked = false;
        bool anyLast = Accept(r, h.qp, h.msgId, h.flags & RdmaHeader::LAST);
        uint32_t advanced = 1;
        for (auto it = r.held.begin(); it != r.held.end() && it->first == r.expected;
             it = r.held.erase(it))
        {
            anyLast = Accept(r, h.qp, it->second.first, it->second.second) || anyLast;
            ++advanced;
        }
        r.sinceAck += advanced;
        if (r.sinceAck >= m_ackInterval || anyLast)
        {
            r.sinceAck = 0;
            Reply(s, from, RdmaHeader::ACK, h, r.expected, ce);
        }
        return;
    }
    if (m_reorderMode == TOLERANT && h.psn > r.expected && h.psn - r.expected < m_reorderWindow)
    {
        if (r.held.emplace(h.psn, std::make_pair(h.msgId, bool(h.flags & RdmaHeader::LAST)))
                .second)
        {
            ++m_counters.reordered;
        }
        else
        {
            ++m_counters.outOfOrder; // held already: a duplicate
        }
        return;
    }
    ++m_counters.outOfOrder;
    if (h.psn > r.expected)
    {
        if (!r.nacked)
        {
            r.nacked = true; // one NACK per gap; the sender's timer covers a lost NACK
            Reply(s, from, RdmaHeader::NACK, h, r.expected, ce);
        }
        return;
    }
    Reply(s, from, RdmaHeader::ACK, h, r.expected, ce); // a duplicate: re-ACK
}

bool
RdmaTransport::Accept(Receiver& r, uint32_t qp, uint64_t msgId, bool last)
{
    ++r.expected;
    if (last)
    {
        m_qpCompletionTrace(qp, msgId);
        NotifyMessage(msgId);
    }
    return last;
}

void
RdmaTransport::Reply(Ptr<Socket> s, const Address& to, uint8_t op, const RdmaHeader& data,
                     uint32_t psn, bool ce)
{
    RdmaHeader a;
    a.opcode = op;
    a.flags = (ce ? RdmaHeader::ECN_ECHO : 0) | (data.flags & RdmaHeader::WANT_INT);
    a.qp = data.qp;
    a.psn = psn;
    a.tsNs = data.tsNs;
    if (op == RdmaHeader::CNP)
    {
        a.flags &= uint8_t(~RdmaHeader::WANT_INT);
    }
    else
    {
        a.hops = data.hops; // HPCC: the INT of the acknowledged packet goes back
    }
    Ptr<Packet> p = Create<Packet>(0);
    p->AddHeader(a);
    // ns-3's UDP SendTo on an unconnected socket ignores the socket's IP_TOS; the tag is what
    // Ipv4L3Protocol reads, so ACKs/NACKs/CNPs travel in the lossless class like the data.
    SocketIpTosTag tos;
    tos.SetTos(uint8_t(m_dscp << 2) | kEct0);
    p->ReplacePacketTag(tos);
    s->SendTo(p, 0, to);
    switch (op)
    {
    case RdmaHeader::ACK:
        ++m_counters.ackPackets;
        break;
    case RdmaHeader::NACK:
        ++m_counters.nackPackets;
        break;
    default:
        ++m_counters.cnpPackets;
    }
}

} // namespace ns3
