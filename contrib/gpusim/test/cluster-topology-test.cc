// Tests of ClusterTopology routing, ClusterSpec presets/YAML/validation and GpuClusterHelper.
#include "ns3/cluster-spec.h"
#include "ns3/cluster-topology.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-node.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

using namespace ns3;
using gpusim::ClusterSpec;

namespace
{

ClusterSpec
SmallSpec(const std::string& fabric)
{
    ClusterSpec s;
    s.servers = 4;
    s.gpusPerServer = 8;
    s.nicsPerServer = 8;
    s.fabric = fabric;
    return s;
}

Ptr<ClusterTopology>
Build(const ClusterSpec& s)
{
    GpuClusterHelper h;
    h.SetSpec(s);
    return h.BuildTopology();
}

/// Checks that a route is a connected walk from src GPU to dst GPU; returns the vertices.
std::vector<uint32_t>
CheckWalk(const ClusterTopology& t, uint32_t src, uint32_t dst, const std::vector<uint32_t>& r)
{
    std::vector<uint32_t> vs;
    EXPECT_FALSE(r.empty());
    if (r.empty())
    {
        return vs;
    }
    EXPECT_EQ(t.Links()[r.front()].from, t.GpuVertex(src));
    EXPECT_EQ(t.Links()[r.back()].to, t.GpuVertex(dst));
    vs.push_back(t.Links()[r.front()].from);
    for (size_t i = 0; i < r.size(); ++i)
    {
        if (i > 0)
        {
            EXPECT_EQ(t.Links()[r[i - 1]].to, t.Links()[r[i]].from);
        }
        vs.push_back(t.Links()[r[i]].to);
    }
    return vs;
}

int
CountSwitches(const ClusterTopology& t, uint16_t tier)
{
    int n = 0;
    for (const auto& v : t.Vertices())
    {
        n += v.type == TopoVertexType::Switch && v.tier == tier;
    }
    return n;
}

} // namespace

TEST(ClusterTopology, IntraServerRouteUsesNvSwitch)
{
    auto t = Build(SmallSpec("rail"));
    auto r = t->Route(1, 6, 42);
    ASSERT_EQ(r.size(), 2u);
    auto vs = CheckWalk(*t, 1, 6, r);
    EXPECT_EQ(t->Vertices()[vs[1]].type, TopoVertexType::NvSwitch);
    EXPECT_EQ(t->Links()[r[0]].kind, TopoLinkKind::NvLink);
    EXPECT_EQ(t->Links()[r[1]].kind, TopoLinkKind::NvLink);
    EXPECT_DOUBLE_EQ(t->PathLatency(r), 1e-6);           // 2 x 0.5 us
    EXPECT_DOUBLE_EQ(t->PathBottleneck(r), 450e9 * 8);   // NVLink4 per direction
    EXPECT_TRUE(t->Route(5, 5, 0).empty());
}

TEST(ClusterTopology, InterServerRoutesPerFabric)
{
    struct Case
    {
        std::string fabric;
        uint32_t nicsPerLeaf;
    };
    for (const Case& c : {Case{"single-switch", 32},
                          Case{"leaf-spine", 8},
                          Case{"fat-tree", 32},
                          Case{"rail", 2}})
    {
        SCOPED_TRACE(c.fabric);
        ClusterSpec s = SmallSpec(c.fabric);
        s.nicsPerLeaf = c.nicsPerLeaf;
        auto t = Build(s);
        ASSERT_EQ(t->GetNGpus(), 32u);
        ASSERT_EQ(t->GetNServers(), 4u);
        for (uint32_t a = 0; a < 32; ++a)
        {
            for (uint32_t b = 0; b < 32; ++b)
            {
                if (a == b || t->ServerOf(a) == t->ServerOf(b))
                {
                    continue;
                }
                auto r = t->Route(a, b, a * 131 + b);
                auto vs = CheckWalk(*t, a, b, r);
                // GPU -> own NIC (PCIe) ... dst NIC -> GPU; only switches in between.
                EXPECT_EQ(t->Links()[r.front()].kind, TopoLinkKind::Pcie);
                EXPECT_EQ(vs[1], t->NicOf(a));
                EXPECT_EQ(vs[vs.size() - 2], t->NicOf(b));
                for (size_t i = 2; i + 2 < vs.size(); ++i)
                {
                    EXPECT_EQ(t->Vertices()[vs[i]].type, TopoVertexType::Switch);
                }
                // Shortest paths for each fabric shape.
                const uint32_t na = a, nb = b; // one NIC per GPU: NIC index = GPU index
                size_t expect = 4;
                if (c.fabric == "leaf-spine")
                {
                    expect = (na / 8 == nb / 8) ? 4 : 6;
                }
                else if (c.fabric == "rail")
                {
                    const bool sameLeaf = (a % 8 == b % 8) && (a / 8 / 2 == b / 8 / 2);
                    expect = sameLeaf ? 4 : 6;
                }
                else if (c.fabric == "fat-tree")
                {
                    const uint32_t half = 3; // k = 6 for 32 NICs
                    const bool sameEdge = na / half == nb / half;
                    const bool samePod = na / (half * half) == nb / (half * half);
                    expect = sameEdge ? 4 : (samePod ? 6 : 8);
                }
                EXPECT_EQ(r.size(), expect) << a << "->" << b;
            }
        }
    }
}

