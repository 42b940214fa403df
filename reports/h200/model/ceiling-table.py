#!/usr/bin/env python3
"""Prints a Markdown table of a model audit's decode throughput per case beside the plain PyTorch
loop's (torch-ceiling.py) for the same batch: nvdet seconds / ceiling seconds is the harness
overhead. Arguments: pairs of (nvdet audit JSON report, torch-ceiling JSON); a missing file is
reported and skipped."""
import json
import re
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"(skipped {path}: {e})")
        return None


def main(args):
    if len(args) % 2:
        sys.exit("usage: ceiling-table.py AUDIT.json CEILING.json [AUDIT.json CEILING.json ...]")
    for audit_path, ceiling_path in zip(args[::2], args[1::2]):
        audit, ceiling = load(audit_path), load(ceiling_path)
        if audit is None or ceiling is None:
            continue
        new_tokens = ceiling["model"]["new_tokens"]
        torch_s = {r["batch"]: r["seconds"] for r in ceiling["runs"]}
        print(f"\n{audit['scenario']['name']} ({ceiling['model']['layers']} layers, "
              f"{new_tokens} new tokens; ceiling: PyTorch {ceiling['torch']} on {ceiling['device']})\n")
        print("| backend | context | nvdet s | tokens/s | ceiling s | ceiling tokens/s | nvdet / ceiling |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for c in audit["cases"]:
            m = re.search(r"batch=(\d+)", c["context"])
            if not m:
                continue
            b = int(m.group(1))
            tps = b * new_tokens / c["seconds"]
            if b in torch_s:
                t = torch_s[b]
                print(f"| {c['backend']} | {c['context']} | {c['seconds']:.2f} | {tps:.0f} | {t:.2f} | "
                      f"{b * new_tokens / t:.0f} | {c['seconds'] / t:.2f}x |")
            else:
                print(f"| {c['backend']} | {c['context']} | {c['seconds']:.2f} | {tps:.0f} | - | - | - |")


if __name__ == "__main__":
    main(sys.argv[1:])
