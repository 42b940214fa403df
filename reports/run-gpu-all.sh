#!/usr/bin/env bash
# Every GPU check of a build in one go, on one GPU machine: the whole GPU test binary, an audit of
# every shipped scenario that names a GPU backend, compute-sanitizer over the GPU tests, and the
# portable golden workflow (with a PTX-only build when one is given). Audits compare bits, not
# times, so they run in parallel lanes (the model audits are host-bound and get lanes of their
# own); nothing that is timed runs here (use run-gpu.sh or `nvdet bench` alone on the machine).
#
# Usage, from the repository root: reports/run-gpu-all.sh OUT_DIR [BUILD_DIR]
#   BUILD_DIR (default build-gpu): tools/nvdet, tests/nvdet_gpu_tests and the bundled lib/.
#   NVDET_PTX_BUILD=DIR   a PTX-only build (-DCMAKE_CUDA_ARCHITECTURES=90-virtual) to test too.
#   NVDET_STEP_TIMEOUT    seconds per step (default 420); NVDET_SKIP_SANITIZERS=1 skips them.
#   NVDET_CUDNN_LIBRARY_PATH  cuDNN for the cudnn backend (default: PyTorch's, when installed).
#   NVDET_TRAFFIC_REPLAYS  replays of each traffic-* scenario here (default 20: traffic_seed 1..N);
#                          the whole 1000-replay sweep takes its own call: reports/run-gpu-traffic.sh.
# Writes OUT_DIR/<lane>/... (each step's output and reports) and OUT_DIR/summary.txt, one line
# per step with its exit code and seconds; exits 1 if any step that must pass did not.
set -uo pipefail
out=${1:?usage: reports/run-gpu-all.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
# The build folder as an absolute path (the folder may be given either way).
build_dir=$(cd "$build" 2>/dev/null && pwd) || { echo "$0: no build folder '$build'" >&2; exit 2; }
export LD_LIBRARY_PATH=$build_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$build_dir/tools/nvdet
# The cudnn backend loads cuDNN at run time: PyTorch's copy where no other is named.
# shellcheck source=reports/gpu-env.sh
source "$(dirname "$0")/gpu-env.sh"
use_torch_cudnn
nvdet=$build/tools/nvdet
tests=$build/tests/nvdet_gpu_tests
mkdir -p "$out"
: >"$out/summary.txt"

step() {  # step LANE NAME EXPECTED_EXIT COMMAND...: run with a timeout, log, record the exit code
  local lane=$1 name=$2 expected=$3
  shift 3
  mkdir -p "$out/$lane"
  echo "\$ $*" >>"$out/$lane/commands.log"
  local t0=$SECONDS
  timeout "${NVDET_STEP_TIMEOUT:-420}" "$@" >"$out/$lane/$name.txt" 2>&1
  local rc=$?
  local verdict=ok
  [[ $expected == any || $rc -eq $expected ]] || verdict=FAILED
  printf '%-10s %-44s exit %3d  %4d s  %s\n' "$lane" "$name" "$rc" "$((SECONDS - t0))" \
    "$verdict" >>"$out/summary.txt"
}

audit() {  # audit LANE SCENARIO: the scenario's own expectations decide (exit 0 expected)
  local lane=$1 s=$2 extra=()
  # Serving-traffic sweeps are the long ones: a few replays here, every replay in its own run.
  [[ $(basename "$s") == traffic-* ]] &&
    extra=(--axis "traffic_seed={from: 1, to: ${NVDET_TRAFFIC_REPLAYS:-20}}")
  step "$lane" "audit-$(basename "$s" .yaml)" 0 "$nvdet" audit "$s" --report-dir "$out/$lane" \
    --format md,json,html "${extra[@]}"
}

gpu_scenarios=$(grep -lE '^[[:space:]]+(cublas|cublas-grouped|cublaslt-[a-z0-9-]+|cuda-[a-z-]+|cudnn)[[:space:]]*:' \
  scenarios/*.yaml | sort)
# Scenarios named *-<N>gpu.yaml need N GPUs (NCCL across devices): left out on a smaller machine.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
kept=""
for s in $gpu_scenarios; do
  need=$(basename "$s" .yaml | sed -nE 's/.*-([0-9]+)gpu$/\1/p')
  if [[ -n $need && $need -gt $gpus ]]; then
    echo "skipped (needs $need GPUs, $gpus here): $s" >>"$out/skipped-scenarios.txt"
  else
    kept+=" $s"
  fi
done
gpu_scenarios=$kept
lane_of() {  # the long, host-bound model audits get lanes of their own
  case $(basename "$1") in
    model-decode-qwen-vocab.yaml) echo model-a ;;
    model-decode.yaml) echo model-b ;;
    model-qwen3-30b-a3b-gpu.yaml) echo model-moe ;;
    model-parity-*|model-sampling-*) echo model-d ;;
    model-*) echo model-c ;;
    traffic-*) echo traffic ;;
    fp8-*) echo fp8 ;;
    moe-*) echo moe ;;
    tp-*) echo tp ;;
    gemm-ws1k-*) echo gemm-ws ;;
    gemm-*) echo gemm ;;
    decode-*) echo decode ;;
    *) echo prefill-norm ;;
  esac
}

run_lane() {  # run_lane LANE: every GPU scenario assigned to it, in name order
  local lane=$1 s
  for s in $gpu_scenarios; do
    [[ $(lane_of "$s") == "$lane" ]] && audit "$lane" "$s"
  done
}

step info info 0 "$nvdet" info
(step tests gpu-tests 0 "$tests"; run_lane model-c) &
run_lane model-a &
run_lane model-b &
run_lane gemm &
run_lane gemm-ws &
run_lane decode &
run_lane prefill-norm &
run_lane model-moe &
run_lane model-d &
run_lane moe &
run_lane tp &
run_lane traffic &
run_lane fp8 &
if [[ -z ${NVDET_SKIP_SANITIZERS:-} ]]; then
  NVDET_BUILD=$build NVDET_SANITIZER_TIMEOUT=${NVDET_STEP_TIMEOUT:-420} \
    step sanitize compute-sanitizer 0 reports/run-compute-sanitizer.sh "$out/sanitize/tools" &
fi
(
  NVDET_SKIP_BENCH=1 step portable golden 0 reports/portable-golden.sh "$out/portable/golden" \
    "$build"
) &
wait
sort -o "$out/summary.txt" "$out/summary.txt"
cat "$out/summary.txt"
! grep -q FAILED "$out/summary.txt"
