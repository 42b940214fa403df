#include "lib/runner/parity_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lib/core/error.h"
#include "lib/model/sampler.h"

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

// log(sum(exp(x[v] / t))) over the tokens `kept`, shifted by its maximum, in double.
double log_sum_exp(const float* x, const std::vector<int32_t>& kept, double t) {
  double m = -INFINITY;
  for (const int32_t v : kept) m = std::max(m, static_cast<double>(x[v]) / t);
  double sum = 0.0;
  for (const int32_t v : kept) sum += std::exp(static_cast<double>(x[v]) / t - m);
  return m + std::log(sum);
}

// One row's contribution: the largest values kept, the sums of the means (divided at the end).
void fold_row(ParityMetrics& m, const RowParity& p) {
  const double diff = std::abs(p.logprob_sampler - p.logprob_trainer);
  m.logprob_abs_diff_max = std::max(m.logprob_abs_diff_max, diff);
  m.logprob_abs_diff_mean += diff;
  m.mismatch_kl_max = std::max(m.mismatch_kl_max, p.kl);
  m.mismatch_kl_mean += p.kl;
  const double log_ratio = p.logprob_trainer - p.logprob_sampler;
  m.k3_mean += std::expm1(log_ratio) - log_ratio;
}

void divide_means(ParityMetrics& m, double n) {
  m.logprob_abs_diff_mean /= n;
  m.mismatch_kl_mean /= n;
  m.k3_mean /= n;
}

// Folds the metrics of `n` more tokens into a summary of `before` tokens.
void fold_metrics(ParityMetrics& sum, const ParityMetrics& r, double before, double n) {
  const auto fold = [&](double& mean, double x) {
    mean = before + n > 0 ? (mean * before + x * n) / (before + n) : 0.0;
  };
  fold(sum.logprob_abs_diff_mean, r.logprob_abs_diff_mean);
  fold(sum.mismatch_kl_mean, r.mismatch_kl_mean);
  fold(sum.k3_mean, r.k3_mean);
  sum.logprob_abs_diff_max = std::max(sum.logprob_abs_diff_max, r.logprob_abs_diff_max);
  sum.mismatch_kl_max = std::max(sum.mismatch_kl_max, r.mismatch_kl_max);
}

