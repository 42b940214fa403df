#!/usr/bin/env bash
# Call 17 (n10): pinned GEMM entries at decode and m = 128 sizes, hot and cold, beside the
# automatic plan and cuBLAS: 4096 x 4096 at m = 8-128, the odd 5119 x 4097 and 4095 x 1023 at m = 1.
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
tar -xJf .gpu/n10.tar.xz
ROOT=$PWD; export NVDET_SOURCE_DIR=$PWD
source reports/gpu-env.sh; use_torch_cudnn
N=$ROOT/ab/n10; export LD_LIBRARY_PATH=$N/lib NVDET_BINARY=$N/tools/nvdet
b() { # scenario filter l2 config-or-auto backends
  local cfg=$4; local envs=""; [[ $cfg != auto ]] && envs="NVDET_GEMM_WGMMA_CONFIG=$cfg"
  env $envs timeout 60 $N/tools/nvdet bench scenarios/$1.yaml --backends $5 --baseline ${6:-cublas} --filter "$2" --l2 $3 2>/dev/null | grep -E "^\| gemm" | awk -F'|' -v c=$cfg -v l=$3 -v s=$1 '{gsub(/ /,"",$2); gsub(/ /,"",$3); print s, l, "cfg=" c, $2, $3, $4}' | sed 's/,position=first//'
}
{
for l2 in hot cold; do
  b gemm-speed-bf16-4096 'batch=(8|16|32|64|128),' $l2 auto cuda-invariant,cublas
  for c in 4 5 11 12 13 3 16 17 18 19 20 21 22 23 24; do b gemm-speed-bf16-4096 'batch=(8|16|32|64|128),' $l2 $c cuda-invariant,cublas; done
done
for l2 in hot cold; do
  for s in gemm-speed-odd-5119x4097 gemm-speed-odd-4095x1023; do
    b $s 'batch=1,' $l2 auto cuda-invariant,cublas
    for c in 16 19 22 5 4 12 13; do b $s 'batch=1,' $l2 $c cuda-invariant,cublas; done
  done
done
} > $R/pinned.txt 2>&1
grep cuda-invariant $R/pinned.txt | sort -k1,1 -k2,2 -k4,4 -k6,6n | awk '{print $1,$2,$3,$4,$6}' | column -t | head -150
grep cublas $R/pinned.txt | awk '{print $1,$2,$4,$6}' | sort -u | column -t | head -40
