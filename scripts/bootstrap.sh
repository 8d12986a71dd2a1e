#!/usr/bin/env bash
# Installs gpusim's build dependencies from Debian's packages (only those missing) and builds
# gpusim into ./build. Safe to run again: a second run only rebuilds what changed.
#
#   scripts/bootstrap.sh          # against Debian's libns3-dev (also after a --mpi build)
#   scripts/bootstrap.sh --mpi    # also builds ns-3 3.37 with its distributed (MPI) simulator
#                                 # from Debian's source package into build/ns3-mpi (once,
#                                 # cached) and links gpusim to it (doc/packet-backend.md,
#                                 # "Distributed runs (MPI)")
set -euo pipefail
cd "$(dirname "$0")/.."

MPI=0
for a in "$@"; do
  case "$a" in
    --mpi) MPI=1 ;;
    *) echo "bootstrap: unknown option '$a' (known: --mpi)" >&2; exit 1 ;;
  esac
done

PACKAGES=(
  cmake ninja-build g++ ccache pkg-config
  libns3-dev ns3                       # ns-3 3.37; 'ns3' provides files find_package(ns3) checks
  libgsl-dev libsqlite3-dev libxml2-dev libpython3.11-dev libboost-dev  # needed by ns-3's CMake targets
  libgtest-dev libgmock-dev libbenchmark-dev
  libsimdjson-dev libyaml-cpp-dev zlib1g-dev
  libprotobuf-dev protobuf-compiler     # Chakra execution traces (model/proto/chakra-et.proto)
  libjemalloc-dev                       # the gpusim program's allocator (contrib/gpusim/CMakeLists.txt)
  openmpi-bin libopenmpi-dev            # mpirun-launched programs on the shim (shim/test/mpi_train.cc)
)
if ((MPI)); then
  PACKAGES+=(curl dpkg-dev bzip2 xz-utils)  # fetch and unpack Debian's ns3 source package
fi

missing=()
for p in "${PACKAGES[@]}"; do
  [[ "$p" == \#* ]] && continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Debian's ns-3, or (--mpi) ns-3 with MPI built once into build/ns3-mpi.
MPI_ARGS=(-DGPUSIM_NS3_MPI=OFF)
if ((MPI)); then
  bash scripts/build-ns3-mpi.sh "$(nproc)"
  MPI_ARGS=(-DGPUSIM_NS3_MPI="$PWD/build/ns3-mpi/install")
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${MPI_ARGS[@]}" >/dev/null
cmake --build build -j"$(nproc)"
