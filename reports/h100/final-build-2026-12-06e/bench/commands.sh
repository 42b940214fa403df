#!/usr/bin/env bash
# Final build NAME (.gpu/NAME.tar.xz): every speed scenario's bench against its vendor baseline
# alone on the machine (the 4096 x 4096 GEMM and FP8 also with the L2 evicted; the FP8 GEMM with
# group_128 / block_128x128 scales too), then run-gpu-all (every shipped GPU scenario's audit, the
# GPU tests, the portable golden workflow), then compute-sanitizer on the changed kernels' tests.
set -u
NAME=$1 BASE=${2:-}  # this run: `bash commands.sh m0`, m0 = the build of a685647
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/$NAME.tar.xz
[ -n "$BASE" ] && tar -xJf .gpu/$BASE.tar.xz
B=$PWD/ab/$NAME
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
sed 's/act_scale: static, weight_scale: tensor, accumulation: promoted, static_scale: 0.01/act_scale: group_128, weight_scale: block_128x128, accumulation: promoted/; s/^name: fp8-gemm-speed-gpu/name: fp8-gemm-speed-group128/' scenarios/fp8-gemm-speed-gpu.yaml > $R/bench/fp8-gemm-speed-group128.yaml
t0=$SECONDS
( cd $R/bench
bench() {  # bench SCENARIO BACKENDS BASELINE [FILTER] [extra...]
  local s=$1 b=$2 base=$3 flt=${4:-}; shift 3; shift || true
  local f=(); [ -n "$flt" ] && f=(--filter "$flt")
  local path=$NVDET_SOURCE_DIR/scenarios/$s.yaml; [ -f $s.yaml ] && path=$PWD/$s.yaml
  echo "\$ nvdet bench $path --backends $b --baseline $base ${flt:+--filter '$flt'} $* --report-dir bench --format md,json,csv"
  timeout 120 $NVDET_BINARY bench $path --backends $b --baseline $base "${f[@]}" "$@" --report-dir . --format md,json,csv; echo "rc=$?"
}
{
for s in gemm-speed-bf16-4096 gemm-speed-bf16-14336x4096 gemm-speed-bf16-4096x14336 gemm-speed-bf16-6144x4096 gemm-speed-fp16-4096 gemm-speed-fp16-14336x4096 gemm-speed-fp16-4096x14336 gemm-speed-odd-4097x4100 gemm-speed-odd-5119x4097 gemm-speed-odd-4095x1023 fp8-gemm-speed-gpu; do
  bench $s cuda-invariant,cublas cublas
done
bench fp8-gemm-speed-group128 cuda-invariant,cublas cublas
bench decode-kv-sweep cuda-invariant,cudnn cudnn 'filler_kv_len=same,position=first'
bench prefill-chunk-sweep cuda-invariant,cudnn cudnn 'prefix_len=(0|2048),'
mkdir -p cold; cd cold
bench gemm-speed-bf16-4096 cuda-invariant,cublas cublas 'batch=(1|8|16|32|64|128|256),' --l2 cold
bench fp8-gemm-speed-gpu cuda-invariant,cublas cublas 'batch=(1|16|64|256),' --l2 cold
} > commands-and-logs.txt 2>&1 )
echo "benches $((SECONDS - t0)) s" > $R/times.txt
NVDET_SKIP_SANITIZERS=1 NVDET_STEP_TIMEOUT=300 timeout 340 reports/run-gpu-all.sh $R/final-build $B > $R/run-gpu-all.log 2>&1; echo "run-gpu-all rc=$?" >> $R/run-gpu-all.log
echo "all $((SECONDS - t0)) s" >> $R/times.txt
mkdir -p $R/sanitizers
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
left=$((520 - SECONDS))
if [ $left -gt 30 ]; then
  echo "\$ compute-sanitizer --tool racecheck tests/nvdet_gpu_tests --gtest_filter=GpuFp8Invariant.MatchesTheDequantisedProduct" > $R/sanitizers/racecheck-fp8.txt
  timeout $((left / 2)) $cs --tool racecheck $B/tests/nvdet_gpu_tests --gtest_filter=GpuFp8Invariant.MatchesTheDequantisedProduct >> $R/sanitizers/racecheck-fp8.txt 2>&1; echo "rc=$?" >> $R/sanitizers/racecheck-fp8.txt
  left=$((530 - SECONDS))
  echo "\$ compute-sanitizer --tool memcheck tests/nvdet_gpu_tests --gtest_filter=GpuFp8Invariant.*:GpuFp8Gemm.*" > $R/sanitizers/memcheck-fp8.txt
  [ $left -gt 20 ] && { timeout $left $cs --tool memcheck $B/tests/nvdet_gpu_tests --gtest_filter='GpuFp8Invariant.*:GpuFp8Gemm.*' >> $R/sanitizers/memcheck-fp8.txt 2>&1; echo "rc=$?" >> $R/sanitizers/memcheck-fp8.txt; }
fi
# With BASE: the decode-size GEMMs of BASE and NAME interleaved, while time is left.
if [ -n "$BASE" ]; then
  for round in 1 2 3; do for b in $BASE $NAME; do
    [ $SECONDS -lt 560 ] || break 2
    BB=$PWD/ab/$b
    LD_LIBRARY_PATH=$BB/lib timeout 30 $BB/tools/nvdet bench scenarios/gemm-speed-bf16-4096.yaml --backends cuda-invariant,cublas --filter 'batch=(1|8|64|128),' 2>/dev/null | grep -E "^\| gemm" | sed "s/^/$round $b hot bf16 /"
  done; done > $R/ab.txt
  grep cuda-invariant $R/ab.txt | awk -F'|' '{print $1, $2, $4, $9}' | sort -k5,5 -k3,3 -k2,2
fi
echo "sanitizers $((SECONDS - t0)) s" >> $R/times.txt
cat $R/times.txt
grep -c "rc=0" $R/bench/commands-and-logs.txt; grep "rc=[1-9]" $R/bench/commands-and-logs.txt
tail -2 $R/run-gpu-all.log; grep -c " ok" $R/final-build/summary.txt; grep -v " ok" $R/final-build/summary.txt | head -20; grep -E "tests ran|PASSED|FAILED" $R/final-build/tests/gpu-tests.txt | tail -3
grep -h "ERROR SUMMARY\|rc=" $R/sanitizers/*.txt
for f in $R/bench/*.md $R/bench/cold/*.md; do echo "== $(basename $f)"; grep -E "cuda-invariant" $f | awk -F'|' '{print $2,$4,$10,$11}' | sed 's/position=first//;s/filler_kv_len=same,//' ; done | cut -c1-110
