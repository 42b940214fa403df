#!/usr/bin/env bash
# Call 8: the bf16 set-asides restored (a82d678) timed against main before (7ff3143) and the
# k-loop alone (172ccdd); GEMM GPU tests + racecheck; gemm-speed benches vs cuBLAS.
set -u
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n5.tar.xz; tar -xJf .gpu/abbin.tar.xz
B=$PWD/ab/n5
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
S="1,4096,4096 64,4096,4096 256,4096,4096 1024,4096,4096 4096,4096,4096 8192,4096,4096 1024,14336,4096 8192,14336,4096 4096,4096,14336 1024,6144,4096"
for round in 1 2; do for c in 7ff3143 172ccdd a82d678; do
  echo "== round $round ab-$c"; timeout 60 ab/ab-$c $S
done; done > $R/ab.txt 2>&1
timeout 200 $B/tests/nvdet_gpu_tests --gtest_filter='GpuGemm*:GpuPortable.Gemm*:GpuTpGemm*' > $R/gemm-tests.txt 2>&1; echo "rc=$?" >> $R/gemm-tests.txt
timeout 60 compute-sanitizer --tool racecheck $B/tests/nvdet_gpu_tests --gtest_filter='GpuGemmInvariant.EveryPinnedLaunchShapeGivesTheSameBits' > $R/racecheck-bf16.txt 2>&1; echo "rc=$?" >> $R/racecheck-bf16.txt
cd $R/bench
for s in gemm-speed-bf16-4096 gemm-speed-bf16-14336x4096; do
echo "\$ nvdet bench scenarios/$s.yaml --backends cuda-invariant,cublas --baseline cublas --report-dir bench --format md,json,csv"
timeout 120 $NVDET_BINARY bench $NVDET_SOURCE_DIR/scenarios/$s.yaml --backends cuda-invariant,cublas --baseline cublas --report-dir . --format md,json,csv; echo "rc=$?"
done > commands-and-logs.txt 2>&1
cd - >/dev/null
cat $R/ab.txt | head -80; tail -5 $R/gemm-tests.txt; tail -4 $R/racecheck-bf16.txt; grep cuda-invariant $R/bench/*.md | cut -c1-170
