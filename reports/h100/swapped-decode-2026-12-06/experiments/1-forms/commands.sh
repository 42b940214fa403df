#!/usr/bin/env bash
# Swapped small-block attention (NAME): the attention GPU tests, then decode-kv-sweep against
# cuDNN with the small blocks swapped and wide, interleaved, in one process each.
set -u
NAME=$1
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/$NAME.tar.xz
B=$PWD/ab/$NAME
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
t0=$SECONDS
timeout 240 $B/tests/nvdet_gpu_tests --gtest_filter='GpuAttentionPlan.SwappedAndWide*:GpuAttentionSwap.*:GpuAttentionPlan.NaN*:GpuAttentionPlan.DecodeEquals*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
echo "tests $((SECONDS - t0)) s" > $R/times.txt
grep -E "OK \]|FAILED|rc=|differs" $R/tests.txt | head -30
for round in 1 2; do for form in wide swapped; do
  [ $SECONDS -lt 540 ] || break 2
  NVDET_ATTENTION_TC_SMALL_BLOCKS=$form timeout 90 $B/tools/nvdet bench scenarios/decode-kv-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter 'kv_len=(1|255|1000|4096|32768),batch=(1|2|8|64),filler_kv_len=same,position=first' 2>&1 | grep -E "^\| |rror" | sed "s/^/$round $form /"
done; done > $R/ab.txt
echo "bench $((SECONDS - t0)) s" >> $R/times.txt
grep cuda-invariant $R/ab.txt | head -80
cat $R/times.txt
