#!/usr/bin/env bash
# A kernel change measured against the build before it, on one GPU in one call: the new build's
# GPU tests of the kernels concerned, `nvdet bench` of each build in turn (old, new) against the
# vendor kernel, so that the two ratios come from the same machine minutes apart, and the bits of
# both builds compared over the scenarios that run those kernels (reports/compare-cpu-reports.sh:
# exit codes, verdicts and every hash the same). Prints a table last: per context, the
# invariant kernel's time against the vendor's under each build, and new / old.
# Usage: reports/run-gpu-ab.sh OLD_BUILD NEW_BUILD OUT
#   *_BUILD: bundled build folders (tools/nvdet, lib/); NEW_BUILD also holds
#            tests/nvdet_gpu_tests.
#   NVDET_AB_TESTS    gtest filter of the new build's tests (default: attention, GEMM, FP8, parity;
#                     "" skips them)
#   NVDET_AB_BITS     scenarios whose hashes must agree ("" skips the comparison); the plan notes
#                     may differ (a kernel change is often a new plan with the same bits); compared
#                     after the benches, within NVDET_AB_BITS_TIMEOUT seconds (default 300)
#   NVDET_AB_BENCHES  which benches (default: decode prefill gemm4096 gemm14336 fp8; also
#                     gemm6144; "" none)
#   NVDET_AB_OLD_ENV, NVDET_AB_NEW_ENV
#                     NAME=VALUE settings (space-separated) for that side's nvdet only, e.g. one
#                     build as both sides with NVDET_AB_NEW_ENV=NVDET_GEMM_WGMMA_CONFIG=6 times a
#                     pinned configuration against the automatic plan
set -uo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 OLD_BUILD NEW_BUILD OUT" >&2
  exit 2
fi
old=$(realpath "$1") new=$(realpath "$2") out=$3
for b in "$old" "$new"; do
  [[ -x $b/tools/nvdet ]] || { echo "$0: no tools/nvdet in '$b'" >&2; exit 2; }
done
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
# shellcheck source=reports/gpu-env.sh
source reports/gpu-env.sh
use_torch_cudnn
# Each binary through a wrapper that finds its own bundled libraries.
for side in old new; do
  dir=$old
  [[ $side == new ]] && dir=$new
  env_var=NVDET_AB_OLD_ENV
  [[ $side == new ]] && env_var=NVDET_AB_NEW_ENV
  settings=${!env_var:-}
  check_settings "$env_var" "$settings"
  {
    echo '#!/bin/sh'
    [[ -z $settings ]] || echo "export $settings"
    echo "LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec $dir/tools/nvdet \"\$@\""
  } >"$out/nvdet-$side"
  chmod +x "$out/nvdet-$side"
done

tests=${NVDET_AB_TESTS-GpuAttention*:GpuParity*:GpuGemm*:GpuFp8*:GpuMoe*}
if [[ -n $tests ]]; then
  NVDET_BINARY=$new/tools/nvdet LD_LIBRARY_PATH=$new/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    timeout 300 "$new/tests/nvdet_gpu_tests" --gtest_filter="$tests" >"$out/gpu-tests.txt" 2>&1
  echo "gpu tests ($tests): exit $? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/gpu-tests.txt" |
    tr '\n' ' '))"
fi

# name | scenario | vendor backend | --filter
bench_specs() {
  cat <<'EOF'
decode|scenarios/decode-kv-sweep.yaml|cudnn|kv_len=(1000|4096|32768),batch=(1|8|64),filler_kv_len=same,position=first
prefill|scenarios/prefill-chunk-sweep.yaml|cudnn|prefill_chunk=(16|64|256|512|whole),prefix_len=(0|2048),batch=(1|4)
gemm4096|scenarios/gemm-speed-bf16-4096.yaml|cublas|batch=(1|16|64|256|1024|4096|8192),
gemm14336|scenarios/gemm-speed-bf16-14336x4096.yaml|cublas|batch=(1|64|1024|8192),
gemm6144|scenarios/gemm-speed-bf16-6144x4096.yaml|cublas|batch=(1|64|256|1024|8192),
fp8|scenarios/fp8-gemm-speed-gpu.yaml|cublas|.
EOF
}
benches=${NVDET_AB_BENCHES-decode prefill gemm4096 gemm14336 fp8}
csvs=()
while IFS='|' read -r name scenario vendor filter; do
  [[ " $benches " == *" $name "* ]] || continue
  for side in old new; do
    mkdir -p "$out/bench-$side"
    timeout 240 "$out/nvdet-$side" bench "$scenario" --backends "cuda-invariant,$vendor" \
      --baseline "$vendor" --filter "$filter" --report-dir "$out/bench-$side" --format md,json,csv \
      >"$out/bench-$name-$side.txt" 2>&1
    echo "bench $name ($side build): exit $?"
    csvs+=("$side=$out/bench-$side/bench-$(basename "$scenario" .yaml).csv")
  done
done < <(bench_specs)

# The table: per context, cuda-invariant's time over the vendor's (time_ratio) in each build;
# written before the bits are compared, printed last.
if [[ ${#csvs[@]} -gt 0 ]]; then
  python3 reports/bench-table.py cuda-invariant "${csvs[@]}" >"$out/ab-table.md"
fi

# The bits after the benches: a comparison that runs past its time then costs no timing.
bits=${NVDET_AB_BITS-scenarios/decode-split-size.yaml scenarios/prefill-chunk-sweep.yaml
  scenarios/gemm-bf16-4096.yaml scenarios/gemm-bf16-odd.yaml scenarios/fp8-gemm-gpu.yaml}
if [[ -n $bits ]]; then
  NVDET_COMPARE_IGNORE_NOTES=1 NVDET_COMPARE_SCENARIOS=$bits \
    timeout "${NVDET_AB_BITS_TIMEOUT:-300}" reports/compare-cpu-reports.sh "$out/nvdet-old" \
    "$out/nvdet-new" "$out/compare" >"$out/compare.txt" 2>&1
  echo "bits (old against new): exit $? ($(tail -1 "$out/compare.txt"))"
fi

[[ ${#csvs[@]} -eq 0 ]] || cat "$out/ab-table.md"
