#!/usr/bin/env bash
# Live mode benchmark (doc/live-mode.md): wall time of `gpusim run` against `gpusim record` +
# `gpusim simulate` of the same program, the round trip of one blocking call, a 64-process run,
# the cost of the live path per non-blocking op (program side and simulator side), and the wall
# time per step of an 8-process GPT-2 124M-shaped trainer. Prints its own figures; run after
# building (cmake --build build).
#   bench/live-run.sh [BUILD_DIR]
set -euo pipefail
B=${1:-build}
G=$B/bin/gpusim
PERF=$B/shim/test/shim_live_perf
TRAIN=$B/shim/test/shim_train
GPT=$B/shim/test/shim_gpt_train
T=$(mktemp -d /tmp/gpusim-live-bench-XXXXXX)
trap 'rm -rf "$T"' EXIT
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc -l; }
best() { # best of 3 wall seconds of a command
  local b=999999
  for _ in 1 2 3; do
    local t0; t0=$(now); "$@" >/dev/null 2>&1; local t1; t1=$(now)
    local d; d=$(secs "$t0" "$t1"); b=$(echo "if ($d < $b) $d else $b" | bc -l)
  done
  printf "%.3f" "$b"
}

echo "# machine: $(nproc) cores, $(uname -m); best of 3 runs each"
echo "# 1. live vs record + simulate (same program, same cluster, fixed host time)"
printf "%-44s %9s %9s %9s %7s\n" "program" "run_s" "record_s" "simul_s" "ratio"
bench_pair() { # name, gpus, processes per server, program...
  local name=$1 gpus=$2 per=$3; shift 3
  local run rec sim
  run=$(best $G run --servers 1 --gpus "$gpus" --nproc-per-node "$per" --host-time fixed:1 -- "$@")
  rec=$(best $G record --gpus "$gpus" --nproc-per-node "$per" --host-time fixed:1 --out "$T/rec" -- "$@")
  sim=$(best $G simulate "$T/rec" --servers 1)
  printf "%-44s %9s %9s %9s %7.2f\n" "$name" "$run" "$rec" "$sim" "$(echo "$run / ($rec + $sim)" | bc -l)"
}
bench_pair "train.cc, 8 processes, 20 iterations" 8 8 "$TRAIN" --iters 20
bench_pair "live_perf allreduce -g 8, 1M..1G, 20 iters" 8 1 "$PERF" -g 8 -b 1M -e 1G -n 20 -w 5

echo "# 2. round trip of one blocking call (cudaStreamSynchronize on an idle stream)"
base=$(best $G run --gpus 1 -- "$PERF" --mode syncs -n 0)
many=$(best $G run --gpus 1 -- "$PERF" --mode syncs -n 20000)
printf "per call: %.2f us (20000 calls: %s s, none: %s s)\n" \
  "$(echo "($many - $base) / 20000 * 1000000" | bc -l)" "$many" "$base"
"$B/bin/gpusim-bench-uds-pingpong" 20000

echo "# 3. 64 processes (train.cc) on this machine"
t0=$(now)
$G run --servers 8 --gpus 64 --host-time fixed:1 --out "$T/t64" -- "$TRAIN" --iters 5 2>"$T/err64" >/dev/null
t1=$(now)
printf "64 ranks, 5 iterations: %.2f s wall; %s\n" "$(secs "$t0" "$t1")" "$(grep '^# simulated' "$T/err64")"
$G simulate "$T/t64" --servers 8 >"$T/sim64"
if diff <(grep -E '^ +[0-9]+ ' "$T/err64") <(grep -E '^ +[0-9]+ ' "$T/sim64") >/dev/null; then
  echo "64 ranks: every rank's iteration row equals gpusim simulate of the recording"
else
  echo "64 ranks: MISMATCH with gpusim simulate"; exit 1
fi

echo "# 4. conservative vs optimistic on skewed ranks (host work after each AllReduce, packet backend)"
printf "%-14s %8s  %s\n" "sync" "wall_s" "live-stats"
for s in conservative optimistic; do
  t0=$(now)
  $G run --servers 2 --gpus-per-server 1 --backend packet --gpus 2 --sync "$s" --out "$T/skew-$s" \
    -- "$PERF" --mode steps -n 6 -e 16M --host-work-ms 30 >/dev/null 2>&1
  t1=$(now)
  printf "%-14s %8.2f  %s\n" "$s" "$(secs "$t0" "$t1")" "$(cat "$T/skew-$s/live-stats.json")"
done

echo "# 5. the live path per non-blocking op: 200,000 kernel launches (+25,000 event records)"
printf "%-10s %14s %16s\n" "host-time" "program_us/op" "simulator_us/op"
cpu_of() { # user+sys seconds of a run and of its program: "total program"
  local out
  out=$( { /usr/bin/time -f "TOTAL %U %S" $G run --gpus 1 --host-time "$1" -- \
             /usr/bin/time -f "PROG %U %S" "$PERF" --mode launches -n "$2" >/dev/null; } 2>&1 )
  echo "$(echo "$out" | awk '/^TOTAL/ {print $2 + $3}') $(echo "$out" | awk '/^PROG/ {print $2 + $3}')"
}
for m in measured api-only; do
  read -r t0 p0 <<<"$(cpu_of $m 0)"
  read -r t1 p1 <<<"$(cpu_of $m 200000)"
  printf "%-10s %14.2f %16.2f\n" "$m" "$(echo "($p1 - $p0) / 225000 * 1000000" | bc -l)" \
    "$(echo "(($t1 - $p1) - ($t0 - $p0)) / 225000 * 1000000" | bc -l)"
done

echo "# 6. wall time per step: GPT-2 124M-shaped trainer (gpt_train, B=16, T=1024), 8 processes"
for m in measured api-only; do
  a=$(best $G run --servers 1 --gpus 8 --host-time $m -- "$GPT" --steps 2 --batch 16)
  b=$(best $G run --servers 1 --gpus 8 --host-time $m -- "$GPT" --steps 12 --batch 16)
  step=$($G run --servers 1 --gpus 8 --host-time $m -- "$GPT" --steps 4 --batch 16 2>/dev/null | awk '/average step/ {print $3}')
  printf "%-10s wall per step %.3f s for a simulated step of %s ms\n" "$m" "$(echo "($b - $a) / 10" | bc -l)" "$step"
done
