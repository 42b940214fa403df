#include "lib/scenario/axis.h"

#include <algorithm>

#include "lib/core/checked_parse.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/ops/allreduce.h"
#include "lib/scenario/scenario.h"
#include "lib/scenario/typo_hint.h"

namespace nvdet {

std::string axis_value_string(const AxisValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

namespace {

using O = OpKind;
using T = AxisValueType;

AxisValue integer_or_word(int64_t n, int64_t word_when, const char* word) {
  return n == word_when ? AxisValue(std::string(word)) : AxisValue(n);
}

std::string quoted_words(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "'" : ", '") + w + "'";
  return out;
}

}  // namespace

// The defaults are the scenario's own keys (`attention.kv_len`, `model.page_size`, ...): a
// context that does not sweep an axis runs with what the file says, else the built-in value.
const std::vector<AxisSpec>& axis_table() {
  static const std::vector<AxisSpec> table = [] {
    const std::vector<O> row_ops = {O::kGemm, O::kRmsNorm, O::kLogSoftmax, O::kMoe};
    const std::vector<O> batched = {
        O::kGemm, O::kRmsNorm, O::kLogSoftmax, O::kAttentionDecode, O::kAttentionPrefill,
        O::kMoe,  O::kModel};
    const std::vector<O> attention = {O::kAttentionDecode, O::kAttentionPrefill};
    const std::vector<O> paged = {O::kAttentionDecode, O::kAttentionPrefill, O::kModel};
    const std::vector<O> chunked = {O::kAttentionPrefill, O::kModel};
    const std::vector<O> tensor_parallel = {O::kGemm, O::kModel};
    const std::vector<O> fp8_ops = {O::kGemm, O::kMoe, O::kModel};
    // A model's format and weight scales are its FP8 checkpoint's.
    const std::vector<O> fp8_weight_ops = {O::kGemm, O::kMoe};
    std::vector<AxisSpec> t = {
        {Axis::kBatch,
         "batch",
         "requests in the batch (probed requests plus seeded fillers)",
         T::kInteger,
         1,
         {},
         false,
         [](const Scenario& s) { return AxisValue(static_cast<int64_t>(s.requests.size())); },
         "the probed requests alone",
         batched},
        {Axis::kPosition,
         "position",
         "where the probed requests sit in the batch: first, middle, last or a slot index",
         T::kIntegerOrWord,
         0,
         {"first", "middle", "last"},
         false,
         [](const Scenario&) { return AxisValue(std::string("first")); },
         "first",
         batched},
        {Axis::kTokens,
         "tokens",
         "rows (tokens) of each request",
         T::kInteger,
         1,
         {},
         true,
         [](const Scenario& s) { return AxisValue(int64_t{s.tokens}); },
         "the key 'tokens'",
         row_ops},
        {Axis::kKvLen,
         "kv_len",
         "KV-cache length of the probed requests",
         T::kInteger,
         1,
         {},
         true,
         [](const Scenario& s) { return AxisValue(int64_t{s.attention.kv_len}); },
         "attention.kv_len",
         {O::kAttentionDecode}},
        {Axis::kFillerKvLen,
         "filler_kv_len",
         "KV-cache length of the co-batched requests (batch composition); 'same' = kv_len",
         T::kIntegerOrWord,
         1,
         {"same"},
         false,
         [](const Scenario& s) { return integer_or_word(s.attention.filler_kv_len, -1, "same"); },
         "attention.filler_kv_len",
         {O::kAttentionDecode}},
        {Axis::kPromptLen,
         "prompt_len",
         "prompt length of the probed requests",
         T::kInteger,
         1,
         {},
         true,
         [](const Scenario& s) { return AxisValue(int64_t{s.prefill.prompt_len}); },
         "prefill.prompt_len",
         {O::kAttentionPrefill}},
        {Axis::kPrefillChunk,
         "prefill_chunk",
         "prefill chunk size in tokens, or 'whole'",
         T::kIntegerOrWord,
         1,
         {"whole"},
         false,
         [](const Scenario& s) {
           return integer_or_word(s.op == O::kModel ? s.model.prefill_chunk : s.prefill.chunk, 0,
                                  "whole");
         },
         "prefill.chunk or model.prefill_chunk",
         chunked},
        {Axis::kPrefixLen,
         "prefix_len",
         "tokens served from the prefix cache",
         T::kInteger,
         0,
         {},
         false,
         [](const Scenario& s) { return AxisValue(int64_t{s.prefill.prefix_len}); },
         "prefill.prefix_len",
         {O::kAttentionPrefill}},
        {Axis::kNumSplits,
         "num_splits",
         "force a KV split count (vendor-style backends)",
         T::kInteger,
         0,
         {},
         false,
         [](const Scenario&) { return AxisValue(int64_t{0}); },
         "0: the backend's own choice",
         attention},
        {Axis::kSplitSize,
         "split_size",
         "KV tokens per split (invariant backends)",
         T::kInteger,
         0,
         {},
         true,
         [](const Scenario&) { return AxisValue(int64_t{0}); },
         "0: the backend's own choice",
         attention},
        {Axis::kPageSize,
         "page_size",
         "tokens per KV-cache page",
         T::kInteger,
         1,
         {},
         false,
         [](const Scenario& s) {
           return AxisValue(int64_t{s.op == O::kModel ? s.model.page_size : s.attention.page_size});
         },
         "attention.page_size or model.page_size",
         paged},
        {Axis::kMaxNewTokens,
         "max_new_tokens",
         "tokens to decode (greedily, or sampled with model.sampling)",
         T::kInteger,
         1,
         {},
         true,
         [](const Scenario& s) { return AxisValue(int64_t{s.model.max_new_tokens}); },
         "model.max_new_tokens",
         {O::kModel}},
        {Axis::kScoreBatch,
         "score_batch",
         "sequences packed into the scoring pass (the probed one plus seeded fillers)",
         T::kInteger,
         1,
         {},
         false,
         [](const Scenario& s) { return AxisValue(int64_t{s.model.score_batch}); },
         "model.score_batch",
         {O::kModel}},
        {Axis::kScoreChunk,
         "score_chunk",
         "scoring-pass tokens per pass after the prompt: 'whole' (trainer), k+1 (verification), "
         "1 (decode again)",
         T::kIntegerOrWord,
         1,
         {"whole"},
         false,
         [](const Scenario& s) { return integer_or_word(s.model.score_chunk, 0, "whole"); },
         "model.score_chunk",
         {O::kModel}},
        {Axis::kSampler,
         "sampler",
         "seeded sampler: per_request (counter-based) or batch_stream (one stream in row order)",
         T::kWords,
         0,
         {"per_request", "batch_stream"},
         true,
         [](const Scenario& s) {
           return AxisValue(std::string(sampler_name(s.model.sampling.sampler)));
         },
         "model.sampling.sampler",
         {O::kModel}},
        {Axis::kFillerRouting,
         "filler_routing",
         "where the co-batched rows route (op moe): random (spread out), same (onto the probed "
         "rows' experts) or hot (onto one hot expert)",
         T::kWords,
         0,
         {"random", "same", "hot"},
         false,
         [](const Scenario&) { return AxisValue(std::string("random")); },
         "random",
         {O::kMoe}},
        {Axis::kTp,
         "tp",
         "tensor-parallel ranks, simulated on one device (1 = unsharded)",
         T::kInteger,
         1,
         {},
         false,
         [](const Scenario&) { return AxisValue(int64_t{1}); },
         "1",
         tensor_parallel,
         kMaxTp},
        {Axis::kAllreduce, "allreduce",
         "how row-parallel partials are summed: auto, ring, tree, fixed or nccl", T::kWords, 0,
         all_reduce_algo_words(), false,
         [](const Scenario&) { return AxisValue(std::string("auto")); }, "auto", tensor_parallel},
        {Axis::kChannels,
         "channels",
         "all-reduce channels; 0 = chosen from the message size",
         T::kInteger,
         0,
         {},
         false,
         [](const Scenario&) { return AxisValue(int64_t{0}); },
         "0",
         tensor_parallel,
         kMaxAllReduceChannels},
        // Serving traffic (README "Serving traffic"; op model with a traffic block): none of
        // these changes a probed request, only what shares its steps, so each value is compared
        // with the baseline: N traffic seeds are N replays of the same probe.
        {Axis::kTrafficSeed,
         "traffic_seed",
         "the seed of the co-traffic a probed request is replayed under: one value, one replay",
         T::kInteger,
         0,
         {},
         false,
         [](const Scenario& s) { return AxisValue(s.traffic.seed); },
         "traffic.traffic_seed",
         {O::kModel}},
        {Axis::kMaxNumBatchedTokens,
         "max_num_batched_tokens",
         "the scheduler's token budget per step (decode tokens and prompt chunks together)",
         T::kInteger,
         1,
         {},
         false,
         [](const Scenario& s) { return AxisValue(s.traffic.max_num_batched_tokens); },
         "traffic.max_num_batched_tokens",
         {O::kModel}},
        {Axis::kMaxNumSeqs,
         "max_num_seqs",
         "the most requests running at once",
         T::kInteger,
         1,
         {},
         false,
         [](const Scenario& s) { return AxisValue(s.traffic.max_num_seqs); },
         "traffic.max_num_seqs",
         {O::kModel}},
        {Axis::kPrefixCaching,
         "prefix_caching",
         "whether a prompt reuses the cached KV pages of a prefix another request computed: on "
         "or off",
         T::kWords,
         0,
         {"on", "off"},
         false,
         [](const Scenario& s) {
           return AxisValue(std::string(s.traffic.prefix_caching ? "on" : "off"));
         },
         "traffic.prefix_caching",
         {O::kModel}},
        {Axis::kChunkedPrefill,
         "chunked_prefill",
         "whether a prompt may be cut into chunks over several steps: on or off",
         T::kWords,
         0,
         {"on", "off"},
         false,
         [](const Scenario& s) {
           return AxisValue(std::string(s.traffic.chunked_prefill ? "on" : "off"));
         },
         "traffic.chunked_prefill",
         {O::kModel}},
        // FP8 (README "FP8"): each changes the computation itself, so contexts of different
        // schemes are never compared; an audit sweeps them to show the schemes side by side.
        {Axis::kFp8Format, "fp8_format",
         "FP8 element format of weights and activations: e4m3 or e5m2", T::kWords, 0,
         fp8_format_words(), true,
         [](const Scenario& s) {
           return AxisValue(std::string(fp8_format_name(s.fp8.scheme.format)));
         },
         "fp8.format", fp8_weight_ops},
        {Axis::kActScale, "act_scale",
         "FP8 activation scale: static, dynamic_tensor (a max over the batch), dynamic_token or "
         "group_128",
         T::kWords, 0, fp8_act_scale_words(), true,
         [](const Scenario& s) {
           return AxisValue(std::string(fp8_act_scale_name(s.fp8.scheme.act_scale)));
         },
         "fp8.act_scale", fp8_ops},
        {Axis::kWeightScale, "weight_scale", "FP8 weight scale: tensor, channel or block_128x128",
         T::kWords, 0, fp8_weight_scale_words(), true,
         [](const Scenario& s) {
           return AxisValue(std::string(fp8_weight_scale_name(s.fp8.scheme.weight_scale)));
         },
         "fp8.weight_scale", fp8_weight_ops},
        {Axis::kAccumulation, "accumulation",
         "FP8 GEMM accumulation: promoted (fp32 partials of 128-wide K groups added in order) or "
         "fast (the tensor cores' own accumulator)",
         T::kWords, 0, fp8_accumulation_words(), true,
         [](const Scenario& s) {
           return AxisValue(std::string(fp8_accumulation_name(s.fp8.scheme.accumulation)));
         },
         "fp8.accumulation", fp8_ops},
        // op probe: the load a running server sees beside the probed request (lib/probe/).
        {Axis::kConcurrency,
         "concurrency",
         "filler requests in flight while the probe runs; 0 is the probe alone, the control",
         T::kInteger,
         0,
         {},
         false,
         [](const Scenario& s) { return AxisValue(int64_t{s.probe.fillers.concurrency}); },
         "fillers.concurrency",
         {O::kProbe}},
        {Axis::kArrival,
         "arrival",
         "when the probe is sent: first (before the fillers), mid (once they have streamed half "
         "their tokens) or last (once each has streamed its first)",
         T::kWords,
         0,
         {"first", "mid", "last"},
         false,
         [](const Scenario& s) { return AxisValue(s.probe.fillers.arrival); },
         "fillers.arrival",
         {O::kProbe}},
        {Axis::kFillerWords,
         "filler_words",
         "words of each seeded filler prompt",
         T::kInteger,
         1,
         {},
         false,
         [](const Scenario& s) { return AxisValue(int64_t{s.probe.fillers.words}); },
         "fillers.words",
         {O::kProbe}},
        {Axis::kFillerMaxTokens,
         "filler_max_tokens",
         "tokens each filler asks the server for",
         T::kInteger,
         1,
         {},
         false,
         [](const Scenario& s) { return AxisValue(int64_t{s.probe.fillers.max_tokens}); },
         "fillers.max_tokens",
         {O::kProbe}},
    };
    return t;
  }();
  return table;
}

bool AxisSpec::applies_to(OpKind op) const {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

const AxisSpec& axis_spec(Axis a) {
  const auto& t = axis_table();
  const size_t i = static_cast<size_t>(a);
  if (i >= t.size() || t[i].axis != a)
    throw_runtime_error("axis " + std::to_string(i) + " is not in its place in the axis table");
  return t[i];
}

const AxisSpec* find_axis(std::string_view name) {
  for (const AxisSpec& a : axis_table())
    if (a.name == name) return &a;
  return nullptr;
}

std::vector<std::string> axes_of_op(OpKind op) {
  std::vector<std::string> out;
  for (const AxisSpec& a : axis_table())
    if (a.applies_to(op)) out.push_back(a.name);
  return out;
}

std::optional<std::string> axis_value_problem(const AxisSpec& a, const AxisValue& v) {
  const std::string axis = "'" + a.name + "'";
  if (const auto* n = std::get_if<int64_t>(&v)) {
    if (!a.takes_integers())
      return axis + " values must be " + quoted_words(a.words) + ", got " + std::to_string(*n);
    if (*n < a.min)
      return axis + " values must be " +
             (a.min == 0 ? std::string("non-negative") : "at least " + std::to_string(a.min)) +
             ", got " + std::to_string(*n);
    if (*n > a.max)
      return axis + " value " + std::to_string(*n) + " is more than the limit " +
             std::to_string(a.max);
    return std::nullopt;
  }
  const std::string& w = std::get<std::string>(v);
  if (std::find(a.words.begin(), a.words.end(), w) != a.words.end()) return std::nullopt;
  const std::string got = ", got '" + excerpt(w) + "'";
  if (!a.takes_words()) return axis + " values must be integers" + got;
  if (!a.takes_integers())
    return axis + " values must be " + quoted_words(a.words) + got + typo_hint(w, a.words);
  return axis + " values must be integers or " + quoted_words(a.words) + got +
         typo_hint(w, a.words);
}

AxisValue axis_value_from_text(const AxisSpec& a, std::string_view text) {
  const bool digits =
      !text.empty() && text.find_first_not_of("-0123456789") == std::string_view::npos;
  if (a.takes_integers() && digits) {
    if (const std::optional<int64_t> n = parse_integer<int64_t>(std::string(text))) return *n;
  }
  return std::string(text);
}

AxisSettings axis_defaults(const Scenario& s) {
  AxisSettings out;
  for (const AxisSpec& a : axis_table()) out[static_cast<size_t>(a.axis)] = a.default_value(s);
  return out;
}

}  // namespace nvdet
