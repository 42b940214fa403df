#!/usr/bin/env bash
# reports/run-gpu-configs.sh (and its table, reports/bench-table.py) on the CPU backends (the
# scripts' own logic needs no GPU): two settings of one scenario give one table with a column each
# and a time for every context, and every malformed SPEC is refused with exit 2 before anything
# runs.
# Usage: run_gpu_configs_test.sh SOURCE_DIR BUILD_DIR (BUILD_DIR holds tools/nvdet)
set -uo pipefail
src=$1 build=$2
script=$src/reports/run-gpu-configs.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$src"

spec_auto='auto|scenarios/gemm-cpu.yaml|cpu-reference||batch=(3|4),position=first'
spec_one='one-thread|scenarios/gemm-cpu.yaml|cpu-reference|NVDET_CPU_THREADS=1|batch=(3|4),position=first'
NVDET_CONFIGS_BACKEND=cpu-invariant NVDET_CONFIGS_REPS=2 "$script" "$build" "$out/run" \
  "$spec_auto" "$spec_one" >"$out/log" 2>&1 || { cat "$out/log"; fail "the run exited $?"; }
table=$out/run/configs-table.md
grep -q '^| scenario | context | auto | one-thread | one-thread / auto (time) |$' "$table" ||
  fail "no column per setting"
rows=$(grep -cE '^\| gemm-cpu \| gemm\(batch=[34],position=first\) \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \|$' "$table")
[[ $rows -eq 2 ]] || { cat "$table"; fail "expected 2 timed contexts, got $rows"; }
grep -q 'one-thread (NVDET_CPU_THREADS=1): exit 0' "$out/log" || fail "the setting is not reported"

refused() {
  local want=$1
  shift
  "$script" "$build" "$out/bad" "$@" >"$out/bad.log" 2>&1
  local rc=$?
  [[ $rc -eq 2 ]] || fail "exit $rc, not 2, for: $*"
  grep -q -- "$want" "$out/bad.log" || { cat "$out/bad.log"; fail "no '$want' for: $*"; }
  [[ ! -d $out/bad ]] || fail "a refused run wrote its folder"
}
refused 'is not label|scenario|vendor|settings|filter' 'only-a-label'
refused 'no scenario' 'x|scenarios/no-such.yaml|cpu-reference||'
refused 'is not NAME=VALUE' 'x|scenarios/gemm-cpu.yaml|cpu-reference|threads|'
refused 'given twice' 'x|scenarios/gemm-cpu.yaml|cpu-reference||' 'x|scenarios/gemm-cpu.yaml|cpu-reference||'
"$script" "$build" "$out/bad" >"$out/bad.log" 2>&1
[[ $? -eq 2 ]] && grep -q usage "$out/bad.log" || fail "no usage line without a SPEC"
echo "run-gpu-configs.sh: ok"
