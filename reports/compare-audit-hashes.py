#!/usr/bin/env python3
"""Compares the output hashes of two sets of nvdet JSON audit reports, case by case: for every
report name found under both NEW_DIR and OLD_DIR (searched recursively; `.json.gz` read too), the
number of (backend, context, repeat, request) outputs present in both and how many of them have
the same XXH3 hash. Shows whether a rebuilt nvdet reproduces committed audits bit for bit.

Usage: compare-audit-hashes.py OLD_DIR NEW_DIR   (exit 1 if any shared output differs)
"""
import glob
import gzip
import json
import os
import sys


def reports(root):
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "**", "*.json*"), recursive=True)):
        name = os.path.basename(path).removesuffix(".gz")
        if name.endswith(".json") and not name.startswith("bench-"):
            found.setdefault(name, []).append(path)
    return found


def hashes(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        report = json.load(f)
    if "cases" not in report:
        return None  # not an audit report (a manifest, a bench, a ceiling)
    # Schema 2 names each case's context by index into its context table; schema 1 by id.
    ids = {x["index"]: x["id"] for x in report.get("contexts", [])}
    return {(c["backend"], c["context"] if "context" in c else ids[c["context_index"]],
             c.get("repeat", 0), r["request"]): r["hash"]
            for c in report["cases"] for r in c["requests"]}


def main(old_root, new_root):
    old, new = reports(old_root), reports(new_root)
    differs = False
    for name in sorted(new):
        for new_path in new[name]:
            b = hashes(new_path)
            if b is None:
                continue
            for old_path in old.get(name, []):
                a = hashes(old_path)
                if a is None:
                    continue
                shared = set(a) & set(b)
                same = sum(a[k] == b[k] for k in shared)
                differs |= same != len(shared)
                print(f"{name:40s} {same:5d} of {len(shared):5d} shared outputs equal "
                      f"(old {len(a)}, new {len(b)})  {old_path}")
            if name not in old:
                print(f"{name:40s} no report of that name under {old_root}")
    return 1 if differs else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    sys.exit(main(sys.argv[1], sys.argv[2]))
