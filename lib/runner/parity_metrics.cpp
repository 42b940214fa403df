#include "lib/runner/parity_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lib/core/error.h"

namespace nvdet {
namespace {

// log(sum(exp(x))) of a row, shifted by its maximum, in double.
double log_sum_exp(const float* x, int64_t n) {
  double m = -INFINITY;
  for (int64_t v = 0; v < n; ++v) m = std::max(m, static_cast<double>(x[v]));
  double sum = 0.0;
  for (int64_t v = 0; v < n; ++v) sum += std::exp(static_cast<double>(x[v]) - m);
  return m + std::log(sum);
}

}  // namespace

RowParity row_parity(const float* s, const float* t, int64_t vocab, int32_t token) {
  const double lse_s = log_sum_exp(s, vocab), lse_t = log_sum_exp(t, vocab);
  RowParity r;
  r.logprob_sampler = s[token] - lse_s;
  r.logprob_trainer = t[token] - lse_t;
  for (int64_t v = 0; v < vocab; ++v) {
    const double ls = s[v] - lse_s, lt = t[v] - lse_t;
    r.kl += std::exp(ls) * (ls - lt);
  }
  return r;
}

ParityRecord parity_metrics(const HostTensor& sampler, const HostTensor& trainer,
                            const std::vector<int32_t>& tokens) {
  if (sampler.dtype() != DType::kFP32 || trainer.dtype() != DType::kFP32 ||
      sampler.shape() != trainer.shape() || sampler.rank() != 2 ||
      sampler.dim(0) != static_cast<int64_t>(tokens.size())) {
    throw_runtime_error("the sampler's and the trainer's logits do not line up (shapes differ)");
  }
  const int64_t n = sampler.dim(0), vocab = sampler.dim(1);
  const auto* s = reinterpret_cast<const float*>(sampler.data());
  const auto* t = reinterpret_cast<const float*>(trainer.data());
  ParityRecord r;
  r.tokens = n;
  for (int64_t i = 0; i < n; ++i) {
    const float* si = s + i * vocab;
    const float* ti = t + i * vocab;
    if (std::memcmp(si, ti, static_cast<size_t>(vocab) * sizeof(float)) == 0) {
      ++r.bitwise_equal_tokens;  // every metric is exactly 0 for this row
      continue;
    }
    if (r.first_differing_token < 0) r.first_differing_token = i;
    const RowParity p = row_parity(si, ti, vocab, tokens[static_cast<size_t>(i)]);
    const double diff = std::abs(p.logprob_sampler - p.logprob_trainer);
    r.logprob_abs_diff_max = std::max(r.logprob_abs_diff_max, diff);
    r.logprob_abs_diff_mean += diff;
    r.mismatch_kl_max = std::max(r.mismatch_kl_max, p.kl);
    r.mismatch_kl_mean += p.kl;
    const double log_ratio = p.logprob_trainer - p.logprob_sampler;
    r.k3_mean += std::expm1(log_ratio) - log_ratio;
  }
  if (n > 0) {
    r.logprob_abs_diff_mean /= static_cast<double>(n);
    r.mismatch_kl_mean /= static_cast<double>(n);
    r.k3_mean /= static_cast<double>(n);
  }
  return r;
}

ParityRecord parity_of(const RequestOutput& out) {
  ParityRecord r = parity_metrics(out.output, out.score_logits, out.completion);
  const size_t n = std::min(out.trace.size(), out.score_trace.size());
  for (size_t i = 0; i < n; ++i) {
    if (out.trace[i].hash != out.score_trace[i].hash) {
      r.first_op = OpDivergence{out.trace[i].step, out.trace[i].layer, out.trace[i].op};
      break;
    }
  }
  return r;
}

void add_parity(ParitySummary& sum, const ParityRecord& r, const std::string& context,
                int64_t request) {
  const double before = static_cast<double>(sum.tokens), n = static_cast<double>(r.tokens);
  const auto fold = [&](double& mean, double x) {
    mean = before + n > 0 ? (mean * before + x * n) / (before + n) : 0.0;
  };
  fold(sum.logprob_abs_diff_mean, r.logprob_abs_diff_mean);
  fold(sum.mismatch_kl_mean, r.mismatch_kl_mean);
  fold(sum.k3_mean, r.k3_mean);
  sum.logprob_abs_diff_max = std::max(sum.logprob_abs_diff_max, r.logprob_abs_diff_max);
  sum.mismatch_kl_max = std::max(sum.mismatch_kl_max, r.mismatch_kl_max);
  ++sum.requests;
  sum.tokens += r.tokens;
  sum.bitwise_equal_tokens += r.bitwise_equal_tokens;
  if (r.first_differing_token >= 0 && sum.first_context.empty()) {
    sum.first_context = context;
    sum.first_request = request;
    sum.first_token = r.first_differing_token;
    sum.first_op = r.first_op;
  }
}

void decide_parity_verdict(BackendOutcome& o) {
  if (!o.parity) return;
  const ParitySummary& p = *o.parity;
  const int64_t differ = p.tokens - p.bitwise_equal_tokens;
  if (differ == 0) {
    o.verdict += fmt::format("; sampler/trainer parity: all {} tokens bitwise equal", p.tokens);
    return;
  }
  const std::string what = fmt::format(
      "{} of {} tokens' logits differ between decode and scoring pass (mismatch_kl max {:.3g}); "
      "first at {}, request {}, token {}",
      differ, p.tokens, p.mismatch_kl_max, p.first_context, p.first_request, p.first_token);
  if (o.parity_expect == ParityExpectation::kBitwise) {
    o.passed = false;
    o.verdict += "; expected bitwise sampler/trainer parity, but " + what;
  } else {
    o.verdict += "; sampler/trainer: " + what;
  }
}

}  // namespace nvdet
