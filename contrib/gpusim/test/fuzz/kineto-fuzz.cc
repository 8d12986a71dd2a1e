/*
 * Fuzz target for the Kineto reader, graph builder, conversion and quick replay.
 * With clang it is a libFuzzer target (GPUSIM_LIBFUZZER defined, -fsanitize=fuzzer); with
 * other compilers it is a plain driver: `gpusim-kineto-fuzz-driver FILE...` feeds each file
 * (plain JSON bytes, no gzip) through the same function.
 * Any input must either parse or throw TraceFormatError; nothing may crash.
 */
#include "ns3/kineto-quick-replay.h"
#include "ns3/kineto-trace.h"

#include "fuzz-driver.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

using namespace ns3::gpusim;

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size > (1u << 20))
    {
        return 0;
    }
    std::string text(reinterpret_cast<const char*>(data), size);
    try
    {
        KinetoTrace trace = ParseKinetoJson(text, "fuzz");
        KinetoGraph graph = BuildKinetoGraph(trace);
        RankTrace rank = KinetoToRankTrace(trace, graph);
        ReplayRecordedDurations(rank);
        KinetoGraphOptions off;
        off.cpuCpu = off.cpuGpu = off.gpuCpu = off.gpuGpu = false;
        ReplayRecordedDurations(KinetoToRankTrace(trace, BuildKinetoGraph(trace, off)));
    }
    catch (const TraceFormatError&)
    {
        // Expected for malformed input.
    }
    return 0;
}
