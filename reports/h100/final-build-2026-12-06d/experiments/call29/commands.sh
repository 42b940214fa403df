#!/usr/bin/env bash
# Call 29: full ncu reports (SASS-level warp stall sampling) of decode attention at KV 1 and KV 1000,
# batch 1 (ours and cuDNN's), and of the hot m = 8 4096 x 4096 GEMM (ours and cuBLAS's), from fg.
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
export NVDET_SOURCE_DIR=$PWD
[ -d ab/fg ] || tar -xJf .gpu/fg.tar.xz
B=$PWD/ab/fg; export LD_LIBRARY_PATH=$B/lib
source reports/gpu-env.sh; use_torch_cudnn
prof() {  # prof NAME KERNEL_REGEX SCENARIO BACKEND FILTER
  timeout 80 ncu --clock-control none --cache-control none --set full --import-source yes -k regex:$2 --launch-skip 8 --launch-count 1 -o $R/$1 \
    $B/tools/nvdet bench scenarios/$3.yaml --backends $4 --filter "$5" > $R/$1.log 2>&1
  ncu -i $R/$1.ncu-rep --page source --print-source sass --csv > $R/$1-sass.csv 2>/dev/null
  ncu -i $R/$1.ncu-rep --page details > $R/$1-details.txt 2>/dev/null
  rm -f $R/$1.ncu-rep
}
prof att-kv1 attention_tc decode-kv-sweep cuda-invariant 'kv_len=1,batch=1,filler_kv_len=same,position=first'
prof att-kv1000 attention_tc decode-kv-sweep cuda-invariant 'kv_len=1000,batch=1,filler_kv_len=same,position=first'
prof cudnn-kv1000 sdpa decode-kv-sweep cudnn 'kv_len=1000,batch=1,filler_kv_len=same,position=first'
prof gemm-m8 wgmma_gemm gemm-speed-bf16-4096 cuda-invariant 'batch=8,'
prof nvjet-m8 nvjet gemm-speed-bf16-4096 cublas 'batch=8,'
ls -la $R; grep -h "Duration\|Elapsed Cycles\|SM Active" $R/*-details.txt
