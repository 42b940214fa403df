#!/usr/bin/env python3
"""reports/compare-report-json.py on small reports made here: equal reports agree, a changed note
differs unless --ignore-notes, a changed hash or verdict differs either way, bad usage exits 2.

Usage: compare_report_json_test.py SOURCE_DIR (exit 0 when every check holds)
"""
import copy
import json
import os
import subprocess
import sys
import tempfile


def report():
    return {
        "summary": {"passed": True, "backends": 1, "contexts": 2, "cases": 2, "divergences": 0},
        "backends": [{"name": "cuda-invariant", "expect": "invariant", "passed": True,
                      "verdict": "one result per request"}],
        "contexts": [{"index": 0, "id": "gemm(batch=1)", "values": {"batch": 1}},
                     {"index": 1, "id": "gemm(batch=64)", "values": {"batch": 64}}],
        "cases": [{"backend": "cuda-invariant", "context_index": i, "repeat": 0,
                   "notes": {"kernel": "gemm_wgmma", "tile": "128x256"},
                   "requests": [{"request": 0, "hash": f"{0x5eed + i:032x}",
                                 "token_hashes": []}]} for i in range(2)],
        "divergences": [],
    }


def main(source_dir):
    script = os.path.join(source_dir, "reports", "compare-report-json.py")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def write(name, r):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                json.dump(r, f)
            return path

        def run(*args):
            return subprocess.run([sys.executable, script, *args], capture_output=True,
                                  text=True).returncode

        def expect(what, got, want):
            if got != want:
                failures.append(f"{what}: exit {got}, expected {want}")

        base = write("base.json", report())
        notes = report()
        notes["cases"][1]["notes"]["tile"] = "128x224"
        notes_path = write("notes.json", notes)
        both = copy.deepcopy(notes)
        both["cases"][1]["requests"][0]["hash"] = f"{0xbad:032x}"
        both_path = write("both.json", both)
        verdict = report()
        verdict["backends"][0]["passed"] = False
        verdict_path = write("verdict.json", verdict)

        expect("same reports", run(base, base), 0)
        expect("a changed note", run(base, notes_path), 1)
        expect("a changed note, --ignore-notes", run("--ignore-notes", base, notes_path), 0)
        expect("a changed note and hash, --ignore-notes", run("--ignore-notes", base, both_path), 1)
        expect("a changed verdict, --ignore-notes", run("--ignore-notes", base, verdict_path), 1)
        expect("one file only", run(base), 2)
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
