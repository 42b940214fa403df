#!/usr/bin/env python3
"""Median duration of each kernel in `ncu --metrics gpu__time_duration.sum --csv` output.

Usage: reports/ncu-durations.py NCU_CSV...

Prints, per file, one line per (kernel, grid): launches, median microseconds, kernel name. The CSV
may start with the profiled program's own output: everything before ncu's "ID" header is skipped.
"""
import csv
import statistics
import sys


def durations(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    start = next((i for i, r in enumerate(rows) if r[:1] == ["ID"]), None)
    if start is None:
        raise SystemExit(f"{path}: no ncu CSV header (a row starting with \"ID\")")
    header = rows[start]
    try:
        name, grid, metric, value = (header.index(k) for k in
                                     ("Kernel Name", "Grid Size", "Metric Name", "Metric Value"))
    except ValueError as e:
        raise SystemExit(f"{path}: {e}")
    by_kernel = {}
    for r in rows[start + 1:]:
        if len(r) != len(header) or r[metric] != "gpu__time_duration.sum":
            continue
        key = (r[name].split("(")[0], r[grid])
        by_kernel.setdefault(key, []).append(float(r[value].replace(",", "")) / 1000.0)
    return by_kernel


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__.strip())
    for path in sys.argv[1:]:
        print(f"== {path}")
        for (kernel, grid), us in durations(path).items():
            print(f"{len(us):3d} x {statistics.median(us):9.2f} us  grid {grid}  {kernel}")


if __name__ == "__main__":
    main()
