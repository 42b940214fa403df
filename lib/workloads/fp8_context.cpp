#include "lib/workloads/fp8_context.h"

#include "lib/core/error.h"

namespace nvdet {
namespace {

// The FP8 axes in the order a scheme's fields are listed.
constexpr Axis kFp8Axes[] = {Axis::kFp8Format, Axis::kActScale, Axis::kWeightScale,
                             Axis::kAccumulation};

// `scheme` with FP8 axis `axis` set to `word` (a value the axis table has checked).
void apply(Fp8Scheme& scheme, Axis axis, const std::string& word) {
  if (axis == Axis::kFp8Format) scheme.format = *parse_fp8_format(word);
  if (axis == Axis::kActScale) scheme.act_scale = *parse_fp8_act_scale(word);
  if (axis == Axis::kWeightScale) scheme.weight_scale = *parse_fp8_weight_scale(word);
  if (axis == Axis::kAccumulation) scheme.accumulation = *parse_fp8_accumulation(word);
}

}  // namespace

Fp8Scheme fp8_scheme(const Scenario& s, const Context& c) {
  Fp8Scheme scheme = s.fp8.scheme;
  for (const Axis a : kFp8Axes) apply(scheme, a, c.word(a));
  return scheme;
}

std::vector<Fp8Scheme> fp8_schemes(const Scenario& s) {
  std::vector<Fp8Scheme> out = {s.fp8.scheme};
  for (const SweepAxis& swept : s.sweep) {
    bool fp8_axis = false;
    for (const Axis a : kFp8Axes) fp8_axis = fp8_axis || swept.axis == a;
    if (!fp8_axis) continue;
    std::vector<Fp8Scheme> next;
    for (const Fp8Scheme& base : out) {
      for (const AxisValue& v : swept.values) {
        Fp8Scheme scheme = base;
        apply(scheme, swept.axis, std::get<std::string>(v));
        next.push_back(scheme);
      }
    }
    out = std::move(next);
  }
  return out;
}

Fp8Weights::Fp8Weights(const std::vector<const HostTensor*>& weights,
                       const std::vector<Fp8Scheme>& schemes) {
  for (const Fp8Scheme& scheme : schemes) {
    const auto key = std::make_pair(scheme.format, scheme.weight_scale);
    if (sets_.count(key)) continue;
    std::vector<Fp8Weight>& set = sets_[key];
    set.reserve(weights.size());
    for (const HostTensor* w : weights)
      set.push_back(quantize_weight(*w, scheme.format, scheme.weight_scale));
  }
}

const Fp8Weight& Fp8Weights::at(size_t i, const Fp8Scheme& scheme) const {
  const auto it = sets_.find(std::make_pair(scheme.format, scheme.weight_scale));
  if (it == sets_.end() || i >= it->second.size()) {
    throw_runtime_error("no FP8 weight was quantised for " + fp8_scheme_text(scheme));
  }
  return it->second[i];
}

}  // namespace nvdet
