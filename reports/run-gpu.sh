#!/usr/bin/env bash
# Produces the committed GPU reports: run from the repository root on a GPU machine, with an
# nvdet build in build-gpu/ (see README.md, "Reports"). Writes everything under $1 (default
# reports/out) and prints a short table last. Each step is logged with its exact command.
set -uo pipefail
out=${1:-reports/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/build-gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvdet=build-gpu/tools/nvdet
log=$out/commands.log
: >"$log"
step() {  # step NAME COMMAND...: run, keep its output in $out/NAME.txt and its exit code
  local name=$1
  shift
  echo "\$ $*" >>"$log"
  local t0=$SECONDS
  "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "  -> exit $rc in $((SECONDS - t0)) s" >>"$log"
  printf '%-28s exit %d  %4d s\n' "$name" "$rc" "$((SECONDS - t0))" >>"$out/summary.txt"
}
step info "$nvdet" info
step gpu-tests build-gpu/tests/nvdet_gpu_tests --gtest_brief=1
for s in ${NVDET_AUDIT_SCENARIOS:-}; do
  step "audit-$(basename "$s" .yaml)" "$nvdet" audit "$s" --report-dir "$out" --format md,json,html
done
for s in ${NVDET_BENCH_SCENARIOS:-}; do
  step "bench-$(basename "$s" .yaml)" "$nvdet" bench "$s" --report-dir "$out"
done
cat "$out/summary.txt"
