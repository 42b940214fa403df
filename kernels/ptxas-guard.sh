#!/usr/bin/env bash
# Compiler launcher for the kernels (kernels/CMakeLists.txt): runs the compile it is given and
# fails it where ptxas builds a kernel that computes the right bits far below its speed:
#   - ptxas serialized wgmma instructions (C7520, C7518, C7514, ...: "Potential Performance Loss:
#     wgmma.mma_async instructions are serialized") or injected a warpgroup wait or arrive to
#     use a wgmma's registers (C7517, C7519). ptxas prints these as information, not as
#     warnings: a wgmma in a branch the compiler cannot prove uniform is enough, so is a branch
#     between a wgmma and its wait (C7518) or an accumulator read or copied while its wgmma may be
#     in flight (C7514, C7517; a value carried around a loop is copied).
#   - in a source compiled with -Xptxas=-v (the wgmma kernels, kernels/CMakeLists.txt), an entry
#     function has a stack frame that is not register spill: a parameter struct or an array was
#     copied to local memory. A by-value parameter that device code takes by reference is copied
#     so, and the loop bounds then read from that copy are no longer provably warp-uniform: the k
#     loop's addresses leave the uniform datapath (on an H100, 21.1 against 15.7 us for the decode
#     GEMM at 4096 x 4096; reports/h100/gemm-gridconst-2026-12-06). Declare such parameters
#     `const __grid_constant__`.
# The -v report itself is kept out of the build log; everything else ptxas and nvcc print passes.
set -u
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>"$log"
status=$?
grep -v -E '^ptxas info +: (Compiling entry function|Function properties for|Used [0-9]+ registers|Compile time|[0-9]+ bytes gmem)|^ +[0-9]+ bytes stack frame' \
  "$log" >&2
[ "$status" -eq 0 ] || exit "$status"
if grep -q -E '\(C7520\)|wgmma.mma_async instructions are serialized|injected .* by compiler to allow use of registers' "$log"; then
  echo "ptxas serialized wgmma instructions (above): the kernel would run far below its speed;" \
    "keep wgmma out of branches and branches out of a wgmma's flight (see kernels/ptxas-guard.sh)" >&2
  exit 1
fi
# "Function properties for F" is followed by "N bytes stack frame, S bytes spill stores, ...".
stacked=$(awk '/Function properties for/ { name = $NF }
               /bytes stack frame/ && $1 > 0 && $5 == 0 { print "  " name " (" $1 " bytes)" }' "$log")
if [ -n "$stacked" ]; then
  echo "ptxas gave these kernels a stack frame that is not register spill (a parameter or array" \
    "copied to local memory, which takes their loops off the uniform datapath; declare struct" \
    "parameters const __grid_constant__, see kernels/ptxas-guard.sh):" >&2
  echo "$stacked" >&2
  exit 1
fi
exit 0
