// RdmaTransport: idle-fabric agreement with the flow backend, segmentation and framing,
// go-back-N recovery from injected losses (NACK and timeout), fair NIC scheduling, errors, CLI,
// determinism.
#include "ns3/channel.h"
#include "ns3/cluster-spec.h"
#include "ns3/error-model.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/gpusim-commands.h"
#include "ns3/job-builder.h"
#include "ns3/inet-socket-address.h"
#include "ns3/ipv4-end-point.h"
#include "ns3/ipv4-l3-protocol.h"
#include "ns3/packet-backend.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/rdma-port-demux.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/udp-l4-protocol.h"
#include "ns3/udp-socket-factory.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace ns3;
using gpusim::CollKind;

namespace
{

gpusim::ClusterSpec
Spec(uint32_t servers, double gbps, const std::string& fabric = "single-switch")
{
    gpusim::ClusterSpec s;
    s.servers = servers;
    s.gpusPerServer = 1;
    s.nicsPerServer = 1;
    s.nicGbps = gbps;
    s.fabric = fabric;
    s.linkLatencyUs = 1.0;
    return s;
}

Ptr<ClusterTopology>
Topology(const gpusim::ClusterSpec& spec)
{
    GpuClusterHelper h;
    h.SetSpec(spec);
    return h.BuildTopology();
}

Ptr<PacketBackend>
MakeRdma(Ptr<ClusterTopology> topo, const std::string& cc, const std::string& queue = "red-ecn")
{
    Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
    rdma->SetCongestionControl(cc);
    Ptr<PacketBackend> b = CreateObject<PacketBackend>();
    b->SetTransport(rdma);
    b->SetAttribute("QueueDisc", StringValue(queue));
    b->SetTopology(topo);
    return b;
}

double
AllReduceUs(Ptr<NetworkBackend> net, const gpusim::ClusterSpec& spec, uint64_t bytes)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    net->SetTopology(cluster.GetTopology());
    JobBuilder job(gpus.GetN());
    job.AllRanks().CommInit("c").Collective(1, CollKind::AllReduce, "c", bytes,
                                            gpusim::DataType::F32, 0);
    job.SyncStream(1);
    GpuWorkloadHelper h;
    h.SetBackend(net);
    h.SetNcclAttribute("Algorithm", StringValue("ring"));
    Ptr<GpuWorkload> w = h.Install(job.BuildShared(), gpus);
    Simulator::Run();
    RunReport rep = w->Check();
    if (!rep.completed || w->GetCollectives().empty())
    {
        return -1;
    }
    const CollectiveRecord& c = w->GetCollectives().at(0);
    return (c.End() - c.FirstJoin()).GetNanoSeconds() / 1e3;
}

/// Drops the n-th (1-based) received frame larger than 1000 bytes: a lost data packet.
class NthDataPacketLoss : public ErrorModel
{
  public:
    explicit NthDataPacketLoss(std::vector<uint32_t> nth)
        : m_nth(std::move(nth))
    {
    }

    uint32_t dropped = 0;

  private:
    bool DoCorrupt(Ptr<Packet> p) override
    {
        if (p->GetSize() <= 1000)
        {
            return false;
        }
        ++m_seen;
        const bool drop = std::find(m_nth.begin(), m_nth.end(), m_seen) != m_nth.end();
        dropped += drop ? 1 : 0;
        return drop;
    }

    void DoReset() override {}

    std::vector<uint32_t> m_nth;
    uint32_t m_seen = 0;
};

/// Installs `em` where GPU `gpu`'s NIC uplink arrives at its switch.
void
LoseOnUplink(Ptr<PacketBackend> pkt, uint32_t gpu, Ptr<ErrorModel> em)
{
    pkt->Build();
    Ptr<ClusterTopology> topo = pkt->GetTopology();
    for (uint32_t l : topo->OutLinks(topo->NicOf(gpu)))
    {
        if (topo->Links()[l].kind == TopoLinkKind::Nic)
        {
            Ptr<NetDevice> dev = pkt->GetLinkDevice(l);
            Ptr<Channel> ch = dev->GetChannel();
            Ptr<NetDevice> peer = ch->GetDevice(0) == dev ? ch->GetDevice(1) : ch->GetDevice(0);
            DynamicCast<PointToPointNetDevice>(peer)->SetReceiveErrorModel(em);
        }
    }
}

