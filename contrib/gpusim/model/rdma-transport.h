/*
 * RdmaTransport: PacketTransport modelling RDMA over Converged Ethernet v2 (RoCEv2) reliable
 * connections. One queue pair per (source GPU, destination GPU, flow key), opened on first
 * use, like NCCL's IB/RoCE connections (one QP per channel and peer).
 *
 *  - Messages are segmented into MTU packets (UDP port 4791, an RdmaHeader standing for the
 *    BTH), ECN-capable (ECT(0)), in a configurable DSCP (the lossless class for PFC).
 *  - The NIC paces every QP at the rate of its congestion control (RdmaCongestionControl;
 *    no window unless the control has one) and serves the QPs with data round-robin whenever
 *    its egress queue has room: hardware-style, work conserving, no socket buffers.
 *  - The receiver ACKs in-order packets (every AckInterval packets and at each message's end),
 *    NACKs the first out-of-order packet, and the sender goes back N to the NACKed PSN (or to
 *    the oldest unacknowledged one after RetransmitTimeout). With ReorderMode "tolerant" the
 *    receiver instead keeps out-of-order packets within ReorderWindow PSNs of the expected one
 *    (a bitmap, as NICs built for adaptive routing / packet spraying) and acknowledges
 *    cumulatively once the gap fills; only packets beyond the window are NACKed. CE-marked packets make the
 *    receiver send a CNP, at most one per QP per CnpInterval, when the control uses CNPs.
 *  - A message is reported to the backend when its last packet arrives in order.
 */
#ifndef GPUSIM_RDMA_TRANSPORT_H
#define GPUSIM_RDMA_TRANSPORT_H

#include "ns3/event-id.h"
#include "ns3/inet-socket-address.h"
#include "ns3/ipv4.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"
#include "ns3/packet-transport.h"
#include "ns3/rdma-queue-pair.h"
#include "ns3/socket.h"
#include "ns3/traced-callback.h"
#include "ns3/udp-l4-protocol.h"

