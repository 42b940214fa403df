#!/usr/bin/env bash
# Call 13 (final build n8 = HEAD): every GPU test, every shipped GPU scenario's audit, the
# compute-sanitizer tools and the portable golden workflow (reports/run-gpu-all.sh).
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n8.tar.xz
NVDET_STEP_TIMEOUT=420 timeout 560 reports/run-gpu-all.sh $R/final-build ab/n8 > $R/run-gpu-all.log 2>&1; echo "run-gpu-all rc=$?" >> $R/run-gpu-all.log
tail -2 $R/run-gpu-all.log; grep -c " ok" $R/final-build/summary.txt; grep -v " ok" $R/final-build/summary.txt | head -20; cat $R/final-build/sanitize/tools/summary.txt 2>/dev/null | head; grep -E "tests ran|PASSED|FAILED" $R/final-build/tests/gpu-tests.txt | tail -3
