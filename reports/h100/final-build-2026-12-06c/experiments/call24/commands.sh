#!/usr/bin/env bash
# Call 24 (experiment build x14 = HEAD + NVDET_EXP_PROMO choosing the TMA maps' L2 promotion):
# the 4096 x 4096 decode GEMM hot and cold under each promotion, ncu L2 hit rate at m = 8 hot.
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/x14.tar.xz
B=$PWD/ab/x14
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
for round in 1 2; do for promo in 256 none 128 64; do for l2 in hot cold; do
  NVDET_EXP_PROMO=$promo timeout 40 $B/tools/nvdet bench scenarios/gemm-speed-bf16-4096.yaml --backends cuda-invariant,cublas --filter 'batch=(1|8|32|64|128),' --l2 $l2 2>/dev/null | grep -E "^\| gemm" | awk -F'|' -v p=$promo -v l=$l2 -v r=$round '{print r, l, "promo=" p, $2, $3, $4}' | sed 's/,position=first//'
done; done; done > $R/promo.txt
for promo in 256 none; do
  NVDET_EXP_PROMO=$promo timeout 40 ncu --clock-control none --cache-control none --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:wgmma_gemm --launch-skip 10 --launch-count 2 \
    $B/tools/nvdet bench scenarios/gemm-speed-bf16-4096.yaml --backends cuda-invariant --filter 'batch=8,' > $R/ncu-$promo.txt 2>&1
done
grep cuda-invariant $R/promo.txt | sort -k2,2 -k4,4 -k3,3 | awk '{print $1,$2,$3,$4,$6}'
grep -h "L2 Hit\|Duration" $R/ncu-*.txt
