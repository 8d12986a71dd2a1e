/*
 * ClusterSpec: the few numbers that describe a GPU cluster (servers, GPUs, NICs, link rates,
 * fabric shape). Built-in presets and YAML files produce it; GpuClusterHelper turns it into a
 * ClusterTopology and GpuNodes.
 */
#ifndef GPUSIM_CLUSTER_SPEC_H
#define GPUSIM_CLUSTER_SPEC_H

#include "ns3/fabric-event.h"
#include "ns3/nccl-calibration.h"
#include "ns3/straggler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

struct ClusterSpec
{
    std::string preset;                //!< name it came from, "" if custom
    std::string gpuModel = "h100-sxm"; //!< key for LookupGpuSpec
    uint32_t servers = 4;
    uint32_t gpusPerServer = 8;
    uint32_t nicsPerServer = 8; //!< GPU g uses NIC (g * nics / gpus)
    double nicGbps = 400;       //!< per NIC, per direction
    double nvlinkGBps = 450;    //!< per GPU per direction to the NVSwitch, GB/s (bytes)
    double pcieGBps = 64;       //!< GPU <-> NIC, GB/s
    std::string fabric = "rail"; //!< single-switch | leaf-spine | fat-tree | rail
    double oversubscription = 1; //!< leaf downlink : uplink capacity ratio (leaf-spine, rail)
    uint32_t nicsPerLeaf = 32;   //!< leaf/edge downlinks (leaf-spine; rail: servers per rail leaf)
    /// Uplink choice among equal-cost paths: "ecmp" (per-flow hash), "dmodk" (destination mod
    /// k, InfiniBand fat-tree routing; ClusterTopology::SetRouting), "spray" (per-packet
    /// random), "spray-rr" (per-packet round-robin), "flowlet" (per flowlet) or "adaptive"
    /// (per packet to the least-loaded egress). The packet backend routes every packet so
    /// (EcmpFlowRouting); the flow backend splits each transfer equally over the equal-cost
    /// paths for spray, spray-rr and flowlet, and models adaptive by merged spines (below).
    std::string routing = "ecmp";
    /// routing "adaptive" on leaf-spine and rail fabrics: true builds one spine port per leaf
    /// carrying all of the leaf's uplink capacity (the flow backend's model of adaptive
    /// routing); false builds the real spines, as the packet backend needs to route each
    /// packet over them (the CLI sets false for --backend packet).
    bool mergeAdaptiveSpines = true;
    /// How NCCL reaches the network: "verbs" (its own InfiniBand/RoCE transport, whose step
    /// latencies the presets carry) or "efa" (AWS EFA through the aws-ofi-nccl plugin;
    /// UseNicStack sets its step costs into `nccl`).
    std::string nicStack = "verbs";
    double linkLatencyUs = 1.0;  //!< per fabric/NIC hop (incl. GPU<->NIC) propagation+switching
    double nvlinkLatencyUs = 0.5; //!< per NVLink hop (GPU<->NVSwitch)
    /// The NCCL model's per-generation numbers (achievable link efficiencies, NVLS, protocol
    /// latencies). Presets carry calibrated values with their sources; a spec built by hand
    /// (or a YAML file without a preset) keeps the generic, uncalibrated defaults.
    NcclCalibration nccl;
    /// Scheduled link failures and rate drops (fabric-event.h), resolved on the topology by
    /// GpuClusterHelper; empty: nothing fails.
    std::vector<FabricEventSpec> fabricEvents;
    /// GPUs that slow down (straggler.h); at most one entry per GPU.
    std::vector<StragglerSpec> stragglers;
    /// Routing convergence delay after a link goes down or up; negative: the backend's
    /// RoutingConvergence attribute (default 0).
    Time routingConvergence = Time(-1);
    /// Background traffic generators in their text form (ParseBackgroundSpec in
    /// background-traffic.h, checked when read); the commands that run them install a
    /// BackgroundTraffic with these items. Empty: none.
    std::vector<std::string> background;

    uint32_t TotalGpus() const
    {
        return servers * gpusPerServer;
    }

    uint32_t TotalNics() const
    {
        return servers * nicsPerServer;
    }
};

/// Built-in presets: "dgx-h100", "dgx-h200", "dgx-a100" (with their NCCL calibration) and
/// "aws-p5" (dgx-h100's servers reaching the network through EFA). Returns false (out
/// untouched) for other names.
bool LookupClusterPreset(const std::string& name, ClusterSpec& out);
/// Names accepted by LookupClusterPreset, comma separated.
std::string KnownClusterPresets();

/// Sets spec.nicStack and the network step costs of spec.nccl that go with it: "efa" takes
/// the aws-ofi-nccl plugin's (cluster-spec.cc), "verbs" NCCL's own network constants.
/// Throws std::invalid_argument naming the known stacks for any other name.
void UseNicStack(ClusterSpec& spec, const std::string& stack);

/// Reads a cluster spec from a YAML mapping. Keys are the ClusterSpec field names, in camelCase
/// or snake_case (gpus_per_server, nic_gbps, ...), plus the scalar calibration fields
/// (nvlinkEfficiency, netEfficiency, nvls, nvlsEfficiency), and `faults:`, a sequence of
/// one-key mappings `link-down: ITEM`, `link-rate: ITEM` or `straggler: ITEM` (the items of
/// ParseLinkDown, ParseLinkRate, ParseStraggler) and `convergence: TIME`, and `background:`, a
/// sequence of background traffic items (ParseBackgroundSpec). A `preset:` key loads the preset
/// first, the other keys override it. Throws std::runtime_error naming the file, line and key on bad input
/// (unknown key, wrong type, impossible topology).
ClusterSpec LoadClusterSpecYaml(const std::string& file);
/// Same, from YAML text; `sourceName` is used in error messages.
ClusterSpec ParseClusterSpecYaml(const std::string& text, const std::string& sourceName);

/// Throws std::runtime_error("impossible topology: ...") when the spec cannot be built.
void ValidateClusterSpec(const ClusterSpec& s);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_CLUSTER_SPEC_H
