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

std::string_view parity_expectation_name(ParityExpectation e) {
  return e == ParityExpectation::kBitwise ? "bitwise" : "report";
}

std::string_view sampler_name(SamplerKind k) {
  return k == SamplerKind::kBatchStream ? "batch_stream" : "per_request";
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
      {"score_batch", "sequences packed into the scoring pass (the probed one plus seeded fillers)"},
      {"score_chunk", "scoring-pass tokens per pass after the prompt: 'whole' (trainer), k+1 (verification), 1 (decode again)"},
      {"sampler", "seeded sampler: per_request (counter-based) or batch_stream (one stream in row order)", true},
      {"filler_routing",
       "where the co-batched rows route (op moe): random (spread out), same (onto the probed "
       "rows' experts) or hot (onto one hot expert)"},
      {"tp", "tensor-parallel ranks, simulated on one device (1 = unsharded)"},
      {"allreduce", "how row-parallel partials are summed: auto, ring, tree, fixed or nccl"},
      {"channels", "all-reduce channels; 0 = chosen from the message size"},
  };
  return axes;
}

}  // namespace nvdet