TEST(ClusterTopology, FabricSizes)
{
    // Default spec: 4 servers on 8 rail leaves (one group), spines = 4 downlinks / 1.
    auto rail = Build(SmallSpec("rail"));
    EXPECT_EQ(rail->GetDescription(),
              "4 servers x 8 GPUs (h100-sxm), rail fabric, 32 NICs @ 400 Gb/s, 8 leaves, 4 spines");
    EXPECT_EQ(CountSwitches(*rail, 1), 8);
    EXPECT_EQ(CountSwitches(*rail, 2), 4);

    ClusterSpec ls = SmallSpec("leaf-spine");
    ls.nicsPerLeaf = 8;
    ls.oversubscription = 2; // 8 downlinks -> 4 uplinks
    auto t = Build(ls);
    EXPECT_EQ(CountSwitches(*t, 1), 4);
    EXPECT_EQ(CountSwitches(*t, 2), 4);
    ls.oversubscription = 3; // ceil(8 / 3)
    EXPECT_EQ(CountSwitches(*Build(ls), 2), 3);
    ls.nicsPerLeaf = 64; // one leaf: no spine layer
    EXPECT_EQ(CountSwitches(*Build(ls), 2), 0);

    auto ft = Build(SmallSpec("fat-tree")); // 32 NICs -> k = 6
    EXPECT_EQ(CountSwitches(*ft, 1), 18);
    EXPECT_EQ(CountSwitches(*ft, 2), 18);
    EXPECT_EQ(CountSwitches(*ft, 3), 9);

    auto ss = Build(SmallSpec("single-switch"));
    EXPECT_EQ(CountSwitches(*ss, 1), 1);
}

TEST(ClusterTopology, GpusShareNics)
{
    ClusterSpec s = SmallSpec("single-switch");
    s.nicsPerServer = 2;
    auto t = Build(s);
    for (uint32_t g = 0; g < 32; ++g)
    {
        const TopoVertex& nic = t->Vertices()[t->NicOf(g)];
        EXPECT_EQ(nic.type, TopoVertexType::Nic);
        EXPECT_EQ(nic.server, g / 8);
        EXPECT_EQ(nic.index, (g % 8) * 2 / 8);
        EXPECT_EQ(t->LocalIndex(g), g % 8);
    }
}

TEST(ClusterTopology, AdaptiveRoutingJoinsTheSpines)
{
    // 4 servers on 8 rail leaves with 4 spines (FabricSizes): adaptive routing spreads every
    // flow over the spines, so they become one spine whose port to each leaf has the 4
    // uplinks' capacity; the presets use it (InfiniBand), a bare spec hashes per flow.
    ClusterSpec s = SmallSpec("rail");
    EXPECT_EQ(s.routing, "ecmp");
    s.routing = "adaptive";
    auto t = Build(s);
    EXPECT_EQ(CountSwitches(*t, 2), 1);
    EXPECT_EQ(t->GetDescription(), "4 servers x 8 GPUs (h100-sxm), rail fabric, 32 NICs @ 400 "
                                   "Gb/s, 8 leaves, 4 spines (adaptive routing)");
    for (const TopoLink& l : t->Links())
    {
        if (l.kind == TopoLinkKind::Fabric)
        {
            EXPECT_DOUBLE_EQ(l.bitsPerSec, 4 * 400e9);
        }
    }
    ClusterSpec preset;
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-h100", preset));
    EXPECT_EQ(preset.routing, "adaptive");
}

TEST(ClusterTopology, DmodkGivesEachDestinationUnderALeafItsOwnUplink)
{
    // 4 servers, 2 per rail leaf: rail 0 has leaves 0 (servers 0, 1) and 8 (servers 2, 3),
    // 2 spines. D-mod-K routes by destination: from leaf 0 the flows to server 2's and server
    // 3's GPU 0 take different spines whatever the flow key; per-flow ECMP lets them collide.
    ClusterSpec s = SmallSpec("rail");
    s.nicsPerLeaf = 2;
    s.routing = "dmodk";
    auto t = Build(s);
    auto spineOf = [&](const ClusterTopology& topo, uint32_t dst, uint64_t key) {
        for (uint32_t l : topo.Route(0, dst, ClusterTopology::HashFlow(key, 0, dst)))
        {
            const TopoVertex& v = topo.Vertices()[topo.Links()[l].to];
            if (v.type == TopoVertexType::Switch && v.tier == 2)
            {
                return v.index;
            }
        }
        return UINT32_MAX;
    };
    bool collided = false;
    s.routing = "ecmp";
    auto ecmp = Build(s);
    for (uint64_t key = 0; key < 16; ++key)
    {
        EXPECT_NE(spineOf(*t, 16, key), spineOf(*t, 24, key)) << key;
        EXPECT_EQ(spineOf(*t, 16, key), spineOf(*t, 16, 0)) << key;
        collided = collided || spineOf(*ecmp, 16, key) == spineOf(*ecmp, 24, key);
    }
    EXPECT_TRUE(collided);
}

