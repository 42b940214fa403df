#!/usr/bin/env bash
# Produces the committed GPU reports: run from the repository root on a GPU machine, with an
# nvdet build in $NVDET_BUILD (default build-gpu/; see reports/README.md). Audits the scenarios
# listed in $NVDET_AUDIT and benches those in $NVDET_BENCH (each SCENARIO or SCENARIO@REGEX), writing
# everything under $1 (default reports/out); prints a short table last. Every step is logged
# with its exact command in commands.log.
set -uo pipefail
out=${1:-reports/out}
mkdir -p "$out"
build=${NVDET_BUILD:-build-gpu}
# The build folder as an absolute path (the folder may be given either way).
build_dir=$(cd "$build" 2>/dev/null && pwd) || { echo "$0: no build folder '$build'" >&2; exit 2; }
export LD_LIBRARY_PATH=$build_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvdet=$build/tools/nvdet
log=$out/commands.log
: >"$log"
step() {  # step NAME COMMAND...: run, keep its output in $out/NAME.txt and its exit code
  local name=$1
  shift
  echo "\$ $*" >>"$log"
  local t0=$SECONDS
  timeout "${NVDET_STEP_TIMEOUT:-300}" "$@" >"$out/$name.txt" 2>&1
  local rc=$?  # 124: the step ran past NVDET_STEP_TIMEOUT seconds
  echo "  -> exit $rc in $((SECONDS - t0)) s" >>"$log"
  printf '%-28s exit %d  %4d s\n' "$name" "$rc" "$((SECONDS - t0))" >>"$out/summary.txt"
}
step info "$nvdet" info
[[ -n ${NVDET_SKIP_TESTS:-} ]] || step gpu-tests "$build/tests/nvdet_gpu_tests"
for s in ${NVDET_AUDIT:-}; do
  step "audit-$(basename "$s" .yaml)" "$nvdet" audit "$s" --report-dir "$out" --format md,json,html
done
for entry in ${NVDET_BENCH:-}; do  # SCENARIO or SCENARIO@FILTER-REGEX
  s=${entry%%@*}
  filter=${entry#"$s"}
  step "bench-$(basename "$s" .yaml)" "$nvdet" bench "$s" --report-dir "$out" --format md,json,csv \
    ${filter:+--filter "${filter#@}"}
done
cat "$out/summary.txt"
