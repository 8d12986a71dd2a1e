/*
 * Fuzz target for the kernel table reader (LoadKernelTable; ProfileTableCostModel's TableFile,
 * `--kernel-table FILE`). The reader takes a file: each input is written to a file under /tmp.
 * Any input must either be read or throw TraceFormatError; nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-kernel-table-fuzz-driver FILE...`
 * (doc/fuzzing.md).
 */
#include "ns3/op-ir.h"
#include "ns3/profile-table-cost-model.h"

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
        LoadKernelTable(gpusim_fuzz::InputFile(data, size, ".json"));
    }
    catch (const TraceFormatError&)
    {
        // Expected for malformed input.
    }
    return 0;
}
