/*
 * Hpcc: High Precision Congestion Control, Li et al., SIGCOMM 2019, algorithm 1 (single
 * rate over all hops). Every switch egress stamps INT (queue length, bytes sent, timestamp,
 * link rate) into the data packets; the ACK echoes it. Per ACK the sender estimates each
 * hop's normalised inflight
 *     u_j = min(qlen, previous qlen) / (B_j T) + txRate_j / B_j,
 * takes the most utilised hop, smooths it over the base RTT T
 *     U = (1 - tau/T) U + (tau/T) u,  tau = min(time between the two INT samples, T),
 * and sets the window
 *     W = Wc / (U / eta) + W_AI   if U >= eta or after maxStage additive steps,
 *     W = Wc + W_AI               otherwise,
 * updating the reference window Wc once per RTT (when the ACK passes the PSN that was next
 * at the last update) and reacting to every ACK in between. The pacing rate is W / T.
 */
#ifndef GPUSIM_HPCC_H
#define GPUSIM_HPCC_H

#include "ns3/rdma-congestion-control.h"

#include <vector>

namespace ns3
{

class Hpcc : public RdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    Hpcc();
    ~Hpcc() override;

    void Start(double lineBps, uint32_t mtuBytes, Time baseRtt) override;
    void OnAck(const RdmaAckInfo& ack) override;
    bool UsesInt() const override;
    std::string GetName() const override;

    double GetUtilisation() const; //!< U
    double GetWindowReference() const; //!< Wc (bytes)

  private:
    /// Max normalised inflight over the hops of `hops` against the previous sample; sets tau.
    double MeasureInflight(const std::vector<IntHop>& hops, double* tauNs) const;
    double ComputeWindow(double u, bool updateWc);
    void ApplyWindow(double w);

    double m_eta = 0;      //!< target utilisation
    uint32_t m_maxStage = 0;
    double m_rai = 0;      //!< W_AI as a rate: W_AI = Rai x T
    double m_t = 0;        //!< base RTT (ns)
    double m_u = 1;        //!< U
    double m_wc = 0;       //!< reference window (bytes)
    uint32_t m_incStage = 0;
    uint32_t m_lastUpdatePsn = 0;
    bool m_started = false; //!< first INT sample stored
    std::vector<IntHop> m_prev;
};

} // namespace ns3

#endif // GPUSIM_HPCC_H
