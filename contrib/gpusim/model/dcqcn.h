/*
 * Dcqcn: the reaction point (sender) of DCQCN, Zhu et al., "Congestion Control for
 * Large-Scale RDMA Deployments", SIGCOMM 2015, section 3.1 and figure 7:
 *  - on a CNP: target rate Rt = Rc, Rc = Rc (1 - alpha / 2), alpha = (1 - g) alpha + g, and
 *    the increase machinery restarts;
 *  - alpha decays, alpha = (1 - g) alpha, every AlphaTimer without a CNP;
 *  - the rate increases on two clocks, a timer (RateIncreaseTimer) and a byte counter
 *    (ByteCounter bytes sent); each event counts on its clock. While both counts are below
 *    F (FastRecoverySteps) the rate moves halfway to Rt (fast recovery); once one of them
 *    exceeds F, Rt grows by Rai first (additive increase), once both do, by i * Rhai (hyper
 *    increase, i = the smaller count - F), and Rc moves halfway to the new Rt.
 * Every default is the paper's unless the attribute says otherwise.
 */
#ifndef GPUSIM_DCQCN_H
#define GPUSIM_DCQCN_H

#include "ns3/event-id.h"
#include "ns3/rdma-congestion-control.h"

namespace ns3
{

class Dcqcn : public RdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    Dcqcn();
    ~Dcqcn() override;

    void Start(double lineBps, uint32_t mtuBytes, Time baseRtt) override;
    void OnSend(uint32_t bytes) override;
    void OnCnp() override;
    bool UsesCnp() const override;
    std::string GetName() const override;

    double GetAlpha() const;
    double GetTargetRateBps() const;
    uint64_t GetCnpCount() const;

  protected:
    void DoDispose() override;

  private:
    void OnAlphaTimer();
    void OnIncreaseTimer();
    /// One increase event (timer or byte counter expiry).
    void Increase();

    // Attributes
    double m_g = 0;              //!< alpha gain
    Time m_alphaTimer;           //!< alpha decay period
    Time m_increaseTimer;        //!< rate increase timer period
    uint64_t m_byteCounter = 0;  //!< bytes per byte-counter event
    uint32_t m_f = 0;            //!< fast recovery steps
    double m_rai = 0;            //!< additive increase (bit/s)
    double m_rhai = 0;           //!< hyper increase (bit/s)
    double m_initialAlpha = 1;

    double m_alpha = 1;
    double m_target = 0;         //!< Rt
    uint32_t m_timerCount = 0;   //!< T: timer events since the last cut
    uint32_t m_byteCount = 0;    //!< BC: byte-counter events since the last cut
    uint64_t m_bytesSinceEvent = 0;
    bool m_cnpSinceAlpha = false;
    bool m_cut = false;          //!< a CNP ever arrived (increase runs only after a cut)
    uint64_t m_cnps = 0;
    EventId m_alphaEvent;
    EventId m_increaseEvent;
};

} // namespace ns3

#endif // GPUSIM_DCQCN_H
