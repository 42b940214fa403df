#pragma once
// Sampler against trainer: the metrics RL frameworks watch when the inference engine's logprobs
// (the sampler's) and the trainer's are computed by different kernels. From two fp32 logits rows
// per generated token, in double: log-softmax of each (max-shifted), the sampled token's logprob
// difference, the full-vocabulary KL(sampler || trainer) = sum_v p_s(v) (log p_s(v) - log p_t(v))
// and the k3 estimator of that KL from the sampled token alone (r - 1 - log r, r = p_t / p_s).
#include <cstdint>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/runner/audit_result.h"
#include "lib/workloads/workload.h"

namespace nvdet {

// One request: sampler and trainer are fp32 [tokens, vocab], tokens[t] the token sampled at t.
ParityRecord parity_metrics(const HostTensor& sampler, const HostTensor& trainer,
                            const std::vector<int32_t>& tokens);

// The record of one scored output, with the first op where the decode and the scoring pass
// parted (their traces' first differing hash).
ParityRecord parity_of(const RequestOutput& out);

// Folds one record into a backend's summary (the first differing request is the first folded).
void add_parity(ParitySummary& sum, const ParityRecord& r, const std::string& context,
                int64_t request);

// With a scoring pass: a backend expected bitwise parity fails when any row differs; its verdict
// sentence gets the parity clause either way.
void decide_parity_verdict(BackendOutcome& o);

// The metrics of one row pair, exposed for tests: log-probabilities of `token`, and the KL.
struct RowParity {
  double logprob_sampler = 0.0, logprob_trainer = 0.0, kl = 0.0;
};
RowParity row_parity(const float* sampler, const float* trainer, int64_t vocab, int32_t token);

}  // namespace nvdet