TEST(ClusterTopology, RailPeerIsTheLocalGpuOnThePeersNic)
{
    // SmallSpec: 4 servers x 8 GPUs. One NIC per GPU: the peer's local index. Two NICs per
    // server: GPUs 0-3 use NIC 0, 4-7 NIC 1, so the first GPU on the peer's NIC.
    ClusterSpec s = SmallSpec("rail");
    auto t = Build(s);
    EXPECT_EQ(t->RailPeer(3, 8 + 5), 5u);   // server 0 GPU 3 -> server 1 GPU 5: via GPU 5
    EXPECT_EQ(t->RailPeer(3, 16 + 3), 3u);  // same rail: itself
    EXPECT_EQ(t->RailPeer(3, 6), 3u);       // same server: itself
    EXPECT_EQ(t->RailPeer(25, 2), 24u + 2); // server 3 GPU 1 -> server 0 GPU 2: via GPU 26
    s.nicsPerServer = 2;
    auto shared = Build(s);
    EXPECT_EQ(shared->RailPeer(1, 8 + 6), 4u); // NIC 1's first GPU
    EXPECT_EQ(shared->RailPeer(5, 8 + 6), 5u); // already on NIC 1
    EXPECT_EQ(shared->RailPeer(6, 8 + 2), 0u); // NIC 0's first GPU
}

TEST(ClusterTopology, EcmpSpreadsFlowsOverSpinesDeterministically)
{
    ClusterSpec s = SmallSpec("leaf-spine");
    s.servers = 2;
    s.nicsPerLeaf = 8; // 2 leaves, 8 spines
    auto t = Build(s);
    auto t2 = Build(s);
    std::map<uint32_t, int> perSpine;
    for (uint64_t h = 0; h < 256; ++h)
    {
        auto r = t->Route(0, 8, h);
        ASSERT_EQ(r.size(), 6u);
        const uint32_t spine = t->Links()[r[2]].to;
        ASSERT_EQ(t->Vertices()[spine].tier, 2);
        ++perSpine[spine];
        EXPECT_EQ(r, t->Route(0, 8, h));  // same flow, same path
        EXPECT_EQ(r, t2->Route(0, 8, h)); // same on a rebuilt topology
    }
    EXPECT_EQ(perSpine.size(), 8u);
    for (const auto& [spine, n] : perSpine)
    {
        EXPECT_GT(n, 256 / 8 / 3) << "spine " << spine << " is starved";
    }
    // The hash that backends use depends on the flow key and the GPU pair.
    EXPECT_NE(ClusterTopology::HashFlow(0, 0, 8), ClusterTopology::HashFlow(1, 0, 8));
    EXPECT_NE(ClusterTopology::HashFlow(0, 0, 8), ClusterTopology::HashFlow(0, 8, 0));
}

TEST(ClusterTopology, CustomTopologyAndNoPath)
{
    auto t = CreateObject<ClusterTopology>();
    auto gpu = [&](uint32_t server) {
        TopoVertex v;
        v.type = TopoVertexType::Gpu;
        v.server = server;
        v.name = "gpu" + std::to_string(server);
        return t->AddVertex(v);
    };
    auto nic = [&](uint32_t server) {
        TopoVertex v;
        v.type = TopoVertexType::Nic;
        v.server = server;
        v.name = "nic" + std::to_string(server);
        return t->AddVertex(v);
    };
    const uint32_t g0 = gpu(0), g1 = gpu(1), g2 = gpu(2);
    const uint32_t n0 = nic(0), n1 = nic(1), n2 = nic(2);
    TopoVertex sw;
    sw.type = TopoVertexType::Switch;
    sw.name = "sw";
    const uint32_t s = t->AddVertex(sw);
    t->AddDuplexLink(g0, n0, 1e9, 0, TopoLinkKind::Pcie);
    t->AddDuplexLink(g1, n1, 1e9, 0, TopoLinkKind::Pcie);
    t->AddDuplexLink(g2, n2, 1e9, 0, TopoLinkKind::Pcie);
    t->AddDuplexLink(n0, s, 1e9, 1e-6, TopoLinkKind::Nic);
    t->AddDuplexLink(n1, s, 2e9, 1e-6, TopoLinkKind::Nic);
    t->SetGpu(0, g0, 0, n0);
    t->SetGpu(1, g1, 1, n1);
    t->SetGpu(2, g2, 2, n2); // NIC 2 is not cabled
    auto r = t->Route(0, 1, 7);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_DOUBLE_EQ(t->PathLatency(r), 2e-6);
    EXPECT_DOUBLE_EQ(t->PathBottleneck(r), 1e9);
    EXPECT_THROW(t->Route(0, 2, 7), std::runtime_error);
    EXPECT_THROW(t->Route(0, 9, 7), std::runtime_error);
    EXPECT_THROW(t->AddDuplexLink(g0, 99, 1e9, 0, TopoLinkKind::Pcie), std::runtime_error);
    try
    {
        t->Route(2, 0, 7);
        FAIL() << "expected no path";
    }
    catch (const std::runtime_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("no path"), std::string::npos) << e.what();
    }
}

