#include "ns3/nccl-calibration.h"

#include "ns3/nccl-version.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

bool
ParseNcclAlgo(const std::string& name, NcclAlgo& out)
{
    if (name == "tree")
    {
        out = NcclAlgo::Tree;
    }
    else if (name == "ring" || name == "chain" || name == "direct" || name == "p2p")
    {
        out = NcclAlgo::Ring;
    }
    else if (name == "nvls")
    {
        out = NcclAlgo::Nvls;
    }
    else if (name == "nvlstree")
    {
        out = NcclAlgo::NvlsTree;
    }
    else
    {
        return false;
    }
    return true;
}

bool
ParseNcclProto(const std::string& name, NcclProto& out)
{
    if (name == "simple")
    {
        out = NcclProto::Simple;
    }
    else if (name == "ll128")
    {
        out = NcclProto::LL128;
    }
    else if (name == "ll")
    {
        out = NcclProto::LL;
    }
    else
    {
        return false;
    }
    return true;
}

void
ValidateNcclCalibration(const NcclCalibration& c)
{
    auto fail = [&c](const std::string& what, double v) {
        std::ostringstream os;
        os << "NCCL calibration '" << c.name << "': " << what << " (got " << v << ")";
        throw std::runtime_error(os.str());
    };
    auto fraction = [&](double v, const char* what) {
        if (!(v > 0 && v <= 1) || !std::isfinite(v))
        {
            fail(std::string(what) + " must be in (0, 1]", v);
        }
    };
    fraction(c.nvlinkEfficiency, "nvlinkEfficiency");
    fraction(c.netEfficiency, "netEfficiency");
    if (c.nvls)
    {
        fraction(c.nvlsEfficiency, "nvlsEfficiency");
        if (c.nvlsChannels == 0 || c.nvlsChunkBytes < 1024)
        {
            fail("NVLS needs nvlsChannels >= 1 and nvlsChunkBytes >= 1024",
                 double(c.nvlsChannels));
        }
    }
    if (c.p2pChannels == 0 || c.p2pChannels > 64 || (c.p2pChannels & (c.p2pChannels - 1)) != 0)
    {
        fail("p2pChannels must be a power of two from 1 to 64", double(c.p2pChannels));
    }
    for (int a = 0; a < kNcclAlgos; ++a)
    {
        for (int p = 0; p < kNcclProtos; ++p)
        {
            fraction(c.protoFactor[a][p], "protocol factors");
            for (double v : {c.baseUs[a][p], c.hopUs[0][a][p], c.hopUs[1][a][p]})
            {
                if (!(v >= 0) || !std::isfinite(v))
                {
                    fail("latencies must be non-negative", v);
                }
            }
        }
    }
    if (!(c.netSelectionUs >= 0) || !std::isfinite(c.netSelectionUs))
    {
        fail("netSelectionUs must be non-negative", c.netSelectionUs);
    }
    for (double v : c.llMaxBusGBps)
    {
        if (!(v >= 0) || !std::isfinite(v))
        {
            fail("LL bandwidth caps must be non-negative", v);
        }
    }
    uint32_t version = 0;
    if (!c.ncclVersion.empty() && !ParseNcclVersion(c.ncclVersion, version))
    {
        throw std::runtime_error("NCCL calibration '" + c.name + "': unknown NCCL version '" +
                                 c.ncclVersion + "' (modelled: " + ModelledNcclVersions() + ")");
    }
    if (!c.arch.empty() && c.arch != "ampere" && c.arch != "hopper")
    {
        throw std::runtime_error("NCCL calibration '" + c.name + "': unknown arch '" + c.arch +
                                 "' (ampere, hopper)");
    }
    if (c.graphChannels > 32)
    {
        fail("graphChannels must be at most 32 (NCCL's MAXCHANNELS / 2)", c.graphChannels);
    }
}

} // namespace gpusim
} // namespace ns3
