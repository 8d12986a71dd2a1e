/*
 * Stragglers: a GPU whose kernels run slower from some simulated time on (a clock drop, thermal
 * throttling). Written "GPU=2x@2ms" (kernels starting at or after 2 ms take twice their
 * modelled time) or "GPU=50%@2ms" (the clock at 50 %: the same); applied through GpuNode's
 * SlowdownFactor / SlowdownStart attributes (GpuClusterHelper::Create).
 */
#ifndef GPUSIM_STRAGGLER_H
#define GPUSIM_STRAGGLER_H

#include "ns3/nstime.h"

#include <cstdint>
#include <string>

namespace ns3
{
namespace gpusim
{

struct StragglerSpec
{
    uint32_t gpu = 0;   //!< global GPU index (server-major; rank r runs on GPU r by default)
    double factor = 1;  //!< kernel durations are multiplied by this (> 0)
    Time at;            //!< kernels starting at or after this time are slowed
    std::string item;   //!< the text it came from (error messages)
};

/// Parses "GPU=Fx@T" (F times slower) or "GPU=P%@T" (clock at P %: 100/P times slower).
/// Throws std::invalid_argument naming the item on bad syntax or a factor <= 0.
StragglerSpec ParseStraggler(const std::string& item);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_STRAGGLER_H
