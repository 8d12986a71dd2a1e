// Background traffic (BackgroundTraffic): bulk, paced bulk, incast and Poisson generators on
// the flow backend against hand-derived flow completion times, sharing a link with an
// AllReduce job (MultiJobHelper: the slowdown max-min predicts, the per-link attribution), the
// packet backend (TCP and RDMA), determinism, the text form and its errors.
//
// Flat cluster (FlatSpec): single-GPU servers on one switch, 100 Gb/s NICs, PCIe 64 GB/s, 1 us
// per hop: a GPU-to-GPU route is GPU -> NIC -> switch -> NIC -> GPU, 4 us of latency, and its
// bottleneck is the 100 Gb/s NIC link.
#include "ns3/background-traffic.h"
#include "ns3/double.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/job-builder.h"
#include "ns3/multi-job-helper.h"
#include "ns3/packet-backend.h"
#include "ns3/rdma-transport.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-transport.h"

#include "cli-test-util.h"
#include "flow-test-topology.h"
#include "test-temp-dir.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <random>
#include <set>

using namespace ns3;
using gpusim::BackgroundFlow;
using gpusim::BackgroundSummary;

namespace
{

constexpr double kLineBps = 100e9; //!< NIC links
constexpr double kLatencyUs = 4.0; //!< 4 hops of 1 us

Ptr<ClusterTopology>
Flat(uint32_t servers)
{
    GpuClusterHelper h;
    h.SetSpec(gpusim_test::FlatSpec(servers, 100));
    return h.BuildTopology();
}

Ptr<NetworkBackend>
MakeBackend(const std::string& kind, Ptr<ClusterTopology> topo)
{
    Ptr<NetworkBackend> b;
    if (kind == "flow")
    {
        b = CreateObject<FlowBackend>();
    }
    else
    {
        Ptr<PacketBackend> p = CreateObject<PacketBackend>();
        if (kind == "rdma")
        {
            Ptr<RdmaTransport> rdma = CreateObject<RdmaTransport>();
            rdma->SetCongestionControl("dcqcn");
            p->SetTransport(rdma);
            p->SetAttribute("QueueDisc", StringValue("ecn"));
        }
        else
        {
            Ptr<TcpTransport> tcp = CreateObject<TcpTransport>();
            tcp->SetCongestionControl("dctcp");
            p->SetTransport(tcp);
            p->SetAttribute("QueueDisc", StringValue("red-ecn"));
        }
        b = p;
    }
    b->SetTopology(topo);
    return b;
}

struct BgRun
{
    std::vector<BackgroundFlow> flows;
    std::vector<BackgroundSummary> summaries;
    std::vector<uint32_t> owners;
};

/// The generators alone on a flat cluster of `servers` GPUs, on backend `kind`.
BgRun
RunAlone(const std::vector<std::string>& items, uint32_t servers,
         const std::string& kind = "flow")
{
    Ptr<NetworkBackend> net = MakeBackend(kind, Flat(servers));
    Ptr<BackgroundTraffic> bg = CreateObject<BackgroundTraffic>();
    for (const std::string& item : items)
    {
        bg->Add(item);
    }
    bg->Install(net);
    Simulator::Run();
    BgRun r;
    r.flows = bg->GetFlows();
    r.summaries = bg->Summaries();
    for (uint32_t g = 0; g < bg->GetNGenerators(); ++g)
    {
        r.owners.push_back(bg->GetOwner(g));
    }
    bg->Dispose();
    Simulator::Destroy();
    return r;
}

double
Us(Time t)
{
    return t.GetNanoSeconds() / 1e3;
}

/// Drain time of `bytes` at `bps` in us.
double
DrainUs(double bytes, double bps)
{
    return bytes * 8.0 / bps * 1e6;
}

} // namespace

