#!/usr/bin/env bash
# The H200 check of the device-resident model decoder (run from the repository root on the GPU
# machine, with an nvdet build in $NVDET_BUILD, default build-gpu/): its GPU test (host vs device
# path, bitwise, every CUDA backend that offers it), then the whole-audit times of the model
# scenarios and of the 32-layer 8B-shaped one (model-llama3-8b-32layer-gpu.yaml beside this
# script), each audit's stdout/stderr and its report under $1
# (default reports/out/device-decoder). Targets: model-decode.yaml <= 25 s for the whole audit;
# model-llama3-8b-32layer-gpu.yaml <= 120 s. Tokens/s per context: batch x max_new_tokens /
# the case's seconds in the JSON report (cases[].seconds). Last, the ceiling: a plain PyTorch
# loop of the same shapes (torch-ceiling.py, needs PyTorch with CUDA), and ceiling-table.md, each
# case's time beside it.
set -uo pipefail
out=${1:-reports/out/device-decoder}
mkdir -p "$out"
build=${NVDET_BUILD:-build-gpu}
export LD_LIBRARY_PATH=$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$PWD/$build/tools/nvdet
nvdet=$build/tools/nvdet
log=$out/commands.log
: >"$log"
step() {  # step NAME COMMAND...: run, keep its output in $out/NAME.txt, log its exit code and time
  local name=$1
  shift
  echo "\$ $*" >>"$log"
  local t0=$SECONDS
  timeout "${NVDET_STEP_TIMEOUT:-600}" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "  -> exit $rc in $((SECONDS - t0)) s" >>"$log"
  printf '%-40s exit %d  %4d s\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$out/summary.txt"
}
step gpu-device-decoder-test "$build/tests/nvdet_gpu_tests" --gtest_filter='GpuDeviceDecoder.*'
# The CUDA backends decode device-resident by default (NVDET_DEVICE_DECODE=0 would opt out).
for s in scenarios/model-decode.yaml scenarios/model-decode-qwen-vocab.yaml scenarios/model-gpu.yaml \
  reports/h200/model/model-llama3-8b-32layer-gpu.yaml; do
  step "audit-$(basename "$s" .yaml)" "$nvdet" audit "$s" --report-dir "$out" --format md,json,html
done
step bisect-cublas "$nvdet" bisect scenarios/model-decode.yaml --backend cublas --request 0 \
  --format json
# The ceiling: a plain PyTorch loop (cuBLAS GEMMs, SDPA) decoding the same shapes, timed alone.
step ceiling-llama3-8b-32layer python3 reports/h200/model/torch-ceiling.py --layers 32 \
  --vocab 128256 --batch 8 64 --out "$out/ceiling-llama3-8b-32layer.json"
step ceiling-model-decode python3 reports/h200/model/torch-ceiling.py --layers 4 --vocab 32000 \
  --rope-theta 10000 --batch 8 16 64 --out "$out/ceiling-model-decode.json"
python3 reports/h200/model/ceiling-table.py "$out/model-llama3-8b-32layer-gpu.json" \
  "$out/ceiling-llama3-8b-32layer.json" "$out/model-decode.json" "$out/ceiling-model-decode.json" \
  | tee "$out/ceiling-table.md"
