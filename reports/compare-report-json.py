#!/usr/bin/env python3
"""Compares two nvdet JSON audit reports field by field: the verdicts (the audit's summary, each
backend's outcome and verdict sentence, the manifest check), every output hash (per backend,
context, repeat and request, with the per-token hashes and model completions) and the
divergences. Context values are compared as text, so a report that writes them as numbers
(schema 2) and one that writes them as strings (schema 1) agree. Timings and the run's date are
not compared.

Usage: compare-report-json.py [--ignore-notes] OLD.json NEW.json
(exit 0 when they agree; else 1, with one line naming what differs)
--ignore-notes leaves the backends' notes (plans, tile choices, kernel names) out, for a kernel
change that is meant to change the plan but not a single output bit.
"""
import json
import sys

SUMMARY = ("passed", "nothing_ran", "verify_passed", "backends", "contexts", "cases",
           "divergences", "failed_backends", "skipped_backends")
BACKEND = ("expect", "passed", "skipped", "skip_reason", "verdict", "contexts_run",
           "divergent_contexts", "run_to_run_divergences", "max_distinct_results",
           "max_distinct_completions", "parity_expect", "parity")
DIVERGENCE = ("token", "first_mismatch", "max_abs_diff", "max_rel_diff", "mismatch_count",
              "mismatched_tokens", "tokens", "baseline_notes", "notes", "completion", "first_op")


def contexts_of(report):
    """Context index -> (id, group, {axis: value as text}), from the context table (schema 2) or
    from the cases themselves (schema 1)."""
    out = {}
    for c in report.get("contexts", []):
        out[c["index"]] = (c["id"], c.get("group", ""),
                           {k: str(v) for k, v in c.get("values", {}).items()})
    for c in report["cases"]:
        if "context" in c:
            out[c["context_index"]] = (c["context"], c.get("group", ""),
                                       {k: str(v) for k, v in c.get("context_values", {}).items()})
    return out


def cases_of(report):
    ctx = contexts_of(report)
    out = {}
    for c in report["cases"]:
        cid, group, values = ctx[c["context_index"]]
        requests = {r["request"]: (r["hash"], r.get("token_hashes", []), r.get("completion", []),
                                   r.get("parity")) for r in c["requests"]}
        out[(c["backend"], cid, c.get("repeat", 0))] = (c["context_index"], group, values,
                                                        c.get("notes", {}),
                                                        c.get("generated_tokens", 0), requests)
    return out


def compare(a, b, ignore_notes=False):
    for k in SUMMARY:
        if a["summary"].get(k) != b["summary"].get(k):
            return f"summary.{k} {a['summary'].get(k)} -> {b['summary'].get(k)}"
    if [x["name"] for x in a["backends"]] != [x["name"] for x in b["backends"]]:
        return "backend list"
    for x, y in zip(a["backends"], b["backends"]):
        for k in BACKEND:
            if x.get(k) != y.get(k):
                return f"backend {x['name']} {k}"
    ca, cb = cases_of(a), cases_of(b)
    if set(ca) != set(cb):
        return f"cases: {len(set(ca) - set(cb))} only in old, {len(set(cb) - set(ca))} only in new"
    for key in sorted(ca, key=str):
        x, y = ca[key], cb[key]
        names = ("context index", "group", "context values", "notes", "generated tokens")
        for name, u, v in zip(names, x, y):
            if ignore_notes and name == "notes":
                continue
            if u != v:
                return f"case {key}: {name}"
        if set(x[5]) != set(y[5]):
            return f"case {key}: requests"
        for q in x[5]:
            for name, u, v in zip(("hash", "token hashes", "completion", "parity"), x[5][q], y[5][q]):
                if u != v:
                    return f"case {key} request {q}: {name}"
    if len(a["divergences"]) != len(b["divergences"]):
        return f"divergences {len(a['divergences'])} -> {len(b['divergences'])}"
    for x, y in zip(a["divergences"], b["divergences"]):
        for k in ("backend", "kind", "request", "baseline_context", "context", "repeat") + DIVERGENCE:
            if ignore_notes and k in ("notes", "baseline_notes"):
                continue
            if x.get(k) != y.get(k):
                return f"divergence {x['backend']} {x['context']} request {x['request']}: {k}"
    if (a.get("verify") is None) != (b.get("verify") is None):
        return "verify present in one only"
    if a.get("verify") and a["verify"].get("passed") != b["verify"].get("passed"):
        return "verify.passed"
    return None


def main(args):
    ignore_notes = bool(args) and args[0] == "--ignore-notes"
    if ignore_notes:
        args = args[1:]
    if len(args) != 2:
        usage = [line for line in __doc__.splitlines() if line.startswith("Usage:")]
        print(usage[0], file=sys.stderr)
        return 2
    with open(args[0]) as f:
        a = json.load(f)
    with open(args[1]) as f:
        b = json.load(f)
    what = compare(a, b, ignore_notes)
    if what:
        print(what)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
