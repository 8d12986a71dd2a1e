#include "ns3/tcp-transport.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/enum.h"
#include "ns3/inet-socket-address.h"
#include "ns3/log.h"
#include "ns3/object-factory.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-cubic.h"
#include "ns3/tcp-dctcp.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/tcp-socket-state.h"
#include "ns3/type-id.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TcpTransport");
NS_OBJECT_ENSURE_REGISTERED(TcpTransport);

namespace
{

std::string
Lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

/// "ns3::TcpDctcp" -> "Dctcp".
std::string
ShortCcName(const std::string& full)
{
    std::string s = full;
    if (s.rfind("ns3::", 0) == 0)
    {
        s = s.substr(5);
    }
    if (s.rfind("Tcp", 0) == 0 && s.size() > 3)
    {
        s = s.substr(3);
    }
    return s;
}

void
PutU64(uint8_t* b, uint64_t v)
{
    for (int i = 7; i >= 0; --i)
    {
        b[i] = uint8_t(v);
        v >>= 8;
    }
}

uint64_t
GetU64(const uint8_t* b)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
    {
        v = v << 8 | b[i];
    }
    return v;
}

/// Every TcpCongestionOps this ns-3 has, by TypeId. Debian's ns-3 3.37 declares TcpCubic's
/// TypeId parent as TcpSocketBase (and registers it lazily), so besides the TypeId tree the
/// TypeIds under TcpSocketBase are instantiated once and checked with a dynamic cast.
const std::vector<TypeId>&
CongestionControlTypes()
{
    static const std::vector<TypeId> types = [] {
        TcpCubic::GetTypeId(); // registers it
        const TypeId base = TcpCongestionOps::GetTypeId();
        const TypeId object = Object::GetTypeId();
        std::vector<TypeId> out;
        for (uint16_t i = 0; i < TypeId::GetRegisteredN(); ++i)
        {
            const TypeId t = TypeId::GetRegistered(i);
            if (t == base || !t.HasConstructor() || !t.IsChildOf(object))
            {
                continue;
            }
            if (t.IsChildOf(base))
            {
                out.push_back(t);
                continue;
            }
            if (t.IsChildOf(TcpSocketBase::GetTypeId()))
            {
                ObjectFactory f;
                f.SetTypeId(t);
                Ptr<Object> o = f.Create();
                if (dynamic_cast<TcpCongestionOps*>(PeekPointer(o)))
                {
                    out.push_back(t);
                }
                o->Dispose();
            }
        }
        return out;
    }();
    return types;
}

} // namespace

