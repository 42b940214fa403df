#!/usr/bin/env python3
"""One Markdown table from several `nvdet bench` CSVs of the same contexts (run-gpu-ab.sh,
run-gpu-configs.sh): per context, BACKEND's time against the vendor's (and its median) under each
LABEL (a label may name several CSVs, one per scenario); with two labels, a last column of the
second's time over the first's.

Usage: bench-table.py BACKEND LABEL=CSV [LABEL=CSV ...]  (a CSV that cannot be read is named
above the table, and its column shows '-')
"""
import csv
import sys


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        print(__doc__[__doc__.index("Usage:"):].strip(), file=sys.stderr)
        return 2
    backend = argv[1]
    labels, rows, order = [], {}, []
    for arg in argv[2:]:
        label, path = arg.split("=", 1)
        if label not in labels:  # a label may come with several CSVs (one per scenario)
            labels.append(label)
        try:
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    if r["backend"] != backend:
                        continue
                    key = (r["scenario"], r["context"])
                    if key not in rows:
                        rows[key] = {}
                        order.append(key)
                    rows[key][label] = (float(r["time_ratio"]), float(r["median_us"]))
        except OSError as e:
            print(f"missing: {path} ({e.strerror})")
    pair = len(labels) == 2
    print(f"{backend}'s time against the vendor's (median us) under each of: {', '.join(labels)}")
    print()
    head = ["scenario", "context"] + labels + ([f"{labels[1]} / {labels[0]} (time)"] if pair else [])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key in order:
        got = [rows[key].get(label) for label in labels]
        cells = [f"{v[0]:.3f} ({v[1]:.1f})" if v else "-" for v in got]
        if pair:
            a, b = got
            cells.append(f"{b[1] / a[1]:.3f}" if a and b and a[1] > 0 else "-")
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
