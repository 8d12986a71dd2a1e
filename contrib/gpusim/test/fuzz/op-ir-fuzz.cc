/*
 * Fuzz target for the Op IR line reader (gpusim trace directories' rank files and the ops of
 * live mode): every line of the input goes through ParseOpLine; an op that parses is written
 * back with OpToJsonLine, which must parse again.
 * Any line must either parse or throw TraceFormatError; nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-op-ir-fuzz-driver FILE...` (doc/fuzzing.md).
 */
#include "ns3/op-ir.h"

#include "fuzz-driver.h"

#include <cstdlib>
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
    for (size_t start = 0; start <= text.size();)
    {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos)
        {
            nl = text.size();
        }
        ++lineNo;
        Op op;
        bool parsed = false;
        try
        {
            op = ParseOpLine(text.data() + start, nl - start, "fuzz", lineNo);
            parsed = true;
        }
        catch (const TraceFormatError&)
        {
            // Expected for malformed input.
        }
        if (parsed)
        {
            // What the writer makes of a parsed op, the reader must take back.
            const std::string again = OpToJsonLine(op);
            try
            {
                ParseOpLine(again, "fuzz (rewritten)", lineNo);
            }
            catch (const TraceFormatError& e)
            {
                std::fprintf(stderr, "rewritten op does not parse: %s\n%s\n", e.what(),
                             again.c_str());
                std::abort();
            }
        }
        start = nl + 1;
    }
    return 0;
}
