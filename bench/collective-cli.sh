#!/usr/bin/env bash
# gpusim collective benchmark (doc/flow-backend.md, "Automatic fidelity"): wall time, CPU time
# and peak memory of `gpusim collective --servers N --bytes 1G` with the defaults (dgx-h100,
# the tuner's algorithm, --fidelity auto), against --fidelity chunk (the detailed model) and
# with the ring forced. Each case runs once under a time limit (LIMIT_S, default 600 s); a case
# past the limit prints "timeout". SERVERS (default 128: 1,024 GPUs) picks the cluster.
#   bench/collective-cli.sh [BUILD_DIR]
set -uo pipefail
B=${1:-build}
G=$B/bin/gpusim
LIMIT=${LIMIT_S:-600}
N=${SERVERS:-128}
echo "# machine: $(nproc) cores, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-44s %5s %9s %12s %8s %8s %8s  %s\n" "case" "gpus" "algo" "time_us" "wall_s" "cpu_s" \
  "RSS_MiB" "fidelity"
run_case() { # name, args...
  local name=$1; shift
  local out rc
  out=$( { /usr/bin/time -f "RSS %M WALL %e CPU %U %S" timeout "$LIMIT" "$G" collective \
          --servers "$N" --bytes 1G --quiet "$@"; } 2>&1 )
  rc=$?
  local wall cpu rss algo us fid
  wall=$(echo "$out" | awk '/^RSS/ {print $4}')
  cpu=$(echo "$out" | awk '/^RSS/ {printf "%.2f", $6 + $7}')
  rss=$(echo "$out" | awk '/^RSS/ {printf "%.0f", $2/1024}')
  algo=$(echo "$out" | awk '/^ *1073741824/ {print $6}')
  us=$(echo "$out" | awk '/^ *1073741824/ {print $9}')
  fid=$(echo "$out" | sed -n 's/^# fidelity: //p' | cut -c1-60)
  if [ "$rc" = 124 ]; then us=timeout; fi
  printf "%-44s %5s %9s %12s %8s %8s %8s  %s\n" "$name" "$((N * 8))" "${algo:--}" "${us:--}" \
    "${wall:--}" "${cpu:--}" "${rss:--}" "${fid:--}"
}
run_case "defaults (auto)"
run_case "--fidelity chunk" --fidelity chunk
run_case "--algo ring (auto)" --algo ring
run_case "--algo ring --fidelity chunk" --algo ring --fidelity chunk
