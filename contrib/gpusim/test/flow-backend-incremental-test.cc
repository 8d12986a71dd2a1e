// Tests of FlowBackend's incremental max-min (IncrementalRates): hand-computed rates and
// delivery times with many flows, the re-rating of held flows whose bottleneck condition
// breaks, and agreement with the full component pass on random traffic.
#include "flow-test-topology.h"

#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

using namespace ns3;

namespace
{

constexpr double kC = 1e9; // NIC link rate of the star below, bytes/s

using gpusim_test::StarTopology;

Ptr<FlowBackend>
Backend(Ptr<ClusterTopology> t, bool incremental)
{
    auto b = CreateObject<FlowBackend>();
    b->SetAttribute("IncrementalRates", BooleanValue(incremental));
    b->SetTopology(t);
    return b;
}

using Xfer = std::tuple<uint64_t, uint32_t, uint32_t, uint64_t, int64_t>; // id src dst B startNs

void
CountFlows(uint64_t* n, uint32_t flows, uint32_t /* links */)
{
    *n += flows;
}

/// Runs the transfers and returns id -> delivery time (ns); counts re-rated flows.
std::map<uint64_t, int64_t>
RunTransfers(Ptr<ClusterTopology> t, const std::vector<Xfer>& xfers, bool incremental,
    uint64_t* reratedFlows = nullptr)
{
    auto b = Backend(t, incremental);
    std::map<uint64_t, int64_t> at;
    uint64_t rerated = 0;
    b->TraceConnectWithoutContext(
        "RatesRecomputed",
        MakeBoundCallback(&CountFlows, &rerated));
    for (const auto& [id, src, dst, bytes, startNs] : xfers)
    {
        Simulator::Schedule(NanoSeconds(startNs),
                            [&, id = id, src = src, dst = dst, bytes = bytes] {
                                b->StartTransfer(id, src, dst, bytes, id % 3,
                                                 [&at](const TransferRecord& r) {
                                                     at[r.id] = r.delivered.GetNanoSeconds();
                                                 });
                            });
    }
    Simulator::Run();
    Simulator::Destroy();
    if (reratedFlows)
    {
        *reratedFlows = rerated;
    }
    return at;
}

} // namespace

TEST(FlowBackendIncremental, HundredFlowsHandComputed)
{
    // K = 30 flows 0 -> 1, L = 20 flows 2 -> 1, M = 50 flows 2 -> 3 (links of rate C).
    // Fair shares: uplink 0: C/30, downlink 1: C/50, uplink 2: C/70, downlink 3: C/50.
    // Uplink 2 is the first bottleneck: L and M get C/70; downlink 1 then has C - 20C/70 for
    // the K flows: C/42 each. The L flows (1e6 B) drain at 70 ms; then the K flows get C/30
    // (their uplink and downlink alike) and the M flows C/50. K (4e6 B) sent 70 ms x C/42 =
    // 5e6/3 B, so 7e6/3 B remain at C/30: 70 ms more. M (4e6 B) sent 1e6 B, 3e6 B remain at
    // C/50: 150 ms more. Plus 4 us of route latency each.
    for (const bool incremental : {false, true})
    {
        auto t = StarTopology(4);
        auto b = Backend(t, incremental);
        std::map<uint64_t, int64_t> at;
        auto cb = [&at](const TransferRecord& r) { at[r.id] = r.delivered.GetNanoSeconds(); };
        uint64_t id = 0;
        for (int i = 0; i < 30; ++i)
        {
            b->StartTransfer(id++, 0, 1, 4000000, i, cb); // K: ids 0-29
        }
        for (int i = 0; i < 20; ++i)
        {
            b->StartTransfer(id++, 2, 1, 1000000, i, cb); // L: ids 30-49
        }
        for (int i = 0; i < 50; ++i)
        {
            b->StartTransfer(id++, 2, 3, 4000000, i, cb); // M: ids 50-99
        }
        Simulator::Schedule(MilliSeconds(1), [&] {
            EXPECT_NEAR(b->GetCurrentRate(0), kC / 42, 1e-3);
            EXPECT_NEAR(b->GetCurrentRate(30), kC / 70, 1e-3);
            EXPECT_NEAR(b->GetCurrentRate(99), kC / 70, 1e-3);
        });
        Simulator::Schedule(MilliSeconds(100), [&] {
            EXPECT_NEAR(b->GetCurrentRate(0), kC / 30, 1e-3);
            EXPECT_NEAR(b->GetCurrentRate(99), kC / 50, 1e-3);
        });
        Simulator::Run();
        ASSERT_EQ(at.size(), 100u);
        for (uint64_t i = 0; i < 100; ++i)
        {
            const int64_t want = i < 30 ? 140004000 : i < 50 ? 70004000 : 220004000;
            EXPECT_NEAR(double(at[i]), double(want), 1.0) << "flow " << i << " incremental "
                                                          << incremental;
        }
        Simulator::Destroy();
    }
}