TEST(ClusterSpec, Presets)
{
    ClusterSpec s;
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-h100", s));
    EXPECT_EQ(s.preset, "dgx-h100");
    EXPECT_EQ(s.gpuModel, "h100-sxm");
    EXPECT_EQ(s.gpusPerServer, 8u);
    EXPECT_EQ(s.nicsPerServer, 8u);
    EXPECT_DOUBLE_EQ(s.nicGbps, 400);
    EXPECT_DOUBLE_EQ(s.nvlinkGBps, 450);
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-a100", s));
    EXPECT_EQ(s.gpuModel, "a100-sxm");
    EXPECT_DOUBLE_EQ(s.nicGbps, 200);
    EXPECT_DOUBLE_EQ(s.nvlinkGBps, 300);
    EXPECT_NO_THROW(gpusim::ValidateClusterSpec(s));
    EXPECT_FALSE(gpusim::LookupClusterPreset("dgx-z9000", s));
    EXPECT_EQ(s.preset, "dgx-a100"); // untouched on failure
    EXPECT_NE(gpusim::KnownClusterPresets().find("dgx-h100"), std::string::npos);
    EXPECT_NE(gpusim::KnownClusterPresets().find("dgx-a100"), std::string::npos);
}

TEST(ClusterSpec, YamlPresetAndOverrides)
{
    const ClusterSpec s = gpusim::ParseClusterSpecYaml("# my cluster\n"
                                                       "servers: 16\n"
                                                       "preset: dgx-a100\n"
                                                       "fabric: leaf-spine\n"
                                                       "nics_per_leaf: 16\n"
                                                       "oversubscription: 2.5\n"
                                                       "routing: dmodk\n"
                                                       "linkLatencyUs: 0.75\n",
                                                       "inline");
    EXPECT_EQ(s.preset, "dgx-a100");
    EXPECT_EQ(s.gpuModel, "a100-sxm"); // from the preset
    EXPECT_DOUBLE_EQ(s.nicGbps, 200);  // from the preset
    EXPECT_EQ(s.servers, 16u);         // overridden, even though it came before `preset`
    EXPECT_EQ(s.fabric, "leaf-spine");
    EXPECT_EQ(s.nicsPerLeaf, 16u);
    EXPECT_DOUBLE_EQ(s.oversubscription, 2.5);
    EXPECT_EQ(s.routing, "dmodk");
    EXPECT_DOUBLE_EQ(s.linkLatencyUs, 0.75);

    const std::string path = testing::TempDir() + "gpusim-cluster-ok.yaml";
    {
        std::ofstream f(path);
        f << "gpuModel: h100-sxm\nservers: 2\ngpusPerServer: 4\nnicsPerServer: 2\n"
             "fabric: single-switch\n";
    }
    const ClusterSpec c = gpusim::LoadClusterSpecYaml(path);
    EXPECT_EQ(c.preset, "");
    EXPECT_EQ(c.servers, 2u);
    EXPECT_EQ(c.gpusPerServer, 4u);
    EXPECT_EQ(c.nicsPerServer, 2u);
    std::remove(path.c_str());
}

namespace
{

std::string
YamlError(const std::string& text)
{
    try
    {
        gpusim::ParseClusterSpecYaml(text, "bad.yaml");
    }
    catch (const std::runtime_error& e)
    {
        return e.what();
    }
    return "";
}

} // namespace

