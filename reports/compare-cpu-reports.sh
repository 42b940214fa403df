#!/usr/bin/env bash
# Checks that two nvdet builds give the same results, for a change that must not change any:
#   1. every shipped CPU scenario (quickstart.yaml, fail-expect-invariant.yaml and scenarios/*-cpu.yaml,
#      the selection tests/sharded_sweep_cli_test.cpp audits) is audited with each binary
#      (`audit --format json`); the exit codes, the verdicts (the audit's, each backend's
#      passed/skipped and verdict sentence) and every output hash (per backend, context, repeat and
#      request, the per-token hashes too) must be the same;
#   2. every committed audit report under reports/h200/ (the GPU runs, read back with no GPU) is
#      rendered again by each binary with `nvdet report` (console summary, Markdown, JUnit, HTML,
#      and JSON compared as in 1.); all but the JSON must be the same byte for byte.
# The JSON files are compared field by field (python3's json module), not as text: a change to how
# context values are written (numbers as numbers) is no change of result.
#
# On a GPU machine, NVDET_COMPARE_SCENARIOS="scenarios/a.yaml scenarios/b.yaml" audits those
# scenarios instead of the CPU ones (GPU backends are deterministic run to run, so a change of
# plumbing must leave their hashes alone too) and leaves out the re-rendering of part 2.
# NVDET_COMPARE_IGNORE_NOTES=1 leaves the backends' notes out of part 1, for a kernel change that
# changes a plan (tile or CTA choices the notes name) but must not change one output bit.
#
# Usage: reports/compare-cpu-reports.sh OLD_NVDET NEW_NVDET [OUTDIR]
# Prints one line per scenario and per report, "same" or "differs: what", then a summary; exits 1
# when anything differs, 2 on bad usage. OUTDIR (default: a temporary folder, removed) keeps the
# reports and logs of both binaries.
set -uo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 OLD_NVDET NEW_NVDET [OUTDIR]" >&2
  exit 2
fi
old=$(realpath "$1") new=$(realpath "$2")
for b in "$old" "$new"; do
  [[ -x $b ]] || { echo "$0: '$b' is not an executable" >&2; exit 2; }
done
cd "$(dirname "$0")/.."
if [[ $# -eq 3 ]]; then
  out=$3
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
compare_json=reports/compare-report-json.py
json_flags=()
[[ ${NVDET_COMPARE_IGNORE_NOTES:-0} == 1 ]] && json_flags=(--ignore-notes)
differs=0 compared=0 same=0

# one_line NAME WHAT...: prints the line and counts it.
one_line() {
  local name=$1
  shift
  compared=$((compared + 1))
  if [[ $# -eq 0 ]]; then
    same=$((same + 1))
    printf '%-44s same\n' "$name"
  else
    differs=1
    printf '%-44s differs: %s\n' "$name" "$(IFS=';'; echo "$*")"
  fi
}

# ---- 1. the CPU scenarios, audited by each binary --------------------------------------------
if [[ -n ${NVDET_COMPARE_SCENARIOS:-} ]]; then
  read -r -d '' -a scenarios <<<"$NVDET_COMPARE_SCENARIOS" || true  # spaces or newlines
else
  scenarios=(scenarios/quickstart.yaml scenarios/fail-expect-invariant.yaml)
  for f in scenarios/*-cpu.yaml; do scenarios+=("$f"); done
fi
for scenario in "${scenarios[@]}"; do
  name=$(basename "$scenario" .yaml)
  what=()
  for side in old new; do
    bin=$old
    [[ $side == new ]] && bin=$new
    rm -rf "$out/audit/$side/$name"
    mkdir -p "$out/audit/$side/$name"
    "$bin" audit "$scenario" --format json -q --report-dir "$out/audit/$side/$name" \
      >"$out/audit/$side/$name/stdout.txt" 2>"$out/audit/$side/$name/stderr.txt"
    echo $? >"$out/audit/$side/$name/rc"
  done
  rc_old=$(cat "$out/audit/old/$name/rc") rc_new=$(cat "$out/audit/new/$name/rc")
  [[ $rc_old == "$rc_new" ]] || what+=("exit code $rc_old -> $rc_new")
  a=$out/audit/old/$name/$name.json b=$out/audit/new/$name/$name.json
  if [[ -f $a && -f $b ]]; then
    j=$(python3 "$compare_json" "${json_flags[@]}" "$a" "$b") || what+=("$j")
  elif [[ -f $a || -f $b ]]; then
    what+=("only one binary wrote $name.json")
  fi
  one_line "audit $name (exit $rc_new)" "${what[@]}"
done

# ---- 2. the committed GPU reports, rendered again by each binary -----------------------------
while read -r report; do
  name=$(basename "$report")
  name=${name%.gz}
  name=${name%.json}
  src=$report
  if [[ $report == *.gz ]]; then
    mkdir -p "$out/gz"
    src=$(realpath "$out")/gz/$name.json
    gzip -dc "$report" >"$src"
  fi
  # Only audit reports (bench, bisect, verify and manifest files have other shapes).
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if isinstance(r, dict) and "cases" in r and "divergences" in r else 1)' "$src" || continue
  abs=$(realpath "$src")
  key=$(echo "${report#reports/}" | tr '/' '_')
  what=()
  for side in old new; do
    bin=$old
    [[ $side == new ]] && bin=$new
    d=$out/report/$side/$key
    rm -rf "$d"
    mkdir -p "$d"
    # Run inside the output folder, so that the paths the console names are the same for both.
    (cd "$d" && "$bin" report "$abs" --report-dir . --format md,json,junit,html \
      >console.txt 2>stderr.txt; echo $? >rc)
  done
  o=$out/report/old/$key n=$out/report/new/$key
  [[ $(cat "$o/rc") == "$(cat "$n/rc")" ]] || what+=("exit code $(cat "$o/rc") -> $(cat "$n/rc")")
  cmp -s "$o/console.txt" "$n/console.txt" || what+=("console text")
  cmp -s "$o/stderr.txt" "$n/stderr.txt" || what+=("stderr text")
  cmp -s "$o/$name.md" "$n/$name.md" || what+=("Markdown")
  cmp -s "$o/$name.junit.xml" "$n/$name.junit.xml" || what+=("JUnit XML")
  cmp -s "$o/$name.html" "$n/$name.html" || what+=("HTML")
  if [[ -f $o/$name.json && -f $n/$name.json ]]; then
    j=$(python3 "$compare_json" "$o/$name.json" "$n/$name.json") || what+=("$j")
  elif [[ -f $o/$name.json || -f $n/$name.json ]]; then
    what+=("only one binary wrote $name.json")
  fi
  one_line "report ${report#reports/}" "${what[@]}"
done < <([[ -n ${NVDET_COMPARE_SCENARIOS:-} ]] ||
         find reports/h200 \( -name '*.json' -o -name '*.json.gz' \) | sort)

echo "compared $compared: $same same, $((compared - same)) differ"
exit $differs
