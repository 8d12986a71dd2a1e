#!/bin/sh
# Every function NVIDIA's libcudart.so.13 exports must be exported by the shim's, in the same
# version node, so that no program fails to load. The exceptions are internal hooks NVIDIA's
# own libraries use and cudaCreateChannelDesc (returns a struct by value; see doc/shim.md).
# usage: exports-check.sh NVIDIA_LIB SHIM_LIB
set -eu
exceptions='^(cudaCreateChannelDesc|cudaGetExportTable|__cudaGetProcAddress|__cudaRegisterUnifiedTable)$'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objdump -T "$1" | awk 'NF > 2 && $(NF-1) == "libcudart.so.13" {print $NF}' | grep -E -v "$exceptions" | sort -u > "$tmp/want"
objdump -T "$2" | awk 'NF > 2 && $(NF-1) == "libcudart.so.13" && !/\*UND\*/ {print $NF}' | sort -u > "$tmp/have"
[ -s "$tmp/want" ] || { echo "no libcudart.so.13 exports read from $1"; exit 1; }
comm -23 "$tmp/want" "$tmp/have" > "$tmp/missing"
if [ -s "$tmp/missing" ]; then
  echo "missing from the shim's libcudart.so.13:"
  cat "$tmp/missing"
  exit 1
fi
echo "all $(wc -l < "$tmp/want") NVIDIA exports present"
