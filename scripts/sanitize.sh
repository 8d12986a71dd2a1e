#!/bin/sh
# AddressSanitizer + UndefinedBehaviorSanitizer runs (doc/hardening.md).
#   scripts/sanitize.sh [CTEST ARGS]   the module, the gpusim program, the examples and the
#       whole test suite, built in build-asan/ (the LD_PRELOADed shim stays uninstrumented:
#       an instrumented one cannot be preloaded into uninstrumented programs, see CMakeLists.txt)
#   scripts/sanitize.sh --shim          the shim instrumented too (build-asan-shim/), with its
#       tests that link it directly (no LD_PRELOAD into an uninstrumented program)
set -e
cd "$(dirname "$0")/.."
# Leaks count as failures; any UB report stops the process (-fno-sanitize-recover=all).
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$(pwd)/scripts/lsan.supp:print_suppressions=0}"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
if [ "$1" = "--shim" ]; then
  shift
  cmake -S . -B build-asan-shim -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGPUSIM_SANITIZE=address,undefined -DGPUSIM_SANITIZE_SHIM=ON -DGPUSIM_BUILD_BENCH=OFF
  ninja -C build-asan-shim -j"${JOBS:-2}" shim_runtime_test shim_recorder_test shim_nvtx_test \
    shim_cudnn_test
  cd build-asan-shim
  exec ctest --output-on-failure -j"${JOBS:-2}" \
    -R '^shim_(runtime|runtime_a100|recorder|nvtx|cudnn|cudnn_unrecorded)(_clean)?$' "$@"
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUSIM_SANITIZE=address,undefined -DGPUSIM_BUILD_BENCH=OFF
ninja -C build-asan -j"${JOBS:-2}"
cd build-asan
exec ctest --output-on-failure -j"${JOBS:-2}" "$@"