TEST(ClusterSpec, EfaStackTakesTheAwsPluginsNetworkSteps)
{
    // aws-ofi-nccl's P5 tuner model: 20 us a network step, 3 us more for Simple; its reported
    // port latency of 75 us only biases NCCL's selection. NVLink steps stay NCCL's.
    ClusterSpec p5;
    ASSERT_TRUE(gpusim::LookupClusterPreset("aws-p5", p5));
    EXPECT_EQ(p5.nicStack, "efa");
    EXPECT_EQ(p5.gpuModel, "h100-sxm");
    using gpusim::NcclAlgo;
    using gpusim::NcclHop;
    using gpusim::NcclProto;
    EXPECT_DOUBLE_EQ(p5.nccl.HopUs(NcclHop::Inter, NcclAlgo::Tree, NcclProto::LL), 20.0);
    EXPECT_DOUBLE_EQ(p5.nccl.HopUs(NcclHop::Inter, NcclAlgo::Ring, NcclProto::LL128), 20.0);
    EXPECT_DOUBLE_EQ(p5.nccl.HopUs(NcclHop::Inter, NcclAlgo::Ring, NcclProto::Simple), 23.0);
    EXPECT_DOUBLE_EQ(p5.nccl.HopUs(NcclHop::Inter, NcclAlgo::NvlsTree, NcclProto::Simple), 23.0);
    EXPECT_DOUBLE_EQ(p5.nccl.HopUs(NcclHop::Inter, NcclAlgo::NvlsTree, NcclProto::LL), 0.0);
    EXPECT_DOUBLE_EQ(p5.nccl.HopUs(NcclHop::Intra, NcclAlgo::Ring, NcclProto::Simple), 3.4);
    EXPECT_DOUBLE_EQ(p5.nccl.netSelectionUs, 75.0);

    // Back to verbs: NCCL's own network constants and no reported latency.
    ClusterSpec h100;
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-h100", h100));
    gpusim::UseNicStack(p5, "verbs");
    for (int a = 0; a < gpusim::kNcclAlgos; ++a)
    {
        for (int q = 0; q < gpusim::kNcclProtos; ++q)
        {
            EXPECT_DOUBLE_EQ(p5.nccl.hopUs[1][a][q], h100.nccl.hopUs[1][a][q]) << a << q;
        }
    }
    EXPECT_DOUBLE_EQ(p5.nccl.netSelectionUs, 0.0);
    EXPECT_THROW(gpusim::UseNicStack(p5, "roce"), std::invalid_argument);

    const ClusterSpec yaml =
        gpusim::ParseClusterSpecYaml("preset: dgx-a100\nnic_stack: efa\n", "inline");
    EXPECT_EQ(yaml.nicStack, "efa");
    EXPECT_DOUBLE_EQ(yaml.nccl.HopUs(NcclHop::Inter, NcclAlgo::Tree, NcclProto::Simple), 23.0);
    EXPECT_NEAR(yaml.nccl.nvlinkEfficiency * 300, 235, 1e-9); // the preset's, untouched
    const std::string e = YamlError("preset: dgx-h100\nnicStack: tcp\n");
    EXPECT_NE(e.find("bad.yaml:2:"), std::string::npos) << e;
    EXPECT_NE(e.find("unknown NIC stack 'tcp' (verbs, efa)"), std::string::npos) << e;
}

TEST(ClusterSpec, NcclReleaseAndGraphChannelsFromYaml)
{
    // The release whose tuner selects, and NCCL's graph channels; the presets carry the
    // generation (and dgx-h100 its 12 graph channels) and no release (2.26.2's constants).
    ClusterSpec h100;
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-h100", h100));
    EXPECT_EQ(h100.nccl.arch, "hopper");
    EXPECT_EQ(h100.nccl.graphChannels, 12u);
    EXPECT_EQ(h100.nccl.ncclVersion, "");
    const ClusterSpec yaml = gpusim::ParseClusterSpecYaml(
        "preset: dgx-a100\nncclVersion: 2.12.12\nncclGraphChannels: 6\n", "inline");
    EXPECT_EQ(yaml.nccl.arch, "ampere");
    EXPECT_EQ(yaml.nccl.ncclVersion, "2.12.12");
    EXPECT_EQ(yaml.nccl.graphChannels, 6u);
    std::string e = YamlError("preset: dgx-h100\nservers: 2\nncclVersion: 2.40.1\n");
    EXPECT_NE(e.find("bad.yaml:3:"), std::string::npos) << e;
    EXPECT_NE(e.find("unknown NCCL version '2.40.1'"), std::string::npos) << e;
    e = YamlError("preset: dgx-h100\nncclGraphChannels: 40\n");
    EXPECT_NE(e.find("graphChannels must be at most 32"), std::string::npos) << e;
}

