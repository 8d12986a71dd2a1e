/*
 * NcclCalibration: the hardware- and generation-dependent numbers of the NCCL model, carried by
 * a ClusterSpec (the presets fill them, each value with its source in cluster-spec.cc and
 * doc/design.md) and handed to NcclWorld through the ClusterTopology.
 *
 * Tables are indexed like NCCL's tuning tables (src/graph/tuning.cc): algorithm (tree, ring,
 * NVLS, NVLSTree) x protocol (LL, LL128, Simple), per-hop latencies also by link class (NVLink
 * inside a server, network between servers). Chains (Broadcast, Reduce), AllToAll and P2P use
 * the ring rows, as NCCL's do.
 */
#ifndef GPUSIM_NCCL_CALIBRATION_H
#define GPUSIM_NCCL_CALIBRATION_H

#include <cstdint>
#include <string>

namespace ns3
{
namespace gpusim
{

/// Algorithm rows of the calibration tables (NCCL's NCCL_ALGO_* order without CollNet/PAT).
enum class NcclAlgo : uint8_t
{
    Tree = 0,
    Ring = 1,
    Nvls = 2,
    NvlsTree = 3,
};
constexpr int kNcclAlgos = 4;

/// Protocol columns (NCCL's NCCL_PROTO_* order).
enum class NcclProto : uint8_t
{
    LL = 0,
    LL128 = 1,
    Simple = 2,
};
constexpr int kNcclProtos = 3;

/// Link classes of a step: NVLink/NVSwitch inside a server, or the network between servers.
enum class NcclHop : uint8_t
{
    Intra = 0,
    Inter = 1,
};

struct NcclCalibration
{
    /// Name of the value set ("generic" = round numbers, uncalibrated; a preset's name).
    std::string name = "generic";

    // ---- bandwidth: payload bytes per wire byte of a transfer =
    //      protoFactor[algo][proto] x (nvlink | net | nvls) efficiency of its link class
    double nvlinkEfficiency = 1.0; //!< achievable fraction of NVLink bandwidth (GPU <-> GPU)
    double netEfficiency = 1.0;    //!< achievable fraction of NIC bandwidth (between servers)
    /// NVLink SHARP (in-switch reduction, NVSwitch 3rd generation). false: NVLS and NVLSTree
    /// are not offered (NCCL disables them without NVSwitch multicast support).
    bool nvls = false;
    /// Achievable fraction of NVLink bandwidth for NVLS transfers (GPU <-> NVSwitch multimem).
    double nvlsEfficiency = 0.0;
    uint32_t nvlsChannels = 16;            //!< NCCL's NVLS channels (CTAs), sets the loop size
    uint64_t nvlsChunkBytes = 128 * 1024;  //!< NCCL_NVLS_CHUNKSIZE before size-based shrinking
    /// NCCL's p2p channels per rank (a power of two): pow2Up of its collective channels (NCCL
    /// 2.29.2 src/graph/paths.cc ncclTopoComputeP2pChannels). 32 on 8-GPU NVSwitch servers:
    /// NCCL logs "24 coll channels, ..., 32 p2p channels, 32 p2p channels per peer" on one
    /// 8 x H100 node (doc/design.md, "Point-to-point").
    uint32_t p2pChannels = 32;
    double protoFactor[kNcclAlgos][kNcclProtos] = {
        {0.5, 0.890625, 0.95}, {0.5, 0.890625, 0.95}, {0.5, 0.890625, 0.95},
        {0.5, 0.890625, 0.95}};
    /// LL bus bandwidth caps (GB/s) on 1, 2 and more servers; 0 = none (NCCL's llMaxBws).
    double llMaxBusGBps[3] = {0, 0, 0};

    // ---- latency (us)
    /// Launch latency paid once per rank and collective (NCCL's baseLat).
    double baseUs[kNcclAlgos][kNcclProtos] = {
        {4.0, 6.0, 8.0}, {4.0, 6.0, 8.0}, {4.0, 6.0, 8.0}, {4.0, 6.0, 8.0}};
    /// Latency of one step on one hop, by link class (NCCL's hwLat).
    double hopUs[2][kNcclAlgos][kNcclProtos] = {
        {{0.6, 1.2, 3.0}, {0.6, 1.2, 3.0}, {0.6, 1.2, 3.0}, {0.6, 1.2, 3.0}},
        {{0.6, 1.2, 3.0}, {0.6, 1.2, 3.0}, {0.6, 1.2, 3.0}, {0.6, 1.2, 3.0}}};

    /// Latency the network plugin reports to NCCL (ncclNetProperties_t::latency, us). NCCL's
    /// tuner adds it to every network step it charges, twice for Simple (NCCL 2.26.2
    /// src/graph/tuning.cc:301-304, `graphs[a]->latencyInter` from src/graph/search.cc:616):
    /// it biases the selection only, the steps themselves cost hopUs. NCCL's own IB/RoCE
    /// transport reports 0 (src/transport/net_ib.cc: "props->latency = 0; // Not set").
    double netSelectionUs = 0.0;

    // ---- selection: what NCCL's own tuner of the release charges (model/nccl-version.h)
    /// GPU generation for NCCL's per-generation channel caps: "ampere", "hopper" ("" = none).
    std::string arch;
    /// NCCL release whose tuner picks algorithm and protocol ("" = 2.26.2, the release of
    /// the constants above): its latency constants and channel caps bias the selection only
    /// (the run is bounded by 2.26.2's caps of `arch`).
    std::string ncclVersion;
    /// NCCL's graph channels (its ring/tree search result, before it duplicates them: half of
    /// the "coll channels" it logs), which its channel caps multiply; 0 = one per GPU of a
    /// server, as the model's rings.
    uint32_t graphChannels = 0;

    /// true: hopUs is the whole fixed cost of a step, wire included (NCCL measured its hwLat
    /// end to end), so a step waits hopUs minus its route's wire latency before its bytes
    /// flow. false: hopUs is the sender's overhead alone and the wire latency comes on top.
    bool hopIncludesWire = false;

    double ProtoFactor(NcclAlgo a, NcclProto p) const
    {
        return protoFactor[int(a)][int(p)];
    }

    double BaseUs(NcclAlgo a, NcclProto p) const
    {
        return baseUs[int(a)][int(p)];
    }

    double HopUs(NcclHop h, NcclAlgo a, NcclProto p) const
    {
        return hopUs[int(h)][int(a)][int(p)];
    }

    /// LL bus bandwidth cap for a communicator spanning `servers` servers (0 = none).
    double LlMaxBusGBps(uint32_t servers) const
    {
        return llMaxBusGBps[servers <= 1 ? 0 : servers == 2 ? 1 : 2];
    }
};

/// "ring" -> Ring, ..., false for other names (chain/direct/p2p map to Ring).
bool ParseNcclAlgo(const std::string& name, NcclAlgo& out);
/// "simple" -> Simple, "ll128" -> LL128, "ll" -> LL.
bool ParseNcclProto(const std::string& name, NcclProto& out);

/// Throws std::runtime_error naming the first value out of range (efficiencies in (0, 1],
/// NVLS efficiency in (0, 1] when NVLS is on, non-negative latencies and caps).
void ValidateNcclCalibration(const NcclCalibration& c);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_NCCL_CALIBRATION_H
