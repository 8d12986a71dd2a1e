/*
 * Fuzz target for the model YAML reader (ParseModelSpecYaml; `--model FILE`), then
 * ValidateModel on what it read.
 * Any input must either parse or throw std::runtime_error (yaml-cpp's errors are
 * std::runtime_errors too); ValidateModel may throw std::invalid_argument; nothing may crash.
 * With clang: libFuzzer target; otherwise `gpusim-model-yaml-fuzz-driver FILE...`
 * (doc/fuzzing.md).
 */
#include "ns3/llm-model.h"

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
    ModelSpec m;
    try
    {
        m = ParseModelSpecYaml(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    }
    catch (const std::runtime_error&)
    {
        return 0; // expected for malformed input
    }
    try
    {
        ValidateModel(m);
    }
    catch (const std::invalid_argument&)
    {
        // Expected for a model that does not divide.
    }
    return 0;
}
