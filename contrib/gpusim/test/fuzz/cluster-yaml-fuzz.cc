/*
 * Fuzz target for the cluster YAML reader (ParseClusterSpecYaml; `--cluster FILE`).
 * Any input must either parse or throw std::runtime_error (yaml-cpp's errors are
 * std::runtime_errors too); nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-cluster-yaml-fuzz-driver FILE...`
 * (doc/fuzzing.md).
 */
#include "ns3/cluster-spec.h"

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
    try
    {
        ParseClusterSpecYaml(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    }
    catch (const std::runtime_error&)
    {
        // Expected for malformed input.
    }
    return 0;
}
