#pragma once
// A context's FP8 scheme (README "FP8") and the quantised weights the FP8 workloads (gemm, moe)
// multiply. Weights are static, as in serving: each is quantised once per (format, weight
// scale) the sweep uses, when the workload is built, so every context and backend multiplies
// the same codes.
#include <map>
#include <utility>
#include <vector>

#include "lib/ops/fp8_quant.h"
#include "lib/scenario/context.h"

namespace nvdet {

// The scenario's `fp8:` scheme with the context's FP8 axes (fp8_format, act_scale,
// weight_scale, accumulation) applied.
Fp8Scheme fp8_scheme(const Scenario& s, const Context& c);
// Every scheme the scenario's contexts run: the product of the FP8 axes' values (the key's
// value where an axis is not swept), in sweep order.
std::vector<Fp8Scheme> fp8_schemes(const Scenario& s);

class Fp8Weights {
 public:
  Fp8Weights() = default;
  // Quantises each of `weights` for every (format, weight scale) among `schemes`.
  Fp8Weights(const std::vector<const HostTensor*>& weights, const std::vector<Fp8Scheme>& schemes);
  // Weight i as `scheme`'s format and weight scale quantise it.
  const Fp8Weight& at(size_t i, const Fp8Scheme& scheme) const;
  bool empty() const { return sets_.empty(); }

 private:
  std::map<std::pair<Fp8Format, Fp8WeightScale>, std::vector<Fp8Weight>> sets_;
};

}  // namespace nvdet
