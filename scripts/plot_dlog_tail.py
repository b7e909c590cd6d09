#!/usr/bin/env python3
"""Plots and summarizes the DLog tail benchmark: scripts/plot_dlog_tail.py DIR

Reads DIR/results.csv (amulet-tailbench rows: `follow` runs with appends/s
and the entries/s one TailLog follower delivered in the same window, and a
`read` run of a long log from position 0) and DIR/disk.csv (the disk's
sequential read rate measured in the same run, the data directory with the
log and after trimming it); draws DIR/tail.png and writes DIR/summary.md.
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(out):
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    follow = [r for r in rows if r["test"] == "follow"]
    reads = [r for r in rows if r["test"] == "read"]
    disk = {}
    disk_path = os.path.join(out, "disk.csv")
    if os.path.exists(disk_path):
        with open(disk_path) as f:
            disk = next(csv.DictReader(f))
    lines = ["# DLog tail benchmark", "", "## A tail following appends (1 KiB, sync)", ""]
    lines.append("| clients | appends/s | tail entries/s | tail / appends | lag max (entries) | send-to-tail p50 | p99 |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in sorted(follow, key=lambda r: int(r["clients"])):
        a, t = float(r["appends_per_s"]), float(r["tail_entries_per_s"])
        lines.append(
            f"| {r['clients']} | {a:,.0f} | {t:,.0f} | {t / a:.3f} | {r['tail_lag_max_entries']} "
            f"| {float(r['e2e_p50_ms']):.2f} ms | {float(r['e2e_p99_ms']):.2f} ms |"
        )
    if reads:
        r = reads[-1]
        mb = float(r["read_mb_per_s"])
        lines += ["", "## Reading a long log from position 0", ""]
        lines.append(f"{int(r['read_bytes']):,} bytes of {r['value_size']} B entries in {float(r['read_seconds']):.2f} s: **{mb:,.1f} MB/s**")
        if disk:
            d = float(disk["disk_read_mb_per_s"])
            lines.append(f"; the disk's sequential read (dd, O_DIRECT, same size, same run): {d:,.1f} MB/s; ratio **{mb / d:.2f}**")
    if disk:
        w, a = int(disk["data_bytes_with_log"]), int(disk["data_bytes_after_trim"])
        lines += ["", "## Disk after trim", ""]
        lines.append(f"The cluster's data directory (3 nodes): {w:,} bytes holding the log, {a:,} bytes after trimming it whole ({a / w:.2%}).")
        if disk.get("nodes_rss_with_log"):
            r, ra = int(disk["nodes_rss_with_log"]), int(disk["nodes_rss_after_read"])
            lb = int(disk["log_bytes"])
            lines += ["", "## Memory", ""]
            lines.append(f"The three node processes' resident bytes holding the log once checkpointed: {r:,} ({r / (3 * lb):.2f} of the log per node); after reading it whole: {ra:,} ({ra / (3 * lb):.2f}).")
            if disk.get("nodes_anon_with_log"):
                n, na = int(disk["nodes_anon_with_log"]), int(disk["nodes_anon_after_read"])
                lines.append(f"Of those, anonymous (heap; the rest is mapped files, page cache the kernel can drop): {n:,} ({n / (3 * lb):.2f}) and {na:,} ({na / (3 * lb):.2f}).")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    if follow:
        ordered = sorted(follow, key=lambda r: int(r["clients"]))
        labels = [r["clients"] for r in ordered]
        x = range(len(ordered))
        axes[0].bar([i - 0.2 for i in x], [float(r["appends_per_s"]) for r in ordered], 0.4, label="appends/s (acknowledged)", color="#C44E52")
        axes[0].bar([i + 0.2 for i in x], [float(r["tail_entries_per_s"]) for r in ordered], 0.4, label="tail entries/s (one TailLog)", color="#4C72B0")
        axes[0].set_xticks(list(x), labels)
        axes[0].set_xlabel("appending clients")
        axes[0].set_title("A tail keeps up with appends (1 KiB, sync)")
        axes[0].legend()
    if reads:
        bars = [("tail from 0", float(reads[-1]["read_mb_per_s"]))]
        if disk:
            bars.append(("disk seq. read", float(disk["disk_read_mb_per_s"])))
        axes[1].bar([b[0] for b in bars], [b[1] for b in bars], color=["#4C72B0", "#999999"][: len(bars)])
        axes[1].set_ylabel("MB/s")
        axes[1].set_title(f"Reading {int(reads[-1]['read_bytes']) / 2**30:.2f} GiB of log")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "tail.png"), dpi=110)
    print(open(os.path.join(out, "summary.md")).read())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
