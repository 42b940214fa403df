#!/usr/bin/env bash
# Launch settings of one build timed side by side: `nvdet bench` of each SPEC in turn with its own
# NAME=VALUE settings (a pinned kernel configuration, a forced launch choice, or none for the
# automatic plan), then one table per scenario: per context, the invariant backend's time against
# the vendor's under each SPEC. Used to decide which configurations the automatic plans take
# (NVDET_GEMM_WGMMA_CONFIG, NVDET_ATTENTION_TC_*, ...), every ratio from one
# machine minutes apart. Settings that change no bits change only these times.
# Usage: reports/run-gpu-configs.sh BUILD OUT SPEC...
#   BUILD: a bundled build folder (tools/nvdet, lib/) or a build tree (tools/nvdet)
#   SPEC:  label|scenario|vendor backend|settings|--filter regex
#          settings: space-separated NAME=VALUE, or empty for the automatic plan; the filter
#          comes last, so it may hold '|'; labels name the table's columns and the report
#          folders, so they must differ
#   NVDET_CONFIGS_BACKEND  the backend timed against the vendor (default cuda-invariant)
#   NVDET_CONFIGS_REPS     timed runs per measurement (default: nvdet bench's)
# Example: reports/run-gpu-configs.sh build out \
#   'auto|scenarios/gemm-speed-bf16-4096.yaml|cublas||batch=(1|64|1024|8192),' \
#   'wide|scenarios/gemm-speed-bf16-4096.yaml|cublas|NVDET_GEMM_WGMMA_CONFIG=6|batch=(1|64|1024|8192),'
set -uo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: $0 BUILD OUT SPEC..." >&2
  exit 2
fi
build=$(realpath "$1") out=$2
shift 2
[[ -x $build/tools/nvdet ]] || { echo "$0: no tools/nvdet in '$build'" >&2; exit 2; }
# shellcheck source=reports/gpu-env.sh
source "$(dirname "$0")/gpu-env.sh"
backend=${NVDET_CONFIGS_BACKEND:-cuda-invariant}
reps=()
[[ -n ${NVDET_CONFIGS_REPS:-} ]] && reps=(--reps "$NVDET_CONFIGS_REPS")
# Every SPEC is checked before anything runs.
declare -A seen=()
for spec in "$@"; do
  IFS='|' read -r label scenario vendor settings filter <<<"$spec"
  if [[ -z $label || -z $scenario || -z $vendor || $label == */* ]]; then
    echo "$0: '$spec' is not label|scenario|vendor|settings|filter" >&2
    exit 2
  fi
  [[ -z ${seen[$label]:-} ]] || { echo "$0: label '$label' given twice" >&2; exit 2; }
  seen[$label]=1
  [[ -f $scenario ]] || { echo "$0: no scenario '$scenario'" >&2; exit 2; }
  check_settings "'$label'" "$settings"
done
mkdir -p "$out"
out=$(realpath "$out")
use_torch_cudnn
libs=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

csvs=()
status=0
for spec in "$@"; do
  IFS='|' read -r label scenario vendor settings filter <<<"$spec"
  args=(bench "$scenario" --backends "$backend,$vendor" --baseline "$vendor"
    --report-dir "$out/$label" --format md,json,csv "${reps[@]}")
  [[ -n $filter ]] && args+=(--filter "$filter")
  # shellcheck disable=SC2086  # settings are NAME=VALUE words
  env $settings LD_LIBRARY_PATH="$libs" timeout 300 "$build/tools/nvdet" "${args[@]}" \
    >"$out/$label.txt" 2>&1
  rc=$?
  echo "$label (${settings:-automatic}): exit $rc"
  [[ $rc -eq 0 ]] || status=1
  csvs+=("$label=$out/$label/bench-$(basename "$scenario" .yaml).csv")
done

python3 "$(dirname "$0")/bench-table.py" "$backend" "${csvs[@]}" >"$out/configs-table.md"
cat "$out/configs-table.md"
exit $status
