#!/bin/bash
set -u
R=$OUT/r; mkdir -p $R
trap 'cd $OUT && tar -czf r.tgz r' EXIT
mkdir -p ab && tar -C ab -xJf .gpu/new.tar.xz
G=scenarios/gemm-speed-bf16-4096.yaml G2=scenarios/gemm-speed-bf16-14336x4096.yaml F=scenarios/fp8-gemm-speed-gpu.yaml
C=NVDET_GEMM_WGMMA_CONFIG
NVDET_CONFIGS_REPS=10 timeout 250 bash reports/run-gpu-configs.sh ab/new $R/g \
 "auto|$G|cublas||batch=(1|64|256|512|1024|8192)," \
 "c8|$G|cublas|$C=8|batch=(1024|8192)," "c9|$G|cublas|$C=9|batch=(256|512|1024)," \
 "c10|$G|cublas|$C=10|batch=(256|512)," "c14|$G|cublas|$C=14|batch=(256|512)," \
 "c15|$G|cublas|$C=15|batch=(512|1024)," "c11|$G|cublas|$C=11|batch=(1|64)," \
 "c12|$G|cublas|$C=12|batch=(1|64)," "c13|$G|cublas|$C=13|batch=(1|64)," > $R/g.log 2>&1
echo "g rc=$?"
NVDET_CONFIGS_REPS=10 timeout 150 bash reports/run-gpu-configs.sh ab/new $R/g2 \
 "auto|$G2|cublas||batch=(1|64|1024|8192)," "c8|$G2|cublas|$C=8|batch=(1024|8192)," \
 "c11|$G2|cublas|$C=11|batch=(1|64)," "c12|$G2|cublas|$C=12|batch=(1|64)," > $R/g2.log 2>&1
echo "g2 rc=$?"
NVDET_CONFIGS_REPS=10 timeout 150 bash reports/run-gpu-configs.sh ab/new $R/f \
 "auto|$F|cublas||batch=(1|64|256|1024|8192)," "f4|$F|cublas|NVDET_FP8_GEMM_CONFIG=4|batch=(256|1024|8192)," \
 "f5|$F|cublas|NVDET_FP8_GEMM_CONFIG=5|batch=(256|1024|8192)," "f6|$F|cublas|NVDET_FP8_GEMM_CONFIG=6|batch=(256|1024|8192)," > $R/f.log 2>&1
echo "f rc=$?"
for x in g g2 f; do grep -v '^|---' $R/$x.log; done
