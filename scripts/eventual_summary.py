"""Table II and the metadata table of scripts/bench-eventual.

Usage: eventual_summary.py OUT_DIR  (reads results.csv and
eventual-status-<backend>.csv; writes eventual-status.csv, eventual.md and
update-latency.png)."""

import csv
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MAPS = {"amulet-eventual": "bench-dotted", "amulet-merkle": "bench-merkle"}

NAMES = {
    "amulet-eventual": "DottedDB",
    "amulet-merkle": "MerkleDB",
    "etcd": "etcd",
}


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def num(row, key):
    value = row.get(key, "")
    return float(value) if value not in ("", None) else None


def main(out: Path) -> None:
    rows = [r for r in csv.DictReader(open(out / "results.csv")) if r["workload"] != "load"]
    # Every run of each (backend, workload), oldest first: bench-eventual
    # runs the two eventual backends in rounds of alternating order, each
    # on its own cluster; a figure is the median over the rounds.
    runs = defaultdict(list)
    for r in rows:
        runs[(r["backend"], r["workload"])].append(r)
    rounds = max((len(v) for (b, _), v in runs.items() if b in MAPS), default=0)
    lines = ["# Eventual maps on real processes (DottedDB §V, Table II)", ""]
    lines.append("Latencies in ms (mean / p50 / p99 / p99.9); throughput in ops/s.")
    lines.append(
        f"Each eventual backend's figure is the median of its {rounds} run(s) (one per round, "
        "each on a fresh cluster of its own, the order alternating by round); etcd ran once."
    )
    lines.append("Ratios: DottedDB over MerkleDB and over etcd (below 1: DottedDB lower).")
    lines.append("")
    lines.append("| workload | op | backend | ops/s | mean | p50 | p99 | p99.9 |")
    lines.append("|---|---|---|---|---|---|---|---|")
    bars = []
    per_round = []
    for workload in sorted({w for _, w in runs}):
        for op in ("read", "update", "rmw"):
            figures = {}
            each = {}
            for backend in NAMES:
                rs = [r for r in runs.get((backend, workload), []) if num(r, f"{op}_ops")]
                if not rs:
                    continue
                each[backend] = [
                    {
                        "ops": num(r, "ops_per_sec"),
                        "mean": num(r, f"{op}_mean_us") / 1000,
                        "p50": num(r, f"{op}_p50_us") / 1000,
                        "p99": num(r, f"{op}_p99_us") / 1000,
                        "p999": num(r, f"{op}_p999_us") / 1000,
                    }
                    for r in rs
                ]
                f = {k: median([x[k] for x in each[backend]]) for k in each[backend][0]}
                figures[backend] = f
                lines.append(
                    f"| {workload} | {op} | {NAMES[backend]} | {f['ops']:.0f} | {f['mean']:.2f} | "
                    f"{f['p50']:.2f} | {f['p99']:.2f} | {f['p999']:.2f} |"
                )
                bars.append((f"{workload}/{op}\n{NAMES[backend]}", f["mean"], f["p99"]))
            d = figures.get("amulet-eventual")
            for other in ("amulet-merkle", "etcd"):
                o = figures.get(other)
                if d and o:
                    lines.append(
                        f"| {workload} | {op} | DottedDB / {NAMES[other]} | "
                        f"{d['ops'] / o['ops']:.2f} | {d['mean'] / o['mean']:.2f} | "
                        f"{d['p50'] / o['p50']:.2f} | {d['p99'] / o['p99']:.2f} | "
                        f"{d['p999'] / o['p999']:.2f} |"
                    )
            ds, ms = each.get("amulet-eventual", []), each.get("amulet-merkle", [])
            for i, (a, b) in enumerate(zip(ds, ms)):
                per_round.append(
                    f"| {i + 1} | {workload} | {op} | {a['ops'] / b['ops']:.2f} | "
                    f"{a['p50'] / b['p50']:.2f} | {a['p99'] / b['p99']:.2f} |"
                )
    cpu_path = out / "cpu-eventual.csv"
    if cpu_path.exists():
        cpu = defaultdict(list)
        for r in csv.DictReader(open(cpu_path)):
            cpu[r["backend"]].append(float(r["cpu_us_per_op"]))
        if cpu:
            lines += [
                "",
                "Node CPU per operation (the three nodes' user + system time over the "
                "backend's run, load included, divided by its operations; each run, then the median):",
                "",
                "| backend | runs (µs/op) | median µs/op |",
                "|---|---|---|",
            ]
            for backend in MAPS:
                if cpu.get(backend):
                    runs_us = ", ".join(f"{x:.0f}" for x in cpu[backend])
                    lines.append(f"| {NAMES[backend]} | {runs_us} | {median(cpu[backend]):.0f} |")
    if per_round:
        lines += [
            "",
            "Each round's DottedDB / MerkleDB ratios (rounds alternate which backend runs first):",
            "",
            "| round | workload | op | ops/s | p50 | p99 |",
            "|---|---|---|---|---|---|",
        ] + per_round
    # One snapshot per backend, taken 5 s after its own run (bench-kv runs
    # the eventual backends one at a time), of that backend's map only;
    # joined into eventual-status.csv.
    status_rows = []
    header = None
    for backend, map_name in MAPS.items():
        path = out / f"eventual-status-{backend}.csv"
        if path.exists():
            reader = csv.DictReader(open(path))
            header = reader.fieldnames
            status_rows += [r for r in reader if r["map"] == map_name]
    status_path = out / "eventual-status.csv"
    if status_rows:
        with open(status_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=header)
            writer.writeheader()
            writer.writerows(status_rows)
    if status_path.exists():
        lines += [
            "",
            "Every virtual node 5 s after its own backend's last run (load, workloads, 5 quiet",
            "seconds, on a cluster of its own), summed per map (3 nodes):",
            "",
        ]
        lines.append(
            "| map | virtual nodes | objects | tombstones | metadata bytes | per node | "
            "dot-key entries | non-stripped | anti-entropy bytes sent |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|")
        sums = defaultdict(lambda: defaultdict(int))
        nodes = defaultdict(set)
        for r in csv.DictReader(open(status_path)):
            s = sums[r["map"]]
            s["vnodes"] += 1
            nodes[r["map"]].add(r["node"])
            for k in ("keys", "tombstones", "metadata_bytes", "dot_keys", "non_stripped", "sync_bytes_sent"):
                s[k] += int(r[k])
        for name, s in sorted(sums.items()):
            per_node = s["metadata_bytes"] / max(1, len(nodes[name]))
            lines.append(
                f"| {name} | {s['vnodes']} | {s['keys']} | {s['tombstones']} | {s['metadata_bytes']} | "
                f"{per_node:.0f} | {s['dot_keys']} | {s['non_stripped']} | {s['sync_bytes_sent']} |"
            )
    (out / "eventual.md").write_text("\n".join(lines) + "\n")
    if bars:
        fig, ax = plt.subplots(figsize=(max(6, len(bars) * 0.9), 4))
        xs = range(len(bars))
        ax.bar([x - 0.2 for x in xs], [b[1] for b in bars], width=0.4, label="mean")
        ax.bar([x + 0.2 for x in xs], [b[2] for b in bars], width=0.4, label="p99")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([b[0] for b in bars], fontsize=7)
        ax.set_ylabel("latency (ms)")
        ax.set_title("Eventual maps: DottedDB, the MerkleDB baseline and etcd (same run)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "update-latency.png", dpi=120)
    print((out / "eventual.md").read_text())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
