#include "ns3/cluster-spec.h"

#include "ns3/background-traffic.h"
#include "ns3/gpu-spec.h"
#include "ns3/nccl-version.h"

#include "ns3/yaml-fields.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

namespace
{

// Wire latencies per hop. NCCL's fastest measured steps bound them (tuning.cc hwLat, which is
// end to end): LL over NVLink takes 0.6 us for GPU -> NVSwitch -> GPU, so 0.3 us per NVLink
// hop; LL over the network takes 2.7 us, so 0.5 us per PCIe / NIC / switch hop keeps a
// rail-local path (GPU -> NIC -> leaf -> NIC -> GPU, 4 hops) at 2 us.
constexpr double kNvlinkHopUs = 0.3;
constexpr double kNetHopUs = 0.5;

/*
 * NCCL's own tuning constants, NCCL 2.26.2 src/graph/tuning.cc (the version of the H100 tables
 * in ../shared/data/nccl-tests), shared by every calibrated preset:
 *   baseLat  (us)  Tree {LL 6.8, LL128 14.0, Simple 8.4}, Ring {6.6, 14.0, 8.4}, NVLS/NVLSTree 0
 *   hwLat NVLink   Tree {0.6, 1.25, 4.0}, Ring {0.6, 1.9, 3.4}, NVLS/NVLSTree Simple 25
 *   hwLat network  Tree {5.0, 8.5, 14}, Ring {2.7, 4.0, 14.0}, NVLS 18, NVLSTree 14
 *   bandwidth      ring LL x 0.5, ring LL128 x 0.92, tree x 0.92 (LL x 1/3.8, LL128 x 120/128)
 * NCCL charges NVLS its whole NVLink latency once (25 us). Our NVLS runs four dependent stages
 * per loop (to the switch, reduced shard back, multicast up, multicast down), each paying the
 * Simple step latency over NVLink (ring hwLat, 3.4 us); the launch latency is the rest:
 * 25 - 4 x 3.4 = 11.4 us, so one loop costs NCCL's 25 us in all.
 */
/// NCCL 2.26.2's network step latencies (hwLat[NCCL_HW_NET], tuning.cc), quoted above.
constexpr double kNcclNetHopUs[kNcclAlgos][kNcclProtos] = {
    {5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}, {0, 0, 18.0}, {0, 0, 14.0}};

/*
 * AWS EFA through the aws-ofi-nccl plugin (github.com/aws/aws-ofi-nccl at 2daf7d30):
 *  - a network step costs what the plugin's own NCCL tuner charges on P5 and P5e: net_lat
 *    20 us ("2 nodes, 8B RDMA w/imm lat", src/tuner/nccl_ofi_model.cpp) for every algorithm
 *    and protocol, plus TUNER_NET_COMP_OVERHEAD 3 us for Simple ("~2 usec cost in the device
 *    and ~1 usec cost to write that completion up to the host stack", nccl_ofi_param.h; the
 *    model file adds it for Simple only, where the proxy handles the completion);
 *  - the plugin reports a port latency of 75 us to NCCL on p4d, p4de and p5
 *    (src/platform-aws.cpp), which NCCL's tuner adds to each network step when it selects
 *    the algorithm and protocol (NcclCalibration::netSelectionUs).
 * The plugin's tuner has no figures for p4d/p4de (EFA's first generation); they get P5's.
 */
constexpr double kEfaStepUs = 20.0;
constexpr double kEfaSimpleCompletionUs = 3.0;
constexpr double kEfaReportedLatencyUs = 75.0;

NcclCalibration
NcclTuningConstants(const std::string& name)
{
    NcclCalibration c;
    c.name = name;
    c.hopIncludesWire = true; // hwLat is measured end to end
    const double nvlsStageUs = 3.4;
    const double nvlsLaunchUs = 25.0 - 4 * nvlsStageUs;
    const double base[kNcclAlgos][kNcclProtos] = {
        {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, nvlsLaunchUs}, {0, 0, nvlsLaunchUs}};
    const double nvlink[kNcclAlgos][kNcclProtos] = {
        {0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, nvlsStageUs}, {0, 0, nvlsStageUs}};
    const double factor[kNcclAlgos][kNcclProtos] = {{0.92 / 3.8, 0.92 * 120.0 / 128, 0.92},
                                                    {0.5, 0.92, 1.0},
                                                    {1.0, 1.0, 1.0},
                                                    {1.0, 1.0, 1.0}};
    for (int a = 0; a < kNcclAlgos; ++a)
    {
        for (int p = 0; p < kNcclProtos; ++p)
        {
            c.baseUs[a][p] = base[a][p];
            c.hopUs[int(NcclHop::Intra)][a][p] = nvlink[a][p];
            c.hopUs[int(NcclHop::Inter)][a][p] = kNcclNetHopUs[a][p];
            c.protoFactor[a][p] = factor[a][p];
        }
    }
    return c;
}

/// DGX/HGX H100 and H200: NVLink4 through third-generation NVSwitch (NVLink SHARP), ConnectX-7
/// NDR, Intel Xeon hosts.
NcclCalibration
HopperCalibration(const std::string& name)
{
    NcclCalibration c = NcclTuningConstants(name);
    c.arch = "hopper";
    // Ring AllReduce on one H100 node reaches ~370 GB/s busbw (NCCL maintainers, nccl-tests
    // issues 290/309; ../shared/data/nccl-tests/README.md): 370 of 450 GB/s.
    c.nvlinkEfficiency = 370.0 / 450;
    // "For NDR @ 400Gbps you should see 46-48GB/s per NIC" (NCCL maintainer, nccl-tests issue
    // 290): 47 of 50 GB/s.
    c.netEfficiency = 47.0 / 50;
    // NVLS AllReduce on one H100 node peaks near 480 GB/s busbw (NCCL maintainers, same
    // threads). busbw = 2(n-1)/n S/T while each GPU moves (n+1)/n S per NVLink direction, so
    // the link runs at 480 x (n+1) / (2(n-1)) = 308.6 GB/s for n = 8: 308.6 of 450.
    c.nvls = true;
    c.nvlsEfficiency = 480.0 * 9 / 14 / 450;
    c.nvlsChannels = 16;          // NVLS_NCHANNELS_SM90 (NCCL src/transport/nvls.cc)
    // NCCL's ring/tree graph on an 8-GPU NVSwitch H100 server: 12 channels. NCCL logs "24
    // coll channels" on one node (twice the graph's: it duplicates them, doc/design.md
    // "Point-to-point"), and the GRAPH line of a 2-node H100 system reads "Pattern 4, crossNic
    // 0, nChannels 12, bw 30.000000/30.000000" (NVIDIA/nccl issue 1197, NCCL 2.19.4).
    c.graphChannels = 12;
    c.nvlsChunkBytes = 128 << 10; // NCCL_NVLS_CHUNKSIZE default
    // NCCL llMaxBws: Hopper single node 141 GB/s; multi-node by host CPU, Intel row: 39 GB/s on
    // 2 nodes, 20.4 on more.
    c.llMaxBusGBps[0] = 141.0;
    c.llMaxBusGBps[1] = 39.0;
    c.llMaxBusGBps[2] = 20.4;
    return c;
}

/// DGX/HGX A100: NVLink3 through second-generation NVSwitch (no NVLink SHARP), ConnectX-6 HDR,
/// AMD EPYC hosts.
NcclCalibration
AmpereCalibration(const std::string& name)
{
    NcclCalibration c = NcclTuningConstants(name);
    c.arch = "ampere";
    // NCCL caps A100 (compute capability 8.0) bus bandwidth at 235 GB/s in its tuning model
    // (tuning.cc 2.8 - 2.16: "busBw = std::min(busBw, 235.0f)"): 235 of 300 GB/s.
    c.nvlinkEfficiency = 235.0 / 300;
    // The same achievable NIC fraction as NDR (46-48 of 50 GB/s); HDR users report 24 of
    // 25 GB/s per NIC (nccl-tests issue 175).
    c.netEfficiency = 47.0 / 50;
    c.nvls = false; // NVSwitch 2 has no in-switch reduction: NCCL offers no NVLS on A100
    // NCCL llMaxBws: Ampere single node 87.7 GB/s; multi-node AMD row: 22.5 on 2 nodes, 19.0 on
    // more.
    c.llMaxBusGBps[0] = 87.7;
    c.llMaxBusGBps[1] = 22.5;
    c.llMaxBusGBps[2] = 19.0;
    return c;
}

} // namespace

