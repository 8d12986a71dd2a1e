// HPCC keeps the bottleneck queue near empty at >= 95 % utilisation; every RDMA congestion
// control (DCQCN, HPCC, TIMELY, DCTCP) reacts to an incast and completes it.
#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/double.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/hpcc.h"
#include "ns3/packet-backend.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <gtest/gtest.h>

using namespace ns3;

namespace
{

Ptr<PacketBackend>
Backend(const std::string& cc, uint32_t servers, Time sample, double latencyUs = 1.0,
        bool pfc = false)
{
    gpusim::ClusterSpec spec;
    spec.servers = servers;
    spec.gpusPerServer = 1;
    spec.nicsPerServer = 1;
    spec.nicGbps = 100;
    spec.fabric = "single-switch";
    spec.linkLatencyUs = latencyUs;
    GpuClusterHelper h;
    h.SetSpec(spec);
    Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
    rdma->SetCongestionControl(cc);
    Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
    pkt->SetTransport(rdma);
    pkt->SetAttribute("QueueDisc", StringValue("ecn"));
    pkt->SetAttribute("SampleInterval", TimeValue(sample));
    pkt->SetAttribute("Pfc", BooleanValue(pfc));
    pkt->SetTopology(h.BuildTopology());
    return pkt;
}

/// The switch -> NIC link of GPU `gpu`.
uint32_t
DownLink(Ptr<ClusterTopology> topo, uint32_t gpu)
{
    for (uint32_t l : topo->OutLinks(topo->NicOf(gpu)))
    {
        if (topo->Links()[l].kind == TopoLinkKind::Nic)
        {
            return topo->Links()[l].reverse;
        }
    }
    return UINT32_MAX;
}

class HpccTest : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

/// 4-to-1 long flows under HPCC with target utilisation `eta` (< 0: the attribute's
/// default); mean utilisation of the bottleneck and its largest sampled queue over [2 ms, 10 ms].
std::pair<double, uint32_t>
HpccFourToOne(double eta)
{
    // GPUs 1-4 send long flows to GPU 0 from t = 0. 5 us per link (base RTT about 22 us, 30
    // jumbo frames of bandwidth-delay product): with 1 us links the BDP is under 8 frames
    // and one queued 9 KB frame alone reads as 13 % utilisation to HPCC's qlen / (B T) term
    // (the HPCC paper uses 1 KB packets).
    Ptr<PacketBackend> pkt = Backend("hpcc", 5, MicroSeconds(10), 5.0);
    if (eta >= 0)
    {
        DynamicCast<RdmaTransport>(pkt->GetTransport())->SetCcAttribute("Eta", DoubleValue(eta));
    }
    for (uint32_t s = 1; s <= 4; ++s)
    {
        pkt->StartTransfer(s, s, 0, 1ull << 30, 0, [](const TransferRecord&) {});
    }
    Simulator::Stop(MilliSeconds(10));
    Simulator::Run();
    const uint32_t link = DownLink(pkt->GetTopology(), 0);
    const auto& t = pkt->GetSampleTimes();
    const auto util = pkt->GetUtilisationSeries(link);
    const auto backlog = pkt->GetBacklogSeries(link);
    double sumUtil = 0;
    uint32_t n = 0;
    uint32_t maxBacklog = 0;
    for (size_t i = 0; i < t.size(); ++i)
    {
        if (t[i] >= MilliSeconds(2))
        {
            sumUtil += util[i];
            maxBacklog = std::max(maxBacklog, backlog[i]);
            ++n;
        }
    }
    EXPECT_GT(n, 700u);
    EXPECT_EQ(pkt->GetTotalDrops(), 0u);
    Simulator::Destroy();
    std::cout << "HPCC 4-to-1, eta " << (eta < 0 ? std::string("default") : std::to_string(eta))
              << ": utilisation " << sumUtil / n
              << ", max queue " << maxBacklog << " bytes\n";
    return {n ? sumUtil / n : 0, maxBacklog};
}

TEST_F(HpccTest, FourToOneKeepsTheQueueSmallAtHighUtilisation)
{
    // eta counts queued bytes as inflight too (qlen / B T), so the link itself runs a little
    // below eta: the default (the paper's 0.95, not set here) gives about 94 %; 0.97 puts it
    // above 95 %.
    const auto [util95, queue95] = HpccFourToOne(-1);
    EXPECT_GE(util95, 0.93);
    EXPECT_LE(util95, 0.96);
    const auto [util, queue] = HpccFourToOne(0.97);
    EXPECT_GE(util, 0.95);
    // At >= 95 % utilisation at most 5 jumbo frames (45 KB) queue, where DCQCN's equilibrium
    // sits between kmin (400 KB) and kmax.
    EXPECT_LE(queue, 45000u);
    EXPECT_LE(queue95, 45000u);
}

TEST_F(HpccTest, EveryControlReactsToAnIncastAndCompletesIt)
{
    for (const std::string cc : {"dcqcn", "hpcc", "timely", "dctcp"})
    {
        // With PFC: lossy RoCE under a line-rate 4-to-1 start drops and can give up.
        Ptr<PacketBackend> pkt = Backend(cc, 5, Time(0), 1.0, true);
        auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
        double minRate = 1e300;
        rdma->TraceConnectWithoutContext(
            "QpRate", MakeCallback(+[](double* m, uint32_t, double bps) { *m = std::min(*m, bps); })
                          .Bind(&minRate));
        uint32_t done = 0;
        for (uint32_t s = 1; s <= 4; ++s)
        {
            pkt->StartTransfer(s, s, 0, 16 << 20, 0, [&done](const TransferRecord&) { ++done; });
        }
        Simulator::Run();
        EXPECT_EQ(done, 4u) << cc << ": drops " << pkt->GetTotalDrops() << ", timeouts "
                            << rdma->GetCounters().timeouts << ", retransmitted "
                            << rdma->GetRetransmissions();
        EXPECT_LT(minRate, 50e9) << cc << " never cut below the fair share's double";
        EXPECT_EQ(pkt->GetTransport()->GetName(), "rdma/" + cc);
        Simulator::Destroy();
    }
}
