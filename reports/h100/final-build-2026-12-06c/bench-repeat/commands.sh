#!/usr/bin/env bash
# Call 23 (final build n13 = 736cb4f), on the card the nvidia-h200 kind gave: every speed
# scenario's bench alone on the machine (as call 20), then, on an H200 only, every shipped GPU
# scenario's audit and the GPU tests (reports/run-gpu-all.sh, sanitizers skipped).
set -u
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n13.tar.xz
ROOT=$PWD; B=$ROOT/ab/n13
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
cd $R/bench
bench() {  # bench SCENARIO BACKENDS BASELINE [FILTER] [extra...]
  local s=$1 b=$2 base=$3 flt=${4:-}; shift 3; shift || true
  local f=(); [ -n "$flt" ] && f=(--filter "$flt")
  echo "\$ nvdet bench scenarios/$s.yaml --backends $b --baseline $base ${flt:+--filter '$flt'} $* --report-dir bench --format md,json,csv"
  timeout 120 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/$s.yaml --backends $b --baseline $base "${f[@]}" "$@" --report-dir . --format md,json,csv; echo "rc=$?"
}
{
for s in gemm-speed-bf16-4096 gemm-speed-bf16-14336x4096 gemm-speed-bf16-4096x14336 gemm-speed-bf16-6144x4096 gemm-speed-fp16-4096 gemm-speed-fp16-14336x4096 gemm-speed-fp16-4096x14336 gemm-speed-odd-4097x4100 gemm-speed-odd-5119x4097 gemm-speed-odd-4095x1023 fp8-gemm-speed-gpu; do
  bench $s cuda-invariant,cublas cublas
done
bench decode-kv-sweep cuda-invariant,cudnn cudnn 'filler_kv_len=same,position=first'
bench prefill-chunk-sweep cuda-invariant,cudnn cudnn 'prefix_len=(0|2048),'
mkdir -p cold; cd cold
bench gemm-speed-bf16-4096 cuda-invariant,cublas cublas 'batch=(1|8|16|32|64|128|256),' --l2 cold
bench fp8-gemm-speed-gpu cuda-invariant,cublas cublas 'batch=(1|16|64|256),' --l2 cold
} > $R/bench/commands-and-logs.txt 2>&1
cd $ROOT
echo "card: $card"
if [[ $card == *H200* ]]; then
  NVDET_SKIP_SANITIZERS=1 NVDET_STEP_TIMEOUT=200 timeout 215 reports/run-gpu-all.sh $R/final-build ab/n13 > $R/run-gpu-all.log 2>&1; echo "run-gpu-all rc=$?" >> $R/run-gpu-all.log
  tail -2 $R/run-gpu-all.log; grep -c " ok" $R/final-build/summary.txt; grep -v " ok" $R/final-build/summary.txt | head; grep -E "PASSED|FAILED" $R/final-build/tests/gpu-tests.txt | tail -3
fi
grep -c "rc=0" $R/bench/commands-and-logs.txt; grep "rc=[1-9]" $R/bench/commands-and-logs.txt
for f in $R/bench/*.md $R/bench/cold/*.md; do echo "== $(basename $f)"; grep -E "cuda-invariant" $f | awk -F'|' '{print $2,$4,$10,$11}' | sed 's/position=first//;s/filler_kv_len=same,//' ; done | cut -c1-110
