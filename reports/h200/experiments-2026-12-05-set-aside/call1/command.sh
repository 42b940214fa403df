#!/bin/bash
# old (main) vs new (set-aside 4ef5fe2 restored): cluster tests first, then A/B tests, bits, benches.
set -u
R=$OUT/r; mkdir -p $R
trap 'cd $OUT && tar -czf r.tgz r' EXIT
t0=$SECONDS
tick() { echo "$1 $((SECONDS-t0))s" >> $R/times.txt; }
mkdir -p ab && tar -C ab -xJf .gpu/old.tar.xz && tar -C ab -xJf .gpu/new.tar.xz; tick unpack
nvidia-smi > $R/nvidia-smi.txt
LD_LIBRARY_PATH=$PWD/ab/new/lib NVDET_BINARY=$PWD/ab/new/tools/nvdet timeout 120 ab/new/tests/nvdet_gpu_tests --gtest_filter='*EveryWgmmaConfiguration*:*EveryPinnedLaunchShape*:*Fp8*' > $R/cluster-tests.txt 2>&1; tick "cluster-tests rc=$?"
NVDET_AB_BENCHES= timeout 240 bash reports/run-gpu-ab.sh ab/old ab/new $R/ab1 > $R/ab1.log 2>&1; tick "ab1 rc=$?"
left=$((570-SECONDS+t0)); [ $left -gt 30 ] && { NVDET_AB_TESTS= NVDET_AB_BITS= NVDET_AB_BENCHES="prefill decode" timeout $left bash reports/run-gpu-ab.sh ab/old ab/new $R/ab2 > $R/ab2.log 2>&1; tick "ab2 rc=$?"; }
cat $R/times.txt; grep -E 'FAILED|^\[  PASSED|^\[  FAILED' $R/cluster-tests.txt | head; cat $R/ab1.log; grep -E 'FAILED|^\[  PASSED' $R/ab1/gpu-tests.txt | head -20; cat $R/ab2.log 2>/dev/null | grep -v '^|---'
