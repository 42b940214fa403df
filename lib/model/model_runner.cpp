#include "lib/model/model_runner.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "lib/core/error.h"
#include "lib/model/checkpoint.h"
#include "lib/model/decode_progress.h"
#include "lib/model/hf_config.h"
#include "lib/model/sampler.h"
#include "lib/model/synthetic_checkpoint.h"
#include "lib/model/tp_engine.h"
#include "lib/workloads/fp8_context.h"

namespace nvdet {
namespace {

// FP8 (README "FP8") comes from an FP8 checkpoint: the key 'fp8' and the FP8 axes only choose
// how its GEMMs quantise activations and accumulate, and what FP8 models are not run with is
// refused before any context runs.
void check_fp8_model(const Scenario& s, const ModelWeights& w) {
  const SweepAxis* fp8_axis = nullptr;
  const SweepAxis* tp_axis = nullptr;
  for (const SweepAxis& a : s.sweep) {
    if (a.axis == Axis::kActScale || a.axis == Axis::kAccumulation) fp8_axis = &a;
    if (a.axis == Axis::kTp) tp_axis = &a;
  }
  const std::string needs_checkpoint =
      " sets how an FP8 checkpoint's GEMMs quantise, but the model is not FP8 ('model.checkpoint' "
      "must name a checkpoint whose config.json has a quantization_config with quant_method fp8)";
  if (!w.fp8 && s.fp8.enabled) throw_input_error(s.fp8.where, "the key 'fp8'" + needs_checkpoint);
  if (!w.fp8 && fp8_axis)
    throw_input_error(fp8_axis->where, "sweep axis '" + fp8_axis->name() + "'" + needs_checkpoint);
  if (!w.fp8) return;
  if (tp_axis)
    throw_input_error(tp_axis->where,
                      "sweep axis 'tp' (tensor parallel) is not implemented for FP8 checkpoints");
  if (s.traffic.enabled)
    throw_input_error(s.model.where, "'traffic' is not implemented for FP8 checkpoints");
}

}  // namespace

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
  check_fp8_model(s, *weights_);
  prompts_ = scenario_prompts(s, weights_->config.vocab);
  if (s.traffic.enabled) {
    traffic_ = std::make_shared<TrafficSource>(s_, prompts_, weights_->config.vocab);
    eos_tokens_ = s.traffic.eos == EosRule::kCheckpoint
                      ? read_hf_config_json(s.model.checkpoint).eos_token_ids
                      : s.traffic.eos_tokens;
    if (s.traffic.eos == EosRule::kCheckpoint && eos_tokens_.empty())
      throw_input_error(s.path + ": 'traffic.eos: on' takes the checkpoint's eos_token_id, but " +
                        s.model.checkpoint + "/config.json gives none");
    for (const int32_t id : eos_tokens_) {
      if (id >= weights_->config.vocab)
        throw_input_error(s.path + ": 'traffic.eos' token " + std::to_string(id) +
                          " is outside the model's vocabulary (0.." +
                          std::to_string(weights_->config.vocab - 1) + ")");
    }
  }
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
  if (weights_->fp8) o.fp8 = fp8_scheme(s_, c);
  return o;
}

ModelBatch ModelRunner::batch_for(const Context& c) const {
  return make_model_batch(s_, c, prompts_, weights_->config.vocab);
}

std::vector<SequenceResult> ModelRunner::run(Backend& backend, const Context& c,
                                             const std::vector<int64_t>& requests,
                                             TensorObserver* observer, RunNotes* notes,
                                             int64_t* generated) const {
  std::vector<size_t> probes;  // each request's index among the scenario's probed requests
  for (int64_t r : requests) {
    const auto it = std::find(s_.requests.begin(), s_.requests.end(), r);
    if (it == s_.requests.end()) {
      throw_input_error("request " + std::to_string(r) +
                        " is not one of the scenario's probed requests");
    }
    probes.push_back(static_cast<size_t>(it - s_.requests.begin()));
  }
  const DecodeProgressSink& sink = decode_progress_sink();
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (traffic_) {
    TrafficRunOptions options = traffic_options_for(c);
    if (sink) {
      options.on_step = [&](const TrafficProgress& p) {
        const double s = seconds();
        sink({backend.info().name, c.id, static_cast<int>(p.steps), 0,
              s > 0 ? static_cast<double>(p.generated_tokens) / s : 0.0,
              "step " + std::to_string(p.steps) + ", " + std::to_string(p.finished) + " of " +
                  std::to_string(p.requests) + " requests finished"});
      };
    }
    const int32_t max_new = static_cast<int32_t>(c.integer(Axis::kMaxNewTokens));
    TrafficReplay replay(backend, *weights_,
                         traffic_->requests(c.integer(Axis::kTrafficSeed), max_new), options,
                         probes, observer, notes);
    std::vector<SequenceResult> out = replay.run();
    if (generated) *generated = replay.generated_tokens();
    return out;
  }
  const ModelBatch b = batch_for(c);
  std::vector<size_t> watched;
  for (const size_t i : probes) watched.push_back(b.probe_slot[i]);
  DecodeOptions options = options_for(c);
  std::unique_ptr<TokenSampler> sampler;
  if (s_.model.sampling.enabled && s_.model.sampling.temperature > 0.0) {
    sampler = make_token_sampler(s_.model.sampling, sampler_for(c));
    options.sampler = sampler.get();
    options.sampling_ids = b.request_ids;
  }
  if (sink) {
    const double batch = static_cast<double>(b.prompts.size());
    options.on_step = [&sink, &backend, &c, seconds, batch](int32_t done, int32_t total) {
      const double s = seconds();
      sink({backend.info().name, c.id, done, total, s > 0 ? batch * done / s : 0.0, ""});
    };
  }
  if (generated) *generated = static_cast<int64_t>(b.prompts.size()) * options.max_new_tokens;
  return greedy_decode(backend, *weights_, b.prompts, watched, options, observer, notes);
}

TrafficRunOptions ModelRunner::traffic_options_for(const Context& c) const {
  TrafficRunOptions o;
  o.scheduler.max_num_batched_tokens = c.integer(Axis::kMaxNumBatchedTokens);
  o.scheduler.max_num_seqs = c.integer(Axis::kMaxNumSeqs);
  o.scheduler.prefix_caching = c.word(Axis::kPrefixCaching) == "on";
  o.scheduler.chunked_prefill = c.word(Axis::kChunkedPrefill) == "on";
  o.page_size = static_cast<int32_t>(c.integer(Axis::kPageSize));
  o.eos_tokens = eos_tokens_;
  return o;
}

ScoreOptions ModelRunner::score_options_for(const Context& c) const {
  ScoreOptions o;
  o.batch = static_cast<int32_t>(c.integer(Axis::kScoreBatch));
  const auto* chunk = std::get_if<int64_t>(&c.value(Axis::kScoreChunk));  // null: "whole"
  o.chunk = chunk ? static_cast<int32_t>(*chunk) : 0;
  const DecodeOptions decode = options_for(c);
  o.page_size = decode.page_size;
  o.fp8 = decode.fp8;
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
