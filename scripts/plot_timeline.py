#!/usr/bin/env python3
"""Plots a timeline under load (issue 4; DMap Fig. 5 and 6, thesis Fig. 4.7).

usage: plot_timeline.py SERIES_CSV EVENTS_CSV OUT_DIR [SCENARIO]

SERIES_CSV is amulet-loadgen's --series-csv (one row per second: ops,
errors, p50_us, p99_us); EVENTS_CSV has `second,event` rows (kill,
restart, ...). Writes OUT_DIR/timeline.png (throughput and p99 per second,
events as vertical lines) and prints the figures the closing note quotes:
normal throughput (median of the seconds before the first event), the
dip (lowest second, its share of normal), how long throughput stayed
below 90% of normal, and the mean share of normal from the restart until
throughput is back above 90%. "Restart" is the last event (the restart of
a killed node, or the moment a reconfiguration was applied everywhere).
"""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    series_csv, events_csv, out_dir = sys.argv[1:4]
    scenario = sys.argv[4] if len(sys.argv) > 4 else "kill"
    rows = [r for r in csv.DictReader(open(series_csv)) if r["workload"] != "load" and r.get("phase") != "drain"]
    seconds = [int(r["second"]) for r in rows]
    ops = [int(r["ops"]) for r in rows]
    p99 = [int(r["p99_us"]) / 1000 if r["p99_us"] else None for r in rows]
    events = [(float(r["second"]), r["event"]) for r in csv.DictReader(open(events_csv))]

    first = min(s for s, _ in events)
    restart = max(s for s, _ in events)
    before = [o for s, o in zip(seconds, ops) if 2 <= s < first]
    normal = statistics.median(before)
    after_first = [(s, o) for s, o in zip(seconds, ops) if s >= first]
    low_s, low = min(after_first, key=lambda x: x[1])
    below = [s for s, o in after_first if o < 0.9 * normal]
    # Recovery: from the restart until throughput stays above 90%.
    recovered_at = None
    for s, o in after_first:
        if s >= restart and o >= 0.9 * normal:
            recovered_at = s
            break
    during = [o for s, o in after_first if restart <= s < (recovered_at or restart + 1)]
    last = max(seconds)
    tail = [o for s, o in zip(seconds, ops) if s >= (recovered_at or last) and s < last]

    at = {e: s for s, e in events}
    if "kill" in at and "removed" in at:
        print(f"detection_s={at['removed'] - at['kill']:.2f} (kill to the view change that removed the node)")
    if "kill" in at and "re-replicated" in at:
        print(f"full_replication_s={at['re-replicated'] - at['kill']:.2f} (kill to a map with no replica on the removed node)")
    print(f"normal_ops_per_s={normal:.0f}")
    print(f"lowest_second={low_s} lowest_ops={low} lowest_share={low / normal:.2f}")
    print(f"seconds_below_90pct={len(below)} ({below[0] if below else '-'}..{below[-1] if below else '-'})")
    print(f"restart_second={restart} back_above_90pct_at={recovered_at}")
    if during:
        print(f"share_of_normal_from_restart_to_recovery={statistics.mean(during) / normal:.2f}")
    if tail:
        print(f"share_of_normal_after_recovery={statistics.mean(tail) / normal:.2f}")

    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    ax1.plot(seconds, ops, color="tab:blue")
    ax1.set_ylabel("ops/s")
    ax1.set_ylim(bottom=0)
    ax1.axhline(normal, color="grey", linestyle=":", linewidth=1)
    ax2.plot(seconds, [v if v is not None else float("nan") for v in p99], color="tab:red")
    ax2.set_ylabel("p99 latency (ms)")
    ax2.set_yscale("log")
    ax2.set_xlabel("second")
    for s, e in events:
        for ax in (ax1, ax2):
            ax.axvline(s, color="black", linestyle="--", linewidth=1)
        ax1.annotate(e, (s, normal * 1.02), rotation=90, va="bottom", fontsize=8)
    titles = {
        "kill": "replica SIGKILL and recovery",
        "split": "split of a partition (2 -> 3 partitions)",
        "split-move": "split (2 -> 3 partitions), new partition moved to its own group",
        "replace-stream": "acceptor replacement (partition moved to a new stream)",
        "kill-for-good": "a node killed for good, removed and its partitions re-homed (5 nodes)",
    }
    fig.suptitle(f"Amulet DMap: {titles.get(scenario, scenario)} under steady load")
    fig.tight_layout()
    fig.savefig(f"{out_dir}/timeline.png", dpi=110)


if __name__ == "__main__":
    main()
