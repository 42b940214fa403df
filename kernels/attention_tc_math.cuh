#pragma once
// The per-row arithmetic of the tensor-core attention plan (attention_tc.cuh) that more than one
// kernel executes: the exponential, the online-softmax rescale factor and the fold of split
// states. Written with explicit rounding intrinsics so that the compiler cannot contract them
// differently in the attention kernel and in the merge kernel.
#include <cuda_runtime.h>

#include <cmath>

namespace nvdet::kernels {

// 2^x with the hardware approximation (flush-to-zero): exp2(-inf) = 0. The same instruction in
// every kernel of the plan.
__device__ __forceinline__ float tc_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The factor that rescales a state whose max was `from` to the max `to` (to >= from):
// exactly 1 when they are equal (an unchanged max leaves l and O untouched), exp2((from - to) * c)
// otherwise, 0 when from is -inf and to is finite.
__device__ __forceinline__ float tc_rescale_factor(float from, float to, float c) {
  return from == to ? 1.0f : tc_exp2(__fmul_rn(__fsub_rn(from, to), c));
}

// Folding a split's state (m, l, O) into the running state (M, L, O_run):
//   M' = max(M, m), wa = tc_rescale_factor(M, M'), wb = tc_rescale_factor(m, M'),
//   L' = fma(l, wb, L * wa), O' = fma(O, wb, O_run * wa) per element.
// Folding an empty state (m = -inf, l = 0, O = 0) is an exact no-op; folding into the empty
// running state copies the split's state.
struct TcFoldWeights {
  float m, wa, wb;
};
__device__ __forceinline__ TcFoldWeights tc_fold_weights(float run_m, float m, float c) {
  const float mm = fmaxf(run_m, m);
  return {mm, tc_rescale_factor(run_m, mm, c), tc_rescale_factor(m, mm, c)};
}
__device__ __forceinline__ float tc_fold_value(float run, float v, const TcFoldWeights& w) {
  return __fmaf_rn(v, w.wb, __fmul_rn(run, w.wa));
}

}  // namespace nvdet::kernels
