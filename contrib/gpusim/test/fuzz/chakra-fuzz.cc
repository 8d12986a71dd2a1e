/*
 * Fuzz target for the Chakra ET reader and its conversion to the Op IR: the input is one rank
 * file (varint-length-prefixed protobuf messages, plain or gzip), read by ReadChakraFile and
 * converted as a one-rank job by ChakraToJobTrace (both p2p modes).
 * Any input must either be read or throw TraceFormatError; nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-chakra-fuzz-driver FILE...` (doc/fuzzing.md).
 */
#include "ns3/chakra-trace.h"
#include "ns3/op-ir.h"

#include "fuzz-driver.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

using namespace ns3::gpusim;

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size > (1u << 20))
    {
        return 0;
    }
    try
    {
        ChakraJob job;
        job.ranks.push_back(ReadChakraFile(gpusim_fuzz::InputFile(data, size, ".0.et")));
        ChakraToJobTrace(job, ChakraP2p::Eager);
        ChakraToJobTrace(job, ChakraP2p::Rendezvous);
    }
    catch (const TraceFormatError&)
    {
        // Expected for malformed input.
    }
    return 0;
}