/// Sends one message GPU 0 -> GPU 1; returns its delivery time in us (-1: never).
double
OneMessageUs(Ptr<PacketBackend> pkt, uint64_t bytes)
{
    double us = -1;
    pkt->StartTransfer(1, 0, 1, bytes, 0, [&us](const TransferRecord& r) {
        us = r.delivered.GetNanoSeconds() / 1e3;
    });
    Simulator::Run();
    return us;
}

class RdmaTransportTest : public ::testing::Test
{
  protected:
    void TearDown() override { Simulator::Destroy(); }
};

} // namespace

TEST_F(RdmaTransportTest, IdleFabricAllReduceMatchesFlowBackendWithin5Percent)
{
    // 64 MiB ring AllReduce, 8 servers x 1 GPU, 100 Gbit/s NICs on one switch.
    const auto spec = Spec(8, 100);
    const uint64_t bytes = 64ull << 20;
    const double flowUs = AllReduceUs(CreateObject<FlowBackend>(), spec, bytes);
    Simulator::Destroy();
    for (const std::string cc : {"none", "dcqcn"})
    {
        Ptr<PacketBackend> pkt = MakeRdma(Topology(spec), cc);
        const double rdmaUs = AllReduceUs(pkt, spec, bytes);
        Simulator::Destroy();
        ASSERT_GT(rdmaUs, 0) << cc;
        const double ratio = flowUs / rdmaUs;
        EXPECT_GT(ratio, 0.95) << cc << ": flow " << flowUs << " us, rdma " << rdmaUs << " us";
        EXPECT_LE(ratio, 1.001) << cc << ": packets cannot beat the fluid model here";
        EXPECT_EQ(pkt->GetTotalDrops(), 0u);
        EXPECT_EQ(pkt->GetRetransmissions(), 0u);
        EXPECT_EQ(pkt->GetTransport()->GetName(), "rdma/" + cc);
    }
}

TEST_F(RdmaTransportTest, OneMessageTakesItsWireTime)
{
    // 1 MiB from GPU 0 to GPU 1 through one switch at 100 Gbit/s, 1 us per link.
    Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(2, 100)), "none");
    const uint64_t bytes = 1 << 20;
    const double us = OneMessageUs(pkt, bytes);
    auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
    const uint32_t payload = rdma->GetPayloadPerPacket();
    EXPECT_EQ(payload, 9000u - 56u);
    const uint64_t n = (bytes + payload - 1) / payload; // 118 packets
    EXPECT_EQ(rdma->GetCounters().dataPackets, n);
    EXPECT_EQ(rdma->GetCounters().ackPackets, n); // AckInterval 1
    // By hand: every frame (payload + 56 header bytes + 2 PPP bytes) crosses the NIC link
    // back to back, the last one then crosses the switch link (store and forward), plus two
    // 1 us links and the PCIe hops the backend adds at delivery.
    const double frameBits = (bytes + n * 58) * 8.0;
    const double lastFrameUs = ((bytes - (n - 1) * payload) + 58) * 8.0 / 100e9 * 1e6;
    const double wireUs = frameBits / 100e9 * 1e6 + lastFrameUs + 2.0;
    Ptr<ClusterTopology> topo = pkt->GetTopology();
    double pcieUs = 0;
    for (uint32_t l : topo->Route(0, 1, 0))
    {
        if (topo->Links()[l].kind == TopoLinkKind::Pcie)
        {
            pcieUs += topo->Links()[l].latencySec * 1e6;
        }
    }
    EXPECT_NEAR(us, wireUs + pcieUs, 0.01 * (wireUs + pcieUs));
}

