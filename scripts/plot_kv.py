#!/usr/bin/env python3
"""Plots the key-value benchmark: scripts/plot_kv.py results.csv [OUT_DIR]

Reads the CSV written by amulet-loadgen (--csv) and draws two bar charts into
OUT_DIR (default: the CSV's directory): throughput.png (successful ops/s per
workload, one bar per backend) and p99.png (p99 latency per workload and
operation type, one bar per backend). When a (backend, workload, distribution)
appears in several rows, the last row wins.
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WORKLOAD_ORDER = ["load", "put-only", "a", "b", "c", "f"]
OPS = ["read", "update", "rmw"]
BACKEND_COLORS = {
    "amulet": "#C44E52",
    "etcd": "#4C72B0",
    "redis": "#DD8452",
    "zookeeper": "#55A868",
    "memory": "#8C8C8C",
}
FALLBACK_COLORS = ["#8172B2", "#937860", "#DA8BC3", "#CCB974"]


def number(row, key):
    try:
        return float(row.get(key, "") or "nan")
    except ValueError:
        return float("nan")


def group_key(row, distributions):
    w = row["workload"]
    if len(distributions) > 1 and w != "load":
        return f"{w}\n{row['distribution']}"
    return w


def order(group):
    w = group.split("\n")[0]
    return (WORKLOAD_ORDER.index(w) if w in WORKLOAD_ORDER else len(WORKLOAD_ORDER), group)


def colors_for(backends):
    out, spare = {}, iter(FALLBACK_COLORS)
    for b in backends:
        out[b] = (b in BACKEND_COLORS and BACKEND_COLORS[b]) or next(spare, "#888888")
    return out


def bars(ax, groups, backends, value, colors, fmt):
    width = 0.8 / max(len(backends), 1)
    for i, b in enumerate(backends):
        xs, ys = [], []
        for j, g in enumerate(groups):
            v = value(b, g)
            if v is not None and v == v:  # skip missing and NaN
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(v)
        rects = ax.bar(xs, ys, width, label=b, color=colors[b])
        ax.bar_label(rects, labels=[fmt(y) for y in ys], fontsize=7, padding=2)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def subtitle(rows):
    r = rows[-1]
    return f"{r['clients']} clients, {r['value_size']} B values, {r['record_count']} records"


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    path = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) == 3 else os.path.dirname(path) or "."
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print("no rows in " + path, file=sys.stderr)
        return 1
    distributions = sorted({r["distribution"] for r in rows if r["workload"] != "load"})
    # A backend measured under several labels (amulet sync and async, or
    # 1/2/4 partitions) gets one series per label.
    labels_of = {}
    for r in rows:
        labels_of.setdefault(r["backend"], set()).add(r["label"])
    for r in rows:
        if len(labels_of[r["backend"]]) > 1:
            r["series"] = f"{r['backend']} {r['label']}"
        else:
            r["series"] = r["backend"]
    last = {}
    backends = []
    for r in rows:
        if r["series"] not in backends:
            backends.append(r["series"])
        last[(r["series"], group_key(r, distributions))] = r
    groups = sorted({g for (_, g) in last}, key=order)
    colors = colors_for(backends)

    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(groups) + 2), 4.5))
    bars(
        ax,
        groups,
        backends,
        lambda b, g: number(last[(b, g)], "ops_per_sec") if (b, g) in last else None,
        colors,
        lambda v: f"{v:,.0f}",
    )
    ax.set_ylabel("ops/s (successful)")
    ax.set_title(f"Throughput ({subtitle(rows)})", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "throughput.png"), dpi=120)
    plt.close(fig)

    op_groups = []
    for g in groups:
        for op in OPS:
            if any(number(last[(b, g)], f"{op}_ops") > 0 for b in backends if (b, g) in last):
                op_groups.append((g, op))
    labels = [f"{g}\n{'insert' if g == 'load' else op}" for g, op in op_groups]

    def p99_ms(b, label):
        g, op = op_groups[labels.index(label)]
        if (b, g) not in last:
            return None
        return number(last[(b, g)], f"{op}_p99_us") / 1000.0

    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(labels) + 2), 4.5))
    bars(ax, labels, backends, p99_ms, colors, lambda v: f"{v:.2f}")
    values = [p99_ms(b, lab) for b in backends for lab in labels]
    values = [v for v in values if v is not None and v == v and v > 0]
    if values and max(values) / min(values) > 50:
        ax.set_yscale("log")
    ax.set_ylabel("p99 latency (ms)")
    ax.set_title(f"p99 latency per operation ({subtitle(rows)})", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "p99.png"), dpi=120)
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
