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

// The fixed pairwise tree of the softmax step's sums and maxes: v[i] op= v[i + W] for i < W, with
// W = HALF, HALF / 2, ..., 1, leaving the result in v[0]. A template recursion rather than a loop
// over W, so that every index is a constant (a runtime W put the array in local memory).
template <int HALF, int N, class Op>
__device__ __forceinline__ void tc_halving_tree(float (&v)[N], Op op) {
  static_assert(2 * HALF <= N, "the tree's first level reads v[0, 2 HALF)");
  if constexpr (HALF >= 1) {
#pragma unroll
    for (int i = 0; i < HALF; ++i) v[i] = op(v[i], v[i + HALF]);
    tc_halving_tree<HALF / 2>(v, op);
  }
}

// One query row's online-softmax step over a key tile of KEYS keys, as every form of the kernel
// runs it (attention_tc.cuh's plan, step 2). The row belongs to the four threads of a quad; this
// thread holds its scores for keys t0 + 8 jb + 2 quad + e (jb < KEYS / 8, e < 2) at
// s[STRIDE * jb + e], the order of a wgmma accumulator row (STRIDE 4 in the 64-row form, where
// the registers between belong to the row 8 below; 2 in the swapped form's softmax warp). Keys at
// or past lim become -inf by a select; the row max over the quad by butterfly; p = exp2(s c - m c)
// replaces each score; the thread's sum of its p in a fixed pairwise tree is folded into l (the
// quad's four partial sums are added at the split's end); m becomes the new max. Returns alpha,
// the factor for l and O: exactly 1 where the max did not move.
//
// Shortcuts that leave every output bit as it was. The selects are skipped where every key of
// the tile lies below lim (there they are the identity): most of a long row's tiles, where the
// selects were a quarter of the step's instructions. They are also skipped in rows that are
// padding (lim < 0: past the item's tokens, their Q rows zero): such a row's scores reach no
// output, since the rows of an MMA never mix and a padding row's state is never stored and
// folds only into its own; in a decode block (4 of 8 rows used at a GQA group of 4) they would
// otherwise make the warp run the selects on every tile. And the max is taken in a pairwise
// tree rather than a chain of KEYS / 4 dependent steps: the max is exact and does not depend on
// the order (NaN scores included, since m starts at -inf and fmaxf drops a NaN), up to the sign
// of a zero max, which reaches no output (m enters only differences and equality tests).
template <int KEYS, int STRIDE>
__device__ __forceinline__ float tc_softmax_step(float* s, int t0, int lim, int quad, float c,
                                                 float& m, float& l) {
  static_assert(KEYS == 64 || KEYS == 128, "the plan's tile widths");
  if (lim >= 0 && t0 + KEYS > lim) {
    // Key t0 + 8 jb + 2 quad + e is kept when 8 jb + e < room.
    const int room = lim - t0 - 2 * quad;
#pragma unroll
    for (int jb = 0; jb < KEYS / 8; ++jb) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& v = s[STRIDE * jb + e];
        v = 8 * jb + e < room ? v : -INFINITY;
      }
    }
  }
  float mxs[KEYS / 8];
#pragma unroll
  for (int jb = 0; jb < KEYS / 8; ++jb) mxs[jb] = fmaxf(s[STRIDE * jb], s[STRIDE * jb + 1]);
  tc_halving_tree<KEYS / 16>(mxs, [](float a, float b) { return fmaxf(a, b); });
  float mx = mxs[0];
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float m_new = fmaxf(m, mx);
  const float m_use = m_new == -INFINITY ? 0.0f : m_new;
  const float alpha = tc_rescale_factor(m, m_use, c);
  const float nmc = __fmul_rn(m_use, -c);
  float part[KEYS / 8];
#pragma unroll
  for (int jb = 0; jb < KEYS / 8; ++jb) {
    float& a = s[STRIDE * jb];
    float& b = s[STRIDE * jb + 1];
    a = tc_exp2(__fmaf_rn(a, c, nmc));
    b = tc_exp2(__fmaf_rn(b, c, nmc));
    part[jb] = __fadd_rn(a, b);
  }
  tc_halving_tree<KEYS / 16>(part, [](float a, float b) { return __fadd_rn(a, b); });
  l = __fmaf_rn(l, alpha, part[0]);
  m = m_new;
  return alpha;
}

// The split's l from the quad's four partial sums (butterfly: every lane the same bits).
__device__ __forceinline__ float tc_quad_sum(float l) {
  l = __fadd_rn(l, __shfl_xor_sync(0xffffffffu, l, 1));
  return __fadd_rn(l, __shfl_xor_sync(0xffffffffu, l, 2));
}

}  // namespace nvdet::kernels