TEST(BackgroundTraffic, BulkFlowAloneTakesBytesOverLineRatePlusLatency)
{
    // One 64 MiB flow GPU 0 -> GPU 1 from 10 us: alone it drains at the NIC's 100 Gb/s, so
    // FCT = 64 MiB x 8 / 100 Gb/s + 4 us = 5368.709 + 4 = 5372.709 us.
    const uint64_t S = 64ull << 20;
    const BgRun r = RunAlone({"bulk:name=ckpt,src=0,dst=1,bytes=64M,start=10us"}, 2);
    ASSERT_EQ(r.flows.size(), 1u);
    const BackgroundFlow& f = r.flows[0];
    ASSERT_TRUE(f.completed);
    EXPECT_EQ(f.start, MicroSeconds(10));
    const double expected = DrainUs(S, kLineBps) + kLatencyUs;
    std::printf("bulk alone: FCT %.3f us (hand: %.3f us), %.2f Gb/s\n", Us(f.Fct()), expected,
                f.Gbps());
    EXPECT_NEAR(Us(f.Fct()), expected, 0.002);
    ASSERT_EQ(r.summaries.size(), 1u);
    EXPECT_EQ(r.summaries[0].name, "ckpt");
    EXPECT_EQ(r.summaries[0].completed, 1u);
    EXPECT_EQ(r.summaries[0].bytes, S);
    EXPECT_EQ(r.summaries[0].p50Fct, f.Fct());
    EXPECT_EQ(r.summaries[0].p99Fct, f.Fct());
}

TEST(BackgroundTraffic, PacedBulkFlowRunsAtItsRateNotTheLinks)
{
    // The same 64 MiB paced at 25 Gb/s in 256 KiB chunks over the 100 Gb/s link: chunk k
    // starts at k x 256 KiB / 25 Gb/s and, alone on the link, drains at 100 Gb/s. The last
    // (256th) chunk starts at 255 x 83.886 us and is delivered 20.972 + 4 us later:
    // FCT = S / 25G - C / 25G + C / 100G + 4 us = 21415.9 us, within one chunk of S / 25G.
    const double S = 64ull << 20;
    const double C = 256 << 10;
    const double R = 25e9;
    const BgRun r = RunAlone({"bulk:src=0,dst=1,bytes=64M,rate=25Gbps,chunk=256K"}, 2);
    ASSERT_EQ(r.flows.size(), 1u);
    const BackgroundFlow& f = r.flows[0];
    ASSERT_TRUE(f.completed);
    const double hand = DrainUs(S, R) - DrainUs(C, R) + DrainUs(C, kLineBps) + kLatencyUs;
    std::printf("paced bulk: FCT %.3f us (hand %.3f, bytes/rate %.3f), %.2f Gb/s\n", Us(f.Fct()),
                hand, DrainUs(S, R), f.Gbps());
    EXPECT_NEAR(Us(f.Fct()), hand, 0.01);
    EXPECT_LE(std::abs(Us(f.Fct()) - DrainUs(S, R)), DrainUs(C, R));
    EXPECT_NEAR(f.Gbps(), 25.0, 0.2);
    EXPECT_EQ(r.summaries[0].name, "bulk0");
}

TEST(BackgroundTraffic, PacedFlowsKeepOneChunkInFlightAndTakeNoMoreThanTheirShare)
{
    // Four flows paced at 100 Gb/s (GPUs 1-4 -> GPU 0, 64 MiB) and an unpaced 16 MiB flow
    // GPU 5 -> GPU 0 on GPU 0's 100 Gb/s downlink. A paced flow sends its next chunk when
    // its slot comes or its previous chunk is delivered, whichever is later, so it is one
    // connection: the unpaced flow gets at least its max-min fifth of the link and ends
    // within 5 x 16 MiB / 100 Gb/s + 4 us (chunks piling up as parallel flows would take
    // four fifths and more). All bytes cross one link: the paced flows cannot finish before
    // (4 x 64 + 16) MiB / 100 Gb/s.
    const BgRun r = RunAlone({"bulk:name=paced,src=1-4,dst=0,bytes=64M,rate=100Gbps,chunk=256K",
                            "bulk:name=plain,src=5,dst=0,bytes=16M"},
                           6);
    const BackgroundSummary& paced = r.summaries.at(0);
    const BackgroundSummary& plain = r.summaries.at(1);
    ASSERT_EQ(paced.completed, 4u);
    ASSERT_EQ(plain.completed, 1u);
    const double bound = 5 * DrainUs(16ull << 20, kLineBps) + kLatencyUs;
    std::printf("unpaced next to 4 paced: FCT %.1f us (max-min bound %.1f us); paced max %.1f "
                "us (all bytes: %.1f us)\n",
                Us(plain.maxFct), bound, Us(paced.maxFct), DrainUs(272ull << 20, kLineBps));
    EXPECT_LE(Us(plain.maxFct), bound * 1.001);
    EXPECT_GE(Us(paced.maxFct), DrainUs(272ull << 20, kLineBps));
    EXPECT_LE(Us(paced.maxFct), 1.15 * DrainUs(272ull << 20, kLineBps));
}

