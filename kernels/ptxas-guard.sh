#!/usr/bin/env bash
# Compiler launcher for the kernels (kernels/CMakeLists.txt): runs the compile it is given and
# fails it when ptxas reports that it serialized wgmma instructions (C7520). ptxas prints that as
# information, not as a warning, and the kernel then still builds and computes the same bits at a
# fraction of its speed: a wgmma in a branch the compiler cannot prove uniform is enough.
set -u
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2> >(tee "$log" >&2)
status=$?
wait
if [ "$status" -eq 0 ] && grep -q '(C7520)' "$log"; then
  echo "ptxas serialized wgmma instructions (C7520, above): the kernel would run far below its" \
    "speed; keep wgmma out of branches (see kernels/gemm_invariant_wgmma.cu)" >&2
  exit 1
fi
exit "$status"
