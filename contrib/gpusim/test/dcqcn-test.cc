// DCQCN: the reaction point's rate cuts, fast recovery, additive increase and alpha by hand;
// two flows on one bottleneck converge to fair shares.
#include "ns3/cluster-spec.h"
#include "ns3/dcqcn.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/packet-backend.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <gtest/gtest.h>

using namespace ns3;

namespace
{

class DcqcnTest : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(DcqcnTest, CutsRecoversAndIncreasesAsThePaperSays)
{
    Ptr<Dcqcn> d = CreateObject<Dcqcn>();
    d->Start(100e9, 9000, Time(0));
    EXPECT_DOUBLE_EQ(d->GetRateBps(), 100e9);
    // Two CNPs at t = 0 with alpha = 1: Rt = Rc, Rc = Rc (1 - 1/2), alpha stays 1.
    d->OnCnp();
    EXPECT_DOUBLE_EQ(d->GetRateBps(), 50e9);
    EXPECT_DOUBLE_EQ(d->GetTargetRateBps(), 100e9);
    d->OnCnp();
    EXPECT_DOUBLE_EQ(d->GetRateBps(), 25e9);
    EXPECT_DOUBLE_EQ(d->GetTargetRateBps(), 50e9);
    EXPECT_DOUBLE_EQ(d->GetAlpha(), 1.0);
    std::vector<double> rate;
    std::vector<double> alpha;
    for (int k = 1; k <= 7; ++k)
    {
        Simulator::Schedule(MicroSeconds(55 * k + 1), [&] {
            rate.push_back(d->GetRateBps());
            alpha.push_back(d->GetAlpha());
        });
    }
    Simulator::Stop(MicroSeconds(55 * 7 + 2));
    Simulator::Run();
    ASSERT_EQ(rate.size(), 7u);
    // Fast recovery (F = 5 timer events): halfway to Rt = 50 G each time.
    double rc = 25e9;
    for (int k = 0; k < 5; ++k)
    {
        rc = (rc + 50e9) / 2;
        EXPECT_DOUBLE_EQ(rate[k], rc) << "event " << k + 1;
    }
    // Event 6: additive increase, Rt = 50 G + 40 M, then halfway.
    double rt = 50e9 + 40e6;
    rc = (rc + rt) / 2;
    EXPECT_DOUBLE_EQ(rate[5], rc);
    rt += 40e6;
    rc = (rc + rt) / 2;
    EXPECT_DOUBLE_EQ(rate[6], rc);
    // Alpha: the first 55 us period had CNPs (no decay), then (1 - 1/256) per period.
    EXPECT_DOUBLE_EQ(alpha[0], 1.0);
    EXPECT_DOUBLE_EQ(alpha[1], 1.0 - 1.0 / 256);
    EXPECT_NEAR(alpha[6], std::pow(1.0 - 1.0 / 256, 6), 1e-12);
    EXPECT_EQ(d->GetCnpCount(), 2u);
    d->Dispose();
}

TEST_F(DcqcnTest, TwoFlowsOnOneBottleneckConvergeToFairShares)
{
    // GPUs 0 and 1 send to GPU 2 through one 100 Gbit/s switch port ("ecn" queue, defaults
    // kmin 400 KB / kmax 1600 KB / pmax 0.2). Flow A starts at 0 and has the link; flow B
    // joins at 5 ms. Throughput of each flow per 1 ms window from its acknowledged bytes.
    gpusim::ClusterSpec spec;
    spec.servers = 3;
    spec.gpusPerServer = 1;
    spec.nicsPerServer = 1;
    spec.nicGbps = 100;
    spec.fabric = "single-switch";
    spec.linkLatencyUs = 1.0;
    GpuClusterHelper h;
    h.SetSpec(spec);
    Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
    rdma->SetCongestionControl("dcqcn");
    Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
    pkt->SetTransport(rdma);
    pkt->SetAttribute("QueueDisc", StringValue("ecn"));
    pkt->SetTopology(h.BuildTopology());
    const uint64_t big = 2000ull << 20; // longer than the run
    pkt->StartTransfer(1, 0, 2, big, 0, [](const TransferRecord&) {});
    Simulator::Schedule(MilliSeconds(5), [&] {
        pkt->StartTransfer(2, 1, 2, big, 0, [](const TransferRecord&) {});
    });
    const int windows = 40; // 1 ms each, from 5 ms
    std::vector<std::array<uint64_t, 2>> acked;
    for (int w = 0; w <= windows; ++w)
    {
        Simulator::Schedule(MilliSeconds(5 + w), [&] {
            std::array<uint64_t, 2> a{0, 0};
            const auto qps = rdma->GetQueuePairs();
            for (size_t i = 0; i < qps.size() && i < 2; ++i)
            {
                a[i] = qps[i]->ackedBytes;
            }
            acked.push_back(a);
        });
    }
    Simulator::Stop(MilliSeconds(5 + windows) + NanoSeconds(1));
    Simulator::Run();
    ASSERT_EQ(acked.size(), size_t(windows + 1));
    // Fair share of the goodput: payload 8944 of every 9002 bytes on the wire, halved.
    const double fair = 100e9 * 8944.0 / 9002.0 / 2;
    int converged = -1; // first window from which every later window is within 10 %
    for (int w = windows - 1; w >= 0; --w)
    {
        bool ok = true;
        for (int f = 0; f < 2; ++f)
        {
            const double bps = (acked[w + 1][f] - acked[w][f]) * 8.0 / 1e-3;
            ok = ok && std::abs(bps - fair) <= 0.1 * fair;
        }
        if (!ok)
        {
            break;
        }
        converged = w;
    }
    ASSERT_GE(converged, 0) << "never within 10 % of the fair share";
    // Measured: within 10 % from the window starting 12 ms after B joined (see doc).
    EXPECT_LE(converged, 20) << "converged " << converged << " ms after flow B joined";
    auto qps = rdma->GetQueuePairs();
    EXPECT_GT(DynamicCast<Dcqcn>(qps[0]->cc)->GetCnpCount(), 0u);
    EXPECT_GT(DynamicCast<Dcqcn>(qps[1]->cc)->GetCnpCount(), 0u);
    EXPECT_EQ(pkt->GetTotalDrops(), 0u);
    std::cout << "DCQCN fair within 10 % from " << converged << " ms after the second flow\n";
    Simulator::Destroy();
}
