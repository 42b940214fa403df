#!/usr/bin/env bash
# Call 19: n12 (merge kernel: 64 splits' loads in flight) against n10: attention and parity GPU
# tests of n12, decode benches alternating old/new at KV 4096/16384/32768, batch 1/2/8.
set -u
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n10.tar.xz; tar -xJf .gpu/n12.tar.xz
ROOT=$PWD; export NVDET_SOURCE_DIR=$PWD
source reports/gpu-env.sh; use_torch_cudnn
run() { local side=$1; shift; LD_LIBRARY_PATH=$ROOT/ab/$side/lib NVDET_BINARY=$ROOT/ab/$side/tools/nvdet "$@"; }
N=$ROOT/ab/n12
run n12 timeout 200 $N/tests/nvdet_gpu_tests --gtest_filter='GpuAttention*:GpuParity*' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
for round in 1 2 3; do for side in n10 n12; do
  run $side timeout 80 $ROOT/ab/$side/tools/nvdet bench scenarios/decode-kv-sweep.yaml --backends cuda-invariant,cudnn --baseline cudnn --axis kv_len=4096,16384,32768 --axis batch=1,2,8 --filter 'filler_kv_len=same,position=first' --report-dir $R/bench/$side-$round --format md,json > /dev/null 2>>$R/bench/err.txt
done; done
cd $R
grep -E "PASSED|FAILED|rc=" tests.txt | tail -6
for f in bench/*/*.md; do grep -E "^\| attention" $f | awk -F'|' -v f=$f '{print f, $2, $3, $4, $10}' | sed 's/,filler_kv_len=same,position=first//;s/bench-decode-kv-sweep.md//;s/attention_decode//'; done > table.txt
cat table.txt | sort -k2,2 -k3,3 -k1,1 | awk '{print $1,$2,$3,$4,$5}'
