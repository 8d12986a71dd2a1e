/*
 * PFC (IEEE 802.1Qbb) frames of the packet backend. Stock ns-3's PointToPointNetDevice only
 * carries IPv4/IPv6, so a PAUSE/RESUME frame travels as a 64-byte IPv4 broadcast datagram of
 * protocol 253 (RFC 3692 experimental) that every node's PfcController reads on arrival; the
 * IPv4 stack discards it (no L4 protocol 253). It is sent from the port's control band, ahead
 * of data, as MAC control frames are. PfcIngressTag records the port a packet came in on, for
 * the switch's per-port, per-priority ingress accounting.
 */
#ifndef GPUSIM_PFC_FRAME_H
#define GPUSIM_PFC_FRAME_H

#include "ns3/header.h"
#include "ns3/tag.h"

namespace ns3
{

class PfcFrameHeader : public Header
{
  public:
    /// IPv4 protocol number of PFC frames (RFC 3692: 253 is for experimentation).
    static constexpr uint8_t kIpProtocol = 253;
    /// IPv4 payload bytes of a PFC frame: header plus padding to a 64-byte frame.
    static constexpr uint32_t kPayloadBytes = 64 - 20;

    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    void Print(std::ostream& os) const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(Buffer::Iterator start) const override;
    uint32_t Deserialize(Buffer::Iterator start) override;

    uint8_t priority = 3; //!< the paused priority (class enable vector of one class)
    bool pause = true;    //!< false: RESUME (a PAUSE with zero quanta)
};

class PfcIngressTag : public Tag
{
  public:
    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(TagBuffer i) const override;
    void Deserialize(TagBuffer i) override;
    void Print(std::ostream& os) const override;

    uint32_t port = 0; //!< index of the ingress port in its node's PfcController
};

} // namespace ns3

#endif // GPUSIM_PFC_FRAME_H
