/*
 * Fuzz target for `gpusim validate-training`'s table reader (ReadTrainingValidation: the JSON
 * tables of test/data/megatron-lm-2021-throughput.json's shape). The reader takes a file: each
 * input is written to a file under /tmp.
 * Any input must either be read or throw std::runtime_error; nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-validate-training-table-fuzz-driver FILE...`
 * (doc/fuzzing.md).
 */
#include "ns3/validate-training-command.h"

#include "fuzz-driver.h"

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
        ReadTrainingValidation(gpusim_fuzz::InputFile(data, size, ".json"), "");
    }
    catch (const std::runtime_error&)
    {
        // Expected for malformed input.
    }
    return 0;
}
