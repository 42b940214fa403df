#!/usr/bin/env bash
# Call 14 (final build n8 = HEAD): the whole GPU test binary alone (in run-gpu-all it shared the GPU
# with four sanitizer processes and ran out of time), then racecheck of the GEMM's pinned shapes
# (the restored TMA-store epilogue) with what time is left.
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n8.tar.xz
B=$PWD/ab/n8
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
timeout 210 $B/tests/nvdet_gpu_tests > $R/gpu-tests.txt 2>&1; echo "rc=$?" >> $R/gpu-tests.txt
timeout 120 compute-sanitizer --tool racecheck $B/tests/nvdet_gpu_tests --gtest_filter='GpuGemmInvariant.EveryPinnedLaunchShapeGivesTheSameBits' > $R/racecheck-gemm.txt 2>&1; echo "rc=$?" >> $R/racecheck-gemm.txt
tail -4 $R/gpu-tests.txt; grep -E "FAILED" $R/gpu-tests.txt | head; tail -3 $R/racecheck-gemm.txt
