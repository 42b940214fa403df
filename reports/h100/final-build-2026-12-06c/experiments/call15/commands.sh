#!/usr/bin/env bash
# Call 15: n9 (fold as a template parameter, odd-shape staged K restored) against n8 (the last
# audited build): GEMM + attention GPU tests of n9, decode and odd-GEMM benches alternating old/new,
# ncu of the 4096^2 m=8 GEMM (ours vs cuBLAS) and of decode KV 1000 batch 2.
set -u
R=$OUT/r; mkdir -p $R/bench $R/ncu
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n8.tar.xz; tar -xJf .gpu/n9.tar.xz
ROOT=$PWD; export NVDET_SOURCE_DIR=$PWD
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
run() { local side=$1; shift; LD_LIBRARY_PATH=$ROOT/ab/$side/lib NVDET_BINARY=$ROOT/ab/$side/tools/nvdet "$@"; }
N=$PWD/ab/n9
run n9 timeout 200 $N/tests/nvdet_gpu_tests --gtest_filter='GpuGemm*:GpuAttention*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
F='kv_len=(1000|4096|32768),batch=(1|2|8),filler_kv_len=same,position=first'
for round in 1 2; do for side in n8 n9; do
  run $side timeout 60 $ROOT/ab/$side/tools/nvdet bench scenarios/decode-kv-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --filter "$F" --report-dir $R/bench/dec-$side-$round --format md,json > /dev/null 2>$R/bench/dec-$side-$round.err
done; done
for s in gemm-speed-odd-4097x4100 gemm-speed-odd-5119x4097 gemm-speed-odd-4095x1023; do for side in n8 n9; do
  run $side timeout 60 $ROOT/ab/$side/tools/nvdet bench scenarios/$s.yaml --backends cuda-invariant,cublas --baseline cublas --report-dir $R/bench/$side --format md,json > /dev/null 2>>$R/bench/odd-$side.err
done; done
cd $R/ncu
G='batch=8,position=first'
run n9 timeout 60 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy -k regex:wgmma_gemm --launch-skip 5 --launch-count 2 \
  $N/tools/nvdet bench $NVDET_SOURCE_DIR/scenarios/gemm-speed-bf16-4096.yaml --backends cuda-invariant --filter "$G" --report-dir g1 --format md > ncu-gemm-m8-nvdet.txt 2>&1
run n9 timeout 60 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy -k regex:'nvjet|gemm|gemv|cutlass|xmma|Kernel' --launch-skip 5 --launch-count 2 \
  $N/tools/nvdet bench $NVDET_SOURCE_DIR/scenarios/gemm-speed-bf16-4096.yaml --backends cublas --filter "$G" --report-dir g2 --format md > ncu-gemm-m8-cublas.txt 2>&1
D='kv_len=1000,batch=2,filler_kv_len=same,position=first'
for side in n8 n9; do
run $side timeout 60 ncu --clock-control none --section SpeedOfLight --section LaunchStats -k regex:attention_tc --launch-skip 10 --launch-count 4 \
  $ROOT/ab/$side/tools/nvdet bench $NVDET_SOURCE_DIR/scenarios/decode-kv-sweep.yaml --backends cuda-invariant --filter "$D" --report-dir d-$side --format md > ncu-dec-kv1000-b2-$side.txt 2>&1
done
cd $R
grep -E "PASSED|FAILED|rc=" tests.txt | tail -8
for f in bench/dec-*/*.md; do echo "== $f"; grep -E "^\| attention" $f | awk -F'|' '{print $2,$3,$4,$10}' | sed 's/attention_decode(//;s/,filler_kv_len=same,position=first)//'; done
for side in n8 n9; do for f in bench/$side/*.md; do echo "== $f"; grep -E "cuda-invariant" $f | awk -F'|' '{print $2,$4,$10}' | sed 's/,position=first//'; done; done
grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Grid Size|Registers" ncu/*.txt | sed 's/  */ /g' | head -60
