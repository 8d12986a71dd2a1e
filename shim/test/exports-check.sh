#!/bin/sh
# Every function an NVIDIA library (libcudart.so.13, libcudnn.so.9) exports must be exported by
# the shim's, in the same version node (the library's SONAME), so that no program fails to
# load. The exceptions are internal hooks NVIDIA's own libraries use and cudaCreateChannelDesc
# (returns a struct by value; see doc/shim.md).
# usage: exports-check.sh NVIDIA_LIB SHIM_LIB
set -eu
exceptions='^(cudaCreateChannelDesc|cudaGetExportTable|__cudaGetProcAddress|__cudaRegisterUnifiedTable'
exceptions="$exceptions"'|cudnnGetBackdoor|cudnnSetBackdoor|cudnnSetBackdoorEx|cudnnGetRNNDropoutLocationsInternal)$'
node=$(objdump -p "$1" | awk '$1 == "SONAME" {print $2}')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objdump -T "$1" | awk -v n="$node" 'NF > 2 && $(NF-1) == n {print $NF}' | grep -E -v "$exceptions" | sort -u > "$tmp/want"
objdump -T "$2" | awk -v n="$node" 'NF > 2 && $(NF-1) == n && !/\*UND\*/ {print $NF}' | sort -u > "$tmp/have"
[ -s "$tmp/want" ] || { echo "no $node exports read from $1"; exit 1; }
comm -23 "$tmp/want" "$tmp/have" > "$tmp/missing"
if [ -s "$tmp/missing" ]; then
  echo "missing from the shim's $node:"
  cat "$tmp/missing"
  exit 1
fi
echo "all $(wc -l < "$tmp/want") NVIDIA $node exports present"