TypeId
TcpTransport::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::TcpTransport")
            .SetParent<PacketTransport>()
            .SetGroupName("Gpusim")
            .AddConstructor<TcpTransport>()
            .AddAttribute("CongestionControl",
                          "TCP congestion control: any TcpCongestionOps of this ns-3, by short "
                          "or full name (NewReno, Cubic, Dctcp, Bbr, ns3::TcpVegas, ...)",
                          StringValue("ns3::TcpDctcp"),
                          MakeStringAccessor(&TcpTransport::SetCongestionControl,
                                             &TcpTransport::GetCongestionControl),
                          MakeStringChecker())
            .AddAttribute("SocketBufferBytes",
                          "Send and receive buffer of every socket (bytes); bounds the window",
                          UintegerValue(4 << 20),
                          MakeUintegerAccessor(&TcpTransport::m_bufferBytes),
                          MakeUintegerChecker<uint32_t>(1 << 14))
            .AddAttribute("InitialCwndSegments",
                          "Initial congestion window (segments)",
                          UintegerValue(10),
                          MakeUintegerAccessor(&TcpTransport::m_initialCwnd),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("MinRto",
                          "Minimum retransmission timeout (ns-3 default is 1 s; datacenter "
                          "stacks use ~1 ms)",
                          TimeValue(MilliSeconds(1)),
                          MakeTimeAccessor(&TcpTransport::m_minRto),
                          MakeTimeChecker(MicroSeconds(1)))
            .AddAttribute("DelAckTimeout",
                          "Delayed-ACK timeout (an ACK is sent every 2 segments or after this)",
                          TimeValue(MicroSeconds(10)),
                          MakeTimeAccessor(&TcpTransport::m_delAckTimeout),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("ConnTimeout",
                          "SYN retransmission timeout",
                          TimeValue(MilliSeconds(10)),
                          MakeTimeAccessor(&TcpTransport::m_connTimeout),
                          MakeTimeChecker(MicroSeconds(1)))
            .AddAttribute("DataRetries",
                          "Retransmissions of one segment before the connection gives up",
                          UintegerValue(6),
                          MakeUintegerAccessor(&TcpTransport::m_dataRetries),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("ClassicEcn",
                          "Negotiate RFC 3168 ECN for congestion controls other than DCTCP "
                          "(DCTCP always uses ECN)",
                          BooleanValue(false),
                          MakeBooleanAccessor(&TcpTransport::m_classicEcn),
                          MakeBooleanChecker())
            .AddAttribute("Port",
                          "Listening port on every host",
                          UintegerValue(7471),
                          MakeUintegerAccessor(&TcpTransport::m_port),
                          MakeUintegerChecker<uint16_t>(1));
    return tid;
}

TcpTransport::TcpTransport()
    : m_cc(TcpDctcp::GetTypeId())
{
}

TcpTransport::~TcpTransport() = default;

void
TcpTransport::DoDispose()
{
    m_conns.clear();
    m_failed.clear();
    m_receivers.clear();
    m_accepted.clear();
    m_listeners.clear();
    m_hosts.clear();
    PacketTransport::DoDispose();
}

std::vector<std::string>
TcpTransport::AvailableCongestionControls()
{
    std::vector<std::string> out;
    for (const TypeId& t : CongestionControlTypes())
    {
        out.push_back(ShortCcName(t.GetName()));
    }
    std::sort(out.begin(), out.end());
    return out;
}

TypeId
TcpTransport::ResolveCongestionControl(const std::string& name)
{
    // LookupByNameFailSafe, never LookupByName: Debian's ns-3 has asserts compiled out and
    // would crash on an unknown name instead of aborting.
    const auto& types = CongestionControlTypes();
    for (const std::string& candidate : {name, "ns3::" + name, "ns3::Tcp" + name})
    {
        TypeId t;
        if (TypeId::LookupByNameFailSafe(candidate, &t) &&
            std::find(types.begin(), types.end(), t) != types.end())
        {
            return t;
        }
    }
    const std::string want = Lower(ShortCcName(name));
    for (const TypeId& t : types)
    {
        if (Lower(ShortCcName(t.GetName())) == want)
        {
            return t;
        }
    }
    std::string known;
    for (const std::string& n : AvailableCongestionControls())
    {
        known += (known.empty() ? "" : ", ") + n;
    }
    throw std::invalid_argument("unknown TCP congestion control '" + name +
                                "' (this ns-3 has: " + known + ")");
}

void
TcpTransport::SetCongestionControl(const std::string& name)
{
    if (!m_hosts.empty())
    {
        throw std::logic_error("TcpTransport: congestion control set after Install");
    }
    m_cc = ResolveCongestionControl(name);
}

std::string
TcpTransport::GetCongestionControl() const
{
    return m_cc.GetName();
}

uint32_t
TcpTransport::GetSegmentSize() const
{
    return m_mss;
}

bool
TcpTransport::UsesEcn() const
{
    return m_classicEcn || m_cc.GetName() == "ns3::TcpDctcp";
}

std::string
TcpTransport::GetName() const
{
    return "tcp/" + ShortCcName(m_cc.GetName());
}

uint32_t
TcpTransport::GetNConnections() const
{
    return static_cast<uint32_t>(m_conns.size() + m_failed.size() + m_remote.size());
}

uint32_t
TcpTransport::GetNFailedConnections() const
{
    return static_cast<uint32_t>(m_failed.size());
}

uint64_t
TcpTransport::GetRetransmissions() const
{
    return m_retransmissions;
}

void
TcpTransport::ConfigureSocket(Ptr<Socket> s) const
{
    s->SetAttribute("SegmentSize", UintegerValue(m_mss));
    s->SetAttribute("SndBufSize", UintegerValue(m_bufferBytes));
    s->SetAttribute("RcvBufSize", UintegerValue(m_bufferBytes));
    s->SetAttribute("InitialCwnd", UintegerValue(m_initialCwnd));
    s->SetAttribute("DelAckTimeout", TimeValue(m_delAckTimeout));
    s->SetAttribute("ConnTimeout", TimeValue(m_connTimeout));
    s->SetAttribute("DataRetries", UintegerValue(m_dataRetries));
    // ns-3 takes RTT samples from timestamps at 1 ms granularity, useless at microsecond RTTs;
    // without them it times segments itself (exact). Also saves 12 header bytes per segment.
    s->SetAttribute("Timestamp", BooleanValue(false));
    s->SetAttribute("MinRto", TimeValue(m_minRto));
    s->SetAttribute("ClockGranularity", TimeValue(MicroSeconds(1)));
    if (m_classicEcn && m_cc.GetName() != "ns3::TcpDctcp")
    {
        s->SetAttribute("UseEcn", EnumValue(TcpSocketState::On));
    }
}

void
TcpTransport::Install(const std::vector<Ptr<Node>>& hosts,
                      const std::vector<Ipv4Address>& addresses,
                      uint32_t mtu)
{
    if (!m_hosts.empty())
    {
        throw std::logic_error("TcpTransport::Install called twice");
    }
    if (mtu < 576)
    {
        throw std::invalid_argument("TcpTransport: MTU " + std::to_string(mtu) + " too small");
    }
    m_hosts = hosts;
    m_addresses = addresses;
    // IP (20) + TCP (20) headers; no options on data segments (no timestamps, SACK blocks only
    // ride on the receiver's ACKs), so segments never exceed the MTU.
    m_mss = mtu - 40;
    // Pacing (BBR turns it on) is capped by TcpSocketState::MaxPacingRate, 4 Gbit/s by default
    // and only settable as a default: raise it (never lower it) above the fastest NIC.
    double fastest = 0;
    for (const Ptr<Node>& h : hosts)
    {
        for (uint32_t d = 0; d < h->GetNDevices(); ++d)
        {
            DataRateValue rate;
            if (h->GetDevice(d)->GetAttributeFailSafe("DataRate", rate))
            {
                fastest = std::max(fastest, double(rate.Get().GetBitRate()));
            }
        }
    }
    TypeId stateTid = TcpSocketState::GetTypeId();
    TypeId::AttributeInformation info;
    if (stateTid.LookupAttributeByName("MaxPacingRate", &info))
    {
        DataRateValue current;
        current.DeserializeFromString(info.initialValue->SerializeToString(info.checker),
                                      info.checker);
        if (double(current.Get().GetBitRate()) < 2 * fastest)
        {
            Config::SetDefault("ns3::TcpSocketState::MaxPacingRate",
                               DataRateValue(DataRate(uint64_t(2 * fastest))));
        }
    }
    for (size_t i = 0; i < hosts.size(); ++i)
    {
        Ptr<TcpL4Protocol> tcp = hosts[i]->GetObject<TcpL4Protocol>();
        tcp->SetAttribute("SocketType", TypeIdValue(m_cc));
        Ptr<Socket> l = Socket::CreateSocket(hosts[i], TcpSocketFactory::GetTypeId());
        ConfigureSocket(l); // accepted sockets are forks of the listener
        if (l->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port)) != 0 || l->Listen() != 0)
        {
            throw std::runtime_error("TcpTransport: cannot listen on port " +
                                     std::to_string(m_port));
        }
        l->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                             MakeCallback(&TcpTransport::OnAccept, this));
        m_listeners.push_back(l);
    }
}

