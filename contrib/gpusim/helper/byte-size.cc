#include "ns3/byte-size.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

uint64_t
ParseByteSize(const std::string& s)
{
    if (s.empty())
    {
        throw std::invalid_argument("empty size");
    }
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    std::string suffix(end);
    double mult = 1;
    if (suffix == "K" || suffix == "k" || suffix == "KiB" || suffix == "KB")
    {
        mult = 1024.0;
    }
    else if (suffix == "M" || suffix == "m" || suffix == "MiB" || suffix == "MB")
    {
        mult = 1024.0 * 1024;
    }
    else if (suffix == "G" || suffix == "g" || suffix == "GiB" || suffix == "GB")
    {
        mult = 1024.0 * 1024 * 1024;
    }
    else if (!suffix.empty() && suffix != "B")
    {
        throw std::invalid_argument("bad size '" + s + "' (use e.g. 8, 64K, 16M, 1G)");
    }
    if (end == s.c_str() || v < 0 || !std::isfinite(v))
    {
        throw std::invalid_argument("bad size '" + s + "'");
    }
    return static_cast<uint64_t>(std::llround(v * mult));
}

} // namespace gpusim
} // namespace ns3