TEST(ClusterSpec, BadYamlNamesFileLineAndKey)
{
    std::string e = YamlError("preset: dgx-h100\nservers: 4\nnic_speed: 100\n");
    EXPECT_NE(e.find("bad.yaml:3:"), std::string::npos) << e;
    EXPECT_NE(e.find("nic_speed"), std::string::npos) << e;

    e = YamlError("servers: 4\ngpusPerServer: eight\n");
    EXPECT_NE(e.find("bad.yaml:2:"), std::string::npos) << e;
    EXPECT_NE(e.find("gpusPerServer"), std::string::npos) << e;

    e = YamlError("servers: -4\n");
    EXPECT_NE(e.find("bad.yaml:1:"), std::string::npos) << e;

    e = YamlError("preset: dgx-nope\n");
    EXPECT_NE(e.find("unknown preset"), std::string::npos) << e;

    e = YamlError("servers: [1, 2\n"); // malformed
    EXPECT_NE(e.find("bad.yaml:"), std::string::npos) << e;

    e = YamlError("nicGbps: {a: 1}\n");
    EXPECT_NE(e.find("nicGbps"), std::string::npos) << e;

    e = YamlError("servers: 0\n");
    EXPECT_NE(e.find("impossible topology"), std::string::npos) << e;

    try
    {
        gpusim::LoadClusterSpecYaml("/nonexistent/cluster.yaml");
        FAIL();
    }
    catch (const std::runtime_error& err)
    {
        EXPECT_NE(std::string(err.what()).find("/nonexistent/cluster.yaml"), std::string::npos);
    }
}

TEST(ClusterSpec, ImpossibleTopologiesThrow)
{
    auto expectImpossible = [](const ClusterSpec& s) {
        try
        {
            gpusim::ValidateClusterSpec(s);
            ADD_FAILURE() << "accepted";
        }
        catch (const std::runtime_error& e)
        {
            EXPECT_EQ(std::string(e.what()).rfind("impossible topology: ", 0), 0u) << e.what();
        }
        GpuClusterHelper h;
        h.SetSpec(s);
        EXPECT_THROW(h.BuildTopology(), std::runtime_error);
    };
    ClusterSpec s;
    s.servers = 0;
    expectImpossible(s);
    s = ClusterSpec();
    s.gpusPerServer = 0;
    expectImpossible(s);
    s = ClusterSpec();
    s.nicsPerServer = 16; // more NICs than GPUs
    expectImpossible(s);
    s = ClusterSpec();
    s.nicsPerServer = 3; // 8 % 3 != 0
    expectImpossible(s);
    s = ClusterSpec();
    s.nicGbps = 0;
    expectImpossible(s);
    s = ClusterSpec();
    s.nvlinkGBps = -1;
    expectImpossible(s);
    s = ClusterSpec();
    s.fabric = "torus";
    expectImpossible(s);
    s = ClusterSpec();
    s.oversubscription = 0.5;
    expectImpossible(s);
    s = ClusterSpec();
    s.nicsPerLeaf = 0;
    expectImpossible(s);
    s = ClusterSpec();
    s.routing = "teleport"; // "spray" is a routing now (packet-routing-test.cc)
    expectImpossible(s);
    s = ClusterSpec();
    s.gpuModel = "rtx-9090";
    expectImpossible(s);
    EXPECT_NO_THROW(gpusim::ValidateClusterSpec(ClusterSpec()));
}

TEST(GpuClusterHelper, CreatesGpuNodesServerMajor)
{
    GpuClusterHelper h;
    ClusterSpec s;
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-a100", s));
    s.servers = 2;
    h.SetSpec(s);
    EXPECT_EQ(h.GetSpec().gpuModel, "a100-sxm");
    EXPECT_EQ(h.GetTopology(), nullptr);
    NodeContainer nodes = h.Create();
    ASSERT_EQ(nodes.GetN(), 16u);
    ASSERT_NE(h.GetTopology(), nullptr);
    EXPECT_EQ(h.GetTopology()->GetNGpus(), 16u);
    for (uint32_t i = 0; i < nodes.GetN(); ++i)
    {
        Ptr<GpuNode> g = DynamicCast<GpuNode>(nodes.Get(i));
        ASSERT_NE(g, nullptr);
        EXPECT_EQ(g->GetGpuIndex(), i);
        EXPECT_EQ(g->GetServer(), i / 8);
        EXPECT_EQ(g->GetLocalIndex(), i % 8);
        EXPECT_EQ(g->GetSpec().arch, "sm_80");
    }
    Simulator::Destroy();
}