TcpTransport::Connection&
TcpTransport::Open(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost)
{
    auto c = std::make_unique<Connection>();
    c->key = key;
    c->srcHost = srcHost;
    c->dstHost = dstHost;
    c->socket = Socket::CreateSocket(m_hosts.at(srcHost), TcpSocketFactory::GetTypeId());
    ConfigureSocket(c->socket);
    Connection* raw = c.get();
    c->socket->SetConnectCallback(
        Callback<void, Ptr<Socket>>([this, raw](Ptr<Socket>) { Pump(*raw); }),
        Callback<void, Ptr<Socket>>([this, raw](Ptr<Socket>) { Fail(*raw, "connect failed"); }));
    c->socket->SetSendCallback(
        Callback<void, Ptr<Socket>, uint32_t>([this, raw](Ptr<Socket>, uint32_t) { Pump(*raw); }));
    c->socket->SetCloseCallbacks(
        Callback<void, Ptr<Socket>>([this, raw](Ptr<Socket>) { Fail(*raw, "closed by peer"); }),
        Callback<void, Ptr<Socket>>([this, raw](Ptr<Socket>) { Fail(*raw, "error"); }));
    c->socket->TraceConnectWithoutContext(
        "Tx",
        Callback<void, Ptr<const Packet>, const TcpHeader&, Ptr<const TcpSocketBase>>(
            [this, raw](Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
                OnTx(raw, p, h);
            }));
    if (c->socket->Bind() != 0 ||
        c->socket->Connect(InetSocketAddress(m_addresses.at(dstHost), m_port)) != 0)
    {
        throw std::runtime_error("TcpTransport: cannot open a connection from host " +
                                 std::to_string(srcHost) + " to host " + std::to_string(dstHost));
    }
    NS_LOG_INFO("connection GPU " << key.srcGpu << " -> GPU " << key.dstGpu << " key "
                                  << key.flowKey << " (host " << srcHost << " -> " << dstHost
                                  << ")");
    return *m_conns.emplace(key, std::move(c)).first->second;
}

