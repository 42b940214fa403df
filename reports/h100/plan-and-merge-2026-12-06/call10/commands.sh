#!/usr/bin/env bash
# Call 10 (build n6: the last-CTA fold of split-parallel attention rows, the 128x128 plan at
# 14336 x 4096, m = 1024): attention + parity GPU tests, memcheck of the new test, decode benches
# with each merge mode, prefill and GEMM benches.
set -u
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n6.tar.xz
B=$PWD/ab/n6
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
timeout 200 $B/tests/nvdet_gpu_tests --gtest_filter='GpuAttention*:GpuParity*:GpuDeviceDecoder*:GpuPortable.Attention*:GpuGemmInvariant.EveryPinnedLaunchShapeGivesTheSameBits' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
cd $R/bench
for mode in last after dependent last; do
  echo "== NVDET_ATTENTION_TC_MERGE=$mode"
  NVDET_ATTENTION_TC_MERGE=$mode timeout 60 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/decode-kv-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter 'kv_len=(1000|4096|32768),batch=(1|8|64),filler_kv_len=same,position=first' --report-dir m-$mode --format md,json 2>&1 | grep -E "^\| attention" | cut -d'|' -f2-5,9
done > decode-merge-modes.txt 2>&1
{
echo "\$ nvdet bench scenarios/prefill-chunk-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter 'prefix_len=(0|2048),' --report-dir bench --format md,json,csv"
timeout 150 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/prefill-chunk-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter 'prefix_len=(0|2048),' --report-dir . --format md,json,csv; echo "rc=$?"
for s in gemm-speed-bf16-14336x4096 gemm-speed-bf16-6144x4096; do
echo "\$ nvdet bench scenarios/$s.yaml --backends cuda-invariant,cublas --baseline cublas --filter 'batch=(1|64|256|1024|2048|4096|8192),' --report-dir bench --format md,json,csv"
timeout 100 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/$s.yaml --backends cuda-invariant,cublas --baseline cublas --filter 'batch=(1|64|256|1024|2048|4096|8192),' --report-dir . --format md,json,csv; echo "rc=$?"
done
} > commands-and-logs.txt 2>&1
cd - >/dev/null
timeout 150 compute-sanitizer --tool memcheck $B/tests/nvdet_gpu_tests --gtest_filter='GpuAttentionPlan.RowsFoldedByTheirLastCtaGiveTheMergeKernelsBits' > $R/memcheck-fold.txt 2>&1; echo "rc=$?" >> $R/memcheck-fold.txt
grep -E "OK|FAILED|PASSED|rc=" $R/tests.txt | tail -40; tail -4 $R/memcheck-fold.txt; cat $R/bench/decode-merge-modes.txt; grep -E "cuda-invariant" $R/bench/*.md | cut -d'|' -f2,3,4,10,11 | sed 's/.*bench-//' | cut -c1-150
