#!/usr/bin/env python3
"""Instruction mix of the decode kernel's consumer and producer code from an ncu SASS listing.

Usage: sass-breakdown.py experiments/2-sass-kv1000-batch1.csv

The CSV has one row per SASS instruction (Index, Source, stall samples, warp-level instructions
executed over the whole grid), as `ncu --page source --print-source sass --csv` gives them, cut to
those columns. The consumer warpgroup's tile loop and the producer's are told apart by the
executions of their instructions: a consumer instruction of the tile loop runs once per tile and
consumer warp (4 tiles x 4 warps x 16 CTAs = 256 at KV 1000, batch 1), the producer's page loop
at other counts, and the two sit in separate ranges of the listing (CONSUMER and PRODUCER below,
found by reading it).
"""
import collections
import csv
import sys

CONSUMER = (3400, 4600)  # the swapped form's tile loop and its split epilogue
PRODUCER = (4900, 6400)  # the producer warpgroup's item and tile loops


def opcode(text):
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def main(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    total = sum(int(r["Instructions Executed"] or 0) for r in rows)
    print(f"warp-level instructions executed: {total}")
    for name, (lo, hi) in (("consumer", CONSUMER), ("producer", PRODUCER)):
        mix = collections.Counter()
        samples = 0
        for r in rows[lo:hi]:
            mix[opcode(r["Source"])] += int(r["Instructions Executed"] or 0)
            samples += int(r["Warp Stall Sampling (All Samples)"] or 0)
        n = sum(mix.values())
        top = ", ".join(f"{op} {c}" for op, c in mix.most_common(12))
        print(f"{name} (SASS {lo}-{hi}): {n} instructions, {samples} stall samples; {top}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
