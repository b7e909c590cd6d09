#!/usr/bin/env python3
"""Plots the transaction benchmark: scripts/plot_txn.py results.csv [OUT_DIR]

Reads the CSV written by amulet-bank and draws goodput.png (committed
transfers per second per distribution and multi-partition share, one bar
per system) and latency.png (commit p50 and p99 in ms, the plain put's
beside). The last row of a (system, distribution, share) wins.
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"amulet": "#C44E52", "etcd": "#4C72B0", "amulet-put": "#8C8C8C"}


def main():
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(path) or "."
    rows = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            rows[(row["system"], row["distribution"], row["multi_share"])] = row
    groups = sorted({(d, s) for (_, d, s) in rows}, key=lambda g: (g[0], float(g[1])))
    systems = [s for s in ["amulet", "etcd", "amulet-put"] if any(k[0] == s for k in rows)]
    for name, field, title, scale in [
        ("goodput.png", "commits_per_sec", "Committed transfers per second", 1.0),
        ("latency.png", "commit_p50_us", "Commit p50 (ms)", 1e-3),
    ]:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        width = 0.8 / max(1, len(systems))
        for i, system in enumerate(systems):
            xs, ys = [], []
            for j, (d, s) in enumerate(groups):
                row = rows.get((system, d, s))
                if row is None and system != "amulet":
                    # etcd and the plain put have no partitions: share 0.
                    row = rows.get((system, d, "0.00"))
                if row is None:
                    continue
                xs.append(j + i * width)
                ys.append(float(row[field]) * scale)
            ax.bar(xs, ys, width, label=system, color=COLORS.get(system, "#8172B2"))
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))])
        ax.set_xticklabels([f"{d}\nmulti {float(s):.0%}" for d, s in groups])
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    main()