TEST_F(RdmaTransportTest, MessagesOfAnySizeArriveInOrderOnOneQueuePair)
{
    Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(2, 100)), "none", "fifo");
    const std::vector<uint64_t> sizes = {0, 1, 8943, 8944, 8945, 100000, 3, 1 << 20};
    std::vector<uint64_t> got;
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        pkt->StartTransfer(100 + i, 0, 1, sizes[i], 7, [&](const TransferRecord& r) {
            got.push_back(r.id);
            EXPECT_EQ(r.bytes, sizes[r.id - 100]);
        });
    }
    Simulator::Run();
    ASSERT_EQ(got.size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        EXPECT_EQ(got[i], 100 + i);
    }
    auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
    EXPECT_EQ(rdma->GetNConnections(), 1u);
    // Packets by hand: 1+1+1+1+2+12+1+118 (a 0-byte message still takes one packet).
    EXPECT_EQ(rdma->GetCounters().dataPackets, 137u);
}

TEST_F(RdmaTransportTest, GoBackNRecoversALostPacketThroughANack)
{
    Ptr<PacketBackend> clean = MakeRdma(Topology(Spec(2, 100)), "none");
    const double cleanUs = OneMessageUs(clean, 1 << 20);
    Simulator::Destroy();

    Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(2, 100)), "none");
    Ptr<NthDataPacketLoss> loss = Create<NthDataPacketLoss>(std::vector<uint32_t>{5});
    LoseOnUplink(pkt, 0, loss);
    const double us = OneMessageUs(pkt, 1 << 20);
    auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
    const auto& c = rdma->GetCounters();
    ASSERT_GT(us, 0) << "the message never arrived";
    EXPECT_EQ(loss->dropped, 1u);
    EXPECT_EQ(c.nackPackets, 1u); // one NACK per gap
    EXPECT_EQ(c.timeouts, 0u);
    // Go-back-N resends PSN 4 and everything sent after it before the NACK came back.
    EXPECT_GE(c.retransmitted, 1u);
    EXPECT_EQ(c.dataPackets, 118u + c.retransmitted);
    // The receiver discarded exactly the packets that followed the gap on the first pass.
    EXPECT_EQ(c.outOfOrder, c.retransmitted - 1);
    // Cost: the resent packets' wire time plus about one round trip, far below the timeout.
    EXPECT_GT(us, cleanUs);
    EXPECT_LT(us, cleanUs + (c.retransmitted + 1) * 0.75 + 10.0);
}

TEST_F(RdmaTransportTest, GoBackNRecoversALostLastPacketByTimeout)
{
    Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(2, 100)), "none");
    // The last of 118 packets: nothing follows it, so no NACK, only the timer can recover.
    Ptr<NthDataPacketLoss> loss = Create<NthDataPacketLoss>(std::vector<uint32_t>{118});
    LoseOnUplink(pkt, 0, loss);
    auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
    const double us = OneMessageUs(pkt, 1 << 20);
    const auto& c = rdma->GetCounters();
    ASSERT_GT(us, 0);
    EXPECT_EQ(c.timeouts, 1u);
    EXPECT_EQ(c.retransmitted, 1u);
    EXPECT_EQ(c.nackPackets, 0u);
    // Default RetransmitTimeout 1 ms, counted from the last ACK progress.
    EXPECT_GT(us, 1000.0);
    EXPECT_LT(us, 1100.0);
}

TEST_F(RdmaTransportTest, QueuePairOfACutLinkGivesUp)
{
    Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(2, 100)), "none");
    std::vector<uint32_t> all(200);
    for (uint32_t i = 0; i < all.size(); ++i)
    {
        all[i] = i + 1;
    }
    LoseOnUplink(pkt, 0, Create<NthDataPacketLoss>(all));
    const double us = OneMessageUs(pkt, 64 << 10);
    EXPECT_LT(us, 0);
    EXPECT_EQ(pkt->InFlight().size(), 1u);
    auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
    EXPECT_EQ(rdma->GetCounters().timeouts, 8u); // RetryCount 7, then it gives up
    EXPECT_LT(Simulator::Now(), MilliSeconds(20));
}

