/*
 * NcclSelectionModel: what NCCL's own tuner of one release charges when it picks the algorithm
 * and protocol of a collective (src/graph/tuning.cc, ncclTopoTuneModel), where that differs
 * from the constants gpusim's executor runs with (NCCL 2.26.2's, cluster-spec.cc).
 *
 * NCCL selects by its model, not by the fastest run, and the model changed between releases:
 * tree/Simple cost 28 us per hop up to 2.22 and 4 / 14 us from 2.23, the ring's Simple network
 * step 9.6, 28 or 14 us, and a tree channel is capped at a per-generation bus bandwidth
 * (perChMaxTreeBw) that Hopper only got in 2.17. The tuner adds these differences to its
 * estimates when it selects; the executor keeps running with the calibrated constants.
 */
#ifndef GPUSIM_NCCL_VERSION_H
#define GPUSIM_NCCL_VERSION_H

#include "ns3/nccl-calibration.h"

#include <cstdint>
#include <string>

namespace ns3
{
namespace gpusim
{

struct NcclSelectionModel
{
    uint32_t version = 0; //!< 22203 for 2.22.3
    /// The release's baseLat minus the executor's (us), by algorithm and protocol.
    double baseDeltaUs[kNcclAlgos][kNcclProtos] = {};
    /// The release's hwLat minus the executor's (us), by link class, algorithm and protocol.
    double hopDeltaUs[2][kNcclAlgos][kNcclProtos] = {};
    /// Per-channel bus bandwidth caps (GB/s) on 1, 2 and more nodes; 0 = none.
    double treeChannelGBps[3] = {0, 0, 0};       //!< perChMaxTreeBws, every tree protocol
    double treeLl128ChannelGBps[3] = {0, 0, 0};  //!< perChMaxTreeLL128Bws (from 2.18.3)
    double ringLl128ChannelGBps[3] = {0, 0, 0};  //!< perChMaxRingLL128Bws (from 2.18.3)
};

/// "2.22.3" -> 22203 ("2.22" -> 22200). false if the text is not a 2.x release NCCL had
/// (2.8 - 2.29 are modelled).
bool ParseNcclVersion(const std::string& text, uint32_t& code);

/// The selection model of NCCL `version` for GPUs of `arch` ("ampere", "hopper"; "" = no
/// caps). `version` empty: the executor's own release, no differences. Throws
/// std::invalid_argument for a version ParseNcclVersion rejects.
NcclSelectionModel NcclSelectionFor(const std::string& version, const std::string& arch);

/// The releases whose constants are modelled, for messages.
std::string ModelledNcclVersions();

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_NCCL_VERSION_H
