#!/usr/bin/python3
"""Figures from gpusim-routing-study's CSVs (needs python3-matplotlib from Debian).

    plot-routing-study.py [--collectives routing-study-collectives.csv]
                          [--training routing-study-training.csv] [--out PREFIX]

Writes PREFIX-collectives.png (job A's completion time per routing mode, one panel per
collective x alone/shared, bars per congestion control x receiver, mean over seeds with
min-max whiskers, the flow backend's predictions as lines), PREFIX-reorder.png (packets
retransmitted and held out of order per routing mode, go-back-N vs tolerant) and
PREFIX-failure.png (training iteration time per failure case, ECMP vs adaptive). A figure
whose CSV is missing is skipped.
"""
import argparse
import csv
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROUTINGS = ["ecmp", "spray", "spray-rr", "flowlet", "adaptive"]
FLOW_STYLE = {"ecmp": ("k", ":"), "spray": ("k", "--"), "adaptive": ("tab:red", "-.")}


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def panels(rows):
    return list(dict.fromkeys((r["collective"], r["sharing"]) for r in rows))


def plot_collectives(rows, out):
    keys = panels(rows)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.6 * len(keys), 4), squeeze=False)
    pkt = [r for r in rows if r["backend"] == "packet"]
    variants = list(dict.fromkeys((r["cc"], r["receiver"]) for r in pkt))
    routings = [x for x in ROUTINGS if any(r["routing"] == x for r in pkt)]
    width = 0.8 / max(1, len(variants))
    for ax, (coll, share) in zip(axes[0], keys):
        for vi, (cc, rcv) in enumerate(variants):
            xs, ys, lo, hi = [], [], [], []
            for ri, routing in enumerate(routings):
                ts = [float(r["time_us"]) / 1e3 for r in pkt
                      if (r["collective"], r["sharing"], r["routing"], r["cc"], r["receiver"])
                      == (coll, share, routing, cc, rcv) and r["completed"] == "1"]
                if not ts:
                    continue
                m = sum(ts) / len(ts)
                xs.append(ri + (vi - (len(variants) - 1) / 2) * width)
                ys.append(m)
                lo.append(m - min(ts))
                hi.append(max(ts) - m)
            ax.bar(xs, ys, width, yerr=[lo, hi] if any(lo + hi) else None, capsize=2,
                   label=f"{cc} {rcv}")
        for r in rows:
            if r["backend"] == "flow" and (r["collective"], r["sharing"]) == (coll, share):
                color, ls = FLOW_STYLE.get(r["routing"], ("gray", "-"))
                ax.axhline(float(r["time_us"]) / 1e3, color=color, ls=ls, lw=1,
                           label=f"flow model: {r['routing']}")
        ax.set_xticks(range(len(routings)))
        ax.set_xticklabels(routings, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("job A completion (ms, log)")
        ax.set_title(f"{coll}, {share}")
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.suptitle("Collective completion per routing mode (8 servers x 2 GPUs, 2 leaves x 4 "
                 "spines, 100 Gb/s, RoCEv2 + PFC)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("wrote", out)


def plot_reorder(rows, out):
    pkt = [r for r in rows if r["backend"] == "packet"]
    routings = [x for x in ROUTINGS if any(r["routing"] == x for r in pkt)]
    keys = panels(pkt)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.6 * len(keys), 3.6), squeeze=False)
    series = [("gbn", "retransmitted", "go-back-N: retransmitted"),
              ("tolerant", "retransmitted", "tolerant: retransmitted"),
              ("tolerant", "reordered", "tolerant: held out of order")]
    width = 0.8 / len(series)
    for ax, (coll, share) in zip(axes[0], keys):
        for si, (rcv, col, label) in enumerate(series):
            xs, ys = [], []
            for ri, routing in enumerate(routings):
                v = [float(r[col]) for r in pkt
                     if (r["collective"], r["sharing"], r["routing"], r["receiver"])
                     == (coll, share, routing, rcv)]
                if v:
                    xs.append(ri + (si - (len(series) - 1) / 2) * width)
                    ys.append(max(1, sum(v) / len(v)))
            ax.bar(xs, ys, width, label=label)
        ax.set_yscale("log")
        ax.set_xticks(range(len(routings)))
        ax.set_xticklabels(routings, fontsize=8)
        ax.set_ylabel("packets (mean over cc, seeds; 1 = none)")
        ax.set_title(f"{coll}, {share}")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("wrote", out)


def plot_failure(rows, out):
    for r in rows:
        r["routing"] = f"{r.get('spines', '?')} spines, {r['routing']}"
    routings = list(dict.fromkeys(r["routing"] for r in rows))
    cases = list(dict.fromkeys(r["case"] for r in rows))
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / max(1, len(routings))
    by = defaultdict(dict)
    for r in rows:
        by[r["routing"]][r["case"]] = float(r["iteration_us"]) / 1e3
    for ri, routing in enumerate(routings):
        xs = [ci + (ri - (len(routings) - 1) / 2) * width for ci in range(len(cases))]
        ys = [by[routing].get(c, 0) for c in cases]
        bars = ax.bar(xs, ys, width, label=routing)
        for b, y in zip(bars, ys):
            ax.text(b.get_x() + b.get_width() / 2, y, f"{y:.0f}", ha="center", va="bottom",
                    fontsize=6)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("training iteration (ms)")
    ax.set_title("Training iteration with a failed spine cable / spine, failure mid-iteration at "
                 "the intact ECMP iteration's half (flow backend)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("wrote", out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--collectives", default="routing-study-collectives.csv")
    p.add_argument("--training", default="routing-study-training.csv")
    p.add_argument("--out", default="routing-study")
    a = p.parse_args()
    if os.path.exists(a.collectives):
        rows = read(a.collectives)
        plot_collectives(rows, a.out + "-collectives.png")
        plot_reorder(rows, a.out + "-reorder.png")
    if os.path.exists(a.training):
        plot_failure(read(a.training), a.out + "-failure.png")


if __name__ == "__main__":
    main()