#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace ns3
{

class Ipv4Header;
class UdpHeader;

class Packet;
class QueueDisc;
class QueueDiscItem;
class RdmaHeader;

class RdmaTransport : public PacketTransport
{
  public:
    static TypeId GetTypeId();
    RdmaTransport();
    ~RdmaTransport() override;

    /// Bytes of IPv4 + UDP + RdmaHeader (without INT hops) in every data packet.
    static constexpr uint32_t kOverheadBytes = 20 + 8 + 28;

    /// Sets the congestion control by name (none, dcqcn, hpcc, timely, dctcp). Throws
    /// std::invalid_argument for an unknown name.
    void SetCongestionControl(const std::string& name);
    std::string GetCongestionControl() const;
    /// Sets an attribute of every queue pair's congestion control (e.g. "Rai").
    void SetCcAttribute(const std::string& name, const AttributeValue& value);

    // PacketTransport
    void Install(const std::vector<Ptr<Node>>& hosts,
                 const std::vector<Ipv4Address>& addresses,
                 uint32_t mtu) override;
    void Send(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost, uint64_t id,
              uint64_t bytes) override;
    /// Distributed runs: the queue pair of a message another process sends gets its id here
    /// too (the receiver knows queue pairs by id); no socket, nothing sent.
    void Expect(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost, uint64_t id,
                uint64_t bytes) override;
    bool UsesEcn() const override;
    std::string GetName() const override;
    uint32_t GetNConnections() const override;
    uint64_t GetRetransmissions() const override;

    // Statistics
    struct Counters
    {
        uint64_t dataPackets = 0;   //!< data packets sent (retransmissions included)
        uint64_t ackPackets = 0;    //!< ACKs sent
        uint64_t nackPackets = 0;   //!< NACKs sent
        uint64_t cnpPackets = 0;    //!< CNPs sent
        uint64_t cePackets = 0;     //!< data packets that arrived CE-marked
        uint64_t timeouts = 0;      //!< retransmission timer expiries
        uint64_t retransmitted = 0; //!< data packets resent by go-back-N
        uint64_t outOfOrder = 0;    //!< data packets discarded by the receiver (gap/duplicate)
        uint64_t reordered = 0;     //!< out-of-order packets kept (ReorderMode tolerant)
    };

    /// What the receiver does with a packet beyond the next expected PSN.
    enum ReorderMode
    {
        GO_BACK_N, //!< discard it and NACK the expected PSN (once per gap)
        TOLERANT   //!< keep it if within ReorderWindow; ACK once contiguous
    };
    const Counters& GetCounters() const;
    /// Queue pairs in creation order.
    std::vector<const RdmaQueuePair*> GetQueuePairs() const;
    uint32_t GetPayloadPerPacket() const;

    /// Signature of the QpRate trace: (queue pair id, new rate in bit/s).
    typedef void (*QpRateCallback)(uint32_t qp, double bps);
    /// Signature of the QpCompletion trace: (queue pair id, message id).
    typedef void (*QpCompletionCallback)(uint32_t qp, uint64_t msgId);

  protected:
    void DoDispose() override;

  private:
    /// The NIC of one host: its egress queue and the QPs it serves.
    struct Nic
    {
        Ptr<QueueDisc> egress;
        double lineBps = 0;
        std::vector<RdmaQueuePair*> qps; //!< served round-robin
        size_t rr = 0;
        EventId wake;                    //!< next pacing deadline
        Time wakeAt;                     //!< when `wake` fires
        bool pumpPending = false;        //!< a Pump is scheduled now
        bool blocked = false;            //!< waiting for the egress queue to drain
        Ptr<Socket> listener;            //!< port 4791: data in, ACK/NACK/CNP out
        Ptr<Ipv4> ipv4;
        Ptr<UdpL4Protocol> udp;          //!< QPs send through it (no socket per QP)
    };

    /// Receive side of one QP.
    struct Receiver
    {
        uint32_t expected = 0;     //!< next in-order PSN
        uint32_t sinceAck = 0;     //!< in-order packets since the last ACK
        bool nacked = false;       //!< a NACK for `expected` is out
        Time lastCnp = Time::Min();
        /// ReorderMode tolerant: packets above `expected` already received (PSN -> message id
        /// and whether it is its message's last packet).
        std::map<uint32_t, std::pair<uint64_t, bool>> held;
    };

    /// Delivers packet `psn` in order (expected == psn): advances `expected`, reports a
    /// completed message; returns true if it was its message's last packet.
    bool Accept(Receiver& r, uint32_t qp, uint64_t msgId, bool last);

    /// `localSender`: false for a queue pair another process sends on (Expect): its id only.
    RdmaQueuePair& Open(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost,
                        bool localSender = true);
    void SchedulePump(uint32_t host);
    void Pump(uint32_t host);
    RdmaQueuePair* PickQp(Nic& nic, Time now, Time* earliest);
    void SendData(RdmaQueuePair& qp);
    /// Hands one data packet of `qp` to UDP as a connected ns-3 socket would.
    void SendDatagram(RdmaQueuePair& qp, Ptr<Packet> p);
    void ArmRto(RdmaQueuePair& qp);
    void OnRto(RdmaQueuePair* qp);
    void OnQpRate(uint32_t qp, double oldBps, double newBps);
    /// The host's RdmaPortDemux offers every UDP datagram here first (header still on).
    bool OnDatagram(uint32_t host, Ptr<Packet> p, const Ipv4Header& ip, const UdpHeader& udp);
    void OnDataRecv(uint32_t host, Ptr<Socket> s);
    /// One datagram for the listener (UDP header removed); `ce`: its IP header's ECN was CE.
    void OnDataPacket(Ptr<Socket> listener, const Address& from, Ptr<Packet> p, bool ce);
    void HandleData(Ptr<Socket> s, const Address& from, const RdmaHeader& h, bool ce);
    void Reply(Ptr<Socket> s, const Address& to, uint8_t op, const RdmaHeader& data,
               uint32_t psn, bool ce);
    /// One ACK, NACK or CNP for `qp` (UDP header removed).
    void OnAckPacket(RdmaQueuePair& qp, Ptr<Packet> p);
    void HandleAck(RdmaQueuePair& qp, const RdmaHeader& h);
    void OnEgressDequeue(uint32_t host, Ptr<const QueueDiscItem> item);

    std::vector<Ptr<Node>> m_hosts;
    std::vector<Ipv4Address> m_addresses;
    std::vector<Nic> m_nics;
    std::map<ConnectionKey, std::unique_ptr<RdmaQueuePair>> m_qps;
    std::vector<RdmaQueuePair*> m_qpById;
    /// (source host << 16 | the QP's UDP port) -> QP: where the demux sends ACKs.
    std::unordered_map<uint64_t, RdmaQueuePair*> m_qpByPort;
    std::vector<Receiver> m_receivers; //!< by QP id (ids are dense: m_qpById's indices)

    ObjectFactory m_ccFactory;
    uint32_t m_mtu = 0;
    uint32_t m_payload = 0;       //!< payload bytes per packet
    uint32_t m_ackInterval = 1;   //!< in-order packets per ACK
    Time m_rto;                   //!< retransmission timeout
    uint32_t m_retryCount = 0;    //!< timeouts without progress before giving up
    Time m_cnpInterval;           //!< at most one CNP per QP per interval
    uint8_t m_dscp = 3;           //!< DSCP of RDMA traffic
    uint32_t m_maxEgressPackets = 2; //!< NIC hands a packet to its egress queue below this
    uint16_t m_port = 4791;
    Time m_baseRtt;               //!< given to the congestion controls
    bool m_usesCnp = false;       //!< the control wants CNPs (set at Install)
    ReorderMode m_reorderMode = GO_BACK_N;
    uint32_t m_reorderWindow = 512; //!< PSNs above the expected one kept (tolerant mode)
    Counters m_counters;

    TracedCallback<uint32_t, double> m_qpRateTrace;
    TracedCallback<uint32_t, uint64_t> m_qpCompletionTrace;
};

} // namespace ns3

#endif // GPUSIM_RDMA_TRANSPORT_H