bool
LookupClusterPreset(const std::string& name, ClusterSpec& out)
{
    // NVIDIA DGX datasheets: 8 SXM GPUs on NVSwitch, one ConnectX NIC per GPU (compute
    // fabric), PCIe switch between GPU and NIC. Fabric defaults follow the DGX SuperPOD
    // reference design (rail-optimised, non-blocking).
    if (name == "dgx-h100" || name == "dgx-h200")
    {
        ClusterSpec s;
        s.preset = name;
        s.gpuModel = name == "dgx-h100" ? "h100-sxm" : "h200-sxm";
        s.gpusPerServer = 8;
        s.nicsPerServer = 8;
        s.nicGbps = 400;    // ConnectX-7
        s.nvlinkGBps = 450; // NVLink4: 900 GB/s bidirectional per GPU
        s.pcieGBps = 64;    // PCIe Gen5 x16
        s.fabric = "rail";
        // InfiniBand with adaptive routing: the subnet manager enables it on the switches
        // (NVIDIA InfiniBand Cluster Bring-up Procedure, "Adaptive Routing": on by default in
        // opensm.conf, routing engine ar_updn) and NCCL uses it on IB by default
        // (NCCL_IB_ADAPTIVE_ROUTING, default 1 on InfiniBand, 0 on RoCE).
        s.routing = "adaptive";
        s.nvlinkLatencyUs = kNvlinkHopUs;
        s.linkLatencyUs = kNetHopUs;
        s.nccl = HopperCalibration(name);
        out = s;
        return true;
    }
    if (name == "dgx-a100")
    {
        ClusterSpec s;
        s.preset = name;
        s.gpuModel = "a100-sxm";
        s.gpusPerServer = 8;
        s.nicsPerServer = 8;
        s.nicGbps = 200;    // ConnectX-6 HDR
        s.nvlinkGBps = 300; // NVLink3: 600 GB/s bidirectional per GPU
        s.pcieGBps = 32;    // PCIe Gen4 x16
        s.fabric = "rail";
        // InfiniBand with adaptive routing: the subnet manager enables it on the switches
        // (NVIDIA InfiniBand Cluster Bring-up Procedure, "Adaptive Routing": on by default in
        // opensm.conf, routing engine ar_updn) and NCCL uses it on IB by default
        // (NCCL_IB_ADAPTIVE_ROUTING, default 1 on InfiniBand, 0 on RoCE).
        s.routing = "adaptive";
        s.nvlinkLatencyUs = kNvlinkHopUs;
        s.linkLatencyUs = kNetHopUs;
        s.nccl = AmpereCalibration(name);
        out = s;
        return true;
    }
    if (name == "aws-p5")
    {
        // p5.48xlarge: 8 x H100 SXM on NVSwitch (the HGX board of dgx-h100), 32 x 100 Gb/s EFA
        // NICs, four behind each GPU's PCIe switch: one 400 Gb/s NIC per GPU here, the same
        // bandwidth per GPU (AWS EC2 P5 instance page). EFA's SRD sprays each flow's packets
        // over many paths, which the fabric's adaptive routing stands for.
        LookupClusterPreset("dgx-h100", out);
        out.preset = name;
        out.nccl.name = name;
        UseNicStack(out, "efa");
        return true;
    }
    return false;
}

