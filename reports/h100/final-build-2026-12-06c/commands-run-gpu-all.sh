#!/usr/bin/env bash
# Call 21 (final build n13 = HEAD 736cb4f): every shipped GPU scenario's audit, the GPU test
# binary and the portable golden workflow (reports/run-gpu-all.sh; sanitizers skipped).
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n13.tar.xz
B=$PWD/ab/n13; export LD_LIBRARY_PATH=$B/lib
NVDET_SKIP_SANITIZERS=1 NVDET_STEP_TIMEOUT=360 timeout 420 reports/run-gpu-all.sh $R/final-build ab/n13 > $R/run-gpu-all.log 2>&1; echo "run-gpu-all rc=$?" >> $R/run-gpu-all.log
tail -2 $R/run-gpu-all.log; grep -c " ok" $R/final-build/summary.txt; grep -v " ok" $R/final-build/summary.txt | head -20; grep -E "tests ran|PASSED|FAILED" $R/final-build/tests/gpu-tests.txt | tail -5