TEST(BackgroundTraffic, IncastSharesTheReceiversDownlink)
{
    // GPUs 1-4 each send 16 MiB to GPU 0 at once: the switch -> NIC 0 link carries all four,
    // max-min gives each 25 Gb/s, so every FCT is 4 x S / 100 Gb/s + 4 us (4 x the alone
    // drain time; the latency is paid once). Three rounds 30 ms apart do not overlap (one
    // takes 21.5 ms): 12 flows, all with that FCT.
    const double S = 16ull << 20;
    const BgRun alone = RunAlone({"bulk:src=1,dst=0,bytes=16M"}, 5);
    const double aloneUs = Us(alone.flows.at(0).Fct());
    EXPECT_NEAR(aloneUs, DrainUs(S, kLineBps) + kLatencyUs, 0.002);
    const BgRun r = RunAlone({"incast:src=1-4,dst=0,bytes=16M,period=30ms,count=3"}, 5);
    ASSERT_EQ(r.flows.size(), 12u);
    const double hand = 4 * DrainUs(S, kLineBps) + kLatencyUs;
    for (const BackgroundFlow& f : r.flows)
    {
        ASSERT_TRUE(f.completed);
        EXPECT_EQ(f.dst, 0u);
        EXPECT_EQ(f.start, MilliSeconds(30) * f.round);
        EXPECT_NEAR(Us(f.Fct()), hand, 0.002) << "sender " << f.src << " round " << f.round;
    }
    const BackgroundSummary& s = r.summaries.at(0);
    std::printf("incast 4 -> 1: FCT %.3f us (hand %.3f, alone %.3f: x %.4f), p99 %.3f us\n",
                Us(s.meanFct), hand, aloneUs, Us(s.meanFct) / aloneUs, Us(s.p99Fct));
    EXPECT_EQ(s.flows, 12u);
    EXPECT_EQ(s.completed, 12u);
    EXPECT_EQ(s.bytes, 12 * (16ull << 20));
    EXPECT_NEAR(Us(s.p99Fct), hand, 0.002);
    EXPECT_NEAR(Us(s.meanFct) - kLatencyUs, 4 * (aloneUs - kLatencyUs), 0.01);
}

namespace
{

/// The two-leaf cluster of multi-job-test.cc: GPUs 0, 1 on leaf 0, GPUs 2, 3 on leaf 1, one
/// spine with one 100 Gb/s link per leaf.
gpusim::ClusterSpec
TwoLeaves()
{
    return gpusim_test::TwoLeavesSpec();
}

struct SharedRun
{
    JobReport job;
    std::vector<MultiJobHelper::LinkUse> links;
    std::vector<BackgroundFlow> flows;
    std::string json;
};

/// A 2-rank AllReduce of `bytes` on GPUs 0 and 2 (across the spine) with the background
/// items (none: alone), chunk fidelity, ideal wire.
SharedRun
RunWithJob(uint64_t bytes, const std::vector<std::string>& items)
{
    GpuClusterHelper cluster;
    cluster.SetSpec(TwoLeaves());
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(cluster.GetTopology());
    MultiJobHelper jobs(gpus, cluster.GetTopology());
    JobBuilder b(2);
    b.AllRanks().CommInit("world");
    b.Marker("iteration#0", gpusim::MarkerPhase::Begin).AllReduce(0, "world", bytes);
    b.SyncDevice().Marker("iteration#0", gpusim::MarkerPhase::End);
    jobs.AddJob("train", b.BuildShared(), JobPlacement::Parse("0,2"));
    Ptr<BackgroundTraffic> bg = CreateObject<BackgroundTraffic>();
    for (const std::string& item : items)
    {
        bg->Add(item);
    }
    if (!items.empty())
    {
        jobs.AddBackground(bg);
    }
    GpuWorkloadHelper helper;
    helper.SetBackend(net);
    helper.SetNcclAttribute("Fidelity", StringValue("chunk"));
    helper.SetNcclAttribute("Efficiency", DoubleValue(1.0));
    jobs.Install(helper);
    Simulator::Run();
    SharedRun r;
    r.job = jobs.Reports().at(0);
    r.links = jobs.FabricUse(net);
    r.flows = bg->GetFlows();
    r.json = jobs.ReportJson(net);
    jobs.GetWorkload(0)->Dispose();
    bg->Dispose();
    Simulator::Destroy();
    return r;
}

} // namespace

