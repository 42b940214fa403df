#include "lib/runner/fp8_support.h"

#include "lib/model/checkpoint.h"
#include "lib/model/hf_config.h"
#include "lib/workloads/fp8_context.h"

namespace nvdet {

ScenarioFp8 scenario_fp8(const Scenario& s) {
  ScenarioFp8 out;
  if (s.op == OpKind::kModel) {
    if (s.model.checkpoint.empty() || !read_hf_config_json(s.model.checkpoint).fp8.enabled) {
      return out;  // a model that is not FP8: its workload refuses FP8 keys and axes
    }
    // The checkpoint's format and block scales, each of the sweep's activation schemes.
    for (Fp8Scheme scheme : fp8_schemes(s)) {
      scheme.format = Fp8Format::kE4M3;
      scheme.weight_scale = Fp8WeightScale::kBlock128;
      out.schemes.push_back(scheme);
    }
    out.key = "'model.checkpoint' (an FP8 checkpoint, quantization_config quant_method fp8)";
    return out;
  }
  if (!s.fp8.enabled) return out;
  out.schemes = fp8_schemes(s);
  out.key = "the key 'fp8'";
  std::string axes;
  for (const SweepAxis& a : s.sweep) {
    if (a.axis == Axis::kFp8Format || a.axis == Axis::kActScale || a.axis == Axis::kWeightScale ||
        a.axis == Axis::kAccumulation)
      axes += (axes.empty() ? "" : ", ") + a.name();
  }
  if (!axes.empty()) out.key += " and the sweep axes " + axes;
  return out;
}

Support fp8_support(const Scenario& s, const std::string& backend) {
  const ScenarioFp8 fp8 = scenario_fp8(s);
  for (const Fp8Scheme& scheme : fp8.schemes) {
    const std::string refusal = backend_fp8_refusal(backend, s.op, scheme);
    if (!refusal.empty()) {
      return {Support::Status::kUnsupportedOp, refusal + " (the FP8 scheme " +
                                                   fp8_scheme_text(scheme) + ", asked for by " +
                                                   fp8.key + ")"};
    }
  }
  return {};
}

}  // namespace nvdet
