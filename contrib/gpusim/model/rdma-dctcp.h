/*
 * RdmaDctcp: DCTCP's control law (Alizadeh et al., SIGCOMM 2010) as a rate-based RDMA
 * control, the "DCTCP" mode of the HPCC ns-3 simulator. Receivers echo CE marks in their
 * ACKs; once per RTT the sender updates alpha = (1 - g) alpha + g F, F the fraction of
 * marked ACKs in that RTT, and cuts R *= 1 - alpha / 2 if any was marked, else adds Rai.
 */
#ifndef GPUSIM_RDMA_DCTCP_H
#define GPUSIM_RDMA_DCTCP_H

#include "ns3/rdma-congestion-control.h"

namespace ns3
{

class RdmaDctcp : public RdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    RdmaDctcp();
    ~RdmaDctcp() override;

    void OnAck(const RdmaAckInfo& ack) override;
    std::string GetName() const override;
    double GetAlpha() const;

  private:
    double m_g = 0;
    double m_rai = 0;
    double m_alpha = 1;
    uint32_t m_acks = 0;
    uint32_t m_marked = 0;
    uint32_t m_lastUpdatePsn = 0;
};

} // namespace ns3

#endif // GPUSIM_RDMA_DCTCP_H
