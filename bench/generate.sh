#!/usr/bin/env bash
# gpusim generate benchmark (doc/generate.md): wall time and peak memory of
# `gpusim generate ... --simulate` from one pipeline up to issue 10's acceptance case (GPT-3
# 175B on 1,024 H100s: TP 8, PP 16, DP 8) and the 16,384-GPU case. Each case runs once under
# a time limit (LIMIT_S, default 900 s); a case past the limit prints "timeout".
# Default speed settings of `generate` (--fidelity flows --ranks mirrored); RANKS=all and/or
# FIDELITY=chunk select the detailed engine (doc/flow-backend.md, "Mirrored ranks").
#   bench/generate.sh [BUILD_DIR]
set -uo pipefail
B=${1:-build}
G=$B/bin/gpusim
LIMIT=${LIMIT_S:-900}
echo "# machine: $(nproc) cores, $(uname -m), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
printf "%-40s %6s %12s %7s %8s %8s %8s\n" "case" "gpus" "iteration_ms" "MFU_%" "wall_s" "user_s" "RSS_MiB"
run_case() { # name, gpus, args...
  local name=$1 gpus=$2; shift 2
  local out rc
  out=$( { /usr/bin/time -f "RSS %M WALL %e CPU %U" timeout "$LIMIT" "$G" generate "$@" --simulate --preset dgx-h100 \
          ${RANKS:+--ranks "$RANKS"} ${FIDELITY:+--fidelity "$FIDELITY"}; } 2>&1 )
  rc=$?
  local wall rss iter mfu cpu
  wall=$(echo "$out" | awk '/^RSS/ {print $4}')
  cpu=$(echo "$out" | awk '/^RSS/ {print $6}')
  rss=$(echo "$out" | awk '/^RSS/ {printf "%.0f", $2/1024}')
  iter=$(echo "$out" | awk '/^iteration time/ {print $3}')
  mfu=$(echo "$out" | awk '/MFU/ {print $7}')
  if [ "$rc" = 124 ]; then iter=timeout; fi
  printf "%-40s %6s %12s %7s %8s %8s %8s\n" "$name" "$gpus" "${iter:--}" "${mfu:--}" "${wall:--}" "${cpu:--}" "${rss:--}"
}
run_case "llama3-8b TP8 PP2 (gb 16)" 16 --model llama3-8b --tp 8 --pp 2 --dp 1 --global-batch 16
run_case "gpt3-175b TP8 PP16 DP1 (gb 192)" 128 --model gpt3-175b --tp 8 --pp 16 --dp 1 --global-batch 192
run_case "gpt3-175b TP8 PP16 DP8 (gb 1536)" 1024 --model gpt3-175b --tp 8 --pp 16 --dp 8
run_case "gpt3-175b TP8 PP16 DP128 (gb 24576)" 16384 --model gpt3-175b --tp 8 --pp 16 --dp 128 --global-batch 24576
