#!/usr/bin/env bash
# Builds ns-3 3.37 with its distributed (MPI) simulator from Debian's source package (3.37-2,
# Debian's patches applied) against Debian's OpenMPI, only the modules gpusim links plus mpi,
# and installs it into build/ns3-mpi/install. Debian's libns3-dev is built with --disable-mpi.
# Called by `scripts/bootstrap.sh --mpi`; skipped when build/ns3-mpi/install/.gpusim-stamp
# says the same version and options were built.
#
#   scripts/build-ns3-mpi.sh [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=3.37
DEBIAN_REVISION=2
MIRROR=${GPUSIM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
POOL="$MIRROR/pool/main/n/ns3"
# From Debian's signed ns3_3.37-2.dsc (bookworm).
ORIG_SHA256=dfa5ca1994ff3dbe1d4b23cef54e05e6079f5707a2ed6055f717bdd5b458c38d
DEBIAN_SHA256=da1db3d31b04843df1d73b0cfc0a1008eaec193ca74bab9e086e1d53a8014c10
MODULES="core;network;internet;point-to-point;applications;traffic-control;flow-monitor;mpi"

ROOT=$PWD/build/ns3-mpi
PREFIX=$ROOT/install
STAMP=$PREFIX/.gpusim-stamp
JOBS=${1:-$(nproc)}
WANT="ns3 $VERSION-$DEBIAN_REVISION modules=$MODULES mpi=on profile=release logs=on msg=131072 rpath"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  echo "build-ns3-mpi: ns-3 $VERSION with MPI already in $PREFIX" >&2
  exit 0
fi
command -v mpicxx >/dev/null || { echo "build-ns3-mpi: mpicxx missing (apt install libopenmpi-dev openmpi-bin)" >&2; exit 1; }

mkdir -p "$ROOT"
cd "$ROOT"
DSC=ns3_$VERSION-$DEBIAN_REVISION.dsc
ORIG=ns3_$VERSION.orig.tar.bz2
DEBTAR=ns3_$VERSION-$DEBIAN_REVISION.debian.tar.xz
if [ ! -d src ]; then
  # The source package (what `apt-get source ns3=3.37-2` fetches), without needing a deb-src
  # entry in the system's apt sources.
  for f in "$DSC" "$ORIG" "$DEBTAR"; do
    if [ ! -f "$f" ]; then
      # Exit status 3: the source package is unreachable (.ci/run says so and skips the MPI tests).
      curl -fsSL --retry 3 -o "$f.part" "$POOL/$f" || { echo "build-ns3-mpi: could not download $POOL/$f" >&2; exit 3; }
      mv -f "$f.part" "$f"
    fi
  done
  echo "$ORIG_SHA256  $ORIG" | sha256sum -c --quiet
  echo "$DEBIAN_SHA256  $DEBTAR" | sha256sum -c --quiet
  # Unpacks the upstream tarball and applies debian/patches (quilt series).
  dpkg-source --no-check -x "$DSC" src.part >/dev/null
  mv src.part src
fi
NS3_SRC=$ROOT/src/ns-$VERSION
# gpusim's one change on top of Debian's patches: ns-3's MPI receive buffers hold 2,000 bytes
# per message, less than one jumbo frame's serialized packet (MTU up to 9,000 here); 128 KiB
# holds any IPv4 packet with its tags and metadata.
for f in "$NS3_SRC/src/mpi/model/granted-time-window-mpi-interface.h" \
         "$NS3_SRC/src/mpi/model/null-message-mpi-interface.cc"; do
  sed -i -E 's/(MAX_MPI_MSG_SIZE = )2000;/\1131072; \/\/ gpusim: was 2000/' "$f"
done

# Debian's release profile (debian/rules: ./ns3 configure --build-profile=release --enable-logs),
# with MPI on and only the modules gpusim needs; no examples, tests or bindings.
cmake -S "$NS3_SRC" -B "$ROOT/obj" -G Ninja \
  -DCMAKE_BUILD_TYPE=release -DNS3_ASSERT=OFF -DNS3_LOG=ON -DNS3_WARNINGS_AS_ERRORS=OFF \
  -DNS3_MPI=ON -DNS3_ENABLED_MODULES="$MODULES" \
  -DNS3_EXAMPLES=OFF -DNS3_TESTS=OFF -DNS3_PYTHON_BINDINGS=OFF -DNS3_VISUALIZER=OFF \
  -DNS3_GTK3=OFF -DNS3_NETANIM=OFF -DNS3_ENABLE_SUDO=OFF -DNS3_NATIVE_OPTIMIZATIONS=OFF \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_INSTALL_RPATH="$PREFIX/lib" >/dev/null
start=$(date +%s)
nice cmake --build "$ROOT/obj" -j"$JOBS"
cmake --install "$ROOT/obj" >/dev/null
echo "$WANT" >"$STAMP"
echo "build-ns3-mpi: ns-3 $VERSION with MPI built in $(($(date +%s) - start)) s, installed in $PREFIX" >&2