std::string
KnownClusterPresets()
{
    return "dgx-h100, dgx-h200, dgx-a100, aws-p5";
}

void
UseNicStack(ClusterSpec& spec, const std::string& stack)
{
    if (stack != "verbs" && stack != "efa")
    {
        throw std::invalid_argument("unknown NIC stack '" + stack + "' (verbs, efa)");
    }
    spec.nicStack = stack;
    const bool efa = stack == "efa";
    for (int a = 0; a < kNcclAlgos; ++a)
    {
        for (int p = 0; p < kNcclProtos; ++p)
        {
            // Only where NCCL has a network step (NVLS and NVLSTree run Simple alone).
            if (kNcclNetHopUs[a][p] > 0)
            {
                spec.nccl.hopUs[int(NcclHop::Inter)][a][p] =
                    efa ? kEfaStepUs +
                              (p == int(NcclProto::Simple) ? kEfaSimpleCompletionUs : 0.0)
                        : kNcclNetHopUs[a][p];
            }
        }
    }
    spec.nccl.netSelectionUs = efa ? kEfaReportedLatencyUs : 0.0;
}

void
ValidateClusterSpec(const ClusterSpec& s)
{
    auto fail = [](const std::string& why) {
        throw std::runtime_error("impossible topology: " + why);
    };
    auto positive = [&](double v, const char* name) {
        if (!(v > 0) || !std::isfinite(v))
        {
            std::ostringstream os;
            os << name << " must be a positive number (got " << v << ")";
            fail(os.str());
        }
    };
    if (s.servers == 0)
    {
        fail("0 servers");
    }
    if (s.gpusPerServer == 0)
    {
        fail("0 GPUs per server");
    }
    if (s.nicsPerServer == 0)
    {
        fail("0 NICs per server (GPUs could not reach other servers)");
    }
    if (s.nicsPerServer > s.gpusPerServer || s.gpusPerServer % s.nicsPerServer != 0)
    {
        fail(std::to_string(s.nicsPerServer) + " NICs cannot be shared evenly by " +
             std::to_string(s.gpusPerServer) + " GPUs per server");
    }
    if (uint64_t(s.servers) * s.gpusPerServer > (1u << 24))
    {
        fail("more than 16M GPUs");
    }
    positive(s.nicGbps, "nicGbps");
    positive(s.nvlinkGBps, "nvlinkGBps");
    positive(s.pcieGBps, "pcieGBps");
    if (!(s.linkLatencyUs >= 0) || !std::isfinite(s.linkLatencyUs) || !(s.nvlinkLatencyUs >= 0) ||
        !std::isfinite(s.nvlinkLatencyUs))
    {
        fail("latencies must be non-negative");
    }
    if (s.fabric != "single-switch" && s.fabric != "leaf-spine" && s.fabric != "fat-tree" &&
        s.fabric != "rail")
    {
        fail("unknown fabric '" + s.fabric + "' (single-switch, leaf-spine, fat-tree, rail)");
    }
    if (!(s.oversubscription >= 1) || !std::isfinite(s.oversubscription))
    {
        fail("oversubscription must be >= 1");
    }
    if (s.routing != "ecmp" && s.routing != "dmodk" && s.routing != "spray" &&
        s.routing != "spray-rr" && s.routing != "flowlet" && s.routing != "adaptive")
    {
        fail("unknown routing '" + s.routing +
             "' (ecmp, dmodk, spray, spray-rr, flowlet, adaptive)");
    }
    if (s.nicsPerLeaf == 0)
    {
        fail("nicsPerLeaf must be >= 1");
    }
    std::vector<bool> slowed(s.TotalGpus(), false);
    for (const StragglerSpec& st : s.stragglers)
    {
        if (st.gpu >= s.TotalGpus())
        {
            throw std::runtime_error("straggler '" + st.item + "': GPU " + std::to_string(st.gpu) +
                                     " is not in the cluster (" + std::to_string(s.TotalGpus()) +
                                     " GPUs)");
        }
        if (!(st.factor > 0) || !std::isfinite(st.factor))
        {
            throw std::runtime_error("straggler '" + st.item + "': factor must be > 0");
        }
        if (slowed[st.gpu])
        {
            throw std::runtime_error("straggler '" + st.item + "': GPU " + std::to_string(st.gpu) +
                                     " is given twice");
        }
        slowed[st.gpu] = true;
    }
    GpuSpec g;
    if (!LookupGpuSpec(s.gpuModel, g))
    {
        fail("unknown GPU model '" + s.gpuModel + "' (known: " + KnownGpuModels() + ")");
    }
    try
    {
        ValidateNcclCalibration(s.nccl);
    }
    catch (const std::runtime_error& e)
    {
        fail(e.what());
    }
}

