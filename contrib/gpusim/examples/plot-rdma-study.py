#!/usr/bin/python3
"""Figures from gpusim-rdma-cc-study's CSVs (needs python3-matplotlib from Debian).

    plot-rdma-study.py [--results rdma-study.csv] [--series rdma-study-series.csv] [--out PREFIX]

Writes PREFIX-completion.png (completion time per RDMA congestion control, PFC off and on, one
panel per workload, the flow backend as a dashed line), PREFIX-queues.png (p50/p99 of the
hottest switch queue per control, PFC on) and PREFIX-series.png (that queue over time during the
AllReduce, PFC on, one line per control).
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_completion(rows, out):
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4), squeeze=False)
    for ax, wl in zip(axes[0], workloads):
        mine = [r for r in rows if r["workload"] == wl]
        ref = [r for r in mine if r["cc"] == "(flow)"]
        runs = [r for r in mine if r["cc"] != "(flow)"]
        ccs = list(dict.fromkeys(r["cc"] for r in runs))
        for pi, pfc in enumerate(["0", "1"]):
            xs, ys = [], []
            for ci, cc in enumerate(ccs):
                for r in runs:
                    if r["cc"] == cc and r["pfc"] == pfc and r["completed"] == "1":
                        xs.append(ci + (pi - 0.5) * 0.4)
                        ys.append(float(r["time_us"]) / 1e3)
            ax.bar(xs, ys, 0.4, label="PFC " + ("on" if pfc == "1" else "off"))
        if ref:
            ax.axhline(float(ref[0]["time_us"]) / 1e3, color="k", ls="--", lw=1,
                       label="flow backend")
        ax.set_xticks(range(len(ccs)))
        ax.set_xticklabels(ccs)
        ax.set_ylabel("completion time (ms)")
        ax.set_title(wl)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + "-completion.png", dpi=110)


def plot_queues(rows, out):
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4), squeeze=False)
    for ax, wl in zip(axes[0], workloads):
        runs = [r for r in rows if r["workload"] == wl and r["cc"] != "(flow)" and r["pfc"] == "1"]
        ccs = [r["cc"] for r in runs]
        ax.bar([i - 0.2 for i in range(len(runs))], [float(r["queue_p50_kb"]) for r in runs], 0.4,
               label="p50")
        ax.bar([i + 0.2 for i in range(len(runs))], [float(r["queue_p99_kb"]) for r in runs], 0.4,
               label="p99")
        ax.set_xticks(range(len(ccs)))
        ax.set_xticklabels(ccs)
        ax.set_ylabel("hottest switch queue (KB)")
        ax.set_title(wl + " (PFC on)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + "-queues.png", dpi=110)


def plot_series(path, out, xmax_us):
    series = defaultdict(lambda: ([], []))
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            run = row["run"]
            if run.startswith("AllReduce/") and run.endswith("/pfc1"):
                t, b = series[run.split("/")[1]]
                t.append(float(row["t_us"]))
                b.append(float(row["backlog_bytes"]) / 1e3)
    fig, ax = plt.subplots(figsize=(8, 4))
    for cc, (t, b) in series.items():
        ax.plot(t, b, lw=0.8, label=cc)
    ax.set_xlim(0, xmax_us)
    ax.set_xlabel("time (us)")
    ax.set_ylabel("hottest switch queue (KB)")
    ax.set_title("AllReduce + background incast, PFC on")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + "-series.png", dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default="rdma-study.csv")
    ap.add_argument("--series", default="rdma-study-series.csv")
    ap.add_argument("--out", default="rdma-study")
    ap.add_argument("--xmax-us", type=float, default=3000, help="time axis of the series plot")
    a = ap.parse_args()
    rows = read_rows(a.results)
    plot_completion(rows, a.out)
    plot_queues(rows, a.out)
    plot_series(a.series, a.out, a.xmax_us)


if __name__ == "__main__":
    main()
