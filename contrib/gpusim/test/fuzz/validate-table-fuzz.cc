/*
 * Fuzz target for `gpusim validate`'s table reader (ReadValidationTables: the JSON tables of
 * ../shared/data/nccl-tests/published.json's shape, with their cluster objects or hardware
 * text). The reader takes a file: each input is written to a file under /tmp.
 * Any input must either be read or throw std::runtime_error; nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-validate-table-fuzz-driver FILE...`
 * (doc/fuzzing.md).
 */
#include "ns3/validate-command.h"

#include "fuzz-driver.h"

#include <limits>
#include <stdexcept>
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
        ReadValidationTables(gpusim_fuzz::InputFile(data, size, ".json"), 0,
                             std::numeric_limits<uint64_t>::max(), "");
    }
    catch (const std::runtime_error&)
    {
        // Expected for malformed input.
    }
    return 0;
}
