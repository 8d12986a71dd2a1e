/*
 * RdmaHeader: the RoCEv2 transport header of RdmaTransport, carried in UDP (port 4791). It
 * stands for the InfiniBand Base Transport Header (opcode, destination QP, PSN; 12 bytes on
 * the wire in RoCEv2) plus the fields this model needs beside it: the message (work request)
 * id, the sender's timestamp echoed by ACKs (RTT for TIMELY), an ECN echo flag (DCTCP-style
 * rate control) and the in-band telemetry (INT) hops stamped by switches for HPCC.
 */
#ifndef GPUSIM_RDMA_HEADER_H
#define GPUSIM_RDMA_HEADER_H

#include "ns3/header.h"

#include <cstdint>
#include <vector>

namespace ns3
{

/// One switch egress's telemetry, as HPCC's INT (Li et al., SIGCOMM 2019, section 4).
struct IntHop
{
    uint64_t bitsPerSec = 0; //!< link rate
    uint64_t tsNs = 0;       //!< time the packet left the egress
    uint64_t txBytes = 0;    //!< bytes the egress had sent by then
    uint32_t qlenBytes = 0;  //!< egress queue length then
};

class RdmaHeader : public Header
{
  public:
    enum Opcode : uint8_t
    {
        DATA = 1,
        ACK = 2,
        NACK = 3,
        CNP = 4,
    };
    enum Flag : uint8_t
    {
        LAST = 1,      //!< DATA: last packet of its message
        ECN_ECHO = 2,  //!< ACK/NACK: the acknowledged packet was CE-marked
        WANT_INT = 4,  //!< DATA: switches should stamp INT hops
    };
    /// INT slots reserved in packets that carry INT (HPCC's IntHeader::maxHop = 5): switches
    /// fill them in place, so a stamped packet keeps its size.
    static constexpr uint32_t kMaxHops = 5;
    /// Bytes per INT hop on the wire (the HPCC simulator packs a hop into 8 bytes; the model
    /// carries full-width fields).
    static constexpr uint32_t kHopBytes = 28;

    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    void Print(std::ostream& os) const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(Buffer::Iterator start) const override;
    uint32_t Deserialize(Buffer::Iterator start) override;

    /// Size without INT hops.
    static constexpr uint32_t kBaseBytes = 28;

    uint8_t opcode = DATA;
    uint8_t flags = 0;
    uint32_t qp = 0;     //!< sender's queue pair (unique per transport)
    uint32_t psn = 0;    //!< DATA: packet sequence number; ACK/NACK: next expected PSN
    uint64_t msgId = 0;  //!< DATA: message the packet belongs to
    uint64_t tsNs = 0;   //!< DATA: send time; ACK/NACK: the acknowledged packet's send time
    std::vector<IntHop> hops; //!< INT: DATA collects, ACK echoes (WANT_INT set on both)

  private:
    uint32_t Slots() const;
};

} // namespace ns3

#endif // GPUSIM_RDMA_HEADER_H
