/*
 * PfcController: Priority Flow Control (IEEE 802.1Qbb) of one node of the packet backend.
 *
 * On a switch it does the ingress accounting of the lossless priority: every arriving packet
 * is tagged with its ingress port, and while a lossless packet is buffered (in any egress
 * queue of the switch) its bytes count against that ingress port. The switch's buffer is
 * shared with a dynamic threshold (Choudhury and Hahne): a port may hold up to
 * T = DtAlpha * (free shared buffer) before it sends PAUSE upstream (XOFF); it sends RESUME
 * once it drains to T - ResumeOffset (XON). Once paused, each port has HeadroomBytes reserved
 * beyond its level at the PAUSE for what is still in flight; a lossless packet beyond that
 * (or beyond the whole buffer) is dropped and counted (it should never happen when the
 * headroom covers the round trip).
 *
 * On every node (switch and NIC) it obeys PAUSE/RESUME from the neighbour by pausing the
 * lossless class of that port's egress queue (EcnMarkingQueueDisc); lossy traffic continues.
 * NICs never send PAUSE (they drain at line rate into host memory).
 */
#ifndef GPUSIM_PFC_CONTROLLER_H
#define GPUSIM_PFC_CONTROLLER_H

#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/object.h"

#include <vector>

namespace ns3
{

class EcnMarkingQueueDisc;
class Packet;
class QueueDiscItem;

class PfcController : public Object
{
  public:
    static TypeId GetTypeId();
    PfcController();
    ~PfcController() override;

    struct PortStats
    {
        uint64_t pausesSent = 0;      //!< PAUSE frames sent upstream from this port
        uint64_t resumesSent = 0;
        uint64_t pausesReceived = 0;  //!< PAUSE frames that paused this port's egress
        uint64_t resumesReceived = 0;
        Time pausedTime;              //!< total time this port's egress was paused
        uint64_t losslessDrops = 0;   //!< lossless packets beyond the headroom
        uint64_t maxIngressBytes = 0; //!< peak lossless bytes held for this ingress port
    };

    /// Adds a port. Call BEFORE the IPv4 interface of `dev` is added, so that ingress packets
    /// are tagged before IPv4 forwards them. Returns the port index.
    uint32_t AddPort(Ptr<NetDevice> dev, Ptr<EcnMarkingQueueDisc> egress, double bitsPerSec,
                     Time delay, uint32_t mtu, uint64_t portBufferBytes);

    uint32_t GetNPorts() const;
    const PortStats& GetPortStats(uint32_t port) const;
    Ptr<NetDevice> GetPortDevice(uint32_t port) const;
    uint64_t GetIngressBytes(uint32_t port) const; //!< lossless bytes held now
    bool IsPausingUpstream(uint32_t port) const;   //!< we sent PAUSE, no RESUME yet
    bool IsEgressPaused(uint32_t port) const;      //!< the neighbour paused us
    /// XOFF threshold now (bytes per ingress port).
    double GetThreshold() const;
    uint64_t GetHeadroom(uint32_t port) const;
    uint64_t GetBufferBytes() const;

  protected:
    void DoDispose() override;

  private:
    struct Port
    {
        Ptr<NetDevice> dev;
        Ptr<EcnMarkingQueueDisc> egress;
        uint64_t headroom = 0;
        uint64_t ingressBytes = 0; //!< lossless bytes buffered that came in here
        bool pausingUpstream = false;
        uint64_t xoffLevel = 0;    //!< ingress bytes when the PAUSE went out
        bool egressPaused = false;
        Time pausedSince;
        PortStats stats;
    };

    void OnReceive(Ptr<NetDevice> dev, Ptr<const Packet> p, uint16_t protocol,
                   const Address& from, const Address& to, NetDevice::PacketType type);
    void OnFrame(uint32_t port, bool pause);
    bool Admit(Ptr<const QueueDiscItem> item);
    void Release(Ptr<const QueueDiscItem> item);
    void SendFrame(uint32_t port, bool pause);
    void CheckXon();

    // Attributes
    bool m_generate = true;          //!< send PAUSE (switches); NICs only obey
    double m_alpha = 0;              //!< dynamic threshold factor
    uint64_t m_bufferBytes = 0;      //!< shared buffer; 0 = sum of the port buffers
    uint64_t m_headroomBytes = 0;    //!< per port; 0 = 2 x BDP + 2 x MTU of the port
    uint64_t m_resumeOffset = 0;     //!< XON = XOFF - this; 0 = 2 x MTU
    uint8_t m_priority = 3;          //!< the lossless priority named in frames

    std::vector<Port> m_ports;
    uint64_t m_portBuffers = 0;      //!< sum of the ports' buffers
    uint64_t m_headroomTotal = 0;
    uint64_t m_used = 0;             //!< lossless bytes buffered in the node
    uint32_t m_mtu = 0;
};

} // namespace ns3

#endif // GPUSIM_PFC_CONTROLLER_H
