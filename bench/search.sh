#!/usr/bin/env bash
# gpusim search benchmark (doc/search.md): wall time of a pruned and an exhaustive search of the
# same case, the plan counts and whether both found the same winner.
#   bench/search.sh [BUILD_DIR] [case]      case: llama8b-64 (default) | gpt3-1024 | gpt3-1024-dry
set -uo pipefail
B=${1:-build}
CASE=${2:-llama8b-64}
G=$B/bin/gpusim
LIMIT=${LIMIT_S:-900}
JOBS=${JOBS:-$(nproc)}
echo "# machine: $(nproc) cores, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg)"
case $CASE in
  llama8b-64) ARGS=(--model llama3-8b --preset dgx-h100 --servers 8 --global-batch 32) ;;
  gpt3-1024|gpt3-1024-dry) ARGS=(--model gpt3-175b --preset dgx-h100 --servers 128) ;;
  *) echo "unknown case $CASE" >&2; exit 1 ;;
esac
if [ "$CASE" = gpt3-1024-dry ]; then
  /usr/bin/time -f "# wall %e s, peak RSS %M KiB" "$G" search "${ARGS[@]}" --dry-run --top 20
  exit
fi
for mode in pruned exhaustive; do
  extra=(); [ $mode = exhaustive ] && extra=(--exhaustive)
  out=$( { /usr/bin/time -f "WALL %e" timeout "$LIMIT" "$G" search "${ARGS[@]}" --jobs "$JOBS" "${extra[@]}"; } 2>&1 )
  rc=$?
  echo "## $mode (rc $rc)"
  echo "$out" | grep -E "^# plans|^# best|^# wall|^WALL|^ +1 "
done
