#!/usr/bin/env python3
"""Plots DynaTree's growth timeline: scripts/plot_growth.py timeline.csv OUT.png

Reads the CSV scripts/bench-growth writes and draws, per second of an
insert load on a range map that starts in one partition: throughput
(top), p50 and p99 latency (middle) and the partitions the balancer had
split the map into (bottom), so a split's cost shows where it happens.
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path, out):
    rows = list(csv.DictReader(open(path)))
    seconds = [int(r["second"]) for r in rows]
    fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    top.plot(seconds, [int(r["ops"]) for r in rows], color="#C44E52")
    top.set_ylabel("inserts/s")
    top.set_ylim(bottom=0)
    top.set_title("A range map growing from one partition under insert load (3 nodes, 64 clients)")
    middle.plot(seconds, [int(r["p99_us"] or 0) / 1000 for r in rows], label="p99", color="#8172B2")
    middle.plot(seconds, [int(r["p50_us"] or 0) / 1000 for r in rows], label="p50", color="#4C72B0")
    middle.set_ylabel("latency (ms)")
    middle.set_ylim(bottom=0)
    middle.legend(loc="upper left")
    known = [(s, int(r["partitions"])) for s, r in zip(seconds, rows) if r["partitions"]]
    bottom.step([s for s, _ in known], [p for _, p in known], where="post", color="#55A868")
    bottom.set_ylabel("partitions")
    bottom.set_xlabel("second of the run")
    bottom.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
