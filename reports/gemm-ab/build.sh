#!/usr/bin/env bash
# Builds reports/gemm-ab/gemm_ab.cu against the invariant GEMM of each given commit (or of the
# working tree: "worktree"), for timing one commit's GEMM against another's in one process run
# on a GPU machine. Only the GEMM's own kernels/ sources are compiled (sm_90a), so each build
# takes well under a minute; nothing else of nvdet is needed on the GPU machine.
#
# Usage, from the repository root: reports/gemm-ab/build.sh OUT_DIR COMMIT|worktree ...
#   writes OUT_DIR/ab-<commit> for each; run them as OUT_DIR/ab-<commit> [config] m,n,k ...
set -euo pipefail
out=${1:?usage: reports/gemm-ab/build.sh OUT_DIR COMMIT|worktree ...}
shift
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
harness=$PWD/reports/gemm-ab/gemm_ab.cu
mkdir -p "$out"
out=$(cd "$out" && pwd)
trees=$(mktemp -d)
trap 'for t in "$trees"/*; do [ -d "$t" ] && git worktree remove --force "$t"; done; rm -rf "$trees"' EXIT
for c in "$@"; do
  if [[ $c == worktree ]]; then
    tree=$PWD
  else
    tree=$trees/$c
    git worktree add --detach --force "$tree" "$c" >/dev/null
  fi
  # The GEMM's sources as that commit had them (tensor_map.cu and kernel_image.cu came later).
  srcs=()
  for f in "$tree"/kernels/gemm_invariant*.cu "$tree"/kernels/gemm_stage_operands.cu \
    "$tree"/kernels/tensor_map.cu "$tree"/kernels/kernel_image.cu; do
    [[ -f $f ]] && srcs+=("$f")
  done
  # The kernels' namespace was nvdet_kernels before it became nvdet::kernels.
  ns=nvdet::kernels
  grep -q "namespace nvdet_kernels" "$tree/kernels/gemm_invariant.cuh" && ns=nvdet_kernels
  (cd "$tree" && "$nvcc" -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -w "-DNS=$ns" \
    -I"$tree" "$harness" "${srcs[@]}" -o "$out/ab-$c")
  echo "built $out/ab-$c"
done