TEST(BackgroundTraffic, BulkOnTheJobsUplinkSlowsTheAllReduceByItsMaxMinShare)
{
    // The AllReduce (2 ranks, ring, one channel, one chunk in flight per connection) moves
    // S = 64 MiB in each direction: GPU 0 -> 2 over leaf0->spine->leaf1 and back. A 1 GiB
    // background flow GPU 1 -> GPU 3 takes the same leaf0->spine and spine->leaf1 links for
    // the whole run. Max-min gives the job's 0 -> 2 chunks and the background flow 50 Gb/s
    // each there, so every 0 -> 2 chunk drains in twice its alone time while the latencies
    // stay: the AllReduce takes S x 8 / 100 Gb/s = 5368.7 us longer (within 1 %). The
    // per-link report gives the background's 1 GiB to the generator on both links and
    // nothing on leaf1->spine, and the job's bytes are what they are alone.
    const uint64_t S = 64ull << 20;
    const SharedRun alone = RunWithJob(S, {});
    const SharedRun shared = RunWithJob(S, {"bulk:name=ckpt,src=1,dst=3,bytes=1G"});
    ASSERT_TRUE(alone.job.run.completed);
    ASSERT_TRUE(shared.job.run.completed);
    const double ta = Us(alone.job.iterations.at(0).end - alone.job.iterations.at(0).start);
    const double ts = Us(shared.job.iterations.at(0).end - shared.job.iterations.at(0).start);
    const double predicted = DrainUs(S, 100e9);
    std::printf("AllReduce %.1f us alone, %.1f us next to the bulk flow: +%.1f us "
                "(max-min: +%.1f us)\n",
                ta, ts, ts - ta, predicted);
    EXPECT_NEAR(ts - ta, predicted, 0.01 * predicted);
    ASSERT_EQ(shared.flows.size(), 1u);
    ASSERT_TRUE(shared.flows[0].completed);
    // The background flow: 50 Gb/s while the job's chunks drain, 100 Gb/s otherwise; it
    // finishes after 1 GiB / 100 Gb/s + the job's S on its links / 100 Gb/s + the path's
    // latency (6 hops of 1 us).
    const double bgUs = Us(shared.flows[0].Fct());
    const double bgHand = DrainUs(1ull << 30, 100e9) + predicted + 6;
    std::printf("background 1 GiB: FCT %.1f us (hand %.1f us)\n", bgUs, bgHand);
    EXPECT_NEAR(bgUs, bgHand, 0.01 * predicted);
    uint32_t checked = 0;
    for (const auto& u : shared.links)
    {
        ASSERT_EQ(u.background.size(), 1u);
        if (u.name.find("spine") == std::string::npos)
        {
            continue;
        }
        const bool bgPath = u.name == "leaf0->spine0" || u.name == "spine0->leaf1";
        EXPECT_EQ(u.background[0], bgPath ? double(1ull << 30) : 0.0) << u.name;
        EXPECT_EQ(u.Jobs(), 1u) << u.name;
        for (const auto& a : alone.links)
        {
            if (a.name == u.name)
            {
                EXPECT_EQ(u.bytes[0], a.bytes[0]) << u.name; // the job's own bytes
                ++checked;
            }
        }
    }
    EXPECT_EQ(checked, 4u);
    EXPECT_NE(shared.json.find("\"background\":[{\"name\":\"ckpt\""), std::string::npos)
        << shared.json;
    EXPECT_NE(shared.json.find("\"background\":{\"ckpt\":1073741824}"), std::string::npos)
        << shared.json;
    EXPECT_EQ(alone.json.find("background"), std::string::npos); // unchanged without one
}

