#!/usr/bin/env bash
# The GPU checks of the mixture-of-experts, sampler/trainer and simulated tensor-parallel paths,
# on one GPU machine, in two phases so that nothing timed shares the GPU:
#   reports/run-gpu-new-paths.sh OUT_DIR [BUILD_DIR] check   their GPU tests, compute-sanitizer
#                                                            memcheck of them, bisect --scoring
#   reports/run-gpu-new-paths.sh OUT_DIR [BUILD_DIR] bench   nvdet bench of op: moe, alone
# Their audits are among every shipped GPU scenario's in reports/run-gpu-all.sh.
# BUILD_DIR (default build-gpu): tools/nvdet, tests/nvdet_gpu_tests and the bundled lib/.
# NVDET_STEP_TIMEOUT: seconds per step (default 420). Writes OUT_DIR/<step>.txt, the commands in
# OUT_DIR/commands.log and OUT_DIR/summary.txt (one line per step: exit code, seconds).
set -uo pipefail
out=${1:?usage: reports/run-gpu-new-paths.sh OUT_DIR [BUILD_DIR] [check|bench]}
build=${2:-build-gpu}
phase=${3:-check}
# The build folder as an absolute path (the folder may be given either way).
build_dir=$(cd "$build" 2>/dev/null && pwd) || { echo "$0: no build folder '$build'" >&2; exit 2; }
export LD_LIBRARY_PATH=$build_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$build_dir/tools/nvdet
nvdet=$build/tools/nvdet
tests=$build/tests/nvdet_gpu_tests
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
mkdir -p "$out"

source "$(dirname "$0")/step.sh"  # step NAME COMMAND...

# The new paths' GPU tests: op moe on every GPU backend, the MoE checkpoints through the GPU
# backends' GEMMs, the scoring pass and both samplers, the simulated tensor-parallel GEMM.
new_tests='GpuMoe*:GpuParity.*:GpuTpGemm.*:GpuModelOracle.*:GpuDeviceDecoder.MoeModelsTakeTheHostPath'
# memcheck sees the kernels of those paths; the oracle tests' time goes to host work.
memcheck_tests='GpuMoe*:GpuParity.*:GpuTpGemm.*:GpuDeviceDecoder.MoeModelsTakeTheHostPath'

case $phase in
  check)
    step new-gpu-tests "$tests" --gtest_filter="$new_tests" &
    step memcheck-new-paths "$cs" --tool memcheck --error-exitcode 99 --print-limit 50 \
      --leak-check full "$tests" --gtest_filter="$memcheck_tests" &
    for b in cublas cuda-invariant cuda-portable; do
      step "bisect-scoring-$b" "$nvdet" bisect scenarios/model-parity-gpu.yaml --backend "$b" --scoring &
    done
    wait
    ;;
  bench)
    step bench-moe-gpu "$nvdet" bench scenarios/moe-gpu.yaml --report-dir "$out" --format md,json,csv
    step bench-moe-qwen3-30b-a3b "$nvdet" bench scenarios/moe-qwen3-30b-a3b-gpu.yaml \
      --report-dir "$out" --format md,json,csv
    ;;
  *) echo "unknown phase '$phase' (check or bench)" >&2; exit 2 ;;
esac
sort -o "$out/summary.txt" "$out/summary.txt"
cat "$out/summary.txt"
