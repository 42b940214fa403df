#!/bin/bash
# Profiles for the large-m gaps (issue 33 item 1, issue 37): ncu --set full of nvdet's kernel and
# the vendor's, FP8 at m = 4096 and bf16 at m = 8192, 4096 x 4096, final build n.
set -u
R=$OUT/r; mkdir -p $R
# (on the device: results under $OUT/r)
mkdir -p ab && tar -C ab -xJf .gpu/n.tar.xz
B=ab/n; export LD_LIBRARY_PATH=$PWD/$B/lib
N="ncu --clock-control none --set full --import-source no --launch-skip 30 --launch-count 1"
prof() {  # NAME SCENARIO FILTER BACKEND KERNEL-REGEX
  timeout 150 $N -k "regex:$5" $B/tools/nvdet bench scenarios/$2.yaml --backends $4 --filter "$3" \
    --report-dir /tmp/b-$1 --format json > $R/ncu-$1.txt 2>&1
  echo "$1 rc=$? at ${SECONDS}s"
}
prof fp8-inv-4096 fp8-gemm-speed-gpu 'batch=4096,' cuda-invariant fp8_gemm_kernel
prof fp8-lt-4096 fp8-gemm-speed-gpu 'batch=4096,' cublas 'nvjet|gemm|xmma'
prof bf16-inv-8192 gemm-speed-bf16-4096 'batch=8192,' cuda-invariant wgmma_gemm
prof bf16-cublas-8192 gemm-speed-bf16-4096 'batch=8192,' cublas 'nvjet|gemm|xmma'
for f in $R/ncu-*.txt; do echo "== $(basename $f)"; grep -E "^  [a-z_].*\(|Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Registers Per|Dynamic Shared|Block Size|Grid Size|Issued Warp|No Eligible|Warp Cycles Per Issued" $f | head -16; done
