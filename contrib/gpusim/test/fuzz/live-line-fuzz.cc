/*
 * Fuzz target for the live-mode wire protocol: every line of the input goes through
 * ParseLiveLine (the syntax LiveJobSource::HandleLine checks) and, for an op line, the op's
 * JSON through ParseOpLine, as HandleLine does.
 * Any line must either parse or throw std::runtime_error (TraceFormatError for the op's JSON);
 * nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-live-line-fuzz-driver FILE...`
 * (doc/fuzzing.md).
 */
#include "ns3/live-job-source.h"
#include "ns3/op-ir.h"

#include "fuzz-driver.h"

#include <stdexcept>
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
    const std::string text(reinterpret_cast<const char*>(data), size);
    uint64_t lineNo = 0;
    for (size_t start = 0; start < text.size();)
    {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos)
        {
            nl = text.size();
        }
        const std::string_view line(text.data() + start, nl - start);
        start = nl + 1;
        if (line.empty())
        {
            continue; // a wake-up byte
        }
        ++lineNo;
        try
        {
            const ns3::LiveLine msg = ns3::ParseLiveLine(line, 16, "fuzz", lineNo);
            if (msg.kind != 'H')
            {
                ParseOpLine(msg.json.data(), msg.json.size(), "fuzz", lineNo);
            }
        }
        catch (const std::runtime_error&)
        {
            // Expected for malformed input.
        }
    }
    return 0;
}
