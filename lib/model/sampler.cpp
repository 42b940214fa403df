#include "lib/model/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/core/error.h"
#include "lib/core/philox.h"

namespace nvdet {
namespace {

// Tags the fourth counter word so that sampling draws never share a counter with other uses.
constexpr uint32_t kSamplingTag = 0x53414D50u;  // "SAMP"

PhiloxKey key_of(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

// A NaN or infinite logit makes the sort order and the softmax undefined: every probability
// becomes NaN and the draw falls to the last kept token, a different token for no reason. As
// a non-finite router logit, it comes from the data and is refused (exit 3), never sampled.
void check_finite(const float* row, int64_t vocab, int32_t step, uint64_t request) {
  for (int64_t v = 0; v < vocab; ++v) {
    if (std::isfinite(row[v])) continue;
    throw_runtime_error(fmt::format(
        "sampling: the logit of token {} is not finite ({}) at decode step {} of request {}; "
        "a non-finite logit cannot be sampled from",
        v, row[v], step, request));
  }
}

class PerRequestSampler final : public TokenSampler {
 public:
  explicit PerRequestSampler(const SamplingSpec& spec) : spec_(spec) {}
  std::vector<int32_t> choose(int32_t step, const std::vector<uint64_t>& ids,
                              const std::vector<const float*>& rows, int64_t vocab) override {
    std::vector<int32_t> out;
    for (size_t i = 0; i < rows.size(); ++i) {
      const PhiloxCounter c = {static_cast<uint32_t>(step), static_cast<uint32_t>(ids[i]),
                               static_cast<uint32_t>(ids[i] >> 32), kSamplingTag};
      const double u = philox_uniform(philox4x32_10(c, key_of(spec_.seed)));
      check_finite(rows[i], vocab, step, ids[i]);
      out.push_back(draw_token(filtered_distribution(rows[i], vocab, spec_), u));
    }
    return out;
  }

 private:
  SamplingSpec spec_;
};

class BatchStreamSampler final : public TokenSampler {
 public:
  explicit BatchStreamSampler(const SamplingSpec& spec) : spec_(spec) {}
  std::vector<int32_t> choose(int32_t step, const std::vector<uint64_t>& ids,
                              const std::vector<const float*>& rows, int64_t vocab) override {
    std::vector<int32_t> out;
    for (size_t i = 0; i < rows.size(); ++i) {
      const PhiloxCounter c = {static_cast<uint32_t>(next_), static_cast<uint32_t>(next_ >> 32), 0,
                               kSamplingTag};
      ++next_;
      const double u = philox_uniform(philox4x32_10(c, key_of(spec_.seed)));
      check_finite(rows[i], vocab, step, ids[i]);
      out.push_back(draw_token(filtered_distribution(rows[i], vocab, spec_), u));
    }
    return out;
  }

 private:
  SamplingSpec spec_;
  uint64_t next_ = 0;  // draws taken from the stream so far
};

}  // namespace

FilteredDistribution filtered_distribution(const float* logits, int64_t vocab,
                                           const SamplingSpec& spec) {
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  const auto before = [logits](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  const int64_t k = spec.top_k > 0 ? std::min<int64_t>(spec.top_k, vocab) : vocab;
  std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
  order.resize(static_cast<size_t>(k));
  const double top = logits[order[0]];
  std::vector<double> e(order.size());
  double sum = 0.0;
  for (size_t i = 0; i < order.size(); ++i) {
    e[i] = std::exp((static_cast<double>(logits[order[i]]) - top) / spec.temperature);
    sum += e[i];
  }
  FilteredDistribution d;
  double cum = 0.0;
  for (size_t i = 0; i < order.size(); ++i) {
    d.ids.push_back(order[i]);
    d.probs.push_back(e[i] / sum);
    cum += e[i] / sum;
    if (cum >= spec.top_p) break;
  }
  double kept = 0.0;
  for (double p : d.probs) kept += p;
  for (double& p : d.probs) p /= kept;
  return d;
}

int32_t draw_token(const FilteredDistribution& d, double u) {
  double cum = 0.0;
  for (size_t i = 0; i < d.ids.size(); ++i) {
    cum += d.probs[i];
    if (u < cum) return d.ids[i];
  }
  return d.ids.back();  // u within rounding of 1
}

std::unique_ptr<TokenSampler> make_token_sampler(const SamplingSpec& spec, SamplerKind kind) {
  if (kind == SamplerKind::kBatchStream) return std::make_unique<BatchStreamSampler>(spec);
  return std::make_unique<PerRequestSampler>(spec);
}

}  // namespace nvdet
