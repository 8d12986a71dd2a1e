/*
 * RdmaQueuePair: the send side of one RDMA queue pair (reliable connection) of RdmaTransport:
 * the posted messages, their segmentation into MTU packets (PSNs), the go-back-N window
 * [sndUna, sndNxt) and the per-QP pacing and congestion control state. Pure bookkeeping: the
 * transport owns the UDP endpoints, timers and the NIC scheduler.
 */
#ifndef GPUSIM_RDMA_QUEUE_PAIR_H
#define GPUSIM_RDMA_QUEUE_PAIR_H

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/packet-transport.h"
#include "ns3/ptr.h"
#include "ns3/rdma-congestion-control.h"

#include <cstdint>
#include <vector>

namespace ns3
{

class Ipv4EndPoint;

class RdmaQueuePair
{
  public:
    /// One packet to (re)send.
    struct Segment
    {
        uint64_t msgId = 0;
        uint32_t psn = 0;
        uint32_t payload = 0; //!< bytes
        bool last = false;    //!< last packet of its message
    };

    RdmaQueuePair(uint32_t id, const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost,
                  uint32_t payloadPerPacket);

    /// Appends a message; a 0-byte message still takes one packet (it must be delivered).
    void Post(uint64_t msgId, uint64_t bytes);
    bool HasUnsent() const { return m_sndNxt < m_endPsn; }
    bool HasOutstanding() const { return m_sndUna < m_sndNxt; }
    bool Idle() const { return m_sndUna == m_endPsn; }
    /// The packet at sndNxt (requires HasUnsent).
    Segment Next() const;
    /// Marks the packet at sndNxt sent.
    void Advance();
    /// Cumulative acknowledgement: every PSN below `nextExpected` arrived. Returns the payload
    /// bytes newly acknowledged; drops fully acknowledged messages.
    uint64_t Acknowledge(uint32_t nextExpected);
    /// Go-back-N: resend from `psn` (>= sndUna). Returns the packets that will be resent.
    uint32_t GoBackTo(uint32_t psn);
    /// Payload bytes sent but not acknowledged (for window-based controls).
    uint64_t BytesInFlight() const;

    uint32_t Id() const { return m_id; }
    const ConnectionKey& Key() const { return m_key; }
    uint32_t SrcHost() const { return m_srcHost; }
    uint32_t DstHost() const { return m_dstHost; }
    uint32_t SndUna() const { return m_sndUna; }
    uint32_t SndNxt() const { return m_sndNxt; }

    // State the transport drives.
    /// The QP's UDP port, taken from the host's endpoint table as a bound socket's would be:
    /// its ephemeral number is the QP's ECMP entropy, as RoCEv2's source port.
    Ipv4EndPoint* endPoint = nullptr;
    Ptr<RdmaCongestionControl> cc;
    Time nextAvail;                      //!< pacing: earliest time of the next packet
    EventId rto;                         //!< retransmission timer
    Time lastProgress;                   //!< last time sndUna advanced (or the timer armed)
    uint32_t retries = 0;                //!< timeouts without progress
    bool failed = false;
    uint64_t txPackets = 0;              //!< data packets sent, retransmissions included
    uint64_t ackedBytes = 0;             //!< payload bytes acknowledged so far

  private:
    struct Message
    {
        uint64_t id = 0;
        uint64_t bytes = 0;
        uint32_t firstPsn = 0;
        uint32_t nPkts = 0;
    };

    uint32_t PayloadOf(const Message& m, uint32_t psn) const;
    /// Index in m_msgs of the message holding `psn` (a live one).
    size_t Find(uint32_t psn) const;

    uint32_t m_id;
    ConnectionKey m_key;
    uint32_t m_srcHost;
    uint32_t m_dstHost;
    uint32_t m_payload; //!< payload bytes per full packet
    /// Messages not fully acknowledged, in PSN order, from m_msgs[m_head]. A vector with a
    /// moving head, not a std::deque: an empty deque already holds ~600 bytes, and an AllToAll
    /// opens n^2 queue pairs that each carry one message at a time.
    std::vector<Message> m_msgs;
    size_t m_head = 0;   //!< first live message in m_msgs
    size_t m_cursor = 0; //!< index in m_msgs of the message holding sndNxt
    uint32_t m_sndUna = 0;
    uint32_t m_sndNxt = 0;
    uint32_t m_endPsn = 0;      //!< one past the last PSN posted
};

} // namespace ns3

#endif // GPUSIM_RDMA_QUEUE_PAIR_H
