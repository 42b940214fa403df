#!/usr/bin/env bash
# kernels/ptxas-guard.sh fails a compile whose kernel has a stack frame that is not register
# spill, and passes the same kernel with its parameter __grid_constant__. Usage:
# ptxas_guard_test.sh SOURCE_DIR NVCC. Exit 77 (skipped) without nvcc.
set -u
src=$1
nvcc=${2:-nvcc}
command -v "$nvcc" >/dev/null 2>&1 || { echo "no nvcc: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The regression the guard is for: a by-value parameter struct that device code takes by
# reference is copied to the stack; __grid_constant__ keeps it in parameter space.
write_kernel() {  # write_kernel FILE QUALIFIER
  cat >"$1" <<CU
struct Params { int* out; int n; int v[8]; };
__device__ __noinline__ void put(const Params& p, int i) { p.out[i % p.n] = p.v[i & 7]; }
__global__ void copied_params(const $2 Params p) { put(p, threadIdx.x); }
CU
}
write_kernel "$dir/copied.cu" ""
write_kernel "$dir/kept.cu" "__grid_constant__"

compile() {  # compile NAME: runs the guard over nvcc with -Xptxas=-v, stderr to NAME.err
  "$src/kernels/ptxas-guard.sh" "$nvcc" -arch=sm_90a -Xptxas=-v -c "$dir/$1.cu" \
    -o "$dir/$1.o" 2>"$dir/$1.err"
}

compile kept || fail "the guard failed a kernel without a stack frame: $(cat "$dir/kept.err")"
if grep -q -E 'bytes stack frame|Function properties' "$dir/kept.err"; then
  fail "the guard let ptxas's -v report into the build log: $(cat "$dir/kept.err")"
fi

compile copied && fail "the guard passed a kernel whose parameters were copied to the stack"
grep -q 'stack frame that is not register spill' "$dir/copied.err" ||
  fail "the guard's message is missing: $(cat "$dir/copied.err")"
grep -q -E '_Z13copied_params6Params \([0-9]+ bytes\)' "$dir/copied.err" ||
  fail "the guard did not name the kernel and its frame: $(cat "$dir/copied.err")"
echo "ok: the guard passes the __grid_constant__ kernel and fails the copied one"
