/*
 * TcpTransport: PacketTransport over ns-3 TCP. One persistent connection per
 * (source GPU, destination GPU, flow key), opened on first use, like NCCL's. Messages are framed
 * in the byte stream by a 16-byte header (transfer id, payload length), so the receiver reports
 * each completion by the id it read from the stream, never by port numbers.
 */
#ifndef GPUSIM_TCP_TRANSPORT_H
#define GPUSIM_TCP_TRANSPORT_H

#include "ns3/nstime.h"
#include "ns3/packet-transport.h"
#include "ns3/sequence-number.h"
#include "ns3/socket.h"

#include <deque>
#include <map>
#include <set>
#include <memory>
#include <unordered_map>

namespace ns3
{

class Packet;
class TcpHeader;
class TcpSocketBase;

class TcpTransport : public PacketTransport
{
  public:
    static TypeId GetTypeId();
    TcpTransport();
    ~TcpTransport() override;

    /// Bytes of framing before each message's payload.
    static constexpr uint32_t kHeaderBytes = 16;

    /// Resolves a congestion control name: "dctcp", "Dctcp", "TcpDctcp" or "ns3::TcpDctcp"
    /// (case-insensitive) to a TcpCongestionOps subclass. Throws std::invalid_argument naming
    /// the available ones otherwise.
    static TypeId ResolveCongestionControl(const std::string& name);
    /// Short names of the TcpCongestionOps subclasses this ns-3 has (NewReno, Cubic, ...).
    static std::vector<std::string> AvailableCongestionControls();

    /// Throws std::invalid_argument for an unknown name (see ResolveCongestionControl).
    void SetCongestionControl(const std::string& name);
    std::string GetCongestionControl() const; //!< full TypeId name, e.g. ns3::TcpDctcp
    uint32_t GetSegmentSize() const;          //!< MSS derived from the MTU at Install

    // PacketTransport
    void Install(const std::vector<Ptr<Node>>& hosts,
                 const std::vector<Ipv4Address>& addresses,
                 uint32_t mtu) override;
    void Send(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost, uint64_t id,
              uint64_t bytes) override;
    /// Distributed runs: counts the connection another process opens for this message.
    void Expect(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost, uint64_t id,
                uint64_t bytes) override;
    bool UsesEcn() const override;
    std::string GetName() const override;
    uint32_t GetNConnections() const override;
    uint64_t GetRetransmissions() const override;
    uint32_t GetNFailedConnections() const;

  protected:
    void DoDispose() override;

  private:
    struct Message
    {
        uint64_t id = 0;
        uint64_t bytes = 0;      //!< payload length
        uint64_t left = 0;       //!< payload bytes not yet handed to the socket
        bool headerSent = false; //!< framing header handed to the socket
    };

    struct Connection
    {
        ConnectionKey key;
        uint32_t srcHost = 0;
        uint32_t dstHost = 0;
        Ptr<Socket> socket;
        std::deque<Message> queue; //!< messages not fully handed to the socket
        bool failed = false;
        bool anyTx = false;          //!< highTx is valid
        SequenceNumber32 highTx;     //!< end of the highest data sent so far
    };

    /// Framing state of one accepted socket.
    struct Receiver
    {
        uint8_t header[kHeaderBytes] = {};
        uint32_t got = 0;       //!< header bytes read so far
        uint64_t id = 0;        //!< current message
        uint64_t left = 0;      //!< payload bytes still to come
        bool inPayload = false; //!< header complete, reading payload
    };

    Connection& Open(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost);
    void ConfigureSocket(Ptr<Socket> s) const;
    void Pump(Connection& c);
    void Fail(Connection& c, const char* why);
    void OnAccept(Ptr<Socket> s, const Address& from);
    void OnRecv(Ptr<Socket> s);
    void OnTx(Connection* c, Ptr<const Packet> p, const TcpHeader& h);

    std::vector<Ptr<Node>> m_hosts;           //!< host i
    std::vector<Ipv4Address> m_addresses;     //!< address of host i
    std::vector<Ptr<Socket>> m_listeners;     //!< one per host
    std::map<ConnectionKey, std::unique_ptr<Connection>> m_conns; //!< live connections
    std::set<ConnectionKey> m_remote; //!< connections other processes opened (Expect)
    std::vector<std::unique_ptr<Connection>> m_failed;            //!< given up
    std::unordered_map<const Socket*, Receiver> m_receivers;      //!< per accepted socket
    std::vector<Ptr<Socket>> m_accepted;      //!< keeps accepted sockets alive

    TypeId m_cc;                 //!< congestion control
    uint32_t m_mss = 0;          //!< segment size (MTU - 40)
    uint32_t m_bufferBytes = 0;  //!< socket send/receive buffer
    uint32_t m_initialCwnd = 0;  //!< segments
    Time m_minRto;               //!< minimum retransmission timeout
    Time m_delAckTimeout;        //!< delayed-ACK timer
    Time m_connTimeout;          //!< SYN retransmission timeout
    uint32_t m_dataRetries = 0;  //!< retransmissions before giving up
    bool m_classicEcn = false;   //!< RFC 3168 ECN for non-DCTCP congestion controls
    uint16_t m_port = 0;         //!< listening port on every host
    uint64_t m_retransmissions = 0;
};

} // namespace ns3

#endif // GPUSIM_TCP_TRANSPORT_H