TEST_F(RdmaTransportTest, QueuePairsOfOneNicShareItsLineRate)
{
    // Two QPs (flow keys 0 and 1) GPU 0 -> GPU 1, 4 MiB each: served round-robin, they end
    // together, each taking about twice a lone message's time.
    Ptr<PacketBackend> lone = MakeRdma(Topology(Spec(2, 100)), "none");
    const double loneUs = OneMessageUs(lone, 4 << 20);
    Simulator::Destroy();
    Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(2, 100)), "none");
    std::vector<double> at(2, -1);
    for (uint64_t k = 0; k < 2; ++k)
    {
        pkt->StartTransfer(k, 0, 1, 4 << 20, k, [&at](const TransferRecord& r) {
            at[r.id] = r.delivered.GetNanoSeconds() / 1e3;
        });
    }
    Simulator::Run();
    ASSERT_GT(at[0], 0);
    ASSERT_GT(at[1], 0);
    EXPECT_NEAR(at[0], at[1], 1.0);
    EXPECT_NEAR(std::max(at[0], at[1]), 2 * loneUs, 0.02 * 2 * loneUs);
    EXPECT_EQ(pkt->GetTransport()->GetNConnections(), 2u);
}

TEST_F(RdmaTransportTest, BackendAttributeAndCliSelectRdma)
{
    Ptr<PacketBackend> b = CreateObject<PacketBackend>();
    EXPECT_EQ(b->GetTransportProtocol(), "tcp");
    b->SetAttribute("TransportProtocol", StringValue("rdma"));
    EXPECT_TRUE(DynamicCast<RdmaTransport>(b->GetTransport()));
    EXPECT_THROW(b->SetTransportProtocol("carrier-pigeon"), std::invalid_argument);
    Ptr<RdmaTransport> t = CreateObject<RdmaTransport>();
    try
    {
        t->SetCongestionControl("warp-drive");
        FAIL() << "no exception";
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_NE(std::string(e.what()).find("warp-drive"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("none"), std::string::npos);
    }
    std::ostringstream out, err;
    int code = gpusim::GpusimMain({"collective", "--backend", "packet", "--transport", "rdma",
                                   "--cc", "none", "--servers", "4", "--gpus-per-server", "2",
                                   "--nic-gbps", "100", "--fabric", "single-switch", "--bytes",
                                   "4M", "--quiet"},
                                  out, err);
    EXPECT_EQ(code, 0) << err.str();
    EXPECT_NE(out.str().find("# backend: packet"), std::string::npos) << out.str();
    // With PFC (needs the ecn queue disc, the rdma default) and the RDMA JSON section.
    std::ostringstream outP, errP;
    code = gpusim::GpusimMain({"collective", "--backend", "packet", "--transport", "rdma",
                               "--pfc", "on", "--servers", "2", "--gpus-per-server", "1",
                               "--bytes", "1M", "--quiet"},
                              outP, errP);
    EXPECT_EQ(code, 0) << errP.str();
    std::ostringstream outQ, errQ;
    code = gpusim::GpusimMain({"collective", "--backend", "packet", "--transport", "rdma",
                               "--pfc", "on", "--queue", "red-ecn", "--bytes", "1M", "--quiet"},
                              outQ, errQ);
    EXPECT_NE(code, 0) << "PFC without the ecn queue disc is an error";
    EXPECT_NE(errQ.str().find("ecn"), std::string::npos) << errQ.str();
    std::ostringstream out2, err2;
    code = gpusim::GpusimMain({"collective", "--backend", "packet", "--transport", "ib",
                               "--bytes", "1M", "--quiet"},
                              out2, err2);
    EXPECT_NE(code, 0);
    std::ostringstream out3, err3;
    code = gpusim::GpusimMain({"collective", "--transport", "rdma", "--bytes", "1M", "--quiet"},
                              out3, err3);
    EXPECT_EQ(code, 1) << "--transport without --backend packet is a usage error";
}

TEST_F(RdmaTransportTest, SameInputsGiveIdenticalResults)
{
    // A congested DCQCN incast (random ECN marks, CNPs, rate cuts) run twice in one process.
    auto run = [] {
        Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(5, 100)), "dcqcn", "ecn");
        std::vector<int64_t> at;
        for (uint32_t s = 1; s < 5; ++s)
        {
            pkt->StartTransfer(s, s, 0, 8 << 20, 0, [&at](const TransferRecord& r) {
                at.push_back(r.delivered.GetNanoSeconds());
            });
        }
        Simulator::Run();
        auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
        at.push_back(int64_t(rdma->GetCounters().cnpPackets));
        at.push_back(int64_t(pkt->GetTotalMarks()));
        Simulator::Destroy();
        return at;
    };
    const auto a = run();
    const auto b = run();
    ASSERT_EQ(a.size(), 6u);
    EXPECT_GT(a[4], 0) << "the scenario must be congested (CNPs)";
    EXPECT_EQ(a, b);
}

