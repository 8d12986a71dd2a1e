/*
 * Fuzz target for the Chakra ET reader and its conversion to the Op IR: the input is one rank
 * file (varint-length-prefixed protobuf messages, plain or gzip), read by ReadChakraFile and
 * converted as a one-rank job by ChakraToJobTrace (both p2p modes).
 * Any input must either be read or throw TraceFormatError; nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-chakra-fuzz-driver FILE...` (doc/fuzzing.md).
 */
#include "ns3/chakra-trace.h"
#include "ns3/op-ir.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

using namespace ns3::gpusim;

namespace
{
/// The reader takes a file: the input goes to one file per process, rewritten every run.
std::string
InputFile(const uint8_t* data, size_t size, const char* suffix)
{
    static const std::string path =
        "/tmp/gpusim-fuzz-" + std::to_string(static_cast<long>(getpid())) + suffix;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return path;
}
} // namespace

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
        job.ranks.push_back(ReadChakraFile(InputFile(data, size, ".0.et")));
        ChakraToJobTrace(job, ChakraP2p::Eager);
        ChakraToJobTrace(job, ChakraP2p::Rendezvous);
    }
    catch (const TraceFormatError&)
    {
        // Expected for malformed input.
    }
    return 0;
}

#ifndef GPUSIM_LIBFUZZER
int
main(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i)
    {
        std::ifstream in(argv[i], std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        std::printf("%s: ok\n", argv[i]);
    }
    return 0;
}
#endif
