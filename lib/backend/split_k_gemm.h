#pragma once
// Split-K around any backend's GEMM: the composition a vendor split-K kernel makes of its CTAs'
// partials, for a plan that fixes the split itself (lib/ops/fused_moe_plan.h). K is cut into
// parts of split_len elements (the last may be shorter); each part's product is computed by
// `gemm_fp32` from zero with an fp32 output; the parts, padded with zeros to a power of two, are
// added by a fixed tree (4 parts: (P0 + P2) + (P1 + P3)); the bias is added once and the sum
// rounded once to the call's out_dtype. cpu-variant's split GEMM (lib/reference/variant_gemm.cpp)
// composes its splits the same way.
#include <cstdint>
#include <functional>
#include <map>
#include <tuple>

#include "lib/backend/backend.h"

namespace nvdet {

// The weights' K slices, kept across calls so that a backend whose device copies are cached by
// tensor uid uploads each slice once (the activations' slices are new every call).
class KSliceCache {
 public:
  const HostTensor& slice(const HostTensor& w, int64_t k0, int64_t k1);

 private:
  std::map<std::tuple<uint64_t, int64_t, int64_t>, HostTensor> slices_;
};

// Columns [k0, k1) of a [rows, K] tensor.
HostTensor k_slice(const HostTensor& t, int64_t k0, int64_t k1);

HostTensor gemm_in_k_splits(const GemmArgs& args, int64_t split_len,
                            const std::function<HostTensor(const GemmArgs&)>& gemm_fp32,
                            KSliceCache* weight_slices = nullptr);

}  // namespace nvdet
