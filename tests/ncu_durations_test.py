#!/usr/bin/env python3
"""reports/ncu-durations.py on ncu CSV made here: the program's own output before ncu's header is
skipped, launches of one (kernel, grid) are counted and their median taken, durations with
thousands separators are read, another metric is ignored, and a file without ncu's header fails.

Usage: ncu_durations_test.py SOURCE_DIR (exit 0 when every check holds)
"""
import csv
import io
import os
import subprocess
import sys
import tempfile

HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
          "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
          "Metric Value"]


def row(i, kernel, grid, metric, value):
    return [str(i), "1", "nvdet", "127.0.0.1", kernel, "1", "7", "(128, 1, 1)", grid, "0", "9.0",
            "Command line profiler metrics", metric, "ns", value]


def ncu_csv():
    out = io.StringIO()
    out.write("| context | backend | median us |\n| gemm(batch=1) | cublas | 9000 |\n")
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    w.writerow(HEADER)
    merge = "void nvdet::merge_kernel<64>(nvdet::Params)"
    rows = [row(0, merge, "(1, 32, 1)", "gpu__time_duration.sum", "4,352"),
            row(1, merge, "(1, 32, 1)", "gpu__time_duration.sum", "10,272"),
            row(2, merge, "(1, 32, 1)", "gpu__time_duration.sum", "4,448"),
            row(3, merge, "(8, 32, 1)", "gpu__time_duration.sum", "900"),
            row(4, "vendor_kernel", "(132, 1, 1)", "gpu__time_duration.sum", "50,272"),
            row(5, "vendor_kernel", "(132, 1, 1)", "dram__bytes.sum", "123,456,789")]
    w.writerows(rows)
    return out.getvalue()


def run(script, path):
    return subprocess.run([sys.executable, script, path], capture_output=True, text=True)


def main(source_dir):
    script = os.path.join(source_dir, "reports", "ncu-durations.py")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.csv")
        with open(good, "w") as f:
            f.write(ncu_csv())
        r = run(script, good)
        lines = r.stdout.splitlines()
        want = ["  3 x      4.45 us  grid (1, 32, 1)  void nvdet::merge_kernel<64>",
                "  1 x      0.90 us  grid (8, 32, 1)  void nvdet::merge_kernel<64>",
                "  1 x     50.27 us  grid (132, 1, 1)  vendor_kernel"]
        if r.returncode != 0 or lines[1:] != want:
            failures.append(f"good file: exit {r.returncode}, got {lines!r}, want {want!r}")
        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("==PROF== Disconnected\nno profile here\n")
        r = run(script, bad)
        if r.returncode == 0 or "no ncu CSV header" not in r.stderr:
            failures.append(f"file without a header: exit {r.returncode}, stderr {r.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
