#!/usr/bin/env bash
# Runs every libFuzzer target of an NVDET_FUZZ build for a bounded time each and fails on any
# crash, sanitizer report, leak, uncaught exception, timeout (one input over 10 s) or memory blow-up
# (over 2 GB). Seeds: tests/fuzz/corpus/<target>, tests/fuzz/regressions/<target>, and for the
# scenario loader scenarios/ and tests/malformed/. Findings (the crashing inputs) are left under
# the work folder's artifacts/<target>/: commit each under tests/fuzz/regressions/<target>/.
#
#   tests/fuzz/run-fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET]
#   NVDET_FUZZ_SECONDS   seconds per target when not given (default 60)
#   NVDET_FUZZ_WORK      where the growing corpora, logs and artifacts go (default: a temp folder)
#   NVDET_FUZZ_TARGETS   the targets to run (default: all seven)
set -euo pipefail
build=${1:?usage: run-fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET]}
seconds=${2:-${NVDET_FUZZ_SECONDS:-60}}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${NVDET_FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/nvdet-fuzz.XXXXXX")}
targets=${NVDET_FUZZ_TARGETS:-scenario npy safetensors manifest checkpoint_config audit_report served_answer}
# The checkpoint-config target writes its config.json for every input: keep that in memory.
fuzz_tmp=${TMPDIR:-}
if [[ -z $fuzz_tmp && -d /dev/shm && -w /dev/shm ]]; then fuzz_tmp=/dev/shm; fi
status=0
for t in $targets; do
  corpus=$work/corpus/$t
  artifacts=$work/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  for d in "$root/tests/fuzz/corpus/$t" "$root/tests/fuzz/regressions/$t"; do
    [[ -d $d ]] && seeds+=("$d")
  done
  if [[ $t == scenario ]]; then seeds+=("$root/scenarios" "$root/tests/malformed"); fi
  log=$work/$t.log
  if [[ ! -x $build/tests/fuzz/fuzz_$t ]]; then
    echo "fuzz_$t: FAILED, not built in $build (configure it with -DNVDET_FUZZ=ON and build fuzz_$t)"
    status=1
    continue
  fi
  # The outer timeout is the backstop for a fuzzer that cannot stop itself: libFuzzer's own
  # timeout and out-of-memory handlers run inside the process and can deadlock there (they
  # symbolize stacks while the fuzzed code may hold the allocator's locks), which would otherwise
  # hang CI until its own limit. Stacks are left unsymbolized for the same reason; the artifact
  # reproduces the finding with a symbolized report.
  if TMPDIR=${fuzz_tmp:-/tmp} ASAN_OPTIONS=${ASAN_OPTIONS:-symbolize=0} \
      timeout --kill-after=20 "$((seconds + 120))" \
      "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=2048 -max_len=16384 -print_final_stats=1 -artifact_prefix="$artifacts/" \
      "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    result=ok
  else
    rc=$?
    result=FAILED
    if ((rc == 124 || rc == 137)); then result="FAILED (did not stop within $((seconds + 120)) s)"; fi
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "fuzz_$t: $result, $runs executions in ${seconds} s, corpus $(ls "$corpus" | wc -l) inputs"
  if [[ $result == FAILED* ]]; then
    tail -n 40 "$log"
    echo "fuzz_$t: the input is under $artifacts; commit it under tests/fuzz/regressions/$t/"
  fi
done
echo "fuzz logs, corpora and artifacts: $work"
exit $status
