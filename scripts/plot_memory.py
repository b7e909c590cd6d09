#!/usr/bin/env python3
"""Plots memory per entry: scripts/plot_memory.py results.csv [OUT_DIR] [--raw B]

Reads the CSV written by scripts/bench-memory and draws memory.png into
OUT_DIR (default: the CSV's directory): per system, two bars, the growth of
VmRSS and of RssAnon per stored entry (per server process: etcd's and
Amulet's are the mean of their three replicas). --raw B draws the raw data
per entry (value + key bytes) as a dashed line. When a system appears in
several rows with the same first note field (e.g. Amulet's storage mode),
the last row wins; different first fields give separate groups.
"""

import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SYSTEM_ORDER = ["etcd", "redis", "amulet"]
SYSTEM_COLORS = {"amulet": "#C44E52", "etcd": "#4C72B0", "redis": "#DD8452"}


def number(row, key):
    try:
        return float(row.get(key, "") or "nan")
    except ValueError:
        return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--raw", type=float, help="raw bytes per entry (value + key)")
    args = ap.parse_args()
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.csv))

    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"plot_memory: no rows in {args.csv}")
    groups = {}
    for row in rows:
        detail = row.get("note", "").split(";")[0].strip()
        groups[(row["system"], detail)] = row

    def order(key):
        s = key[0]
        return (SYSTEM_ORDER.index(s) if s in SYSTEM_ORDER else len(SYSTEM_ORDER), key)

    keys = sorted(groups, key=order)
    labels = [f"{s}\n{d}" if d else s for s, d in keys]
    rss = [number(groups[k], "bytes_per_entry_rss") for k in keys]
    anon = [number(groups[k], "bytes_per_entry_anon") for k in keys]
    colors = [SYSTEM_COLORS.get(s, "#8C8C8C") for s, _ in keys]

    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(keys) + 2), 4.8))
    width = 0.38
    xs = range(len(keys))
    bars_rss = ax.bar([x - width / 2 for x in xs], rss, width, color=colors,
                      edgecolor="black", linewidth=0.6, label="VmRSS")
    bars_anon = ax.bar([x + width / 2 for x in xs], anon, width, color=colors,
                       edgecolor="black", linewidth=0.6, hatch="//", alpha=0.75,
                       label="RssAnon")
    for bars in (bars_rss, bars_anon):
        for b in bars:
            h = b.get_height()
            if h == h:  # not NaN
                ax.annotate(f"{h:,.0f}", (b.get_x() + b.get_width() / 2, max(h, 0)),
                            ha="center", va="bottom", fontsize=8,
                            xytext=(0, 2), textcoords="offset points")
    if args.raw:
        ax.axhline(args.raw, color="black", linestyle="--", linewidth=1,
                   label=f"raw key + value ({args.raw:,.0f} B)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, fontsize=9)
    ax.set_ylabel("bytes per entry (per server process)")
    ns = sorted({r["n"] for r in rows})
    vs = sorted({r["value_bytes"] for r in rows})
    ax.set_title(f"Resident memory per stored entry: {', '.join(f'{int(n):,}' for n in ns)} "
                 f"entries of {', '.join(vs)} B")
    ax.legend(fontsize=8)
    ax.set_ylim(bottom=min([0] + [v for v in rss + anon if v == v]) * 1.1)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out_dir, "memory.png")
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
