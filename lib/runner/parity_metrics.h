#pragma once
// Sampler against trainer: the metrics RL frameworks watch when the inference engine's logprobs
// (the sampler's) and the trainer's are computed by different kernels. From two fp32 logits rows
// per generated token, in double: log-softmax of each (max-shifted), the sampled token's logprob
// difference, the KL(sampler || trainer) = sum_v p_s(v) (log p_s(v) - log p_t(v)) and the k3
// estimator of that KL from the sampled token alone (r - 1 - log r, r = p_t / p_s).
//
// Each is computed over two distribution pairs (README "Sampler against trainer"):
//   at temperature 1 over the whole vocabulary: the logits as the kernels produced them;
//   at the sampling distribution (sampled scenarios): both rows divided by the sampling
//     temperature and restricted to the tokens the sampler kept at that step (its top_k / top_p
//     filter over its own row, lib/model/sampler.h), renormalised over them. This is what RL
//     frameworks compare: the sampler's logprob of the token it drew against the trainer's of the
//     same token at the same temperature, under the same truncation.
#include <cstdint>
#include <string>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/runner/audit_result.h"
#include "lib/workloads/workload.h"

namespace nvdet {

// One request: sampler and trainer are fp32 [tokens, vocab], tokens[t] the token sampled at t.
// `sampling` (null: greedy) adds the metrics and logprobs at the sampling distribution.
ParityRecord parity_metrics(const HostTensor& sampler, const HostTensor& trainer,
                            const std::vector<int32_t>& tokens,
                            const SamplingSpec* sampling = nullptr);

// The record of one scored output, with the first op where the decode and the scoring pass
// parted (their traces' first differing hash).
ParityRecord parity_of(const RequestOutput& out, const SamplingSpec* sampling = nullptr);

// Folds one record into a backend's summary (the first differing request is the first folded).
void add_parity(ParitySummary& sum, const ParityRecord& r, const std::string& context,
                int64_t request);

// With a scoring pass: a backend expected bitwise parity fails when any row differs, one with
// limits when a metric passes its limit; its verdict sentence gets the parity clause either way.
void decide_parity_verdict(BackendOutcome& o);

// The metrics a parity expectation with limits is judged on, and their name: the sampling
// distribution's when the scenario samples, else temperature 1's.
const ParityMetrics& gated_metrics(const ParitySummary& p);
std::string gated_metrics_name(const ParitySummary& p);

// A backend's parity for each scoring pass setting (score_batch, score_chunk) it ran, in sweep
// order: how far a trainer's batching and chunking moved its logprobs. Folded from the records;
// an axis the scenario does not sweep shows the scenario's value (its fingerprint), else "-".
struct ParityByScoring {
  std::string score_batch, score_chunk;
  ParitySummary parity;
};
std::vector<ParityByScoring> parity_by_scoring(const AuditResult& r, const std::string& backend);

// The metrics of one row pair, exposed for tests: log-probabilities of `token`, and the KL.
struct RowParity {
  double logprob_sampler = 0.0, logprob_trainer = 0.0, kl = 0.0;
};
RowParity row_parity(const float* sampler, const float* trainer, int64_t vocab, int32_t token);
// The same over the sampling distribution: both rows divided by spec.temperature, restricted to
// the tokens filtered_distribution keeps of the sampler's row (and `token`) and renormalised.
RowParity sampling_row_parity(const float* sampler, const float* trainer, int64_t vocab,
                              int32_t token, const SamplingSpec& spec);

}  // namespace nvdet
