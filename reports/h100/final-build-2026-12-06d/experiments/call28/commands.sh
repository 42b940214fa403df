#!/usr/bin/env bash
# Call 28 (warm, after the fg audit): FP8 group_128/block_128x128 m0 vs fg interleaved; ncu of the
# hot m = 8 4096 x 4096 GEMM (ours and cuBLAS's) and of decode attention at KV 1, batch 64.
set -u
R=$OUT/r; mkdir -p $R
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
export NVDET_SOURCE_DIR=$PWD
[ -d ab/m0 ] || tar -xJf .gpu/m0.tar.xz; [ -d ab/fg ] || tar -xJf .gpu/fg.tar.xz
sed 's/act_scale: static, weight_scale: tensor, accumulation: promoted, static_scale: 0.01/act_scale: group_128, weight_scale: block_128x128, accumulation: promoted/; s/^name: fp8-gemm-speed-gpu/name: fp8-gemm-speed-group128/' scenarios/fp8-gemm-speed-gpu.yaml > $R/g.yaml
for round in 1 2; do for b in m0 fg; do
  B=$PWD/ab/$b
  LD_LIBRARY_PATH=$B/lib timeout 40 $B/tools/nvdet bench $R/g.yaml --backends cuda-invariant,cublas --filter 'batch=(1|64|1024|4096),' 2>&1 | grep -E "^\| |rror" | sed "s/^/$round $b /"
done; done > $R/ab-group.txt
B=$PWD/ab/m0
for k in wgmma_gemm nvjet; do
  LD_LIBRARY_PATH=$B/lib timeout 45 ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats -k regex:$k --launch-skip 10 --launch-count 1 \
    $B/tools/nvdet bench scenarios/gemm-speed-bf16-4096.yaml --backends $([ $k = nvjet ] && echo cublas || echo cuda-invariant) --filter 'batch=8,' > $R/ncu-$k.txt 2>&1
done
for be in cuda-invariant cudnn; do
  LD_LIBRARY_PATH=$B/lib timeout 45 ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --launch-skip 10 --launch-count 2 \
    $B/tools/nvdet bench scenarios/decode-kv-sweep.yaml --backends $be --filter 'kv_len=1,batch=64,filler_kv_len=same' > $R/ncu-att-$be.txt 2>&1
done
grep -E "cuda-invariant|cublas" $R/ab-group.txt | awk -F'|' '{print $1, $2, $3, $4}'
grep -hE "^  [a-z_]+.*\(|Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Compute \(SM\)|Grid Size|Block Size|Registers|Warp Cycles Per Issued|Stall" $R/ncu-*.txt | cut -c1-150 | head -90
