#!/usr/bin/env python3
"""Plots DynaTree's experiments: scripts/plot_dynatree.py results.csv OUT.png

Reads the CSV scripts/bench-dynatree writes and draws, per workload,
throughput (left) and cluster CPU microseconds per operation (right)
against the number of range partitions, with etcd (one Raft group, 3
members) as a horizontal line. DynaTree's own figure showed inserts
stopping to scale at 4 partitions; here flat CPU per operation is the
evidence of linear scaling (one 2-core machine cannot add throughput).
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"insert": "#C44E52", "search": "#4C72B0", "update": "#55A868", "mixed": "#8172B2"}


def main():
    path, out = sys.argv[1], sys.argv[2]
    rows = list(csv.DictReader(open(path)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for workload in ["insert", "search", "update", "mixed"]:
        mine = sorted(
            (r for r in rows if r["system"] == "amulet" and r["workload"] == workload),
            key=lambda r: int(r["partitions"]),
        )
        if not mine:
            continue
        color = COLORS[workload]
        xs = [int(r["partitions"]) for r in mine]
        left.plot(xs, [float(r["ops_per_s"]) for r in mine], "o-", color=color, label=f"amulet {workload}")
        cpu = [(x, float(r["cpu_us_per_op"])) for x, r in zip(xs, mine) if r["cpu_us_per_op"]]
        if cpu:
            right.plot([c[0] for c in cpu], [c[1] for c in cpu], "o-", color=color, label=f"amulet {workload}")
        uncached = sorted(
            (r for r in rows if r["system"] == "amulet-no-cache" and r["workload"] == workload),
            key=lambda r: int(r["partitions"]),
        )
        if uncached:
            left.plot([int(r["partitions"]) for r in uncached], [float(r["ops_per_s"]) for r in uncached],
                      "s--", color=color, label=f"amulet {workload}, no map cache")
        for r in rows:
            if r["system"] == "etcd" and r["workload"] == workload:
                left.axhline(float(r["ops_per_s"]), color=color, linestyle=":", label=f"etcd {workload}")
                if r["cpu_us_per_op"]:
                    right.axhline(float(r["cpu_us_per_op"]), color=color, linestyle=":", label=f"etcd {workload}")
    for axis, title, unit in [(left, "throughput", "ops/s"), (right, "cluster CPU per operation", "µs")]:
        axis.set_xscale("log", base=2)
        axis.set_xticks([1, 2, 4, 8])
        axis.set_xticklabels(["1", "2", "4", "8"])
        axis.set_xlabel("range partitions")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    left.legend(fontsize=7, loc="lower left", ncol=2)
    right.legend(fontsize=7, loc="lower right")
    fig.suptitle("DynaTree's experiments on one 2-core machine (3 Amulet nodes; etcd 3 members)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
