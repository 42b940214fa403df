#!/usr/bin/env bash
# Call 11 (build n7: FP8 64x32 tile with four K groups in flight; the attention merge back to the
# merge kernel by default, the in-kernel fold opt-in): FP8 A/B old/new, FP8 + attention + GEMM
# tests, decode and prefill benches with the default merge.
set -u
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n7.tar.xz; tar -xJf .gpu/abbin.tar.xz
B=$PWD/ab/n7
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
D="1,4096,4096 16,4096,4096 64,4096,4096 1,4096,14336 64,4096,14336 1,14336,4096 1024,4096,4096 4096,4096,4096"
for round in 1 2; do for c in a82d678 deep; do
  echo "== round $round fp8ab-$c"; timeout 60 ab/fp8ab-$c $D; timeout 30 ab/fp8ab-$c config=3 1,14336,4096 group 1,4096,4096 64,4096,4096
done; done > $R/fp8-ab.txt 2>&1
timeout 240 $B/tests/nvdet_gpu_tests --gtest_filter='GpuFp8*:GpuAttention*:GpuGemmInvariant*:GpuParity*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
cd $R/bench
{
echo "\$ nvdet bench scenarios/prefill-chunk-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter 'prefix_len=(0|2048),' --report-dir bench --format md,json,csv"
timeout 150 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/prefill-chunk-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter 'prefix_len=(0|2048),' --report-dir . --format md,json,csv; echo "rc=$?"
echo "\$ nvdet bench scenarios/fp8-gemm-speed-gpu.yaml --backends cuda-invariant,cublas --baseline cublas --report-dir bench --format md,json,csv"
timeout 150 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/fp8-gemm-speed-gpu.yaml --backends cuda-invariant,cublas --baseline cublas --report-dir . --format md,json,csv; echo "rc=$?"
} > commands-and-logs.txt 2>&1
cd - >/dev/null
grep -E "OK|FAILED|PASSED|rc=" $R/tests.txt | grep -v " OK " | tail -12; grep -E "==|hot" $R/fp8-ab.txt | sed -E 's/promoted //;s/cluster=1 //;s/\(min [0-9.]+, [0-9]+ TFLOP\/s\) //;s/\(min [0-9.]+\) //' | cut -c1-150; grep -E "cuda-invariant" $R/bench/*.md | cut -d'|' -f2,3,4,10,11 | sed 's/.*bench-//' | cut -c1-150