namespace
{

class SpecReader : public YamlFieldReader
{
  public:
    using YamlFieldReader::YamlFieldReader;

    ClusterSpec Read(const YAML::Node& root) const
    {
        if (!root.IsMap())
        {
            Fail(root.Mark(), "expected a mapping of cluster keys (e.g. 'preset: dgx-h100')");
        }
        ClusterSpec spec;
        // The preset goes first wherever it appears, so the other keys override it.
        for (const auto& kv : root)
        {
            const std::string key = Scalar(kv.first, "<key>");
            if (NormaliseYamlKey(key) == "preset")
            {
                const std::string name = Scalar(kv.second, key);
                if (!LookupClusterPreset(name, spec))
                {
                    Fail(kv.second.Mark(),
                         "key 'preset': unknown preset '" + name +
                             "' (known: " + KnownClusterPresets() + ")");
                }
            }
        }
        using Setter = std::function<void(const YAML::Node&, const std::string&)>;
        const std::pair<const char*, Setter> fields[] = {
            {"gpumodel", [&](auto& v, auto& k) { spec.gpuModel = Scalar(v, k); }},
            {"servers", [&](auto& v, auto& k) { spec.servers = Unsigned(v, k); }},
            {"gpusperserver", [&](auto& v, auto& k) { spec.gpusPerServer = Unsigned(v, k); }},
            {"nicsperserver", [&](auto& v, auto& k) { spec.nicsPerServer = Unsigned(v, k); }},
            {"nicgbps", [&](auto& v, auto& k) { spec.nicGbps = Number(v, k); }},
            {"nvlinkgbps", [&](auto& v, auto& k) { spec.nvlinkGBps = Number(v, k); }},
            {"pciegbps", [&](auto& v, auto& k) { spec.pcieGBps = Number(v, k); }},
            {"fabric", [&](auto& v, auto& k) { spec.fabric = Scalar(v, k); }},
            {"oversubscription", [&](auto& v, auto& k) { spec.oversubscription = Number(v, k); }},
            {"nicsperleaf", [&](auto& v, auto& k) { spec.nicsPerLeaf = Unsigned(v, k); }},
            {"routing", [&](auto& v, auto& k) { spec.routing = Scalar(v, k); }},
            {"nicstack",
             [&](auto& v, auto& k) {
                 try
                 {
                     UseNicStack(spec, Scalar(v, k));
                 }
                 catch (const std::invalid_argument& e)
                 {
                     Fail(v.Mark(), "key '" + k + "': " + e.what());
                 }
             }},
            {"mergeadaptivespines",
             [&](auto& v, auto& k) { spec.mergeAdaptiveSpines = Boolean(v, k); }},
            {"linklatencyus", [&](auto& v, auto& k) { spec.linkLatencyUs = Number(v, k); }},
            {"nvlinklatencyus", [&](auto& v, auto& k) { spec.nvlinkLatencyUs = Number(v, k); }},
            {"nvlinkefficiency",
             [&](auto& v, auto& k) { spec.nccl.nvlinkEfficiency = Number(v, k); }},
            {"netefficiency", [&](auto& v, auto& k) { spec.nccl.netEfficiency = Number(v, k); }},
            {"nvls", [&](auto& v, auto& k) { spec.nccl.nvls = Boolean(v, k); }},
            {"nvlsefficiency", [&](auto& v, auto& k) { spec.nccl.nvlsEfficiency = Number(v, k); }},
            {"ncclversion",
             [&](auto& v, auto& k) {
                 const std::string version = Scalar(v, k);
                 uint32_t code = 0;
                 if (!ParseNcclVersion(version, code))
                 {
                     Fail(v.Mark(), "key '" + k + "': unknown NCCL version '" + version +
                                        "' (modelled: " + ModelledNcclVersions() + ")");
                 }
                 spec.nccl.ncclVersion = version;
             }},
            {"ncclgraphchannels",
             [&](auto& v, auto& k) { spec.nccl.graphChannels = Unsigned(v, k); }},
            {"faults", [&](auto& v, auto& k) { ReadFaults(v, k, spec); }},
            {"background", [&](auto& v, auto& k) { ReadBackground(v, k, spec); }},
        };
        for (const auto& kv : root)
        {
            const std::string key = Scalar(kv.first, "<key>");
            const std::string norm = NormaliseYamlKey(key);
            if (norm == "preset")
            {
                continue;
            }
            bool known = false;
            for (const auto& [name, set] : fields)
            {
                if (norm == name)
                {
                    set(kv.second, key);
                    known = true;
                    break;
                }
            }
            if (!known)
            {
                Fail(kv.first.Mark(),
                     "unknown key '" + key +
                         "' (known: preset, gpuModel, servers, gpusPerServer, nicsPerServer, "
                         "nicGbps, nvlinkGBps, pcieGBps, fabric, oversubscription, nicsPerLeaf, routing, nicStack, "
                         "mergeAdaptiveSpines, linkLatencyUs, nvlinkLatencyUs, nvlinkEfficiency, netEfficiency, nvls, "
                         "nvlsEfficiency, ncclVersion, ncclGraphChannels, faults, background)");
            }
        }
        try
        {
            ValidateClusterSpec(spec);
        }
        catch (const std::runtime_error& e)
        {
            Fail(root.Mark(), e.what());
        }
        return spec;
    }

