#pragma once
// The GEMM inner loop shared by the three CPU backends. Only the *segmentation* of K and the
// order in which segment partials are combined differ between backends; within a segment every
// output element is accumulated the same way: sequentially in k, from zero.
//
// Layout: `a` is converted to floats [m][k]; `w` ([n, k]) is packed into panels of kGemmLanes
// output columns, panel p holding w[p*L + l][kk] at [p][kk][l] (zero-padded past n). A register
// block computes kGemmRows rows x kGemmLanes columns at once; each of those elements still has
// its own sequential accumulator, so blocking changes speed, never bits.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "lib/ops/op_args.h"

namespace nvdet::cpu {

inline constexpr int kGemmLanes = 8;
inline constexpr int kGemmRows = 4;

struct PackedGemm {
  int64_t m = 0, n = 0, k = 0;
  std::vector<float> a;       // [m][k]
  std::vector<float> panels;  // [num_panels][k][kGemmLanes]
  std::vector<float> bias;    // [n], empty when there is no bias
  int64_t num_panels() const { return (n + kGemmLanes - 1) / kGemmLanes; }
  int64_t num_row_blocks() const { return (m + kGemmRows - 1) / kGemmRows; }
  // Multiply-adds of one panel (all rows against its kGemmLanes columns): parallel_for's cost.
  int64_t panel_work() const { return m * k * kGemmLanes; }
};

PackedGemm pack_gemm(const GemmArgs& args);
// The same from values already in floats: `a` [m][k], and `weight_row(col, out)` writing row
// `col` of the [n, k] weight (k floats); `bias` [n] or empty. (The FP8 GEMM packs its codes'
// values this way.)
PackedGemm pack_gemm_values(int64_t m, int64_t n, int64_t k, std::vector<float> a,
                            const std::function<void(int64_t col, float* out)>& weight_row,
                            std::vector<float> bias);

// acc[r][l] = sum over kk in [k0, k1), sequentially from zero, of a[row0 + r][kk] * w[col][kk]
// (Acc = float or double: products and sums are done in Acc). Rows past m repeat row m-1 and are
// ignored by callers.
template <class Acc>
void gemm_segment(const PackedGemm& g, int64_t row0, int64_t panel, int64_t k0, int64_t k1,
                  Acc acc[kGemmRows][kGemmLanes]) {
  const float* rows[kGemmRows];
  for (int r = 0; r < kGemmRows; ++r) {
    rows[r] = g.a.data() + std::min(row0 + r, g.m - 1) * g.k;
  }
  for (int r = 0; r < kGemmRows; ++r) {
    for (int l = 0; l < kGemmLanes; ++l) acc[r][l] = Acc(0);
  }
  const float* p = g.panels.data() + panel * g.k * kGemmLanes;
  for (int64_t kk = k0; kk < k1; ++kk) {
    const float* wk = p + kk * kGemmLanes;
    for (int r = 0; r < kGemmRows; ++r) {
      const Acc av = static_cast<Acc>(rows[r][kk]);
      for (int l = 0; l < kGemmLanes; ++l) acc[r][l] += av * static_cast<Acc>(wk[l]);
    }
  }
}

// The float case, written with 4-wide vectors so that it compiles to packed SSE multiplies and
// adds (the generic loop above vectorises poorly). Each vector lane is one output element and
// performs exactly the same sequence of roundings as the scalar loop: acc = acc + a * w, product
// rounded first (FP contraction is off for the whole project), so the bits are identical.
typedef float Float4 __attribute__((vector_size(16)));

template <>
inline void gemm_segment<float>(const PackedGemm& g, int64_t row0, int64_t panel, int64_t k0,
                                int64_t k1, float acc[kGemmRows][kGemmLanes]) {
  static_assert(kGemmRows == 4 && kGemmLanes == 8, "the vector kernel is written for 4 x 8");
  const float* r0 = g.a.data() + std::min(row0 + 0, g.m - 1) * g.k;
  const float* r1 = g.a.data() + std::min(row0 + 1, g.m - 1) * g.k;
  const float* r2 = g.a.data() + std::min(row0 + 2, g.m - 1) * g.k;
  const float* r3 = g.a.data() + std::min(row0 + 3, g.m - 1) * g.k;
  const float* p = g.panels.data() + panel * g.k * kGemmLanes;
  Float4 c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {};
  for (int64_t kk = k0; kk < k1; ++kk) {
    Float4 w0, w1;
    std::memcpy(&w0, p + kk * kGemmLanes, sizeof(w0));
    std::memcpy(&w1, p + kk * kGemmLanes + 4, sizeof(w1));
    const float a0 = r0[kk], a1 = r1[kk], a2 = r2[kk], a3 = r3[kk];
    c00 += a0 * w0;
    c01 += a0 * w1;
    c10 += a1 * w0;
    c11 += a1 * w1;
    c20 += a2 * w0;
    c21 += a2 * w1;
    c30 += a3 * w0;
    c31 += a3 * w1;
  }
  const Float4* out[kGemmRows][2] = {{&c00, &c01}, {&c10, &c11}, {&c20, &c21}, {&c30, &c31}};
  for (int r = 0; r < kGemmRows; ++r) {
    std::memcpy(acc[r], out[r][0], sizeof(Float4));
    std::memcpy(acc[r] + 4, out[r][1], sizeof(Float4));
  }
}

}  // namespace nvdet::cpu
