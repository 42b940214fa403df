#!/usr/bin/env bash
# Builds reports/gemm-ab/gemm_ab.cu against the invariant GEMM of each given commit (or of the
# working tree: "worktree"), for timing one commit's GEMM against another's in one process run
# on a GPU machine. Only the GEMM's own kernels/ sources are compiled (sm_90a), so each build
# takes well under a minute; nothing else of nvdet is needed on the GPU machine.
#
# Usage, from the repository root: reports/gemm-ab/build.sh OUT_DIR COMMIT|worktree ...
#   writes OUT_DIR/ab-<commit> for each; run them as OUT_DIR/ab-<commit> [config] m,n,k ...
# With HARNESS=fp8, fp8_ab.cu against the invariant FP8 GEMM instead (and cuBLASLt's FP8 matmul in
# the same process): OUT_DIR/fp8ab-<commit>, run as fp8ab-<commit> [config=N] ... m,n,k ...
# NVCC_EXTRA adds flags to the compile (e.g. -DNAME for a variant) and SUFFIX to the binary's name.
set -euo pipefail
out=${1:?usage: reports/gemm-ab/build.sh OUT_DIR COMMIT|worktree ...}
shift
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
harness=$PWD/reports/gemm-ab/gemm_ab.cu
prefix=ab
if [[ ${HARNESS:-} == fp8 ]]; then
  harness=$PWD/reports/gemm-ab/fp8_ab.cu
  prefix=fp8ab
fi
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
  libs=()
  if [[ $prefix == fp8ab ]]; then
    gemm_srcs=("$tree"/kernels/gemm_fp8_wgmma.cu)
    libs=(-lcublasLt)
  else
    gemm_srcs=("$tree"/kernels/gemm_invariant*.cu "$tree"/kernels/gemm_stage_operands.cu)
    libs=(-lcublas)
  fi
  for f in "${gemm_srcs[@]}" "$tree"/kernels/tensor_map.cu "$tree"/kernels/kernel_image.cu; do
    [[ -f $f ]] && srcs+=("$f")
  done
  # The kernels' namespace was nvdet_kernels before it became nvdet::kernels.
  ns=nvdet::kernels
  grep -q "namespace nvdet_kernels" "$tree/kernels/gemm_invariant.cuh" && ns=nvdet_kernels
  # shellcheck disable=SC2086  # NVCC_EXTRA: flags, split on spaces
  (cd "$tree" && "$nvcc" -O3 -std=c++20 -arch=sm_90a --expt-relaxed-constexpr -w "-DNS=$ns" \
    ${NVCC_EXTRA:-} -I"$tree" "$harness" "${srcs[@]}" "${libs[@]}" -o "$out/$prefix-$c${SUFFIX:-}")
  echo "built $out/$prefix-$c${SUFFIX:-}"
done
