#!/usr/bin/env bash
# Call 22 (final build n13 = HEAD 736cb4f): compute-sanitizer on the paths this session changed:
# memcheck of the odd-shape GEMM tests (a single row of A read in place) and of the attention
# plan tests (the fold as a template parameter), racecheck of the fold test and the GEMM's
# odd shapes.
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n13.tar.xz
B=$PWD/ab/n13
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
T=$B/tests/nvdet_gpu_tests
san() { local tool=$1 filt=$2 name=$3 lim=$4
  echo "\$ compute-sanitizer --tool $tool nvdet_gpu_tests --gtest_filter='$filt'" > $R/$name.txt
  timeout $lim compute-sanitizer --tool $tool $T --gtest_filter="$filt" >> $R/$name.txt 2>&1; echo "rc=$?" >> $R/$name.txt; }
san memcheck 'GpuGemmInvariant.OddShapesAreBatchInvariant:GpuGemmInvariant.AKeptStagedWeight*' memcheck-gemm-odd 150
san memcheck 'GpuAttentionPlan.*' memcheck-attention-plan 120
san racecheck 'GpuAttentionPlan.RowsFoldedByTheirLastCta*' racecheck-attention-fold 80
for f in $R/*.txt; do echo "== $(basename $f)"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED|rc=" $f | tail -4; done
