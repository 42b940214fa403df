#!/usr/bin/env bash
# Tensor parallel over NCCL on a machine with two or more GPUs (NVLink multicast stays off: nvdet
# sets NCCL_NVLS_ENABLE=0 itself). Each audit runs in a process of its own because NCCL keeps its
# algorithm, protocol and channel settings for the life of a process.
#   reports/run-gpu-tp-nccl.sh OUT_DIR [BUILD_DIR]
# 1. the multi-GPU tests: NCCL's sum against the order the simulation claims for it;
# 2. a row-parallel GEMM at tp 2: NCCL (pinned Ring/Simple/4 channels) beside ring/tree/fixed;
# 3. the 4-layer decoder at tp 2 with NCCL's own choices over batch 4..64, then pinned (with tp 1
#    and the simulated ring beside it). The invariant backends' K-chunk plan (TP 2 against TP 1)
#    is simulated on one GPU by scenarios/tp-invariant-gpu.yaml.
# Writes OUT_DIR/<step>.txt, the reports, commands.log and summary.txt.
set -uo pipefail
out=${1:?usage: reports/run-gpu-tp-nccl.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
# The build folder as an absolute path (the folder may be given either way).
build_dir=$(cd "$build" 2>/dev/null && pwd) || { echo "$0: no build folder '$build'" >&2; exit 2; }
export LD_LIBRARY_PATH=$build_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NVDET_SOURCE_DIR=$PWD NVDET_BINARY=$build_dir/tools/nvdet
nvdet=$build/tools/nvdet
mkdir -p "$out"
: >"$out/summary.txt"
step_width=36
source "$(dirname "$0")/step.sh"  # step NAME COMMAND...
nvidia-smi topo -m >"$out/topology.txt" 2>&1
step multigpu-tests "$build/tests/nvdet_multigpu_tests"
for s in tp-nccl-2gpu model-tp-nccl-defaults-2gpu model-tp-nccl-2gpu; do
  step "audit-$s" "$nvdet" audit "scenarios/$s.yaml" --report-dir "$out" --format md,json,html
done
cat "$out/summary.txt"
