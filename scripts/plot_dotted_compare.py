#!/usr/bin/env python3
"""Plots and summarizes DottedDB against MerkleDB (amulet-dotted-bench):
scripts/plot_dotted_compare.py DIR

Reads DIR/anti_entropy.csv, DIR/latency.csv, DIR/deletes.csv and
DIR/strip.csv and DIR/churn.csv; draws DIR/compare.png (anti-entropy bytes per second by
kind, metadata per virtual node, replication latency CDFs, objects stored
under deletes, DottedDB's strip latency, clock entries under churn) and
writes DIR/summary.md with the ratios DottedDB / MerkleDB per
configuration (DottedDB §V-E Table I: state changed between anti-entropy
runs and replication loss, H or L; MerkleDB also by objects per leaf).
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main(out):
    rows = read(os.path.join(out, "anti_entropy.csv"))
    lat = read(os.path.join(out, "latency.csv"))
    dels = read(os.path.join(out, "deletes.csv"))
    strip = read(os.path.join(out, "strip.csv"))
    churn = read(os.path.join(out, "churn.csv"))
    fig, axes = plt.subplots(2, 3, figsize=(20, 10))
    ax = [axes[0], axes[1]]

    names = [f"{r['system'][0]}:{r['config']}" for r in rows]
    data = [float(r["object_data_per_s"]) / 1e3 for r in rows]
    meta = [float(r["object_meta_per_s"]) / 1e3 for r in rows]
    sync = [float(r["sync_meta_per_s"]) / 1e3 for r in rows]
    a = ax[0][0]
    a.bar(names, data, label="object data")
    a.bar(names, meta, bottom=data, label="object metadata")
    a.bar(names, sync, bottom=[d + m for d, m in zip(data, meta)], label="sync metadata")
    a.set_ylabel("anti-entropy KB/s")
    a.set_title("Anti-entropy traffic (D: DottedDB, M: MerkleDB leaf/state/loss)")
    a.tick_params(axis="x", rotation=60)
    a.legend()

    a = ax[0][1]
    node = [float(r["metadata_bytes_per_vnode"]) / 1e3 for r in rows]
    clocks = [float(r["object_clock_bytes_per_vnode"]) / 1e3 for r in rows]
    a.bar(names, node, label="node metadata (NC+DKM+WM+NSK / hash trees)")
    a.bar(names, clocks, bottom=node, label="object clocks")
    a.set_ylabel("KB per virtual node")
    a.set_title("Metadata at the end of the run")
    a.tick_params(axis="x", rotation=60)
    a.legend()

    a = ax[1][0]
    series = {}
    for r in lat:
        series.setdefault((r["system"], r["config"]), []).append(
            (float(r["quantile"]), float(r["latency_ms"]))
        )
    for (system, config), points in sorted(series.items()):
        if config not in ("HH", "LL", "HHH", "LHH", "HLL", "LLL"):
            continue
        a.plot([ms / 1000 for _, ms in points], [q for q, _ in points], label=f"{system} {config}")
    a.set_xscale("log")
    a.set_xlabel("replication latency (s, virtual)")
    a.set_ylabel("CDF")
    a.set_title("Write to stored at another replica")
    a.legend()

    a = ax[1][1]
    for system in ("DottedDB", "MerkleDB"):
        pts = [r for r in dels if r["system"] == system]
        a.plot([int(r["second"]) for r in pts], [float(r["objects_stored"]) for r in pts], label=f"{system} stored")
    pts = [r for r in dels if r["system"] == "DottedDB"]
    a.plot([int(r["second"]) for r in pts], [int(r["live_keys"]) for r in pts], "--", label="live keys (ideal)")
    a.set_xlabel("second (virtual)")
    a.set_ylabel("objects stored / N")
    a.set_title("50% updates, 50% deletes (Fig. 3)")
    a.legend()
    a = axes[0][2]
    curves = {}
    for r in strip:
        curves.setdefault((r["strip_interval_s"], r["loss"]), []).append(
            (float(r["quantile"]), float(r["latency_ms"]))
        )
    for (interval, loss), points in sorted(curves.items(), key=lambda kv: (float(kv[0][0]), kv[0][1])):
        a.plot([ms / 1000 for _, ms in points], [q for q, _ in points], label=f"strip {interval} s, loss {float(loss):.0%}")
    a.set_xlabel("seconds to a stripped context at another replica (virtual)")
    a.set_ylabel("CDF")
    a.set_title("DottedDB strip latency, sync every 100 ms (Fig. 2)")
    a.legend()
    a = axes[1][2]
    for system in ("DottedDB", "MerkleDB"):
        for replication in ("3", "6"):
            pts = [r for r in churn if r["system"] == system and r["replication"] == replication]
            a.plot(
                [int(r["second"]) for r in pts],
                [float(r["clock_entries_per_object"]) for r in pts],
                label=f"{system} N={replication}",
            )
    a.set_xlabel("second (virtual); a virtual node replaced every 4 s")
    a.set_ylabel("clock entries per stored object")
    a.set_title("Object clocks under churn (Fig. 1)")
    a.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "compare.png"), dpi=110)

    dotted = {r["config"]: r for r in rows if r["system"] == "DottedDB"}
    lines = [
        "# DottedDB against MerkleDB (simulated, virtual time)",
        "",
        "| MerkleDB config | DottedDB config | AE bytes/s D/M | node metadata D/M | metadata incl. object clocks D/M | repl p99 ms D / M |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["system"] != "MerkleDB":
            continue
        d = dotted[r["config"][1:]]
        ae = float(d["ae_bytes_per_s"]) / float(r["ae_bytes_per_s"])
        nm = float(d["metadata_bytes_per_vnode"]) / float(r["metadata_bytes_per_vnode"])
        tot = (float(d["metadata_bytes_per_vnode"]) + float(d["object_clock_bytes_per_vnode"])) / (
            float(r["metadata_bytes_per_vnode"]) + float(r["object_clock_bytes_per_vnode"])
        )
        lines.append(
            f"| {r['config']} ({r['objects_per_leaf']} objects/leaf) | {d['config']} | {ae:.2f} | {nm:.2f} | {tot:.2f} | {d['repl_p99_ms']} / {r['repl_p99_ms']} |"
        )
    last = {}
    for r in dels:
        last[r["system"]] = r
    lines += ["", "| strip interval | loss | p50 ms | p90 ms | p99 ms |", "|---|---|---|---|---|"]
    for (interval, loss), points in sorted(curves.items(), key=lambda kv: (float(kv[0][0]), kv[0][1])):
        at = dict(points)
        lines.append(f"| {interval} s | {float(loss):.0%} | {at[0.5]:.0f} | {at[0.9]:.0f} | {at[0.99]:.0f} |")
    final = {}
    for r in churn:
        final[(r["system"], r["replication"])] = r
    lines += ["", "| clock entries per object after churn | N=3 | N=6 |", "|---|---|---|"]
    for system in ("DottedDB", "MerkleDB"):
        lines.append(
            f"| {system} | {float(final[(system, '3')]['clock_entries_per_object']):.2f} | {float(final[(system, '6')]['clock_entries_per_object']):.2f} |"
        )
    lines += [
        "",
        f"Deletes after {last['DottedDB']['second']} s: DottedDB stores {last['DottedDB']['objects_stored']} objects, "
        f"MerkleDB {last['MerkleDB']['objects_stored']}, live keys {last['DottedDB']['live_keys']}.",
    ]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
