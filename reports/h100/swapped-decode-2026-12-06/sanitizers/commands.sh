#!/usr/bin/env bash
# The plan's split size as the decode parallelism lever (NAME, swapped small blocks): decode and
# prefill against cuDNN at split sizes 128, 256 and 512 (one process per scenario, cuDNN beside).
set -u
NAME=$1
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
[ -d ab/$NAME ] || tar -xJf .gpu/$NAME.tar.xz
B=$PWD/ab/$NAME
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD
source reports/gpu-env.sh; use_torch_cudnn
t0=$SECONDS
sed 's/^  kv_len: .*/  kv_len: [255, 1000, 4096, 32768]\n  split_size: [128, 256, 512]/; s/^  batch: .*/  batch: [1, 2, 8, 64]/; s/^  filler_kv_len: .*/  filler_kv_len: [same]/; s/^  position: .*/  position: [first]/' scenarios/decode-kv-sweep.yaml > $R/dsplit.yaml
sed 's/^  prefill_chunk: .*/  prefill_chunk: [64, 512, whole]\n  split_size: [128, 256, 512]/; s/^  prefix_len: .*/  prefix_len: [0]/' scenarios/prefill-chunk-sweep.yaml > $R/psplit.yaml
timeout 200 $B/tools/nvdet bench $R/dsplit.yaml --backends cuda-invariant,cudnn --baseline cudnn > $R/dsplit.txt 2>&1; echo "rc=$?" >> $R/dsplit.txt
echo "decode $((SECONDS - t0)) s" > $R/times.txt
timeout 200 $B/tools/nvdet bench $R/psplit.yaml --backends cuda-invariant,cudnn --baseline cudnn > $R/psplit.txt 2>&1; echo "rc=$?" >> $R/psplit.txt
echo "prefill $((SECONDS - t0)) s" >> $R/times.txt
grep -E "^\| " $R/dsplit.txt $R/psplit.txt | awk -F'|' '{print $2, $3, $4, $9, $10}' | sed 's/attention_//' | head -120
grep -E "rc=|rror" $R/*.txt; cat $R/times.txt
timeout 80 ncu --clock-control none --cache-control none --set full --import-source yes -k regex:attention_tc_kernel --launch-skip 8 --launch-count 1 -o $R/att-kv1000 \
  $B/tools/nvdet bench scenarios/decode-kv-sweep.yaml --backends cuda-invariant --filter 'kv_len=1000,batch=1,filler_kv_len=same,position=first' > $R/ncu.log 2>&1
ncu -i $R/att-kv1000.ncu-rep --page source --print-source sass --csv > $R/att-kv1000-sass.csv 2>/dev/null
ncu -i $R/att-kv1000.ncu-rep --page details > $R/att-kv1000-details.txt 2>/dev/null
rm -f $R/att-kv1000.ncu-rep
grep -E "Duration|Elapsed Cycles|Grid Size" $R/att-kv1000-details.txt
echo "ncu $((SECONDS - t0)) s" >> $R/times.txt
# compute-sanitizer on the swapped form (decode items): racecheck and memcheck
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
mkdir -p $R/sanitizers
left=$((560 - SECONDS))
if [ $left -gt 40 ]; then
  echo "\$ compute-sanitizer --tool racecheck tests/nvdet_gpu_tests --gtest_filter=GpuAttentionPlan.NaNInFreeKvSlotsChangesNothing" > $R/sanitizers/racecheck-swapped.txt
  timeout $((left / 2)) $cs --tool racecheck --error-exitcode 99 $B/tests/nvdet_gpu_tests --gtest_filter=GpuAttentionPlan.NaNInFreeKvSlotsChangesNothing >> $R/sanitizers/racecheck-swapped.txt 2>&1; echo "rc=$?" >> $R/sanitizers/racecheck-swapped.txt
  left=$((575 - SECONDS))
  echo "\$ compute-sanitizer --tool memcheck tests/nvdet_gpu_tests --gtest_filter=GpuAttentionPlan.SwappedAndWideSmallBlocksGiveTheSameBits" > $R/sanitizers/memcheck-swapped.txt
  [ $left -gt 20 ] && { timeout $left $cs --tool memcheck --error-exitcode 99 $B/tests/nvdet_gpu_tests --gtest_filter=GpuAttentionPlan.SwappedAndWideSmallBlocksGiveTheSameBits >> $R/sanitizers/memcheck-swapped.txt 2>&1; echo "rc=$?" >> $R/sanitizers/memcheck-swapped.txt; }
fi
tail -n 3 $R/sanitizers/*.txt
echo "sanitizers $((SECONDS - t0)) s" >> $R/times.txt; cat $R/times.txt