  private:
    /// background: [ ITEM, ... ] (background-traffic.h)
    void ReadBackground(const YAML::Node& v, const std::string& key, ClusterSpec& spec) const
    {
        if (!v.IsSequence())
        {
            Fail(v.Mark(), "key '" + key + "': expected a sequence of background items "
                                           "(e.g. - bulk:src=0-7,dst=15,bytes=1G)");
        }
        for (const YAML::Node& entry : v)
        {
            const std::string item = Scalar(entry, key);
            try
            {
                ParseBackgroundSpec(item);
            }
            catch (const std::invalid_argument& e)
            {
                Fail(entry.Mark(), e.what());
            }
            spec.background.push_back(item);
        }
    }

    /// faults: [ {link-down: ITEM}, {link-rate: ITEM}, {straggler: ITEM} ... ]
    void ReadFaults(const YAML::Node& v, const std::string& key, ClusterSpec& spec) const
    {
        if (!v.IsSequence())
        {
            Fail(v.Mark(), "key '" + key + "': expected a sequence of 'link-down: ITEM', "
                                           "'link-rate: ITEM' or 'straggler: ITEM'");
        }
        for (const YAML::Node& entry : v)
        {
            if (!entry.IsMap() || entry.size() != 1)
            {
                Fail(entry.Mark(), "key '" + key + "': each entry is one 'link-down: ITEM', "
                                                   "'link-rate: ITEM' or 'straggler: ITEM'");
            }
            const auto kv = *entry.begin();
            const std::string kind = Scalar(kv.first, key);
            const std::string item = Scalar(kv.second, kind);
            const std::string norm = NormaliseYamlKey(kind);
            try
            {
                if (norm == "linkdown" || norm == "linkrate")
                {
                    const auto events =
                        norm == "linkdown" ? ParseLinkDown(item) : ParseLinkRate(item);
                    spec.fabricEvents.insert(spec.fabricEvents.end(), events.begin(), events.end());
                }
                else if (norm == "straggler")
                {
                    spec.stragglers.push_back(ParseStraggler(item));
                }
                else if (norm == "convergence")
                {
                    spec.routingConvergence =
                        ParseEventTime(item, "routing convergence '" + item + "'");
                }
                else
                {
                    Fail(kv.first.Mark(), "key '" + key + "': unknown fault '" + kind +
                                              "' (link-down, link-rate, straggler, convergence)");
                }
            }
            catch (const std::invalid_argument& e)
            {
                Fail(kv.second.Mark(), e.what());
            }
        }
    }
};

} // namespace

ClusterSpec
ParseClusterSpecYaml(const std::string& text, const std::string& sourceName)
{
    SpecReader reader(sourceName);
    return reader.Read(reader.Load(text));
}

ClusterSpec
LoadClusterSpecYaml(const std::string& file)
{
    return ParseClusterSpecYaml(ReadYamlFile(file, "cluster spec"), file);
}

} // namespace gpusim
} // namespace ns3
