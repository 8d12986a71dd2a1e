/*
 * EcnMarkingQueueDisc: a switch egress FIFO that marks ECN the way RoCE switches do for
 * DCQCN: on the instantaneous queue length (no averaging), with probability 0 below Kmin,
 * rising linearly to Pmax at Kmax, and 1 above Kmax (Zhu et al., "Congestion Control for
 * Large-Scale RDMA Deployments", SIGCOMM 2015, section 3.1 / figure 5). The decision is taken
 * when a packet leaves, on the bytes it leaves behind, as the HPCC ns-3 simulator does, so the
 * mark reflects the newest queue. Packets that are not ECN-capable are never dropped for
 * congestion, only when the buffer (MaxSize) is full.
 *
 * The same egress stamps HPCC's in-band telemetry into RDMA data packets that ask for it
 * (RdmaHeader::WANT_INT): link rate, departure time, bytes sent so far, queue length.
 *
 * Three bands: PFC control frames (strict priority), the lossless class (DSCP LosslessDscp,
 * pausable by PFC) and everything else (lossy), the last two served round-robin per packet.
 * With PFC callbacks set (PfcController), the lossless class is admitted by the switch's
 * shared-buffer accounting instead of MaxSize.
 */
#ifndef GPUSIM_ECN_MARKING_QUEUE_DISC_H
#define GPUSIM_ECN_MARKING_QUEUE_DISC_H

#include "ns3/data-rate.h"
#include "ns3/queue-disc.h"
#include "ns3/random-variable-stream.h"

#include <functional>

namespace ns3
{

class EcnMarkingQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId();
    EcnMarkingQueueDisc();
    ~EcnMarkingQueueDisc() override;

    /// Marking probability at queue length `bytes` (the configured kmin/kmax/pmax ramp).
    double MarkProbability(uint32_t bytes) const;
    /// Bytes this queue has sent (INT txBytes).
    uint64_t GetTxBytes() const;
    int64_t AssignStreams(int64_t stream);

    /// PFC: admission of a lossless packet (false: drop it) and its departure.
    using AdmitCallback = std::function<bool(Ptr<const QueueDiscItem>)>;
    using ReleaseCallback = std::function<void(Ptr<const QueueDiscItem>)>;
    void SetPfcCallbacks(AdmitCallback admit, ReleaseCallback release);
    /// PFC: pause / resume the lossless class (resuming restarts transmission).
    void SetPaused(bool paused);
    bool IsPaused() const;
    /// Queues a PFC frame in the control band and starts transmission.
    void EnqueueControl(Ptr<QueueDiscItem> item);
    /// Bytes of data (lossless + lossy) queued now.
    uint32_t GetDataBytes() const;

  private:
    bool DoEnqueue(Ptr<QueueDiscItem> item) override;
    Ptr<QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;
    /// Appends this egress's INT hop to an RDMA data packet that asks for it.
    void StampInt(Ptr<QueueDiscItem> item) const;
    bool IsLossless(Ptr<const QueueDiscItem> item) const;
    /// Next data item: the other class first (round-robin), skipping a paused lossless one.
    Ptr<QueueDiscItem> DequeueData();

    static constexpr size_t kControl = 0;
    static constexpr size_t kLossless = 1;
    static constexpr size_t kLossy = 2;

    double m_kmin = 0;   //!< bytes
    double m_kmax = 0;   //!< bytes
    double m_pmax = 0;
    bool m_intStamping = true;
    DataRate m_linkRate; //!< for INT
    uint16_t m_rdmaPort = 4791;
    uint64_t m_txBytes = 0;
    uint8_t m_losslessDscp = 3;
    bool m_paused = false;
    bool m_lastLossless = false; //!< round-robin state
    AdmitCallback m_admit;
    ReleaseCallback m_release;
    Ptr<UniformRandomVariable> m_uniform;
};

} // namespace ns3

#endif // GPUSIM_ECN_MARKING_QUEUE_DISC_H