TEST(FlowBackendIncremental, HeldFlowWhoseBottleneckBreaksIsReRated)
{
    // Downlink 1 carries P (2 -> 1), Q (0 -> 1), Z (3 -> 1); uplink 0 carries Q and R (0 -> 4).
    // Downlink 1 is the first bottleneck: P, Q, Z get C/3 and R the rest of uplink 0, 2C/3.
    // When Z (1e6 B) drains at 3 ms, only P and Q sit on its links; holding R at 2C/3 would
    // give Q C/3 on uplink 0 and P 2C/3: Q, bottlenecked at uplink 0, would be slower than R
    // there, so R must be re-rated too: P, Q, R all get C/2. R (4e6 B, 2e6 sent) drains at
    // 7 ms; P and Q (1e6 sent) at 9 ms; +4 us latency.
    for (const bool incremental : {false, true})
    {
        auto t = StarTopology(5);
        auto b = Backend(t, incremental);
        std::map<uint64_t, int64_t> at;
        auto cb = [&at](const TransferRecord& r) { at[r.id] = r.delivered.GetNanoSeconds(); };
        b->StartTransfer(1, 2, 1, 4000000, 0, cb); // P
        b->StartTransfer(2, 0, 1, 4000000, 0, cb); // Q
        b->StartTransfer(3, 3, 1, 1000000, 0, cb); // Z
        b->StartTransfer(4, 0, 4, 4000000, 0, cb); // R
        Simulator::Schedule(MilliSeconds(1), [&] {
            EXPECT_NEAR(b->GetCurrentRate(2), kC / 3, 1e-3);
            EXPECT_NEAR(b->GetCurrentRate(4), 2 * kC / 3, 1e-3);
        });
        Simulator::Schedule(MilliSeconds(5), [&] {
            for (uint64_t id : {1, 2, 4})
            {
                EXPECT_NEAR(b->GetCurrentRate(id), kC / 2, 1e-3) << "flow " << id;
            }
        });
        Simulator::Run();
        ASSERT_EQ(at.size(), 4u);
        EXPECT_NEAR(double(at[3]), 3004000.0, 1.0);
        EXPECT_NEAR(double(at[4]), 7004000.0, 1.0);
        EXPECT_NEAR(double(at[1]), 9004000.0, 1.0);
        EXPECT_NEAR(double(at[2]), 9004000.0, 1.0);
        Simulator::Destroy();
    }
}