// The value of a scoring axis for a context: swept, else the scenario's (its fingerprint).
std::string scoring_value(const AuditResult& r, const Context& c, const char* axis,
                          const char* key) {
  for (const auto& [name, v] : c.values) {
    if (name == axis) return axis_value_string(v);
  }
  const auto it = r.fingerprint.find(key);
  return it == r.fingerprint.end() ? "-" : it->second;
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

RowParity sampling_row_parity(const float* s, const float* t, int64_t vocab, int32_t token,
                              const SamplingSpec& spec) {
  // The tokens the sampler could draw from at this step (its own row's filter), and the token it
  // drew, which is one of them unless the row is not the one it drew from.
  std::vector<int32_t> kept = filtered_distribution(s, vocab, spec).ids;
  if (std::find(kept.begin(), kept.end(), token) == kept.end()) kept.push_back(token);
  const double temp = spec.temperature;
  const double lse_s = log_sum_exp(s, kept, temp), lse_t = log_sum_exp(t, kept, temp);
  RowParity r;
  r.logprob_sampler = s[token] / temp - lse_s;
  r.logprob_trainer = t[token] / temp - lse_t;
  for (const int32_t v : kept) {
    const double ls = s[v] / temp - lse_s, lt = t[v] / temp - lse_t;
    r.kl += std::exp(ls) * (ls - lt);
  }
  return r;
}

ParityRecord parity_metrics(const HostTensor& sampler, const HostTensor& trainer,
                            const std::vector<int32_t>& tokens, const SamplingSpec* sampling) {
  if (sampler.dtype() != DType::kFP32 || trainer.dtype() != DType::kFP32 ||
      sampler.shape() != trainer.shape() || sampler.rank() != 2 ||
      sampler.dim(0) != static_cast<int64_t>(tokens.size())) {
    throw_runtime_error("the sampler's and the trainer's logits do not line up (shapes differ)");
  }
  const bool sampled = sampling && sampling->enabled && sampling->temperature > 0.0;
  const int64_t n = sampler.dim(0), vocab = sampler.dim(1);
  const auto* s = reinterpret_cast<const float*>(sampler.data());
  const auto* t = reinterpret_cast<const float*>(trainer.data());
  ParityRecord r;
  r.tokens = n;
  if (sampled) r.sampling = ParityMetrics{};
  for (int64_t i = 0; i < n; ++i) {
    const float* si = s + i * vocab;
    const float* ti = t + i * vocab;
    const int32_t token = tokens[static_cast<size_t>(i)];
    // Rows equal bit for bit give every metric exactly 0; their logprobs are still recorded.
    if (std::memcmp(si, ti, static_cast<size_t>(vocab) * sizeof(float)) == 0) {
      ++r.bitwise_equal_tokens;
    } else if (r.first_differing_token < 0) {
      r.first_differing_token = i;
    }
    const RowParity p = row_parity(si, ti, vocab, token);
    fold_row(r, p);
    r.sampler_logprobs.push_back(p.logprob_sampler);
    r.trainer_logprobs.push_back(p.logprob_trainer);
    if (sampled) {
      const RowParity q = sampling_row_parity(si, ti, vocab, token, *sampling);
      fold_row(*r.sampling, q);
      r.sampling_sampler_logprobs.push_back(q.logprob_sampler);
      r.sampling_trainer_logprobs.push_back(q.logprob_trainer);
    }
  }
  if (n > 0) {
    divide_means(r, static_cast<double>(n));
    if (r.sampling) divide_means(*r.sampling, static_cast<double>(n));
  }
  return r;
}

ParityRecord parity_of(const RequestOutput& out, const SamplingSpec* sampling) {
  ParityRecord r = parity_metrics(out.output, out.score_logits, out.completion, sampling);
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
  fold_metrics(sum, r, before, n);
  if (r.sampling) {
    if (!sum.sampling) sum.sampling = ParityMetrics{};
    fold_metrics(*sum.sampling, *r.sampling, before, n);
  }
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

const ParityMetrics& gated_metrics(const ParitySummary& p) {
  return p.sampling ? *p.sampling : static_cast<const ParityMetrics&>(p);
}

std::string gated_metrics_name(const ParitySummary& p) {
  return p.sampling ? "at the sampling distribution" : "at temperature 1";
}

void decide_parity_verdict(BackendOutcome& o) {
  if (!o.parity) return;
  const ParitySummary& p = *o.parity;
  const int64_t differ = p.tokens - p.bitwise_equal_tokens;
  const ParityMetrics& m = gated_metrics(p);
  if (o.parity_expect == ParityExpectation::kTolerance) {
    // Each limit against the backend's largest value, the first one passed named.
    const ParityTolerance& tol = o.parity_tolerance;
    std::string over, within;
    const auto judge = [&](const char* name, const std::optional<double>& limit, double value) {
      if (!limit) return;
      const std::string text = fmt::format("{} max {:.3g}", name, value);
      if (value > *limit) {
        if (over.empty()) over = fmt::format("{} above its limit {:.3g}", text, *limit);
      } else {
        within += fmt::format("{}{} <= {:.3g}", within.empty() ? "" : ", ", text, *limit);
      }
    };
    judge("mismatch_kl", tol.mismatch_kl_max, m.mismatch_kl_max);
    judge("logprob_abs_diff", tol.logprob_abs_diff_max, m.logprob_abs_diff_max);
    if (!over.empty()) {
      o.passed = false;
      o.verdict += fmt::format(
          "; expected sampler/trainer parity within its limits, but {} {} ({} of {} tokens' "
          "logits differ; first at {}, request {}, token {})",
          over, gated_metrics_name(p), differ, p.tokens, p.first_context, p.first_request,
          p.first_token);
    } else {
      o.verdict += fmt::format(
          "; sampler/trainer parity within its limits {} ({}; {} of {} "
          "tokens' logits differ)",
          gated_metrics_name(p), within, differ, p.tokens);
    }
    return;
  }
  if (differ == 0) {
    o.verdict += fmt::format("; sampler/trainer parity: all {} tokens bitwise equal", p.tokens);
    return;
  }
  const std::string what = fmt::format(
      "{} of {} tokens' logits differ between decode and scoring pass (mismatch_kl max {:.3g}{}); "
      "first at {}, request {}, token {}",
      differ, p.tokens, m.mismatch_kl_max, p.sampling ? " at the sampling distribution" : "",
      p.first_context, p.first_request, p.first_token);
  if (o.parity_expect == ParityExpectation::kBitwise) {
    o.passed = false;
    o.verdict += "; expected bitwise sampler/trainer parity, but " + what;
  } else {
    o.verdict += "; sampler/trainer: " + what;
  }
}

std::vector<ParityByScoring> parity_by_scoring(const AuditResult& r, const std::string& backend) {
  std::vector<ParityByScoring> out;
  for (const CaseRecord& c : r.cases) {
    if (c.backend != backend) continue;
    const Context& context = context_of(r, c);
    const std::string batch = scoring_value(r, context, "score_batch", "model.score_batch");
    const std::string chunk = scoring_value(r, context, "score_chunk", "model.score_chunk");
    for (const RequestRecord& q : c.requests) {
      if (!q.parity) continue;
      auto it = std::find_if(out.begin(), out.end(), [&](const ParityByScoring& g) {
        return g.score_batch == batch && g.score_chunk == chunk;
      });
      if (it == out.end()) it = out.insert(out.end(), {batch, chunk, {}});
      add_parity(it->parity, *q.parity, context.id, q.request);
    }
  }
  return out;
}

}  // namespace nvdet
