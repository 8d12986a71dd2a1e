/*
 * What every fuzz target shares (doc/fuzzing.md): the input as a file for readers that take a
 * path, and, without libFuzzer (GPUSIM_LIBFUZZER undefined), a plain `main` that feeds each
 * file named on the command line through the target's LLVMFuzzerTestOneInput.
 */
#ifndef GPUSIM_FUZZ_DRIVER_H
#define GPUSIM_FUZZ_DRIVER_H

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace gpusim_fuzz
{

/// The reader takes a file: the input goes to one file per process, rewritten every run.
inline std::string
InputFile(const uint8_t* data, size_t size, const char* suffix)
{
    static const std::string path =
        "/tmp/gpusim-fuzz-" + std::to_string(static_cast<long>(getpid())) + suffix;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return path;
}

} // namespace gpusim_fuzz

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

#endif // GPUSIM_FUZZ_DRIVER_H
