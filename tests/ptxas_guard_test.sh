#!/usr/bin/env bash
# kernels/ptxas-guard.sh fails a compile whose kernel has a stack frame that is not register
# spill, and passes the same kernel with its parameter __grid_constant__; it fails a kernel that
# reads a wgmma's accumulator before the wait (ptxas injects a wait there) and passes the same
# kernel reading it after. Usage: ptxas_guard_test.sh SOURCE_DIR NVCC. Exit 77 (skipped) without
# nvcc.
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

# A wgmma whose accumulator is read before its wait: the bits are right, the overlap is gone.
write_wgmma_kernel() {  # write_wgmma_kernel FILE EARLY_READ (1: read d0 before the wait)
  cat >"$1" <<CU
__global__ void wgmma_read(float* out, unsigned long long da, unsigned long long db) {
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db));
  asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
  if ($2) out[threadIdx.x] = d0;
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
  out[threadIdx.x + 128] = d0 + d1 + d2 + d3;
}
CU
}
write_wgmma_kernel "$dir/waited.cu" 0
write_wgmma_kernel "$dir/early.cu" 1
compile_90a() {  # compile_90a NAME: the guard over nvcc for sm_90a machine code
  "$src/kernels/ptxas-guard.sh" "$nvcc" --generate-code=arch=compute_90a,code=sm_90a -c \
    "$dir/$1.cu" -o "$dir/$1.o" 2>"$dir/$1.err"
}
compile_90a waited || fail "the guard failed a wgmma read after its wait: $(cat "$dir/waited.err")"
compile_90a early && fail "the guard passed a wgmma accumulator read before its wait"
grep -q 'ptxas serialized wgmma instructions' "$dir/early.err" ||
  fail "the guard's wgmma message is missing: $(cat "$dir/early.err")"
echo "ok: the guard passes the __grid_constant__ kernel and fails the copied one; it passes the"
echo "    wgmma read after its wait and fails the one read before"
