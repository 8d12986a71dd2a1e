#!/bin/sh
# AddressSanitizer + UndefinedBehaviorSanitizer build of the module, the gpusim program, the
# examples and the tests in build-asan/, then the whole test suite under them (the shim stays
# uninstrumented: see CMakeLists.txt). Extra arguments go to ctest (e.g. -R Chakra).
set -e
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUSIM_SANITIZE=address,undefined -DGPUSIM_BUILD_BENCH=OFF
ninja -C build-asan -j"${JOBS:-2}"
# Leaks count as failures; any UB report stops the process (-fno-sanitize-recover=all).
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$(pwd)/scripts/lsan.supp:print_suppressions=0}"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
cd build-asan
exec ctest --output-on-failure -j"${JOBS:-2}" "$@"
