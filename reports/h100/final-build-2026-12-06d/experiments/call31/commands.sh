#!/usr/bin/env bash
# Call 31: the swapped-operand probe test (build sp = dbb9d5f + kernels/attention_tc_swap_probe.cu),
# plain and under memcheck.
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/sp.tar.xz
B=$PWD/ab/sp; export LD_LIBRARY_PATH=$B/lib
nvidia-smi -L > $R/nvidia-smi.txt 2>&1
timeout 60 $B/tests/nvdet_gpu_tests --gtest_filter='GpuAttentionSwap.*' > $R/swap-test.txt 2>&1; echo "rc=$?" >> $R/swap-test.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 90 $cs --tool memcheck $B/tests/nvdet_gpu_tests --gtest_filter='GpuAttentionSwap.*' > $R/swap-memcheck.txt 2>&1; echo "rc=$?" >> $R/swap-memcheck.txt
cat $R/nvidia-smi.txt; tail -30 $R/swap-test.txt; grep -E "ERROR SUMMARY|rc=" $R/swap-memcheck.txt
