#!/usr/bin/env python3
"""Per-trace, per-API host-call durations in Kineto traces (stdlib only): the measurements behind
the host cost table of the shim (shim/src/host-cost.cc, doc/host-costs.md).

Usage: scripts/kineto-api-costs.py [trace.json.gz ...]   (default: ../shared/data/kineto/*.json.gz)
Prints, per trace, GPU name, CUDA runtime/driver versions if recorded, and for every
event with cat in {cuda_runtime, cuda_driver}: count, median, p10, p90, min of `dur` (us).
"""
import gzip, json, sys, glob, os
from collections import defaultdict

CATS = ("cuda_runtime", "cuda_driver")

def pct(s, p):
    # nearest-rank percentile on sorted list s
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]

def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)

def main(paths):
    for path in paths:
        d = load(path)
        ev = d.get("traceEvents", []) if isinstance(d, dict) else d
        props = d.get("deviceProperties", []) if isinstance(d, dict) else []
        gpu = props[0]["name"] if props else "unknown (no deviceProperties)"
        meta = {k: d.get(k) for k in ("cuda_runtime_version", "cuda_driver_version", "cupti_version") if isinstance(d, dict) and k in d}
        by = defaultdict(list)
        for e in ev:
            if e.get("ph") == "X" and e.get("cat") in CATS and "dur" in e:
                by[(e["cat"], e.get("name"))].append(float(e["dur"]))
        print("=" * 100)
        print(os.path.basename(path))
        print("  GPU: %s   %s" % (gpu, meta if meta else ""))
        print("  %-12s %-52s %7s %8s %8s %8s %8s" % ("cat", "name", "count", "median", "p10", "p90", "min"))
        for (cat, name), v in sorted(by.items(), key=lambda kv: -len(kv[1])):
            v.sort()
            print("  %-12s %-52s %7d %8.1f %8.1f %8.1f %8.1f" % (
                cat, (name or "")[:52], len(v), pct(v, 50), pct(v, 10), pct(v, 90), v[0]))
    return 0

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:] or sorted(glob.glob(os.path.join(here, "..", "..", "shared", "data", "kineto", "*.json.gz")))
    sys.exit(main(args))
