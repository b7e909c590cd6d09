#!/usr/bin/env python3
"""Plots and summarizes the DLog benchmark: scripts/plot_dlog.py DIR

Reads DIR/results.csv (amulet-loadgen rows of the `append` workload, one
per backend and client count), DIR/scaling/results.csv and cpu.csv (DLog
over 1, 2 and 4 logs) and DIR/order/results.csv (the ordering layer's
single-sync-1KiB) when present; draws DIR/throughput.png (appends/s against
clients) and DIR/latency.png (mean and p99 against clients), and appends
the ratios to DIR/summary.md. Several rows of one (backend, clients): the
last wins.
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {
    "amulet": "DLog (Amulet, 3 nodes, sync)",
    "redis": "Redis Streams (XADD, 1 process, fsync always)",
    "etcd": "etcd (3 members, put of 1 KiB)",
}
COLORS = {"amulet": "#C44E52", "redis": "#DD8452", "etcd": "#4C72B0"}
# The thesis's Fig. 3.5 (BookKeeper, 1 KiB appends, sync, 3 bookies on
# separate machines with one client machine): quoted, not measured here.
BOOKKEEPER_NOTE = (
    "Thesis Fig. 3.5 (separate machines, 1 KiB, sync): DLog outperforms "
    "BookKeeper at every client count; with 200 clients DLog approaches the "
    "disk's synchronous write limit, BookKeeper's latency is higher from its "
    "batching."
)


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(row, key):
    try:
        return float(row.get(key) or "nan")
    except ValueError:
        return float("nan")


def main():
    out = sys.argv[1]
    by = {}
    for r in rows(os.path.join(out, "results.csv")):
        if r["workload"] != "append":
            continue
        by[(r["backend"], int(r["clients"]))] = r
    backends = [b for b in ["amulet", "redis", "etcd"] if any(k[0] == b for k in by)]
    clients = sorted({k[1] for k in by})
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for b in backends:
        xs = [c for c in clients if (b, c) in by]
        ax.plot(xs, [num(by[(b, c)], "ops_per_sec") for c in xs], "o-",
                color=COLORS.get(b), label=NAMES.get(b, b))
    ax.set_xscale("log")
    ax.set_xlabel("closed-loop clients")
    ax.set_ylabel("appends/s (etcd: puts/s)")
    ax.set_title("1 KiB appends, sync durability, one 2-core machine")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=120)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for b in backends:
        xs = [c for c in clients if (b, c) in by]
        ax.plot(xs, [num(by[(b, c)], "update_mean_us") / 1000 for c in xs], "o-",
                color=COLORS.get(b), label=NAMES.get(b, b) + " mean")
        ax.plot(xs, [num(by[(b, c)], "p99_us") / 1000 for c in xs], "o--",
                color=COLORS.get(b), alpha=0.6, label=NAMES.get(b, b) + " p99")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("closed-loop clients")
    ax.set_ylabel("latency, ms")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "latency.png"), dpi=120)

    lines = ["", "## DLog: appends of 1 KiB, sync (scripts/plot_dlog.py)", ""]
    lines.append("| clients | " + " | ".join(NAMES.get(b, b) + " ops/s (mean / p99 ms)" for b in backends)
                 + " | DLog / Redis | DLog / etcd |")
    lines.append("|---" * (len(backends) + 3) + "|")
    for c in clients:
        cells = []
        for b in backends:
            r = by.get((b, c))
            cells.append("-" if r is None else "%.0f (%.1f / %.1f)" % (
                num(r, "ops_per_sec"), num(r, "update_mean_us") / 1000, num(r, "p99_us") / 1000))
        def ratio(b):
            a, o = by.get(("amulet", c)), by.get((b, c))
            if a is None or o is None:
                return "-"
            return "%.2fx" % (num(a, "ops_per_sec") / num(o, "ops_per_sec"))
        lines.append("| %d | %s | %s | %s |" % (c, " | ".join(cells), ratio("redis"), ratio("etcd")))
    order = [r for r in rows(os.path.join(out, "order", "results.csv"))
             if r.get("scenario", "").startswith("single-sync-1KiB")]
    if order and ("amulet", 64) in by:
        msgs = max(num(r, "msgs_per_s") for r in order)
        dlog = num(by[("amulet", 64)], "ops_per_sec")
        lines += ["", "Ordering layer alone, sync, 1 KiB (amulet-bench-order single-sync-1KiB, "
                  "same run): %.0f msgs/s; DLog at 64 clients: %.0f appends/s = %.1f%% of it "
                  "(target 80%%)." % (msgs, dlog, 100 * dlog / msgs)]
    scaling = [r for r in rows(os.path.join(out, "scaling", "results.csv")) if r["workload"] == "append"]
    cpu = rows(os.path.join(out, "scaling", "cpu.csv"))
    if scaling:
        lines += ["", "Vertical scaling (64 clients, logs on 1, 2, 4 partitions each with its own "
                  "stream; amulet dev --partitions N):", "",
                  "| logs | appends/s | p99 ms | node CPU µs per append |", "|---|---|---|---|"]
        for i, r in enumerate(scaling):
            us = cpu[i]["cpu_us_per_op"] if i < len(cpu) else "-"
            lines.append("| %s | %.0f | %.1f | %s |" % (
                cpu[i]["partitions"] if i < len(cpu) else "?", num(r, "ops_per_sec"),
                num(r, "p99_us") / 1000, us))
    lines += ["", BOOKKEEPER_NOTE, ""]
    with open(os.path.join(out, "summary.md"), "a") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
