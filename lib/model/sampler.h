#pragma once
// Seeded sampling of the next token from a logits row (model.sampling), in two ways that serving
// engines use:
//   per_request:  each draw is Philox4x32-10 (lib/core/philox.h) keyed by the seed, with the
//                 request's id and the decode step as the counter: a request's draws are the same
//                 whatever else is in the batch and wherever it sits. Invariant by construction.
//   batch_stream: one generator whose stream is consumed across the batch in row order, as one
//                 generator feeding one multinomial call for the whole batch does: the n-th draw
//                 of the run goes to whichever row comes n-th, so a request's draws depend on its
//                 position and on the batch.
// Both draw by inverse CDF over the same filtered distribution, built in one fixed order: the
// vocabulary sorted by logit (highest first, ties by lower id); softmax of logit / temperature in
// double, its sum in that order; top_k keeps the first k; top_p keeps the shortest prefix whose
// cumulative probability (summed in that order) reaches top_p. So the only thing that can make
// two samplers' tokens differ for equal logits is the uniform number each row is given.
#include <cstdint>
#include <memory>
#include <vector>

#include "lib/scenario/scenario.h"

namespace nvdet {

// The kept tokens in the fixed order, with their probabilities (summing to 1 up to rounding).
struct FilteredDistribution {
  std::vector<int32_t> ids;
  std::vector<double> probs;
};
FilteredDistribution filtered_distribution(const float* logits, int64_t vocab,
                                           const SamplingSpec& spec);

// Inverse CDF: the first kept token whose cumulative probability (in the fixed order) exceeds u
// times the kept total; u in [0, 1).
int32_t draw_token(const FilteredDistribution& d, double u);

class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  // One token per row: `rows` are the fp32 logits rows of one pass's sequences in batch (row)
  // order, `ids` each one's request id (the sampling key of a per-request draw).
  virtual std::vector<int32_t> choose(int32_t step, const std::vector<uint64_t>& ids,
                                      const std::vector<const float*>& rows, int64_t vocab) = 0;
};

// A fresh sampler (batch_stream: its stream at its start) for one decode of a batch.
std::unique_ptr<TokenSampler> make_token_sampler(const SamplingSpec& spec, SamplerKind kind);

}  // namespace nvdet
