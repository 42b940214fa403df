#include "lib/scenario/scenario.h"

#include <map>

#include "lib/core/error.h"

namespace nvdet {

std::string_view scenario_op_name(ScenarioOp op) {
  switch (op) {
    case ScenarioOp::kGemm: return "gemm";
    case ScenarioOp::kRmsNorm: return "rmsnorm";
    case ScenarioOp::kLogSoftmax: return "log_softmax";
    case ScenarioOp::kAttentionDecode: return "attention_decode";
    case ScenarioOp::kAttentionPrefill: return "attention_prefill";
    case ScenarioOp::kModel: return "model";
  }
  return "?";
}

std::string_view expectation_name(Expectation e) {
  switch (e) {
    case Expectation::kInvariant: return "invariant";
    case Expectation::kVariant: return "variant";
    case Expectation::kReport: return "report";
  }
  return "?";
}

std::string axis_value_string(const AxisValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

const std::vector<AxisDescription>& known_axes() {
  using O = ScenarioOp;
  static const std::vector<AxisDescription> axes = {
      {"batch",
       {O::kGemm, O::kRmsNorm, O::kLogSoftmax, O::kAttentionDecode, O::kAttentionPrefill,
        O::kModel},
       "requests in the batch (probed requests plus seeded fillers)"},
      {"position",
       {O::kGemm, O::kRmsNorm, O::kLogSoftmax, O::kAttentionDecode, O::kAttentionPrefill,
        O::kModel},
       "where the probed requests sit in the batch: first, middle, last or a slot index"},
      {"tokens", {O::kGemm, O::kRmsNorm, O::kLogSoftmax}, "rows (tokens) of each request", true},
      {"kv_len", {O::kAttentionDecode}, "KV-cache length of the probed requests", true},
      {"filler_kv_len", {O::kAttentionDecode},
       "KV-cache length of the co-batched requests (batch composition); 'same' = kv_len"},
      {"prompt_len", {O::kAttentionPrefill}, "prompt length of the probed requests", true},
      {"prefill_chunk", {O::kAttentionPrefill, O::kModel},
       "prefill chunk size in tokens, or 'whole'"},
      {"prefix_len", {O::kAttentionPrefill}, "tokens served from the prefix cache"},
      {"num_splits", {O::kAttentionDecode, O::kAttentionPrefill},
       "force a KV split count (vendor-style backends)"},
      {"split_size", {O::kAttentionDecode, O::kAttentionPrefill},
       "KV tokens per split (invariant backends)", true},
      {"page_size", {O::kAttentionDecode, O::kAttentionPrefill, O::kModel},
       "tokens per KV-cache page"},
      {"max_new_tokens", {O::kModel}, "tokens to decode greedily", true},
  };
  return axes;
}

std::vector<Scenario> load_scenarios(const std::vector<std::string>& paths,
                                     const std::string& outputs) {
  std::vector<Scenario> scenarios;
  std::map<std::string, std::string> path_of_name;
  for (const std::string& path : paths) {
    Scenario s = load_scenario(path);
    const auto [it, fresh] = path_of_name.emplace(s.name, path);
    if (!fresh) {
      throw_input_error("two scenarios are named '" + s.name + "' (" + it->second + " and " + path +
                        "): their " + outputs + " would overwrite each other");
    }
    scenarios.push_back(std::move(s));
  }
  return scenarios;
}

}  // namespace nvdet
