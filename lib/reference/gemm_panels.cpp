#include "lib/reference/gemm_panels.h"

#include <string>

#include "lib/core/host_memory.h"
#include "lib/core/parallel.h"
#include "lib/reference/cpu_common.h"

namespace nvdet::cpu {

PackedGemm pack_gemm(const GemmArgs& args) {
  PackedGemm g;
  g.m = args.a->dim(0);
  g.k = args.a->dim(1);
  g.n = args.w->dim(0);
  g.a = to_float(*args.a);
  if (args.bias != nullptr) g.bias = to_float(*args.bias);
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
      to_float(*args.w, col * g.k, g.k, row.data());
      for (int64_t kk = 0; kk < g.k; ++kk) panel[kk * kGemmLanes + l] = row[kk];
    }
  });
  return g;
}

}  // namespace nvdet::cpu
