#!/usr/bin/env bash
# The attention plan's GPU checks and benches, run from the repository root on a GPU machine with
# an nvdet build in $NVDET_BUILD (default build-gpu/): the attention and parity GPU tests, then
# `nvdet bench` of decode-kv-sweep and prefill-chunk-sweep (cuda-invariant against cuDNN; vendor
# policy left out to save device time) and the parity scenarios. Everything goes under $1
# (default reports/out), one step per file, commands in commands.log; prints the summary last.
#   NVDET_ATTN_TESTS   gtest filter of the test step (default: the attention and parity tests)
#   NVDET_ATTN_BENCH   0 skips the benches; NVDET_ATTN_AUDIT=0 skips the audits
#   NVDET_DECODE_FILTER / NVDET_PREFILL_FILTER  --filter of the two benches
#   NVDET_ATTN_NCU=1   also profile the two-warpgroup prefill kernel over a whole 4096-token prompt
#                      (ncu --set full, one launch; details and per-SASS-line stalls as text)
set -uo pipefail
out=${1:-reports/out}
mkdir -p "$out"
build=${NVDET_BUILD:-build-gpu}
# The build folder as an absolute path (the folder may be given either way).
build_dir=$(cd "$build" 2>/dev/null && pwd) || { echo "$0: no build folder '$build'" >&2; exit 2; }
export LD_LIBRARY_PATH=$build_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# shellcheck source=reports/gpu-env.sh
source "$(dirname "$0")/gpu-env.sh"
use_torch_cudnn
nvdet=$build/tools/nvdet
step_width=36
# shellcheck source=reports/step.sh
source "$(dirname "$0")/step.sh"
: >"$out/summary.txt"
step info "$nvdet" info
step gpu-tests "$build/tests/nvdet_gpu_tests" \
  --gtest_filter="${NVDET_ATTN_TESTS:-GpuAttention*:GpuParity*:GpuCudnnAttention*:GpuDeviceDecoder*}"
if [[ ${NVDET_ATTN_BENCH:-1} != 0 ]]; then
  step bench-decode-kv-sweep "$nvdet" bench scenarios/decode-kv-sweep.yaml \
    --backends cuda-invariant,cudnn --baseline cudnn --report-dir "$out" --format md,json,csv \
    --filter "${NVDET_DECODE_FILTER:-position=first}"
  step bench-prefill-chunk-sweep "$nvdet" bench scenarios/prefill-chunk-sweep.yaml \
    --backends cuda-invariant,cudnn --baseline cudnn --report-dir "$out" --format md,json,csv \
    --filter "${NVDET_PREFILL_FILTER:-.}"
fi
if [[ ${NVDET_ATTN_NCU:-0} == 1 ]]; then
  # The kernel is picked by its template arguments (<T, head_dim, 2 warpgroups>): the bench's first
  # launches of attention_tc_kernel can be other shapes. --launch-gaps: ncu runs each kernel to
  # completion inside its launch, so a held stream would wait out each hold's timeout.
  step ncu-prefill-whole ncu --clock-control none --kernel-name-base demangled \
    -k 'regex:attention_tc_kernel<.*\(int\)2>' --launch-skip 2 --launch-count 1 --set full \
    --import-source no -f -o "$out/ncu-prefill-whole" "$nvdet" bench scenarios/prefill-chunk-sweep.yaml \
    --backends cuda-invariant --filter 'prefill_chunk=whole,prefix_len=0,batch=1' --launch-gaps
  ncu -i "$out/ncu-prefill-whole.ncu-rep" --page details >"$out/ncu-prefill-whole-details.txt" 2>&1
  ncu -i "$out/ncu-prefill-whole.ncu-rep" --page source --csv --print-source sass \
    >"$out/ncu-prefill-whole-sass.csv" 2>&1
fi
if [[ ${NVDET_ATTN_AUDIT:-1} != 0 ]]; then
  for s in scenarios/model-parity-gpu.yaml scenarios/model-parity-long-gpu.yaml; do
    step "audit-$(basename "$s" .yaml)" "$nvdet" audit "$s" --report-dir "$out" --format md,json
  done
fi
cat "$out/summary.txt"
