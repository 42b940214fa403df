#pragma once
// What the model workload and `nvdet bisect` share: the scenario's weights and prompts, built
// once, and one greedy decode of a context's batch.
#include <memory>
#include <vector>

#include "lib/model/decoder.h"
#include "lib/model/prompts.h"
#include "lib/model/scoring_pass.h"
#include "lib/model/traffic_replay.h"
#include "lib/model/traffic_requests.h"
#include "lib/scenario/context.h"

namespace nvdet {

class ModelRunner {
 public:
  // Builds the synthetic weights (seeded by weight_seed, else the scenario seed), or reads the
  // checkpoint, or (model.synthetic_weights) writes seeded weights for the checkpoint folder's
  // config.json into a temporary checkpoint and reads that (synthetic_checkpoint.h). Throws
  // kBadInput for a malformed checkpoint or prompts outside the vocabulary.
  explicit ModelRunner(const Scenario& s);

  const Scenario& scenario() const { return s_; }
  const ModelWeights& weights() const { return *weights_; }
  std::shared_ptr<const ModelWeights> shared_weights() const { return weights_; }

  // The context's decode settings: prefill_chunk, page_size, max_new_tokens (axes override the
  // scenario's model fields).
  DecodeOptions options_for(const Context& c) const;
  ModelBatch batch_for(const Context& c) const;
  // The context's scoring pass settings (axes score_batch / score_chunk override the model's).
  ScoreOptions score_options_for(const Context& c) const;
  bool scoring() const { return s_.model.score; }
  // The context's sampler (model.sampling, the axis `sampler` choosing which); null = greedy.
  SamplerKind sampler_for(const Context& c) const;

  // Decodes the context's batch and returns the results of the probed requests `requests`
  // (ids from the scenario's requests), in that order; the observer's `watched` index is the
  // position in `requests`. Under serving traffic (a traffic block), the context's replay
  // instead (traffic_replay.h). `generated`, when given, receives the tokens the whole run
  // generated.
  std::vector<SequenceResult> run(Backend& backend, const Context& c,
                                  const std::vector<int64_t>& requests, TensorObserver* observer,
                                  RunNotes* notes, int64_t* generated = nullptr) const;

  // Serving traffic: the context's replay requests and settings (null source without traffic).
  const TrafficSource* traffic() const { return traffic_.get(); }
  TrafficRunOptions traffic_options_for(const Context& c) const;

  // Scores each probed request's prompt + completion (completions[i] for requests[i]) in the
  // context's scoring pass (scoring_pass.h) and returns its logits rows, [T, vocab] each. The
  // pass runs on the scenario's trainer (model.trainer) when it names one, else on `backend`,
  // the sampler's.
  std::vector<HostTensor> score(Backend& backend, const Context& c,
                                const std::vector<int64_t>& requests,
                                const std::vector<std::vector<int32_t>>& completions,
                                TensorObserver* observer, RunNotes* notes) const;

 private:
  // The backend the scoring pass runs on: model.trainer's (made once), else the sampler's.
  Backend& trainer(Backend& sampler) const;

  Scenario s_;
  std::shared_ptr<const ModelWeights> weights_;
  std::vector<Prompt> prompts_;
  std::shared_ptr<const TrafficSource> traffic_;
  std::vector<int32_t> eos_tokens_;           // the traffic's EOS tokens (empty: off)
  mutable std::unique_ptr<Backend> trainer_;  // model.trainer's backend, once made
};

}  // namespace nvdet