TEST(FlowBackendIncremental, HeldFlowsStayOutOfThePass)
{
    // 40 flows 2 -> 3 of staggered sizes (40 departures), 100 flows 0 -> 4 and one flow
    // 0 -> 3 that links the two groups (downlink 3 and uplink 0): one connected component.
    // Uplink 0 (101 flows, C/101) is the first bottleneck, so flow 140 gets C/101 and keeps
    // it while the 2 -> 3 flows leave (downlink 3 then has more than C/101 per flow). Each
    // departure changes the rates of the 2 -> 3 flows only: the incremental pass re-rates
    // those and flow 140 (its link changed), k + 1 flows with k left, where the full pass
    // re-rates k + 101. The 0 -> 4 flows and flow 140 (8e6 B at C/101) drain at 808 ms.
    std::vector<Xfer> xfers;
    for (uint64_t i = 0; i < 40; ++i)
    {
        xfers.emplace_back(i, 2, 3, 100000 * (i + 1), 0);
    }
    for (uint64_t i = 40; i < 140; ++i)
    {
        xfers.emplace_back(i, 0, 4, 8000000, 0);
    }
    xfers.emplace_back(140, 0, 3, 8000000, 0);
    uint64_t fullRerated = 0;
    uint64_t incRerated = 0;
    const auto full = RunTransfers(StarTopology(5), xfers, false, &fullRerated);
    const auto inc = RunTransfers(StarTopology(5), xfers, true, &incRerated);
    ASSERT_EQ(full.size(), xfers.size());
    ASSERT_EQ(inc.size(), xfers.size());
    for (const auto& [id, ns] : full)
    {
        EXPECT_NEAR(double(inc.at(id)), double(ns), 1.0) << "transfer " << id;
    }
    for (uint64_t id = 40; id <= 140; ++id)
    {
        EXPECT_NEAR(double(inc.at(id)), 808004000.0, 1.0) << "transfer " << id;
    }
    // First pass: 141 flows in both. Then 40 departures leaving k = 39..0 flows on 2 -> 3
    // (downlink 3 keeps flow 140): full sum(k + 101) = 4820, incremental sum(k + 1) = 820.
    // Flow 140's rate, re-rated against held ones, may differ from the 0 -> 4 flows' in the
    // last bit, so their drains may split over two nanoseconds: one more pass of <= 101.
    EXPECT_EQ(fullRerated, 141u + 4820u);
    EXPECT_GE(incRerated, 141u + 820u);
    EXPECT_LE(incRerated, 141u + 820u + 101u);
}

TEST(FlowBackendIncremental, MatchesFullPassOnRandomTraffic)
{
    // Oversubscribed leaf-spine with two GPUs per NIC and dgx-h100 servers with tree-like
    // chains: both passes must give the same delivery times (to rounding) for every transfer.
    for (int topo = 0; topo < 2; ++topo)
    {
        gpusim::ClusterSpec s;
        if (topo == 0)
        {
            s.servers = 8;
            s.gpusPerServer = 4;
            s.nicsPerServer = 2;
            s.fabric = "leaf-spine";
            s.nicsPerLeaf = 4;
            s.oversubscription = 2;
        }
        else
        {
            ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-h100", s));
            s.servers = 6;
        }
        GpuClusterHelper h;
        h.SetSpec(s);
        auto t = h.BuildTopology();
        const uint32_t gpus = s.servers * s.gpusPerServer;
        uint64_t x = 4242 + topo;
        auto rnd = [&x](uint64_t n) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            return (x >> 33) % n;
        };
        std::vector<Xfer> xfers;
        for (uint64_t id = 0; id < 1500; ++id)
        {
            const uint32_t src = rnd(gpus);
            // Half the traffic to a neighbour GPU (NVLink / shared NIC), half anywhere.
            const uint32_t dst = rnd(2) ? (src + 1) % gpus : rnd(gpus);
            xfers.emplace_back(id, src, dst, rnd(20) == 0 ? 0 : 1000 + rnd(3000000),
                               int64_t(rnd(1000)) * 1000);
        }
        std::stable_sort(xfers.begin(), xfers.end(), [](const Xfer& a, const Xfer& b) {
            return std::get<4>(a) < std::get<4>(b);
        });
        uint64_t fullRerated = 0;
        uint64_t incRerated = 0;
        const auto full = RunTransfers(t, xfers, false, &fullRerated);
        const auto inc = RunTransfers(t, xfers, true, &incRerated);
        ASSERT_EQ(full.size(), xfers.size());
        ASSERT_EQ(inc.size(), xfers.size());
        for (const auto& [id, ns] : full)
        {
            EXPECT_NEAR(double(inc.at(id)), double(ns), 2.0) << "transfer " << id;
        }
        EXPECT_LT(incRerated, fullRerated) << "topology " << topo;
    }
}
