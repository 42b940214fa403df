#pragma once
// The reduction orders of the portable invariant backends, and every arithmetic step of their
// ops, as __host__ __device__ functions shared by kernels/portable.cu (cuda-portable) and
// lib/reference/portable_kernels.cpp (cpu-portable). Both sides call these functions in the same
// order on the same values; the only thing a side chooses is which thread runs which call.
//
// Reduction orders (all fixed by the reduction length alone: never by the batch, the other
// requests, the GPU's thread or block count):
//  GEMM        out[i, j] = round(acc + bias[j]), acc = sequential over k = 0, 1, ..., K-1 of
//              mul_add(acc, a[i, k], w[j, k]) from acc = 0.
//  RMSNorm     32 lanes: lane l sums x[j]^2 for j = l, l + 32, ... sequentially from 0
//              (lane_partial); the 32 lane sums are added by tree32 (w = 16, 8, 4, 2, 1:
//              v[i] = v[i] + v[i + w]); inv = 1 / sqrt(sum / d + eps); out = (x * inv) * w.
//  log-softmax max by the same 32-lane plan with max(); sum of exp(x - max) by the same plan as
//              RMSNorm's sum; out = (x - max) - log(sum).
//  attention   the online-softmax plan of cpu-invariant, with portable exp: scores
//              s_t = (sequential dot over d) * scale; KV tokens in tiles of 64 aligned to an
//              origin; per tile m' = max(m, s_0, ..., s_{n-1}) sequentially, c = exp(m - m'),
//              p_t = exp(s_t - m'), l = l * c + (sequential sum of p_t),
//              acc[j] = acc[j] * c + (sequential sum over t of p_t * v_t[j]).
//              Decode: splits of S tokens (512 by default) each folded from an empty state with
//              tiles aligned to the split start, then merged in split order (merge); prefill of
//              the token at position p: the decode plan of kv_len = p + 1. out = acc / l.
#include "kernels/portable_math.cuh"

namespace nvdet::kernels::portable {

inline constexpr int kLanes = 32;
inline constexpr int kAttentionTile = 64;

// ---- GEMM ---------------------------------------------------------------------------------------

// One output element: the sequential dot product of a row of `a` and a row of `w` (length k),
// plus the bias when there is one.
template <class T>
NVDET_PORTABLE_FN float gemm_element(const T* a_row, const T* w_row, int64_t k, const T* bias) {
  float acc = 0.0f;
  for (int64_t i = 0; i < k; ++i) acc = mul_add(acc, to_float(a_row[i]), to_float(w_row[i]));
  return bias ? add(acc, to_float(*bias)) : acc;
}

// ---- 32-lane row reductions ---------------------------------------------------------------------

// Lane `lane`'s sequential sum of f(x[j]) over j = lane, lane + 32, ... < d, from 0.
template <class T, class F>
NVDET_PORTABLE_FN float lane_sum(const T* x, int64_t d, int lane, F f) {
  float s = 0.0f;
  for (int64_t j = lane; j < d; j += kLanes) s = add(s, f(to_float(x[j])));
  return s;
}
// Lane `lane`'s sequential max of x[j] over the same elements, from -inf.
template <class T>
NVDET_PORTABLE_FN float lane_max(const T* x, int64_t d, int lane) {
  float m = float_of(kInfBits | 0x80000000u);
  for (int64_t j = lane; j < d; j += kLanes) m = max(m, to_float(x[j]));
  return m;
}

// The fixed pairwise tree over 32 lane values (v is overwritten). Returns the total.
NVDET_PORTABLE_FN float tree32_sum(float (&v)[kLanes]) {
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) v[i] = add(v[i], v[i + w]);
  }
  return v[0];
}
NVDET_PORTABLE_FN float tree32_max(float (&v)[kLanes]) {
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) v[i] = max(v[i], v[i + w]);
  }
  return v[0];
}

// x * x, the summand of RMSNorm's sum of squares.
struct Square {
  NVDET_PORTABLE_FN float operator()(float x) const { return mul(x, x); }
};
// exp(x - mx), the summand of log-softmax's sum.
struct ExpShifted {
  float mx;
  NVDET_PORTABLE_FN float operator()(float x) const { return exp(sub(x, mx)); }
};

// ---- RMSNorm and log-softmax --------------------------------------------------------------------

// 1 / sqrt(sum_sq / d + eps); d < 2^24 is exact in float.
NVDET_PORTABLE_FN float rms_inverse(float sum_sq, int64_t d, float eps) {
  return div(1.0f, sqrt(add(div(sum_sq, static_cast<float>(d)), eps)));
}
NVDET_PORTABLE_FN float rms_output(float x, float inverse, float weight) {
  return mul(mul(x, inverse), weight);
}
NVDET_PORTABLE_FN float log_softmax_output(float x, float mx, float log_sum) {
  return sub(sub(x, mx), log_sum);
}

// ---- attention ----------------------------------------------------------------------------------

// s = (sequential dot over d of q[j] * k[j], from 0) * scale.
template <class T>
NVDET_PORTABLE_FN float attention_score(const float* q, const T* k, int d, float scale) {
  float dot = 0.0f;
  for (int j = 0; j < d; ++j) dot = mul_add(dot, q[j], to_float(k[j]));
  return mul(dot, scale);
}

// The tile's new running max: m' = max(...max(max(m, s_0), s_1)..., s_{n-1}).
NVDET_PORTABLE_FN float tile_max(float m, const float* scores, int n) {
  for (int t = 0; t < n; ++t) m = max(m, scores[t]);
  return m;
}
// exp(a - b), 0 when a is -inf (an empty state's max), so that an empty state rescales to 0.
NVDET_PORTABLE_FN float exp_diff(float a, float b) {
  return bits_of(a) == (kInfBits | 0x80000000u) ? 0.0f : exp(sub(a, b));
}
// Sequential sum of p_0 .. p_{n-1} from 0.
NVDET_PORTABLE_FN float tile_sum(const float* p, int n) {
  float s = 0.0f;
  for (int t = 0; t < n; ++t) s = add(s, p[t]);
  return s;
}
// Sequential sum over t of p_t * v_t[j] from 0, v_t[j] read as v_col(t).
template <class VCol>
NVDET_PORTABLE_FN float tile_weighted_sum(const float* p, int n, VCol v_col) {
  float s = 0.0f;
  for (int t = 0; t < n; ++t) s = mul_add(s, p[t], v_col(t));
  return s;
}
// A running value rescaled by c and extended by the tile's contribution: old * c + tile.
NVDET_PORTABLE_FN float rescale_add(float old, float c, float tile) {
  return add(mul(old, c), tile);
}

// Merge of split states a and b (b non-empty, a non-empty): M = max(a.m, b.m),
// ea = exp(a.m - M), eb = exp(b.m - M), l = a.l * ea + b.l * eb, acc likewise.
struct MergeWeights {
  float m, ea, eb;
};
NVDET_PORTABLE_FN MergeWeights merge_weights(float ma, float mb) {
  const float m = max(ma, mb);
  return {m, exp_diff(ma, m), exp_diff(mb, m)};
}
NVDET_PORTABLE_FN float merge_value(float a, float b, const MergeWeights& w) {
  return add(mul(a, w.ea), mul(b, w.eb));
}

}  // namespace nvdet::kernels::portable
