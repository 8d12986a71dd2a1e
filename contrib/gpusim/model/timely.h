/*
 * Timely: RTT-gradient rate control, Mittal et al., "TIMELY: RTT-based Congestion Control
 * for the Datacenter", SIGCOMM 2015, algorithm 1. Once per RTT (when the ACK passes the PSN
 * that was next at the last update) the sender takes the new RTT sample and
 *     rttDiff = (1 - alpha) rttDiff + alpha (rtt - previous rtt),  gradient = rttDiff / minRTT;
 *     rtt < Tlow:            R += delta             (additive)
 *     rtt > Thigh:           R *= 1 - beta (1 - Thigh / rtt)
 *     gradient <= 0:         R += N delta, N = 5 after five increases in a row (HAI), else 1
 *     otherwise:             R *= 1 - beta gradient
 * RTT is measured from the data packet's timestamp echoed by its ACK (NIC timestamps, as
 * TIMELY does).
 */
#ifndef GPUSIM_TIMELY_H
#define GPUSIM_TIMELY_H

#include "ns3/rdma-congestion-control.h"

namespace ns3
{

class Timely : public RdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    Timely();
    ~Timely() override;

    void OnAck(const RdmaAckInfo& ack) override;
    std::string GetName() const override;

  private:
    double m_alpha = 0;   //!< EWMA weight of the RTT difference
    double m_beta = 0;    //!< multiplicative decrease factor
    Time m_tLow;
    Time m_tHigh;
    Time m_minRtt;        //!< normalises the gradient
    double m_delta = 0;   //!< additive step (bit/s)
    uint32_t m_haiAfter = 5;

    double m_rttDiffNs = 0;
    double m_prevRttNs = -1;
    uint32_t m_lastUpdatePsn = 0;
    uint32_t m_increases = 0; //!< consecutive increases
};

} // namespace ns3

#endif // GPUSIM_TIMELY_H