TEST_F(RdmaTransportTest, QueuePairDatagramsSkipTheSocketScanAndOtherUdpStillArrives)
{
    // RdmaPortDemux sits in each host's protocol-17 slot: the transport's datagrams reach it by
    // port, any other UDP datagram still reaches its ns-3 socket.
    Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(2, 100)), "none");
    pkt->Build();
    Ptr<Node> receiver = pkt->GetHostNode(1);
    Ptr<Ipv4L3Protocol> ipv4 = receiver->GetObject<Ipv4L3Protocol>();
    ASSERT_TRUE(ipv4);
    EXPECT_TRUE(DynamicCast<RdmaPortDemux>(ipv4->GetProtocol(UdpL4Protocol::PROT_NUMBER)));

    uint32_t plainBytes = 0;
    Ptr<Socket> sink = Socket::CreateSocket(receiver, UdpSocketFactory::GetTypeId());
    sink->Bind(InetSocketAddress(Ipv4Address::GetAny(), 9));
    sink->SetRecvCallback(Callback<void, Ptr<Socket>>([&plainBytes](Ptr<Socket> s) {
        while (Ptr<Packet> p = s->Recv())
        {
            plainBytes += p->GetSize();
        }
    }));
    Ptr<Socket> source = Socket::CreateSocket(pkt->GetHostNode(0), UdpSocketFactory::GetTypeId());
    Simulator::Schedule(MicroSeconds(1), [&]() {
        source->SendTo(Create<Packet>(1234), 0, InetSocketAddress(pkt->GetHostAddress(1), 9));
    });
    // 1 MiB of RDMA in both directions at once: data and ACKs cross each host's demux.
    double forwardUs = -1;
    double backUs = -1;
    pkt->StartTransfer(1, 0, 1, 1 << 20, 0, [&forwardUs](const TransferRecord& r) {
        forwardUs = r.delivered.GetMicroSeconds();
    });
    pkt->StartTransfer(2, 1, 0, 1 << 20, 0, [&backUs](const TransferRecord& r) {
        backUs = r.delivered.GetMicroSeconds();
    });
    Simulator::Run();
    EXPECT_EQ(plainBytes, 1234u);
    EXPECT_GT(forwardUs, 80.0); // 1 MiB at 100 Gbit/s is 84 us of wire time
    EXPECT_GT(backUs, 80.0);
    auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
    EXPECT_EQ(rdma->GetCounters().dataPackets, 2u * 118u); // 9000-byte MTU, 8944 B payload
    EXPECT_EQ(rdma->GetCounters().ackPackets, rdma->GetCounters().dataPackets); // each ACKed
}

