#!/usr/bin/env bash
# For a change that must not move any bit (plumbing, registries, formatting): on one GPU, the GPU
# test suite of the new build, then the quicker shipped GPU scenarios audited by the old and the
# new build with reports/compare-cpu-reports.sh (exit codes, verdicts and every hash the same).
# The long scenarios (decode-batch-256, the model decodes at vocabulary size, the 30B-A3B MoE)
# are left out to keep the run within a few minutes of device time.
# Usage: reports/run-gpu-compare.sh OLD_BUILD NEW_BUILD OUT
#   *_BUILD: bundled build folders (tools/nvdet, lib/); NEW_BUILD also holds nvdet_gpu_tests.
set -uo pipefail
old=$1 new=$2 out=$3
mkdir -p "$out"
cd "$(dirname "$0")/.."
lib_path() { echo "$(realpath "$1")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; }
# The suite, and each binary through a wrapper that finds its own bundled libraries.
# NVDET_BINARY: the tests that run the CLI find the carried one, not the path it was built at.
NVDET_BINARY=$(realpath "$new/tools/nvdet") LD_LIBRARY_PATH=$(lib_path "$new") \
  timeout 200 "$new/nvdet_gpu_tests" >"$out/gpu-tests.txt" 2>&1
echo "gpu tests: exit $? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/gpu-tests.txt" | tr '\n' ' '))"
for side in old new; do
  dir=$old
  [[ $side == new ]] && dir=$new
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$(lib_path "$dir")" \
    "$(realpath "$dir")/tools/nvdet" >"$out/nvdet-$side"
  chmod +x "$out/nvdet-$side"
done
NVDET_COMPARE_SCENARIOS="scenarios/gemm-bf16-4096.yaml scenarios/gemm-bf16-odd.yaml
  scenarios/gemm-speed-fp16-4096.yaml scenarios/gemm-ws1k-4096x4096.yaml scenarios/rmsnorm-gpu.yaml
  scenarios/rmsnorm-gpu-decode.yaml scenarios/decode-split-size.yaml scenarios/moe-gpu.yaml
  scenarios/model-gpu.yaml scenarios/model-sampling-gpu.yaml scenarios/tp-gpu.yaml
  scenarios/tp-invariant-gpu.yaml" \
  timeout 280 reports/compare-cpu-reports.sh "$out/nvdet-old" "$out/nvdet-new" "$out/compare" \
  >"$out/compare.txt" 2>&1
echo "compare: exit $?"
cat "$out/compare.txt"
