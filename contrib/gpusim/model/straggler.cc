#include "ns3/straggler.h"

#include "ns3/fabric-event.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

StragglerSpec
ParseStraggler(const std::string& item)
{
    auto bad = [&](const std::string& what) {
        return std::invalid_argument("straggler '" + item + "': " + what);
    };
    const auto eq = item.find('=');
    const auto at = item.rfind('@');
    if (eq == std::string::npos || at == std::string::npos || at < eq || eq == 0)
    {
        throw bad("expected GPU=FACTORx@TIME or GPU=CLOCK%@TIME (e.g. 3=2x@2ms, 3=50%@2ms)");
    }
    StragglerSpec s;
    s.item = item;
    const std::string gpu = item.substr(0, eq);
    char* end = nullptr;
    const unsigned long g = std::strtoul(gpu.c_str(), &end, 10);
    if (gpu.empty() || *end != '\0' || gpu[0] == '-' || g > UINT32_MAX)
    {
        throw bad("GPU '" + gpu + "' is not a GPU index");
    }
    s.gpu = static_cast<uint32_t>(g);
    std::string f = item.substr(eq + 1, at - eq - 1);
    const bool percent = !f.empty() && f.back() == '%';
    const bool times = !f.empty() && f.back() == 'x';
    if (!percent && !times)
    {
        throw bad("factor '" + f + "' needs a unit: 'x' (times slower) or '%' (clock)");
    }
    f.pop_back();
    const double v = std::strtod(f.c_str(), &end);
    if (f.empty() || *end != '\0' || !std::isfinite(v))
    {
        throw bad("factor '" + f + "' is not a number");
    }
    if (v <= 0)
    {
        throw bad("factor must be > 0, got " + f);
    }
    s.factor = percent ? 100.0 / v : v;
    s.at = ParseEventTime(item.substr(at + 1), "straggler '" + item + "'");
    return s;
}

} // namespace gpusim
} // namespace ns3