TEST(ClusterTopology, DualHomedNicAndBackToBackNics)
{
    // NIC0 is cabled to switches A and B, NIC1 to B only, NIC2 back-to-back to NIC0.
    auto t = CreateObject<ClusterTopology>();
    std::vector<uint32_t> gpus;
    std::vector<uint32_t> nics;
    for (uint32_t i = 0; i < 3; ++i)
    {
        TopoVertex g;
        g.type = TopoVertexType::Gpu;
        g.server = i;
        g.name = "gpu" + std::to_string(i);
        TopoVertex n;
        n.type = TopoVertexType::Nic;
        n.server = i;
        n.name = "nic" + std::to_string(i);
        gpus.push_back(t->AddVertex(g));
        nics.push_back(t->AddVertex(n));
        t->AddDuplexLink(gpus[i], nics[i], 1e9, 0, TopoLinkKind::Pcie);
        t->SetGpu(i, gpus[i], i, nics[i]);
    }
    TopoVertex sw;
    sw.type = TopoVertexType::Switch;
    sw.name = "A";
    const uint32_t a = t->AddVertex(sw);
    sw.name = "B";
    const uint32_t b = t->AddVertex(sw);
    t->AddDuplexLink(nics[0], a, 1e9, 0, TopoLinkKind::Nic);
    t->AddDuplexLink(nics[0], b, 1e9, 0, TopoLinkKind::Nic);
    t->AddDuplexLink(nics[1], b, 1e9, 0, TopoLinkKind::Nic);
    t->AddDuplexLink(nics[2], nics[0], 1e9, 0, TopoLinkKind::Nic);
    for (uint64_t h = 0; h < 16; ++h)
    {
        auto r10 = t->Route(1, 0, h); // into the dual-homed NIC: only B is on a shortest path
        auto vs = CheckWalk(*t, 1, 0, r10);
        ASSERT_EQ(vs.size(), 5u);
        EXPECT_EQ(vs[2], b);
        auto r01 = t->Route(0, 1, h);
        vs = CheckWalk(*t, 0, 1, r01);
        ASSERT_EQ(vs.size(), 5u);
        EXPECT_EQ(vs[2], b);
        // NIC2 reaches NIC0 directly; NICs never forward, so GPU2 cannot reach GPU1.
        EXPECT_EQ(t->Route(2, 0, h).size(), 3u);
        EXPECT_THROW(t->Route(2, 1, h), std::runtime_error);
    }
}

TEST(ClusterTopology, NvSwitchEndpointsRouteOverOneNvLink)
{
    // NVLS transfers go from a GPU to its server's NVSwitch and back: one NVLink hop each,
    // the GPU's own link in each direction, and never the NIC.
    auto t = Build(SmallSpec("rail"));
    const uint32_t sw1 = t->NvSwitchEndpoint(9); // server 1
    EXPECT_TRUE(ClusterTopology::IsSwitchEndpoint(sw1));
    EXPECT_FALSE(ClusterTopology::IsSwitchEndpoint(9));
    EXPECT_EQ(t->NvSwitchEndpoint(15), sw1);
    EXPECT_NE(t->NvSwitchEndpoint(0), sw1);
    EXPECT_EQ(t->ServerOf(sw1), 1u);
    const uint32_t swVertex = sw1 - ClusterTopology::kSwitchEndpoint;
    EXPECT_EQ(t->Vertices()[swVertex].type, TopoVertexType::NvSwitch);
    const auto up = t->Route(9, sw1, 7);
    ASSERT_EQ(up.size(), 1u);
    EXPECT_EQ(t->Links()[up[0]].from, t->GpuVertex(9));
    EXPECT_EQ(t->Links()[up[0]].to, swVertex);
    EXPECT_EQ(t->Links()[up[0]].kind, TopoLinkKind::NvLink);
    const auto down = t->Route(sw1, 12, 7);
    ASSERT_EQ(down.size(), 1u);
    EXPECT_EQ(t->Links()[down[0]].from, swVertex);
    EXPECT_EQ(t->Links()[down[0]].to, t->GpuVertex(12));
    // The GPU -> GPU route through the switch uses the same two links.
    const auto gg = t->Route(9, 12, 7);
    ASSERT_EQ(gg.size(), 2u);
    EXPECT_EQ(gg[0], up[0]);
    EXPECT_EQ(gg[1], down[0]);
    EXPECT_DOUBLE_EQ(t->PathLatency(up) * 1e6, SmallSpec("rail").nvlinkLatencyUs);
    // Another server's switch is not one NVLink away; unknown endpoints are rejected.
    EXPECT_THROW(t->Route(0, sw1, 0), std::runtime_error);
    EXPECT_THROW(t->Route(ClusterTopology::kSwitchEndpoint + t->GpuVertex(0), 1, 0),
                 std::runtime_error);
}

TEST(ClusterTopology, GpuWithoutNvSwitchHasNoSwitchEndpoint)
{
    // A custom server whose GPUs only have PCIe (no NVLink): no NVLS endpoint.
    auto t = CreateObject<ClusterTopology>();
    TopoVertex g;
    g.type = TopoVertexType::Gpu;
    g.name = "gpu0";
    const uint32_t gv = t->AddVertex(g);
    TopoVertex n;
    n.type = TopoVertexType::Nic;
    n.name = "nic0";
    const uint32_t nv = t->AddVertex(n);
    t->AddDuplexLink(gv, nv, 64e9 * 8, 1e-6, TopoLinkKind::Pcie);
    t->SetGpu(0, gv, 0, nv);
    EXPECT_THROW(t->NvSwitchEndpoint(0), std::runtime_error);
}

