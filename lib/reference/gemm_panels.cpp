#include "lib/reference/gemm_panels.h"

#include <string>

#include "lib/core/host_memory.h"
#include "lib/core/parallel.h"
#include "lib/reference/cpu_common.h"

namespace nvdet::cpu {

PackedGemm pack_gemm(const GemmArgs& args) {
  const HostTensor& w = *args.w;
  const int64_t k = args.a->dim(1);
  return pack_gemm_values(
      args.a->dim(0), w.dim(0), k, to_float(*args.a),
      [&](int64_t col, float* out) { to_float(w, col * k, k, out); },
      args.bias != nullptr ? to_float(*args.bias) : std::vector<float>());
}

PackedGemm pack_gemm_values(int64_t m, int64_t n, int64_t k, std::vector<float> a,
                            const std::function<void(int64_t col, float* out)>& weight_row,
                            std::vector<float> bias) {
  PackedGemm g;
  g.m = m;
  g.k = k;
  g.n = n;
  g.a = std::move(a);
  g.bias = std::move(bias);
  const size_t panel_floats = static_cast<size_t>(g.num_panels() * g.k * kGemmLanes);
  try {
    g.panels.assign(panel_floats, 0.0f);
  } catch (const std::bad_alloc&) {
    throw HostAllocationError(
        "the fp32 panels of a [" + std::to_string(g.n) + ", " + std::to_string(g.k) + "] weight",
        panel_floats * sizeof(float));
  }
  parallel_for(g.num_panels(), g.k * kGemmLanes, [&](int64_t p) {
    std::vector<float> row(static_cast<size_t>(g.k));
    float* panel = g.panels.data() + p * g.k * kGemmLanes;
    for (int l = 0; l < kGemmLanes; ++l) {
      const int64_t col = p * kGemmLanes + l;
      if (col >= g.n) break;
      weight_row(col, row.data());
      for (int64_t kk = 0; kk < g.k; ++kk) panel[kk * kGemmLanes + l] = row[kk];
    }
  });
  return g;
}

}  // namespace nvdet::cpu
