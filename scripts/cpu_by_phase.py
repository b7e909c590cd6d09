"""Node CPU per operation by phase of a bench-kv run.

Usage: cpu_by_phase.py SAMPLES SERIES_CSV  (SAMPLES from
scripts/node-cpu-sampler, SERIES_CSV a bench-kv series.csv). Prints, for
every Amulet backend's run and phase (load, warmup, measure, drain), the
wall seconds, operations, node CPU seconds and µs per operation."""

import collections
import csv
import os
import sys


def main(samples_path: str, series_path: str) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    samples = []
    for line in open(samples_path):
        parts = line.split()
        if len(parts) == 3:
            samples.append((float(parts[0]), int(parts[1]), parts[2]))

    def at(t):
        """The last sample at or before `t`."""
        best = None
        for s in samples:
            if s[0] > t:
                break
            best = s
        return best

    groups = collections.defaultdict(list)
    for r in csv.DictReader(open(series_path)):
        if r["backend"].startswith("amulet"):
            groups[(r["started_unix"], r["backend"], r["workload"], r["phase"])].append(r)
    for (started, backend, workload, phase), rows in sorted(groups.items()):
        seconds = sorted(int(r["second"]) for r in rows)
        t0, t1 = int(started) + seconds[0], int(started) + seconds[-1] + 1
        ops = sum(int(r["ops"]) for r in rows)
        a, b = at(t0), at(t1)
        if not a or not b or a[2] != b[2]:
            continue  # not sampled, or two clusters
        cpu = (b[1] - a[1]) / hz
        print(
            f"{started} {backend:16} {workload:8} {phase:8} {t1 - t0:3d} s "
            f"ops {ops:7d} cpu {cpu:6.2f} s {cpu * 1e6 / max(ops, 1):8.1f} µs/op"
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
