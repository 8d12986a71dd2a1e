#!/usr/bin/python3
"""Figures from gpusim-collective-cc-study's CSVs (needs python3-matplotlib from Debian).

    plot-cc-study.py [--results cc-study.csv] [--series cc-study-series.csv] [--out PREFIX]

Writes PREFIX-completion.png (collective completion time per congestion control and queue
disc, the flow backend as a dashed line) and PREFIX-queues.png (occupancy of each run's hottest
switch queue over time, AllReduce runs, one panel per queue disc).
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_results(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_series(path):
    series = defaultdict(lambda: ([], []))
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            t, b = series[row["run"]]
            t.append(float(row["t_us"]))
            b.append(float(row["backlog_bytes"]) / 1e3)
    return series


def plot_completion(rows, out):
    collectives = list(dict.fromkeys(r["collective"] for r in rows))
    fig, axes = plt.subplots(1, len(collectives), figsize=(6 * len(collectives), 4), squeeze=False)
    for ax, coll in zip(axes[0], collectives):
        mine = [r for r in rows if r["collective"] == coll]
        ref = [r for r in mine if r["cc"] == "(flow)"]
        runs = [r for r in mine if r["cc"] != "(flow)"]
        queues = list(dict.fromkeys(r["queue"] for r in runs))
        ccs = list(dict.fromkeys(r["cc"] for r in runs))
        width = 0.8 / max(1, len(queues))
        for qi, q in enumerate(queues):
            xs, ys = [], []
            for ci, cc in enumerate(ccs):
                for r in runs:
                    if r["cc"] == cc and r["queue"] == q:
                        xs.append(ci + (qi - (len(queues) - 1) / 2) * width)
                        ys.append(float(r["time_us"]) / 1e3)
            ax.bar(xs, ys, width, label=q)
        if ref:
            ax.axhline(float(ref[0]["time_us"]) / 1e3, color="k", ls="--", lw=1,
                       label="flow backend")
        ax.set_xticks(range(len(ccs)))
        ax.set_xticklabels(ccs)
        ax.set_ylabel("completion time (ms)")
        ax.set_title(coll)
        ax.legend(fontsize=8)
    fig.suptitle("Collective completion time, 2:1 leaf-spine with background incast")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote", out)


def plot_queues(series, out, collective="allreduce"):
    runs = [k for k in series if k.startswith(collective + "/")]
    queues = list(dict.fromkeys(k.split("/")[2] for k in runs))
    fig, axes = plt.subplots(len(queues), 1, figsize=(8, 2.8 * len(queues)), squeeze=False,
                             sharex=True)
    for ax, q in zip(axes[:, 0], queues):
        for k in runs:
            if k.split("/")[2] == q:
                t, b = series[k]
                ax.plot([x / 1e3 for x in t], b, lw=0.8, label=k.split("/")[1])
        ax.set_ylabel("hottest queue (KB)")
        ax.set_title(f"{collective}, switch queue disc: {q}")
        ax.legend(fontsize=8, ncol=4)
    axes[-1, 0].set_xlabel("simulated time (ms)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote", out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default="cc-study.csv")
    p.add_argument("--series", default="cc-study-series.csv")
    p.add_argument("--out", default="cc-study")
    a = p.parse_args()
    plot_completion(read_results(a.results), a.out + "-completion.png")
    plot_queues(read_series(a.series), a.out + "-queues.png")


if __name__ == "__main__":
    main()
