#!/usr/bin/env bash
# Candidate final build NAME against BASE: decode A/B (one round, cuDNN beside), every speed
# scenario's bench against its vendor baseline, run-gpu-all (every shipped GPU scenario's audit,
# the GPU tests, the portable golden workflow), then compute-sanitizer on the attention tests.
set -u
NAME=$1 BASE=$2 DEADLINE=${3:-585}  # this run: `bash commands.sh p1 m0` (p1: see ../../README.md)
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
for b in $NAME $BASE; do [ -d ab/$b ] || tar -xJf .gpu/$b.tar.xz; done
B=$PWD/ab/$NAME
export NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
t0=$SECONDS
F='kv_len=(1|1000|4096|32768),batch=(1|2|8|64),filler_kv_len=same,position=first'
for b in $BASE $NAME; do
  BB=$PWD/ab/$b
  LD_LIBRARY_PATH=$BB/lib timeout 40 $BB/tools/nvdet bench scenarios/decode-kv-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter "$F" 2>&1 | grep -E "^\| att|rror" | awk -F'|' '{print $2,$3,$4}' | sed "s/^/$b /"
done > $R/ab.txt
echo "ab $((SECONDS - t0)) s" > $R/times.txt
export LD_LIBRARY_PATH=$B/lib
sed 's/act_scale: static, weight_scale: tensor, accumulation: promoted, static_scale: 0.01/act_scale: group_128, weight_scale: block_128x128, accumulation: promoted/; s/^name: fp8-gemm-speed-gpu/name: fp8-gemm-speed-group128/' scenarios/fp8-gemm-speed-gpu.yaml > $R/bench/fp8-gemm-speed-group128.yaml
( cd $R/bench
bench() {  # bench SCENARIO BACKENDS BASELINE [FILTER] [extra...]
  local s=$1 b=$2 base=$3 flt=${4:-}; shift 3; shift || true
  local f=(); [ -n "$flt" ] && f=(--filter "$flt")
  local path=$NVDET_SOURCE_DIR/scenarios/$s.yaml; [ -f $s.yaml ] && path=$PWD/$s.yaml
  echo "\$ nvdet bench scenarios/$s.yaml --backends $b --baseline $base ${flt:+--filter '$flt'} $* --report-dir bench --format md,json,csv"
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
echo "benches $((SECONDS - t0)) s" >> $R/times.txt
NVDET_SKIP_SANITIZERS=1 NVDET_STEP_TIMEOUT=300 timeout 340 reports/run-gpu-all.sh $R/final-build $B > $R/run-gpu-all.log 2>&1; echo "run-gpu-all rc=$?" >> $R/run-gpu-all.log
echo "all $((SECONDS - t0)) s" >> $R/times.txt
mkdir -p $R/sanitizers
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
san() {  # san TOOL FILTER FILE
  local left=$((DEADLINE - 5 - SECONDS)); [ $left -gt 20 ] || return
  echo "\$ compute-sanitizer --tool $1 tests/nvdet_gpu_tests --gtest_filter=$2" > $R/sanitizers/$3
  timeout $left $cs --tool $1 $B/tests/nvdet_gpu_tests --gtest_filter="$2" >> $R/sanitizers/$3 2>&1; echo "rc=$?" >> $R/sanitizers/$3
}
san racecheck GpuAttentionPlan.SwappedAndWideSmallBlocksGiveTheSameBits racecheck-swapped.txt
san memcheck GpuAttentionPlan.SwappedAndWideSmallBlocksGiveTheSameBits memcheck-swapped.txt
san racecheck GpuAttentionPlan.NaNInFreeKvSlotsChangesNothing racecheck-nan.txt
echo "sanitizers $((SECONDS - t0)) s" >> $R/times.txt
cat $R/times.txt
grep -c "rc=0" $R/bench/commands-and-logs.txt; grep "rc=[1-9]" $R/bench/commands-and-logs.txt
tail -2 $R/run-gpu-all.log; grep -c " ok" $R/final-build/summary.txt; grep -v " ok" $R/final-build/summary.txt | head -20; grep -E "tests ran|PASSED|FAILED" $R/final-build/tests/gpu-tests.txt | tail -5
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|rc=" $R/sanitizers/*.txt
python3 - $R/ab.txt <<'PY'
import sys,collections
d=collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f=line.split()
    if len(f)<4: continue
    ctx=f[1].replace('attention_decode(','').replace(',filler_kv_len=same,position=first)','')
    d[ctx][(f[0],f[2])]=f[-1]
for c in d: print(c, d[c])
PY
for f in $R/bench/*.md $R/bench/cold/*.md; do echo "== $(basename $f)"; grep -E "cuda-invariant" $f | awk -F'|' '{print $2,$4,$10,$11}' | sed 's/position=first//;s/filler_kv_len=same,//' ; done | cut -c1-110
