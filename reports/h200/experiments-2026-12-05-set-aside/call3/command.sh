#!/bin/bash
set -u
R=$OUT/r; mkdir -p $R
trap 'cd $OUT && tar -czf r.tgz r' EXIT
mkdir -p ab && tar -C ab -xJf .gpu/merge.tar.xz
LD_LIBRARY_PATH=$PWD/ab/merge/lib NVDET_BINARY=$PWD/ab/merge/tools/nvdet timeout 200 ab/merge/tests/nvdet_gpu_tests --gtest_filter='GpuAttention*' > $R/merge-tests.txt 2>&1
echo "merge tests rc=$?"; grep -E '^\[  (PASSED|FAILED)' $R/merge-tests.txt | head
D=scenarios/decode-kv-sweep.yaml M=NVDET_ATTENTION_TC_MERGE
K='kv_len=(1000|4096|32768),batch=(1|8|64),filler_kv_len=same,position=first'
NVDET_CONFIGS_REPS=20 timeout 300 bash reports/run-gpu-configs.sh ab/merge $R/d \
 "auto|$D|cudnn||$K" "dependent|$D|cudnn|$M=dependent|$K" "after|$D|cudnn|$M=after|$K" \
 "late|$D|cudnn|$M=late|$K" "folded|$D|cudnn|$M=folded|$K" "auto2|$D|cudnn||$K" > $R/d.log 2>&1
echo "d rc=$?"; grep -v '^|---' $R/d.log