TEST_F(RdmaTransportTest, QueuePairsTakeTheSocketsEphemeralPortsWithoutASocketEach)
{
    // A QP holds a UDP endpoint, not an ns-3 socket (about 1 KiB less per QP; an AllToAll
    // opens n^2). Its port must still be the one a bound socket would have had, in the same
    // order (49153, 49154, ... per host, ns-3 3.37's Ipv4EndPointDemux), since the source port
    // is the QP's ECMP entropy: sockets bound later continue the sequence, and ACKs find their
    // QP by that port.
    Ptr<PacketBackend> pkt = MakeRdma(Topology(Spec(2, 100)), "none");
    pkt->Build();
    int delivered = 0;
    for (uint64_t flow = 0; flow < 3; ++flow)
    {
        pkt->StartTransfer(flow + 1, 0, 1, 64 * 1024, flow, [&delivered](const TransferRecord&) {
            ++delivered;
        });
    }
    Simulator::Run();
    EXPECT_EQ(delivered, 3);
    auto rdma = DynamicCast<RdmaTransport>(pkt->GetTransport());
    const auto qps = rdma->GetQueuePairs();
    ASSERT_EQ(qps.size(), 3u);
    for (uint32_t i = 0; i < 3; ++i)
    {
        ASSERT_NE(qps[i]->endPoint, nullptr);
        EXPECT_EQ(qps[i]->endPoint->GetLocalPort(), 49153 + i) << "QP " << i;
        EXPECT_EQ(qps[i]->endPoint->GetLocalAddress(), Ipv4Address::GetAny());
    }
    EXPECT_EQ(rdma->GetCounters().ackPackets, rdma->GetCounters().dataPackets);
    Ptr<Socket> later = Socket::CreateSocket(pkt->GetHostNode(0), UdpSocketFactory::GetTypeId());
    ASSERT_EQ(later->Bind(), 0);
    Address name;
    later->GetSockName(name);
    EXPECT_EQ(InetSocketAddress::ConvertFrom(name).GetPort(), 49156);
}

TEST(RdmaQueuePairTest, LongQueuesAcknowledgeAndGoBackAcrossTheirCompaction)
{
    // 300 messages of 1..3 packets (100-byte payloads): send all, acknowledge in uneven steps,
    // go back in the middle, and check every segment's message, PSN and byte count, across the
    // points where fully acknowledged messages are dropped from the front of the queue.
    ConnectionKey key{0, 1, 0};
    RdmaQueuePair qp(0, key, 0, 1, 100);
    std::vector<uint64_t> msgOfPsn;
    std::vector<uint32_t> bytesOfPsn;
    uint64_t total = 0;
    for (uint64_t m = 0; m < 300; ++m)
    {
        const uint64_t bytes = 100 * (m % 3) + 50; // 50, 150, 250 B: 1, 2, 3 packets
        qp.Post(1000 + m, bytes);
        total += bytes;
        for (uint64_t b = 0; b < bytes; b += 100)
        {
            msgOfPsn.push_back(1000 + m);
            bytesOfPsn.push_back(uint32_t(std::min<uint64_t>(100, bytes - b)));
        }
    }
    auto sendUpTo = [&](uint32_t end) {
        while (qp.HasUnsent() && qp.SndNxt() < end)
        {
            const RdmaQueuePair::Segment s = qp.Next();
            ASSERT_EQ(s.psn, qp.SndNxt());
            EXPECT_EQ(s.msgId, msgOfPsn[s.psn]) << "psn " << s.psn;
            EXPECT_EQ(s.payload, bytesOfPsn[s.psn]) << "psn " << s.psn;
            EXPECT_EQ(s.last, s.psn + 1 == msgOfPsn.size() || msgOfPsn[s.psn + 1] != s.msgId);
            qp.Advance();
        }
    };
    const uint32_t n = uint32_t(msgOfPsn.size());
    ASSERT_EQ(n, 600u);
    uint64_t acked = 0;
    sendUpTo(n);
    acked += qp.Acknowledge(251); // drops ~125 messages from the front
    EXPECT_EQ(qp.GoBackTo(400), n - 400);
    sendUpTo(450);
    acked += qp.Acknowledge(420); // the queue drops its acknowledged front here
    sendUpTo(520);                // and goes on from the message it was sending
    EXPECT_EQ(qp.GoBackTo(500), 20u);
    sendUpTo(n);
    acked += qp.Acknowledge(599);
    acked += qp.Acknowledge(599); // a duplicate adds nothing
    EXPECT_FALSE(qp.Idle());
    acked += qp.Acknowledge(n);
    EXPECT_EQ(acked, total);
    EXPECT_TRUE(qp.Idle());
    qp.Post(5000, 10); // an emptied queue takes new messages
    ASSERT_TRUE(qp.HasUnsent());
    EXPECT_EQ(qp.Next().msgId, 5000u);
    EXPECT_EQ(qp.Next().psn, n);
}
