#!/usr/bin/env bash
# Call 16: n10 (odd shapes: A's single row read in place at m = 1) against n9: GEMM GPU tests of
# n10, odd-shape benches of both, the 4096^2 GEMM at decode sizes hot and cold (--l2 cold's first
# GPU run) with the bench timing test, ncu of the m = 8 GEMM with the L2 left hot.
set -u
R=$OUT/r; mkdir -p $R/bench $R/ncu
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n9.tar.xz; tar -xJf .gpu/n10.tar.xz
ROOT=$PWD; export NVDET_SOURCE_DIR=$PWD
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
run() { local side=$1; shift; LD_LIBRARY_PATH=$ROOT/ab/$side/lib NVDET_BINARY=$ROOT/ab/$side/tools/nvdet "$@"; }
N=$ROOT/ab/n10
run n10 timeout 200 $N/tests/nvdet_gpu_tests --gtest_filter='GpuGemm*:GpuBench*:*Bench*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
for s in gemm-speed-odd-4097x4100 gemm-speed-odd-5119x4097 gemm-speed-odd-4095x1023; do for side in n9 n10; do
  run $side timeout 60 $ROOT/ab/$side/tools/nvdet bench scenarios/$s.yaml --backends cuda-invariant,cublas --baseline cublas --filter 'batch=(1|16|64),' --report-dir $R/bench/$side --format md,json > /dev/null 2>>$R/bench/odd-$side.err
done; done
for l2 in hot cold; do
  run n10 timeout 60 $N/tools/nvdet bench scenarios/gemm-speed-bf16-4096.yaml --backends cuda-invariant,cublas --baseline cublas --filter 'batch=(1|8|16|32|64|128|256),' --l2 $l2 --report-dir $R/bench/l2-$l2 --format md,json > /dev/null 2>>$R/bench/l2.err
  run n10 timeout 60 $N/tools/nvdet bench scenarios/fp8-gemm-speed-gpu.yaml --filter 'batch=(1|16|64),' --l2 $l2 --report-dir $R/bench/l2-$l2 --format md,json > /dev/null 2>>$R/bench/l2.err
done
cd $R/ncu
G='batch=8,position=first'
run n10 timeout 60 ncu --clock-control none --cache-control none --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:wgmma_gemm --launch-skip 10 --launch-count 3 \
  $N/tools/nvdet bench $NVDET_SOURCE_DIR/scenarios/gemm-speed-bf16-4096.yaml --backends cuda-invariant --filter "$G" --report-dir g1 --format md > ncu-gemm-m8-hot-nvdet.txt 2>&1
run n10 timeout 60 ncu --clock-control none --cache-control none --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:nvjet --launch-skip 10 --launch-count 3 \
  $N/tools/nvdet bench $NVDET_SOURCE_DIR/scenarios/gemm-speed-bf16-4096.yaml --backends cublas --filter "$G" --report-dir g2 --format md > ncu-gemm-m8-hot-cublas.txt 2>&1
cd $R
grep -E "PASSED|FAILED|rc=|SKIPPED" tests.txt | tail -8
for side in n9 n10; do for f in bench/$side/*.md; do echo "== $f"; grep -E "cuda-invariant" $f | awk -F'|' '{print $2,$4,$10}' | sed 's/,position=first//'; done; done
for f in bench/l2-*/*.md; do echo "== $f"; grep -E "^\| " $f | grep -v "context\|---" | awk -F'|' '{print $2,$3,$4,$10}' | sed 's/,position=first//'; done
grep -E "Duration|DRAM Throughput|L2 Hit|Mem Busy" ncu/*.txt | sed 's/  */ /g' | head -40
