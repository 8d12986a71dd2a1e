/*
 * What the files of LiveJobSource (live-job-source.h) share: the exception that ends a live run
 * (thrown in one file, caught by Run() in another), reading /proc, the Warning messages' printf,
 * the wall clock and the accessors of a program thread's op ring (live-ring-layout.h).
 * Internal: included by relative name from model/ and not staged or installed as an ns3/
 * header.
 */
#ifndef GPUSIM_LIVE_JOB_SOURCE_INTERNAL_H
#define GPUSIM_LIVE_JOB_SOURCE_INTERNAL_H

#include "ns3/live-ring-layout.h"

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ns3
{
namespace live_internal
{

/// Ends a live run early (timeout, interrupt, a program breaking the protocol).
struct LiveRunEnded : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

/// The fields of a /proc/.../stat file after the command name, which may hold spaces and
/// parentheses: "S 1234 ..." (state, parent pid, ...); "" when it cannot be read.
inline std::string
StatFieldsAfterName(const char* path)
{
    FILE* f = std::fopen(path, "r");
    if (!f)
    {
        return "";
    }
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* close = std::strrchr(buf, ')');
    return close && close[1] == ' ' ? std::string(close + 2) : std::string();
}

/// printf into a string (the messages of the Warning trace source).
__attribute__((format(printf, 1, 2))) inline std::string
Format(const char* fmt, ...)
{
    char buf[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    return buf;
}

inline double
WallSeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The shared op ring of a program thread (layout: live-ring-layout.h).
constexpr size_t kRingHeader = gpusim_live_ring::kData;
inline uint64_t*
RingHead(char* ring)
{
    return reinterpret_cast<uint64_t*>(ring + gpusim_live_ring::kHead);
}
inline uint64_t*
RingTail(char* ring)
{
    return reinterpret_cast<uint64_t*>(ring + gpusim_live_ring::kTail);
}
inline uint32_t*
RingSleeping(char* ring)
{
    return reinterpret_cast<uint32_t*>(ring + gpusim_live_ring::kSleeping);
}
inline uint32_t
RingCapacity(char* ring)
{
    return *reinterpret_cast<uint32_t*>(ring + gpusim_live_ring::kCapacity);
}
/// Times the simulation stopped waiting for the thread (it tells the thread that the time
/// until its next call was a wait, not host work).
inline uint32_t*
RingLifts(char* ring)
{
    return reinterpret_cast<uint32_t*>(ring + gpusim_live_ring::kLifts);
}

} // namespace live_internal
} // namespace ns3

#endif // GPUSIM_LIVE_JOB_SOURCE_INTERNAL_H
