#!/bin/bash
# The commands of this report's six calls, from the repository root on the GPU machine; the
# build was carried as an archive and unpacked into ab/f (tools/nvdet, tests/nvdet_gpu_tests, lib/).

# 1. run-gpu-all beside compute-sanitizer on the GEMM tests
R=$OUT/r; mkdir -p $R
B=ab/f
nvidia-smi > $R/nvidia-smi.txt
(NVDET_SKIP_SANITIZERS=1 NVDET_STEP_TIMEOUT=300 NVDET_TRAFFIC_REPLAYS=6 timeout 380 bash reports/run-gpu-all.sh $R/all $B > $R/all.log 2>&1; echo "run-gpu-all rc=$?" > $R/all.rc) &
mkdir -p $R/san
CS="compute-sanitizer --error-exitcode 99 --print-limit 50"
T=$B/tests/nvdet_gpu_tests
F='InvariantKernels.EveryWgmmaConfigurationAndCtaCountGivesIdenticalBits:GpuGemmInvariant.EveryPinnedLaunchShapeGivesTheSameBits:GpuGemmInvariant.OddShapesAreBatchInvariant:GpuGemmGrouped.EveryRowHasThePlainLaunchsBitsForItsGroup'
(export LD_LIBRARY_PATH=$PWD/$B/lib; echo "\$ $CS --tool memcheck --leak-check full $T --gtest_filter=$F" > $R/san/memcheck.txt
 timeout 360 $CS --tool memcheck --leak-check full $T --gtest_filter="$F" >> $R/san/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $R/san/summary.txt) &
(export LD_LIBRARY_PATH=$PWD/$B/lib; echo "\$ $CS --tool racecheck --racecheck-report analysis $T --gtest_filter=$F" > $R/san/racecheck.txt
 timeout 360 $CS --tool racecheck --racecheck-report analysis $T --gtest_filter="$F" >> $R/san/racecheck.txt 2>&1; echo "racecheck rc=$?" >> $R/san/summary.txt) &
wait

# 2. the GPU tests alone; 3. the three that start nvdet, with its path
LD_LIBRARY_PATH=$PWD/ab/f/lib timeout 240 ab/f/tests/nvdet_gpu_tests > gpu-tests.txt 2>&1
export LD_LIBRARY_PATH=$PWD/ab/f/lib NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$PWD/ab/f/tools/nvdet
ab/f/tests/nvdet_gpu_tests --gtest_filter='GpuMoe.ScenarioAuditPasses:GpuPortable.CpuManifestVerifiesOnTheGpu:GpuPortable.KernelImageAndPathsFollowTheBuild'

# 4.-5. benches, then the middle m with entries pinned
for s in scenarios/gemm-speed-*.yaml; do
  ab/f/tools/nvdet bench $s --backends cuda-invariant,cublas --baseline cublas \
    --filter 'batch=(1|16|64|128|256|1024|8192),' --report-dir bench --format md,json
done
for c in auto 3 10; do for g in gemm-speed-bf16-4096 gemm-speed-bf16-6144x4096 gemm-speed-bf16-14336x4096; do
  e=; [ $c != auto ] && e="NVDET_GEMM_WGMMA_CONFIG=$c"
  env $e ab/f/tools/nvdet bench scenarios/$g.yaml --backends cuda-invariant,cublas --baseline cublas \
    --filter 'batch=(128|256|512),' --reps 10 > experiments/mid-m/mid-$c-$g.md
done; done

# 6. ncu at m = 1
N="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy"
$N --launch-skip 3 --launch-count 1 -k regex:wgmma_gemm ab/f/tools/nvdet bench scenarios/gemm-speed-bf16-4096.yaml \
  --backends cuda-invariant,cublas --baseline cublas --filter 'batch=1,' --warmup 2 --reps 3 > ncu/ncu-inv-1.txt
$N --launch-skip 3 --launch-count 1 -k regex:'nvjet|gemm|gemv|sm90|cutlass' ab/f/tools/nvdet bench \
  scenarios/gemm-speed-bf16-4096.yaml --backends cublas --filter 'batch=1,' --warmup 2 --reps 3 > ncu/ncu-cublas-1.txt
