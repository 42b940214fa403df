#include "lib/scenario/scenario.h"

#include "lib/core/error.h"

namespace nvdet {

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
  static const std::vector<AxisDescription> axes = {
      {"batch", "requests in the batch (probed requests plus seeded fillers)"},
      {"position", "where the probed requests sit in the batch: first, middle, last or a slot index"},
      {"tokens", "rows (tokens) of each request", true},
      {"kv_len", "KV-cache length of the probed requests", true},
      {"filler_kv_len",
       "KV-cache length of the co-batched requests (batch composition); 'same' = kv_len"},
      {"prompt_len", "prompt length of the probed requests", true},
      {"prefill_chunk", "prefill chunk size in tokens, or 'whole'"},
      {"prefix_len", "tokens served from the prefix cache"},
      {"num_splits", "force a KV split count (vendor-style backends)"},
      {"split_size", "KV tokens per split (invariant backends)", true},
      {"page_size", "tokens per KV-cache page"},
      {"max_new_tokens", "tokens to decode greedily", true},
      {"tp", "tensor-parallel ranks, simulated on one device (1 = unsharded)"},
      {"allreduce", "how row-parallel partials are summed: auto, ring, tree, fixed or nccl"},
      {"channels", "all-reduce channels; 0 = chosen from the message size"},
  };
  return axes;
}

}  // namespace nvdet
