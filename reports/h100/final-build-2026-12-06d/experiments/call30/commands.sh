#!/usr/bin/env bash
# Call 30: on an H200, the final build's (fg) benches (the bench part of q27.sh); on an H100, the
# FP8 and bf16 decode-size GEMMs under each pinned tile configuration (NVDET_FP8_GEMM_CONFIG,
# NVDET_GEMM_WGMMA_CONFIG), for the next plan rule.
set -u
R=$OUT/r; mkdir -p $R/bench
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
[ -d ab/fg ] || tar -xJf .gpu/fg.tar.xz
B=$PWD/ab/fg
export LD_LIBRARY_PATH=$B/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$B/tools/nvdet
source reports/gpu-env.sh; use_torch_cudnn
nvidia-smi > $R/nvidia-smi.txt 2>&1
if nvidia-smi -L | grep -q H200; then
  sed -n '/^sed /,/^echo "benches/p' .gpu/q27.sh | sed 's#\$R/bench/fp8#$R/bench/fp8#' > $R/bench-part.sh
  source $R/bench-part.sh
  cat $R/times.txt
  for f in $R/bench/*.md $R/bench/cold/*.md; do echo "== $(basename $f)"; grep -E "cuda-invariant" $f | awk -F'|' '{print $2,$4,$9,$10}' | sed 's/position=first//;s/filler_kv_len=same,//' ; done | cut -c1-110
else
  for c in 0 1 2 3 4; do
    NVDET_FP8_GEMM_CONFIG=$c timeout 30 $B/tools/nvdet bench scenarios/fp8-gemm-speed-gpu.yaml --backends cuda-invariant,cublas --filter 'batch=(1|16|64),' 2>&1 | grep -E "^\| gemm" | sed "s/^/fp8 config=$c /"
  done > $R/fp8-configs.txt
  for c in 3 4 5 11 12 13 16 17 18 19 20 21 22 23 24; do
    NVDET_GEMM_WGMMA_CONFIG=$c timeout 30 $B/tools/nvdet bench scenarios/gemm-speed-bf16-4096.yaml --backends cuda-invariant,cublas --filter 'batch=(1|8|64),' 2>&1 | grep -E "^\| gemm" | sed "s/^/bf16 config=$c /"
  done > $R/bf16-configs.txt
  grep cuda-invariant $R/fp8-configs.txt $R/bf16-configs.txt | awk -F'|' '{print $1, $2, $4, $9}'
fi
