/*
 * RdmaCongestionControl: the per-queue-pair rate (and optional window) controller of
 * RdmaTransport, as RDMA NICs run it in hardware. One instance per queue pair, created by the
 * transport from the CongestionControl name; it sees every ACK/NACK (with ECN echo, the RTT
 * from the echoed timestamp and HPCC's INT hops) and every CNP, and sets the pacing rate.
 *
 * This base class is also the `none` control: always line rate, no window.
 * Subclasses: Dcqcn, Hpcc, Timely, RdmaDctcp.
 */
#ifndef GPUSIM_RDMA_CONGESTION_CONTROL_H
#define GPUSIM_RDMA_CONGESTION_CONTROL_H

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/rdma-header.h"
#include "ns3/traced-value.h"

#include <string>
#include <vector>

namespace ns3
{

/// What the sender learnt from one ACK or NACK.
struct RdmaAckInfo
{
    uint64_t newlyAckedBytes = 0; //!< payload bytes acknowledged for the first time
    bool ecnEcho = false;         //!< the acknowledged packet arrived CE-marked
    bool nack = false;            //!< a NACK (loss detected), not an ACK
    Time rtt;                     //!< now - the acknowledged packet's send time
    const std::vector<IntHop>* hops = nullptr; //!< INT from the switches (HPCC)
    uint32_t ackPsn = 0;          //!< next PSN the receiver expects
    uint32_t sndNxt = 0;          //!< sender's next new PSN when the ACK arrived
};

class RdmaCongestionControl : public Object
{
  public:
    static TypeId GetTypeId();
    RdmaCongestionControl();
    ~RdmaCongestionControl() override;

    /// Resolves a control name (none, dcqcn, hpcc, timely, dctcp; case-insensitive) to its
    /// TypeId. Throws std::invalid_argument listing the known names otherwise.
    static TypeId Resolve(const std::string& name);
    static std::vector<std::string> KnownNames();

    /// Called once when the queue pair opens: the NIC's line rate and the MTU (bytes).
    virtual void Start(double lineBps, uint32_t mtuBytes, Time baseRtt);
    /// A data packet of `bytes` (on the wire) left the queue pair.
    virtual void OnSend(uint32_t bytes);
    virtual void OnAck(const RdmaAckInfo& ack);
    /// A congestion notification packet arrived (DCQCN).
    virtual void OnCnp();

    /// The receiver should send CNPs for CE-marked packets (DCQCN).
    virtual bool UsesCnp() const;
    /// DATA packets should collect INT hops, and ACKs echo them (HPCC).
    virtual bool UsesInt() const;
    /// Short name, e.g. "dcqcn".
    virtual std::string GetName() const;

    double GetRateBps() const;   //!< current pacing rate
    double GetLineBps() const;
    /// Bytes in flight allowed (0: no window, rate only).
    uint64_t GetWindowBytes() const;

  protected:
    void DoDispose() override;
    /// Sets the pacing rate, clamped to [MinRate, line rate].
    void SetRate(double bps);
    void SetWindow(uint64_t bytes);
    uint32_t GetMtu() const;
    Time GetBaseRtt() const;

  private:
    double m_minBps = 0;     //!< MinRate attribute
    double m_lineBps = 0;
    uint32_t m_mtu = 0;
    Time m_baseRtt;
    uint64_t m_window = 0;
    TracedValue<double> m_rate; //!< bits/s
};

} // namespace ns3

#endif // GPUSIM_RDMA_CONGESTION_CONTROL_H
