#!/usr/bin/env bash
# Golden results that travel, checked on one GPU machine: records a manifest of every shipped CPU
# scenario with cpu-portable (on the CPU, as CI would), verifies it with cuda-portable on the GPU
# (--verify-as cuda-portable=cpu-portable, exit 0 expected), runs the portable GPU tests, and
# times cuda-portable against cuda-invariant on a few GPU scenario contexts.
# Usage, from the repository root: reports/portable-golden.sh OUT_DIR [BUILD_DIR]
#   BUILD_DIR (default build) holds a CUDA build; set NVDET_SKIP_BENCH=1 to skip the timing,
#   NVDET_BENCH_ONLY=1 to run the timing alone (it must not share the GPU with other work).
#   NVDET_PTX_BUILD=DIR: also run `nvdet info` and every GPU test of a PTX-only build in DIR
#   (configured with -DCMAKE_CUDA_ARCHITECTURES=90-virtual), so that they run JIT-compiled PTX.
# Writes OUT_DIR/summary.txt (one line per step with its exit code), each step's output as
# OUT_DIR/<step>.txt, the manifest and the verify reports. Exits 0 only if the record, the
# verification and the tests passed.
set -uo pipefail
out=${1:?usage: reports/portable-golden.sh OUT_DIR [BUILD_DIR]}
build=${2:-build}
nvdet=$build/tools/nvdet
mkdir -p "$out"
: >"$out/summary.txt"
: >"$out/commands.log"
failed=0
step() {  # step NAME MUST_PASS COMMAND...
  local name=$1 must=$2
  shift 2
  echo "\$ $*" >>"$out/commands.log"
  local t0=$SECONDS
  timeout "${NVDET_STEP_TIMEOUT:-300}" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  printf '%-34s exit %3d  %4d s\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$out/summary.txt"
  if [[ $must == yes && $rc -ne 0 ]]; then failed=1; fi
}

cpu_scenarios=(scenarios/quickstart.yaml scenarios/gemm-cpu.yaml scenarios/rmsnorm-cpu.yaml
  scenarios/log-softmax-cpu.yaml scenarios/decode-cpu.yaml scenarios/prefill-cpu.yaml
  scenarios/model-cpu.yaml scenarios/model-llama-cpu.yaml scenarios/model-mistral-cpu.yaml
  scenarios/model-qwen2-cpu.yaml scenarios/model-qwen3-cpu.yaml scenarios/fail-expect-invariant.yaml)

step info no "$nvdet" info
if [[ -z ${NVDET_BENCH_ONLY:-} ]]; then
  step record-cpu-portable yes "$nvdet" audit "${cpu_scenarios[@]}" --backends cpu-portable --quiet \
    --record "$out/portable-golden.json"
  step verify-cuda-portable yes "$nvdet" audit "${cpu_scenarios[@]}" --backends cuda-portable \
    --verify "$out/portable-golden.json" --verify-as cuda-portable=cpu-portable \
    --report-dir "$out/verify" --format json
  step gpu-tests-portable yes "$build/tests/nvdet_gpu_tests" --gtest_filter='GpuPortable.*'
  if [[ -n ${NVDET_PTX_BUILD:-} ]]; then
    step ptx-only-info no "$NVDET_PTX_BUILD/tools/nvdet" info
    step ptx-only-gpu-tests yes "$NVDET_PTX_BUILD/tests/nvdet_gpu_tests"
  fi
fi

if [[ -z ${NVDET_SKIP_BENCH:-} ]]; then
  # Each entry: SCENARIO@CONTEXT-REGEX. Ratios are cuda-portable's time over cuda-invariant's.
  for entry in \
    'scenarios/gemm-bf16-4096.yaml@\(batch=(1|64|1024|4096),position=first\)' \
    'scenarios/rmsnorm-gpu.yaml@\(batch=(1|64|512),position=first\)' \
    'scenarios/log-softmax-gpu.yaml@\(batch=(1|16|128),position=first\)' \
    'scenarios/decode-kv-sweep.yaml@kv_len=(4096|32768),batch=(1|64),filler_kv_len=same,position=first' \
    'scenarios/prefill-chunk-sweep.yaml@prefill_chunk=whole,prefix_len=0,batch=1'; do
    s=${entry%%@*}
    step "bench-$(basename "$s" .yaml)" no timeout "${NVDET_BENCH_TIMEOUT:-150}" "$nvdet" bench "$s" \
      --backends cuda-invariant,cuda-portable --baseline cuda-invariant --filter "${entry#*@}" \
      --report-dir "$out/bench"
  done
fi
echo "portable golden: $([[ $failed -eq 0 ]] && echo PASSED || echo FAILED)" | tee -a "$out/summary.txt"
exit $failed