TEST(ClusterSpec, PresetsCarryTheirNcclCalibration)
{
    // Each value as cluster-spec.cc and doc/design.md derive it from its source.
    ClusterSpec h;
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-h100", h));
    EXPECT_EQ(h.nccl.name, "dgx-h100");
    EXPECT_TRUE(h.nccl.nvls);                                    // NVSwitch 3: NVLink SHARP
    EXPECT_NEAR(h.nccl.nvlinkEfficiency * 450, 370, 1e-9);       // ring ~370 GB/s busbw
    EXPECT_NEAR(h.nccl.netEfficiency * 50, 47, 1e-9);            // 46-48 GB/s per NDR NIC
    EXPECT_NEAR(h.nccl.nvlsEfficiency * 450, 480.0 * 9 / 14, 1e-9); // NVLS 480 GB/s busbw
    EXPECT_EQ(h.nccl.nvlsChannels, 16u);
    EXPECT_DOUBLE_EQ(h.nccl.llMaxBusGBps[0], 141.0);
    using gpusim::NcclAlgo;
    using gpusim::NcclHop;
    using gpusim::NcclProto;
    EXPECT_DOUBLE_EQ(h.nccl.HopUs(NcclHop::Intra, NcclAlgo::Ring, NcclProto::Simple), 3.4);
    EXPECT_DOUBLE_EQ(h.nccl.HopUs(NcclHop::Inter, NcclAlgo::Ring, NcclProto::LL), 2.7);
    EXPECT_DOUBLE_EQ(h.nccl.HopUs(NcclHop::Inter, NcclAlgo::NvlsTree, NcclProto::Simple), 14.0);
    EXPECT_DOUBLE_EQ(h.nccl.BaseUs(NcclAlgo::Tree, NcclProto::LL128), 14.0);
    // NVLS: launch + four stages of the Simple NVLink step = NCCL's 25 us.
    EXPECT_NEAR(h.nccl.BaseUs(NcclAlgo::Nvls, NcclProto::Simple) +
                    4 * h.nccl.HopUs(NcclHop::Intra, NcclAlgo::Nvls, NcclProto::Simple),
                25.0, 1e-9);
    EXPECT_DOUBLE_EQ(h.nccl.ProtoFactor(NcclAlgo::Ring, NcclProto::LL128), 0.92);
    EXPECT_TRUE(h.nccl.hopIncludesWire);

    ClusterSpec a;
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-a100", a));
    EXPECT_FALSE(a.nccl.nvls); // NVSwitch 2: no in-switch reduction
    EXPECT_NEAR(a.nccl.nvlinkEfficiency * 300, 235, 1e-9); // NCCL's A100 busbw cap
    EXPECT_DOUBLE_EQ(a.nccl.llMaxBusGBps[0], 87.7);
    EXPECT_DOUBLE_EQ(a.nccl.llMaxBusGBps[1], 22.5); // AMD hosts

    ClusterSpec h200;
    ASSERT_TRUE(gpusim::LookupClusterPreset("dgx-h200", h200));
    EXPECT_EQ(h200.gpuModel, "h200-sxm");
    EXPECT_TRUE(h200.nccl.nvls);
    EXPECT_NO_THROW(gpusim::ValidateClusterSpec(h200));

    // A spec built by hand keeps the generic, uncalibrated numbers (no NVLS).
    ClusterSpec custom;
    EXPECT_EQ(custom.nccl.name, "generic");
    EXPECT_FALSE(custom.nccl.nvls);
    EXPECT_DOUBLE_EQ(custom.nccl.nvlinkEfficiency, 1.0);
    EXPECT_FALSE(custom.nccl.hopIncludesWire);
}

TEST(ClusterSpec, YamlCalibrationKeys)
{
    const ClusterSpec s = gpusim::ParseClusterSpecYaml("preset: dgx-a100\n"
                                                       "nvls: true\n"
                                                       "nvls_efficiency: 0.6\n"
                                                       "netEfficiency: 0.9\n",
                                                       "inline");
    EXPECT_TRUE(s.nccl.nvls);
    EXPECT_DOUBLE_EQ(s.nccl.nvlsEfficiency, 0.6);
    EXPECT_DOUBLE_EQ(s.nccl.netEfficiency, 0.9);
    EXPECT_NEAR(s.nccl.nvlinkEfficiency * 300, 235, 1e-9); // the preset's, untouched
    EXPECT_NE(YamlError("preset: dgx-h100\nnvls: maybe\n").find("expected true or false"),
              std::string::npos);
    EXPECT_NE(YamlError("preset: dgx-h100\nnvlinkEfficiency: 1.5\n").find("nvlinkEfficiency"),
              std::string::npos);
    EXPECT_NE(YamlError("nvls: true\n").find("nvlsEfficiency"), std::string::npos);
}
