#include "ns3/byte-size.h"

#include <cmath>
#include <cstdio>
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

std::string
FormatByteSize(uint64_t bytes)
{
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(bytes);
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0]))
    {
        v /= 1024;
        ++u;
    }
    char text[32];
    if (v == static_cast<double>(static_cast<uint64_t>(v)))
    {
        std::snprintf(text, sizeof(text), "%llu %s", static_cast<unsigned long long>(v), units[u]);
    }
    else
    {
        std::snprintf(text, sizeof(text), "%.2f %s", v, units[u]);
    }
    return text;
}

} // namespace gpusim
} // namespace ns3
