#!/usr/bin/env bash
# compute-sanitizer over the GPU tests: memcheck (with leak checking), racecheck, synccheck and
# initcheck. Run from the repository root on a GPU machine with a CUDA build in $NVDET_BUILD
# (default build-gpu/). Each tool's full output goes to $1 (default reports/h200/sanitizer)/
# <tool>.txt, with its exact command; summary.txt lists each tool's exit code, time and the
# tool's own ERROR SUMMARY line. Exit status: 0 only if every tool ran clean.
#
# The four tools run side by side (each in its own process on the one GPU; memcheck and initcheck,
# the slowest, each in two: the GEMM, MoE and FP8 tests, and the rest, which took past 420 s as one
# process on an H100). The filters keep the run to a few minutes: memcheck and initcheck see every GPU test but the 512-batch sweep (the
# same kernels as the other GEMM tests, 512 times over) and the tests whose time goes to host
# work or child processes (the CPU-manifest round trip, the transformers oracle); racecheck and
# synccheck, the slowest tools, see one test per kernel family that uses shared memory or
# barriers (decode and prefill attention, both norms, the invariant GEMM's forced schedules and every
# pinned wgmma entry, odd shapes, its grouped launch, the MoE routing, the portable kernels). Per-tool limit: NVDET_SANITIZER_TIMEOUT seconds (default 600).
set -uo pipefail
out=${1:-reports/h200/sanitizer}
build=${NVDET_BUILD:-build-gpu}
tests=$build/tests/nvdet_gpu_tests
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
limit=${NVDET_SANITIZER_TIMEOUT:-600}
mkdir -p "$out"
: >"$out/summary.txt"

everything_but_sweep='*-GpuGemmInvariant.Bf16ProbeRowIsIdenticalForEveryBatchFrom1To512AndPowersOfTwo'
everything_but_sweep+=':GpuPortable.CpuManifestVerifiesOnTheGpu:GpuModelOracle.*'
# The one-plan attention tests at 700 and 3000 tokens: the same kernels as the shorter ones below.
everything_but_sweep+=':GpuAttentionPlan.DecodeEqualsPrefillWholeAndChunkedAtAnyLength'
one_per_family='GpuAttention.DecodeMatchesReference:GpuAttention.PrefillMatchesReference'
one_per_family+=':GpuAttentionPlan.NaNInFreeKvSlotsChangesNothing'
one_per_family+=':GpuNorm.RmsNormMatchesReference:GpuNorm.LogSoftmaxMatchesReference'
one_per_family+=':InvariantKernels.ForcedSchedulesGiveIdenticalBitsOnThePortablePath'
# Every wgmma entry, two shapes each (the every-configuration test, 16 entries x CTA counts x three
# shapes, ran past 360 s under racecheck on an H100, reports/h100/gemm-decode-rule-2026-12-06).
one_per_family+=':GpuGemmInvariant.EveryPinnedLaunchShapeGivesTheSameBits'
one_per_family+=':GpuGemmInvariant.OddShapesAreBatchInvariant'
one_per_family+=':GpuPortable.RowOpsAreBitwiseEqualToCpuPortable:GpuPortable.AttentionIsBitwiseEqualToCpuPortable'
# MoE on the device: the routing's counting sort and the grouped GEMM's tile table.
one_per_family+=':GpuMoeRoute.EqualsTheHostRoutingAndLayoutBitwise'
one_per_family+=':GpuGemmGrouped.EveryRowHasThePlainLaunchsBitsForItsGroup'

# memcheck's and initcheck's two halves: the GEMM-family tests, and everything else.
gemm_family='GpuGemm*:GpuMoe*:InvariantKernels.*:GpuFp8*'

run_tool() {  # run_tool TOOL FILTER [--as NAME] EXTRA-ARGS...
  local tool=$1 filter=$2 name=$1
  shift 2
  if [[ ${1:-} == --as ]]; then
    name=$2
    shift 2
  fi
  local cmd=("$cs" --tool "$tool" --error-exitcode 99 --print-limit 50 "$@" "$tests"
             --gtest_filter="$filter")
  local t0=$SECONDS
  { echo "\$ ${cmd[*]}"; timeout "$limit" "${cmd[@]}"; } >"$out/$name.txt" 2>&1
  local rc=$?  # 99: the tool found errors; 124: ran past the limit; 1: a test failed
  local errors
  errors=$(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$out/$name.txt" | tail -n 1)
  printf '%-15s exit %3d  %4d s  %s\n' "$name" "$rc" "$((SECONDS - t0))" \
    "${errors:-no ERROR SUMMARY line}" >>"$out/summary.txt"
}
"$cs" --version >"$out/version.txt" 2>&1
# gtest filters: positive patterns, then '-' and the negative ones.
gemm_part="$gemm_family-${everything_but_sweep#*-}"
rest_part="$everything_but_sweep:$gemm_family"
run_tool memcheck "$gemm_part" --as memcheck-gemm --leak-check full &
run_tool memcheck "$rest_part" --as memcheck-rest --leak-check full &
run_tool initcheck "$gemm_part" --as initcheck-gemm &
run_tool initcheck "$rest_part" --as initcheck-rest &
run_tool racecheck "$one_per_family" --racecheck-report analysis &
run_tool synccheck "$one_per_family" &
wait
sort -o "$out/summary.txt" "$out/summary.txt"
cat "$out/summary.txt"
[[ $(grep -c ' exit   0 ' "$out/summary.txt") -eq 6 ]]
