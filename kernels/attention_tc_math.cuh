#pragma once
// The per-row arithmetic of the tensor-core attention plan (attention_tc.cuh) that more than one
// kernel executes: the exponential, the online-softmax rescale factor and the fold of split
// states. Written with explicit rounding intrinsics so that the compiler cannot contract them
// differently in the attention kernel and in the merge kernel.
#include <cuda_runtime.h>

#include <cmath>

namespace nvdet::kernels::tc {

// 2^x with the hardware approximation (flush-to-zero): exp2(-inf) = 0. The same instruction in
// every kernel of the plan.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The factor that rescales a state whose max was `from` to the max `to` (to >= from):
// exactly 1 when they are equal (an unchanged max leaves l and O untouched), exp2((from - to) * c)
// otherwise, 0 when from is -inf and to is finite.
__device__ __forceinline__ float rescale_factor(float from, float to, float c) {
  return from == to ? 1.0f : exp2_approx(__fmul_rn(__fsub_rn(from, to), c));
}

// Folding a split's state (m, l, O) into the running state (M, L, O_run):
//   M' = max(M, m), wa = rescale_factor(M, M'), wb = rescale_factor(m, M'),
//   L' = fma(l, wb, L * wa), O' = fma(O, wb, O_run * wa) per element.
// Folding an empty state (m = -inf, l = 0, O = 0) is an exact no-op; folding into the empty
// running state copies the split's state.
struct FoldWeights {
  float m, wa, wb;
};
__device__ __forceinline__ FoldWeights fold_weights(float run_m, float m, float c) {
  const float mm = fmaxf(run_m, m);
  return {mm, rescale_factor(run_m, mm, c), rescale_factor(m, mm, c)};
}
__device__ __forceinline__ float fold_value(float run, float v, const FoldWeights& w) {
  return __fmaf_rn(v, w.wb, __fmul_rn(run, w.wa));
}

}  // namespace nvdet::kernels::tc
