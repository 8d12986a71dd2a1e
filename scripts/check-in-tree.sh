#!/usr/bin/env bash
# Builds contrib/gpusim inside an ns-3 (>= 3.36, CMake) source tree and runs its CLI and an
# example there. Not part of CI (it compiles ns-3's core modules: ~20 min on 2 cores).
#   scripts/check-in-tree.sh /path/to/ns-3.37
# Debian's ns-3 sources: add a deb-src line for bookworm, then `apt-get source ns3`.
set -euo pipefail
ns3="${1:?usage: $0 /path/to/ns-3-tree}"
here="$(cd "$(dirname "$0")/.." && pwd)"
rm -rf "$ns3/contrib/gpusim"
cp -r "$here/contrib/gpusim" "$ns3/contrib/gpusim"
cd "$ns3"
cmake -S . -B cmake-cache -G Ninja -DCMAKE_BUILD_TYPE=release \
  -DNS3_ENABLED_MODULES="gpusim;csma" -DNS3_EXAMPLES=ON -DNS3_TESTS=OFF >/dev/null
cmake --build cmake-cache -j"$(nproc)" --target libgpusim gpusim data-parallel-overlap collective-cc-study
export LD_LIBRARY_PATH="$ns3/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$ns3"/build/ns3.*-gpusim collective --servers 2 --bytes 64M --quiet
"$ns3"/build/contrib/gpusim/examples/ns3.*-data-parallel-overlap --layers=4
