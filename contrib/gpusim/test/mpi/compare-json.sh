#!/usr/bin/env bash
# A distributed run must give the one-process run's results byte for byte:
#   compare-json.sh GPUSIM MPIEXEC NP COMMAND ARGS...
# runs `GPUSIM COMMAND ARGS... --json one.json` and
# `MPIEXEC -np NP GPUSIM COMMAND ARGS... --json mpi.json` and compares the two files.
# Registered with ctest only when gpusim is built against ns-3 with MPI (bootstrap.sh --mpi).
set -euo pipefail
gpusim=$1
mpiexec=$2
np=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$gpusim" "$@" --quiet --json "$dir/one.json" >"$dir/one.txt"
flags=(--oversubscribe)
if [ "$(id -u)" -eq 0 ]; then flags+=(--allow-run-as-root); fi
"$mpiexec" "${flags[@]}" -np "$np" "$gpusim" "$@" --quiet --json "$dir/mpi.json" >"$dir/mpi.txt"
grep -q "^# distributed: $np MPI processes" "$dir/mpi.txt" || {
  echo "the $np-process run did not report its partition:" >&2
  cat "$dir/mpi.txt" >&2
  exit 1
}
grep '^# distributed' "$dir/mpi.txt"
if ! cmp "$dir/one.json" "$dir/mpi.json"; then
  python3 - "$dir/one.json" "$dir/mpi.json" <<'PY' >&2 || true
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
def diff(x, y, path=""):
    if type(x) != type(y):
        print(path, x, y); return
    if isinstance(x, dict):
        for k in x:
            diff(x[k], y.get(k), path + "." + k)
    elif isinstance(x, list):
        if len(x) != len(y): print(path, "length", len(x), len(y))
        for i, (u, v) in enumerate(zip(x, y)): diff(u, v, "%s[%d]" % (path, i))
    elif x != y:
        print(path, x, y)
diff(a, b)
PY
  exit 1
fi
echo "identical: $(wc -c <"$dir/one.json") bytes of JSON"
