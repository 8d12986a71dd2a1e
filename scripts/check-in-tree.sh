#!/usr/bin/env bash
# Builds contrib/gpusim inside an ns-3 (>= 3.36, CMake) source tree, runs its CLI and an example
# there, and runs its tests the three ways an ns-3 tree runs tests: ns-3's test.py (suite
# "gpusim"), ctest (ctest-gpusim-tests) and the GoogleTest program itself.
# Not part of CI (it compiles ns-3's core modules: 20-60 min on 2 cores).
#   scripts/check-in-tree.sh /path/to/ns-3.37 [/path/to/shared]
# Debian's ns-3 sources: add deb-src to the apt sources, then `apt-get source ns3`.
set -euo pipefail
ns3="${1:?usage: $0 /path/to/ns-3-tree [/path/to/shared]}"
here="$(cd "$(dirname "$0")/.." && pwd)"
shared="${2:-$here/../shared}"
rm -rf "$ns3/contrib/gpusim"
cp -r "$here/contrib/gpusim" "$ns3/contrib/gpusim"
cd "$ns3"
cmake -S . -B cmake-cache -G Ninja -DCMAKE_BUILD_TYPE=release \
  -DNS3_ENABLED_MODULES="gpusim;csma" -DNS3_EXAMPLES=ON -DNS3_TESTS=ON \
  -DNS3_FILTER_MODULE_EXAMPLES_AND_TESTS=gpusim -DGPUSIM_SHARED_DIR="$shared" >/dev/null
cmake --build cmake-cache -j"$(nproc)" --target libgpusim gpusim gpusim-tests test-runner \
  data-parallel-overlap collective-cc-study
export LD_LIBRARY_PATH="$ns3/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$ns3"/build/ns3.*-gpusim collective --servers 2 --bytes 64M --quiet
"$ns3"/build/contrib/gpusim/examples/ns3.*-data-parallel-overlap --layers=4
# ns-3's own test runner: the "gpusim" suite runs the GoogleTest program and names failures.
"$ns3"/build/utils/ns3.*-test-runner* --suite=gpusim --verbose
(cd cmake-cache && ctest -R ctest-gpusim-tests --output-on-failure)