TEST(BackgroundTraffic, PacketBackendIncastQueuesLongerThanTheFluidModel)
{
    // Incast of 4 x 4 MiB to GPU 0 plus a bulk generator (the second owner: its ids carry
    // owner 1 in their top bits) on the packet backend, TCP (DCTCP) and RDMA (DCQCN). Every
    // flow completes with its bytes; the last incast flow cannot beat the fluid model's
    // 4 x S / 100 Gb/s + 4 us (all bytes cross the receiver's link, plus headers, slow start
    // and queueing), so it ends later than the flow backend's.
    const std::vector<std::string> items = {"incast:src=1-4,dst=0,bytes=4M",
                                            "bulk:src=5,dst=6,bytes=2M,rate=50Gbps,chunk=256K"};
    const BgRun flow = RunAlone(items, 7, "flow");
    for (const std::string kind : {"tcp", "rdma"})
    {
        const BgRun pkt = RunAlone(items, 7, kind);
        ASSERT_EQ(pkt.flows.size(), 5u) << kind;
        for (const BackgroundFlow& f : pkt.flows)
        {
            EXPECT_TRUE(f.completed) << kind << " flow from GPU " << f.src;
        }
        EXPECT_EQ(pkt.owners, (std::vector<uint32_t>{0, 1}));
        const BackgroundSummary& fi = flow.summaries.at(0);
        const BackgroundSummary& pi = pkt.summaries.at(0);
        std::printf("%s incast: FCT mean %.1f p50 %.1f max %.1f us; flow backend: %.1f us; "
                    "paced bulk %.1f us (flow %.1f)\n",
                    kind.c_str(), Us(pi.meanFct), Us(pi.p50Fct), Us(pi.maxFct), Us(fi.maxFct),
                    Us(pkt.summaries[1].maxFct), Us(flow.summaries[1].maxFct));
        EXPECT_EQ(pi.completed, 4u);
        EXPECT_EQ(pi.bytes, 4 * (4ull << 20));
        EXPECT_GT(pi.maxFct, fi.maxFct) << kind;
        EXPECT_GE(Us(pi.maxFct), 4 * DrainUs(4 << 20, kLineBps) + kLatencyUs) << kind;
        EXPECT_EQ(pkt.summaries[1].completed, 1u);
        // The paced flow still finishes about at bytes / rate (7 chunks start 41.9 us apart).
        EXPECT_GT(Us(pkt.summaries[1].maxFct), DrainUs(7 * (256 << 10), 50e9)) << kind;
    }
}

TEST(BackgroundTraffic, PoissonIsSeededAndHasTheMeanInterArrival)
{
    // 2000 flows, mean inter-arrival 20 us, sizes drawn from {64K, 256K}, pairs from 4 x 4 GPUs
    // minus the diagonal. The same seed gives the same flows; another seed others; the mean
    // gap is within 5 % of 20 us; the first arrival is the inversion of the first 64-bit draw
    // of std::mt19937_64(seed) (the same with every standard library).
    const std::string item = "poisson:src=0-3,dst=0-3,bytes=64K,256K,interval=20us,count=2000";
    const BgRun a = RunAlone({item + ",seed=7"}, 4);
    const BgRun b = RunAlone({item + ",seed=7"}, 4);
    const BgRun c = RunAlone({item + ",seed=8"}, 4);
    ASSERT_EQ(a.flows.size(), 2000u);
    ASSERT_EQ(b.flows.size(), 2000u);
    bool same = true;
    bool differs = false;
    std::set<uint64_t> sizes;
    for (size_t i = 0; i < a.flows.size(); ++i)
    {
        const BackgroundFlow& x = a.flows[i];
        const BackgroundFlow& y = b.flows[i];
        same = same && x.start == y.start && x.end == y.end && x.src == y.src &&
               x.dst == y.dst && x.bytes == y.bytes;
        differs = differs || x.start != c.flows.at(i).start;
        EXPECT_NE(x.src, x.dst);
        EXPECT_TRUE(x.completed);
        sizes.insert(x.bytes);
    }
    EXPECT_TRUE(same);
    EXPECT_TRUE(differs);
    EXPECT_EQ(sizes, (std::set<uint64_t>{64 << 10, 256 << 10}));
    const double meanGap = Us(a.flows.back().start) / (a.flows.size() - 1);
    std::printf("poisson: mean gap %.3f us over 2000 flows, FCT p50 %.2f p99 %.2f us\n",
                meanGap, Us(a.summaries[0].p50Fct), Us(a.summaries[0].p99Fct));
    EXPECT_NEAR(meanGap, 20.0, 1.0);
    std::mt19937_64 rng(7);
    const double u = static_cast<double>(rng() >> 11) / 9007199254740992.0;
    EXPECT_EQ(a.flows[0].start.GetNanoSeconds(), std::llround(-20000.0 * std::log1p(-u)));
    // stop= ends the arrivals instead of count=.
    const BgRun s = RunAlone({"poisson:src=0,dst=1,bytes=4K,interval=10us,stop=1ms,seed=3"}, 2);
    EXPECT_GT(s.flows.size(), 70u);
    EXPECT_LT(s.flows.size(), 130u);
    EXPECT_LE(s.flows.back().start, MilliSeconds(1));
}

