#!/usr/bin/env bash
# Call 12 (final build n8 = HEAD): every speed scenario's bench against its vendor baseline, alone
# on the machine.
set -u
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n8.tar.xz
B=$PWD/ab/n8
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
cd $R/bench
bench() {  # bench SCENARIO BACKENDS BASELINE [FILTER]
  local f=()
  [ -n "${4:-}" ] && f=(--filter "$4")
  echo "\$ nvdet bench scenarios/$1.yaml --backends $2 --baseline $3 ${4:+--filter '$4'} --report-dir bench --format md,json,csv"
  timeout 120 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/$1.yaml --backends $2 --baseline $3 "${f[@]}" --report-dir . --format md,json,csv; echo "rc=$?"
}
{
for s in gemm-speed-bf16-4096 gemm-speed-bf16-14336x4096 gemm-speed-bf16-4096x14336 gemm-speed-bf16-6144x4096 gemm-speed-fp16-4096 gemm-speed-fp16-14336x4096 gemm-speed-fp16-4096x14336; do
  bench $s cuda-invariant,cublas cublas
done
for s in gemm-speed-odd-4097x4100 gemm-speed-odd-5119x4097 gemm-speed-odd-4095x1023; do
  bench $s cuda-invariant,cublas cublas
done
bench fp8-gemm-speed-gpu cuda-invariant,cublas cublas
bench decode-kv-sweep cuda-invariant,cudnn cudnn 'filler_kv_len=same,position=first'
bench prefill-chunk-sweep cuda-invariant,cudnn cudnn 'prefix_len=(0|2048),'
} > commands-and-logs.txt 2>&1
cd - >/dev/null
grep -c "rc=0" $R/bench/commands-and-logs.txt; grep "rc=[1-9]" $R/bench/commands-and-logs.txt
for f in $R/bench/*.md; do echo "== $(basename $f)"; grep -E "cuda-invariant" $f | awk -F'|' '{print $2,$4,$10,$11}' | sed 's/position=first//;s/filler_kv_len=same,//' ; done | cut -c1-120
