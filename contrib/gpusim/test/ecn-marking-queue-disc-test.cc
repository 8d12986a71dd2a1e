// EcnMarkingQueueDisc: the marking probability follows kmin/kmax/pmax on the instantaneous
// queue, only ECN-capable packets are marked, drops only when the buffer is full.
#include "ns3/double.h"
#include "ns3/ecn-marking-queue-disc.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/packet.h"
#include "ns3/queue-size.h"
#include "ns3/simulator.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace ns3;

namespace
{

constexpr uint32_t kPkt = 1000; // bytes per packet (payload; the IPv4 header adds 20)

Ptr<Ipv4QueueDiscItem>
Item(bool ect)
{
    Ipv4Header h;
    h.SetPayloadSize(kPkt);
    h.SetEcn(ect ? Ipv4Header::ECN_ECT0 : Ipv4Header::ECN_NotECT);
    return Create<Ipv4QueueDiscItem>(Create<Packet>(kPkt), Address(), 0x0800, h);
}

Ptr<EcnMarkingQueueDisc>
Make(double kmin, double kmax, double pmax, const std::string& maxSize = "10MB")
{
    Ptr<EcnMarkingQueueDisc> q = CreateObject<EcnMarkingQueueDisc>();
    q->SetAttribute("Kmin", DoubleValue(kmin));
    q->SetAttribute("Kmax", DoubleValue(kmax));
    q->SetAttribute("Pmax", DoubleValue(pmax));
    q->SetAttribute("MaxSize", QueueSizeValue(QueueSize(maxSize)));
    q->AssignStreams(7);
    q->Initialize();
    return q;
}

/// Holds the queue at `backlog` packets behind each departing one for `n` departures;
/// returns the fraction marked.
double
MarkedFraction(Ptr<EcnMarkingQueueDisc> q, uint32_t backlog, uint32_t n)
{
    while (q->GetNPackets() < backlog + 1)
    {
        q->Enqueue(Item(true));
    }
    uint32_t marked = 0;
    for (uint32_t i = 0; i < n; ++i)
    {
        Ptr<QueueDiscItem> it = q->Dequeue();
        marked += DynamicCast<Ipv4QueueDiscItem>(it)->GetHeader().GetEcn() ==
                          Ipv4Header::ECN_CE
                      ? 1
                      : 0;
        q->Enqueue(Item(true));
    }
    return double(marked) / n;
}

} // namespace

TEST(EcnMarkingQueueDiscTest, ProbabilityFollowsKminKmaxPmax)
{
    // kmin 100 KB, kmax 400 KB, pmax 0.2; each packet occupies 1020 bytes in the queue.
    const double kmin = 100e3;
    const double kmax = 400e3;
    const double pmax = 0.2;
    Ptr<EcnMarkingQueueDisc> q = Make(kmin, kmax, pmax);
    const uint32_t n = 20000;
    // Backlogs (packets left behind) below, inside and above the ramp.
    for (uint32_t backlog : {50u, 98u, 150u, 245u, 340u, 392u, 400u, 500u})
    {
        const double bytes = backlog * 1020.0;
        // Expected by hand from the ramp: 0 up to kmin, linear to pmax at kmax, then 1.
        const double expect = bytes <= kmin ? 0 : bytes > kmax ? 1 : pmax * (bytes - kmin) /
                                                                          (kmax - kmin);
        EXPECT_DOUBLE_EQ(q->MarkProbability(uint32_t(bytes)), expect);
        const double got = MarkedFraction(q, backlog, n);
        // Binomial: 4.5 standard deviations (plus one count) as the tolerance.
        const double tol = 4.5 * std::sqrt(expect * (1 - expect) / n) + 1.0 / n;
        EXPECT_NEAR(got, expect, tol) << backlog << " packets = " << bytes << " bytes";
        while (q->GetNPackets() > 0)
        {
            q->Dequeue();
        }
    }
    EXPECT_GT(q->GetStats().nTotalMarkedPackets, 0u);
    EXPECT_EQ(q->GetStats().nTotalDroppedPackets, 0u);
}

TEST(EcnMarkingQueueDiscTest, NotEcnCapablePacketsAreNeitherMarkedNorDropped)
{
    Ptr<EcnMarkingQueueDisc> q = Make(1000, 2000, 1.0);
    for (int i = 0; i < 100; ++i)
    {
        EXPECT_TRUE(q->Enqueue(Item(false)));
    }
    while (Ptr<QueueDiscItem> it = q->Dequeue())
    {
        EXPECT_EQ(DynamicCast<Ipv4QueueDiscItem>(it)->GetHeader().GetEcn(),
                  Ipv4Header::ECN_NotECT);
    }
    EXPECT_EQ(q->GetStats().nTotalMarkedPackets, 0u);
    EXPECT_EQ(q->GetStats().nTotalDroppedPackets, 0u);
}

TEST(EcnMarkingQueueDiscTest, DropsOnlyWhenTheBufferIsFull)
{
    // 10 packets of 1020 bytes fit in 10200 bytes; the 11th is dropped.
    Ptr<EcnMarkingQueueDisc> q = Make(1e9, 1e9, 0.0, "10200B");
    for (int i = 0; i < 10; ++i)
    {
        EXPECT_TRUE(q->Enqueue(Item(true)));
    }
    EXPECT_FALSE(q->Enqueue(Item(true)));
    EXPECT_EQ(q->GetStats().nTotalDroppedPackets, 1u);
    EXPECT_EQ(q->GetNPackets(), 10u);
    Simulator::Destroy();
}
