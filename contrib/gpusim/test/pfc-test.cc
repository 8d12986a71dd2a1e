// PFC: an 8-to-1 RDMA incast loses nothing and sends pauses with PFC, drops without it; pauses
// propagate from a congested leaf to the spine and on to the senders' leaf; the JSON, CSV and
// trace carry the queue pairs and pauses.
#include "ns3/boolean.h"
#include "ns3/cluster-spec.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/queue-disc.h"
#include "ns3/packet-backend.h"
#include "ns3/pfc-controller.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"
#include "test-temp-dir.h"

#include <fstream>
#include <iostream>
#include <gtest/gtest.h>
#include <simdjson.h>

using namespace ns3;

namespace
{

Ptr<PacketBackend>
Incast(bool pfc, const std::string& fabric, uint32_t servers, uint32_t senders,
       uint64_t bytes, std::vector<double>* doneUs)
{
    gpusim::ClusterSpec spec;
    spec.servers = servers;
    spec.gpusPerServer = 1;
    spec.nicsPerServer = 1;
    spec.nicGbps = 100;
    spec.fabric = fabric;
    spec.nicsPerLeaf = 4;
    spec.linkLatencyUs = 1.0;
    GpuClusterHelper h;
    h.SetSpec(spec);
    Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
    rdma->SetCongestionControl("none"); // line rate: the worst case for the buffers
    Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
    pkt->SetTransport(rdma);
    pkt->SetAttribute("QueueDisc", StringValue("ecn"));
    pkt->SetAttribute("BufferBytes", UintegerValue(1 << 20)); // 1 MiB per port
    pkt->SetAttribute("Pfc", BooleanValue(pfc));
    pkt->SetTopology(h.BuildTopology());
    // GPUs servers-senders .. servers-1 send to GPU 0.
    for (uint32_t s = servers - senders; s < servers; ++s)
    {
        pkt->StartTransfer(s, s, 0, bytes, 0, [doneUs](const TransferRecord& r) {
            doneUs->push_back(r.delivered.GetNanoSeconds() / 1e3);
        });
    }
    Simulator::Stop(MilliSeconds(200));
    Simulator::Run();
    return pkt;
}

class PfcTest : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(PfcTest, IncastWithPfcLosesNothingAndPauses)
{
    std::vector<double> done;
    const uint64_t bytes = 4 << 20;
    Ptr<PacketBackend> pkt = Incast(true, "single-switch", 9, 8, bytes, &done);
    ASSERT_EQ(done.size(), 8u);
    EXPECT_EQ(pkt->GetTotalDrops(), 0u);
    EXPECT_EQ(pkt->GetRetransmissions(), 0u);
    EXPECT_GT(pkt->GetTotalPauses(), 0u);
    uint64_t senderPaused = 0;
    uint64_t switchPausesSent = 0;
    for (const auto& s : pkt->GetLinkStats())
    {
        EXPECT_EQ(s.losslessDrops, 0u);
        if (!s.switchEgress)
        {
            senderPaused += s.pausesReceived; // NIC egress paused by the switch
        }
        else
        {
            switchPausesSent += s.pausesSent;
        }
    }
    EXPECT_GT(senderPaused, 0u);
    EXPECT_EQ(switchPausesSent, pkt->GetTotalPauses());
    // The receiver's link is the bottleneck and PFC keeps it busy: everything arrives in
    // about 8 x 4 MiB of frames at 100 Gbit/s (payload 8944 of 9002 wire bytes).
    const double wireUs = 8.0 * bytes * 9002 / 8944 * 8 / 100e9 * 1e6;
    const double last = *std::max_element(done.begin(), done.end());
    EXPECT_GT(last, wireUs);
    EXPECT_LT(last, 1.05 * wireUs + 20);
}

TEST_F(PfcTest, IncastWithoutPfcDrops)
{
    std::vector<double> done;
    Ptr<PacketBackend> pkt = Incast(false, "single-switch", 9, 8, 4 << 20, &done);
    EXPECT_GT(pkt->GetTotalDrops(), 0u);
    EXPECT_GT(pkt->GetRetransmissions(), 0u);
    EXPECT_EQ(pkt->GetTotalPauses(), 0u);
}

TEST_F(PfcTest, PausesBlockAVictimFlowToAnIdleReceiver)
{
    // Head-of-line blocking, PFC's known cost: one switch, GPUs 2-9 send 4 MiB each to GPU 0
    // and GPU 9 also sends 4 MiB to GPU 1, whose port is idle. The switch pauses GPU 9's NIC
    // for the incast (one lossless class per port), which stops the victim's frames too: it
    // takes several times the 338 us it takes alone (4 MiB of 9002-byte frames at 100 Gb/s),
    // and without PFC (drops instead of pauses) it is not held back that way.
    auto victimUs = [](bool pfc, bool incast) {
        gpusim::ClusterSpec spec;
        spec.servers = 10;
        spec.gpusPerServer = 1;
        spec.nicsPerServer = 1;
        spec.nicGbps = 100;
        spec.fabric = "single-switch";
        spec.linkLatencyUs = 1.0;
        GpuClusterHelper h;
        h.SetSpec(spec);
        Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
        rdma->SetCongestionControl("none");
        Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
        pkt->SetTransport(rdma);
        pkt->SetAttribute("QueueDisc", StringValue("ecn"));
        pkt->SetAttribute("BufferBytes", UintegerValue(1 << 20));
        pkt->SetAttribute("Pfc", BooleanValue(pfc));
        pkt->SetTopology(h.BuildTopology());
        const uint64_t bytes = 4 << 20;
        if (incast)
        {
            for (uint32_t s = 2; s < 10; ++s)
            {
                pkt->StartTransfer(s, s, 0, bytes, 0, [](const TransferRecord&) {});
            }
        }
        double doneUs = -1;
        pkt->StartTransfer(100, 9, 1, bytes, 1, [&doneUs](const TransferRecord& r) {
            doneUs = r.delivered.GetNanoSeconds() / 1e3;
        });
        Simulator::Stop(MilliSeconds(200));
        Simulator::Run();
        EXPECT_EQ(pkt->GetTotalDrops() > 0, incast && !pfc);
        Simulator::Destroy();
        return doneUs;
    };
    const double alone = victimUs(true, false);
    const double blocked = victimUs(true, true);
    const double dropping = victimUs(false, true);
    std::cout << "PFC victim: alone " << alone << " us, behind pauses " << blocked
              << " us, with drops instead " << dropping << " us\n";
    EXPECT_NEAR(alone, 4.0 * (1 << 20) * 9002 / 8944 * 8 / 100e9 * 1e6, 10.0);
    EXPECT_GT(blocked, 3 * alone);
    EXPECT_LT(dropping, blocked / 2);
}

TEST_F(PfcTest, PausesPropagateUpstreamThroughTheSpine)
{
    // Leaf-spine, 4 NICs per leaf: GPUs 4-7 (other leaf) send to GPU 0. The receiver's leaf
    // pauses the spine, whose queue toward that leaf then pauses the senders' leaf.
    std::vector<double> done;
    Ptr<PacketBackend> pkt = Incast(true, "leaf-spine", 8, 4, 4 << 20, &done);
    ASSERT_EQ(done.size(), 4u);
    EXPECT_EQ(pkt->GetTotalDrops(), 0u);
    Ptr<ClusterTopology> topo = pkt->GetTopology();
    uint64_t spinePaused = 0;
    uint64_t senderLeafPaused = 0;
    for (const auto& s : pkt->GetLinkStats())
    {
        const bool fromSpine = s.from.find("spine") != std::string::npos;
        const bool toSpine = s.to.find("spine") != std::string::npos;
        if (fromSpine)
        {
            spinePaused += s.pausesReceived;
        }
        else if (toSpine && s.pausesReceived > 0)
        {
            senderLeafPaused += s.pausesReceived; // a leaf's uplink paused by the spine
        }
    }
    EXPECT_GT(spinePaused, 0u);
    EXPECT_GT(senderLeafPaused, 0u);
}

TEST_F(PfcTest, JsonCsvAndTraceCarryQueuePairsAndPauses)
{
    std::vector<double> done;
    gpusim::ClusterSpec spec;
    Ptr<PacketBackend> pkt;
    {
        // The incast above, sampled every 20 us.
        spec.servers = 5;
        spec.gpusPerServer = 1;
        spec.nicsPerServer = 1;
        spec.nicGbps = 100;
        spec.fabric = "single-switch";
        spec.linkLatencyUs = 1.0;
        GpuClusterHelper h;
        h.SetSpec(spec);
        Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
        rdma->SetCongestionControl("dcqcn");
        pkt = CreateObject<PacketBackend>();
        pkt->SetTransport(rdma);
        pkt->SetAttribute("QueueDisc", StringValue("ecn"));
        pkt->SetAttribute("BufferBytes", UintegerValue(1 << 20));
        pkt->SetAttribute("Pfc", BooleanValue(true));
        pkt->SetAttribute("SampleInterval", TimeValue(MicroSeconds(20)));
        pkt->SetTopology(h.BuildTopology());
        for (uint32_t s = 1; s < 5; ++s)
        {
            pkt->StartTransfer(s, s, 0, 8 << 20, 0, [&done](const TransferRecord& r) {
                done.push_back(r.delivered.GetNanoSeconds() / 1e3);
            });
        }
        Simulator::Run();
    }
    ASSERT_EQ(done.size(), 4u);
    simdjson::dom::parser parser;
    const std::string json = pkt->ToJson();
    simdjson::dom::element doc = parser.parse(json);
    EXPECT_EQ(std::string_view(doc["transport"]), "rdma/dcqcn");
    EXPECT_GT(uint64_t(doc["rdma"]["cnps"]), 0u);
    EXPECT_GT(uint64_t(doc["rdma"]["ce_marked_packets"]), 0u);
    simdjson::dom::array qps = doc["rdma"]["queue_pairs"];
    ASSERT_EQ(qps.size(), 4u);
    for (simdjson::dom::element qp : qps)
    {
        EXPECT_EQ(uint64_t(qp["acked_bytes"]), 8u << 20);
        EXPECT_EQ(simdjson::dom::array(qp["rate_gbps_samples"]).size(),
                  pkt->GetSampleTimes().size());
    }
    EXPECT_EQ(uint64_t(doc["pfc"]["pauses_sent"]), pkt->GetTotalPauses());
    TestTempDir dir("gpusim-rdma");
    pkt->WriteCsv(dir.Path("run"));
    for (const char* f : {"-qps.csv", "-pfc.csv", "-links.csv"})
    {
        std::ifstream in(dir.Path("run") + f);
        std::string header;
        std::string row;
        EXPECT_TRUE(std::getline(in, header)) << f;
        EXPECT_TRUE(std::getline(in, row)) << f;
    }
    gpusim::JsonWriter w;
    w.BeginArray();
    pkt->WriteTraceCounters(w);
    w.EndArray();
    const std::string trace = w.Take();
    EXPECT_NE(trace.find("\"rate qp0 GPU 1->0\""), std::string::npos);
    EXPECT_NE(trace.find("\"ph\":\"C\""), std::string::npos);
}

TEST_F(PfcTest, AcksAndDataAllTravelInTheLosslessClass)
{
    // Every RDMA packet a switch queues (data, ACK, NACK, CNP) must carry DSCP 3, or PFC
    // would not protect it (ns-3's UDP SendTo ignores the socket's IP_TOS: the transport tags
    // its replies). Counted at every switch egress of a small DCQCN incast.
    gpusim::ClusterSpec spec;
    spec.servers = 3;
    spec.gpusPerServer = 1;
    spec.nicsPerServer = 1;
    spec.nicGbps = 100;
    spec.fabric = "single-switch";
    GpuClusterHelper h;
    h.SetSpec(spec);
    Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
    rdma->SetCongestionControl("dcqcn");
    Ptr<PacketBackend> pkt = CreateObject<PacketBackend>();
    pkt->SetTransport(rdma);
    pkt->SetAttribute("QueueDisc", StringValue("ecn"));
    pkt->SetAttribute("Pfc", BooleanValue(true));
    pkt->SetTopology(h.BuildTopology());
    pkt->Build();
    uint64_t lossless = 0;
    uint64_t other = 0;
    for (uint32_t link : pkt->GetPacketLinks())
    {
        pkt->GetLinkQueueDisc(link)->TraceConnectWithoutContext(
            "Enqueue", Callback<void, Ptr<const QueueDiscItem>>([&](Ptr<const QueueDiscItem> i) {
                auto ip = DynamicCast<const Ipv4QueueDiscItem>(i);
                ASSERT_TRUE(ip);
                if (ip->GetHeader().GetProtocol() == 17)
                {
                    (ip->GetHeader().GetDscp() == Ipv4Header::DscpType(3) ? lossless : other)++;
                }
            }));
    }
    uint32_t done = 0;
    pkt->StartTransfer(1, 1, 0, 1 << 20, 0, [&done](const TransferRecord&) { ++done; });
    pkt->StartTransfer(2, 2, 0, 1 << 20, 0, [&done](const TransferRecord&) { ++done; });
    Simulator::Run();
    EXPECT_EQ(done, 2u);
    // Data packets (118 per MiB at 8944 B each) and one ACK each, at the host and switch.
    EXPECT_GE(lossless, 2u * 2 * 118 * 2);
    EXPECT_EQ(other, 0u);
}
