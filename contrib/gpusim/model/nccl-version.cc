#include "ns3/nccl-version.h"

#include <stdexcept>

namespace ns3
{
namespace gpusim
{

namespace
{

/// NCCL's ring and tree constants of one span of releases (src/graph/tuning.cc; each span read
/// at its first and last tag in NVIDIA/nccl's git history, v2.8.3-1 ... v2.29.2-1).
struct Constants
{
    double base[2][kNcclProtos];   //!< baseLat: tree, ring
    double nvlink[2][kNcclProtos]; //!< hwLat[NCCL_HW_NVLINK]: tree, ring
    double net[2][kNcclProtos];    //!< hwLat[NCCL_HW_NET]: tree, ring
};

// The executor's constants: NCCL 2.26.2 (cluster-spec.cc, NcclTuningConstants).
constexpr Constants kExecutor = {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}},
                                 {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},
                                 {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}};

Constants
ConstantsOf(uint32_t v)
{
    // v2.8.3-1 ... v2.17.1-1: baseLat Tree {4.4, 4.4, 0}, Ring {3.6, 10.0, 8.4}; NVLink
    // Tree {.52, 1.25, 28}, Ring {.47, 1.9, 3.4}; network Tree {5.0, 8.5, 28}, Ring
    // {2.7, 4.0, 9.6}, except 2.12 - 2.13 where the ring's Simple network step is 28.
    Constants c = {{{4.4, 4.4, 0}, {3.6, 10.0, 8.4}},
                   {{0.52, 1.25, 28}, {0.47, 1.9, 3.4}},
                   {{5.0, 8.5, 28}, {2.7, 4.0, 9.6}}};
    if (v >= 21200 && v < 21400)
    {
        c.net[1][2] = 28;
    }
    if (v >= 21800)
    {
        // v2.18.1-1: baseLat Tree {6.8, 14.0, 0}, Ring {6.6, 14.0, 8.4}; NVLink Tree
        // {.6, 1.25, 28}, Ring {.6, 1.9, 3.4}; the ring's Simple network step 14.
        c = {{{6.8, 14.0, 0}, {6.6, 14.0, 8.4}},
             {{0.6, 1.25, 28}, {0.6, 1.9, 3.4}},
             {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}}};
    }
    if (v >= 22300)
    {
        // v2.23.4-1: tree/Simple baseLat 8.4, hwLat 4.0 (NVLink) and 14 (network): the
        // executor's constants from here on.
        c = kExecutor;
    }
    return c;
}

/// perChMaxTreeBws of `arch` (N1, N2, N4+), 0 where the release has none for it.
void
TreeCaps(uint32_t v, const std::string& arch, double out[3])
{
    // Ampere: {24.0, 22.5, 16.0} up to 2.9, {24.0, 23.6, 17.8} from 2.10. Hopper took the
    // Ampere row (compCap >= 80) until 2.16, its own {38.7, 41.4, 33.0} in 2.17 - 2.18 and
    // {38.7, 41.4, 36.0} from 2.19.
    const double ampereOld[3] = {24.0, 22.5, 16.0};
    const double ampere[3] = {24.0, 23.6, 17.8};
    const double hopper17[3] = {38.7, 41.4, 33.0};
    const double hopper[3] = {38.7, 41.4, 36.0};
    const double* row = nullptr;
    if (arch == "ampere" || (arch == "hopper" && v < 21700))
    {
        row = v < 21000 ? ampereOld : ampere;
    }
    else if (arch == "hopper")
    {
        row = v < 21900 ? hopper17 : hopper;
    }
    for (int i = 0; i < 3; ++i)
    {
        out[i] = row ? row[i] : 0.0;
    }
}

} // namespace

bool
ParseNcclVersion(const std::string& text, uint32_t& code)
{
    // "2.MINOR" or "2.MINOR.PATCH", one or two digits each (the tuner calls this per plan:
    // no regex).
    uint32_t parts[3] = {0, 0, 0};
    int part = 0;
    int digits = 0;
    for (char c : text)
    {
        if (c >= '0' && c <= '9' && digits < 2)
        {
            parts[part] = parts[part] * 10 + uint32_t(c - '0');
            ++digits;
        }
        else if (c == '.' && digits > 0 && part < 2)
        {
            ++part;
            digits = 0;
        }
        else
        {
            return false;
        }
    }
    if (digits == 0 || part == 0 || parts[0] != 2 || parts[1] < 8 || parts[1] > 29)
    {
        return false;
    }
    code = 20000 + parts[1] * 100 + parts[2];
    return true;
}

std::string
ModelledNcclVersions()
{
    return "2.8 - 2.29, e.g. 2.22.3";
}

NcclSelectionModel
NcclSelectionFor(const std::string& version, const std::string& arch)
{
    NcclSelectionModel s;
    uint32_t v = 22602; // the executor's release
    if (!version.empty() && !ParseNcclVersion(version, v))
    {
        throw std::invalid_argument("unknown NCCL version '" + version + "' (modelled: " +
                                    ModelledNcclVersions() + ")");
    }
    s.version = v;
    const Constants c = ConstantsOf(v);
    // Tree and ring rows; NVLS and NVLSTree keep the executor's estimate in every release.
    const NcclAlgo rows[2] = {NcclAlgo::Tree, NcclAlgo::Ring};
    for (int r = 0; r < 2; ++r)
    {
        const int a = int(rows[r]);
        for (int p = 0; p < kNcclProtos; ++p)
        {
            s.baseDeltaUs[a][p] = c.base[r][p] - kExecutor.base[r][p];
            s.hopDeltaUs[int(NcclHop::Intra)][a][p] = c.nvlink[r][p] - kExecutor.nvlink[r][p];
            s.hopDeltaUs[int(NcclHop::Inter)][a][p] = c.net[r][p] - kExecutor.net[r][p];
        }
    }
    TreeCaps(v, arch, s.treeChannelGBps);
    // perChMaxTreeLL128Bws / perChMaxRingLL128Bws, from v2.18.3-1 on: Ampere 20 everywhere;
    // Hopper rings 36.7, trees 36.7 on 1 - 2 nodes and 29.0 beyond.
    if (v >= 21803 && (arch == "ampere" || arch == "hopper"))
    {
        const bool hopper = arch == "hopper";
        for (int i = 0; i < 3; ++i)
        {
            s.ringLl128ChannelGBps[i] = hopper ? 36.7 : 20.0;
            s.treeLl128ChannelGBps[i] = hopper ? (i == 2 ? 29.0 : 36.7) : 20.0;
        }
    }
    return s;
}

} // namespace gpusim
} // namespace ns3
