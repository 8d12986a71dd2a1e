/*
 * PacketTransport: how PacketBackend moves one framed message between two hosts of its packet
 * network. The backend owns the network (nodes, links, queues, routing) and the bookkeeping of
 * transfers; a transport owns the end-host protocol (connections, framing, congestion control)
 * and reports each message, by id, when its last byte has arrived.
 *
 * TcpTransport is the ns-3 TCP implementation; RdmaTransport models RoCEv2 queue pairs with
 * rate-based congestion controls (DCQCN, HPCC, TIMELY, DCTCP): see doc/packet-backend.md.
 */
#ifndef GPUSIM_PACKET_TRANSPORT_H
#define GPUSIM_PACKET_TRANSPORT_H

#include "ns3/ipv4-address.h"
#include "ns3/node.h"
#include "ns3/object.h"
#include "ns3/packet.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace ns3
{

/// A persistent connection, like one of NCCL's: per (source GPU, destination GPU, flow key).
struct ConnectionKey
{
    uint32_t srcGpu = 0;
    uint32_t dstGpu = 0;
    uint64_t flowKey = 0;

    bool operator<(const ConnectionKey& o) const
    {
        return std::tie(srcGpu, dstGpu, flowKey) < std::tie(o.srcGpu, o.dstGpu, o.flowKey);
    }
};

class PacketTransport : public Object
{
  public:
    /// A message was fully received (called at that simulated time).
    using MessageCallback = std::function<void(uint64_t id)>;
    /// A connection gave up (peer unreachable, retries exhausted): its undelivered messages
    /// will never arrive.
    using FailureCallback = std::function<void(const ConnectionKey& key)>;

    static TypeId GetTypeId();
    ~PacketTransport() override;

    /// Installs the protocol on the hosts (after their IPv4 stacks are up). host i owns
    /// addresses[i]; `mtu` is the IP MTU of the fabric.
    virtual void Install(const std::vector<Ptr<Node>>& hosts,
                         const std::vector<Ipv4Address>& addresses,
                         uint32_t mtu) = 0;

    /// Queues message `id` (`bytes` of payload) on the connection `key` from srcHost to
    /// dstHost, opening the connection on first use. Messages of one connection are delivered
    /// in order.
    virtual void Send(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost, uint64_t id,
                      uint64_t bytes) = 0;

    /// Distributed runs: message `id` is sent by another process (its source host's node is
    /// not local); keeps whatever bookkeeping Send would (connection or queue pair ids, in the
    /// same order) without sending. The base version keeps none.
    virtual void Expect(const ConnectionKey& key, uint32_t srcHost, uint32_t dstHost,
                        uint64_t id, uint64_t bytes);

    /// Whether the switches should mark ECN (CE) instead of dropping for this transport.
    virtual bool UsesEcn() const = 0;
    /// Short description, e.g. "tcp/TcpDctcp".
    virtual std::string GetName() const = 0;

    virtual uint32_t GetNConnections() const = 0;
    /// Retransmitted data segments (or packets) so far.
    virtual uint64_t GetRetransmissions() const = 0;

    /// Puts a TransferOwnerTag (NetworkBackend::OwnerOf the message id) on every data packet
    /// from now on (several owners share the fabric; off by default: no cost for one job).
    void SetTagOwners(bool on);

    void SetMessageCallback(MessageCallback cb);
    void SetFailureCallback(FailureCallback cb);

  protected:
    void DoDispose() override;
    /// Adds the owner tag of message `id` to `p` when SetTagOwners is on.
    void TagOwner(const Ptr<Packet>& p, uint64_t id) const;
    /// For implementations: report a received message.
    void NotifyMessage(uint64_t id) const;
    /// For implementations: report a failed connection.
    void NotifyFailure(const ConnectionKey& key) const;

  private:
    MessageCallback m_message; //!< where received messages go
    FailureCallback m_failure; //!< where connection failures go
    bool m_tagOwners = false;
};

} // namespace ns3

#endif // GPUSIM_PACKET_TRANSPORT_H
