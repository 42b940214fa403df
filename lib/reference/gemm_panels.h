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
};

PackedGemm pack_gemm(const GemmArgs& args);

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

}  // namespace nvdet::cpu
