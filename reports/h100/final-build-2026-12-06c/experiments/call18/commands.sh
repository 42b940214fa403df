#!/usr/bin/env bash
# Call 18: n11 (FP8: four K groups a stage up to 128 rows; bf16: several k tiles a stage up to
# 128 rows) against n10: GEMM and FP8 GPU tests of n11, FP8 and bf16 benches of both, hot and cold.
set -u
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n10.tar.xz; tar -xJf .gpu/n11.tar.xz
ROOT=$PWD; export NVDET_SOURCE_DIR=$PWD
source reports/gpu-env.sh; use_torch_cudnn
run() { local side=$1; shift; LD_LIBRARY_PATH=$ROOT/ab/$side/lib NVDET_BINARY=$ROOT/ab/$side/tools/nvdet "$@"; }
N=$ROOT/ab/n11
run n11 timeout 240 $N/tests/nvdet_gpu_tests --gtest_filter='GpuGemm*:GpuFp8*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
for round in 1 2; do for side in n10 n11; do for l2 in hot cold; do
  run $side timeout 60 $ROOT/ab/$side/tools/nvdet bench scenarios/fp8-gemm-speed-gpu.yaml --l2 $l2 --report-dir $R/bench/$side-$round-$l2 --format md,json > /dev/null 2>>$R/bench/err.txt
  run $side timeout 60 $ROOT/ab/$side/tools/nvdet bench scenarios/gemm-speed-bf16-4096.yaml --backends cuda-invariant,cublas --filter 'batch=(64|128|256),' --l2 $l2 --report-dir $R/bench/$side-$round-$l2 --format md,json > /dev/null 2>>$R/bench/err.txt
  run $side timeout 60 $ROOT/ab/$side/tools/nvdet bench scenarios/gemm-speed-bf16-6144x4096.yaml --backends cuda-invariant,cublas --filter 'batch=(64|128|256),' --l2 $l2 --report-dir $R/bench/$side-$round-$l2 --format md,json > /dev/null 2>>$R/bench/err.txt
done; done; done
cd $R
grep -E "PASSED|FAILED|rc=" tests.txt | tail -8
for f in bench/*/*.md; do grep -E "^\| gemm" $f | awk -F'|' -v f=$f '{print f, $2, $3, $4, $10}' | sed 's/,position=first//;s/bench-//;s/\.md//'; done | grep -v "cublaslt" > table.txt
wc -l table.txt; head -3 table.txt
