#!/usr/bin/env bash
# Call 9: plan experiments on the n5 build (a82d678): bf16 tile entries at large m, FP8 entries and
# CTA counts at decode sizes, decode attention CTA counts and merge launch at KV 32768.
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n5.tar.xz; tar -xJf .gpu/abbin.tar.xz
B=$PWD/ab/n5
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
S="256,4096,4096 512,4096,4096 1024,4096,4096 1024,14336,4096 2048,14336,4096 1024,4096,14336 1024,6144,4096 4096,6144,4096"
{ for c in auto 0 1 6 7 8 9 10; do
  echo "== config $c"; if [ $c = auto ]; then timeout 60 ab/ab-a82d678 $S; else timeout 60 ab/ab-a82d678 $c $S; fi
done; } > $R/bf16-configs.txt 2>&1
D="1,4096,4096 16,4096,4096 64,4096,4096 1,14336,4096 1,4096,14336"
{ echo "== auto"; timeout 60 ab/fp8ab-a82d678 $D
  for c in 1 2 3; do for n in 0 66 128; do
    echo "== config=$c ctas=$n"; if [ $n = 0 ]; then timeout 60 ab/fp8ab-a82d678 config=$c $D; else timeout 60 ab/fp8ab-a82d678 config=$c ctas=$n $D; fi
  done; done; echo "== auto again"; timeout 60 ab/fp8ab-a82d678 $D; } > $R/fp8-decode-configs.txt 2>&1
cd $R
for v in "auto auto" "128 auto" "66 auto" "auto dependent" "auto after" "auto auto"; do
  set -- $v
  echo "== NVDET_ATTENTION_TC_CTAS=$1 NVDET_ATTENTION_TC_MERGE=$2"
  NVDET_ATTENTION_TC_CTAS=$1 NVDET_ATTENTION_TC_MERGE=$2 timeout 60 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/decode-kv-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter 'kv_len=(4096|32768),batch=(1|8|64),filler_kv_len=same,position=first' --report-dir d --format md 2>&1 | grep -E "^\| attention" | cut -d'|' -f2-5,9
done > decode-variants.txt 2>&1
cd - >/dev/null
grep -E "==|hot" $R/bf16-configs.txt | sed 's/stages=[0-9]* //' | cut -c1-110; grep -E "==|nvdet" $R/fp8-decode-configs.txt | cut -c1-150 | head -80; cat $R/decode-variants.txt
