#!/usr/bin/env python3
"""Plots the ordering-layer benchmark: scripts/plot_bench.py results.csv plot.png

Reads the CSV written by amulet-bench-order and draws three panels: MB/s and
msgs/s per scenario (with the acceptance targets) and p50/p99 latency.
"""

import csv
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODE_COLORS = {"memory": "#4C72B0", "async": "#DD8452", "sync": "#C44E52"}


def number(row, key):
    try:
        return float(row.get(key, "") or "nan")
    except ValueError:
        return float("nan")


def label(row):
    size = int(row["value_bytes"])
    size = f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"
    streams = row["streams"]
    group = row["mode"]
    if row["scenario"].startswith("merge"):
        group = "merge"
    elif row["scenario"].startswith("light"):
        group = f"light w={row.get('window', '?')}"
    elif row["scenario"].startswith("tuned"):
        group = f"tuned w={row.get('window', '?')}"
    # A durable mode the node ran on a memory log (see notes / summary.md).
    star = "*" if (row.get("notes") or "").strip() else ""
    return f"{group}{star}\n{size}\n{streams} str"


def target_value(row, unit):
    m = re.match(r">=\s*([0-9.]+)\s*(MB/s|msgs/s)", row.get("target", "") or "")
    if m and m.group(2) == unit:
        return float(m.group(1))
    return None


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print("no rows in " + sys.argv[1], file=sys.stderr)
        return 1
    labels = [label(r) for r in rows]
    colors = [MODE_COLORS.get(r["mode"], "#888888") for r in rows]
    hatches = ["//" if r["scenario"].startswith("merge") else ".." if r["scenario"].startswith("light")
               else "xx" if r["scenario"].startswith("tuned") else ""
               for r in rows]
    xs = list(range(len(rows)))
    loopback = next((number(r, "loopback_mb_per_s") for r in rows if r.get("loopback_mb_per_s")), None)

    fig, axes = plt.subplots(3, 1, figsize=(max(10, 0.9 * len(rows) + 3), 13), sharex=True)
    title = "Amulet ordering layer, 3 processes on loopback"
    if loopback:
        title += f" (loopback TCP {loopback:,.0f} MB/s)"
    fig.suptitle(title)

    def spread(key):
        """Error bars from the runs' min and max msgs/s (median drawn)."""
        scale = [1.0 if key == "msgs_per_s" else int(r["value_bytes"]) / 1e6 for r in rows]
        lo = [number(r, "msgs_per_s_min") * k for r, k in zip(rows, scale)]
        hi = [number(r, "msgs_per_s_max") * k for r, k in zip(rows, scale)]
        mid = [number(r, key) for r in rows]
        if all(a != a for a in lo):
            return None
        below = [0 if (m != m or a != a) else max(m - a, 0) for m, a in zip(mid, lo)]
        above = [0 if (m != m or b != b) else max(b - m, 0) for m, b in zip(mid, hi)]
        return [below, above]

    def bars(ax, key, unit, ylabel, log=False):
        values = [number(r, key) for r in rows]
        drawn = [0 if v != v else v for v in values]
        b = ax.bar(xs, drawn, color=colors, edgecolor="black", linewidth=0.5,
                   yerr=spread(key), capsize=3, ecolor="#333333")
        for bar, hatch in zip(b, hatches):
            bar.set_hatch(hatch)
        for x, v, r in zip(xs, values, rows):
            if v != v:
                ax.text(x, 0, "failed", ha="center", va="bottom", rotation=90, color="red")
                continue
            ax.text(x, v, f"{v:,.0f}" if v >= 100 else f"{v:.1f}", ha="center", va="bottom", fontsize=7)
            t = target_value(r, unit)
            if t is not None:
                met = r.get("target_met") == "yes"
                ax.hlines(t, x - 0.45, x + 0.45, colors="green" if met else "red", linestyles="--", linewidth=2)
                ax.text(x, t, f"target {t:,.0f}", ha="center", va="bottom", fontsize=7,
                        color="green" if met else "red")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)

    runs = max((int(number(r, "runs")) for r in rows if number(r, "runs") == number(r, "runs")), default=1)
    if runs > 1:
        fig.text(0.99, 0.005, f"bars: median of {runs} runs; whiskers: min..max", fontsize=8, ha="right")
    bars(axes[0], "mb_per_s", "MB/s", "MB/s (10^6 B of values)")
    bars(axes[1], "msgs_per_s", "msgs/s", "values/s", log=True)

    ax = axes[2]
    width = 0.38
    p50 = [number(r, "p50_ms") for r in rows]
    p99 = [number(r, "p99_ms") for r in rows]
    ax.bar([x - width / 2 for x in xs], [0 if v != v else v for v in p50], width, label="p50", color="#55A868")
    ax.bar([x + width / 2 for x in xs], [0 if v != v else v for v in p99], width, label="p99", color="#8172B2")
    ax.set_yscale("log")
    ax.set_ylabel("latency, ms (propose to deliver at node 1)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, fontsize=8)

    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in MODE_COLORS.values()]
    axes[0].legend(handles, list(MODE_COLORS), title="storage", loc="upper left")
    if any((r.get("notes") or "").strip() for r in rows):
        fig.text(0.01, 0.005, "* durable mode ran on a memory log (node had no durable log yet)",
                 fontsize=8, color="#aa0000")
    fig.tight_layout(rect=(0, 0.015, 1, 1))
    fig.savefig(sys.argv[2], dpi=110)
    print("wrote " + sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
