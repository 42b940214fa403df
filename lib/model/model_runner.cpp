#include "lib/model/model_runner.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "lib/core/error.h"
#include "lib/model/checkpoint.h"
#include "lib/model/decode_progress.h"
#include "lib/model/sampler.h"
#include "lib/model/synthetic_checkpoint.h"
#include "lib/model/tp_engine.h"

namespace nvdet {

ModelRunner::ModelRunner(const Scenario& s) : s_(s) {
  if (s.model.checkpoint.empty()) {
    const ModelConfig c = config_from_spec(s.model);
    validate_config(c, s.path);
    weights_ = std::make_shared<const ModelWeights>(
        make_synthetic_weights(c, s.dtype, s.model.weight_seed ? s.model.weight_seed : s.seed));
  } else if (s.model.synthetic_weights) {
    weights_ = std::make_shared<const ModelWeights>(
        load_synthetic_checkpoint(s.model.checkpoint, s.seed, s.dtype));
  } else {
    weights_ =
        std::make_shared<const ModelWeights>(load_hf_checkpoint(s.model.checkpoint, s.dtype));
  }
  // Every tp the sweep names must shard this model (checked before any context runs).
  for (const int tp : tp_values(s)) check_tp_degree(weights_->config, tp);
  prompts_ = scenario_prompts(s, weights_->config.vocab);
  for (size_t i = 0; i < prompts_.size(); ++i) {
    for (int32_t id : prompts_[i]) {
      if (id < 0 || id >= weights_->config.vocab) {
        throw_input_error(s.path + ": prompt " + std::to_string(i) + " holds token id " +
                          std::to_string(id) + ", outside the model's vocabulary (0.." +
                          std::to_string(weights_->config.vocab - 1) + ")");
      }
    }
  }
}

DecodeOptions ModelRunner::options_for(const Context& c) const {
  DecodeOptions o;
  // Every value was checked against its axis's rule when the context was made.
  const auto* chunk = std::get_if<int64_t>(&c.value(Axis::kPrefillChunk));  // null: "whole"
  o.prefill_chunk = chunk ? static_cast<int32_t>(*chunk) : 0;
  o.page_size = static_cast<int32_t>(c.integer(Axis::kPageSize));
  o.max_new_tokens = static_cast<int32_t>(c.integer(Axis::kMaxNewTokens));
  o.tp = tp_options(s_, c);
  return o;
}

ModelBatch ModelRunner::batch_for(const Context& c) const {
  return make_model_batch(s_, c, prompts_, weights_->config.vocab);
}

std::vector<SequenceResult> ModelRunner::run(Backend& backend, const Context& c,
                                             const std::vector<int64_t>& requests,
                                             TensorObserver* observer, RunNotes* notes) const {
  const ModelBatch b = batch_for(c);
  std::vector<size_t> watched;
  for (int64_t r : requests) {
    const auto it = std::find(s_.requests.begin(), s_.requests.end(), r);
    if (it == s_.requests.end()) {
      throw_input_error("request " + std::to_string(r) +
                        " is not one of the scenario's probed requests");
    }
    watched.push_back(b.probe_slot[static_cast<size_t>(it - s_.requests.begin())]);
  }
  DecodeOptions options = options_for(c);
  std::unique_ptr<TokenSampler> sampler;
  if (s_.model.sampling.enabled && s_.model.sampling.temperature > 0.0) {
    sampler = make_token_sampler(s_.model.sampling, sampler_for(c));
    options.sampler = sampler.get();
    options.sampling_ids = b.request_ids;
  }
  if (const DecodeProgressSink& sink = decode_progress_sink()) {
    const auto start = std::chrono::steady_clock::now();
    const double batch = static_cast<double>(b.prompts.size());
    options.on_step = [&sink, &backend, &c, start, batch](int32_t done, int32_t total) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      sink({backend.info().name, c.id, done, total, s > 0 ? batch * done / s : 0.0});
    };
  }
  return greedy_decode(backend, *weights_, b.prompts, watched, options, observer, notes);
}

ScoreOptions ModelRunner::score_options_for(const Context& c) const {
  ScoreOptions o;
  o.batch = static_cast<int32_t>(c.integer(Axis::kScoreBatch));
  const auto* chunk = std::get_if<int64_t>(&c.value(Axis::kScoreChunk));  // null: "whole"
  o.chunk = chunk ? static_cast<int32_t>(*chunk) : 0;
  o.page_size = options_for(c).page_size;
  o.seed = s_.seed;
  o.tp = options_for(c).tp;  // the sampler's tp, unless model.trainer names another
  if (s_.model.trainer_tp > 0) o.tp.tp = s_.model.trainer_tp;
  return o;
}

Backend& ModelRunner::trainer(Backend& sampler) const {
  const std::string& name = s_.model.trainer_backend;
  if (name.empty() || name == sampler.info().name) return sampler;
  if (!trainer_) trainer_ = make_backend(name);
  return *trainer_;
}

SamplerKind ModelRunner::sampler_for(const Context& c) const {
  return c.word(Axis::kSampler) == "batch_stream" ? SamplerKind::kBatchStream
                                                  : SamplerKind::kPerRequest;
}

std::vector<HostTensor> ModelRunner::score(Backend& backend, const Context& c,
                                           const std::vector<int64_t>& requests,
                                           const std::vector<std::vector<int32_t>>& completions,
                                           TensorObserver* observer, RunNotes* notes) const {
  ScoreOptions o = score_options_for(c);
  Backend& scorer = trainer(backend);
  if (notes && (!s_.model.trainer_backend.empty() || s_.model.trainer_tp > 0)) {
    (*notes)["score.trainer"] = scorer.info().name + " at tp " + std::to_string(o.tp.tp);
  }
  std::vector<HostTensor> out;
  for (size_t i = 0; i < requests.size(); ++i) {
    o.filler_key = static_cast<uint64_t>(requests[i]);
    out.push_back(score_sequence(scorer, *weights_, prompts_.at(static_cast<size_t>(requests[i])),
                                 completions.at(i), o, observer, i, i == 0 ? notes : nullptr));
  }
  return out;
}

namespace {
DecodeProgressSink& progress_sink() {
  static DecodeProgressSink sink;
  return sink;
}
}  // namespace

void set_decode_progress_sink(DecodeProgressSink sink) { progress_sink() = std::move(sink); }
const DecodeProgressSink& decode_progress_sink() { return progress_sink(); }

}  // namespace nvdet
