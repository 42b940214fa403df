#pragma once
// Reductions whose order is fixed by the block shape alone, shared by the norm and attention
// kernels. Every helper here adds in one pattern that depends only on blockDim / the width it is
// given, never on which block runs or how many blocks there are:
//  - warp level: an xor butterfly (offsets width/2, ..., 1). Each lane computes own + partner;
//    IEEE addition is commutative bit for bit, so every lane ends with the same value.
//  - block level: the warp totals go to shared memory and every thread adds them in warp order
//    0, 1, ..., nwarps-1, one after the other.
// Explicit __fadd_rn / __fmul_rn keep the compiler from contracting a merge into an FMA on one
// lane but not on its partner (which would break the butterfly's lane symmetry).
#include <cuda_runtime.h>

#include <cmath>

namespace nvdet::kernels {

template <int kWidth = 32>
__device__ __forceinline__ float butterfly_sum(float v) {
#pragma unroll
  for (int off = kWidth / 2; off > 0; off >>= 1) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, off));
  }
  return v;
}

template <int kWidth = 32>
__device__ __forceinline__ float butterfly_max(float v) {
#pragma unroll
  for (int off = kWidth / 2; off > 0; off >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  }
  return v;
}

// exp(a - b) that is 0 (not NaN) when a is -inf, e.g. an empty running max.
__device__ __forceinline__ float exp_diff(float a, float b) {
  return a == -INFINITY ? 0.0f : expf(a - b);
}

// A running (max, sum of exp(x - max)) pair: the state of a log-sum-exp over some elements.
struct MaxSumExp {
  float m;
  float s;
};

// Merges two states. Symmetric in its arguments bit for bit (max and + are commutative and both
// products are rounded on their own), so a butterfly of merges agrees on every lane.
__device__ __forceinline__ MaxSumExp merge_max_sum_exp(MaxSumExp a, MaxSumExp b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, __fadd_rn(__fmul_rn(a.s, exp_diff(a.m, m)), __fmul_rn(b.s, exp_diff(b.m, m)))};
}

__device__ __forceinline__ MaxSumExp butterfly_merge(MaxSumExp v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    MaxSumExp o{__shfl_xor_sync(0xffffffffu, v.m, off), __shfl_xor_sync(0xffffffffu, v.s, off)};
    v = merge_max_sum_exp(v, o);
  }
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024). `scratch` holds >= 32 floats.
// Every thread returns the same total. Contains two __syncthreads().
__device__ __forceinline__ float block_sum_fixed(float v, float* scratch) {
  v = butterfly_sum(v);
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) scratch[warp] = v;
  __syncthreads();
  float total = scratch[0];
  for (int w = 1; w < nwarps; ++w) total = __fadd_rn(total, scratch[w]);
  __syncthreads();
  return total;
}

// Merge of MaxSumExp states over the block, in the same fixed shape as block_sum_fixed.
// `scratch` holds >= 64 floats.
__device__ __forceinline__ MaxSumExp block_merge_fixed(MaxSumExp v, float* scratch) {
  v = butterfly_merge(v);
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    scratch[2 * warp] = v.m;
    scratch[2 * warp + 1] = v.s;
  }
  __syncthreads();
  MaxSumExp total{scratch[0], scratch[1]};
  for (int w = 1; w < nwarps; ++w) total = merge_max_sum_exp(total, {scratch[2 * w], scratch[2 * w + 1]});
  __syncthreads();
  return total;
}

}  // namespace nvdet::kernels