void
TcpTransport::Send(const ConnectionKey& key,
                   uint32_t srcHost,
                   uint32_t dstHost,
                   uint64_t id,
                   uint64_t bytes)
{
    if (m_hosts.empty())
    {
        throw std::logic_error("TcpTransport::Send before Install");
    }
    auto it = m_conns.find(key);
    Connection& c = it != m_conns.end() ? *it->second : Open(key, srcHost, dstHost);
    c.queue.push_back({id, bytes, bytes, false});
    Pump(c);
}

void
TcpTransport::Expect(const ConnectionKey& key, uint32_t, uint32_t, uint64_t, uint64_t)
{
    m_remote.insert(key);
}

void
TcpTransport::Pump(Connection& c)
{
    while (!c.failed && !c.queue.empty())
    {
        Message& m = c.queue.front();
        uint32_t avail = c.socket->GetTxAvailable();
        if (!m.headerSent)
        {
            if (avail < kHeaderBytes)
            {
                return;
            }
            uint8_t h[kHeaderBytes];
            PutU64(h, m.id);
            PutU64(h + 8, m.bytes);
            Ptr<Packet> header = Create<Packet>(h, kHeaderBytes);
            TagOwner(header, m.id);
            if (c.socket->Send(header) < 0)
            {
                return;
            }
            m.headerSent = true;
            avail -= kHeaderBytes;
        }
        // Payload as zero-filled virtual bytes (no memory), kept separate from the header so
        // ns-3 never materialises it.
        const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(m.left, avail));
        if (n > 0)
        {
            Ptr<Packet> payload = Create<Packet>(n);
            TagOwner(payload, m.id);
            if (c.socket->Send(payload) < 0)
            {
                return;
            }
            m.left -= n;
        }
        if (m.left > 0)
        {
            return; // wait for buffer space
        }
        c.queue.pop_front();
    }
}

void
TcpTransport::Fail(Connection& c, const char* why)
{
    if (c.failed)
    {
        return;
    }
    c.failed = true;
    NS_LOG_WARN(Simulator::Now().As(Time::US)
                << " connection GPU " << c.key.srcGpu << " -> GPU " << c.key.dstGpu << " key "
                << c.key.flowKey << " gave up: " << why);
    const ConnectionKey key = c.key;
    auto it = m_conns.find(key);
    if (it != m_conns.end() && it->second.get() == &c)
    {
        m_failed.push_back(std::move(it->second));
        m_conns.erase(it); // a later Send on this key opens a fresh connection
    }
    NotifyFailure(key);
}

void
TcpTransport::OnTx(Connection* c, Ptr<const Packet> p, const TcpHeader& h)
{
    const uint32_t size = p->GetSize();
    if (size == 0)
    {
        return;
    }
    const SequenceNumber32 end = h.GetSequenceNumber() + size;
    if (c->anyTx && h.GetSequenceNumber() < c->highTx)
    {
        ++m_retransmissions;
    }
    if (!c->anyTx || end > c->highTx)
    {
        c->highTx = end;
        c->anyTx = true;
    }
}

void
TcpTransport::OnAccept(Ptr<Socket> s, const Address&)
{
    m_receivers.emplace(PeekPointer(s), Receiver());
    m_accepted.push_back(s);
    s->SetRecvCallback(MakeCallback(&TcpTransport::OnRecv, this));
}

void
TcpTransport::OnRecv(Ptr<Socket> s)
{
    auto it = m_receivers.find(PeekPointer(s));
    if (it == m_receivers.end())
    {
        return;
    }
    Receiver& r = it->second;
    while (true)
    {
        if (r.inPayload && r.left == 0)
        {
            // A message is complete when its last payload byte is read.
            r.inPayload = false;
            NotifyMessage(r.id);
            continue;
        }
        const uint32_t want = r.inPayload
                                  ? static_cast<uint32_t>(std::min<uint64_t>(r.left, 1u << 30))
                                  : kHeaderBytes - r.got;
        Ptr<Packet> p = s->Recv(want, 0);
        if (!p || p->GetSize() == 0)
        {
            return;
        }
        const uint32_t size = p->GetSize();
        if (r.inPayload)
        {
            r.left -= size;
            continue;
        }
        p->CopyData(r.header + r.got, size);
        r.got += size;
        if (r.got == kHeaderBytes)
        {
            r.got = 0;
            r.id = GetU64(r.header);
            r.left = GetU64(r.header + 8);
            r.inPayload = true;
        }
    }
}

} // namespace ns3