TEST(BackgroundTraffic, TextFormRoundTripsAndBadItemsNameTheProblem)
{
    const gpusim::BackgroundSpec s =
        gpusim::ParseBackgroundSpec("bulk:src=0-7,16,dst=63,bytes=1G,rate=100Gbps,start=1ms");
    EXPECT_EQ(s.src, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 16}));
    EXPECT_EQ(s.dst, (std::vector<uint32_t>{63}));
    EXPECT_EQ(s.bytes, (std::vector<uint64_t>{1ull << 30}));
    EXPECT_EQ(s.rateBps, 100e9);
    EXPECT_EQ(s.start, MilliSeconds(1));
    const std::string text = gpusim::ToText(s);
    EXPECT_EQ(text, "bulk:src=0-7,16,dst=63,bytes=1G,start=1ms,rate=100Gbps,chunk=256K");
    EXPECT_EQ(gpusim::ToText(gpusim::ParseBackgroundSpec(text)), text);
    const gpusim::BackgroundSpec i =
        gpusim::ParseBackgroundSpec("incast:src=8-15,dst=0,bytes=4M,period=1ms,count=10");
    EXPECT_EQ(i.count, 10u);
    EXPECT_EQ(i.period, MilliSeconds(1));
    EXPECT_EQ(gpusim::ToText(i), "incast:src=8-15,dst=0,bytes=4M,start=0,period=1ms,count=10");

    auto fails = [](const std::string& item, const std::string& what) {
        try
        {
            gpusim::ParseBackgroundSpec(item);
            ADD_FAILURE() << item << ": no error";
        }
        catch (const std::invalid_argument& e)
        {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("background '" + item + "'"), std::string::npos) << msg;
            EXPECT_NE(msg.find(what), std::string::npos) << msg;
        }
    };
    fails("bulk", "expected KIND:key=value");
    fails("burst:src=0,dst=1,bytes=1M", "unknown kind 'burst'");
    fails("bulk:src=0,dst=1", "missing bytes=");
    fails("bulk:dst=1,bytes=1M", "missing src=");
    fails("bulk:src=0,dst=1,bytes=1M,sped=3", "unknown key 'sped' for bulk");
    fails("incast:src=0,dst=1,bytes=1M,rate=1Gbps", "unknown key 'rate' for incast");
    fails("bulk:src=0,dst=1,bytes=1M,bytes=2M", "key 'bytes' is given twice");
    fails("bulk:src=0,x,dst=1,bytes=1M", "src: 'x' is not a GPU number");
    fails("bulk:src=3-1,dst=1,bytes=1M", "src: range '3-1' runs backwards");
    fails("bulk:src=0,0,dst=1,bytes=1M", "src: GPU 0 is listed twice");
    fails("bulk:src=0,dst=1,bytes=1Q", "bytes: bad size '1Q'");
    fails("bulk:src=0,dst=1,bytes=0", "bytes: '0' must be > 0 bytes");
    fails("bulk:src=0,dst=1,bytes=1M,2M", "one size per flow");
    fails("bulk:src=0,dst=1,bytes=1M,rate=fast", "bad rate 'fast'");
    fails("bulk:src=0,dst=1,bytes=1M,rate=0Gbps", "rate '0Gbps' must be > 0");
    fails("bulk:src=0,dst=1,bytes=1M,start=soon", "start: bad time 'soon'");
    fails("bulk:src=0,dst=1,bytes=1M,chunk=64K", "chunk= paces a flow: it needs rate=");
    fails("bulk:src=0,dst=1,bytes=1M,count=3", "count=3 needs period= > 0");
    fails("bulk:src=0,dst=1,bytes=1M,period=1ms", "period= needs count= > 1");
    fails("incast:src=0,dst=1,bytes=1M,count=x,period=1ms", "count: 'x' is not a whole number");
    fails("incast:src=1-3,dst=0,4,bytes=1M", "dst= is one GPU, not 2");
    fails("poisson:src=0,dst=1,bytes=1M,count=5", "missing interval=");
    fails("poisson:src=0,dst=1,bytes=1M,interval=1us", "missing count= or stop=");
    fails("bulk:src=0,,dst=1,bytes=1M", "empty part");

    // Unknown GPUs and impossible pairs are found on the cluster, naming the generator.
    Ptr<BackgroundTraffic> bg = CreateObject<BackgroundTraffic>();
    bg->Add("bulk:name=ckpt,src=0-3,dst=9,bytes=1M");
    try
    {
        bg->Validate(8);
        ADD_FAILURE() << "no error";
    }
    catch (const std::invalid_argument& e)
    {
        EXPECT_NE(std::string(e.what()).find("background 'ckpt' (bulk:name=ckpt,src=0-3,dst=9,"
                                             "bytes=1M): GPU 9 does not exist (the cluster has "
                                             "8 GPUs, 0-7)"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(bg->Add("bulk:name=ckpt,src=0,dst=1,bytes=1M"), std::invalid_argument);
    Ptr<BackgroundTraffic> self = CreateObject<BackgroundTraffic>();
    self->Add("incast:src=0-3,dst=2,bytes=1M");
    EXPECT_THROW(self->Validate(8), std::invalid_argument);
    Ptr<BackgroundTraffic> same = CreateObject<BackgroundTraffic>();
    same->Add("bulk:src=2,dst=2,bytes=1M");
    EXPECT_THROW(same->Validate(8), std::invalid_argument);
    // Install checks on the backend's topology before taking an owner or scheduling anything.
    Ptr<FlowBackend> net = CreateObject<FlowBackend>();
    net->SetTopology(Flat(8));
    EXPECT_THROW(bg->Install(net), std::invalid_argument);
    EXPECT_EQ(net->GetNOwners(), 0u);
    EXPECT_TRUE(Simulator::IsFinished());
    Simulator::Destroy();
}

namespace
{

std::string
TempPath(const std::string& name)
{
    static TestTempDir dir("gpusim-bg");
    return dir.Unique(name);
}

/// The time_us of the first result of a `collective --json` file.
double
CollectiveUs(const std::string& json)
{
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(Slurp(json));
    return double(doc["results"].at(0)["time_us"]);
}

} // namespace

TEST(BackgroundTraffic, CollectiveCommandRunsTheGeneratorsAndReportsThem)
{
    // 2 single-GPU servers on one switch, a 64 MiB ring AllReduce on the ideal wire: with a
    // 1 GiB bulk flow GPU 1 -> GPU 0 (the ring's 1 -> 0 edge's links) the AllReduce takes
    // S x 8 / 100 Gb/s longer, as in the MultiJobHelper test; the table and the JSON carry
    // the generator's FCT summary.
    const std::vector<std::string> base = {"collective", "--servers", "2", "--gpus-per-server",
                                           "1", "--fabric", "single-switch", "--nic-gbps",
                                           "100", "--bytes", "64M", "--algo", "ring",
                                           "--efficiency", "1", "--quiet", "--fidelity", "chunk"};
    const std::string aloneJson = TempPath("alone.json");
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--json", aloneJson});
    const CliResult alone = Cli(args);
    ASSERT_EQ(alone.code, 0) << alone.err;
    EXPECT_EQ(alone.out.find("background"), std::string::npos);
    const std::string json = TempPath("bg.json");
    args = base;
    args.insert(args.end(), {"--json", json, "--background", "bulk:name=ckpt,src=1,dst=0,bytes=1G",
                             "--background", "incast:src=1,dst=0,bytes=1M,period=1ms,count=3"});
    const CliResult r = Cli(args);
    ASSERT_EQ(r.code, 0) << r.err;
    std::printf("%s", r.out.c_str());
    EXPECT_NE(r.out.find("# background traffic"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("#  ckpt "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("#  incast1 "), std::string::npos) << r.out;
    const double ta = CollectiveUs(aloneJson);
    const double tb = CollectiveUs(json);
    std::printf("collective: %.1f us alone, %.1f us with the background (+%.1f us, "
                "max-min +%.1f us)\n", ta, tb, tb - ta, DrainUs(64ull << 20, 100e9));
    EXPECT_GT(tb - ta, 0.9 * DrainUs(64ull << 20, 100e9));
    EXPECT_LT(tb - ta, 1.1 * DrainUs(64ull << 20, 100e9)); // + the 3 x 1 MiB incast's share
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(Slurp(json));
    simdjson::dom::array bg = doc["results"].at(0)["background"];
    ASSERT_EQ(bg.size(), 2u);
    EXPECT_EQ(std::string_view(bg.at(0)["name"]), "ckpt");
    EXPECT_EQ(uint64_t(bg.at(0)["completed"]), 1u);
    EXPECT_EQ(uint64_t(bg.at(0)["bytes"]), 1ull << 30);
    EXPECT_EQ(uint64_t(bg.at(1)["flows"]), 3u);
    EXPECT_GT(double(bg.at(0)["fct_us"]["p99"]), DrainUs(1ull << 30, 100e9));

    // Bad items: usage errors naming the item and what is wrong.
    auto bad = [&base](const std::string& item, const std::string& what) {
        std::vector<std::string> a = base;
        a.insert(a.end(), {"--background", item});
        const CliResult e = Cli(a);
        EXPECT_EQ(e.code, 1) << item;
        EXPECT_NE(e.err.find(what), std::string::npos) << e.err;
    };
    bad("bulk:src=0-7,dst=1,bytes=1G", "GPU 2 does not exist (the cluster has 2 GPUs, 0-1)");
    bad("bulk:src=0,dst=1,bytes=1.5.G", "bytes: bad size '1.5.G'");
    bad("incast:src=0,bytes=1M", "missing dst=");
}

TEST(BackgroundTraffic, SimulateTakesItemsFromTheCommandLineAndTheClusterFile)
{
    JobBuilder b(2);
    b.AllRanks().CommInit("dp");
    b.Marker("step", gpusim::MarkerPhase::Begin).Kernel(1, "fwd", 300).AllReduce(1, "dp", 8 << 20);
    b.SyncDevice().Marker("step", gpusim::MarkerPhase::End);
    const std::string dir = TempPath("trace");
    gpusim::WriteJobTrace(b.Build(), dir);
    const std::string json = TempPath("m.json");
    const std::vector<std::string> cluster = {"--servers", "2", "--gpus-per-server", "1",
                                              "--fabric", "single-switch"};
    std::vector<std::string> args = {"simulate", dir, "--json", json, "--background",
                                     "poisson:src=0-1,dst=0-1,bytes=64K,1M,interval=50us,count=20"};
    args.insert(args.end(), cluster.begin(), cluster.end());
    const CliResult r = Cli(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("#  poisson0 "), std::string::npos) << r.out;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(Slurp(json)).get(doc), simdjson::SUCCESS) << Slurp(json);
    simdjson::dom::array bg = doc["background"];
    ASSERT_EQ(bg.size(), 1u);
    EXPECT_EQ(uint64_t(bg.at(0)["completed"]), 20u);

    // The cluster file's background: section, checked when read; commands that do not run
    // background traffic refuse it.
    const std::string yaml = TempPath("cluster.yaml");
    std::ofstream(yaml) << "servers: 2\ngpusPerServer: 1\nnicsPerServer: 1\n"
                           "fabric: single-switch\nbackground:\n"
                           "  - bulk:name=store,src=1,dst=0,bytes=16M\n";
    const CliResult y = Cli({"simulate", dir, "--cluster", yaml});
    ASSERT_EQ(y.code, 0) << y.err;
    EXPECT_NE(y.out.find("#  store "), std::string::npos) << y.out;
    const CliResult g = Cli({"generate", "--model", "llama3-8b", "--cluster", yaml, "--simulate"});
    EXPECT_EQ(g.code, 1);
    EXPECT_NE(g.err.find("background: section"), std::string::npos) << g.err;
    const std::string badYaml = TempPath("bad.yaml");
    std::ofstream(badYaml) << "servers: 2\nbackground:\n  - bulk:src=1,dst=0\n";
    const CliResult by = Cli({"simulate", dir, "--cluster", badYaml});
    EXPECT_EQ(by.code, 2);
    EXPECT_NE(by.err.find(":3:"), std::string::npos) << by.err;
    EXPECT_NE(by.err.find("missing bytes="), std::string::npos) << by.err;
}
