#!/usr/bin/env bash
# reports/run-compute-sanitizer.sh with a stand-in for compute-sanitizer (the script's own logic
# needs no GPU): six processes (memcheck and initcheck in two halves each, racecheck, synccheck),
# each half's gtest filter covering its tests and leaving the other half's out, one summary line
# each, exit 0 only when every one ran clean, and a tool that finds an error fails the run.
# Usage: run_compute_sanitizer_test.sh SOURCE_DIR
set -uo pipefail
src=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The stand-in: prints its arguments and the tool's summary line; FAKE_FAIL=TOOL makes that tool
# report an error and exit 99, as compute-sanitizer does with --error-exitcode 99.
cat >"$out/cs" <<'SH'
#!/usr/bin/env bash
[[ $1 == --version ]] && { echo "stand-in"; exit 0; }
echo "args: $*"
tool=$2
if [[ ${FAKE_FAIL:-} == "$tool" ]]; then echo "========= ERROR SUMMARY: 1 error"; exit 99; fi
echo "========= ERROR SUMMARY: 0 errors"
SH
chmod +x "$out/cs"
run() {  # run OUTDIR: the script with the stand-in
  COMPUTE_SANITIZER=$out/cs NVDET_BUILD=$out/build bash "$src/reports/run-compute-sanitizer.sh" \
    "$1" >"$1.log" 2>&1
}

run "$out/clean" || { cat "$out/clean.log"; fail "a clean run exited $?"; }
[[ $(wc -l <"$out/clean/summary.txt") -eq 6 ]] || fail "expected 6 summary lines"
for name in memcheck-gemm memcheck-rest initcheck-gemm initcheck-rest racecheck synccheck; do
  grep -qE "^$name +exit +0 " "$out/clean/summary.txt" || fail "no clean line for $name"
done
filter_of() { grep -o -- '--gtest_filter=[^ ]*' "$out/clean/$1.txt" | head -n 1; }
gemm=$(filter_of memcheck-gemm) rest=$(filter_of memcheck-rest)
[[ $gemm == --gtest_filter=GpuGemm\*:GpuMoe\*:InvariantKernels.\*:GpuFp8\*-* ]] ||
  fail "the GEMM half's filter: $gemm"
[[ $rest == --gtest_filter=\*-*:GpuGemm\*:GpuMoe\*:InvariantKernels.\*:GpuFp8\* ]] ||
  fail "the other half's filter does not leave the GEMM tests out: $rest"
[[ $gemm == *Bf16ProbeRowIsIdenticalForEveryBatchFrom1To512AndPowersOfTwo* &&
  $rest == *Bf16ProbeRowIsIdenticalForEveryBatchFrom1To512AndPowersOfTwo* ]] ||
  fail "the 512-batch sweep is not left out of both halves"
grep -q -- '--leak-check full' "$out/clean/memcheck-rest.txt" || fail "memcheck without leak checks"

FAKE_FAIL=initcheck run "$out/dirty" && fail "a run whose initcheck found an error exited 0"
grep -qE '^initcheck-rest +exit +99 ' "$out/dirty/summary.txt" || fail "the error is not in the summary"
echo "ok: six clean processes pass, an error fails the run"
